package main

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/functions/internal/startup/startuptest"
	"github.com/turnstream/turnstream/internal/dynalite"
	"github.com/turnstream/turnstream/internal/lambdabin"
	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
)

func TestMain(m *testing.M) { dynalite.Main(m) }

// TestNewHandler wires a Config parsed from the environment (dev auth, a
// dynalite table) and reads back a turn written through the DynamoDB
// store.
func TestNewHandler(t *testing.T) {
	cfg, store := startuptest.Config(t, map[string]string{"CURSOR_SECRET": "0123456789abcdef0123456789abcdef"})
	h, err := newHandler(t.Context(), cfg, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	alice := chat.Principal{Subject: "alice", Tenant: auth.DevTenant}
	startuptest.SeedTurn(t, store, "s1", "t1", alice, protocol.Message{
		ID: "t1.u", Role: protocol.RoleUser, Content: "hi", Status: protocol.MessageComplete,
		CreatedAt: protocol.FormatTime(time.Now()),
	})

	for target, want := range map[string]string{
		"/sessions/s1/turns":   `"turnId":"t1"`,
		"/sessions/s1":         `"currentTurn":null`, // saved: no current turn, whether released or not
		"/sessions/nope/turns": `"code":"SESSION_NOT_FOUND"`,
	} {
		r := httptest.NewRequest(http.MethodGet, target, nil)
		r.Header.Set("Authorization", auth.DevAuthorization("alice"))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if !strings.Contains(w.Body.String(), want) {
			t.Errorf("GET %s: %d %s, want it to contain %s", target, w.Code, w.Body, want)
		}
	}
}

// TestServesThePage: with CHAT_PAGE=on the history function serves the
// chat page and its sign-in settings beside its routes; off, it does not.
func TestServesThePage(t *testing.T) {
	for _, on := range []bool{true, false} {
		env := map[string]string{"CURSOR_SECRET": "0123456789abcdef0123456789abcdef"}
		if on {
			env["CHAT_PAGE"] = "on"
		}
		cfg, _ := startuptest.Config(t, env)
		h, err := newHandler(t.Context(), cfg, slog.New(slog.DiscardHandler), nil)
		if err != nil {
			t.Fatal(err)
		}
		for target, want := range map[string]string{"/": "<!doctype html>", "/config.json": `{"signIn":"dev"}`} {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, target, nil))
			if got := w.Code == http.StatusOK && strings.HasPrefix(w.Body.String(), want); got != on {
				t.Errorf("CHAT_PAGE on=%v: GET %s answered %d %.40q", on, target, w.Code, w.Body)
			}
		}
		r := httptest.NewRequest(http.MethodGet, "/sessions/nope/turns", nil)
		r.Header.Set("Authorization", auth.DevAuthorization("alice"))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if !strings.Contains(w.Body.String(), `"code":"SESSION_NOT_FOUND"`) {
			t.Errorf("CHAT_PAGE on=%v: the history routes answer %d %s", on, w.Code, w.Body)
		}
	}
}

// TestNoJSONSchemaLinked: the history and artifacts bootstraps link no
// JSON Schema library; only the turn function, whose tools and component
// manifests use one (pkg/tool), does.
func TestNoJSONSchemaLinked(t *testing.T) {
	out, err := exec.Command(lambdabin.GoTool(), "list", "-deps", ".", "../artifacts").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v: %s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.Contains(pkg, "jsonschema") {
			t.Errorf("the history or artifacts bootstrap links %s", pkg)
		}
	}
}
