package turn

import (
	"bytes"
	"encoding/json"
	"net/http"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/turnstream/turnstream/pkg/protocol"
)

// stopRequest is the body of POST /stop (docs/design.md §4).
type stopRequest struct {
	SessionID string `json:"sessionId"`
	TurnID    string `json:"turnId"`
	// Unknown holds the other members (the embedded fallback of
	// go-json-experiment/json): ignored, but none may be a case
	// variant of a field (protocol.IsCaseVariant).
	Unknown map[string]jsontext.Value `json:",embed"`
}

// stopFields are the members of a stop body.
var stopFields = []string{"sessionId", "turnId"}

// stopAccepted is the 202 body of POST /stop: the stop flag is set; the
// running turn sees it at its next lease renewal and ends as interrupted
// (its terminal snapshot carries TURN_INTERRUPTED).
var stopAccepted = []byte(`{"stopRequested":true}` + "\n")

// serveStop runs POST /stop: the same deadline, method, content type,
// authentication and body cap as POST /, then a strict JSON body
// {"sessionId","turnId"} of two SafeIds (case-sensitive keys, no
// duplicates, no key equal to sessionId or turnId but for case, other
// unknown keys ignored; anything else is 400 REQUEST_INVALID_BODY), then Store.RequestStop: 202 {"stopRequested":true},
// 404 SESSION_NOT_FOUND (no such session or another owner's), 409
// TURN_NOT_ACTIVE (the turn does not hold the lease).
func (h *handler) serveStop(w http.ResponseWriter, r *http.Request) {
	ctx, cancel, _ := h.deadline(r)
	defer cancel()
	log := h.requestLogger(ctx)

	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, protocol.NewDiagnostic(protocol.CodeRequestMethodNotAllowed))
		return
	}
	if !isJSONContentType(r) {
		writeError(w, protocol.NewDiagnostic(protocol.CodeRequestUnsupportedMediaType))
		return
	}
	principal, ok := h.authenticate(ctx, w, r, log)
	if !ok {
		return
	}
	body, ok := h.readBody(ctx, w, r)
	if !ok {
		return
	}
	req, ok := decodeStop(body)
	if !ok {
		writeError(w, protocol.NewDiagnostic(protocol.CodeRequestInvalidBody))
		return
	}
	log = log.With("sessionId", req.SessionID, "turnId", req.TurnID)
	if err := h.opts.Store.RequestStop(ctx, req.SessionID, req.TurnID, principal); err != nil {
		d := diagnose(ctx, err)
		logRejected(log, "stop", d, err)
		writeError(w, d)
		return
	}
	log.Info("turn stop requested")
	writeJSON(w, http.StatusAccepted, stopAccepted)
}

// decodeStop parses a stop body with go-json-experiment/json, which
// matches keys case-sensitively and rejects duplicate keys (docs/design.md §2
// hazards; encoding/json does neither), and rejects a member that is a
// case variant of sessionId or turnId ("SessionId", "TURNID"), which a
// case-folding reader would take for the field.
func decodeStop(body []byte) (stopRequest, bool) {
	var req stopRequest
	if len(bytes.TrimSpace(body)) == 0 || !json.Valid(body) {
		return req, false
	}
	if err := jsonv2.Unmarshal(body, &req); err != nil {
		return req, false
	}
	for name := range req.Unknown {
		if protocol.IsCaseVariant(name, stopFields...) {
			return req, false
		}
	}
	return req, protocol.IsSafeID(req.SessionID) && protocol.IsSafeID(req.TurnID)
}
