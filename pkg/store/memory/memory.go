package memory

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// Options configure a Store.
type Options struct {
	// Now is the store's clock, read for lease expiry and timestamps; nil
	// means time.Now. Tests pass a manual clock (storetest.Clock.Now).
	Now func() time.Time
	// CursorKey is the HMAC key of page cursors (chat.CursorCodec), at least
	// 16 bytes. Empty means 32 random bytes: cursors then stay valid only as
	// long as this Store.
	CursorKey []byte
	// TerminalWindow is how many terminal turns a session keeps for
	// replay protection (chat.WindowSize: 0 means
	// chat.DefaultTerminalWindow, as the DynamoDB store).
	TerminalWindow int
	// Ledger configures the usage ledger (docs/quotas.md): with Enabled,
	// the turns the store decides are counted.
	Ledger chat.LedgerOptions
}

// Store is an in-process chat.Store. The zero value is not usable; call New.
// All methods are safe for concurrent use (one mutex guards all state).
type Store struct {
	now     func() time.Time
	cursors chat.CursorCodec
	window  int

	mu       sync.Mutex
	sessions map[string]*sessionRecord

	// ledger is the usage ledger (ledger.go), guarded by mu too.
	ledgerOpts chat.LedgerOptions
	ledger     map[ledgerKey]*ledgerRecord
}

var _ chat.Store = (*Store)(nil)

// sessionRecord is a session item and the turn items under it.
type sessionRecord struct {
	session chat.Session
	// claims maps each ordinal handed out by ClaimTurn to that claim; only
	// its token may write the turn item of that ordinal (chat.Store.SaveTurn).
	claims map[int64]issuedClaim // a fenced claim's token is fenceToken
	// releasedToken is the token of the last ReleaseTurn that cleared a
	// lease: a retry of that release is a no-op.
	releasedToken string
	// turns are the saved turn items by ordinal; ordinals lists their keys
	// ascending, and byID maps a turn id to the newest ordinal saved with it.
	turns    map[int64]*turnItem
	ordinals []int64
	byID     map[string]int64
	// lost records the crashed turns that saved nothing, by turn id, as
	// indeterminate: their ids stay taken once they left the window.
	lost map[string]chat.TerminalEntry
	// queued holds the queued turns of session.Queue by turn id, and
	// queueSeq the last queue position given.
	queued   map[string]*chat.QueuedTurn
	queueSeq int64
}

// fenceToken replaces the token of a crashed turn's claim at takeover: no
// claim has it, so the crashed turn's late save is ErrLeaseLost.
const fenceToken = "fence"

// fence closes the item of expired lease l when its turn's fate is
// decided (decide) and returns the turn's outcome: completed if it had
// saved a terminal item, else indeterminate. A running item becomes the
// turn's lost record (chat.Turn.Lost) with terminal sequence lost; a turn
// that wrote no item gets a hidden one (PollTurn shows it, no list does),
// and its id stays taken. Either way its claim is fenced: its late
// checkpoints and saves are ErrLeaseLost.
func (rec *sessionRecord) fence(l *chat.Lease, lost int64, now time.Time) chat.TerminalOutcome {
	c := rec.claims[l.Ordinal]
	it, saved := rec.turns[l.Ordinal]
	if saved && it.token == l.Token && it.turn.Status != chat.TurnRunning {
		return chat.OutcomeCompleted
	}
	rec.claims[l.Ordinal] = issuedClaim{turnID: c.turnID, token: fenceToken}
	switch {
	case saved && it.token == l.Token:
		it.turn, it.token = it.turn.Lost(lost, now), fenceToken
	case !saved:
		rec.lost[l.TurnID] = l.Terminal(chat.OutcomeIndeterminate)
		record := chat.Turn{
			SessionID: rec.session.ID, TurnID: l.TurnID, Ordinal: l.Ordinal, Status: chat.TurnRunning,
			Lineage: l.Lineage, InputHash: l.InputHash, Artifacts: []chat.ArtifactReference{},
		}
		rec.turns[l.Ordinal] = &turnItem{turn: record.Lost(lost, now), token: fenceToken, hidden: true}
	}
	return chat.OutcomeIndeterminate
}

// decide records the fate of a turn whose lease expired at now without
// a release (chat.Store): its item is fenced and closed (fence), its
// outcome entered in the terminal window, the session's sequence moved to
// the lost turn's terminal sequence (past any it may have emitted after
// it last persisted one) and the lease cleared. A session without an
// expired lease is left as it is. It returns the ledger entry of the
// decided turn (its record's usage; none for a turn lost before its first
// checkpoint), nil when no turn ended.
func (rec *sessionRecord) decide(now time.Time, window int) *chat.LedgerEntry {
	sess := &rec.session
	l := sess.ActiveTurn
	if l == nil || l.ExpiresAt.After(now) {
		return nil
	}
	sess.ActiveTurn = nil
	sess.Revision++
	sess.UpdatedAt = now
	if i := slices.IndexFunc(sess.Queue, func(e chat.QueueEntry) bool { return e.Started == l.Ordinal }); i >= 0 {
		if _, acked := rec.turns[l.Ordinal]; !acked {
			// A queued turn whose claim died before its acknowledgment:
			// it never started, so it waits again; its claim is fenced.
			c := rec.claims[l.Ordinal]
			rec.claims[l.Ordinal] = issuedClaim{turnID: c.turnID, token: fenceToken}
			sess.Queue[i].Started = 0
			return nil
		}
		rec.dequeue(l.TurnID)
	}
	lost := sess.Sequence + chat.SequenceGapAfterCrash
	sess.TerminalTurns = chat.AppendTerminal(sess.TerminalTurns, l.Terminal(rec.fence(l, lost, now)), window)
	sess.Sequence = lost
	e := &chat.LedgerEntry{SessionID: sess.ID, Ordinal: l.Ordinal, Owner: sess.Owner, StartedAt: l.StartedAt, Admission: l.Admission}
	if it := rec.turns[l.Ordinal]; it != nil {
		e.Usage = it.turn.Metered
	}
	return e
}

// decide decides rec's expired lease (sessionRecord.decide) and counts
// the turn it ended. s.mu must be held.
func (s *Store) decide(rec *sessionRecord, now time.Time) {
	s.countDecided(rec.decide(now, s.window))
}

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

// present returns a copy of it as readers see it: a running turn carries
// the expiry of the session's lease it holds (chat.Turn.LeaseExpiresAt).
func (rec *sessionRecord) present(it *turnItem) chat.Turn {
	t := cloneTurn(&it.turn).Presented()
	if l := rec.session.ActiveTurn; t.Status == chat.TurnRunning && l != nil && l.Token == it.token {
		t.LeaseExpiresAt = l.ExpiresAt
	}
	return t
}

// rejection is the error of a claim of turnID with inputHash in the
// session (chat.Rejection on its window, then, when the window is full,
// the turns and crashed turns that left it), nil when the id is new.
func (rec *sessionRecord) rejection(turnID, inputHash string, window int) error {
	sess := &rec.session
	if err := chat.Rejection(sess.TerminalTurns, turnID, inputHash); err != nil || !chat.WindowFull(sess.TerminalTurns, window) {
		return err
	}
	if ord, ok := rec.byID[turnID]; ok {
		if it := rec.turns[ord]; it.token == fenceToken {
			// Decided lost: its outcome is indeterminate, as the window has it.
			return chat.Rejection([]chat.TerminalEntry{{TurnID: turnID, Outcome: chat.OutcomeIndeterminate, InputHash: it.turn.InputHash}}, turnID, inputHash)
		}
		return chat.TurnRejection(&rec.turns[ord].turn, inputHash)
	}
	if e, ok := rec.lost[turnID]; ok {
		return chat.Rejection([]chat.TerminalEntry{e}, turnID, inputHash)
	}
	return nil
}

type issuedClaim struct {
	turnID string
	token  string
}

type turnItem struct {
	turn  chat.Turn
	token string // the lease token of the claim that wrote it
	// hidden marks the record of a turn lost before its first
	// checkpoint: PollTurn returns it, no list or lookup by id does.
	hidden bool
}

// New returns an empty Store. It panics if opts.CursorKey is non-empty and
// shorter than 16 bytes (a configuration error caught at startup).
func New(opts Options) *Store {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	key := slices.Clone(opts.CursorKey)
	switch {
	case len(key) == 0:
		key = make([]byte, 32)
		_, _ = rand.Read(key) // crypto/rand.Read never fails (Go 1.24+).
	case len(key) < 16:
		panic(fmt.Sprintf("memory: cursor key of %d bytes, want at least 16", len(key)))
	}
	return &Store{
		now:      now,
		cursors:  chat.CursorCodec{Key: key},
		window:   chat.WindowSize(opts.TerminalWindow),
		sessions: make(map[string]*sessionRecord),

		ledgerOpts: opts.Ledger,
		ledger:     make(map[ledgerKey]*ledgerRecord),
	}
}

// clock returns the store's now at millisecond precision.
func (s *Store) clock() time.Time { return ms(s.now()) }

// ClaimTurn implements chat.Store. A crashed turn (lease expired while it
// ran) is recorded as indeterminate and its lease cleared even when the
// claim that found it is then rejected (a replay of that very turn id); the
// session's sequence moves up by chat.SequenceGapAfterCrash exactly once.
// ErrInvalidRequest as chat.ClaimRequest.Validate.
func (s *Store) ClaimTurn(ctx context.Context, req chat.ClaimRequest) (*chat.Claim, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := req.Validate(); err != nil {
		return nil, fmt.Errorf("claim turn: %w", err)
	}
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()

	rec, created := s.sessions[req.SessionID], false
	switch {
	case rec == nil:
		rec, created = newSessionRecord(req, now), true
	case !req.Principal.Owns(rec.session.Owner):
		return nil, chat.ErrSessionNotFound
	}
	if req.IfNextOrdinal > 0 && rec.session.NextOrdinal != req.IfNextOrdinal {
		return nil, chat.ErrSessionMoved
	}
	if err := s.takeOver(rec, now); err != nil {
		return nil, rec.busyOrDecided(req, err)
	}
	if err := rec.rejection(req.TurnID, req.InputHash, s.window); err != nil {
		return nil, err
	}
	if err := checkDecision(&rec.session, req, now); err != nil {
		return nil, err
	}
	if !req.AheadOfQueued() && rec.waitingQueued() {
		return nil, chat.ErrSessionQueued
	}
	lease := rec.lease(req, now)
	if created {
		s.sessions[req.SessionID] = rec
	}
	return &chat.Claim{
		Session:      *cloneSession(&rec.session),
		Lease:        lease,
		BaseSequence: rec.session.Sequence,
		Created:      created,
	}, nil
}

// newSessionRecord is the record of the session req creates, owned by
// req.Principal, with the definition req names.
func newSessionRecord(req chat.ClaimRequest, now time.Time) *sessionRecord {
	return &sessionRecord{
		session: chat.Session{
			ID:                 req.SessionID,
			Owner:              chat.Principal{Subject: req.Principal.Subject, Tenant: req.Principal.Tenant},
			DefinitionID:       req.DefinitionID,
			DefinitionRevision: req.DefinitionRevision,
			NextOrdinal:        1,
			CreatedAt:          now,
		},
		claims: make(map[int64]issuedClaim),
		turns:  make(map[int64]*turnItem),
		byID:   make(map[string]int64),
		lost:   make(map[string]chat.TerminalEntry),
		queued: make(map[string]*chat.QueuedTurn),
	}
}

// takeOver decides the session's lease if it expired while its turn ran
// (decide). ErrSessionBusy while the lease is unexpired.
func (s *Store) takeOver(rec *sessionRecord, now time.Time) error {
	s.decide(rec, now)
	if rec.session.ActiveTurn != nil {
		return chat.ErrSessionBusy
	}
	return nil
}

// busyOrDecided explains a claim refused with busy by the session's
// unexpired lease: a replay of the lease's own turn whose record is
// terminal (saved, not released yet) gets that record's decision
// (chat.TurnRejection); one whose holder abandoned the lease
// (AbandonLease) gets ErrTurnIndeterminate (Lease.AbandonedReplay);
// anything else is busy.
func (rec *sessionRecord) busyOrDecided(req chat.ClaimRequest, busy error) error {
	l := rec.session.ActiveTurn
	if l != nil && l.TurnID != req.TurnID && errors.Is(busy, chat.ErrSessionBusy) {
		// A replay of a turn the window already holds gets its decision
		// whoever holds the lease: its id is spent.
		if rejection := chat.Rejection(rec.session.TerminalTurns, req.TurnID, req.InputHash); rejection != nil {
			return rejection
		}
	}
	if l == nil || l.TurnID != req.TurnID {
		return busy
	}
	if it, ok := rec.turns[l.Ordinal]; ok && it.token == l.Token && it.turn.Status != chat.TurnRunning {
		return chat.TurnRejection(&it.turn, req.InputHash)
	}
	if err := l.AbandonedReplay(req.TurnID, req.InputHash); err != nil {
		return err
	}
	return busy
}

// lease takes the session's lease for req (and its decision) at the next
// ordinal, and returns it.
func (rec *sessionRecord) lease(req chat.ClaimRequest, now time.Time) chat.Lease {
	sess := &rec.session
	lease := chat.Lease{
		TurnID:    req.TurnID,
		Token:     rand.Text(),
		ExpiresAt: ms(now.Add(req.LeaseDuration)),
		Ordinal:   sess.NextOrdinal,
		InputHash: req.InputHash,
		Lineage:   req.Lineage,
		StartedAt: ms(req.StartedAt),
		Admission: req.Admission,
	}
	if lease.StartedAt.IsZero() {
		lease.StartedAt = now
	}
	sess.ActiveTurn = &lease
	decide(sess, req)
	sess.NextOrdinal++
	sess.Revision++
	sess.UpdatedAt = now
	rec.claims[lease.Ordinal] = issuedClaim{turnID: lease.TurnID, token: lease.Token}
	return lease
}

// RenewLease implements chat.Store. The claim's token must hold an
// unexpired lease: a lease whose expiry is not after now is ErrLeaseLost
// even when no other turn has claimed the session yet. The stored
// sequence never moves backward.
func (s *Store) RenewLease(ctx context.Context, req chat.RenewRequest) (*chat.Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := req.Validate(); err != nil {
		return nil, fmt.Errorf("renew lease: %w", err)
	}
	c := req.Claim
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.sessions[c.Session.ID]
	if !ok {
		return nil, chat.ErrLeaseLost
	}
	sess := &rec.session
	l := sess.ActiveTurn
	if !holds(l, c.Lease.TurnID, c.Lease.Token, now) || ms(req.ExpiresAt).Before(l.ExpiresAt) {
		return nil, chat.ErrLeaseLost
	}
	l.ExpiresAt = ms(req.ExpiresAt)
	sess.Sequence = max(sess.Sequence, req.Sequence)
	sess.Revision++
	sess.UpdatedAt = now
	return cloneLease(l), nil
}

// RequestStop implements chat.Store. Stopping a turn already asked to stop
// is a no-op.
func (s *Store) RequestStop(ctx context.Context, sessionID, turnID string, p chat.Principal) error {
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
	sess := &rec.session
	l := sess.ActiveTurn
	if l == nil || l.TurnID != turnID || !l.ExpiresAt.After(now) {
		return chat.ErrTurnNotActive
	}
	if !l.Stop {
		l.Stop = true
		sess.Revision++
		sess.UpdatedAt = now
	}
	return nil
}

// AbandonLease implements chat.Store.
func (s *Store) AbandonLease(ctx context.Context, c *chat.Claim) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.sessions[c.Session.ID]
	if !ok || rec.session.ActiveTurn == nil || rec.session.ActiveTurn.Token != c.Lease.Token {
		return fmt.Errorf("abandon the lease of turn %s in session %s: %w", c.Lease.TurnID, c.Session.ID, chat.ErrLeaseLost)
	}
	if l := rec.session.ActiveTurn; !l.Abandoned {
		l.Abandoned = true
		rec.session.Revision++
		rec.session.UpdatedAt = s.clock()
	}
	return nil
}

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

// Supersede implements chat.Store. The token must hold an unexpired lease.
// Only saved turns exist to be marked; a range with fromOrdinal >=
// toOrdinal marks nothing.
func (s *Store) Supersede(ctx context.Context, c *chat.Claim, fromOrdinal, toOrdinal int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if c == nil {
		return fmt.Errorf("supersede: %w", chat.ErrInvalidRequest)
	}
	sessionID, token := c.Session.ID, c.Lease.Token
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.sessions[sessionID]
	if !ok {
		return chat.ErrLeaseLost
	}
	l := rec.session.ActiveTurn
	if l == nil || !holds(l, l.TurnID, token, now) {
		return chat.ErrLeaseLost
	}
	for _, ord := range rec.ordinals {
		if ord >= fromOrdinal && ord < toOrdinal {
			rec.turns[ord].turn.Superseded = true
		}
	}
	return nil
}

// SaveTurn implements chat.Store. Only the claim ClaimTurn issued for
// t.Ordinal may write that turn item, and only while the item is absent
// or running: a fenced claim (its turn decided lost) or a terminal item
// (a second save) is ErrLeaseLost. A save keeps the superseded mark of
// the stored item. Non-nil t.Artifacts are validated (ErrInvalidArtifact) and
// deduplicated as PutArtifacts does. ErrInvalidRequest unless t is the
// claim's turn (chat.Claim.CheckTurn).
func (s *Store) SaveTurn(ctx context.Context, c *chat.Claim, t *chat.Turn) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	artifacts, err := c.CheckSave(t)
	if err != nil {
		return fmt.Errorf("save turn: %w", err)
	}
	token := c.Lease.Token
	item := cloneTurn(t)
	item.Artifacts = artifacts
	item.StartedAt = ms(item.StartedAt)
	item.CompletedAt = ms(item.CompletedAt)

	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.sessions[t.SessionID]
	if !ok {
		return chat.ErrLeaseLost
	}
	if ic, ok := rec.claims[t.Ordinal]; !ok || ic.token != token || ic.turnID != t.TurnID {
		return chat.ErrLeaseLost
	}
	if old, ok := rec.turns[t.Ordinal]; ok {
		if old.token != token || old.turn.Status != chat.TurnRunning {
			return chat.ErrLeaseLost
		}
		if item.Artifacts == nil {
			item.Artifacts = old.turn.Artifacts
		}
		item.Superseded = item.Superseded || old.turn.Superseded
	} else {
		i, _ := slices.BinarySearch(rec.ordinals, t.Ordinal)
		rec.ordinals = slices.Insert(rec.ordinals, i, t.Ordinal)
	}
	if item.Artifacts == nil {
		item.Artifacts = []chat.ArtifactReference{}
	}
	rec.turns[t.Ordinal] = &turnItem{turn: *item, token: token}
	if prev, ok := rec.byID[t.TurnID]; !ok || prev < t.Ordinal {
		rec.byID[t.TurnID] = t.Ordinal
	}
	return nil
}

// ReleaseTurn implements chat.Store. The lease is released when the
// claim's token holds it, expired or not (cleanup may outlast the lease
// while no other turn claimed). A release with the token of the session's
// last release is a no-op, even if another turn has claimed since (a
// retried release whose first attempt succeeded); any other token is
// ErrLeaseLost, so a crashed turn's late release after a takeover is never
// recorded. The terminal window is computed from the claim's, as the
// DynamoDB store does. The stored sequence never moves backward.
func (s *Store) ReleaseTurn(ctx context.Context, req chat.ReleaseRequest) (*chat.Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := req.Validate(); err != nil {
		return nil, fmt.Errorf("release turn: %w", err)
	}
	c := req.Claim
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.sessions[c.Session.ID]
	if !ok {
		return nil, chat.ErrLeaseLost
	}
	sess := &rec.session
	l := sess.ActiveTurn
	switch {
	case l != nil && l.Token == c.Lease.Token && l.TurnID == c.Lease.TurnID:
		sess.TerminalTurns = req.Window(s.window)
		sess.Sequence = max(sess.Sequence, req.Sequence)
		if req.DefinitionRevision > 0 {
			sess.DefinitionRevision = req.DefinitionRevision
		}
		settle(sess, req, now)
		sess.ActiveTurn = nil
		sess.Revision++
		sess.UpdatedAt = now
		rec.releasedToken = c.Lease.Token
		rec.dequeue(c.Lease.TurnID)
		return cloneSession(sess), nil
	case rec.releasedToken != "" && rec.releasedToken == c.Lease.Token:
		return nil, nil
	default:
		return nil, chat.ErrLeaseLost
	}
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

// holds reports whether l is an unexpired lease of turnID under token.
func holds(l *chat.Lease, turnID, token string, now time.Time) bool {
	return l != nil && l.Token == token && l.TurnID == turnID && l.ExpiresAt.After(now)
}

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
