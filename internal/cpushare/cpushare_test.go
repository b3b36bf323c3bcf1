package cpushare

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestQuota(t *testing.T) {
	for mb, want := range map[int]int64{128: 7236, 256: 14471, 512: 28943, 1024: 57886, 1769: 100_000, 3538: 200_000} {
		if got := Quota(mb); got != want {
			t.Errorf("Quota(%d) = %d, want %d", mb, got, want)
		}
	}
	if got := Share(128); math.Abs(got-0.07236) > 1e-9 {
		t.Errorf("Share(128) = %v, want 0.07236", got)
	}
}

func TestPerMillion(t *testing.T) {
	// 1 s at 1,024 MB: one GB-second and one request, a million times.
	if got, want := PerMillion(time.Second, 1024), 13.3334+0.20; math.Abs(got-want) > 1e-6 {
		t.Errorf("PerMillion(1s, 1024) = %v, want %v", got, want)
	}
	// Billed per millisecond: 2.4004 s at 128 MB bills 2.400 s.
	if got, want := PerMillion(2400400*time.Microsecond, 128), 2.4*0.125*13.3334+0.20; math.Abs(got-want) > 1e-6 {
		t.Errorf("PerMillion(2.4004s, 128) = %v, want %v", got, want)
	}
}

// size is a turn run at mb: its warm time to first line, its 16 KB
// answer's time (the model alone takes 40.96 s) and a 1 KB turn's.
func size(mb int, ttfs, long time.Duration) *Size {
	return coldSize(mb, ttfs, 100*time.Millisecond, long)
}

// coldSize is size with the cold invokes' time to first line.
func coldSize(mb int, ttfs, cold, long time.Duration) *Size {
	return &Size{MemoryMB: mb, Quota: Quota(mb), Boots: map[string]*Boot{"turn": {
		ColdFirstLine: []time.Duration{cold, cold + 10*time.Millisecond, cold - 10*time.Millisecond},
		FirstLine:     []time.Duration{ttfs, ttfs + time.Millisecond, ttfs - time.Millisecond},
		Took:          []time.Duration{2600 * time.Millisecond},
		Long:          &Long{Answer: 16 << 10, Lines: 800, Took: long, CPU: 800 * time.Millisecond},
	}}}
}

func TestJudgeChoose(t *testing.T) {
	ref := size(1024, 20*time.Millisecond, 41*time.Second)
	tests := map[string]struct {
		sizes []*Size
		want  int // 0: none
	}{
		"all within: the smallest":          {[]*Size{size(128, 60*time.Millisecond, 42*time.Second), size(256, 30*time.Millisecond, 41*time.Second), ref}, 128},
		"128 MB too slow to first snapshot": {[]*Size{size(128, 71*time.Millisecond, 41*time.Second), size(256, 69*time.Millisecond, 41*time.Second), ref}, 256},
		"128 MB falls behind the model":     {[]*Size{size(128, 20*time.Millisecond, 46*time.Second), size(512, 20*time.Millisecond, 44*time.Second), ref}, 512},
		"128 MB too slow to a cold start's first snapshot": {[]*Size{coldSize(128, 20*time.Millisecond, 360*time.Millisecond, 41*time.Second),
			coldSize(256, 20*time.Millisecond, 151*time.Millisecond, 41*time.Second), ref}, 1024},
		"256 MB's cold start within": {[]*Size{coldSize(128, 20*time.Millisecond, 360*time.Millisecond, 41*time.Second),
			coldSize(256, 20*time.Millisecond, 150*time.Millisecond, 41*time.Second), ref}, 256},
		"only the reference": {[]*Size{size(128, time.Second, 90*time.Second), ref}, 1024},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			v, err := Judge(tc.sizes)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := Choose(v)
			if !ok || got.MemoryMB != tc.want {
				t.Fatalf("Choose = %d MB (%v), want %d MB; verdicts %+v", got.MemoryMB, ok, tc.want, v)
			}
		})
	}
	if _, err := Judge([]*Size{size(128, 0, time.Second)}); err == nil {
		t.Error("Judge without the reference size: no error")
	}
	if got := (&Long{Answer: 16 << 10, Took: 50 * time.Second, CPU: 500 * time.Millisecond}).ShareUsed(128); math.Abs(got-0.5/50/0.07236) > 1e-9 {
		t.Errorf("ShareUsed = %v", got)
	}
	if _, ok := Choose(nil); ok {
		t.Error("Choose(nil) chose")
	}
}

func TestAvailable(t *testing.T) {
	err := Available(t.TempDir()) // no cpu.cfs_quota_us there
	if !errors.Is(err, ErrSkipped) {
		t.Fatalf("Available(empty dir) = %v, want ErrSkipped", err)
	}
	rows := (&Result{Err: err}).Rows()
	if len(rows) != 1 || rows[0][1][:len("skipped: ")] != "skipped: " {
		t.Errorf("rows of a skipped run = %q", rows)
	}
}

// TestNewCgroup writes a group's files into a plain directory standing
// in for the cgroup filesystem.
func TestNewCgroup(t *testing.T) {
	root := t.TempDir()
	g, err := newCgroup(root, "g", 128)
	if err != nil {
		t.Fatal(err)
	}
	for f, want := range map[string]string{"cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": "7236"} {
		got, err := os.ReadFile(filepath.Join(root, "g", f))
		if err != nil || string(got) != want {
			t.Errorf("%s = %q (%v), want %q", f, got, err, want)
		}
	}
	if g.procs() != filepath.Join(root, "g", "cgroup.procs") {
		t.Errorf("procs = %s", g.procs())
	}
}
