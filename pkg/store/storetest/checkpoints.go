package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// checkpointOf returns the checkpoint of claim c at sequence seq with the
// assistant text and tool calls given, its prior the checkpoint prior
// (nil: the first checkpoint, the turn's acknowledgment).
func (e *env) checkpointOf(c *chat.Claim, prior *chat.Checkpoint, text string, seq int64, calls ...protocol.ToolCall) *chat.Checkpoint {
	now := e.clock.Now()
	id := c.Lease.TurnID
	cp := &chat.Checkpoint{
		SessionID: c.Session.ID, TurnID: id, Ordinal: c.Lease.Ordinal, Lineage: c.Lease.Lineage, InputHash: c.Lease.InputHash,
		Messages: []protocol.Message{
			{ID: id + "-user", Role: protocol.RoleUser, Content: inputOf(id), Status: protocol.MessageComplete, CreatedAt: stamp(start)},
			{ID: id + "-assistant", Role: protocol.RoleAssistant, Content: text, Status: protocol.MessageStreaming, CreatedAt: stamp(start), ToolCalls: calls},
		},
		Usage:         protocol.Usage{PromptTokens: 3, CompletionTokens: int64(len(text)), TotalTokens: 3 + int64(len(text))},
		Metered:       chat.Usage{InputTokens: 3, OutputTokens: int64(len(text)), ModelCalls: 1, ToolCalls: int64(len(calls)), StoreRequests: seq},
		FirstSequence: c.BaseSequence + 1,
		Sequence:      seq,
		StartedAt:     now,
	}
	if prior != nil {
		cp.Prior, cp.PriorSequence = prior.Messages, prior.Sequence
	}
	return cp
}

// beatOf returns a heartbeat after prior at sequence seq: its messages.
func beatOf(prior *chat.Checkpoint, seq int64) *chat.Checkpoint {
	beat := *prior
	beat.Prior, beat.PriorSequence, beat.Sequence = prior.Messages, prior.Sequence, seq
	return &beat
}

// checkpoint writes cp and fails the test on error; it returns the stop flag.
func (e *env) checkpoint(c *chat.Claim, cp *chat.Checkpoint) bool {
	e.t.Helper()
	stop, err := e.store.Checkpoint(e.ctx, c, cp)
	if err != nil {
		e.t.Fatalf("Checkpoint %d of %s: %v", cp.Sequence, cp.TurnID, err)
	}
	return stop
}

// poll reads the turn at c's ordinal as alice, from since, and fails the
// test on error.
func (e *env) poll(c *chat.Claim, since *chat.Turn) *chat.Turn {
	e.t.Helper()
	t, err := e.store.PollTurn(e.ctx, c.Session.ID, c.Lease.Ordinal, alice, since)
	if err != nil {
		e.t.Fatalf("PollTurn(%s, %d): %v", c.Session.ID, c.Lease.Ordinal, err)
	}
	return t
}

// wantRunning checks that the stored turn reads back as cp's running turn.
func (e *env) wantRunning(t *testing.T, what string, got *chat.Turn, cp *chat.Checkpoint) {
	t.Helper()
	if got.Status != chat.TurnRunning || got.LastSequence != cp.Sequence || got.Usage != cp.Usage || got.Metered != cp.Metered {
		t.Errorf("%s: status %s, last sequence %d, usage %+v, metered %+v; want running at %d, %+v, %+v", what, got.Status, got.LastSequence, got.Usage, got.Metered,
			cp.Sequence, cp.Usage, cp.Metered)
	}
	if abbrev(got.Messages) != abbrev(cp.Messages) {
		t.Errorf("%s: messages\n%s\nwant %s", what, abbrev(got.Messages), abbrev(cp.Messages))
	}
}

// wantLost checks that got is the record of c's turn decided lost: error
// TURN_LOST, the messages of its last checkpoint cp closed, and its
// terminal sequence past any it may have emitted (the session's sequence
// when it was decided plus chat.SequenceGapAfterCrash).
func wantLost(t *testing.T, what string, got *chat.Turn, cp *chat.Checkpoint, sequence int64) {
	t.Helper()
	if got.Status != chat.TurnError || got.Error == nil || got.Error.Code != protocol.CodeTurnLost {
		t.Fatalf("%s: status %s, error %+v; want error %s", what, got.Status, got.Error, protocol.CodeTurnLost)
	}
	if got.LastSequence != sequence+chat.SequenceGapAfterCrash {
		t.Errorf("%s: terminal sequence %d, want %d", what, got.LastSequence, sequence+chat.SequenceGapAfterCrash)
	}
	if !got.LeaseExpiresAt.IsZero() {
		t.Errorf("%s: a decided turn carries a lease expiry %v", what, got.LeaseExpiresAt)
	}
	if cp == nil {
		return
	}
	if len(got.Messages) != 2 || got.Messages[1].Content != cp.Messages[1].Content || got.Messages[1].Status != protocol.MessageError {
		t.Errorf("%s: messages %s; want the last checkpoint's (%q), the assistant's closed as error", what, abbrev(got.Messages), cp.Messages[1].Content)
	}
	if got.Metered != cp.Metered {
		t.Errorf("%s: metered %+v; want the last checkpoint's %+v", what, got.Metered, cp.Metered)
	}
}

// checkpointCases prove Checkpoint and PollTurn: a running turn is visible
// with its latest checkpoint, a stop is seen at the next checkpoint,
// checkpoints are fenced by the lease, and a failed checkpoint never
// blocks the next.
func checkpointCases() map[string]func(*testing.T, *env) {
	return map[string]func(*testing.T, *env){
		"WithdrawnClaimLeavesItsIDUnspent": func(t *testing.T, e *env) {
			// The acknowledgment failed and wrote nothing: the claim is
			// withdrawn, nothing records the turn, and its retry runs it
			// (at the next ordinal: a late acknowledgment of the
			// withdrawn claim cannot land).
			c := e.claim("s1", "t1")
			acked, err := e.store.WithdrawClaim(e.ctx, c)
			if err != nil || acked {
				t.Fatalf("WithdrawClaim: acknowledged %v, %v; want false, nil", acked, err)
			}
			if s := e.session("s1"); s.ActiveTurn != nil || len(s.TerminalTurns) != 0 {
				t.Fatalf("session after the withdrawal: lease %+v, window %+v; want free, nothing recorded", s.ActiveTurn, s.TerminalTurns)
			}
			if _, err := e.store.Checkpoint(e.ctx, c, e.checkpointOf(c, nil, "", c.BaseSequence+1)); !errors.Is(err, chat.ErrLeaseLost) {
				t.Fatalf("a late acknowledgment of the withdrawn claim: %v, want ErrLeaseLost", err)
			}
			if _, err := e.store.FindTurn(e.ctx, "s1", "t1", alice); !errors.Is(err, chat.ErrTurnNotFound) {
				t.Fatalf("FindTurn of the withdrawn turn: %v, want ErrTurnNotFound", err)
			}
			retry := e.claim("s1", "t1")
			if retry.Lease.Ordinal == c.Lease.Ordinal {
				t.Errorf("the retry reused the withdrawn ordinal %d", c.Lease.Ordinal)
			}
			e.checkpoint(retry, e.checkpointOf(retry, nil, "", retry.BaseSequence+1))
			got, err := e.store.FindTurn(e.ctx, "s1", "t1", alice)
			if err != nil || got.Ordinal != retry.Lease.Ordinal || got.Status != chat.TurnRunning {
				t.Fatalf("FindTurn after the retry: %+v, %v; want the retry running", got, err)
			}
			// An acknowledgment that applied (its answer lost) is a turn
			// that exists: the withdrawal says so and changes nothing.
			acked, err = e.store.WithdrawClaim(e.ctx, retry)
			if err != nil || !acked {
				t.Fatalf("WithdrawClaim after an acknowledgment: %v, %v; want true, nil", acked, err)
			}
			if s := e.session("s1"); s.ActiveTurn == nil || s.ActiveTurn.Token != retry.Lease.Token {
				t.Fatalf("the lease of an acknowledged turn was removed: %+v", s.ActiveTurn)
			}
		},

		"RunningTurnVisibleWithLatestCheckpoint": func(t *testing.T, e *env) {
			c := e.claim("s1", "t1")
			cp1 := e.checkpointOf(c, nil, "", c.BaseSequence+1)
			if e.checkpoint(c, cp1) {
				t.Fatal("stop reported without a stop request")
			}
			e.wantRunning(t, "after the first checkpoint", e.find("s1", "t1"), cp1)
			call := protocol.ToolCall{ID: "call-1", Name: "lookup", Args: []byte(`{"q":"x"}`), Status: protocol.ToolCallRunning}
			cp2 := e.checkpointOf(c, cp1, "Hello, wor", c.BaseSequence+5, call)
			e.checkpoint(c, cp2)
			e.wantRunning(t, "after the second", e.find("s1", "t1"), cp2)
			// A retried checkpoint (its answer lost) changes nothing.
			e.checkpoint(c, cp2)
			// A heartbeat: the same messages at a later sequence.
			beat := beatOf(cp2, c.BaseSequence+6)
			e.checkpoint(c, beat)
			polled := e.poll(c, nil)
			e.wantRunning(t, "polled", polled, beat)
			if !polled.LeaseExpiresAt.Equal(c.Lease.ExpiresAt) {
				t.Errorf("a running turn's lease expiry %v, want the session lease's %v", polled.LeaseExpiresAt, c.Lease.ExpiresAt)
			}
			cp3 := e.checkpointOf(c, cp2, "Hello, world. And more", c.BaseSequence+8, call)
			e.checkpoint(c, cp3)
			e.wantRunning(t, "polled from the earlier state", e.poll(c, polled), cp3)
			e.wantRunning(t, "polled whole", e.poll(c, nil), cp3)
			page, err := e.store.ListTurns(e.ctx, chat.ListRequest{SessionID: "s1", Principal: alice})
			if err != nil || len(page.Turns) != 1 {
				t.Fatalf("history of a running turn: %v, %v", turnIDs(pageTurns(page)), err)
			}
			e.wantRunning(t, "in history", &page.Turns[0], cp3)
			if !page.Turns[0].LeaseExpiresAt.Equal(c.Lease.ExpiresAt) {
				t.Errorf("history's lease expiry %v, want %v", page.Turns[0].LeaseExpiresAt, c.Lease.ExpiresAt)
			}
			if ctxTurns, _, err := e.store.LoadContext(e.ctx, "s1", c.Lease.Ordinal+1, 1000); err != nil || len(ctxTurns) != 0 {
				t.Errorf("context load included the running turn: %v, %v", ctxTurns, err)
			}
			final := e.turnFor(c, "s1")
			e.save(c, final)
			e.release("s1", c, chat.OutcomeCompleted, final.LastSequence)
			got := e.find("s1", "t1")
			wantTurn(t, "after the final save", got, final)
			// A checkpoint that arrives after the final save (an SDK retry
			// landing late) changes nothing a reader sees.
			_, _ = e.store.Checkpoint(e.ctx, c, e.checkpointOf(c, cp3, "late", c.BaseSequence+9))
			wantTurn(t, "after a late checkpoint", e.find("s1", "t1"), final)
			wantTurn(t, "polled after the save", e.poll(c, polled), final)
		},

		"FailedCheckpointSupersededByTheNext": func(t *testing.T, e *env) {
			// A checkpoint whose outcome its turn does not know (its delta
			// written, its answer lost) is superseded by the next one,
			// which names the same prior: it lands, and readers see its
			// state, never a mix of the two.
			c := e.claim("s1", "t1")
			cp1 := e.checkpointOf(c, nil, "", c.BaseSequence+1)
			e.checkpoint(c, cp1)
			cp2 := e.checkpointOf(c, cp1, "Hel", c.BaseSequence+3)
			e.checkpoint(c, cp2) // the turn takes it for failed
			cp3 := e.checkpointOf(c, cp1, "Hello, w", c.BaseSequence+5)
			e.checkpoint(c, cp3)
			e.wantRunning(t, "after the superseding checkpoint", e.find("s1", "t1"), cp3)
			cp4 := e.checkpointOf(c, cp3, "Hello, world", c.BaseSequence+7)
			e.checkpoint(c, cp4)
			e.wantRunning(t, "after the next", e.poll(c, nil), cp4)
			// An older checkpoint delivered late changes nothing.
			e.checkpoint(c, cp2)
			e.wantRunning(t, "after a late older checkpoint", e.find("s1", "t1"), cp4)
		},

		"StopSeenAtCheckpoint": func(t *testing.T, e *env) {
			c := e.claim("s1", "t1")
			cp1 := e.checkpointOf(c, nil, "a", c.BaseSequence+1)
			e.checkpoint(c, cp1)
			if err := e.store.RequestStop(e.ctx, "s1", "t1", alice); err != nil {
				t.Fatal(err)
			}
			if !e.checkpoint(c, beatOf(cp1, cp1.Sequence+1)) {
				t.Error("a heartbeat after RequestStop did not report the stop")
			}
			// A stop before the acknowledgment is seen by the checkpoint
			// after it, a change or a heartbeat (the acknowledgment itself
			// may not report it).
			e.release("s1", c, chat.OutcomeCompleted, cp1.Sequence+1)
			for _, change := range []bool{false, true} {
				turnID := map[bool]string{false: "t2", true: "t3"}[change]
				c2 := e.claim("s1", turnID)
				if err := e.store.RequestStop(e.ctx, "s1", turnID, alice); err != nil {
					t.Fatal(err)
				}
				ack := e.checkpointOf(c2, nil, "", c2.BaseSequence+1)
				e.checkpoint(c2, ack)
				next := beatOf(ack, ack.Sequence+1)
				if change {
					next = e.checkpointOf(c2, ack, "a", ack.Sequence+1)
				}
				if !e.checkpoint(c2, next) {
					t.Errorf("the checkpoint after the acknowledgment (change %v) did not report a stop requested before it", change)
				}
				e.release("s1", c2, chat.OutcomeCompleted, next.Sequence)
			}
		},

		"CheckpointRejections": func(t *testing.T, e *env) {
			c := e.claim("s1", "t1")
			other := e.checkpointOf(c, nil, "x", c.BaseSequence+1)
			other.Ordinal++
			_, err := e.store.Checkpoint(e.ctx, c, other)
			wantErr(t, "checkpoint of another ordinal", err, chat.ErrInvalidRequest)
			cp1 := e.checkpointOf(c, nil, "x", c.BaseSequence+1)
			badPrior := e.checkpointOf(c, cp1, "xy", c.BaseSequence+2)
			badPrior.PriorSequence = c.BaseSequence + 3
			_, err = e.store.Checkpoint(e.ctx, c, badPrior)
			wantErr(t, "checkpoint with a prior after it", err, chat.ErrInvalidRequest)
			e.checkpoint(c, cp1)
			_, err = e.store.Checkpoint(e.ctx, forged(c, "not-a-token"), e.checkpointOf(c, cp1, "xy", c.BaseSequence+2))
			wantErr(t, "checkpoint with a foreign token", err, chat.ErrLeaseLost)
			_, err = e.store.PollTurn(e.ctx, "s1", c.Lease.Ordinal, mallory, nil)
			wantErr(t, "poll by another principal", err, chat.ErrSessionNotFound)
			_, err = e.store.PollTurn(e.ctx, "s1", c.Lease.Ordinal+5, alice, nil)
			wantErr(t, "poll of an unknown ordinal", err, chat.ErrTurnNotFound)
		},
	}
}

// fateCases prove that a turn's fate is decided once, by the table
// (chat.Store): no reader infers it from a clock, the session lease is
// the one authority, every reader decides an expired lease and they all
// agree, and a decided fate never changes.
func fateCases() map[string]func(*testing.T, *env) {
	return map[string]func(*testing.T, *env){
		"NotLostWhileTheSessionLeaseHolds": func(t *testing.T, e *env) {
			// The lease was renewed after the last checkpoint: past the
			// claim's expiry the turn still runs, and every reader says so
			// with the renewed expiry.
			c := e.claim("s1", "t1")
			cp1 := e.checkpointOf(c, nil, "", c.BaseSequence+1)
			e.checkpoint(c, cp1)
			cp2 := e.checkpointOf(c, cp1, "Partial", c.BaseSequence+3)
			e.checkpoint(c, cp2)
			e.clock.Advance(leaseDuration * 2 / 3)
			renewed := e.clock.Now().Add(leaseDuration)
			if _, err := e.store.RenewLease(e.ctx, chat.RenewRequest{Claim: c, ExpiresAt: renewed, Sequence: cp2.Sequence}); err != nil {
				t.Fatal(err)
			}
			e.clock.Advance(leaseDuration/3 + 5*time.Second) // past the claim's expiry
			for name, got := range map[string]*chat.Turn{"FindTurn": e.find("s1", "t1"), "PollTurn": e.poll(c, nil)} {
				e.wantRunning(t, name, got, cp2)
				if !got.LeaseExpiresAt.Equal(renewed) {
					t.Errorf("%s: lease expiry %v, want the renewed %v", name, got.LeaseExpiresAt, renewed)
				}
			}
			page, err := e.store.ListTurns(e.ctx, chat.ListRequest{SessionID: "s1", Principal: alice})
			if err != nil || len(page.Turns) != 1 || page.Turns[0].Status != chat.TurnRunning {
				t.Fatalf("history: %+v, %v; want the turn running", pageTurns(page), err)
			}
			if l := e.session("s1").ActiveTurn; l == nil || l.TurnID != "t1" || !l.ExpiresAt.Equal(renewed) {
				t.Errorf("session lease %+v, want t1's until %v", l, renewed)
			}
			final := e.turnFor(c, "s1")
			e.save(c, final)
			wantTurn(t, "saved after the claim's expiry", e.find("s1", "t1"), final)
		},

		"EveryReaderDecidesAnExpiredLease": func(t *testing.T, e *env) {
			readers := map[string]func(c *chat.Claim){
				"GetSession": func(c *chat.Claim) { e.session(c.Session.ID) },
				"ListTurns": func(c *chat.Claim) {
					if _, err := e.store.ListTurns(e.ctx, chat.ListRequest{SessionID: c.Session.ID, Principal: alice}); err != nil {
						t.Fatal(err)
					}
				},
				"FindTurn": func(c *chat.Claim) { e.find(c.Session.ID, c.Lease.TurnID) },
				"PollTurn": func(c *chat.Claim) { e.poll(c, nil) },
				"ClaimTurn": func(c *chat.Claim) {
					next := e.claim(c.Session.ID, "next")
					e.release(c.Session.ID, next, chat.OutcomeCompleted, next.BaseSequence)
				},
			}
			for name, read := range readers {
				t.Run(name, func(t *testing.T) {
					e := e.with(t)
					sid := "s-" + name
					c := e.claim(sid, "crash")
					cp1 := e.checkpointOf(c, nil, "", c.BaseSequence+1)
					e.checkpoint(c, cp1)
					cp2 := e.checkpointOf(c, cp1, "Partial answ", c.BaseSequence+3)
					e.checkpoint(c, cp2)
					e.clock.Advance(leaseDuration) // the process died: no renewal, no save
					read(c)
					// Decided by that read: every route agrees, and the dead
					// turn can write nothing more.
					wantLost(t, "FindTurn", e.find(sid, "crash"), cp2, c.BaseSequence)
					wantLost(t, "PollTurn", e.poll(c, nil), cp2, c.BaseSequence)
					page, err := e.store.ListTurns(e.ctx, chat.ListRequest{SessionID: sid, Principal: alice, Order: chat.OrderAsc})
					if err != nil {
						t.Fatal(err)
					}
					wantLost(t, "ListTurns", &page.Turns[0], cp2, c.BaseSequence)
					s := e.session(sid)
					if name != "ClaimTurn" && (s.ActiveTurn != nil || s.Sequence != c.BaseSequence+chat.SequenceGapAfterCrash) {
						t.Errorf("session after the decision: lease %+v, sequence %d; want idle at %d", s.ActiveTurn, s.Sequence, c.BaseSequence+chat.SequenceGapAfterCrash)
					}
					_, err = e.store.Checkpoint(e.ctx, c, e.checkpointOf(c, cp2, "Partial answer, late", c.BaseSequence+4))
					wantErr(t, "late checkpoint", err, chat.ErrLeaseLost)
					err = e.store.SaveTurn(e.ctx, c, e.turnFor(c, sid))
					wantErr(t, "late save", err, chat.ErrLeaseLost)
					_, err = e.store.RenewLease(e.ctx, chat.RenewRequest{Claim: c, ExpiresAt: e.clock.Now().Add(leaseDuration), Sequence: cp2.Sequence})
					wantErr(t, "late renewal", err, chat.ErrLeaseLost)
					_, err = e.store.ReleaseTurn(e.ctx, chat.ReleaseRequest{Claim: c, Outcome: chat.OutcomeCompleted, Sequence: cp2.Sequence})
					wantErr(t, "late release", err, chat.ErrLeaseLost)
					// Irrevocable: much later, still the same record.
					e.clock.Advance(time.Hour)
					wantLost(t, "an hour later", e.find(sid, "crash"), cp2, c.BaseSequence)
					_, err = e.store.ClaimTurn(e.ctx, claimRequest(sid, "crash"))
					wantErr(t, "replay of the lost turn", err, chat.ErrTurnIndeterminate)
					next := e.claim(sid, "after")
					if next.BaseSequence < c.BaseSequence+chat.SequenceGapAfterCrash {
						t.Errorf("the next turn's base %d reuses the lost turn's sequences", next.BaseSequence)
					}
				})
			}
		},

		"TurnLostBeforeItsAcknowledgment": func(t *testing.T, e *env) {
			// Claimed, never checkpointed: a resumer waits (not found)
			// while the lease holds, then reads its record; no list shows
			// it, and its id stays taken.
			c := e.claim("s1", "early")
			_, err := e.store.PollTurn(e.ctx, "s1", c.Lease.Ordinal, alice, nil)
			wantErr(t, "poll before the acknowledgment", err, chat.ErrTurnNotFound)
			e.clock.Advance(leaseDuration)
			got := e.poll(c, nil)
			wantLost(t, "poll after the lease expired", got, nil, c.BaseSequence)
			if len(got.Messages) != 0 {
				t.Errorf("a turn lost before its acknowledgment has messages %s", abbrev(got.Messages))
			}
			_, err = e.store.FindTurn(e.ctx, "s1", "early", alice)
			wantErr(t, "FindTurn of a turn never acknowledged", err, chat.ErrTurnNotFound)
			if page, err := e.store.ListTurns(e.ctx, chat.ListRequest{SessionID: "s1", Principal: alice}); err != nil || len(page.Turns) != 0 {
				t.Errorf("history: %v, %v; want no turn", turnIDs(pageTurns(page)), err)
			}
			_, err = e.store.Checkpoint(e.ctx, c, e.checkpointOf(c, nil, "", c.BaseSequence+1))
			wantErr(t, "a late acknowledgment", err, chat.ErrLeaseLost)
			_, err = e.store.ClaimTurn(e.ctx, claimRequest("s1", "early"))
			wantErr(t, "replay", err, chat.ErrTurnIndeterminate)
		},

		"SaveBeforeTheDecisionIsTheFate": func(t *testing.T, e *env) {
			// Saved after its lease expired, before anyone decided it: the
			// save landed first, so it is the turn's fate.
			c := e.claim("s1", "slow")
			cp1 := e.checkpointOf(c, nil, "", c.BaseSequence+1)
			e.checkpoint(c, cp1)
			e.clock.Advance(leaseDuration)
			final := e.turnFor(c, "s1")
			e.save(c, final)
			wantTurn(t, "read after the expiry", e.find("s1", "slow"), final)
			if s := e.session("s1"); s.ActiveTurn != nil || len(s.TerminalTurns) != 1 || s.TerminalTurns[0].Outcome != chat.OutcomeCompleted {
				t.Errorf("session: lease %+v, window %+v; want idle, slow completed", s.ActiveTurn, s.TerminalTurns)
			}
			_, err := e.store.ClaimTurn(e.ctx, claimRequest("s1", "slow"))
			wantErr(t, "replay", err, chat.ErrTurnCompleted)
		},

		"TerminalTurnNeverChanges": func(t *testing.T, e *env) {
			c := e.claim("s1", "t1")
			e.checkpoint(c, e.checkpointOf(c, nil, "", c.BaseSequence+1))
			final := e.turnFor(c, "s1")
			e.save(c, final)
			again := e.turnFor(c, "s1")
			again.Status, again.Messages[1].Content = chat.TurnError, "another ending"
			err := e.store.SaveTurn(e.ctx, c, again)
			wantErr(t, "a second save of a terminal turn", err, chat.ErrLeaseLost)
			wantTurn(t, "after the second save", e.find("s1", "t1"), final)
		},

		"RenewalNeverMovesTheExpiryBack": func(t *testing.T, e *env) {
			c := e.claim("s1", "t1")
			later := e.clock.Now().Add(2 * leaseDuration)
			if _, err := e.store.RenewLease(e.ctx, chat.RenewRequest{Claim: c, ExpiresAt: later, Sequence: 1}); err != nil {
				t.Fatal(err)
			}
			_, err := e.store.RenewLease(e.ctx, chat.RenewRequest{Claim: c, ExpiresAt: later.Add(-time.Second), Sequence: 1})
			wantErr(t, "an older renewal delivered late", err, chat.ErrLeaseLost)
			if l := e.session("s1").ActiveTurn; l == nil || !l.ExpiresAt.Equal(later) {
				t.Errorf("lease %+v, want it until %v", l, later)
			}
			if _, err := e.store.RenewLease(e.ctx, chat.RenewRequest{Claim: c, ExpiresAt: later, Sequence: 2}); err != nil {
				t.Errorf("a retried renewal: %v", err)
			}
		},

		"StopOfADecidedTurn": func(t *testing.T, e *env) {
			c := e.claim("s1", "t1")
			e.checkpoint(c, e.checkpointOf(c, nil, "", c.BaseSequence+1))
			e.clock.Advance(leaseDuration)
			err := e.store.RequestStop(e.ctx, "s1", "t1", alice)
			wantErr(t, "stop of a turn whose lease expired", err, chat.ErrTurnNotActive)
		},
	}
}

// contextCases prove LoadContext's budget: the newest maxTurns, oldest
// first, and whether older ones were left out.
func contextCases() map[string]func(*testing.T, *env) {
	return map[string]func(*testing.T, *env){
		"LoadContextNewestTurnsWithinBudget": func(t *testing.T, e *env) {
			all := e.completeTurns("s1", "t", 5)
			c := e.claim("s1", "now")
			got, omitted, err := e.store.LoadContext(e.ctx, "s1", c.Lease.Ordinal, 2)
			if err != nil || !omitted || len(got) != 2 || got[0].TurnID != all[3].TurnID || got[1].TurnID != all[4].TurnID {
				t.Errorf("LoadContext(2) = %v, omitted %v, %v; want the newest two, oldest first, omitted", turnIDs(got), omitted, err)
			}
			got, omitted, err = e.store.LoadContext(e.ctx, "s1", c.Lease.Ordinal, 5)
			if err != nil || omitted || len(got) != 5 {
				t.Errorf("LoadContext(5) = %v, omitted %v, %v; want all five, none omitted", turnIDs(got), omitted, err)
			}
			_, _, err = e.store.LoadContext(e.ctx, "s1", c.Lease.Ordinal, 0)
			wantErr(t, "LoadContext(0)", err, chat.ErrInvalidRequest)
		},
	}
}
