package dynamo_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/turnstream/turnstream/internal/dynalite"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
	"github.com/turnstream/turnstream/pkg/store/storetest"
)

func TestMain(m *testing.M) { dynalite.Main(m) }

// testStart is the test clocks' origin.
var testStart = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// testCursorKey is the page-cursor HMAC key of every test store.
var testCursorKey = []byte("0123456789abcdef-test-cursor-key")

// env is one fresh table with a request-counting client.
type env struct {
	client *dynamodb.Client
	table  string
	count  *dynamo.OperationLog
	clock  *storetest.Clock
}

func newEnv(tb testing.TB) *env {
	tb.Helper()
	c := &dynamo.OperationLog{}
	client, err := dynamo.NewClient(context.Background(), dynalite.Options(tb), c.Option)
	if err != nil {
		tb.Fatal(err)
	}
	table := dynalite.Table(tb)
	c.Reset()
	return &env{client: client, table: table, count: c, clock: storetest.NewClock(testStart)}
}

// store returns a new Store over the environment's table and clock.
func (e *env) store() *dynamo.Store {
	return dynamo.New(e.client, dynamo.Options{Table: e.table, Now: e.clock.Now, CursorKey: testCursorKey, ResolveShare: dynalite.ResolveShare})
}

// turnItem reads the turn item at ordinal of sessionID raw (consistent;
// nil when absent).
func (e *env) turnItem(t *testing.T, sessionID string, ordinal int64) map[string]types.AttributeValue {
	t.Helper()
	out, err := e.client.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(e.table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{
			dynamo.AttrPK: &types.AttributeValueMemberS{Value: dynamo.SessionPartitionKey(sessionID)},
			dynamo.AttrSK: &types.AttributeValueMemberS{Value: dynamo.TurnSortKey(ordinal)},
		}})
	if err != nil {
		t.Fatalf("read turn item %d of %s: %v", ordinal, sessionID, err)
	}
	return out.Item
}

// forged returns a copy of c with another lease token.
func forged(c *chat.Claim, token string) *chat.Claim {
	f := *c
	f.Lease.Token = token
	return &f
}
