package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/turnstream/turnstream/internal/benchwire"
	"github.com/turnstream/turnstream/internal/loadcheck"
	"github.com/turnstream/turnstream/internal/throughput"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

// handlerSections measures the dev server's handler: request budgets,
// time to first snapshot, bytes on the wire, history pages at depth and
// throughput against the server's conditional writes.
func handlerSections(ctx context.Context, b *bench, rep *report, _ map[string]bool) error {
	set := rep.Set
	fast, err := benchwire.New(b.store, benchwire.HandlerConfig{})
	if err != nil {
		return err
	}
	defer fast.Close()
	hc := benchwire.NewHTTPClient(8, nil)
	defer hc.CloseIdleConnections()

	b.progress("request budgets")
	if rep.Budgets, err = measureBudgets(ctx, fast, hc, b.prefix, set.BudgetSessions); err != nil {
		return err
	}
	b.progress("time to first snapshot")
	if rep.TTFS, rep.Claim, err = firstSnapshot(ctx, fast, b.store, b.prefix, set.TTFSRequests); err != nil {
		return err
	}
	b.progress("bytes on the wire")
	// 8 runes every 2 ms: a 1,206-character answer streams in about 300 ms.
	slow, err := benchwire.New(b.store, benchwire.HandlerConfig{EchoDelay: 2 * time.Millisecond, EchoChunk: 8})
	if err != nil {
		return err
	}
	defer slow.Close()
	rep.Wire = map[string]*wireResult{}
	for _, scope := range []string{"session", "turn"} {
		if rep.Wire[scope], err = wireBytes(ctx, slow, b.store, b.prefix, set.WireSessions, scope == "turn"); err != nil {
			return err
		}
	}
	b.progress("history pages at depth %d and %d", set.Depths[0], set.Depths[1])
	rep.Depth = map[int]*pageResult{}
	for _, d := range set.Depths {
		if rep.Depth[d], err = historyDepth(ctx, fast, b.store, b.prefix, d, set.Pages); err != nil {
			return err
		}
	}
	rep.Turns, rep.Writes = map[int]*throughputResult{}, map[int]float64{}
	for _, conc := range set.Concurrency {
		b.progress("throughput at %d concurrent sessions", conc)
		if rep.Writes[conc], err = conditionalWrites(ctx, b.client, b.table, b.prefix, conc, set.WritesFor); err != nil {
			return err
		}
		rep.Turns[conc] = turnsPerSecond(ctx, fast, b.prefix, conc, set.TurnsFor)
	}
	return nil
}

// quantile returns the q-quantile (0..1, nearest rank) of d; d is sorted.
func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	i := int(q*float64(len(d))+0.5) - 1
	return d[min(max(i, 0), len(d)-1)]
}

// ms formats d in milliseconds with two decimals.
func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

// ---- request budgets --------------------------------------------------------

// budgetResult is the DynamoDB requests of completed turns and pages.
type budgetResult struct {
	NewTurnMax, NewTurnSum, NewTurns    int
	ContTurnMax, ContTurnSum, ContTurns int
	PageMax, PageSum, Pages             int
}

// measureBudgets runs sessions x 2 completed turns (the first creates the
// session, the second loads one turn of context) and one history page per
// session, counting each request's DynamoDB calls through its trace.
func measureBudgets(ctx context.Context, w *benchwire.Wiring, hc *http.Client, prefix string, sessions int) (*budgetResult, error) {
	c := w.Client(hc)
	r := &budgetResult{}
	for i := range sessions {
		sid := fmt.Sprintf("%s-budget-%d", prefix, i)
		for k := range 2 {
			res := loadcheck.Submit(ctx, c, sid, fmt.Sprintf("t%d", k), "How many requests does a turn cost?", loadcheck.SubmitOptions{})
			if res.Err != nil || !res.Acknowledged() {
				return nil, fmt.Errorf("budget turn %s/t%d not acknowledged (status %d, %v)", sid, k, res.Status, res.Err)
			}
			n := len(w.Trace(res.ID).Ops())
			if k == 0 {
				r.NewTurns++
				r.NewTurnSum += n
				r.NewTurnMax = max(r.NewTurnMax, n)
			} else {
				r.ContTurns++
				r.ContTurnSum += n
				r.ContTurnMax = max(r.ContTurnMax, n)
			}
		}
		page, id, err := benchwire.TurnsPage(ctx, c, sid, client.PageOptions{Limit: 10})
		if err != nil || len(page.Turns) != 2 {
			return nil, fmt.Errorf("history page of %s: %v, %+v", sid, err, page)
		}
		n := len(w.Trace(id).Ops())
		r.Pages++
		r.PageSum += n
		r.PageMax = max(r.PageMax, n)
	}
	return r, nil
}

// ---- throughput -------------------------------------------------------------

// throughputResult is one concurrency level's turn throughput.
type throughputResult struct {
	TurnsPerSec float64
	NotDone     int64         // turns not acknowledged
	TurnMean    time.Duration // mean client-side turn time (sent -> end of stream)
	DynamoMean  time.Duration // mean time a completed turn spent in DynamoDB calls
	CallsMean   float64       // mean DynamoDB calls per completed turn
	// ByKind is the mean duration of one call by what it was for (claim,
	// context, save, release).
	ByKind map[string]time.Duration
}

// turnsPerSecond runs conc workers, each benchwire.Submitting turns back to back
// (a new session every 10 turns, so context loads stay small) for d, and
// returns completed turns per second with where a turn's time went.
func turnsPerSecond(ctx context.Context, w *benchwire.Wiring, prefix string, conc int, d time.Duration) *throughputResult {
	var (
		mu                 sync.Mutex
		turnSum, dynamoSum time.Duration
		calls              int
		kindSum            = map[string]time.Duration{}
		kindN              = map[string]int{}
	)
	start := time.Now()
	done, notDone, _ := throughput.BackToBack(ctx, w, prefix+"-tp", conc, d, func(res *loadcheck.Result) {
		mu.Lock()
		defer mu.Unlock()
		turnSum += res.Total
		for _, op := range w.Trace(res.ID).Ops() {
			dynamoSum += op.Took
			calls++
			kindSum[op.Kind] += op.Took
			kindN[op.Kind]++
		}
	})
	r := &throughputResult{TurnsPerSec: float64(done) / time.Since(start).Seconds(), NotDone: notDone, ByKind: map[string]time.Duration{}}
	for k, n := range kindN {
		r.ByKind[k] = kindSum[k] / time.Duration(n)
	}
	if done > 0 {
		r.TurnMean = turnSum / time.Duration(done)
		r.DynamoMean = dynamoSum / time.Duration(done)
		r.CallsMean = float64(calls) / float64(done)
	}
	return r
}

// conditionalWrites runs throughput.BareWrites for d and returns the successful
// writes per second: the server's ceiling for turn writes.
func conditionalWrites(ctx context.Context, client dynamo.Client, table, prefix string, conc int, d time.Duration) (float64, error) {
	start := time.Now()
	n, err := throughput.BareWrites(ctx, client, table, prefix, conc, d)
	if err != nil {
		return 0, err
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// ---- time to first snapshot ------------------------------------------------

// latencies are p50 and p99 of a sample.
type latencies struct{ P50, P99 time.Duration }

func summarize(d []time.Duration) latencies {
	return latencies{P50: quantile(d, 0.50), P99: quantile(d, 0.99)}
}

// firstSnapshot alternates n turn submissions on new sessions (client
// side: request sent -> first NDJSON line received) with n ClaimTurn calls
// on new sessions made directly on the store (the claim's own round trip,
// the baseline), so both see the same load on the machine.
func firstSnapshot(ctx context.Context, w *benchwire.Wiring, store chat.Store, prefix string, n int) (ttfs, claim latencies, err error) {
	hc := benchwire.NewHTTPClient(1, nil)
	defer hc.CloseIdleConnections()
	c := w.Client(hc)
	var td, cd []time.Duration
	for i := range n {
		res := loadcheck.Submit(ctx, c, fmt.Sprintf("%s-ttfs-%d", prefix, i), "t1", "ping", loadcheck.SubmitOptions{})
		if res.Err != nil || !res.Acknowledged() {
			return ttfs, claim, fmt.Errorf("first-snapshot turn %d: status %d, %v", i, res.Status, res.Err)
		}
		td = append(td, res.FirstLine)
		start := time.Now()
		_, err := store.ClaimTurn(ctx, chat.ClaimRequest{
			SessionID: fmt.Sprintf("%s-claim-%d", prefix, i), TurnID: "t1", Principal: benchwire.Principal,
			InputHash: chat.HashInput("ping"), Lineage: protocol.Lineage{Operation: protocol.OperationSubmit},
			DefinitionID: "assistant", DefinitionRevision: 1, LeaseDuration: time.Minute,
		})
		cd = append(cd, time.Since(start))
		if err != nil {
			return ttfs, claim, fmt.Errorf("claim %d: %w", i, err)
		}
	}
	return summarize(td), summarize(cd), nil
}

// ---- bytes on the wire -----------------------------------------------------

// wireResult is the mean of one snapshot scope's measured turns.
type wireResult struct {
	TCPBytes   int // bytes the client read from the connection (headers, chunk framing, body)
	BodyBytes  int // NDJSON body bytes
	FinalBytes int // the final snapshot line, newline included
	Snapshots  int // lines in the stream
}

// answerText is a realistic answer length (about 1,200 characters, 200
// words): the echo model replies "Echo: " + input.
var answerText = strings.Repeat("The lease is the mutual exclusion; every write is conditional on its token or the revision. ", 13)

// wireBytes seeds sessions sessions with 10 prior turns each, then streams
// one answer of answerText's length per session through w (whose echo
// model has a small delay, so several snapshots are emitted) with the
// given scope, and returns the means.
func wireBytes(ctx context.Context, w *benchwire.Wiring, store chat.Store, prefix string, sessions int, turnScope bool) (*wireResult, error) {
	var counted atomic.Int64
	hc := benchwire.NewHTTPClient(1, &counted)
	defer hc.CloseIdleConnections()
	c := w.Client(hc)
	scope := "session"
	if turnScope {
		scope = "turn"
	}
	var sum wireResult
	for i := range sessions {
		sid := fmt.Sprintf("%s-wire-%s-%d", prefix, scope, i)
		if err := benchwire.SeedTurns(ctx, store, sid, 10); err != nil {
			return nil, err
		}
		counted.Store(0)
		res := loadcheck.Submit(ctx, c, sid, "t-measured", answerText, loadcheck.SubmitOptions{TurnScope: turnScope})
		if res.Err != nil || !res.Acknowledged() {
			return nil, fmt.Errorf("wire turn %s: status %d, %v", sid, res.Status, res.Err)
		}
		wantMsgs := 2
		if !turnScope {
			wantMsgs = 22
		}
		if got := len(res.Last.Snapshot.Messages); got != wantMsgs {
			return nil, fmt.Errorf("wire turn %s (%s scope): final snapshot has %d messages, want %d", sid, scope, got, wantMsgs)
		}
		sum.TCPBytes += int(counted.Load())
		sum.BodyBytes += res.Bytes
		sum.FinalBytes += len(res.LastRaw) + 1
		sum.Snapshots += res.Lines
	}
	return &wireResult{
		TCPBytes: sum.TCPBytes / sessions, BodyBytes: sum.BodyBytes / sessions,
		FinalBytes: sum.FinalBytes / sessions, Snapshots: sum.Snapshots / sessions,
	}, nil
}

// ---- history page at depth -------------------------------------------------

// pageResult is the latency and DynamoDB requests of one depth's pages.
type pageResult struct {
	Latency    latencies // the newest page
	MaxQueries int       // the most DynamoDB requests one page sent
	Seed       time.Duration
	// Middle is the latency of the page of 10 after the newest MiddleAt
	// turns (about half the depth), reached with a cursor; zero when the
	// session is too shallow.
	Middle   latencies
	MiddleAt int
}

// historyDepth seeds a session of depth turns through the store's real
// path (claim, save, release per turn: a claim may write only its own
// ordinal) and serves n newest pages of 10 turns through the history
// handler.
func historyDepth(ctx context.Context, w *benchwire.Wiring, store chat.Store, prefix string, depth, n int) (*pageResult, error) {
	sid := fmt.Sprintf("%s-deep-%d", prefix, depth)
	t0 := time.Now()
	if err := benchwire.SeedTurns(ctx, store, sid, depth); err != nil {
		return nil, err
	}
	r := &pageResult{Seed: time.Since(t0)}
	hc := benchwire.NewHTTPClient(1, nil)
	defer hc.CloseIdleConnections()
	c := w.Client(hc)
	var err error
	if r.Latency, err = pages(ctx, c, w, sid, "", int64(depth), n, &r.MaxQueries); err != nil {
		return nil, err
	}
	if depth < 200 {
		return r, nil
	}
	// Walk to the middle 100 turns a page, then measure the page there.
	cursor, walked := "", 0
	for walked < depth/2 {
		page, _, err := benchwire.TurnsPage(ctx, c, sid, client.PageOptions{Limit: 100, Cursor: cursor})
		if err != nil || page.NextCursor == "" {
			return nil, fmt.Errorf("walk %s: %v", sid, err)
		}
		cursor = page.NextCursor
		walked += len(page.Turns)
	}
	r.MiddleAt = walked
	if r.Middle, err = pages(ctx, c, w, sid, cursor, int64(depth-walked), n, &r.MaxQueries); err != nil {
		return nil, err
	}
	return r, nil
}

// pages reads the page of 10 of sid's turns at cursor n times, checks
// that each is a full page whose first turn has ordinal first, records
// the most DynamoDB requests one page sent in maxQueries and returns the
// latencies.
func pages(ctx context.Context, c *client.Client, w *benchwire.Wiring, sid, cursor string, first int64, n int, maxQueries *int) (latencies, error) {
	var d []time.Duration
	for range n {
		start := time.Now()
		page, id, err := benchwire.TurnsPage(ctx, c, sid, client.PageOptions{Limit: 10, Cursor: cursor})
		d = append(d, time.Since(start))
		if err != nil {
			return latencies{}, fmt.Errorf("history page: %w", err)
		}
		if len(page.Turns) != 10 || page.Turns[0].Ordinal != first {
			return latencies{}, fmt.Errorf("history page: %d turns from ordinal %d, want 10 from %d", len(page.Turns), page.Turns[0].Ordinal, first)
		}
		*maxQueries = max(*maxQueries, len(w.Trace(id).Ops()))
	}
	return summarize(d), nil
}
