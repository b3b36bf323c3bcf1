package main

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/dynalite"
	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

func TestMain(m *testing.M) { dynalite.Main(m) }

// TestNewHandler wires a hand-built Config (dev auth with the default
// trusted subject "host", a dynalite table) and records artifact
// references on a turn written through the DynamoDB store.
func TestNewHandler(t *testing.T) {
	opts := dynalite.Options(t)
	client, err := dynamo.NewClient(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	table := dynalite.Table(t, client)
	env := map[string]string{"AUTH_MODE": "dev", "TABLE_NAME": table, "DYNAMODB_ENDPOINT": opts.Endpoint, "AWS_REGION": opts.Region}
	cfg, err := config.FromLookup(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	h, err := newHandler(t.Context(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}

	store := dynamo.New(client, dynamo.Options{Table: table, CursorKey: []byte("0123456789abcdef")})
	alice := chat.Principal{Subject: "alice", Tenant: auth.DevTenant}
	c, err := store.ClaimTurn(t.Context(), chat.ClaimRequest{
		SessionID: "s1", TurnID: "t1", Principal: alice, InputHash: chat.HashInput("hi"),
		Lineage: protocol.Lineage{Operation: protocol.OperationSubmit}, DefinitionID: "default",
		DefinitionRevision: 1, LeaseDuration: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := store.SaveTurn(t.Context(), c, &chat.Turn{
		SessionID: "s1", TurnID: "t1", Ordinal: c.Lease.Ordinal, Status: chat.TurnComplete,
		Lineage: c.Lease.Lineage, InputHash: c.Lease.InputHash, StartedAt: now, CompletedAt: now,
	}); err != nil {
		t.Fatal(err)
	}

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
