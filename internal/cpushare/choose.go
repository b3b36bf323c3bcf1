package cpushare

import (
	"fmt"
	"time"

	"github.com/turnstream/turnstream/internal/capacitybench"
)

// PerMillion is what a million invocations of took each cost in Lambda
// at memoryMB (capacitybench.LambdaDollars: billed per millisecond, the
// request included).
func PerMillion(took time.Duration, memoryMB int) float64 {
	return capacitybench.LambdaDollars(took, memoryMB) * 1e6
}

// Verdict is one size held against the reference size (Judge).
type Verdict struct {
	MemoryMB int
	// TTFSOver is the size's median warm time to first snapshot minus
	// the reference's; ColdTTFSOver the same of the invokes that started
	// a bootstrap (a cold start's first snapshot); KeepUpOver is its long
	// answer's lag minus the reference's, as a fraction of the model's
	// time.
	TTFSOver, ColdTTFSOver time.Duration
	KeepUpOver             float64
	// OK: TTFSOver and ColdTTFSOver <= TTFSBudget, KeepUpOver <=
	// KeepUpBudget.
	OK bool
	// Turn1KB and Turn16KB are Lambda's dollars per million turns of a
	// 1 KB answer (the median warm turn) and of the long answer.
	Turn1KB, Turn16KB float64
}

// Judge holds each size of sizes against ReferenceMB's (which must be
// among them, with turn figures) by the budgets above, in the order of
// sizes. A cold start's first snapshot counts as well as a warm one's:
// a cold start is CPU-bound (the runtime, the package inits, the first
// DynamoDB client use) and is where a small share shows most.
func Judge(sizes []*Size) ([]Verdict, error) {
	var ref *Boot
	for _, s := range sizes {
		if s.MemoryMB == ReferenceMB {
			ref = s.Boots["turn"]
		}
	}
	if ref == nil || ref.Long == nil || len(ref.FirstLine) == 0 {
		return nil, fmt.Errorf("no turn figures at the reference size, %d MB", ReferenceMB)
	}
	var out []Verdict
	for _, s := range sizes {
		b := s.Boots["turn"]
		if b == nil || b.Long == nil || len(b.FirstLine) == 0 {
			return nil, fmt.Errorf("no turn figures at %d MB", s.MemoryMB)
		}
		v := Verdict{MemoryMB: s.MemoryMB,
			TTFSOver:     median(b.FirstLine) - median(ref.FirstLine),
			ColdTTFSOver: median(b.ColdFirstLine) - median(ref.ColdFirstLine),
			KeepUpOver:   float64(b.Long.Lag()-ref.Long.Lag()) / float64(b.Long.ModelTime()),
			Turn1KB:      PerMillion(median(b.Took), s.MemoryMB),
			Turn16KB:     PerMillion(b.Long.Took, s.MemoryMB),
		}
		v.OK = v.TTFSOver <= TTFSBudget && v.ColdTTFSOver <= TTFSBudget && v.KeepUpOver <= KeepUpBudget
		out = append(out, v)
	}
	return out, nil
}

// Choose returns the cheapest size (by a 16 KB turn's Lambda cost) of
// verdicts that is OK, and false when none is.
func Choose(verdicts []Verdict) (Verdict, bool) {
	var best Verdict
	found := false
	for _, v := range verdicts {
		if v.OK && (!found || v.Turn16KB < best.Turn16KB) {
			best, found = v, true
		}
	}
	return best, found
}
