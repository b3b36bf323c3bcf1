package clock

import (
	"slices"
	"sync"
	"time"
)

// Fake is a manual Clock: its time moves only by Advance and Set, which
// fire, in time order, every timer and ticker whose time has come, each
// seeing Now at its own time. Timer and ticker channels have a buffer of
// one, as package time's: a tick nobody received is dropped. The zero
// Fake is not usable; make one with NewFake.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	seq     int64 // creation order, to fire timers due at one instant in order
	waiters []*fakeWaiter
}

// NewFake returns a Fake whose time is start.
func NewFake(start time.Time) *Fake { return &Fake{now: start} }

type fakeWaiter struct {
	c      chan time.Time
	at     time.Time
	period time.Duration // 0 for a timer
	seq    int64
	active bool
}

// Now implements Clock.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// NewTimer implements Clock.
func (f *Fake) NewTimer(d time.Duration) Timer {
	w := &fakeWaiter{c: make(chan time.Time, 1)}
	f.mu.Lock()
	f.arm(w, d)
	f.mu.Unlock()
	f.fire(time.Time{})
	return &fakeTimer{f: f, w: w}
}

// NewTicker implements Clock.
func (f *Fake) NewTicker(d time.Duration) Ticker {
	if d <= 0 {
		panic("clock: non-positive interval for NewTicker")
	}
	w := &fakeWaiter{c: make(chan time.Time, 1), period: d}
	f.mu.Lock()
	f.arm(w, d)
	f.mu.Unlock()
	return &fakeTicker{f: f, w: w}
}

// Advance moves the time on by d (d >= 0) and fires what came due.
func (f *Fake) Advance(d time.Duration) {
	if d < 0 {
		panic("clock: Fake.Advance with a negative duration")
	}
	f.mu.Lock()
	to := f.now.Add(d)
	f.mu.Unlock()
	f.fire(to)
}

// Set moves the time to t, which must not be before Now, and fires what
// came due.
func (f *Fake) Set(t time.Time) {
	f.mu.Lock()
	if t.Before(f.now) {
		f.mu.Unlock()
		panic("clock: Fake.Set moves the time back")
	}
	f.mu.Unlock()
	f.fire(t)
}

// Waiters returns how many timers and tickers are active: a test can wait
// for the code under test to arm its timer before it advances.
func (f *Fake) Waiters() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, w := range f.waiters {
		if w.active {
			n++
		}
	}
	return n
}

// arm schedules w d after now; f.mu is held.
func (f *Fake) arm(w *fakeWaiter, d time.Duration) {
	f.seq++
	w.at, w.seq, w.active = f.now.Add(d), f.seq, true
	if !slices.Contains(f.waiters, w) {
		f.waiters = append(f.waiters, w)
	}
}

// disarm stops w and reports whether it was active; f.mu is held. A
// stopped timer's channel is drained, so no stale time is received.
func (f *Fake) disarm(w *fakeWaiter) bool {
	was := w.active
	w.active = false
	f.waiters = slices.DeleteFunc(f.waiters, func(x *fakeWaiter) bool { return x == w })
	select {
	case <-w.c:
	default:
	}
	return was
}

// fire moves the time to to (a zero to: stays) through every due waiter,
// earliest first.
func (f *Fake) fire(to time.Time) {
	for {
		f.mu.Lock()
		if !to.IsZero() && to.Before(f.now) {
			to = f.now
		}
		limit := f.now
		if !to.IsZero() {
			limit = to
		}
		var next *fakeWaiter
		for _, w := range f.waiters {
			if w.active && !w.at.After(limit) && (next == nil || w.at.Before(next.at) || w.at.Equal(next.at) && w.seq < next.seq) {
				next = w
			}
		}
		if next == nil {
			if !to.IsZero() {
				f.now = to
			}
			f.mu.Unlock()
			return
		}
		if next.at.After(f.now) {
			f.now = next.at
		}
		at := f.now
		if next.period > 0 {
			next.at = next.at.Add(next.period)
		} else {
			next.active = false
			f.waiters = slices.DeleteFunc(f.waiters, func(x *fakeWaiter) bool { return x == next })
		}
		f.mu.Unlock()
		select {
		case next.c <- at:
		default: // a tick nobody received is dropped, as package time's
		}
	}
}

type fakeTimer struct {
	f *Fake
	w *fakeWaiter
}

func (t *fakeTimer) C() <-chan time.Time { return t.w.c }

func (t *fakeTimer) Stop() bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	return t.f.disarm(t.w)
}

func (t *fakeTimer) Reset(d time.Duration) bool {
	t.f.mu.Lock()
	was := t.f.disarm(t.w)
	t.f.arm(t.w, d)
	t.f.mu.Unlock()
	t.f.fire(time.Time{})
	return was
}

type fakeTicker struct {
	f *Fake
	w *fakeWaiter
}

func (t *fakeTicker) C() <-chan time.Time { return t.w.c }

func (t *fakeTicker) Stop() {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	t.f.disarm(t.w)
}

func (t *fakeTicker) Reset(d time.Duration) {
	if d <= 0 {
		panic("clock: non-positive interval for Ticker.Reset")
	}
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	t.f.disarm(t.w)
	t.f.arm(t.w, d)
}
