package dynamo_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/ddbfault"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

// replaceTurn runs a turn of alice that replaces the turn at ordinal (a
// regeneration): claim, Supersede, save with the group it joined, release.
func replaceTurn(t *testing.T, s *dynamo.Store, sessionID string, ordinal int64, turnID string, sequence int64) {
	t.Helper()
	ctx := context.Background()
	c, err := s.ClaimTurn(ctx, claimReq(sessionID, turnID))
	if err != nil {
		t.Fatal(err)
	}
	g, err := s.Supersede(ctx, c, ordinal, c.Lease.Ordinal)
	if err != nil {
		t.Fatal(err)
	}
	turn := turnOf(c, sessionID, textMessages(turnID, "answer"))
	turn.Siblings = g
	if err := s.SaveTurn(ctx, c, turn); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReleaseTurn(ctx, chat.ReleaseRequest{Claim: c, Outcome: chat.OutcomeCompleted, Sequence: sequence}); err != nil {
		t.Fatal(err)
	}
}

// activeBranch returns the turn ids ListTurns shows, oldest first.
func activeBranch(t *testing.T, s *dynamo.Store, sessionID string) []string {
	t.Helper()
	page, err := s.ListTurns(context.Background(), chat.ListRequest{SessionID: sessionID, Principal: alice, Order: chat.OrderAsc, Limit: chat.MaxPageLimit})
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(page.Turns))
	for i, turn := range page.Turns {
		ids[i] = turn.TurnID
	}
	return ids
}

// branchSession is t1, t2, t3, then r replacing t2 and u after it: the
// active branch t1 r u, and t2 t3 off it.
func branchSession(t *testing.T, s *dynamo.Store) {
	t.Helper()
	completeTurn(t, s, "s1", "t1", 2)
	completeTurn(t, s, "s1", "t2", 4)
	completeTurn(t, s, "s1", "t3", 6)
	replaceTurn(t, s, "s1", 2, "r", 8)
	completeTurn(t, s, "s1", "u", 10)
}

// TestSelectUnderFaults: a select whose mark or turn writes applied with
// their answers lost is a select; one cut short leaves a branch readers can
// show (a prefix of the branch that leaves), keeps turns from starting
// until its mark expires, and is finished by the first claim after that;
// faults below the SDK's retryer.
func TestSelectUnderFaults(t *testing.T) {
	selectWrite := ddbfault.For("UpdateItem", dynamo.PurposeSelect)
	for _, fault := range []ddbfault.Fault{ddbfault.LoseAnswer, ddbfault.ServerErrorAfter} {
		for what, on := range map[string]string{"mark": `"sk":{"S":"SESSION"}`, "turn": `"sk":{"S":"TURN#`} {
			t.Run(what+" "+fault.String(), func(t *testing.T) {
				e := newFaultEnv(t)
				ctx := faultCtx(t)
				branchSession(t, e.s)
				e.faults.SetRule(ddbfault.Once(fault, ddbfault.For("UpdateItem", dynamo.PurposeSelect, on)))
				if err := e.s.SelectTurn(ctx, "s1", "t2", alice); err != nil {
					t.Fatalf("a select whose write applied unanswered: %v", err)
				}
				if n := e.faults.Counts()[fault]; n != 1 {
					t.Fatalf("%d attempts met %v, want 1", n, fault)
				}
				e.faults.SetRule(nil)
				if got := activeBranch(t, e.s, "s1"); !slices.Equal(got, []string{"t1", "t2", "t3"}) {
					t.Errorf("active branch %v, want t1 t2 t3", got)
				}
				if _, err := e.s.ClaimTurn(ctx, claimReq("s1", "next")); err != nil {
					t.Errorf("a claim after the select: %v (its mark left behind?)", err)
				}
			})
		}
	}
	t.Run("cut short", func(t *testing.T) {
		e := newFaultEnv(t)
		ctx := faultCtx(t)
		branchSession(t, e.s)
		// The first turn write lands (u leaves), every later one fails.
		landed := 0
		e.faults.SetRule(func(a ddbfault.Attempt) ddbfault.Fault {
			if !selectWrite(a) || a.Has(`"sk":{"S":"SESSION"}`) {
				return ddbfault.Pass
			}
			if landed == 0 {
				landed++
				return ddbfault.Pass
			}
			return ddbfault.ServerErrorBefore
		})
		if err := e.s.SelectTurn(ctx, "s1", "t2", alice); err == nil {
			t.Fatal("a select whose turn writes failed reported success")
		}
		e.faults.SetRule(nil)
		if got := activeBranch(t, e.s, "s1"); !slices.Equal(got, []string{"t1", "r"}) {
			t.Errorf("active branch after a cut select %v, want the prefix t1 r", got)
		}
		if _, err := e.s.ClaimTurn(ctx, claimReq("s1", "next")); !errors.Is(err, chat.ErrSessionBusy) {
			t.Fatalf("a claim while the select's mark holds: %v, want ErrSessionBusy", err)
		}
		if err := e.s.SelectTurn(ctx, "s1", "r", alice); !errors.Is(err, chat.ErrSessionBusy) {
			t.Fatalf("another select while the mark holds: %v, want ErrSessionBusy", err)
		}
		if _, err := e.s.ForkSession(ctx, chat.ForkRequest{SessionID: "s1", AtTurnID: "t1", NewSessionID: "f1", Principal: alice}); !errors.Is(err, chat.ErrSessionBusy) {
			t.Fatalf("a fork while the mark holds: %v, want ErrSessionBusy", err)
		}
		e.clock.Advance(31 * time.Second)
		if _, err := e.s.ClaimTurn(ctx, claimReq("s1", "next")); !errors.Is(err, chat.ErrSessionBusy) {
			t.Fatalf("the claim that finishes the select: %v, want ErrSessionBusy (the session changed)", err)
		}
		if got := activeBranch(t, e.s, "s1"); !slices.Equal(got, []string{"t1", "t2", "t3"}) {
			t.Errorf("active branch once finished %v, want t1 t2 t3", got)
		}
		c, err := e.s.ClaimTurn(ctx, claimReq("s1", "next"))
		if err != nil {
			t.Fatalf("a claim after the finished select: %v", err)
		}
		if c.Lease.Ordinal != 6 {
			t.Errorf("the claim's ordinal %d, want 6", c.Lease.Ordinal)
		}
		t2, err := e.s.FindTurn(ctx, "s1", "t2", alice)
		if err != nil {
			t.Fatal(err)
		}
		members := t2.Siblings
		if members == nil || len(members.Members) != 2 || members.Members[1].TurnID != "r" {
			t.Errorf("the selected member's group %+v, want t2 and r", members)
		}
	})
}

// TestForkUnderFaults: a fork whose copies or session write applied with
// their answers lost is a fork; one cut short leaves no session (its
// copies are not a session until its item is written) and the same call
// finishes it; faults below the SDK's retryer.
func TestForkUnderFaults(t *testing.T) {
	req := chat.ForkRequest{SessionID: "s1", AtTurnID: "r", NewSessionID: "s2", Principal: alice, Title: "Forked"}
	for _, fault := range []ddbfault.Fault{ddbfault.LoseAnswer, ddbfault.ServerErrorAfter} {
		for what, on := range map[string]string{"session": `"sk":{"S":"SESSION"}`, "turn": `"sk":{"S":"TURN#`} {
			t.Run(what+" "+fault.String(), func(t *testing.T) {
				e := newFaultEnv(t)
				ctx := faultCtx(t)
				branchSession(t, e.s)
				e.faults.SetRule(ddbfault.Once(fault, ddbfault.For("UpdateItem", dynamo.PurposeFork, on)))
				if _, err := e.s.ForkSession(ctx, req); err != nil {
					t.Fatalf("a fork whose write applied unanswered: %v", err)
				}
				if n := e.faults.Counts()[fault]; n != 1 {
					t.Fatalf("%d attempts met %v, want 1", n, fault)
				}
				e.faults.SetRule(nil)
				s2, err := e.s.GetSession(ctx, "s2", alice)
				if err != nil {
					t.Fatal(err)
				}
				if s2.NextOrdinal != 3 {
					t.Errorf("forked session next ordinal %d, want 3", s2.NextOrdinal)
				}
				if got := activeBranch(t, e.s, "s2"); !slices.Equal(got, []string{"t1", "r"}) {
					t.Errorf("the fork's turns %v, want t1 r", got)
				}
			})
		}
	}
	t.Run("cut short", func(t *testing.T) {
		e := newFaultEnv(t)
		ctx := faultCtx(t)
		branchSession(t, e.s)
		e.faults.SetRule(ddbfault.Always(ddbfault.ServerErrorBefore, ddbfault.For("UpdateItem", dynamo.PurposeFork, `"sk":{"S":"SESSION"}`)))
		if _, err := e.s.ForkSession(ctx, req); err == nil {
			t.Fatal("a fork whose session write failed reported success")
		}
		e.faults.SetRule(nil)
		if _, err := e.s.GetSession(ctx, "s2", alice); !errors.Is(err, chat.ErrSessionNotFound) {
			t.Fatalf("the session of a cut fork: %v, want ErrSessionNotFound", err)
		}
		if _, err := e.s.ForkSession(ctx, req); err != nil {
			t.Fatalf("the same fork again: %v", err)
		}
		if got := activeBranch(t, e.s, "s2"); !slices.Equal(got, []string{"t1", "r"}) {
			t.Errorf("the fork's turns %v, want t1 r", got)
		}
		other := req
		other.AtTurnID = "u"
		if _, err := e.s.ForkSession(ctx, other); !errors.Is(err, chat.ErrConflict) {
			t.Errorf("another fork into the same id: %v, want ErrConflict", err)
		}
	})
}

// TestRestoreUnderFaults: a regeneration lost before its first
// checkpoint is decided by the next reader, which brings back what its
// supersession hid, though the writes that do so apply with their
// answers lost (or fail once before applying: the next reader finishes);
// faults below the SDK's retryer.
func TestRestoreUnderFaults(t *testing.T) {
	restore := ddbfault.For("UpdateItem", dynamo.PurposeFence, `"sk":{"S":"TURN#`, "hiddenBy")
	for _, fault := range []ddbfault.Fault{ddbfault.LoseAnswer, ddbfault.ServerErrorAfter, ddbfault.ServerErrorBefore} {
		t.Run(fault.String(), func(t *testing.T) {
			e := newFaultEnv(t)
			ctx := faultCtx(t)
			completeTurn(t, e.s, "s1", "t1", 2)
			completeTurn(t, e.s, "s1", "t2", 4)
			req := claimReq("s1", "r")
			req.Lineage = protocol.Lineage{Operation: protocol.OperationRegenerate, ParentTurnID: "t2", SourceMessageID: "t2.a"}
			c, err := e.s.ClaimTurn(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.s.Supersede(ctx, c, 2, c.Lease.Ordinal); err != nil {
				t.Fatal(err)
			}
			e.clock.Advance(time.Minute)
			e.faults.SetRule(ddbfault.Always(fault, restore))
			// The read decides the lost turn; when the restore failed, the
			// decision is left half done (the session still shows the
			// lease as stored) for the next reader to finish.
			_, _ = e.s.GetSession(ctx, "s1", alice)
			e.faults.SetRule(nil)
			if n := injected(e.faults); n == 0 {
				t.Fatal("no restore write met the fault")
			}
			if _, err := e.s.GetSession(ctx, "s1", alice); err != nil {
				t.Fatal(err)
			}
			if got := activeBranch(t, e.s, "s1"); !slices.Equal(got, []string{"t1", "t2"}) {
				t.Errorf("active branch %v, want t1 t2 brought back", got)
			}
		})
	}
}
