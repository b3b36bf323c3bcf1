package sessionapi

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// Request errors found by this package before or instead of a store call.
// They exist only to be mapped by errorTable.
var (
	errRouteNotFound        = errors.New("sessionapi: no such route")
	errMethodNotAllowed     = errors.New("sessionapi: method not allowed")
	errUnsupportedMediaType = errors.New("sessionapi: content type is not application/json")
	errBodyTooLarge         = errors.New("sessionapi: request body too large")
	errInvalidBody          = errors.New("sessionapi: request body is not a valid artifacts document")
	errInvalidQuery         = errors.New("sessionapi: invalid query parameter")
	errNotTrusted           = errors.New("sessionapi: artifact writes need the trusted principal")
)

// errorTable maps every error a handler can return to its diagnostic code,
// in one place (STYLE "Errors"); the status comes from protocol.HTTPStatus
// and the fixed message from protocol.NewDiagnostic. Entries are matched in
// order with errors.Is; an error matching none is 500 SERVER_INTERNAL.
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
var errorTable = []struct {
	err  error
	code string
}{
	{chat.ErrSessionNotFound, protocol.CodeSessionNotFound},
	{chat.ErrTurnNotFound, protocol.CodeTurnNotFound},
	{chat.ErrInvalidCursor, protocol.CodeRequestInvalidCursor},
	{chat.ErrInvalidRequest, protocol.CodeRequestInvalidQuery},
	{errInvalidQuery, protocol.CodeRequestInvalidQuery},
	{chat.ErrInvalidArtifact, protocol.CodeArtifactsInvalid},
	{errInvalidBody, protocol.CodeRequestInvalidBody},
	{auth.ErrUnauthenticated, protocol.CodeRequestUnauthenticated},
	{auth.ErrForbidden, protocol.CodeRequestForbidden},
	{errNotTrusted, protocol.CodeRequestForbidden},
	{errRouteNotFound, protocol.CodeRequestNotFound},
	{errMethodNotAllowed, protocol.CodeRequestMethodNotAllowed},
	{chat.ErrConflict, protocol.CodeSessionConflict},
	{errBodyTooLarge, protocol.CodeRequestTooLarge},
	{errUnsupportedMediaType, protocol.CodeRequestUnsupportedMediaType},
	{context.DeadlineExceeded, protocol.CodeServerTimeout},
	{context.Canceled, protocol.CodeRequestCancelled},
}

// diagnosticFor returns the diagnostic and HTTP status for err.
func diagnosticFor(err error) (protocol.Diagnostic, int) {
	code := protocol.CodeServerInternal
	for _, e := range errorTable {
		if errors.Is(err, e.err) {
			code = e.code
			break
		}
	}
	return protocol.NewDiagnostic(code), protocol.HTTPStatus(code)
}

// writeError writes the JSON error response for err: the diagnostic's fixed
// message only, never err's text.
func (s *server) writeError(w http.ResponseWriter, err error) {
	d, status := diagnosticFor(err)
	h := w.Header()
	if d.Code == protocol.CodeRequestMethodNotAllowed {
		d = protocol.MethodNotAllowed(strings.Split(h.Get("Allow"), ", ")...)
	}
	if status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", "Bearer")
	}
	writeBody(w, status, protocol.EncodeErrorBody(d))
}

// writeBody writes a JSON response with the headers every response carries
// (docs/protocol.md §9: content type with charset, no-store).
func writeBody(w http.ResponseWriter, status int, body []byte) {
	setJSONHeaders(w.Header())
	w.WriteHeader(status)
	_, _ = w.Write(body) // a failed write means the client is gone; nothing to report to it
}

// setJSONHeaders sets the headers of every response on h.
func setJSONHeaders(h http.Header) {
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
}
