package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/turnstream/turnstream/functions/internal/startup/startuptest"
	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/turn"
)

// invokeAPI is a Lambda Invoke endpoint: it records each request and
// answers 500 to the first failFirst of them, 202 to the rest.
type invokeAPI struct {
	mu        sync.Mutex
	failFirst int
	requests  []invokeRequest
}

type invokeRequest struct {
	path, invocationType, authorization string
	payload                             []byte
}

func (a *invokeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.requests = append(a.requests, invokeRequest{r.URL.Path, r.Header.Get("X-Amz-Invocation-Type"), r.Header.Get("Authorization"), body})
	if len(a.requests) <= a.failFirst {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, `{"Type":"Service","message":"try again"}`)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// TestDispatcherInvokesTheFunctionAsynchronously: a drain is a signed,
// asynchronous (Event) Invoke of the function itself whose payload is the
// drain event; a 500 is retried by the SDK; the client is built once.
func TestDispatcherInvokesTheFunctionAsynchronously(t *testing.T) {
	api := &invokeAPI{failFirst: 1}
	srv := httptest.NewServer(api)
	defer srv.Close()
	built := 0
	dispatch := newDispatcher("turnstream-turn", func(context.Context) (invoker, error) {
		built++
		return lambda.New(lambda.Options{
			Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
			Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", ""),
		}), nil
	})
	notBefore := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, d := range []turn.DrainRequest{{SessionID: "s1", NotBefore: notBefore}, {SessionID: "s2"}} {
		if err := dispatch(context.Background(), d); err != nil {
			t.Fatal(err)
		}
	}
	if built != 1 {
		t.Errorf("client built %d times", built)
	}
	if len(api.requests) != 3 {
		t.Fatalf("%d Invoke requests, want 3 (one retried)", len(api.requests))
	}
	for _, r := range api.requests {
		if r.path != "/2015-03-31/functions/turnstream-turn/invocations" || r.invocationType != "Event" ||
			!strings.HasPrefix(r.authorization, "AWS4-HMAC-SHA256 ") {
			t.Errorf("Invoke request %+v", r)
		}
	}
	var ev drainEvent
	if err := json.Unmarshal(api.requests[1].payload, &ev); err != nil || ev.Drain == nil || ev.Drain.SessionID != "s1" || !ev.Drain.NotBefore.Equal(notBefore) {
		t.Errorf("payload %s: %v", api.requests[1].payload, err)
	}
	if got := string(api.requests[2].payload); got != `{"turnstreamDrain":{"sessionId":"s2"}}` {
		t.Errorf("payload without notBefore: %s", got)
	}

	api.failFirst = 100
	if err := dispatch(context.Background(), turn.DrainRequest{SessionID: "s3"}); err == nil {
		t.Error("an Invoke that keeps failing: no error")
	}
}

// TestLambdaHandler: the function's Lambda handler runs a drain event as
// turn.Handler.Drain (the queued turn runs, with no client), ignores one
// whose session id is no SafeId, serves a function URL request in
// streaming mode, and refuses a payload that is neither.
func TestLambdaHandler(t *testing.T) {
	cfg, store := startuptest.Config(t, map[string]string{"MODEL_PROVIDER": "echo", "ECHO_DELAY": "0s"})
	h, err := newHandler(t.Context(), cfg, slog.New(slog.DiscardHandler), "")
	if err != nil {
		t.Fatal(err)
	}
	serve := lambdaHandler(h, slog.New(slog.DiscardHandler))
	alice := chat.Principal{Subject: "alice", Tenant: auth.DevTenant}
	ctx := t.Context()

	// Turn A runs while B is queued; A ends.
	c, err := store.ClaimTurn(ctx, chat.ClaimRequest{SessionID: "s1", TurnID: "A", Principal: alice, InputHash: chat.HashInput("a"),
		Lineage: protocol.Lineage{Operation: protocol.OperationSubmit}, DefinitionID: "default", DefinitionRevision: 1, LeaseDuration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	at := protocol.FormatTime(time.Now())
	if _, err := store.EnqueueTurn(ctx, chat.EnqueueRequest{SessionID: "s1", TurnID: "B", Principal: alice, InputHash: chat.HashInput("question B"),
		Lineage: protocol.Lineage{Operation: protocol.OperationSubmit}, TTL: time.Minute, Max: 4,
		Message: protocol.Message{ID: "B.u", Role: protocol.RoleUser, Content: "question B", Status: protocol.MessageComplete, CreatedAt: at}}); err != nil {
		t.Fatal(err)
	}
	if err := store.SaveTurn(ctx, c, &chat.Turn{SessionID: "s1", TurnID: "A", Ordinal: c.Lease.Ordinal, Status: chat.TurnComplete,
		Lineage: c.Lease.Lineage, InputHash: c.Lease.InputHash, StartedAt: time.Now(), CompletedAt: time.Now(),
		FirstSequence: c.BaseSequence + 1, LastSequence: c.BaseSequence + 1,
		Messages: []protocol.Message{{ID: "A.u", Role: protocol.RoleUser, Content: "a", Status: protocol.MessageComplete, CreatedAt: at}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.ReleaseTurn(ctx, chat.ReleaseRequest{Claim: c, Outcome: chat.OutcomeCompleted, Sequence: c.BaseSequence + 1}); err != nil {
		t.Fatal(err)
	}

	if out, err := serve(ctx, json.RawMessage(`{"turnstreamDrain":{"sessionId":"s1"}}`)); out != nil || err != nil {
		t.Fatalf("drain: %v, %v", out, err)
	}
	b, err := store.FindTurn(ctx, "s1", "B", alice)
	if err != nil || b.Status != chat.TurnComplete || b.Messages[len(b.Messages)-1].Content != "Echo: question B" {
		t.Fatalf("B after the drain: %+v, %v", b, err)
	}
	if out, err := serve(ctx, json.RawMessage(`{"turnstreamDrain":{"sessionId":"no such/id"}}`)); out != nil || err != nil {
		t.Errorf("drain of an invalid session id: %v, %v", out, err)
	}

	raw, err := os.ReadFile(filepath.Join("..", "..", "events", "turn-capabilities.json"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := serve(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	resp, ok := out.(*events.LambdaFunctionURLStreamingResponse)
	if !ok || resp.StatusCode != http.StatusOK {
		t.Fatalf("function URL answer %T %+v", out, out)
	}
	body, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(body), `"multitask"`) {
		t.Errorf("capabilities body %s", body)
	}
	if _, err := serve(ctx, json.RawMessage(`[1,2]`)); err == nil {
		t.Error("a payload that is neither: no error")
	}
}
