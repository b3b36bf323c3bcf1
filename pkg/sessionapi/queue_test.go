package sessionapi_test

import (
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/sessionapi"
)

// TestQueuedTurnsInTheSummary: the session summary lists the turns
// waiting in the queue, in order, with a preview of their input (cut at
// InputPreviewRunes characters), when they were queued and when they
// expire; /turns lists none of them (they have no ordinal until they
// start); another principal sees no session at all.
func TestQueuedTurnsInTheSummary(t *testing.T) {
	forEachStore(t, func(t *testing.T, f *fixture) {
		f.claim("s1", alice, turnSpec{id: "t1"})
		long := strings.Repeat("é", sessionapi.InputPreviewRunes+5)
		for _, q := range []struct{ id, input string }{{"q1", "short question"}, {"q2", long}} {
			at := protocol.FormatTime(f.clock.Now())
			if _, err := f.store.EnqueueTurn(f.ctx, chat.EnqueueRequest{SessionID: "s1", TurnID: q.id, Principal: alice,
				InputHash: chat.HashInput(q.input), Lineage: protocol.Lineage{Operation: protocol.OperationSubmit},
				Message: protocol.Message{ID: q.id + ".u", Role: protocol.RoleUser, Content: q.input, Status: protocol.MessageComplete, CreatedAt: at},
				TTL:     time.Minute, Max: 4}); err != nil {
				t.Fatal(err)
			}
		}
		sum := decode[sessionapi.SessionSummary](t, "summary", f.do(f.history, get("/sessions/s1", alice)))
		if len(sum.QueuedTurns) != 2 {
			t.Fatalf("queuedTurns %+v", sum.QueuedTurns)
		}
		q1, q2 := sum.QueuedTurns[0], sum.QueuedTurns[1]
		if q1.TurnID != "q1" || q1.Position != 1 || q1.InputPreview != "short question" || q1.ExpiresAt != f.clock.Now().Add(time.Minute).UnixMilli() ||
			q1.QueuedAt != protocol.FormatTime(f.clock.Now()) {
			t.Errorf("q1 %+v", q1)
		}
		if q2.TurnID != "q2" || q2.Position != 2 || q2.InputPreview != strings.Repeat("é", sessionapi.InputPreviewRunes)+"…" {
			t.Errorf("q2 %+v", q2)
		}
		page := decode[sessionapi.TurnPage](t, "turns", f.do(f.history, get("/sessions/s1/turns", alice)))
		for _, tr := range page.Turns {
			if tr.TurnID == "q1" || tr.TurnID == "q2" {
				t.Errorf("/turns lists the queued turn %s", tr.TurnID)
			}
		}
		if rec := f.do(f.history, get("/sessions/s1", mallory)); rec.status != 404 {
			t.Errorf("another principal's summary: %d", rec.status)
		}
	})
}
