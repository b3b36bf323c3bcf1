package memory

import (
	"context"
	"fmt"
	"slices"

	"github.com/turnstream/turnstream/pkg/chat"
)

// Checkpoint implements chat.Store. The claim must still own its ordinal
// (a takeover fences it: ErrLeaseLost) and the turn must not be saved as
// terminal yet (ErrLeaseLost: the turn is over). The stop flag is read from
// the session's lease.
func (s *Store) Checkpoint(ctx context.Context, c *chat.Claim, cp *chat.Checkpoint) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if err := c.CheckCheckpoint(cp); err != nil {
		return false, fmt.Errorf("checkpoint: %w", err)
	}
	token := c.Lease.Token
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.sessions[cp.SessionID]
	if !ok {
		return false, chat.ErrLeaseLost
	}
	if ic, ok := rec.claims[cp.Ordinal]; !ok || ic.token != token {
		return false, chat.ErrLeaseLost
	}
	item := cloneTurn(cp.TurnOf())
	item.StartedAt = ms(item.StartedAt)
	item.Artifacts = []chat.ArtifactReference{}
	old, ok := rec.turns[cp.Ordinal]
	switch {
	case ok && (old.token != token || old.turn.Status != chat.TurnRunning):
		return false, chat.ErrLeaseLost
	case ok && old.turn.LastSequence > cp.Sequence:
		// An older checkpoint delivered late: the newer one stays.
		l := rec.session.ActiveTurn
		return l != nil && l.Token == token && l.Stop, nil
	case !ok && cp.Prior != nil:
		return false, fmt.Errorf("checkpoint: %w: no first checkpoint", chat.ErrInvalidRequest)
	}
	if ok {
		item.Artifacts = old.turn.Artifacts
	} else {
		i, _ := slices.BinarySearch(rec.ordinals, cp.Ordinal)
		rec.ordinals = slices.Insert(rec.ordinals, i, cp.Ordinal)
	}
	rec.turns[cp.Ordinal] = &turnItem{turn: *item, token: token}
	if prev, ok := rec.byID[cp.TurnID]; !ok || prev < cp.Ordinal {
		rec.byID[cp.TurnID] = cp.Ordinal
	}
	l := rec.session.ActiveTurn
	return l != nil && l.Token == token && l.Stop, nil
}

// WithdrawClaim implements chat.Store: the claim's ordinal is kept from
// any later checkpoint of it (its issued claim forgotten), the lease
// removed, nothing recorded; acknowledged when its first checkpoint
// landed.
func (s *Store) WithdrawClaim(ctx context.Context, c *chat.Claim) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.sessions[c.Session.ID]
	if !ok {
		return false, chat.ErrLeaseLost
	}
	if it, ok := rec.turns[c.Lease.Ordinal]; ok {
		if it.token == c.Lease.Token && it.turn.Status == chat.TurnRunning {
			return true, nil
		}
		return false, chat.ErrLeaseLost
	}
	if ic, ok := rec.claims[c.Lease.Ordinal]; !ok || ic.token != c.Lease.Token {
		return false, chat.ErrLeaseLost
	}
	rec.claims[c.Lease.Ordinal] = issuedClaim{turnID: c.Lease.TurnID, token: "withdrawn"}
	sess := &rec.session
	if l := sess.ActiveTurn; l != nil && l.Token == c.Lease.Token {
		sess.ActiveTurn = nil
		sess.Revision++
		sess.UpdatedAt = now
	}
	return false, nil
}

// PollTurn implements chat.Store: an expired lease is decided first;
// since is not needed (the whole turn is at hand).
func (s *Store) PollTurn(ctx context.Context, sessionID string, ordinal int64, p chat.Principal, _ *chat.Turn) (*chat.Turn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, err := s.owned(sessionID, p)
	if err != nil {
		return nil, err
	}
	s.decide(rec, now)
	it, ok := rec.turns[ordinal]
	if !ok {
		return nil, chat.ErrTurnNotFound
	}
	t := rec.present(it)
	return &t, nil
}
