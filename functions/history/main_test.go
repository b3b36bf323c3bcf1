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

// TestNewHandler wires a hand-built Config (dev auth, a dynalite table) and
// reads back a turn written through the DynamoDB store.
func TestNewHandler(t *testing.T) {
	opts := dynalite.Options(t)
	client, err := dynamo.NewClient(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	table := dynalite.Table(t, client)
	secret := "0123456789abcdef0123456789abcdef"
	env := map[string]string{
		"AUTH_MODE": "dev", "TABLE_NAME": table, "DYNAMODB_ENDPOINT": opts.Endpoint,
		"AWS_REGION": opts.Region, "CURSOR_SECRET": secret,
	}
	cfg, err := config.FromLookup(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	h, err := newHandler(t.Context(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}

	store := dynamo.New(client, dynamo.Options{Table: table, CursorKey: []byte(secret)})
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
	err = store.SaveTurn(t.Context(), c, &chat.Turn{
		SessionID: "s1", TurnID: "t1", Ordinal: c.Lease.Ordinal, Status: chat.TurnComplete,
		Lineage: c.Lease.Lineage, InputHash: c.Lease.InputHash, StartedAt: now, CompletedAt: now,
		Messages: []protocol.Message{{ID: "t1.u", Role: protocol.RoleUser, Content: "hi", Status: protocol.MessageComplete, CreatedAt: protocol.FormatTime(now)}},
	})
	if err != nil {
		t.Fatal(err)
	}

	for target, want := range map[string]string{
		"/sessions/s1/turns":   `"turnId":"t1"`,
		"/sessions/s1":         `"currentTurn":{"turnId":"t1","status":"running"`,
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
