package chat

import (
	"errors"
	"fmt"
)

// Sentinel errors of the Store contract. Handlers map them to diagnostics in
// one table (pkg/turn, pkg/sessionapi); clients never see their text.
var (
	// ErrSessionNotFound: no such session, or another principal owns it.
	ErrSessionNotFound = errors.New("chat: session not found")
	// ErrSessionBusy: another turn holds an unexpired lease (retryable).
	ErrSessionBusy = errors.New("chat: session busy")
	// ErrTurnCompleted: the turn id is in the terminal window as completed.
	ErrTurnCompleted = errors.New("chat: turn already completed")
	// ErrTurnIndeterminate: the turn id is in the terminal window as
	// indeterminate (its save's outcome is unknown).
	ErrTurnIndeterminate = errors.New("chat: turn outcome indeterminate")
	// ErrTurnIDReused: the turn id was used before with another input.
	ErrTurnIDReused = errors.New("chat: turn id reused with another input")
	// ErrTurnNotFound: no stored turn has that id in the session.
	ErrTurnNotFound = errors.New("chat: turn not found")
	// ErrTurnNotActive: the turn does not hold the session's lease.
	ErrTurnNotActive = errors.New("chat: turn not active")
	// ErrLeaseLost: the lease token no longer holds the lease.
	ErrLeaseLost = errors.New("chat: lease lost")
	// ErrConflict: a compare-and-set lost a race; the caller may retry.
	ErrConflict = errors.New("chat: conflict")
	// ErrInvalidCursor: a page cursor is malformed, tampered, or bound to
	// another session or order.
	ErrInvalidCursor = errors.New("chat: invalid cursor")
	// ErrInvalidRequest: a request field is out of range.
	ErrInvalidRequest = errors.New("chat: invalid request")
	// ErrConfirmationNotFound: the session has no confirmation with the
	// decision's token (a token of another session included).
	ErrConfirmationNotFound = errors.New("chat: confirmation not found")
	// ErrConfirmationDecided: the confirmation is no longer pending: it was
	// decided, or superseded by a plain turn.
	ErrConfirmationDecided = errors.New("chat: confirmation already decided")
	// ErrConfirmationExpired: the confirmation's expiry has passed.
	ErrConfirmationExpired = errors.New("chat: confirmation expired")
	// ErrInvalidArtifact: an artifact reference is invalid (wraps a reason).
	ErrInvalidArtifact = errors.New("chat: invalid artifact reference")
	// ErrQueueFull: the session holds as many queued turns as it may
	// (retryable, once one of them ran).
	ErrQueueFull = errors.New("chat: session queue full")
	// ErrNothingQueued: the session has no queued turn that may start.
	ErrNothingQueued = errors.New("chat: nothing queued")
	// ErrAttachmentUsed: another turn of the session used the attachment.
	ErrAttachmentUsed = errors.New("chat: attachment used by another turn")
)

// ErrSessionQueued is ErrSessionBusy for a session whose lease is free
// but whose queued turns wait to start: a plain claim may not run before
// them. The caller may start them (Store.ClaimQueued).
var ErrSessionQueued = fmt.Errorf("%w: queued turns wait to start", ErrSessionBusy)

// ErrSessionMoved is ErrSessionBusy for a claim conditional on the
// session's next ordinal (ClaimRequest.IfNextOrdinal) made after another
// turn was claimed: the session moved on since the caller read it. What
// holds the session now is for a plain claim to find.
var ErrSessionMoved = fmt.Errorf("%w: another turn was claimed since", ErrSessionBusy)
