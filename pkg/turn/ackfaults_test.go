package turn_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/turnstream/turnstream/internal/ddbfault"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

// TestFailedAcknowledgmentLeavesTheIDUnspent: at the default lease, a
// submit whose acknowledgment (the turn's first checkpoint: its turn and
// live items) cannot be written answers 500 SERVER_INTERNAL retryable,
// and that is true: nothing records the turn, the session is free, and
// the retry of the same turn id runs it (the model once). An
// acknowledgment that applied while its answer and the read resolving it
// failed is a turn that exists: the turn streams as acknowledged. (Before,
// the failed acknowledgment was saved as an error turn, so the retryable
// 500 was followed by 409 TURN_ALREADY_COMPLETED.)
func TestFailedAcknowledgmentLeavesTheIDUnspent(t *testing.T) {
	ackItem := ddbfault.For("UpdateItem", dynamo.PurposeAck)
	live := ddbfault.Op("UpdateItem", "#LIVE")
	turnRead := ddbfault.Op("GetItem", `"TURN#`)
	for name, tc := range map[string]struct {
		rule    func(on *atomic.Bool) ddbfault.Rule
		applied bool
	}{
		"turn and live writes fail": {rule: func(on *atomic.Bool) ddbfault.Rule {
			return func(a ddbfault.Attempt) ddbfault.Fault {
				if on.Load() && (ackItem(a) || live(a)) {
					return ddbfault.ServerErrorBefore
				}
				return ddbfault.Pass
			}
		}},
		"turn write applied, unconfirmed": {applied: true, rule: func(on *atomic.Bool) ddbfault.Rule {
			var reads atomic.Int64
			return func(a ddbfault.Attempt) ddbfault.Fault {
				switch {
				case !on.Load():
				case ackItem(a):
					return ddbfault.ServerErrorAfter
				case turnRead(a) && reads.Add(1) <= int64(dynamo.DefaultMaxAttempts):
					return ddbfault.ServerErrorBefore // the write's own resolving read
				}
				return ddbfault.Pass
			}
		}},
	} {
		t.Run(name, func(t *testing.T) {
			store, ft := newFaultStore(t)
			m := &scriptModel{Chunks: []string{"the ", "answer"}}
			e := newEnv(t, store, m, defaultLease)
			var on atomic.Bool
			on.Store(true)
			ft.SetRule(tc.rule(&on))
			r := e.submit(t, "s", "t1", "hello", nil, nil)
			on.Store(false)
			if countFaults(ft) == 0 {
				t.Fatal("no fault was injected")
			}
			if tc.applied {
				r.want(t, http.StatusOK, "")
				if term := r.terminal(t); term.Status != protocol.StatusComplete {
					t.Fatalf("stream ends %s", r.raw)
				}
				e.submit(t, "s", "t1", "hello", nil, nil).want(t, http.StatusConflict, protocol.CodeTurnAlreadyCompleted)
				return
			}
			r.want(t, http.StatusInternalServerError, protocol.CodeServerInternal)
			if !r.errD.Retryable {
				t.Fatalf("a failed acknowledgment answered not retryable: %s", r.raw)
			}
			if _, err := store.FindTurn(context.Background(), "s", "t1", alice); !errors.Is(err, chat.ErrTurnNotFound) {
				t.Errorf("the unacknowledged turn is recorded: %v", err)
			}
			if s, err := store.GetSession(context.Background(), "s", alice); err != nil || s.ActiveTurn != nil {
				t.Errorf("session after the failed acknowledgment: %+v, %v; want free", s, err)
			}
			if m.Calls() != 0 {
				t.Errorf("the model ran %d times before an acknowledgment", m.Calls())
			}
			retry := e.submit(t, "s", "t1", "hello", nil, nil)
			retry.want(t, http.StatusOK, "")
			if term := retry.terminal(t); term.Status != protocol.StatusComplete || m.Calls() != 1 {
				t.Fatalf("the retry ends %s, model %d calls", retry.raw, m.Calls())
			}
			page, err := store.ListTurns(context.Background(), chat.ListRequest{SessionID: "s", Principal: alice, Limit: 10, Order: chat.OrderAsc})
			if err != nil || len(page.Turns) != 1 || page.Turns[0].TurnID != "t1" || page.Turns[0].Status != chat.TurnComplete {
				t.Fatalf("history after the retry: %+v, %v; want t1 complete, once", page, err)
			}
		})
	}
}

// TestFailedAcknowledgmentOfARetryIsSpent: a retry (lineage retry) has
// superseded its parent before its acknowledgment, so its claim cannot be
// withdrawn: its failure is saved as an error turn, and the answer says
// the id is spent, 409 TURN_ALREADY_COMPLETED (not retryable), what the
// claim of its id answers from now on. (Before, it answered a retryable
// 500 SERVER_INTERNAL.)
func TestFailedAcknowledgmentOfARetryIsSpent(t *testing.T) {
	store, ft := newFaultStore(t)
	e := newEnv(t, store, &scriptModel{Chunks: []string{"ok"}}, defaultLease)
	e.submit(t, "s", "t1", "hello", nil, nil).want(t, http.StatusOK, "")
	ackItem := ddbfault.For("UpdateItem", dynamo.PurposeAck)
	ft.SetRule(ddbfault.Always(ddbfault.ServerErrorBefore, ackItem))
	retry := protocol.Lineage{Operation: protocol.OperationRetry, ParentTurnID: "t1", SourceMessageID: "t1.a"}
	r := e.submit(t, "s", "t2", "hello", &retry, nil)
	ft.SetRule(nil)
	r.want(t, http.StatusConflict, protocol.CodeTurnAlreadyCompleted)
	stored, err := store.FindTurn(context.Background(), "s", "t2", alice)
	if err != nil || stored.Status != chat.TurnError {
		t.Fatalf("the spent turn's record: %+v, %v; want its error", stored, err)
	}
}

// TestFailedContextLoadLeavesTheIDUnspent: a submit whose context load
// (the Query of the session's earlier turns) fails on every attempt
// answers 500 SERVER_INTERNAL retryable, and that is true: its claim is
// withdrawn, nothing records the turn, and the retry of the same turn id
// runs it. A retry (lineage) has superseded its parent before the load,
// so its claim cannot be withdrawn: its failure is saved and the answer
// says the id is spent, 409 TURN_ALREADY_COMPLETED, not retryable.
// (Before, both answered a retryable 500 and the id was spent: the
// retry got 409 TURN_ALREADY_COMPLETED.)
func TestFailedContextLoadLeavesTheIDUnspent(t *testing.T) {
	contextLoad := ddbfault.For("Query", dynamo.PurposeContext)
	t.Run("submit", func(t *testing.T) {
		store, ft := newFaultStore(t)
		m := &scriptModel{Chunks: []string{"ok"}}
		e := newEnv(t, store, m, defaultLease)
		e.submit(t, "s", "t1", "hello", nil, nil).want(t, http.StatusOK, "")
		ft.SetRule(ddbfault.Always(ddbfault.ServerErrorBefore, contextLoad))
		r := e.submit(t, "s", "t2", "again", nil, nil)
		ft.SetRule(nil)
		if countFaults(ft) == 0 {
			t.Fatal("no fault was injected")
		}
		r.want(t, http.StatusInternalServerError, protocol.CodeServerInternal)
		if !r.errD.Retryable {
			t.Fatalf("a failed context load answered not retryable: %s", r.raw)
		}
		if _, err := store.FindTurn(context.Background(), "s", "t2", alice); !errors.Is(err, chat.ErrTurnNotFound) {
			t.Errorf("the turn whose context load failed is recorded: %v", err)
		}
		if s, err := store.GetSession(context.Background(), "s", alice); err != nil || s.ActiveTurn != nil {
			t.Errorf("session after the failed context load: %+v, %v; want free", s, err)
		}
		if m.Calls() != 1 {
			t.Errorf("the model ran %d times; want once (t1)", m.Calls())
		}
		retry := e.submit(t, "s", "t2", "again", nil, nil)
		retry.want(t, http.StatusOK, "")
		if term := retry.terminal(t); term.Status != protocol.StatusComplete || m.Calls() != 2 {
			t.Fatalf("the retry ends %s, model %d calls", retry.raw, m.Calls())
		}
		page, err := store.ListTurns(context.Background(), chat.ListRequest{SessionID: "s", Principal: alice, Limit: 10, Order: chat.OrderAsc})
		if err != nil || len(page.Turns) != 2 || page.Turns[1].TurnID != "t2" || page.Turns[1].Status != chat.TurnComplete {
			t.Fatalf("history after the retry: %+v, %v; want t1, t2 complete", page, err)
		}
	})
	t.Run("lineage retry", func(t *testing.T) {
		store, ft := newFaultStore(t)
		e := newEnv(t, store, &scriptModel{Chunks: []string{"ok"}}, defaultLease)
		e.submit(t, "s", "t1", "hello", nil, nil).want(t, http.StatusOK, "")
		e.submit(t, "s", "t2", "again", nil, nil).want(t, http.StatusOK, "")
		ft.SetRule(ddbfault.Always(ddbfault.ServerErrorBefore, contextLoad))
		retry := protocol.Lineage{Operation: protocol.OperationRetry, ParentTurnID: "t2", SourceMessageID: "t2.a"}
		r := e.submit(t, "s", "t3", "again", &retry, nil)
		ft.SetRule(nil)
		r.want(t, http.StatusConflict, protocol.CodeTurnAlreadyCompleted)
		if r.errD.Retryable {
			t.Fatalf("a spent id answered retryable: %s", r.raw)
		}
		stored, err := store.FindTurn(context.Background(), "s", "t3", alice)
		if err != nil || stored.Status != chat.TurnError {
			t.Fatalf("the spent turn's record: %+v, %v; want its error", stored, err)
		}
		if again := e.submit(t, "s", "t3", "again", &retry, nil); again.status < 400 || again.errD.Retryable {
			t.Fatalf("the replay of a spent id: %s; want a refusal, not retryable", again.raw)
		}
	})
}
