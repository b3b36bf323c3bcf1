package storetest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
)

// deleteCases prove DeleteSession and EraseSessions: what a delete
// removes, that afterwards the session is one nobody has, that a running
// turn is never deleted from under it, and that a delete in pages
// resumes.
func deleteCases() map[string]func(*testing.T, *env) {
	return map[string]func(*testing.T, *env){
		"DeletedSessionIsOneNobodyHas": func(t *testing.T, env *env) {
			e := deletes{env}
			turns := e.completeTurns("s1", "t", 3)
			refs := []chat.ArtifactReference{{EntryPath: "a.md", ArtifactType: chat.ArtifactDocument}}
			e.putArtifacts("s1", "t000", host, refs, refs)
			e.completeTurn("s2", "u1")
			for _, t := range turns {
				e.record(chat.LedgerEntry{SessionID: "s1", Ordinal: t.Ordinal, Owner: alice, StartedAt: e.clock.Now(), Usage: chat.Usage{InputTokens: 10}})
			}
			usage := e.usageOf(alice)
			if usage.Day.Turns != 3 {
				t.Fatalf("the ledger counted %d turns, want 3", usage.Day.Turns)
			}
			e.deleteAll(alice, "s1")
			if _, err := e.store.GetSession(e.ctx, "s1", alice); !errors.Is(err, chat.ErrSessionNotFound) {
				t.Errorf("GetSession after the delete: %v", err)
			}
			if _, err := e.store.ListTurns(e.ctx, chat.ListRequest{SessionID: "s1", Principal: alice, Order: chat.OrderDesc}); !errors.Is(err, chat.ErrSessionNotFound) {
				t.Errorf("ListTurns after the delete: %v", err)
			}
			if _, err := e.store.GetArtifacts(e.ctx, "s1", "t000", alice); !errors.Is(err, chat.ErrSessionNotFound) {
				t.Errorf("GetArtifacts after the delete: %v", err)
			}
			if _, err := e.store.PollTurn(e.ctx, "s1", turns[0].Ordinal, alice, nil); !errors.Is(err, chat.ErrSessionNotFound) && !errors.Is(err, chat.ErrTurnNotFound) {
				t.Errorf("PollTurn after the delete: %v", err)
			}
			if _, err := e.store.RenameSession(e.ctx, "s1", alice, "again"); !errors.Is(err, chat.ErrSessionNotFound) {
				t.Errorf("RenameSession after the delete: %v", err)
			}
			if ids := listedIDs(lists(e).listSessions(chat.SessionListRequest{Principal: alice})); !slices.Equal(ids, []string{"s2"}) {
				t.Errorf("alice's list after the delete: %v, want [s2]", ids)
			}
			if done, err := e.store.DeleteSession(e.ctx, chat.DeleteRequest{Principal: alice, SessionID: "s1"}); done || !errors.Is(err, chat.ErrSessionNotFound) {
				t.Errorf("a repeated delete: %v, %v; want ErrSessionNotFound", done, err)
			}
			// The other session and the ledger are untouched.
			if got := e.find("s2", "u1"); got.Status != chat.TurnComplete {
				t.Errorf("s2's turn after deleting s1: %+v", got)
			}
			if after := e.usageOf(alice); after.Day.Turns != usage.Day.Turns {
				t.Errorf("the ledger counted %d turns before the delete, %d after", usage.Day.Turns, after.Day.Turns)
			}
			// The id is free: a new session, with nothing of the deleted
			// one but its sequence, which goes on (a client's snapshot
			// cursor of the id never meets a sequence twice).
			c := e.claim("s1", "t1")
			if !c.Created || c.BaseSequence != turns[2].LastSequence || c.Lease.Ordinal != 1 {
				t.Errorf("a claim after the delete: created %v, base sequence %d, ordinal %d; want a new session past sequence %d", c.Created, c.BaseSequence, c.Lease.Ordinal, turns[2].LastSequence)
			}
			if page, err := e.store.ListTurns(e.ctx, chat.ListRequest{SessionID: "s1", Principal: alice, Order: chat.OrderDesc}); err != nil || len(page.Turns) != 0 {
				t.Errorf("the new session's turns: %+v, %v", page, err)
			}
			if _, err := e.store.GetSession(e.ctx, "s1", mallory); !errors.Is(err, chat.ErrSessionNotFound) {
				t.Errorf("the new session, read by another principal: %v", err)
			}
		},
		"AnotherPrincipalsSessionIsNotFoundAndKept": func(t *testing.T, env *env) {
			e := deletes{env}
			e.completeTurn("s1", "t1")
			for _, p := range []chat.Principal{mallory, aliceGlobex, host} {
				if done, err := e.store.DeleteSession(e.ctx, chat.DeleteRequest{Principal: p, SessionID: "s1"}); done || !errors.Is(err, chat.ErrSessionNotFound) {
					t.Errorf("%+v deletes alice's session: %v, %v", p, done, err)
				}
			}
			if _, err := e.store.DeleteSession(e.ctx, chat.DeleteRequest{Principal: alice, SessionID: "nobody"}); !errors.Is(err, chat.ErrSessionNotFound) {
				t.Errorf("deleting a session nobody has: %v", err)
			}
			if got := e.find("s1", "t1"); got.Status != chat.TurnComplete {
				t.Errorf("alice's turn after the others' deletes: %+v", got)
			}
		},
		"RunningTurnIsBusyThenDeletable": func(t *testing.T, env *env) {
			e := deletes{env}
			e.completeTurn("s1", "t1")
			c := e.claim("s1", "t2")
			if done, err := e.store.DeleteSession(e.ctx, chat.DeleteRequest{Principal: alice, SessionID: "s1"}); done || !errors.Is(err, chat.ErrSessionBusy) {
				t.Fatalf("delete with a running turn: %v, %v; want ErrSessionBusy", done, err)
			}
			// Nothing changed: the turn goes on and saves.
			e.save(c, e.turnFor(c, "s1"))
			e.release("s1", c, chat.OutcomeCompleted, 2)
			if got := e.find("s1", "t2"); got.Status != chat.TurnComplete {
				t.Fatalf("the running turn after a refused delete: %+v", got)
			}
			e.deleteAll(alice, "s1")
		},
		"CrashedTurnIsDecidedThenDeleted": func(t *testing.T, env *env) {
			e := deletes{env}
			e.completeTurn("s1", "t1")
			c := e.claim("s1", "t2")
			e.clock.Advance(leaseDuration + time.Second) // its process died
			e.deleteAll(alice, "s1")
			if _, err := e.store.RenewLease(e.ctx, chat.RenewRequest{Claim: c, ExpiresAt: e.clock.Now().Add(leaseDuration)}); err == nil {
				t.Error("the crashed turn renewed its lease after the delete")
			}
			if _, err := e.store.GetSession(e.ctx, "s1", alice); !errors.Is(err, chat.ErrSessionNotFound) {
				t.Errorf("GetSession after the delete: %v", err)
			}
		},
		"DeleteInPagesResumes": func(t *testing.T, env *env) {
			e := deletes{env}
			e.completeTurns("s1", "t", 7)
			calls := 0
			for done := false; !done; calls++ {
				if calls > 40 {
					t.Fatal("the delete never finished")
				}
				var err error
				if done, err = e.store.DeleteSession(e.ctx, chat.DeleteRequest{Principal: alice, SessionID: "s1", MaxItems: 2}); err != nil {
					t.Fatalf("delete call %d: %v", calls+1, err)
				}
				if !done {
					// Between calls the session is already gone for every
					// route, and no turn can start in it.
					if _, err := e.store.GetSession(e.ctx, "s1", alice); !errors.Is(err, chat.ErrSessionNotFound) {
						t.Fatalf("GetSession between delete calls: %v", err)
					}
					if _, err := e.store.ClaimTurn(e.ctx, claimRequest("s1", "t9")); !errors.Is(err, chat.ErrSessionNotFound) {
						t.Fatalf("a claim between delete calls: %v", err)
					}
					if ids := listedIDs(lists(e).listSessions(chat.SessionListRequest{Principal: alice})); len(ids) != 0 {
						t.Fatalf("listed between delete calls: %v", ids)
					}
				}
			}
			t.Logf("7 turns deleted in %d calls of at most 2 items", calls)
			c := e.claim("s1", "t1")
			if !c.Created {
				t.Error("the id is not free after the delete")
			}
		},
		"BadDeleteRequest": func(t *testing.T, env *env) {
			e := deletes{env}
			e.completeTurn("s1", "t1")
			for _, n := range []int{-1, chat.MaxDeleteItems + 1} {
				if _, err := e.store.DeleteSession(e.ctx, chat.DeleteRequest{Principal: alice, SessionID: "s1", MaxItems: n}); !errors.Is(err, chat.ErrInvalidRequest) {
					t.Errorf("MaxItems %d: %v, want ErrInvalidRequest", n, err)
				}
				if _, err := e.store.EraseSessions(e.ctx, chat.DeleteRequest{Principal: alice, MaxItems: n}); !errors.Is(err, chat.ErrInvalidRequest) {
					t.Errorf("erase, MaxItems %d: %v, want ErrInvalidRequest", n, err)
				}
			}
			if got := e.find("s1", "t1"); got.Status != chat.TurnComplete {
				t.Errorf("after the refused deletes: %+v", got)
			}
		},
		"EraseDeletesEverySessionOfOnePrincipal": func(t *testing.T, env *env) {
			e := deletes{env}
			for _, id := range []string{"a1", "a2", "a3"} {
				e.completeTurns(id, id+"-t", 2)
			}
			c := e.claim("a4", "a4-t1") // running, and never released: listed from its claim
			m, err := e.store.ClaimTurn(e.ctx, foreignClaim("m1", "tm"))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.store.ReleaseTurn(e.ctx, chat.ReleaseRequest{Claim: m, Outcome: chat.OutcomeCompleted, Sequence: 1}); err != nil {
				t.Fatal(err)
			}
			var total chat.Erased
			for calls := 0; ; calls++ {
				if calls > 20 {
					t.Fatal("the erase never finished")
				}
				got, err := e.store.EraseSessions(e.ctx, chat.DeleteRequest{Principal: alice, MaxItems: 3})
				if err != nil {
					t.Fatal(err)
				}
				total.Deleted += got.Deleted
				if got.Busy == 1 && !got.Done {
					if calls > 10 {
						// The running turn ends; the next call deletes it.
						e.save(c, e.turnFor(c, "a4"))
						e.release("a4", c, chat.OutcomeCompleted, 2)
					}
					continue
				}
				if got.Done {
					break
				}
			}
			if total.Deleted != 4 {
				t.Errorf("erased %d sessions, want 4", total.Deleted)
			}
			for _, id := range []string{"a1", "a2", "a3", "a4"} {
				if _, err := e.store.GetSession(e.ctx, id, alice); !errors.Is(err, chat.ErrSessionNotFound) {
					t.Errorf("%s after the erase: %v", id, err)
				}
			}
			if _, err := e.store.GetSession(e.ctx, "m1", mallory); err != nil {
				t.Errorf("mallory's session after alice's erase: %v", err)
			}
			if got, err := e.store.EraseSessions(e.ctx, chat.DeleteRequest{Principal: alice}); err != nil || !got.Done || got.Deleted != 0 {
				t.Errorf("a repeated erase: %+v, %v; want done, nothing deleted", got, err)
			}
		},
	}
}

// deletes is an env with the helpers of the delete cases.
type deletes struct{ *env }

// deleteAll deletes a session of p to the end, in as many calls as it
// takes, and fails the test on error.
func (e deletes) deleteAll(p chat.Principal, sessionID string) {
	e.t.Helper()
	for range 100 {
		done, err := e.store.DeleteSession(e.ctx, chat.DeleteRequest{Principal: p, SessionID: sessionID})
		if err != nil {
			e.t.Fatalf("DeleteSession(%s): %v", sessionID, err)
		}
		if done {
			return
		}
	}
	e.t.Fatalf("DeleteSession(%s) never finished", sessionID)
}

// usageOf reads p's usage now and fails the test on error.
func (e deletes) usageOf(p chat.Principal) *chat.PrincipalUsage {
	e.t.Helper()
	return e.usage(p, e.clock.Now())
}
