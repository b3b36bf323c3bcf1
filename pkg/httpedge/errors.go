package httpedge

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/attach"
	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// Request errors found at the edge, before or instead of a store call.
// Each has one entry in the error table (see Diagnose); a handler may wrap
// them with a fixed reason for its log, never with request input.
var (
	// ErrNotFound is a path no route serves: 404 REQUEST_NOT_FOUND.
	ErrNotFound = errors.New("httpedge: no such route")
	// ErrMethodNotAllowed is a method the route does not serve: 405
	// REQUEST_METHOD_NOT_ALLOWED (RequireMethod sets the Allow header).
	ErrMethodNotAllowed = errors.New("httpedge: method not allowed")
	// ErrUnsupportedMediaType is a Content-Type other than
	// application/json, a missing one included: 415
	// REQUEST_UNSUPPORTED_MEDIA_TYPE.
	ErrUnsupportedMediaType = errors.New("httpedge: content type is not application/json")
	// ErrBodyTooLarge is a body, declared or read, over the cap: 413
	// REQUEST_TOO_LARGE.
	ErrBodyTooLarge = errors.New("httpedge: request body too large")
	// ErrBodyTimeout is a body that did not arrive before the server's
	// read deadline (the dev server's -read-timeout; a function URL
	// delivers a body whole): 408 SERVER_TIMEOUT, the protocol's one code
	// for 408 (docs/protocol.md#server-handler-behaviour), retryable. net/http cancels the
	// request's context when the read fails, which alone would read as
	// the client going away (499).
	ErrBodyTimeout = errors.New("httpedge: request body read timed out")
	// ErrInvalidHeader is a header the route reads with a value it does
	// not accept: 400 REQUEST_INVALID_HEADER.
	ErrInvalidHeader = errors.New("httpedge: invalid header")
	// ErrInvalidQuery is a query parameter the route does not accept: 400
	// REQUEST_INVALID_QUERY.
	ErrInvalidQuery = errors.New("httpedge: invalid query parameter")
	// ErrInvalidJSON is a body that is empty, unreadable or not JSON where
	// the route expects a protocol event: 400 REQUEST_INVALID_JSON.
	ErrInvalidJSON = errors.New("httpedge: request body is not valid JSON")
	// ErrInvalidEvent is valid JSON that is not the event the route
	// expects: 400 REQUEST_INVALID_EVENT.
	ErrInvalidEvent = errors.New("httpedge: request body is not a valid turn submission")
	// ErrInvalidBody is a body that is empty, unreadable or not the JSON
	// document the route expects (routes that take no protocol event): 400
	// REQUEST_INVALID_BODY.
	ErrInvalidBody = errors.New("httpedge: invalid request body")
	// ErrLineageInvalid is a retry, edit or regenerate whose lineage does not
	// name a visible parent turn of the session
	// (docs/design.md#storage-one-dynamodb-table): 422 LINEAGE_INVALID.
	ErrLineageInvalid = errors.New("httpedge: lineage does not match a visible parent turn")
	// ErrMultitaskNotAllowed is a submit naming a multitask policy its
	// session's definition, or the deployment, does not allow
	// (docs/multitask.md): 422 MULTITASK_NOT_ALLOWED.
	ErrMultitaskNotAllowed = errors.New("httpedge: multitask policy not allowed")
)

// errorTable is the one table from errors to diagnostic codes (the HTTP
// status of each code is protocol.HTTPStatus). Entries are matched in
// order with errors.Is; order matters only for an error wrapping several
// sentinels.
var errorTable = []struct {
	err  error
	code string
}{
	{auth.ErrUnauthenticated, protocol.CodeRequestUnauthenticated},
	{auth.ErrForbidden, protocol.CodeRequestForbidden},
	{chat.ErrSessionNotFound, protocol.CodeSessionNotFound},
	{chat.ErrTurnNotFound, protocol.CodeTurnNotFound},
	{chat.ErrQueueFull, protocol.CodeSessionQueueFull},
	{chat.ErrSessionBusy, protocol.CodeSessionBusy},
	{chat.ErrTurnCompleted, protocol.CodeTurnAlreadyCompleted},
	{chat.ErrTurnIndeterminate, protocol.CodeTurnOutcomeIndeterminate},
	{chat.ErrTurnIDReused, protocol.CodeTurnIDReused},
	{chat.ErrConflict, protocol.CodeSessionConflict},
	{chat.ErrLeaseLost, protocol.CodeSessionConflict},
	{chat.ErrTurnNotActive, protocol.CodeTurnNotActive},
	{chat.ErrNotSelectable, protocol.CodeTurnNotSelectable},
	{chat.ErrLineageStale, protocol.CodeLineageInvalid},
	{chat.ErrSiblingsFull, protocol.CodeLineageInvalid},
	{chat.ErrConfirmationNotFound, protocol.CodeConfirmationNotFound},
	{chat.ErrConfirmationDecided, protocol.CodeConfirmationDecided},
	{chat.ErrConfirmationExpired, protocol.CodeConfirmationExpired},
	{chat.ErrInvalidCursor, protocol.CodeRequestInvalidCursor},
	{chat.ErrInvalidArtifact, protocol.CodeArtifactsInvalid},
	{chat.ErrInvalidTitle, protocol.CodeRequestInvalidBody},
	{chat.ErrInvalidFeedback, protocol.CodeRequestInvalidBody},
	{ErrNotFound, protocol.CodeRequestNotFound},
	{ErrMethodNotAllowed, protocol.CodeRequestMethodNotAllowed},
	{ErrUnsupportedMediaType, protocol.CodeRequestUnsupportedMediaType},
	{ErrBodyTooLarge, protocol.CodeRequestTooLarge},
	{ErrBodyTimeout, protocol.CodeServerTimeout},
	{ErrInvalidHeader, protocol.CodeRequestInvalidHeader},
	{ErrInvalidQuery, protocol.CodeRequestInvalidQuery},
	{ErrInvalidJSON, protocol.CodeRequestInvalidJSON},
	{ErrInvalidEvent, protocol.CodeRequestInvalidEvent},
	{ErrInvalidBody, protocol.CodeRequestInvalidBody},
	{ErrLineageInvalid, protocol.CodeLineageInvalid},
	{ErrMultitaskNotAllowed, protocol.CodeMultitaskNotAllowed},
	{chat.ErrQuotaExceeded, protocol.CodeQuotaExceeded},
	{chat.ErrQuotaUnavailable, protocol.CodeQuotaUnavailable},
	{attach.ErrMediaType, protocol.CodeAttachmentTypeUnsupported},
	{attach.ErrSize, protocol.CodeAttachmentTooLarge},
	{attach.ErrEmpty, protocol.CodeAttachmentInvalid},
	{attach.ErrFilename, protocol.CodeAttachmentInvalid},
	{attach.ErrContent, protocol.CodeAttachmentInvalid},
	{attach.ErrUsed, protocol.CodeAttachmentInvalid},
	{attach.ErrTooMany, protocol.CodeAttachmentInvalid},
	{attach.ErrNotFound, protocol.CodeAttachmentNotFound},
	{attach.ErrExpired, protocol.CodeAttachmentExpired},
}

// QuotaUnavailableRetry is the Retry-After of QUOTA_UNAVAILABLE
// (docs/quotas.md).
const QuotaUnavailableRetry = time.Second

// RetryHeaders sets on h what the answer to err says beside its body: for
// a quota refusal (a *chat.QuotaError), Retry-After in whole seconds
// (rounded up, at least 1) and api.QuotaHeader; for an unavailable quota
// check, Retry-After QuotaUnavailableRetry. Other errors set nothing.
func RetryHeaders(h http.Header, err error) {
	var qe *chat.QuotaError
	switch {
	case errors.As(err, &qe):
		h.Set("Retry-After", retrySeconds(qe.RetryAfterDuration()))
		h.Set(api.QuotaHeader, qe.Scope+"."+qe.Name)
	case errors.Is(err, chat.ErrQuotaUnavailable):
		h.Set("Retry-After", retrySeconds(QuotaUnavailableRetry))
	}
}

// retrySeconds formats d as Retry-After delay-seconds (RFC 9110
// §10.2.3), rounded up.
func retrySeconds(d time.Duration) string {
	return strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10)
}

// Codes returns every code Diagnose can return, without repeats: the
// error table's, in its order, then SERVER_TIMEOUT, REQUEST_CANCELLED and
// SERVER_INTERNAL. The HTTP status of each is protocol.HTTPStatus's; the
// one table of codes and statuses in docs/design.md#errors is checked
// against this list (internal/docstest).
func Codes() []string {
	var codes []string
	for _, e := range errorTable {
		codes = append(codes, e.code)
	}
	codes = append(codes, protocol.CodeServerTimeout, protocol.CodeRequestCancelled, protocol.CodeServerInternal)
	var out []string
	for _, c := range codes {
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// Diagnose maps err, returned while ctx was the request's context, to the
// diagnostic the client sees, in this order:
//
//  1. an entry of the error table (the domain sentinels of pkg/chat and
//     pkg/auth, and this package's request errors);
//  2. when ctx has ended: SERVER_TIMEOUT (408) for a deadline,
//     REQUEST_CANCELLED (499) for a cancellation (see ContextDiagnostic);
//  3. SERVER_INTERNAL (500) for anything else.
//
// Only the request's own context decides 408 and 499: an err that wraps
// context.DeadlineExceeded while ctx is live (a dependency that hung until
// its attempt timeouts ran out) is a 500, since the request's deadline
// has not passed. The diagnostic carries the code's fixed message: err's
// text never reaches the client (log it instead when the code is
// SERVER_INTERNAL).
func Diagnose(ctx context.Context, err error) protocol.Diagnostic {
	for _, e := range errorTable {
		if errors.Is(err, e.err) {
			return protocol.NewDiagnostic(e.code)
		}
	}
	if d, ok := ContextDiagnostic(ctx); ok {
		return d
	}
	return protocol.NewDiagnostic(protocol.CodeServerInternal)
}

// ContextDiagnostic reports why ctx ended, if it did: SERVER_TIMEOUT when
// its deadline passed (ctx.Err or its cause is, or wraps,
// context.DeadlineExceeded), REQUEST_CANCELLED otherwise (the client went
// away). ok is false while ctx is live.
func ContextDiagnostic(ctx context.Context) (d protocol.Diagnostic, ok bool) {
	if ctx.Err() == nil {
		return protocol.Diagnostic{}, false
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		return protocol.NewDiagnostic(protocol.CodeServerTimeout), true
	}
	return protocol.NewDiagnostic(protocol.CodeRequestCancelled), true
}
