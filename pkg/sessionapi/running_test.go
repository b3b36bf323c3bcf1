package sessionapi_test

import (
	"testing"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/sessionapi"
)

// TestRunningTurnInHistory: a running turn's latest checkpoint is in
// history (status running, the checkpoint's messages) and currentTurn
// names its sequence, so a reloaded page renders the answer so far and
// resumes from there; once its lease has expired without a save it is
// listed as its record: error TURN_LOST with the partial answer.
func TestRunningTurnInHistory(t *testing.T) {
	forEachStore(t, func(t *testing.T, f *fixture) {
		c := f.claim("s1", alice, turnSpec{id: "t1"})
		at := protocol.FormatTime(f.clock.Now())
		msgs := []protocol.Message{
			{ID: "t1-user", Role: protocol.RoleUser, Content: "question t1", Status: protocol.MessageComplete, CreatedAt: at},
			{ID: "t1-assistant", Role: protocol.RoleAssistant, Content: "the answer so", Status: protocol.MessageStreaming, CreatedAt: at},
		}
		cp := &chat.Checkpoint{SessionID: "s1", TurnID: "t1", Ordinal: c.Lease.Ordinal, Lineage: c.Lease.Lineage,
			InputHash: c.Lease.InputHash, Messages: msgs, FirstSequence: c.BaseSequence + 1, Sequence: c.BaseSequence + 7,
			Number: 1, LeaseExpiresAt: c.Lease.ExpiresAt, StartedAt: f.clock.Now()}
		if _, err := f.store.Checkpoint(f.ctx, c, cp); err != nil {
			t.Fatal(err)
		}
		sum := decode[sessionapi.SessionSummary](t, "summary", f.do(f.history, get("/sessions/s1", alice)))
		if sum.CurrentTurn == nil || sum.CurrentTurn.TurnID != "t1" || sum.CurrentTurn.Sequence != cp.Sequence {
			t.Fatalf("currentTurn %+v, want t1 at sequence %d", sum.CurrentTurn, cp.Sequence)
		}
		page := decode[sessionapi.TurnPage](t, "turns", f.do(f.history, get("/sessions/s1/turns", alice)))
		if len(page.Turns) != 1 || page.Turns[0].Status != chat.TurnRunning || messageJSON(t, page.Turns[0].Messages) != messageJSON(t, msgs) {
			t.Fatalf("running turn in history: %+v", page.Turns)
		}
		f.clock.Advance(leaseDuration) // its process died
		sum = decode[sessionapi.SessionSummary](t, "summary after the crash", f.do(f.history, get("/sessions/s1", alice)))
		if sum.CurrentTurn != nil {
			t.Errorf("currentTurn of an expired lease: %+v", sum.CurrentTurn)
		}
		page = decode[sessionapi.TurnPage](t, "turns after the crash", f.do(f.history, get("/sessions/s1/turns", alice)))
		got := page.Turns[0]
		if got.Status != chat.TurnError || got.Error == nil || got.Error.Code != protocol.CodeTurnLost ||
			got.Messages[1].Content != "the answer so" || got.Messages[1].Status != protocol.MessageError {
			t.Errorf("crashed turn in history: %+v", got)
		}
	})
}
