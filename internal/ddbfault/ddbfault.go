// Package ddbfault injects DynamoDB faults at the HTTP transport, below the
// AWS SDK's retryer, so that the SDK really retries: a write that applied
// but whose answer was lost, a 500 after the write applied, a 500 before
// it, and a connection that never answers.
//
// A Transport wraps the real transport of a DynamoDB client (through
// dynamo.ClientOptions.Transport). Its Rule sees each HTTP attempt, with
// the operation name and the request body, and chooses a Fault. Tests
// and cmd/turnbench use it; it is not linked into the functions.
package ddbfault

import (
	"bytes"
	"context"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

// Fault is what happens to one HTTP attempt.
type Fault int

// The faults. Applied faults forward the request first, so DynamoDB has
// applied a write by the time the attempt fails.
const (
	// Pass forwards the attempt and returns its answer.
	Pass Fault = iota
	// LoseAnswer forwards the attempt, discards the answer and fails the
	// attempt with a connection reset: the write applied, the caller
	// does not know (the SDK retries it).
	LoseAnswer
	// ServerErrorAfter forwards the attempt, then answers 500
	// InternalServerError in place of the real answer.
	ServerErrorAfter
	// ServerErrorBefore answers 500 InternalServerError without
	// forwarding: nothing applied.
	ServerErrorBefore
	// Hang never answers: the attempt blocks until its context ends (the
	// client's attempt timeout, or the caller's deadline).
	Hang
	// ApplyLate is a write that arrives late: the attempt blocks until its
	// context ends, as Hang, and the request is delivered LateBy after the
	// attempt started, so it applies after the client gave up on it (and
	// possibly after a read that found it not applied).
	ApplyLate
)

// LateBy is how long after its attempt an ApplyLate request is delivered.
var LateBy = 400 * time.Millisecond

// String names a fault in reports.
func (f Fault) String() string {
	switch f {
	case Pass:
		return "pass"
	case LoseAnswer:
		return "lost answer"
	case ServerErrorAfter:
		return "500 after apply"
	case ServerErrorBefore:
		return "500 before apply"
	case Hang:
		return "hung"
	case ApplyLate:
		return "applied late"
	}
	return "unknown"
}

// Attempt is one HTTP attempt as a Rule sees it.
type Attempt struct {
	// Op is the DynamoDB operation (UpdateItem, GetItem, Query, ...).
	Op string
	// Body is the JSON request body (read-only).
	Body []byte
	// N counts the attempts this Transport has seen of Op, from 1.
	N int
	// Context is the attempt's request context. The SDK passes the
	// caller's context down to the transport, so a rule can find values
	// the caller put there (cmd/turnbench files each attempt under the
	// HTTP request that caused it).
	Context context.Context
}

// Has reports whether the request body contains s (an attribute value, a
// condition fragment), to aim a rule at one kind of write.
func (a Attempt) Has(s string) bool { return bytes.Contains(a.Body, []byte(s)) }

// Rule chooses the fault of an attempt. It is called from many goroutines.
type Rule func(Attempt) Fault

// Transport is an http.RoundTripper that applies Rule to every attempt.
// The zero Base means http.DefaultTransport.
type Transport struct {
	Base http.RoundTripper

	mu     sync.Mutex
	rule   Rule
	seen   map[string]int
	counts map[Fault]int
	// late counts the ApplyLate requests not delivered yet (WaitLate).
	late sync.WaitGroup
}

// WaitLate returns once every ApplyLate request so far has been
// delivered and answered: what it was going to apply has applied.
func (t *Transport) WaitLate() { t.late.Wait() }

// New returns a Transport over base (nil: http.DefaultTransport) that
// passes everything until SetRule.
func New(base http.RoundTripper) *Transport {
	return &Transport{Base: base, seen: map[string]int{}, counts: map[Fault]int{}}
}

// SetRule replaces the rule; nil passes everything.
func (t *Transport) SetRule(r Rule) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rule = r
}

// Counts returns how many attempts met each fault since New or Reset.
func (t *Transport) Counts() map[Fault]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[Fault]int, len(t.counts))
	for f, n := range t.counts {
		out[f] = n
	}
	return out
}

// Reset forgets the counts and the per-operation attempt numbers.
func (t *Transport) Reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seen, t.counts = map[string]int{}, map[Fault]int{}
}

// errReset is the error of a LoseAnswer attempt: what a connection reset
// after the request was sent looks like to net/http.
var errReset = &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
		req.Body = io.NopCloser(bytes.NewReader(b))
	}
	op := req.Header.Get("X-Amz-Target")
	if i := strings.LastIndexByte(op, '.'); i >= 0 {
		op = op[i+1:]
	}
	t.mu.Lock()
	t.seen[op]++
	a := Attempt{Op: op, Body: body, N: t.seen[op], Context: req.Context()}
	rule := t.rule
	t.mu.Unlock()
	f := Pass
	if rule != nil {
		f = rule(a)
	}
	t.mu.Lock()
	t.counts[f]++
	t.mu.Unlock()

	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	switch f {
	case ServerErrorBefore:
		return serverError(req), nil
	case Hang:
		<-req.Context().Done()
		return nil, req.Context().Err()
	case ApplyLate:
		late := req.Clone(context.WithoutCancel(req.Context()))
		late.Body = io.NopCloser(bytes.NewReader(body))
		t.late.Add(1)
		go func() {
			defer t.late.Done()
			time.Sleep(LateBy)
			if resp, err := base.RoundTrip(late); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			}
		}()
		<-req.Context().Done()
		return nil, req.Context().Err()
	}
	resp, err := base.RoundTrip(req)
	if err != nil || f == Pass {
		return resp, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if f == LoseAnswer {
		return nil, errReset
	}
	return serverError(req), nil
}

// serverError is DynamoDB's answer to an internal failure (retryable).
func serverError(req *http.Request) *http.Response {
	const body = `{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"injected by ddbfault"}`
	return &http.Response{
		StatusCode: http.StatusInternalServerError,
		Status:     "500 Internal Server Error",
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header: http.Header{
			"Content-Type": {"application/x-amz-json-1.0"},
			// The SDK checks DynamoDB's CRC32 of every answer body.
			"X-Amz-Crc32": {strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(body))), 10)},
		},
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}

// Once returns a rule that applies f to the first attempt matching match
// and passes every other attempt.
func Once(f Fault, match func(Attempt) bool) Rule {
	var mu sync.Mutex
	done := false
	return func(a Attempt) Fault {
		mu.Lock()
		defer mu.Unlock()
		if done || !match(a) {
			return Pass
		}
		done = true
		return f
	}
}

// Always returns a rule that applies f to every attempt matching match.
func Always(f Fault, match func(Attempt) bool) Rule {
	return func(a Attempt) Fault {
		if match(a) {
			return f
		}
		return Pass
	}
}

// For matches the attempts of one operation that the store made for
// purpose p (its label, dynamo.PurposeOf the attempt's context: the SDK
// passes the caller's context down to the transport) and whose body
// contains every one of has (an item's key, to tell items apart; never
// needed to tell writes apart).
func For(op string, p dynamo.Purpose, has ...string) func(Attempt) bool {
	match := Op(op, has...)
	return func(a Attempt) bool {
		return a.Context != nil && dynamo.PurposeOf(a.Context) == p && match(a)
	}
}

// Op matches the attempts of one operation whose body contains every one
// of has.
func Op(op string, has ...string) func(Attempt) bool {
	return func(a Attempt) bool {
		if a.Op != op {
			return false
		}
		for _, h := range has {
			if !a.Has(h) {
				return false
			}
		}
		return true
	}
}
