package dynamo_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/ddbfault"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

// decisionWrite is the claim of a decision turn (the only claims these
// tests make).
var decisionWrite = ddbfault.For("UpdateItem", dynamo.PurposeClaim)

// TestDecisionRecognisesItsOwnWrite: a decision claim that applied but
// whose answer was lost (the SDK retries it, and the retry's condition
// fails) or that answered 500 after applying is one successful claim: the
// confirmation moved once, by this turn, and a second decision is refused.
func TestDecisionRecognisesItsOwnWrite(t *testing.T) {
	for _, fault := range []ddbfault.Fault{ddbfault.LoseAnswer, ddbfault.ServerErrorAfter} {
		t.Run(fault.String(), func(t *testing.T) {
			e := newFaultEnv(t)
			ctx := faultCtx(t)
			c, err := e.s.ClaimTurn(ctx, claimReq("s1", "t1"))
			if err != nil {
				t.Fatal(err)
			}
			cf := chat.Confirmation{Token: chat.NewConfirmationToken(), Action: "note_delete", Input: json.RawMessage(`{"title":"x"}`),
				ToolCallID: "call-1", TurnID: "t1", ExpiresAt: e.clock.Now().Add(time.Hour), Status: chat.ConfirmationPending}
			// The release that records the confirmation recognises its own
			// write too.
			e.faults.SetRule(ddbfault.Once(fault, releaseWrite))
			if _, err := e.s.ReleaseTurn(ctx, chat.ReleaseRequest{Claim: c, Outcome: chat.OutcomeCompleted, Sequence: 1,
				Confirmations: []chat.Confirmation{cf}}); err != nil {
				t.Fatalf("release whose write applied: %v", err)
			}

			e.faults.Reset()
			e.faults.SetRule(ddbfault.Once(fault, decisionWrite))
			req := claimReq("s1", "t2")
			req.Decision = &chat.Decision{Token: cf.Token, Approve: true}
			d, err := e.s.ClaimTurn(ctx, req)
			if err != nil {
				t.Fatalf("decision whose write applied: %v", err)
			}
			if n := e.faults.Counts()[fault]; n != 1 {
				t.Fatalf("%d attempts met %v, want 1: the fault was not injected", n, fault)
			}
			if got := d.Decided(); got == nil || got.Token != cf.Token || got.Status != chat.ConfirmationApproving {
				t.Fatalf("decided = %+v, want %s approving", got, cf.Token)
			}
			e.faults.SetRule(nil)
			req2 := claimReq("s1", "t3")
			req2.Decision = &chat.Decision{Token: cf.Token, Approve: false}
			if _, err := e.s.ClaimTurn(ctx, req2); !errors.Is(err, chat.ErrSessionBusy) {
				t.Errorf("second decision while the first runs: %v, want ErrSessionBusy", err)
			}
			if _, err := e.s.ReleaseTurn(ctx, chat.ReleaseRequest{Claim: d, Outcome: chat.OutcomeCompleted, Sequence: 2}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.s.ClaimTurn(ctx, req2); !errors.Is(err, chat.ErrConfirmationDecided) {
				t.Errorf("second decision after the first: %v, want ErrConfirmationDecided", err)
			}
			sess, err := e.s.GetSession(ctx, "s1", alice)
			if err != nil {
				t.Fatal(err)
			}
			if len(sess.Confirmations) != 1 || sess.Confirmations[0].Status != chat.ConfirmationApproved || sess.Confirmations[0].DecidedBy != "t2" {
				t.Errorf("confirmations = %+v, want one approved by t2", sess.Confirmations)
			}
		})
	}
}
