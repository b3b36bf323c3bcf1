package turn

import (
	"sync/atomic"
	"time"
)

// leaseProof is the last instant at which a turn may still stream: the
// lease's proven expiry (the claim's, then each successful renewal's)
// less a margin. The supervisor proves it; the writer asks it before each
// line, so that no line goes out once the lease can no longer be proven.
// Safe for concurrent use.
type leaseProof struct {
	until  atomic.Int64 // unix ms on now's clock
	margin time.Duration
	now    func() time.Time
}

// init sets the margin and the clock (Options.Now); call it before use.
func (l *leaseProof) init(margin time.Duration, now func() time.Time) {
	l.margin, l.now = margin, now
}

// prove records expiresAt as the lease's proven expiry.
func (l *leaseProof) prove(expiresAt time.Time) {
	l.until.Store(expiresAt.Add(-l.margin).UnixMilli())
}

// left is the real time left until the proof ends (0 when past).
func (l *leaseProof) left() time.Duration {
	return max(0, time.UnixMilli(l.until.Load()).Sub(l.now()))
}

// heldAt reports whether the lease is still proven at now.
func (l *leaseProof) heldAt(now time.Time) bool {
	return now.UnixMilli() < l.until.Load()
}

// end is the proof's end: the lease's proven expiry less the margin.
func (l *leaseProof) end() time.Time {
	return time.UnixMilli(l.until.Load())
}
