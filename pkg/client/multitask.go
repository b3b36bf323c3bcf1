package client

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// Allows reports whether the deployment serves policy: it lists the
// multitask extension as available with policy among its policies. A
// session's definition may still refuse it (422 MULTITASK_NOT_ALLOWED).
func (c *Capabilities) Allows(policy string) bool {
	if policy == api.MultitaskReject {
		return true
	}
	return c.Has(api.ExtensionMultitask) && c.Multitask.Available && slices.Contains(c.Multitask.Policies, policy)
}

// Queued is the 202 answer to a submit the turn function queued
// (Submit.Multitask api.MultitaskEnqueue on a busy session; api.Queued).
type Queued = api.Queued

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
		q.Status != api.QueuedStatus || q.Position < 1 || !relativeRoute(q.StreamURL) {
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

// QueuedTurn is one turn of a session summary's queue, waiting to start
// (api.QueuedTurn).
type QueuedTurn = api.QueuedTurn

// IsMultitaskCode reports whether code refuses a submit's multitask
// policy (docs/multitask.md): SESSION_QUEUE_FULL (409, retryable: the
// session's MAX_QUEUED_TURNS turns wait already; nothing was stored) or
// MULTITASK_NOT_ALLOWED (422, not retryable: the session's definition or
// the deployment does not serve the policy).
func IsMultitaskCode(code string) bool {
	return code == protocol.CodeSessionQueueFull || code == protocol.CodeMultitaskNotAllowed
}
