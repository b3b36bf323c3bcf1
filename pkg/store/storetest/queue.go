package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// queueTTL is the TTL of the suite's queued turns.
const queueTTL = 10 * time.Minute

// enqueueRequest is alice's enqueue of turnID with the input
// inputOf(turnID), at most max queued.
func enqueueRequest(sessionID, turnID string, max int) chat.EnqueueRequest {
	return chat.EnqueueRequest{
		SessionID: sessionID, TurnID: turnID, Principal: alice, InputHash: chat.HashInput(inputOf(turnID)),
		Lineage: protocol.Lineage{Operation: protocol.OperationSubmit},
		Message: protocol.Message{ID: turnID + "-user", Role: protocol.RoleUser, Content: inputOf(turnID),
			Status: protocol.MessageComplete, CreatedAt: stamp(start)},
		TTL: queueTTL, Max: max,
	}
}

// enqueue enqueues turnID and fails the test on error; it returns the
// turn's position.
func (e *env) enqueue(sessionID, turnID string) int {
	e.t.Helper()
	q, err := e.store.EnqueueTurn(e.ctx, enqueueRequest(sessionID, turnID, chat.DefaultMaxQueuedTurns))
	if err != nil {
		e.t.Fatalf("EnqueueTurn(%s, %s): %v", sessionID, turnID, err)
	}
	return q.Position
}

// claimQueued starts the session's next queued turn and fails the test
// on error.
func (e *env) claimQueued(sessionID string) (*chat.Claim, *chat.QueuedTurn) {
	e.t.Helper()
	c, q, err := e.store.ClaimQueued(e.ctx, sessionID, leaseDuration)
	if err != nil {
		e.t.Fatalf("ClaimQueued(%s): %v", sessionID, err)
	}
	return c, q
}

// runQueued acknowledges, saves and releases the queued turn of claim c.
func (e *env) runQueued(c *chat.Claim) {
	e.t.Helper()
	e.checkpoint(c, e.checkpointOf(c, nil, "", c.BaseSequence+1))
	t := e.turnFor(c, c.Session.ID)
	e.save(c, t)
	e.release(c.Session.ID, c, chat.OutcomeCompleted, t.LastSequence)
}

// waitingIDs returns the turn ids waiting in the session's queue.
func (e *env) waitingIDs(sessionID string) []string {
	e.t.Helper()
	var ids []string
	for _, q := range chat.Waiting(e.session(sessionID).Queue) {
		ids = append(ids, q.TurnID)
	}
	return ids
}

// queueCases prove EnqueueTurn, ClaimQueued and CancelQueued
// (docs/multitask.md): queued turns run one at a time in submit order
// after the running turn, each started exactly once, a dead claim's turn
// waits again, expired and cancelled turns are recorded as never run.
func queueCases() map[string]func(*testing.T, *env) {
	return map[string]func(*testing.T, *env){
		"QueuedTurnsRunInSubmitOrderAfterTheRunningTurn": func(t *testing.T, e *env) {
			running := e.claim("s1", "t1")
			for i, id := range []string{"q1", "q2", "q3"} {
				if pos := e.enqueue("s1", id); pos != i+1 {
					t.Errorf("%s at position %d, want %d", id, pos, i+1)
				}
			}
			if pos := e.enqueue("s1", "q2"); pos != 2 {
				t.Errorf("the same enqueue again: position %d, want 2", pos)
			}
			listed, err := e.store.QueuedTurns(e.ctx, "s1", alice)
			if err != nil || len(listed) != 3 {
				t.Fatalf("QueuedTurns = %+v, %v", listed, err)
			}
			for i, q := range listed {
				if id := fmt.Sprintf("q%d", i+1); q.TurnID != id || q.Message.Content != inputOf(id) || q.Message.Role != protocol.RoleUser {
					t.Errorf("QueuedTurns[%d] = %+v, want %s with its input", i, q, id)
				}
			}
			_, err = e.store.QueuedTurns(e.ctx, "s1", mallory)
			wantErr(t, "QueuedTurns by another principal", err, chat.ErrSessionNotFound)
			_, _, err = e.store.ClaimQueued(e.ctx, "s1", leaseDuration)
			wantErr(t, "ClaimQueued while a turn runs", err, chat.ErrSessionBusy)
			done := e.turnFor(running, "s1")
			e.save(running, done)
			// The release tells its caller, without another request, that
			// turns wait.
			after, err := e.store.ReleaseTurn(e.ctx, chat.ReleaseRequest{Claim: running, Outcome: chat.OutcomeCompleted, Sequence: done.LastSequence})
			if err != nil || after == nil || len(chat.Waiting(after.Queue)) != 3 || after.ActiveTurn != nil {
				t.Fatalf("release: %+v, %v; want the session free with three turns waiting", after, err)
			}
			_, err = e.store.ClaimTurn(e.ctx, claimRequest("s1", "plain"))
			wantErr(t, "a plain claim while turns wait", err, chat.ErrSessionQueued)
			var order []string
			for range 3 {
				c, q := e.claimQueued("s1")
				if q.Message.Content != inputOf(q.TurnID) || c.Lease.TurnID != q.TurnID || q.Started != c.Lease.Ordinal {
					t.Fatalf("queued turn %+v with claim %+v", q, c.Lease)
				}
				_, _, err := e.store.ClaimQueued(e.ctx, "s1", leaseDuration)
				wantErr(t, "ClaimQueued while a queued turn runs", err, chat.ErrSessionBusy)
				order = append(order, q.TurnID)
				e.runQueued(c)
			}
			if !slices.Equal(order, []string{"q1", "q2", "q3"}) {
				t.Errorf("ran %v, want q1 q2 q3", order)
			}
			_, _, err = e.store.ClaimQueued(e.ctx, "s1", leaseDuration)
			wantErr(t, "ClaimQueued of an empty queue", err, chat.ErrNothingQueued)
			if q := e.session("s1").Queue; len(q) != 0 {
				t.Errorf("queue after the runs: %+v", q)
			}
			e.completeTurn("s1", "plain")
			page, err := e.store.ListTurns(e.ctx, chat.ListRequest{SessionID: "s1", Principal: alice, Order: chat.OrderAsc})
			if err != nil || !slices.Equal(turnIDs(pageTurns(page)), []string{"t1", "q1", "q2", "q3", "plain"}) {
				t.Errorf("history %v, %v; want t1 q1 q2 q3 plain", turnIDs(pageTurns(page)), err)
			}
		},

		"EnqueueSaysWhetherTheSessionWasIdle": func(t *testing.T, e *env) {
			running := e.claim("s1", "t1")
			q, err := e.store.EnqueueTurn(e.ctx, enqueueRequest("s1", "q1", 4))
			if err != nil || q.Idle || q.Position != 1 || q.Entry.TurnID != "q1" {
				t.Fatalf("enqueue while a turn runs: %+v, %v; want not idle, position 1", q, err)
			}
			done := e.turnFor(running, "s1")
			e.save(running, done)
			e.release("s1", running, chat.OutcomeCompleted, done.LastSequence)
			if q, err = e.store.EnqueueTurn(e.ctx, enqueueRequest("s1", "q2", 4)); err != nil || !q.Idle || q.Position != 2 {
				t.Fatalf("enqueue on a free session: %+v, %v; want idle, position 2", q, err)
			}
			if q, err = e.store.EnqueueTurn(e.ctx, enqueueRequest("s1", "q1", 4)); err != nil || !q.Idle || q.Position != 1 {
				t.Fatalf("the same enqueue again: %+v, %v; want q1 idle at position 1", q, err)
			}
			e.claimQueued("s1")
			e.clock.Advance(leaseDuration + time.Second) // its process died: the lease expired
			if q, err = e.store.EnqueueTurn(e.ctx, enqueueRequest("s1", "q3", 4)); err != nil || !q.Idle {
				t.Fatalf("enqueue beside an expired lease: %+v, %v; want idle (nobody will release it)", q, err)
			}
		},

		"AnInterruptGoesAheadOfTheQueue": func(t *testing.T, e *env) {
			running := e.claim("s1", "t1")
			e.enqueue("s1", "q1")
			ahead := claimRequest("s1", "interrupter")
			ahead.AheadOfQueue = true
			_, err := e.store.ClaimTurn(e.ctx, ahead)
			wantErr(t, "an interrupt while the turn runs", err, chat.ErrSessionBusy)
			done := e.turnFor(running, "s1")
			e.save(running, done)
			e.release("s1", running, chat.OutcomeCompleted, done.LastSequence)
			_, err = e.store.ClaimTurn(e.ctx, claimRequest("s1", "plain"))
			wantErr(t, "a plain claim while q1 waits", err, chat.ErrSessionQueued)
			c, err := e.store.ClaimTurn(e.ctx, ahead)
			if err != nil {
				t.Fatalf("the interrupt's claim once the session is free: %v", err)
			}
			_, _, err = e.store.ClaimQueued(e.ctx, "s1", leaseDuration)
			wantErr(t, "ClaimQueued while the interrupt runs", err, chat.ErrSessionBusy)
			if ids := e.waitingIDs("s1"); !slices.Equal(ids, []string{"q1"}) {
				t.Errorf("waiting %v while the interrupt runs, want q1", ids)
			}
			e.runQueuedLike(c)
			qc, q := e.claimQueued("s1")
			if q.TurnID != "q1" || qc.Lease.Ordinal != c.Lease.Ordinal+1 {
				t.Errorf("after the interrupt: %s at ordinal %d, want q1 at %d", q.TurnID, qc.Lease.Ordinal, c.Lease.Ordinal+1)
			}
		},

		"EnqueueRejections": func(t *testing.T, e *env) {
			_, err := e.store.EnqueueTurn(e.ctx, enqueueRequest("none", "q1", 4))
			wantErr(t, "enqueue in no session", err, chat.ErrSessionNotFound)
			e.claim("s1", "t1")
			req := enqueueRequest("s1", "q1", 4)
			req.Principal = mallory
			_, err = e.store.EnqueueTurn(e.ctx, req)
			wantErr(t, "enqueue by another principal", err, chat.ErrSessionNotFound)
			_, err = e.store.EnqueueTurn(e.ctx, enqueueRequest("s1", "t1", 4))
			wantErr(t, "enqueue of the running turn's id", err, chat.ErrSessionBusy)
			e.enqueue("s1", "q1")
			other := enqueueRequest("s1", "q1", 4)
			other.InputHash = chat.HashInput("another input")
			_, err = e.store.EnqueueTurn(e.ctx, other)
			wantErr(t, "the queued id with another input", err, chat.ErrTurnIDReused)
			e.enqueue("s1", "q2")
			_, err = e.store.EnqueueTurn(e.ctx, enqueueRequest("s1", "q3", 2))
			wantErr(t, "a third turn with two allowed", err, chat.ErrQueueFull)
			bad := enqueueRequest("s1", "q3", 4)
			bad.TTL = 0
			_, err = e.store.EnqueueTurn(e.ctx, bad)
			wantErr(t, "no TTL", err, chat.ErrInvalidRequest)
			if ids := e.waitingIDs("s1"); !slices.Equal(ids, []string{"q1", "q2"}) {
				t.Errorf("queue %v after the rejections, want q1 q2", ids)
			}
		},

		"ReplayOfAFinishedTurnIsNotQueued": func(t *testing.T, e *env) {
			e.completeTurn("s1", "t1")
			e.claim("s1", "t2")
			_, err := e.store.EnqueueTurn(e.ctx, enqueueRequest("s1", "t1", 4))
			wantErr(t, "enqueue of a finished turn id", err, chat.ErrTurnCompleted)
		},

		"ConcurrentEnqueuesEachQueuedOnce": func(t *testing.T, e *env) {
			e.claim("s1", "t1")
			const n = 8
			var wg sync.WaitGroup
			errs := make([]error, n)
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, errs[i] = e.store.EnqueueTurn(e.ctx, enqueueRequest("s1", fmt.Sprintf("q%d", i), n))
				}()
			}
			wg.Wait()
			lost := 0
			for i, err := range errs {
				switch {
				case errors.Is(err, chat.ErrConflict):
					lost++ // lost every race it retried: SESSION_CONFLICT, retryable
				case err != nil:
					t.Errorf("enqueue q%d: %v", i, err)
				}
			}
			queue := e.session("s1").Queue
			if len(queue)+lost != n {
				t.Errorf("%d queued and %d refused of %d", len(queue), lost, n)
			}
			seqs := map[int64]bool{}
			for _, q := range queue {
				if seqs[q.Seq] {
					t.Errorf("two entries at position %d", q.Seq)
				}
				seqs[q.Seq] = true
			}
			if len(queue) < n/2 {
				t.Errorf("%d of %d concurrent enqueues queued", len(queue), n)
			}
		},

		"ConcurrentDrainersStartEachTurnOnce": func(t *testing.T, e *env) {
			running := e.claim("s1", "t1")
			for _, id := range []string{"q1", "q2", "q3"} {
				e.enqueue("s1", id)
			}
			e.runQueuedLike(running)
			started := map[string]int{}
			for range 3 {
				var wg sync.WaitGroup
				var mu sync.Mutex
				var won []*chat.Claim
				for range 6 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						c, q, err := e.store.ClaimQueued(e.ctx, "s1", leaseDuration)
						if err != nil {
							return
						}
						mu.Lock()
						defer mu.Unlock()
						started[q.TurnID]++
						won = append(won, c)
					}()
				}
				wg.Wait()
				if len(won) != 1 {
					t.Fatalf("%d drainers started a turn at once, want 1", len(won))
				}
				e.runQueued(won[0])
			}
			if len(started) != 3 || started["q1"] != 1 || started["q2"] != 1 || started["q3"] != 1 {
				t.Errorf("starts %v, want each queued turn once", started)
			}
		},

		"ClaimDiedBeforeTheAcknowledgmentWaitsAgain": func(t *testing.T, e *env) {
			running := e.claim("s1", "t1")
			e.enqueue("s1", "q1")
			e.enqueue("s1", "q2")
			e.runQueuedLike(running)
			dead, q := e.claimQueued("s1")
			if q.TurnID != "q1" {
				t.Fatalf("started %s, want q1", q.TurnID)
			}
			e.clock.Advance(leaseDuration) // its process died before the acknowledgment
			again, q := e.claimQueued("s1")
			if q.TurnID != "q1" || again.Lease.Ordinal == dead.Lease.Ordinal {
				t.Fatalf("after the dead claim: started %s at %d (the dead claim had %d); want q1 again at a new ordinal", q.TurnID, again.Lease.Ordinal, dead.Lease.Ordinal)
			}
			_, err := e.store.Checkpoint(e.ctx, dead, e.checkpointOf(dead, nil, "", dead.BaseSequence+1))
			wantErr(t, "the dead claim's late acknowledgment", err, chat.ErrLeaseLost)
			e.runQueued(again)
			if got := e.find("s1", "q1"); got.Status != chat.TurnComplete || got.Ordinal != again.Lease.Ordinal {
				t.Errorf("q1 in history: %s at %d, want complete at %d", got.Status, got.Ordinal, again.Lease.Ordinal)
			}
			_, q = e.claimQueued("s1")
			if q.TurnID != "q2" {
				t.Errorf("next started %s, want q2", q.TurnID)
			}
		},

		"ClaimDiedAfterTheAcknowledgmentIsLost": func(t *testing.T, e *env) {
			running := e.claim("s1", "t1")
			e.enqueue("s1", "q1")
			e.enqueue("s1", "q2")
			e.runQueuedLike(running)
			c, _ := e.claimQueued("s1")
			e.checkpoint(c, e.checkpointOf(c, nil, "", c.BaseSequence+1))
			e.clock.Advance(leaseDuration) // it started, then died
			_, q := e.claimQueued("s1")
			if q.TurnID != "q2" {
				t.Errorf("after q1 died: started %s, want q2 (q1 ran once)", q.TurnID)
			}
			if got := e.find("s1", "q1"); got.Status != chat.TurnError || got.Error == nil || got.Error.Code != protocol.CodeTurnLost {
				t.Errorf("q1: %s %+v, want lost", got.Status, got.Error)
			}
		},

		"RunningTurnSavedThenDiedQueuedTurnStarts": func(t *testing.T, e *env) {
			// The running turn saved, then its process died before its
			// release (and before it started the next): the next drainer
			// decides the lease and starts the queued turn, once.
			running := e.claim("s1", "t1")
			e.enqueue("s1", "q1")
			e.save(running, e.turnFor(running, "s1"))
			_, _, err := e.store.ClaimQueued(e.ctx, "s1", leaseDuration)
			wantErr(t, "ClaimQueued while the saved turn's lease holds", err, chat.ErrSessionBusy)
			e.clock.Advance(leaseDuration)
			_, q := e.claimQueued("s1")
			if q.TurnID != "q1" {
				t.Fatalf("started %s, want q1", q.TurnID)
			}
			if got := e.find("s1", "t1"); got.Status != chat.TurnComplete {
				t.Errorf("t1: %s, want complete", got.Status)
			}
			if w := e.session("s1").TerminalTurns; len(w) != 1 || w[0].TurnID != "t1" || w[0].Outcome != chat.OutcomeCompleted {
				t.Errorf("window %+v, want t1 completed", w)
			}
		},

		"CancelRacingStart": func(t *testing.T, e *env) {
			for round := range 4 {
				sid := fmt.Sprintf("s%d", round)
				running := e.claim(sid, "t1")
				e.enqueue(sid, "q1")
				e.runQueuedLike(running)
				var wg sync.WaitGroup
				var cancelErr, claimErr error
				var q *chat.QueuedTurn
				wg.Add(2)
				go func() { defer wg.Done(); cancelErr = e.store.CancelQueued(e.ctx, sid, "q1", alice) }()
				go func() { defer wg.Done(); _, q, claimErr = e.store.ClaimQueued(e.ctx, sid, leaseDuration) }()
				wg.Wait()
				started := claimErr == nil && q != nil && q.TurnID == "q1"
				cancelled := cancelErr == nil
				if started == cancelled {
					t.Fatalf("round %d: started %v (%v), cancelled %v (%v); want exactly one", round, started, claimErr, cancelled, cancelErr)
				}
				if cancelled && !errors.Is(claimErr, chat.ErrNothingQueued) {
					t.Errorf("round %d: the claim after the cancel: %v, want ErrNothingQueued", round, claimErr)
				}
				if started && !errors.Is(cancelErr, chat.ErrTurnNotActive) {
					t.Errorf("round %d: the cancel after the start: %v, want ErrTurnNotActive", round, cancelErr)
				}
			}
		},

		"CancelledAndExpiredTurnsNeverRun": func(t *testing.T, e *env) {
			running := e.claim("s1", "t1")
			e.enqueue("s1", "q1")
			e.enqueue("s1", "q2")
			if err := e.store.CancelQueued(e.ctx, "s1", "q1", alice); err != nil {
				t.Fatal(err)
			}
			err := e.store.CancelQueued(e.ctx, "s1", "q1", alice)
			wantErr(t, "cancel twice", err, chat.ErrTurnNotActive)
			err = e.store.CancelQueued(e.ctx, "s1", "t1", alice)
			wantErr(t, "cancel of the running turn", err, chat.ErrTurnNotActive)
			err = e.store.CancelQueued(e.ctx, "s1", "q2", mallory)
			wantErr(t, "cancel by another principal", err, chat.ErrSessionNotFound)
			e.runQueuedLike(running)
			e.clock.Advance(queueTTL + time.Second) // q2 waited too long
			_, _, err = e.store.ClaimQueued(e.ctx, "s1", leaseDuration)
			wantErr(t, "ClaimQueued of an expired turn", err, chat.ErrNothingQueued)
			for id, code := range map[string]string{"q1": protocol.CodeTurnCancelled, "q2": protocol.CodeTurnQueueExpired} {
				got := e.find("s1", id)
				if got.Status != chat.TurnError || got.Error == nil || got.Error.Code != code || len(got.Messages) != 1 || got.Messages[0].Content != inputOf(id) {
					t.Errorf("%s: %s %+v %v, want its input, error %s", id, got.Status, got.Error, got.Messages, code)
				}
				_, err := e.store.ClaimTurn(e.ctx, claimRequest("s1", id))
				wantErr(t, "replay of "+id, err, chat.ErrTurnCompleted)
			}
			e.completeTurn("s1", "after")
		},

		"PendingConfirmationHoldsTheQueue": func(t *testing.T, e *env) {
			// A turn waits for approval: queued turns wait for the decision
			// (or its expiry), and the decision runs before them.
			for _, decide := range []bool{true, false} {
				sid := fmt.Sprintf("s-%v", decide)
				cf := e.askApproval(sid, "t1", "call-1")
				req := enqueueRequest(sid, "q1", chat.DefaultMaxQueuedTurns)
				req.TTL = 2 * confirmationTTL // it outlives the confirmation
				if _, err := e.store.EnqueueTurn(e.ctx, req); err != nil {
					t.Fatal(err)
				}
				_, _, err := e.store.ClaimQueued(e.ctx, sid, leaseDuration)
				wantErr(t, "ClaimQueued while a confirmation waits", err, chat.ErrSessionBusy)
				_, err = e.store.ClaimTurn(e.ctx, claimRequest(sid, "plain"))
				wantErr(t, "a plain claim while a turn is queued", err, chat.ErrSessionQueued)
				if decide {
					d := e.claimWith(decisionRequest(sid, "t2", cf.Token, true))
					e.runQueuedLike(d)
				} else {
					e.clock.Advance(confirmationTTL + time.Second) // it expires undecided
				}
				_, q := e.claimQueued(sid)
				if q.TurnID != "q1" {
					t.Errorf("decided %v: started %s, want q1", decide, q.TurnID)
				}
			}
		},
	}
}

// runQueuedLike saves and releases claim c like the turns of the suite.
func (e *env) runQueuedLike(c *chat.Claim) {
	e.t.Helper()
	t := e.turnFor(c, c.Session.ID)
	e.save(c, t)
	e.release(c.Session.ID, c, chat.OutcomeCompleted, t.LastSequence)
}
