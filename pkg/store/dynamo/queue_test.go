package dynamo_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/ddbfault"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

// The writes of recording a queued turn as never run: its turn item and
// the removal of its queue entry.
var (
	notRunItemWrite   = ddbfault.For("UpdateItem", dynamo.PurposeNotRun, `"sk":{"S":"TURN#`)
	notRunEntryRemove = ddbfault.For("UpdateItem", dynamo.PurposeQueueRemove)
)

// TestNotRunRecordingSurvivesACrash: recording a cancelled queued turn
// as never run takes three writes (the ordinal, the record, the entry's
// removal). A writer that fails after the first leaves the entry
// Recording: the turn id is spent, readers see the turn queued, and the
// next ClaimQueued finishes the record at the ordinal taken, once, before
// it starts the next queued turn. Lost answers are recognised as the
// writes' own effects.
func TestNotRunRecordingSurvivesACrash(t *testing.T) {
	for _, f := range []struct {
		name   string
		fault  ddbfault.Fault
		match  func(ddbfault.Attempt) bool
		failed bool // the cancel reports an error
	}{
		{"record write fails", ddbfault.ServerErrorBefore, notRunItemWrite, true},
		{"record write hangs", ddbfault.Hang, notRunItemWrite, true},
		{"entry removal fails", ddbfault.ServerErrorBefore, notRunEntryRemove, true},
		{"record answer lost", ddbfault.LoseAnswer, notRunItemWrite, false},
		{"removal answer lost", ddbfault.LoseAnswer, notRunEntryRemove, false},
	} {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel() // its own table and fault transport
			e := newFaultEnv(t)
			ctx := faultCtx(t)
			c, err := e.s.ClaimTurn(ctx, claimReq("s1", "t1"))
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range []string{"q1", "q2"} {
				if _, err := e.s.EnqueueTurn(ctx, chat.EnqueueRequest{SessionID: "s1", TurnID: id, Principal: alice,
					InputHash: chat.HashInput("input of " + id), Lineage: protocol.Lineage{Operation: protocol.OperationSubmit},
					Message: textMessages(id, "")[0], TTL: time.Hour, Max: 4}); err != nil {
					t.Fatal(err)
				}
			}
			if err := e.s.SaveTurn(ctx, c, turnOf(c, "s1", textMessages("t1", "done"))); err != nil {
				t.Fatal(err)
			}
			if _, err := e.s.ReleaseTurn(ctx, chat.ReleaseRequest{Claim: c, Outcome: chat.OutcomeCompleted, Sequence: c.BaseSequence + 1}); err != nil {
				t.Fatal(err)
			}

			e.faults.SetRule(ddbfault.Always(f.fault, f.match))
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			err = e.s.CancelQueued(cctx, "s1", "q1", alice)
			cancel()
			e.faults.SetRule(nil)
			if e.faults.Counts()[f.fault] == 0 {
				t.Fatalf("no attempt met %v", f.fault)
			}
			if (err != nil) != f.failed {
				t.Fatalf("CancelQueued: %v, want failed=%v", err, f.failed)
			}
			sess, err := e.s.GetSession(ctx, "s1", alice)
			if err != nil {
				t.Fatal(err)
			}
			if f.failed {
				if len(sess.Queue) != 2 || !sess.Queue[0].Recording || sess.Queue[0].TurnID != "q1" || !chat.NeedsDrain(sess.Queue) {
					t.Fatalf("queue after the failed recording: %+v", sess.Queue)
				}
				if ids := chat.Waiting(sess.Queue); len(ids) != 1 || ids[0].TurnID != "q2" {
					t.Fatalf("waiting %+v, want q2", ids)
				}
				if err := chat.Rejection(sess.TerminalTurns, "q1", chat.HashInput("input of q1")); !errors.Is(err, chat.ErrTurnCompleted) {
					t.Errorf("a replay of q1: %v, want spent", err)
				}
			}
			qc, q, err := e.s.ClaimQueued(ctx, "s1", lease)
			if err != nil || q.TurnID != "q2" {
				t.Fatalf("ClaimQueued: %+v, %v; want q2", q, err)
			}
			rec, err := e.s.FindTurn(ctx, "s1", "q1", alice)
			if err != nil || rec.Error == nil || rec.Error.Code != protocol.CodeTurnCancelled || rec.Ordinal != c.Lease.Ordinal+1 {
				t.Fatalf("q1's record %+v, %v; want TURN_CANCELLED at ordinal %d", rec, err, c.Lease.Ordinal+1)
			}
			if qc.Lease.Ordinal != rec.Ordinal+1 {
				t.Errorf("q2 at ordinal %d, want %d", qc.Lease.Ordinal, rec.Ordinal+1)
			}
			after, err := e.s.GetSession(ctx, "s1", alice)
			if err != nil {
				t.Fatal(err)
			}
			for _, en := range after.Queue {
				if en.TurnID == "q1" {
					t.Errorf("q1's entry left behind: %+v", en)
				}
			}
		})
	}
}
