package chat

import (
	"context"
	"time"
)

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
//
// Store is the whole contract a store implements, the union of the
// interfaces above; a consumer asks for the ones it uses.
type Store interface {
	LeaseStore
	TurnStore
	HistoryStore
	ArtifactStore
	QueueStore
	LedgerStore
	ConversationStore
	AttachmentStore
	BranchStore
}

// LeaseStore takes, keeps and gives back a session's lease: the claim of
// a turn, its renewals, the stop flag on it, its abandonment or
// withdrawal, and its release (see Store for the rules every write
// follows).
type LeaseStore interface {
	// ClaimTurn takes the session's lease for req.TurnID, creating the
	// session owned by req.Principal on first use. It returns
	// ErrSessionNotFound if another principal owns the session,
	// ErrSessionMoved if req.IfNextOrdinal is set and the session's next
	// ordinal is another, ErrSessionBusy if an unexpired lease is held (by
	// another turn id, or by this turn id while its record is not
	// terminal), ErrTurnCompleted / ErrTurnIndeterminate if the session
	// already has a turn with that id and the same input hash, and
	// ErrTurnIDReused if it has one with another input hash, and
	// ErrTurnIndeterminate too when the claim's own outcome is unknown (a
	// store whose write may have applied and whose resolving read failed:
	// the turn id may be spent); a turn saved
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
}

// TurnStore writes and reads the turn a lease runs: the context it
// loads, its checkpoints, its save, the turns it supersedes, and the
// reads that follow a running turn.
type TurnStore interface {
	// LoadContext returns the newest maxTurns (>= 1) visible (not
	// superseded), terminal turns of the session with ordinal below
	// beforeOrdinal, oldest first, and whether older ones exist that it
	// left out. It performs no owner check: it is called only after a
	// successful claim. It reads only what it returns: 1 request, whatever
	// the session's length (one more per 1 MB of those turns).
	LoadContext(ctx context.Context, sessionID string, beforeOrdinal int64, maxTurns int) (turns []Turn, omitted bool, err error)

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
	// it. A later checkpoint reports whether a stop was requested
	// (RequestStop), so a stop is seen at the next checkpoint, also one
	// that fails (the first may report false either way): stop may be
	// true with an error other than ErrLeaseLost (the checkpoint was not
	// written, but the lease carries the stop; one more read). ErrInvalidRequest unless cp is the
	// claim's turn. A heartbeat (messages equal to Prior) costs one small
	// write; a change two. A checkpoint that lands after the final save (a
	// late retry) changes nothing a reader sees.
	Checkpoint(ctx context.Context, c *Claim, cp *Checkpoint) (stop bool, err error)

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

	// Supersede marks every visible turn of the claim's session with
	// ordinal in [fromOrdinal, toOrdinal) as superseded (edit, retry,
	// regenerate), kept as the branch of the first of them
	// (docs/branches.md), and returns the sibling group the claim's turn
	// joins: that first turn's group (it alone when it has none) with
	// the claim's turn last (Joined); nil when the range holds no visible
	// turn. It requires the claim's unexpired lease and is idempotent.
	// Returns ErrLeaseLost if the token does not hold it,
	// ErrLineageStale when the first visible turn of the range is
	// neither the turn at fromOrdinal nor in its group, and
	// ErrSiblingsFull; both mark nothing.
	Supersede(ctx context.Context, c *Claim, fromOrdinal, toOrdinal int64) (*Siblings, error)
}

// HistoryStore reads a session and its turns as their owner sees them;
// each read decides an expired lease it meets (see Store).
type HistoryStore interface {
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
}

// ArtifactStore records and reads the artifact references of a turn.
type ArtifactStore interface {
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
}

// AttachmentStore records which turn used each uploaded attachment, so
// that one upload goes with one turn (docs/attachments.md).
type AttachmentStore interface {
	// UseAttachments records that turn req.TurnID of req.SessionID uses
	// each of req.AttachmentIDs, in order. An attachment no turn used, or
	// one this turn id or req.ParentTurnID (the turn a retry, edit or
	// regenerate replaces) used, is recorded as this turn's too; one that
	// another turn used is ErrAttachmentUsed, and the records this call
	// added before it are taken back (a failure to take one back leaves
	// it to this turn id, which may send it again). A record may be
	// removed after req.Until (after the attachments' use-by time, when
	// no turn may use them anyway). One conditional write per attachment;
	// a write whose outcome is unknown is resolved by one consistent read.
	UseAttachments(ctx context.Context, req UseAttachmentsRequest) error
}

// UseAttachmentsRequest is Store.UseAttachments' request.
type UseAttachmentsRequest struct {
	SessionID     string
	TurnID        string
	ParentTurnID  string // "" for a turn without lineage
	AttachmentIDs []string
	Until         time.Time
}

// QueueStore holds the turns queued behind a session's lease
// (docs/multitask.md).
type QueueStore interface {
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
}

// LedgerStore is the usage ledger (docs/quotas.md): the counts of turns
// and tokens, and the admissions of rate and concurrency quotas.
type LedgerStore interface {
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
