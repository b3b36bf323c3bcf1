package loadcheck

import (
	"context"
	"errors"
	"net/http"

	"github.com/turnstream/turnstream/internal/dynamobench"
	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/client"
)

// The usage ledger's check (docs/quotas.md): every turn that ended,
// however it ended, counted once. The run's principal owns nothing else
// while it runs, so the ledger's month counters grow by exactly the run's
// turns: after the run (faults off, every lease expired and decided), the
// difference between GET /usage before and after must equal the turns
// the sessions' items say ended (their claimed ordinals but those a
// withdrawn claim left unspent: a turn lost before its first checkpoint
// is counted though history does not list it) and the tokens of the turns history holds; and every acknowledged
// turn is in history with the usage its terminal snapshot reported. The
// ledger writes of the run's requests (each count's add, settle and
// clear, told apart: only the add changes the counters) say how often
// the exactly-once rule was put to the test.

// LedgerCheck is what the load run found of the usage ledger.
type LedgerCheck struct {
	// Checked is false when the server keeps no ledger (GET /usage 404)
	// or the run crossed a UTC month boundary; Skipped says why.
	Checked bool
	Skipped string
	// Counted is the ledger's growth over the run (month counters);
	// Ended the turns the sessions' items say ended (Server.Turns);
	// Recorded what history lists of the run's sessions (complete,
	// interrupted, error, lost after a checkpoint); Acknowledged the turns
	// whose terminal snapshot the client received, all of them in
	// Recorded.
	Counted, Recorded, Acknowledged LedgerFigures
	Ended                           int64
	// Writes counts the adds of the counts of the run's turn requests (a
	// turn's own count, or a decision's): the one write of a count that
	// changes the counters (dynamobench.LedgerWrite). AnswerLost counts
	// those that applied on an attempt whose answer was lost or replaced
	// by a 500; Unknown those whose attempts reached DynamoDB without an
	// answer and none answered 200; Failed those whose caller got an
	// error (the turn then left to its decider); Recognised those that
	// applied and whose SDK retry then failed its own condition (the
	// journal entry it had set: counted once, the next read tells the
	// store so); Raced those whose condition failed with no attempt of
	// theirs applied (another count's clear moved the generation, or
	// another copy of the turn's add came first: the store reads again).
	Writes, AnswerLost, Unknown, Failed, Recognised, Raced int
	// Settles and Clears count the counts' settle and clear calls (a
	// resent write is a call of its own), which change no counter;
	// Uncleared the clear calls that got an error (a clear that fails
	// leaves the journal entry to the session's next count).
	Settles, Clears, Uncleared int
}

// monthCrossed is why a run that crossed a UTC month boundary leaves the
// ledger unchecked.
const monthCrossed = "the run crossed a UTC month boundary"

// LedgerFigures are turns and tokens.
type LedgerFigures struct{ Turns, InputTokens, OutputTokens int64 }

// ledgerBaseline reads the principal's month counters before the run:
// nil with the reason when the ledger is not checked.
func ledgerBaseline(ctx context.Context, c *client.Client) (*client.UsageReport, string) {
	u, err := c.Usage(ctx, client.UsageOptions{Period: api.PeriodMonth})
	var e *client.Error
	switch {
	case errors.As(err, &e) && e.Status == http.StatusNotFound:
		return nil, "the server keeps no usage ledger"
	case err != nil:
		return nil, "GET /usage failed before the run: " + err.Error()
	}
	return u, ""
}

// checkLedger compares the ledger's growth since before with the run's
// sessions' history.
func checkLedger(ctx context.Context, c *client.Client, srv Server, before *client.UsageReport, skipped string, records map[string][]loadRecord, rep *Report) {
	l := &rep.Ledger
	for _, recs := range records {
		for _, r := range recs {
			l.countWrites(r.Ops)
		}
	}
	if before == nil || srv.Turns == nil {
		l.Skipped = skipped
		if srv.Turns == nil {
			l.Skipped = "the server's turns cannot be read"
		}
		return
	}
	after, err := c.Usage(ctx, client.UsageOptions{Period: api.PeriodMonth})
	if err != nil {
		rep.problem("ledger: GET /usage after the run: %v", err)
		return
	}
	if after.Start != before.Start {
		l.Skipped = monthCrossed
		return
	}
	l.Checked = true
	l.Counted = LedgerFigures{after.Usage.Turns - before.Usage.Turns, after.Usage.InputTokens - before.Usage.InputTokens,
		after.Usage.OutputTokens - before.Usage.OutputTokens}
	for sid, recs := range records {
		turns, err := c.AllTurns(ctx, sid)
		if err != nil {
			rep.problem("ledger: history of %s: %v", sid, err)
			return
		}
		ended, err := srv.Turns(ctx, sid)
		if err != nil {
			rep.problem("ledger: the turns of %s: %v", sid, err)
			return
		}
		l.Ended += ended
		byID := map[string]*client.TurnSummary{}
		for i, t := range turns {
			byID[t.TurnID] = &turns[i]
			l.Recorded.Turns++
			l.Recorded.InputTokens += int64(t.Usage.PromptTokens)
			l.Recorded.OutputTokens += int64(t.Usage.CompletionTokens)
		}
		acked := map[string]bool{}
		for _, r := range recs {
			if !r.Res.Acknowledged() || acked[r.Turn] {
				continue
			}
			acked[r.Turn] = true
			u := r.Res.Last.Snapshot.Usage
			l.Acknowledged.Turns++
			l.Acknowledged.InputTokens += int64(u.PromptTokens)
			l.Acknowledged.OutputTokens += int64(u.CompletionTokens)
			if t := byID[r.Turn]; t != nil && t.Usage != u {
				rep.problem("ledger: %s/%s acknowledged with usage %+v, history has %+v", sid, r.Turn, u, t.Usage)
			}
		}
	}
	if l.Counted.Turns != l.Ended || l.Counted.InputTokens != l.Recorded.InputTokens || l.Counted.OutputTokens != l.Recorded.OutputTokens {
		rep.problem("ledger: the run's turns counted %+v; %d turns ended, history holds %+v", l.Counted, l.Ended, l.Recorded)
	}
	if l.Recorded.Turns > l.Ended {
		rep.problem("ledger: history lists %d turns, the sessions' items say %d ended", l.Recorded.Turns, l.Ended)
	}
}

// countWrites adds the ledger writes of one request's calls (ops) to l.
func (l *LedgerCheck) countWrites(ops []Op) {
	for i := range ops {
		op := &ops[i]
		switch op.Write {
		case dynamobench.LedgerSettle:
			l.Settles++
			continue
		case dynamobench.LedgerClear:
			l.Clears++
			if op.failed() {
				l.Uncleared++
			}
			continue
		case dynamobench.LedgerWrite:
		default:
			continue
		}
		l.Writes++
		switch appliedOf(op) {
		case appliedYes:
			if answerLost(op) {
				l.AnswerLost++
			}
		case appliedUnknown:
			l.Unknown++
		}
		switch {
		case op.CondFailed && appliedOf(op) == appliedYes:
			l.Recognised++
		case op.CondFailed:
			l.Raced++
		case op.Err != "":
			l.Failed++
		}
	}
}
