package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
)

// claimCases prove ClaimTurn: creation, mutual exclusion, lease expiry, the
// terminal window and the reserved cursor (DESIGN §4, AgentsKit wire §8).
func claimCases() map[string]func(*testing.T, *env) {
	return map[string]func(*testing.T, *env){
		"CreatesSessionOwnedByCaller": func(t *testing.T, e *env) {
			c := e.claim("s1", "t1")
			if !c.Created {
				t.Error("first claim: Created = false, want true")
			}
			if c.Lease.TurnID != "t1" || c.Lease.Token == "" || c.Lease.Ordinal != 1 || c.Lease.Stop {
				t.Errorf("lease = %+v, want turn t1, a token, ordinal 1, no stop", c.Lease)
			}
			if want := start.Add(leaseDuration); !c.Lease.ExpiresAt.Equal(want) {
				t.Errorf("lease expires at %v, want now + lease duration = %v", c.Lease.ExpiresAt, want)
			}
			if c.Lease.InputHash != chat.HashInput(inputOf("t1")) {
				t.Errorf("lease input hash = %q, want the claim's", c.Lease.InputHash)
			}
			if c.BaseSequence != 0 {
				t.Errorf("BaseSequence = %d, want 0 for a new session", c.BaseSequence)
			}
			s := c.Session
			if s.ID != "s1" || s.Owner.Subject != alice.Subject || s.Owner.Tenant != alice.Tenant ||
				s.DefinitionID != "assistant" || s.DefinitionRevision != 1 || s.NextOrdinal != 2 || s.Cursor != 0 {
				t.Errorf("claimed session = %+v, want s1 owned by alice, definition assistant@1, next ordinal 2, cursor 0", s)
			}
			if s.ActiveTurn == nil || s.ActiveTurn.Token != c.Lease.Token {
				t.Errorf("claimed session active turn = %+v, want the claim's lease", s.ActiveTurn)
			}
			if len(s.TerminalTurns) != 0 {
				t.Errorf("new session terminal window = %+v, want empty", s.TerminalTurns)
			}
			e.save(c.Lease.Token, e.turnFor(c, "s1"))
			e.release("s1", c, chat.OutcomeCompleted, 2)

			c2 := e.claim("s1", "t2")
			if c2.Created {
				t.Error("second claim: Created = true, want false")
			}
			if c2.Lease.Ordinal != 2 || c2.Session.NextOrdinal != 3 {
				t.Errorf("second claim ordinal %d, next %d; want 2, 3", c2.Lease.Ordinal, c2.Session.NextOrdinal)
			}
			if c2.Lease.Token == c.Lease.Token {
				t.Error("second claim reused the first claim's lease token")
			}
			if c2.Session.Revision <= c.Session.Revision {
				t.Errorf("revision %d after a later claim, want > %d", c2.Session.Revision, c.Session.Revision)
			}
		},

		"ConcurrentClaimsOneWinner": func(t *testing.T, e *env) {
			// Round 1 races 50 claims on a missing session (the creation
			// race), round 2 on an existing idle session.
			for round, sessionID := range []string{"race", "race"} {
				const n = 50
				errs := make([]error, n)
				var wg sync.WaitGroup
				gate := make(chan struct{})
				for i := range n {
					wg.Go(func() {
						<-gate
						_, errs[i] = e.store.ClaimTurn(e.ctx, claimRequest(sessionID, fmt.Sprintf("r%d-t%02d", round, i)))
					})
				}
				close(gate)
				wg.Wait()
				winners := 0
				for i, err := range errs {
					switch {
					case err == nil:
						winners++
					case errors.Is(err, chat.ErrSessionBusy):
					default:
						t.Errorf("round %d claim %d: %v, want nil or ErrSessionBusy", round, i, err)
					}
				}
				if winners != 1 {
					t.Fatalf("round %d: %d claims won, want exactly 1", round, winners)
				}
				s := e.session(sessionID)
				if s.ActiveTurn == nil {
					t.Fatalf("round %d: no active turn after the race", round)
				}
				if want := int64(round + 2); s.NextOrdinal != want {
					t.Errorf("round %d: next ordinal %d, want %d (one ordinal per winning claim)", round, s.NextOrdinal, want)
				}
				err := e.store.ReleaseTurn(e.ctx, chat.ReleaseRequest{SessionID: sessionID, TurnID: s.ActiveTurn.TurnID,
					Token: s.ActiveTurn.Token, Outcome: chat.OutcomeCompleted})
				if err != nil {
					t.Fatalf("round %d: release the winner: %v", round, err)
				}
			}
		},

		"BusyWhileLeaseHeld": func(t *testing.T, e *env) {
			c := e.claim("s1", "t1")
			for _, turnID := range []string{"t2", "t1"} {
				_, err := e.store.ClaimTurn(e.ctx, claimRequest("s1", turnID))
				wantErr(t, "claim "+turnID+" while t1 holds the lease", err, chat.ErrSessionBusy)
			}
			if s := e.session("s1"); s.ActiveTurn == nil || s.ActiveTurn.Token != c.Lease.Token {
				t.Errorf("active turn after rejected claims = %+v, want t1's lease unchanged", s.ActiveTurn)
			}
		},

		"LeaseExpiresAtExactInstant": func(t *testing.T, e *env) {
			c := e.claim("s1", "t1")
			e.clock.Advance(leaseDuration - time.Millisecond)
			_, err := e.store.ClaimTurn(e.ctx, claimRequest("s1", "t2"))
			wantErr(t, "claim 1 ms before expiry", err, chat.ErrSessionBusy)

			e.clock.Advance(time.Millisecond) // now == ExpiresAt: expired
			if !e.clock.Now().Equal(c.Lease.ExpiresAt) {
				t.Fatalf("clock %v, want lease expiry %v", e.clock.Now(), c.Lease.ExpiresAt)
			}
			c2 := e.claim("s1", "t2")
			if c2.Lease.Ordinal != 2 {
				t.Errorf("takeover claim ordinal %d, want 2", c2.Lease.Ordinal)
			}
		},

		"CompletedTurnReplayRejected": func(t *testing.T, e *env) {
			e.completeTurn("s1", "t1")
			_, err := e.store.ClaimTurn(e.ctx, claimRequest("s1", "t1"))
			wantErr(t, "replay of a completed turn", err, chat.ErrTurnCompleted)
		},

		"IndeterminateTurnReplayRejected": func(t *testing.T, e *env) {
			c := e.claim("s1", "t1")
			e.release("s1", c, chat.OutcomeIndeterminate, 1)
			_, err := e.store.ClaimTurn(e.ctx, claimRequest("s1", "t1"))
			wantErr(t, "replay of an indeterminate turn", err, chat.ErrTurnIndeterminate)
		},

		"TurnIDReusedWithOtherInput": func(t *testing.T, e *env) {
			e.completeTurn("s1", "t1")
			req := claimRequest("s1", "t1")
			req.InputHash = chat.HashInput("another input")
			_, err := e.store.ClaimTurn(e.ctx, req)
			wantErr(t, "same turn id, other input", err, chat.ErrTurnIDReused)
		},

		"CrashedTurnTakeover": func(t *testing.T, e *env) {
			e.completeTurn("s1", "t0") // cursor 2
			c := e.claim("s1", "crashed")
			_, err := e.store.RenewLease(e.ctx, chat.RenewRequest{SessionID: "s1", TurnID: "crashed",
				Token: c.Lease.Token, ExpiresAt: e.clock.Now().Add(leaseDuration), Cursor: c.BaseSequence + 7})
			if err != nil {
				t.Fatalf("renew: %v", err)
			}
			persisted := c.BaseSequence + 7
			e.clock.Advance(leaseDuration) // the turn never renews again: crashed

			_, err = e.store.ClaimTurn(e.ctx, claimRequest("s1", "crashed"))
			wantErr(t, "replay of the crashed turn id", err, chat.ErrTurnIndeterminate)
			reused := claimRequest("s1", "crashed")
			reused.InputHash = chat.HashInput("another input")
			_, err = e.store.ClaimTurn(e.ctx, reused)
			wantErr(t, "crashed turn id with another input", err, chat.ErrTurnIDReused)

			next := e.claim("s1", "next")
			if min := persisted + chat.SequenceGapAfterCrash; next.BaseSequence < min {
				t.Errorf("BaseSequence after takeover = %d, want >= persisted cursor %d + SequenceGapAfterCrash = %d",
					next.BaseSequence, persisted, min)
			}
			if next.Lease.Ordinal != c.Lease.Ordinal+1 {
				t.Errorf("takeover ordinal %d, want %d (the crashed turn keeps its ordinal)", next.Lease.Ordinal, c.Lease.Ordinal+1)
			}
			e.release("s1", next, chat.OutcomeCompleted, next.BaseSequence+1)
			s := e.session("s1")
			wantWindow := []chat.TerminalEntry{
				{TurnID: "t0", Outcome: chat.OutcomeCompleted, InputHash: chat.HashInput(inputOf("t0"))},
				{TurnID: "crashed", Outcome: chat.OutcomeIndeterminate, InputHash: chat.HashInput(inputOf("crashed"))},
				{TurnID: "next", Outcome: chat.OutcomeCompleted, InputHash: chat.HashInput(inputOf("next"))},
			}
			if !slices.Equal(s.TerminalTurns, wantWindow) {
				t.Errorf("terminal window = %+v\nwant %+v", s.TerminalTurns, wantWindow)
			}
			if s.Cursor != next.BaseSequence+1 {
				t.Errorf("cursor = %d, want the released %d", s.Cursor, next.BaseSequence+1)
			}
		},

		"TerminalWindowKeepsNewest64": func(t *testing.T, e *env) {
			const n = chat.TerminalWindowSize + 2
			turns := e.completeTurns("s1", "t", n)
			s := e.session("s1")
			if len(s.TerminalTurns) != chat.TerminalWindowSize {
				t.Fatalf("terminal window has %d entries, want %d", len(s.TerminalTurns), chat.TerminalWindowSize)
			}
			for i, entry := range s.TerminalTurns {
				want := turns[i+2]
				if entry.TurnID != want.TurnID || entry.Outcome != chat.OutcomeCompleted || entry.InputHash != want.InputHash {
					t.Fatalf("window[%d] = %+v, want %s completed (oldest first, two oldest evicted)", i, entry, want.TurnID)
				}
			}
			// The newest 64 are protected; an evicted turn id is not.
			_, err := e.store.ClaimTurn(e.ctx, claimRequest("s1", turns[2].TurnID))
			wantErr(t, "replay of the oldest kept turn", err, chat.ErrTurnCompleted)
			c := e.claim("s1", turns[0].TurnID)
			e.release("s1", c, chat.OutcomeCompleted, c.BaseSequence)
			s = e.session("s1")
			if last := s.TerminalTurns[len(s.TerminalTurns)-1]; last.TurnID != turns[0].TurnID || len(s.TerminalTurns) != chat.TerminalWindowSize {
				t.Errorf("after re-running an evicted id: window len %d, newest %+v; want %d, %s",
					len(s.TerminalTurns), last, chat.TerminalWindowSize, turns[0].TurnID)
			}
		},

		"BaseSequenceIsLastReleasedCursor": func(t *testing.T, e *env) {
			c := e.claim("s1", "t1")
			e.release("s1", c, chat.OutcomeCompleted, 41)
			c2 := e.claim("s1", "t2")
			if c2.BaseSequence != 41 {
				t.Errorf("BaseSequence = %d, want the released cursor 41", c2.BaseSequence)
			}
			if c2.Session.Cursor != 41 {
				t.Errorf("session cursor = %d, want 41", c2.Session.Cursor)
			}
			e.release("s1", c2, chat.OutcomeCompleted, 41) // a turn that emitted nothing
			if c3 := e.claim("s1", "t3"); c3.BaseSequence != 41 {
				t.Errorf("BaseSequence after an empty turn = %d, want 41", c3.BaseSequence)
			}
		},

		"DefinitionKeptRevisionRecordedAtRelease": func(t *testing.T, e *env) {
			e.completeTurn("s1", "t1")
			req := claimRequest("s1", "t2")
			req.DefinitionID = "other" // a session keeps its definition id
			req.DefinitionRevision = 7
			c := e.claimWith(req)
			if c.Session.DefinitionID != "assistant" || c.Session.DefinitionRevision != 1 {
				t.Errorf("claim session definition %s@%d, want the stored assistant@1",
					c.Session.DefinitionID, c.Session.DefinitionRevision)
			}
			err := e.store.ReleaseTurn(e.ctx, chat.ReleaseRequest{SessionID: "s1", TurnID: "t2", Token: c.Lease.Token,
				Outcome: chat.OutcomeCompleted, Cursor: c.BaseSequence + 1, DefinitionRevision: 2})
			if err != nil {
				t.Fatalf("ReleaseTurn: %v", err)
			}
			if s := e.session("s1"); s.DefinitionRevision != 2 || s.DefinitionID != "assistant" {
				t.Errorf("stored definition %s@%d, want assistant@2", s.DefinitionID, s.DefinitionRevision)
			}
			e.completeTurn("s1", "t3") // a release without a revision keeps it
			if s := e.session("s1"); s.DefinitionRevision != 2 {
				t.Errorf("stored revision after a release without one = %d, want 2", s.DefinitionRevision)
			}
		},
	}
}
