package client

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/turnstream/turnstream/pkg/protocol"
)

// MultitaskHeader names the multitask policy of a submit: what the turn
// function does when the session is busy with another turn
// (docs/multitask.md). Submit.Multitask sets it.
const MultitaskHeader = "X-Turnstream-Multitask"

// Multitask policies (Submit.Multitask; docs/multitask.md).
const (
	// MultitaskReject: a busy session answers 409 SESSION_BUSY (the
	// protocol's behaviour, and the default).
	MultitaskReject = "reject"
	// MultitaskEnqueue: a busy session stores the turn as queued and
	// answers 202; the turn runs after the turns before it and Submit's
	// Stream follows it (Stream.Queued).
	MultitaskEnqueue = "enqueue"
	// MultitaskInterrupt: the running turn is stopped (its answer so far
	// kept, TURN_INTERRUPTED) and this one streams in its place.
	MultitaskInterrupt = "interrupt"
	// MultitaskRollback: as interrupt, and the stopped turn is superseded
	// (gone from history and from the model's context).
	MultitaskRollback = "rollback"
)

// MultitaskPolicies lists the policies in the order the capabilities list
// them.
var MultitaskPolicies = []string{MultitaskReject, MultitaskEnqueue, MultitaskInterrupt, MultitaskRollback}

// MultitaskCapability is the capabilities' "multitask" object: the
// policies this deployment serves (docs/multitask.md#asking-for-a-policy).
type MultitaskCapability struct {
	// Available is whether a submit may name a policy other than reject.
	Available bool   `json:"available"`
	Header    string `json:"header"`
	// Policies are the policies some definition allows; Default is the
	// default definition's default.
	Policies []string `json:"policies"`
	Default  string   `json:"default"`
	// MaxQueuedTurns is how many turns may wait per session;
	// QueuedTurnTTLMs how long one may wait (ms); InterruptWaitMs how long
	// an interrupt waits for the running turn to end (ms).
	MaxQueuedTurns  int   `json:"maxQueuedTurns"`
	QueuedTurnTTLMs int64 `json:"queuedTurnTtlMs"`
	InterruptWaitMs int64 `json:"interruptWaitMs"`
}

// Allows reports whether the deployment serves policy: it lists the
// multitask extension as available with policy among its policies. A
// session's definition may still refuse it (422 MULTITASK_NOT_ALLOWED).
func (c *Capabilities) Allows(policy string) bool {
	if policy == MultitaskReject {
		return true
	}
	return c.Has("multitask") && c.Multitask.Available && slices.Contains(c.Multitask.Policies, policy)
}

// Queued is the 202 answer to a submit the turn function queued
// (Submit.Multitask MultitaskEnqueue on a busy session):
//
//	{"sessionId","turnId","status":"queued","position":<from 1>,"streamUrl":"sessions/{id}/turns/{turnId}/stream"}
type Queued struct {
	SessionID string `json:"sessionId"`
	TurnID    string `json:"turnId"`
	Status    string `json:"status"`
	// Position is the turn's place among the session's waiting turns,
	// from 1, when it was queued.
	Position int `json:"position"`
	// StreamURL is the turn's resume route relative to the turn
	// function's base URL. It sends nothing until the turn starts.
	StreamURL string `json:"streamUrl"`
}

// maxQueuedBody bounds a 202 answer.
const maxQueuedBody = 4 << 10

// readQueued reads a 202 answer of the submit of sessionID's turn turnID:
// the Queued body, naming that turn, with a position >= 1 and a relative
// stream URL below the turn URL; a KindInvalidResponse *Error otherwise.
func readQueued(resp *http.Response, sessionID, turnID string) (*Queued, error) {
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxQueuedBody+1))
	if err != nil {
		return nil, networkError("submit", err)
	}
	var q Queued
	if len(raw) > maxQueuedBody || json.Unmarshal(raw, &q) != nil || q.SessionID != sessionID || q.TurnID != turnID ||
		q.Status != "queued" || q.Position < 1 || !relativeRoute(q.StreamURL) {
		return nil, invalidResponse("submit", resp.StatusCode)
	}
	return &q, nil
}

// relativeRoute reports whether s is a relative URL path without a
// scheme, host, query or dot segment: one that can only name a route
// below the turn function's base URL.
func relativeRoute(s string) bool {
	u, err := url.Parse(s)
	if err != nil || s == "" || u.IsAbs() || u.Host != "" || u.RawQuery != "" || u.Fragment != "" || strings.HasPrefix(s, "/") {
		return false
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if seg == "." || seg == ".." || seg == "" {
			return false
		}
	}
	return true
}

// QueuedTurn is one turn of a session summary's queue, waiting to start.
type QueuedTurn struct {
	TurnID string `json:"turnId"`
	// Position is its place among the waiting turns, from 1.
	Position int `json:"position"`
	// InputPreview is the start of its input (at most 120 characters, "…"
	// appended when cut).
	InputPreview string `json:"inputPreview"`
	QueuedAt     string `json:"queuedAt"`
	// ExpiresAt is when it is recorded as never run if it has not started
	// (TURN_QUEUE_EXPIRED), epoch milliseconds.
	ExpiresAt int64 `json:"expiresAt"`
}

// IsMultitaskCode reports whether code refuses a submit's multitask
// policy (docs/multitask.md): SESSION_QUEUE_FULL (409, retryable: the
// session's MAX_QUEUED_TURNS turns wait already; nothing was stored) or
// MULTITASK_NOT_ALLOWED (422, not retryable: the session's definition or
// the deployment does not serve the policy).
func IsMultitaskCode(code string) bool {
	return code == protocol.CodeSessionQueueFull || code == protocol.CodeMultitaskNotAllowed
}
