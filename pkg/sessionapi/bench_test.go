package sessionapi_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/sessionapi"
	"github.com/turnstream/turnstream/pkg/store/memory"
)

// benchDepths are the session depths (visible turns) compared: a page must
// cost the same at 10 and at 10,000 turns (DESIGN §5: one Query per page).
var benchDepths = []int{10, 10_000}

// benchLimit is the page size: both depths return full pages of it.
const benchLimit = 10

// BenchmarkHistoryPage serves GET /sessions/{id}/turns?limit=10 (the newest
// page) through the history handler at each depth, on the memory store and
// on the DynamoDB store over dynalite (skipped when no server is
// available). On DynamoDB it counts the requests each page sends and fails
// unless a page is exactly one Query.
func BenchmarkHistoryPage(b *testing.B) {
	for _, depth := range benchDepths {
		b.Run(fmt.Sprintf("store=memory/depth=%d", depth), func(b *testing.B) {
			store := memory.New(memory.Options{CursorKey: bytes.Repeat([]byte{3}, 32)})
			t0 := time.Now()
			seedSequential(b, store, depth)
			b.Logf("seeded %d turns in %v", depth, time.Since(t0).Round(time.Millisecond))
			benchPage(b, store, nil)
		})
	}
	for _, depth := range benchDepths {
		b.Run(fmt.Sprintf("store=dynalite/depth=%d", depth), func(b *testing.B) {
			ops := &opCounter{}
			store := newDynamoStore(b, time.Now, bytes.Repeat([]byte{3}, 32), ops.option)
			t0 := time.Now()
			seedConcurrent(b, store, depth)
			b.Logf("seeded %d turns in %v", depth, time.Since(t0).Round(time.Millisecond))
			benchPage(b, store, ops)
		})
	}
}

// benchPage measures one page request; with ops, it checks each page sent
// exactly one DynamoDB request, a Query, and reports requests/op.
func benchPage(b *testing.B, store chat.Store, ops *opCounter) {
	b.Helper()
	h := sessionapi.NewHistoryHandler(sessionapi.Options{Store: store, Authenticator: devAuthenticator(b), Logger: slog.New(slog.DiscardHandler)})
	target := fmt.Sprintf("/sessions/deep/turns?limit=%d", benchLimit)
	page := func() {
		r := httptest.NewRequestWithContext(b.Context(), http.MethodGet, target, nil)
		r.Header.Set("Authorization", auth.DevAuthorization(alice.Subject))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatalf("page: %d %s", w.Code, w.Body)
		}
	}
	if ops != nil {
		ops.take()
		page()
		if got := ops.take(); len(got) != 1 || got[0] != "Query" {
			b.Fatalf("one page sent %v, want exactly [Query]", got)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		page()
	}
	b.StopTimer()
	if ops != nil {
		b.ReportMetric(float64(len(ops.take()))/float64(b.N), "dynamodb-requests/op")
	}
}

// seedSequential runs depth turns of alice in session "deep" through the
// full claim, save, release path.
func seedSequential(b *testing.B, store chat.Store, depth int) {
	b.Helper()
	ctx := b.Context()
	for i := range depth {
		id := fmt.Sprintf("t%05d", i)
		c, err := store.ClaimTurn(ctx, benchClaim(id))
		if err != nil {
			b.Fatal(err)
		}
		if err := store.SaveTurn(ctx, c.Lease.Token, benchTurn(id, c.Lease.Ordinal)); err != nil {
			b.Fatal(err)
		}
		if err := store.ReleaseTurn(ctx, chat.ReleaseRequest{SessionID: "deep", TurnID: id, Token: c.Lease.Token, Outcome: chat.OutcomeCompleted, Cursor: 2}); err != nil {
			b.Fatal(err)
		}
	}
}

// seedConcurrent creates session "deep" with one claim and then writes
// ordinals 1..depth with that claim's token through SaveTurn from 8
// workers. This bends SaveTurn's precondition (one claim per ordinal),
// which the store checks only per turn item, to seed 10,000 turns in
// seconds instead of minutes of sequential claim/save/release round trips;
// the items written are exactly what SaveTurn writes for a claimed turn.
func seedConcurrent(b *testing.B, store chat.Store, depth int) {
	b.Helper()
	ctx := b.Context()
	c, err := store.ClaimTurn(ctx, benchClaim("t00000"))
	if err != nil {
		b.Fatal(err)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			for {
				ord := next.Add(1)
				if ord > int64(depth) {
					return
				}
				if err := store.SaveTurn(ctx, c.Lease.Token, benchTurn(fmt.Sprintf("t%05d", ord-1), ord)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatalf("seed: %v", err)
	}
}

func benchClaim(turnID string) chat.ClaimRequest {
	return chat.ClaimRequest{
		SessionID: "deep", TurnID: turnID, Principal: alice, InputHash: chat.HashInput(turnID),
		Lineage: protocol.Lineage{Operation: protocol.OperationSubmit}, DefinitionID: "assistant",
		DefinitionRevision: 1, LeaseDuration: time.Hour,
	}
}

func benchTurn(turnID string, ordinal int64) *chat.Turn {
	now := time.Now()
	return &chat.Turn{
		SessionID: "deep", TurnID: turnID, Ordinal: ordinal, Status: chat.TurnComplete,
		Lineage:   protocol.Lineage{Operation: protocol.OperationSubmit},
		InputHash: chat.HashInput(turnID),
		Messages:  standardMessages(turnID, protocol.FormatTime(now)),
		Usage:     protocol.Usage{PromptTokens: 2, CompletionTokens: 3, TotalTokens: 5},
		StartedAt: now, CompletedAt: now,
	}
}

// opCounter records the DynamoDB operations a client sends.
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

// option installs the counting middleware on a DynamoDB client.
func (c *opCounter) option(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("sessionapiCountRequests",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				c.mu.Lock()
				c.ops = append(c.ops, awsmiddleware.GetOperationName(ctx))
				c.mu.Unlock()
				return next.HandleInitialize(ctx, in)
			}), middleware.After)
	})
}
