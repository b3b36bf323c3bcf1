package sessionapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/sessionapi"
	"github.com/turnstream/turnstream/pkg/store/memory"
	"github.com/turnstream/turnstream/pkg/store/storetest"
)

// Principals of the dev authenticator (docs/design.md#running-it):
// "Authorization: Bearer dev.<subject>", tenant auth.DevTenant; subject "host"
// is trusted.
var (
	alice   = chat.Principal{Subject: "alice", Tenant: auth.DevTenant}
	mallory = chat.Principal{Subject: "mallory", Tenant: auth.DevTenant}
	host    = chat.Principal{Subject: "host", Tenant: auth.DevTenant, Trusted: true}
)

// start is the fixtures' clock origin (millisecond-aligned).
var start = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

const leaseDuration = 30 * time.Second

// storeFactories are the stores every HTTP test runs against; dynamo joins
// when a DynamoDB API server is available (see dynamo_test.go).
var storeFactories = map[string]storetest.Factory{
	"memory": func(t *testing.T, clock *storetest.Clock, key []byte) chat.Store {
		return memory.New(memory.Options{Now: clock.Now, CursorKey: key})
	},
}

// forEachStore runs test once per store factory, as a named parallel
// subtest on a fresh fixture. It marks t itself parallel too: every
// fixture has its own store (and table), clock and log.
func forEachStore(t *testing.T, test func(t *testing.T, f *fixture)) {
	t.Helper()
	t.Parallel()
	for name, factory := range storeFactories {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, newFixture(t, factory))
		})
	}
}

// fixture is one test's store, clock, handlers and captured log.
type fixture struct {
	t         *testing.T
	ctx       context.Context
	clock     *storetest.Clock
	store     chat.Store
	history   http.Handler
	artifacts http.Handler
	logs      *bytes.Buffer
}

func newFixture(t *testing.T, factory storetest.Factory) *fixture {
	t.Helper()
	key := bytes.Repeat([]byte{7}, 32)
	clock := storetest.NewClock(start)
	store := factory(t, clock, key)
	logs := &bytes.Buffer{}
	opts := sessionapi.Options{
		Store:         store,
		Authenticator: devAuthenticator(t),
		Logger:        slog.New(slog.NewJSONHandler(logs, nil)),
		MaxBodyBytes:  4096,
		Now:           clock.Now,
	}
	history, artifacts := newHandlers(t, opts)
	return &fixture{
		t: t, ctx: t.Context(), clock: clock, store: store,
		history:   history,
		artifacts: artifacts,
		logs:      logs,
	}
}

// newHandlers returns the history and artifacts handlers of opts, failing
// tb at once when either constructor refuses them.
func newHandlers(tb testing.TB, opts sessionapi.Options) (history, artifacts http.Handler) {
	tb.Helper()
	history, err := sessionapi.NewHistoryHandler(opts)
	if err != nil {
		tb.Fatalf("NewHistoryHandler: %v", err)
	}
	artifacts, err = sessionapi.NewArtifactsHandler(opts)
	if err != nil {
		tb.Fatalf("NewArtifactsHandler: %v", err)
	}
	return history, artifacts
}

// devAuthenticator is pkg/auth in dev mode with "host" trusted
// (docs/design.md#running-it).
func devAuthenticator(tb testing.TB) auth.Authenticator {
	tb.Helper()
	authn, err := auth.New(context.Background(), config.AuthConfig{Mode: config.AuthDev, TrustedSubject: host.Subject},
		auth.WithLookupEnv(func(string) (string, bool) { return "", false }))
	if err != nil {
		tb.Fatalf("auth.New: %v", err)
	}
	return authn
}

// turnSpec describes a turn to run through the store.
type turnSpec struct {
	id        string
	status    chat.TurnStatus
	lineage   protocol.Lineage
	messages  func(id string, at string) []protocol.Message
	artifacts []chat.ArtifactReference
	// supersedeFrom marks turns [supersedeFrom, this turn) superseded
	// before saving (edit, retry, regenerate).
	supersedeFrom int64
}

// standardMessages is a user message and an assistant reply.
func standardMessages(id, at string) []protocol.Message {
	return []protocol.Message{
		{ID: id + "-user", Role: protocol.RoleUser, Content: "question " + id, Status: protocol.MessageComplete, CreatedAt: at},
		{ID: id + "-assistant", Role: protocol.RoleAssistant, Content: "answer " + id, Status: protocol.MessageComplete, CreatedAt: at},
	}
}

// claim claims spec's turn in sessionID for owner and fails the test on error.
func (f *fixture) claim(sessionID string, owner chat.Principal, spec turnSpec) *chat.Claim {
	f.t.Helper()
	lineage := spec.lineage
	if lineage.Operation == "" {
		lineage.Operation = protocol.OperationSubmit
	}
	c, err := f.store.ClaimTurn(f.ctx, chat.ClaimRequest{
		SessionID:          sessionID,
		TurnID:             spec.id,
		Principal:          owner,
		InputHash:          chat.HashInput("question " + spec.id),
		Lineage:            lineage,
		DefinitionID:       "assistant",
		DefinitionRevision: 1,
		LeaseDuration:      leaseDuration,
	})
	if err != nil {
		f.t.Fatalf("ClaimTurn(%s, %s): %v", sessionID, spec.id, err)
	}
	return c
}

// complete saves and releases a claimed turn; it returns the saved turn.
func (f *fixture) complete(sessionID string, c *chat.Claim, spec turnSpec) *chat.Turn {
	f.t.Helper()
	var siblings *chat.Siblings
	if spec.supersedeFrom > 0 {
		g, err := f.store.Supersede(f.ctx, c, spec.supersedeFrom, c.Lease.Ordinal)
		if err != nil {
			f.t.Fatalf("Supersede: %v", err)
		}
		siblings = g
	}
	now := f.clock.Now()
	msgs := standardMessages
	if spec.messages != nil {
		msgs = spec.messages
	}
	status := spec.status
	if status == "" {
		status = chat.TurnComplete
	}
	turn := &chat.Turn{
		SessionID:     sessionID,
		TurnID:        spec.id,
		Ordinal:       c.Lease.Ordinal,
		Status:        status,
		Lineage:       c.Lease.Lineage,
		InputHash:     c.Lease.InputHash,
		Messages:      msgs(spec.id, protocol.FormatTime(now)),
		Usage:         protocol.Usage{PromptTokens: 2, CompletionTokens: 3, TotalTokens: 5},
		Artifacts:     spec.artifacts,
		FirstSequence: c.BaseSequence + 1,
		LastSequence:  c.BaseSequence + 2,
		StartedAt:     now,
		CompletedAt:   now.Add(time.Second),
		Siblings:      siblings,
	}
	if status != chat.TurnComplete {
		d := protocol.NewDiagnostic(protocol.CodeChatTurnFailed)
		turn.Error = &d
	}
	if err := f.store.SaveTurn(f.ctx, c, turn); err != nil {
		f.t.Fatalf("SaveTurn(%s, %s): %v", sessionID, spec.id, err)
	}
	outcome := chat.OutcomeCompleted
	// Released with its listing, as the turn function releases a turn.
	listing := &chat.Listing{Status: status}
	for _, m := range turn.Messages {
		switch m.Role {
		case protocol.RoleUser:
			if listing.Title == "" {
				listing.Title = chat.AutoTitle(m.Content)
			}
		case protocol.RoleAssistant:
			listing.Preview = chat.Preview(m.Content)
		}
	}
	if _, err := f.store.ReleaseTurn(f.ctx, chat.ReleaseRequest{Claim: c, Outcome: outcome, Sequence: turn.LastSequence, Listing: listing}); err != nil {
		f.t.Fatalf("ReleaseTurn(%s, %s): %v", sessionID, spec.id, err)
	}
	f.clock.Advance(2 * time.Second)
	return turn
}

// runTurn claims, saves and releases one turn.
func (f *fixture) runTurn(sessionID string, owner chat.Principal, spec turnSpec) *chat.Turn {
	f.t.Helper()
	return f.complete(sessionID, f.claim(sessionID, owner, spec), spec)
}

// runTurns runs n standard turns named prefix-000, prefix-001, ... .
func (f *fixture) runTurns(sessionID string, owner chat.Principal, prefix string, n int) []*chat.Turn {
	f.t.Helper()
	out := make([]*chat.Turn, n)
	for i := range n {
		out[i] = f.runTurn(sessionID, owner, turnSpec{id: fmt.Sprintf("%s-%03d", prefix, i)})
	}
	return out
}

// response is a recorded HTTP response.
type response struct {
	status int
	header http.Header
	body   []byte
}

// request is one HTTP request to a handler.
type request struct {
	method      string
	target      string
	as          *chat.Principal // nil: no Authorization header (dev subject "local")
	auth        string          // a raw Authorization header, instead of as
	contentType string
	body        string
}

func get(target string, as chat.Principal) request {
	return request{method: http.MethodGet, target: target, as: &as}
}

func put(target string, as chat.Principal, body string) request {
	return request{method: http.MethodPut, target: target, as: &as, contentType: "application/json", body: body}
}

func post(target string, as chat.Principal, body string) request {
	return request{method: http.MethodPost, target: target, as: &as, contentType: "application/json", body: body}
}

func patch(target string, as chat.Principal, body string) request {
	return request{method: http.MethodPatch, target: target, as: &as, contentType: "application/json", body: body}
}

func (f *fixture) do(h http.Handler, req request) response {
	f.t.Helper()
	var body io.Reader
	if req.body != "" {
		body = strings.NewReader(req.body)
	}
	r := httptest.NewRequestWithContext(f.ctx, req.method, req.target, body)
	if req.as != nil {
		r.Header.Set("Authorization", auth.DevAuthorization(req.as.Subject))
	}
	if req.auth != "" {
		r.Header.Set("Authorization", req.auth)
	}
	if req.contentType != "" {
		r.Header.Set("Content-Type", req.contentType)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return response{status: w.Code, header: w.Header(), body: w.Body.Bytes()}
}

// decode decodes a 200 response into v, failing the test otherwise.
func decode[T any](t *testing.T, what string, resp response) T {
	t.Helper()
	var v T
	if resp.status != http.StatusOK {
		t.Fatalf("%s: status %d, body %s", what, resp.status, resp.body)
	}
	wantJSONHeaders(t, what, resp)
	if err := json.Unmarshal(resp.body, &v); err != nil {
		t.Fatalf("%s: decode %s: %v", what, resp.body, err)
	}
	return v
}

// wantJSONHeaders checks the headers every response carries.
func wantJSONHeaders(t *testing.T, what string, resp response) {
	t.Helper()
	if got := resp.header.Get("Content-Type"); got != "application/json; charset=utf-8" {
		t.Errorf("%s: Content-Type %q", what, got)
	}
	if got := resp.header.Get("Cache-Control"); got != "no-store" {
		t.Errorf("%s: Cache-Control %q", what, got)
	}
}

// wantError checks an error response: status, headers and the exact body
// {"error":{"version":1,"code","message","retryable"}} of code.
func wantError(t *testing.T, what string, resp response, status int, code string) {
	t.Helper()
	if resp.status != status {
		t.Fatalf("%s: status %d, want %d (body %s)", what, resp.status, status, resp.body)
	}
	wantJSONHeaders(t, what, resp)
	want := string(protocol.EncodeErrorBody(protocol.NewDiagnostic(code)))
	if string(resp.body) != want {
		t.Fatalf("%s: body\n got  %s\n want %s", what, resp.body, want)
	}
}

// messageJSON encodes messages as the wire does, for comparisons as JSON.
func messageJSON(t *testing.T, msgs []protocol.Message) string {
	t.Helper()
	if msgs == nil {
		msgs = []protocol.Message{}
	}
	b, err := json.Marshal(msgs)
	if err != nil {
		t.Fatalf("encode messages: %v", err)
	}
	return string(b)
}
