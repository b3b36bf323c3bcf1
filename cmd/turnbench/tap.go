package main

import (
	"context"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/turnstream/turnstream/internal/ddbfault"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
	"github.com/turnstream/turnstream/pkg/store/dynamo/dynamobench"
)

// ---- the DynamoDB tap: counting and tracing ------------------------------

// opRecord is one DynamoDB API call seen by the tap.
type opRecord struct {
	Op   string // operation name, e.g. "UpdateItem"
	SK   string // the sort key of a keyed call ("SESSION", "TURN#..."), "" for Query
	Kind string // what the call was for (kindOf)
	// Write tells the claim's writes apart (claimWrite, takeoverWrite,
	// giveBackWrite); "" for other calls.
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
	call.rec.SK, call.rec.Kind, call.rec.Write, call.rec.Expiry = kindOf(r)
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

// What a DynamoDB call of a turn request was for, from its request: the
// claim's phase (kindClaim: the claim's UpdateItem, a takeover's fence of
// the crashed turn and its compare-and-set, a give-back, the turn id
// lookup of a full window), the context load, renewals, the save, the
// release; kindRead is a consistent GetItem (the read that classifies a
// failed condition or resolves an unknown outcome), attributed to the
// write it follows by readsOf.
const (
	kindClaim   = "claim"
	kindContext = "context"
	kindRenew   = "renew"
	kindSave    = "save"
	kindDecide  = "decide"
	kindRelease = "release"
	// kindCheckpoint is a checkpoint of a running turn (its live item,
	// deltas, running turn item), where the store has them.
	kindCheckpoint = "checkpoint"
	kindRead       = "read"
	kindOther      = "other"
)

// Sub-kinds of kindClaim writes, told apart where it matters.
const (
	claimWrite    = "claim write"    // the claim's own UpdateItem
	takeoverWrite = "takeover write" // a takeover's compare-and-set that claims
	// takeoverRecord is a takeover's compare-and-set that records the
	// crashed turn and claims nothing (the turn id was rejected).
	takeoverRecord = "takeover record"
	// giveBackWrite undoes a claim that must not run (a rejected replay,
	// or a turn id lookup that failed): the lease and the ordinal return.
	giveBackWrite = "give back"
)

// kindOf classifies a call by its request: the sort key, what it is for
// (and which of the claim's writes), and the lease expiry it writes. It
// reads the store's condition expressions, whose attribute names are
// written out by hand (#name); the update expression's names come from
// the SDK's builder (#0, #1).
func kindOf(r dynamobench.Request) (sk, kind, write string, expiry time.Time) {
	sk, cond := r.SK, r.Condition
	switch r.Op {
	case "UpdateItem":
		switch {
		case sk == "SESSION" && strings.Contains(cond, "attribute_not_exists(#leaseToken)"):
			kind, write = kindClaim, claimWrite
		case sk == "SESSION" && strings.Contains(cond, ":revision") && slices.Contains(r.Names, "fencedToken") && r.LeaseExpiresAt.IsZero():
			kind = kindDecide // the decision's last write: the session freed
		case sk == "SESSION" && strings.Contains(cond, ":revision"):
			kind, write = kindClaim, takeoverWrite
		case sk == "SESSION" && slices.Contains(r.Names, "releasedToken"):
			kind = kindRelease
		case sk == "SESSION" && strings.Contains(cond, ":now") && strings.Contains(cond, "#leaseToken = :token"):
			kind = kindRenew
		case sk == "SESSION" && strings.Contains(cond, "#leaseToken = :token"):
			kind, write = kindClaim, giveBackWrite
		case strings.Contains(cond, ":crashed") || strings.Contains(cond, ":fence") || strings.Contains(cond, "#leaseExpiresAt <="):
			kind = kindDecide // deciding a turn whose lease expired (the session, live and turn fences)
		case strings.HasPrefix(sk, "TURN#") && strings.Contains(cond, ":saveId"):
			kind = kindSave
		case strings.Contains(sk, "#LIVE") || strings.Contains(cond, ":running"):
			kind = kindCheckpoint // the live item, or the running turn item a checkpoint writes
		default:
			kind = kindOther
		}
		if write == claimWrite || write == takeoverWrite || kind == kindRenew {
			expiry = r.LeaseExpiresAt
		}
		if write == takeoverWrite && expiry.IsZero() {
			write = takeoverRecord // it writes no lease
		}
	case "GetItem", "BatchGetItem":
		kind = kindRead
		if strings.Contains(sk, "#LIVE") {
			kind = kindCheckpoint
		}
	case "PutItem":
		kind = kindOther
		switch {
		case strings.Contains(sk, "#LIVE"):
			kind = kindCheckpoint // a checkpoint's delta
		case strings.Contains(sk, "#CHUNK#"):
			kind = kindSave
		}
	case "DeleteItem":
		kind = kindOther
	case "Query":
		sk = ""
		switch r.Index {
		case dynamo.VisibleIndex:
			kind = kindContext // the context load (history pages are other requests)
		case dynamo.TurnIDIndex:
			kind = kindClaim // the turn id lookup of a full window
		default:
			kind = kindOther // a chunked turn's chunks, a crashed turn's checkpoints
		}
	default:
		sk, kind = "", kindOther
	}
	return sk, kind, write, expiry
}
