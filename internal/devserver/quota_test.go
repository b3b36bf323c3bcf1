package devserver_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/devserver"
	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/sessionapi"
	"github.com/turnstream/turnstream/pkg/store/memory"
	"github.com/turnstream/turnstream/pkg/store/storetest"
	"github.com/turnstream/turnstream/pkg/turn"
)

// quotaDefinitions is a definitions file whose default definition allows 3
// turns per minute per principal.
const quotaDefinitions = `[{"id": "default", "revision": 1, "provider": "echo",
  "quotas": {"principal": {"turnsPerMinute": 3}}}]`

// TestTurnsPerMinuteOnTheDevServer is docs/quotas.md's walk-through on the
// dev server's wiring, with the definitions file above and a clock the
// test moves: the 4th submit within the minute gets 429 with Retry-After
// and QUOTA_EXCEEDED; GET /history/usage shows 3 turns and their tokens,
// and the quota used up; after the window the next submit runs.
func TestTurnsPerMinuteOnTheDevServer(t *testing.T) {
	cfg, err := config.FromLookup(func(k string) (string, bool) {
		v, ok := map[string]string{"DEFINITIONS_FILE": "quotas.json", "ECHO_DELAY": "0"}[k]
		return v, ok
	})
	if err != nil {
		t.Fatal(err)
	}
	// Noon UTC today: the test moves the clock a minute or more, and the
	// ledger's day must not turn over under it (run 4 of a make test loop
	// started at 23:59:50 UTC and counted its third turn in the next day).
	clock := storetest.NewClock(time.Now().UTC().Truncate(24 * time.Hour).Add(12 * time.Hour))
	authn, err := auth.New(t.Context(), cfg.Auth)
	if err != nil {
		t.Fatal(err)
	}
	store := memory.New(memory.Options{Now: clock.Now, CursorKey: cfg.CursorSecret, Ledger: chat.LedgerOptions{Enabled: cfg.Usage.Ledger}})
	h, err := devserver.NewHandler(devserver.Options{Config: cfg, Store: store, Authenticator: authn, Now: clock.Now,
		ReadFile: func(string) ([]byte, error) { return []byte(quotaDefinitions), nil },
		Turn:     func(o *turn.Options) { o.Clock = clock }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	submit := func(turnID string) *http.Response {
		t.Helper()
		body := `{"protocol":"agentskit.chat.turn","version":1,"eventId":"e1","sessionId":"q-` + turnID + `","turnId":"` + turnID +
			`","sequence":0,"emittedAt":"2026-12-01T12:00:00.000Z","event":"client.turn.submit","payload":{"input":"hello quota"}}`
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/turn/", bytes.NewReader([]byte(body)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", auth.DevAuthorization("alice"))
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	usage := func() sessionapi.UsageReport {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/history/usage?period=day", nil)
		req.Header.Set("Authorization", auth.DevAuthorization("alice"))
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		var r sessionapi.UsageReport
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /history/usage: %d %v", resp.StatusCode, err)
		}
		return r
	}
	for _, id := range []string{"t1", "t2", "t3"} {
		resp := submit(id)
		raw, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !bytes.Contains(raw, []byte(`"status":"complete"`)) {
			t.Fatalf("turn %s: %d %s", id, resp.StatusCode, raw)
		}
		clock.Advance(5 * time.Second)
	}
	resp := submit("t4")
	raw, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	wantBody := string(protocol.EncodeErrorBody(protocol.NewDiagnostic(protocol.CodeQuotaExceeded)))
	retry, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if resp.StatusCode != http.StatusTooManyRequests || string(raw) != wantBody || err != nil || retry != 45 {
		t.Fatalf("4th submit: %d %s, Retry-After %q; want 429 %s, Retry-After 45", resp.StatusCode, raw, resp.Header.Get("Retry-After"), wantBody)
	}
	u := usage()
	if u.Usage.Turns != 3 || u.Usage.InputTokens == 0 || u.Usage.OutputTokens == 0 {
		t.Errorf("usage %+v, want 3 turns and their tokens", u.Usage)
	}
	if len(u.Limits) != 1 || u.Limits[0].Name != chat.QuotaTurnsPerMinute || *u.Limits[0].Used != 3 || *u.Limits[0].Remaining != 0 {
		t.Errorf("limits %+v, want turnsPerMinute 3 used, none left", u.Limits)
	}
	clock.Advance(45 * time.Second)
	resp = submit("t4")
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("after the window: %d", resp.StatusCode)
	}
	if u := usage(); u.Usage.Turns != 4 {
		t.Errorf("after the window: %d turns, want 4", u.Usage.Turns)
	}
}
