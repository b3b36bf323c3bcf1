package dynamo_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/turnstream/turnstream/internal/dynalite"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

func dynaliteOptions(tb testing.TB) dynamo.ClientOptions {
	tb.Helper()
	return dynalite.Options(tb)
}

// returnOldClient plays real DynamoDB's ReturnValuesOnConditionCheckFailure
// (which dynalite ignores): it attaches the item, read through server, to
// a failed condition of a request that asked for ALL_OLD.
type returnOldClient struct {
	dynamo.Client
	server *dynamodb.Client
	table  string
}

func (c *returnOldClient) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	out, err := c.Client.UpdateItem(ctx, in, optFns...)
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) && ccf.Item == nil && in.ReturnValuesOnConditionCheckFailure == types.ReturnValuesOnConditionCheckFailureAllOld {
		got, gerr := c.server.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(c.table), Key: in.Key, ConsistentRead: aws.Bool(true)})
		if gerr != nil {
			return nil, gerr
		}
		ccf.Item = got.Item
	}
	return out, err
}

// faultClient fails every call of operation op with err and passes the
// rest to Client.
type faultClient struct {
	dynamo.Client
	op  string
	err error
}

func (c *faultClient) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if c.op == "GetItem" {
		return nil, c.err
	}
	return c.Client.GetItem(ctx, in, optFns...)
}

func (c *faultClient) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if c.op == "PutItem" {
		return nil, c.err
	}
	return c.Client.PutItem(ctx, in, optFns...)
}

func (c *faultClient) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if c.op == "UpdateItem" {
		return nil, c.err
	}
	return c.Client.UpdateItem(ctx, in, optFns...)
}

func (c *faultClient) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	if c.op == "Query" {
		return nil, c.err
	}
	return c.Client.Query(ctx, in, optFns...)
}

// TestErrorTranslation checks the edge between SDK errors and the chat
// sentinels: a failed condition becomes the sentinel of the method's
// contract; any other failure is wrapped with what was attempted, keeps the
// SDK error reachable with errors.As, and is never a chat sentinel (so
// handlers report it as an internal failure, not as a client error).
func TestErrorTranslation(t *testing.T) {
	throttled := &smithy.GenericAPIError{Code: "ProvisionedThroughputExceededException", Message: "slow down"}
	ccf := &types.ConditionalCheckFailedException{Message: aws.String("The conditional request failed")}
	sentinels := []error{chat.ErrSessionNotFound, chat.ErrSessionBusy, chat.ErrTurnCompleted, chat.ErrTurnIndeterminate,
		chat.ErrTurnIDReused, chat.ErrTurnNotFound, chat.ErrTurnNotActive, chat.ErrLeaseLost, chat.ErrConflict,
		chat.ErrInvalidCursor, chat.ErrInvalidRequest, chat.ErrInvalidArtifact}

	tests := map[string]struct {
		op       string // the failing operation
		err      error
		call     func(context.Context, *dynamo.Store, *chat.Claim) error
		wantIs   error  // a sentinel, or nil for a wrapped SDK error
		wantText string // the attempted action, for wrapped errors
	}{
		"claim throttled": {"UpdateItem", throttled, func(ctx context.Context, s *dynamo.Store, _ *chat.Claim) error {
			_, err := s.ClaimTurn(ctx, claimReq("s2", "t1"))
			return err
		}, nil, "claim session s2"},
		"renew condition failed": {"UpdateItem", ccf, func(ctx context.Context, s *dynamo.Store, c *chat.Claim) error {
			_, err := s.RenewLease(ctx, chat.RenewRequest{Claim: c})
			return err
		}, chat.ErrLeaseLost, ""},
		"renew throttled": {"UpdateItem", throttled, func(ctx context.Context, s *dynamo.Store, c *chat.Claim) error {
			_, err := s.RenewLease(ctx, chat.RenewRequest{Claim: c})
			return err
		}, nil, "renew lease of session s1"},
		"save condition failed": {"UpdateItem", ccf, func(ctx context.Context, s *dynamo.Store, c *chat.Claim) error {
			return s.SaveTurn(ctx, c, turnOf(c, "s1", textMessages("t1", "x")))
		}, chat.ErrLeaseLost, ""},
		"save throttled": {"UpdateItem", throttled, func(ctx context.Context, s *dynamo.Store, c *chat.Claim) error {
			return s.SaveTurn(ctx, c, turnOf(c, "s1", textMessages("t1", "x")))
		}, nil, "save turn t1 of session s1"},
		"release throttled": {"UpdateItem", throttled, func(ctx context.Context, s *dynamo.Store, c *chat.Claim) error {
			_, err := s.ReleaseTurn(ctx, chat.ReleaseRequest{Claim: c, Outcome: chat.OutcomeCompleted})
			return err
		}, nil, "release turn of session s1"},
		"get session throttled": {"GetItem", throttled, func(ctx context.Context, s *dynamo.Store, _ *chat.Claim) error {
			_, err := s.GetSession(ctx, "s1", alice)
			return err
		}, nil, "read session s1"},
		"history throttled": {"Query", throttled, func(ctx context.Context, s *dynamo.Store, _ *chat.Claim) error {
			_, err := s.ListTurns(ctx, chat.ListRequest{SessionID: "s1", Principal: alice})
			return err
		}, nil, "query turns of session s1"},
		"find turn throttled": {"Query", throttled, func(ctx context.Context, s *dynamo.Store, _ *chat.Claim) error {
			_, err := s.FindTurn(ctx, "s1", "t1", alice)
			return err
		}, nil, "find turn in session s1"},
		"artifacts condition failed": {"UpdateItem", ccf, func(ctx context.Context, s *dynamo.Store, _ *chat.Claim) error {
			_, err := s.PutArtifacts(ctx, "s1", "t0", alice, nil)
			return err
		}, chat.ErrTurnNotFound, ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			ctx := context.Background()
			healthy := e.store()
			// t0 is a saved turn (for artifacts), t1 holds the lease.
			c0, err := healthy.ClaimTurn(ctx, claimReq("s1", "t0"))
			if err != nil {
				t.Fatal(err)
			}
			if err := healthy.SaveTurn(ctx, c0, turnOf(c0, "s1", textMessages("t0", "x"))); err != nil {
				t.Fatal(err)
			}
			if _, err := healthy.ReleaseTurn(ctx, chat.ReleaseRequest{Claim: c0, Outcome: chat.OutcomeCompleted}); err != nil {
				t.Fatal(err)
			}
			faulty := dynamo.New(&faultClient{Client: e.client, op: tc.op, err: tc.err},
				dynamo.Options{Table: e.table, Now: e.clock.Now, CursorKey: testCursorKey})
			c, err := healthy.ClaimTurn(ctx, claimReq("s1", "t1"))
			if err != nil {
				t.Fatal(err)
			}

			err = tc.call(ctx, faulty, c)
			if tc.wantIs != nil {
				if !errors.Is(err, tc.wantIs) {
					t.Fatalf("error %v, want %v", err, tc.wantIs)
				}
				return
			}
			var apiErr smithy.APIError
			if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "ProvisionedThroughputExceededException" {
				t.Fatalf("error %v does not wrap the SDK error", err)
			}
			if !strings.Contains(err.Error(), tc.wantText) {
				t.Errorf("error %q does not say what was attempted (%q)", err, tc.wantText)
			}
			for _, s := range sentinels {
				if errors.Is(err, s) {
					t.Errorf("error %v is %v: an internal failure must not look like a contract error", err, s)
				}
			}
		})
	}
}
