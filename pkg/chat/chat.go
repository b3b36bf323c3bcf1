package chat

import (
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
	// ReasoningBlocks are the model's reasoning blocks that a later turn
	// may have to send back to the model (those of a tool loop that waits
	// for approval, docs/reasoning.md): opaque JSON the turn engine writes
	// and reads, kept with the turn's messages and never shown to anyone;
	// nil when none.
	ReasoningBlocks []byte
	// Feedback is the owner's rating of the turn's answer, nil when none
	// (ConversationStore.SetFeedback).
	Feedback *Feedback
	// Superseded is true while the turn is off the session's active branch:
	// an edit, retry or regenerate replaced it or a turn before it, or
	// another sibling was selected (docs/branches.md). Superseded turns are
	// never listed nor loaded as context; FindTurn reads them.
	Superseded bool
	// Siblings is the turn's sibling group, nil when it has none
	// (docs/branches.md).
	Siblings *Siblings
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
	// Siblings is the sibling group the turn joined (the group
	// TurnStore.Supersede returned), nil when it replaced nothing.
	Siblings *Siblings
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
	// Listing, when set, records the turn in its principal's list of
	// sessions in the same write (ConversationStore): the session becomes
	// the most recently active, and gets Listing.Title if it has none.
	Listing *Listing
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
		Head: cp.Sequence, Siblings: cp.Siblings.Clone(),
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
