package main

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/functions/internal/startup/startuptest"
	"github.com/turnstream/turnstream/internal/dynalite"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/definition"
	"github.com/turnstream/turnstream/pkg/protocol"
)

func TestMain(m *testing.M) { dynalite.Main(m) }

// TestWiring builds the handler from an environment naming a dynalite
// table and the demo tool, and runs an echo turn and a /note turn (a
// tool round trip) through it.
func TestWiring(t *testing.T) {
	cfg, _ := startuptest.Config(t, map[string]string{
		"MODEL_PROVIDER": "echo",
		"MODEL_TOOLS":    "workspace_note",
		"ECHO_DELAY":     "0s",
	})
	_, h, err := newHandler(context.Background(), cfg, slog.New(slog.DiscardHandler), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	if last := submit(t, srv.URL, "t1", "ping"); last.Snapshot.Messages[1].Content != "Echo: ping" {
		t.Fatalf("last line %+v", last)
	}
	last := submit(t, srv.URL, "t2", "/note Trip: Pack light.")
	msgs := last.Snapshot.Messages
	asst := msgs[len(msgs)-1]
	if asst.Content != "Echo: /note Trip: Pack light." || len(asst.ToolCalls) != 1 || asst.ToolCalls[0].Status != protocol.ToolCallComplete {
		t.Fatalf("note turn %+v", asst)
	}
	// The function URL serves the session's export too (streamed on
	// Lambda), to its owner only.
	for as, want := range map[string]int{"": http.StatusOK, "Bearer dev.mallory": http.StatusNotFound} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/sessions/wiring/export", nil)
		if as != "" {
			req.Header.Set("Authorization", as)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != want || want == http.StatusOK && (!strings.Contains(string(b), "Pack light.") || !strings.HasSuffix(string(b), `"complete":true}`)) {
			t.Errorf("export as %q: %d %.300s", as, resp.StatusCode, b)
		}
	}
}

// submit posts one turn of session "wiring" and returns its last line,
// failing unless it is a complete snapshot.
func submit(t *testing.T, base, turnID, input string) *protocol.Event {
	t.Helper()
	body, err := protocol.EncodeEvent(&protocol.Event{
		EventID: "e1", SessionID: "wiring", TurnID: turnID, EmittedAt: "2026-07-11T03:00:00.000Z",
		Kind: protocol.EventSubmit, Submit: &protocol.SubmitPayload{Input: input},
	})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(base+"/", "application/json", strings.NewReader(string(body)))
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
	if last == nil || last.Snapshot == nil || last.Snapshot.Status != protocol.StatusComplete {
		t.Fatalf("last line %+v", last)
	}
	return last
}

// TestModels: one provider per provider name the definitions use; a
// provider not built into this bootstrap (openai without the build tag
// provider.openai) is an error that says how to build it in.
func TestModels(t *testing.T) {
	_, openAIBuiltIn := providers[config.ProviderOpenAI]
	tests := map[string]struct {
		defs    []definition.Definition
		want    []string
		wantErr string // "": no error
	}{
		"echo only": {[]definition.Definition{{ID: "a", Revision: 1, Provider: config.ProviderEcho, Limits: definition.Limits{MaxSteps: 1}}}, []string{config.ProviderEcho}, ""},
		"all three": {[]definition.Definition{
			{ID: "a", Revision: 1, Provider: config.ProviderOpenAI, ModelID: "gpt", Limits: definition.Limits{MaxSteps: 1}},
			{ID: "b", Revision: 1, Provider: config.ProviderBedrock, ModelID: "claude", Limits: definition.Limits{MaxSteps: 1}},
			{ID: "c", Revision: 1, Provider: config.ProviderOpenAI, ModelID: "gpt-2", Limits: definition.Limits{MaxSteps: 1}},
			{ID: "d", Revision: 1, Provider: config.ProviderEcho, Limits: definition.Limits{MaxSteps: 1}},
		}, []string{config.ProviderBedrock, config.ProviderEcho, config.ProviderOpenAI}, ""},
		"bedrock and echo": {[]definition.Definition{
			{ID: "a", Revision: 1, Provider: config.ProviderBedrock, ModelID: "claude", Limits: definition.Limits{MaxSteps: 1}},
			{ID: "b", Revision: 1, Provider: config.ProviderEcho, Limits: definition.Limits{MaxSteps: 1}},
		}, []string{config.ProviderBedrock, config.ProviderEcho}, ""},
	}
	if !openAIBuiltIn {
		tc := tests["all three"]
		tc.want, tc.wantErr = nil, `MODEL_PROVIDER: "openai" is not built into this turn bootstrap: build it with `+"`make build TURN_PROVIDERS=openai`"
		tests["all three"] = tc
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			defs, err := definition.New(tc.defs, "a", nil)
			if err != nil {
				t.Fatal(err)
			}
			cfg := config.Config{Region: "eu-west-1"}
			models, err := newModels(context.Background(), cfg, defs)
			if tc.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Fatalf("newModels: %v, want an error starting %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for name, m := range models {
				if m == nil {
					t.Fatalf("nil %s provider", name)
				}
				got = append(got, name)
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("providers %v, want %v", got, tc.want)
			}
		})
	}
}
