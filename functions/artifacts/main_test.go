package main

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/functions/internal/startup/startuptest"
	"github.com/turnstream/turnstream/internal/dynalite"
	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/chat"
)

func TestMain(m *testing.M) { dynalite.Main(m) }

// TestNewHandler wires a Config parsed from the environment (dev auth
// with the default trusted subject "host", a dynalite table) and records
// artifact references on a turn written through the DynamoDB store.
func TestNewHandler(t *testing.T) {
	cfg, store := startuptest.Config(t, nil)
	h, err := newHandler(t.Context(), cfg, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	startuptest.SeedTurn(t, store, "s1", "t1", chat.Principal{Subject: "alice", Tenant: auth.DevTenant})

	body := `{"artifacts":[{"entryPath":"out/report.html","artifactType":"webpage"}]}`
	cases := []struct {
		method, subject, body string
		status                int
	}{
		{http.MethodPut, "alice", body, http.StatusForbidden},
		{http.MethodPut, "host", body, http.StatusOK},
		{http.MethodGet, "alice", "", http.StatusOK},
	}
	for _, tc := range cases {
		r := httptest.NewRequest(tc.method, "/sessions/s1/turns/t1/artifacts", strings.NewReader(tc.body))
		r.Header.Set("Authorization", auth.DevAuthorization(tc.subject))
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tc.status || (tc.status == http.StatusOK && w.Body.String() != body) {
			t.Errorf("%s as %s: %d %s, want %d", tc.method, tc.subject, w.Code, w.Body, tc.status)
		}
	}
}
