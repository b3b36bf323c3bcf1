package client_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/model/echo"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/sessionapi"
	"github.com/turnstream/turnstream/pkg/store/memory"
	"github.com/turnstream/turnstream/pkg/turn"
)

// devPair starts a turn function and a history function on one
// in-memory store with dev authentication and the echo model; as returns
// a client of the subject, ask submits a turn and reads it to its end.
func devPair(t *testing.T) (as func(subject string) *client.Client, ask func(c *client.Client, sessionID, turnID, input string, lineage *protocol.Lineage)) {
	t.Helper()
	store := memory.New(memory.Options{})
	authn, err := auth.New(context.Background(), config.AuthConfig{Mode: config.AuthDev, TrustedSubject: "host"},
		auth.WithLookupEnv(func(string) (string, bool) { return "", false }))
	if err != nil {
		t.Fatal(err)
	}
	th, err := turn.NewHandler(turn.Options{
		Config:        turn.Config{Store: store, Model: echo.New(0, 0), Definition: turn.Definition{ID: "default", Revision: 1}},
		Authenticator: authn,
	})
	if err != nil {
		t.Fatal(err)
	}
	hh, err := sessionapi.NewHistoryHandler(sessionapi.Options{Store: store, Authenticator: authn})
	if err != nil {
		t.Fatal(err)
	}
	ts, hs := httptest.NewServer(th), httptest.NewServer(hh)
	t.Cleanup(ts.Close)
	t.Cleanup(hs.Close)
	as = func(subject string) *client.Client {
		c, err := client.New(client.Options{TurnURL: ts.URL + "/", HistoryURL: hs.URL + "/", Auth: client.Bearer("dev." + subject)})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	ask = func(c *client.Client, sessionID, turnID, input string, lineage *protocol.Lineage) {
		t.Helper()
		s, err := c.Submit(t.Context(), client.Submit{SessionID: sessionID, TurnID: turnID, Input: input, Lineage: lineage})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = s.Close() }()
		for {
			ev, err := s.Next()
			if err != nil {
				t.Fatalf("%s/%s: %v", sessionID, turnID, err)
			}
			if ev.Snapshot != nil && ev.Snapshot.Status != protocol.StatusStreaming {
				return
			}
		}
	}
	return as, ask
}

// TestConversations: turns submitted through the turn function are
// listed by the history function with the titles their first messages
// give them, most recent first, each caller its own; a rename shows in
// the list; bad input is a typed error.
func TestConversations(t *testing.T) {
	as, submit := devPair(t)
	ask := func(c *client.Client, sessionID, turnID, input string) {
		t.Helper()
		submit(c, sessionID, turnID, input, nil)
	}
	alice, bob := as("alice"), as("bob")
	ask(alice, "bread", "t1", "How do I bake a sourdough loaf\nwith rye flour?")
	ask(alice, "taxes", "t1", "When are taxes due?")
	ask(bob, "bobs", "t1", "bob's question")
	ask(alice, "bread", "t2", "And how long does it rise?")

	// Newest activity first; turns that end in the same millisecond come
	// in the store's order (the contract suite pins the order on a fake
	// clock), so the test reads the order from the full list.
	all, err := alice.Conversations().List(t.Context(), client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Sessions) != 2 || all.NextCursor != nil || *all.Sessions[0].UpdatedAt < *all.Sessions[1].UpdatedAt {
		t.Fatalf("alice's list %+v", all)
	}
	byID := map[string]client.SessionListItem{}
	for _, s := range all.Sessions {
		byID[s.SessionID] = s
	}
	bread := byID["bread"]
	if bread.Title == nil || *bread.Title != "How do I bake a sourdough loaf with rye flour?" || bread.LastTurn == nil ||
		bread.LastTurn.Status != "complete" || !strings.Contains(bread.LastTurn.Preview, "rise") || *bread.UpdatedAt < *byID["taxes"].UpdatedAt {
		t.Errorf("bread listed as %+v, last turn %+v", bread, bread.LastTurn)
	}
	first, err := alice.Conversations().List(t.Context(), client.ListOptions{Limit: 1})
	if err != nil || len(first.Sessions) != 1 || first.Sessions[0].SessionID != all.Sessions[0].SessionID || first.NextCursor == nil {
		t.Fatalf("page 1: %+v, %v", first, err)
	}
	rest, err := alice.Conversations().List(t.Context(), client.ListOptions{Cursor: *first.NextCursor})
	if err != nil || len(rest.Sessions) != 1 || rest.Sessions[0].SessionID != all.Sessions[1].SessionID || rest.NextCursor != nil {
		t.Fatalf("page 2: %+v, %v", rest, err)
	}
	if l, err := bob.Conversations().List(t.Context(), client.ListOptions{}); err != nil || len(l.Sessions) != 1 || l.Sessions[0].SessionID != "bobs" {
		t.Fatalf("bob's list %+v, %v", l, err)
	}
	item, err := alice.Conversations().Rename(t.Context(), "taxes", "Tax deadlines")
	if err != nil || item.Title == nil || *item.Title != "Tax deadlines" {
		t.Fatalf("rename: %+v, %v", item, err)
	}
	found, err := alice.Conversations().List(t.Context(), client.ListOptions{Query: "DEADLINE"})
	if err != nil || !slices.EqualFunc(found.Sessions, []string{"taxes"}, func(s client.SessionListItem, id string) bool { return s.SessionID == id }) {
		t.Fatalf("search: %+v, %v", found, err)
	}

	var e *client.Error
	if _, err := alice.Conversations().Rename(t.Context(), "taxes", "a\u202eb"); !errors.As(err, &e) || e.Status != http.StatusBadRequest || e.Diagnostic.Code != protocol.CodeRequestInvalidBody {
		t.Errorf("a bidi override in a title: %v", err)
	}
	if _, err := bob.Conversations().Rename(t.Context(), "taxes", "mine"); !errors.As(err, &e) || e.Diagnostic.Code != protocol.CodeSessionNotFound {
		t.Errorf("bob renames alice's session: %v", err)
	}
	if _, err := bob.Conversations().List(t.Context(), client.ListOptions{Cursor: *first.NextCursor}); !errors.As(err, &e) || e.Diagnostic.Code != protocol.CodeRequestInvalidCursor {
		t.Errorf("alice's cursor used by bob: %v", err)
	}
	if _, err := alice.Conversations().List(t.Context(), client.ListOptions{Limit: 101}); !errors.As(err, &e) || e.Diagnostic.Code != protocol.CodeRequestInvalidQuery {
		t.Errorf("limit 101: %v", err)
	}
	if _, err := alice.Conversations().Rename(t.Context(), "not a safe id", "x"); !errors.Is(err, client.ErrInvalidID) {
		t.Errorf("an unsafe session id: %v", err)
	}

	// Export, delete, erase.
	var doc bytes.Buffer
	if n, err := alice.Conversations().Export(t.Context(), "bread", &doc); err != nil || n != int64(doc.Len()) || !strings.Contains(doc.String(), "sourdough") {
		t.Fatalf("export: %d bytes, %v", n, err)
	}
	if _, err := bob.Conversations().Export(t.Context(), "bread", io.Discard); !errors.As(err, &e) || e.Diagnostic.Code != protocol.CodeSessionNotFound {
		t.Errorf("bob exports alice's session: %v", err)
	}
	if err := bob.Conversations().Delete(t.Context(), "bread"); !errors.As(err, &e) || e.Diagnostic.Code != protocol.CodeSessionNotFound {
		t.Errorf("bob deletes alice's session: %v", err)
	}
	if err := alice.Conversations().Delete(t.Context(), "bread"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if l, err := alice.Conversations().List(t.Context(), client.ListOptions{}); err != nil || len(l.Sessions) != 1 || l.Sessions[0].SessionID != "taxes" {
		t.Errorf("alice's list after the delete: %+v, %v", l, err)
	}
	if err := alice.Conversations().Delete(t.Context(), "bread"); !errors.As(err, &e) || e.Diagnostic.Code != protocol.CodeSessionNotFound {
		t.Errorf("a repeated delete: %v", err)
	}
	if err := alice.Conversations().Delete(t.Context(), "not a safe id"); !errors.Is(err, client.ErrInvalidID) {
		t.Errorf("delete, an unsafe session id: %v", err)
	}
	if _, err := alice.Conversations().Erase(t.Context(), "bob"); !errors.As(err, &e) || e.Diagnostic.Code != protocol.CodeRequestForbidden {
		t.Errorf("alice erases bob: %v", err)
	}
	got, err := as("host").Conversations().Erase(t.Context(), "bob")
	if err != nil || got.Status != "deleted" || got.Deleted != 1 {
		t.Fatalf("erase bob: %+v, %v", got, err)
	}
	if l, err := bob.Conversations().List(t.Context(), client.ListOptions{}); err != nil || len(l.Sessions) != 0 {
		t.Errorf("bob's list after the erase: %+v, %v", l, err)
	}
}
