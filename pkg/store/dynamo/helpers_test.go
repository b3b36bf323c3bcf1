package dynamo_test

import (
	"context"
	"sync"
	"testing"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"github.com/turnstream/turnstream/internal/dynalite"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

func TestMain(m *testing.M) { dynalite.Main(m) }

// testCursorKey is the page-cursor HMAC key of every test store.
var testCursorKey = []byte("0123456789abcdef-test-cursor-key")

// counter records the DynamoDB operations a client sends, one entry per
// HTTP attempt.
type counter struct {
	mu  sync.Mutex
	ops []string
}

func (c *counter) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ops = nil
}

// take returns the operations recorded since the last take or reset.
func (c *counter) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	ops := c.ops
	c.ops = nil
	return ops
}

func (c *counter) option(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
		return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("turnstreamCountRequests",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				c.mu.Lock()
				c.ops = append(c.ops, awsmiddleware.GetOperationName(ctx))
				c.mu.Unlock()
				return next.HandleFinalize(ctx, in)
			}), middleware.After)
	})
}

// testClock is a settable clock for lease expiry without sleeping.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// env is one fresh table with a request-counting client.
type env struct {
	client *dynamodb.Client
	table  string
	count  *counter
	clock  *testClock
}

func newEnv(tb testing.TB) *env {
	tb.Helper()
	c := &counter{}
	client, err := dynamo.NewClient(context.Background(), dynalite.Options(tb), c.option)
	if err != nil {
		tb.Fatal(err)
	}
	table := dynalite.Table(tb, client)
	c.reset()
	return &env{client: client, table: table, count: c,
		clock: &testClock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}}
}

// store returns a new Store over the environment's table and clock.
func (e *env) store() *dynamo.Store {
	return dynamo.New(e.client, dynamo.Options{Table: e.table, Now: e.clock.Now, CursorKey: testCursorKey})
}

// forged returns a copy of c with another lease token.
func forged(c *chat.Claim, token string) *chat.Claim {
	f := *c
	f.Lease.Token = token
	return &f
}
