package sessionapi_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/dynamobench"
	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/sessionapi"
	"github.com/turnstream/turnstream/pkg/store/memory"
)

// benchDepths are the session depths (visible turns) compared: a page must
// cost the same at 10 and at 10,000 turns
// (docs/design.md#storage-one-dynamodb-table: one Query per page).
var benchDepths = []int{10, 10_000}

// benchLimit is the page size: small enough that both depths return a
// full page with a next cursor, so both pages do the same work.
const benchLimit = 5

// benchKey is the page-cursor key of the benchmark stores.
var benchKey = bytes.Repeat([]byte{3}, 32)

// benchSession is the session holding depth turns.
func benchSession(depth int) string { return fmt.Sprintf("deep%d", depth) }

// BenchmarkHistoryPage serves one page of GET /sessions/{id}/turns?limit=5
// through the history handler, on the memory store and on the DynamoDB
// store over dynalite (skipped when no server is available), each holding
// one session per depth:
//
//	depth=N/page=newest   the first page of the session with N turns
//	depth=N/page=middle   a page from a cursor in the middle (N > 10 only)
//	interleaved           newest pages of depth 10 and 10,000 alternated in
//	                      one loop, reporting each one's ns/page and their
//	                      ratio (deep/shallow): on a loaded machine this
//	                      comparison is not skewed by load drifting between
//	                      sub-benchmarks
//
// On DynamoDB every page must be exactly one Query (the benchmark fails
// otherwise) and dynamodb-requests/op is reported.
func BenchmarkHistoryPage(b *testing.B) {
	stores := []struct {
		name string
		new  func(b *testing.B) (chat.Store, *opCounter)
		seed func(b *testing.B, store chat.Store, sessionID string, depth int)
	}{
		{"memory", func(*testing.B) (chat.Store, *opCounter) {
			return memory.New(memory.Options{CursorKey: benchKey}), nil
		}, seedSequential},
		{"dynalite", func(b *testing.B) (chat.Store, *opCounter) {
			ops := &opCounter{}
			return newDynamoStore(b, time.Now, benchKey, ops.option()), ops
		}, seedSequential},
	}
	for _, st := range stores {
		b.Run("store="+st.name, func(b *testing.B) {
			store, ops := st.new(b)
			for _, depth := range benchDepths {
				t0 := time.Now()
				st.seed(b, store, benchSession(depth), depth)
				b.Logf("seeded %d turns in %v", depth, time.Since(t0).Round(time.Millisecond))
			}
			h, _ := newHandlers(b, sessionapi.Options{Store: store, Authenticator: devAuthenticator(b), Logger: slog.New(slog.DiscardHandler)})
			newest := func(depth int) string {
				return fmt.Sprintf("/sessions/%s/turns?limit=%d", benchSession(depth), benchLimit)
			}
			for _, depth := range benchDepths {
				b.Run(fmt.Sprintf("depth=%d/page=newest", depth), func(b *testing.B) {
					benchPage(b, h, ops, newest(depth))
				})
				if depth > 2*benchLimit {
					// The cursor a client holds after paging back to the middle.
					cursor := chat.CursorCodec{Key: benchKey}.Encode(benchSession(depth), chat.OrderDesc, int64(depth/2))
					b.Run(fmt.Sprintf("depth=%d/page=middle", depth), func(b *testing.B) {
						benchPage(b, h, ops, newest(depth)+"&cursor="+cursor)
					})
				}
			}
			b.Run("interleaved", func(b *testing.B) {
				shallow, deep := benchDepths[0], benchDepths[len(benchDepths)-1]
				var tShallow, tDeep time.Duration
				b.ReportAllocs()
				for b.Loop() {
					t0 := time.Now()
					servePage(b, h, newest(shallow))
					t1 := time.Now()
					servePage(b, h, newest(deep))
					tShallow, tDeep = tShallow+t1.Sub(t0), tDeep+time.Since(t1)
				}
				b.ReportMetric(float64(tShallow.Nanoseconds())/float64(b.N), fmt.Sprintf("depth%d-ns/page", shallow))
				b.ReportMetric(float64(tDeep.Nanoseconds())/float64(b.N), fmt.Sprintf("depth%d-ns/page", deep))
				b.ReportMetric(float64(tDeep)/float64(tShallow), "deep/shallow")
			})
		})
	}
}

// servePage serves GET target as alice and fails b unless it is a 200
// page with turns.
func servePage(b *testing.B, h http.Handler, target string) {
	r := httptest.NewRequestWithContext(b.Context(), http.MethodGet, target, nil)
	r.Header.Set("Authorization", auth.DevAuthorization(alice.Subject))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusOK || !bytes.HasPrefix(w.Body.Bytes(), []byte(`{"turns":[{`)) {
		b.Fatalf("page: %d %.200s", w.Code, w.Body)
	}
}

// benchPage measures one page request to target; with ops, it checks each
// page sent exactly one DynamoDB request, a Query, and reports
// requests/op.
func benchPage(b *testing.B, h http.Handler, ops *opCounter, target string) {
	if ops != nil {
		ops.take()
		servePage(b, h, target)
		if got := ops.take(); len(got) != 1 || got[0] != "Query" {
			b.Fatalf("one page sent %v, want exactly [Query]", got)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		servePage(b, h, target)
	}
	if ops != nil {
		b.ReportMetric(float64(len(ops.take()))/float64(b.N), "dynamodb-requests/op")
	}
}

// seedSequential runs depth turns of alice in sessionID through the full
// claim, save, release path.
func seedSequential(b *testing.B, store chat.Store, sessionID string, depth int) {
	b.Helper()
	ctx := b.Context()
	for i := range depth {
		id := fmt.Sprintf("t%05d", i)
		c, err := store.ClaimTurn(ctx, benchClaim(sessionID, id))
		if err != nil {
			b.Fatal(err)
		}
		if err := store.SaveTurn(ctx, c, benchTurn(sessionID, id, c.Lease.Ordinal)); err != nil {
			b.Fatal(err)
		}
		if _, err := store.ReleaseTurn(ctx, chat.ReleaseRequest{Claim: c, Outcome: chat.OutcomeCompleted, Sequence: 2}); err != nil {
			b.Fatal(err)
		}
	}
}

func benchClaim(sessionID, turnID string) chat.ClaimRequest {
	return chat.ClaimRequest{
		SessionID: sessionID, TurnID: turnID, Principal: alice, InputHash: chat.HashInput(turnID),
		Lineage: protocol.Lineage{Operation: protocol.OperationSubmit}, DefinitionID: "assistant",
		DefinitionRevision: 1, LeaseDuration: time.Hour,
	}
}

func benchTurn(sessionID, turnID string, ordinal int64) *chat.Turn {
	now := time.Now()
	return &chat.Turn{
		SessionID: sessionID, TurnID: turnID, Ordinal: ordinal, Status: chat.TurnComplete,
		Lineage:   protocol.Lineage{Operation: protocol.OperationSubmit},
		InputHash: chat.HashInput(turnID),
		Messages:  standardMessages(turnID, protocol.FormatTime(now)),
		Usage:     protocol.Usage{PromptTokens: 2, CompletionTokens: 3, TotalTokens: 5},
		StartedAt: now, CompletedAt: now,
	}
}

// opCounter records the DynamoDB operations a client sends, one per API
// call (dynamobench.Observer).
type opCounter struct {
	mu  sync.Mutex
	ops []string
}

// take returns the operations recorded since the last take.
func (c *opCounter) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	ops := c.ops
	c.ops = nil
	return ops
}

// option installs the counter on a DynamoDB client.
func (c *opCounter) option() dynamobench.ClientOption {
	return dynamobench.Observer{Call: func(ctx context.Context, r dynamobench.Request) (context.Context, func(dynamobench.Outcome)) {
		c.mu.Lock()
		c.ops = append(c.ops, r.Op)
		c.mu.Unlock()
		return ctx, func(dynamobench.Outcome) {}
	}}.Option()
}
