package cpushare

import (
	"errors"
	"fmt"
	"time"
)

// Rows renders res as turnbench's rows (figure, measured, baseline,
// measured vs baseline): per size the cold starts against the minimal
// bootstrap's at that size, and the turn's figures against ReferenceMB's;
// then the choice.
func (res *Result) Rows() [][4]string {
	var rows [][4]string
	add := func(figure, measured, baseline, vs string) {
		rows = append(rows, [4]string{figure, measured, baseline, vs})
	}
	if len(res.Sizes) == 0 {
		why := "no figures"
		if res.Err != nil {
			why = res.Err.Error()
			if errors.Is(res.Err, ErrSkipped) {
				why = "skipped: " + why
			}
		}
		add("CPU share (cgroup quota per memory size)", why, "-", "-")
		return rows
	}
	var ref *Boot
	for _, s := range res.Sizes {
		if s.MemoryMB == ReferenceMB {
			ref = s.Boots["turn"]
		}
	}
	for _, s := range res.Sizes {
		at := fmt.Sprintf("%d MB (quota %d/%d µs, %.1f%% of a CPU)", s.MemoryMB, s.Quota, Period, 100*float64(s.Quota)/Period)
		t, h, m := s.Boots["turn"], s.Boots["history"], s.Boots["minimal"]
		if t == nil || h == nil || m == nil {
			add(at, "not measured: "+fmt.Sprint(res.Err), "-", "-")
			continue
		}
		add(at+fmt.Sprintf(": cold start, exec -> first Runtime API request (CPU until then; medians of %d)", len(t.ColdStart)),
			fmt.Sprintf("turn %s (%s), history %s (%s)", ms(median(t.ColdStart)), ms(median(t.ColdCPU)), ms(median(h.ColdStart)), ms(median(h.ColdCPU))),
			fmt.Sprintf("minimal %s (%s)", ms(median(m.ColdStart)), ms(median(m.ColdCPU))),
			fmt.Sprintf("turn %.2fx", float64(median(t.ColdStart))/float64(median(m.ColdStart))))
		refTTFS, refCPU, refLong := "-", "-", "-"
		if ref != nil {
			refTTFS = fmt.Sprintf("%d MB: %s (cold %s)", ReferenceMB, ms(median(ref.FirstLine)), ms(median(ref.ColdFirstLine)))
			refCPU = fmt.Sprintf("%d MB: %s", ReferenceMB, ms(median(ref.CPU)))
			if ref.Long != nil {
				refLong = fmt.Sprintf("%d MB: %s per line, %s beyond the model", ReferenceMB, ms(ref.Long.CPUPerLine()), ms(ref.Long.Lag()))
			}
		}
		add(at+fmt.Sprintf(": turn time to first snapshot, invoke -> first line at the Runtime API (median of %d warm; cold invoke)", len(t.FirstLine)),
			fmt.Sprintf("%s (cold %s)", ms(median(t.FirstLine)), ms(median(t.ColdFirstLine))), refTTFS,
			vsRef(ref != nil, median(t.FirstLine), medianOr(ref, func(b *Boot) time.Duration { return median(b.FirstLine) })))
		add(at+fmt.Sprintf(": CPU per 1 KB turn at %.0f chars/s (median of %d)", ModelRate, len(t.CPU)),
			ms(median(t.CPU)), refCPU,
			vsRef(ref != nil, median(t.CPU), medianOr(ref, func(b *Boot) time.Duration { return median(b.CPU) })))
		if l := t.Long; l != nil {
			add(at+fmt.Sprintf(": %d KB answer at %.0f chars/s: the turn's CPU per line (lines), share of the CPU share used, time beyond the model's %s", l.Answer>>10, ModelRate, secs(l.ModelTime())),
				fmt.Sprintf("%s per line (%d lines, %s CPU), %.0f%% of the share, %s beyond", ms(l.CPUPerLine()), l.Lines, ms(l.CPU), 100*l.ShareUsed(s.MemoryMB), ms(l.Lag())), refLong,
				vsRef(ref != nil && ref.Long != nil, l.Lag(), medianOr(ref, func(b *Boot) time.Duration {
					if b.Long == nil {
						return 0
					}
					return b.Long.Lag()
				})))
		}
		add(at+": history page (median of warm requests; CPU)", fmt.Sprintf("%s (%s)", ms(median(h.Took)), ms(median(h.CPU))), "-", "-")
		add(at+": Lambda $ per million turns, 1 KB / 16 KB answer (turn time at this size, arm64 US East)",
			fmt.Sprintf("$%.2f / %s", PerMillion(median(t.Took), s.MemoryMB), long16(t, s.MemoryMB)), "-", "-")
	}
	verdicts, err := Judge(res.Sizes)
	if err != nil {
		add("memory size choice", "none: "+err.Error(), "-", "-")
		return rows
	}
	for _, v := range verdicts {
		add(fmt.Sprintf("%d MB against %d MB: time to first snapshot warm, cold; extra lag (share of the model's time)", v.MemoryMB, ReferenceMB),
			fmt.Sprintf("%+.1f ms, %+.1f ms; %+.1f%%", float64(v.TTFSOver)/float64(time.Millisecond), float64(v.ColdTTFSOver)/float64(time.Millisecond), 100*v.KeepUpOver),
			fmt.Sprintf("budget %s, %.0f%%", ms(TTFSBudget), 100*KeepUpBudget), map[bool]string{true: "within", false: "over"}[v.OK])
	}
	if v, ok := Choose(verdicts); ok {
		add("memory size choice: the cheapest within both budgets", fmt.Sprintf("%d MB", v.MemoryMB),
			fmt.Sprintf("$%.2f per million 16 KB turns", v.Turn16KB), "-")
	} else {
		add("memory size choice: the cheapest within both budgets", "none within them", "-", "-")
	}
	if res.Err != nil {
		add("CPU share error", res.Err.Error(), "-", "-")
	}
	return rows
}

func long16(t *Boot, memoryMB int) string {
	if t.Long == nil {
		return "-"
	}
	return fmt.Sprintf("$%.2f", PerMillion(t.Long.Took, memoryMB))
}

// medianOr applies f to ref, or gives 0 without it.
func medianOr(ref *Boot, f func(*Boot) time.Duration) time.Duration {
	if ref == nil {
		return 0
	}
	return f(ref)
}

// vsRef is d against the reference's r, signed.
func vsRef(ok bool, d, r time.Duration) string {
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%+.2f ms", float64(d-r)/float64(time.Millisecond))
}

func ms(d time.Duration) string {
	if d < 0 {
		return "unknown"
	}
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}

func secs(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }
