package turn_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/store/memory"
	"github.com/turnstream/turnstream/pkg/turn"
)

// leaseStore wraps a store to shape the timing of lease renewals and of the
// acknowledgment, on the synctest bubble's clock.
type leaseStore struct {
	chat.Store
	// renewLatency delays each renewal before it reaches the table (the
	// request's way there).
	renewLatency time.Duration
	// firstAnswerAt, when set, holds the answer of the first renewal (which
	// applied at once) until then: a renewal that landed but whose answer
	// comes late.
	firstAnswerAt time.Time
	// ackPause delays the first checkpoint (the acknowledgment), as a
	// process paused before its stream starts.
	ackPause time.Duration

	renewals    atomic.Int32
	checkpoints atomic.Int32
	// expires is the expiry of the last renewal that applied (unix ms).
	expires atomic.Int64
	// cutAt, when set, is when the table becomes unreachable: every call
	// from then on hangs until its context ends.
	cutAt time.Time
	// refuseAt, when set, is when renewals start failing at once (an
	// error that is not a lost lease), counted in refused.
	refuseAt time.Time
	refused  atomic.Int32
}

// wait blocks for d or until ctx ends, reporting ctx's error.
func wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// cut hangs until ctx ends when the table is cut off, reporting whether it
// was.
func (s *leaseStore) cut(ctx context.Context) (error, bool) {
	if s.cutAt.IsZero() || time.Now().Before(s.cutAt) {
		return nil, false
	}
	<-ctx.Done()
	return ctx.Err(), true
}

func (s *leaseStore) RenewLease(ctx context.Context, req chat.RenewRequest) (*chat.Lease, error) {
	if err, cut := s.cut(ctx); cut {
		return nil, err
	}
	if !s.refuseAt.IsZero() && !time.Now().Before(s.refuseAt) {
		s.refused.Add(1)
		return nil, errors.New("test: renewal refused")
	}
	if err := wait(ctx, s.renewLatency); err != nil {
		return nil, err
	}
	l, err := s.Store.RenewLease(ctx, req)
	if err == nil {
		s.expires.Store(l.ExpiresAt.UnixMilli())
	}
	if s.renewals.Add(1) == 1 && !s.firstAnswerAt.IsZero() {
		if werr := wait(ctx, time.Until(s.firstAnswerAt)); werr != nil {
			return nil, werr
		}
	}
	return l, err
}

func (s *leaseStore) Checkpoint(ctx context.Context, c *chat.Claim, cp *chat.Checkpoint) (bool, error) {
	if err, cut := s.cut(ctx); cut {
		return false, err
	}
	if s.checkpoints.Add(1) == 1 {
		if err := wait(ctx, s.ackPause); err != nil {
			return false, err
		}
	}
	return s.Store.Checkpoint(ctx, c, cp)
}

func (s *leaseStore) PollTurn(ctx context.Context, sessionID string, ordinal int64, owner chat.Principal, after *chat.Turn) (*chat.Turn, error) {
	if err, cut := s.cut(ctx); cut {
		return nil, err
	}
	return s.Store.PollTurn(ctx, sessionID, ordinal, owner, after)
}

// leaseTurn runs one turn through the handler on the synctest clock: a
// 3 s lease renewed every second, a model streaming 20 chunks 250 ms apart
// (5 s). It returns the stream's events and when the response ended,
// counted from the claim.
func leaseTurn(t *testing.T, s *leaseStore, opt func(*turn.Options)) ([]*protocol.Event, time.Duration) {
	t.Helper()
	m := &scriptModel{Chunks: slowChunks(20), Delay: 250 * time.Millisecond}
	opts := turn.Options{
		Config: turn.Config{
			Store:            s,
			Model:            m,
			Definition:       turn.Definition{ID: "default", Revision: 1},
			LeaseDuration:    3 * time.Second,
			RenewInterval:    time.Second,
			TurnTimeout:      20 * time.Second,
			CleanupReserve:   5 * time.Second,
			SnapshotInterval: 50 * time.Millisecond,
			Logger:           slog.New(slog.DiscardHandler),
		},
		Authenticator: &testAuth{},
	}
	if opt != nil {
		opt(&opts)
	}
	h, err := turn.NewHandler(opts)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(submitBody(t, "s", "t1", "hello", nil)))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	took := time.Since(start)
	body, _ := io.ReadAll(w.Result().Body)
	if w.Code != http.StatusOK {
		t.Fatalf("status %d: %s", w.Code, body)
	}
	return decodeStream(t, body), took
}

// lastSnapshot returns the stream's terminal snapshot, nil when it ends
// otherwise (a diagnostic).
func lastSnapshot(evs []*protocol.Event) *protocol.SnapshotPayload {
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Snapshot != nil {
			if evs[i].Snapshot.Status == protocol.StatusStreaming {
				return nil
			}
			return evs[i].Snapshot
		}
	}
	return nil
}

// TestRenewalLandingAfterTheProofEnds: the first renewal applies at once
// but its answer comes 50 ms before the claim's lease expires, after the
// proof has ended (lines stopped). The turn awaits it rather than giving
// up, and goes on to complete. (Before: the proof ended 0.3 s before the
// expiry, the renewal's own context with it, and the turn was lost.)
func TestRenewalLandingAfterTheProofEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &leaseStore{Store: memory.New(memory.Options{}), firstAnswerAt: time.Now().Add(3*time.Second - 50*time.Millisecond)}
		evs, _ := leaseTurn(t, s, nil)
		if snap := lastSnapshot(evs); snap == nil || snap.Status != protocol.StatusComplete {
			t.Fatalf("the turn ends %+v; want complete (its renewal landed before the expiry)", evs[len(evs)-1])
		}
	})
}

// TestRenewalDueFromTheGrant: a turn paused before its stream (its
// acknowledgment held) renews at once when it runs again, since its
// renewal was due a second after the claim, not a second after the stream
// started. Paused 1.9 s with renewals taking 150 ms on the way, a renewal
// sent only when the proof ends would land after the expiry; paused
// 2.40-2.69 s (every 10 ms) with renewals taking 3 ms, the turn would give
// up at the proof's end before its renewal was even due. (Before: the
// renewal timer restarted at the stream's start, and the turn was lost in
// all 31 cases.)
func TestRenewalDueFromTheGrant(t *testing.T) {
	type pause struct{ pause, latency time.Duration }
	cases := []pause{{1900 * time.Millisecond, 150 * time.Millisecond}}
	for p := 2400 * time.Millisecond; p < 2700*time.Millisecond; p += 10 * time.Millisecond {
		cases = append(cases, pause{p, 3 * time.Millisecond})
	}
	lost := 0
	for _, c := range cases {
		ok := t.Run(fmt.Sprintf("paused %v, renewals %v", c.pause, c.latency), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := &leaseStore{Store: memory.New(memory.Options{}), renewLatency: c.latency, ackPause: c.pause}
				evs, _ := leaseTurn(t, s, func(o *turn.Options) { o.CheckpointInterval = 500 * time.Millisecond })
				if snap := lastSnapshot(evs); snap == nil || snap.Status != protocol.StatusComplete {
					t.Errorf("the turn ends %+v; want complete", evs[len(evs)-1])
				}
			})
		})
		if !ok {
			lost++
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d paused turns did not complete", lost, len(cases))
	}
}

// TestCutOffHolderEndsAtTheLeaseEnd: a turn whose table becomes
// unreachable (every call hangs) after its first renewal loses its lease
// at that renewal's expiry, and its client's last line,
// TURN_OUTCOME_INDETERMINATE, comes within a quarter of CleanupReserve
// after the expiry (the time to read the decided fate once), not at the
// end of the cleanup's settle time. (Before: 3.65 s after the expiry with
// a 5 s CleanupReserve; now 1.25 s.)
func TestCutOffHolderEndsAtTheLeaseEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		s := &leaseStore{Store: memory.New(memory.Options{}), cutAt: start.Add(1500 * time.Millisecond)}
		const reserve = 5 * time.Second
		evs, took := leaseTurn(t, s, func(o *turn.Options) { o.CleanupReserve = reserve })
		last := evs[len(evs)-1]
		if last.Diagnostic == nil || last.Diagnostic.Code != protocol.CodeTurnOutcomeIndeterminate {
			t.Fatalf("last line %+v; want TURN_OUTCOME_INDETERMINATE", last)
		}
		expiry := time.UnixMilli(s.expires.Load()).Sub(start)
		if s.renewals.Load() != 1 || expiry != 4*time.Second {
			t.Fatalf("%d renewals applied, the last to %v; want one, to 4s", s.renewals.Load(), expiry)
		}
		if past := took - expiry; past > reserve/4 {
			t.Errorf("the last line came %v after the lease's end; want at most %v", past, reserve/4)
		}
	})
}

// TestFailingRenewalsAfterTheProofEnds: renewals that fail at once after
// the proof ended are sent again every 20 ms until the lease's expiry, not
// in a tight loop, and the turn gives up at the expiry.
func TestFailingRenewalsAfterTheProofEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		s := &leaseStore{Store: memory.New(memory.Options{}), refuseAt: start.Add(1500 * time.Millisecond)}
		evs, _ := leaseTurn(t, s, nil)
		if snap := lastSnapshot(evs); snap != nil && snap.Status == protocol.StatusComplete {
			t.Fatal("the turn completed without proving its lease")
		}
		// Refused: at 2 s and 3 s (due a second after the last attempt),
		// then from the proof's end (3.9 s) to the expiry (4 s) every
		// 20 ms.
		if n := s.refused.Load(); n < 3 || n > 2+1+100/20 {
			t.Errorf("%d refused renewals; want 3 to %d", n, 2+1+100/20)
		}
	})
}

// unansweredStore applies every renewal and then loses its answer (an
// error 100 ms later), and fails every poll: a turn that renewed its
// lease without knowing it, and cannot read its fate.
type unansweredStore struct{ chat.Store }

func (s unansweredStore) RenewLease(ctx context.Context, req chat.RenewRequest) (*chat.Lease, error) {
	if _, err := s.Store.RenewLease(ctx, req); err != nil {
		return nil, err
	}
	if err := wait(ctx, 100*time.Millisecond); err != nil {
		return nil, err
	}
	return nil, errors.New("test: the renewal's answer was lost")
}

func (s unansweredStore) PollTurn(context.Context, string, int64, chat.Principal, *chat.Turn) (*chat.Turn, error) {
	return nil, errors.New("test: the table is unreachable")
}

// TestUnprovenLeaseAbandoned: a turn whose renewals applied unanswered
// cannot prove its lease, and cannot read its fate either: it tells its
// client TURN_OUTCOME_INDETERMINATE, and marks the lease, which still
// stands, abandoned, so that a replay of its id is told the same, not
// SESSION_BUSY (a loaded fate harness run, schedule 47 of seed 22, found
// the replay told SESSION_BUSY).
func TestUnprovenLeaseAbandoned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := unansweredStore{memory.New(memory.Options{})}
		h, err := turn.NewHandler(turn.Options{
			Config: turn.Config{
				Store: s, Model: &scriptModel{Chunks: slowChunks(20), Delay: 250 * time.Millisecond},
				Definition: turn.Definition{ID: "default", Revision: 1}, LeaseDuration: 3 * time.Second,
				RenewInterval: time.Second, TurnTimeout: 20 * time.Second, CleanupReserve: 5 * time.Second,
				SnapshotInterval: 50 * time.Millisecond, Logger: slog.New(slog.DiscardHandler),
			},
			Authenticator: &testAuth{},
		})
		if err != nil {
			t.Fatal(err)
		}
		submit := func() *httptest.ResponseRecorder {
			r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(submitBody(t, "s", "t1", "hello", nil)))
			r.Header.Set("Content-Type", "application/json")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			return w
		}
		w := submit()
		body, _ := io.ReadAll(w.Result().Body)
		evs := decodeStream(t, body)
		if last := evs[len(evs)-1]; last.Diagnostic == nil || last.Diagnostic.Code != protocol.CodeTurnOutcomeIndeterminate {
			t.Fatalf("last line %+v; want TURN_OUTCOME_INDETERMINATE", last)
		}
		sess, err := s.GetSession(context.Background(), "s", alice)
		if err != nil || sess.ActiveTurn == nil || !sess.ActiveTurn.Abandoned {
			t.Fatalf("session after the turn: %+v, %v; want its lease standing and abandoned", sess, err)
		}
		replay := submit()
		if replay.Code != http.StatusConflict || !strings.Contains(replay.Body.String(), protocol.CodeTurnOutcomeIndeterminate) {
			t.Errorf("replay: %d %s; want 409 TURN_OUTCOME_INDETERMINATE", replay.Code, replay.Body.String())
		}
	})
}
