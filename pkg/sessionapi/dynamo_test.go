package sessionapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/dynalite"
	"github.com/turnstream/turnstream/internal/dynamobench"
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
func newDynamoStore(tb testing.TB, now func() time.Time, key []byte, optFns ...dynamobench.ClientOption) *dynamo.Store {
	tb.Helper()
	client, err := dynamo.NewClient(context.Background(), dynalite.Options(tb), optFns...)
	if err != nil {
		tb.Fatalf("dynamo client: %v", err)
	}
	table := dynalite.Table(tb)
	return dynamo.New(client, dynamo.Options{Table: table, Now: now, CursorKey: key})
}

// TestRequestBudget counts the DynamoDB requests of each route
// (docs/design.md#storage-one-dynamodb-table): a history page is exactly one
// Query whatever the order, cursor or route, the session summary one GetItem,
// an artifacts write at most two requests.
func TestRequestBudget(t *testing.T) {
	t.Parallel()
	ops := &opCounter{}
	f := newFixture(t, func(t *testing.T, clock *storetest.Clock, key []byte) chat.Store {
		return newDynamoStore(t, clock.Now, key, ops.option())
	})
	f.runTurns("s1", alice, "t", 7)

	for _, route := range []string{"turns", "messages"} {
		for _, order := range []string{"asc", "desc"} {
			t.Run(route+" "+order, func(t *testing.T) {
				q := url.Values{"order": {order}, "limit": {"3"}}
				pages := 0
				for {
					ops.take()
					resp := f.do(f.history, get("/sessions/s1/"+route+"?"+q.Encode(), alice))
					if got := ops.take(); !slices.Equal(got, []string{"Query"}) {
						t.Fatalf("page %d sent %v, want [Query]", pages, got)
					}
					var page struct {
						NextCursor *string `json:"nextCursor"`
					}
					if err := json.Unmarshal(resp.body, &page); err != nil || resp.status != 200 {
						t.Fatalf("page %d: %d %s", pages, resp.status, resp.body)
					}
					pages++
					if page.NextCursor == nil {
						break
					}
					q.Set("cursor", *page.NextCursor)
				}
				if pages != 3 {
					t.Errorf("%d pages, want 3", pages)
				}
			})
		}
	}
	budgets := map[string]struct {
		h   http.Handler
		req request
		max int
	}{
		"session summary": {f.history, get("/sessions/s1", alice), 1},
		"artifacts PUT":   {f.artifacts, put("/sessions/s1/turns/t-003/artifacts", host, `{"artifacts":[{"entryPath":"a.png","artifactType":"image"}]}`), 2},
		"artifacts GET":   {f.artifacts, get("/sessions/s1/turns/t-003/artifacts", alice), 1},
	}
	for name, tc := range budgets {
		t.Run(name, func(t *testing.T) {
			ops.take()
			if resp := f.do(tc.h, tc.req); resp.status != 200 {
				t.Fatalf("%d %s", resp.status, resp.body)
			}
			if got := ops.take(); len(got) == 0 || len(got) > tc.max {
				t.Errorf("sent %v, want 1..%d requests", got, tc.max)
			}
		})
	}
}
