package sessionapi_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/sessionapi"
)

// TestPendingApprovals: a confirmation recorded at release is listed in
// the summary's pendingInteractions and in its session envelope, which
// the envelope decoder accepts as it is; once decided (or expired) it
// leaves pendingInteractions and the envelope shows its status.
func TestPendingApprovals(t *testing.T) {
	forEachStore(t, func(t *testing.T, f *fixture) {
		c := f.claim("s1", alice, turnSpec{id: "t1"})
		turn := f.complete("s1", c, turnSpec{id: "t1"}) // released once without confirmations
		c = f.claim("s1", alice, turnSpec{id: "t2"})
		cf := chat.Confirmation{
			Token: chat.NewConfirmationToken(), Action: "note_delete", Input: json.RawMessage(`{"title":"Trip plan"}`),
			ToolCallID: "c1", TurnID: "t2", ExpiresAt: f.clock.Now().Add(time.Hour), Status: chat.ConfirmationPending,
		}
		if _, err := f.store.ReleaseTurn(f.ctx, chat.ReleaseRequest{Claim: c, Outcome: chat.OutcomeCompleted,
			Sequence: turn.LastSequence + 1, Confirmations: []chat.Confirmation{cf}}); err != nil {
			t.Fatal(err)
		}

		got := decode[sessionapi.SessionSummary](t, "pending", f.do(f.history, get("/sessions/s1", alice)))
		if len(got.PendingInteractions) != 1 || got.PendingInteractions[0].InteractionID != cf.Token {
			t.Fatalf("pendingInteractions %+v", got.PendingInteractions)
		}
		data, _ := json.Marshal(got.PendingInteractions[0].Data)
		var p sessionapi.PendingApproval
		if err := json.Unmarshal(data, &p); err != nil || p.ToolName != "note_delete" || string(p.Args) != `{"title":"Trip plan"}` ||
			p.ToolCallID != "c1" || p.TurnID != "t2" || p.ExpiresAt != cf.ExpiresAt.UnixMilli() {
			t.Fatalf("data %s", data)
		}
		env, d := protocol.DecodeSession(got.Session)
		if d != nil {
			t.Fatalf("envelope %s: %+v", got.Session, d)
		}
		if env.SessionID != "s1" || env.DefinitionID != "assistant" || env.DefinitionRevision != 1 || env.Sequence != turn.LastSequence+1 ||
			env.ActiveTurn != nil || len(env.TerminalTurns) != 2 || len(env.Confirmations) != 1 {
			t.Fatalf("envelope %+v", env)
		}
		if e := env.Confirmations[0]; e.Token != cf.Token || e.Action != "note_delete" || e.ToolCallID != "c1" ||
			e.ExpiresAt != cf.ExpiresAt.UnixMilli() || e.Status != "pending" || string(e.Input) != `{"title":"Trip plan"}` {
			t.Fatalf("envelope confirmation %+v", e)
		}
		// The envelope re-encodes to the same bytes.
		again, err := protocol.EncodeSession(env)
		if err != nil || string(again) != string(got.Session) {
			t.Fatalf("re-encoded %s, %v", again, err)
		}

		// Expired by time: gone from pendingInteractions, "expired" in
		// the envelope.
		f.clock.Advance(time.Hour)
		got = decode[sessionapi.SessionSummary](t, "expired", f.do(f.history, get("/sessions/s1", alice)))
		env, d = protocol.DecodeSession(got.Session)
		if len(got.PendingInteractions) != 0 || d != nil || env.Confirmations[0].Status != "expired" {
			t.Fatalf("after expiry: pending %+v, envelope %s", got.PendingInteractions, got.Session)
		}
		// A running turn shows as activeTurn.
		f.claim("s1", alice, turnSpec{id: "t3"})
		got = decode[sessionapi.SessionSummary](t, "running", f.do(f.history, get("/sessions/s1", alice)))
		if env, d = protocol.DecodeSession(got.Session); d != nil || env.ActiveTurn == nil || env.ActiveTurn.TurnID != "t3" {
			t.Fatalf("running: envelope %s", got.Session)
		}
	})
}
