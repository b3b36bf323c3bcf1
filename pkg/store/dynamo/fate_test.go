package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/turnstream/turnstream/internal/ddbfault"
	"github.com/turnstream/turnstream/internal/dynalite"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
	"github.com/turnstream/turnstream/pkg/store/storetest"
)

// The writes of checkpoints and of deciding a turn (fate.go), by the
// purpose the store labels them with and the item they write.
var (
	liveWrite         = ddbfault.For("UpdateItem", dynamo.PurposeLive)
	deltaWrite        = ddbfault.For("PutItem", dynamo.PurposeDelta)
	sessionFenceWrite = ddbfault.For("UpdateItem", dynamo.PurposeFence, `"sk":{"S":"SESSION"}`)
	liveFenceWrite    = ddbfault.For("UpdateItem", dynamo.PurposeFence, `#LIVE"}`)
	closeLostWrite    = func(a ddbfault.Attempt) bool {
		return ddbfault.For("UpdateItem", dynamo.PurposeFence, `"sk":{"S":"TURN#`)(a) && !a.Has(`#LIVE"`) // the turn item, not its live item
	}
	clearWrite = ddbfault.For("UpdateItem", dynamo.PurposeFree)
)

// checkpointAt returns the checkpoint of claim c at sequence seq with the
// assistant text, after prior (nil: the acknowledgment).
func checkpointAt(c *chat.Claim, prior *chat.Checkpoint, text string, seq int64) *chat.Checkpoint {
	cp := &chat.Checkpoint{SessionID: c.Session.ID, TurnID: c.Lease.TurnID, Ordinal: c.Lease.Ordinal,
		FirstSequence: c.BaseSequence + 1, Sequence: seq, Messages: textMessages(c.Lease.TurnID, text)}
	if prior != nil {
		cp.Prior, cp.PriorSequence = prior.Messages, prior.Sequence
	}
	return cp
}

// TestCheckpointAfterAFailedOne: a checkpoint whose live item write
// failed (its delta stored, the head not moved), or whose delta write
// failed, is superseded by the next checkpoint, which names the same prior
// and lands; readers see the newest state. On a table where one failed
// write blocked every later checkpoint, the next one failed too.
func TestCheckpointAfterAFailedOne(t *testing.T) {
	for _, f := range []struct {
		name  string
		fault ddbfault.Fault
		match func(ddbfault.Attempt) bool
	}{
		{"live write 500 before", ddbfault.ServerErrorBefore, liveWrite},
		{"live write hung", ddbfault.Hang, liveWrite},
		{"live write applied late", ddbfault.ApplyLate, liveWrite},
		{"delta write 500 after", ddbfault.ServerErrorAfter, deltaWrite},
		{"delta write hung", ddbfault.Hang, deltaWrite},
	} {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel() // its own table and fault transport
			e := newFaultEnv(t)
			ctx := faultCtx(t)
			c, err := e.s.ClaimTurn(ctx, claimReq("s1", "t1"))
			if err != nil {
				t.Fatal(err)
			}
			ack := checkpointAt(c, nil, "", 1)
			if _, err := e.s.Checkpoint(ctx, c, ack); err != nil {
				t.Fatal(err)
			}
			e.faults.SetRule(ddbfault.Always(f.fault, f.match))
			failed := checkpointAt(c, ack, "Hel", 3)
			wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			_, err = e.s.Checkpoint(wctx, c, failed)
			cancel()
			e.faults.SetRule(nil)
			if n := e.faults.Counts()[f.fault]; n == 0 {
				t.Fatalf("no attempt met %v: the fault was not injected", f.fault)
			}
			if err == nil {
				t.Logf("the faulted checkpoint resolved as landed")
			}
			e.faults.WaitLate() // a late write has landed
			// The turn names the prior it knows landed: the acknowledgment.
			next := checkpointAt(c, ack, "Hello, wo", 5)
			if _, err := e.s.Checkpoint(ctx, c, next); err != nil {
				t.Fatalf("the checkpoint after a failed one: %v", err)
			}
			after := checkpointAt(c, next, "Hello, world", 7)
			if _, err := e.s.Checkpoint(ctx, c, after); err != nil {
				t.Fatalf("the one after: %v", err)
			}
			got, err := e.s.PollTurn(ctx, "s1", c.Lease.Ordinal, alice, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got.LastSequence != 7 || got.Messages[1].Content != "Hello, world" {
				t.Errorf("turn at %d with %q, want 7 with the newest text", got.LastSequence, got.Messages[1].Content)
			}
		})
	}
}

// TestDecisionRecognisesItsOwnWrites: each write of a decision that
// applied without an answer (or late) is recognised, and one that did not
// apply leaves the turn running with its expired lease until a later read
// completes the decision; either way every reader ends with the same lost
// record and a free session, and the dead turn can write nothing more.
func TestDecisionRecognisesItsOwnWrites(t *testing.T) {
	writes := map[string]func(ddbfault.Attempt) bool{
		"session fence": sessionFenceWrite, "live fence": liveFenceWrite,
		"turn close": closeLostWrite, "session free": clearWrite,
	}
	faults := []ddbfault.Fault{ddbfault.LoseAnswer, ddbfault.ServerErrorAfter, ddbfault.ServerErrorBefore, ddbfault.ApplyLate}
	for name, match := range writes {
		for _, fault := range faults {
			t.Run(name+"/"+fault.String(), func(t *testing.T) {
				t.Parallel() // its own table and fault transport
				e := newFaultEnv(t)
				ctx := faultCtx(t)
				c, err := e.s.ClaimTurn(ctx, claimReq("s1", "crash"))
				if err != nil {
					t.Fatal(err)
				}
				ack := checkpointAt(c, nil, "", 1)
				cp := checkpointAt(c, ack, "Partial", 3)
				for _, x := range []*chat.Checkpoint{ack, cp} {
					if _, err := e.s.Checkpoint(ctx, c, x); err != nil {
						t.Fatal(err)
					}
				}
				e.clock.Advance(lease)
				e.faults.SetRule(ddbfault.Always(fault, match))
				_, _ = e.s.GetSession(ctx, "s1", alice) // decides, or leaves it running
				e.faults.SetRule(nil)
				if n := e.faults.Counts()[fault]; n == 0 {
					t.Fatalf("no attempt met %v: the fault was not injected", fault)
				}
				e.faults.WaitLate()                           // a late write has landed
				sess, err := e.s.GetSession(ctx, "s1", alice) // completes it
				if err != nil {
					t.Fatal(err)
				}
				if sess.ActiveTurn != nil || sess.Sequence != chat.SequenceGapAfterCrash {
					t.Errorf("session: lease %+v, sequence %d; want free at %d", sess.ActiveTurn, sess.Sequence, chat.SequenceGapAfterCrash)
				}
				got, err := e.s.FindTurn(ctx, "s1", "crash", alice)
				if err != nil {
					t.Fatal(err)
				}
				if got.Status != chat.TurnError || got.Error == nil || got.Error.Code != protocol.CodeTurnLost ||
					got.Messages[1].Content != "Partial" || got.LastSequence != chat.SequenceGapAfterCrash {
					t.Errorf("lost record: %s %+v %q at %d", got.Status, got.Error, got.Messages[1].Content, got.LastSequence)
				}
				_, err = e.s.Checkpoint(ctx, c, checkpointAt(c, cp, "Partial, late", 4))
				if err == nil {
					t.Error("a checkpoint of the decided turn landed")
				}
				if err := e.s.SaveTurn(ctx, c, turnOf(c, "s1", textMessages("crash", "done"))); err == nil {
					t.Error("a save of the decided turn landed")
				}
			})
		}
	}
}

// TestDecisionFencesAProcessWithASlowClock: the decider's clock runs
// ahead of the turn's. Once the session is fenced, the turn's renewal
// (which its own clock still allows) and its save fail: the session
// lease, not a clock, is the authority.
func TestDecisionFencesAProcessWithASlowClock(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	turnStore := e.store()
	ahead := storetest.NewClock(testStart)
	decider := dynamo.New(e.client, dynamo.Options{Table: e.table, Now: ahead.Now, CursorKey: testCursorKey, ResolveShare: dynalite.ResolveShare})
	c, err := turnStore.ClaimTurn(ctx, claimReq("s1", "t1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := turnStore.Checkpoint(ctx, c, checkpointAt(c, nil, "", 1)); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(lease - time.Second) // the turn's clock: one second left
	ahead.Advance(lease + time.Second)   // the decider's: expired
	if _, err := decider.GetSession(ctx, "s1", alice); err != nil {
		t.Fatal(err)
	}
	_, err = turnStore.RenewLease(ctx, chat.RenewRequest{Claim: c, ExpiresAt: e.clock.Now().Add(lease), Sequence: 2})
	if err != chat.ErrLeaseLost {
		t.Errorf("renewal after the decision: %v, want ErrLeaseLost", err)
	}
	if err := turnStore.SaveTurn(ctx, c, turnOf(c, "s1", textMessages("t1", "done"))); err != chat.ErrLeaseLost {
		t.Errorf("save after the decision: %v, want ErrLeaseLost", err)
	}
}

// itemCounter counts the items Query returns.
type itemCounter struct {
	dynamo.Client
	items atomic.Int64
}

func (c *itemCounter) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	out, err := c.Client.Query(ctx, in, optFns...)
	if err == nil {
		c.items.Add(int64(len(out.Items)))
	}
	return out, err
}

// TestPollReadsOnlyWhatIsNewer: a resume's poll from its last state costs
// one BatchGetItem, plus one Query that returns only the checkpoints
// newer than that state, however long the turn has run (a poll that read
// the turn whole returned every delta so far, growing with the turn).
func TestPollReadsOnlyWhatIsNewer(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	counted := &itemCounter{Client: e.client}
	s := dynamo.New(counted, dynamo.Options{Table: e.table, Now: e.clock.Now, CursorKey: testCursorKey})
	c, err := s.ClaimTurn(ctx, claimReq("s1", "t1"))
	if err != nil {
		t.Fatal(err)
	}
	prior := checkpointAt(c, nil, "", 1)
	if _, err := s.Checkpoint(ctx, c, prior); err != nil {
		t.Fatal(err)
	}
	text := ""
	var polled *chat.Turn
	for i := range 30 {
		text += fmt.Sprintf("word %d ", i)
		cp := checkpointAt(c, prior, text, prior.Sequence+2)
		if _, err := s.Checkpoint(ctx, c, cp); err != nil {
			t.Fatal(err)
		}
		prior = cp
		e.count.Reset()
		counted.items.Store(0)
		if polled, err = s.PollTurn(ctx, "s1", c.Lease.Ordinal, alice, polled); err != nil {
			t.Fatal(err)
		}
		if polled.Messages[1].Content != text || polled.LastSequence != cp.Sequence {
			t.Fatalf("poll %d: %q at %d, want %q at %d", i, polled.Messages[1].Content, polled.LastSequence, text, cp.Sequence)
		}
		ops, items := e.count.Take(), counted.items.Load()
		if i == 0 {
			continue // the first poll reads the turn whole
		}
		if strings.Join(ops, " ") != "BatchGetItem Query" || items != 1 {
			t.Fatalf("poll %d after one new checkpoint: %v returning %d items; want BatchGetItem and a Query of the one new delta", i, ops, items)
		}
	}
	e.count.Reset()
	if _, err := s.PollTurn(ctx, "s1", c.Lease.Ordinal, alice, polled); err != nil {
		t.Fatal(err)
	}
	if ops := e.count.Take(); strings.Join(ops, " ") != "BatchGetItem" {
		t.Errorf("a poll with nothing new: %v, want one BatchGetItem", ops)
	}
}

// TestStopWhileLiveWritesFail: with every write of the live and delta
// items failing, a stop whose flag on the session's lease was written is a
// success (nil), although its copy on the live item could not be written;
// and a checkpoint that fails reports that stop (one read of the lease),
// with its error, so that the turn sees the stop while its checkpoints
// fail. (Before, the stop was a 500 and the failed checkpoints said
// nothing of it: the turn ran on until its next renewal.)
func TestStopWhileLiveWritesFail(t *testing.T) {
	for _, fault := range []ddbfault.Fault{ddbfault.ServerErrorBefore, ddbfault.Hang} {
		t.Run(fault.String(), func(t *testing.T) {
			t.Parallel() // its own table and fault transport
			e := newFaultEnv(t)
			ctx := faultCtx(t)
			c, err := e.s.ClaimTurn(ctx, claimReq("s1", "t1"))
			if err != nil {
				t.Fatal(err)
			}
			ack := checkpointAt(c, nil, "", 1)
			if _, err := e.s.Checkpoint(ctx, c, ack); err != nil {
				t.Fatal(err)
			}
			live := ddbfault.Op("UpdateItem", "#LIVE")
			e.faults.SetRule(func(a ddbfault.Attempt) ddbfault.Fault {
				if live(a) || deltaWrite(a) {
					return fault
				}
				return ddbfault.Pass
			})
			defer e.faults.SetRule(nil)
			// Before the stop, a failed checkpoint reports no stop.
			wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			stop, err := e.s.Checkpoint(wctx, c, checkpointAt(c, ack, "Hel", 3))
			cancel()
			if err == nil || stop {
				t.Fatalf("checkpoint under faults: stop %v, %v; want an error and no stop", stop, err)
			}
			if err := e.s.RequestStop(ctx, "s1", "t1", alice); err != nil {
				t.Fatalf("a stop whose lease flag was written: %v", err)
			}
			wctx, cancel = context.WithTimeout(ctx, 2*time.Second)
			stop, err = e.s.Checkpoint(wctx, c, checkpointAt(c, ack, "Hello", 5))
			cancel()
			if err == nil || !stop {
				t.Fatalf("checkpoint after the stop: stop %v, %v; want an error and the stop", stop, err)
			}
			if n := e.faults.Counts()[fault]; n == 0 {
				t.Fatal("no fault was injected")
			}
			e.faults.SetRule(nil)
			s, err := e.s.GetSession(ctx, "s1", alice)
			if err != nil || s.ActiveTurn == nil || !s.ActiveTurn.Stop {
				t.Fatalf("session after the stop: %+v, %v; want the lease flagged", s, err)
			}
		})
	}
}

// TestWithdrawnClaimWhoseLeaseRemovalFailed: a claim withdrawn after its
// acknowledgment failed, whose lease's removal then failed on every
// attempt, keeps its turn id unspent: at the default lease (30 s) the
// session stays busy until the lease expires, then the claim that meets
// the expired lease finds the withdrawn record and frees the session
// without recording the turn, so the retry of the same turn id runs.
func TestWithdrawnClaimWhoseLeaseRemovalFailed(t *testing.T) {
	const defaultLease = 30 * time.Second // turn.DefaultLeaseDuration
	e := newFaultEnv(t)
	ctx := faultCtx(t)
	req := claimReq("s1", "t1")
	req.LeaseDuration = defaultLease
	c, err := e.s.ClaimTurn(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	e.faults.SetRule(ddbfault.Always(ddbfault.ServerErrorBefore, ddbfault.For("UpdateItem", dynamo.PurposeWithdraw, `"sk":{"S":"SESSION"}`)))
	acked, err := e.s.WithdrawClaim(ctx, c)
	e.faults.SetRule(nil)
	if err != nil || acked {
		t.Fatalf("WithdrawClaim: %v, %v; want false, nil", acked, err)
	}
	if e.faults.Counts()[ddbfault.ServerErrorBefore] == 0 {
		t.Fatal("no fault was injected")
	}
	if item := e.turnItem(t, "s1", c.Lease.Ordinal); !dynamo.IsWithdrawnClaim(item) {
		t.Fatalf("the withdrawn ordinal's item %v: want the withdrawn claim's record", item)
	}
	if s, err := e.s.GetSession(ctx, "s1", alice); err != nil || s.ActiveTurn == nil {
		t.Fatalf("session %+v, %v: the lease's removal applied, the test proves nothing", s, err)
	}
	if _, err := e.s.ClaimTurn(ctx, req); !errors.Is(err, chat.ErrSessionBusy) {
		t.Fatalf("claim while the withdrawn lease holds: %v, want ErrSessionBusy", err)
	}
	e.clock.Advance(defaultLease)
	retry, err := e.s.ClaimTurn(ctx, req)
	if err != nil {
		t.Fatalf("the retry of the withdrawn turn id: %v", err)
	}
	if retry.Lease.Ordinal == c.Lease.Ordinal || retry.BaseSequence != c.BaseSequence || len(retry.Session.TerminalTurns) != 0 {
		t.Fatalf("retry: ordinal %d (withdrawn %d), base %d (was %d), window %+v; want a new ordinal, nothing recorded",
			retry.Lease.Ordinal, c.Lease.Ordinal, retry.BaseSequence, c.BaseSequence, retry.Session.TerminalTurns)
	}
	if _, err := e.s.Checkpoint(ctx, c, checkpointAt(c, nil, "", 1)); !errors.Is(err, chat.ErrLeaseLost) {
		t.Fatalf("a late acknowledgment of the withdrawn claim: %v, want ErrLeaseLost", err)
	}
	if _, err := e.s.Checkpoint(ctx, retry, checkpointAt(retry, nil, "", 1)); err != nil {
		t.Fatalf("the retry's acknowledgment: %v", err)
	}
	if item := e.turnItem(t, "s1", retry.Lease.Ordinal); item == nil || dynamo.IsWithdrawnClaim(item) {
		t.Fatalf("the retry's turn item %v: want a turn, not a withdrawn claim", item)
	}
}
