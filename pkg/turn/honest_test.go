package turn_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/ddbfault"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
	"github.com/turnstream/turnstream/pkg/turn"
)

// Honest answers under DynamoDB faults at the default lease
// (turn.DefaultLeaseDuration): each test injects its faults below the
// SDK's retryer (newFaultStore) and checks that what the client is told
// is what happened. They run in real time, bounded by a few seconds of
// faults, because the store under test is dynalite over HTTP, which a
// synctest bubble cannot wait on; no assertion is timed.

// defaultLease keeps the default lease (30 s, renewed every 10 s) with a
// deadline long enough not to cap it, and the deployment's checkpoint
// interval (1 s).
func defaultLease(o *turn.Options) {
	o.LeaseDuration = turn.DefaultLeaseDuration
	o.TurnTimeout = 2 * turn.DefaultLeaseDuration
	o.CheckpointInterval = time.Second
	o.ResumePollInterval = 10 * time.Millisecond
}

// TestReplayOfASavedUnreleasedTurn: a turn whose save applied but could
// not be confirmed (its first attempt applied and answered 500, every
// later attempt and every read of the turn item failed) ends with
// TURN_OUTCOME_INDETERMINATE and leaves its lease to expire. While that
// lease (30 s) still holds, a replay of the same turn id gets the
// decision its record holds, 409 TURN_ALREADY_COMPLETED (another input:
// TURN_ID_REUSED), not a retryable SESSION_BUSY; only another turn id is
// SESSION_BUSY.
// TestReplayOfAnUnconfirmedTurn: every save attempt fails, so the client
// is told TURN_OUTCOME_INDETERMINATE and the lease is left to expire; a
// replay of the turn id meanwhile is told the same (it was SESSION_BUSY,
// retryable, about a spent id), at the default lease.
func TestReplayOfAnUnconfirmedTurn(t *testing.T) {
	store, ft := newFaultStore(t)
	e := newEnv(t, store, &scriptModel{Chunks: []string{"the ", "answer"}}, defaultLease)
	save := ddbfault.For("UpdateItem", dynamo.PurposeSave)
	ft.SetRule(func(a ddbfault.Attempt) ddbfault.Fault {
		if save(a) {
			return ddbfault.ServerErrorBefore
		}
		return ddbfault.Pass
	})
	r := e.submit(t, "s", "t1", "hello", nil, nil)
	r.want(t, http.StatusOK, "")
	if last := r.last(); last.Kind != protocol.EventDiagnostic || last.Diagnostic.Code != protocol.CodeTurnOutcomeIndeterminate {
		t.Fatalf("stream ends %s, want TURN_OUTCOME_INDETERMINATE", r.raw)
	}
	sess, err := store.GetSession(context.Background(), "s", alice)
	if err != nil || sess.ActiveTurn == nil {
		t.Fatalf("the lease is not held any more (%v): the test proves nothing", err)
	}
	e.submit(t, "s", "t1", "hello", nil, nil).want(t, http.StatusConflict, protocol.CodeTurnOutcomeIndeterminate)
	e.submit(t, "s", "t1", "another", nil, nil).want(t, http.StatusUnprocessableEntity, protocol.CodeTurnIDReused)
	e.submit(t, "s", "t2", "next", nil, nil).want(t, http.StatusConflict, protocol.CodeSessionBusy)
}

func TestReplayOfASavedUnreleasedTurn(t *testing.T) {
	store, ft := newFaultStore(t)
	e := newEnv(t, store, &scriptModel{Chunks: []string{"the ", "answer"}}, defaultLease)
	var saving atomic.Bool
	save := ddbfault.For("UpdateItem", dynamo.PurposeSave)
	turnRead := ddbfault.Op("GetItem", `"TURN#`)
	ft.SetRule(func(a ddbfault.Attempt) ddbfault.Fault {
		switch {
		case save(a) && saving.CompareAndSwap(false, true):
			return ddbfault.ServerErrorAfter
		case save(a), saving.Load() && turnRead(a):
			return ddbfault.ServerErrorBefore
		}
		return ddbfault.Pass
	})
	r := e.submit(t, "s", "t1", "hello", nil, nil)
	r.want(t, http.StatusOK, "")
	if last := r.last(); last.Kind != protocol.EventDiagnostic || last.Diagnostic.Code != protocol.CodeTurnOutcomeIndeterminate {
		t.Fatalf("stream ends %s, want TURN_OUTCOME_INDETERMINATE", r.raw)
	}
	ft.SetRule(nil)
	stored, err := store.FindTurn(context.Background(), "s", "t1", alice)
	if err != nil || stored.Status != chat.TurnComplete {
		t.Fatalf("the late save is not the record: %+v, %v", stored, err)
	}
	sess, err := store.GetSession(context.Background(), "s", alice)
	if err != nil || sess.ActiveTurn == nil {
		t.Fatalf("the lease is not held any more (%v): the test proves nothing", err)
	}
	e.submit(t, "s", "t1", "hello", nil, nil).want(t, http.StatusConflict, protocol.CodeTurnAlreadyCompleted)
	e.submit(t, "s", "t1", "another", nil, nil).want(t, http.StatusUnprocessableEntity, protocol.CodeTurnIDReused)
	e.submit(t, "s", "t2", "next", nil, nil).want(t, http.StatusConflict, protocol.CodeSessionBusy)
}
