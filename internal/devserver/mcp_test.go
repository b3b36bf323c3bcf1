package devserver_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/internal/devserver"
	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/store/memory"
)

// TestMCPDemoOnTheDevServer is docs/walkthrough.md's MCP section on the
// dev server's wiring: a definitions file naming the dev server's own
// demo MCP server (/mcp-demo), and "/tool demo__add {...}" runs the
// server's add tool in a turn.
func TestMCPDemoOnTheDevServer(t *testing.T) {
	srv := httptest.NewUnstartedServer(nil)
	defs := `[{"id": "default", "revision": 1, "provider": "echo",
  "mcpServers": [{"name": "demo", "url": "` + "http://" + srv.Listener.Addr().String() + devserver.MCPDemoMount + `", "requireApproval": "never"}]}]`
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
