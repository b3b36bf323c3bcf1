package turn

import (
	"context"
	"errors"
	"net/http"

	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// errorCodes is the one table from domain errors to wire codes (STYLE
// "Errors"; docs/design.md §4). The HTTP status of each code is
// protocol.HTTPStatus. Order matters only for errors wrapping several
// sentinels, which none do.
var errorCodes = []struct {
	err  error
	code string
}{
	{auth.ErrUnauthenticated, protocol.CodeRequestUnauthenticated},
	{auth.ErrForbidden, protocol.CodeRequestForbidden},
	{chat.ErrSessionNotFound, protocol.CodeSessionNotFound},
	{chat.ErrSessionBusy, protocol.CodeSessionBusy},
	{chat.ErrTurnCompleted, protocol.CodeTurnAlreadyCompleted},
	{chat.ErrTurnIndeterminate, protocol.CodeTurnOutcomeIndeterminate},
	{chat.ErrTurnIDReused, protocol.CodeTurnIDReused},
	{chat.ErrConflict, protocol.CodeSessionConflict},
	{chat.ErrLeaseLost, protocol.CodeSessionConflict},
	{chat.ErrTurnNotActive, protocol.CodeTurnNotActive},
	{chat.ErrConfirmationNotFound, protocol.CodeConfirmationNotFound},
	{chat.ErrConfirmationDecided, protocol.CodeConfirmationDecided},
	{chat.ErrConfirmationExpired, protocol.CodeConfirmationExpired},
	{chat.ErrTurnNotFound, protocol.CodeTurnNotFound},
	{errLineage, protocol.CodeLineageInvalid},
}

// errLineage marks a submission whose lineage does not match a visible
// turn of the session (docs/design.md §5): 422 LINEAGE_INVALID.
var errLineage = errors.New("turn: lineage does not match a visible parent turn")

// diagnose maps err, returned while ctx was the request's context, to the
// diagnostic the client sees: a table entry; else SERVER_TIMEOUT (408)
// when the request deadline passed, REQUEST_CANCELLED (499) when the
// client went away; else SERVER_INTERNAL (500). err's text never reaches
// the client.
func diagnose(ctx context.Context, err error) protocol.Diagnostic {
	for _, e := range errorCodes {
		if errors.Is(err, e.err) {
			return protocol.NewDiagnostic(e.code)
		}
	}
	if d, ok := contextDiagnostic(ctx); ok {
		return d
	}
	return protocol.NewDiagnostic(protocol.CodeServerInternal)
}

// contextDiagnostic reports why ctx ended, if it did: SERVER_TIMEOUT for
// the request deadline (or an invocation deadline), REQUEST_CANCELLED for
// a client cancellation.
func contextDiagnostic(ctx context.Context) (protocol.Diagnostic, bool) {
	if ctx.Err() == nil {
		return protocol.Diagnostic{}, false
	}
	if cause := context.Cause(ctx); errors.Is(cause, errTurnDeadline) || errors.Is(cause, context.DeadlineExceeded) {
		return protocol.NewDiagnostic(protocol.CodeServerTimeout), true
	}
	return protocol.NewDiagnostic(protocol.CodeRequestCancelled), true
}

// writeError writes d as a JSON error body with d's HTTP status
// (docs/protocol.md §9 headers).
func writeError(w http.ResponseWriter, d protocol.Diagnostic) {
	writeErrorStatus(w, protocol.HTTPStatus(d.Code), d)
}

// writeErrorStatus writes d as a JSON error body with status.
// A 401 names the Bearer scheme (RFC 9110 §11.6.1), as the history and
// artifacts functions do.
func writeErrorStatus(w http.ResponseWriter, status int, d protocol.Diagnostic) {
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", "Bearer")
	}
	writeJSON(w, status, protocol.EncodeErrorBody(d))
}

// writeJSON writes a JSON body with the headers every JSON response of
// this handler carries. The write error is ignored: the client is gone
// and there is nobody left to tell.
func writeJSON(w http.ResponseWriter, status int, body []byte) {
	hd := w.Header()
	hd.Set("Content-Type", "application/json; charset=utf-8")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
