package engine

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/clock"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// supervisor is a streaming turn's control loop and its steps: the lease
// renewals and the proof they keep, the checkpoints, the stop flag, and
// the decision of how the turn ends.
type supervisor struct{ t *run }

// supervise is a streaming turn's control loop, the lease supervisor: it
// waits for the model (modelDone), the request deadline, the client, the
// lease renewals and the checkpoints, and decides how the turn ends.
// Renewals and checkpoints run on their own goroutines, at most one of
// each in flight, under a context that ends at the lease's proven expiry.
// cpPrior is the last checkpoint that landed (the acknowledgment, nil
// without checkpoints). A failed checkpoint is followed by the next one
// after checkpointRetry, not a whole interval: it supersedes the failed
// one, so stops and crash losses stay within their bounds while
// checkpoint writes fail. finished reports that the model returned. The
// caller defers settle, which cancels and awaits an in-flight renewal or
// checkpoint, so that no goroutine of the turn outlives it.
//
// Renewals are due RenewInterval after the grant of the lease proven last
// (leaseProof.renewDue), not after the stream started: a turn that was
// paused before its stream renews as soon as it runs again. When the
// proof ends (lines stop: leaseProof.left), the turn does not give up
// while its lease can still be proven: a renewal in flight is awaited, or
// one is sent, until the proven expiry itself; a renewal that applies by
// then proves that no other turn took the session, and the stream goes
// on. Only when none does is the lease lost.
func (s *supervisor) supervise(modelDone <-chan error, cpPrior *chat.Checkpoint) (end ending, finished bool, settle func()) {
	t := s.t
	renew := t.h.clock.NewTimer(max(0, t.lease.renewDue(t.h.opts.RenewInterval).Sub(t.h.clock.Now())))
	defer renew.Stop()
	leaseTimer := t.h.clock.NewTimer(t.lease.left())
	defer leaseTimer.Stop()
	renewed := make(chan renewal, 1)
	renewing := false
	unproven := false // the proof ended: a renewal must land by the expiry
	// Checkpoints (CheckpointInterval > 0): a ticker, urgent requests from
	// the writer, at most one in flight.
	var cpTick <-chan time.Time
	if d := t.h.opts.CheckpointInterval; d > 0 {
		ticker := t.h.clock.NewTicker(d)
		defer ticker.Stop()
		cpTick = ticker.C()
	}
	checkpointed := make(chan checkpointResult, 1)
	checkpointing := false
	// A checkpoint still in flight at the next tick (its writes hang) has
	// the stop flag read beside it (readStop), at most one read at a time.
	stopRead := make(chan bool, 1)
	readingStop := false
	retry := t.h.clock.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	failed := t.out.failed
	renewCtx, stopRenewing := context.WithCancel(t.ctx)
	settle = func() {
		// An in-flight renewal is cancelled and awaited: no goroutine of
		// the turn outlives it.
		stopRenewing()
		if renewing {
			<-renewed
		}
		if checkpointing {
			<-checkpointed
		}
		if readingStop {
			<-stopRead
		}
	}
	// cpSince is when the last change checkpoint landed (the
	// acknowledgment: about now).
	cpSince := t.h.clock.Now()
	// startCheckpoint starts the next checkpoint unless one is in flight
	// or, at a tick (tick), it is not due (worthWriting); it reports
	// whether it started one.
	startCheckpoint := func(tick bool) bool {
		if checkpointing || cpTick == nil {
			return false
		}
		cp := s.nextCheckpoint(cpPrior)
		if cp == nil || !s.worthWriting(cp, cpPrior, cpSince, tick) {
			return false
		}
		checkpointing = true
		go s.checkpoint(renewCtx, cp, checkpointed)
		return true
	}
supervise:
	for {
		select {
		case err := <-modelDone:
			finished = true
			end = t.modelEnding(err)
			break supervise
		case <-t.ctx.Done():
			end = t.contextEnding()
			break supervise
		case <-failed:
			if cpTick != nil {
				// With checkpoints a disconnect is not a stop: the turn
				// runs on for a client that resumes it.
				t.log.Info("client gone; the turn goes on for a resume")
				failed = nil
				continue
			}
			// The client is gone (or its connection broke): nobody reads
			// the rest, but the turn is still saved and released.
			d := protocol.NewDiagnostic(protocol.CodeRequestCancelled)
			end = ending{status: chat.TurnError, diag: &d}
			break supervise
		case <-cpTick:
			// A tick that writes nothing (a checkpoint in flight, or a
			// change too small to be due) reads the stop flag.
			if !startCheckpoint(true) && !readingStop && (checkpointing || t.h.opts.CheckpointMinChange > 0) {
				readingStop = true
				go s.readStop(renewCtx, stopRead)
			}
		case stop := <-stopRead:
			readingStop = false
			if stop {
				t.trace.onStopSeen(t.h.clock.Now())
				t.log.Info("turn stop requested", "seenBy", "read beside a checkpoint in flight")
				d := protocol.NewDiagnostic(protocol.CodeTurnInterrupted)
				end = ending{status: chat.TurnInterrupted, diag: &d}
				break supervise
			}
		case <-t.live.urgent:
			startCheckpoint(false)
		case <-retry.C():
			startCheckpoint(false)
		case r := <-checkpointed:
			checkpointing = false
			landed := cpPrior
			e, stop, again := s.checkpointed(r, &cpPrior)
			if cpPrior != landed {
				cpSince = t.h.clock.Now()
			}
			if stop {
				end = e
				break supervise
			}
			if again {
				retry.Reset(s.checkpointRetry())
			}
		case <-renew.C():
			if renewing {
				continue
			}
			if unproven && t.lease.expiresIn() <= 0 {
				t.log.Warn("lease expired without renewal")
				end = leaseLostEnding()
				break supervise
			}
			renewing = true
			go s.renew(renewCtx, renewed)
		case r := <-renewed:
			renewing = false
			if e, stop := s.renewed(r); stop {
				end = e
				break supervise
			}
			if r.err == nil {
				unproven = false
				leaseTimer.Reset(t.lease.left())
				renew.Reset(max(0, t.lease.renewDue(t.h.opts.RenewInterval).Sub(t.h.clock.Now())))
				continue
			}
			if !unproven {
				// Failed while the lease is proven: tried again an
				// interval after this attempt.
				renew.Reset(max(0, r.sentAt.Add(t.h.opts.RenewInterval).Sub(t.h.clock.Now())))
				continue
			}
			if left := t.lease.expiresIn(); left > 0 {
				// The lease can still be proven: again, soon.
				renew.Reset(min(renewRetry, left))
				continue
			}
			t.log.Warn("lease expired without renewal")
			end = leaseLostEnding()
			break supervise
		case <-leaseTimer.C():
			// The proof ended: no line goes out from now on. Another turn
			// may claim the session only once the lease has expired, so a
			// renewal that lands before then still proves it: the one in
			// flight is awaited, or one is sent now.
			unproven = true
			if renewing {
				continue
			}
			if t.lease.expiresIn() > 0 {
				renewing = true
				go s.renew(renewCtx, renewed)
				continue
			}
			// No renewal proved the lease in time (the table may be
			// unreachable or hung): another turn may claim the session
			// now, so this one stops streaming and saves nothing.
			t.log.Warn("lease expired without renewal")
			end = leaseLostEnding()
			break supervise
		}
	}

	return end, finished, settle
}

// checkpointResult is the result of one checkpoint, run off the
// supervisor.
type checkpointResult struct {
	cp   *chat.Checkpoint
	stop bool
	err  error
}

// renewRetry is the wait before a renewal that failed once the proof
// ended is sent again (while the lease can still be proven).
const renewRetry = 20 * time.Millisecond

// renewal is the result of one lease renewal, run off the supervisor;
// sentAt is when it was sent (the grant of the expiry it proves).
type renewal struct {
	lease  *chat.Lease
	err    error
	sentAt time.Time
}

// nextCheckpoint returns the checkpoint of the latest snapshot after
// prior, the last one that landed and changed the messages (nil: the
// acknowledgment, the first): a heartbeat when the messages did not
// change since prior. Nil when no snapshot was remembered yet.
func (s *supervisor) nextCheckpoint(prior *chat.Checkpoint) *chat.Checkpoint {
	t := s.t
	last := t.live.latest()
	if last.seq == 0 {
		return nil
	}
	cp := s.checkpointOf(last)
	if prior != nil {
		cp.Prior, cp.PriorSequence = prior.Messages, prior.Sequence
		if !sameMessages(prior.Messages, cp.Messages) {
			return cp
		}
		// A heartbeat names the state it repeats, so that the next change
		// names the same prior.
		cp.Sequence = max(cp.Sequence, prior.Sequence)
		cp.Messages, cp.PriorSequence = prior.Messages, prior.Sequence
	}
	return cp
}

// checkpointMaxTicks is how many CheckpointInterval ticks a change
// smaller than Options.CheckpointMinChange waits at most before it is
// written.
const checkpointMaxTicks = 4

// worthWriting reports whether checkpoint cp (from nextCheckpoint; prior
// is the last change that landed, at since) is written now. Always with
// Options.CheckpointMinChange zero, and for the acknowledgment. Else a
// heartbeat never is (a tick reads the stop flag instead); an urgent or
// retried change always is; at a tick, a change is when it changed the
// number of messages or a tool call, when the encoded messages grew by
// CheckpointMinChange bytes or more, or when checkpointMaxTicks
// intervals passed since prior landed.
func (s *supervisor) worthWriting(cp, prior *chat.Checkpoint, since time.Time, tick bool) bool {
	t := s.t
	least := t.h.opts.CheckpointMinChange
	if least <= 0 || prior == nil {
		return true
	}
	if sameMessages(prior.Messages, cp.Messages) {
		return false
	}
	if !tick || t.h.clock.Now().Sub(since) >= checkpointMaxTicks*t.h.opts.CheckpointInterval {
		return true
	}
	if len(cp.Messages) != len(prior.Messages) {
		return true
	}
	for i := range cp.Messages {
		if !sameToolCalls(cp.Messages[i].ToolCalls, prior.Messages[i].ToolCalls) {
			return true
		}
	}
	return encodedSize(cp.Messages)-encodedSize(prior.Messages) >= least
}

// sameToolCalls reports whether a and b encode alike.
func sameToolCalls(a, b []protocol.ToolCall) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// encodedSize is the size of msgs encoded as JSON (0 if they do not
// encode).
func encodedSize(msgs []protocol.Message) int {
	b, err := json.Marshal(msgs)
	if err != nil {
		return 0
	}
	return len(b)
}

// checkpointOf returns the checkpoint of the state a snapshot carried.
func (s *supervisor) checkpointOf(st liveState) *chat.Checkpoint {
	t := s.t
	// The account's tokens are those of the snapshot's usage (the same
	// sums, reported and estimated, loop.go), so that a turn decided lost
	// after this checkpoint is counted with the tokens its record shows;
	// the rest of the account is as of now.
	metered := t.budget.usage()
	metered.InputTokens, metered.OutputTokens = st.usage.PromptTokens, st.usage.CompletionTokens
	return &chat.Checkpoint{
		SessionID: t.sessionID, TurnID: t.turnID, Ordinal: t.claim.Lease.Ordinal,
		Lineage: t.lineage, InputHash: t.inputHash,
		Messages:      []protocol.Message{t.user, st.assistant},
		Usage:         st.usage,
		Metered:       metered,
		FirstSequence: t.claim.BaseSequence + 1,
		Sequence:      st.seq,
		StartedAt:     t.startedAt,
		Siblings:      t.siblings,
	}
}

// checkpointRetry is the wait before the checkpoint that follows a failed
// one: a quarter of CheckpointInterval, at most 250 ms.
func (s *supervisor) checkpointRetry() time.Duration {
	t := s.t
	return min(t.h.opts.CheckpointInterval/4, 250*time.Millisecond)
}

// sameMessages reports whether a and b encode alike.
func sameMessages(a, b []protocol.Message) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// checkpoint writes cp on its own goroutine and sends the result on done
// (cap 1), under a context that ends at the lease's proven expiry.
func (s *supervisor) checkpoint(parent context.Context, cp *chat.Checkpoint, done chan<- checkpointResult) {
	t := s.t
	ctx, cancel := context.WithTimeout(parent, t.lease.left())
	defer cancel()
	stop, err := t.h.opts.Store.Checkpoint(ctx, t.claim, cp)
	done <- checkpointResult{cp: cp, stop: stop, err: err}
}

// checkpointed handles a checkpoint's result (prior is the last one that
// landed and changed the messages) and reports whether the turn must
// end: its turn was decided (fenced), or a stop was requested
// (interrupted, seen within one CheckpointInterval, also from a
// checkpoint that failed: chat.Store.Checkpoint). Another failure is
// logged and again is true: the next checkpoint follows soon.
func (s *supervisor) checkpointed(r checkpointResult, prior **chat.Checkpoint) (end ending, stop, again bool) {
	t := s.t
	switch {
	case errors.Is(r.err, chat.ErrLeaseLost):
		t.log.Warn("turn fenced at a checkpoint")
		return leaseLostEnding(), true, false
	case r.err != nil && r.stop:
		// Not written, but the lease carries a stop (the store read it
		// after the failure): the stop holds while checkpoints fail.
		t.log.Warn("checkpoint failed", "err", r.err)
		t.trace.onStopSeen(t.h.clock.Now())
		t.log.Info("turn stop requested")
		d := protocol.NewDiagnostic(protocol.CodeTurnInterrupted)
		return ending{status: chat.TurnInterrupted, diag: &d}, true, false
	case r.err != nil:
		t.log.Warn("checkpoint failed", "err", r.err)
		return ending{}, false, true
	}
	t.trace.onCheckpoint()
	if r.cp.Prior == nil || !sameMessages(r.cp.Prior, r.cp.Messages) {
		*prior = r.cp
	}
	if r.stop {
		t.trace.onStopSeen(t.h.clock.Now())
		t.log.Info("turn stop requested")
		d := protocol.NewDiagnostic(protocol.CodeTurnInterrupted)
		return ending{status: chat.TurnInterrupted, diag: &d}, true, false
	}
	return ending{}, false, false
}

// readStop reads the session's lease (chat.Store.GetSession, one
// consistent read) for a stop, beside a checkpoint that has been in flight
// for a whole CheckpointInterval, and sends whether this turn's lease
// carries the stop flag (false when the read fails) on done (cap 1): a
// stop is then seen within about one interval even while checkpoint
// writes hang, each taking up to the store's attempts. Its context ends
// at the lease's proven expiry.
func (s *supervisor) readStop(parent context.Context, done chan<- bool) {
	t := s.t
	ctx, cancel := context.WithTimeout(parent, t.lease.left())
	defer cancel()
	sess, err := t.h.opts.Store.GetSession(ctx, t.sessionID, t.principal)
	done <- err == nil && sess.ActiveTurn != nil && sess.ActiveTurn.Token == t.claim.Lease.Token && sess.ActiveTurn.Stop
}

// leaseSafety is the most that a turn's lines stop before its lease's
// proven expiry (leaseMargin): room for the clock skew between processes
// (a claim elsewhere judges the expiry by its own clock; AWS's time sync
// keeps hosts within about a millisecond) and for a line in flight.
const leaseSafety = 100 * time.Millisecond

// leaseMargin is how long before the lease's proven expiry the turn
// stops streaming, so that no line of this turn is written once another
// turn may hold the session: leaseSafety, at most a tenth of the lease
// (short test leases) and a quarter of CleanupReserve, so that a lease
// capped at the request deadline plus CleanupReserve still covers the
// deadline. It is not when the turn gives up: the supervisor does so only
// at the proven expiry itself, when no renewal landed before it.
func (s *supervisor) leaseMargin() time.Duration {
	t := s.t
	return min(leaseSafety, t.h.opts.LeaseDuration/10, t.h.opts.CleanupReserve/4)
}

// lostContext is the context of reading the fate of a turn that lost its
// lease or whose save was fenced (run.lostRecord): until the lease's
// proven expiry, when the table can decide the turn, plus a quarter of
// CleanupReserve for that read (within cleanup but the release's
// quarter). A table that is unreachable then gets no more: the client's
// last line (TURN_OUTCOME_INDETERMINATE) comes that soon after the lease's
// end, not at the end of the cleanup's time.
func (s *supervisor) lostContext() (context.Context, context.CancelFunc) {
	t := s.t
	end := t.lease.expiry().Add(t.h.opts.CleanupReserve / 4)
	if last := t.cleanup.cleanupEnd().Add(-t.h.opts.CleanupReserve / 4); last.Before(end) {
		end = last
	}
	return t.cleanup.cleanupContext(end)
}

// leaseLostEnding is the ending of a turn whose lease was lost or could
// not be proven: nothing is saved or released; once the lease has
// expired the turn's fate is decided by the table (lost, unless it was
// decided otherwise), and the last line says what was decided
// (run.lostLines).
func leaseLostEnding() ending {
	return ending{leaseLost: true}
}

// renew extends the lease on its own goroutine and sends the result on
// done (cap 1). Its context ends at the lease's proven expiry itself (not
// the earlier end of the proof, leaseProof.left): a renewal that lands by
// then still proves the lease, and one that cannot is useless, so the
// supervisor never waits for it longer (the store's attempt timeout cuts
// a hung connection sooner).
func (s *supervisor) renew(parent context.Context, done chan<- renewal) {
	t := s.t
	now := t.h.clock.Now()
	expires := now.Add(t.h.opts.LeaseDuration)
	if ceiling := now.Add(clock.Until(t.h.clock, t.deadline) + t.h.opts.CleanupReserve); ceiling.Before(expires) {
		expires = ceiling
	}
	seq := t.seqs.last()
	ctx, cancel := context.WithTimeout(parent, t.lease.expiresIn())
	defer cancel()
	lease, err := t.h.opts.Store.RenewLease(ctx, chat.RenewRequest{Claim: t.claim, ExpiresAt: expires, Sequence: seq})
	done <- renewal{lease, err, now}
}

// renewed handles a renewal's result and reports whether the turn must
// end: the lease was lost (SESSION_CONFLICT) or a stop was requested
// (interrupted). A renewal that failed for another reason is logged and
// tried again (supervise); the turn ends if none succeeds before the
// proven expiry.
func (s *supervisor) renewed(r renewal) (ending, bool) {
	t := s.t
	switch {
	case errors.Is(r.err, chat.ErrLeaseLost):
		t.log.Warn("lease lost")
		return leaseLostEnding(), true
	case r.err != nil:
		if t.ctx.Err() == nil {
			t.log.Warn("lease renewal failed", "err", r.err)
		}
		return ending{}, false
	}
	t.lease.prove(r.sentAt, r.lease.ExpiresAt)
	if r.lease.Stop {
		t.trace.onStopSeen(t.h.clock.Now())
		t.log.Info("turn stop requested")
		d := protocol.NewDiagnostic(protocol.CodeTurnInterrupted)
		return ending{status: chat.TurnInterrupted, diag: &d}, true
	}
	return ending{}, false
}
