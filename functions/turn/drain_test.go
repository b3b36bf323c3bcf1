package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/turnstream/turnstream/functions/internal/startup/startuptest"
	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/turn"
)

// invokeAPI is a Lambda Invoke endpoint: it records each request, checks
// its signature, and answers each with the next of answers (a status, and
// for an error Lambda's error type), 202 once they run out.
type invokeAPI struct {
	t       *testing.T
	mu      sync.Mutex
	answers []invokeAnswer

	requests []invokeRequest
}

type invokeAnswer struct {
	status  int
	errType string
}

type invokeRequest struct {
	path, invocationType, authorization, token string
	payload                                    []byte
	signed                                     bool // the signature matches what arrived
}

func (a *invokeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	a.mu.Lock()
	a.requests = append(a.requests, invokeRequest{r.URL.Path, r.Header.Get("X-Amz-Invocation-Type"),
		r.Header.Get("Authorization"), r.Header.Get("X-Amz-Security-Token"), body, a.signatureHolds(r, body)})
	var ans invokeAnswer
	if len(a.answers) > 0 {
		ans, a.answers = a.answers[0], a.answers[1:]
	}
	a.mu.Unlock()
	if ans.status == 0 {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-ErrorType", ans.errType+":http://internal.amazon.com/coral/com.amazonaws.awsgirlambda/")
	w.WriteHeader(ans.status)
	_, _ = io.WriteString(w, `{"Type":"User","message":"an answer of the test"}`)
}

// recorded returns the requests so far.
func (a *invokeAPI) recorded() []invokeRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.requests)
}

// signatureHolds signs again, with the test's credentials and the
// request's own date, the request as it arrived (its method, path, the
// headers it says it signed, its body) and compares the two signatures:
// what the transport sent is what was signed.
func (a *invokeAPI) signatureHolds(r *http.Request, body []byte) bool {
	auth := r.Header.Get("Authorization")
	_, signed, ok := strings.Cut(auth, "SignedHeaders=")
	if !ok {
		return false
	}
	signed, _, _ = strings.Cut(signed, ",")
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return false
	}
	again, _ := http.NewRequest(r.Method, "http://"+r.Host+r.URL.EscapedPath(), bytes.NewReader(body))
	for name := range strings.SplitSeq(signed, ";") {
		if name != "host" {
			again.Header.Set(name, r.Header.Get(name))
		}
	}
	sum := sha256.Sum256(body)
	creds := aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "secret", SessionToken: r.Header.Get("X-Amz-Security-Token")}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, again, hex.EncodeToString(sum[:]), "lambda", "us-east-1", at); err != nil {
		a.t.Error(err)
		return false
	}
	return again.Header.Get("Authorization") == auth
}

// testInvoker is an eventInvoker of srv with the test's credentials, a
// session token, and retries without backoff.
func testInvoker(srv *httptest.Server) *eventInvoker {
	cfg := aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), HTTPClient: srv.Client(),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "session-token")}
	inv, err := newEventInvoker(cfg)
	if err != nil {
		panic(err)
	}
	inv.api.Retryer = noBackoff()
	return inv
}

// TestDispatcherInvokesTheFunctionAsynchronously: a drain is a signed,
// asynchronous (Event) Invoke of the function itself whose payload is the
// drain event; a 500 is retried; the invoker is built once.
func TestDispatcherInvokesTheFunctionAsynchronously(t *testing.T) {
	api := &invokeAPI{t: t, answers: []invokeAnswer{{500, "ServiceException"}}}
	srv := httptest.NewServer(api)
	defer srv.Close()
	built := 0
	dispatch := newDispatcher("turnstream-turn", func(context.Context) (invoker, error) {
		built++
		return testInvoker(srv), nil
	})
	notBefore := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, d := range []turn.DrainRequest{{SessionID: "s1", NotBefore: notBefore}, {SessionID: "s2"}} {
		if err := dispatch(context.Background(), d); err != nil {
			t.Fatal(err)
		}
	}
	if built != 1 {
		t.Errorf("invoker built %d times", built)
	}
	reqs := api.recorded()
	if len(reqs) != 3 {
		t.Fatalf("%d Invoke requests, want 3 (one retried)", len(reqs))
	}
	for _, r := range reqs {
		if r.path != "/2015-03-31/functions/turnstream-turn/invocations" || r.invocationType != "Event" ||
			!strings.HasPrefix(r.authorization, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") ||
			!strings.Contains(r.authorization, "/us-east-1/lambda/aws4_request") || r.token != "session-token" || !r.signed {
			t.Errorf("Invoke request %+v", r)
		}
	}
	var ev drainEvent
	if err := json.Unmarshal(reqs[1].payload, &ev); err != nil || ev.Drain == nil || ev.Drain.SessionID != "s1" || !ev.Drain.NotBefore.Equal(notBefore) {
		t.Errorf("payload %s: %v", reqs[1].payload, err)
	}
	if got := string(reqs[2].payload); got != `{"turnstreamDrain":{"sessionId":"s2"}}` {
		t.Errorf("payload without notBefore: %s", got)
	}

	api.mu.Lock()
	api.answers = []invokeAnswer{{500, "ServiceException"}, {503, "ServiceException"}, {502, "ServiceException"}}
	api.mu.Unlock()
	if err := dispatch(context.Background(), turn.DrainRequest{SessionID: "s3"}); err == nil || !strings.Contains(err.Error(), "502 ServiceException") {
		t.Errorf("an Invoke that keeps failing: %v", err)
	}
	if n := len(api.recorded()); n != 6 {
		t.Errorf("%d Invoke requests, want 3 more (3 attempts)", n)
	}
}

// TestEventInvokerAnswers: a throttle is retried, a refusal is not, and
// an attempt that gets no answer is cut at the attempt timeout and
// retried; a function ARN is one path segment.
func TestEventInvokerAnswers(t *testing.T) {
	for _, tc := range []struct {
		name     string
		answers  []invokeAnswer
		requests int
		err      string
	}{
		{"throttled, then accepted", []invokeAnswer{{429, "TooManyRequestsException"}}, 2, ""},
		{"refused", []invokeAnswer{{403, "AccessDeniedException"}}, 1, "403 AccessDeniedException: an answer of the test"},
		{"no such function", []invokeAnswer{{404, "ResourceNotFoundException"}}, 1, "404 ResourceNotFoundException"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := &invokeAPI{t: t, answers: tc.answers}
			srv := httptest.NewServer(api)
			defer srv.Close()
			err := testInvoker(srv).invokeEvent(t.Context(), "arn:aws:lambda:us-east-1:123456789012:function:turn", []byte(`{}`))
			if (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("error %v, want %q", err, tc.err)
			}
			got := api.recorded()
			if len(got) != tc.requests {
				t.Errorf("%d requests, want %d", len(got), tc.requests)
			}
			for _, r := range got {
				if r.path != "/2015-03-31/functions/arn:aws:lambda:us-east-1:123456789012:function:turn/invocations" || !r.signed {
					t.Errorf("request %+v", r)
				}
			}
		})
	}
	t.Run("no answer", func(t *testing.T) {
		// A client that never answers, in a testing/synctest bubble: each
		// attempt's timeout passes on the bubble's clock, and the attempts
		// are counted where they are made, whatever the machine's load.
		synctest.Test(t, func(t *testing.T) {
			silent := &silentClient{}
			inv, err := newEventInvoker(aws.Config{Region: "us-east-1", BaseEndpoint: aws.String("http://lambda.test"), HTTPClient: silent,
				Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "")})
			if err != nil {
				t.Fatal(err)
			}
			inv.api.Retryer = noBackoff()
			start := time.Now()
			if err := inv.invokeEvent(t.Context(), "turn", []byte(`{}`)); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("error %v, want the attempt's deadline", err)
			}
			if n := silent.attempts.Load(); n != 3 {
				t.Errorf("%d attempts, want 3", n)
			}
			if took := time.Since(start); took != 3*defaultInvokeAttemptTimeout {
				t.Errorf("the attempts took %v, want 3 of %v", took, defaultInvokeAttemptTimeout)
			}
		})
	})
}

// silentClient is an HTTP client that never answers: each request waits
// for its context's end, as a hung connection does.
type silentClient struct{ attempts atomic.Int32 }

func (c *silentClient) Do(req *http.Request) (*http.Response, error) {
	c.attempts.Add(1)
	<-req.Context().Done()
	return nil, &url.Error{Op: req.Method, URL: req.URL.String(), Err: req.Context().Err()}
}

// noBackoff is aws/retry's standard retryer without its waits.
func noBackoff() aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
	})
}

// TestEventInvokerEndpoint: the invoker calls Lambda's public endpoint
// of its region, or AWS_ENDPOINT_URL_LAMBDA (the order and the errors
// are functions/internal/awsapi's, tested there).
func TestEventInvokerEndpoint(t *testing.T) {
	creds := credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "")
	for env, want := range map[string]string{"": "https://lambda.eu-west-1.amazonaws.com", "http://localhost:9001": "http://localhost:9001"} {
		t.Setenv("AWS_ENDPOINT_URL_LAMBDA", env)
		inv, err := newEventInvoker(aws.Config{Region: "eu-west-1", Credentials: creds})
		if err != nil || inv.api.Endpoint != want {
			t.Errorf("AWS_ENDPOINT_URL_LAMBDA %q: endpoint %v (%v), want %s", env, inv, err, want)
		}
	}
}

// TestLambdaHandler: the function's Lambda handler runs a drain event as
// turn.Handler.Drain (the queued turn runs, with no client), ignores one
// whose session id is no SafeId, serves a function URL request in
// streaming mode, and refuses a payload that is neither.
func TestLambdaHandler(t *testing.T) {
	cfg, store := startuptest.Config(t, map[string]string{"MODEL_PROVIDER": "echo", "ECHO_DELAY": "0s"})
	h, urlHandler, err := newHandler(t.Context(), cfg, slog.New(slog.DiscardHandler), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	serve := lambdaHandler(h, urlHandler, slog.New(slog.DiscardHandler), nil)
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
	// The session's export, through the same streaming path.
	out, err = serve(ctx, json.RawMessage(`{"version":"2.0","rawPath":"/sessions/s1/export","headers":{"authorization":"Bearer dev.alice"},"requestContext":{"http":{"method":"GET","path":"/sessions/s1/export"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if resp, ok = out.(*events.LambdaFunctionURLStreamingResponse); !ok || resp.StatusCode != http.StatusOK {
		t.Fatalf("export answer %T %+v", out, out)
	}
	body, _ = io.ReadAll(resp.Body)
	if !strings.Contains(string(body), `"turnId":"B"`) || !strings.HasSuffix(string(body), `"complete":true}`) {
		t.Errorf("export body %.300s", body)
	}
	if _, err := serve(ctx, json.RawMessage(`[1,2]`)); err == nil {
		t.Error("a payload that is neither: no error")
	}
}
