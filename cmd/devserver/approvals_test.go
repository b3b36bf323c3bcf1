package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/pkg/protocol"
)

// TestApprovalDemo: the dev server's workspace_note_delete requires
// approval: "/delete <title>" ends with the call waiting, history lists
// it as a pending interaction, and a decision turn approves (the tool
// runs: it deletes a note the session saved, and says that a note it
// never saved does not exist) or denies it; /turns then shows the call
// and its decision.
func TestApprovalDemo(t *testing.T) {
	srv := startServer(t, map[string]string{"ECHO_DELAY": "0s"})
	for name, tc := range map[string]struct {
		decision, note string
		status, result string
	}{
		"approve": {protocol.DecisionApprove, "/note Trip plan: pack", protocol.ToolCallComplete, `Deleted note "notes/trip-plan.md".`},
		"approve a note never saved": {protocol.DecisionApprove, "/note Groceries: eggs", protocol.ToolCallError,
			`There is no note "notes/trip-plan.md" in this conversation; nothing was deleted.`},
		"deny": {protocol.DecisionDeny, "/note Trip plan: pack", protocol.ToolCallError, "The user denied this tool call."},
	} {
		t.Run(name, func(t *testing.T) {
			sid := "s-" + strings.ReplaceAll(name, " ", "-")
			if lines := submit(t, srv.url+"/turn/", "alice", sid, "t0", tc.note); lines[len(lines)-1].Snapshot.Status != protocol.StatusComplete {
				t.Fatalf("note turn ends %+v", lines[len(lines)-1])
			}
			lines := submit(t, srv.url+"/turn/", "alice", sid, "t1", "/delete Trip plan")
			last := lines[len(lines)-1]
			if last.Snapshot == nil || last.Snapshot.Status != protocol.StatusComplete {
				t.Fatalf("last line %+v", last)
			}
			if c := lastAssistant(last.Snapshot.Messages).ToolCalls[0]; c.Name != "workspace_note_delete" || c.Status != protocol.ToolCallRequiresConfirmation {
				t.Fatalf("waiting call %+v", c)
			}
			var summary struct {
				Pending []struct {
					InteractionID string `json:"interactionId"`
					Data          struct {
						ToolName string          `json:"toolName"`
						Args     json.RawMessage `json:"args"`
					} `json:"data"`
				} `json:"pendingInteractions"`
			}
			if st := getJSON(t, srv.url+"/history/sessions/"+sid, "alice", &summary); st != http.StatusOK || len(summary.Pending) != 1 ||
				summary.Pending[0].Data.ToolName != "workspace_note_delete" || string(summary.Pending[0].Data.Args) != `{"title":"Trip plan"}` {
				t.Fatalf("summary %d %+v", st, summary)
			}
			evs := decide(t, srv.url+"/turn/", sid, "t2", summary.Pending[0].InteractionID, tc.decision)
			term := evs[len(evs)-1].Snapshot
			if term == nil || term.Status != protocol.StatusComplete {
				t.Fatalf("continuation ends %+v", evs[len(evs)-1])
			}
			c := lastAssistant(term.Messages).ToolCalls[0]
			if text := deref(c.Result) + deref(c.Error); c.Status != tc.status || text != tc.result {
				t.Fatalf("decided call %+v, want %s %q", c, tc.status, tc.result)
			}
			var page struct {
				Turns []struct {
					TurnID   string             `json:"turnId"`
					Messages []protocol.Message `json:"messages"`
				} `json:"turns"`
			}
			if st := getJSON(t, srv.url+"/history/sessions/"+sid+"/turns?order=asc", "alice", &page); st != http.StatusOK || len(page.Turns) != 3 ||
				page.Turns[1].Messages[1].ToolCalls[0].Status != protocol.ToolCallRequiresConfirmation ||
				page.Turns[2].Messages[1].ToolCalls[0].Status != tc.status {
				t.Fatalf("turns %d %+v", st, page)
			}
			if st := getJSON(t, srv.url+"/history/sessions/"+sid, "alice", &summary); st != http.StatusOK || len(summary.Pending) != 0 {
				t.Fatalf("after the decision: %d %+v", st, summary)
			}
		})
	}
	srv.stop(t)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// lastAssistant returns the last assistant message of msgs.
func lastAssistant(msgs []protocol.Message) protocol.Message {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == protocol.RoleAssistant {
			return msgs[i]
		}
	}
	return protocol.Message{}
}

// decide posts a decision turn and returns its stream.
func decide(t *testing.T, url, sessionID, turnID, token, decision string) []*protocol.Event {
	t.Helper()
	body, err := json.Marshal(map[string]any{
		"protocol": protocol.TurnProtocol, "version": protocol.TurnVersion,
		"eventId": "ev-" + turnID, "sessionId": sessionID, "turnId": turnID,
		"sequence": 0, "emittedAt": "2026-11-29T12:00:00.000Z", "event": protocol.EventSubmit,
		"payload": map[string]any{"input": decision, "confirmation": map[string]string{"token": token, "decision": decision}},
	})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer dev.alice")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("decision: status %d", resp.StatusCode)
	}
	var evs []*protocol.Event
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		ev, d := protocol.DecodeTurnEvent(sc.Bytes())
		if d != nil {
			t.Fatalf("line %s: %+v", sc.Bytes(), d)
		}
		evs = append(evs, ev)
	}
	return evs
}
