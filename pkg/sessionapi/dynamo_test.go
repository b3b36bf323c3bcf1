package sessionapi_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/turnstream/turnstream/internal/dynalite"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
	"github.com/turnstream/turnstream/pkg/store/storetest"
)

// TestMain stops the dynalite server (if this binary started one) after
// the tests.
func TestMain(m *testing.M) { dynalite.Main(m) }

func init() {
	storeFactories["dynamo"] = func(t *testing.T, clock *storetest.Clock, key []byte) chat.Store {
		return newDynamoStore(t, clock.Now, key)
	}
}

// newDynamoStore is a DynamoDB store on a fresh table of the test's
// DynamoDB API server (dynalite, or $DYNAMODB_ENDPOINT) with clock now.
// It skips tb when no server is available (fails it when CI=true).
func newDynamoStore(tb testing.TB, now func() time.Time, key []byte, optFns ...func(*dynamodb.Options)) *dynamo.Store {
	tb.Helper()
	client, err := dynamo.NewClient(context.Background(), dynalite.Options(tb), optFns...)
	if err != nil {
		tb.Fatalf("dynamo client: %v", err)
	}
	table := dynalite.Table(tb, client)
	return dynamo.New(client, dynamo.Options{Table: table, Now: now, CursorKey: key})
}
