package client_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// TestBranches: a regeneration keeps the answer it replaces as a sibling
// the history lists and reads by id; Select moves the active branch and
// Fork copies it into a new session; bad input is a typed error.
func TestBranches(t *testing.T) {
	as, ask := devPair(t)
	alice, bob := as("alice"), as("bob")
	ask(alice, "s", "t1", "first question", nil)
	ask(alice, "s", "t2", "second question", nil)
	ask(alice, "s", "r1", "second question", &protocol.Lineage{Operation: protocol.OperationRegenerate, ParentTurnID: "t2", SourceMessageID: "t2.a"})
	active := func(sessionID string) ([]string, []client.TurnSummary) {
		t.Helper()
		all, err := alice.AllTurns(t.Context(), sessionID)
		if err != nil {
			t.Fatal(err)
		}
		ids := make([]string, len(all))
		for i, turn := range all {
			ids[i] = turn.TurnID
		}
		return ids, all
	}
	ids, turns := active("s")
	if !slices.Equal(ids, []string{"t1", "r1"}) {
		t.Fatalf("active branch %v, want t1 r1", ids)
	}
	if g := turns[1].Siblings; g == nil || g.Index != 1 || !slices.Equal(g.TurnIDs, []string{"t2", "r1"}) {
		t.Fatalf("r1's siblings %+v", g)
	}
	off, err := alice.Conversations().Turn(t.Context(), "s", "t2")
	if err != nil || !off.Superseded || len(off.Messages) != 2 {
		t.Fatalf("t2 by id: %+v, %v", off, err)
	}

	cv := alice.Conversations()
	if err := cv.Select(t.Context(), "s", "t2"); err != nil {
		t.Fatal(err)
	}
	if ids, _ := active("s"); !slices.Equal(ids, []string{"t1", "t2"}) {
		t.Fatalf("active branch after the select %v, want t1 t2", ids)
	}
	item, err := cv.Fork(t.Context(), "s", client.ForkOptions{AtTurnID: "t1"})
	if err != nil {
		t.Fatal(err)
	}
	if ids, _ := active(item.SessionID); !slices.Equal(ids, []string{"t1"}) || item.Title == nil || *item.Title != "Fork of first question" {
		t.Fatalf("the fork %+v holds %v, want t1 titled Fork of first question", item, ids)
	}

	var e *client.Error
	if err := bob.Conversations().Select(t.Context(), "s", "t2"); !errors.As(err, &e) || e.Code() != protocol.CodeSessionNotFound {
		t.Errorf("bob's select: %v, want SESSION_NOT_FOUND", err)
	}
	if _, err := bob.Conversations().Fork(t.Context(), "s", client.ForkOptions{AtTurnID: "t1"}); !errors.As(err, &e) || e.Code() != protocol.CodeSessionNotFound {
		t.Errorf("bob's fork: %v, want SESSION_NOT_FOUND", err)
	}
	if err := cv.Select(t.Context(), "s", "t1"); err != nil {
		t.Errorf("a select of an active turn: %v", err)
	}
	if _, err := alice.Conversations().Turn(t.Context(), "s", "nope"); !errors.As(err, &e) || e.Code() != protocol.CodeTurnNotFound {
		t.Errorf("an unknown turn by id: %v, want TURN_NOT_FOUND", err)
	}
	for name, err := range map[string]error{
		"select, a bad turn id": cv.Select(t.Context(), "s", "a b"),
		"fork, a bad new id": func() error {
			_, err := cv.Fork(t.Context(), "s", client.ForkOptions{AtTurnID: "t1", SessionID: "a b"})
			return err
		}(),
		"turn, a bad session": func() error { _, err := alice.Conversations().Turn(t.Context(), "a b", "t1"); return err }(),
	} {
		if !errors.Is(err, client.ErrInvalidID) {
			t.Errorf("%s: %v, want ErrInvalidID", name, err)
		}
	}
}
