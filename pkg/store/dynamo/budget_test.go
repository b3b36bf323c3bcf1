package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/turnstream/turnstream/internal/dynalite"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

var (
	alice   = chat.Principal{Subject: "alice", Tenant: "acme"}
	mallory = chat.Principal{Subject: "mallory", Tenant: "acme"}
	host    = chat.Principal{Subject: "host", Tenant: "acme", Trusted: true}
)

const lease = 30 * time.Second

func claimReq(sessionID, turnID string) chat.ClaimRequest {
	return chat.ClaimRequest{
		SessionID: sessionID, TurnID: turnID, Principal: alice,
		InputHash:     chat.HashInput("input of " + turnID),
		Lineage:       protocol.Lineage{Operation: protocol.OperationSubmit},
		DefinitionID:  "assistant",
		LeaseDuration: lease,
	}
}

func turnOf(c *chat.Claim, sessionID string, msgs []protocol.Message) *chat.Turn {
	return &chat.Turn{
		SessionID: sessionID, TurnID: c.Lease.TurnID, Ordinal: c.Lease.Ordinal,
		Status: chat.TurnComplete, Lineage: c.Lease.Lineage, InputHash: c.Lease.InputHash,
		Messages: msgs, FirstSequence: c.BaseSequence + 1, LastSequence: c.BaseSequence + 2,
	}
}

func textMessages(turnID, text string) []protocol.Message {
	return []protocol.Message{
		{ID: turnID + "-u", Role: protocol.RoleUser, Content: "input of " + turnID, Status: protocol.MessageComplete, CreatedAt: "2026-11-29T12:00:00.000Z"},
		{ID: turnID + "-a", Role: protocol.RoleAssistant, Content: text, Status: protocol.MessageComplete, CreatedAt: "2026-11-29T12:00:01.000Z"},
	}
}

// TestRequestBudgets walks a session through its life and asserts the exact
// DynamoDB requests of every step against
// docs/design.md#storage-one-dynamodb-table's budgets: claim 1, context load 1
// (0 for a new session), save 1, release 1, renew 1, history page 1, artifacts
// write <= 2, rejected claim <= 2, takeover <= 3.
func TestRequestBudgets(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	ctx := context.Background()
	var c1, c2, c3, crashed *chat.Claim

	steps := []struct {
		name    string
		run     func() error
		want    []string // operations, in order
		wantErr error
	}{
		{"claim creates the session", func() (err error) {
			c1, err = s.ClaimTurn(ctx, claimReq("s1", "t1"))
			return err
		}, []string{"UpdateItem"}, nil},
		{"context load of a new session", func() error {
			_, _, err := s.LoadContext(ctx, "s1", c1.Lease.Ordinal, 1000)
			return err
		}, nil, nil},
		{"lease renewal", func() error {
			_, err := s.RenewLease(ctx, chat.RenewRequest{Claim: c1, ExpiresAt: e.clock.Now().Add(lease), Sequence: 1})
			return err
		}, []string{"UpdateItem"}, nil},
		{"stop", func() error { return s.RequestStop(ctx, "s1", "t1", alice) }, []string{"UpdateItem", "UpdateItem"}, nil}, // the session's lease, then the checkpoint live item
		{"save", func() error {
			return s.SaveTurn(ctx, c1, turnOf(c1, "s1", textMessages("t1", "hello")))
		}, []string{"UpdateItem"}, nil},
		{"release", func() error {
			_, err := s.ReleaseTurn(ctx, chat.ReleaseRequest{Claim: c1, Outcome: chat.OutcomeCompleted, Sequence: 2})
			return err
		}, []string{"UpdateItem"}, nil},
		{"claim of an idle session", func() (err error) {
			c2, err = s.ClaimTurn(ctx, claimReq("s1", "t2"))
			return err
		}, []string{"UpdateItem"}, nil},
		{"context load", func() error {
			turns, _, err := s.LoadContext(ctx, "s1", c2.Lease.Ordinal, 1000)
			if err == nil && len(turns) != 1 {
				t.Errorf("context has %d turns, want 1", len(turns))
			}
			return err
		}, []string{"Query"}, nil},
		{"claim rejected: busy", func() error {
			_, err := s.ClaimTurn(ctx, claimReq("s1", "t3"))
			return err
		}, []string{"UpdateItem", "GetItem"}, chat.ErrSessionBusy},
		{"claim rejected: not the owner", func() error {
			req := claimReq("s1", "t3")
			req.Principal = mallory
			_, err := s.ClaimTurn(ctx, req)
			return err
		}, []string{"UpdateItem", "GetItem"}, chat.ErrSessionNotFound},
		{"save and release", func() error {
			if err := s.SaveTurn(ctx, c2, turnOf(c2, "s1", textMessages("t2", "again"))); err != nil {
				return err
			}
			_, err := s.ReleaseTurn(ctx, chat.ReleaseRequest{Claim: c2, Outcome: chat.OutcomeCompleted, Sequence: 4})
			return err
		}, []string{"UpdateItem", "UpdateItem"}, nil},
		{"claim rejected: replay of a completed turn", func() error {
			_, err := s.ClaimTurn(ctx, claimReq("s1", "t1"))
			return err
		}, []string{"UpdateItem", "GetItem"}, chat.ErrTurnCompleted},
		{"history page", func() error {
			page, err := s.ListTurns(ctx, chat.ListRequest{SessionID: "s1", Principal: alice, Limit: 1})
			if err == nil && (len(page.Turns) != 1 || !page.HasMore) {
				t.Errorf("page: %d turns, hasMore %v; want 1, true", len(page.Turns), page.HasMore)
			}
			return err
		}, []string{"Query"}, nil},
		{"history page of another principal", func() error {
			_, err := s.ListTurns(ctx, chat.ListRequest{SessionID: "s1", Principal: mallory})
			return err
		}, []string{"Query"}, chat.ErrSessionNotFound},
		{"find turn", func() error {
			_, err := s.FindTurn(ctx, "s1", "t2", alice)
			return err
		}, []string{"Query"}, nil},
		{"artifacts write", func() error {
			_, err := s.PutArtifacts(ctx, "s1", "t2", host, []chat.ArtifactReference{{EntryPath: "out/report.md", ArtifactType: chat.ArtifactDocument}})
			return err
		}, []string{"Query", "UpdateItem"}, nil},
		{"artifacts read", func() error {
			refs, err := s.GetArtifacts(ctx, "s1", "t2", alice)
			if err == nil && len(refs) != 1 {
				t.Errorf("artifacts %v, want the one written", refs)
			}
			return err
		}, []string{"Query"}, nil},
		{"get session", func() error {
			_, err := s.GetSession(ctx, "s1", alice)
			return err
		}, []string{"GetItem"}, nil},
		{"claim a turn that then crashes", func() (err error) {
			crashed, err = s.ClaimTurn(ctx, claimReq("s1", "t3"))
			return err
		}, []string{"UpdateItem"}, nil},
		{"takeover of an expired lease", func() (err error) {
			e.clock.Advance(lease)
			c3, err = s.ClaimTurn(ctx, claimReq("s1", "t4"))
			if err == nil && c3.BaseSequence != 4+chat.SequenceGapAfterCrash {
				t.Errorf("takeover BaseSequence %d, want %d", c3.BaseSequence, 4+chat.SequenceGapAfterCrash)
			}
			return err
		}, []string{"UpdateItem", "GetItem", "UpdateItem", "UpdateItem", "Query", "UpdateItem", "UpdateItem"}, nil}, // claim, classify, then deciding the crashed turn (fate.go: fence the session, fence the live item, read the turn, close it) and the claim in the compare-and-set that frees the session
		{"release through another Store instance", func() error {
			_, err := e.store().ReleaseTurn(ctx, chat.ReleaseRequest{Claim: c3, Outcome: chat.OutcomeIndeterminate, Sequence: c3.BaseSequence})
			return err
		}, []string{"UpdateItem"}, nil},
		{"retried release", func() error {
			_, err := s.ReleaseTurn(ctx, chat.ReleaseRequest{Claim: c3, Outcome: chat.OutcomeIndeterminate, Sequence: c3.BaseSequence})
			return err
		}, []string{"UpdateItem", "GetItem"}, nil},
		{"release by the crashed turn", func() error {
			_, err := s.ReleaseTurn(ctx, chat.ReleaseRequest{Claim: crashed, Outcome: chat.OutcomeCompleted})
			return err
		}, []string{"UpdateItem", "GetItem"}, chat.ErrLeaseLost},
	}
	for _, st := range steps {
		e.count.Reset()
		err := st.run()
		if !errors.Is(err, st.wantErr) {
			t.Fatalf("%s: error %v, want %v", st.name, err, st.wantErr)
		}
		if got := e.count.Take(); !slices.Equal(got, st.want) {
			t.Errorf("%s: requests %v, want %v", st.name, got, st.want)
		}
	}
}

// TestConditionFailureItemSavesTheRead simulates real DynamoDB, which
// returns the item with a failed condition when asked
// (ReturnValuesOnConditionCheckFailure; dynalite ignores it): a rejected
// claim then costs the one UpdateItem.
func TestConditionFailureItemSavesTheRead(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	plain, err := dynamo.NewClient(ctx, dynaliteOptions(t)) // uncounted: plays the server's part
	if err != nil {
		t.Fatal(err)
	}
	s := dynamo.New(&returnOldClient{Client: e.client, server: plain, table: e.table},
		dynamo.Options{Table: e.table, Now: e.clock.Now, CursorKey: testCursorKey})
	if _, err := s.ClaimTurn(ctx, claimReq("s1", "t1")); err != nil {
		t.Fatal(err)
	}
	e.count.Reset()
	_, err = s.ClaimTurn(ctx, claimReq("s1", "t2"))
	if !errors.Is(err, chat.ErrSessionBusy) {
		t.Fatalf("second claim: %v, want ErrSessionBusy", err)
	}
	if got, want := e.count.Take(), []string{"UpdateItem"}; !slices.Equal(got, want) {
		t.Errorf("requests %v, want %v", got, want)
	}
}

// TestRequestBudgetsPastTheWindow: once the terminal window is full, a
// claim adds one Query of TurnIDIndex (its turn id may have left the
// window), whatever the session's depth; a replay of a turn that left it
// is found there and gives the claim back.
func TestRequestBudgetsPastTheWindow(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	ctx := context.Background()
	for i := range chat.DefaultTerminalWindow + 1 {
		completeTurn(t, s, "s1", fmt.Sprintf("t%d", i), int64(i+1))
	}
	e.count.Reset()
	_, err := s.ClaimTurn(ctx, claimReq("s1", "t0"))
	if !errors.Is(err, chat.ErrTurnCompleted) {
		t.Fatalf("replay of a turn that left the window: %v, want ErrTurnCompleted", err)
	}
	if got, want := e.count.Take(), []string{"UpdateItem", "Query", "UpdateItem"}; !slices.Equal(got, want) {
		t.Errorf("rejected replay: requests %v, want %v (claim, lookup, give back)", got, want)
	}
	c, err := s.ClaimTurn(ctx, claimReq("s1", "fresh"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := e.count.Take(), []string{"UpdateItem", "Query"}; !slices.Equal(got, want) {
		t.Errorf("claim past a full window: requests %v, want %v", got, want)
	}
	if c.Lease.Ordinal != int64(chat.DefaultTerminalWindow+2) || len(c.Session.TerminalTurns) != chat.DefaultTerminalWindow {
		t.Errorf("claim ordinal %d, window %d entries; want %d, %d", c.Lease.Ordinal, len(c.Session.TerminalTurns),
			chat.DefaultTerminalWindow+2, chat.DefaultTerminalWindow)
	}
}

// TestSessionWritesStayOneUnit: the claim and the release each rewrite
// the session item, which must stay one write unit (under 1 KB) however
// deep the session: the window keeps only the newest turns. dynalite
// reports a write's base-table units as AWS computes them (the larger of
// the old and new item, per KB).
func TestSessionWritesStayOneUnit(t *testing.T) {
	var mu sync.Mutex
	units := map[string]float64{} // by the session write: claim, release
	record := func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("capacity",
				func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
					up, ok := in.Parameters.(*dynamodb.UpdateItemInput)
					if ok {
						up.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
					}
					out, md, err := next.HandleInitialize(ctx, in)
					if r, isUp := out.Result.(*dynamodb.UpdateItemOutput); ok && isUp && r.ConsumedCapacity != nil {
						if sk, _ := up.Key["sk"].(*types.AttributeValueMemberS); sk != nil && sk.Value == "SESSION" {
							mu.Lock()
							kind := "release"
							if strings.Contains(aws.ToString(up.ConditionExpression), "attribute_not_exists(#leaseToken)") {
								kind = "claim"
							}
							units[kind] = max(units[kind], aws.ToFloat64(r.ConsumedCapacity.CapacityUnits))
							mu.Unlock()
						}
					}
					return out, md, err
				}), middleware.After)
		})
	}
	client, err := dynamo.NewClient(context.Background(), dynaliteOptions(t), record)
	if err != nil {
		t.Fatal(err)
	}
	s := dynamo.New(client, dynamo.Options{Table: dynalite.Table(t), CursorKey: testCursorKey})
	ctx := context.Background()
	// UUID-sized ids, as clients send them.
	id := func(n int) string { return fmt.Sprintf("%08x-0000-4000-8000-%012x", n, n) }
	sid := id(0)
	for i := 1; i <= 3*chat.DefaultTerminalWindow; i++ {
		c, err := s.ClaimTurn(ctx, claimReq(sid, id(i)))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.SaveTurn(ctx, c, turnOf(c, sid, textMessages(id(i), "answer"))); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ReleaseTurn(ctx, chat.ReleaseRequest{Claim: c, Outcome: chat.OutcomeCompleted, Sequence: c.BaseSequence + 2}); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, kind := range []string{"claim", "release"} {
		if got, ok := units[kind]; !ok || got != 1 {
			t.Errorf("largest %s write: %v units (seen %v), want 1 at every depth", kind, got, ok)
		}
	}
}
