package archcheck

import (
	"os"
	"path/filepath"
	"testing"
)

// clockExempt are the functions of the turn path that may read the
// runtime's clock: a context's deadline is on it, so the time left until
// one is measured there (pkg/turn/engine/engine.go).
var clockExempt = map[string]bool{"contextLeft": true}

// TestOneClock: the turn path reads time only from its injected clock
// (turn.Options.Clock, engine.Config.Clock): no call of package time's
// clock functions in the non-test files of pkg/turn and pkg/turn/engine
// but the exempt ones.
func TestOneClock(t *testing.T) {
	for _, rel := range []string{"pkg/turn", "pkg/turn/engine", "pkg/quota"} {
		sites, err := WallClockCalls(repoRoot(t), rel, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range sites {
			if !clockExempt[s.In] {
				t.Errorf("%s: the turn path reads the runtime's clock; use the engine's clock (Config.Clock)", s)
			}
		}
	}
	// The tests of the turn path and the stores never sleep on the
	// runtime's clock: timing tests run under testing/synctest (where a
	// sleep passes the bubble's time, none of the runtime's) or a fake
	// clock, and waits wait on events.
	for _, rel := range []string{"pkg/turn", "pkg/turn/engine", "pkg/store/dynamo", "pkg/store/memory", "pkg/store/storetest"} {
		tests, err := WallClockCalls(repoRoot(t), rel, true)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range tests {
			if s.Func == "time.Sleep" && !s.InBubble {
				t.Errorf("%s: a test sleeps; wait on an event, or run it under testing/synctest", s)
			}
		}
	}
}

// TestWallClockCalls finds each clock function under its import name,
// inside and outside functions, and only in the files asked for.
func TestWallClockCalls(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(dir, "p"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "p", name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.go", "package p\n\nimport stdtime \"time\"\n\nvar start = stdtime.Now()\n\nfunc f() { _ = stdtime.Since(start); stdtime.Sleep(1) }\n")
	write("b.go", "package p\n\nimport \"time\"\n\nfunc g(c interface{ Now() time.Time }) time.Time { return c.Now() }\n")
	write("a_test.go", "package p\n\nimport (\n\t\"testing\"\n\tst \"testing/synctest\"\n\t\"time\"\n)\n\n"+
		"func h() { time.Sleep(1) }\n\n"+
		"func TestB(t *testing.T) {\n\tst.Test(t, func(*testing.T) { time.Sleep(2) })\n\ttime.Sleep(3)\n}\n")
	got, err := WallClockCalls(dir, "p", false)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"p/a.go:5 time.Now in ", "p/a.go:7 time.Since in f", "p/a.go:7 time.Sleep in f"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Errorf("site %d: %q, want %q", i, got[i], want[i])
		}
	}
	tests, err := WallClockCalls(dir, "p", true)
	if err != nil || len(tests) != 3 {
		t.Fatalf("test files: %v, %v; want the three time.Sleep", tests, err)
	}
	for i, inBubble := range []bool{false, true, false} {
		if tests[i].Func != "time.Sleep" || tests[i].InBubble != inBubble {
			t.Errorf("test site %d: %+v, want a time.Sleep in a bubble %v", i, tests[i], inBubble)
		}
	}
}
