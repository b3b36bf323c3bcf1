package sessionapi_test

import (
	"strings"
	"testing"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/sessionapi"
)

// TestRunningTurnInHistory: a running turn's latest checkpoint is in
// history (status running, the checkpoint's messages, the lease expiry
// currentTurn shows) and currentTurn names its sequence, so a reloaded
// page renders the answer so far and resumes from there; once its lease
// has expired without a save, the next read decides it, and every route
// agrees: it is listed as its record (error TURN_LOST with the partial
// answer) and the session is idle.
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
			StartedAt: f.clock.Now()}
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
		if e := page.Turns[0].ExpiresAt; e == nil || *e != sum.CurrentTurn.ExpiresAt {
			t.Errorf("running turn's expiresAt %v, want currentTurn's %d", e, sum.CurrentTurn.ExpiresAt)
		}
		f.clock.Advance(leaseDuration) // its process died
		for _, first := range []string{"summary", "turns"} {
			if first == "turns" {
				c = f.claim("s2", alice, turnSpec{id: "t1"})
				cp.SessionID, cp.Ordinal, cp.FirstSequence, cp.Sequence = "s2", c.Lease.Ordinal, c.BaseSequence+1, c.BaseSequence+7
				if _, err := f.store.Checkpoint(f.ctx, c, cp); err != nil {
					t.Fatal(err)
				}
				f.clock.Advance(leaseDuration)
			}
			sid := map[string]string{"summary": "s1", "turns": "s2"}[first]
			var page sessionapi.TurnPage
			if first == "turns" { // the list decides, then the summary agrees
				page = decode[sessionapi.TurnPage](t, "turns after the crash", f.do(f.history, get("/sessions/"+sid+"/turns", alice)))
			}
			sum = decode[sessionapi.SessionSummary](t, "summary after the crash", f.do(f.history, get("/sessions/"+sid, alice)))
			if sum.CurrentTurn != nil || sum.Sequence != c.BaseSequence+chat.SequenceGapAfterCrash {
				t.Errorf("%s first: currentTurn %+v, cursor %d after the decision", first, sum.CurrentTurn, sum.Sequence)
			}
			if first == "summary" {
				page = decode[sessionapi.TurnPage](t, "turns after the crash", f.do(f.history, get("/sessions/"+sid+"/turns", alice)))
			}
			got := page.Turns[0]
			if got.Status != chat.TurnError || got.Error == nil || got.Error.Code != protocol.CodeTurnLost || got.ExpiresAt != nil ||
				got.Messages[1].Content != "the answer so" || got.Messages[1].Status != protocol.MessageError {
				t.Errorf("%s first: crashed turn in history: %+v", first, got)
			}
		}
	})
}

// TestRoutesAgreeOnASavedTurn: a turn saved but not released (its
// release still to come, or failed: the lease then expires on its own) is
// complete in /turns and no current turn in the summary or its envelope:
// the routes never show one turn in two states. Once its lease expires a
// read frees the session, recording the turn as completed.
func TestRoutesAgreeOnASavedTurn(t *testing.T) {
	forEachStore(t, func(t *testing.T, f *fixture) {
		c := f.claim("s1", alice, turnSpec{id: "t1"})
		at := protocol.FormatTime(f.clock.Now())
		msgs := []protocol.Message{
			{ID: "t1-user", Role: protocol.RoleUser, Content: "question t1", Status: protocol.MessageComplete, CreatedAt: at},
			{ID: "t1-assistant", Role: protocol.RoleAssistant, Content: "", Status: protocol.MessageStreaming, CreatedAt: at},
		}
		cp := &chat.Checkpoint{SessionID: "s1", TurnID: "t1", Ordinal: c.Lease.Ordinal, Lineage: c.Lease.Lineage,
			InputHash: c.Lease.InputHash, Messages: msgs, FirstSequence: c.BaseSequence + 1, Sequence: c.BaseSequence + 1,
			StartedAt: f.clock.Now()}
		if _, err := f.store.Checkpoint(f.ctx, c, cp); err != nil {
			t.Fatal(err)
		}
		final := &chat.Turn{SessionID: "s1", TurnID: "t1", Ordinal: c.Lease.Ordinal, Status: chat.TurnComplete,
			Lineage: c.Lease.Lineage, InputHash: c.Lease.InputHash, FirstSequence: c.BaseSequence + 1, LastSequence: c.BaseSequence + 3,
			Messages:  []protocol.Message{msgs[0], {ID: "t1-assistant", Role: protocol.RoleAssistant, Content: "done", Status: protocol.MessageComplete, CreatedAt: at}},
			StartedAt: f.clock.Now(), CompletedAt: f.clock.Now()}
		if err := f.store.SaveTurn(f.ctx, c, final); err != nil {
			t.Fatal(err)
		}
		page := decode[sessionapi.TurnPage](t, "turns", f.do(f.history, get("/sessions/s1/turns", alice)))
		if len(page.Turns) != 1 || page.Turns[0].Status != chat.TurnComplete {
			t.Fatalf("turns: %+v", page.Turns)
		}
		sum := decode[sessionapi.SessionSummary](t, "summary", f.do(f.history, get("/sessions/s1", alice)))
		if sum.CurrentTurn != nil {
			t.Errorf("currentTurn %+v of a turn /turns shows complete", sum.CurrentTurn)
		}
		if strings.Contains(string(sum.Session), `"activeTurn"`) {
			t.Errorf("the envelope names the saved turn active: %s", sum.Session)
		}
		f.clock.Advance(leaseDuration)
		sum = decode[sessionapi.SessionSummary](t, "summary after the expiry", f.do(f.history, get("/sessions/s1", alice)))
		if sum.CurrentTurn != nil || !strings.Contains(string(sum.Session), `"turnId":"t1","outcome":"completed"`) {
			t.Errorf("after the lease expired: currentTurn %+v, envelope %s; want t1 completed", sum.CurrentTurn, sum.Session)
		}
	})
}
