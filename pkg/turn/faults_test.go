package turn_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/turnstream/turnstream/internal/ddbfault"
	"github.com/turnstream/turnstream/internal/dynalite"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
	"github.com/turnstream/turnstream/pkg/store/memory"
	"github.com/turnstream/turnstream/pkg/turn"
)

// newFaultStore returns a DynamoDB store on dynalite whose HTTP attempts
// pass through a ddbfault.Transport, below the SDK's retryer.
func newFaultStore(t *testing.T) (*dynamo.Store, *ddbfault.Transport) {
	t.Helper()
	ft := ddbfault.New(nil)
	opts := dynalite.Options(t)
	opts.Transport = ft
	opts.AttemptTimeout = 250 * time.Millisecond
	client, err := dynamo.NewClient(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	table := dynalite.Table(t)
	return dynamo.New(client, dynamo.Options{Table: table, CursorKey: []byte("turn-test-cursor-key-0123456789")}), ft
}

// TestAppliedWritesUnderFaults: what a client sees when DynamoDB applied
// a write but its answer was lost or was a 500. The claim's own applied
// write is a claim (200, the turn runs once), not SESSION_BUSY; a save
// that applied ends with the terminal snapshot, not "could not be saved".
func TestAppliedWritesUnderFaults(t *testing.T) {
	tests := map[string]struct {
		rule ddbfault.Rule
	}{
		"claim answer lost, new session": {ddbfault.Once(ddbfault.LoseAnswer, ddbfault.For("UpdateItem", dynamo.PurposeClaim))},
		"claim answered 500 after apply": {ddbfault.Always(ddbfault.ServerErrorAfter, ddbfault.For("UpdateItem", dynamo.PurposeClaim))},
		"save answered 500 every time":   {ddbfault.Always(ddbfault.ServerErrorAfter, ddbfault.For("UpdateItem", dynamo.PurposeSave))},
		"save answer lost":               {ddbfault.Once(ddbfault.LoseAnswer, ddbfault.For("UpdateItem", dynamo.PurposeSave))},
		"save attempt hangs":             {ddbfault.Once(ddbfault.Hang, ddbfault.For("UpdateItem", dynamo.PurposeSave))},
		"release answer lost":            {ddbfault.Once(ddbfault.LoseAnswer, ddbfault.For("UpdateItem", dynamo.PurposeRelease))},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			store, ft := newFaultStore(t)
			m := &scriptModel{Chunks: []string{"the ", "answer"}}
			e := newEnv(t, store, m, nil)
			ft.SetRule(tc.rule)
			r := e.submit(t, "s", "t1", "hello", nil, nil)
			r.want(t, http.StatusOK, "")
			if n := countFaults(ft); n == 0 {
				t.Fatal("no fault was injected")
			}
			term := r.terminal(t)
			if term.Status != protocol.StatusComplete || r.last().Kind != protocol.EventSnapshot {
				t.Fatalf("stream ends %s", r.raw)
			}
			if got := m.Calls(); got != 1 {
				t.Errorf("model ran %d times, want once", got)
			}
			ft.SetRule(nil)
			stored, err := store.FindTurn(context.Background(), "s", "t1", alice)
			if err != nil || stored.Status != chat.TurnComplete {
				t.Fatalf("stored turn %+v, %v", stored, err)
			}
			if messagesJSON(t, stored.Messages) != messagesJSON(t, term.Messages) {
				t.Error("history differs from the terminal snapshot")
			}
			replay := e.submit(t, "s", "t1", "hello", nil, nil)
			replay.want(t, http.StatusConflict, protocol.CodeTurnAlreadyCompleted)
			e.submit(t, "s", "t2", "next", nil, nil).want(t, http.StatusOK, "")
		})
	}
}

// TestClaimNeverAppliedIs500: a claim that failed before DynamoDB applied
// it, on every attempt, is a retryable SERVER_INTERNAL, and the client's
// retry of the same turn id then runs the turn.
func TestClaimNeverAppliedIs500(t *testing.T) {
	store, ft := newFaultStore(t)
	m := &scriptModel{Chunks: []string{"ok"}}
	e := newEnv(t, store, m, nil)
	ft.SetRule(ddbfault.Always(ddbfault.ServerErrorBefore, ddbfault.For("UpdateItem", dynamo.PurposeClaim)))
	r := e.submit(t, "s", "t1", "hello", nil, nil)
	r.want(t, http.StatusInternalServerError, protocol.CodeServerInternal)
	if m.Calls() != 0 {
		t.Error("the model ran without a claim")
	}
	ft.SetRule(nil)
	e.submit(t, "s", "t1", "hello", nil, nil).want(t, http.StatusOK, "")
}

// hangingRenewals is a store whose lease renewals never answer until
// their context ends: a table that is unreachable or a connection that
// hangs.
type hangingRenewals struct {
	chat.Store
	renewals atomicCounter
}

func (s *hangingRenewals) RenewLease(ctx context.Context, req chat.RenewRequest) (*chat.Lease, error) {
	s.renewals.add()
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestHungRenewalStopsTheStream: a renewal that hangs does not block the
// turn until its deadline; the turn stops streaming before its lease's
// last proven expiry (another turn may then claim the session), saves
// nothing and ends with the fate the table decided: lost.
func TestHungRenewalStopsTheStream(t *testing.T) {
	inner := newStoreMemory()
	store := &hangingRenewals{Store: inner}
	// A model that keeps streaming until cancelled.
	chunks := make([]string, 2000)
	for i := range chunks {
		chunks[i] = "w "
	}
	m := &scriptModel{Chunks: chunks, Delay: 5 * time.Millisecond}
	const lease = 400 * time.Millisecond
	e := newEnv(t, store, m, func(o *turn.Options) {
		o.LeaseDuration, o.RenewInterval = lease, 50*time.Millisecond
		o.TurnTimeout, o.CleanupReserve = 30*time.Second, 2*time.Second
	})
	claimedAt := time.Now()
	r := e.submit(t, "s", "t1", "hello", nil, nil)
	r.want(t, http.StatusOK, "")
	if !r.lost() {
		t.Fatalf("stream ends with %s, want the lost record", r.raw)
	}
	if store.renewals.get() == 0 {
		t.Fatal("no renewal was attempted")
	}
	// No streaming snapshot was emitted at or after the lease's expiry as
	// the claim set it (claimedAt + lease is an upper bound of that
	// expiry); the last line is the record the table decided after it.
	expiry := claimedAt.Add(lease)
	for _, ev := range r.events {
		if ev.Kind != protocol.EventSnapshot || ev.Snapshot.Status != protocol.StatusStreaming {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, ev.EmittedAt)
		if err != nil {
			t.Fatal(err)
		}
		if !at.Before(expiry) {
			t.Errorf("snapshot %d emitted at %v, not before the lease's expiry %v", ev.Sequence, at, expiry)
		}
	}
	if _, err := inner.FindTurn(context.Background(), "s", "t1", alice); err == nil {
		t.Error("a turn that lost its lease, without checkpoints, was saved")
	}
}

// slowSaves delays every save: a slow but healthy table.
type slowSaves struct {
	chat.Store
	delay time.Duration
}

func (s *slowSaves) SaveTurn(ctx context.Context, c *chat.Claim, t *chat.Turn) error {
	select {
	case <-time.After(s.delay):
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.Store.SaveTurn(ctx, c, t)
}

// TestSlowSaveIsNotAFailure: a save slower than a fixed share of the
// cleanup reserve still counts when it lands within cleanup's time: the
// turn ends with its terminal snapshot, not SERVER_INTERNAL.
func TestSlowSaveIsNotAFailure(t *testing.T) {
	store := &slowSaves{Store: newStoreMemory(), delay: 600 * time.Millisecond}
	e := newEnv(t, store, &scriptModel{Chunks: []string{"done"}}, func(o *turn.Options) {
		o.TurnTimeout, o.CleanupReserve = 10*time.Second, time.Second
	})
	r := e.submit(t, "s", "t1", "hello", nil, nil)
	r.want(t, http.StatusOK, "")
	if last := r.last(); last.Kind != protocol.EventSnapshot || last.Snapshot.Status != protocol.StatusComplete {
		t.Fatalf("stream ends %s", r.raw)
	}
}

func countFaults(ft *ddbfault.Transport) int {
	n := 0
	for f, c := range ft.Counts() {
		if f != ddbfault.Pass {
			n += c
		}
	}
	return n
}

// slowContext delays every context load (the steps before a turn's
// stream take longer than its lease) and records each lease expiry it
// granted with the time it granted it.
type slowContext struct {
	chat.Store
	delay    time.Duration
	renewErr error
	mu       sync.Mutex
	granted  []time.Time // the expiries granted (claim, renewals)
}

func (s *slowContext) grant(expires time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.granted = append(s.granted, expires)
}

// latest is the latest expiry granted.
func (s *slowContext) latest() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	var l time.Time
	for _, g := range s.granted {
		if g.After(l) {
			l = g
		}
	}
	return l
}

func (s *slowContext) ClaimTurn(ctx context.Context, req chat.ClaimRequest) (*chat.Claim, error) {
	c, err := s.Store.ClaimTurn(ctx, req)
	if err == nil {
		s.grant(c.Lease.ExpiresAt)
	}
	return c, err
}

func (s *slowContext) LoadContext(ctx context.Context, sessionID string, before int64, maxTurns int) ([]chat.Turn, bool, error) {
	select {
	case <-time.After(s.delay):
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
	return s.Store.LoadContext(ctx, sessionID, before, maxTurns)
}

func (s *slowContext) RenewLease(ctx context.Context, req chat.RenewRequest) (*chat.Lease, error) {
	if s.renewErr != nil {
		return nil, s.renewErr
	}
	l, err := s.Store.RenewLease(ctx, req)
	if err == nil {
		s.grant(l.ExpiresAt)
	}
	return l, err
}

// TestNoLineAfterTheLease: when the steps before the stream (the context
// load here) outlive the lease the claim took, the first snapshot is not
// written past it: the lease is renewed first, and a turn that cannot
// renew it answers an error instead of a stream. (The first line was once
// written without the lease check every later line gets, so a slow
// context load produced a streaming snapshot after the lease's expiry.)
//
// Each case runs in a testing/synctest bubble: the context load's delay,
// the lease and its renewals pass on the bubble's clock.
func TestNoLineAfterTheLease(t *testing.T) {
	for name, tc := range map[string]struct {
		lease, delay time.Duration
		renewErr     error
		stream       bool
	}{
		"most of the lease spent, renewed":     {lease: 2 * time.Second, delay: 1400 * time.Millisecond, stream: true},
		"most of the lease spent, no renewal":  {lease: 2 * time.Second, delay: 1400 * time.Millisecond, renewErr: errors.New("storage unavailable")},
		"the lease spent, renewal too late":    {lease: 150 * time.Millisecond, delay: 400 * time.Millisecond},
		"the lease spent, renewal unavailable": {lease: 150 * time.Millisecond, delay: 400 * time.Millisecond, renewErr: errors.New("storage unavailable")},
	} {
		for mode, opt := range map[string]func(*turn.Options){"plain": nil, "durable": durable} {
			t.Run(name+"/"+mode, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					// The store's clock is the bubble's, moved ahead by
					// ahead: the test passes a lease's expiry with no wait.
					var ahead atomic.Int64
					storeNow := func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
					store := &slowContext{Store: memory.New(memory.Options{Now: storeNow}), delay: tc.delay, renewErr: tc.renewErr}
					e := newHandlerEnv(t, store, &scriptModel{Chunks: []string{"a", "b"}}, func(o *turn.Options) {
						if opt != nil {
							opt(o)
						}
						o.LeaseDuration = tc.lease
					})
					r := e.submit(t, "s", "t1", "hello", nil, nil)
					if !tc.stream {
						// No stream, and an answer true to the id: a
						// withdrawn claim (500 retryable: nothing records the
						// turn, its id is unspent), or, when the turn could no
						// longer prove its lease, nothing saved and the fate
						// the table's (409 TURN_OUTCOME_INDETERMINATE, which a
						// replay of the id gets too).
						switch {
						case r.status == http.StatusInternalServerError && r.errD.Retryable:
							if _, err := store.FindTurn(context.Background(), "s", "t1", alice); !errors.Is(err, chat.ErrTurnNotFound) {
								t.Fatalf("a withdrawn claim's turn is recorded: %v", err)
							}
						case r.status == http.StatusConflict && r.errD.Code == protocol.CodeTurnOutcomeIndeterminate:
							// The store's clock passes the last lease granted (the
							// turn's end has waited it out already today), and a
							// read decides the expired lease.
							ahead.Store(int64(max(0, time.Until(store.latest())+time.Millisecond)))
							if s, err := store.GetSession(context.Background(), "s", alice); err != nil || s.ActiveTurn != nil {
								t.Fatalf("after the last lease: %+v, %v; want the session free", s, err)
							}
							e.submit(t, "s", "t1", "hello", nil, nil).want(t, http.StatusConflict, protocol.CodeTurnOutcomeIndeterminate)
						default:
							t.Fatalf("a turn that could not prove its lease answered %d %s", r.status, r.raw)
						}
						return
					}
					r.want(t, http.StatusOK, "")
					at, err := time.Parse(time.RFC3339Nano, r.events[0].EmittedAt)
					if err != nil {
						t.Fatal(err)
					}
					if l := store.latest(); !at.Before(l) {
						t.Errorf("first line at %v, not before the latest lease expiry granted, %v", at, l)
					}
					if n := len(store.granted); n < 2 {
						t.Errorf("%d leases granted: the lease was not renewed before the stream", n)
					}
				})
			})
		}
	}
}

// TestStopWhileCheckpointsFail: a checkpoint whose live item write failed
// on every attempt (its delta stored) does not stop the checkpoints after
// it, so a stop is still seen at a checkpoint, with the lease renewed too
// rarely to see it: the turn ends interrupted soon after the stop. (Once,
// one such failure made every later checkpoint of the turn fail, and a
// stop waited for the next renewal.) The time from the stop to the
// interrupted ending is logged, not asserted.
func TestStopWhileCheckpointsFail(t *testing.T) {
	store, ft := newFaultStore(t)
	chunks := make([]string, 400)
	for i := range chunks {
		chunks[i] = "w "
	}
	m := &scriptModel{Chunks: chunks, Delay: 10 * time.Millisecond, Started: make(chan struct{}, 1)}
	e := newEnv(t, store, m, func(o *turn.Options) {
		durable(o)
		o.CheckpointInterval = 100 * time.Millisecond
		o.RenewInterval = time.Hour // a stop can be seen only at a checkpoint
	})
	// The first live item write after the acknowledgment fails on each
	// of its SDK attempts; everything after it passes.
	var liveWrites, failed atomic.Int64
	isLive := ddbfault.For("UpdateItem", dynamo.PurposeLive)
	ft.SetRule(func(a ddbfault.Attempt) ddbfault.Fault {
		if !isLive(a) {
			return ddbfault.Pass
		}
		if n := liveWrites.Add(1); n > 1 && failed.Load() < int64(dynamo.DefaultMaxAttempts) {
			failed.Add(1)
			return ddbfault.ServerErrorBefore
		}
		return ddbfault.Pass
	})
	ls := e.startLive(t, context.Background(), "s", "t1", "hello")
	<-m.Started
	waitFor(t, "the failed checkpoint", func() bool { return failed.Load() >= int64(dynamo.DefaultMaxAttempts) })
	// A checkpoint after the failed one has been sent (the acknowledgment,
	// the failed one's attempts, then this one).
	waitFor(t, "a later checkpoint", func() bool { return liveWrites.Load() >= int64(dynamo.DefaultMaxAttempts)+2 })
	stopAt := time.Now()
	resp := e.post(t, context.Background(), "/stop", []byte(`{"sessionId":"s","turnId":"t1"}`), nil)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("stop: %d", resp.StatusCode)
	}
	<-ls.done
	evs := ls.events(t)
	term := terminalOf(evs)
	if term == nil || term.Snapshot.Error == nil || term.Snapshot.Error.Code != protocol.CodeTurnInterrupted {
		t.Fatalf("the turn did not end interrupted: %+v", term)
	}
	t.Logf("stopped %v after the stop request, %d live writes", time.Since(stopAt), liveWrites.Load())
}
