package chat

import (
	"fmt"
	"slices"
	"time"

	"github.com/turnstream/turnstream/pkg/protocol"
)

// Queued turns: a submit that finds its session busy and asks to be
// enqueued (docs/multitask.md) is stored as a queued turn of the session
// and runs later, one at a time, in submit order, after the running turn
// ends. A queued turn has no ordinal until it starts: its claim takes the
// session's next ordinal, as any claim does.

// Queue limits and defaults.
const (
	// DefaultMaxQueuedTurns is how many turns a session may hold queued
	// (MAX_QUEUED_TURNS).
	DefaultMaxQueuedTurns = 4
	// MaxQueuedTurnsLimit bounds MAX_QUEUED_TURNS: the session item, which
	// every claim and release rewrites, holds one entry per queued turn.
	MaxQueuedTurnsLimit = 16
	// DefaultQueuedTurnTTL is how long a queued turn may wait to start
	// (QUEUED_TURN_TTL); past it, it is recorded as never run.
	DefaultQueuedTurnTTL = 10 * time.Minute
)

// QueueEntry is one queued turn as the session item lists it.
type QueueEntry struct {
	TurnID string
	// Seq orders the queue: the session's queue counter at enqueue
	// (from 1, strictly increasing).
	Seq       int64
	InputHash string // HashInput of the turn's input
	QueuedAt  time.Time
	// ExpiresAt is when the entry, not started by then, is recorded as
	// never run (QueuedAt + its TTL; millisecond precision).
	ExpiresAt time.Time
	// Started is the ordinal the turn was claimed with, 0 while it waits.
	// A started entry leaves the queue when its turn is released or its
	// fate decided; one whose claim died before the turn was acknowledged
	// waits again.
	Started int64
	// Cancelled marks a turn cancelled while it waited (CancelQueued):
	// it no longer waits, and is recorded as never run when the session
	// is next free (its terminal window then changes).
	Cancelled bool
	// Recording marks a turn being recorded as never run, at ordinal
	// Started (TURN_CANCELLED when Cancelled, else TURN_QUEUE_EXPIRED): a
	// store that cannot write the session and the turn's record in one
	// request takes the ordinal first, then writes the record, then
	// removes the entry; ClaimQueued finishes a recording whose writer
	// died between the steps.
	Recording bool
}

// QueuedTurn is a queued turn with what it runs with: its user message
// (the input as the turn will store it) and how it was submitted.
type QueuedTurn struct {
	QueueEntry
	SessionID string
	Principal Principal
	Lineage   protocol.Lineage
	// Message is the turn's user message (role user, its input).
	Message protocol.Message
}

// EnqueueRequest asks to store a queued turn (Store.EnqueueTurn).
type EnqueueRequest struct {
	SessionID string
	TurnID    string
	Principal Principal
	InputHash string
	Lineage   protocol.Lineage
	// Message is the user message the turn will run with.
	Message protocol.Message
	// TTL is how long it may wait (> 0); Max how many turns the session
	// may hold queued (1..MaxQueuedTurnsLimit).
	TTL time.Duration
	Max int
}

// Enqueued is a queued turn as EnqueueTurn stored it, or found it (the
// same enqueue again).
type Enqueued struct {
	Entry QueueEntry
	// Position is the turn's place among the waiting turns, from 1.
	Position int
	// Idle reports that the session, as the enqueue left it, held no
	// unexpired lease and no confirmation waiting for a decision: no
	// turn's release will start the queue, so the caller starts a drain
	// (whose claim decides an expired lease). A session that was busy
	// starts its queue when it is released: the release follows the
	// enqueue, and sees it.
	Idle bool
}

// IdleAt reports whether sess holds no unexpired lease and no
// confirmation waiting for a decision at now (Enqueued.Idle).
func IdleAt(sess *Session, now time.Time) bool {
	return (sess.ActiveTurn == nil || !sess.ActiveTurn.ExpiresAt.After(now)) && !PendingConfirmation(sess.Confirmations, now)
}

// Validate reports ErrInvalidRequest unless r names a session, a turn id,
// a user message, a positive TTL and a queue limit within
// 1..MaxQueuedTurnsLimit.
func (r EnqueueRequest) Validate() error {
	if r.SessionID == "" || r.TurnID == "" || r.Message.Role != protocol.RoleUser || r.TTL <= 0 ||
		r.Max < 1 || r.Max > MaxQueuedTurnsLimit {
		return fmt.Errorf("%w: an enqueue needs a session, a turn id, a user message, a TTL and a limit in 1..%d", ErrInvalidRequest, MaxQueuedTurnsLimit)
	}
	return nil
}

// Waiting returns the entries of queue that have not started and are not
// cancelled, in queue order.
func Waiting(queue []QueueEntry) []QueueEntry {
	out := slices.DeleteFunc(slices.Clone(queue), func(e QueueEntry) bool { return e.Started != 0 || e.Cancelled })
	slices.SortFunc(out, func(a, b QueueEntry) int { return int(a.Seq - b.Seq) })
	return out
}

// NeedsDrain reports whether queue holds work for ClaimQueued: a turn
// waiting, one cancelled or one whose recording as never run is
// unfinished.
func NeedsDrain(queue []QueueEntry) bool {
	return slices.ContainsFunc(queue, func(e QueueEntry) bool { return e.Started == 0 || e.Cancelled || e.Recording })
}

// Position returns the 1-based position of turnID among the waiting
// entries of queue, 0 when it does not wait there.
func Position(queue []QueueEntry, turnID string) int {
	for i, e := range Waiting(queue) {
		if e.TurnID == turnID {
			return i + 1
		}
	}
	return 0
}

// QueueRejection is the error of enqueueing turnID with inputHash in a
// session whose queue is queue and terminal window window: the replay
// errors of a turn id already used (Rejection), ErrTurnIDReused for one
// queued with another input, nil for one queued with the same input (the
// same enqueue again: the caller answers as the first time), or
// ErrQueueFull when max turns already wait.
func QueueRejection(queue []QueueEntry, window []TerminalEntry, turnID, inputHash string, max int) (queued *QueueEntry, err error) {
	if err := Rejection(window, turnID, inputHash); err != nil {
		return nil, err
	}
	for i := range queue {
		if e := &queue[i]; e.TurnID == turnID {
			switch {
			case e.InputHash != inputHash:
				return nil, ErrTurnIDReused
			case e.Cancelled:
				return nil, ErrTurnCompleted // recorded as never run
			}
			return e, nil
		}
	}
	if len(Waiting(queue)) >= max {
		return nil, ErrQueueFull
	}
	return nil, nil
}

// PendingConfirmation reports whether confs hold a confirmation still
// waiting for a decision at now: the session then counts as busy for its
// queued turns, which wait for the decision or the confirmation's expiry.
func PendingConfirmation(confs []Confirmation, now time.Time) bool {
	for _, c := range confs {
		if c.VisibleStatus(now) == ConfirmationPending {
			return true
		}
	}
	return false
}

// NotRun returns the record of a queued turn that never ran: its user
// message, status error with the diagnostic code (TURN_QUEUE_EXPIRED or
// TURN_CANCELLED), at ordinal.
func (q *QueuedTurn) NotRun(ordinal int64, code string, at time.Time) *Turn {
	d := protocol.NewDiagnostic(code)
	return &Turn{
		SessionID: q.SessionID, TurnID: q.TurnID, Ordinal: ordinal, Status: TurnError,
		Lineage: q.Lineage, InputHash: q.InputHash, Messages: []protocol.Message{q.Message},
		Error: &d, Artifacts: []ArtifactReference{}, StartedAt: q.QueuedAt, CompletedAt: at,
	}
}
