package loadcheck

import (
	"bytes"
	"context"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/turnstream/turnstream/internal/ddbfault"
	"github.com/turnstream/turnstream/internal/dynamobench"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

// Config shapes the load run.
type Config struct {
	Sessions int // sessions, each running Turns turns one after another
	Turns    int // turns per session
	Workers  int // sessions running at once
	// Faults are the random faults on every DynamoDB call, beside the
	// aimed ones (aims).
	Faults         FaultPlan
	DisconnectRate float64       // fraction of submissions the client cancels after the first line
	Lease          time.Duration // the turn handler's LeaseDuration
	// AttemptTimeout is the load client's per-attempt timeout, which cuts
	// hung attempts.
	AttemptTimeout time.Duration
	Seed           uint64
}

// loadRecord is one submission of the load run.
type loadRecord struct {
	Session, Turn string
	Replay        bool // a replay of a turn whose stream reported it unsaved
	Aim           *aim
	Res           *Result
	Ops           []Op // its DynamoDB calls, read at verification
}

// Report is the load run's counts and verification results.
type Report struct {
	Sessions, TurnsAttempted, Requests, Acknowledged int
	Disconnects, Retried, Replays                    int
	// Injected counts faulted HTTP attempts by call kind and fault.
	Injected map[string]int
	// Aimed counts the aimed submissions by aim.
	Aimed map[string]int
	// QuotaExceeded counts calls the SDK stopped retrying because its
	// client-side retry quota (a token bucket shared by the client) was
	// empty.
	QuotaExceeded int
	// Outcomes counts what the client saw of the submissions that were
	// not acknowledged.
	Outcomes map[string]int
	// Diagnostics checked against what the request's faults require,
	// wrong, and not attributable (an attempt reached DynamoDB and got no
	// answer: the write may or may not have applied).
	Checked, Wrong, Unattributable      int
	Verified, Lost, Duplicates, Foreign int
	// UnsavedSaved counts turns reported unsaved (a SERVER_INTERNAL or
	// SESSION_CONFLICT last line, or 409 TURN_OUTCOME_INDETERMINATE to a
	// replay) that history shows saved; Unresolvable
	// those of them whose store could not know (the read that resolves the
	// save failed on every attempt too: correctly reported as unknown).
	UnsavedSaved, UnsavedSavedUnresolvable int
	// ClaimsAnswerLost counts claims whose write applied on an attempt
	// whose answer was lost or replaced by a 500 (the SDK retried, or gave
	// up); RanOnce those whose turn then ran exactly once, FailedAfter
	// those the store recognised whose context load then failed on every
	// attempt (500; the turn recorded once, as an error), whose turn id
	// lookup did (500; the claim given back) or whose lease could no longer
	// be proven before the stream (409 TURN_OUTCOME_INDETERMINATE), Unresolvable
	// those whose resolving read failed on every attempt too (500, the
	// lease left to expire).
	ClaimsAnswerLost, ClaimsRanOnce, ClaimsFailedAfter, ClaimsUnresolvable int
	// BusyOwnClaim counts SESSION_BUSY answers to a request whose own
	// claim had applied.
	BusyOwnClaim int
	// Lines are the snapshot lines received; AfterExpiry those emitted
	// after their turn's lease expired (by the latest expiry any of its
	// applied claim or renewal writes set), AfterClaim those emitted after
	// a later claim of the session had applied; Ambiguous those emitted
	// while a later claim was in flight (it may or may not have applied
	// yet); InFlight those emitted before a later claim but received after
	// it.
	// AfterUnknownRenewal counts streaming lines emitted after the proven
	// expiry but before the expiry of a renewal that reached DynamoDB and
	// got no answer: the store's resolving read may have seen it applied
	// (then the line was in time), which turnbench cannot see.
	Lines, AfterExpiry, AfterClaim, Ambiguous, InFlight, AfterUnknownRenewal int
	LeasesHeldAfterRun, LeasesPastExpiry                                     int
	// Ledger is the usage ledger's check (ledger.go).
	Ledger   LedgerCheck
	Problems []string // the first few, for the report
	// Notes are the first few outcomes the store could not know (its
	// resolving read failed too), with their calls.
	Notes []string
}

func (r *Report) note(format string, args ...any) {
	if len(r.Notes) < 5 {
		r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
	}
}

func (r *Report) problem(format string, args ...any) {
	if len(r.Problems) < 10 {
		r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
	}
}

// ok reports whether verification found nothing wrong.
func (r *Report) OK() bool {
	return r.Lost == 0 && r.Duplicates == 0 && r.Foreign == 0 && r.Wrong == 0 && r.BusyOwnClaim == 0 &&
		r.UnsavedSaved == r.UnsavedSavedUnresolvable && r.AfterExpiry == 0 && r.AfterClaim == 0 &&
		r.ClaimsRanOnce+r.ClaimsFailedAfter+r.ClaimsUnresolvable == r.ClaimsAnswerLost && r.LeasesPastExpiry == 0 && len(r.Problems) == 0
}

// The pace of the echo model a load run's server streams with: EchoChunk
// runes every EchoDelay (4 runes a millisecond).
const (
	EchoDelay = time.Millisecond
	EchoChunk = 4
)

// loadText is the input of every load turn: long enough (at the echo
// pace) that a stream has several lines to cut.
var loadText = strings.Repeat("load run text ", 12)

// longText returns the input of a turn that streams for about 1.5 leases
// at the echo pace (4 runes a millisecond), so that it renews.
func longText(lease time.Duration) string {
	const unit = "long turn text "
	return strings.Repeat(unit, int(lease.Milliseconds())*4*3/2/len(unit)+1)
}

// Server is what a load run drives: a dev-server wiring of the turn and
// history functions (their handler wrapped by Traces.Wrap; its DynamoDB
// client's transport NewTransport's, with a Tap) whose echo model streams
// at the echo pace (EchoDelay, EchoChunk) and whose lease is Config.Lease.
type Server struct {
	// Client returns a client of the server's functions, as the owner of
	// the run's sessions, over hc.
	Client func(hc *http.Client) *client.Client
	Traces *Traces
	// Turns returns how many turns of a session ended: its claimed
	// ordinals (chat.Session.NextOrdinal - 1) but those a withdrawn claim
	// left unspent (dynamo.IsWithdrawnClaim), read from the table after
	// the run; nil leaves the usage ledger unchecked.
	Turns func(ctx context.Context, sessionID string) (int64, error)
}

// Run drives cfg.Sessions sessions of cfg.Turns turns through srv, whose
// DynamoDB client's faults inj injects, with the client cutting
// cfg.DisconnectRate of streams after their first line; then verifies
// every session through the history function with faults off.
func Run(ctx context.Context, srv Server, inj *Injector, prefix string, cfg Config) *Report {
	rep := &Report{Sessions: cfg.Sessions, Injected: map[string]int{}, Aimed: map[string]int{}, Outcomes: map[string]int{}}
	pool := http.DefaultTransport.(*http.Transport).Clone()
	pool.MaxIdleConns, pool.MaxIdleConnsPerHost = cfg.Workers, cfg.Workers
	hc := &http.Client{Transport: TagRequests(pool)}
	defer hc.CloseIdleConnections()
	c := srv.Client(hc)

	before, skipped := ledgerBaseline(ctx, c)
	var mu sync.Mutex
	records := map[string][]loadRecord{}
	sessions := make(chan int)
	plan := cfg.Faults
	inj.set(&plan)
	var wg sync.WaitGroup
	for range cfg.Workers {
		wg.Go(func() {
			for i := range sessions {
				sid := fmt.Sprintf("%s-load-%d", prefix, i)
				recs := runSession(ctx, c, sid, i, cfg, mrand.New(mrand.NewPCG(cfg.Seed, uint64(i))))
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
	inj.set(nil)
	if !srv.Traces.WaitIdle(time.Minute) {
		rep.problem("handlers still running a minute after the last client request")
	}
	checkedAt := time.Now()

	for sid, recs := range records {
		for i := range recs {
			if tr := srv.Traces.Trace(recs[i].Res.ID); tr != nil {
				recs[i].Ops = tr.Ops()
			}
		}
		verifySession(ctx, c, sid, recs, cfg, checkedAt, rep)
	}
	// Leases left by a failed release end on their own: wait until the
	// last one has expired and check that no session reports a running
	// turn any more.
	time.Sleep(time.Until(checkedAt.Add(cfg.Lease + 100*time.Millisecond)))
	for sid := range records {
		s, err := c.Session(ctx, sid)
		if err != nil {
			rep.problem("session %s: %v", sid, err)
			continue
		}
		if s.CurrentTurn != nil {
			rep.LeasesPastExpiry++
			rep.problem("session %s: lease of %s still held past its expiry", sid, s.CurrentTurn.TurnID)
		}
	}
	// Every turn has ended and been decided: the ledger counted each once.
	checkLedger(ctx, c, srv, before, skipped, records, rep)
	return rep
}

// aimFor returns the aim of the first submission of turn k of session i:
// the claim cases on a new session (k 0), every case on turns 1 and 3.
func aimFor(i, k int) *aim {
	switch k {
	case 0:
		if i%2 == 0 {
			return &aims[(i/2)%4] // the four claim cases
		}
	case 1:
		return &aims[i%len(aims)]
	case 3:
		return &aims[(i+len(aims)/2)%len(aims)]
	}
	return nil
}

// runSession runs cfg.Turns turns of session sid, as a client would: a
// retryable answer (409 SESSION_BUSY: a lease left by a failed release or
// a turn still cleaning up; 500 SERVER_INTERNAL) is retried with the same
// turn id; a stream that reports its turn unsaved (SERVER_INTERNAL,
// SESSION_CONFLICT) is replayed to read the recorded outcome; anything
// else moves on to the next turn.
func runSession(ctx context.Context, c *client.Client, sid string, i int, cfg Config, rng *mrand.Rand) []loadRecord {
	var recs []loadRecord
	for k := range cfg.Turns {
		tid := fmt.Sprintf("t%d", k)
		giveUp := time.Now().Add(3*cfg.Lease + 5*time.Second)
		first := aimFor(i, k)
		input := loadText // the same for every submission of the turn
		if first != nil && first.Long {
			input = longText(cfg.Lease)
		}
		var res *Result
		for n := 0; ; n++ {
			o := SubmitOptions{TurnScope: true, RecordLines: true}
			if n == 0 && first != nil {
				o.Aim = first
			} else if rng.Float64() < cfg.DisconnectRate {
				o.DisconnectAfter = 1
			}
			res = Submit(ctx, c, sid, tid, input, o)
			recs = append(recs, loadRecord{Session: sid, Turn: tid, Aim: o.Aim, Res: res})
			if retryable(res) && time.Now().Before(giveUp) {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			break
		}
		if d := res.LastDiagnostic(); res.Status != http.StatusOK || d != protocol.CodeServerInternal && d != protocol.CodeSessionConflict {
			continue
		}
		for range 100 { // replay: the recorded outcome, once the lease is free
			rr := Submit(ctx, c, sid, tid, input, SubmitOptions{TurnScope: true, RecordLines: true})
			recs = append(recs, loadRecord{Session: sid, Turn: tid, Replay: true, Res: rr})
			if !retryable(rr) || !time.Now().Before(giveUp) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return recs
}

// retryable reports whether a client retries the submission as it is.
func retryable(r *Result) bool {
	return r.Status == http.StatusConflict && r.ErrorCode == protocol.CodeSessionBusy ||
		r.Status == http.StatusInternalServerError && r.ErrorCode == protocol.CodeServerInternal && r.Retryable
}

// facts is what a turn request's DynamoDB calls show: for each write,
// whether DynamoDB applied it (from its real answers, whatever the caller
// was told), and whether the store could learn it (a read after it was
// answered).
type facts struct {
	claim         applied
	claimAt       *attemptRecord // the attempt that applied the claim
	claimOp       *Op            // the claim's applied write
	claimResolved bool           // a read after the applied claim write was answered
	claimLost     bool           // the claim applied on an attempt whose answer was lost or a 500
	claimFailed   bool           // a call of the claim's phase failed (not a failed condition)
	// claimReadFailed: a read of the session in the claim's phase failed
	// on every attempt (the read resolving an unknown claim write, say).
	claimReadFailed bool
	// givenBack is what the attempts of the claim's give-back show: a
	// claim given back consumed nothing, its turn id may run later.
	givenBack applied
	// afterClaimFailed: the context load or the acknowledgment failed on
	// every attempt (a 500 before the stream).
	afterClaimFailed bool
	renewTrouble     bool // a renewal failed, met a fault, or outlived the lease it extended
	// fateReadFailed: after a renewal in trouble, a read of the turn or
	// its session (the fate the table decided of a turn that could no
	// longer prove its lease), or the decided turn's count in the usage
	// ledger, failed on every attempt.
	fateReadFailed bool
	save           applied
	saveCalled     bool
	saveFailed     bool // the save returned an error (a failed condition included)
	saveResolved   bool // a read of the turn item after the save was answered
	release        applied
	// expiry is the latest lease expiry set by the request's applied
	// claim or renewal writes: no turn can prove a later one.
	expiry time.Time
	// expiryMaybe is the latest expiry of a renewal whose outcome
	// turnbench does not know (it reached DynamoDB without an answer).
	expiryMaybe time.Time
}

// factsOf reads ops (one request's calls, in start order).
func factsOf(ops []Op) facts {
	var f facts
	var lastSession *Op // the last session write started, for its reads
	var save *Op
	var clearing bool // the last usage calls are a ledger clear's (its write, its resolving read, its resend)
	for i := range ops {
		op := &ops[i]
		if op.Kind == dynamobench.KindUsage {
			clearing = op.Write == dynamobench.LedgerClear || clearing && op.Op == "GetItem" && op.Write == ""
		}
		switch {
		case op.Kind == dynamobench.KindRead && dynamo.ItemKindOf(op.SK) == dynamo.ItemTurn:
			if save != nil && !op.Start.Before(save.End) {
				f.saveResolved = f.saveResolved || op.Err == ""
			} else if op.failed() {
				f.claimFailed = true // the fence's read
			}
		case op.Kind == dynamobench.KindRead && (lastSession == nil || lastSession.Kind == dynamobench.KindClaim):
			if f.claimOp != nil && !op.Start.Before(f.claimOp.End) && op.Err == "" {
				f.claimResolved = true
			}
			f.claimFailed = f.claimFailed || op.failed()
			f.claimReadFailed = f.claimReadFailed || op.failed()
		case op.Kind == dynamobench.KindRead && save == nil:
			// After a renewal, before any save: the renewal's resolving
			// read, or the session read of the turn's decided fate (a
			// poll of the whole turn reads the session to decide the
			// expired lease). Either failing on every attempt after a
			// renewal in trouble leaves the fate unread.
			f.fateReadFailed = f.fateReadFailed || f.renewTrouble && op.failed()
		case op.Kind == dynamobench.KindClaim:
			f.claimFailed = f.claimFailed || op.failed()
			if op.Write == dynamobench.ClaimWrite || op.Write == dynamobench.TakeoverWrite {
				lastSession = op
				switch appliedOf(op) {
				case appliedYes:
					f.claim, f.claimOp, f.claimAt = appliedYes, op, appliedAttempt(op)
					f.claimLost = answerLost(op)
					f.expiry = later(f.expiry, op.Expiry)
				case appliedUnknown:
					if f.claim != appliedYes {
						f.claim = appliedUnknown
					}
				}
			}
			if a := appliedOf(op); op.Write == dynamobench.GiveBackWrite && f.givenBack != appliedYes && a != appliedNo {
				f.givenBack = a
			}
		case op.Kind == dynamobench.KindContext, op.Kind == dynamobench.KindCheckpoint:
			// The context load, or the acknowledgment (the first
			// checkpoint) before the stream: a 500 when it fails.
			f.afterClaimFailed = f.afterClaimFailed || op.failed()
		case op.Kind == dynamobench.KindDecide, op.Kind == dynamobench.KindOther:
			// Deciding the crashed turn a claim found (its fences, the
			// Query of its checkpoints), or another call before the
			// stream; after a renewal in trouble, the read of the turn's
			// decided fate.
			f.claimFailed = f.claimFailed || op.failed()
			f.fateReadFailed = f.fateReadFailed || f.renewTrouble && op.failed()
		case op.Kind == dynamobench.KindUsage:
			// The usage ledger: before the save, the count of a crashed
			// turn the claim decided (its read, add or settle failing
			// fails the claim; its clear failing fails nothing, the
			// session's next count clears the entry); after it, the
			// turn's own count, which the client does not see.
			// After a renewal in trouble and before any save, they are the
			// count of the turn's own decided fate (the store decided its
			// expired lease and counts the turn before answering): one
			// failing leaves that fate unread.
			if save == nil && !clearing {
				f.claimFailed = f.claimFailed || op.failed()
				f.fateReadFailed = f.fateReadFailed || f.renewTrouble && op.failed()
			}
		case op.Kind == dynamobench.KindRenew:
			lastSession = op
			if op.Err != "" || faulted(op) || !f.expiry.IsZero() && op.End.After(f.expiry) {
				f.renewTrouble = true
			}
			switch appliedOf(op) {
			case appliedYes:
				f.expiry = later(f.expiry, op.Expiry)
			case appliedUnknown:
				f.expiryMaybe = later(f.expiryMaybe, op.Expiry)
			}
		case op.Kind == dynamobench.KindSave && op.Op == "UpdateItem":
			// A turn may save more than once (a save whose outcome stayed
			// unknown is sent again, and then fails its condition): one
			// that applied is the turn's save, whatever a later one met.
			save = op
			f.saveCalled = true
			f.save = mostApplied(f.save, appliedOf(op))
			f.saveFailed = f.saveFailed || op.Err != ""
		case op.Kind == dynamobench.KindRelease:
			lastSession = op
			f.release = appliedOf(op)
		}
	}
	return f
}

// What became of a turn whose claim applied on an attempt whose answer was
// lost or a 500 (the first submission of its turn id), by lostClaimOutcome.
const (
	unexplained  = iota
	ranOnce      // the store recognised its own claim and the turn ran: 200
	failedAfter  // recognised, then a failure before the stream (see lostClaimOutcome)
	unresolvable // 409 TURN_OUTCOME_INDETERMINATE: the read resolving the claim's outcome failed on every attempt too
)

// lostClaimOutcome classifies res, the answer to a submission whose claim
// applied with its answer lost (f.claimLost). A failure after the claim
// was recognised is failedAfter: the context load or the acknowledgment
// failing on every attempt (500, the turn recorded once, as an error), the
// turn id lookup failing (500, the claim given back), or a renewal, the
// context load, the acknowledgment or a failure record's save failing so
// that the turn could no longer prove its lease (409
// TURN_OUTCOME_INDETERMINATE, its fate left to the table's decision, as
// judge accepts it). A claim whose resolving read failed on every attempt
// too is unresolvable: the store cannot know its outcome and says so (409
// TURN_OUTCOME_INDETERMINATE).
func lostClaimOutcome(f facts, res *Result) int {
	switch {
	case res.Status == http.StatusOK:
		return ranOnce
	case res.Status == http.StatusConflict && res.ErrorCode == protocol.CodeTurnOutcomeIndeterminate && f.claimUnresolved():
		return unresolvable
	case res.Status == http.StatusInternalServerError && (f.afterClaimFailed || f.renewTrouble || f.claimFailed && f.givenBack == appliedYes):
		return failedAfter
	case res.Status == http.StatusConflict && res.ErrorCode == protocol.CodeTurnOutcomeIndeterminate && f.leaseUnproven():
		return failedAfter
	}
	return unexplained
}

// claimUnresolved reports whether the store could not learn its claim's
// outcome: a read of the claim's phase failed on every attempt and none
// after the applied claim write was answered.
func (f facts) claimUnresolved() bool { return f.claimReadFailed && !f.claimResolved }

// leaseUnproven reports whether something failed after the claim that can
// leave a turn unable to prove its lease before the stream (a renewal, the
// context load or the acknowledgment) or with a failure record whose save
// went unconfirmed: the turn then answers 409 TURN_OUTCOME_INDETERMINATE.
func (f facts) leaseUnproven() bool { return f.renewTrouble || f.saveFailed || f.afterClaimFailed }

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// verdict is the judgement of one submission's outcome against its
// facts: problem is "" when the outcome is the one its faults require.
type verdict struct {
	problem        string
	unattributable bool // the outcome depends on a write that may or may not have applied
}

// judge checks what the client saw of a submission (res) against what
// its DynamoDB calls show (f). earlier is what became of the claims of
// earlier submissions of the same turn id (yes: one applied; unknown: one
// may have), saved whether history holds the turn, lease the turn
// handler's LeaseDuration.
func judge(f facts, res *Result, earlier applied, saved bool, lease time.Duration) verdict {
	bad := func(format string, a ...any) verdict { return verdict{problem: fmt.Sprintf(format, a...)} }
	unknown := verdict{unattributable: true}
	if res.Status != http.StatusOK {
		switch {
		case res.Status == http.StatusConflict && res.ErrorCode == protocol.CodeSessionBusy:
			switch f.claim {
			case appliedYes:
				return bad("409 SESSION_BUSY for its own applied claim")
			case appliedUnknown:
				return unknown
			}
			return verdict{}
		case res.Status == http.StatusInternalServerError && res.ErrorCode == protocol.CodeServerInternal:
			switch {
			case !res.Retryable:
				return bad("500 SERVER_INTERNAL not retryable")
			case f.afterClaimFailed, f.claim == appliedYes && f.renewTrouble:
				// Claimed, then the context load, the acknowledgment or the
				// renewal before it (a lease half gone) failed on every
				// attempt.
				return verdict{}
			case f.claim == appliedYes && f.claimFailed && f.givenBack == appliedYes:
				// Claimed, then the claim's turn id lookup failed on every
				// attempt: the claim was given back.
				return verdict{}
			case f.claim == appliedYes && f.claimResolved:
				return bad("500 for an applied claim whose resolving read was answered")
			case f.claim == appliedYes && f.claimReadFailed:
				return bad("500 (retryable) for an applied claim whose resolving read failed: its outcome is unknown, 409 TURN_OUTCOME_INDETERMINATE")
			case f.claim == appliedYes:
				return verdict{} // applied, then another call of the claim's phase failed
			case f.claim == appliedUnknown:
				return unknown
			case !f.claimFailed:
				return bad("500 without a failed DynamoDB call")
			}
			return verdict{}
		case res.Status == http.StatusConflict && res.ErrorCode == protocol.CodeTurnOutcomeIndeterminate:
			switch {
			case earlier != appliedNo:
				return verdict{} // a replay of a claimed turn id
			case f.claim == appliedYes && f.leaseUnproven():
				// Its own claim, then a failure before the stream (a
				// renewal, the context load or the acknowledgment failing
				// on every attempt, which can outlast what the turn can
				// prove of its lease) or a failure record whose save went
				// unconfirmed: the turn writes nothing more and leaves its
				// fate to the table's decision, what a replay of its id
				// is told.
				return verdict{}
			case f.claimUnresolved():
				// The claim's outcome stayed unknown to the store (applied
				// or not): the turn id may be spent.
				return verdict{}
			case f.claim == appliedUnknown:
				return unknown
			}
			return bad("409 TURN_OUTCOME_INDETERMINATE for a turn id never claimed before")
		case res.Status == http.StatusConflict && res.ErrorCode == protocol.CodeTurnAlreadyCompleted:
			if earlier == appliedNo || !saved {
				return bad("409 TURN_ALREADY_COMPLETED for a turn id claimed before %v, saved %v", earlier != appliedNo, saved)
			}
			return verdict{}
		}
		return bad("HTTP %d %s", res.Status, res.ErrorCode)
	}
	switch {
	case earlier == appliedYes:
		return bad("a second run of a turn id whose earlier claim applied")
	case f.claim == appliedNo:
		return bad("a 200 stream without an applied claim")
	case res.Disconnected:
		return verdict{}
	case res.Err != nil || res.Last == nil:
		return bad("stream without a last line (%v)", res.Err)
	case res.Acknowledged():
		if f.save == appliedNo {
			return bad("acknowledged, but no save applied")
		}
		return verdict{}
	}
	switch d := res.LastDiagnostic(); d {
	case protocol.CodeTurnOutcomeIndeterminate:
		switch {
		case res.Last.Diagnostic.Retryable || res.Last.Sequence != 0:
			return bad("stream TURN_OUTCOME_INDETERMINATE retryable or with a turn's sequence")
		case !f.saveCalled && f.renewTrouble && f.fateReadFailed:
			// It could no longer prove its lease, saved nothing, and could
			// not read the fate the table decided: unknown to it, what a
			// replay of its id is told too.
			return verdict{}
		case !f.saveCalled:
			return bad("stream TURN_OUTCOME_INDETERMINATE without a save")
		case f.save == appliedYes && f.saveResolved:
			return bad("saved, its resolving read answered, but reported unsaved")
		case f.save == appliedYes:
			return verdict{} // the store could not know
		case f.save == appliedUnknown:
			return unknown
		case !f.saveFailed:
			return bad("stream TURN_OUTCOME_INDETERMINATE but the save returned no error")
		}
		return verdict{}
	case protocol.CodeTurnLost:
		// The turn stops when its renewals are in trouble, or when it
		// reaches the end of the lease it could prove (less a safety
		// margin, at most a quarter of the lease) however slow the
		// reason; its last line is the record the table decided once the
		// lease expired. Its streaming lines end before that.
		end := lastStreamingAt(res)
		if !f.renewTrouble && (end.IsZero() || end.Before(f.expiry.Add(-lease/4))) {
			return bad("stream TURN_LOST after a line at %s, with its lease proven until %s and no renewal in trouble",
				end.Format("15:04:05.000"), f.expiry.Format("15:04:05.000"))
		}
		return verdict{}
	case "":
		return bad("last line: snapshot %s", res.Last.Snapshot.Status)
	default:
		return bad("last line: diagnostic %s", d)
	}
}

// lastStreamingAt is when the last streaming snapshot of res was
// emitted (zero when none was).
func lastStreamingAt(res *Result) time.Time {
	for i := len(res.Received) - 1; i >= 0; i-- {
		if l := res.Received[i]; l.Event == protocol.EventSnapshot && l.Status == protocol.StatusStreaming {
			return l.EmittedAt
		}
	}
	return time.Time{}
}

// verifySession checks one session's records against their calls and
// the session's history.
func verifySession(ctx context.Context, c *client.Client, sid string, recs []loadRecord, cfg Config, checkedAt time.Time, rep *Report) {
	turns, err := c.AllTurns(ctx, sid)
	if err != nil {
		rep.problem("history of %s: %v", sid, err)
		return
	}
	saved := map[string]*client.TurnSummary{}
	seen := map[string]int{}
	ordinals := map[int64]bool{}
	for i, t := range turns {
		seen[t.TurnID]++
		if seen[t.TurnID] == 2 || ordinals[t.Ordinal] {
			rep.Duplicates++
			rep.problem("%s: turn %s (ordinal %d) twice in history", sid, t.TurnID, t.Ordinal)
		}
		ordinals[t.Ordinal] = true
		saved[t.TurnID] = &turns[i]
	}

	all := make([]facts, len(recs))
	sent := map[string]bool{}
	claimed := map[string]applied{} // turn id -> whether a claim of an earlier record applied
	acked := map[string]*Result{}
	unsaved := map[string]int{} // turn id -> the record that ran it and reported it unsaved
	indeterminate := map[string]bool{}
	for i := range recs {
		r := &recs[i]
		res := r.Res
		f := factsOf(r.Ops)
		all[i] = f
		sent[r.Turn] = true
		rep.Requests++
		if r.Aim != nil {
			rep.Aimed[r.Aim.String()]++
		}
		for _, op := range r.Ops {
			if quotaExceeded(&op) {
				rep.QuotaExceeded++
			}
			for _, a := range op.Attempts {
				if a.Fault != ddbfault.Pass {
					k := op.Kind
					if op.Write != "" {
						k = op.Write
					}
					rep.Injected[k+": "+a.Fault.String()]++
				}
			}
		}
		switch {
		case res.Disconnected:
			rep.Disconnects++
		case res.Acknowledged():
			rep.Acknowledged++
			acked[r.Turn] = res
		default:
			key := observedOutcome(res)
			if r.Replay {
				key = "replay " + key
			}
			rep.Outcomes[key]++
		}
		if r.Replay {
			rep.Replays++
		} else if retryable(res) {
			rep.Retried++
		}
		if d := res.LastDiagnostic(); res.Status == http.StatusOK && (d == protocol.CodeServerInternal || d == protocol.CodeSessionConflict) {
			unsaved[r.Turn] = i
		}
		if res.Status == http.StatusConflict && res.ErrorCode == protocol.CodeTurnOutcomeIndeterminate {
			indeterminate[r.Turn] = true
		}

		v := judge(f, res, claimed[r.Turn], saved[r.Turn] != nil, cfg.Lease)
		if v.problem == "" && !v.unattributable && claimed[r.Turn] == appliedUnknown && res.Status != http.StatusOK {
			v.unattributable = true // right only because an earlier claim may have applied
		}
		rep.Checked++
		switch {
		case v.unattributable:
			rep.Unattributable++
		case v.problem != "":
			rep.Wrong++
			rep.problem("%s/%s (aim %v): %s; calls: %s", sid, r.Turn, r.Aim, v.problem, describe(r.Ops))
		}
		if res.Status == http.StatusConflict && res.ErrorCode == protocol.CodeSessionBusy && f.claim == appliedYes {
			rep.BusyOwnClaim++
		}
		if f.claimLost {
			rep.ClaimsAnswerLost++
			switch {
			case claimed[r.Turn] != appliedNo || seen[r.Turn] > 1:
				rep.problem("%s/%s: claim applied with its answer lost, of a turn id claimed before", sid, r.Turn)
			default:
				switch lostClaimOutcome(f, res) {
				case ranOnce:
					rep.ClaimsRanOnce++
				case failedAfter:
					rep.ClaimsFailedAfter++
				case unresolvable:
					rep.ClaimsUnresolvable++
					rep.note("%s/%s: claim applied, its resolving read failed too: HTTP 409 TURN_OUTCOME_INDETERMINATE; calls: %s", sid, r.Turn, describe(r.Ops))
				default:
					rep.problem("%s/%s: claim applied with its answer lost, then HTTP %d %s; calls: %s", sid, r.Turn, res.Status, res.ErrorCode, describe(r.Ops))
				}
			}
		}
		if c := f.consumed(); c == appliedYes || c == appliedUnknown && claimed[r.Turn] == appliedNo {
			claimed[r.Turn] = c
		}
	}
	rep.TurnsAttempted += len(sent)

	for tid, t := range saved {
		if !sent[tid] {
			rep.Foreign++
			rep.problem("%s: history has turn %s the client never sent", sid, tid)
		}
		i, ran := unsaved[tid]
		if acked[tid] != nil || !ran && !indeterminate[tid] {
			continue
		}
		rep.UnsavedSaved++
		if ran && recs[i].Res.LastDiagnostic() == protocol.CodeServerInternal && !all[i].saveResolved {
			rep.UnsavedSavedUnresolvable++
			rep.note("%s/%s: saved, its resolving read failed too: reported unsaved; calls: %s", sid, tid, describe(recs[i].Ops))
		} else {
			rep.problem("%s/%s reported unsaved (stream ran %v, a replay indeterminate %v) but history has it (status %s); submissions: %s",
				sid, tid, ran, indeterminate[tid], t.Status, describeTurn(recs, tid))
		}
	}
	for tid, res := range acked {
		t := saved[tid]
		switch {
		case t == nil:
			rep.Lost++
			rep.problem("%s/%s acknowledged but missing from history", sid, tid)
		case t.Status != "complete" || !equalMessages(t.Messages, res.Last.Snapshot.Messages):
			rep.Lost++
			rep.problem("%s/%s acknowledged but history differs (status %s)", sid, tid, t.Status)
		default:
			rep.Verified++
		}
	}
	checkLines(sid, recs, all, cfg, rep)

	s, err := c.Session(ctx, sid)
	if err != nil {
		rep.problem("session %s: %v", sid, err)
		return
	}
	if s.CurrentTurn != nil {
		rep.LeasesHeldAfterRun++
		left := leaseLeft(all)
		if !left || time.UnixMilli(s.CurrentTurn.ExpiresAt).After(checkedAt.Add(cfg.Lease)) {
			rep.LeasesPastExpiry++
			rep.problem("%s: lease of %s held after the run (explained: %v, expires %d, checked %d)", sid, s.CurrentTurn.TurnID, left, s.CurrentTurn.ExpiresAt, checkedAt.UnixMilli())
		}
	}
}

// leaseLeft reports whether a session's requests explain a lease held
// after the run: the last request whose claim applied has no applied
// release (its release failed, or it never released: a claim the store
// could not resolve, a turn that lost its lease).
func leaseLeft(requests []facts) bool {
	for i := len(requests) - 1; i >= 0; i-- {
		switch f := requests[i]; f.claim {
		case appliedUnknown:
			return true
		case appliedYes:
			return f.release != appliedYes
		}
	}
	return false
}

// checkLines checks every snapshot line of a session's turns against the
// leases they could prove and the session's later claims, on the one
// clock of this process (emittedAt is stamped when the line is built, to
// the millisecond, before it is written; a claim applies between its
// attempt's start and DynamoDB's answer):
//   - a streaming snapshot whose emittedAt is after the latest lease
//     expiry any applied claim or renewal of its request wrote was
//     certainly built after the lease it could prove had expired (a
//     terminal snapshot is exempt: it follows a save the table accepted
//     under the lease token, which a takeover would have fenced);
//   - a snapshot whose emittedAt is after the answer to a later applied
//     claim of the session was certainly built after another turn held
//     the session; one stamped while that claim was in flight is
//     ambiguous (counted, not a failure).
//
// What this cannot see: a line built before a deadline but held in a
// buffer and written after it (emittedAt is not the write time), and
// sub-millisecond orders.
func checkLines(sid string, recs []loadRecord, all []facts, cfg Config, rep *Report) {
	type claimTime struct{ start, answered time.Time }
	var claims []claimTime
	for _, f := range all {
		if f.claimAt != nil {
			claims = append(claims, claimTime{f.claimAt.Start, f.claimAt.Answered})
		}
	}
	for i, r := range recs {
		f := all[i]
		if f.claimAt == nil {
			continue
		}
		expiry := f.expiry
		if expiry.IsZero() {
			expiry = f.claimAt.Start.Add(cfg.Lease)
		}
		// The first claim of the session applied after this one's.
		var next *claimTime
		for j := range claims {
			c := &claims[j]
			if c.start.After(f.claimAt.Answered) && (next == nil || c.start.Before(next.start)) {
				next = c
			}
		}
		reported := false
		report := func(format string, a ...any) { // one problem line per turn
			if !reported {
				reported = true
				rep.problem(format, a...)
			}
		}
		for _, l := range r.Res.Received {
			if l.Event != protocol.EventSnapshot || l.EmittedAt.IsZero() {
				continue
			}
			rep.Lines++
			if l.Status == protocol.StatusStreaming && l.EmittedAt.After(expiry) && !l.EmittedAt.After(f.expiryMaybe) {
				rep.AfterUnknownRenewal++
			} else if l.Status == protocol.StatusStreaming && l.EmittedAt.After(expiry) {
				rep.AfterExpiry++
				report("%s/%s: a streaming snapshot emitted at %s, %s after its lease's expiry", sid, r.Turn,
					l.EmittedAt.Format("15:04:05.000"), l.EmittedAt.Sub(expiry))
			}
			if next == nil {
				continue
			}
			switch {
			case l.EmittedAt.After(next.answered):
				rep.AfterClaim++
				report("%s/%s: a snapshot emitted %s after a later claim of the session applied", sid, r.Turn, l.EmittedAt.Sub(next.answered))
			case !l.EmittedAt.Before(next.start.Truncate(time.Millisecond)):
				rep.Ambiguous++
			case l.Arrived.After(next.start):
				rep.InFlight++
			}
		}
	}
}

// consumed is whether the submission's claim took its turn id: an applied
// claim that was given back did not (unknown when the give-back's own
// outcome is unknown, or when it did not apply: the lease then expires,
// and a later claim classifies the turn).
func (f facts) consumed() applied {
	switch {
	case f.claim != appliedYes:
		return f.claim
	case f.givenBack == appliedYes:
		return appliedNo
	case f.givenBack == appliedUnknown:
		return appliedUnknown
	}
	return appliedYes
}

// observedOutcome names what the client saw of a submission.
func observedOutcome(r *Result) string {
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

// describeTurn summarises every submission of turn id tid: what the
// client saw, then its calls.
func describeTurn(recs []loadRecord, tid string) string {
	var b strings.Builder
	for _, r := range recs {
		if r.Turn != tid {
			continue
		}
		cut := ""
		if r.Res.Disconnected {
			cut = " (cut)"
		}
		fmt.Fprintf(&b, "{%s%s: %s} ", observedOutcome(r.Res), cut, describe(r.Ops))
	}
	return b.String()
}

// quotaExceeded reports whether the SDK gave op up because its retry
// quota was empty (aws-sdk-go-v2 retry.QuotaExceededError).
func quotaExceeded(op *Op) bool { return strings.Contains(op.Err, "retry quota exceeded") }

// describe summarises a request's DynamoDB calls for a problem report:
// each call's kind and operation, then per attempt its fault (. none)
// and DynamoDB's real status (- no answer, x never sent), then the
// caller's result (ok, ccf, err).
func describe(ops []Op) string {
	var b strings.Builder
	for _, op := range ops {
		k := op.Kind
		if op.Write != "" {
			k = op.Write
		}
		fmt.Fprintf(&b, "[%s %s", k, op.Op)
		for _, a := range op.Attempts {
			st := "x"
			switch {
			case a.Status != 0:
				st = fmt.Sprint(a.Status)
			case a.Forwarded:
				st = "-"
			}
			f := "."
			if a.Fault != ddbfault.Pass {
				f = a.Fault.String()
			}
			fmt.Fprintf(&b, " %s:%s", f, st)
		}
		switch {
		case op.Err == "":
			b.WriteString(" ok")
		case op.CondFailed:
			b.WriteString(" ccf")
		case quotaExceeded(&op):
			b.WriteString(" err (retry quota exceeded)")
		default:
			b.WriteString(" err")
		}
		b.WriteString("] ")
	}
	return b.String()
}
