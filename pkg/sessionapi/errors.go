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

// Errors map to diagnostics through the shared edge's one table
// (httpedge.Diagnose); the statuses of this package's routes:
//
//	404 SESSION_NOT_FOUND        no such session, another principal's, or an id that is not a SafeId
//	404 TURN_NOT_FOUND           no such stored turn in that session, or a turn id that is not a SafeId
//	400 REQUEST_INVALID_CURSOR   a tampered cursor, or one from another session or order
//	400 REQUEST_INVALID_QUERY    limit not an integer 1..100, order not asc|desc, a repeated or undecodable parameter
//	400 ARTIFACTS_INVALID        a well-formed reference with a bad artifactType or entryPath
//	400 REQUEST_INVALID_BODY     a PUT body that is not exactly {"artifacts":[{entryPath, artifactType}...]}
//	401 REQUEST_UNAUTHENTICATED  no or bad credentials
//	403 REQUEST_FORBIDDEN        the authenticator refused the caller, or a PUT by an untrusted principal
//	404 REQUEST_NOT_FOUND        no such route
//	405 REQUEST_METHOD_NOT_ALLOWED
//	409 SESSION_CONFLICT         a concurrent write won a compare-and-set (retryable)
//	413 REQUEST_TOO_LARGE        a body over MaxBodyBytes
//	415 REQUEST_UNSUPPORTED_MEDIA_TYPE
//	408 SERVER_TIMEOUT           the invocation's deadline passed (retryable)
//	499 REQUEST_CANCELLED        the client went away (retryable)
//	500 SERVER_INTERNAL          anything else (retryable); the error text goes to the log only

// writeBody writes a JSON response with the headers every response carries
// (docs/protocol.md §9: content type with charset, no-store).
func writeBody(w http.ResponseWriter, status int, body []byte) {
	httpedge.WriteJSON(w, status, body)
}
