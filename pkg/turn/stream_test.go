package turn_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/turn"
)

func TestSubmitStreamsAndSaves(t *testing.T) {
	forEachStore(t, func(t *testing.T, newStore func(testing.TB) chat.Store) {
		m := &scriptModel{Chunks: []string{"Hel", "lo", " there"}, Delay: 2 * time.Millisecond}
		e := newEnv(t, newStore(t), m, nil)

		r := e.submit(t, "s1", "t1", "hi", nil, nil)
		r.want(t, http.StatusOK, "")
		for k, v := range map[string]string{
			"Content-Type":           "application/x-ndjson; charset=utf-8",
			"Cache-Control":          "no-store",
			"X-Content-Type-Options": "nosniff",
		} {
			if got := r.header.Get(k); got != v {
				t.Errorf("%s = %q, want %q", k, got, v)
			}
		}
		first := r.events[0]
		if first.Sequence != 1 || first.Snapshot == nil || first.Snapshot.Status != protocol.StatusStreaming {
			t.Fatalf("first line: %+v", first)
		}
		if got := first.Snapshot.Messages; len(got) != 2 || got[0].Content != "hi" || got[1].Role != protocol.RoleAssistant {
			t.Fatalf("first snapshot messages: %+v", got)
		}
		term := r.terminal(t)
		if r.last().Snapshot != term || term.Status != protocol.StatusComplete || term.Error != nil {
			t.Fatalf("last line is not a complete snapshot: %s", r.raw)
		}
		if term.Lineage == nil || *term.Lineage != (protocol.Lineage{Operation: protocol.OperationSubmit}) {
			t.Errorf("lineage %+v, want submit", term.Lineage)
		}
		asst := term.Messages[1]
		if asst.Content != "Hello there" || asst.Status != protocol.MessageComplete || asst.ID != "t1.a" || term.Messages[0].ID != "t1.u" {
			t.Errorf("assistant %+v", asst)
		}
		if term.Usage.TotalTokens != 6 {
			t.Errorf("usage %+v", term.Usage)
		}
		if m.Calls() != 1 {
			t.Errorf("model calls %d", m.Calls())
		}
		req := m.LastRequest()
		if req.System != "Be brief." || req.ModelID != "test-model" || len(req.Messages) != 1 || req.Messages[0].Content != "hi" {
			t.Errorf("model request %+v", req)
		}

		stored, err := e.store.FindTurn(context.Background(), "s1", "t1", alice)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := messagesJSON(t, stored.Messages), messagesJSON(t, term.Messages); got != want {
			t.Errorf("stored messages\n%s\nsnapshot\n%s", got, want)
		}
		if stored.Status != chat.TurnComplete || stored.FirstSequence != 1 || stored.LastSequence != r.last().Sequence {
			t.Errorf("stored turn %+v", stored)
		}

		// The next turn sees the first as context and numbers on.
		r2 := e.submit(t, "s1", "t2", "again", nil, nil)
		r2.want(t, http.StatusOK, "")
		if r2.events[0].Sequence != r.last().Sequence+1 {
			t.Errorf("second turn starts at %d after %d", r2.events[0].Sequence, r.last().Sequence)
		}
		if n := len(r2.terminal(t).Messages); n != 4 {
			t.Errorf("session scope: %d messages, want 4", n)
		}
		if n := len(m.LastRequest().Messages); n != 3 {
			t.Errorf("model context: %d messages, want 3", n)
		}
		r3 := e.submit(t, "s1", "t3", "scoped", nil, map[string]string{turn.SnapshotScopeHeader: "Turn"})
		r3.want(t, http.StatusOK, "")
		for _, ev := range r3.events {
			if n := len(ev.Snapshot.Messages); n != 2 {
				t.Fatalf("turn scope: %d messages, want 2", n)
			}
		}
	})
}

var _ = errors.New
var _ = strings.Contains
var _ sync.Mutex
var _ model.Event
