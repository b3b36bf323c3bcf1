package storetest

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
)

// confirmationTTL is the expiry the suite gives its confirmations.
const confirmationTTL = 15 * time.Minute

// confirmationCases prove the confirmation rules of ClaimRequest.Decision
// and ReleaseRequest.Confirmations (docs/approvals.md): recorded at the
// release of the asking turn, claimed atomically with a decision turn's
// lease, settled at that turn's release, and every bad decision rejected
// without a change.
func confirmationCases() map[string]func(*testing.T, *env) {
	return map[string]func(*testing.T, *env){
		"RecordedPendingAtRelease": func(t *testing.T, e *env) {
			cf := e.askApproval("s1", "t1", "call-1")
			s := e.session("s1")
			if len(s.Confirmations) != 1 {
				t.Fatalf("confirmations = %+v, want one", s.Confirmations)
			}
			got := s.Confirmations[0]
			if got.Token != cf.Token || got.Status != chat.ConfirmationPending || got.Action != "note_delete" ||
				got.ToolCallID != "call-1" || got.TurnID != "t1" || !got.ExpiresAt.Equal(cf.ExpiresAt) || got.DecidedBy != "" ||
				string(got.Input) != string(cf.Input) || !got.CreatedAt.Equal(e.clock.Now()) {
				t.Errorf("confirmation = %+v, want %+v created now", got, cf)
			}
			if s.ActiveTurn != nil || len(s.TerminalTurns) != 1 {
				t.Errorf("session = %+v, want released with t1 in the window", s)
			}
		},

		"ApproveClaimsThenSettles": func(t *testing.T, e *env) {
			cf := e.askApproval("s1", "t1", "call-1")
			c := e.claimWith(decisionRequest("s1", "t2", cf.Token, true))
			d := c.Decided()
			if d == nil || d.Token != cf.Token || d.Status != chat.ConfirmationApproving || d.DecidedBy != "t2" {
				t.Fatalf("claim's decided confirmation = %+v, want %s approving by t2", d, cf.Token)
			}
			if got := e.session("s1").Confirmations[0]; got.Status != chat.ConfirmationApproving || got.DecidedBy != "t2" {
				t.Errorf("stored while the decision runs = %+v, want approving by t2", got)
			}
			e.save(c, e.turnFor(c, "s1"))
			e.release("s1", c, chat.OutcomeCompleted, c.BaseSequence+2)
			if got := e.session("s1").Confirmations; len(got) != 1 || got[0].Status != chat.ConfirmationApproved || got[0].DecidedBy != "t2" {
				t.Errorf("after the release = %+v, want approved by t2", got)
			}
		},

		"DenyClaimsThenSettles": func(t *testing.T, e *env) {
			cf := e.askApproval("s1", "t1", "call-1")
			c := e.claimWith(decisionRequest("s1", "t2", cf.Token, false))
			if d := c.Decided(); d == nil || d.Status != chat.ConfirmationRejecting {
				t.Fatalf("claim's decided confirmation = %+v, want rejecting", d)
			}
			e.release("s1", c, chat.OutcomeCompleted, c.BaseSequence+2)
			if got := e.session("s1").Confirmations; len(got) != 1 || got[0].Status != chat.ConfirmationRejected {
				t.Errorf("after the release = %+v, want rejected", got)
			}
		},

		"BadDecisionsChangeNothing": func(t *testing.T, e *env) {
			cf := e.askApproval("s1", "t1", "call-1")
			other := e.askApproval("s2", "u1", "call-1")
			before := e.session("s1")
			for name, c := range map[string]struct {
				req  chat.ClaimRequest
				want error
			}{
				"unknown token":        {decisionRequest("s1", "t2", chat.NewConfirmationToken(), true), chat.ErrConfirmationNotFound},
				"malformed token":      {decisionRequest("s1", "t2", "cf.x.y", true), chat.ErrConfirmationNotFound},
				"another session's":    {decisionRequest("s1", "t2", other.Token, true), chat.ErrConfirmationNotFound},
				"no such session":      {decisionRequest("s9", "t2", cf.Token, true), chat.ErrConfirmationNotFound},
				"another principal":    {as(decisionRequest("s1", "t2", cf.Token, true), mallory), chat.ErrSessionNotFound},
				"another tenant":       {as(decisionRequest("s1", "t2", cf.Token, false), aliceGlobex), chat.ErrSessionNotFound},
				"the asking turn's id": {decisionRequest("s1", "t1", cf.Token, true), chat.ErrTurnCompleted},
			} {
				_, err := e.store.ClaimTurn(e.ctx, c.req)
				wantErr(t, name, err, c.want)
			}
			after := e.session("s1")
			if after.Revision != before.Revision || after.ActiveTurn != nil || after.Confirmations[0].Status != chat.ConfirmationPending {
				t.Errorf("session after bad decisions = %+v, want unchanged %+v", after, before)
			}
			if _, err := e.store.GetSession(e.ctx, "s9", alice); err == nil {
				t.Errorf("a decision on a missing session created it")
			}
		},

		"SecondDecisionDecided": func(t *testing.T, e *env) {
			cf := e.askApproval("s1", "t1", "call-1")
			c := e.claimWith(decisionRequest("s1", "t2", cf.Token, true))
			_, err := e.store.ClaimTurn(e.ctx, decisionRequest("s1", "t3", cf.Token, false))
			wantErr(t, "a decision while the first one runs", err, chat.ErrSessionBusy)
			e.save(c, e.turnFor(c, "s1"))
			e.release("s1", c, chat.OutcomeCompleted, c.BaseSequence+2)
			_, err = e.store.ClaimTurn(e.ctx, decisionRequest("s1", "t3", cf.Token, false))
			wantErr(t, "a second decision turn", err, chat.ErrConfirmationDecided)
			_, err = e.store.ClaimTurn(e.ctx, decisionRequest("s1", "t2", cf.Token, true))
			wantErr(t, "the decision turn again", err, chat.ErrTurnCompleted)
			if got := e.session("s1").Confirmations[0]; got.Status != chat.ConfirmationApproved || got.DecidedBy != "t2" {
				t.Errorf("confirmation = %+v, want approved by t2 only", got)
			}
		},

		"UndecideGivesTheDecisionBack": func(t *testing.T, e *env) {
			// A decision turn that failed before acting releases with
			// Undecide: the confirmation is pending again, and a new
			// decision turn claims it.
			cf := e.askApproval("s1", "t1", "call-1")
			c := e.claimWith(decisionRequest("s1", "t2", cf.Token, true))
			if _, err := e.store.ReleaseTurn(e.ctx, chat.ReleaseRequest{Claim: c, Outcome: chat.OutcomeCompleted, Sequence: c.BaseSequence + 1, Undecide: true}); err != nil {
				t.Fatal(err)
			}
			if got := e.session("s1").Confirmations[0]; got.Status != chat.ConfirmationPending || got.DecidedBy != "" {
				t.Fatalf("after an undecided release = %+v, want pending", got)
			}
			c = e.claimWith(decisionRequest("s1", "t3", cf.Token, false))
			if d := c.Decided(); d == nil || d.DecidedBy != "t3" {
				t.Fatalf("second decision's claim = %+v", d)
			}
		},

		"ExpiredRejected": func(t *testing.T, e *env) {
			cf := e.askApproval("s1", "t1", "call-1")
			e.clock.Advance(confirmationTTL)
			_, err := e.store.ClaimTurn(e.ctx, decisionRequest("s1", "t2", cf.Token, true))
			wantErr(t, "a decision at the exact expiry", err, chat.ErrConfirmationExpired)
			if s := e.session("s1"); s.ActiveTurn != nil || s.Confirmations[0].VisibleStatus(e.clock.Now()) != chat.ConfirmationExpired {
				t.Errorf("session = %+v, want idle and the confirmation shown expired", s)
			}
		},

		"PlainTurnSupersedesPending": func(t *testing.T, e *env) {
			cf := e.askApproval("s1", "t1", "call-1")
			e.completeTurn("s1", "t2")
			if got := e.session("s1").Confirmations[0]; got.Status != chat.ConfirmationExpired || got.DecidedBy != "" {
				t.Errorf("after a plain turn = %+v, want expired", got)
			}
			_, err := e.store.ClaimTurn(e.ctx, decisionRequest("s1", "t3", cf.Token, true))
			wantErr(t, "a decision after a plain turn", err, chat.ErrConfirmationExpired)
		},

		"ConcurrentPlainAndDecisionOneWins": func(t *testing.T, e *env) {
			cf := e.askApproval("s1", "t1", "call-1")
			reqs := []chat.ClaimRequest{claimRequest("s1", "p2"), decisionRequest("s1", "d2", cf.Token, true)}
			claims := make([]*chat.Claim, 2)
			errs := make([]error, 2)
			var wg sync.WaitGroup
			for i := range reqs {
				wg.Go(func() { claims[i], errs[i] = e.store.ClaimTurn(e.ctx, reqs[i]) })
			}
			wg.Wait()
			won := -1
			for i := range reqs {
				if errs[i] == nil {
					if won >= 0 {
						t.Fatalf("both claims won")
					}
					won = i
				} else {
					wantErr(t, reqs[i].TurnID, errs[i], chat.ErrSessionBusy)
				}
			}
			if won < 0 {
				t.Fatalf("no claim won: %v", errs)
			}
			e.release("s1", claims[won], chat.OutcomeCompleted, claims[won].BaseSequence+1)
			want := map[int]chat.ConfirmationStatus{0: chat.ConfirmationExpired, 1: chat.ConfirmationApproved}[won]
			if got := e.session("s1").Confirmations[0]; got.Status != want {
				t.Errorf("winner %s: confirmation %s, want %s", reqs[won].TurnID, got.Status, want)
			}
		},

		"ConcurrentDecisionsOneWins": func(t *testing.T, e *env) {
			cf := e.askApproval("s1", "t1", "call-1")
			const n = 4
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					_, errs[i] = e.store.ClaimTurn(e.ctx, decisionRequest("s1", fmt.Sprintf("d%d", i), cf.Token, i%2 == 0))
				})
			}
			wg.Wait()
			wins := 0
			for i, err := range errs {
				if err == nil {
					wins++
					continue
				}
				wantErr(t, fmt.Sprintf("d%d", i), err, chat.ErrSessionBusy)
			}
			if wins != 1 {
				t.Fatalf("%d decisions won: %v", wins, errs)
			}
			if got := e.session("s1").Confirmations[0]; got.DecidedBy == "" || got.Status == chat.ConfirmationPending {
				t.Errorf("confirmation = %+v, want claimed by the winner", got)
			}
		},

		"BoundedOnTheSession": func(t *testing.T, e *env) {
			// Every turn asks for the most confirmations it may; each
			// later turn supersedes them, and old ones are pruned.
			for i := range 5 {
				c := e.claim("s1", fmt.Sprintf("t%d", i))
				var add []chat.Confirmation
				for j := range chat.MaxPendingConfirmations {
					add = append(add, newConfirmation(e, c.Lease.TurnID, fmt.Sprintf("call-%d", j)))
				}
				_, err := e.store.ReleaseTurn(e.ctx, chat.ReleaseRequest{Claim: c, Outcome: chat.OutcomeCompleted, Sequence: c.BaseSequence + 1, Confirmations: add})
				if err != nil {
					t.Fatal(err)
				}
				e.clock.Advance(time.Second)
			}
			s := e.session("s1")
			pending := 0
			for _, cf := range s.Confirmations {
				if cf.Status == chat.ConfirmationPending {
					pending++
					if cf.TurnID != "t4" {
						t.Errorf("pending %+v, want only t4's", cf)
					}
				}
			}
			if pending != chat.MaxPendingConfirmations || len(s.Confirmations) != chat.MaxPendingConfirmations+chat.KeptConfirmations {
				t.Errorf("%d confirmations, %d pending; want %d and %d", len(s.Confirmations), pending,
					chat.MaxPendingConfirmations+chat.KeptConfirmations, chat.MaxPendingConfirmations)
			}
		},

		"InvalidNewConfirmationsRefused": func(t *testing.T, e *env) {
			c := e.claim("s1", "t1")
			good := newConfirmation(e, "t1", "call-1")
			for name, mutate := range map[string]func(*chat.Confirmation){
				"bad token":   func(cf *chat.Confirmation) { cf.Token = "x" },
				"other turn":  func(cf *chat.Confirmation) { cf.TurnID = "t0" },
				"not pending": func(cf *chat.Confirmation) { cf.Status = chat.ConfirmationApproved },
				"array input": func(cf *chat.Confirmation) { cf.Input = json.RawMessage(`[1]`) },
				"no call id":  func(cf *chat.Confirmation) { cf.ToolCallID = "" },
				"input too big": func(cf *chat.Confirmation) {
					cf.Input = json.RawMessage(fmt.Sprintf(`{"a":"%0*d"}`, chat.MaxConfirmationInput, 0))
				},
			} {
				cf := good
				mutate(&cf)
				_, err := e.store.ReleaseTurn(e.ctx, chat.ReleaseRequest{Claim: c, Outcome: chat.OutcomeCompleted, Confirmations: []chat.Confirmation{cf}})
				wantErr(t, name, err, chat.ErrInvalidRequest)
			}
			if s := e.session("s1"); s.ActiveTurn == nil || len(s.Confirmations) != 0 {
				t.Errorf("session = %+v, want still leased, no confirmation", s)
			}
		},
	}
}

// newConfirmation is a pending confirmation of a note_delete call of
// turnID, expiring confirmationTTL from now.
func newConfirmation(e *env, turnID, callID string) chat.Confirmation {
	return chat.Confirmation{
		Token: chat.NewConfirmationToken(), Action: "note_delete", Input: json.RawMessage(`{"title":"Trip plan"}`),
		ToolCallID: callID, TurnID: turnID, ExpiresAt: e.clock.Now().Add(confirmationTTL), Status: chat.ConfirmationPending,
	}
}

// askApproval runs turn turnID of alice whose release records one pending
// confirmation of call callID, and returns it.
func (e *env) askApproval(sessionID, turnID, callID string) chat.Confirmation {
	e.t.Helper()
	c := e.claim(sessionID, turnID)
	turn := e.turnFor(c, sessionID)
	e.save(c, turn)
	cf := newConfirmation(e, turnID, callID)
	_, err := e.store.ReleaseTurn(e.ctx, chat.ReleaseRequest{Claim: c, Outcome: chat.OutcomeCompleted, Sequence: turn.LastSequence,
		Confirmations: []chat.Confirmation{cf}})
	if err != nil {
		e.t.Fatalf("ReleaseTurn(%s, %s) with a confirmation: %v", sessionID, turnID, err)
	}
	return cf
}

// decisionRequest is alice's claim of decision turn turnID on token.
func decisionRequest(sessionID, turnID, token string, approve bool) chat.ClaimRequest {
	req := claimRequest(sessionID, turnID)
	req.Decision = &chat.Decision{Token: token, Approve: approve}
	return req
}

// as returns req made by p.
func as(req chat.ClaimRequest, p chat.Principal) chat.ClaimRequest {
	req.Principal = p
	return req
}
