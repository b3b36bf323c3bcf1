package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

// durableAll makes the uncounted client the meter's size reads use and
// runs the durable-turn and wire sections (only: their names, nil for
// both).
func durableAll(ctx context.Context, endpoint string, client dynamo.Client, table string, cursorKey []byte, prefix string, quick bool, only map[string]bool, progress func(string, ...any)) (*durableReport, error) {
	raw, err := dynamo.NewClient(ctx, dynamo.ClientOptions{Endpoint: endpoint, Region: "us-east-1",
		StaticCredentials: os.Getenv("AWS_ACCESS_KEY_ID") == ""})
	if err != nil {
		return nil, err
	}
	ds := fullDurable()
	if quick {
		ds = quickDurable()
	}
	return durableSections(ctx, client, raw, endpoint, table, cursorKey, prefix, ds, only, progress)
}

// runOnly is run with -only: the named sections alone, in their own table.
func runOnly(ctx context.Context, rep *report, only, endpoint string, client dynamo.Client, table string, cursorKey []byte, prefix string, progress func(string, ...any), stdout io.Writer) (*report, error) {
	names := map[string]bool{}
	for _, n := range strings.Split(only, ",") {
		switch n = strings.TrimSpace(n); n {
		case "durable", "wire":
			names[n] = true
		default:
			return nil, fmt.Errorf("-only: unknown section %q (durable, wire)", n)
		}
	}
	var err error
	if rep.Durable, err = durableAll(ctx, endpoint, client, table, cursorKey, prefix, rep.Quick, names, progress); err != nil {
		return nil, err
	}
	rep.Load = &loadReport{} // not run: nothing to verify
	progress("done")
	ew := &errWriter{w: stdout}
	ew.printf("| figure | measured | baseline (same run) | measured vs baseline |\n| --- | --- | --- | --- |\n")
	for _, r := range durableRows(rep.Durable) {
		ew.printf("| %s | %s | %s | %s |\n", cell(r[0]), cell(r[1]), cell(r[2]), cell(r[3]))
	}
	if n := rep.Durable.NoCapacity; n > 0 {
		ew.printf("\n%d writes were answered without ConsumedCapacity (not counted).\n", n)
	}
	return rep, ew.err
}

// durableRows renders the durable-turn and wire sections' rows (none when
// they did not run).
func durableRows(d *durableReport) [][4]string {
	if d == nil {
		return nil
	}
	var rows [][4]string
	add := func(figure, measured, baseline, vs string) {
		rows = append(rows, [4]string{figure, measured, baseline, vs})
	}
	pace := fmt.Sprintf("%.0f chars/s (echo %d runes every %s)", textRate, echoChunk, echoDelay)
	for _, c := range d.Cost {
		add(fmt.Sprintf("billed write units per turn, %s answer at %s, checkpoints every 1 s (LSI writes computed)", kb(c.Size), pace),
			fmt.Sprintf("%.0f WCU (table %.0f + LSI %d; the first checkpoint's turn item write %.0f); %d requests, %d writes, %d checkpoint writes of the live item; final turn item %d B",
				c.On.Units(), c.On.TableUnits, c.On.IndexUnits, c.On.FirstItemUnits, c.On.Requests, c.On.Writes, c.On.Checkpoints, c.On.FinalItemBytes),
			fmt.Sprintf("checkpoints off: %.0f WCU (table %.0f + LSI %d), %d requests; bound 3 x %d KB + 2 x %d + %.0f = %.0f WCU",
				c.Off.Units(), c.Off.TableUnits, c.Off.IndexUnits, c.Off.Requests, kbUnits(c.On.FinalItemBytes), c.On.Checkpoints, c.Off.Units(), c.Bound()),
			fmt.Sprintf("%.2fx off; %.0f%% of the bound", c.On.Units()/c.Off.Units(), 100*c.On.Units()/c.Bound()))
	}
	for _, c := range d.Cost {
		add(fmt.Sprintf("DynamoDB requests per turn, checkpoints off, %s answer (%s)", kb(c.Size), c.Off.Took.Round(100*time.Millisecond)),
			fmt.Sprint(c.Off.Requests), "budget 4 (lease renewal adds one per LEASE_DURATION/3)", fmt.Sprintf("%d/4", c.Off.Requests))
	}
	if r := d.Resume; r != nil {
		add(fmt.Sprintf("resume latency p50 / p99: checkpoint write answered -> the resumer's line of that sequence (%d samples, %d turns of %s)", r.Samples, r.Turns, kb(d.Set.ResumeSize)),
			ms(r.Latency.P50)+" / "+ms(r.Latency.P99),
			"RESUME_POLL_INTERVAL "+ms(r.Poll),
			fmt.Sprintf("p50 %.2fx, p99 %.2fx the poll interval", float64(r.Latency.P50)/float64(r.Poll), float64(r.Latency.P99)/float64(r.Poll)))
		add("resumed lines: decoded / same sequence and messages as a live line / all",
			fmt.Sprintf("%d / %d / %d; sequences increasing: %v", r.Decoded, r.Known, r.Lines, r.Increasing),
			fmt.Sprintf("terminal snapshot's messages equal to the live one's: %d of %d resumers", r.TerminalEqual, r.Turns), "-")
	}
	if on, off := d.Stop["on"], d.Stop["off"]; on != nil && off != nil {
		met := "met"
		if on.Latency.P99 > 1500*time.Millisecond {
			met = "NOT met"
		}
		add(fmt.Sprintf("stop latency p50 / p99: POST /stop -> interrupted terminal line, checkpoints every %s (%d of %d TURN_INTERRUPTED)", on.Checkpoints, on.Interrupted, on.Turns),
			ms(on.Latency.P50)+" / "+ms(on.Latency.P99),
			fmt.Sprintf("checkpoints off, stop seen at the lease renewal (LEASE_DURATION %s shortened for the run, renewal every %s): %s / %s (%d of %d)",
				off.Lease, off.Lease/3, ms(off.Latency.P50), ms(off.Latency.P99), off.Interrupted, off.Turns),
			fmt.Sprintf("target p99 <= 1.5 s %s; p99 %+.0f ms vs off", met, float64(on.Latency.P99-off.Latency.P99)/float64(time.Millisecond)))
	}
	if c := d.Crash; c != nil {
		bound := textRate * c.Interval.Seconds()
		add(fmt.Sprintf("characters lost in a crash: received by the client, not in history after the lease (%s) expired; %d turns, DynamoDB cut 1-4 s in", c.Lease, c.Turns),
			fmt.Sprintf("max %d chars (per turn %v, of %v received); %d of %d crash records (error TURN_LOST with the user message)", c.lostMax(), c.Lost, c.Received, c.Recorded, c.Turns),
			fmt.Sprintf("checkpoint interval x text rate: %s x %.0f chars/s = %.0f chars", c.Interval, textRate, bound),
			fmt.Sprintf("%.2fx", float64(c.lostMax())/bound))
	}
	scale := ""
	if d.Set.WireScale != 1 {
		scale = fmt.Sprintf(", clock x%d (rates, interval, gap scaled alike)", d.Set.WireScale)
	}
	unpacedOf := func(p *pacedWire) *pacedWire {
		for _, u := range d.Wire {
			if !u.Paced && !u.Compact && u.Size == p.Size && u.TurnScope == p.TurnScope {
				return u
			}
		}
		return nil
	}
	for _, p := range d.Wire {
		u := unpacedOf(p)
		if !p.Paced || p.Compact || u == nil {
			continue
		}
		scope := "session"
		if p.TurnScope {
			scope = "turn"
		}
		goal := ""
		switch p.Size {
		case 1 << 10:
			goal = "; goal <= 25x"
		case 64 << 10:
			goal = "; goal <= 40x"
		}
		add(fmt.Sprintf("bytes on the wire per turn, %s answer at %s, %s scope (10 prior turns%s), paced (4096 B/s, max gap 2 s)", kb(p.Size), pace, scope, scale),
			fmt.Sprintf("%d B TCP (%d B body), %d lines, %.1fx the final snapshot (%d B); largest gap between streaming snapshots %s", p.TCPBytes, p.BodyBytes, p.Lines, p.Ratio(), p.FinalBytes, ms(p.MaxGap)),
			fmt.Sprintf("unpaced (a snapshot every 50 ms): %d B TCP, %d lines, %.1fx; largest gap %s", u.TCPBytes, u.Lines, u.Ratio(), ms(u.MaxGap)),
			fmt.Sprintf("%.1fx vs %.1fx (%.2f of unpaced)%s; floor for complete snapshots at most 2 s apart over this turn's %s: %.1fx", p.Ratio(), u.Ratio(), float64(p.TCPBytes)/float64(u.TCPBytes), goal, p.Took.Round(100*time.Millisecond), p.Floor(2*time.Second)))
	}
	return append(rows, compactRows(d, pace, scale)...)
}

// kb formats a size of whole KiB as "N KB".
func kb(n int) string { return fmt.Sprintf("%d KB", n>>10) }
