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
	// tombstones keep the last snapshot sequence of deleted sessions, by
	// id: a session created again under the id numbers its snapshots
	// past it (DeleteSession).
	tombstones map[string]int64

	// ledger is the usage ledger (ledger.go), guarded by mu too.
	ledgerOpts chat.LedgerOptions
	ledger     map[ledgerKey]*ledgerRecord

	// attachments records the turn ids that used each attachment, by
	// session id then attachment id (attachments.go), guarded by mu too.
	attachments map[string]map[string]*attachmentUse
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
	// title is the session's title and listed what its releases recorded
	// for its owner's list (conversation.go); nil until one did.
	title  string
	listed *listed
	// forkedFrom names the session and turn this session was forked at
	// (ForkSession), "" for others.
	forkedFrom string
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
		rec.restoreBranch(l.Ordinal)
	}
	return chat.OutcomeIndeterminate
}

// restoreBranch brings back the turns the supersession of the turn at
// ordinal took off the active branch, for a turn lost before its first
// checkpoint: no version of it exists to take their place
// (docs/branches.md). The group the first of them kept loses that turn.
func (rec *sessionRecord) restoreBranch(ordinal int64) {
	for _, o := range rec.ordinals {
		it := rec.turns[o]
		if it.hiddenBy != ordinal || o >= ordinal {
			continue
		}
		it.turn.Superseded, it.hiddenBy = false, 0
		if g := it.turn.Siblings; g != nil && it.branchHead == o {
			g.Members = slices.DeleteFunc(g.Members, func(m chat.Sibling) bool { return m.Ordinal == ordinal })
			if len(g.Members) < 2 {
				it.turn.Siblings = nil
			}
		}
	}
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
	// branchHead is, on a turn off the active branch, the ordinal of the
	// first turn of the branch it left with; branchEnd, on that first
	// turn, the last ordinal that left with it; hiddenBy the ordinal of
	// the turn whose supersession took it off (docs/branches.md).
	branchHead, branchEnd, hiddenBy int64
}

// visible reports whether it is on the session's active branch.
func (it *turnItem) visible() bool { return !it.turn.Superseded && !it.hidden }

// group is the sibling group of it's turn: its first member's ordinal,
// the turn's own when it has no siblings.
func (it *turnItem) group() int64 {
	if g := it.turn.Siblings; g != nil {
		return g.Group
	}
	return it.turn.Ordinal
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
		rec.session.Sequence = s.tombstones[req.SessionID]
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
		// Listed from its first claim, as the dynamo store lists it.
		rec.listed = &listed{activeAt: now.Truncate(time.Millisecond)}
		s.sessions[req.SessionID] = rec
		delete(s.tombstones, req.SessionID)
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

// Supersede implements chat.Store. The token must hold an unexpired lease.
// Only saved turns exist to be marked; a range with fromOrdinal >=
// toOrdinal marks nothing.
func (s *Store) Supersede(ctx context.Context, c *chat.Claim, fromOrdinal, toOrdinal int64) (*chat.Siblings, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if c == nil {
		return nil, fmt.Errorf("supersede: %w", chat.ErrInvalidRequest)
	}
	sessionID, token := c.Session.ID, c.Lease.Token
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.sessions[sessionID]
	if !ok {
		return nil, chat.ErrLeaseLost
	}
	l := rec.session.ActiveTurn
	if l == nil || !holds(l, l.TurnID, token, now) {
		return nil, chat.ErrLeaseLost
	}
	var hide []int64
	for _, ord := range rec.ordinals {
		if ord >= fromOrdinal && ord < toOrdinal && rec.turns[ord].visible() {
			hide = append(hide, ord)
		}
	}
	if len(hide) == 0 {
		return nil, nil
	}
	first := rec.turns[hide[0]]
	if p, ok := rec.turns[fromOrdinal]; hide[0] != fromOrdinal && (!ok || p.group() != first.group()) {
		return nil, chat.ErrLineageStale
	}
	g, err := chat.Joined(&first.turn, chat.Sibling{Ordinal: c.Lease.Ordinal, TurnID: c.Lease.TurnID})
	if err != nil {
		return nil, err
	}
	rec.leaveBranch(hide, g)
	for _, o := range hide {
		rec.turns[o].hiddenBy = c.Lease.Ordinal
	}
	return g.Clone(), nil
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
		rec.list(req.Listing, now)
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

// holds reports whether l is an unexpired lease of turnID under token.
func holds(l *chat.Lease, turnID, token string, now time.Time) bool {
	return l != nil && l.Token == token && l.TurnID == turnID && l.ExpiresAt.After(now)
}
