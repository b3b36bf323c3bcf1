package memory

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// dequeue takes turnID out of the session's queue.
func (rec *sessionRecord) dequeue(turnID string) {
	rec.session.Queue = slices.DeleteFunc(rec.session.Queue, func(e chat.QueueEntry) bool { return e.TurnID == turnID })
	delete(rec.queued, turnID)
}

// notRun records waiting queued turn q as a turn that never ran, with
// the diagnostic code, at the session's next ordinal, and takes it out
// of the queue; its turn id is then spent like a finished turn's.
func (rec *sessionRecord) notRun(q *chat.QueuedTurn, code string, now time.Time, window int) {
	sess := &rec.session
	ord := sess.NextOrdinal
	sess.NextOrdinal++
	t := q.NotRun(ord, code, now)
	t.StartedAt, t.CompletedAt = ms(t.StartedAt), ms(t.CompletedAt)
	rec.turns[ord] = &turnItem{turn: *t, token: "not run"}
	i, _ := slices.BinarySearch(rec.ordinals, ord)
	rec.ordinals = slices.Insert(rec.ordinals, i, ord)
	rec.byID[q.TurnID] = ord
	sess.TerminalTurns = chat.AppendTerminal(sess.TerminalTurns, chat.TerminalEntry{TurnID: q.TurnID, Outcome: chat.OutcomeCompleted, InputHash: q.InputHash}, window)
	rec.dequeue(q.TurnID)
	sess.Revision++
	sess.UpdatedAt = now
}

// waitingQueued reports whether queued turns wait in the session.
func (rec *sessionRecord) waitingQueued() bool { return len(chat.Waiting(rec.session.Queue)) > 0 }

// EnqueueTurn implements chat.Store.
func (s *Store) EnqueueTurn(ctx context.Context, req chat.EnqueueRequest) (*chat.Enqueued, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := req.Validate(); err != nil {
		return nil, fmt.Errorf("enqueue turn: %w", err)
	}
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, err := s.owned(req.SessionID, req.Principal)
	if err != nil {
		return nil, err
	}
	sess := &rec.session
	if l := sess.ActiveTurn; l != nil && l.TurnID == req.TurnID {
		// That very turn runs, or is saved and not released yet: its
		// decision then, as for a claim.
		return nil, rec.busyOrDecided(chat.ClaimRequest{TurnID: req.TurnID, InputHash: req.InputHash}, chat.ErrSessionBusy)
	}
	queued, err := chat.QueueRejection(sess.Queue, sess.TerminalTurns, req.TurnID, req.InputHash, req.Max)
	if err == nil && queued == nil {
		err = rec.rejection(req.TurnID, req.InputHash, s.window)
	}
	switch {
	case err != nil:
		return nil, err
	case queued != nil:
		return &chat.Enqueued{Entry: *queued, Position: chat.Position(sess.Queue, req.TurnID), Idle: chat.IdleAt(sess, now)}, nil
	}
	rec.queueSeq++
	e := chat.QueueEntry{TurnID: req.TurnID, Seq: rec.queueSeq, InputHash: req.InputHash, QueuedAt: now, ExpiresAt: ms(now.Add(req.TTL))}
	sess.Queue = append(sess.Queue, e)
	msg := cloneMessages([]protocol.Message{req.Message})[0]
	rec.queued[req.TurnID] = &chat.QueuedTurn{QueueEntry: e, SessionID: req.SessionID, Principal: sess.Owner, Lineage: req.Lineage, Message: msg}
	sess.Revision++
	sess.UpdatedAt = now
	return &chat.Enqueued{Entry: e, Position: chat.Position(sess.Queue, req.TurnID), Idle: chat.IdleAt(sess, now)}, nil
}

// ClaimQueued implements chat.Store.
func (s *Store) ClaimQueued(ctx context.Context, sessionID string, leaseDuration time.Duration) (*chat.Claim, *chat.QueuedTurn, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	if leaseDuration <= 0 {
		return nil, nil, fmt.Errorf("claim queued turn: %w: a positive lease duration", chat.ErrInvalidRequest)
	}
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.sessions[sessionID]
	if !ok {
		return nil, nil, chat.ErrNothingQueued
	}
	s.decide(rec, now)
	sess := &rec.session
	if sess.ActiveTurn != nil || chat.PendingConfirmation(sess.Confirmations, now) {
		return nil, nil, chat.ErrSessionBusy
	}
	for _, e := range slices.Clone(sess.Queue) {
		if e.Cancelled {
			rec.notRun(rec.queued[e.TurnID], protocol.CodeTurnCancelled, now, s.window)
		}
	}
	for _, e := range chat.Waiting(sess.Queue) {
		q := rec.queued[e.TurnID]
		if !e.ExpiresAt.After(now) {
			rec.notRun(q, protocol.CodeTurnQueueExpired, now, s.window)
			continue
		}
		lease := rec.lease(chat.ClaimRequest{SessionID: sessionID, TurnID: e.TurnID, Principal: q.Principal,
			InputHash: e.InputHash, Lineage: q.Lineage, LeaseDuration: leaseDuration}, now)
		for i := range sess.Queue {
			if sess.Queue[i].TurnID == e.TurnID {
				sess.Queue[i].Started = lease.Ordinal
			}
		}
		out := *q
		out.QueueEntry = e
		out.Started = lease.Ordinal
		out.Message = cloneMessages([]protocol.Message{q.Message})[0]
		return &chat.Claim{Session: *cloneSession(sess), Lease: lease, BaseSequence: sess.Sequence}, &out, nil
	}
	return nil, nil, chat.ErrNothingQueued
}

// CancelQueued implements chat.Store.
func (s *Store) CancelQueued(ctx context.Context, sessionID, turnID string, p chat.Principal) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, err := s.owned(sessionID, p)
	if err != nil {
		return err
	}
	for _, e := range chat.Waiting(rec.session.Queue) {
		if e.TurnID != turnID {
			continue
		}
		if rec.session.ActiveTurn == nil {
			rec.notRun(rec.queued[turnID], protocol.CodeTurnCancelled, now, s.window)
			return nil
		}
		// A turn runs: the window may change only when it ends, so the
		// cancelled turn is recorded when the session is next free.
		for i := range rec.session.Queue {
			if rec.session.Queue[i].TurnID == turnID {
				rec.session.Queue[i].Cancelled = true
			}
		}
		rec.session.Revision++
		rec.session.UpdatedAt = now
		return nil
	}
	return chat.ErrTurnNotActive
}

// QueuedTurns implements chat.Store.
func (s *Store) QueuedTurns(ctx context.Context, sessionID string, p chat.Principal) ([]chat.QueuedTurn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, err := s.owned(sessionID, p)
	if err != nil {
		return nil, err
	}
	out := []chat.QueuedTurn{}
	for _, e := range chat.Waiting(rec.session.Queue) {
		q := *rec.queued[e.TurnID]
		q.QueueEntry = e
		q.Message = cloneMessages([]protocol.Message{q.Message})[0]
		out = append(out, q)
	}
	return out, nil
}
