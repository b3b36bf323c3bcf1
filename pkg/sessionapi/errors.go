package sessionapi

import (
	"fmt"
	"net/http"

	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/httpedge"
)

// errNotTrusted is a PUT of artifact references by a principal that is not
// the trusted one: 403 REQUEST_FORBIDDEN, as any forbidden caller.
var errNotTrusted = fmt.Errorf("sessionapi: artifact writes need the trusted principal: %w", auth.ErrForbidden)

// errNotTrustedUsage is a tenant usage report asked for by anyone but the
// tenant's trusted principal: 403 REQUEST_FORBIDDEN.
var errNotTrustedUsage = fmt.Errorf("sessionapi: a tenant's usage is for its trusted principal: %w", auth.ErrForbidden)

// Errors map to diagnostics through the shared edge's one table
// (httpedge.Diagnose); each code's HTTP status and message are in the one
// table of docs/design.md#errors. The routes of this package answer
// SESSION_NOT_FOUND (also for an id that is not a SafeId), TURN_NOT_FOUND,
// REQUEST_INVALID_CURSOR, REQUEST_INVALID_QUERY, ARTIFACTS_INVALID,
// REQUEST_INVALID_BODY and REQUEST_FORBIDDEN (a PUT by an untrusted
// principal) beside the edge's own.

// writeBody writes a JSON response with the headers every response carries
// (docs/protocol.md#server-handler-behaviour: content type with charset,
// no-store).
func writeBody(w http.ResponseWriter, status int, body []byte) {
	httpedge.WriteJSON(w, status, body)
}
