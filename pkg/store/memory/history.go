package memory

import (
	"context"
	"fmt"
	"slices"

	"github.com/turnstream/turnstream/pkg/chat"
)

// LoadContext implements chat.Store. A missing session has no context (an
// empty slice, no error), as a query of its turn items would find none.
func (s *Store) LoadContext(ctx context.Context, sessionID string, beforeOrdinal int64, maxTurns int) ([]chat.Turn, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	if maxTurns < 1 {
		return nil, false, fmt.Errorf("load context: %w", chat.ErrInvalidRequest)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []chat.Turn{}
	rec, ok := s.sessions[sessionID]
	if !ok {
		return out, false, nil
	}
	i, _ := slices.BinarySearch(rec.ordinals, beforeOrdinal)
	for i--; i >= 0; i-- {
		t := cloneTurn(&rec.turns[rec.ordinals[i]].turn).Presented()
		if t.Superseded || t.Status == chat.TurnRunning {
			continue
		}
		if len(out) == maxTurns {
			return reversed(out), true, nil
		}
		out = append(out, t)
	}
	return reversed(out), false, nil
}

func reversed(turns []chat.Turn) []chat.Turn {
	slices.Reverse(turns)
	return turns
}

// GetSession implements chat.Store: an expired lease is decided first.
func (s *Store) GetSession(ctx context.Context, sessionID string, p chat.Principal) (*chat.Session, error) {
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
	return cloneSession(&rec.session), nil
}

// ListTurns implements chat.Store. The request is validated (order, limit,
// cursor) before the session is looked up.
func (s *Store) ListTurns(ctx context.Context, req chat.ListRequest) (*chat.Page, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	req, err := req.Normalized()
	if err != nil {
		return nil, fmt.Errorf("list turns: %w", err)
	}
	order, limit := req.Order, req.Limit
	var after int64 // asc: ordinals above after; desc: below before
	before := int64(1<<63 - 1)
	if req.Cursor != "" {
		ord, err := s.cursors.Decode(req.SessionID, order, req.Cursor)
		if err != nil {
			return nil, err
		}
		after, before = ord, ord
	}

	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, err := s.owned(req.SessionID, req.Principal)
	if err != nil {
		return nil, err
	}
	s.decide(rec, now)
	// Collect one turn more than the limit: HasMore is then exact.
	page := make([]chat.Turn, 0, min(limit+1, len(rec.ordinals)))
	visit := func(ord int64) bool {
		if it := rec.turns[ord]; !it.turn.Superseded {
			page = append(page, rec.present(it))
		}
		return len(page) <= limit
	}
	if order == chat.OrderAsc {
		i, found := slices.BinarySearch(rec.ordinals, after)
		if found {
			i++
		}
		for ; i < len(rec.ordinals) && visit(rec.ordinals[i]); i++ {
		}
	} else {
		i, _ := slices.BinarySearch(rec.ordinals, before)
		for i--; i >= 0 && visit(rec.ordinals[i]); i-- {
		}
	}
	out := &chat.Page{Turns: page}
	if len(page) > limit {
		out.Turns = page[:limit]
		out.HasMore = true
		out.NextCursor = s.cursors.Encode(req.SessionID, order, page[limit-1].Ordinal)
	}
	return out, nil
}

// FindTurn implements chat.Store. Superseded turns are found (with
// Superseded set). If an evicted turn id was used again, the newest turn
// with that id is returned. An expired lease is decided first.
func (s *Store) FindTurn(ctx context.Context, sessionID, turnID string, p chat.Principal) (*chat.Turn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	item, err := s.findItem(sessionID, turnID, p, false)
	if err != nil {
		return nil, err
	}
	rec := s.sessions[sessionID]
	s.decide(rec, now)
	t := rec.present(item)
	return &t, nil
}

// PutArtifacts implements chat.Store. The references are validated before
// the session is looked up. The result is never nil.
func (s *Store) PutArtifacts(ctx context.Context, sessionID, turnID string, p chat.Principal, refs []chat.ArtifactReference) ([]chat.ArtifactReference, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	refs, err := chat.StoredArtifacts(refs) // a fresh slice: the caller's is not kept
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	item, err := s.findItem(sessionID, turnID, p, true)
	if err != nil {
		return nil, err
	}
	item.turn.Artifacts = refs
	return slices.Clone(refs), nil
}

// GetArtifacts implements chat.Store. The result is never nil.
func (s *Store) GetArtifacts(ctx context.Context, sessionID, turnID string, p chat.Principal) ([]chat.ArtifactReference, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	item, err := s.findItem(sessionID, turnID, p, false)
	if err != nil {
		return nil, err
	}
	return slices.Clone(item.turn.Artifacts), nil
}

// owned returns the session record if p owns it, else ErrSessionNotFound
// whether or not it exists. s.mu must be held.
func (s *Store) owned(sessionID string, p chat.Principal) (*sessionRecord, error) {
	rec, ok := s.sessions[sessionID]
	if !ok || !p.Owns(rec.session.Owner) {
		return nil, chat.ErrSessionNotFound
	}
	return rec, nil
}

// findItem returns the newest saved turn item with turnID. trustedOK lets a
// Trusted principal through without owning the session (artifact writes,
// docs/design.md#history-and-artifacts-api). s.mu must be held.
func (s *Store) findItem(sessionID, turnID string, p chat.Principal, trustedOK bool) (*turnItem, error) {
	rec, ok := s.sessions[sessionID]
	if !ok {
		return nil, chat.ErrSessionNotFound
	}
	if allowed := p.Owns(rec.session.Owner) || (trustedOK && p.TrustedFor(rec.session.Owner)); !allowed {
		return nil, chat.ErrSessionNotFound
	}
	ord, ok := rec.byID[turnID]
	if !ok {
		return nil, chat.ErrTurnNotFound
	}
	return rec.turns[ord], nil
}
