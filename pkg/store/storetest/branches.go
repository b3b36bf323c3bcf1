package storetest

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// branchCases prove sibling groups (Supersede's result and what it
// keeps), and, on a store that implements chat.BranchStore, SelectTurn and
// ForkSession (docs/branches.md).
func branchCases() map[string]func(*testing.T, *env) {
	return map[string]func(*testing.T, *env){
		"SupersessionKeepsSiblings": func(t *testing.T, e *env) {
			e.completeTurns("s1", "t", 3)       // t000..t002, ordinals 1-3
			r1 := replaceTurn(e, "s1", 2, "r1") // hides t001, t002
			want := siblings(2, "t001", "r1")
			checkSiblings(t, "the replacing turn's save", r1.Siblings, want)
			wantActive(t, e, "s1", "t000", "r1")
			checkSiblings(t, "the listed replacing turn", listedTurn(t, e, "s1", "r1").Siblings, want)
			left := e.find("s1", "t001")
			if !left.Superseded {
				t.Error("the replaced turn is not superseded")
			}
			checkSiblings(t, "the replaced turn as it left", left.Siblings, want)
			if f := e.find("s1", "t002"); !f.Superseded || f.Siblings != nil {
				t.Errorf("the replaced turn's follower: superseded %v, siblings %+v; want superseded, none", f.Superseded, f.Siblings)
			}

			// Replacing t001 again, as a client that still showed it
			// would: the store joins the group's active member.
			r2 := replaceTurn(e, "s1", 2, "r2")
			want = siblings(2, "t001", "r1", "r2")
			checkSiblings(t, "the second replacement", r2.Siblings, want)
			wantActive(t, e, "s1", "t000", "r2")
			checkSiblings(t, "the first replacement as it left", e.find("s1", "r1").Siblings, want)

			// A plain turn after it, then a replacement of t000: a new
			// group at ordinal 1, whose first member took every later
			// turn with it.
			e.completeTurn("s1", "u")
			r3 := replaceTurn(e, "s1", 1, "r3")
			checkSiblings(t, "the replacement of the first turn", r3.Siblings, siblings(1, "t000", "r3"))
			wantActive(t, e, "s1", "r3")
			if got := e.find("s1", "r2").Siblings; got.Index(r2.Ordinal) != 2 {
				t.Errorf("a follower's own group changed: %+v", got)
			}
		},
		"SupersessionOfAStaleParent": func(t *testing.T, e *env) {
			e.completeTurns("s1", "t", 3)
			replaceTurn(e, "s1", 1, "edit") // hides ordinals 1-3; edit is ordinal 4
			// A replacement of t001 (ordinal 2), which left the branch:
			// the range's first visible turn is edit, of another group.
			c := e.claim("s1", "late")
			_, err := e.store.Supersede(e.ctx, c, 2, c.Lease.Ordinal)
			wantErr(t, "Supersede of a turn off the active branch", err, chat.ErrLineageStale)
			wantActive(t, e, "s1", "edit")
			if f := e.find("s1", "edit"); f.Superseded {
				t.Error("a refused supersession marked the active turn")
			}
		},
		"SupersessionOfAnEmptyRangeJoinsNothing": func(t *testing.T, e *env) {
			e.completeTurn("s1", "t0")
			c := e.claim("s1", "t1")
			g, err := e.store.Supersede(e.ctx, c, c.Lease.Ordinal, c.Lease.Ordinal)
			if err != nil || g != nil {
				t.Fatalf("Supersede of an empty range = %+v, %v; want nil, nil", g, err)
			}
		},
		"SupersessionLostBeforeItsAckIsUndone": func(t *testing.T, e *env) {
			e.completeTurns("s1", "t", 2) // t000, t001
			r1 := replaceTurn(e, "s1", 2, "r1")
			// r2 replaces r1, then its process dies before its first
			// checkpoint: no version of it exists, so the decision of
			// its lease brings r1 back, with the group it had.
			req := claimRequest("s1", "r2")
			req.Lineage = protocol.Lineage{Operation: protocol.OperationRegenerate, ParentTurnID: "r1", SourceMessageID: "r1-assistant"}
			c := e.claimWith(req)
			if _, err := e.store.Supersede(e.ctx, c, r1.Ordinal, c.Lease.Ordinal); err != nil {
				t.Fatal(err)
			}
			wantActive(t, e, "s1", "t000")
			e.clock.Advance(leaseDuration)
			e.session("s1") // decides the expired lease
			wantActive(t, e, "s1", "t000", "r1")
			checkSiblings(t, "the version brought back", listedTurn(t, e, "s1", "r1").Siblings, siblings(2, "t001", "r1"))
			if _, err := e.store.FindTurn(e.ctx, "s1", "r2", alice); err == nil {
				t.Error("the lost turn is readable by id")
			}
			// The same for a first replacement: the replaced turn comes
			// back without a group.
			req = claimRequest("s1", "r3")
			req.Lineage = protocol.Lineage{Operation: protocol.OperationEdit, ParentTurnID: "t000", SourceMessageID: "t000-user"}
			c = e.claimWith(req)
			if _, err := e.store.Supersede(e.ctx, c, 1, c.Lease.Ordinal); err != nil {
				t.Fatal(err)
			}
			e.clock.Advance(leaseDuration)
			e.session("s1")
			wantActive(t, e, "s1", "t000", "r1")
			if g := listedTurn(t, e, "s1", "t000").Siblings; g != nil {
				t.Errorf("t000 brought back with siblings %+v, want none", g)
			}
		},
		"SiblingsFull": func(t *testing.T, e *env) {
			e.completeTurn("s1", "t0")
			for i := 1; i < chat.MaxSiblings; i++ {
				replaceTurn(e, "s1", 1, fmt.Sprintf("r%03d", i))
			}
			c := e.claim("s1", "one-more")
			_, err := e.store.Supersede(e.ctx, c, 1, c.Lease.Ordinal)
			wantErr(t, "Supersede of a full group", err, chat.ErrSiblingsFull)
			wantActive(t, e, "s1", fmt.Sprintf("r%03d", chat.MaxSiblings-1))
		},
		"SelectSwitchesTheActiveBranch": func(t *testing.T, e *env) {
			bs := branchStoreOf(t, e)
			e.completeTurns("s1", "t", 3)     // t000..t002
			r := replaceTurn(e, "s1", 2, "r") // hides t001, t002
			e.completeTurn("s1", "u")         // follows r
			if err := bs.SelectTurn(e.ctx, "s1", "t001", alice); err != nil {
				t.Fatalf("SelectTurn(t001): %v", err)
			}
			wantActive(t, e, "s1", "t000", "t001", "t002")
			checkSiblings(t, "the selected turn", listedTurn(t, e, "s1", "t001").Siblings, siblings(2, "t001", "r"))
			if f := e.find("s1", "u"); !f.Superseded {
				t.Error("the follower of the member that left is still active")
			}
			ctxTurns, _, err := e.store.LoadContext(e.ctx, "s1", 100, 10)
			if err != nil || !slices.Equal(turnIDs(ctxTurns), []string{"t000", "t001", "t002"}) {
				t.Fatalf("LoadContext after the select = %v, %v; want the selected branch", turnIDs(ctxTurns), err)
			}
			if err := bs.SelectTurn(e.ctx, "s1", "t001", alice); err != nil {
				t.Fatalf("SelectTurn of the active member: %v, want nothing done", err)
			}
			if err := bs.SelectTurn(e.ctx, "s1", r.TurnID, alice); err != nil {
				t.Fatalf("SelectTurn(r): %v", err)
			}
			wantActive(t, e, "s1", "t000", "r", "u")

			// A turn after the select follows the selected branch, and a
			// replacement joins the group with every member.
			if err := bs.SelectTurn(e.ctx, "s1", "t001", alice); err != nil {
				t.Fatalf("SelectTurn(t001): %v", err)
			}
			e.completeTurn("s1", "v")
			wantActive(t, e, "s1", "t000", "t001", "t002", "v")
			r2 := replaceTurn(e, "s1", 2, "r2")
			checkSiblings(t, "a replacement after selects", r2.Siblings, siblings(2, "t001", "r", "r2"))
			wantActive(t, e, "s1", "t000", "r2")
		},
		"SelectRefusals": func(t *testing.T, e *env) {
			bs := branchStoreOf(t, e)
			e.completeTurns("s1", "t", 3)
			replaceTurn(e, "s1", 2, "r")
			for name, tc := range map[string]struct {
				turnID string
				p      chat.Principal
				want   error
			}{
				"another principal":             {"t001", mallory, chat.ErrSessionNotFound},
				"an unknown turn":               {"nope", alice, chat.ErrTurnNotFound},
				"a follower, not a member":      {"t002", alice, chat.ErrNotSelectable},
				"a turn of another tenant":      {"t001", aliceGlobex, chat.ErrSessionNotFound},
				"a session that does not exist": {"t001", alice, chat.ErrSessionNotFound},
			} {
				sessionID := "s1"
				if name == "a session that does not exist" {
					sessionID = "none"
				}
				err := bs.SelectTurn(e.ctx, sessionID, tc.turnID, tc.p)
				wantErr(t, name, err, tc.want)
			}
			c := e.claim("s1", "running")
			wantErr(t, "a select while a turn runs", bs.SelectTurn(e.ctx, "s1", "t001", alice), chat.ErrSessionBusy)
			wantActive(t, e, "s1", "t000", "r")
			_ = c
			// A member whose place left the active branch (its group's
			// parent was replaced) is not selectable until that parent's
			// branch is.
			e.clock.Advance(leaseDuration) // the running turn's lease expires: decided lost
			replaceTurn(e, "s1", 1, "r0")
			wantErr(t, "a member off the active branch", bs.SelectTurn(e.ctx, "s1", "t001", alice), chat.ErrNotSelectable)
			if err := bs.SelectTurn(e.ctx, "s1", "t000", alice); err != nil {
				t.Fatalf("SelectTurn(t000): %v", err)
			}
			if err := bs.SelectTurn(e.ctx, "s1", "t001", alice); err != nil {
				t.Fatalf("SelectTurn(t001) once its place is active: %v", err)
			}
			wantActive(t, e, "s1", "t000", "t001", "t002")
		},
		"ForkCopiesTheActiveBranch": func(t *testing.T, e *env) {
			bs := branchStoreOf(t, e)
			e.completeTurns("s1", "t", 3)
			replaceTurn(e, "s1", 2, "r")
			e.completeTurn("s1", "u")
			before := e.session("s1")
			req := chat.ForkRequest{SessionID: "s1", AtTurnID: "r", NewSessionID: "s2", Principal: alice, Title: "From s1"}
			listed, err := bs.ForkSession(e.ctx, req)
			if err != nil {
				t.Fatalf("ForkSession: %v", err)
			}
			if listed.SessionID != "s2" || listed.Title != "From s1" || listed.LastStatus != chat.TurnComplete || listed.Preview != "reply to r" || listed.ActiveAt.IsZero() {
				t.Errorf("the fork as listed: %+v; want s2 titled From s1, its last turn complete with r's answer", listed)
			}
			s2 := e.session("s2")
			if s2.Owner != alice || s2.NextOrdinal != 3 || s2.ActiveTurn != nil || s2.Sequence < before.Sequence {
				t.Fatalf("forked session %+v: want s2 of alice, next ordinal 3, idle, sequence at least %d", s2, before.Sequence)
			}
			untitled := req
			untitled.NewSessionID, untitled.Title = "s3", ""
			if l, err := bs.ForkSession(e.ctx, untitled); err != nil || l.Title != chat.ForkTitle("") {
				t.Errorf("a fork without a title of an untitled session: %+v, %v; want the title %q", l, err, chat.ForkTitle(""))
			}
			wantActive(t, e, "s2", "t000", "r")
			got := listedTurn(t, e, "s2", "r")
			src := e.find("s1", "r")
			if got.Ordinal != 2 || got.Siblings != nil || got.Superseded || !reflect.DeepEqual(got.Messages, src.Messages) || got.Usage != src.Usage {
				t.Errorf("the copy of r: %+v; want ordinal 2, no siblings, the source's messages and usage", got)
			}
			wantActive(t, e, "s1", "t000", "r", "u")
			if after := e.session("s1"); after.Revision != before.Revision {
				t.Errorf("the source session was written: revision %d -> %d", before.Revision, after.Revision)
			}

			again, err := bs.ForkSession(e.ctx, req)
			if err != nil || again.SessionID != "s2" {
				t.Fatalf("the same fork again = %+v, %v; want s2", again, err)
			}
			wantActive(t, e, "s2", "t000", "r")
			other := req
			other.AtTurnID = "u"
			_, err = bs.ForkSession(e.ctx, other)
			wantErr(t, "a fork into an existing session", err, chat.ErrConflict)

			// The fork is a session of its own: its turns' ids are taken,
			// its next turn follows the copy.
			_, err = e.store.ClaimTurn(e.ctx, claimRequest("s2", "r"))
			wantErr(t, "a replay of a copied turn id", err, chat.ErrTurnCompleted)
			c := e.claim("s2", "next")
			if c.Lease.Ordinal != 3 || c.BaseSequence < before.Sequence {
				t.Errorf("the fork's next claim: ordinal %d, base sequence %d; want 3, at least %d", c.Lease.Ordinal, c.BaseSequence, before.Sequence)
			}
		},
		"ForkRefusals": func(t *testing.T, e *env) {
			bs := branchStoreOf(t, e)
			e.completeTurns("s1", "t", 2)
			replaceTurn(e, "s1", 2, "r")
			for name, tc := range map[string]struct {
				req  chat.ForkRequest
				want error
			}{
				"another principal": {chat.ForkRequest{SessionID: "s1", AtTurnID: "t000", NewSessionID: "s2", Principal: mallory}, chat.ErrSessionNotFound},
				"a superseded turn": {chat.ForkRequest{SessionID: "s1", AtTurnID: "t001", NewSessionID: "s2", Principal: alice}, chat.ErrTurnNotFound},
				"an unknown turn":   {chat.ForkRequest{SessionID: "s1", AtTurnID: "nope", NewSessionID: "s2", Principal: alice}, chat.ErrTurnNotFound},
				"into itself":       {chat.ForkRequest{SessionID: "s1", AtTurnID: "t000", NewSessionID: "s1", Principal: alice}, chat.ErrInvalidRequest},
				"a bad title":       {chat.ForkRequest{SessionID: "s1", AtTurnID: "t000", NewSessionID: "s2", Principal: alice, Title: "a\x00b"}, chat.ErrInvalidRequest},
			} {
				_, err := bs.ForkSession(e.ctx, tc.req)
				wantErr(t, name, err, tc.want)
			}
			if _, err := e.store.GetSession(e.ctx, "s2", alice); err == nil {
				t.Error("a refused fork created its session")
			}
		},
	}
}

// branchStoreOf returns e's store as a chat.BranchStore, skipping t when it
// is none.
func branchStoreOf(t *testing.T, e *env) chat.BranchStore {
	t.Helper()
	bs, ok := e.store.(chat.BranchStore)
	if !ok {
		t.Skip("the store does not implement chat.BranchStore")
	}
	return bs
}

// replaceTurn runs a turn of alice that replaces the turn at ordinal (an
// edit, retry or regeneration): claim, Supersede from ordinal, save with
// the group it joined, release. It returns the saved turn.
func replaceTurn(e *env, sessionID string, ordinal int64, turnID string) *chat.Turn {
	e.t.Helper()
	c := e.claim(sessionID, turnID)
	g, err := e.store.Supersede(e.ctx, c, ordinal, c.Lease.Ordinal)
	if err != nil {
		e.t.Fatalf("Supersede(%s from %d): %v", turnID, ordinal, err)
	}
	turn := e.turnFor(c, sessionID)
	turn.Siblings = g
	e.save(c, turn)
	e.release(sessionID, c, chat.OutcomeCompleted, turn.LastSequence)
	return turn
}

// wantActive fails t unless the session's listed turns (its active
// branch) are ids, in order.
func wantActive(t *testing.T, e *env, sessionID string, ids ...string) {
	t.Helper()
	page, err := e.store.ListTurns(e.ctx, chat.ListRequest{SessionID: sessionID, Principal: alice, Order: chat.OrderAsc, Limit: chat.MaxPageLimit})
	if err != nil {
		t.Fatalf("ListTurns(%s): %v", sessionID, err)
	}
	if got := turnIDs(page.Turns); !slices.Equal(got, ids) {
		t.Fatalf("active branch of %s = %v, want %v", sessionID, got, ids)
	}
}

// listedTurn returns turnID as ListTurns lists it.
func listedTurn(t *testing.T, e *env, sessionID, turnID string) chat.Turn {
	t.Helper()
	page, err := e.store.ListTurns(e.ctx, chat.ListRequest{SessionID: sessionID, Principal: alice, Order: chat.OrderAsc, Limit: chat.MaxPageLimit})
	if err != nil {
		t.Fatalf("ListTurns(%s): %v", sessionID, err)
	}
	for _, turn := range page.Turns {
		if turn.TurnID == turnID {
			return turn
		}
	}
	t.Fatalf("%s is not on the active branch of %s", turnID, sessionID)
	return chat.Turn{}
}

// siblings is the group at ordinal group whose members are ids, the
// first at that ordinal; the others' ordinals are not compared
// (checkSiblings).
func siblings(group int64, ids ...string) *chat.Siblings {
	g := &chat.Siblings{Group: group}
	for _, id := range ids {
		g.Members = append(g.Members, chat.Sibling{TurnID: id})
	}
	return g
}

// checkSiblings fails t unless got is want's group with want's member ids
// in order, the first at the group's ordinal, ordinals increasing.
func checkSiblings(t *testing.T, what string, got, want *chat.Siblings) {
	t.Helper()
	ok := got != nil && got.Group == want.Group && len(got.Members) == len(want.Members) && got.Members[0].Ordinal == want.Group
	for i := 0; ok && i < len(got.Members); i++ {
		ok = got.Members[i].TurnID == want.Members[i].TurnID && (i == 0 || got.Members[i].Ordinal > got.Members[i-1].Ordinal)
	}
	if !ok {
		t.Errorf("%s: siblings %+v, want group %d of %v", what, got, want.Group, memberIDs(want))
	}
}

func memberIDs(g *chat.Siblings) []string {
	var ids []string
	for _, m := range g.Members {
		ids = append(ids, m.TurnID)
	}
	return ids
}
