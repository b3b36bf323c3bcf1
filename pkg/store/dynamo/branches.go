package dynamo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
)

var _ chat.BranchStore = (*Store)(nil)

// selectMarkTTL is how long a select may run before whoever meets its
// mark finishes it (docs/branches.md). A select's own calls stop at its
// mark's expiry.
const selectMarkTTL = 30 * time.Second

// selectMark is a select in progress, on the session item: the member
// selected and the last ordinal of its branch (Turn, TurnEnd), the member
// that leaves and the last ordinal of its branch (Active, ActiveEnd), and
// the group's members, which both keep. Every step of finishSelect is
// defined by the state it reaches, so that any number of finishers reach
// the same one.
type selectMark struct {
	Token     string      `dynamodbav:"token"`
	ExpiresAt int64       `dynamodbav:"expiresAt"`
	Turn      int64       `dynamodbav:"turn"`
	TurnEnd   int64       `dynamodbav:"turnEnd"`
	Active    int64       `dynamodbav:"active"`
	ActiveEnd int64       `dynamodbav:"activeEnd"`
	Members   *siblingsAV `dynamodbav:"members"`
}

// SelectTurn implements chat.BranchStore: the session is read (its
// expired lease decided, an expired select mark finished), the turn
// found by id (a Query of TurnIDIndex and a read of its item), and the
// group's active member with the branch that follows it (a Query of
// VisibleIndex); then a select mark is written on the session item,
// compare-and-set on its revision and only while no lease is held and no
// queued turn waits; then finishSelect.
func (s *Store) SelectTurn(ctx context.Context, sessionID, turnID string, p chat.Principal) error {
	ctx = withPurpose(ctx, PurposeSelect)
	si, err := s.idleSession(ctx, sessionID, p)
	if err != nil {
		return err
	}
	index, err := s.turnAccess(ctx, sessionID, turnID, p, false)
	if err != nil {
		return err
	}
	item, found, err := s.getItem(ctx, map[string]types.AttributeValue{AttrPK: index[AttrPK], AttrSK: index[AttrSK]})
	if err != nil {
		return fmt.Errorf("select turn %s: %w", turnID, err)
	}
	if !found {
		return chat.ErrTurnNotFound
	}
	x, err := decodeTurnItem(item)
	if err != nil {
		return err
	}
	if !x.Superseded {
		return nil
	}
	if x.Siblings == nil || x.BranchHead != x.Ordinal {
		return chat.ErrNotSelectable
	}
	active, err := s.visibleFrom(ctx, sessionID, x.group(), maxOrdinal, x.group())
	if err != nil {
		return err
	}
	if len(active) == 0 {
		return chat.ErrNotSelectable
	}
	m := &selectMark{Token: newToken(), ExpiresAt: millis(s.now().Add(selectMarkTTL)),
		Turn: x.Ordinal, TurnEnd: max(x.BranchEnd, x.Ordinal),
		Active: active[0].Ordinal, ActiveEnd: active[len(active)-1].Ordinal, Members: active[0].Siblings}
	up := expression.Set(expression.Name(attrSelecting), expression.Value(m)).
		Set(expression.Name(attrRevision), expression.Value(si.Revision+1)).
		Set(expression.Name(attrUpdatedAt), expression.Value(millis(s.now())))
	// The condition accepts the mark's own effect: a retry of an attempt
	// that applied unanswered applies again, unchanged.
	cond := condition{expr: "#revision = :revision AND attribute_not_exists(#leaseToken) AND attribute_not_exists(#selecting) OR #selecting.#token = :token",
		names:  []string{attrRevision, attrLeaseToken, attrSelecting, "token"},
		values: map[string]types.AttributeValue{":revision": numValue(si.Revision), ":token": strValue(m.Token)}}
	err = s.resolvedWrite(ctx, PurposeSelect, sessionKey(sessionID), up, cond, func(item map[string]types.AttributeValue) bool {
		got, _ := markOf(item)
		return got != nil && got.Token == m.Token
	})
	if failed, _ := conditionFailed(err); failed {
		return fmt.Errorf("select turn %s: the session changed: %w", turnID, chat.ErrSessionBusy)
	}
	if err != nil {
		return fmt.Errorf("select turn %s: %w", turnID, err)
	}
	return s.finishSelect(ctx, sessionID, m)
}

// idleSession reads the session owned by p for a select: its expired
// lease decided first (GetSession) and an expired select mark finished.
// ErrSessionBusy while a lease is held, a queued turn waits or another
// select runs.
func (s *Store) idleSession(ctx context.Context, sessionID string, p chat.Principal) (*sessionItem, error) {
	for range 3 {
		sess, si, err := s.readSession(ctx, sessionID)
		if errors.Is(err, errNoSession) {
			return nil, chat.ErrSessionNotFound
		}
		if err != nil {
			return nil, err
		}
		if !p.Owns(sess.Owner) {
			return nil, chat.ErrSessionNotFound
		}
		now := s.now()
		switch m := si.Selecting; {
		case sess.ActiveTurn != nil && sess.ActiveTurn.ExpiresAt.After(now), len(chat.Waiting(sess.Queue)) > 0,
			m != nil && m.ExpiresAt > millis(now):
			return nil, chat.ErrSessionBusy
		case sess.ActiveTurn != nil:
			if _, err := s.GetSession(ctx, sessionID, p); err != nil { // decides the expired lease
				return nil, err
			}
		case m != nil:
			if err := s.finishSelect(ctx, sessionID, m); err != nil {
				return nil, err
			}
		default:
			return si, nil
		}
	}
	return nil, fmt.Errorf("select in session %s: %w", sessionID, chat.ErrSessionBusy)
}

// markOf returns the select mark of a session item, nil when it has none.
func markOf(item map[string]types.AttributeValue) (*selectMark, error) {
	if _, ok := item[attrSelecting]; !ok {
		return nil, nil
	}
	var m selectMark
	if err := attributevalue.Unmarshal(item[attrSelecting], &m); err != nil {
		return nil, fmt.Errorf("decode the select mark: %w", err)
	}
	return &m, nil
}

// finishSelect brings the session to the state select mark m asks for,
// from any state a select of m (or a finisher) left: the branch from
// m.Active on leaves the active branch, except the turns of the selected
// branch already back (one Query of VisibleIndex, one UpdateItem per
// turn, the last first); the selected branch's turns come back (one
// Query of the turn items in its range, one UpdateItem per turn, the
// first first); then the mark is cleared (compare-and-set on its token).
// Every state between the steps is a branch readers can show: a prefix of
// the branch that leaves, or of the one that comes back.
func (s *Store) finishSelect(ctx context.Context, sessionID string, m *selectMark) error {
	ctx = withPurpose(ctx, PurposeSelect)
	visible, err := s.visibleFrom(ctx, sessionID, m.Active, maxOrdinal, 0)
	if err != nil {
		return err
	}
	selected := func(it *turnItem) bool {
		return it.BranchHead == m.Turn && it.Ordinal >= m.Turn && it.Ordinal <= m.TurnEnd
	}
	leave := slices.DeleteFunc(visible, selected)
	if len(leave) > 0 {
		if err := s.leaveBranchAs(ctx, PurposeSelect, sessionID, leave, m.Active, m.ActiveEnd, m.Members.siblings(), 0); err != nil {
			return err
		}
	}
	items, err := s.turnItemsIn(ctx, sessionID, m.Turn, m.TurnEnd)
	if err != nil {
		return err
	}
	for _, it := range items {
		if !it.Superseded || !selected(it) {
			continue
		}
		up := expression.Set(expression.Name(attrSuperseded), expression.Value(false)).
			Set(expression.Name(AttrVisibleKey), expression.Value(ordinalKey(it.Ordinal)))
		if it.Ordinal == m.Turn {
			up = up.Set(expression.Name(attrSiblings), expression.Value(m.Members))
		}
		cond := condition{expr: "attribute_exists(#pk) AND #branchHead = :head", names: []string{AttrPK, attrBranchHead},
			values: map[string]types.AttributeValue{":head": numValue(m.Turn)}}
		_, err = s.update(ctx, PurposeSelect, turnKey(sessionID, it.Ordinal), up, cond)
		if failed, _ := conditionFailed(err); failed {
			continue // deleted, or taken off again by a later branch
		}
		if err != nil {
			return fmt.Errorf("bring turn %d of session %s back to the active branch: %w", it.Ordinal, sessionID, err)
		}
	}
	up := expression.Remove(expression.Name(attrSelecting)).
		Set(expression.Name(attrRevision), expression.Plus(expression.Name(attrRevision), expression.Value(1))).
		Set(expression.Name(attrUpdatedAt), expression.Value(millis(s.now())))
	cond := condition{expr: "#selecting.#token = :token", names: []string{attrSelecting, "token"},
		values: map[string]types.AttributeValue{":token": strValue(m.Token)}}
	err = s.resolvedWrite(ctx, PurposeSelect, sessionKey(sessionID), up, cond, func(item map[string]types.AttributeValue) bool {
		got, _ := markOf(item)
		return got == nil || got.Token != m.Token
	})
	if failed, _ := conditionFailed(err); failed {
		return nil // cleared by another finisher
	}
	if err != nil {
		return fmt.Errorf("clear the select mark of session %s: %w", sessionID, err)
	}
	return nil
}

// forkPageSize is how many turns ForkSession reads and copies at a time.
const forkPageSize = 25

// ForkSession implements chat.BranchStore. The source turn is found (a
// Query of TurnIDIndex and a read of its item; ErrSessionBusy while a
// select runs in the source); the active branch up to
// it is read a page of turns at a time (a Query of VisibleIndex each),
// each turn copied into the new session as a turn item of its own
// (UpdateItem, conditional on the item being absent or this fork's copy;
// a large turn's chunks first, as a save writes them); the new session's
// item comes last (conditional on no session holding the id, a deleted
// one's tombstone aside), after the source turn was read again on the
// active branch, so that the fork exists whole or not at all, and a fork
// stopped halfway is finished by the same call again.
func (s *Store) ForkSession(ctx context.Context, req chat.ForkRequest) (*chat.SessionListing, error) {
	ctx = withPurpose(ctx, PurposeFork)
	title, err := req.Validate()
	if err != nil {
		return nil, err
	}
	src, srcItem, err := s.readSession(ctx, req.SessionID)
	if errors.Is(err, errNoSession) {
		return nil, chat.ErrSessionNotFound
	}
	if err != nil {
		return nil, err
	}
	if !req.Principal.Owns(src.Owner) {
		return nil, chat.ErrSessionNotFound
	}
	if srcItem.Selecting != nil {
		return nil, fmt.Errorf("fork session %s: a select runs: %w", req.SessionID, chat.ErrSessionBusy)
	}
	if title == "" {
		title = chat.ForkTitle(srcItem.Title)
	}
	at, err := s.forkPoint(ctx, req)
	if err != nil {
		return nil, err
	}
	from := req.SessionID + "\x00" + req.AtTurnID
	saveID := "fork-" + chat.HashInput(from)[:24]
	now := s.now()
	var window []chat.TerminalEntry
	var last chat.Turn
	next := int64(1)
	for start := int64(1); start <= at.Ordinal; {
		key := pkKey(req.SessionID).And(expression.Key(AttrVisibleKey).Between(
			expression.Value(ordinalKey(start)), expression.Value(ordinalKey(at.Ordinal))))
		page, err := s.queryVisible(ctx, req.SessionID, key, true, forkPageSize, nil)
		if err != nil {
			return nil, err
		}
		turns, _, err := s.turnsFromItems(ctx, page.Items)
		if err != nil {
			return nil, err
		}
		if len(turns) == 0 {
			break
		}
		for i := range turns {
			t := turns[i]
			start = t.Ordinal + 1
			t.SessionID, t.Ordinal = req.NewSessionID, next
			t.Lineage, t.Siblings, t.Feedback, t.Superseded = protocol.Lineage{}, nil, nil, false
			if err := s.copyTurn(ctx, &t, src.Owner, saveID, now); err != nil {
				return nil, err
			}
			window = chat.AppendTerminal(window, chat.TerminalEntry{TurnID: t.TurnID, Outcome: chat.OutcomeCompleted, InputHash: t.InputHash}, s.window)
			last = t
			next++
		}
	}
	// The branch may have moved under the copy (a select, or an edit of
	// an earlier turn): the copy ends at the fork's turn, still on the
	// active branch, or the fork is refused before its session exists.
	if next == 1 || last.TurnID != req.AtTurnID {
		return nil, chat.ErrTurnNotFound
	}
	if _, err := s.forkPoint(ctx, req); err != nil {
		return nil, err
	}
	return s.createForked(ctx, req, src, title, from, next, window, &last, now)
}

// forkPoint returns the source turn of a fork: a terminal turn on the
// active branch (ErrTurnNotFound otherwise).
func (s *Store) forkPoint(ctx context.Context, req chat.ForkRequest) (*turnItem, error) {
	index, err := s.turnAccess(ctx, req.SessionID, req.AtTurnID, req.Principal, false)
	if err != nil {
		return nil, err
	}
	item, found, err := s.getItem(ctx, map[string]types.AttributeValue{AttrPK: index[AttrPK], AttrSK: index[AttrSK]})
	if err != nil {
		return nil, fmt.Errorf("fork at turn %s: %w", req.AtTurnID, err)
	}
	if !found {
		return nil, chat.ErrTurnNotFound
	}
	at, err := decodeTurnItem(item)
	if err != nil {
		return nil, err
	}
	if at.Superseded || at.VisibleKey == "" || chat.TurnStatus(at.Status) == chat.TurnRunning {
		return nil, chat.ErrTurnNotFound
	}
	return at, nil
}

// copyTurn writes t, a terminal turn, as a forked session's turn item:
// its chunks first when it needs them (keyed by saveID, the same for
// every copy of one fork), then the item, conditional on it being absent
// or this fork's own copy (ErrConflict otherwise: the id holds another
// session's turns).
func (s *Store) copyTurn(ctx context.Context, t *chat.Turn, owner chat.Principal, saveID string, now time.Time) error {
	it := newTurnItem(t, owner, "fork", now)
	it.SaveID = saveID
	chunks, err := setPayload(&it, t.Messages, t.ReasoningBlocks)
	if err != nil {
		return err
	}
	for i, chunk := range chunks {
		if err := s.putChunk(ctx, t.SessionID, it.ChunkPrefix, i, chunk); err != nil {
			return err
		}
	}
	up, err := saveUpdate(&it, slices.Clone(t.Artifacts))
	if err != nil {
		return err
	}
	cond := condition{expr: "attribute_not_exists(#pk) OR #saveId = :saveId", names: []string{AttrPK, attrSaveID},
		values: map[string]types.AttributeValue{":saveId": strValue(saveID)}}
	err = s.resolvedWrite(ctx, PurposeFork, turnKey(t.SessionID, t.Ordinal), up, cond, func(item map[string]types.AttributeValue) bool {
		v, _ := item[attrSaveID].(*types.AttributeValueMemberS)
		return v != nil && v.Value == saveID
	})
	if failed, _ := conditionFailed(err); failed {
		return fmt.Errorf("fork into session %s: %w", t.SessionID, chat.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("copy turn %s into session %s: %w", t.TurnID, t.SessionID, err)
	}
	return nil
}

// createForked writes a fork's session item once its turns are copied:
// conditional on no session holding the id (a deleted session's
// tombstone, which has no owner, aside: the fork's snapshots are
// numbered past it). A session that exists is this very fork (the call
// again, or a retry whose answer was lost) or ErrConflict.
func (s *Store) createForked(ctx context.Context, req chat.ForkRequest, src *chat.Session, title, from string, next int64, window []chat.TerminalEntry, last *chat.Turn, now time.Time) (*chat.SessionListing, error) {
	key := sessionKey(req.NewSessionID)
	sequence := src.Sequence
	if item, found, err := s.getItem(ctx, key); err != nil {
		return nil, fmt.Errorf("fork into session %s: %w", req.NewSessionID, err)
	} else if found {
		var si sessionItem
		if err := attributevalue.UnmarshalMap(item, &si); err != nil {
			return nil, fmt.Errorf("decode session %s: %w", req.NewSessionID, err)
		}
		sequence = max(sequence, si.Sequence)
	}
	preview := ""
	if n := len(last.Messages); n > 0 {
		preview = chat.Preview(last.Messages[n-1].Content)
	}
	up := expression.Set(expression.Name(attrOwnerKey), expression.Value(ownerKey(src.Owner))).
		Set(expression.Name(attrDefinitionID), expression.Value(src.DefinitionID)).
		Set(expression.Name(attrDefinitionRev), expression.Value(src.DefinitionRevision)).
		Set(expression.Name(attrSequence), expression.Value(sequence)).
		Set(expression.Name(attrNextOrdinal), expression.Value(next)).
		Set(expression.Name(attrRevision), expression.Plus(expression.IfNotExists(expression.Name(attrRevision), expression.Value(0)), expression.Value(1))).
		Set(expression.Name(attrCreatedAt), expression.Value(millis(now))).
		Set(expression.Name(attrUpdatedAt), expression.Value(millis(now))).
		Set(expression.Name(attrWindow), expression.Value(windowAV(window))).
		Set(expression.Name(attrForkedFrom), expression.Value(from))
	up = listWrite(up, &chat.Listing{Status: last.Status, Preview: preview}, now)
	up = up.Set(expression.Name(attrTitle), expression.Value(title)).
		Set(expression.Name(attrTitleKey), expression.Value(strings.ToLower(title)))
	if src.DefinitionID == "" {
		up = up.Remove(expression.Name(attrDefinitionID))
	}
	cond := condition{expr: "attribute_not_exists(#ownerKey)", names: []string{attrOwnerKey}}
	forked := func(item map[string]types.AttributeValue) bool {
		v, _ := item[attrForkedFrom].(*types.AttributeValueMemberS)
		o, _ := item[attrOwnerKey].(*types.AttributeValueMemberS)
		return v != nil && v.Value == from && o != nil && o.Value == ownerKey(src.Owner)
	}
	err := s.resolvedWrite(ctx, PurposeFork, key, up, cond, forked)
	if failed, _ := conditionFailed(err); failed {
		item, found, rerr := s.getItem(ctx, key)
		if rerr != nil {
			return nil, fmt.Errorf("fork into session %s: %w", req.NewSessionID, rerr)
		}
		if !found || !forked(item) {
			return nil, fmt.Errorf("fork into session %s: %w", req.NewSessionID, chat.ErrConflict)
		}
	} else if err != nil {
		return nil, fmt.Errorf("fork into session %s: %w", req.NewSessionID, err)
	}
	_, si, err := s.readSession(ctx, req.NewSessionID)
	if err != nil {
		return nil, fmt.Errorf("read forked session %s: %w", req.NewSessionID, err)
	}
	return listingOf(req.NewSessionID, si), nil
}

// visibleFrom returns the visible turn items of the session with ordinals
// in [from, to], ascending, decoded without their messages: one Query per
// 1 MB. A group other than 0 starts the result at the first item of that
// sibling group (the items before it are read and dropped).
func (s *Store) visibleFrom(ctx context.Context, sessionID string, from, to, group int64) ([]*turnItem, error) {
	key := pkKey(sessionID).And(expression.Key(AttrVisibleKey).Between(
		expression.Value(ordinalKey(from)), expression.Value(ordinalKey(to))))
	var out []*turnItem
	var start map[string]types.AttributeValue
	for {
		page, err := s.queryVisible(ctx, sessionID, key, true, 0, start)
		if err != nil {
			return nil, err
		}
		for _, item := range page.Items {
			it, err := decodeTurnItem(item)
			if err != nil {
				return nil, err
			}
			if group == 0 || len(out) > 0 || it.group() == group {
				out = append(out, it)
			}
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out, nil
		}
		start = page.LastEvaluatedKey
	}
}

// leaveBranch takes the turns of items (visible, ascending) off the
// active branch as the branch of the first of them, which keeps group g
// (its sibling group as it leaves): leaveBranchAs.
func (s *Store) leaveBranch(ctx context.Context, purpose Purpose, sessionID string, items []*turnItem, g *chat.Siblings, by int64) error {
	return s.leaveBranchAs(ctx, purpose, sessionID, items, items[0].Ordinal, items[len(items)-1].Ordinal, g, by)
}

// leaveBranchAs takes the turns of items (visible, ascending) off the
// active branch as the branch whose first turn is head and last end: one
// UpdateItem each, the last first and head's (which records end and
// keeps group g) last, so that a branch whose writes stopped halfway
// leaves a prefix of itself on the active branch. by is the ordinal of
// the turn whose supersession takes them off (0 for a select), recorded
// so that the decision of that turn, lost before its first checkpoint,
// brings them back (restoreBranch).
func (s *Store) leaveBranchAs(ctx context.Context, purpose Purpose, sessionID string, items []*turnItem, head, end int64, g *chat.Siblings, by int64) error {
	for i := len(items) - 1; i >= 0; i-- {
		up := expression.Set(expression.Name(attrSuperseded), expression.Value(true)).
			Set(expression.Name(attrBranchHead), expression.Value(head)).
			Remove(expression.Name(AttrVisibleKey))
		if by > 0 {
			up = up.Set(expression.Name(attrHiddenBy), expression.Value(by))
		} else {
			up = up.Remove(expression.Name(attrHiddenBy))
		}
		if items[i].Ordinal == head {
			up = up.Set(expression.Name(attrBranchEnd), expression.Value(end)).
				Set(expression.Name(attrSiblings), expression.Value(toSiblingsAV(g)))
		}
		cond := condition{expr: "attribute_exists(#pk)", names: []string{AttrPK}}
		_, err := s.update(ctx, purpose, turnKey(sessionID, items[i].Ordinal), up, cond)
		if failed, _ := conditionFailed(err); failed {
			continue // the item vanished: nothing left to hide
		}
		if err != nil {
			return fmt.Errorf("take turn %d of session %s off the active branch: %w", items[i].Ordinal, sessionID, err)
		}
	}
	return nil
}

// restoreBranch brings back the turns the supersession of crashed's turn
// took off the active branch, for a turn lost before its first
// checkpoint (its decision, fate.go): no version of it exists to take
// their place. One Query of TurnIDIndex finds the turn its lineage
// replaced, one Query reads the turns from there to crashed's, and one
// UpdateItem per turn it hid shows it again (conditional on its hiddenBy
// still naming crashed's turn, so that repeating it is harmless); the
// group the first of them kept loses crashed's turn.
func (s *Store) restoreBranch(ctx context.Context, sessionID string, crashed *chat.Lease) error {
	switch crashed.Lineage.Operation {
	case protocol.OperationEdit, protocol.OperationRetry, protocol.OperationRegenerate:
	default:
		return nil
	}
	parent, found, err := s.findTurnItem(ctx, sessionID, crashed.Lineage.ParentTurnID)
	if err != nil || !found {
		return err
	}
	from, err := strconv.ParseInt(strings.TrimPrefix(skOf(parent), turnPrefix), 10, 64)
	if err != nil || from < 1 || from >= crashed.Ordinal {
		return nil
	}
	items, err := s.turnItemsIn(ctx, sessionID, from, crashed.Ordinal-1)
	if err != nil {
		return err
	}
	for _, it := range items {
		if it.HiddenBy != crashed.Ordinal {
			continue
		}
		up := expression.Set(expression.Name(attrSuperseded), expression.Value(false)).
			Set(expression.Name(AttrVisibleKey), expression.Value(ordinalKey(it.Ordinal))).
			Remove(expression.Name(attrHiddenBy))
		if g := it.Siblings.siblings(); g != nil && it.BranchHead == it.Ordinal {
			g.Members = slices.DeleteFunc(g.Members, func(m chat.Sibling) bool { return m.Ordinal == crashed.Ordinal })
			if len(g.Members) < 2 {
				up = up.Remove(expression.Name(attrSiblings))
			} else {
				up = up.Set(expression.Name(attrSiblings), expression.Value(toSiblingsAV(g)))
			}
		}
		cond := condition{expr: "#hiddenBy = :by", names: []string{attrHiddenBy},
			values: map[string]types.AttributeValue{":by": numValue(crashed.Ordinal)}}
		_, err = s.update(ctx, PurposeFence, turnKey(sessionID, it.Ordinal), up, cond)
		if failed, _ := conditionFailed(err); failed {
			continue // brought back by another decider
		}
		if err != nil {
			return fmt.Errorf("bring turn %d of session %s back to the active branch: %w", it.Ordinal, sessionID, err)
		}
	}
	return nil
}

// turnItemsIn returns the session's turn items with ordinals in [from,
// to], on the active branch or not, ascending, decoded without their
// messages: one consistent Query (the range's checkpoint and chunk items
// are read and left out).
func (s *Store) turnItemsIn(ctx context.Context, sessionID string, from, to int64) ([]*turnItem, error) {
	rows, err := s.queryRange(ctx, sessionPK(sessionID), turnSK(from), turnSK(to))
	if err != nil {
		return nil, err
	}
	var out []*turnItem
	for _, row := range rows {
		if ItemKindOf(skOf(row)) != ItemTurn {
			continue
		}
		it, err := decodeTurnItem(row)
		if err != nil {
			return nil, err
		}
		out = append(out, it)
	}
	return out, nil
}
