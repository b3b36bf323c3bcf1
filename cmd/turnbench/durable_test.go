package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/dynalite"
	"github.com/turnstream/turnstream/pkg/config"
)

// TestDurableSections runs the durable-turn and wire sections in quick
// mode on dynalite (-quick -only durable,wire) and checks what must hold
// whatever the machine's speed: a turn with checkpoints off costs 4
// requests and one per lease renewal (a slow machine's longer stream
// renews), and checkpoints write more (the acknowledgment, and from 2 KB
// a checkpoint of its own); the write units stay within the
// issue's bound; every resumed line decodes and carries a sequence and
// messages the live stream carried, increasing, ending with the live
// terminal messages; every stop ends TURN_INTERRUPTED; every crash leaves
// a TURN_LOST record lacking at most a checkpoint's least change and two
// intervals of what the client had received; paced
// snapshots send fewer bytes than unpaced ones. Timings are reported,
// never asserted.
func TestDurableSections(t *testing.T) {
	t.Setenv("DYNAMODB_ENDPOINT", dynalite.Endpoint(t)) // run uses it instead of starting its own
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var out bytes.Buffer
	rep, err := run(ctx, []string{"-quick", "-only", "durable,wire"}, &out)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	t.Logf("\n%s", out.String())
	d := rep.Durable
	ds := quickDurable()

	if d.NoCapacity > 0 {
		t.Errorf("%d writes answered without ConsumedCapacity", d.NoCapacity)
	}
	if len(d.Cost) != len(ds.CostSizes) {
		t.Fatalf("cost rows: %d, want %d", len(d.Cost), len(ds.CostSizes))
	}
	for _, c := range d.Cost {
		// A turn that outlives a third of its lease renews it: a loaded
		// machine streams slower, so renewals are counted, not assumed.
		if c.Off.Requests != 4+c.Off.Renewals || c.Off.Checkpoints != 0 {
			t.Errorf("%d B, checkpoints off: %d requests (%d renewals), %d live writes; want 4 plus the renewals, and 0", c.Size, c.Off.Requests, c.Off.Renewals, c.Off.Checkpoints)
		}
		// The acknowledgment always; a checkpoint once the answer grew
		// by CHECKPOINT_MIN_CHANGE between two ticks, certain for an
		// answer of twice that.
		if c.On.Requests <= c.Off.Requests || c.On.TableUnits <= c.Off.TableUnits ||
			c.Size >= 2*config.DefaultCheckpointMinChange && c.On.Checkpoints < 1 {
			t.Errorf("%d B, checkpoints on: %+v; want the acknowledgment, and checkpoints from 2 KB, beyond the off turn's %+v", c.Size, c.On, c.Off)
		}
		if c.Off.IndexUnits < 2 || c.On.FinalItemBytes < c.Size {
			t.Errorf("%d B: off turn %d LSI units, final item %d B; want the save's two index entries and the answer in the item", c.Size, c.Off.IndexUnits, c.On.FinalItemBytes)
		}
		if c.On.Units() > c.Bound() {
			t.Errorf("%d B: %.0f WCU with checkpoints, above the bound %.0f", c.Size, c.On.Units(), c.Bound())
		}
	}

	r := d.Resume
	switch {
	case r.Lines == 0 || r.Decoded != r.Lines:
		t.Errorf("resume: %d of %d lines decoded", r.Decoded, r.Lines)
	case r.Known != r.Lines || !r.Increasing:
		t.Errorf("resume: %d of %d lines match a live line, increasing %v", r.Known, r.Lines, r.Increasing)
	case r.TerminalEqual != r.Turns:
		t.Errorf("resume: %d of %d terminal snapshots equal the live one", r.TerminalEqual, r.Turns)
	case r.Samples == 0:
		t.Errorf("resume: no resumed line matched a checkpoint write")
	}

	for name, s := range d.Stop {
		if s.Turns != ds.StopTurns || s.Interrupted != s.Turns {
			t.Errorf("stop (%s): %d of %d turns ended TURN_INTERRUPTED, want %d", name, s.Interrupted, s.Turns, ds.StopTurns)
		}
	}

	c := d.Crash
	if c.Recorded != ds.CrashTurns || len(c.Lost) != ds.CrashTurns {
		t.Errorf("crash: %d records of %d turns (%d measured)", c.Recorded, ds.CrashTurns, len(c.Lost))
	}
	for i := range c.Lost {
		// One more interval of text than the bound: a checkpoint may be
		// in flight when the process dies.
		bound := c.lossBound(float64(echoChunk)/echoDelay.Seconds()) + float64(echoChunk)/echoDelay.Seconds()*checkEvery.Seconds()
		if c.Received[i] == 0 || float64(c.Lost[i]) > bound {
			t.Errorf("crash turn %d: lost %d of %d received characters; want at most %.0f", i, c.Lost[i], c.Received[i], bound)
		}
	}

	if len(d.Wire) != 6*len(ds.WireSizes) {
		t.Fatalf("wire rows: %d, want %d", len(d.Wire), 6*len(ds.WireSizes))
	}
	for _, p := range d.Wire {
		if p.Lines < 2 || p.TCPBytes < p.BodyBytes || p.BodyBytes < p.FinalBytes {
			t.Errorf("wire %+v: want several lines and TCP >= body >= final", *p)
		}
		if p.Compact && (p.Appends == 0 || p.Snapshots < 2) {
			t.Errorf("compact wire %+v: want append lines between the first and the terminal snapshot", *p)
		}
	}
	if !strings.Contains(out.String(), "| figure | measured | baseline (same run) | measured vs baseline |") {
		t.Errorf("no table header")
	}
}
