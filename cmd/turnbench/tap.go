package main

import (
	"context"
	"maps"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/turnstream/turnstream/internal/ddbfault"
	"github.com/turnstream/turnstream/internal/dynamobench"
)

// ---- the DynamoDB tap: counting and tracing ------------------------------

// opRecord is one DynamoDB API call seen by the tap.
type opRecord struct {
	Op   string // operation name, e.g. "UpdateItem"
	SK   string // the sort key of a keyed call ("SESSION", "TURN#..."), "" for Query
	Kind string // what the call was for (dynamobench.Classify)
	// Write tells the claim's writes apart (dynamobench.ClaimWrite,
	// TakeoverWrite, FenceWrite); "" for other calls.
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
	// transport (nil on the other clients, whose attempts are only counted).
	Attempts []*attemptRecord
}

// failed reports whether the call returned an error other than a failed
// condition.
func (o *opRecord) failed() bool { return o.Err != "" && !o.CondFailed }

// callState is an API call in flight; its attempts fill rec.
type callState struct {
	mu  sync.Mutex
	rec opRecord
	// The fault drawn for the call at its first attempt (faultInjector).
	drawn      bool
	fault      ddbfault.Fault
	persistent bool
}

type callKey struct{}

// trace is every DynamoDB call made on behalf of one HTTP request.
type trace struct {
	aim *aim // the faults the request asked for (benchFaultHeader), or nil

	mu  sync.Mutex
	ops []opRecord
}

func (t *trace) add(r opRecord) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.ops = append(t.ops, r)
}

// snapshot returns a copy of the calls recorded so far, in the order they
// started.
func (t *trace) snapshot() []opRecord {
	t.mu.Lock()
	defer t.mu.Unlock()
	ops := append([]opRecord(nil), t.ops...)
	slices.SortStableFunc(ops, func(a, b opRecord) int { return a.Start.Compare(b.Start) })
	return ops
}

type traceKey struct{}

// withTrace returns ctx carrying t; the tap records calls made with it.
func withTrace(ctx context.Context, t *trace) context.Context {
	return context.WithValue(ctx, traceKey{}, t)
}

func traceFrom(ctx context.Context) *trace {
	t, _ := ctx.Value(traceKey{}).(*trace)
	return t
}

// tap observes the DynamoDB clients (dynamobench.Observer): it counts
// every API call (once per call, before the SDK's retryer) and records it
// in the request's trace with its duration and result, and puts the
// call's state in the context, where the load client's transport files
// the call's HTTP attempts (the SDK passes the context down to the
// transport). It also counts the HTTP attempts (after the retryer), so
// retries show.
type tap struct {
	calls    atomic.Int64
	attempts atomic.Int64
	retries  atomic.Int64 // HTTP attempts beyond the first of a call

	mu         sync.Mutex
	attemptErr map[string]int // failed HTTP attempts by error text, digits masked

	// option installs the tap on a client (dynamo.NewClient's optFns).
	option dynamobench.ClientOption
}

func newTap() *tap {
	t := &tap{attemptErr: map[string]int{}}
	t.option = dynamobench.Observer{Call: t.call, Attempt: t.attempt}.Option()
	return t
}

// call starts the record of one API call; the returned function ends it.
func (t *tap) call(ctx context.Context, r dynamobench.Request) (context.Context, func(dynamobench.Outcome)) {
	t.calls.Add(1)
	call := &callState{rec: opRecord{Op: r.Op, Start: time.Now()}}
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
func (t *tap) attempt(_ context.Context, err error, condFailed bool) {
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

// attemptErrors returns the failed HTTP attempts by error text.
func (t *tap) attemptErrors() map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.attemptErr)
}
