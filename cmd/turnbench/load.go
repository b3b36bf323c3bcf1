package main

import (
	"bytes"
	"context"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/sessionapi"
)

// loadConfig shapes the load run.
type loadConfig struct {
	Sessions       int           // sessions, each running Turns turns one after another
	Turns          int           // turns per session
	Workers        int           // sessions running at once
	FailRate       float64       // fraction of DynamoDB calls failed by the tap
	AfterSend      float64       // share of those failures injected after the call was applied
	DisconnectRate float64       // fraction of submissions the client cancels after the first line
	Lease          time.Duration // the turn handler's LeaseDuration
	Seed           uint64
}

// Failure kinds of an injected DynamoDB failure, by what the call was for.
const (
	kindClaim   = "claim"   // the claim's UpdateItem, or its classifying GetItem
	kindContext = "context" // the context load's Query
	kindSave    = "save"    // the turn save (turn item write, or its lease-owner read)
	kindRelease = "release" // the release's UpdateItem
	kindRenew   = "renew"   // a lease renewal's UpdateItem
)

// kinds returns what each call in ops (the calls of one turn request, in
// order) was for. The claim is every call up to and including the first
// session UpdateItem that went through (happy path 1 call; a takeover of
// an expired lease 3: the failed condition, the classifying read, the
// takeover); after it come the context Query, renewals, the save (the
// turn item, or a read of the lease owner) and, after the save, the
// release.
func kinds(ops []opRecord) []string {
	out := make([]string, len(ops))
	claimed, saved := false, false
	for i, op := range ops {
		switch {
		case !claimed:
			out[i] = kindClaim
			claimed = op.Op == "UpdateItem" && op.SK == "SESSION" && !op.Failed && !op.CondFailed
		case op.Op == "Query":
			out[i] = kindContext
		case strings.HasPrefix(op.SK, "TURN#") || op.Op == "GetItem":
			out[i] = kindSave
			saved = true
		case saved:
			out[i] = kindRelease
		default:
			out[i] = kindRenew
		}
	}
	return out
}

// classify returns the kind of every injected failure in ops.
func classify(ops []opRecord) []string {
	var failed []string
	for i, k := range kinds(ops) {
		if ops[i].Failed {
			failed = append(failed, k)
		}
	}
	return failed
}

// loadRecord is one submission of the load run.
type loadRecord struct {
	Session, Turn string
	Replay        bool // a replay of a turn whose save failed
	Res           *turnResult
}

// loadReport is the load run's counts and verification results.
type loadReport struct {
	Sessions, TurnsAttempted, Requests, Acknowledged int
	Disconnects, BusyRetries, Replays                int
	Injected                                         map[string]int // injected failures by kind ("<kind>" before send, "<kind> after send")
	Outcomes                                         map[string]int // non-acknowledged client outcomes
	DiagnosticsChecked, DiagnosticsWrong             int
	ReplaysChecked, ReplaysWrong                     int
	Verified, Lost, Duplicates, Foreign              int
	LeasesHeldAfterRun, LeasesPastExpiry             int
	Problems                                         []string // the first few, for the report
}

func (r *loadReport) problem(format string, args ...any) {
	if len(r.Problems) < 10 {
		r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
	}
}

// ok reports whether verification found nothing wrong.
func (r *loadReport) ok() bool {
	return r.Lost == 0 && r.Duplicates == 0 && r.Foreign == 0 && r.DiagnosticsWrong == 0 &&
		r.ReplaysWrong == 0 && r.LeasesPastExpiry == 0 && len(r.Problems) == 0
}

// loadText is the input of every load turn: long enough (with the load
// wiring's echo delay) that a stream has several lines to cut.
var loadText = strings.Repeat("load run text ", 12)

// runLoad drives cfg.Sessions sessions of cfg.Turns turns through w with
// the tap failing cfg.FailRate of DynamoDB calls and the client cutting
// cfg.DisconnectRate of streams after their first line, then verifies
// every session through the history handler with failures off.
func runLoad(ctx context.Context, w *wiring, t *tap, prefix string, cfg loadConfig) *loadReport {
	rep := &loadReport{Sessions: cfg.Sessions, Injected: map[string]int{}, Outcomes: map[string]int{}}
	c := newHTTPClient(cfg.Workers, nil)
	defer c.CloseIdleConnections()

	var mu sync.Mutex
	records := map[string][]loadRecord{}
	sessions := make(chan int)
	t.setFailRate(cfg.FailRate, cfg.AfterSend)
	var wg sync.WaitGroup
	for range cfg.Workers {
		wg.Go(func() {
			for i := range sessions {
				sid := fmt.Sprintf("%s-load-%d", prefix, i)
				recs := runSession(ctx, c, w, sid, cfg, mrand.New(mrand.NewPCG(cfg.Seed, uint64(i))))
				mu.Lock()
				records[sid] = recs
				mu.Unlock()
			}
		})
	}
	for i := range cfg.Sessions {
		sessions <- i
	}
	close(sessions)
	wg.Wait()
	t.setFailRate(0, 0)
	if !w.waitIdle(time.Minute) {
		rep.problem("handlers still running a minute after the last client request")
	}
	checkedAt := time.Now()

	for sid, recs := range records {
		verifySession(ctx, c, w, sid, recs, cfg, checkedAt, rep)
	}
	// Leases left by a failed release end on their own: wait until the
	// last one has expired and check that no session reports a running
	// turn any more.
	time.Sleep(time.Until(checkedAt.Add(cfg.Lease + 100*time.Millisecond)))
	for sid := range records {
		var s sessionapi.SessionSummary
		status, _, err := getJSON(ctx, c, w.base+"/history/sessions/"+sid, &s)
		if err != nil || status != http.StatusOK {
			rep.problem("session %s: status %d, %v", sid, status, err)
			continue
		}
		if s.CurrentTurn != nil {
			rep.LeasesPastExpiry++
			rep.problem("session %s: lease of %s still held past its expiry", sid, s.CurrentTurn.TurnID)
		}
	}
	return rep
}

// runSession runs cfg.Turns turns of session sid: a SESSION_BUSY answer
// (a lease left by a failed release or a disconnected turn still
// cleaning up) is retried with the same turn id; a stream that ends with
// SERVER_INTERNAL (save failed) is replayed to read the recorded outcome;
// anything else moves on to the next turn.
func runSession(ctx context.Context, c *http.Client, w *wiring, sid string, cfg loadConfig, rng *mrand.Rand) []loadRecord {
	var recs []loadRecord
	for k := range cfg.Turns {
		tid := fmt.Sprintf("t%d", k)
		giveUp := time.Now().Add(3*cfg.Lease + 5*time.Second)
		var res *turnResult
		for {
			o := submitOptions{TurnScope: true}
			if rng.Float64() < cfg.DisconnectRate {
				o.DisconnectAfter = 1
			}
			res = submit(ctx, c, w.base, sid, tid, loadText, o)
			recs = append(recs, loadRecord{Session: sid, Turn: tid, Res: res})
			if res.Status == http.StatusConflict && res.ErrorCode == protocol.CodeSessionBusy && time.Now().Before(giveUp) {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			break
		}
		if res.Status != http.StatusOK || res.lastDiagnostic() != protocol.CodeServerInternal {
			continue
		}
		for range 20 { // replay: the outcome must read as indeterminate
			rr := submit(ctx, c, w.base, sid, tid, loadText, submitOptions{TurnScope: true})
			recs = append(recs, loadRecord{Session: sid, Turn: tid, Replay: true, Res: rr})
			if rr.Status == http.StatusConflict && rr.ErrorCode == protocol.CodeSessionBusy ||
				rr.Status == http.StatusInternalServerError {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			break
		}
	}
	return recs
}

// verifySession checks one session's records against its trace and its
// history: every failure reported as its kind requires, no acknowledged
// turn lost or changed, no turn twice, no turn the client never sent, and
// no lease held except one left by a failed release (or a claim applied
// but reported failed) after the last successful claim, expiring within
// one lease duration of checkedAt.
func verifySession(ctx context.Context, c *http.Client, w *wiring, sid string, recs []loadRecord, cfg loadConfig, checkedAt time.Time, rep *loadReport) {
	sent := map[string]bool{}
	acked := map[string]*turnResult{}
	var traces [][]opRecord
	for _, r := range recs {
		sent[r.Turn] = true
		rep.Requests++
		res := r.Res
		var ops []opRecord
		if tr := w.trace(res.BenchID); tr != nil {
			ops = tr.snapshot()
		}
		traces = append(traces, ops)
		for i, k := range kinds(ops) {
			switch {
			case !ops[i].Failed:
			case ops[i].AfterSend:
				rep.Injected[k+" after send"]++
			default:
				rep.Injected[k]++
			}
		}
		failed := classify(ops)
		switch {
		case res.Disconnected:
			rep.Disconnects++
		case res.acknowledged():
			rep.Acknowledged++
			acked[r.Turn] = res
		case res.Status == http.StatusConflict && res.ErrorCode == protocol.CodeSessionBusy:
			rep.BusyRetries++
		default:
			key := fmt.Sprintf("HTTP %d %s", res.Status, res.ErrorCode)
			if res.Status == http.StatusOK {
				key = "stream " + res.lastDiagnostic()
				if res.lastDiagnostic() == "" && res.Last != nil && res.Last.Snapshot != nil {
					key = "stream snapshot " + res.Last.Snapshot.Status
				}
			}
			if r.Replay {
				key = "replay " + key
			}
			rep.Outcomes[key]++
		}
		if r.Replay {
			rep.Replays++
			if len(failed) == 0 && (res.Status != http.StatusConflict || res.ErrorCode != protocol.CodeSessionBusy) {
				rep.ReplaysChecked++
				if res.Status != http.StatusConflict || res.ErrorCode != protocol.CodeTurnOutcomeIndeterminate {
					rep.ReplaysWrong++
					rep.problem("%s/%s replay after a failed save: HTTP %d %s, want 409 %s", sid, r.Turn, res.Status, res.ErrorCode, protocol.CodeTurnOutcomeIndeterminate)
				}
			}
		}
		want := expectedOutcome(failed)
		if res.Disconnected || want == "" {
			continue
		}
		rep.DiagnosticsChecked++
		if got := observedOutcome(res); want != got {
			rep.DiagnosticsWrong++
			rep.problem("%s/%s with injected %v failures: saw %s, want %s", sid, r.Turn, failed, got, want)
		}
	}
	rep.TurnsAttempted += len(sent)

	turns, err := historyAll(ctx, c, w.base, sid)
	if err != nil {
		rep.problem("history of %s: %v", sid, err)
		return
	}
	seen := map[string]int{}
	ordinals := map[int64]bool{}
	for _, t := range turns {
		seen[t.TurnID]++
		if seen[t.TurnID] == 2 || ordinals[t.Ordinal] {
			rep.Duplicates++
			rep.problem("%s: turn %s (ordinal %d) twice in history", sid, t.TurnID, t.Ordinal)
		}
		ordinals[t.Ordinal] = true
		if !sent[t.TurnID] {
			rep.Foreign++
			rep.problem("%s: history has turn %s the client never sent", sid, t.TurnID)
		}
	}
	for tid, res := range acked {
		i := slices.IndexFunc(turns, func(t sessionapi.TurnSummary) bool { return t.TurnID == tid })
		if i < 0 {
			rep.Lost++
			rep.problem("%s/%s acknowledged but missing from history", sid, tid)
			continue
		}
		if turns[i].Status != "complete" || !equalMessages(turns[i].Messages, res.Last.Snapshot.Messages) {
			rep.Lost++
			rep.problem("%s/%s acknowledged but history differs (status %s)", sid, tid, turns[i].Status)
			continue
		}
		rep.Verified++
	}

	var s sessionapi.SessionSummary
	status, _, err := getJSON(ctx, c, w.base+"/history/sessions/"+sid, &s)
	if err != nil || status != http.StatusOK {
		rep.problem("session %s: status %d, %v", sid, status, err)
		return
	}
	if s.CurrentTurn != nil {
		rep.LeasesHeldAfterRun++
		leftLease := leaseLeft(traces)
		if !leftLease || time.UnixMilli(s.CurrentTurn.ExpiresAt).After(checkedAt.Add(cfg.Lease)) {
			rep.LeasesPastExpiry++
			rep.problem("%s: lease of %s held after the run (explained by an injected failure: %v, expires %d, checked %d); requests: %s", sid, s.CurrentTurn.TurnID, leftLease, s.CurrentTurn.ExpiresAt, checkedAt.UnixMilli(), describe(w, recs))
		}
	}
}

// leaseLeft reports whether a session's requests (their calls, in order)
// may have left the lease held: since the last request that took it, a
// release failed, or a claim was applied but reported failed (an injected
// failure after send, or an SDK retry whose earlier attempt may have been
// applied). Requests that could not claim change nothing.
func leaseLeft(requests [][]opRecord) bool {
	left := false
	for _, ops := range requests {
		for i, k := range kinds(ops) {
			op := ops[i]
			switch {
			case k == kindClaim && op.Op == "UpdateItem" && !op.Failed && !op.CondFailed:
				left = false // this request holds the lease now
			case op.Failed && (k == kindRelease || k == kindClaim && op.AfterSend && op.Op == "UpdateItem"),
				k == kindClaim && op.Op == "UpdateItem" && op.Attempts > 1 && op.CondFailed:
				left = true
			}
		}
	}
	return left
}

// expectedOutcome is what a client must see of a turn request whose
// DynamoDB calls failed with kinds (DESIGN §4, AgentsKit wire §9): a
// failure before the stream is a 500 SERVER_INTERNAL JSON error; a failed
// save ends the stream with a SERVER_INTERNAL diagnostic; a failed release
// after a good save still delivers the terminal snapshot. "" when the
// failures change nothing the client sees (renewals).
func expectedOutcome(kinds []string) string {
	switch {
	case slices.Contains(kinds, kindClaim), slices.Contains(kinds, kindContext):
		return "HTTP 500 " + protocol.CodeServerInternal
	case slices.Contains(kinds, kindSave):
		return "stream " + protocol.CodeServerInternal
	case slices.Contains(kinds, kindRelease):
		return "stream snapshot complete"
	}
	return ""
}

// observedOutcome names what the client saw in expectedOutcome's terms.
func observedOutcome(r *turnResult) string {
	switch {
	case r.Status != http.StatusOK:
		return fmt.Sprintf("HTTP %d %s", r.Status, r.ErrorCode)
	case r.Last == nil:
		return "stream without lines"
	case r.Last.Diagnostic != nil:
		return "stream " + r.Last.Diagnostic.Code
	default:
		return "stream snapshot " + r.Last.Snapshot.Status
	}
}

// equalMessages compares canonical message records field by field
// (metadata and tool call arguments byte for byte, after compaction).
func equalMessages(a, b []protocol.Message) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.ID != y.ID || x.Role != y.Role || x.Content != y.Content || x.Status != y.Status ||
			x.CreatedAt != y.CreatedAt || len(x.Parts) != len(y.Parts) || len(x.ToolCalls) != len(y.ToolCalls) ||
			!bytes.Equal(bytes.TrimSpace(x.Metadata), bytes.TrimSpace(y.Metadata)) {
			return false
		}
	}
	return true
}

// describe summarises a session's requests for a problem report: turn id,
// what the client saw, and each DynamoDB call (kind, operation, !
// injected before send, ~ injected after send, ? condition failed, +n
// retries).
func describe(w *wiring, recs []loadRecord) string {
	var b strings.Builder
	for _, r := range recs {
		fmt.Fprintf(&b, "[%s %s", r.Turn, observedOutcome(r.Res))
		if r.Res.Disconnected {
			b.WriteString(" cut")
		}
		if r.Replay {
			b.WriteString(" replay")
		}
		var ops []opRecord
		if tr := w.trace(r.Res.BenchID); tr != nil {
			ops = tr.snapshot()
		}
		for i, k := range kinds(ops) {
			op := ops[i]
			fmt.Fprintf(&b, " %s:%s", k, op.Op)
			switch {
			case op.Failed && op.AfterSend:
				b.WriteString("~")
			case op.Failed:
				b.WriteString("!")
			}
			if op.CondFailed {
				b.WriteString("?")
			}
			if op.Attempts > 1 {
				fmt.Fprintf(&b, "+%d", op.Attempts-1)
			}
		}
		b.WriteString("] ")
	}
	return b.String()
}
