package storetest

import (
	"sync"
	"time"

	"github.com/turnstream/turnstream/pkg/clock"
)

// Clock is a manual clock for a store under test: Now returns the time set
// by NewClock plus every Advance so far. As a clock.Clock (a turn
// handler's Options.Clock) its timers and tickers are package time's: the
// test moves the date (days, months, lease expiries) while the turn's
// pacing runs in real time. It is safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a Clock reading t until advanced.
func NewClock(t time.Time) *Clock {
	return &Clock{now: t}
}

// Now returns the clock's current time. Pass it as a store's clock
// (e.g. memory.Options{Now: clock.Now}).
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d (backward when d is negative).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// NewTimer returns a timer of package time (see Clock).
func (c *Clock) NewTimer(d time.Duration) clock.Timer { return clock.Real.NewTimer(d) }

// NewTicker returns a ticker of package time (see Clock).
func (c *Clock) NewTicker(d time.Duration) clock.Ticker { return clock.Real.NewTicker(d) }
