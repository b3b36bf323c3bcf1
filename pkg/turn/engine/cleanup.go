package engine

import (
	"context"
	"errors"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/clock"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// cleanup is what a turn does after its end is decided, within the
// cleanup reserve (Config.CleanupReserve) after the request's deadline:
// save the turn item, count it in the usage ledger, release the lease, or
// mark it abandoned when the save's outcome stays unknown; each phase in
// its own bounded, detached context.
type cleanup struct{ t *run }

// cleanupEnd is when cleanup must be done: the request deadline plus
// CleanupReserve, which is within the Lambda deadline (the request
// deadline is at most the Lambda deadline less CleanupReserve).
func (cl *cleanup) cleanupEnd() time.Time { return cl.t.deadline.Add(cl.t.h.opts.CleanupReserve) }

// settleContext is the context of learning how the turn ended (the
// save and its retries, the fate of a turn that lost its lease): three
// quarters of CleanupReserve from from (the save's start, the lease's
// proven end), so that a table that stays unreachable does not hold the
// client for the rest of the request's time, and within cleanup but the
// release's quarter. A slow but healthy table must not turn a saved turn
// into a reported failure, and the store resolves an unknown outcome
// before it answers.
func (cl *cleanup) settleContext(from time.Time) (context.Context, context.CancelFunc) {
	t := cl.t
	end := from.Add(t.h.opts.CleanupReserve * 3 / 4)
	if last := t.cleanup.cleanupEnd().Add(-t.h.opts.CleanupReserve / 4); last.Before(end) {
		end = last
	}
	return t.cleanup.cleanupContext(end)
}

// cleanupContext is a context for one cleanup phase ending at end:
// detached from the request's cancellation (the request may already be
// cancelled or past its deadline, and the turn must still be saved and
// released) but bounded, so that cleanup ends before the Lambda deadline.
func (cl *cleanup) cleanupContext(end time.Time) (context.Context, context.CancelFunc) {
	t := cl.t
	return untilContext(context.WithoutCancel(t.reqCtx), t.h.clock, end, nil)
}

// abandon marks the turn's lease as abandoned (chat.Store.AbandonLease)
// before its client is told TURN_OUTCOME_INDETERMINATE, so that a replay
// of the turn id is told the same while the lease runs out and the table
// decides the turn; within the cleanup's time. A failure is only logged:
// a replay then finds the session busy until the lease expires.
func (cl *cleanup) abandon() {
	t := cl.t
	ctx, cancel := t.cleanup.cleanupContext(t.cleanup.cleanupEnd())
	defer cancel()
	if err := t.h.opts.Store.AbandonLease(ctx, t.claim); err != nil {
		t.log.Warn("abandon the lease", "err", err)
	}
}

// save writes the turn item (cleanup phase 2) and returns its outcome. A
// save whose outcome stays unknown is sent again until cleanup ends (a
// table that was briefly unreachable, a write that applied late): a save
// refused then is read to learn whether it is this turn's own earlier
// save that landed, or the turn was decided lost meanwhile.
func (cl *cleanup) save(item *chat.Turn) saveOutcome {
	t := cl.t
	ctx, cancel := t.cleanup.settleContext(t.h.clock.Now())
	defer cancel()
	for {
		err := t.h.opts.Store.SaveTurn(ctx, t.claim, item)
		switch {
		case err == nil:
			return saved
		case errors.Is(err, chat.ErrLeaseLost):
			return t.cleanup.savedOrFenced(ctx, item)
		}
		t.log.Error("turn save failed", "err", err)
		if !clock.Sleep(ctx, t.h.clock, saveRetry) {
			return unknown
		}
	}
}

// saveRetry is the wait before a save whose outcome is unknown is sent
// again.
const saveRetry = 250 * time.Millisecond

// savedOrFenced classifies a refused save by reading the turn (until ctx
// ends): saved when the table holds this very save (an earlier attempt
// landed), fenced when the turn was decided otherwise.
func (cl *cleanup) savedOrFenced(ctx context.Context, item *chat.Turn) saveOutcome {
	t := cl.t
	for {
		rec, err := t.h.opts.Store.PollTurn(ctx, t.sessionID, t.claim.Lease.Ordinal, t.claim.Session.Owner, nil)
		switch {
		case err == nil && rec.Status == item.Status && rec.LastSequence == item.LastSequence &&
			(rec.Error == nil || rec.Error.Code != protocol.CodeTurnLost):
			return saved
		case err == nil:
			t.log.Warn("turn save fenced: the turn was decided")
			return fenced
		}
		t.log.Warn("read the turn after a refused save", "err", err)
		if !clock.Sleep(ctx, t.h.clock, saveRetry) {
			return unknown
		}
	}
}

// countAndRelease counts the saved turn item in the usage ledger, then
// releases the lease (release): counted first, so that the session's next
// turn is counted after this one (docs/quotas.md). A turn whose count
// could not be confirmed is not released: its lease expires and the
// store that decides it counts it.
func (cl *cleanup) countAndRelease(item *chat.Turn, cursor int64, stopped bool) {
	t := cl.t
	title := cl.modelTitle(item)
	if t.budget.countUsage(item) {
		t.cleanup.release(item, cursor, stopped, title)
	}
}

// listing is what the release of saved turn item records in its
// principal's list of sessions (chat.Listing): its status, the start of
// its answer, and the title a session that has none gets: title (a
// model's) unless empty, else its first user message's.
func listing(item *chat.Turn, title string) *chat.Listing {
	l := &chat.Listing{Status: item.Status, Title: title}
	for _, m := range item.Messages {
		switch {
		case m.Role == protocol.RoleUser && l.Title == "":
			l.Title = chat.AutoTitle(m.Content)
		case m.Role == protocol.RoleAssistant:
			l.Preview = chat.Preview(PlainText(m.Content))
		}
	}
	return l
}

// release ends the lease (cleanup phase 3) of saved turn item with the
// session's new cursor, recording it in its principal's list (listing), keeping the session released for drainAfter
// (stopped: the turn was stopped, maybe by an interrupt). A failed release is logged: the lease then expires on its
// own within LeaseDuration and the table records the turn as completed
// (its save landed) when it decides it; the queued turns start at the
// next submit, resume or drain that finds the session free.
func (cl *cleanup) release(item *chat.Turn, cursor int64, stopped bool, title string) {
	t := cl.t
	ctx, cancel := t.cleanup.cleanupContext(t.cleanup.cleanupEnd())
	defer cancel()
	req := chat.ReleaseRequest{Claim: t.claim, Outcome: chat.OutcomeCompleted, Sequence: cursor, Confirmations: t.approvals.confirmationsToRecord(chat.OutcomeCompleted), Undecide: t.approvals.undecide(),
		Listing: listing(item, title)}
	if t.agent != nil {
		req.DefinitionRevision = t.agent.def.Revision // the revision this turn ran with
	}
	sess, err := t.h.opts.Store.ReleaseTurn(ctx, req)
	if err != nil {
		t.log.Error("lease release failed", "err", err)
		return
	}
	t.released, t.stopped = sess, stopped
}

// logFinished logs the turn's end; never message text.
func (cl *cleanup) logFinished(end ending, outcome saveOutcome, cursor int64) {
	t := cl.t
	attrs := []any{
		"status", string(end.status), "outcome", string(outcome),
		"ordinal", t.claim.Lease.Ordinal, "firstSequence", t.claim.BaseSequence + 1, "lastSequence", cursor,
		"durationMs", clock.Since(t.h.clock, t.startedAt).Milliseconds(),
	}
	if end.diag != nil {
		attrs = append(attrs, "code", end.diag.Code)
	}
	if end.leaseLost {
		attrs = append(attrs, "leaseLost", true)
	}
	t.log.Info("turn finished", attrs...)
}
