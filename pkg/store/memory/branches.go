package memory

import (
	"context"
	"fmt"
	"slices"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
)

var _ chat.BranchStore = (*Store)(nil)

// leaveBranch takes the turns of ords (visible, ascending) off the active
// branch as the branch of the first of them, which keeps group g (its
// sibling group as it leaves).
func (rec *sessionRecord) leaveBranch(ords []int64, g *chat.Siblings) {
	for _, ord := range ords {
		it := rec.turns[ord]
		it.turn.Superseded, it.branchHead, it.hiddenBy = true, ords[0], 0
	}
	first := rec.turns[ords[0]]
	first.branchEnd, first.turn.Siblings = ords[len(ords)-1], g.Clone()
}

// SelectTurn implements chat.BranchStore: the session's expired lease is
// decided first; the whole switch is one step under the store's lock.
func (s *Store) SelectTurn(ctx context.Context, sessionID, turnID string, p chat.Principal) error {
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
	s.decide(rec, now)
	if l := rec.session.ActiveTurn; l != nil || len(rec.session.Queue) > 0 {
		return fmt.Errorf("select turn %s: %w", turnID, chat.ErrSessionBusy)
	}
	ord, ok := rec.byID[turnID]
	x := rec.turns[ord]
	if !ok || x.hidden {
		return chat.ErrTurnNotFound
	}
	if x.visible() {
		return nil
	}
	if x.turn.Siblings == nil || x.branchHead != ord {
		return chat.ErrNotSelectable
	}
	group := x.group()
	i, _ := slices.BinarySearch(rec.ordinals, group)
	var active []int64 // the active branch from the group's visible member on
	for _, o := range rec.ordinals[i:] {
		if it := rec.turns[o]; it.visible() && (len(active) > 0 || it.group() == group) {
			active = append(active, o)
		}
	}
	if len(active) == 0 {
		return chat.ErrNotSelectable
	}
	members := rec.turns[active[0]].turn.Siblings
	rec.leaveBranch(active, members)
	for _, o := range rec.ordinals {
		if it := rec.turns[o]; o >= ord && o <= x.branchEnd && it.branchHead == ord {
			it.turn.Superseded = false
		}
	}
	x.turn.Siblings = members.Clone()
	rec.session.Revision++
	rec.session.UpdatedAt = now
	return nil
}

// ForkSession implements chat.BranchStore: the copy is one step under the
// store's lock.
func (s *Store) ForkSession(ctx context.Context, req chat.ForkRequest) (*chat.SessionListing, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	title, err := req.Validate()
	if err != nil {
		return nil, err
	}
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	src, err := s.owned(req.SessionID, req.Principal)
	if err != nil {
		return nil, err
	}
	s.decide(src, now)
	at, ok := src.byID[req.AtTurnID]
	if it := src.turns[at]; !ok || !it.visible() || it.turn.Status == chat.TurnRunning {
		return nil, chat.ErrTurnNotFound
	}
	from := req.SessionID + "\x00" + req.AtTurnID
	if rec, ok := s.sessions[req.NewSessionID]; ok {
		if rec.forkedFrom != from || !req.Principal.Owns(rec.session.Owner) {
			return nil, fmt.Errorf("fork session into %s: %w", req.NewSessionID, chat.ErrConflict)
		}
		return rec.listing(), nil
	}
	rec := newSessionRecord(chat.ClaimRequest{SessionID: req.NewSessionID, Principal: src.session.Owner,
		DefinitionID: src.session.DefinitionID, DefinitionRevision: src.session.DefinitionRevision}, now)
	if title == "" {
		title = chat.ForkTitle(src.title)
	}
	rec.forkedFrom, rec.title = from, title
	sess := &rec.session
	sess.Sequence = max(src.session.Sequence, s.tombstones[req.NewSessionID])
	var last *chat.Turn
	for _, o := range src.ordinals {
		it := src.turns[o]
		if o > at || !it.visible() {
			continue
		}
		t := cloneTurn(&it.turn)
		t.SessionID, t.Ordinal = req.NewSessionID, sess.NextOrdinal
		t.Lineage, t.Siblings, t.Feedback = protocol.Lineage{}, nil, nil
		rec.turns[t.Ordinal] = &turnItem{turn: *t}
		rec.ordinals = append(rec.ordinals, t.Ordinal)
		rec.byID[t.TurnID] = t.Ordinal
		sess.TerminalTurns = chat.AppendTerminal(sess.TerminalTurns, chat.TerminalEntry{TurnID: t.TurnID, Outcome: chat.OutcomeCompleted, InputHash: t.InputHash}, s.window)
		sess.NextOrdinal++
		last = t
	}
	rec.list(&chat.Listing{Status: last.Status, Preview: answerPreview(last)}, now)
	sess.Revision++
	sess.UpdatedAt = now
	s.sessions[req.NewSessionID] = rec
	return rec.listing(), nil
}

// answerPreview is the list preview of t's answer: its last message's
// text.
func answerPreview(t *chat.Turn) string {
	if len(t.Messages) == 0 {
		return ""
	}
	return chat.Preview(t.Messages[len(t.Messages)-1].Content)
}
