package engine

import (
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/clock"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// fate is how a turn's end reaches its client: the terminal record it
// saves, and the last lines that show what the table holds (the terminal
// snapshot, the lost record, or TURN_OUTCOME_INDETERMINATE).
type fate struct{ t *run }

// finish is cleanup after the model stopped: save the turn, release the
// lease, then write the last lines. Release comes before the terminal
// snapshot so that a client submitting its next turn on seeing it does not
// find the session busy. The last line says only what the table holds:
// the terminal snapshot once the save landed; the lost record when the
// turn was decided lost (its lease lost, or its save fenced); and when the
// save's outcome stays unknown, TURN_OUTCOME_INDETERMINATE (not
// retryable, the code a replay of the turn id gets), with the lease left
// to expire so that the table decides the turn.
func (ft *fate) finish(end ending, v view) {
	t := ft.t
	last := t.seqs.close()
	if end.leaseLost {
		rec := t.fate.lostRecord(last)
		if rec == nil {
			// Its fate unread: the lease may still stand (a renewal that
			// applied unanswered). Marked abandoned, a replay of the turn
			// id is told TURN_OUTCOME_INDETERMINATE, as this client is,
			// not SESSION_BUSY, until the table decides the turn.
			t.cleanup.abandon()
		}
		t.enc.end(rec)
		t.cleanup.logFinished(end, "", last)
		t.trace.report(end, "", v)
		return
	}
	terminal := last + 1
	item := t.fate.record(end, v, t.claim.BaseSequence+1, terminal)
	outcome := t.cleanup.save(item)
	cursor := terminal
	switch outcome {
	case saved:
		// The session's sequence is the cursor the NDJSON stream leaves,
		// whatever the stream's encoding: the terminal sequence, plus one
		// after a trailing diagnostic.
		if end.trailer != nil {
			cursor++
		}
		t.cleanup.countAndRelease(item, cursor, end.diag != nil && end.diag.Code == protocol.CodeTurnInterrupted)
		t.enc.end(item)
	case fenced:
		t.enc.end(t.fate.lostRecord(last))
	default:
		t.cleanup.abandon()
		t.enc.end(nil)
	}
	t.cleanup.logFinished(end, outcome, cursor)
	t.trace.report(end, outcome, v)
}

// lostRecord reads the record of a turn that lost its lease or whose save
// was fenced, as the table decided it, deciding it by that read once the
// lease has expired (chat.Store.PollTurn); nil when no decision could be
// read in time. While the turn still reads as running, the next read waits
// for the lease expiry it reports.
func (ft *fate) lostRecord(last int64) *chat.Turn {
	t := ft.t
	ctx, cancel := t.sup.lostContext() // supervisor.go
	defer cancel()
	for ctx.Err() == nil {
		rec, err := t.h.opts.Store.PollTurn(ctx, t.sessionID, t.claim.Lease.Ordinal, t.claim.Session.Owner, nil)
		wait := t.h.opts.ResumePollInterval
		switch {
		case err == nil && rec.Status != chat.TurnRunning:
			return rec
		case err == nil && !rec.LeaseExpiresAt.IsZero():
			wait = max(clock.Until(t.h.clock, rec.LeaseExpiresAt)+time.Millisecond, time.Millisecond)
		case err != nil:
			t.log.Warn("read the decided turn", "err", err)
		}
		clock.Sleep(ctx, t.h.clock, wait)
	}
	t.log.Warn("turn outcome unknown at the end of cleanup", "lastSequence", last)
	return nil
}

// recordLines returns the lines that show a terminal turn record: its
// terminal snapshot at its terminal sequence (the turn's messages as
// stored, which a resume and history show alike), and the trailing
// diagnostic of a timeout or cancellation; a turn lost before its first
// checkpoint, which has no messages, is its TURN_LOST diagnostic, and a
// queued turn that never ran its TURN_QUEUE_EXPIRED or TURN_CANCELLED one.
func (ft *fate) recordLines(rec *chat.Turn) []byte {
	t := ft.t
	if len(rec.Messages) == 0 {
		d := protocol.NewDiagnostic(protocol.CodeTurnLost)
		if rec.Error != nil {
			d = *rec.Error
		}
		return t.lines.diagnosticLine(nil, d, rec.LastSequence)
	}
	if rec.Messages[len(rec.Messages)-1].Role != protocol.RoleAssistant && rec.Error != nil {
		// A queued turn that never ran (expired or cancelled): no
		// snapshot of it exists, only its diagnostic, at sequence 0.
		return t.lines.diagnosticLine(nil, *rec.Error, 0)
	}
	status := protocol.StatusComplete
	if rec.Status != chat.TurnComplete {
		status = protocol.StatusError
	}
	lines := t.lines.snapshotLine(nil, rec.LastSequence, status, rec.Messages[len(rec.Messages)-1], rec.Usage, rec.Error)
	if d := rec.Error; d != nil && (d.Code == protocol.CodeServerTimeout || d.Code == protocol.CodeRequestCancelled) {
		lines = t.lines.diagnosticLine(lines, *d, rec.LastSequence+1)
	}
	return lines
}

// indeterminateLine is the last line of a turn whose outcome the table did
// not confirm: TURN_OUTCOME_INDETERMINATE, not retryable (a replay of the
// turn id gets the same code; a resume or history shows the outcome once
// decided). It carries sequence 0, which no line of a turn carries: it is
// no state of the turn, and the turn's terminal line, once decided, keeps
// its own sequence.
func (ft *fate) indeterminateLine() []byte {
	t := ft.t
	return t.lines.diagnosticLine(nil, protocol.NewDiagnostic(protocol.CodeTurnOutcomeIndeterminate), 0)
}

// record builds the turn item to save: the canonical user and assistant
// messages (partial text kept), status, usage, error and lineage.
func (ft *fate) record(end ending, v view, first, last int64) *chat.Turn {
	t := ft.t
	msgStatus := protocol.MessageComplete
	if end.status != chat.TurnComplete {
		msgStatus = protocol.MessageError
	}
	t.approvals.mu.Lock()
	t.approvals.completed = end.status == chat.TurnComplete
	t.approvals.mu.Unlock()
	var artifacts []chat.ArtifactReference
	if len(v.artifacts) > 0 {
		artifacts = chat.DedupeArtifacts(v.artifacts)
	}
	return &chat.Turn{
		Artifacts:       artifacts,
		SessionID:       t.sessionID,
		TurnID:          t.turnID,
		Ordinal:         t.claim.Lease.Ordinal,
		Status:          end.status,
		Lineage:         t.lineage,
		InputHash:       t.inputHash,
		Messages:        []protocol.Message{t.user, t.assistant(v, msgStatus, end.errorCode)},
		ReasoningBlocks: t.reasoning.stored(),
		Usage:           v.usage,
		Metered:         t.budget.usage(),
		Error:           end.diag,
		FirstSequence:   first,
		LastSequence:    last,
		StartedAt:       t.startedAt,
		CompletedAt:     t.h.clock.Now(),
		Siblings:        t.siblings,
	}
}
