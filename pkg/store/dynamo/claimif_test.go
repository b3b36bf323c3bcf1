package dynamo_test

import (
	"errors"
	"testing"

	"github.com/turnstream/turnstream/internal/ddbfault"
	"github.com/turnstream/turnstream/pkg/chat"
)

// TestConditionalClaimRecognisesItsOwnWrite: a claim conditional on the
// session's next ordinal (an interrupt's or rollback's) whose write
// applied but whose answer was lost (or answered 500) is the claim, not
// ErrSessionMoved, although its own write moved the next ordinal on; so
// is a takeover of an expired lease whose compare-and-set answer was
// lost. The SDK retries below its retryer, as against DynamoDB.
func TestConditionalClaimRecognisesItsOwnWrite(t *testing.T) {
	cases := []struct {
		name     string
		fault    ddbfault.Fault
		match    func(ddbfault.Attempt) bool
		existing bool // a completed turn before
		crashed  bool // an expired lease to take over
		next     int64
	}{
		{"new session/lose answer", ddbfault.LoseAnswer, claimWrite, false, false, 1},
		{"new session/500 after", ddbfault.ServerErrorAfter, claimWrite, false, false, 1},
		{"existing session/lose answer", ddbfault.LoseAnswer, claimWrite, true, false, 2},
		{"existing session/500 after", ddbfault.ServerErrorAfter, claimWrite, true, false, 2},
		{"takeover/lose answer", ddbfault.LoseAnswer, takeoverCAS, false, true, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newFaultEnv(t)
			ctx := faultCtx(t)
			if tc.existing {
				completeTurn(t, e.s, "s1", "t0", 2)
			}
			if tc.crashed {
				if _, err := e.s.ClaimTurn(ctx, claimReq("s1", "crashed")); err != nil {
					t.Fatal(err)
				}
				e.clock.Advance(lease)
			}
			req := claimReq("s1", "t1")
			req.AheadOfQueue, req.IfNextOrdinal = true, tc.next
			e.faults.SetRule(ddbfault.Once(tc.fault, tc.match))
			c, err := e.s.ClaimTurn(ctx, req)
			if err != nil {
				t.Fatalf("conditional claim whose write applied: %v", err)
			}
			if n := e.faults.Counts()[tc.fault]; n != 1 {
				t.Fatalf("%d attempts met %v, want 1: the fault was not injected", n, tc.fault)
			}
			if c.Lease.Ordinal != tc.next || c.Session.NextOrdinal != tc.next+1 {
				t.Errorf("claim ordinal %d, next %d; want %d, %d", c.Lease.Ordinal, c.Session.NextOrdinal, tc.next, tc.next+1)
			}
			e.faults.SetRule(nil)
			sess, err := e.s.GetSession(ctx, "s1", alice)
			if err != nil {
				t.Fatal(err)
			}
			if sess.ActiveTurn == nil || sess.ActiveTurn.Token != c.Lease.Token || sess.NextOrdinal != tc.next+1 {
				t.Errorf("session after the claim: lease %+v, next ordinal %d", sess.ActiveTurn, sess.NextOrdinal)
			}
			// Another request with the same expectation is now too late.
			other := claimReq("s1", "t2")
			other.AheadOfQueue, other.IfNextOrdinal = true, tc.next
			if _, err := e.s.ClaimTurn(ctx, other); !errors.Is(err, chat.ErrSessionMoved) {
				t.Errorf("another claim expecting next ordinal %d: %v, want ErrSessionMoved", tc.next, err)
			}
		})
	}
}

// TestClaimOfAHeldSessionWithLostAnswersIsClassified: a claim of a
// session whose lease another claim of the same turn id holds (a client
// that retried after its first server died), every write answer of which
// is lost, is refused as the session's state says (ErrSessionBusy: the
// turn is in progress, a replay after it ends gets its decision), not
// with the transport's error, which a client reads as "nothing happened,
// retry": the claim's resolving reads show that nothing of it applied
// and why. (Before, it answered the transport error, a retryable 500,
// and the id was spent by the first claim.)
func TestClaimOfAHeldSessionWithLostAnswersIsClassified(t *testing.T) {
	e := newFaultEnv(t)
	ctx := faultCtx(t)
	first, err := e.s.ClaimTurn(ctx, claimReq("s1", "t1"))
	if err != nil {
		t.Fatal(err)
	}
	e.faults.SetRule(ddbfault.Always(ddbfault.LoseAnswer, claimWrite))
	_, err = e.s.ClaimTurn(ctx, claimReq("s1", "t1"))
	e.faults.SetRule(nil)
	if n := e.faults.Counts()[ddbfault.LoseAnswer]; n == 0 {
		t.Fatal("no fault was injected")
	}
	if !errors.Is(err, chat.ErrSessionBusy) {
		t.Fatalf("a claim refused by the lease of the same turn id, its answers lost: %v; want ErrSessionBusy", err)
	}
	sess, err := e.s.GetSession(ctx, "s1", alice)
	if err != nil || sess.ActiveTurn == nil || sess.ActiveTurn.Token != first.Lease.Token {
		t.Fatalf("session after the refused claim: %+v, %v; want the first claim's lease", sess, err)
	}
}
