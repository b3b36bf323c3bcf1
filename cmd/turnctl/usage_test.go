package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/model/echo"
	"github.com/turnstream/turnstream/pkg/sessionapi"
	"github.com/turnstream/turnstream/pkg/store/memory"
	"github.com/turnstream/turnstream/pkg/turn"
)

// ledgerServers serves the turn and history handlers with the usage
// ledger on and quotas q, over one in-memory store, with dev auth
// ("host" trusted).
func ledgerServers(t *testing.T, q chat.Quotas) (turnURL, historyURL string) {
	t.Helper()
	store := memory.New(memory.Options{Ledger: chat.LedgerOptions{Enabled: true}})
	authn, err := auth.New(context.Background(), config.AuthConfig{Mode: config.AuthDev, TrustedSubject: "host"},
		auth.WithLookupEnv(func(string) (string, bool) { return "", false }))
	if err != nil {
		t.Fatal(err)
	}
	th, err := turn.NewHandler(turn.Options{
		Config: turn.Config{
			Store:      store,
			Model:      echo.New(0, 3),
			Ledger:     true,
			Definition: turn.Definition{ID: "default", Revision: 1, Quotas: q},
		},
		Authenticator: authn,
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(th)
	t.Cleanup(ts.Close)
	hh, err := sessionapi.NewHistoryHandler(sessionapi.Options{Store: store, Authenticator: authn, Usage: &sessionapi.UsageOptions{Quotas: q}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(hh)
	t.Cleanup(hs.Close)
	return ts.URL + "/", hs.URL + "/"
}

// TestUsageCommand: turnctl usage prints the caller's counters and its
// quotas, -json the server's report, -tenant the tenant's principals for
// the trusted principal only; a quota refusal in chat says when to retry.
func TestUsageCommand(t *testing.T) {
	q := chat.Quotas{Principal: chat.QuotaLimits{TurnsPerMinute: 2, TokensPerDay: 10_000}}
	turnURL, historyURL := ledgerServers(t, q)
	for _, user := range []string{"alice", "alice", "bob"} {
		if code, _, errOut := runTurnctl([]string{"chat", "-url", turnURL, "-session", "s-" + user, "-token", "dev." + user, "hello"}, ""); code != 0 {
			t.Fatalf("chat as %s: %d %s", user, code, errOut)
		}
	}
	code, _, errOut := runTurnctl([]string{"chat", "-url", turnURL, "-session", "s-alice", "-token", "dev.alice", "a third"}, "")
	if code != 1 || !strings.Contains(errOut, "HTTP 429: QUOTA_EXCEEDED") || !strings.Contains(errOut, "retry in") {
		t.Errorf("third turn in a minute: exit %d, stderr %q; want 429 QUOTA_EXCEEDED and when to retry", code, errOut)
	}

	code, out, errOut := runTurnctl([]string{"usage", "-url", historyURL, "-token", "dev.alice"}, "")
	if code != 0 {
		t.Fatalf("usage: exit %d, %s", code, errOut)
	}
	for _, want := range []string{"alice day (", "  turns 2; tokens ", "  limit principal.turnsPerMinute: 2, 2 used, 0 left, resets ", "  limit principal.tokensPerDay: 10000, "} {
		if !strings.Contains(out, want) {
			t.Errorf("usage output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runTurnctl([]string{"usage", "-url", historyURL, "-token", "dev.alice", "-period", "month", "-json"}, "")
	var r struct {
		Period string
		Usage  struct{ Turns int }
	}
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || r.Period != "month" || r.Usage.Turns != 2 {
		t.Errorf("usage -json: exit %d, %s", code, out)
	}
	code, out, errOut = runTurnctl([]string{"usage", "-url", historyURL, "-token", "dev.host", "-tenant"}, "")
	if code != 0 || !strings.Contains(out, "tenant dev day") || !strings.Contains(out, "  turns 3;") ||
		!strings.Contains(out, "\nalice ") || !strings.Contains(out, "\nbob ") {
		t.Errorf("usage -tenant as host: exit %d %s\n%s", code, errOut, out)
	}
	if code, _, errOut := runTurnctl([]string{"usage", "-url", historyURL, "-token", "dev.alice", "-tenant"}, ""); code != 1 || !strings.Contains(errOut, "HTTP 403: REQUEST_FORBIDDEN") {
		t.Errorf("usage -tenant as alice: exit %d %s", code, errOut)
	}
	if code, _, _ := runTurnctl([]string{"usage", "-period", "week"}, ""); code != 2 {
		t.Errorf("bad period: exit %d, want 2", code)
	}
}
