package main

import (
	"context"
	"fmt"
	"time"
)

// durableSection runs the durable-turn and wire sections named in names
// (their sizes: quickDurable with -quick).
func durableSection(ctx context.Context, b *bench, rep *report, names map[string]bool) error {
	raw, err := b.rawClient(ctx)
	if err != nil {
		return err
	}
	ds := fullDurable()
	if rep.Quick {
		ds = quickDurable()
	}
	rep.Durable, err = durableSections(ctx, b.client, raw, b.endpoint, b.table, b.cursorKey, b.prefix, ds, names, b.progress)
	return err
}

// durableNotes reports writes the capacity accounts could not count.
func durableNotes(rep *report) []string {
	if n := rep.Durable.NoCapacity; n > 0 {
		return []string{fmt.Sprintf("%d writes were answered without ConsumedCapacity (not counted).", n)}
	}
	return nil
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
			fmt.Sprintf("checkpoints off: %.0f WCU (table %.0f + LSI %d), %d requests; bound 3 x %d KB + 2 x %d + %d + %.0f = %.0f WCU",
				c.Off.Units(), c.Off.TableUnits, c.Off.IndexUnits, c.Off.Requests, kbUnits(c.On.FinalItemBytes), c.On.Checkpoints, c.Size/1024, c.Off.Units(), c.Bound()),
			fmt.Sprintf("%.2fx off; %.0f%% of the bound", c.On.Units()/c.Off.Units(), 100*c.On.Units()/c.Bound()))
	}
	for _, c := range d.Cost {
		add(fmt.Sprintf("DynamoDB requests per turn, checkpoints off, %s answer (%s)", kb(c.Size), c.Off.Took.Round(100*time.Millisecond)),
			fmt.Sprintf("%d (%d of them renewals)", c.Off.Requests, c.Off.Renewals), "budget 4 (lease renewal adds one per LEASE_DURATION/3)",
			fmt.Sprintf("%d/%d", c.Off.Requests, 4+c.Off.Renewals))
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
		bound := c.lossBound(textRate)
		add(fmt.Sprintf("characters lost in a crash: received by the client, not in history after the lease (%s) expired; %d turns, DynamoDB cut 1-4 s in", c.Lease, c.Turns),
			fmt.Sprintf("max %d chars (per turn %v, of %v received); %d of %d crash records (error TURN_LOST with the user message)", c.lostMax(), c.Lost, c.Received, c.Recorded, c.Turns),
			fmt.Sprintf("a checkpoint's least change (min(CHECKPOINT_MIN_CHANGE %d B, 4 intervals x text rate)) + one interval's text: %.0f chars at %.0f chars/s, interval %s", c.MinChange, bound, textRate, c.Interval),
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
