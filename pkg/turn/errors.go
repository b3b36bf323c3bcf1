package turn

import (
	"context"
	"net/http"

	"github.com/turnstream/turnstream/pkg/httpedge"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// The turn handler's error responses are the shared HTTP edge's
// (pkg/httpedge): one error table, one JSON error writer. New code calls
// httpedge directly; these forwarders remain only for the calls in
// run.go, submit.go, resume.go and stop.go, and go with them.

// diagnose maps err, returned while ctx was the request's context, to the
// diagnostic the client sees (httpedge.Diagnose). err's text never
// reaches the client.
func diagnose(ctx context.Context, err error) protocol.Diagnostic {
	return httpedge.Diagnose(ctx, err)
}

// contextDiagnostic reports why ctx ended, if it did: SERVER_TIMEOUT for
// the request deadline (or an invocation deadline), REQUEST_CANCELLED for
// a client cancellation (httpedge.ContextDiagnostic).
func contextDiagnostic(ctx context.Context) (protocol.Diagnostic, bool) {
	return httpedge.ContextDiagnostic(ctx)
}

// writeError writes d as a JSON error body with d's HTTP status
// (httpedge.WriteError; docs/protocol.md#server-handler-behaviour headers).
func writeError(w http.ResponseWriter, d protocol.Diagnostic) {
	httpedge.WriteError(w, d)
}

// writeJSON writes a JSON body with the headers every JSON response
// carries (httpedge.WriteJSON).
func writeJSON(w http.ResponseWriter, status int, body []byte) {
	httpedge.WriteJSON(w, status, body)
}
