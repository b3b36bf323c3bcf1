package devserver_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/internal/devserver"
	"github.com/turnstream/turnstream/internal/mcptest"
	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/store/memory"
)

// definitionsHandler is the dev server's handler with the definitions
// file defs, the echo model undelayed and the in-memory store.
func definitionsHandler(t *testing.T, defs string) http.Handler {
	t.Helper()
	cfg, err := config.FromLookup(func(k string) (string, bool) {
		v, ok := map[string]string{"DEFINITIONS_FILE": "mcp.json", "ECHO_DELAY": "0"}[k]
		return v, ok
	})
	if err != nil {
		t.Fatal(err)
	}
	authn, err := auth.New(t.Context(), cfg.Auth)
	if err != nil {
		t.Fatal(err)
	}
	h, err := devserver.NewHandler(devserver.Options{Config: cfg, Store: memory.New(memory.Options{CursorKey: cfg.CursorSecret}), Authenticator: authn,
		ReadFile: func(string) ([]byte, error) { return []byte(defs), nil }})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestMCPDemoOnTheDevServer is docs/walkthrough.md's MCP section on the
// dev server's wiring: a definitions file naming the dev server's own
// demo MCP server (/mcp-demo), and "/tool demo__add {...}" runs the
// server's add tool in a turn.
func TestMCPDemoOnTheDevServer(t *testing.T) {
	srv := httptest.NewUnstartedServer(nil)
	defs := `[{"id": "default", "revision": 1, "provider": "echo",
  "mcpServers": [{"name": "demo", "url": "` + "http://" + srv.Listener.Addr().String() + devserver.MCPDemoMount + `", "requireApproval": "never"}]}]`
	h := definitionsHandler(t, defs)
	srv.Config.Handler = h
	srv.Start()
	defer srv.Close()
	body := `{"protocol":"agentskit.chat.turn","version":1,"eventId":"e1","sessionId":"mcp","turnId":"t1",` +
		`"sequence":0,"emittedAt":"2026-12-01T12:00:00.000Z","event":"client.turn.submit","payload":{"input":"/tool demo__add {\"a\": 2, \"b\": 3}"}}`
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/turn/", bytes.NewReader([]byte(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", auth.DevAuthorization("alice"))
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	last := lines[len(lines)-1]
	if resp.StatusCode != http.StatusOK || !strings.Contains(last, `"status":"complete"`) ||
		!strings.Contains(last, `{"id":"echo-tool-1","name":"demo__add","args":{"a":2,"b":3},"status":"complete","result":"5"}`) {
		t.Fatalf("%d, last line %s", resp.StatusCode, last)
	}
}

// TestTypeScriptMCPServerOnTheDevServer: a definition naming an MCP
// server built with another SDK (the official TypeScript one,
// mcptest.StartTypeScript) works end to end on the dev server: a call's
// result reaches the answer and history; a tool that requireApproval
// names waits, runs once when approved (a replayed decision runs
// nothing), never when denied.
func TestTypeScriptMCPServerOnTheDevServer(t *testing.T) {
	ts := mcptest.StartTypeScript(t)
	defs := `[{"id": "default", "revision": 1, "provider": "echo",
  "mcpServers": [{"name": "ts", "url": "` + ts.URL + `", "requireApproval": ["remove"]}]}]`
	h := definitionsHandler(t, defs)
	srv := httptest.NewServer(h)
	defer srv.Close()
	// last posts a submit (a decision when token is set) and returns the
	// stream's last line.
	last := func(turnID, input, token, decision string) string {
		t.Helper()
		payload := map[string]any{"input": input}
		if token != "" {
			payload["confirmation"] = map[string]string{"token": token, "decision": decision}
		}
		body, _ := json.Marshal(map[string]any{"protocol": "agentskit.chat.turn", "version": 1, "eventId": "e-" + turnID, "sessionId": "ts",
			"turnId": turnID, "sequence": 0, "emittedAt": "2026-12-05T12:00:00.000Z", "event": "client.turn.submit", "payload": payload})
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/turn/", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", auth.DevAuthorization("alice"))
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		raw, _ := io.ReadAll(resp.Body)
		lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
		return lines[len(lines)-1]
	}
	if l := last("t1", `/tool ts__add {"a": 20, "b": 22}`, "", ""); !strings.Contains(l, `"name":"ts__add","args":{"a":20,"b":22},"status":"complete","result":"42"`) {
		t.Fatalf("add: %s", l)
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/history/sessions/ts/turns", nil)
	req.Header.Set("Authorization", auth.DevAuthorization("alice"))
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	hist, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if !strings.Contains(string(hist), `"result":"42"`) {
		t.Fatalf("history: %s", hist)
	}
	token := func(turnID string) string {
		t.Helper()
		l := last(turnID, `/tool ts__remove {"title": "Trip"}`, "", "")
		i := strings.Index(l, `"pendingConfirmations":[{"token":"`)
		if i < 0 || !strings.Contains(l, `"name":"ts__remove","args":{"title":"Trip"},"status":"requires_confirmation"`) {
			t.Fatalf("remove did not wait: %s", l)
		}
		rest := l[i+len(`"pendingConfirmations":[{"token":"`):]
		return rest[:strings.IndexByte(rest, '"')]
	}
	tok := token("t2")
	if n := ts.Calls(t, "remove"); n != 0 {
		t.Fatalf("remove ran %d times before its approval", n)
	}
	if l := last("t3", "approve", tok, "approve"); !strings.Contains(l, `"status":"complete","result":"Removed Trip."`) {
		t.Fatalf("approved: %s", l)
	}
	last("t3", "approve", tok, "approve") // the decision replayed
	last("t4", "approve", tok, "approve") // repeated
	if n := ts.Calls(t, "remove"); n != 1 {
		t.Fatalf("remove ran %d times, want 1", n)
	}
	tok = token("t5")
	last("t6", "deny", tok, "deny")
	if n := ts.Calls(t, "remove"); n != 1 {
		t.Fatalf("a denial ran remove (%d runs)", n)
	}
}
