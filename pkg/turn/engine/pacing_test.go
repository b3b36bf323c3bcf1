package engine

import (
	"fmt"
	"testing"
	"time"
)

// pacingRun is a run with only the pacing options set.
func pacingRun(bps int64) *run {
	return bind(&run{h: &handler{opts: Config{
		SnapshotInterval: DefaultSnapshotInterval, SnapshotBytesPerSecond: bps, MaxSnapshotGap: DefaultMaxSnapshotGap,
	}}})
}

// simulateWire runs the pacing law over a virtual turn: an answer of size
// bytes written at rate bytes a second, snapshots of overhead bytes plus
// the text so far, the writer waking as soon as the gap after its last
// snapshot has passed. It returns the bytes of every snapshot (the first,
// the paced ones, the terminal) over the final snapshot, and the longest
// gap.
func simulateWire(t *run, size, rate, overhead int) (ratio float64, longest time.Duration) {
	total := time.Duration(float64(size) / float64(rate) * float64(time.Second))
	sent := overhead // the first snapshot, before any text
	gap := t.h.opts.SnapshotInterval
	for at := gap; at < total; at += gap {
		n := overhead + int(float64(rate)*at.Seconds())
		sent += n
		longest = max(longest, gap)
		gap = t.lines.snapshotGap(n)
	}
	final := overhead + size
	return float64(sent+final) / float64(final), longest
}

// TestPacingLawBounds: at 400 B/s the default law keeps a 1 KB answer far
// under 25x its final snapshot and never waits longer than MaxSnapshotGap;
// no law can beat the floor (a snapshot exactly every MaxSnapshotGap), and
// for a 64 KB answer this one stays within 5% of it.
func TestPacingLawBounds(t *testing.T) {
	paced := pacingRun(DefaultSnapshotBytesPerSecond)
	floor := pacingRun(1) // every gap at MaxSnapshotGap: the floor
	for _, size := range []int{1 << 10, 16 << 10, 64 << 10} {
		r, longest := simulateWire(paced, size, 400, 600)
		f, _ := simulateWire(floor, size, 400, 600)
		if longest > DefaultMaxSnapshotGap {
			t.Errorf("%d B: a gap of %s", size, longest)
		}
		if r < f*0.999 || (size == 64<<10 && r > f*1.05) {
			t.Errorf("%d B: %.1fx against a floor of %.1fx", size, r, f)
		}
		if size == 1<<10 && r > 25 {
			t.Errorf("1 KB: %.1fx", r)
		}
	}
}

// BenchmarkSnapshotGap is the pacing law's cost per streaming snapshot.
func BenchmarkSnapshotGap(b *testing.B) {
	t := pacingRun(DefaultSnapshotBytesPerSecond)
	var d time.Duration
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		d += t.lines.snapshotGap(600 + i%(64<<10))
	}
	_ = d
}

// BenchmarkPacedWire runs the law over a whole virtual turn at 400 B/s
// (100 tokens a second) per answer size and reports the bytes of its
// snapshots over the final one ("x-final"), beside the same turn unpaced
// (a snapshot every SnapshotInterval) and the floor of any stream of
// complete snapshots at most 2 s apart, so the law's ratios are read
// against both baselines in the same run.
func BenchmarkPacedWire(b *testing.B) {
	for _, size := range []int{1 << 10, 16 << 10, 64 << 10} {
		for _, law := range []struct {
			name string
			bps  int64
		}{{"paced", DefaultSnapshotBytesPerSecond}, {"unpaced", 1 << 50}, {"floor", 1}} {
			b.Run(fmt.Sprintf("%dKB/%s", size>>10, law.name), func(b *testing.B) {
				t := pacingRun(law.bps)
				var r float64
				var longest time.Duration
				b.ReportAllocs()
				for b.Loop() {
					r, longest = simulateWire(t, size, 400, 600)
				}
				b.ReportMetric(r, "x-final")
				b.ReportMetric(float64(longest.Milliseconds()), "max-gap-ms")
			})
		}
	}
}
