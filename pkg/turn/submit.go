package turn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// scope is what a snapshot carries (SnapshotScopeHeader).
type scope int

const (
	scopeSession scope = iota // the whole session's visible messages
	scopeTurn                 // the current turn's messages only
)

// serveSubmit runs POST / in the order of docs/design.md §4 and docs/protocol.md §9.
func (h *handler) serveSubmit(w http.ResponseWriter, r *http.Request) {
	ctx, cancel, deadline := h.deadline(r)
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
	sc, ok := parseScope(r.Header.Values(SnapshotScopeHeader))
	if !ok {
		writeError(w, protocol.NewDiagnostic(protocol.CodeRequestInvalidHeader))
		return
	}
	// The compact stream's negotiation (compact.go), before the body.
	compact, ok := parseStreamMode(r.Header.Values(StreamModeHeader))
	if !ok {
		writeError(w, protocol.NewDiagnostic(protocol.CodeRequestInvalidHeader))
		return
	}
	body, ok := h.readBody(ctx, w, r)
	if !ok {
		return
	}
	ev, d := decodeSubmit(body)
	if d != nil {
		writeError(w, *d)
		return
	}
	log = log.With("sessionId", ev.SessionID, "turnId", ev.TurnID)

	lineage := protocol.Lineage{Operation: protocol.OperationSubmit}
	if l := ev.Submit.Lineage; l != nil && l.Operation != protocol.OperationSubmit {
		lineage = *l
	}
	input := ev.Submit.Input
	inputHash := chat.HashInput(input)
	var decision *chat.Decision
	if c := ev.Submit.Confirmation; c != nil {
		// A decision on a confirmation: the input is only a label.
		decision = &chat.Decision{Token: c.Token, Approve: c.Decision == protocol.DecisionApprove}
		inputHash = decisionInputHash(input, c)
	}
	var parent *chat.Turn
	if lineage.Operation != protocol.OperationSubmit {
		var err error
		parent, err = h.checkLineage(ctx, ev.SessionID, principal, lineage, inputHash)
		if err != nil {
			d := diagnose(ctx, err)
			logRejected(log, "lineage", d, err)
			writeError(w, d)
			return
		}
	}

	def := h.defaultDefinition()
	claimedAt := h.opts.Now()
	claim, err := h.opts.Store.ClaimTurn(ctx, chat.ClaimRequest{
		SessionID:          ev.SessionID,
		TurnID:             ev.TurnID,
		Principal:          principal,
		InputHash:          inputHash,
		Lineage:            lineage,
		DefinitionID:       def.ID,
		DefinitionRevision: def.Revision,
		LeaseDuration:      h.leaseDuration(deadline),
		Decision:           decision,
	})
	if err != nil {
		d := diagnose(ctx, err)
		logRejected(log, "claim", d, err)
		writeError(w, d)
		return
	}
	log.Info("turn claimed", "ordinal", claim.Lease.Ordinal, "baseSequence", claim.BaseSequence,
		"operation", lineage.Operation, "sessionCreated", claim.Created,
		"definitionId", claim.Session.DefinitionID)

	runCtx := ctx
	if h.opts.CheckpointInterval > 0 {
		// A disconnect is not a stop: the turn runs to its end (as on
		// Lambda, where the invocation outlives its client) and a client
		// resumes it. Only the deadline and POST /stop end it.
		detached, cancelRun := context.WithDeadlineCause(context.WithoutCancel(r.Context()), deadline, errTurnDeadline)
		defer cancelRun()
		runCtx = detached
	}
	t := &run{
		h:         h,
		w:         w,
		reqCtx:    r.Context(),
		ctx:       runCtx,
		deadline:  deadline,
		log:       log,
		claim:     claim,
		sessionID: ev.SessionID,
		turnID:    ev.TurnID,
		lineage:   lineage,
		inputHash: inputHash,
		scope:     sc,
		compact:   compact,
		createdAt: protocol.FormatTime(claimedAt),
		startedAt: claimedAt,
	}
	t.user = userMessage(ev.TurnID, input, t.createdAt)
	if decision != nil {
		cf := claim.Decided()
		if cf == nil {
			t.failBeforeStream("decision", errDecisionMissing)
			return
		}
		t.approvals.decided, t.approvals.approve = cf, decision.Approve
		log.Info("confirmation claimed", "tool", cf.Action, "approve", decision.Approve, "parentTurnId", cf.TurnID)
	}
	t.serve(parent)
}

// authenticate runs the Authenticator on headers only, before any body
// byte is read (docs/design.md §4, §7). On failure it writes the error response.
func (h *handler) authenticate(ctx context.Context, w http.ResponseWriter, r *http.Request, log *slog.Logger) (chat.Principal, bool) {
	p, err := h.opts.Authenticator.Authenticate(r.WithContext(ctx))
	if err != nil {
		d := diagnose(ctx, err)
		logRejected(log, "authenticate", d, err)
		writeError(w, d)
		return chat.Principal{}, false
	}
	return p, true
}

// logRejected logs a request rejected at step; internal failures at error
// level with the error, client errors at info level without it (their
// text may name request values).
func logRejected(log *slog.Logger, step string, d protocol.Diagnostic, err error) {
	if d.Code == protocol.CodeServerInternal {
		log.Error("request failed", "step", step, "code", d.Code, "err", err)
		return
	}
	log.Info("request rejected", "step", step, "code", d.Code)
}

// isJSONContentType reports whether the lower-cased Content-Type starts
// with application/json; a missing one does not (docs/protocol.md §9 step 3).
func isJSONContentType(r *http.Request) bool {
	return strings.HasPrefix(strings.ToLower(r.Header.Get("Content-Type")), "application/json")
}

// parseScope reads SnapshotScopeHeader: absent or "session" is
// scopeSession, "turn" scopeTurn (case-insensitive, surrounding spaces
// ignored); anything else, a repeated header included, is invalid.
func parseScope(values []string) (scope, bool) {
	switch len(values) {
	case 0:
		return scopeSession, true
	case 1:
	default:
		return 0, false
	}
	switch v := strings.TrimSpace(values[0]); {
	case strings.EqualFold(v, "session"):
		return scopeSession, true
	case strings.EqualFold(v, "turn"):
		return scopeTurn, true
	}
	return 0, false
}

// readBody reads the body under the MaxBodyBytes cap (docs/protocol.md §9
// step 5): a declared Content-Length above the cap is 413 without
// reading; a body that passes the cap while read is 413 too. Function URL
// bodies flagged isBase64Encoded arrive decoded: lambdaurl.Wrap wraps them
// in a base64 decoder before the handler runs (aws-lambda-go v1.55.1
// lambdaurl/http_handler.go), so the cap applies to decoded bytes.
func (h *handler) readBody(ctx context.Context, w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	limit := h.opts.MaxBodyBytes
	if r.ContentLength > limit {
		writeError(w, protocol.NewDiagnostic(protocol.CodeRequestTooLarge))
		return nil, false
	}
	if r.Body == nil {
		writeError(w, protocol.NewDiagnostic(protocol.CodeRequestInvalidJSON))
		return nil, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge):
			writeError(w, protocol.NewDiagnostic(protocol.CodeRequestTooLarge))
		default:
			// A body that cannot be read (a broken connection, invalid
			// base64 from a function URL) is not valid JSON, unless the
			// request itself ended.
			if d, ok := contextDiagnostic(ctx); ok {
				writeError(w, d)
			} else {
				writeError(w, protocol.NewDiagnostic(protocol.CodeRequestInvalidJSON))
			}
		}
		return nil, false
	}
	return body, true
}

// decodeSubmit parses body as JSON (400 REQUEST_INVALID_JSON when empty
// or invalid) and decodes it as a client.turn.submit event (400
// REQUEST_INVALID_EVENT for any decoder failure or another event kind;
// the decoder's own code is not exposed, docs/protocol.md §9 step 6). A body
// that is a JSON string holding an event is rejected, not decoded twice
// (docs/design.md §2, unlike the reference's quirk).
func decodeSubmit(body []byte) (*protocol.Event, *protocol.Diagnostic) {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 || !json.Valid(trimmed) {
		d := protocol.NewDiagnostic(protocol.CodeRequestInvalidJSON)
		return nil, &d
	}
	invalid := protocol.NewDiagnostic(protocol.CodeRequestInvalidEvent)
	if trimmed[0] != '{' {
		return nil, &invalid
	}
	ev, d := protocol.DecodeTurnEvent(body)
	if d != nil || ev == nil || ev.Kind != protocol.EventSubmit || ev.Submit == nil {
		return nil, &invalid
	}
	return ev, nil
}

// checkLineage verifies a retry, edit or regenerate against its parent
// turn (docs/design.md §5): the parent must be a visible (not superseded) saved
// turn of this session, sourceMessageId one of its messages, and a retry
// or regenerate must repeat the parent's input (same HashInput). Any
// mismatch is errLineage; store errors are returned as they are.
func (h *handler) checkLineage(ctx context.Context, sessionID string, p chat.Principal, l protocol.Lineage, inputHash string) (*chat.Turn, error) {
	parent, err := h.opts.Store.FindTurn(ctx, sessionID, l.ParentTurnID, p)
	if errors.Is(err, chat.ErrTurnNotFound) {
		return nil, errLineage
	}
	if err != nil {
		return nil, err
	}
	if parent.Superseded || parent.Status == chat.TurnRunning {
		return nil, errLineage
	}
	found := false
	for _, m := range parent.Messages {
		if m.ID == l.SourceMessageID {
			found = true
			break
		}
	}
	if !found {
		return nil, errLineage
	}
	if l.Operation != protocol.OperationEdit && parent.InputHash != inputHash {
		return nil, errLineage
	}
	return parent, nil
}

// leaseDuration is the lease length of a claim: LeaseDuration, but never
// past the request deadline plus CleanupReserve (docs/design.md §4).
func (h *handler) leaseDuration(deadline time.Time) time.Duration {
	d := h.opts.LeaseDuration
	if ceiling := time.Until(deadline) + h.opts.CleanupReserve; ceiling < d {
		d = ceiling
	}
	if d < time.Millisecond {
		d = time.Millisecond
	}
	return d
}
