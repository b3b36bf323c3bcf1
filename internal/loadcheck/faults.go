package loadcheck

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/turnstream/turnstream/internal/ddbfault"
	"github.com/turnstream/turnstream/internal/dynamobench"
)

// The load run injects its DynamoDB faults at the HTTP transport, below
// the SDK's retryer, so that the SDK retries them as it would against
// DynamoDB: the load client's transport is
//
//	attemptLog -> ddbfault.Transport (the fault rule) -> answerLog -> HTTP
//
// attemptLog files each HTTP attempt under the API call the tap recorded
// (found through the request context, which the SDK passes down), the
// rule draws the attempt's fault, and answerLog, which sees only the
// attempts ddbfault forwards, records DynamoDB's real answer: the ground
// truth of whether a write applied, whatever the caller was told.

// FaultPlan is the load run's fault rate: FailRate of API calls are
// faulty, each with one fault kind drawn uniformly from faultKinds; a
// faulty call's first attempt meets the fault (the SDK's retry then
// passes), or with probability Persistent every attempt does (the SDK
// gives up and the caller sees the failure).
type FaultPlan struct {
	FailRate   float64
	Persistent float64
}

// faultKinds are the faults the load run injects.
var faultKinds = []ddbfault.Fault{ddbfault.LoseAnswer, ddbfault.ServerErrorAfter, ddbfault.ServerErrorBefore, ddbfault.Hang}

// Injector draws the faults of the load client's attempts.
type Injector struct {
	plan atomic.Pointer[FaultPlan] // nil: no faults

	mu  sync.Mutex
	rng *mrand.Rand
}

func newInjector(seed uint64) *Injector {
	return &Injector{rng: mrand.New(mrand.NewPCG(seed, seed^0x5851f42d4c957f2d))}
}

// set installs p (nil: no faults from now on).
func (f *Injector) set(p *FaultPlan) { f.plan.Store(p) }

// rule is the ddbfault rule: the call's decision is drawn at its first
// attempt and kept on its record.
func (f *Injector) rule(a ddbfault.Attempt) ddbfault.Fault {
	call, _ := a.Context.Value(callKey{}).(*callState)
	att, _ := a.Context.Value(attemptKey{}).(*attemptState)
	p := f.plan.Load()
	if call == nil || att == nil || p == nil {
		return ddbfault.Pass
	}
	call.mu.Lock()
	defer call.mu.Unlock()
	if tr := traceFrom(a.Context); tr != nil && tr.aim != nil && tr.aim.matches(&call.rec) {
		fault := ddbfault.Pass
		if len(call.rec.Attempts) == 1 || tr.aim.Every {
			fault = tr.aim.Fault
		}
		att.rec.Fault = fault
		return fault
	}
	if !call.drawn {
		call.drawn = true
		f.mu.Lock()
		if f.rng.Float64() < p.FailRate {
			call.fault = faultKinds[f.rng.IntN(len(faultKinds))]
			call.persistent = f.rng.Float64() < p.Persistent
		}
		f.mu.Unlock()
	}
	fault := ddbfault.Pass
	if call.fault != ddbfault.Pass && (len(call.rec.Attempts) == 1 || call.persistent) {
		fault = call.fault
	}
	att.rec.Fault = fault
	return fault
}

// aim is a fault a load submission asks for on the calls of one kind
// (FaultHeader): the first attempt of each, or every attempt. The
// load run aims one at some turns so that each case is covered in every
// run, beside the random faults.
type aim struct {
	Kind  string // a call kind, or a write (dynamobench.ClaimWrite, dynamobench.LedgerWrite...)
	Fault ddbfault.Fault
	Every bool
	// Long makes the turn stream for longer than its lease, so that it
	// renews (the renewal cases).
	Long bool
}

// String is the aim's header form, e.g. "save/500 after apply/every".
func (a aim) String() string {
	n := "once"
	if a.Every {
		n = "every"
	}
	return a.Kind + "/" + a.Fault.String() + "/" + n
}

// parseAim reads an aim's header form; nil if it is not one.
func parseAim(s string) *aim {
	for _, a := range aims {
		if a.String() == s {
			return &a
		}
	}
	return nil
}

// matches reports whether a call of rec's kind is aimed at.
func (a *aim) matches(rec *Op) bool {
	return rec.Write == a.Kind || rec.Kind == a.Kind && rec.Write == ""
}

// aims are the cases the load run aims at, each the fault of one kind
// of call of one turn.
var aims = []aim{
	{Kind: dynamobench.ClaimWrite, Fault: ddbfault.LoseAnswer},                     // applied; the SDK's retry fails its own condition
	{Kind: dynamobench.ClaimWrite, Fault: ddbfault.ServerErrorAfter, Every: true},  // applied; every answer a 500
	{Kind: dynamobench.ClaimWrite, Fault: ddbfault.Hang},                           // the attempt timeout cuts it; the retry claims
	{Kind: dynamobench.ClaimWrite, Fault: ddbfault.ServerErrorBefore, Every: true}, // never applied: 500, the client retries
	{Kind: dynamobench.KindContext, Fault: ddbfault.ServerErrorBefore, Every: true},
	{Kind: dynamobench.KindSave, Fault: ddbfault.LoseAnswer},
	{Kind: dynamobench.KindSave, Fault: ddbfault.ServerErrorAfter, Every: true},  // saved, so reported saved
	{Kind: dynamobench.KindSave, Fault: ddbfault.ServerErrorBefore, Every: true}, // not saved: reported so
	{Kind: dynamobench.KindSave, Fault: ddbfault.Hang, Every: true},
	{Kind: dynamobench.KindRelease, Fault: ddbfault.ServerErrorAfter, Every: true},
	{Kind: dynamobench.KindRelease, Fault: ddbfault.ServerErrorBefore, Every: true}, // the lease is left to expire
	{Kind: dynamobench.KindRenew, Fault: ddbfault.Hang, Every: true, Long: true},    // the lease can no longer be proven
	{Kind: dynamobench.KindRenew, Fault: ddbfault.LoseAnswer, Long: true},
	// The turn's count in the ledger (docs/quotas.md): counted once
	// whatever its writes' answers. A count whose add (the one write that
	// changes the counters) or settle cannot be confirmed leaves the lease
	// to expire and the turn to the store that decides it; a clear that
	// fails fails nothing.
	{Kind: dynamobench.LedgerWrite, Fault: ddbfault.LoseAnswer},                     // applied; the SDK's retry fails its own condition (the journal entry it set), the next read shows it added
	{Kind: dynamobench.LedgerWrite, Fault: ddbfault.ServerErrorAfter, Every: true},  // applied; the resolving read sees the journal entry
	{Kind: dynamobench.LedgerWrite, Fault: ddbfault.Hang, Every: true},              // never answered: left to the decider
	{Kind: dynamobench.LedgerWrite, Fault: ddbfault.ServerErrorBefore, Every: true}, // never applied: left to the decider
	{Kind: dynamobench.LedgerSettle, Fault: ddbfault.LoseAnswer},                    // applied; the SDK's retry fails its own condition, read as settled
	{Kind: dynamobench.LedgerClear, Fault: ddbfault.ServerErrorBefore, Every: true}, // never applied: the entry left to the session's next count
}

// attemptRecord is one HTTP attempt of an API call.
type attemptRecord struct {
	Fault ddbfault.Fault
	// Forwarded means the attempt reached DynamoDB (every fault but
	// ServerErrorBefore and Hang).
	Forwarded bool
	// Status is DynamoDB's real HTTP status for a forwarded attempt (0
	// when none arrived: the connection failed or the attempt timed out
	// first, so a write may or may not have applied); ErrorType the
	// __type of an error answer ("ConditionalCheckFailedException").
	Status    int
	ErrorType string
	// Start is when the attempt began, Answered when DynamoDB's real
	// answer arrived (a write applies between the two), End when the SDK
	// got the attempt's result.
	Start, Answered, End time.Time
	// Err is the attempt's error as the SDK saw it ("" for an answer).
	Err string
}

// attemptState is an attempt being made; the transport layers fill rec.
type attemptState struct{ rec *attemptRecord }

type attemptKey struct{}

// attemptLog is the outer layer of the load client's transport.
type attemptLog struct{ next http.RoundTripper }

func (l attemptLog) RoundTrip(req *http.Request) (*http.Response, error) {
	call, _ := req.Context().Value(callKey{}).(*callState)
	if call == nil {
		return l.next.RoundTrip(req)
	}
	att := &attemptState{rec: &attemptRecord{Start: time.Now()}}
	call.mu.Lock()
	call.rec.Attempts = append(call.rec.Attempts, att.rec)
	call.mu.Unlock()
	resp, err := l.next.RoundTrip(req.WithContext(context.WithValue(req.Context(), attemptKey{}, att)))
	call.mu.Lock()
	att.rec.End = time.Now()
	if err != nil {
		att.rec.Err = err.Error()
	}
	call.mu.Unlock()
	return resp, err
}

// answerLog is the inner layer: it records DynamoDB's real answer to a
// forwarded attempt. An error answer's body (small) is read to learn its
// __type and handed on unchanged.
type answerLog struct{ next http.RoundTripper }

func (l answerLog) RoundTrip(req *http.Request) (*http.Response, error) {
	call, _ := req.Context().Value(callKey{}).(*callState)
	att, _ := req.Context().Value(attemptKey{}).(*attemptState)
	if call == nil || att == nil {
		return l.next.RoundTrip(req)
	}
	call.mu.Lock()
	att.rec.Forwarded = true
	call.mu.Unlock()
	resp, err := l.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	errType := ""
	if resp.StatusCode != http.StatusOK {
		raw, rerr := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(raw))
		if rerr != nil {
			return resp, nil // no complete answer: leave Status 0
		}
		var body struct {
			Type string `json:"__type"`
		}
		_ = json.Unmarshal(raw, &body)
		errType = body.Type
		if i := bytes.LastIndexByte([]byte(errType), '#'); i >= 0 {
			errType = errType[i+1:]
		}
	}
	call.mu.Lock()
	att.rec.Status, att.rec.ErrorType, att.rec.Answered = resp.StatusCode, errType, time.Now()
	call.mu.Unlock()
	return resp, nil
}

// NewTransport returns the load client's transport over a keep-alive
// pool sized for workers concurrent turns, and the injector that chooses
// its faults.
func NewTransport(workers int, seed uint64) (http.RoundTripper, *Injector) {
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.MaxIdleConns = 4 * workers
	base.MaxIdleConnsPerHost = 4 * workers
	inj := newInjector(seed)
	ft := ddbfault.New(answerLog{next: base})
	ft.SetRule(inj.rule)
	return attemptLog{next: ft}, inj
}

// applied is what the attempts of a write show of its effect.
type applied int

const (
	appliedNo      applied = iota // no attempt can have applied it
	appliedYes                    // DynamoDB answered 200 to an attempt
	appliedUnknown                // an attempt reached DynamoDB and got no answer
)

// appliedOf reads a write call's attempts: yes when DynamoDB answered 200
// to one (whatever the SDK was told), unknown when one was forwarded and
// no real answer came back, else no.
func appliedOf(op *Op) applied {
	out := appliedNo
	for _, a := range op.Attempts {
		switch {
		case a.Status == http.StatusOK:
			return appliedYes
		case a.Forwarded && a.Status == 0:
			out = appliedUnknown
		}
	}
	return out
}

// mostApplied is the more certain of two calls' outcomes: yes if either
// applied, else unknown if either may have, else no.
func mostApplied(a, b applied) applied {
	switch {
	case a == appliedYes || b == appliedYes:
		return appliedYes
	case a == appliedUnknown || b == appliedUnknown:
		return appliedUnknown
	}
	return appliedNo
}

// appliedAttempt returns the attempt DynamoDB answered 200, or nil.
func appliedAttempt(op *Op) *attemptRecord {
	for _, a := range op.Attempts {
		if a.Status == http.StatusOK {
			return a
		}
	}
	return nil
}

// faulted reports whether any attempt of op met a fault.
func faulted(op *Op) bool {
	for _, a := range op.Attempts {
		if a.Fault != ddbfault.Pass {
			return true
		}
	}
	return false
}

// answerLost reports whether op applied on an attempt whose answer the
// caller never got (lost or replaced by a 500): the SDK retried, or gave
// up, after the write had applied.
func answerLost(op *Op) bool {
	a := appliedAttempt(op)
	return a != nil && (a.Fault == ddbfault.LoseAnswer || a.Fault == ddbfault.ServerErrorAfter)
}
