package main

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/internal/dynalite"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

func TestMain(m *testing.M) { dynalite.Main(m) }

// TestWiring builds the handler from an environment naming a dynalite
// table and runs one echo turn through it.
func TestWiring(t *testing.T) {
	client, err := dynamo.NewClient(context.Background(), dynalite.Options(t))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"DYNAMODB_ENDPOINT": dynalite.Endpoint(t),
		"TABLE_NAME":        dynalite.Table(t, client),
		"AUTH_MODE":         "dev",
		"MODEL_PROVIDER":    "echo",
		"ECHO_DELAY":        "0s",
	}
	cfg, err := config.FromLookup(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	h, err := newHandler(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	body, err := protocol.EncodeEvent(&protocol.Event{
		EventID: "e1", SessionID: "wiring", TurnID: "t1", EmittedAt: "2026-07-11T03:00:00.000Z",
		Kind: protocol.EventSubmit, Submit: &protocol.SubmitPayload{Input: "ping"},
	})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(srv.URL+"/", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, raw)
	}
	var last *protocol.Event
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		ev, d := protocol.DecodeTurnEvent(sc.Bytes())
		if d != nil {
			t.Fatalf("line %s: %+v", sc.Bytes(), *d)
		}
		last = ev
	}
	if last == nil || last.Snapshot == nil || last.Snapshot.Status != protocol.StatusComplete ||
		last.Snapshot.Messages[1].Content != "Echo: ping" {
		t.Fatalf("last line %+v", last)
	}
}

func TestUnwiredProvider(t *testing.T) {
	if _, err := newModel(config.ModelConfig{Provider: config.ProviderBedrock}); err == nil {
		t.Fatal("an unwired provider started")
	}
}
