// Package cpushare is turnbench's CPU-share section (-only cpushare,
// docs/benchmarks.md "Memory size and CPU share"): it runs the Lambda
// bootstraps under the runtime interface emulator, each in a cgroup whose
// CFS quota is the CPU share Lambda gives a function of a memory size
// (Quota: 1,769 MB is one vCPU), at 128, 256, 512 and 1,024 MB, and
// reports per size the cold start, the turn's time to first snapshot,
// CPU per turn, the CPU per line of a 16 KB answer streamed at a
// 400 chars/s model's pace, and what a million turns cost in Lambda at
// that size (capacitybench.LambdaDollars, the cost section's prices).
// Choose picks the cheapest size whose time to first snapshot stays
// within 50 ms of 1,024 MB's and whose streaming keeps up with the model.
//
// The section needs Linux, root and cgroup v1's cpu controller
// (Available); elsewhere it is skipped with the reason. Only the
// bootstrap runs in the group (the self-exec wrapper moves itself there
// before the exec, coldstart.EmulatorOptions.Procs), not the emulator.
package cpushare

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"time"

	"github.com/turnstream/turnstream/internal/benchwire"
	"github.com/turnstream/turnstream/internal/coldstart"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/model/echo"
)

// ErrSkipped marks a section that could not run here (the reason follows).
var ErrSkipped = errors.New("not measured")

// The model the turns stream from: the echo model at 400 characters per
// second (a delta of EchoChunk runes every EchoDelay), a pace a fast
// hosted model reaches.
const (
	EchoDelay = 10 * time.Millisecond
	EchoChunk = 4
	// ModelRate is the model's pace in characters per second.
	ModelRate = EchoChunk * float64(time.Second) / float64(EchoDelay)
)

// Budgets of Choose: a size qualifies when its time to first snapshot is
// at most TTFSBudget above 1,024 MB's, and when its long answer's extra
// time beyond the model's own is at most KeepUpBudget of the model's time
// more than 1,024 MB's.
const (
	TTFSBudget   = 50 * time.Millisecond
	KeepUpBudget = 0.10
	// ReferenceMB is the size the others are held against.
	ReferenceMB = 1024
)

// Settings are a run's sizes.
type Settings struct {
	MemoryMB   []int // the memory sizes, ReferenceMB among them
	Turns      int   // warm 1 KB turns per size (and history pages)
	LongAnswer int   // bytes of the long answer, one per size
	ColdRuns   int   // cold starts per size and bootstrap (fresh emulators)
}

// Full is the section's run: 10 warm turns and 5 cold starts per size.
func Full() Settings {
	return Settings{MemoryMB: []int{128, 256, 512, 1024}, Turns: 10, LongAnswer: 16 << 10, ColdRuns: 5}
}

// Quick is a short run of the section (-quick): 2 warm turns and 3 cold
// starts per size.
func Quick() Settings {
	return Settings{MemoryMB: []int{128, 256, 512, 1024}, Turns: 2, LongAnswer: 16 << 10, ColdRuns: 3}
}

// Env is what the section runs against.
type Env struct {
	RIE        string            // the aws-lambda-rie binary
	Bootstraps map[string]string // "minimal", "turn", "history" -> binary (the native test or release build)
	Endpoint   string            // the functions' DynamoDB endpoint
	Table      string
	Prefix     string // session ids start with it
	CgroupRoot string // CgroupRoot unless a test says otherwise
	Progress   func(format string, args ...any)
}

// Boot is one bootstrap's figures at one size.
type Boot struct {
	// ColdStart, ColdCPU, FirstInvoke and ColdFirstLine are one per cold
	// run: exec -> first Runtime API request, the bootstrap's CPU time
	// until then (-1 when unknown), the invoke that started it end to
	// end, and that invoke's time to its first line (turn).
	ColdStart, ColdCPU, FirstInvoke, ColdFirstLine []time.Duration
	// FirstLine, Took and CPU are the warm requests' time to first line
	// (turn; invoke sent -> the line reaching the Runtime API), end to
	// end time and the bootstrap's CPU time, one per request.
	FirstLine, Took, CPU []time.Duration
	// Long is the turn's long answer (turn only).
	Long *Long
}

// Long is one long answer streamed at the model's pace.
type Long struct {
	Answer int           // bytes of the answer
	Lines  int           // NDJSON lines of the response
	Took   time.Duration // invoke sent -> the whole response
	CPU    time.Duration // the bootstrap's CPU time for the turn
}

// ModelTime is how long the model alone takes to produce the answer.
func (l *Long) ModelTime() time.Duration {
	return time.Duration(float64(l.Answer) / ModelRate * float64(time.Second))
}

// Lag is the answer's time beyond the model's own.
func (l *Long) Lag() time.Duration { return l.Took - l.ModelTime() }

// ShareUsed is the fraction of memoryMB's CPU share the turn used while
// it streamed: its CPU time over its time at that share. Near 1 the
// stream is CPU-bound and falls behind the model.
func (l *Long) ShareUsed(memoryMB int) float64 {
	return float64(l.CPU) / (float64(l.Took) * Share(memoryMB))
}

// CPUPerLine is the bootstrap's CPU time per line of the answer: the
// whole turn's (model deltas, snapshot encoding, checkpoints) over its
// lines, an upper bound of the encoding's.
func (l *Long) CPUPerLine() time.Duration {
	if l.Lines == 0 {
		return 0
	}
	return l.CPU / time.Duration(l.Lines)
}

// Size is one memory size's figures.
type Size struct {
	MemoryMB int
	Quota    int64 // cpu.cfs_quota_us against Period
	Boots    map[string]*Boot
}

// Result is the section's figures; Err says why it is missing (wrapping
// ErrSkipped when it could not run here).
type Result struct {
	Settings Settings
	Sizes    []*Size
	Err      error
}

// Run measures each size of set (see the package documentation).
func Run(ctx context.Context, e Env, set Settings) *Result {
	res := &Result{Settings: set}
	if e.CgroupRoot == "" {
		e.CgroupRoot = CgroupRoot
	}
	if err := Available(e.CgroupRoot); err != nil {
		res.Err = err
		return res
	}
	if _, err := os.Stat(e.RIE); err != nil {
		res.Err = fmt.Errorf("%w: %s not found (make rie)", ErrSkipped, e.RIE)
		return res
	}
	for _, mb := range set.MemoryMB {
		s := &Size{MemoryMB: mb, Quota: Quota(mb), Boots: map[string]*Boot{}}
		res.Sizes = append(res.Sizes, s)
		for _, name := range []string{"minimal", "turn", "history"} {
			e.Progress("cpushare: %s at %d MB (quota %d/%d)", name, mb, s.Quota, Period)
			b := &Boot{}
			for run := range max(set.ColdRuns, 1) {
				// The first run drives the warm requests too.
				if err := runBoot(ctx, e, set, name, mb, run, b); err != nil {
					res.Err = fmt.Errorf("%s at %d MB: %w", name, mb, err)
					return res
				}
			}
			s.Boots[name] = b
		}
	}
	return res
}

// runBoot runs bootstrap name in a group of memoryMB's quota, its
// figures added to b: the invoke that starts it, then, in run 0,
// set.Turns warm requests and (turn) the long answer.
func runBoot(ctx context.Context, e Env, set Settings, name string, memoryMB, run int, b *Boot) (err error) {
	bin := e.Bootstraps[name]
	if bin == "" {
		return fmt.Errorf("no %s bootstrap", name)
	}
	g, err := newCgroup(e.CgroupRoot, fmt.Sprintf("turnbench-%d-%d", os.Getpid(), memoryMB), memoryMB)
	if err != nil {
		return err
	}
	defer func() {
		if rmErr := g.remove(); err == nil {
			err = rmErr
		}
	}()
	em, err := coldstart.StartEmulator(coldstart.EmulatorOptions{RIE: e.RIE, Bootstrap: bin, Procs: g.procs(),
		Env: append(coldstart.FunctionEnv(e.Endpoint, e.Table, EchoDelay), fmt.Sprintf("ECHO_CHUNK_RUNES=%d", EchoChunk))})
	if err != nil {
		return err
	}
	defer em.Stop()
	c := &http.Client{Timeout: 5 * time.Minute}
	sid := fmt.Sprintf("%s-%d", e.Prefix, memoryMB) // history pages the session of the turn run of the same size
	invoke := func(i, answer int) (*coldstart.Invocation, time.Duration, error) {
		before, okBefore := em.CPU()
		var inv *coldstart.Invocation
		var err error
		switch name {
		case "turn":
			body, _ := client.SubmitBody(client.Submit{SessionID: fmt.Sprintf("%s-%d-%d", sid, run, i), TurnID: "t", EventID: "e",
				Input: benchwire.InputOf(answer - len(echo.Prefix))}) // SafeIds: cannot fail
			inv, err = em.Invoke(ctx, c, coldstart.URLEvent("POST", "/", "", string(body)))
		case "history":
			inv, err = em.Invoke(ctx, c, coldstart.URLEvent("GET", "/sessions/"+sid+"-0-0/turns", "limit=20", ""))
		default:
			inv, err = em.Invoke(ctx, c, coldstart.URLEvent("GET", "/", "", ""))
		}
		if err != nil {
			return nil, 0, err
		}
		if inv.Status != http.StatusOK || (name == "turn" && !bytes.Contains(inv.Body, []byte(`"status":"complete"`))) {
			return nil, 0, fmt.Errorf("invoke %d: status %d, body %.300q", i, inv.Status, inv.Body)
		}
		cpu := time.Duration(-1)
		if after, ok := em.CPU(); ok && okBefore {
			cpu = after - before
		}
		return inv, cpu, nil
	}
	inv, _, err := invoke(0, 1<<10)
	if err != nil {
		return err
	}
	cold, coldCPU, _, err := em.ColdStart()
	if err != nil {
		return err
	}
	b.ColdStart, b.ColdCPU = append(b.ColdStart, cold), append(b.ColdCPU, coldCPU)
	b.FirstInvoke, b.ColdFirstLine = append(b.FirstInvoke, inv.Took), append(b.ColdFirstLine, inv.FirstLine)
	if run > 0 {
		return nil
	}
	for i := 1; i <= set.Turns; i++ {
		inv, cpu, err := invoke(i, 1<<10)
		if err != nil {
			return err
		}
		b.Took, b.CPU = append(b.Took, inv.Took), append(b.CPU, cpu)
		if name == "turn" {
			b.FirstLine = append(b.FirstLine, inv.FirstLine)
		}
	}
	if name == "turn" && set.LongAnswer > 0 {
		inv, cpu, err := invoke(set.Turns+1, set.LongAnswer)
		if err != nil {
			return err
		}
		b.Long = &Long{Answer: set.LongAnswer, Lines: bytes.Count(inv.Body, []byte("\n")), Took: inv.Took, CPU: cpu}
	}
	return nil
}

// median returns the median of d (0 when empty).
func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
