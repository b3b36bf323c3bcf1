package clock_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/turnstream/turnstream/pkg/clock"
)

var start = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

// received returns what c holds now, without waiting.
func received(c <-chan time.Time) (time.Time, bool) {
	select {
	case t := <-c:
		return t, true
	default:
		return time.Time{}, false
	}
}

func TestFakeTimersFireInTimeOrder(t *testing.T) {
	f := clock.NewFake(start)
	late, early := f.NewTimer(3*time.Second), f.NewTimer(time.Second)
	if _, ok := received(early.C()); ok {
		t.Fatal("a timer fired before its time")
	}
	f.Advance(999 * time.Millisecond)
	if _, ok := received(early.C()); ok {
		t.Fatal("a timer fired 1 ms early")
	}
	f.Advance(5 * time.Second)
	if at, ok := received(early.C()); !ok || !at.Equal(start.Add(time.Second)) {
		t.Fatalf("early timer: %v, %v; want its own time", at, ok)
	}
	if at, ok := received(late.C()); !ok || !at.Equal(start.Add(3*time.Second)) {
		t.Fatalf("late timer: %v, %v; want its own time", at, ok)
	}
	if got := f.Now(); !got.Equal(start.Add(5999 * time.Millisecond)) {
		t.Fatalf("Now %v after the advances", got)
	}
	if f.Waiters() != 0 {
		t.Fatalf("%d waiters after every timer fired", f.Waiters())
	}
}

func TestFakeTimerStopAndReset(t *testing.T) {
	f := clock.NewFake(start)
	tm := f.NewTimer(time.Second)
	if !tm.Stop() || tm.Stop() {
		t.Fatal("Stop of an active timer, then of a stopped one")
	}
	f.Advance(2 * time.Second)
	if _, ok := received(tm.C()); ok {
		t.Fatal("a stopped timer fired")
	}
	if tm.Reset(time.Second) {
		t.Fatal("Reset of a stopped timer said it was active")
	}
	f.Advance(time.Second)
	if at, ok := received(tm.C()); !ok || !at.Equal(start.Add(3*time.Second)) {
		t.Fatalf("reset timer: %v, %v", at, ok)
	}
	// A timer that fired, unreceived, and is reset leaves no stale time.
	tm.Reset(time.Second)
	f.Advance(time.Second)
	tm.Reset(time.Second)
	if _, ok := received(tm.C()); ok {
		t.Fatal("a stale time after Reset")
	}
	if now := f.NewTimer(0); true {
		if _, ok := received(now.C()); !ok {
			t.Fatal("a zero timer did not fire at once")
		}
	}
}

func TestFakeTickerDropsMissedTicks(t *testing.T) {
	f := clock.NewFake(start)
	tk := f.NewTicker(100 * time.Millisecond)
	f.Advance(350 * time.Millisecond) // three ticks due, one slot
	if at, ok := received(tk.C()); !ok || !at.Equal(start.Add(100*time.Millisecond)) {
		t.Fatalf("first tick %v, %v; want the first one kept", at, ok)
	}
	if _, ok := received(tk.C()); ok {
		t.Fatal("missed ticks were queued")
	}
	f.Advance(50 * time.Millisecond)
	if at, ok := received(tk.C()); !ok || !at.Equal(start.Add(400*time.Millisecond)) {
		t.Fatalf("next tick %v, %v", at, ok)
	}
	tk.Stop()
	f.Advance(time.Second)
	if _, ok := received(tk.C()); ok {
		t.Fatal("a stopped ticker ticked")
	}
}

func TestFakeSetRefusesTheTimeBack(t *testing.T) {
	f := clock.NewFake(start)
	defer func() {
		if recover() == nil {
			t.Fatal("Set moved the time back without a panic")
		}
	}()
	f.Set(start.Add(-time.Nanosecond))
}

// TestSleep runs on the real clock in a testing/synctest bubble: its time
// is virtual, so the sleep takes exactly its duration and no wall time.
func TestSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := clock.Or(nil)
		t0 := c.Now()
		if !clock.Sleep(t.Context(), c, 90*time.Second) {
			t.Fatal("Sleep ended early")
		}
		if d := clock.Since(c, t0); d != 90*time.Second {
			t.Fatalf("slept %v, want 90s of virtual time", d)
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if clock.Sleep(ctx, c, time.Minute) {
			t.Fatal("Sleep outlived its context")
		}
		if d := clock.Until(c, t0.Add(2*time.Minute)); d != 29*time.Second {
			t.Fatalf("Until %v, want 29s", d)
		}
	})
}

// TestWallKeepsTheDistanceFromNow: an instant on a clock set far from
// package time converts to the wall instant as far from now; on Real it
// is unchanged.
func TestWallKeepsTheDistanceFromNow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, offset := range []time.Duration{-3 * time.Hour, 0, 5 * time.Hour} {
			f := clock.NewFake(time.Now().Add(offset))
			at := f.Now().Add(40 * time.Second)
			if got, want := clock.Wall(f, at), time.Now().Add(40*time.Second); !got.Equal(want) {
				t.Errorf("offset %v: Wall = %v, want %v", offset, got, want)
			}
		}
		at := start.Add(time.Minute)
		if got := clock.Wall(clock.Real, at); !got.Equal(at) {
			t.Errorf("Wall on Real = %v, want %v", got, at)
		}
	})
}
