package storetest

import (
	"testing"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// checkpointOf returns checkpoint number n of claim c with the assistant
// text and tool calls given, its prior messages taken from prior.
func (e *env) checkpointOf(c *chat.Claim, n int, prior *chat.Checkpoint, text string, seq int64, calls ...protocol.ToolCall) *chat.Checkpoint {
	now := e.clock.Now()
	id := c.Lease.TurnID
	cp := &chat.Checkpoint{
		SessionID: c.Session.ID, TurnID: id, Ordinal: c.Lease.Ordinal, Lineage: c.Lease.Lineage, InputHash: c.Lease.InputHash,
		Messages: []protocol.Message{
			{ID: id + "-user", Role: protocol.RoleUser, Content: inputOf(id), Status: protocol.MessageComplete, CreatedAt: stamp(now)},
			{ID: id + "-assistant", Role: protocol.RoleAssistant, Content: text, Status: protocol.MessageStreaming, CreatedAt: stamp(now), ToolCalls: calls},
		},
		Usage:          protocol.Usage{PromptTokens: 3, CompletionTokens: int64(len(text)), TotalTokens: 3 + int64(len(text))},
		FirstSequence:  c.BaseSequence + 1,
		Sequence:       seq,
		Number:         n,
		LeaseExpiresAt: now.Add(leaseDuration),
		StartedAt:      now,
	}
	if prior != nil {
		cp.Prior = prior.Messages
	}
	return cp
}

// checkpoint writes cp and fails the test on error; it returns the stop flag.
func (e *env) checkpoint(c *chat.Claim, cp *chat.Checkpoint) bool {
	e.t.Helper()
	stop, err := e.store.Checkpoint(e.ctx, c, cp)
	if err != nil {
		e.t.Fatalf("Checkpoint %d of %s: %v", cp.Number, cp.TurnID, err)
	}
	return stop
}

// wantRunning checks that the stored turn reads back as cp's running turn.
func (e *env) wantRunning(t *testing.T, what string, got *chat.Turn, cp *chat.Checkpoint) {
	t.Helper()
	if got.Status != chat.TurnRunning || got.LastSequence != cp.Sequence || got.Usage != cp.Usage {
		t.Errorf("%s: status %s, last sequence %d, usage %+v; want running at %d, %+v", what, got.Status, got.LastSequence, got.Usage, cp.Sequence, cp.Usage)
	}
	if abbrev(got.Messages) != abbrev(cp.Messages) {
		t.Errorf("%s: messages\n%s\nwant %s", what, abbrev(got.Messages), abbrev(cp.Messages))
	}
}

// checkpointCases prove Checkpoint and PollTurn: a running turn is visible
// with its latest checkpoint, a crashed one becomes its record, a stop is
// seen at the next checkpoint, and checkpoints are fenced by the lease.
func checkpointCases() map[string]func(*testing.T, *env) {
	return map[string]func(*testing.T, *env){
		"RunningTurnVisibleWithLatestCheckpoint": func(t *testing.T, e *env) {
			c := e.claim("s1", "t1")
			cp1 := e.checkpointOf(c, 1, nil, "Hel", c.BaseSequence+1)
			if e.checkpoint(c, cp1) {
				t.Fatal("stop reported without a stop request")
			}
			e.wantRunning(t, "after the first checkpoint", e.find("s1", "t1"), cp1)
			call := protocol.ToolCall{ID: "call-1", Name: "lookup", Args: []byte(`{"q":"x"}`), Status: protocol.ToolCallRunning}
			cp2 := e.checkpointOf(c, 2, cp1, "Hello, wor", c.BaseSequence+5, call)
			e.checkpoint(c, cp2)
			e.wantRunning(t, "after the second", e.find("s1", "t1"), cp2)
			// A retried checkpoint (its answer lost) changes nothing.
			e.checkpoint(c, cp2)
			// A heartbeat: the same messages at a later sequence.
			beat := *cp2
			beat.Prior, beat.Sequence = cp2.Messages, c.BaseSequence+6
			e.checkpoint(c, &beat)
			polled, err := e.store.PollTurn(e.ctx, "s1", c.Lease.Ordinal, alice)
			if err != nil {
				t.Fatal(err)
			}
			e.wantRunning(t, "polled", polled, &beat)
			page, err := e.store.ListTurns(e.ctx, chat.ListRequest{SessionID: "s1", Principal: alice})
			if err != nil || len(page.Turns) != 1 {
				t.Fatalf("history of a running turn: %v, %v", turnIDs(pageTurns(page)), err)
			}
			e.wantRunning(t, "in history", &page.Turns[0], &beat)
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
			_, _ = e.store.Checkpoint(e.ctx, c, e.checkpointOf(c, 3, cp2, "late", c.BaseSequence+9))
			wantTurn(t, "after a late checkpoint", e.find("s1", "t1"), final)
		},

		"CrashedTurnIsItsLastCheckpoint": func(t *testing.T, e *env) {
			c := e.claim("s1", "crash")
			cp1 := e.checkpointOf(c, 1, nil, "Par", c.BaseSequence+1)
			e.checkpoint(c, cp1)
			cp2 := e.checkpointOf(c, 2, cp1, "Partial answ", c.BaseSequence+3)
			e.checkpoint(c, cp2)
			e.clock.Advance(leaseDuration) // the process died: no renewal, no save
			lost := e.find("s1", "crash")
			if lost.Status != chat.TurnError || lost.Error == nil || lost.Error.Code != protocol.CodeTurnLost {
				t.Fatalf("crashed turn: status %s, error %+v; want error %s", lost.Status, lost.Error, protocol.CodeTurnLost)
			}
			if a := lost.Messages[1]; a.Content != "Partial answ" || a.Status != protocol.MessageError {
				t.Errorf("crashed turn's answer %q (%s), want the last checkpoint's, status error", a.Content, a.Status)
			}
			// The next claim takes over: the record stays, a late
			// checkpoint or save of the crashed turn is fenced.
			next := e.claim("s1", "next")
			if next.Lease.Ordinal != c.Lease.Ordinal+1 {
				t.Errorf("next ordinal %d", next.Lease.Ordinal)
			}
			after := e.find("s1", "crash")
			if after.Status != chat.TurnError || after.Messages[1].Content != "Partial answ" {
				t.Errorf("after the takeover: %s %q", after.Status, after.Messages[1].Content)
			}
			_, err := e.store.Checkpoint(e.ctx, c, e.checkpointOf(c, 3, cp2, "Partial answer, late", c.BaseSequence+4))
			wantErr(t, "late checkpoint", err, chat.ErrLeaseLost)
			err = e.store.SaveTurn(e.ctx, c, e.turnFor(c, "s1"))
			wantErr(t, "late save", err, chat.ErrLeaseLost)
			if got := e.find("s1", "crash"); got.Messages[1].Content != "Partial answ" {
				t.Errorf("a fenced checkpoint changed the record: %q", got.Messages[1].Content)
			}
			e.release("s1", next, chat.OutcomeCompleted, next.BaseSequence)
			_, err = e.store.ClaimTurn(e.ctx, claimRequest("s1", "crash"))
			wantErr(t, "replay of the crashed turn", err, chat.ErrTurnIndeterminate)
		},

		"StopSeenAtCheckpoint": func(t *testing.T, e *env) {
			c := e.claim("s1", "t1")
			cp1 := e.checkpointOf(c, 1, nil, "a", c.BaseSequence+1)
			e.checkpoint(c, cp1)
			if err := e.store.RequestStop(e.ctx, "s1", "t1", alice); err != nil {
				t.Fatal(err)
			}
			beat := *cp1
			beat.Prior, beat.Number, beat.Sequence = cp1.Messages, 1, beat.Sequence+1
			if !e.checkpoint(c, &beat) {
				t.Error("a heartbeat after RequestStop did not report the stop")
			}
			// A stop before the first checkpoint is seen by it.
			e.release("s1", c, chat.OutcomeCompleted, beat.Sequence)
			c2 := e.claim("s1", "t2")
			if err := e.store.RequestStop(e.ctx, "s1", "t2", alice); err != nil {
				t.Fatal(err)
			}
			if !e.checkpoint(c2, e.checkpointOf(c2, 1, nil, "b", c2.BaseSequence+1)) {
				t.Error("the first checkpoint after RequestStop did not report the stop")
			}
		},

		"CheckpointRejections": func(t *testing.T, e *env) {
			c := e.claim("s1", "t1")
			other := e.checkpointOf(c, 1, nil, "x", 1)
			other.Ordinal++
			_, err := e.store.Checkpoint(e.ctx, c, other)
			wantErr(t, "checkpoint of another ordinal", err, chat.ErrInvalidRequest)
			noPrior := e.checkpointOf(c, 2, nil, "x", 1)
			_, err = e.store.Checkpoint(e.ctx, c, noPrior)
			wantErr(t, "second checkpoint without its prior", err, chat.ErrInvalidRequest)
			cp1 := e.checkpointOf(c, 1, nil, "x", 1)
			e.checkpoint(c, cp1)
			_, err = e.store.Checkpoint(e.ctx, forged(c, "not-a-token"), e.checkpointOf(c, 2, cp1, "xy", 2))
			wantErr(t, "checkpoint with a foreign token", err, chat.ErrLeaseLost)
			_, err = e.store.PollTurn(e.ctx, "s1", c.Lease.Ordinal, mallory)
			wantErr(t, "poll by another principal", err, chat.ErrSessionNotFound)
			_, err = e.store.PollTurn(e.ctx, "s1", c.Lease.Ordinal+5, alice)
			wantErr(t, "poll of an unknown ordinal", err, chat.ErrTurnNotFound)
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
