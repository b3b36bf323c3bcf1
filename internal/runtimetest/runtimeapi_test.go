package runtimetest_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Runtime API headers and trailers
// (https://docs.aws.amazon.com/lambda/latest/dg/runtimes-api.html).
const (
	headerRequestID    = "Lambda-Runtime-Aws-Request-Id"
	headerDeadline     = "Lambda-Runtime-Deadline-Ms"
	headerFunctionARN  = "Lambda-Runtime-Invoked-Function-Arn"
	headerTraceID      = "Lambda-Runtime-Trace-Id"
	headerResponseMode = "Lambda-Runtime-Function-Response-Mode"
	headerErrorType    = "Lambda-Runtime-Function-Error-Type"
	trailerErrorType   = "Lambda-Runtime-Function-Error-Type"
	trailerErrorBody   = "Lambda-Runtime-Function-Error-Body"

	// streamingContentType is what a streamed function URL response is
	// posted as: a JSON prelude, 8 NUL bytes, then the body.
	streamingContentType = "application/vnd.awslambda.http-integration-response"
)

// runtimeAPI is one execution environment's Runtime API: invocations are
// handed out one at a time, in the order they were queued, to the runtime
// polling /next, and their responses recorded as they arrive.
type runtimeAPI struct {
	t      *testing.T
	srv    *httptest.Server
	queue  chan *invocation
	closed chan struct{}

	mu          sync.Mutex
	invocations map[string]*invocation
	initErrors  []string // "<error type>: <body>" of each /init/error
	nextID      int
	polls       int // GET /next requests
}

// newRuntimeAPI starts a Runtime API on a free loopback port; it stops
// when t ends. Its Addr is what AWS_LAMBDA_RUNTIME_API names.
func newRuntimeAPI(t *testing.T) *runtimeAPI {
	api := &runtimeAPI{t: t, queue: make(chan *invocation, 16), closed: make(chan struct{}), invocations: map[string]*invocation{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /2018-06-01/runtime/invocation/next", api.next)
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/response", api.response)
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/error", api.invocationError)
	mux.HandleFunc("POST /2018-06-01/runtime/init/error", api.initError)
	api.srv = httptest.NewServer(mux)
	t.Cleanup(api.close)
	return api
}

// Addr is the host:port of the Runtime API (AWS_LAMBDA_RUNTIME_API).
func (api *runtimeAPI) Addr() string { return strings.TrimPrefix(api.srv.URL, "http://") }

// close releases the runtimes waiting in /next and stops the server.
func (api *runtimeAPI) close() {
	close(api.closed)
	api.srv.Close()
}

// invoke queues event as the next invocation with the given time left
// before its deadline and returns it; the runtime picks it up at its next
// /next.
func (api *runtimeAPI) invoke(event []byte, timeLeft time.Duration) *invocation {
	api.mu.Lock()
	api.nextID++
	inv := &invocation{
		id:       fmt.Sprintf("8476a536-e9f4-11e8-9739-%012d", api.nextID),
		event:    event,
		timeLeft: timeLeft,
		done:     make(chan struct{}),
	}
	api.invocations[inv.id] = inv
	api.mu.Unlock()
	api.queue <- inv
	return inv
}

// next hands out the next invocation, waiting for one: the event as the
// body, its id, deadline (epoch milliseconds), function ARN and trace id
// as headers. The invocation's clock starts here.
func (api *runtimeAPI) next(w http.ResponseWriter, r *http.Request) {
	api.mu.Lock()
	api.polls++
	api.mu.Unlock()
	var inv *invocation
	select {
	case inv = <-api.queue:
	case <-r.Context().Done():
		return
	case <-api.closed:
		http.Error(w, "shutting down", http.StatusInternalServerError)
		return
	}
	now := time.Now()
	inv.mu.Lock()
	inv.handedOut = now
	inv.mu.Unlock()
	h := w.Header()
	h.Set(headerRequestID, inv.id)
	h.Set(headerDeadline, strconv.FormatInt(now.Add(inv.timeLeft).UnixMilli(), 10))
	h.Set(headerFunctionARN, "arn:aws:lambda:us-east-1:123456789012:function:turnstream-TurnFunction-runtimetest")
	h.Set(headerTraceID, "Root=1-6748a0b1-0123456789abcdef01234567;Parent=0123456789abcdef;Sampled=0")
	h.Set("Content-Type", "application/json")
	_, _ = w.Write(inv.event)
}

// response records the invocation's response: its headers, then each
// read of the body with the moment it returned, the moment the body ended
// (the chunked encoding's terminator) and the trailers after it.
func (api *runtimeAPI) response(w http.ResponseWriter, r *http.Request) {
	inv := api.lookup(w, r)
	if inv == nil {
		return
	}
	inv.mu.Lock()
	inv.contentType = r.Header.Get("Content-Type")
	inv.responseMode = r.Header.Get(headerResponseMode)
	inv.transferEncoding = r.TransferEncoding
	for k := range r.Trailer {
		inv.declaredTrailers = append(inv.declaredTrailers, k)
	}
	inv.mu.Unlock()
	buf := make([]byte, 64<<10)
	for {
		n, err := r.Body.Read(buf)
		at := time.Now()
		if n > 0 {
			inv.addRead(at, buf[:n])
		}
		if err == io.EOF {
			inv.mu.Lock()
			inv.ended = at
			inv.trailer = r.Trailer.Clone()
			inv.mu.Unlock()
			break
		}
		if err != nil {
			inv.mu.Lock()
			inv.bodyErr = err // cut without its terminator: the runtime died mid-stream
			inv.mu.Unlock()
			break
		}
	}
	inv.finish()
	w.WriteHeader(http.StatusAccepted)
	_, _ = io.WriteString(w, `{"status":"OK"}`)
}

// invocationError records an invocation error (POST .../{id}/error).
func (api *runtimeAPI) invocationError(w http.ResponseWriter, r *http.Request) {
	inv := api.lookup(w, r)
	if inv == nil {
		return
	}
	body, _ := io.ReadAll(r.Body)
	inv.mu.Lock()
	inv.ended = time.Now()
	inv.errorType = r.Header.Get(headerErrorType)
	inv.errorBody = body
	inv.mu.Unlock()
	inv.finish()
	w.WriteHeader(http.StatusAccepted)
	_, _ = io.WriteString(w, `{"status":"OK"}`)
}

// initError records an initialization error (POST /runtime/init/error).
func (api *runtimeAPI) initError(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	api.mu.Lock()
	api.initErrors = append(api.initErrors, r.Header.Get(headerErrorType)+": "+string(body))
	api.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
	_, _ = io.WriteString(w, `{"status":"OK"}`)
}

// lookup finds the invocation of the request's {id}; an unknown id, or
// one answered already, is 400 as on Lambda.
func (api *runtimeAPI) lookup(w http.ResponseWriter, r *http.Request) *invocation {
	api.mu.Lock()
	inv := api.invocations[r.PathValue("id")]
	api.mu.Unlock()
	if inv == nil {
		api.t.Errorf("runtime API: %s %s for an unknown invocation", r.Method, r.URL.Path)
		http.Error(w, `{"errorType":"InvalidRequestID"}`, http.StatusBadRequest)
		return nil
	}
	select {
	case <-inv.done:
		api.t.Errorf("runtime API: %s %s for an invocation already answered", r.Method, r.URL.Path)
		http.Error(w, `{"errorType":"InvalidStateTransition"}`, http.StatusForbidden)
		return nil
	default:
	}
	return inv
}

// invocation is one queued event and what the runtime answered.
type invocation struct {
	id       string
	event    []byte
	timeLeft time.Duration
	done     chan struct{} // closed once the response or error is complete

	mu        sync.Mutex
	handedOut time.Time // when /next answered with the event
	// The response POST.
	contentType, responseMode string
	transferEncoding          []string
	declaredTrailers          []string
	reads                     []bodyRead
	ended                     time.Time   // the body's terminator (or the error POST)
	trailer                   http.Header // after the terminator
	bodyErr                   error
	// The error POST.
	errorType string
	errorBody []byte
}

// bodyRead is one read of the response body and when it returned.
type bodyRead struct {
	at   time.Time
	data []byte
}

func (inv *invocation) addRead(at time.Time, p []byte) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	inv.reads = append(inv.reads, bodyRead{at: at, data: bytes.Clone(p)})
}

func (inv *invocation) finish() { close(inv.done) }

// wait waits until the invocation is answered, failing t after timeout.
func (inv *invocation) wait(t *testing.T, timeout time.Duration) {
	t.Helper()
	select {
	case <-inv.done:
	case <-time.After(timeout):
		t.Fatalf("invocation %s: no complete answer within %v", inv.id, timeout)
	}
}

// waitLines waits until n body lines have arrived, failing t after
// timeout.
func (inv *invocation) waitLines(t *testing.T, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if _, lines, _ := inv.streamed(); len(lines) >= n {
			return
		}
		select {
		case <-inv.done:
			t.Fatalf("invocation %s answered before %d lines arrived", inv.id, n)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("invocation %s: %d lines did not arrive within %v", inv.id, n, timeout)
		}
	}
}

// prelude is the JSON head of a streamed function URL response.
type prelude struct {
	StatusCode int               `json:"statusCode"`
	Headers    map[string]string `json:"headers"`
	Cookies    []string          `json:"cookies"`
}

// arrivedLine is one NDJSON line of the body and when its last byte
// arrived, measured from the moment /next handed the event out.
type arrivedLine struct {
	after time.Duration
	text  []byte
}

// streamed splits what has arrived so far into the prelude (nil until its
// 8 NUL bytes arrived) and the body's complete lines with their arrival
// times; rest is a trailing partial line.
func (inv *invocation) streamed() (p *prelude, lines []arrivedLine, rest []byte) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	var all []byte
	var body []byte
	for _, r := range inv.reads {
		all = append(all, r.data...)
		if p == nil {
			head, tail, found := bytes.Cut(all, make([]byte, 8))
			if !found {
				continue
			}
			p = &prelude{}
			if err := json.Unmarshal(head, p); err != nil {
				p.StatusCode = -1
			}
			body = bytes.Clone(tail)
		} else {
			body = append(body, r.data...)
		}
		for {
			line, more, found := bytes.Cut(body, []byte("\n"))
			if !found {
				break
			}
			lines = append(lines, arrivedLine{after: r.at.Sub(inv.handedOut), text: bytes.Clone(line)})
			body = more
		}
	}
	return p, lines, body
}

// answer is a complete response: the prelude, the whole body, and how
// long after the hand-out its terminator arrived.
type answer struct {
	prelude
	body     []byte
	complete time.Duration
}

// answered returns the invocation's complete response; t fails if the
// runtime reported an error instead, cut the body or sent error
// trailers.
func (inv *invocation) answered(t *testing.T) answer {
	t.Helper()
	inv.wait(t, time.Minute)
	if err := inv.failure(); err != nil {
		t.Fatalf("invocation %s: %v", inv.id, err)
	}
	p, lines, rest := inv.streamed()
	if p == nil || p.StatusCode <= 0 {
		t.Fatalf("invocation %s: no streaming prelude in %d reads", inv.id, len(inv.reads))
	}
	var body []byte
	for _, l := range lines {
		body = append(append(body, l.text...), '\n')
	}
	body = append(body, rest...)
	inv.mu.Lock()
	defer inv.mu.Unlock()
	return answer{prelude: *p, body: body, complete: inv.ended.Sub(inv.handedOut)}
}

// failure is how the invocation failed as the Runtime API saw it: an
// error POST, a body cut before its terminator, or error trailers; nil
// for a clean response.
func (inv *invocation) failure() error {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	switch {
	case inv.errorType != "" || inv.errorBody != nil:
		return fmt.Errorf("invocation error %s: %s", inv.errorType, inv.errorBody)
	case inv.bodyErr != nil:
		return fmt.Errorf("response body cut before its terminator: %w", inv.bodyErr)
	case inv.trailer.Get(trailerErrorType) != "" || inv.trailer.Get(trailerErrorBody) != "":
		return &trailerError{Type: inv.trailer.Get(trailerErrorType), Body: inv.trailer.Get(trailerErrorBody)}
	}
	return nil
}

// trailerError is a streamed response that ended with error trailers.
type trailerError struct{ Type, Body string }

func (e *trailerError) Error() string {
	return "error trailers " + e.Type + ": " + e.Body
}
