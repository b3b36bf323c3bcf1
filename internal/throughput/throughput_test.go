package throughput

import (
	"os"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/dynalite"
	"github.com/turnstream/turnstream/internal/dynamobench"
)

// TestMain stops the dynalite the tests started.
func TestMain(m *testing.M) { dynalite.Main(m) }

// TestThroughputSection runs the quick throughput section on dynalite
// and checks its structure, never its timings: every level measured both
// phases, the turns' calls are the store's four kinds with bodies on the
// wire, and every request shape ran.
func TestThroughputSection(t *testing.T) {
	endpoint := dynalite.Endpoint(t)
	table := dynalite.Table(t)
	ts := Quick()
	levels, shapesOut, err := Measure(t.Context(), Config{Endpoint: endpoint, Table: table, CursorKey: []byte("turnbench-test-cursor-key-0123456"),
		Prefix: "tt"}, ts)
	if err != nil {
		t.Fatal(err)
	}
	if len(levels) != len(ts.Concurrency) {
		t.Fatalf("%d levels, want %d", len(levels), len(ts.Concurrency))
	}
	for _, l := range levels {
		if len(l.Turns) != ts.Reps || len(l.Ceiling) != ts.Reps {
			t.Fatalf("%d sessions: %d turn phases, %d ceilings; want %d each", l.Conc, len(l.Turns), len(l.Ceiling), ts.Reps)
		}
		c, tp := l.Ceiling[0], l.Turns[0]
		if c.Done == 0 || c.Calls["bare"] == nil || c.Calls["bare"].N < c.Done {
			t.Errorf("%d sessions, ceiling: %d writes, calls %v", l.Conc, c.Done, c.Calls)
		}
		if tp.Done == 0 || tp.NotDone != 0 {
			t.Errorf("%d sessions: %d turns acknowledged, %d not", l.Conc, tp.Done, tp.NotDone)
		}
		for _, k := range []string{dynamobench.KindClaim, dynamobench.KindSave, dynamobench.KindRelease} {
			s := tp.Calls[k]
			if s == nil || s.N < tp.Done || s.Sent == 0 || s.HTTP <= 0 || s.Call < s.HTTP {
				t.Errorf("%d sessions, %s calls: %+v for %d turns; want one a turn at least, bodies sent, HTTP time within the call's", l.Conc, k, s, tp.Done)
			}
		}
		// 3 calls for a session's first turn, 4 with a context load, and
		// one more (the claim's turn id lookup) once the session's terminal
		// window is full: a run long enough to reach that averages above 4.
		if n := tp.callsPer(); n < 3 || n > 5 {
			byKind := map[string]int64{}
			for k, s := range tp.Calls {
				byKind[k] = s.N
			}
			t.Errorf("%d sessions: %.2f calls a turn (%d turns; calls by kind %v), want 3-5", l.Conc, n, tp.Done, byKind)
		}
	}
	if len(shapesOut) != len(dynamobench.Shapes()) {
		t.Fatalf("%d request shapes measured, want %d", len(shapesOut), len(dynamobench.Shapes()))
	}
	for _, s := range shapesOut {
		if s.N == 0 || s.HTTP <= 0 || s.Sent == 0 || s.DynCPU != -1 {
			t.Errorf("shape %q: %+v; want calls with HTTP time and bytes, server CPU unknown (no pid)", s.Name, s)
		}
	}
	if rows := Rows(levels, shapesOut); len(rows) != 3*len(levels)+len(dynamobench.Shapes())-1 {
		t.Errorf("%d rows", len(rows))
	}
}

func TestParseProcStat(t *testing.T) {
	tests := map[string]struct {
		in   string
		want time.Duration
	}{
		// pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime ...
		"node":             {"4242 (node) S 1 4242 4242 0 -1 4194560 9000 0 12 0 250 50 0 0 20 0 11 0 100", 3 * time.Second},
		"comm with spaces": {"7 (a b) c) R 1 7 7 0 -1 0 0 0 0 0 1 2 0 0", 30 * time.Millisecond},
		"short":            {"7 (x) R 1 7", -1},
		"no comm":          {"garbage", -1},
		"not numbers":      {"7 (x) R 1 7 7 0 -1 0 0 0 0 0 u s", -1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := parseProcStat(tc.in); got != tc.want {
				t.Errorf("parseProcStat = %v, want %v", got, tc.want)
			}
		})
	}
	if d := procCPU(os.Getpid()); d < 0 && fileExists("/proc/self/stat") {
		t.Errorf("procCPU(self) = %v with /proc present", d)
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
