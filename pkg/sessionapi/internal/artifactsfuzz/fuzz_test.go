// Package artifactsfuzz fuzzes the artifacts handler of pkg/sessionapi on
// the memory store. It is a package of its own so that its fuzz binary
// links no DynamoDB SDK (pkg/sessionapi's own tests also run on dynalite),
// which fuzz instrumentation would otherwise compile once more.
package artifactsfuzz

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/sessionapi"
	"github.com/turnstream/turnstream/pkg/store/memory"
)

const artifactsPath = "/sessions/s1/turns/t1/artifacts"

var (
	alice = chat.Principal{Subject: "alice", Tenant: auth.DevTenant}
	host  = chat.Principal{Subject: "host", Tenant: auth.DevTenant, Trusted: true}
)

// fixture is the artifacts handler on a memory store holding turn t1 of
// session s1, owned by alice; host is the trusted artifacts writer.
type fixture struct {
	t         *testing.T
	artifacts http.Handler
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := t.Context()
	store := memory.New(memory.Options{CursorKey: []byte("artifactsfuzz-cursor-key-0123456")})
	c, err := store.ClaimTurn(ctx, chat.ClaimRequest{SessionID: "s1", TurnID: "t1", Principal: alice,
		InputHash: chat.HashInput("question"), Lineage: protocol.Lineage{Operation: protocol.OperationSubmit},
		DefinitionID: "assistant", DefinitionRevision: 1, LeaseDuration: 30 * time.Second})
	if err != nil {
		t.Fatalf("ClaimTurn: %v", err)
	}
	now := time.Now().UTC()
	at := protocol.FormatTime(now)
	turn := &chat.Turn{SessionID: "s1", TurnID: "t1", Ordinal: c.Lease.Ordinal, Status: chat.TurnComplete,
		Lineage: c.Lease.Lineage, InputHash: c.Lease.InputHash,
		Messages: []protocol.Message{
			{ID: "t1-user", Role: protocol.RoleUser, Content: "question", Status: protocol.MessageComplete, CreatedAt: at},
			{ID: "t1-assistant", Role: protocol.RoleAssistant, Content: "answer", Status: protocol.MessageComplete, CreatedAt: at},
		},
		FirstSequence: c.BaseSequence + 1, LastSequence: c.BaseSequence + 2, StartedAt: now, CompletedAt: now}
	if err := store.SaveTurn(ctx, c, turn); err != nil {
		t.Fatalf("SaveTurn: %v", err)
	}
	if _, err := store.ReleaseTurn(ctx, chat.ReleaseRequest{Claim: c, Outcome: chat.OutcomeCompleted, Sequence: turn.LastSequence}); err != nil {
		t.Fatalf("ReleaseTurn: %v", err)
	}
	authn, err := auth.New(context.Background(), auth.Config{Mode: auth.ModeDev, TrustedSubject: host.Subject},
		auth.WithLookupEnv(func(string) (string, bool) { return "", false }))
	if err != nil {
		t.Fatalf("auth.New: %v", err)
	}
	h, err := sessionapi.NewArtifactsHandler(sessionapi.Options{Store: store, Authenticator: authn, MaxBodyBytes: 4096})
	if err != nil {
		t.Fatalf("NewArtifactsHandler: %v", err)
	}
	return &fixture{t: t, artifacts: h}
}

// response is a recorded HTTP response.
type response struct {
	status int
	body   []byte
}

func (f *fixture) do(method string, as chat.Principal, body string) response {
	f.t.Helper()
	var rd io.Reader
	if body != "" || method == http.MethodPut {
		rd = strings.NewReader(body)
	}
	r := httptest.NewRequestWithContext(f.t.Context(), method, artifactsPath, rd)
	r.Header.Set("Authorization", auth.DevAuthorization(as.Subject))
	if method == http.MethodPut {
		r.Header.Set("Content-Type", "application/json")
	}
	w := httptest.NewRecorder()
	f.artifacts.ServeHTTP(w, r)
	return response{status: w.Code, body: w.Body.Bytes()}
}

// FuzzPutArtifacts sends arbitrary PUT bodies as the trusted host and
// checks the handler's invariants: the answer is 200 with exactly the
// validated, deduplicated references (and they are stored), or a 400/413
// JSON error with the collection unchanged; never a 5xx.
func FuzzPutArtifacts(f *testing.F) {
	for _, seed := range []string{
		`{"artifacts":[]}`,
		`{"artifacts":[{"entryPath":"a/b.html","artifactType":"webpage"},{"entryPath":"a/b.html","artifactType":"document"}]}`,
		`{"artifacts":[{"id":"legacy"}]}`,
		`{"artifacts":null}`,
		`{"artifacts":[{"entryPath":"../x","artifactType":"image"}]}`,
		`{"artifacts":[{"entryPath":"x","artifactType":"image","entryPath":"y"}]}`,
		`{"artifacts":[{"entryPath":"\ud800","artifactType":"image"}]}`,
		`[]`, ``, `{`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		fx := newFixture(t)
		const stored = `{"artifacts":[{"entryPath":"keep.html","artifactType":"webpage"}]}`
		if resp := fx.do(http.MethodPut, host, stored); resp.status != http.StatusOK {
			t.Fatalf("seed: %d %s", resp.status, resp.body)
		}
		resp := fx.do(http.MethodPut, host, body)
		after := fx.do(http.MethodGet, alice, "")
		switch resp.status {
		case http.StatusOK:
			var got sessionapi.ArtifactList
			if err := json.Unmarshal(resp.body, &got); err != nil {
				t.Fatalf("decode PUT answer %s: %v", resp.body, err)
			}
			if err := chat.ValidateArtifacts(got.Artifacts); err != nil {
				t.Fatalf("stored invalid references %s: %v", resp.body, err)
			}
			if len(chat.DedupeArtifacts(got.Artifacts)) != len(got.Artifacts) {
				t.Fatalf("stored duplicates: %s", resp.body)
			}
			if string(after.body) != string(resp.body) {
				t.Fatalf("GET %s after PUT answered %s", after.body, resp.body)
			}
		case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
			var e struct {
				Error protocol.Diagnostic `json:"error"`
			}
			if err := json.Unmarshal(resp.body, &e); err != nil || e.Error.Code == "" {
				t.Fatalf("error body %s", resp.body)
			}
			if string(after.body) != stored {
				t.Fatalf("rejected PUT changed the collection to %s", after.body)
			}
		default:
			t.Fatalf("status %d: %s", resp.status, resp.body)
		}
	})
}
