package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/clock"
)

// A resumed stream can stay silent for a while: the turn function follows
// the turn's record, and a turn whose server stopped (killed, crashed,
// timed out) has no news until its lease expires and the table decides it
// lost. leaseWait says which of these turnctl is waiting for, with a
// countdown, by reading the session's running turn from the history
// function (GET <history>sessions/<id>, currentTurn.expiresAt):
//
//   - no news yet, the lease standing: "no news from the server that ran
//     this answer for 4 s; if it stopped, its lease expires in 26 s";
//   - the lease not renewed when a live server would have renewed it (a
//     server renews every third of the lease, so a live lease never has
//     less than about two thirds of its length left; below 3/5 of what it
//     had at the first read, its server stopped): "the server that ran
//     this answer stopped; waiting up to 17 s for its lease to expire";
//   - the lease renewed: the server is alive and quiet (a long tool call);
//   - the lease expired: the stored answer comes next.
//
// Without a readable session (no history URL, a refusal) it says how long
// there has been no news. It runs only after a resume opened, from
// leaseQuiet after that, and stops at the stream's next line.
type leaseWait struct {
	shown *lockedRenderer
	clock clock.Clock
	// read returns the session's running turn, nil when none runs.
	read func(ctx context.Context) (*client.CurrentTurn, error)
	// live redraws the countdown every tick (a terminal); otherwise each
	// change of phase is one notice line.
	live bool
	// afterTick, when set, is called after each tick is handled (tests).
	afterTick func()

	mu     sync.Mutex
	ctx    context.Context
	turnID string
	stop   chan struct{} // closes the running watch; nil when none runs
	phase  leasePhase    // of the status shown, phaseNone for none
}

// How long a resumed stream stays silent before leaseWait reads the
// lease, how often it reads it again and redraws, and how long one read
// may take.
var (
	leaseQuiet       = 2 * time.Second
	leaseTick        = time.Second
	leaseReadEvery   = 3 * time.Second
	leaseReadTimeout = 5 * time.Second
)

// leasePhase is what a leaseWait status says.
type leasePhase int

const (
	phaseNone     leasePhase = iota
	phaseNoNews              // the lease standing, the server not known to have stopped
	phaseUnread              // the session could not be read
	phaseStopped             // the lease was not renewed in time: its server stopped
	phaseAlive               // the lease was renewed: its server runs the turn
	phaseExpired             // the lease expired: the stored answer comes next
	phaseFinished            // the session's running turn is no longer this one
)

// bind names the stream's turn; ctx bounds the reads.
func (lw *leaseWait) bind(ctx context.Context, turnID string) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	lw.ctx, lw.turnID = ctx, turnID
}

// resumed starts watching: a resume opened and nothing came yet.
func (lw *leaseWait) resumed() {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if lw.stop != nil || lw.ctx == nil || lw.read == nil {
		return
	}
	lw.stop = make(chan struct{})
	// The ticker starts now, not when the goroutine runs: the quiet time
	// counts from the resume.
	// The waits are read here, once: a watch may outlive its stream by a
	// read, and tests change them between runs.
	w := leaseWaits{quiet: leaseQuiet, readEvery: leaseReadEvery, readTimeout: leaseReadTimeout}
	tick := lw.clock.NewTicker(leaseTick)
	go lw.watch(lw.ctx, leaseState{turnID: lw.turnID, quietSince: lw.clock.Now()}, w, tick, lw.stop)
}

// leaseWaits are a watch's leaseQuiet, leaseReadEvery and
// leaseReadTimeout.
type leaseWaits struct{ quiet, readEvery, readTimeout time.Duration }

// news stops watching and clears the status shown: a line came (or the
// stream dropped again, or ended).
func (lw *leaseWait) news() {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if lw.stop == nil {
		return
	}
	close(lw.stop)
	lw.stop = nil
	if lw.phase != phaseNone {
		lw.phase = phaseNone
		lw.shown.status("")
	}
}

// watch reads the lease and shows what is awaited every leaseTick until
// stop closes.
func (lw *leaseWait) watch(ctx context.Context, st leaseState, w leaseWaits, tick clock.Ticker, stop chan struct{}) {
	defer tick.Stop()
	nextRead := st.quietSince.Add(w.quiet)
	read := false // the lease was read at least once
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-tick.C():
		}
		if now := lw.clock.Now(); !now.Before(nextRead) {
			rctx, cancel := context.WithTimeout(ctx, w.readTimeout)
			ct, err := lw.read(rctx)
			cancel()
			now = lw.clock.Now()
			st.observe(ct, err, now)
			nextRead, read = now.Add(w.readEvery), true
			lw.show(stop, now, &st)
		} else if read {
			lw.show(stop, now, &st)
		}
		if lw.afterTick != nil {
			lw.afterTick()
		}
	}
}

// show puts st's status at now on the status line unless the watch was
// stopped; off a terminal only a new phase is shown.
func (lw *leaseWait) show(stop chan struct{}, now time.Time, st *leaseState) {
	text, phase := st.status(now)
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if lw.stop != stop || (!lw.live && phase == lw.phase) {
		return
	}
	lw.phase = phase
	lw.shown.status(text)
}

// leaseState is what the reads of a silent resume's lease showed.
type leaseState struct {
	turnID     string
	quietSince time.Time // when the resume opened
	// first is the expiry at the first read (or since the last renewal),
	// firstLeft the time it had left then; expires is the latest read's.
	first, expires time.Time
	firstLeft      time.Duration
	renewed        bool
	unread         bool // the last read failed
	finished       bool // the session runs no turn, or another one
}

// observe records one read of the session's running turn at now.
func (st *leaseState) observe(ct *client.CurrentTurn, err error, now time.Time) {
	st.unread = err != nil
	switch {
	case err != nil:
		return
	case ct == nil || ct.TurnID != st.turnID:
		st.finished = true
		return
	}
	st.finished = false
	exp := time.UnixMilli(ct.ExpiresAt)
	if !st.first.IsZero() && exp.After(st.expires) {
		st.renewed = true
		st.first = time.Time{} // the stop is judged afresh from here
	}
	if st.first.IsZero() {
		st.first, st.firstLeft = exp, exp.Sub(now)
	}
	st.expires = exp
}

// status is the line that says what is awaited at now, and its phase.
func (st *leaseState) status(now time.Time) (string, leasePhase) {
	quiet := seconds(now.Sub(st.quietSince))
	left := st.expires.Sub(now)
	switch {
	case st.finished:
		return "the turn is no longer running; waiting for its last line", phaseFinished
	case st.expires.IsZero():
		return fmt.Sprintf("no news from the server that ran this answer for %d s", quiet), phaseUnread
	case left <= 0:
		return "the lease of the server that ran this answer expired; waiting for the stored answer", phaseExpired
	case left < st.firstLeft*3/5:
		return fmt.Sprintf("the server that ran this answer stopped; waiting up to %d s for its lease to expire", seconds(left)), phaseStopped
	case st.renewed:
		return fmt.Sprintf("the server that runs this answer renewed its lease; no news from it for %d s", quiet), phaseAlive
	}
	return fmt.Sprintf("no news from the server that ran this answer for %d s; if it stopped, its lease expires in %d s", quiet, seconds(left)), phaseNoNews
}

// seconds is d in whole seconds, rounded up.
func seconds(d time.Duration) int64 {
	return int64((d + time.Second - 1) / time.Second)
}

// isLeaseStatus reports whether a notice line is a leaseWait status (a
// transient status, replaced by the next).
func isLeaseStatus(n string) bool {
	for _, p := range leaseStatusPrefixes {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	return false
}

// leaseStatusPrefixes start the lines leaseState.status returns.
var leaseStatusPrefixes = []string{"no news from the server ", "the server that ran this answer stopped;",
	"the server that runs this answer renewed", "the lease of the server ", "the turn is no longer running;"}
