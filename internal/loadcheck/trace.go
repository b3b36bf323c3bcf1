package loadcheck

import (
	"context"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/turnstream/turnstream/internal/ddbfault"
	"github.com/turnstream/turnstream/internal/dynamobench"
)

// Op is one DynamoDB API call the Tap saw.
type Op struct {
	Op   string // operation name, e.g. "UpdateItem"
	SK   string // the sort key of a keyed call ("SESSION", "TURN#..."), "" for Query
	Kind string // what the call was for (dynamobench.Classify)
	// Write tells the claim's writes apart (dynamobench.ClaimWrite,
	// TakeoverWrite, GiveBackWrite); "" for other calls.
	Write string
	// Expiry is the lease expiry a claim or a renewal writes (zero for
	// other calls, or when it cannot be read from the request).
	Expiry time.Time
	// Start and End bound the call, retries included; Took is End-Start.
	Start, End time.Time
	Took       time.Duration
	// Err is the error the caller got ("" on success); CondFailed means
	// it was a failed condition.
	Err        string
	CondFailed bool
	// Attempts are the call's HTTP attempts, recorded by the load client's
	// transport (NewTransport; nil on other clients, whose attempts are
	// only counted).
	Attempts []*attemptRecord
}

// failed reports whether the call returned an error other than a failed
// condition.
func (o *Op) failed() bool { return o.Err != "" && !o.CondFailed }

// callState is an API call in flight; its attempts fill rec.
type callState struct {
	mu  sync.Mutex
	rec Op
	// The fault drawn for the call at its first attempt (Injector).
	drawn      bool
	fault      ddbfault.Fault
	persistent bool
}

type callKey struct{}

// Trace is every DynamoDB call made on behalf of one HTTP request.
type Trace struct {
	aim *aim // the faults the request asked for (FaultHeader), or nil

	mu  sync.Mutex
	ops []Op
}

func (t *Trace) add(r Op) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.ops = append(t.ops, r)
}

// Ops returns a copy of the calls recorded so far, in the order they
// started.
func (t *Trace) Ops() []Op {
	t.mu.Lock()
	defer t.mu.Unlock()
	ops := append([]Op(nil), t.ops...)
	slices.SortStableFunc(ops, func(a, b Op) int { return a.Start.Compare(b.Start) })
	return ops
}

type traceKey struct{}

// withTrace returns ctx carrying t; the tap records calls made with it.
func withTrace(ctx context.Context, t *Trace) context.Context {
	return context.WithValue(ctx, traceKey{}, t)
}

func traceFrom(ctx context.Context) *Trace {
	t, _ := ctx.Value(traceKey{}).(*Trace)
	return t
}

// Tap observes DynamoDB clients (dynamobench.Observer): it counts
// every API call (once per call, before the SDK's retryer) and records it
// in the request's trace with its duration and result, and puts the
// call's state in the context, where the load client's transport files
// the call's HTTP attempts (the SDK passes the context down to the
// transport). It also counts the HTTP attempts (after the retryer), so
// retries show.
type Tap struct {
	calls    atomic.Int64
	attempts atomic.Int64
	retries  atomic.Int64 // HTTP attempts beyond the first of a call

	mu         sync.Mutex
	attemptErr map[string]int // failed HTTP attempts by error text, digits masked
}

// NewTap returns a tap; Option installs it on a client.
func NewTap() *Tap { return &Tap{attemptErr: map[string]int{}} }

// Option installs the tap on a client (dynamo.NewClient's optFns).
func (t *Tap) Option() dynamobench.ClientOption {
	return dynamobench.Observer{Call: t.call, Attempt: t.attempt}.Option()
}

// Counts returns the API calls the tap saw, their HTTP attempts, and the
// attempts beyond the first of a call (the SDK's retries).
func (t *Tap) Counts() (calls, attempts, retries int64) {
	return t.calls.Load(), t.attempts.Load(), t.retries.Load()
}

// call starts the record of one API call; the returned function ends it.
func (t *Tap) call(ctx context.Context, r dynamobench.Request) (context.Context, func(dynamobench.Outcome)) {
	t.calls.Add(1)
	call := &callState{rec: Op{Op: r.Op, Start: time.Now()}}
	p := dynamobench.Classify(r)
	call.rec.SK, call.rec.Kind, call.rec.Write, call.rec.Expiry = p.SK, p.Kind, p.Write, p.Expiry
	ctx = context.WithValue(ctx, callKey{}, call)
	return ctx, func(o dynamobench.Outcome) {
		if o.Attempts > 1 {
			t.retries.Add(int64(o.Attempts - 1))
		}
		call.mu.Lock()
		rec := call.rec
		call.mu.Unlock()
		rec.End = time.Now()
		rec.Took = rec.End.Sub(rec.Start)
		if o.Err != nil {
			rec.Err, rec.CondFailed = o.Err.Error(), o.ConditionFailed
		}
		if tr := traceFrom(ctx); tr != nil {
			tr.add(rec)
		}
	}
}

// attempt counts one HTTP attempt and files its failure, if any, by its
// masked text.
func (t *Tap) attempt(_ context.Context, err error, condFailed bool) {
	t.attempts.Add(1)
	if err != nil && !condFailed {
		msg := digits.ReplaceAllString(requestID.ReplaceAllString(err.Error(), "RequestID: *"), "#")
		t.mu.Lock()
		t.attemptErr[msg[:min(len(msg), 200)]]++
		t.mu.Unlock()
	}
}

// digits and requestID mask what differs between two failures of one kind.
var (
	digits    = regexp.MustCompile(`[0-9]+`)
	requestID = regexp.MustCompile(`RequestID: [^,]*`)
)

// AttemptErrors returns the failed HTTP attempts by error text (failed
// conditions excluded), digits masked.
func (t *Tap) AttemptErrors() map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.attemptErr)
}

// Request headers by which a client names a request to the Traces of its
// server (Tag).
const (
	// IDHeader files the request's trace under its value.
	IDHeader = "X-Turnbench-Id"
	// FaultHeader carries the faults a load submission aims at (aim.String).
	FaultHeader = "X-Turnbench-Fault"
)

// Traces files the trace of each request a handler serves under its
// IDHeader, and counts the requests in flight.
type Traces struct {
	traces   sync.Map
	inflight atomic.Int64
	idle     chan struct{} // signalled when inflight drops to 0
}

// NewTraces returns an empty Traces.
func NewTraces() *Traces { return &Traces{idle: make(chan struct{}, 1)} }

// Wrap returns h serving each request with a trace in its context (the
// faults its FaultHeader aims at included), filed by its IDHeader: the
// Tap of the handler's DynamoDB client records the request's calls there.
func (t *Traces) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.inflight.Add(1)
		defer func() {
			if t.inflight.Add(-1) == 0 {
				select {
				case t.idle <- struct{}{}:
				default:
				}
			}
		}()
		tr := &Trace{aim: parseAim(r.Header.Get(FaultHeader))}
		if id := r.Header.Get(IDHeader); id != "" {
			t.traces.Store(id, tr)
		}
		h.ServeHTTP(w, r.WithContext(withTrace(r.Context(), tr)))
	})
}

// Trace returns the trace of the request sent with IDHeader id, or nil.
func (t *Traces) Trace(id string) *Trace {
	v, ok := t.traces.Load(id)
	if !ok {
		return nil
	}
	return v.(*Trace)
}

// WaitIdle waits until no request is being served (handlers keep running
// after a client disconnect) or timeout passes, and reports which.
func (t *Traces) WaitIdle(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for t.inflight.Load() != 0 {
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-t.idle:
		case <-time.After(10 * time.Millisecond):
		}
	}
	return true
}

// ids numbers requests for IDHeader.
var ids atomic.Int64

// NextID returns a new request id for IDHeader.
func NextID() string { return strconv.FormatInt(ids.Add(1), 10) }

type tagKey struct{}

// Tag returns ctx whose requests, sent through TagRequests, carry
// IDHeader id and, when a is set, FaultHeader.
func Tag(ctx context.Context, id string, a *aim) context.Context {
	h := http.Header{IDHeader: {id}}
	if a != nil {
		h.Set(FaultHeader, a.String())
	}
	return context.WithValue(ctx, tagKey{}, h)
}

// TagRequests returns a transport that sets on each request the headers
// Tag put in its context, then sends it with next.
func TagRequests(next http.RoundTripper) http.RoundTripper { return tagging{next} }

type tagging struct{ next http.RoundTripper }

func (t tagging) RoundTrip(r *http.Request) (*http.Response, error) {
	if h, ok := r.Context().Value(tagKey{}).(http.Header); ok {
		r = r.Clone(r.Context())
		for k, v := range h {
			r.Header[k] = v
		}
	}
	return t.next.RoundTrip(r)
}
