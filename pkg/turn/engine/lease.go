package engine

import (
	"sync/atomic"
	"time"

	"github.com/turnstream/turnstream/pkg/clock"
)

// leaseProof is what a turn knows of its lease: the proven expiry (the
// claim's, then each successful renewal's), when the request that proved
// it was sent (its grant, from which the next renewal is due), and the
// last instant at which the turn may still stream: the proven expiry less
// a margin (leaseMargin). The supervisor proves it; the writer asks it
// before each line, so that no line goes out once the lease can no longer
// be proven. Safe for concurrent use.
type leaseProof struct {
	until   atomic.Int64 // unix ms on now's clock: expires less the margin
	expires atomic.Int64 // unix ms: the proven expiry
	granted atomic.Int64 // unix ms: when the request that proved it was sent
	margin  time.Duration
	clock   clock.Clock
}

// init sets the margin and the clock (Config.Clock); call it before use.
func (l *leaseProof) init(margin time.Duration, c clock.Clock) {
	l.margin, l.clock = margin, c
}

// prove records expiresAt as the lease's proven expiry, granted by a
// request (the claim, a renewal) sent at grantedAt.
func (l *leaseProof) prove(grantedAt, expiresAt time.Time) {
	l.granted.Store(grantedAt.UnixMilli())
	l.expires.Store(expiresAt.UnixMilli())
	l.until.Store(expiresAt.Add(-l.margin).UnixMilli())
}

// left is the real time left until the proof ends, when lines must stop
// (0 when past).
func (l *leaseProof) left() time.Duration {
	return max(0, time.UnixMilli(l.until.Load()).Sub(l.clock.Now()))
}

// expiresIn is the real time left until the proven expiry itself (0 when
// past): until then a renewal can still apply, and one that applies
// proves that no other turn took the session meanwhile (its condition
// names this lease's token).
func (l *leaseProof) expiresIn() time.Duration {
	return max(0, time.UnixMilli(l.expires.Load()).Sub(l.clock.Now()))
}

// renewDue is when the next renewal is due: interval after the grant of
// the proven expiry, so that a turn paused before its stream started (or
// between renewals) renews at once on waking, not a whole interval later.
func (l *leaseProof) renewDue(interval time.Duration) time.Time {
	return time.UnixMilli(l.granted.Load()).Add(interval)
}

// heldAt reports whether the lease is still proven at now.
func (l *leaseProof) heldAt(now time.Time) bool {
	return now.UnixMilli() < l.until.Load()
}

// expiry is the lease's proven expiry.
func (l *leaseProof) expiry() time.Time {
	return time.UnixMilli(l.expires.Load())
}
