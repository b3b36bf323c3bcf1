package engine

import (
	"context"
	"errors"
	"net/http"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/httpedge"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// stopRequest is the body of POST /stop (docs/design.md#the-turn-pipeline).
type stopRequest = api.StopRequest

// stopAccepted is the 202 body of POST /stop: the stop flag is set on
// the turn's lease (chat.Store.RequestStop: a flag written is a stop,
// whatever the outcome of its copy for the checkpoints); the running turn
// sees it at its next checkpoint, one that fails included, or lease
// renewal, and ends as interrupted (its terminal snapshot carries
// TURN_INTERRUPTED).
var stopAccepted = []byte(`{"stopRequested":true}` + "\n")

// serveStop runs POST /stop: the same deadline, method, content type,
// authentication and body cap as POST /, then a strict JSON body
// {"sessionId","turnId"} of two SafeIds (case-sensitive keys, no
// duplicates, no key equal to sessionId or turnId but for case, other
// unknown keys ignored; anything else is 400 REQUEST_INVALID_BODY), then
// stop: 202 {"stopRequested":true} for the running turn,
// {"stopRequested":true,"cancelled":true} for a queued turn that had not
// started (docs/multitask.md), 404 SESSION_NOT_FOUND (no such session or
// another owner's), 409 TURN_NOT_ACTIVE (the turn neither holds the lease
// nor waits in the queue).
func (h *handler) serveStop(w http.ResponseWriter, r *http.Request) {
	ctx, cancel, _ := h.deadline(r)
	defer cancel()
	log := h.requestLogger(ctx)

	principal, req, step, err := h.acceptStop(ctx, w, r)
	if err != nil {
		reject(ctx, w, log, step, err)
		return
	}
	log = log.With("sessionId", req.SessionID, "turnId", req.TurnID)
	cancelled, err := h.stop(ctx, req.SessionID, req.TurnID, principal)
	if err != nil {
		reject(ctx, w, log, "stop", err)
		return
	}
	if cancelled {
		log.Info("queued turn cancelled")
		httpedge.WriteJSON(w, http.StatusAccepted, queuedCancelled)
		return
	}
	log.Info("turn stop requested")
	httpedge.WriteJSON(w, http.StatusAccepted, stopAccepted)
}

// queuedCancelled is the 202 body of POST /stop naming a queued turn
// that had not started: it never runs (recorded with TURN_CANCELLED).
var queuedCancelled = []byte(`{"stopRequested":true,"cancelled":true}` + "\n")

// stop stops turnID: the running turn's stop flag (chat.Store.RequestStop),
// or a queued turn that has not started taken out of the queue
// (chat.Store.CancelQueued; cancelled true). A queued turn that starts
// meanwhile is stopped as a running one.
func (h *handler) stop(ctx context.Context, sessionID, turnID string, p chat.Principal) (cancelled bool, err error) {
	err = h.opts.Store.RequestStop(ctx, sessionID, turnID, p)
	if !errors.Is(err, chat.ErrTurnNotActive) {
		return false, err
	}
	err = h.opts.Store.CancelQueued(ctx, sessionID, turnID, p)
	if !errors.Is(err, chat.ErrTurnNotActive) {
		return err == nil, err
	}
	return false, h.opts.Store.RequestStop(ctx, sessionID, turnID, p)
}

// acceptStop runs the checks of POST /stop before the store request, in
// the order of POST /: method (405), media type (415), authentication
// (401/403), the body under MaxBodyBytes (413; an unreadable body is 400
// REQUEST_INVALID_JSON, as on POST /), then the stop body (400
// REQUEST_INVALID_BODY). On failure it returns the step that failed and an
// error for httpedge.Diagnose.
func (h *handler) acceptStop(ctx context.Context, w http.ResponseWriter, r *http.Request) (chat.Principal, stopRequest, string, error) {
	principal, step, err := h.acceptPost(ctx, w, r)
	if err != nil {
		return chat.Principal{}, stopRequest{}, step, err
	}
	body, err := h.readBody(ctx, w, r)
	if err != nil {
		return chat.Principal{}, stopRequest{}, "read body", err
	}
	req, ok := decodeStop(body)
	if !ok {
		return chat.Principal{}, stopRequest{}, "decode", httpedge.ErrInvalidBody
	}
	return principal, req, "", nil
}

// decodeStop parses a stop body with the strict reader
// (protocol.UnmarshalStrict: case-sensitive keys, no duplicated key, no
// case variant of sessionId or turnId such as "SessionId", no lone
// surrogate, no null, an object, not a string holding one; other members
// ignored); both ids must be SafeIds.
func decodeStop(body []byte) (stopRequest, bool) {
	var req stopRequest
	if protocol.UnmarshalStrict(body, &req) != nil {
		return req, false
	}
	return req, protocol.IsSafeID(req.SessionID) && protocol.IsSafeID(req.TurnID)
}
