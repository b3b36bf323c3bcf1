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

// claimCases prove ClaimTurn: creation, mutual exclusion, lease expiry, the
// terminal window and the reserved sequence (docs/design.md#the-turn-pipeline,
// docs/protocol.md#the-session-envelope).
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
				s.DefinitionID != "assistant" || s.DefinitionRevision != 1 || s.NextOrdinal != 2 || s.Sequence != 0 {
				t.Errorf("claimed session = %+v, want s1 owned by alice, definition assistant@1, next ordinal 2, sequence 0", s)
			}
			if s.ActiveTurn == nil || s.ActiveTurn.Token != c.Lease.Token {
				t.Errorf("claimed session active turn = %+v, want the claim's lease", s.ActiveTurn)
			}
			if len(s.TerminalTurns) != 0 {
				t.Errorf("new session terminal window = %+v, want empty", s.TerminalTurns)
			}
			e.save(c, e.turnFor(c, "s1"))
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
				claims := make([]*chat.Claim, n)
				var wg sync.WaitGroup
				gate := make(chan struct{})
				for i := range n {
					wg.Go(func() {
						<-gate
						claims[i], errs[i] = e.store.ClaimTurn(e.ctx, claimRequest(sessionID, fmt.Sprintf("r%d-t%02d", round, i)))
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
				var winner *chat.Claim
				for _, c := range claims {
					if c != nil {
						winner = c
					}
				}
				if winner.Lease.Token != s.ActiveTurn.Token {
					t.Fatalf("round %d: the session holds another lease than the winner's", round)
				}
				_, err := e.store.ReleaseTurn(e.ctx, chat.ReleaseRequest{Claim: winner, Outcome: chat.OutcomeCompleted})
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

		"ReplayOfASavedTurnWhileItsLeaseHolds": func(t *testing.T, e *env) {
			// The save landed, the release not (yet): the lease still
			// holds, but the turn's record is decided. A replay of its id
			// gets that decision, as the terminal window gives it after
			// the release; only another turn id is busy.
			c := e.claim("s1", "t1")
			_, err := e.store.ClaimTurn(e.ctx, claimRequest("s1", "t1"))
			wantErr(t, "replay of t1 while it runs", err, chat.ErrSessionBusy)
			e.save(c, e.turnFor(c, "s1"))
			_, err = e.store.ClaimTurn(e.ctx, claimRequest("s1", "t1"))
			wantErr(t, "replay of t1 saved, not released", err, chat.ErrTurnCompleted)
			other := claimRequest("s1", "t1")
			other.InputHash = chat.HashInput("another input")
			_, err = e.store.ClaimTurn(e.ctx, other)
			wantErr(t, "t1 with another input, saved, not released", err, chat.ErrTurnIDReused)
			_, err = e.store.ClaimTurn(e.ctx, claimRequest("s1", "t2"))
			wantErr(t, "claim t2 while t1's lease holds", err, chat.ErrSessionBusy)
			_, err = e.store.EnqueueTurn(e.ctx, enqueueRequest("s1", "t1", chat.DefaultMaxQueuedTurns))
			wantErr(t, "enqueue of t1 saved, not released", err, chat.ErrTurnCompleted)
			if s := e.session("s1"); s.ActiveTurn == nil || s.ActiveTurn.Token != c.Lease.Token {
				t.Errorf("active turn after rejected claims = %+v, want t1's lease unchanged", s.ActiveTurn)
			}
		},

		"ReplayOfAnAbandonedLease": func(t *testing.T, e *env) {
			// The holder's save went unconfirmed: it told its client
			// TURN_OUTCOME_INDETERMINATE and abandoned its lease. A replay
			// of its id is told the same (not SESSION_BUSY, retryable)
			// until the table decides the turn; another turn id is busy.
			c := e.claim("s1", "t1")
			if err := e.store.AbandonLease(e.ctx, c); err != nil {
				t.Fatalf("abandon: %v", err)
			}
			if err := e.store.AbandonLease(e.ctx, c); err != nil {
				t.Fatalf("abandon again (a retry): %v", err)
			}
			_, err := e.store.ClaimTurn(e.ctx, claimRequest("s1", "t1"))
			wantErr(t, "replay of t1, abandoned", err, chat.ErrTurnIndeterminate)
			other := claimRequest("s1", "t1")
			other.InputHash = chat.HashInput("another input")
			_, err = e.store.ClaimTurn(e.ctx, other)
			wantErr(t, "t1 with another input, abandoned", err, chat.ErrTurnIDReused)
			_, err = e.store.ClaimTurn(e.ctx, claimRequest("s1", "t2"))
			wantErr(t, "claim t2 while t1's abandoned lease holds", err, chat.ErrSessionBusy)
			_, err = e.store.EnqueueTurn(e.ctx, enqueueRequest("s1", "t1", chat.DefaultMaxQueuedTurns))
			wantErr(t, "enqueue of t1, abandoned", err, chat.ErrTurnIndeterminate)
			// The save lands late after all: its decision wins.
			e.save(c, e.turnFor(c, "s1"))
			_, err = e.store.ClaimTurn(e.ctx, claimRequest("s1", "t1"))
			wantErr(t, "replay of t1, abandoned then saved", err, chat.ErrTurnCompleted)
			// A claim of the session after the lease: no flag carried over.
			e.clock.Advance(leaseDuration)
			c2 := e.claim("s1", "t2")
			if s := e.session("s1"); s.ActiveTurn == nil || s.ActiveTurn.Token != c2.Lease.Token || s.ActiveTurn.Abandoned {
				t.Errorf("active turn after the next claim = %+v, want t2's lease, not abandoned", s.ActiveTurn)
			}
			if err := e.store.AbandonLease(e.ctx, c); !errors.Is(err, chat.ErrLeaseLost) {
				t.Errorf("abandon with a lease taken over: %v, want ErrLeaseLost", err)
			}
		},

		"ReplayOfACompletedTurnWhileAnotherRuns": func(t *testing.T, e *env) {
			// t1 completed and was released; t2 holds the lease. A replay
			// of t1 gets t1's decision, not SESSION_BUSY: its id is spent.
			e.completeTurn("s1", "t1")
			e.claim("s1", "t2")
			_, err := e.store.ClaimTurn(e.ctx, claimRequest("s1", "t1"))
			wantErr(t, "replay of t1 while t2 runs", err, chat.ErrTurnCompleted)
			other := claimRequest("s1", "t1")
			other.InputHash = chat.HashInput("another input")
			_, err = e.store.ClaimTurn(e.ctx, other)
			wantErr(t, "t1 with another input while t2 runs", err, chat.ErrTurnIDReused)
			_, err = e.store.ClaimTurn(e.ctx, claimRequest("s1", "t3"))
			wantErr(t, "t3 while t2 runs", err, chat.ErrSessionBusy)
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

		"CrashedTurnLateSaveFenced": func(t *testing.T, e *env) {
			// A turn whose lease expired is fenced by the table at takeover:
			// its late save (a process that was only slow, not dead) can no
			// longer land beside its successor, and it stays out of history.
			c := e.claim("s1", "slow")
			late := e.turnFor(c, "s1")
			e.clock.Advance(leaseDuration)
			next := e.claim("s1", "next")
			err := e.store.SaveTurn(e.ctx, c, late)
			wantErr(t, "late save of the taken-over turn", err, chat.ErrLeaseLost)
			_, err = e.store.FindTurn(e.ctx, "s1", "slow", alice)
			wantErr(t, "the fenced turn in history", err, chat.ErrTurnNotFound)
			e.save(next, e.turnFor(next, "s1"))
			e.release("s1", next, chat.OutcomeCompleted, next.BaseSequence+2)
			page, err := e.store.ListTurns(e.ctx, chat.ListRequest{SessionID: "s1", Principal: alice})
			if err != nil || len(page.Turns) != 1 || page.Turns[0].TurnID != "next" {
				t.Errorf("history after a fenced late save: %v, err %v; want only next", turnIDs(pageTurns(page)), err)
			}
			_, err = e.store.ClaimTurn(e.ctx, claimRequest("s1", "slow"))
			wantErr(t, "replay of the fenced turn", err, chat.ErrTurnIndeterminate)
		},

		"CrashedTurnWhoseSaveLandedIsCompleted": func(t *testing.T, e *env) {
			// The turn saved, then died before its release: its outcome is
			// known, and the takeover records it as completed.
			c := e.claim("s1", "saved")
			e.save(c, e.turnFor(c, "s1"))
			e.clock.Advance(leaseDuration)
			next := e.claim("s1", "next")
			e.release("s1", next, chat.OutcomeCompleted, next.BaseSequence)
			s := e.session("s1")
			if len(s.TerminalTurns) != 2 || s.TerminalTurns[0].TurnID != "saved" || s.TerminalTurns[0].Outcome != chat.OutcomeCompleted {
				t.Errorf("terminal window = %+v, want [saved completed, next completed]", s.TerminalTurns)
			}
			_, err := e.store.ClaimTurn(e.ctx, claimRequest("s1", "saved"))
			wantErr(t, "replay of the saved crashed turn", err, chat.ErrTurnCompleted)
			if got := e.find("s1", "saved"); got.Status != chat.TurnComplete {
				t.Errorf("saved crashed turn status %s, want complete", got.Status)
			}
		},

		"CrashedRunningTurnClosedAsLost": func(t *testing.T, e *env) {
			// A turn that saved itself as running (a checkpoint) and died is
			// closed by the takeover: status error, TURN_LOST, its messages
			// kept; its own later save is fenced.
			c := e.claim("s1", "running")
			running := e.turnFor(c, "s1")
			running.Status = chat.TurnRunning
			e.save(c, running)
			e.clock.Advance(leaseDuration)
			e.claim("s1", "next")
			got := e.find("s1", "running")
			if got.Status != chat.TurnError || got.Error == nil || got.Error.Code != protocol.CodeTurnLost {
				t.Errorf("crashed running turn: status %s, error %+v; want error %s", got.Status, got.Error, protocol.CodeTurnLost)
			}
			if len(got.Messages) != len(running.Messages) || got.Messages[1].Content != running.Messages[1].Content {
				t.Errorf("crashed running turn lost its messages: %v", got.Messages)
			}
			final := e.turnFor(c, "s1")
			err := e.store.SaveTurn(e.ctx, c, final)
			wantErr(t, "final save after the takeover", err, chat.ErrLeaseLost)
		},

		"CrashedTurnTakeover": func(t *testing.T, e *env) {
			e.completeTurn("s1", "t0") // sequence 2
			c := e.claim("s1", "crashed")
			_, err := e.store.RenewLease(e.ctx, chat.RenewRequest{Claim: c, ExpiresAt: e.clock.Now().Add(leaseDuration), Sequence: c.BaseSequence + 7})
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
				t.Errorf("BaseSequence after takeover = %d, want >= persisted sequence %d + SequenceGapAfterCrash = %d",
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
			if s.Sequence != next.BaseSequence+1 {
				t.Errorf("sequence = %d, want the released %d", s.Sequence, next.BaseSequence+1)
			}
		},

		"TerminalWindowKeepsNewestTurns": func(t *testing.T, e *env) {
			// A crashed turn that saved nothing, then enough turns that it
			// and two more leave any window a store may keep.
			e.claim("s1", "crashed")
			e.clock.Advance(leaseDuration)
			const n = chat.TerminalWindowSize + 2
			turns := e.completeTurns("s1", "t", n)
			s := e.session("s1")
			k := len(s.TerminalTurns)
			if k < 1 || k > chat.TerminalWindowSize {
				t.Fatalf("terminal window has %d entries, want 1..%d", k, chat.TerminalWindowSize)
			}
			for i, entry := range s.TerminalTurns {
				want := turns[n-k+i]
				if entry.TurnID != want.TurnID || entry.Outcome != chat.OutcomeCompleted || entry.InputHash != want.InputHash {
					t.Fatalf("window[%d] = %+v, want %s completed (the newest %d, oldest first)", i, entry, want.TurnID, k)
				}
			}
			// The window is the fast path: a turn id identifies one turn of
			// its session forever, evicted or not, crashed or not, and a
			// rejected replay changes nothing (no ordinal spent, the window
			// as it was).
			before := e.session("s1")
			_, err := e.store.ClaimTurn(e.ctx, claimRequest("s1", turns[n-k].TurnID))
			wantErr(t, "replay of the oldest kept turn", err, chat.ErrTurnCompleted)
			_, err = e.store.ClaimTurn(e.ctx, claimRequest("s1", turns[0].TurnID))
			wantErr(t, "replay of an evicted turn", err, chat.ErrTurnCompleted)
			reused := claimRequest("s1", turns[1].TurnID)
			reused.InputHash = chat.HashInput("another input")
			_, err = e.store.ClaimTurn(e.ctx, reused)
			wantErr(t, "evicted turn id with another input", err, chat.ErrTurnIDReused)
			_, err = e.store.ClaimTurn(e.ctx, claimRequest("s1", "crashed"))
			wantErr(t, "replay of an evicted crashed turn", err, chat.ErrTurnIndeterminate)
			reused = claimRequest("s1", "crashed")
			reused.InputHash = chat.HashInput("another input")
			_, err = e.store.ClaimTurn(e.ctx, reused)
			wantErr(t, "evicted crashed turn id with another input", err, chat.ErrTurnIDReused)
			after := e.session("s1")
			if after.ActiveTurn != nil || after.NextOrdinal != before.NextOrdinal || !slices.Equal(after.TerminalTurns, before.TerminalTurns) {
				t.Errorf("rejected replays changed the session: active %+v, next ordinal %d -> %d",
					after.ActiveTurn, before.NextOrdinal, after.NextOrdinal)
			}
			if _, err := e.store.FindTurn(e.ctx, "s1", "crashed", alice); !errors.Is(err, chat.ErrTurnNotFound) {
				t.Errorf("FindTurn of a crashed turn that saved nothing: %v, want ErrTurnNotFound", err)
			}
			c := e.claim("s1", "fresh")
			if c.Lease.Ordinal != before.NextOrdinal {
				t.Errorf("next claim's ordinal %d, want %d", c.Lease.Ordinal, before.NextOrdinal)
			}
		},

		"BaseSequenceIsLastReleasedSequence": func(t *testing.T, e *env) {
			c := e.claim("s1", "t1")
			e.release("s1", c, chat.OutcomeCompleted, 41)
			c2 := e.claim("s1", "t2")
			if c2.BaseSequence != 41 {
				t.Errorf("BaseSequence = %d, want the released sequence 41", c2.BaseSequence)
			}
			if c2.Session.Sequence != 41 {
				t.Errorf("session sequence = %d, want 41", c2.Session.Sequence)
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
			_, err := e.store.ReleaseTurn(e.ctx, chat.ReleaseRequest{Claim: c, Outcome: chat.OutcomeCompleted, Sequence: c.BaseSequence + 1, DefinitionRevision: 2})
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

		"IfNextOrdinal": func(t *testing.T, e *env) {
			// A claim conditional on the next ordinal the caller read
			// (an interrupt or rollback, docs/multitask.md) is made only
			// while no other turn was claimed since, and that is judged
			// before the lease.
			ifNext := func(turnID string, next int64) chat.ClaimRequest {
				req := claimRequest("s1", turnID)
				req.AheadOfQueue, req.IfNextOrdinal = true, next
				return req
			}
			_, err := e.store.ClaimTurn(e.ctx, ifNext("t1", 2))
			wantErr(t, "a claim expecting next ordinal 2 of a session not created", err, chat.ErrSessionMoved)
			if _, err := e.store.GetSession(e.ctx, "s1", alice); !errors.Is(err, chat.ErrSessionNotFound) {
				t.Fatalf("session after a claim that did not apply: %v, want ErrSessionNotFound", err)
			}
			c1 := e.claimWith(ifNext("t1", 1)) // a new session's next ordinal is 1
			if c1.Lease.Ordinal != 1 || !c1.Created {
				t.Errorf("claim of a new session: ordinal %d created %v", c1.Lease.Ordinal, c1.Created)
			}

			_, err = e.store.ClaimTurn(e.ctx, ifNext("t2", 2))
			if !errors.Is(err, chat.ErrSessionBusy) || errors.Is(err, chat.ErrSessionMoved) {
				t.Errorf("claim while the turn it expects holds the lease: %v, want ErrSessionBusy, not moved", err)
			}
			_, err = e.store.ClaimTurn(e.ctx, ifNext("t2", 1))
			wantErr(t, "a stale claim while another turn holds the lease", err, chat.ErrSessionMoved)
			if !errors.Is(err, chat.ErrSessionBusy) {
				t.Errorf("ErrSessionMoved %v is not ErrSessionBusy", err)
			}
			e.save(c1, e.turnFor(c1, "s1"))
			e.release("s1", c1, chat.OutcomeCompleted, 2)

			before := e.session("s1")
			_, err = e.store.ClaimTurn(e.ctx, ifNext("t2", 1))
			wantErr(t, "a stale claim of a free session", err, chat.ErrSessionMoved)
			if after := e.session("s1"); after.ActiveTurn != nil || after.NextOrdinal != before.NextOrdinal || after.Revision != before.Revision {
				t.Errorf("session after a stale claim: lease %+v, next ordinal %d, revision %d; want unchanged (%d, %d)",
					after.ActiveTurn, after.NextOrdinal, after.Revision, before.NextOrdinal, before.Revision)
			}
			c2 := e.claimWith(ifNext("t2", 2))
			if c2.Lease.Ordinal != 2 || c2.Session.NextOrdinal != 3 {
				t.Errorf("claim expecting next ordinal 2: ordinal %d, next %d", c2.Lease.Ordinal, c2.Session.NextOrdinal)
			}

			// A lease that expired (its turn crashed after a stop) is
			// taken over by the claim that expects it to be the latest;
			// a stale claim is refused before the takeover.
			e.clock.Advance(leaseDuration)
			_, err = e.store.ClaimTurn(e.ctx, ifNext("t3", 2))
			wantErr(t, "a stale claim of a session with an expired lease", err, chat.ErrSessionMoved)
			c3 := e.claimWith(ifNext("t3", 3))
			if c3.Lease.Ordinal != 3 || c3.BaseSequence != 2+chat.SequenceGapAfterCrash {
				t.Errorf("takeover expecting next ordinal 3: ordinal %d, base sequence %d", c3.Lease.Ordinal, c3.BaseSequence)
			}
		},

		"IfNextOrdinalConcurrentOneWinner": func(t *testing.T, e *env) {
			// Conditional claims racing for the same next ordinal (two
			// rollbacks that stopped the same turn): one wins, every other
			// one finds the session moved on or busy; none runs after it.
			e.completeTurn("s1", "t0")
			const n = 12
			errs := make([]error, n)
			claims := make([]*chat.Claim, n)
			request := func(i int) chat.ClaimRequest {
				req := claimRequest("s1", fmt.Sprintf("r%02d", i))
				req.AheadOfQueue, req.IfNextOrdinal = true, 2
				return req
			}
			var wg sync.WaitGroup
			gate := make(chan struct{})
			for i := range n {
				wg.Go(func() {
					<-gate
					claims[i], errs[i] = e.store.ClaimTurn(e.ctx, request(i))
				})
			}
			close(gate)
			wg.Wait()
			winner := -1
			for i, err := range errs {
				switch {
				case err == nil && winner < 0:
					winner = i
				case err == nil:
					t.Fatalf("claims %d and %d both won", winner, i)
				case !errors.Is(err, chat.ErrSessionBusy):
					t.Errorf("claim %d: %v, want ErrSessionMoved or ErrSessionBusy", i, err)
				}
			}
			if winner < 0 {
				t.Fatal("no claim won")
			}
			if s := e.session("s1"); s.NextOrdinal != 3 || s.ActiveTurn == nil || s.ActiveTurn.Ordinal != 2 {
				t.Errorf("session after the race: next ordinal %d, lease %+v; want 3 and the winner at 2", s.NextOrdinal, s.ActiveTurn)
			}
			// Once the winner ended, a loser tried again still finds the
			// session moved on: it never takes the place after a turn it
			// did not expect.
			c := claims[winner]
			e.save(c, e.turnFor(c, "s1"))
			e.release("s1", c, chat.OutcomeCompleted, c.BaseSequence+2)
			for i := range n {
				if i != winner {
					_, err := e.store.ClaimTurn(e.ctx, request(i))
					wantErr(t, fmt.Sprintf("loser %d tried again after the winner ended", i), err, chat.ErrSessionMoved)
				}
			}
		},
	}
}
