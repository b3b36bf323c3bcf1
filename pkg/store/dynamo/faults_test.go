package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/ddbfault"
	"github.com/turnstream/turnstream/internal/dynalite"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
	"github.com/turnstream/turnstream/pkg/store/storetest"
)

// faultEnv is a table whose client sends every HTTP attempt through a
// ddbfault.Transport, below the SDK's retryer: an injected fault is seen
// by the SDK, which retries as it would against DynamoDB.
type faultEnv struct {
	*env
	faults *ddbfault.Transport
	s      *dynamo.Store
}

// attemptTimeout is short so that a hung attempt costs little test time.
const attemptTimeout = 200 * time.Millisecond

func newFaultEnv(t *testing.T) *faultEnv {
	t.Helper()
	ft := ddbfault.New(nil)
	opts := dynalite.Options(t)
	opts.Transport = ft
	opts.AttemptTimeout = attemptTimeout
	c := &dynamo.OperationLog{}
	client, err := dynamo.NewClient(context.Background(), opts, c.Option)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{client: client, table: dynalite.Table(t), count: c, clock: storetest.NewClock(testStart)}
	ft.Reset()
	return &faultEnv{env: e, faults: ft, s: e.store()}
}

// ctx is a generous caller deadline: the faults below resolve in well
// under a second, so no case depends on the machine's speed.
func faultCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// The rules aim at one write by the purpose the store labelled it with
// (and the item it writes, where one purpose writes several).
var (
	claimWrite   = ddbfault.For("UpdateItem", dynamo.PurposeClaim)
	takeoverCAS  = ddbfault.For("UpdateItem", dynamo.PurposeTakeover)
	fenceWrite   = ddbfault.For("UpdateItem", dynamo.PurposeFence)
	saveWrite    = ddbfault.For("UpdateItem", dynamo.PurposeSave)
	releaseWrite = ddbfault.For("UpdateItem", dynamo.PurposeRelease)
	renewWrite   = ddbfault.For("UpdateItem", dynamo.PurposeRenew)
	stopWrite    = ddbfault.For("UpdateItem", dynamo.PurposeStop, `"sk":{"S":"SESSION"}`)
)

// TestClaimRecognisesItsOwnWrite: a claim that applied but whose answer
// was lost (or answered 500) is a successful claim, not SESSION_BUSY;
// the session spends one ordinal and no sequences.
func TestClaimRecognisesItsOwnWrite(t *testing.T) {
	for _, fault := range []ddbfault.Fault{ddbfault.LoseAnswer, ddbfault.ServerErrorAfter} {
		for _, existing := range []bool{false, true} {
			name := fault.String() + map[bool]string{false: "/new session", true: "/existing session"}[existing]
			t.Run(name, func(t *testing.T) {
				e := newFaultEnv(t)
				ctx := faultCtx(t)
				wantOrdinal, wantBase := int64(1), int64(0)
				if existing {
					completeTurn(t, e.s, "s1", "t0", 2)
					wantOrdinal, wantBase = 2, 2
				}
				e.faults.SetRule(ddbfault.Once(fault, claimWrite))
				c, err := e.s.ClaimTurn(ctx, claimReq("s1", "t1"))
				if err != nil {
					t.Fatalf("claim whose write applied: %v", err)
				}
				if n := e.faults.Counts()[fault]; n != 1 {
					t.Fatalf("%d attempts met %v, want 1: the fault was not injected", n, fault)
				}
				if c.Lease.Ordinal != wantOrdinal || c.BaseSequence != wantBase || c.Created == existing {
					t.Errorf("claim ordinal %d base %d created %v; want %d, %d, %v", c.Lease.Ordinal, c.BaseSequence, c.Created,
						wantOrdinal, wantBase, !existing)
				}
				sess, err := e.s.GetSession(ctx, "s1", alice)
				if err != nil {
					t.Fatal(err)
				}
				if sess.ActiveTurn == nil || sess.ActiveTurn.Token != c.Lease.Token || sess.NextOrdinal != wantOrdinal+1 || sess.Sequence != wantBase {
					t.Errorf("session after the claim: lease %+v, next ordinal %d, sequence %d", sess.ActiveTurn, sess.NextOrdinal, sess.Sequence)
				}
				// The turn runs exactly once: the claim is usable end to end.
				e.faults.SetRule(nil)
				turn := turnOf(c, "s1", textMessages("t1", "answer"))
				if err := e.s.SaveTurn(ctx, c, turn); err != nil {
					t.Fatal(err)
				}
				if _, err := e.s.ReleaseTurn(ctx, chat.ReleaseRequest{Claim: c, Outcome: chat.OutcomeCompleted, Sequence: wantBase + 1}); err != nil {
					t.Fatal(err)
				}
				_, err = e.s.ClaimTurn(ctx, claimReq("s1", "t1"))
				if !errors.Is(err, chat.ErrTurnCompleted) {
					t.Errorf("replay after the turn: %v, want ErrTurnCompleted", err)
				}
			})
		}
	}
}

// TestClaimNotAppliedIsAnError: a claim whose every attempt failed before
// DynamoDB applied it reports a (retryable) failure, and the one read that
// resolves it shows no lease: nothing was claimed.
func TestClaimNotAppliedIsAnError(t *testing.T) {
	e := newFaultEnv(t)
	ctx := faultCtx(t)
	e.faults.SetRule(ddbfault.Always(ddbfault.ServerErrorBefore, claimWrite))
	_, err := e.s.ClaimTurn(ctx, claimReq("s1", "t1"))
	if err == nil || errors.Is(err, chat.ErrSessionBusy) {
		t.Fatalf("claim that never applied: %v, want a storage error", err)
	}
	if n := e.faults.Counts()[ddbfault.ServerErrorBefore]; n < 2 {
		t.Errorf("%d attempts, want the SDK to retry", n)
	}
	e.faults.SetRule(nil)
	if _, err := e.s.GetSession(ctx, "s1", alice); !errors.Is(err, chat.ErrSessionNotFound) {
		t.Errorf("session after a claim that never applied: %v, want ErrSessionNotFound", err)
	}
	if _, err := e.s.ClaimTurn(ctx, claimReq("s1", "t1")); err != nil {
		t.Errorf("the client's retry: %v", err)
	}
}

// TestClaimWhoseOutcomeStaysUnknown: a claim write that may have applied
// (its answer lost, or a 500 before DynamoDB applied it: the store cannot
// tell which) and whose resolving read fails on every attempt is
// ErrTurnIndeterminate (409 TURN_OUTCOME_INDETERMINATE, not retryable),
// never a retryable failure: its turn id may be spent (the fate harness
// found a short-lease turn told 500 SERVER_INTERNAL whose claim had
// applied). Once reads work again, the table shows which it was.
func TestClaimWhoseOutcomeStaysUnknown(t *testing.T) {
	for name, tc := range map[string]struct {
		fault   ddbfault.Fault
		applied bool
	}{
		"applied, answer lost": {ddbfault.LoseAnswer, true},
		"never applied":        {ddbfault.ServerErrorBefore, false},
	} {
		t.Run(name, func(t *testing.T) {
			e := newFaultEnv(t)
			ctx := faultCtx(t)
			var mu sync.Mutex
			sent := false // the claim write was attempted: every read fails from here
			e.faults.SetRule(func(a ddbfault.Attempt) ddbfault.Fault {
				mu.Lock()
				defer mu.Unlock()
				switch {
				case claimWrite(a) && (!sent || !tc.applied):
					sent = true
					return tc.fault
				case sent && a.Op == "GetItem":
					return ddbfault.ServerErrorBefore
				}
				return ddbfault.Pass
			})
			_, err := e.s.ClaimTurn(ctx, claimReq("s1", "t1"))
			if !errors.Is(err, chat.ErrTurnIndeterminate) {
				t.Fatalf("claim whose outcome stayed unknown: %v, want ErrTurnIndeterminate", err)
			}
			if c := e.faults.Counts(); c[tc.fault] == 0 || c[ddbfault.ServerErrorBefore] == 0 {
				t.Fatalf("faults injected: %v", c)
			}
			e.faults.SetRule(nil)
			s, err := e.s.GetSession(ctx, "s1", alice)
			if !tc.applied {
				if !errors.Is(err, chat.ErrSessionNotFound) {
					t.Fatalf("session after a claim that never applied: %+v, %v", s, err)
				}
				if _, err := e.s.ClaimTurn(ctx, claimReq("s1", "t1")); err != nil {
					t.Errorf("a new submission of the unspent id: %v", err)
				}
				return
			}
			if err != nil || s.ActiveTurn == nil || s.ActiveTurn.TurnID != "t1" {
				t.Fatalf("session %+v, %v: the claim did not apply, the test proves nothing", s, err)
			}
			if _, err := e.s.ClaimTurn(ctx, claimReq("s1", "t1")); !errors.Is(err, chat.ErrSessionBusy) {
				t.Errorf("replay while the unknown claim's lease holds: %v, want ErrSessionBusy", err)
			}
			e.clock.Advance(lease)
			if _, err := e.s.ClaimTurn(ctx, claimReq("s1", "t1")); !errors.Is(err, chat.ErrTurnIndeterminate) {
				t.Errorf("replay once the table decided the turn: %v, want ErrTurnIndeterminate", err)
			}
		})
	}
}

// TestTakeoverRecognisesItsOwnWrites: the fence and the compare-and-set of
// a takeover recognise their own applied writes.
func TestTakeoverRecognisesItsOwnWrites(t *testing.T) {
	for name, match := range map[string]func(ddbfault.Attempt) bool{"fence": fenceWrite, "compare-and-set": takeoverCAS} {
		t.Run(name, func(t *testing.T) {
			e := newFaultEnv(t)
			ctx := faultCtx(t)
			crashed, err := e.s.ClaimTurn(ctx, claimReq("s1", "crashed"))
			if err != nil {
				t.Fatal(err)
			}
			e.clock.Advance(lease)
			e.faults.SetRule(ddbfault.Once(ddbfault.LoseAnswer, match))
			c, err := e.s.ClaimTurn(ctx, claimReq("s1", "t2"))
			if err != nil {
				t.Fatalf("takeover: %v", err)
			}
			if e.faults.Counts()[ddbfault.LoseAnswer] != 1 {
				t.Fatal("the fault was not injected")
			}
			if c.Lease.Ordinal != 2 || c.BaseSequence != chat.SequenceGapAfterCrash {
				t.Errorf("takeover claim ordinal %d base %d", c.Lease.Ordinal, c.BaseSequence)
			}
			e.faults.SetRule(nil)
			if err := e.s.SaveTurn(ctx, crashed, turnOf(crashed, "s1", textMessages("crashed", "late"))); !errors.Is(err, chat.ErrLeaseLost) {
				t.Errorf("late save of the crashed turn: %v, want ErrLeaseLost", err)
			}
		})
	}
}

// TestTakeoverWhoseOutcomeStaysUnknown: a takeover's compare-and-set
// that applied with its answer lost, whose resolving read then fails on
// every attempt, is an unknown outcome, not ErrSessionBusy: the session
// may be this claim's own (the load run under two CPU hogs answered such
// a claim 409 SESSION_BUSY). Once reads work again, the claim's retry
// meets its own lease.
func TestTakeoverWhoseOutcomeStaysUnknown(t *testing.T) {
	e := newFaultEnv(t)
	ctx := faultCtx(t)
	if _, err := e.s.ClaimTurn(ctx, claimReq("s1", "crashed")); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(lease)
	var mu sync.Mutex
	lost := false // the compare-and-set applied unanswered: every read fails from here
	e.faults.SetRule(func(a ddbfault.Attempt) ddbfault.Fault {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case !lost && takeoverCAS(a):
			lost = true
			return ddbfault.LoseAnswer
		case lost && (a.Op == "GetItem" || a.Op == "BatchGetItem"):
			return ddbfault.ServerErrorBefore
		}
		return ddbfault.Pass
	})
	_, err := e.s.ClaimTurn(ctx, claimReq("s1", "t2"))
	if !errors.Is(err, chat.ErrTurnIndeterminate) {
		t.Fatalf("takeover whose outcome stayed unknown: %v, want ErrTurnIndeterminate (not ErrSessionBusy: the session may be its own)", err)
	}
	if c := e.faults.Counts(); c[ddbfault.LoseAnswer] != 1 || c[ddbfault.ServerErrorBefore] == 0 {
		t.Fatalf("faults injected: %v", c)
	}
	e.faults.SetRule(nil)
	s, err := e.s.GetSession(ctx, "s1", alice)
	if err != nil || s.ActiveTurn == nil || s.ActiveTurn.TurnID != "t2" {
		t.Fatalf("session %+v, %v: the compare-and-set did not apply, the test proves nothing", s, err)
	}
}

// TestSaveResolvesUnknownOutcome: a save that applied is reported saved
// whatever its answers were; a hung attempt is cut by the attempt timeout
// and retried.
func TestSaveResolvesUnknownOutcome(t *testing.T) {
	cases := map[string]ddbfault.Rule{
		"answer lost":                ddbfault.Once(ddbfault.LoseAnswer, saveWrite),
		"500 after apply, every try": ddbfault.Always(ddbfault.ServerErrorAfter, saveWrite),
		"first attempt hangs":        ddbfault.Once(ddbfault.Hang, saveWrite),
	}
	for name, rule := range cases {
		t.Run(name, func(t *testing.T) {
			e := newFaultEnv(t)
			ctx := faultCtx(t)
			c, err := e.s.ClaimTurn(ctx, claimReq("s1", "t1"))
			if err != nil {
				t.Fatal(err)
			}
			e.faults.SetRule(rule)
			turn := turnOf(c, "s1", textMessages("t1", "the answer"))
			if err := e.s.SaveTurn(ctx, c, turn); err != nil {
				t.Fatalf("save that applied: %v", err)
			}
			if injected(e.faults) == 0 {
				t.Fatal("no fault was injected")
			}
			e.faults.SetRule(nil)
			got, err := e.s.FindTurn(ctx, "s1", "t1", alice)
			if err != nil || got.Status != chat.TurnComplete || got.Messages[1].Content != "the answer" {
				t.Errorf("stored turn %+v, err %v", got, err)
			}
		})
	}
	t.Run("500 before apply, every try", func(t *testing.T) {
		e := newFaultEnv(t)
		ctx := faultCtx(t)
		c, err := e.s.ClaimTurn(ctx, claimReq("s1", "t1"))
		if err != nil {
			t.Fatal(err)
		}
		e.faults.SetRule(ddbfault.Always(ddbfault.ServerErrorBefore, saveWrite))
		if err := e.s.SaveTurn(ctx, c, turnOf(c, "s1", textMessages("t1", "x"))); err == nil {
			t.Fatal("a save that never applied reported success")
		}
	})
}

// TestReleaseResolvesUnknownOutcome: an applied release is done however
// it was answered.
func TestReleaseResolvesUnknownOutcome(t *testing.T) {
	for _, rule := range []ddbfault.Rule{
		ddbfault.Once(ddbfault.LoseAnswer, releaseWrite),
		ddbfault.Always(ddbfault.ServerErrorAfter, releaseWrite),
	} {
		e := newFaultEnv(t)
		ctx := faultCtx(t)
		c, err := e.s.ClaimTurn(ctx, claimReq("s1", "t1"))
		if err != nil {
			t.Fatal(err)
		}
		e.faults.SetRule(rule)
		if _, err := e.s.ReleaseTurn(ctx, chat.ReleaseRequest{Claim: c, Outcome: chat.OutcomeCompleted, Sequence: 3}); err != nil {
			t.Fatalf("release that applied: %v", err)
		}
		e.faults.SetRule(nil)
		sess, err := e.s.GetSession(ctx, "s1", alice)
		if err != nil || sess.ActiveTurn != nil || len(sess.TerminalTurns) != 1 || sess.Sequence != 3 {
			t.Errorf("session after the release: %+v, err %v", sess, err)
		}
	}
}

// TestRenewUnderFaults: a renewal's lost answer is a renewal; a hung
// connection costs attempt timeouts, not the caller's whole deadline, and
// a renewal that never applied is an error (the caller keeps the expiry
// it last proved).
func TestRenewUnderFaults(t *testing.T) {
	t.Run("answer lost", func(t *testing.T) {
		e := newFaultEnv(t)
		ctx := faultCtx(t)
		c, err := e.s.ClaimTurn(ctx, claimReq("s1", "t1"))
		if err != nil {
			t.Fatal(err)
		}
		until := e.clock.Now().Add(2 * lease)
		e.faults.SetRule(ddbfault.Once(ddbfault.LoseAnswer, renewWrite))
		l, err := e.s.RenewLease(ctx, chat.RenewRequest{Claim: c, ExpiresAt: until, Sequence: 4})
		if err != nil || !l.ExpiresAt.Equal(until) {
			t.Fatalf("renewal that applied: %+v, %v", l, err)
		}
		if e.faults.Counts()[ddbfault.LoseAnswer] != 1 {
			t.Fatal("the fault was not injected")
		}
	})
	t.Run("every attempt hangs", func(t *testing.T) {
		e := newFaultEnv(t)
		ctx := faultCtx(t)
		c, err := e.s.ClaimTurn(ctx, claimReq("s1", "t1"))
		if err != nil {
			t.Fatal(err)
		}
		e.faults.SetRule(ddbfault.Always(ddbfault.Hang, renewWrite))
		_, err = e.s.RenewLease(ctx, chat.RenewRequest{Claim: c, ExpiresAt: e.clock.Now().Add(2 * lease)})
		if err == nil {
			t.Fatal("a renewal that never answered reported success")
		}
		if ctx.Err() != nil {
			t.Fatal("the renewal held the caller until its deadline")
		}
		if n := e.faults.Counts()[ddbfault.Hang]; n < 2 {
			t.Errorf("%d hung attempts, want the attempt timeout to cut each and the SDK to retry", n)
		}
		e.faults.SetRule(nil)
		sess, err := e.s.GetSession(ctx, "s1", alice)
		if err != nil || sess.ActiveTurn == nil || !sess.ActiveTurn.ExpiresAt.Equal(c.Lease.ExpiresAt) {
			t.Errorf("lease after the hung renewal: %+v, want the claim's expiry", sess.ActiveTurn)
		}
	})
	t.Run("caller deadline bounds a hang", func(t *testing.T) {
		e := newFaultEnv(t)
		c, err := e.s.ClaimTurn(faultCtx(t), claimReq("s1", "t1"))
		if err != nil {
			t.Fatal(err)
		}
		e.faults.SetRule(ddbfault.Always(ddbfault.Hang, renewWrite))
		ctx, cancel := context.WithTimeout(context.Background(), attemptTimeout/2)
		defer cancel()
		if _, err := e.s.RenewLease(ctx, chat.RenewRequest{Claim: c, ExpiresAt: e.clock.Now().Add(2 * lease)}); err == nil {
			t.Fatal("success past the caller's deadline")
		}
	})
}

// TestStopAndArtifactsResolveUnknownOutcome: the stop flag and an
// artifacts write that applied are reported done.
func TestStopAndArtifactsResolveUnknownOutcome(t *testing.T) {
	e := newFaultEnv(t)
	ctx := faultCtx(t)
	c, err := e.s.ClaimTurn(ctx, claimReq("s1", "t1"))
	if err != nil {
		t.Fatal(err)
	}
	e.faults.SetRule(ddbfault.Always(ddbfault.ServerErrorAfter, stopWrite))
	if err := e.s.RequestStop(ctx, "s1", "t1", alice); err != nil {
		t.Fatalf("stop that applied: %v", err)
	}
	e.faults.SetRule(nil)
	if l, err := e.s.RenewLease(ctx, chat.RenewRequest{Claim: c, ExpiresAt: e.clock.Now().Add(lease)}); err != nil || !l.Stop {
		t.Fatalf("lease after the stop: %+v, %v", l, err)
	}
	if err := e.s.SaveTurn(ctx, c, turnOf(c, "s1", textMessages("t1", "x"))); err != nil {
		t.Fatal(err)
	}
	refs := []chat.ArtifactReference{{EntryPath: "out/a.md", ArtifactType: chat.ArtifactDocument}}
	e.faults.SetRule(ddbfault.Always(ddbfault.ServerErrorAfter, ddbfault.For("UpdateItem", dynamo.PurposeArtifacts)))
	if _, err := e.s.PutArtifacts(ctx, "s1", "t1", alice, refs); err != nil {
		t.Fatalf("artifacts write that applied: %v", err)
	}
	e.faults.SetRule(nil)
	if got, err := e.s.GetArtifacts(ctx, "s1", "t1", alice); err != nil || len(got) != 1 {
		t.Errorf("artifacts after the write: %v, %v", got, err)
	}
}

// completeTurn runs one turn of alice through claim, save and release.
func completeTurn(t *testing.T, s *dynamo.Store, sessionID, turnID string, sequence int64) {
	t.Helper()
	ctx := context.Background()
	c, err := s.ClaimTurn(ctx, claimReq(sessionID, turnID))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SaveTurn(ctx, c, turnOf(c, sessionID, textMessages(turnID, "answer"))); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReleaseTurn(ctx, chat.ReleaseRequest{Claim: c, Outcome: chat.OutcomeCompleted, Sequence: sequence,
		Listing: &chat.Listing{Status: chat.TurnComplete, Preview: "answer"}}); err != nil {
		t.Fatal(err)
	}
}

// injected counts the attempts that met a fault.
func injected(ft *ddbfault.Transport) int {
	n := 0
	for f, c := range ft.Counts() {
		if f != ddbfault.Pass {
			n += c
		}
	}
	return n
}

// TestLateApplyingWrite: a write whose only attempt timed out at the
// client but reaches DynamoDB later (after the resolving read found
// nothing) is sent once more rather than reported failed, so a save that
// will land is not told "not saved", and a claim that will land is a
// claim, not a lease nobody holds.
func TestLateApplyingWrite(t *testing.T) {
	for name, match := range map[string]func(ddbfault.Attempt) bool{"save": saveWrite, "claim": claimWrite, "release": releaseWrite} {
		t.Run(name, func(t *testing.T) {
			ft := ddbfault.New(nil)
			opts := dynalite.Options(t)
			opts.Transport, opts.AttemptTimeout, opts.MaxAttempts = ft, attemptTimeout, 1
			client, err := dynamo.NewClient(context.Background(), opts)
			if err != nil {
				t.Fatal(err)
			}
			table := dynalite.Table(t)
			s := dynamo.New(client, dynamo.Options{Table: table, CursorKey: testCursorKey})
			ctx := faultCtx(t)
			if name != "claim" {
				ft.SetRule(nil)
			} else {
				ft.SetRule(ddbfault.Once(ddbfault.ApplyLate, match))
			}
			c, err := s.ClaimTurn(ctx, claimReq("s1", "t1"))
			if err != nil {
				t.Fatalf("claim: %v", err)
			}
			ft.SetRule(ddbfault.Once(ddbfault.ApplyLate, match))
			turn := turnOf(c, "s1", textMessages("t1", "late but whole"))
			if err := s.SaveTurn(ctx, c, turn); err != nil {
				t.Fatalf("save: %v", err)
			}
			if _, err := s.ReleaseTurn(ctx, chat.ReleaseRequest{Claim: c, Outcome: chat.OutcomeCompleted, Sequence: 2}); err != nil {
				t.Fatalf("release: %v", err)
			}
			if ft.Counts()[ddbfault.ApplyLate] != 1 {
				t.Fatal("the fault was not injected")
			}
			ft.WaitLate() // the late copy has landed
			ft.SetRule(nil)
			// Read back through a client with the default attempts: the
			// store under test gives each attempt 200 ms, which a loaded
			// machine may exceed.
			plain, err := dynamo.NewClient(context.Background(), dynalite.Options(t))
			if err != nil {
				t.Fatal(err)
			}
			s = dynamo.New(plain, dynamo.Options{Table: table, CursorKey: testCursorKey})
			sess, err := s.GetSession(ctx, "s1", alice)
			if err != nil || sess.ActiveTurn != nil || len(sess.TerminalTurns) != 1 || sess.TerminalTurns[0].Outcome != chat.OutcomeCompleted {
				t.Errorf("session after a late write: %+v, %v", sess, err)
			}
			if got, err := s.FindTurn(ctx, "s1", "t1", alice); err != nil || got.Status != chat.TurnComplete {
				t.Errorf("turn after a late write: %+v, %v", got, err)
			}
		})
	}
}

// TestLookupPastTheWindowStaysInsideTheLease: the turn-id lookup of a
// claim past a full window serves the lease it just took, so a hung
// lookup is cut within half of that lease and the claim given back (no
// lease left held, the ordinal returned) instead of returning a lease
// already spent.
func TestLookupPastTheWindowStaysInsideTheLease(t *testing.T) {
	e := newFaultEnv(t)
	ctx := faultCtx(t)
	for i := range chat.DefaultTerminalWindow {
		completeTurn(t, e.s, "s1", fmt.Sprintf("t%d", i), int64(i+1))
	}
	before, err := e.s.GetSession(ctx, "s1", alice)
	if err != nil {
		t.Fatal(err)
	}
	e.faults.SetRule(ddbfault.Always(ddbfault.Hang, ddbfault.For("Query", dynamo.PurposeLookup)))
	req := claimReq("s1", "next")
	req.LeaseDuration = 2 * attemptTimeout // half of it cuts the first hung attempt
	if _, err := e.s.ClaimTurn(ctx, req); err == nil {
		t.Fatal("a claim whose lookup never answered succeeded")
	}
	if n := e.faults.Counts()[ddbfault.Hang]; n != 1 {
		t.Errorf("%d hung lookups, want 1: the lease's half cuts the first", n)
	}
	e.faults.SetRule(nil)
	after, err := e.s.GetSession(ctx, "s1", alice)
	if err != nil || after.ActiveTurn != nil || after.NextOrdinal != before.NextOrdinal {
		t.Errorf("session after the failed claim: %+v, %v; want no lease and next ordinal %d", after, err, before.NextOrdinal)
	}
	if _, err := e.s.ClaimTurn(ctx, claimReq("s1", "next")); err != nil {
		t.Errorf("the client's retry: %v", err)
	}
}

// TestReplayRecordLosesToAnotherDecider: a replay of a turn whose lease
// expired unsaved decides that turn (its fences, then a compare-and-set
// that records it); when a read decides the same turn between the two
// (a history read frees the session), the replay's compare-and-set
// loses, and the replay still gets the turn's decided fate, as every
// later replay does, never ErrSessionBusy (the fate harness, short
// lease, seed 1, schedule 451).
func TestReplayRecordLosesToAnotherDecider(t *testing.T) {
	e := newFaultEnv(t)
	ctx := faultCtx(t)
	if _, err := e.s.ClaimTurn(ctx, claimReq("s1", "a")); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(lease)
	plain, err := dynamo.NewClient(ctx, dynalite.Options(t))
	if err != nil {
		t.Fatal(err)
	}
	reader := dynamo.New(plain, dynamo.Options{Table: e.table, Now: e.clock.Now, CursorKey: testCursorKey, ResolveShare: dynalite.ResolveShare})
	record := ddbfault.For("UpdateItem", dynamo.PurposeTakeoverRecord)
	var (
		mu      sync.Mutex
		decided bool
	)
	e.faults.SetRule(func(a ddbfault.Attempt) ddbfault.Fault {
		mu.Lock()
		defer mu.Unlock()
		if !decided && record(a) {
			// The read decides the turn first and frees the session.
			s, err := reader.GetSession(ctx, "s1", alice)
			decided = err == nil && s.ActiveTurn == nil
		}
		return ddbfault.Pass
	})
	_, err = e.s.ClaimTurn(ctx, claimReq("s1", "a"))
	e.faults.SetRule(nil)
	if !decided {
		t.Fatal("the read did not decide the turn before the replay's record: the test proves nothing")
	}
	_, again := e.s.ClaimTurn(ctx, claimReq("s1", "a"))
	if again == nil || errors.Is(again, chat.ErrSessionBusy) {
		t.Fatalf("a later replay: %v, want the turn's decided fate", again)
	}
	if !errors.Is(err, again) {
		t.Errorf("the replay whose record lost: %v, want what a later replay gets: %v", err, again)
	}
}

// TestRenameRecognisesItsOwnWrite: a rename that applied with its answer
// lost (or a 500 after it applied) is a rename, its retry meets its own
// title; one that never applied, its resolving read failing too, is an
// error and leaves the title as it was.
func TestRenameRecognisesItsOwnWrite(t *testing.T) {
	rename := ddbfault.For("UpdateItem", dynamo.PurposeRename)
	for _, fault := range []ddbfault.Fault{ddbfault.LoseAnswer, ddbfault.ServerErrorAfter} {
		t.Run(fault.String(), func(t *testing.T) {
			e := newFaultEnv(t)
			ctx := faultCtx(t)
			completeTurn(t, e.s, "s1", "t1", 2)
			e.faults.SetRule(ddbfault.Once(fault, rename))
			l, err := e.s.RenameSession(ctx, "s1", alice, "Named")
			if err != nil || l.Title != "Named" {
				t.Fatalf("rename whose write applied: %+v, %v", l, err)
			}
			if n := e.faults.Counts()[fault]; n != 1 {
				t.Fatalf("%d attempts met %v, want 1", n, fault)
			}
		})
	}
	t.Run("never applied, reads failing", func(t *testing.T) {
		e := newFaultEnv(t)
		ctx := faultCtx(t)
		completeTurn(t, e.s, "s1", "t1", 2)
		if _, err := e.s.RenameSession(ctx, "s1", alice, "First"); err != nil {
			t.Fatal(err)
		}
		e.faults.SetRule(func(a ddbfault.Attempt) ddbfault.Fault {
			if rename(a) || a.Op == "GetItem" {
				return ddbfault.ServerErrorBefore
			}
			return ddbfault.Pass
		})
		if _, err := e.s.RenameSession(ctx, "s1", alice, "Second"); err == nil {
			t.Fatal("a rename that never applied reported success")
		}
		e.faults.SetRule(nil)
		page, err := e.s.ListSessions(ctx, chat.SessionListRequest{Principal: alice})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Sessions) != 1 || page.Sessions[0].Title != "First" {
			t.Errorf("list after a failed rename: %+v", page.Sessions)
		}
	})
}

// TestDeleteUnderFaults: a delete's mark recognises its own write when
// the answer was lost, and a delete cut short by failing item deletes
// leaves the session gone for every reader and is finished by the next
// call, faults below the SDK's retryer.
func TestDeleteUnderFaults(t *testing.T) {
	mark := ddbfault.For("UpdateItem", dynamo.PurposeDelete)
	for _, fault := range []ddbfault.Fault{ddbfault.LoseAnswer, ddbfault.ServerErrorAfter} {
		t.Run("mark "+fault.String(), func(t *testing.T) {
			e := newFaultEnv(t)
			ctx := faultCtx(t)
			completeTurn(t, e.s, "s1", "t1", 2)
			e.faults.SetRule(ddbfault.Once(fault, mark))
			done, err := e.s.DeleteSession(ctx, chat.DeleteRequest{Principal: alice, SessionID: "s1"})
			if err != nil || !done {
				t.Fatalf("delete whose mark applied unanswered: %v, %v", done, err)
			}
			if n := e.faults.Counts()[fault]; n != 1 {
				t.Fatalf("%d attempts met %v, want 1", n, fault)
			}
			if _, err := e.s.GetSession(ctx, "s1", alice); !errors.Is(err, chat.ErrSessionNotFound) {
				t.Errorf("GetSession after the delete: %v", err)
			}
		})
	}
	t.Run("item deletes failing", func(t *testing.T) {
		e := newFaultEnv(t)
		ctx := faultCtx(t)
		completeTurn(t, e.s, "s1", "t1", 2)
		completeTurn(t, e.s, "s1", "t2", 4)
		e.faults.SetRule(ddbfault.Always(ddbfault.ServerErrorBefore, ddbfault.For("DeleteItem", dynamo.PurposeDelete)))
		if done, err := e.s.DeleteSession(ctx, chat.DeleteRequest{Principal: alice, SessionID: "s1"}); err == nil || done {
			t.Fatalf("a delete whose item deletes all failed: %v, %v", done, err)
		}
		e.faults.SetRule(nil)
		// Marked: gone for every reader, no turn can start, not listed.
		if _, err := e.s.GetSession(ctx, "s1", alice); !errors.Is(err, chat.ErrSessionNotFound) {
			t.Errorf("GetSession after a failed delete: %v", err)
		}
		if _, err := e.s.ClaimTurn(ctx, claimReq("s1", "t3")); !errors.Is(err, chat.ErrSessionNotFound) {
			t.Errorf("a claim after a failed delete: %v", err)
		}
		if page, err := e.s.ListSessions(ctx, chat.SessionListRequest{Principal: alice}); err != nil || len(page.Sessions) != 0 {
			t.Errorf("the list after a failed delete: %+v, %v", page, err)
		}
		done, err := e.s.DeleteSession(ctx, chat.DeleteRequest{Principal: alice, SessionID: "s1"})
		if err != nil || !done {
			t.Fatalf("the delete resumed: %v, %v", done, err)
		}
		if c, err := e.s.ClaimTurn(ctx, claimReq("s1", "t1")); err != nil || !c.Created {
			t.Errorf("a claim after the delete: %+v, %v; want a new session", c, err)
		}
	})
	t.Run("mark never applied, reads failing", func(t *testing.T) {
		e := newFaultEnv(t)
		ctx := faultCtx(t)
		completeTurn(t, e.s, "s1", "t1", 2)
		e.faults.SetRule(func(a ddbfault.Attempt) ddbfault.Fault {
			if mark(a) {
				return ddbfault.ServerErrorBefore
			}
			return ddbfault.Pass
		})
		if done, err := e.s.DeleteSession(ctx, chat.DeleteRequest{Principal: alice, SessionID: "s1"}); err == nil || done {
			t.Fatalf("a delete whose mark never applied: %v, %v", done, err)
		}
		e.faults.SetRule(nil)
		if _, err := e.s.GetSession(ctx, "s1", alice); err != nil {
			t.Errorf("the session after a delete that marked nothing: %v", err)
		}
	})
}

// TestUseAttachmentsRecognisesItsOwnWrite: a record of use that applied
// with its answer lost, a 500 after it applied or a hung attempt, faults
// below the SDK's retryer, is this turn's: the call succeeds, and another
// turn is refused the attachment. One that never applied, its resolving
// read failing too, is an error and leaves the attachment free.
func TestUseAttachmentsRecognisesItsOwnWrite(t *testing.T) {
	use := ddbfault.For("UpdateItem", dynamo.PurposeAttachment)
	req := func(turnID string) chat.UseAttachmentsRequest {
		return chat.UseAttachmentsRequest{SessionID: "s1", TurnID: turnID, AttachmentIDs: []string{"att_A"}, Until: time.Now().Add(time.Hour)}
	}
	for _, fault := range []ddbfault.Fault{ddbfault.LoseAnswer, ddbfault.ServerErrorAfter, ddbfault.Hang} {
		t.Run(fault.String(), func(t *testing.T) {
			e := newFaultEnv(t)
			ctx := faultCtx(t)
			e.faults.SetRule(ddbfault.Once(fault, use))
			if err := e.s.UseAttachments(ctx, req("t1")); err != nil {
				t.Fatalf("a use whose write met %v: %v", fault, err)
			}
			if n := e.faults.Counts()[fault]; n != 1 {
				t.Fatalf("%d attempts met %v, want 1", n, fault)
			}
			e.faults.SetRule(nil)
			if err := e.s.UseAttachments(ctx, req("t2")); !errors.Is(err, chat.ErrAttachmentUsed) {
				t.Errorf("another turn after it: %v, want ErrAttachmentUsed", err)
			}
		})
	}
	t.Run("never applied, reads failing", func(t *testing.T) {
		e := newFaultEnv(t)
		ctx := faultCtx(t)
		e.faults.SetRule(func(a ddbfault.Attempt) ddbfault.Fault {
			if use(a) || a.Op == "GetItem" {
				return ddbfault.ServerErrorBefore
			}
			return ddbfault.Pass
		})
		if err := e.s.UseAttachments(ctx, req("t1")); err == nil || errors.Is(err, chat.ErrAttachmentUsed) {
			t.Fatalf("a use that never applied: %v, want a plain error", err)
		}
		e.faults.SetRule(nil)
		if err := e.s.UseAttachments(ctx, req("t2")); err != nil {
			t.Errorf("another turn after it: %v, want the attachment free", err)
		}
	})
}
