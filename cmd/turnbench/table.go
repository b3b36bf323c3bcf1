package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/turnstream/turnstream/internal/dynamobench"
)

// writeTable renders the sections that ran as one markdown table: figure,
// measured value, the baseline measured in the same run (or the budget it
// is held to), and the measured value relative to that baseline; then the
// DynamoDB call counts and the sections' notes. only says that the
// sections ran alone (-only).
func writeTable(w io.Writer, rep *report, ran []chosenSection, only bool) error {
	ew := &errWriter{w: w}
	ew.printf("| figure | measured | baseline (same run) | measured vs baseline |\n| --- | --- | --- | --- |\n")
	for _, c := range ran {
		for _, r := range c.section.rows(rep, only) {
			ew.printf("| %s | %s | %s | %s |\n", cell(r[0]), cell(r[1]), cell(r[2]), cell(r[3]))
		}
	}
	ew.printf("\nDynamoDB: %d API calls, %d HTTP attempts (retries: %d).\n", rep.Calls, rep.Attempts, rep.Retries)
	for _, k := range slices.Sorted(maps.Keys(rep.AttemptErrors)) {
		ew.printf("failed DynamoDB attempts (%d): %s\n", rep.AttemptErrors[k], k)
	}
	for _, c := range ran {
		if c.section.notes != nil {
			for _, n := range c.section.notes(rep) {
				ew.printf("%s\n", n)
			}
		}
	}
	return ew.err
}

// handlerRows are the rows of the handler sections: request budgets,
// throughput, time to first snapshot, wire bytes, history depth.
func handlerRows(rep *report, _ bool) [][4]string {
	set := rep.Set
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

func mean(sum, n int) float64 {
	if n == 0 {
		return 0
	}
	return float64(sum) / float64(n)
}

// signedMS formats d in milliseconds with an explicit sign.
func signedMS(d time.Duration) string {
	return fmt.Sprintf("%+.2f ms", float64(d)/float64(time.Millisecond))
}

// cell escapes a markdown table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", "\\|") }
