package dynamo_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

// TestFunctionActionsCoverIssuedOperations drives every Store method down
// its happy, rejected and fallback paths, records with request-counting
// middleware which DynamoDB operations each issues, and checks that each
// is granted to every function that calls the method (the IAM action lists
// the SAM template uses).
func TestFunctionActionsCoverIssuedOperations(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	s := e.store()
	issued := map[string]map[string]bool{}
	call := func(method string, fn func() error) {
		t.Helper()
		e.count.Reset()
		_ = fn() // rejections are part of the paths being covered
		for _, op := range e.count.Take() {
			if issued[method] == nil {
				issued[method] = map[string]bool{}
			}
			issued[method][op] = true
		}
	}
	big := turnOf(&chat.Claim{}, "s1", textMessages("t", randomText(2, 600_000)))

	var c1, c3 *chat.Claim
	call("ClaimTurn", func() (err error) { c1, err = s.ClaimTurn(ctx, claimReq("s1", "t1")); return err })
	call("ClaimTurn", func() error { _, err := s.ClaimTurn(ctx, claimReq("s1", "t2")); return err })
	call("LoadContext", func() error { _, _, err := s.LoadContext(ctx, "s1", 5, 1000); return err })
	call("RenewLease", func() error {
		_, err := s.RenewLease(ctx, chat.RenewRequest{Claim: c1, ExpiresAt: e.clock.Now().Add(lease)})
		return err
	})
	cp := &chat.Checkpoint{SessionID: "s1", TurnID: "t1", Ordinal: c1.Lease.Ordinal, FirstSequence: 1, Sequence: 1,
		Messages: textMessages("t1", "a")}
	call("Checkpoint", func() error { _, err := s.Checkpoint(ctx, c1, cp); return err })
	cp2 := *cp
	cp2.Prior, cp2.PriorSequence, cp2.Sequence, cp2.Messages = cp.Messages, 1, 2, textMessages("t1", "ab")
	call("Checkpoint", func() error { _, err := s.Checkpoint(ctx, c1, &cp2); return err })
	var polled *chat.Turn
	call("PollTurn", func() (err error) { polled, err = s.PollTurn(ctx, "s1", c1.Lease.Ordinal, alice, nil); return err })
	cp3 := cp2
	cp3.Prior, cp3.PriorSequence, cp3.Sequence, cp3.Messages = cp2.Messages, 2, 3, textMessages("t1", "abc")
	call("Checkpoint", func() error { _, err := s.Checkpoint(ctx, c1, &cp3); return err })
	call("PollTurn", func() error { _, err := s.PollTurn(ctx, "s1", c1.Lease.Ordinal, alice, polled); return err })
	call("PollTurn", func() error { _, err := s.PollTurn(ctx, "s1", 99, alice, nil); return err })
	call("RequestStop", func() error { return s.RequestStop(ctx, "s1", "t1", alice) })
	use := func(turnID string, ids ...string) func() error {
		return func() error {
			return s.UseAttachments(ctx, chat.UseAttachmentsRequest{SessionID: "s1", TurnID: turnID, AttachmentIDs: ids, Until: e.clock.Now().Add(time.Hour)})
		}
	}
	call("UseAttachments", use("t1", "att_A"))
	call("UseAttachments", use("t2", "att_B", "att_A")) // refused: att_B is taken back
	call("RequestStop", func() error { return s.RequestStop(ctx, "s1", "t9", alice) })
	big.SessionID, big.TurnID, big.Ordinal = "s1", "t1", c1.Lease.Ordinal
	call("SaveTurn", func() error { return e.store().SaveTurn(ctx, c1, big) })
	call("SaveTurn", func() error { return s.SaveTurn(ctx, forged(c1, "another token"), big) })
	call("ReleaseTurn", func() error {
		_, err := s.ReleaseTurn(ctx, chat.ReleaseRequest{Claim: c1, Outcome: chat.OutcomeCompleted})
		return err
	})
	call("ReleaseTurn", func() error {
		_, err := e.store().ReleaseTurn(ctx, chat.ReleaseRequest{Claim: c1, Outcome: chat.OutcomeCompleted})
		return err
	})
	call("ClaimTurn", func() error { _, err := s.ClaimTurn(ctx, claimReq("s1", "t2")); return err })
	e.clock.Advance(lease)
	call("ClaimTurn", func() (err error) { c3, err = s.ClaimTurn(ctx, claimReq("s1", "t3")); return err }) // takeover
	call("Supersede", func() error { _, err := s.Supersede(ctx, c3, 1, 3); return err })
	call("Supersede", func() error { _, err := s.Supersede(ctx, forged(c1, "stale"), 1, 2); return err })
	call("GetSession", func() error { _, err := s.GetSession(ctx, "s1", alice); return err })
	call("ListTurns", func() error {
		_, err := s.ListTurns(ctx, chat.ListRequest{SessionID: "s1", Principal: alice})
		return err
	})
	call("ListTurns", func() error {
		_, err := s.ListTurns(ctx, chat.ListRequest{SessionID: "none", Principal: alice})
		return err
	})
	call("FindTurn", func() error { _, err := s.FindTurn(ctx, "s1", "t1", alice); return err })
	call("FindTurn", func() error { _, err := s.FindTurn(ctx, "s1", "missing", alice); return err })
	refs := []chat.ArtifactReference{{EntryPath: "a.md", ArtifactType: chat.ArtifactDocument}}
	call("PutArtifacts", func() error { _, err := s.PutArtifacts(ctx, "s1", "t1", host, refs); return err })
	call("PutArtifacts", func() error { _, err := s.PutArtifacts(ctx, "s1", "missing", host, refs); return err })
	call("GetArtifacts", func() error { _, err := s.GetArtifacts(ctx, "s1", "t1", alice); return err })
	call("GetArtifacts", func() error { _, err := s.GetArtifacts(ctx, "s1", "missing", alice); return err })
	// Queued turns: enqueued while a turn runs, cancelled, started.
	if _, err := s.ClaimTurn(ctx, claimReq("q", "run")); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"q1", "q2"} {
		call("EnqueueTurn", func() error {
			_, err := s.EnqueueTurn(ctx, chat.EnqueueRequest{SessionID: "q", TurnID: id, Principal: alice, InputHash: "h" + id,
				Message: textMessages(id, "x")[0], TTL: lease, Max: 4})
			return err
		})
	}
	call("QueuedTurns", func() error { _, err := s.QueuedTurns(ctx, "q", alice); return err })
	call("CancelQueued", func() error { return s.CancelQueued(ctx, "q", "q1", alice) })
	e.clock.Advance(lease)
	call("ClaimQueued", func() error { _, _, err := s.ClaimQueued(ctx, "q", lease); return err })
	call("CancelQueued", func() error { return s.CancelQueued(ctx, "q", "q2", alice) })
	// The usage ledger: counting (twice: the second is refused), reading
	// in the first hour of a month (two items) and later, listing,
	// admitting (and refusing), cancelling.
	entry := chat.LedgerEntry{SessionID: "s1", Ordinal: 1, Owner: alice, StartedAt: e.clock.Now(), Usage: chat.Usage{InputTokens: 1}}
	call("RecordUsage", func() error { return s.RecordUsage(ctx, entry) })
	call("RecordUsage", func() error { return s.RecordUsage(ctx, entry) })
	monthStart, _ := chat.PeriodMonth.Bounds(e.clock.Now())
	call("ReadUsage", func() error { _, err := s.ReadUsage(ctx, alice, monthStart.Add(time.Minute)); return err })
	call("ReadUsage", func() error { _, err := s.ReadUsage(ctx, alice, monthStart.Add(48*time.Hour)); return err })
	call("ListUsage", func() error {
		_, err := s.ListUsage(ctx, chat.UsageListRequest{Tenant: alice.Tenant, At: e.clock.Now()})
		return err
	})
	adm := chat.Admission{ID: "a1", StartedAt: monthStart.Add(time.Minute), ExpiresAt: monthStart.Add(2 * time.Minute)}
	call("Admit", func() error {
		_, err := s.Admit(ctx, chat.AdmitRequest{Principal: alice, Admission: adm, ConcurrentSessions: 1})
		return err
	})
	call("Admit", func() error {
		a2 := adm
		a2.ID = "a2"
		_, err := s.Admit(ctx, chat.AdmitRequest{Principal: alice, Admission: a2, ConcurrentSessions: 1})
		return err
	})
	call("CancelAdmission", func() error { return s.CancelAdmission(ctx, alice, adm) })
	// A principal's conversations: list, rename, rate, delete (refused
	// while a turn runs; then a crashed turn decided first) and erase.
	call("ListSessions", func() error { _, err := s.ListSessions(ctx, chat.SessionListRequest{Principal: alice}); return err })
	call("RenameSession", func() error { _, err := s.RenameSession(ctx, "s1", alice, "Named"); return err })
	call("SetFeedback", func() error {
		_, err := s.SetFeedback(ctx, "s1", "t1", alice, &chat.Feedback{Rating: chat.RatingUp})
		return err
	})
	if _, err := s.ClaimTurn(ctx, claimReq("del", "t1")); err != nil {
		t.Fatal(err)
	}
	call("DeleteSession", func() error {
		_, err := s.DeleteSession(ctx, chat.DeleteRequest{Principal: alice, SessionID: "del"})
		return err
	})
	e.clock.Advance(lease)
	call("DeleteSession", func() error {
		_, err := s.DeleteSession(ctx, chat.DeleteRequest{Principal: alice, SessionID: "del"})
		return err
	})
	call("EraseSessions", func() error {
		_, err := s.EraseSessions(ctx, chat.DeleteRequest{Principal: alice, MaxItems: 1})
		return err
	})
	call("EraseSessions", func() error { _, err := s.EraseSessions(ctx, chat.DeleteRequest{Principal: alice}); return err })
	// Versions of an answer (branches.go): a select, a claim that meets
	// the mark of a select cut short and finishes it, and a fork of a
	// turn whose messages are chunks.
	completeTurn(t, s, "br", "b1", 2)
	completeTurn(t, s, "br", "b2", 4)
	replaceTurn(t, s, "br", 2, "b3", 6)
	call("SelectTurn", func() error { return s.SelectTurn(ctx, "br", "b2", alice) })
	call("ForkSession", func() error {
		_, err := s.ForkSession(ctx, chat.ForkRequest{SessionID: "br", AtTurnID: "b2", NewSessionID: "br-fork", Principal: alice})
		return err
	})
	bigSession := "br-big"
	cb, err := s.ClaimTurn(ctx, claimReq(bigSession, "t1"))
	if err != nil {
		t.Fatal(err)
	}
	bigTurn := *big
	bigTurn.SessionID, bigTurn.TurnID, bigTurn.Ordinal = bigSession, "t1", cb.Lease.Ordinal
	if err := s.SaveTurn(ctx, cb, &bigTurn); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReleaseTurn(ctx, chat.ReleaseRequest{Claim: cb, Outcome: chat.OutcomeCompleted, Sequence: 2}); err != nil {
		t.Fatal(err)
	}
	call("ForkSession", func() error {
		_, err := s.ForkSession(ctx, chat.ForkRequest{SessionID: bigSession, AtTurnID: "t1", NewSessionID: "br-big-fork", Principal: alice})
		return err
	})
	// Each reader deciding a turn whose lease expired (fate.go).
	for _, m := range []string{"GetSession", "ListTurns", "FindTurn", "PollTurn"} {
		sid := "decide-" + m
		c, err := s.ClaimTurn(ctx, chat.ClaimRequest{SessionID: sid, TurnID: "t1", Principal: alice, LeaseDuration: lease})
		if err != nil {
			t.Fatal(err)
		}
		ack := &chat.Checkpoint{SessionID: sid, TurnID: "t1", Ordinal: c.Lease.Ordinal, FirstSequence: 1, Sequence: 1, Messages: textMessages("t1", "a")}
		if _, err := s.Checkpoint(ctx, c, ack); err != nil {
			t.Fatal(err)
		}
		more := *ack
		more.Prior, more.PriorSequence, more.Sequence, more.Messages = ack.Messages, 1, 2, textMessages("t1", "ab")
		if _, err := s.Checkpoint(ctx, c, &more); err != nil {
			t.Fatal(err)
		}
		if m == "PollTurn" {
			if polled, err = s.PollTurn(ctx, sid, c.Lease.Ordinal, alice, nil); err != nil {
				t.Fatal(err)
			}
		}
		e.clock.Advance(lease)
		call(m, func() error {
			switch m {
			case "GetSession":
				_, err = s.GetSession(ctx, sid, alice)
			case "ListTurns":
				_, err = s.ListTurns(ctx, chat.ListRequest{SessionID: sid, Principal: alice})
			case "FindTurn":
				_, err = s.FindTurn(ctx, sid, "t1", alice)
			case "PollTurn":
				_, err = s.PollTurn(ctx, sid, c.Lease.Ordinal, alice, polled)
			}
			return err
		})
	}

	functions := map[string]struct {
		methods []string
		actions []string
	}{
		"turn": {[]string{"ClaimTurn", "RenewLease", "RequestStop", "LoadContext", "Supersede", "SaveTurn", "ReleaseTurn", "FindTurn", "Checkpoint", "PollTurn", "GetSession", "EnqueueTurn", "ClaimQueued", "CancelQueued",
			"RecordUsage", "ReadUsage", "ListUsage", "Admit", "CancelAdmission", "UseAttachments"}, dynamo.TurnFunctionActions},
		"history": {[]string{"GetSession", "ListTurns", "FindTurn", "PollTurn", "QueuedTurns", "ReadUsage", "ListUsage",
			"ListSessions", "RenameSession", "SetFeedback", "DeleteSession", "EraseSessions", "SelectTurn", "ForkSession"}, dynamo.HistoryFunctionActions},
		"artifacts": {[]string{"PutArtifacts", "GetArtifacts"}, dynamo.ArtifactsFunctionActions},
	}
	for name, f := range functions {
		t.Run(name, func(t *testing.T) {
			for _, m := range f.methods {
				if len(issued[m]) == 0 {
					t.Errorf("%s issued no request: the scenario does not cover it", m)
				}
				for op := range issued[m] {
					if !slices.Contains(f.actions, "dynamodb:"+op) {
						t.Errorf("%s issues %s, which the %s function's actions %v lack", m, op, name, f.actions)
					}
				}
			}
			if !slices.IsSorted(f.actions) || len(slices.Compact(slices.Clone(f.actions))) != len(f.actions) {
				t.Errorf("actions %v are not sorted and unique", f.actions)
			}
		})
	}
	// The paths above must include the fallbacks the table exists for.
	for _, want := range []struct{ method, op string }{
		{"SaveTurn", "PutItem"}, {"SaveTurn", "DeleteItem"},
		{"ClaimTurn", "GetItem"}, {"ReleaseTurn", "GetItem"}, {"ListTurns", "GetItem"},
		{"Supersede", "UpdateItem"}, {"PollTurn", "BatchGetItem"},
		{"GetSession", "UpdateItem"}, {"ListTurns", "UpdateItem"}, {"FindTurn", "UpdateItem"}, {"PollTurn", "UpdateItem"},
		{"ReadUsage", "BatchGetItem"}, {"ReadUsage", "GetItem"}, {"Admit", "UpdateItem"},
		{"SelectTurn", "UpdateItem"}, {"ForkSession", "PutItem"},
	} {
		if !issued[want.method][want.op] {
			t.Errorf("scenario did not reach %s's %s path", want.method, want.op)
		}
	}
}
