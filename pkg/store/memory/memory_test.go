package memory_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/store/memory"
	"github.com/turnstream/turnstream/pkg/store/storetest"
)

// TestContract runs the chat.Store contract suite against the memory store.
func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T, clock *storetest.Clock, cursorKey []byte) chat.Store {
		return memory.New(memory.Options{Now: clock.Now, CursorKey: cursorKey, Ledger: chat.LedgerOptions{Enabled: true}})
	})
}

func TestNewCursorKey(t *testing.T) {
	ctx := t.Context()
	alice := chat.Principal{Subject: "alice", Tenant: "acme"}
	// fill gives a store one session with three saved turns.
	fill := func(t *testing.T, s *memory.Store) {
		t.Helper()
		for i := range 3 {
			id := fmt.Sprintf("t%d", i)
			c, err := s.ClaimTurn(ctx, chat.ClaimRequest{SessionID: "s1", TurnID: id, Principal: alice, InputHash: id, LeaseDuration: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.SaveTurn(ctx, c, &chat.Turn{SessionID: "s1", TurnID: id, Ordinal: c.Lease.Ordinal, Status: chat.TurnComplete}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.ReleaseTurn(ctx, chat.ReleaseRequest{Claim: c, Outcome: chat.OutcomeCompleted}); err != nil {
				t.Fatal(err)
			}
		}
	}
	firstCursor := func(t *testing.T, s *memory.Store) string {
		t.Helper()
		page, err := s.ListTurns(ctx, chat.ListRequest{SessionID: "s1", Principal: alice, Limit: 1})
		if err != nil || page.NextCursor == "" {
			t.Fatalf("first page: %+v, %v", page, err)
		}
		return page.NextCursor
	}

	t.Run("random key per store", func(t *testing.T) {
		a, b := memory.New(memory.Options{}), memory.New(memory.Options{})
		fill(t, a)
		fill(t, b)
		_, err := b.ListTurns(ctx, chat.ListRequest{SessionID: "s1", Principal: alice, Limit: 1, Cursor: firstCursor(t, a)})
		if !errors.Is(err, chat.ErrInvalidCursor) {
			t.Errorf("another store's cursor: %v, want ErrInvalidCursor", err)
		}
	})
	t.Run("shared key", func(t *testing.T) {
		key := []byte("0123456789abcdef")
		a, b := memory.New(memory.Options{CursorKey: key}), memory.New(memory.Options{CursorKey: key})
		fill(t, a)
		fill(t, b)
		key[0] = 'X' // New copied the key
		page, err := b.ListTurns(ctx, chat.ListRequest{SessionID: "s1", Principal: alice, Limit: 1, Cursor: firstCursor(t, a)})
		if err != nil || len(page.Turns) != 1 || page.Turns[0].TurnID != "t1" {
			t.Errorf("cursor under a shared key: %+v, %v; want t1", page, err)
		}
	})
	t.Run("short key panics", func(t *testing.T) {
		defer func() {
			if recover() == nil {
				t.Error("New with a 15-byte key did not panic")
			}
		}()
		memory.New(memory.Options{CursorKey: make([]byte, 15)})
	})
}

// Requests the chat.Store contract leaves to each implementation: the
// memory store rejects them with ErrInvalidRequest, or ErrLeaseLost for a
// save its claims never allowed.
func TestInvalidRequests(t *testing.T) {
	ctx := t.Context()
	s := memory.New(memory.Options{})
	alice := chat.Principal{Subject: "alice", Tenant: "acme"}
	claim := chat.ClaimRequest{SessionID: "s1", TurnID: "t1", Principal: alice, InputHash: "h", LeaseDuration: time.Minute}
	c, err := s.ClaimTurn(ctx, claim)
	if err != nil {
		t.Fatal(err)
	}
	turn := func(edit func(*chat.Turn)) *chat.Turn {
		t := &chat.Turn{SessionID: "s1", TurnID: "t1", Ordinal: c.Lease.Ordinal, Status: chat.TurnComplete}
		edit(t)
		return t
	}
	cases := map[string]struct {
		call func() error
		want error
	}{
		"claim without session id": {func() error {
			r := claim
			r.SessionID = ""
			_, err := s.ClaimTurn(ctx, r)
			return err
		}, chat.ErrInvalidRequest},
		"claim without turn id": {func() error {
			r := claim
			r.TurnID = ""
			_, err := s.ClaimTurn(ctx, r)
			return err
		}, chat.ErrInvalidRequest},
		"claim without lease duration": {func() error {
			r := claim
			r.LeaseDuration = 0
			_, err := s.ClaimTurn(ctx, r)
			return err
		}, chat.ErrInvalidRequest},
		"save nil turn":       {func() error { return s.SaveTurn(ctx, c, nil) }, chat.ErrInvalidRequest},
		"save ordinal 0":      {func() error { return s.SaveTurn(ctx, c, turn(func(t *chat.Turn) { t.Ordinal = 0 })) }, chat.ErrInvalidRequest},
		"save unknown status": {func() error { return s.SaveTurn(ctx, c, turn(func(t *chat.Turn) { t.Status = "done" })) }, chat.ErrInvalidRequest},
		"save invalid artifact": {func() error {
			return s.SaveTurn(ctx, c, turn(func(t *chat.Turn) {
				t.Artifacts = []chat.ArtifactReference{{EntryPath: "/abs", ArtifactType: chat.ArtifactDocument}}
			}))
		}, chat.ErrInvalidArtifact},
		"save unclaimed ordinal": {func() error { return s.SaveTurn(ctx, c, turn(func(t *chat.Turn) { t.Ordinal = 2 })) }, chat.ErrInvalidRequest},
		"save as another turn":   {func() error { return s.SaveTurn(ctx, c, turn(func(t *chat.Turn) { t.TurnID = "t2" })) }, chat.ErrInvalidRequest},
		"save first with a foreign token": {func() error {
			f := *c
			f.Lease.Token = "not-a-token"
			return s.SaveTurn(ctx, &f, turn(func(*chat.Turn) {}))
		}, chat.ErrLeaseLost},
		"save to a missing session": {func() error {
			return s.SaveTurn(ctx, c, turn(func(t *chat.Turn) { t.SessionID = "nope" }))
		}, chat.ErrInvalidRequest},
		"release unknown outcome": {func() error {
			_, err := s.ReleaseTurn(ctx, chat.ReleaseRequest{Claim: c, Outcome: "done"})
			return err
		}, chat.ErrInvalidRequest},
		"release in a missing session": {func() error {
			f := *c
			f.Session.ID = "nope"
			_, err := s.ReleaseTurn(ctx, chat.ReleaseRequest{Claim: &f, Outcome: chat.OutcomeCompleted})
			return err
		}, chat.ErrLeaseLost},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if err := tc.call(); !errors.Is(err, tc.want) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
		})
	}
	if _, err := s.FindTurn(ctx, "s1", "t1", alice); !errors.Is(err, chat.ErrTurnNotFound) {
		t.Errorf("after rejected saves FindTurn: %v, want ErrTurnNotFound", err)
	}
}

// Mixed calls on several sessions at once, for the race detector: every
// value crossing the API is a copy, under one mutex.
func TestConcurrentUse(t *testing.T) {
	ctx := t.Context()
	s := memory.New(memory.Options{})
	alice := chat.Principal{Subject: "alice", Tenant: "acme"}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			sessionID := fmt.Sprintf("s%d", w%3)
			for i := range 20 {
				turnID := fmt.Sprintf("w%d-t%d", w, i)
				c, err := s.ClaimTurn(ctx, chat.ClaimRequest{SessionID: sessionID, TurnID: turnID, Principal: alice, InputHash: "h", LeaseDuration: time.Minute})
				if errors.Is(err, chat.ErrSessionBusy) {
					_, _ = s.ListTurns(ctx, chat.ListRequest{SessionID: sessionID, Principal: alice, Order: chat.OrderAsc})
					_, _ = s.GetSession(ctx, sessionID, alice)
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				text := "hi"
				err = s.SaveTurn(ctx, c, &chat.Turn{SessionID: sessionID, TurnID: turnID, Ordinal: c.Lease.Ordinal,
					Status: chat.TurnComplete, Messages: []protocol.Message{{ID: "m", Parts: []protocol.Part{{Type: "text", Text: &text}}}}})
				if err != nil {
					t.Error(err)
					return
				}
				if _, _, err := s.LoadContext(ctx, sessionID, c.Lease.Ordinal, 1000); err != nil {
					t.Error(err)
				}
				if _, err := s.PutArtifacts(ctx, sessionID, turnID, alice, []chat.ArtifactReference{{EntryPath: "a.md", ArtifactType: chat.ArtifactDocument}}); err != nil {
					t.Error(err)
				}
				if _, err := s.ReleaseTurn(ctx, chat.ReleaseRequest{Claim: c, Outcome: chat.OutcomeCompleted}); err != nil {
					t.Error(err)
				}
				if found, err := s.FindTurn(ctx, sessionID, turnID, alice); err != nil || *found.Messages[0].Parts[0].Text != "hi" {
					t.Errorf("FindTurn: %v", err)
				}
			}
		})
	}
	wg.Wait()
}
