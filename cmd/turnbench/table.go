package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/turnstream/turnstream/internal/dynamobench"
)

// writeTable renders rep as one markdown table: figure, measured value,
// the baseline measured in the same run (or the budget it is held to), and
// the measured value relative to that baseline; then the DynamoDB call
// counts and the load run's problems.
func writeTable(w io.Writer, rep *report, set settings) error {
	var rows [][4]string
	rows = append(rows, handlerRows(rep, set)...)
	rows = append(rows, bootstrapRows(rep, set)...)
	rows = append(rows, loadRows(rep.Load, set.Load)...)
	rows = append(rows, durableRows(rep.Durable)...)
	l := rep.Load
	ew := &errWriter{w: w}
	ew.printf("| figure | measured | baseline (same run) | measured vs baseline |\n| --- | --- | --- | --- |\n")
	for _, r := range rows {
		ew.printf("| %s | %s | %s | %s |\n", cell(r[0]), cell(r[1]), cell(r[2]), cell(r[3]))
	}
	ew.printf("\nDynamoDB: %d API calls, %d HTTP attempts (retries: %d).\n", rep.Calls, rep.Attempts, rep.Retries)
	for _, k := range slices.Sorted(maps.Keys(rep.AttemptErrors)) {
		ew.printf("failed DynamoDB attempts (%d): %s\n", rep.AttemptErrors[k], k)
	}
	for _, p := range l.Problems {
		ew.printf("load problem: %s\n", p)
	}
	for _, n := range l.Notes {
		ew.printf("load note: %s\n", n)
	}
	if rep.ColdErr != nil && !errors.Is(rep.ColdErr, errSkipped) {
		ew.printf("cold start error: %v\n", rep.ColdErr)
	}
	return ew.err
}

// handlerRows are the rows of the handler sections: request budgets,
// throughput, time to first snapshot, wire bytes, history depth.
func handlerRows(rep *report, set settings) [][4]string {
	var rows [][4]string
	add := func(figure, measured, baseline, vs string) {
		rows = append(rows, [4]string{figure, measured, baseline, vs})
	}
	b := rep.Budgets
	add("DynamoDB requests per completed turn, new session",
		fmt.Sprintf("max %d, mean %.2f (%d turns)", b.NewTurnMax, mean(b.NewTurnSum, b.NewTurns), b.NewTurns),
		"budget 3 (no context to load)", fmt.Sprintf("%d/3", b.NewTurnMax))
	add("DynamoDB requests per completed turn, session with history",
		fmt.Sprintf("max %d, mean %.2f (%d turns)", b.ContTurnMax, mean(b.ContTurnSum, b.ContTurns), b.ContTurns),
		"budget 4", fmt.Sprintf("%d/4", b.ContTurnMax))
	add("DynamoDB requests per history page",
		fmt.Sprintf("max %d, mean %.2f (%d pages)", b.PageMax, mean(b.PageSum, b.Pages), b.Pages),
		"budget 1", fmt.Sprintf("%d/1", b.PageMax))
	for _, c := range set.Concurrency {
		ceiling, tr := rep.Writes[c], rep.Turns[c]
		fails := ""
		if tr.NotDone > 0 {
			fails = fmt.Sprintf(", %d not completed", tr.NotDone)
		}
		perKind := []string{}
		for _, k := range []string{dynamobench.KindClaim, dynamobench.KindContext, dynamobench.KindSave, dynamobench.KindRelease, dynamobench.KindRenew} {
			if d, ok := tr.ByKind[k]; ok {
				perKind = append(perKind, k+" "+ms(d))
			}
		}
		add(fmt.Sprintf("turns/s, %d concurrent session(s), echo no delay", c),
			fmt.Sprintf("%.0f turns/s%s; a turn %s, of it %s in %.1f DynamoDB calls (each: %s)", tr.TurnsPerSec, fails,
				ms(tr.TurnMean), ms(tr.DynamoMean), tr.CallsMean, strings.Join(perKind, ", ")),
			fmt.Sprintf("%.0f conditional UpdateItem/s (%s each); ceiling/4 = %.0f turns/s", ceiling,
				ms(time.Duration(float64(c)*float64(time.Second)/ceiling)), ceiling/4),
			fmt.Sprintf("%.0f%% of ceiling/4", 100*tr.TurnsPerSec/(ceiling/4)))
	}
	add("time to first snapshot p50 / p99 (request sent -> first NDJSON line)",
		ms(rep.TTFS.P50)+" / "+ms(rep.TTFS.P99),
		"ClaimTurn alone: "+ms(rep.Claim.P50)+" / "+ms(rep.Claim.P99),
		signedMS(rep.TTFS.P50-rep.Claim.P50)+" / "+signedMS(rep.TTFS.P99-rep.Claim.P99))
	for _, scope := range []string{"session", "turn"} {
		wr := rep.Wire[scope]
		add(fmt.Sprintf("bytes on the wire per turn, %s scope (10 prior turns, 1,206-char answer)", scope),
			fmt.Sprintf("%d B TCP (%d B body, %d lines)", wr.TCPBytes, wr.BodyBytes, wr.Snapshots),
			fmt.Sprintf("final snapshot %d B", wr.FinalBytes),
			fmt.Sprintf("%.1fx", float64(wr.TCPBytes)/float64(wr.FinalBytes)))
	}
	d0, d1 := rep.Depth[set.Depths[0]], rep.Depth[set.Depths[1]]
	add(fmt.Sprintf("history page of 10, depth %d: p50 / p99, requests", set.Depths[1]),
		fmt.Sprintf("%s / %s, %d Query; the page after the newest %d (by cursor): %s / %s (seeded in %s)", ms(d1.Latency.P50), ms(d1.Latency.P99), d1.MaxQueries,
			d1.MiddleAt, ms(d1.Middle.P50), ms(d1.Middle.P99), d1.Seed.Round(time.Millisecond)),
		fmt.Sprintf("depth %d: %s / %s, %d Query", set.Depths[0], ms(d0.Latency.P50), ms(d0.Latency.P99), d0.MaxQueries),
		fmt.Sprintf("%.2fx p50", float64(d1.Latency.P50)/float64(d0.Latency.P50)))

	return rows
}

// bootstrapRows are the cold-start, size and peak memory rows of the
// bootstraps, and turnbench's own peak memory.
func bootstrapRows(rep *report, set settings) [][4]string {
	var rows [][4]string
	add := func(figure, measured, baseline, vs string) {
		rows = append(rows, [4]string{figure, measured, baseline, vs})
	}
	native := rep.NativeArc
	base := rep.Cold[baseline]
	build := `-tags lambda.norpc -trimpath -ldflags "-s -w"`
	if !set.ReleaseBuilds {
		build = "the test build, internal/lambdabin"
	}
	size := func(name string) string {
		var sizes []string
		if s := rep.Sizes["arm64"][name]; s > 0 {
			sizes = append(sizes, fmt.Sprintf("%.2f MiB linux/arm64", mib(s)))
		}
		if n := rep.Sizes[native][name]; n > 0 && native != "arm64" {
			sizes = append(sizes, fmt.Sprintf("%.2f MiB linux/%s (run)", mib(n), native))
		}
		if len(sizes) == 0 {
			return "-"
		}
		return strings.Join(sizes, ", ")
	}
	for _, fn := range functions {
		cr := rep.Cold[fn]
		if cr == nil || len(cr.ColdStarts) == 0 || base == nil || len(base.ColdStarts) == 0 {
			why := skipReason(rep.ColdErr)
			if rep.ColdErr == nil && !slices.Contains(set.ColdFunctions, fn) {
				why = "-quick runs the turn bootstrap only"
			}
			add(fmt.Sprintf("%s bootstrap: cold start", fn), "not measured: "+why, "-", "-")
			continue
		}
		c, b := median(cr.ColdStarts), median(base.ColdStarts)
		add(fmt.Sprintf("%s bootstrap: cold start under aws-lambda-rie, exec -> first Runtime API request (median of %d; first invoke end to end)", fn, len(cr.ColdStarts)),
			fmt.Sprintf("%s (%s)", ms(c), ms(median(cr.FirstInvoke))),
			fmt.Sprintf("minimal Go function URL bootstrap: %s (%s)", ms(b), ms(median(base.FirstInvoke))),
			signedMS(c-b))
	}
	for _, fn := range functions {
		if rep.Sizes["arm64"][fn] == 0 && rep.Sizes[native][fn] == 0 {
			continue
		}
		ratio := "-"
		if a, b := rep.Sizes["arm64"][fn], rep.Sizes["arm64"][baseline]; a > 0 && b > 0 {
			ratio = fmt.Sprintf("%.1fx (arm64)", float64(a)/float64(b))
		} else if a, b := rep.Sizes[native][fn], rep.Sizes[native][baseline]; a > 0 && b > 0 {
			ratio = fmt.Sprintf("%.1fx (%s)", float64(a)/float64(b), native)
		}
		add(fmt.Sprintf("%s bootstrap: binary size (%s)", fn, build),
			size(fn), "minimal bootstrap: "+size(baseline), ratio)
	}
	for _, fn := range functions {
		cr := rep.Cold[fn]
		if cr == nil || cr.PeakRSSKiB == 0 || base == nil || base.PeakRSSKiB == 0 {
			continue
		}
		add(fmt.Sprintf("%s bootstrap: peak RSS (VmHWM) after %d invocations under the emulator", fn, cr.Invocations+1),
			fmt.Sprintf("%.1f MiB", float64(cr.PeakRSSKiB)/1024),
			fmt.Sprintf("minimal bootstrap, same invocations: %.1f MiB", float64(base.PeakRSSKiB)/1024),
			fmt.Sprintf("%+.1f MiB", float64(cr.PeakRSSKiB-base.PeakRSSKiB)/1024))
	}
	dyn := "not started here"
	if rep.DynHWM > 0 {
		dyn = fmt.Sprintf("%.1f MiB", float64(rep.DynHWM)/1024)
	}
	add("turnbench process peak RSS (VmHWM): all three handlers in process, clients, load run",
		fmt.Sprintf("%.1f MiB", float64(rep.SelfHWM)/1024), "dynalite process: "+dyn, "-")

	return rows
}

// loadRows are the load run's rows.
func loadRows(l *loadReport, lc loadConfig) [][4]string {
	var rows [][4]string
	add := func(figure, measured, baseline, vs string) {
		rows = append(rows, [4]string{figure, measured, baseline, vs})
	}
	add(fmt.Sprintf("load run: %d sessions x %d turns, %.0f%% of DynamoDB calls faulty at the HTTP transport (lost answer, 500 after apply, 500 before apply, hung; on every attempt for %.0f%% of them; attempt timeout %s) plus %d aimed cases, %.0f%% of streams cut",
		lc.Sessions, lc.Turns, 100*lc.Faults.FailRate, 100*lc.Faults.Persistent, lc.AttemptTimeout, len(aims), 100*lc.DisconnectRate),
		fmt.Sprintf("%d turns attempted, %d requests, %d acknowledged, %d disconnects, %d client retries (409 busy, 500), %d replays; %d aimed",
			l.TurnsAttempted, l.Requests, l.Acknowledged, l.Disconnects, l.Retried, l.Replays, sum(l.Aimed)),
		fmt.Sprintf("faulted attempts: %s; calls the SDK gave up early, its retry quota empty: %d", counts(l.Injected), l.QuotaExceeded),
		"not acknowledged: "+counts(l.Outcomes))
	add("load run verification (history handler, faults off)",
		fmt.Sprintf("%d/%d acknowledged turns verified; lost %d, duplicated %d, unknown %d; reported unsaved but saved %d (%d of them unresolvable: the resolving read failed on every attempt too)",
			l.Verified, l.Acknowledged, l.Lost, l.Duplicates, l.Foreign, l.UnsavedSaved, l.UnsavedSavedUnresolvable),
		fmt.Sprintf("outcomes %d checked against the request's faults, %d wrong, %d not attributable (a write reached DynamoDB and got no answer); SESSION_BUSY for its own applied claim %d",
			l.Checked, l.Wrong, l.Unattributable, l.BusyOwnClaim),
		fmt.Sprintf("leases held after the run %d (all explained and expiring within the lease: %v), held past expiry %d",
			l.LeasesHeldAfterRun, l.LeasesPastExpiry == 0, l.LeasesPastExpiry))
	add("load run: claims whose write applied but whose answer was lost or a 500 (the SDK retried or gave up)",
		fmt.Sprintf("%d, of them ran exactly once %d", l.ClaimsAnswerLost, l.ClaimsRanOnce),
		fmt.Sprintf("recognised, then the context load failed on every attempt (500, recorded once) %d; unresolvable (500: the resolving read failed on every attempt too) %d", l.ClaimsFailedAfter, l.ClaimsUnresolvable),
		fmt.Sprintf("%d/%d ran once", l.ClaimsRanOnce, l.ClaimsAnswerLost-l.ClaimsFailedAfter-l.ClaimsUnresolvable))
	add("load run: snapshot lines streamed after a lease was lost",
		fmt.Sprintf("%d after their lease's expiry, %d after a later claim of the session applied (of %d snapshot lines)", l.AfterExpiry, l.AfterClaim, l.Lines),
		fmt.Sprintf("emitted while a later claim was in flight (ambiguous) %d; emitted before it, received after %d; within the expiry of a renewal that reached DynamoDB unanswered (the store may have resolved it applied) %d", l.Ambiguous, l.InFlight, l.AfterUnknownRenewal),
		"-")

	return rows
}

// errWriter keeps the first write error and skips writes after it.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, a ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, a...)
	}
}

// sum adds a map's counts.
func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func mean(sum, n int) float64 {
	if n == 0 {
		return 0
	}
	return float64(sum) / float64(n)
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// signedMS formats d in milliseconds with an explicit sign.
func signedMS(d time.Duration) string {
	return fmt.Sprintf("%+.2f ms", float64(d)/float64(time.Millisecond))
}

func median(d []time.Duration) time.Duration {
	return quantile(slices.Clone(d), 0.5)
}

// counts renders a map of counts as "k n, k n" in key order.
func counts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

// skipReason is err's text, or "skipped".
func skipReason(err error) string {
	if err == nil {
		return "skipped"
	}
	return err.Error()
}

// cell escapes a markdown table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", "\\|") }
