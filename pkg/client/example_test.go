package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http/httptest"

	"github.com/turnstream/turnstream/internal/devserver"
	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// devServer serves the three functions as cmd/devserver does (in-memory
// store, echo model, dev auth, the demo tools, workspace_note_delete
// requiring approval) and returns their base URLs.
func devServer() (turnURL, historyURL, artifactsURL string, stop func()) {
	env := map[string]string{"AUTH_MODE": "dev", "ECHO_DELAY": "0", "LOG_LEVEL": "error",
		"MODEL_TOOLS": "workspace_note,workspace_note_delete:approval"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	cfg, err := config.FromLookup(lookup)
	if err != nil {
		log.Fatal(err)
	}
	authn, err := auth.New(context.Background(), cfg.Auth, auth.WithLookupEnv(lookup))
	if err != nil {
		log.Fatal(err)
	}
	store, _, err := devserver.NewStore(context.Background(), cfg, true, nil, nil)
	if err != nil {
		log.Fatal(err)
	}
	h, err := devserver.NewHandler(devserver.Options{Config: cfg, Store: store, Authenticator: authn})
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(h)
	return srv.URL + devserver.TurnMount, srv.URL + devserver.HistoryMount, srv.URL + devserver.ArtifactsMount, srv.Close
}

// mustClient returns a client of opts.
func mustClient(opts client.Options) *client.Client {
	c, err := client.New(opts)
	if err != nil {
		log.Fatal(err)
	}
	return c
}

// finish reads a submitted turn's stream to its end and returns its
// terminal snapshot.
func finish(s *client.Stream, err error) *protocol.Event {
	if err != nil {
		log.Fatal(err)
	}
	last, err := s.Drain()
	if err != nil {
		log.Fatal(err)
	}
	return last
}

// A turn: submit it and read its snapshots, each the whole session so
// far, to the terminal one.
func ExampleClient_Submit() {
	turnURL, _, _, stop := devServer()
	defer stop()
	c := mustClient(client.Options{TurnURL: turnURL, Auth: client.Bearer("dev.alice")})
	ctx := context.Background()
	s, err := c.Submit(ctx, client.Submit{SessionID: "demo", TurnID: "t1", Input: "Hello"})
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	var last *protocol.Event
	for {
		ev, err := s.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			log.Fatal(err)
		}
		last = ev
	}
	msgs := last.Snapshot.Messages
	fmt.Println(last.Snapshot.Status, msgs[len(msgs)-1].Content)

	// The same turn id again is a replay: refused with the protocol's
	// diagnostic, before any stream.
	_, err = c.Submit(ctx, client.Submit{SessionID: "demo", TurnID: "t1", Input: "Hello"})
	var e *client.Error
	if errors.As(err, &e) {
		fmt.Println(e.Status, e.Code(), e.Retryable())
	}
	// Output:
	// complete Echo: Hello
	// 409 TURN_ALREADY_COMPLETED false
}

// History: the session summary and its turns, page by page.
func ExampleClient_TurnPages() {
	turnURL, historyURL, _, stop := devServer()
	defer stop()
	c := mustClient(client.Options{TurnURL: turnURL, HistoryURL: historyURL, Auth: client.Bearer("dev.alice")})
	ctx := context.Background()
	for _, input := range []string{"one", "two", "three"} {
		finish(c.Submit(ctx, client.Submit{SessionID: "paged", Input: input}))
	}
	sum, err := c.Session(ctx, "paged")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("running:", sum.CurrentTurn != nil)
	for page, err := range c.TurnPages(ctx, "paged", client.PageOptions{Limit: 2, Order: client.OrderAsc}) {
		if err != nil {
			log.Fatal(err)
		}
		for _, t := range page.Turns {
			fmt.Println(t.Ordinal, t.Status, t.Messages[1].Content)
		}
	}
	// Output:
	// running: false
	// 1 complete Echo: one
	// 2 complete Echo: two
	// 3 complete Echo: three
}

// Approvals: a call of a tool that requires approval ends its turn
// waiting; a decision turn runs it (or denies it).
func ExampleClient_Decide() {
	turnURL, _, _, stop := devServer()
	defer stop()
	c := mustClient(client.Options{TurnURL: turnURL, Auth: client.Bearer("dev.alice")})
	ctx := context.Background()
	finish(c.Submit(ctx, client.Submit{SessionID: "approvals", Input: "/note Trip plan: pack the tent"}))
	last := finish(c.Submit(ctx, client.Submit{SessionID: "approvals", Input: "/delete Trip plan"}))
	for _, p := range client.PendingConfirmations(last.Snapshot) {
		fmt.Println("waiting:", p.Action, string(p.Args))
		end := finish(c.Decide(ctx, client.Decision{SessionID: "approvals", Token: p.Token, Approve: true}))
		msgs := end.Snapshot.Messages
		call := msgs[len(msgs)-1].ToolCalls[0]
		fmt.Println("decided:", call.Name, call.Status, *call.Result)
	}
	// Output:
	// waiting: workspace_note_delete {"title":"Trip plan"}
	// decided: workspace_note_delete complete Deleted note "notes/trip-plan.md".
}

// Capabilities say which extensions a deployment serves.
func ExampleClient_Capabilities() {
	turnURL, _, _, stop := devServer()
	defer stop()
	c := mustClient(client.Options{TurnURL: turnURL})
	caps, err := c.Capabilities(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(caps.Has("stop"), caps.Resumes())
	// Output: true true
}

// Artifacts: the trusted workspace host records a turn's files; the
// session's owner reads them.
func ExampleClient_PutArtifacts() {
	turnURL, _, artifactsURL, stop := devServer()
	defer stop()
	owner := mustClient(client.Options{TurnURL: turnURL, ArtifactsURL: artifactsURL, Auth: client.Bearer("dev.alice")})
	host := mustClient(client.Options{TurnURL: turnURL, ArtifactsURL: artifactsURL, Auth: client.Bearer("dev.host")})
	ctx := context.Background()
	finish(owner.Submit(ctx, client.Submit{SessionID: "files", TurnID: "t1", Input: "Write a report"}))
	if _, err := host.PutArtifacts(ctx, "files", "t1", []client.ArtifactReference{{EntryPath: "out/report.md", ArtifactType: "document"}}); err != nil {
		log.Fatal(err)
	}
	refs, err := owner.Artifacts(ctx, "files", "t1")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(refs)
	// Output: [{out/report.md document}]
}
