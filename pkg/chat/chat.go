package chat

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/turnstream/turnstream/pkg/protocol"
)

// Principal is who is calling, as established by pkg/auth from headers only
// (docs/design.md#authentication-and-tenancy). Client-supplied fields never become a Principal. Two
// principals are the same owner when Subject and Tenant are both equal.
type Principal struct {
	Subject string
	Tenant  string
	// Trusted marks the configured host principal, bound to both its
	// Subject and its Tenant, that may write the artifact references of
	// the sessions of its own Tenant (TrustedFor; docs/design.md#history-and-artifacts-api). It is
	// never stored.
	Trusted bool
}

// Owns reports whether p is the owner recorded as owner (Subject and Tenant).
func (p Principal) Owns(owner Principal) bool {
	return p.Subject == owner.Subject && p.Tenant == owner.Tenant
}

// TrustedFor reports whether p may write, as the trusted principal, the
// artifact references of a session owned by owner: p is Trusted and of
// owner's Tenant. A trusted principal never crosses tenants; to it a
// session of another tenant does not exist (ErrSessionNotFound).
func (p Principal) TrustedFor(owner Principal) bool {
	return p.Trusted && p.Tenant == owner.Tenant
}

// TurnStatus is the stored status of a turn.
type TurnStatus string

// Turn statuses. A turn is TurnRunning from its claim until its save; the
// other three are terminal. TurnInterrupted is a turn ended by the stop
// route (docs/design.md#the-turn-pipeline).
const (
	TurnRunning     TurnStatus = "running"
	TurnComplete    TurnStatus = "complete"
	TurnError       TurnStatus = "error"
	TurnInterrupted TurnStatus = "interrupted"
)

// TerminalOutcome is how a released turn ended, as kept in the terminal
// window (docs/protocol.md#the-session-envelope, docs/decisions.md D-0012).
type TerminalOutcome string

// Outcomes. OutcomeIndeterminate means the turn's save failed or its
// outcome is unknown (a crashed turn whose lease expired).
const (
	OutcomeCompleted     TerminalOutcome = "completed"
	OutcomeIndeterminate TerminalOutcome = "indeterminate"
)

// SequenceGapAfterCrash is added to a session's stored sequence when a
// store decides the fate of a turn whose lease expired while it ran (see
// Store): that turn may have emitted snapshots after its last lease
// renewal persisted its sequence, and no two lines of a session may carry
// one sequence (docs/decisions.md D-0010). The lost turn's record takes
// the stored sequence plus the gap as its terminal sequence (the line a
// resume of it ends with), and the next turn starts after it. It exceeds
// the snapshots a turn can emit in its lifetime.
const SequenceGapAfterCrash int64 = 1_000_000

// Terminal window sizes. A session remembers its newest terminal turns
// for replay protection (docs/protocol.md#the-session-envelope, docs/decisions.md D-0012);
// how many is a store's choice, at most TerminalWindowSize (the session
// envelope's limit on terminalTurns). The window is the fast path, not
// the limit: a turn id identifies one turn of its session forever, and a
// claim whose full window does not hold the id looks it up among the
// session's turns. DefaultTerminalWindow is the stores' default: small
// enough that the session item, which every claim and release rewrites,
// stays under 1 KB (one write unit) with UUID turn ids and owners of up to
// a few hundred bytes (docs/design.md, Storage).
const (
	TerminalWindowSize    = protocol.MaxTerminalTurns
	DefaultTerminalWindow = 4
)

// WindowSize returns the terminal window size a store keeps for the
// configured n: DefaultTerminalWindow when n is 0, else n clamped to
// 1..TerminalWindowSize.
func WindowSize(n int) int {
	if n == 0 {
		return DefaultTerminalWindow
	}
	return min(max(n, 1), TerminalWindowSize)
}

// TerminalEntry is one entry of a session's terminal window.
type TerminalEntry struct {
	TurnID    string
	Outcome   TerminalOutcome
	InputHash string // see HashInput
}

// Lease is a session's active-turn lease (docs/design.md#the-turn-pipeline). ExpiresAt is compared
// in code, never left to DynamoDB TTL.
type Lease struct {
	TurnID    string
	Token     string    // random, opaque; every lease write is conditional on it
	ExpiresAt time.Time // millisecond precision (stored as epoch ms)
	Stop      bool      // set by the stop route; the turn ends as interrupted
	// Abandoned is set by the lease's own holder (Store.AbandonLease) when
	// it no longer knows its turn's outcome and writes nothing more: a
	// replay of the turn id is then told ErrTurnIndeterminate, as its
	// client was, until the table decides the turn.
	Abandoned bool
	Ordinal   int64 // the ordinal of the turn holding the lease
	InputHash string
	Lineage   protocol.Lineage
	// StartedAt is the claim's ClaimRequest.StartedAt (millisecond
	// precision): the turn's periods in the usage ledger, whoever counts
	// it.
	StartedAt time.Time
	// Admission is the claim's ClaimRequest.Admission: the admission the
	// turn's ledger entry releases.
	Admission string
}

// AbandonedReplay is the answer to a claim or enqueue of turnID (with
// input hash inputHash) that meets the unexpired lease l while the turn's
// record is not terminal: ErrTurnIndeterminate once l's holder abandoned
// it (Store.AbandonLease), ErrTurnIDReused when the input differs; nil when
// l is another turn's or was not abandoned (the session is busy).
func (l *Lease) AbandonedReplay(turnID, inputHash string) error {
	switch {
	case l == nil || !l.Abandoned || l.TurnID != turnID:
		return nil
	case inputHash != "" && l.InputHash != "" && inputHash != l.InputHash:
		return ErrTurnIDReused
	default:
		return ErrTurnIndeterminate
	}
}

// Session is a session item: owner, the session envelope fields
// (docs/protocol.md#the-session-envelope) and the lease (docs/design.md#storage-one-dynamodb-table).
type Session struct {
	ID                 string
	Owner              Principal
	DefinitionID       string
	DefinitionRevision int64
	// Sequence is the last snapshot sequence the session issued (>= 0).
	Sequence int64
	// ActiveTurn is the current lease, nil when idle. A lease whose
	// ExpiresAt is not after now has expired and no longer protects the
	// session.
	ActiveTurn *Lease
	// TerminalTurns is the terminal window, oldest first, at most the
	// store's window size (<= TerminalWindowSize) entries with unique turn
	// ids.
	TerminalTurns []TerminalEntry
	// Confirmations are the session's tool call confirmations, oldest
	// first: at most MaxPendingConfirmations pending ones and
	// KeptConfirmations others (see ReleaseConfirmations).
	Confirmations []Confirmation
	// Queue lists the session's queued turns (docs/multitask.md), those
	// that wait and the one started from it while it runs, in queue order.
	Queue []QueueEntry
	// NextOrdinal is the ordinal the next claimed turn receives (starts at 1).
	NextOrdinal int64
	// Revision increases with every write to the session item; writes that
	// are not lease-scoped are compare-and-set on it.
	Revision  int64
	CreatedAt time.Time
	UpdatedAt time.Time
}

// ArtifactType is one of the five workspace artifact kinds (docs/design.md#history-and-artifacts-api).
type ArtifactType string

// Artifact types (docs/design.md#history-and-artifacts-api; agent UI protocol 0.7).
const (
	ArtifactDocument     ArtifactType = "document"
	ArtifactWebpage      ArtifactType = "webpage"
	ArtifactPresentation ArtifactType = "presentation"
	ArtifactSpreadsheet  ArtifactType = "spreadsheet"
	ArtifactImage        ArtifactType = "image"
)

// ArtifactReference names a workspace file a turn produced: a relative
// entry path kept exactly as given and its type (docs/design.md#history-and-artifacts-api). Identity is
// (session, turn, EntryPath).
type ArtifactReference struct {
	EntryPath    string       `json:"entryPath"`
	ArtifactType ArtifactType `json:"artifactType"`
}

// Turn is a turn item (docs/design.md#storage-one-dynamodb-table).
type Turn struct {
	SessionID string
	TurnID    string
	// Ordinal is the turn's position in its session, from 1, assigned at claim.
	Ordinal int64
	Status  TurnStatus
	// Lineage is the turn's relation to an earlier turn; Operation is
	// protocol.OperationSubmit for a plain turn.
	Lineage   protocol.Lineage
	InputHash string
	// Messages are the turn's canonical messages (the user message first).
	Messages []protocol.Message
	Usage    protocol.Usage
	// Metered is the turn's account (Usage: tokens, model and tool
	// calls, DynamoDB requests and units), what the usage ledger counts
	// for it (docs/quotas.md): as of its save, or of its last checkpoint
	// for a turn decided lost.
	Metered Usage
	// Error is the turn's diagnostic when Status is TurnError or
	// TurnInterrupted; nil otherwise.
	Error     *protocol.Diagnostic
	Artifacts []ArtifactReference
	// Superseded is true once an edit, retry or regenerate replaced this turn
	// (docs/design.md#storage-one-dynamodb-table). Superseded turns are never listed nor loaded as context.
	Superseded bool
	// FirstSequence and LastSequence are the snapshot sequences the turn
	// emitted (inclusive); LastSequence is 0 when it emitted none.
	FirstSequence int64
	LastSequence  int64
	StartedAt     time.Time
	CompletedAt   time.Time
	// LeaseExpiresAt is set on a running turn only: the expiry of the
	// session's lease held by the turn, read from the session item (the
	// one authority on whether a turn may still be running) when the turn
	// was read. A running turn whose lease has expired is still running
	// until a store decides its fate (see Store): readers show it running
	// with this expiry, never as lost.
	LeaseExpiresAt time.Time
	// Head is, on a running turn, the sequence of the checkpoint whose
	// messages it carries (at most LastSequence, which heartbeats move):
	// PollTurn given this turn reads only checkpoints newer than Head.
	// Zero otherwise.
	Head int64
}

// Checkpoint is the state of a running turn as one of its snapshots
// carried it: what a resumer, a reloaded page or crash recovery rebuilds
// the turn from. A turn's first checkpoint (Prior nil) is its
// acknowledgment: it is written before the turn's stream starts, so a
// turn a client has seen start is always recorded (docs/durable-turns.md).
type Checkpoint struct {
	SessionID string
	TurnID    string
	Ordinal   int64
	Lineage   protocol.Lineage
	InputHash string
	// Messages are the turn's own messages (the user message first) with
	// the same ids, parts and content as the snapshot of Sequence.
	Messages []protocol.Message
	Usage    protocol.Usage
	// Metered is the turn's account so far (Turn.Metered).
	Metered Usage
	// FirstSequence is the turn's first snapshot sequence; Sequence the
	// snapshot whose state this is (>= FirstSequence).
	FirstSequence int64
	Sequence      int64
	// Prior holds the messages of the last checkpoint of this turn that
	// landed and changed its messages (nil for the first checkpoint), and
	// PriorSequence that checkpoint's sequence: stores write only what
	// changed since. Messages equal to Prior make a heartbeat (the stop
	// flag read, the fence checked), which changes no messages. A
	// checkpoint that failed, or whose outcome the caller does not know,
	// is superseded by the next one, which names the same prior.
	Prior         []protocol.Message
	PriorSequence int64
	StartedAt     time.Time
}

// Order is a listing direction.
type Order string

// Orders of ListTurns.
const (
	OrderAsc  Order = "asc"
	OrderDesc Order = "desc"
)

// Page limits of ListTurns (docs/design.md#history-and-artifacts-api).
const (
	DefaultPageLimit = 20
	MaxPageLimit     = 100
)

// ClaimRequest asks for the session's active-turn lease (docs/design.md#the-turn-pipeline).
type ClaimRequest struct {
	SessionID string
	TurnID    string
	Principal Principal
	InputHash string
	Lineage   protocol.Lineage
	// DefinitionID and DefinitionRevision are recorded when the claim
	// creates the session; an existing session keeps its stored definition
	// (docs/design.md#models-tools-definitions: a session keeps its definition id), which the returned
	// Claim.Session carries, so the caller resolves the definition after the
	// claim without another request. The revision a turn actually ran with
	// is recorded by ReleaseRequest.DefinitionRevision.
	DefinitionID       string
	DefinitionRevision int64
	// LeaseDuration is how long the lease lasts from the store's now.
	LeaseDuration time.Duration
	// Decision, when set, makes this a decision turn: the same conditional
	// write that takes the lease moves the confirmation with
	// Decision.Token from pending to approving or rejecting (DecidedBy
	// TurnID). It is rejected, changing nothing, with
	// ErrConfirmationNotFound, ErrConfirmationDecided or
	// ErrConfirmationExpired (CheckDecision), after the owner, busy and
	// turn id checks.
	Decision *Decision
	// AheadOfQueue lets the claim take a free lease while queued turns
	// wait (an interrupt or rollback replaces the running turn, and the
	// queue waits for its replacement, docs/multitask.md). Without it, or
	// a Decision (which always goes first), a free session whose queued
	// turns wait is ErrSessionQueued.
	AheadOfQueue bool
	// StartedAt is when the turn starts (the caller's clock, just before
	// the claim), kept with the lease (Lease.StartedAt) so that whoever
	// counts the turn in the usage ledger counts it in the same day and
	// month; zero means the store's now.
	StartedAt time.Time
	// Admission is the turn's admission under rate and concurrency quotas
	// (Store.Admit), kept with the lease (Lease.Admission); empty when
	// none.
	Admission string
	// IfNextOrdinal, when > 0, makes the claim conditional on the
	// session's NextOrdinal still being this value (1 for a session that
	// does not exist yet): no turn claimed since the caller read the
	// session. An interrupt or rollback claims with the NextOrdinal of the
	// read that found the turn it stopped, so that it never runs after,
	// nor supersedes, a turn it did not stop (docs/multitask.md). The
	// condition is part of the claim's conditional write and is judged
	// right after the owner check, before the lease: a session that moved
	// on is ErrSessionMoved (changing nothing) whether or not a lease is
	// held. A claim whose write applied recognises itself on retry before
	// the condition is judged. 0: no condition.
	IfNextOrdinal int64
}

// AheadOfQueued reports whether the claim may start before the session's
// waiting queued turns: a decision, or AheadOfQueue.
func (r ClaimRequest) AheadOfQueued() bool { return r.AheadOfQueue || r.Decision != nil }

// Claim is a successful claim: the session as written and the lease.
type Claim struct {
	Session Session
	Lease   Lease
	// BaseSequence is the session's last sequence as the claim found it
	// (moved past a crashed turn's): the turn numbers its snapshots
	// BaseSequence+1, BaseSequence+2, ... and releases with the last one.
	BaseSequence int64
	// Created is true when this claim created the session.
	Created bool
}

// RenewRequest extends a held lease.
type RenewRequest struct {
	// Claim is what ClaimTurn returned for the lease; the store keeps no
	// per-lease state of its own, so every lease call passes it.
	Claim *Claim
	// ExpiresAt is the new expiry (millisecond precision).
	ExpiresAt time.Time
	// Sequence is the last snapshot sequence the turn emitted so far,
	// persisted so that a crashed turn's successor never reuses a sequence.
	Sequence int64
}

// ReleaseRequest ends a held lease.
type ReleaseRequest struct {
	// Claim is what ClaimTurn returned for the lease.
	Claim   *Claim
	Outcome TerminalOutcome
	// Sequence is the last sequence the turn emitted: the session's new
	// last sequence (Session.Sequence).
	Sequence int64
	// DefinitionRevision, when > 0, is recorded as the session's definition
	// revision: the revision of its definition this turn ran with (a bumped
	// revision applies to new turns). 0 keeps the stored one.
	DefinitionRevision int64
	// Confirmations are the turn's tool calls that wait for approval, to
	// record as pending (CheckNewConfirmations). The release also settles
	// the confirmation its claim decided and expires any other pending one
	// (ReleaseConfirmations), in the same write.
	Confirmations []Confirmation
	// Undecide returns the confirmation the claim decided to pending
	// instead of settling it: the turn ended before it acted on the
	// decision (it failed before its stream), so a new decision may
	// claim it.
	Undecide bool
}

// Validate reports ErrInvalidRequest unless r names a session and a turn
// id and asks for a positive lease duration.
func (r ClaimRequest) Validate() error {
	if r.SessionID == "" || r.TurnID == "" || r.LeaseDuration <= 0 {
		return fmt.Errorf("%w: a claim needs a session id, a turn id and a positive lease duration", ErrInvalidRequest)
	}
	if r.IfNextOrdinal < 0 {
		return fmt.Errorf("%w: a claim's expected next ordinal is negative", ErrInvalidRequest)
	}
	return nil
}

// Validate reports ErrInvalidRequest unless r names a claim a store
// returned.
func (r RenewRequest) Validate() error { return r.Claim.validate() }

// Validate reports ErrInvalidRequest unless r names a claim and a known
// outcome.
func (r ReleaseRequest) Validate() error {
	if err := r.Claim.validate(); err != nil {
		return err
	}
	if r.Outcome != OutcomeCompleted && r.Outcome != OutcomeIndeterminate {
		return fmt.Errorf("%w: unknown outcome", ErrInvalidRequest)
	}
	return CheckNewConfirmations(r.Confirmations, r.Claim.Lease.TurnID)
}

// validate reports ErrInvalidRequest unless c is a claim a store returned.
func (c *Claim) validate() error {
	if c == nil || c.Session.ID == "" || c.Lease.TurnID == "" || c.Lease.Token == "" || c.Lease.Ordinal < 1 {
		return fmt.Errorf("%w: no claim", ErrInvalidRequest)
	}
	return nil
}

// CheckTurn reports ErrInvalidRequest unless t is the turn item of claim c
// (same session, turn id and ordinal) with a known status: a claim may
// write only the turn item of the ordinal it was given.
func (c *Claim) CheckTurn(t *Turn) error {
	if err := c.validate(); err != nil {
		return err
	}
	if t == nil || t.SessionID != c.Session.ID || t.TurnID != c.Lease.TurnID || t.Ordinal != c.Lease.Ordinal {
		return fmt.Errorf("%w: the turn is not the claimed one", ErrInvalidRequest)
	}
	switch t.Status {
	case TurnRunning, TurnComplete, TurnError, TurnInterrupted:
		return nil
	}
	return fmt.Errorf("%w: unknown turn status", ErrInvalidRequest)
}

// CheckSave is CheckTurn for a save of t, which also returns t's artifact
// references as stored (StoredArtifacts), or nil when t carries none (the
// references already recorded for the turn are then kept).
func (c *Claim) CheckSave(t *Turn) ([]ArtifactReference, error) {
	if err := c.CheckTurn(t); err != nil {
		return nil, err
	}
	if t.Artifacts == nil {
		return nil, nil
	}
	return StoredArtifacts(t.Artifacts)
}

// ListRequest asks for one page of a session's visible turns.
type ListRequest struct {
	SessionID string
	Principal Principal
	Order     Order  // OrderAsc or OrderDesc; empty means OrderDesc
	Limit     int    // 1..MaxPageLimit; 0 means DefaultPageLimit
	Cursor    string // opaque page cursor; empty for the first page
}

// Normalized returns r with its defaults applied (Order OrderDesc, Limit
// DefaultPageLimit), or ErrInvalidRequest for another order or a limit
// outside 1..MaxPageLimit. The cursor is checked by the store (it knows
// the key).
func (r ListRequest) Normalized() (ListRequest, error) {
	if r.Order == "" {
		r.Order = OrderDesc
	}
	if r.Order != OrderAsc && r.Order != OrderDesc {
		return r, fmt.Errorf("%w: order must be asc or desc", ErrInvalidRequest)
	}
	if r.Limit == 0 {
		r.Limit = DefaultPageLimit
	}
	if r.Limit < 1 || r.Limit > MaxPageLimit {
		return r, fmt.Errorf("%w: limit must be in 1..%d", ErrInvalidRequest, MaxPageLimit)
	}
	return r, nil
}

// Page is one page of a session's visible turns (ListTurns). NextCursor
// is empty when HasMore is false.
type Page struct {
	Turns      []Turn
	NextCursor string
	HasMore    bool
}

// Store holds sessions, leases, turns and artifact references. Every
// write is conditional. Implementations: pkg/store/dynamo and
// pkg/store/memory, both proven by pkg/store/storetest. All methods are
// safe for concurrent use. "Now" below is the store's injected clock.
//
// A store keeps no per-lease state in process: the calls of a lease take
// the Claim that ClaimTurn returned, so any process (or Lambda instance)
// can renew, save or release it alike. Every write recognises its own
// effect: a write that applied but whose answer was lost (and that the
// SDK then retried, or that timed out) is resolved with one consistent
// read before the call returns, so the caller is never told that an
// applied write failed.
//
// A turn's fate is data, decided once by conditional writes
// (docs/durable-turns.md). Its turn item is absent until its first
// checkpoint (written before its stream starts), then running, then
// terminal: complete, interrupted or error, TURN_LOST among the errors. No
// write changes a terminal turn item but artifact references and the
// superseded mark. The session's lease is the one authority on whether a
// turn may still run. A turn whose lease expired without a save stays
// running until a store decides it: a conditional write that applies only
// while the session still holds that turn's expired lease replaces the
// lease by a fence, so that no renewal, checkpoint or save of the dead
// turn can land afterwards; then the turn item is closed as TURN_LOST
// with its last checkpoint (unless its save landed first: then that is
// its fate) and the session freed. Whoever meets an expired lease first
// decides it: ClaimTurn, GetSession, ListTurns, FindTurn and PollTurn all
// do, so a turn's fate is recorded within one read after its lease
// expires. Until then, or when the deciding write cannot be made, readers
// show the turn running with its lease expiry, never lost.
//
// A store whose ledger is enabled (LedgerOptions.Enabled) counts every
// turn it decides in the usage ledger (RecordUsage, from the turn's
// record: its Metered usage; a turn lost before its first checkpoint
// counts as one turn that used nothing) before it frees the session, so
// that a session's turns are counted in ordinal order whoever ends them.
// A queued turn whose claim died before its acknowledgment waits again
// and is not counted; nor is a queued turn that never ran.
type Store interface {
	// ClaimTurn takes the session's lease for req.TurnID, creating the
	// session owned by req.Principal on first use. It returns
	// ErrSessionNotFound if another principal owns the session,
	// ErrSessionMoved if req.IfNextOrdinal is set and the session's next
	// ordinal is another, ErrSessionBusy if an unexpired lease is held (by
	// another turn id, or by this turn id while its record is not
	// terminal), ErrTurnCompleted / ErrTurnIndeterminate if the session
	// already has a turn with that id and the same input hash, and
	// ErrTurnIDReused if it has one with another input hash; a turn saved
	// while its lease still holds (its release not written yet, or left to
	// the lease's expiry) is such a turn (one more request, only for a
	// replay of the lease's turn id). A turn id
	// identifies one turn of its session forever: the terminal window is
	// the fast path, and a claim whose window is full and does not hold the
	// id looks the id up among the session's turns (one more request).
	//
	// A lease that expired while its turn was running is decided first
	// (see Store): the crashed turn is fenced (a late renewal, checkpoint
	// or save with its claim is then ErrLeaseLost), closed as TURN_LOST
	// unless its save landed, and recorded in the terminal window as
	// indeterminate (completed if its save had landed); then a claim by
	// another turn id goes on, with BaseSequence past the crashed turn's
	// terminal sequence (SequenceGapAfterCrash). The new turn gets Ordinal
	// NextOrdinal. A session whose lease is free but whose queued turns
	// wait is ErrSessionQueued (ErrSessionBusy) to a claim that decides no
	// confirmation: those turns start first (ClaimQueued). Happy path: 1
	// request (2 once the window is full); a rejected claim: at most 3; a
	// takeover from a crashed turn: at most 7.
	ClaimTurn(ctx context.Context, req ClaimRequest) (*Claim, error)

	// EnqueueTurn stores req as a queued turn of its session
	// (docs/multitask.md): an entry in the session's queue and the turn's
	// user message, to run after the turns queued before it once the
	// session is free. It returns the entry, its position among the
	// waiting turns and whether the session was idle (Enqueued). An
	// enqueue of a turn id already queued with the same input returns that
	// entry: it queues nothing twice. ErrTurnIDReused for another input;
	// the replay errors of ClaimTurn for a turn id already used;
	// ErrQueueFull when req.Max turns wait; ErrSessionNotFound when the
	// session does not exist or p does not own it. At most 3 requests.
	EnqueueTurn(ctx context.Context, req EnqueueRequest) (*Enqueued, error)

	// ClaimQueued takes the session's lease for its oldest waiting queued
	// turn, when the lease is free (an expired one is decided first) and
	// no confirmation waits for a decision: the turn gets the session's
	// next ordinal, as any claim. Waiting turns past their expiry are
	// recorded on the way as turns that never ran (TURN_QUEUE_EXPIRED). It
	// returns the claim and the queued turn, ErrSessionBusy when the
	// session is not free, ErrNothingQueued when no turn waits. Cancelled
	// turns are recorded on the way too (CancelQueued). Exactly one
	// caller starts each queued turn; a claim that dies before its turn is
	// acknowledged leaves the turn waiting again once the lease is decided.
	ClaimQueued(ctx context.Context, sessionID string, leaseDuration time.Duration) (*Claim, *QueuedTurn, error)

	// CancelQueued takes a waiting queued turn out of the queue and
	// records it as a turn that never ran (TURN_CANCELLED): at once when
	// the session is free, else when it is next (ClaimQueued), since a
	// session's terminal window changes only while no lease is held; a
	// replay of its id is ErrTurnCompleted from now on. ErrSessionNotFound
	// as GetSession; ErrTurnNotActive when turnID does not wait in the
	// queue.
	CancelQueued(ctx context.Context, sessionID, turnID string, p Principal) error

	// QueuedTurns returns the session's waiting queued turns in queue
	// order, with their user messages. ErrSessionNotFound as GetSession.
	// 1 request, 1 more when turns wait.
	QueuedTurns(ctx context.Context, sessionID string, p Principal) ([]QueuedTurn, error)

	// RenewLease extends the lease of req.Claim to req.ExpiresAt and
	// records req.Sequence, returning the lease as stored (with its stop
	// flag). It returns ErrLeaseLost if the claim's token no longer holds
	// an unexpired lease. A lease's expiry never moves back: a renewal
	// asking for an earlier expiry than the stored one (an older renewal
	// delivered late) is ErrLeaseLost and changes nothing. 1 request.
	RenewLease(ctx context.Context, req RenewRequest) (*Lease, error)

	// RequestStop sets the stop flag on the lease of turnID; nil once that
	// flag is written (an unknown outcome is resolved by one consistent
	// read), whatever becomes of any copy of it a store keeps. It returns
	// ErrSessionNotFound if the session does not exist or p does not own it,
	// and ErrTurnNotActive if turnID does not hold an unexpired lease (a
	// fenced lease included).
	RequestStop(ctx context.Context, sessionID, turnID string, p Principal) error

	// AbandonLease marks the lease of claim c as given up by its holder:
	// the turn's save went unconfirmed, so its client is told
	// TURN_OUTCOME_INDETERMINATE and the lease is left to expire for the
	// table to decide the turn. Until then a claim or enqueue replaying the
	// lease's turn id with the same input gets ErrTurnIndeterminate instead
	// of ErrSessionBusy (a record already terminal still gives its
	// decision). Idempotent; ErrLeaseLost if c's token no longer holds an
	// unfenced lease. 1 request.
	AbandonLease(ctx context.Context, c *Claim) error

	// LoadContext returns the newest maxTurns (>= 1) visible (not
	// superseded), terminal turns of the session with ordinal below
	// beforeOrdinal, oldest first, and whether older ones exist that it
	// left out. It performs no owner check: it is called only after a
	// successful claim. It reads only what it returns: 1 request, whatever
	// the session's length (one more per 1 MB of those turns).
	LoadContext(ctx context.Context, sessionID string, beforeOrdinal int64, maxTurns int) (turns []Turn, omitted bool, err error)

	// Supersede marks every visible turn of the claim's session with
	// ordinal in [fromOrdinal, toOrdinal) as superseded (edit, retry,
	// regenerate). It requires the claim's unexpired lease and
	// is idempotent. Returns ErrLeaseLost if the token does not hold it.
	Supersede(ctx context.Context, c *Claim, fromOrdinal, toOrdinal int64) error

	// SaveTurn writes the turn item of claim c: t must be that claim's turn
	// (session, turn id and ordinal; ErrInvalidRequest otherwise). The
	// write is conditional on the item: it creates it, or replaces the
	// running item the claim's checkpoints wrote; a retry of this very save
	// recognises itself. An item fenced by a store that decided the turn
	// lost, or already terminal, is ErrLeaseLost: the turn's fate was
	// decided before this save. Artifacts already
	// recorded for the turn are kept when t.Artifacts is nil. It never
	// truncates: a turn larger than one item is split or compressed. The
	// owner is stored on the turn item so that history reads need no
	// session read. Happy path: 1 request. A turn is visible to FindTurn,
	// ListTurns and PutArtifacts from its first checkpoint (or its save).
	SaveTurn(ctx context.Context, c *Claim, t *Turn) error

	// ReleaseTurn clears the lease of req.Claim, writes the terminal
	// window of req.Window (this turn's outcome appended to the claim's
	// window, which cannot change while the lease is held, keeping the
	// store's window size) and the final sequence, and takes a queued turn
	// that ran out of the queue. Releasing a turn that
	// is already released with the same claim is a no-op (nil); a stale
	// claim of a lease now held by another turn is ErrLeaseLost. It
	// returns the session as the release left it (nil when a retried
	// release found it released already), so that the caller learns,
	// without another request, whether queued turns wait. 1 request.
	ReleaseTurn(ctx context.Context, req ReleaseRequest) (*Session, error)

	// Checkpoint persists the running turn's state under claim c, as the
	// snapshot of cp.Sequence carried it (see Checkpoint). The first
	// checkpoint (cp.Prior nil) writes the turn item with status
	// TurnRunning (history and FindTurn then show it; 1 request); later
	// ones write only what changed since cp.Prior, so the cost grows with
	// the turn's duration, not its length. A checkpoint that failed or
	// whose outcome is unknown is superseded by the next one: nothing it
	// may have written blocks a later checkpoint, and readers never see a
	// state that mixes the two. Every checkpoint is fenced: ErrLeaseLost
	// once a store decided the turn (or it was saved), or if c never held
	// it. It reports whether a stop was requested (RequestStop), so a stop
	// is seen at the next checkpoint, also one that fails: stop may be
	// true with an error other than ErrLeaseLost (the checkpoint was not
	// written, but the lease carries the stop; one more read). ErrInvalidRequest unless cp is the
	// claim's turn. A heartbeat (messages equal to Prior) costs one small
	// write; a change two. A checkpoint that lands after the final save (a
	// late retry) changes nothing a reader sees.
	Checkpoint(ctx context.Context, c *Claim, cp *Checkpoint) (stop bool, err error)

	// WithdrawClaim undoes claim c after its acknowledgment (its first
	// Checkpoint) failed, so that its turn id stays unspent and a retry of
	// the submission runs the turn: conditional on the claim's turn item
	// being absent, a hidden record is written at the claim's ordinal
	// (no reader lists it, no late acknowledgment can land over it, its
	// ordinal is not reused), then the lease is removed without entering
	// the turn in the terminal window. Once that record is written the id
	// is unspent whatever becomes of the lease's removal: a store that
	// decides the lease when it expires frees the session without
	// recording the turn. It returns acknowledged true, and changes
	// nothing, when the turn item exists under the claim's token: the
	// acknowledgment applied without an answer, and the turn exists (it
	// may go on as acknowledged). ErrLeaseLost when the claim no longer
	// holds its ordinal (decided meanwhile). Another error leaves the
	// outcome unknown: the lease is then left to expire, and the decision
	// records the turn or not as the table holds it. Only for a claim that
	// decided no confirmation, superseded nothing and started no queued
	// turn. 2 requests (+1 read per unknown outcome).
	WithdrawClaim(ctx context.Context, c *Claim) (acknowledged bool, err error)

	// PollTurn returns the turn at ordinal as stored now, for a resumer
	// that found it with FindTurn (or the turn's own process): a running
	// turn with its latest checkpoint merged (Status TurnRunning,
	// LastSequence the checkpoint's sequence, LeaseExpiresAt its lease's),
	// or the terminal turn; a turn whose lease expired is decided first
	// (see Store). since, when not nil, is an earlier PollTurn result for
	// the same turn: only what changed after it is read, so a poll's cost
	// does not grow with the turn. A turn lost before its first checkpoint
	// is returned as its record (TURN_LOST, no messages) although no other
	// reader lists it. ErrSessionNotFound if p does not own the session,
	// ErrTurnNotFound if no turn is stored there. While the turn runs: at
	// most 2 requests, each reading only the session, the live state and
	// the newer checkpoints.
	PollTurn(ctx context.Context, sessionID string, ordinal int64, p Principal, since *Turn) (*Turn, error)

	// GetSession returns the session, its expired lease decided first (see
	// Store): ActiveTurn is then nil, or the lease as stored when the
	// deciding write could not be made. ErrSessionNotFound if it does not
	// exist or p does not own it (never a hint which). 1 request, more
	// only to decide an expired lease.
	GetSession(ctx context.Context, sessionID string, p Principal) (*Session, error)

	// ListTurns returns one page of the session's visible turns in
	// req.Order. ErrSessionNotFound as GetSession; ErrInvalidCursor for a
	// cursor that is tampered, malformed, or from another session or order;
	// ErrInvalidRequest for a bad limit or order. Pages are never empty while
	// more turns exist; HasMore is exact. Appends during paging neither
	// duplicate nor skip a turn. A running turn carries its lease expiry;
	// one whose lease expired is decided first (see Store). 1 request per
	// page (plus GetSession's 1 for the owner check when the implementation
	// cannot fold it in, and 1 when the page holds a running turn).
	ListTurns(ctx context.Context, req ListRequest) (*Page, error)

	// FindTurn returns the turn with turnID, a running one with its lease
	// expiry, decided first when its lease expired (see Store).
	// ErrSessionNotFound as GetSession; ErrTurnNotFound if no such turn is
	// stored. 1 request for the turn (by index), 1 more for a running one.
	FindTurn(ctx context.Context, sessionID, turnID string, p Principal) (*Turn, error)

	// PutArtifacts replaces the artifact references of a stored turn with
	// refs, deduplicated by full EntryPath with the last reference winning;
	// an empty refs clears them. p must own the session or be TrustedFor
	// its owner (a Trusted principal of another tenant gets
	// ErrSessionNotFound).
	// ErrSessionNotFound / ErrTurnNotFound as above; ErrInvalidArtifact if a
	// reference is invalid (see ValidateArtifacts), with nothing stored. At
	// most 2 requests.
	PutArtifacts(ctx context.Context, sessionID, turnID string, p Principal, refs []ArtifactReference) ([]ArtifactReference, error)

	// GetArtifacts returns the artifact references of a stored turn, as
	// FindTurn for access and errors.
	GetArtifacts(ctx context.Context, sessionID, turnID string, p Principal) ([]ArtifactReference, error)

	// The usage ledger and quota admissions (docs/quotas.md; ledger.go).

	// RecordUsage counts one ended turn: e's usage and one turn added to
	// the counters of e.Owner for the UTC day and month of e.StartedAt,
	// and e.Admission's running slot released. Exactly once per turn: an
	// entry whose ordinal is not above the last one counted for its
	// session (in that month) was counted already and changes nothing; the
	// call returns nil either way, so that a retried, re-sent or repeated
	// entry (the turn's process and a store deciding the turn) is counted
	// once. A write whose outcome is unknown is resolved with one
	// consistent read (the session's last counted ordinal). Callers count
	// a session's turns in ordinal order, each before the session's lease
	// passes on (ReleaseTurn, or the decision of a lost turn).
	// ErrInvalidRequest unless e validates. 1 request.
	RecordUsage(ctx context.Context, e LedgerEntry) error

	// ReadUsage returns p's ledger at at: its counters for the UTC day and
	// month containing at and its admissions still live
	// (Admission.Live), read consistently; zero counters when p has none.
	// Records past their retention (LedgerOptions) read as absent. 1
	// request.
	ReadUsage(ctx context.Context, p Principal, at time.Time) (*PrincipalUsage, error)

	// ListUsage returns one page of the principals of req.Tenant with a
	// ledger record for the month containing req.At, by PrincipalKey, each
	// as ReadUsage would; pages are never empty while more principals
	// exist. ErrInvalidCursor for a cursor of another tenant or month, or
	// a tampered one; ErrInvalidRequest for a bad limit. 1 request a page
	// (DynamoDB reads at most 1 MB a page: a large page may take more).
	ListUsage(ctx context.Context, req UsageListRequest) (*UsagePage, error)

	// Admit records req.Admission for req.Principal if its running
	// admissions are fewer than req.ConcurrentSessions and its admissions
	// of the last minute fewer than req.TurnsPerMinute (zero: unlimited),
	// atomically with the check (a compare-and-set on the principal's
	// admission state, retried after a lost race), and returns the usage
	// the decision was taken on; a *QuotaError (ErrQuotaExceeded) when a
	// limit refuses it, recording nothing. An admission whose outcome is
	// unknown is resolved by one consistent read (its id recorded).
	// Admissions no longer live are forgotten on the way. With req.Basis
	// current: 1 request; else 2.
	Admit(ctx context.Context, req AdmitRequest) (*PrincipalUsage, error)

	// CancelAdmission forgets admission a of p, whose turn never started
	// (its claim was refused): it counts towards no quota any more. A
	// forgotten or unknown admission is not an error. 1 request.
	CancelAdmission(ctx context.Context, p Principal, a Admission) error
}

// AppendTerminal returns a new window: window with e appended, an older
// entry with the same turn id removed and only the newest WindowSize(size)
// kept. window itself is not modified (a Claim's copy stays as the claim
// returned it).
func AppendTerminal(window []TerminalEntry, e TerminalEntry, size int) []TerminalEntry {
	out := make([]TerminalEntry, 0, len(window)+1)
	for _, w := range window {
		if w.TurnID != e.TurnID {
			out = append(out, w)
		}
	}
	out = append(out, e)
	if n := len(out) - WindowSize(size); n > 0 {
		out = out[n:]
	}
	return out
}

// Rejection returns the error of a claim of turnID with inputHash in a
// session whose terminal window is window: ErrTurnIDReused for another
// input, ErrTurnCompleted or ErrTurnIndeterminate for the same input; nil
// when the window does not hold turnID.
func Rejection(window []TerminalEntry, turnID, inputHash string) error {
	i := terminalIndex(window, turnID)
	if i < 0 {
		return nil
	}
	return window[i].rejection(inputHash)
}

// TurnRejection is Rejection for a stored turn t found with the claimed
// turn id outside the window: ErrTurnIDReused for another input, else
// ErrTurnCompleted for a terminal turn and ErrTurnIndeterminate for a turn
// whose outcome is unknown (still marked running).
func TurnRejection(t *Turn, inputHash string) error {
	outcome := OutcomeCompleted
	if t.Status == TurnRunning {
		outcome = OutcomeIndeterminate
	}
	return TerminalEntry{TurnID: t.TurnID, Outcome: outcome, InputHash: t.InputHash}.rejection(inputHash)
}

func (e TerminalEntry) rejection(inputHash string) error {
	switch {
	case e.InputHash != inputHash:
		return ErrTurnIDReused
	case e.Outcome == OutcomeCompleted:
		return ErrTurnCompleted
	default:
		return ErrTurnIndeterminate
	}
}

func terminalIndex(window []TerminalEntry, turnID string) int {
	return slices.IndexFunc(window, func(e TerminalEntry) bool { return e.TurnID == turnID })
}

// WindowFull reports whether window holds WindowSize(size) entries: a
// claim of a turn id it does not hold must then look the id up among the
// session's turns, which may have left the window.
func WindowFull(window []TerminalEntry, size int) bool { return len(window) >= WindowSize(size) }

// Terminal returns the terminal window entry of the lease's turn ending
// with outcome.
func (l *Lease) Terminal(outcome TerminalOutcome) TerminalEntry {
	return TerminalEntry{TurnID: l.TurnID, Outcome: outcome, InputHash: l.InputHash}
}

// Window returns the terminal window the release writes: the claim's
// window (it cannot change while the lease is held) with this turn's
// outcome appended, at most WindowSize(size) entries.
func (r ReleaseRequest) Window(size int) []TerminalEntry {
	return AppendTerminal(r.Claim.Session.TerminalTurns, r.Claim.Lease.Terminal(r.Outcome), size)
}

// CheckCheckpoint reports ErrInvalidRequest unless cp is a checkpoint of
// claim c's turn: the claim's session, turn id and ordinal, messages, a
// sequence from its first one on, and for a later checkpoint a prior at
// or after the first sequence and not after its own.
func (c *Claim) CheckCheckpoint(cp *Checkpoint) error {
	if err := c.validate(); err != nil {
		return err
	}
	if cp == nil || cp.SessionID != c.Session.ID || cp.TurnID != c.Lease.TurnID || cp.Ordinal != c.Lease.Ordinal ||
		len(cp.Messages) == 0 || cp.FirstSequence < 1 || cp.Sequence < cp.FirstSequence ||
		cp.Prior != nil && (cp.PriorSequence < cp.FirstSequence || cp.PriorSequence > cp.Sequence) {
		return fmt.Errorf("%w: not a checkpoint of the claimed turn", ErrInvalidRequest)
	}
	return nil
}

// TurnOf returns the running turn that checkpoint cp describes.
func (cp *Checkpoint) TurnOf() *Turn {
	return &Turn{
		SessionID: cp.SessionID, TurnID: cp.TurnID, Ordinal: cp.Ordinal, Status: TurnRunning,
		Lineage: cp.Lineage, InputHash: cp.InputHash, Messages: cp.Messages, Usage: cp.Usage, Metered: cp.Metered,
		FirstSequence: cp.FirstSequence, LastSequence: cp.Sequence, StartedAt: cp.StartedAt,
		Head: cp.Sequence,
	}
}

// Presented returns t as readers see it: a turn that is not running never
// shows a streaming message or an unfinished tool call (they are closed
// as errors). A running turn is returned as it is: whether a turn is lost
// is never inferred from a clock by a reader; it is recorded by the store
// that decides it (Store).
func (t Turn) Presented() Turn {
	if t.Status == TurnRunning {
		return t
	}
	t.Messages = closeMessages(t.Messages)
	return t
}

// Lost returns the record of a running turn t whose lease expired without
// a save: status TurnError with the diagnostic TURN_LOST, its messages
// closed (Presented) and its terminal sequence. The stores write it when
// they fence the turn.
func (t Turn) Lost(sequence int64, at time.Time) Turn {
	d := protocol.NewDiagnostic(protocol.CodeTurnLost)
	t.Status, t.Error = TurnError, &d
	t.LastSequence, t.CompletedAt = sequence, at
	t.LeaseExpiresAt, t.Head = time.Time{}, 0
	return t.Presented()
}

// textToolNotCompleted is the error of a tool call a lost turn left
// unfinished.
const textToolNotCompleted = "The tool call did not complete."

// closeMessages returns msgs with streaming or pending messages and
// unfinished tool calls marked as errors; msgs itself is not modified.
func closeMessages(msgs []protocol.Message) []protocol.Message {
	var out []protocol.Message
	for i, m := range msgs {
		open := m.Status == protocol.MessageStreaming || m.Status == protocol.MessagePending
		calls := false
		for _, c := range m.ToolCalls {
			if c.Status == protocol.ToolCallPending || c.Status == protocol.ToolCallRunning {
				calls = true
			}
		}
		if !open && !calls {
			continue
		}
		if out == nil {
			out = slices.Clone(msgs)
		}
		if open {
			out[i].Status = protocol.MessageError
		}
		if calls {
			out[i].ToolCalls = slices.Clone(m.ToolCalls)
			for j := range out[i].ToolCalls {
				c := &out[i].ToolCalls[j]
				if c.Status == protocol.ToolCallPending || c.Status == protocol.ToolCallRunning {
					text := textToolNotCompleted
					c.Status, c.Error = protocol.ToolCallError, &text
				}
			}
		}
	}
	if out == nil {
		return msgs
	}
	return out
}
