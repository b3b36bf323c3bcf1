package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/protocol"
)

func TestHistoryFollowsCursors(t *testing.T) {
	msg := func(id, role, content string, metadata string) json.RawMessage {
		m := protocol.Message{ID: id, Role: role, Content: content, Status: protocol.MessageComplete, CreatedAt: "2026-11-29T12:00:00.000Z"}
		if metadata != "" {
			m.Metadata = json.RawMessage(metadata)
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	type messagePage struct {
		Messages   []json.RawMessage `json:"messages"`
		NextCursor *string           `json:"nextCursor"`
		HasMore    bool              `json:"hasMore"`
	}
	type turn struct {
		TurnID    string                     `json:"turnId"`
		Ordinal   int                        `json:"ordinal"`
		Status    string                     `json:"status"`
		Messages  []json.RawMessage          `json:"messages"`
		Artifacts []client.ArtifactReference `json:"artifacts"`
		Error     *protocol.Diagnostic       `json:"error"`
	}
	type turnPage struct {
		Turns      []turn  `json:"turns"`
		NextCursor *string `json:"nextCursor"`
		HasMore    bool    `json:"hasMore"`
	}
	stopped := protocol.NewDiagnostic(protocol.CodeTurnInterrupted)
	cancelled := protocol.NewDiagnostic(protocol.CodeTurnCancelled)
	pages := map[string]messagePage{
		"": {Messages: []json.RawMessage{msg("t1.u", "user", "one", ""), msg("t1.a", "assistant", "Echo: one",
			`{"artifacts":[{"entryPath":"out/a.md","artifactType":"document"}]}`)}, NextCursor: ptr("c2"), HasMore: true},
		"c2": {Messages: []json.RawMessage{msg("t2.u", "user", "two\nlines", ""), msg("t2.a", "assistant", "Echo: two", "")}},
	}
	turnPages := map[string]turnPage{
		"": {Turns: []turn{{TurnID: "t1", Ordinal: 1, Status: "complete", Messages: []json.RawMessage{msg("t1.u", "user", "one", ""),
			msg("t1.a", "assistant", "Echo: one", "")}, Artifacts: []client.ArtifactReference{{EntryPath: "out/a.md", ArtifactType: "document"}}}},
			NextCursor: ptr("c2"), HasMore: true},
		"c2": {Turns: []turn{
			{TurnID: "t2", Ordinal: 2, Status: "interrupted", Error: &stopped, Messages: []json.RawMessage{msg("t2.u", "user", "two\nlines", ""),
				msgStatus("t2.a", "assistant", "Echo: two", protocol.MessageError, "")}},
			{TurnID: "t2b", Ordinal: 3, Status: "complete", Messages: []json.RawMessage{msg("t2b.u", "user", "/delete x", ""),
				json.RawMessage(`{"id":"t2b.a","role":"assistant","content":"","status":"complete","createdAt":"2026-11-29T12:00:00.000Z",` +
					`"toolCalls":[{"id":"c1","name":"workspace_note_delete","args":{"title":"x"},"status":"requires_confirmation"}]}`)}},
			{TurnID: "t3", Ordinal: 3, Status: "complete", Messages: []json.RawMessage{msg("t3.u", "user", "Denied.", ""),
				msg("t3.a", "assistant", "Echo: Denied.", `{"confirmation":{"decision":"deny","toolCallId":"c1","token":"cf1"}}`)}},
			{TurnID: "t4", Ordinal: 4, Status: "error", Error: &cancelled, Messages: []json.RawMessage{msg("t4.u", "user", "queued one", "")}},
		}},
	}
	var queries []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if (r.URL.Path != "/history/sessions/s1/messages" && r.URL.Path != "/history/sessions/s1/turns") || r.Header.Get("Authorization") != "Bearer dev.alice" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write(protocol.EncodeErrorBody(protocol.NewDiagnostic(protocol.CodeSessionNotFound)))
			return
		}
		queries = append(queries, r.URL.RawQuery)
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/turns") {
			page, ok := turnPages[r.URL.Query().Get("cursor")]
			if !ok {
				t.Errorf("unknown cursor in %q", r.URL.RawQuery)
			}
			_ = json.NewEncoder(w).Encode(page)
			return
		}
		page, ok := pages[r.URL.Query().Get("cursor")]
		if !ok {
			t.Errorf("unknown cursor in %q", r.URL.RawQuery)
		}
		_ = json.NewEncoder(w).Encode(page)
	}))
	defer srv.Close()

	code, out, errOut := runTurnctl([]string{"history", "-url", srv.URL + "/history/", "-session", "s1", "-token", "dev.alice"}, "")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	want := strings.Join([]string{
		"user (complete, 2026-11-29T12:00:00.000Z):", "  one",
		"assistant (complete, 2026-11-29T12:00:00.000Z):", "  Echo: one", "  artifact out/a.md (document)",
		"user (complete, 2026-11-29T12:00:00.000Z):", "  two", "  lines",
		"assistant (stopped, 2026-11-29T12:00:00.000Z):", "  Echo: two",
		"user (complete, 2026-11-29T12:00:00.000Z):", "  /delete x",
		"assistant (complete, 2026-11-29T12:00:00.000Z):", `  tool workspace_note_delete {"title":"x"}: denied (asked for approval)`,
		"decision (2026-11-29T12:00:00.000Z):", "  denied the call c1",
		"assistant (complete, 2026-11-29T12:00:00.000Z):", "  Echo: Denied.",
		"user (complete, 2026-11-29T12:00:00.000Z):", "  queued one", "  (cancelled before it ran)", "",
	}, "\n")
	if out != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
	if len(queries) != 2 || queries[0] != "limit=100&order=asc" || queries[1] != "cursor=c2&limit=100&order=asc" {
		t.Errorf("queries %q, want the first page then cursor c2, ascending, 100 per page", queries)
	}

	queries = nil
	code, out, _ = runTurnctl([]string{"history", "-url", srv.URL + "/history", "-session", "s1", "-token", "dev.alice", "-json"}, "")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if code != 0 || len(lines) != 4 {
		t.Fatalf("-json: exit %d, %d lines, want 0 and 4", code, len(lines))
	}
	if _, err := protocol.DecodeMessages([]byte("[" + strings.Join(lines, ",") + "]")); err != nil {
		t.Errorf("-json lines are not canonical message records: %v", err)
	}

	code, _, errOut = runTurnctl([]string{"history", "-url", srv.URL + "/history/", "-session", "s1", "-token", "dev.bob"}, "")
	if code != 1 || !strings.Contains(errOut, "HTTP 404: SESSION_NOT_FOUND") {
		t.Errorf("refused read: exit %d, stderr %q", code, errOut)
	}
}

func TestHistoryUsage(t *testing.T) {
	tests := map[string][]string{
		"no session":     {"history"},
		"bad session":    {"history", "-session", "../x"},
		"bad url":        {"history", "-session", "s1", "-url", "ftp://x/"},
		"stray argument": {"history", "-session", "s1", "extra"},
	}
	for name, args := range tests {
		t.Run(name, func(t *testing.T) {
			if code, _, _ := runTurnctl(args, ""); code != 2 {
				t.Errorf("exit %d, want 2", code)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// msgStatus is a message record of that status.
func msgStatus(id, role, content, status, metadata string) json.RawMessage {
	m := protocol.Message{ID: id, Role: role, Content: content, Status: status, CreatedAt: "2026-11-29T12:00:00.000Z"}
	if metadata != "" {
		m.Metadata = json.RawMessage(metadata)
	}
	b, _ := json.Marshal(m)
	return b
}
