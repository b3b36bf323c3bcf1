// Package clock is the time source of the turn path: the turn engine, its
// stream encoders, the stores' lease logic and the resume poller read the
// time and make their timers and tickers through a Clock, never through
// package time directly, so that a test can run them on a clock it moves.
//
// Two clocks are provided. Real is package time. Fake is a manual clock
// whose time moves only when the test calls Advance (or Set), firing the
// timers and tickers whose time has come, in order; it suits tests whose
// code under test also waits on things a testing/synctest bubble cannot
// see (a DynamoDB API server over a real socket). Where everything a test
// runs stays in process, prefer Real inside a testing/synctest bubble:
// package time is then virtual, and time moves exactly when every
// goroutine of the bubble is blocked.
package clock

import (
	"context"
	"time"
)

// Clock reads the time and makes timers and tickers. Its methods are safe
// for concurrent use.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// NewTimer returns a timer that sends the time on its channel once, d
	// after now (at once for d <= 0), as time.NewTimer.
	NewTimer(d time.Duration) Timer
	// NewTicker returns a ticker that sends the time on its channel every
	// d, dropping ticks a slow receiver misses, as time.NewTicker. It
	// panics if d <= 0.
	NewTicker(d time.Duration) Ticker
}

// Timer is a single event of a Clock, as *time.Timer (Go 1.23 semantics:
// Stop and Reset leave no stale value to receive).
type Timer interface {
	// C returns the channel the timer's time is sent on.
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether the call
	// stopped it (false if it had fired or been stopped).
	Stop() bool
	// Reset changes the timer to fire d after now; it reports whether the
	// timer had been active.
	Reset(d time.Duration) bool
}

// Ticker is a recurring event of a Clock, as *time.Ticker.
type Ticker interface {
	// C returns the channel the ticks are sent on.
	C() <-chan time.Time
	// Stop turns the ticker off; no more ticks are sent.
	Stop()
	// Reset stops the ticker and restarts it with period d (d > 0).
	Reset(d time.Duration)
}

// Real is package time's clock.
var Real Clock = realClock{}

// Or returns c, or Real when c is nil: the default of an optional Clock
// field.
func Or(c Clock) Clock {
	if c == nil {
		return Real
	}
	return c
}

// Since returns the time elapsed on c since t.
func Since(c Clock, t time.Time) time.Duration { return c.Now().Sub(t) }

// Until returns the duration on c until t.
func Until(c Clock, t time.Time) time.Duration { return t.Sub(c.Now()) }

// Wall converts t, an instant on c, to the instant of package time that
// is as far from now: the form a deadline must take where the operating
// system keeps it (a net.Conn's, through http.ResponseController). On
// Real it returns t unchanged; on a clock set behind or ahead of package
// time, a deadline passed unconverted would be that far off.
func Wall(c Clock, t time.Time) time.Time {
	if c == Real {
		return t
	}
	return time.Now().Add(Until(c, t))
}

// Sleep waits d on c, or until ctx ends; it reports whether the whole d
// passed (d <= 0 returns true at once unless ctx has ended).
func Sleep(ctx context.Context, c Clock, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-ctx.Done():
		return false
	}
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

func (realClock) NewTicker(d time.Duration) Ticker { return realTicker{time.NewTicker(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time        { return r.t.C }
func (r realTimer) Stop() bool                 { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) bool { return r.t.Reset(d) }

type realTicker struct{ t *time.Ticker }

func (r realTicker) C() <-chan time.Time   { return r.t.C }
func (r realTicker) Stop()                 { r.t.Stop() }
func (r realTicker) Reset(d time.Duration) { r.t.Reset(d) }
