package sessionapi_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/sessionapi"
	"github.com/turnstream/turnstream/pkg/store/memory"
)

// exampleStore returns a memory store holding session "s1" of dev subject
// "alice" with one completed turn "t1", written as the turn function
// writes it (claim, save, release).
func exampleStore(now func() time.Time) chat.Store {
	ctx := context.Background()
	store := memory.New(memory.Options{Now: now, CursorKey: []byte("example-cursor-key")})
	alice := chat.Principal{Subject: "alice", Tenant: auth.DevTenant}
	c, err := store.ClaimTurn(ctx, chat.ClaimRequest{
		SessionID: "s1", TurnID: "t1", Principal: alice, InputHash: chat.HashInput("Hi"),
		Lineage: protocol.Lineage{Operation: protocol.OperationSubmit}, DefinitionID: "default",
		DefinitionRevision: 1, LeaseDuration: 30 * time.Second,
	})
	if err != nil {
		panic(err)
	}
	at := protocol.FormatTime(now())
	err = store.SaveTurn(ctx, c, &chat.Turn{
		SessionID: "s1", TurnID: "t1", Ordinal: c.Lease.Ordinal, Status: chat.TurnComplete,
		Lineage: c.Lease.Lineage, InputHash: c.Lease.InputHash, StartedAt: now(), CompletedAt: now(),
		Messages: []protocol.Message{
			{ID: "t1.u", Role: protocol.RoleUser, Content: "Hi", Status: protocol.MessageComplete, CreatedAt: at},
			{ID: "t1.a", Role: protocol.RoleAssistant, Content: "Hello!", Status: protocol.MessageComplete, CreatedAt: at},
		},
	})
	if err != nil {
		panic(err)
	}
	if _, err := store.ReleaseTurn(ctx, chat.ReleaseRequest{Claim: c, Outcome: chat.OutcomeCompleted, Sequence: 2}); err != nil {
		panic(err)
	}
	return store
}

func exampleOptions() sessionapi.Options {
	now := func() time.Time { return time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC) }
	// Dev mode: "Authorization: Bearer dev.<subject>"; subject "host" is trusted.
	authn, err := auth.New(context.Background(), config.AuthConfig{Mode: config.AuthDev, TrustedSubject: "host"})
	if err != nil {
		panic(err)
	}
	return sessionapi.Options{Store: exampleStore(now), Authenticator: authn, Logger: slog.New(slog.DiscardHandler), Now: now}
}

func serve(h http.Handler, method, target, subject, body string) {
	r := httptest.NewRequest(method, target, strings.NewReader(body))
	r.Header.Set("Authorization", auth.DevAuthorization(subject))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	fmt.Println(w.Code, w.Body.String())
}

func ExampleNewHistoryHandler() {
	h, err := sessionapi.NewHistoryHandler(exampleOptions())
	if err != nil {
		fmt.Println(err)
		return
	}
	serve(h, http.MethodGet, "/sessions/s1", "alice", "")
	serve(h, http.MethodGet, "/sessions/s1/messages?limit=1", "alice", "")
	serve(h, http.MethodGet, "/sessions/s1/turns?limit=0", "alice", "")
	serve(h, http.MethodGet, "/sessions/s1", "mallory", "")
	// Output:
	// 200 {"sessionId":"s1","definitionId":"default","definitionRevision":1,"cursor":2,"createdAt":"2026-11-29T12:00:00.000Z","updatedAt":"2026-11-29T12:00:00.000Z","currentTurn":null,"pendingInteractions":[],"queuedTurns":[],"session":{"protocol":"agentskit.chat.session","version":1,"sessionId":"s1","definitionId":"default","definitionRevision":1,"updatedAt":"2026-11-29T12:00:00.000Z","cursor":2,"terminalTurns":[{"turnId":"t1","outcome":"completed"}],"confirmations":[]}}
	// 200 {"messages":[{"id":"t1.u","role":"user","content":"Hi","status":"complete","createdAt":"2026-11-29T12:00:00.000Z"},{"id":"t1.a","role":"assistant","content":"Hello!","status":"complete","createdAt":"2026-11-29T12:00:00.000Z"}],"nextCursor":null,"hasMore":false}
	// 400 {"error":{"version":1,"code":"REQUEST_INVALID_QUERY","message":"Query parameters are invalid.","retryable":false}}
	// 404 {"error":{"version":1,"code":"SESSION_NOT_FOUND","message":"Session not found.","retryable":false}}
}

func ExampleNewArtifactsHandler() {
	h, err := sessionapi.NewArtifactsHandler(exampleOptions())
	if err != nil {
		fmt.Println(err)
		return
	}
	// The trusted host records the turn's artifacts; the last reference for
	// a repeated path wins.
	serve(h, http.MethodPut, "/sessions/s1/turns/t1/artifacts", "host",
		`{"artifacts":[{"entryPath":"report/index.html","artifactType":"document"},{"entryPath":"report/index.html","artifactType":"webpage"}]}`)
	serve(h, http.MethodGet, "/sessions/s1/turns/t1/artifacts", "alice", "")
	// The session's owner may read but not write.
	serve(h, http.MethodPut, "/sessions/s1/turns/t1/artifacts", "alice", `{"artifacts":[]}`)
	// Output:
	// 200 {"artifacts":[{"entryPath":"report/index.html","artifactType":"webpage"}]}
	// 200 {"artifacts":[{"entryPath":"report/index.html","artifactType":"webpage"}]}
	// 403 {"error":{"version":1,"code":"REQUEST_FORBIDDEN","message":"The caller may not perform this request.","retryable":false}}
}
