package memory

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
)

// listed is what a session's releases recorded of it in its owner's list
// (chat.ReleaseRequest.Listing).
type listed struct {
	activeAt time.Time
	status   chat.TurnStatus
	preview  string
}

// listing returns rec as its owner's list shows it.
func (rec *sessionRecord) listing() *chat.SessionListing {
	l := &chat.SessionListing{SessionID: rec.session.ID, Title: rec.title, CreatedAt: rec.session.CreatedAt}
	if rec.listed != nil {
		l.ActiveAt, l.LastStatus, l.Preview = rec.listed.activeAt, rec.listed.status, rec.listed.preview
	}
	return l
}

// list records a release's listing at now (the release's own write).
func (rec *sessionRecord) list(l *chat.Listing, now time.Time) {
	if l == nil {
		return
	}
	rec.listed = &listed{activeAt: now.Truncate(time.Millisecond), status: l.Status, preview: l.Preview}
	if rec.title == "" {
		rec.title = l.Title
	}
}

// listKey is a listed session's place in its owner's list, as the cursor
// carries it: the activity's epoch milliseconds, zero-padded, and the
// session id. Greater keys are newer.
func listKey(activeAt time.Time, sessionID string) string {
	return fmt.Sprintf("%016d:%s", activeAt.UnixMilli(), sessionID)
}

// sessionsBinding binds a list cursor to its principal.
func sessionsBinding(p chat.Principal) string {
	return "sessions\x00" + strconv.Itoa(len(p.Subject)) + ":" + p.Subject + "\x00" + p.Tenant
}

// ListSessions implements chat.Store.
func (s *Store) ListSessions(ctx context.Context, req chat.SessionListRequest) (*chat.SessionPage, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	req, err := req.Normalized()
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	after := ""
	if req.Cursor != "" {
		if after, err = s.cursors.DecodeKey(sessionsBinding(req.Principal), req.Cursor); err != nil {
			return nil, err
		}
	}
	words := chat.QueryWords(req.Query)
	s.mu.Lock()
	defer s.mu.Unlock()
	type entry struct {
		key string
		l   *chat.SessionListing
	}
	var all []entry
	for _, rec := range s.sessions {
		if rec.listed == nil || !req.Principal.Owns(rec.session.Owner) {
			continue
		}
		all = append(all, entry{listKey(rec.listed.activeAt, rec.session.ID), rec.listing()})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].key > all[j].key })
	page := &chat.SessionPage{Sessions: []chat.SessionListing{}}
	read := 0
	for _, e := range all {
		if after != "" && e.key >= after {
			continue
		}
		if read == req.Limit {
			page.NextCursor = s.cursors.EncodeKey(sessionsBinding(req.Principal), after)
			break
		}
		read++
		after = e.key
		if chat.TitleMatches(e.l.Title, words) {
			page.Sessions = append(page.Sessions, *e.l)
		}
	}
	if len(words) > 0 && read == req.Limit && page.NextCursor == "" {
		// As a store that filters what it read: a full read gives a
		// cursor, the page after it may be empty.
		page.NextCursor = s.cursors.EncodeKey(sessionsBinding(req.Principal), after)
	}
	return page, nil
}

// RenameSession implements chat.Store.
func (s *Store) RenameSession(ctx context.Context, sessionID string, p chat.Principal, title string) (*chat.SessionListing, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	title, err := chat.CheckTitle(title)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, err := s.owned(sessionID, p)
	if err != nil {
		return nil, err
	}
	rec.title = title
	rec.session.Revision++
	return rec.listing(), nil
}

// SetFeedback implements chat.Store.
func (s *Store) SetFeedback(ctx context.Context, sessionID, turnID string, p chat.Principal, f *chat.Feedback) (*chat.Feedback, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if f != nil {
		if err := chat.CheckFeedback(*f); err != nil {
			return nil, err
		}
	}
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	it, err := s.findItem(sessionID, turnID, p, false)
	if err != nil {
		return nil, err
	}
	if it.hidden || it.turn.Status == chat.TurnRunning {
		return nil, chat.ErrTurnNotFound
	}
	if f == nil {
		it.turn.Feedback = nil
		return nil, nil
	}
	stored := *f
	stored.At = now.Truncate(time.Millisecond)
	it.turn.Feedback = &stored
	out := stored
	return &out, nil
}

// DeleteSession implements chat.Store: the embedded store deletes a
// session at once, whatever req.MaxItems (the usage ledger keeps its
// counts).
func (s *Store) DeleteSession(ctx context.Context, req chat.DeleteRequest) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	req, err := req.Normalized()
	if err != nil {
		return false, err
	}
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, err := s.owned(req.SessionID, req.Principal)
	if err != nil {
		return false, err
	}
	if err := s.deletable(rec, now); err != nil {
		return false, err
	}
	s.bury(rec)
	return true, nil
}

// deletable decides rec's expired lease, if any (takeOver), and returns
// ErrSessionBusy while a turn of it runs.
// s.mu must be held.
func (s *Store) deletable(rec *sessionRecord, now time.Time) error {
	if err := s.takeOver(rec, now); err != nil {
		return fmt.Errorf("delete session %s: a turn is running: %w", rec.session.ID, chat.ErrSessionBusy)
	}
	return nil
}

// bury deletes rec, keeping its snapshot sequence in a tombstone. s.mu
// must be held.
func (s *Store) bury(rec *sessionRecord) {
	if s.tombstones == nil {
		s.tombstones = map[string]int64{}
	}
	s.tombstones[rec.session.ID] = rec.session.Sequence
	delete(s.sessions, rec.session.ID)
	delete(s.attachments, rec.session.ID)
}

// EraseSessions implements chat.Store: every session req.Principal owns
// whose turns are not running, at once.
func (s *Store) EraseSessions(ctx context.Context, req chat.DeleteRequest) (*chat.Erased, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	req, err := req.Normalized()
	if err != nil {
		return nil, err
	}
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := &chat.Erased{}
	for _, rec := range s.sessions {
		if !req.Principal.Owns(rec.session.Owner) {
			continue
		}
		if s.deletable(rec, now) != nil {
			out.Busy++
			continue
		}
		s.bury(rec)
		out.Deleted++
	}
	out.Done = out.Busy == 0
	return out, nil
}
