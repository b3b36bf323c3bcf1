package protocol

import (
	"maps"
	"net/http"
	"slices"
	"strings"
)

// Diagnostic codes: the one table of every code turnstream emits, with its
// fixed message, retryability and HTTP status (see NewDiagnostic and
// HTTPStatus). Codes without a turnstream-extension note are AgentsKit's
// (docs/protocol.md#payloads, docs/protocol.md#ordered-assistant-content,
// docs/protocol.md#component-frames, docs/protocol.md#the-session-envelope,
// docs/protocol.md#server-handler-behaviour).
const (
	// Decoder results of DecodeTurnEvent
	// (docs/protocol.md#decoding-untrusted-events); never HTTP bodies.
	CodeProtocolUnsupportedVersion = "PROTOCOL_UNSUPPORTED_VERSION"
	CodeProtocolUnknownEvent       = "PROTOCOL_UNKNOWN_EVENT"
	CodeProtocolInvalidPayload     = "PROTOCOL_INVALID_PAYLOAD"

	// HTTP request checks of the turn handler
	// (docs/protocol.md#server-handler-behaviour).
	CodeRequestMethodNotAllowed     = "REQUEST_METHOD_NOT_ALLOWED"
	CodeRequestUnsupportedMediaType = "REQUEST_UNSUPPORTED_MEDIA_TYPE"
	CodeRequestTooLarge             = "REQUEST_TOO_LARGE"
	CodeRequestInvalidJSON          = "REQUEST_INVALID_JSON"
	CodeRequestInvalidEvent         = "REQUEST_INVALID_EVENT"

	// Retryable failures, as an HTTP body or a stream diagnostic
	// (docs/protocol.md#server-handler-behaviour).
	CodeSessionBusy      = "SESSION_BUSY"
	CodeSessionConflict  = "SESSION_CONFLICT"
	CodeServerTimeout    = "SERVER_TIMEOUT"
	CodeRequestCancelled = "REQUEST_CANCELLED"
	CodeServerInternal   = "SERVER_INTERNAL"

	// CodeChatTurnFailed is AgentsKit's snapshot error of a failed turn.
	CodeChatTurnFailed = "CHAT_TURN_FAILED"
	// CodeServerInvalidConfig is a handler construction failure.
	CodeServerInvalidConfig = "SERVER_INVALID_CONFIG"
	// CodeAdapterFailed is the adapter failure of AgentsKit's fixtures.
	CodeAdapterFailed = "ADAPTER_FAILED"

	// turnstream extensions (docs/design.md#the-turn-pipeline,
	// docs/design.md#storage-one-dynamodb-table,
	// docs/design.md#history-and-artifacts-api,
	// docs/design.md#authentication-and-tenancy).
	CodeSessionNotFound          = "SESSION_NOT_FOUND"
	CodeTurnAlreadyCompleted     = "TURN_ALREADY_COMPLETED"
	CodeTurnOutcomeIndeterminate = "TURN_OUTCOME_INDETERMINATE"
	CodeTurnIDReused             = "TURN_ID_REUSED"
	CodeTurnNotFound             = "TURN_NOT_FOUND"
	CodeTurnNotActive            = "TURN_NOT_ACTIVE"
	// CodeTurnNotSelectable is a select of a turn that is not a sibling
	// on the session's active branch (docs/branches.md).
	CodeTurnNotSelectable = "TURN_NOT_SELECTABLE"
	CodeLineageInvalid    = "LINEAGE_INVALID"
	// Confirmation decisions (docs/approvals.md): no pending confirmation
	// of the session has the token; it was decided (or superseded)
	// already; it expired (CONFIRMATION_TTL).
	CodeConfirmationNotFound   = "CONFIRMATION_NOT_FOUND"
	CodeConfirmationDecided    = "CONFIRMATION_DECIDED"
	CodeConfirmationExpired    = "CONFIRMATION_EXPIRED"
	CodeRequestUnauthenticated = "REQUEST_UNAUTHENTICATED"
	CodeRequestForbidden       = "REQUEST_FORBIDDEN"
	CodeRequestNotFound        = "REQUEST_NOT_FOUND"
	CodeRequestInvalidQuery    = "REQUEST_INVALID_QUERY"
	CodeRequestInvalidCursor   = "REQUEST_INVALID_CURSOR"
	CodeRequestInvalidBody     = "REQUEST_INVALID_BODY"
	// CodeRequestInvalidHeader is a request header with an unsupported value
	// (the turn handler's X-Turnstream-Snapshot-Scope,
	// docs/design.md#snapshots).
	CodeRequestInvalidHeader = "REQUEST_INVALID_HEADER"
	CodeArtifactsInvalid     = "ARTIFACTS_INVALID"
	// CodeTurnInterrupted is the snapshot error of a turn ended by the stop route.
	CodeTurnInterrupted = "TURN_INTERRUPTED"
	// CodeModelFailed is the snapshot error of a failed model request;
	// retryable by default, the provider may say otherwise.
	CodeModelFailed = "MODEL_FAILED"
	// CodeTurnLost is the stored error of a turn whose process stopped
	// (crashed, or lost its lease) before it finished: the next claim of
	// the session, once the lease has expired, closes the turn with this
	// code. Retryable: the client may submit the input again.
	CodeTurnLost = "TURN_LOST"

	// Messages sent while a turn runs (docs/multitask.md). A session with
	// MAX_QUEUED_TURNS turns queued answers SESSION_QUEUE_FULL (409,
	// retryable); a policy the session's definition does not allow is
	// MULTITASK_NOT_ALLOWED (422). A queued turn that never ran is stored
	// with TURN_QUEUE_EXPIRED (it waited past QUEUED_TURN_TTL; retryable:
	// submit it again) or TURN_CANCELLED (POST /stop named it).
	CodeSessionQueueFull    = "SESSION_QUEUE_FULL"
	CodeMultitaskNotAllowed = "MULTITASK_NOT_ALLOWED"
	CodeTurnQueueExpired    = "TURN_QUEUE_EXPIRED"
	CodeTurnCancelled       = "TURN_CANCELLED"

	// Quotas and budgets (docs/quotas.md). A submit a quota refuses now
	// is QUOTA_EXCEEDED (429 with Retry-After, retryable after that wait);
	// one whose quotas could not be read, in a deployment that fails
	// closed, QUOTA_UNAVAILABLE (503, retryable). A turn that reaches a
	// limit while it runs (a token quota crossed by a model call, or one
	// of its definition's budgets: output tokens, tool calls, wall time)
	// ends with LIMIT_EXCEEDED in its error snapshot, its partial answer
	// kept, the limit named in the assistant message's metadata (not
	// retryable: the same turn would meet it again).
	CodeQuotaExceeded    = "QUOTA_EXCEEDED"
	CodeQuotaUnavailable = "QUOTA_UNAVAILABLE"
	CodeLimitExceeded    = "LIMIT_EXCEEDED"

	// Attachments (docs/attachments.md): a declared upload of a media
	// type turnstream does not accept (415) or over its type's limit
	// (413); an attachment that is invalid (an empty or badly named
	// file, bytes that are not of its type, one used by another turn:
	// 400), that no upload of the caller's session holds (404), or that
	// waited too long to be used (410).
	CodeAttachmentTypeUnsupported = "ATTACHMENT_TYPE_UNSUPPORTED"
	CodeAttachmentTooLarge        = "ATTACHMENT_TOO_LARGE"
	CodeAttachmentInvalid         = "ATTACHMENT_INVALID"
	CodeAttachmentNotFound        = "ATTACHMENT_NOT_FOUND"
	CodeAttachmentExpired         = "ATTACHMENT_EXPIRED"

	// Ordered assistant content (docs/protocol.md#ordered-assistant-content).
	CodeAssistantContentInvalidRecord      = "ASSISTANT_CONTENT_INVALID_RECORD"
	CodeAssistantContentUnsupportedVersion = "ASSISTANT_CONTENT_UNSUPPORTED_VERSION"
	CodeAssistantContentLimitExceeded      = "ASSISTANT_CONTENT_LIMIT_EXCEEDED"

	// Component frames and manifests (docs/protocol.md#component-frames).
	CodeComponentInvalidFrame       = "COMPONENT_INVALID_FRAME"
	CodeComponentUnsupportedVersion = "COMPONENT_UNSUPPORTED_VERSION"
	CodeComponentUnknownType        = "COMPONENT_UNKNOWN_TYPE"
	CodeComponentUnknown            = "COMPONENT_UNKNOWN"
	CodeComponentInvalidProps       = "COMPONENT_INVALID_PROPS"

	// Session envelope (docs/protocol.md#the-session-envelope).
	CodeSessionInvalidSnapshot    = "SESSION_INVALID_SNAPSHOT"
	CodeSessionUnsupportedVersion = "SESSION_UNSUPPORTED_VERSION"
)

// MessageTurnEventNotJSON is the message of the PROTOCOL_INVALID_PAYLOAD
// diagnostic DecodeTurnEvent returns when its input is not strict JSON
// (docs/protocol.md#decoding-untrusted-events). A handler that answers
// unparsable bodies with REQUEST_INVALID_JSON and other failures with
// REQUEST_INVALID_EVENT (docs/protocol.md#server-handler-behaviour) tells the
// two apart by this message.
const MessageTurnEventNotJSON = "Turn event is not valid JSON."

// Fixed messages used in place of a code's table message by the decoders whose
// code has two messages (docs/protocol.md#ordered-assistant-content,
// docs/protocol.md#component-frames, docs/protocol.md#the-session-envelope).
const (
	msgContentRecordLimit     = "Assistant content envelope exceeds its record limit."
	msgContentEnvelopeInvalid = "Assistant content envelope is invalid."
	msgComponentFrameNotJSON  = "Component frame is not valid JSON."
	msgSessionSnapshotNotJSON = "Session snapshot is not valid JSON."
)

// statusNotHTTP marks a code that never travels as an HTTP error body.
const statusNotHTTP = 0

type codeInfo struct {
	message   string
	retryable bool
	status    int // statusNotHTTP when the code never travels as an HTTP error body
}

// codes is the single table of codes, messages, retryability and HTTP status.
var codes = map[string]codeInfo{
	CodeProtocolUnsupportedVersion: {"Turn event uses an unsupported protocol version.", false, statusNotHTTP},
	CodeProtocolUnknownEvent:       {"Turn event kind is unknown.", false, statusNotHTTP},
	CodeProtocolInvalidPayload:     {"Turn event payload is invalid.", false, statusNotHTTP},

	CodeRequestMethodNotAllowed:     {"Only POST is supported.", false, http.StatusMethodNotAllowed},
	CodeRequestUnsupportedMediaType: {"Content-Type must be application/json.", false, http.StatusUnsupportedMediaType},
	CodeRequestTooLarge:             {"Request body is too large.", false, http.StatusRequestEntityTooLarge},
	CodeRequestInvalidJSON:          {"Request body is not valid JSON.", false, http.StatusBadRequest},
	CodeRequestInvalidEvent:         {"Request body must be a valid turn submission.", false, http.StatusBadRequest},

	CodeSessionBusy:      {"Another turn is active for this session.", true, http.StatusConflict},
	CodeSessionConflict:  {"Another turn is active for this session.", true, http.StatusConflict},
	CodeServerTimeout:    {"The chat request timed out.", true, http.StatusRequestTimeout},
	CodeRequestCancelled: {"The chat request was cancelled.", true, 499},
	CodeServerInternal:   {"The chat request failed.", true, http.StatusInternalServerError},

	CodeChatTurnFailed:      {"The chat turn failed.", true, statusNotHTTP},
	CodeServerInvalidConfig: {"The chat handler configuration is invalid.", false, statusNotHTTP},
	CodeAdapterFailed:       {"The adapter failed.", false, statusNotHTTP},

	CodeSessionNotFound:           {"Session not found.", false, http.StatusNotFound},
	CodeTurnAlreadyCompleted:      {"This turn has already completed.", false, http.StatusConflict},
	CodeTurnOutcomeIndeterminate:  {"The outcome of this turn is unknown.", false, http.StatusConflict},
	CodeTurnIDReused:              {"The turn id was already used with a different input.", false, http.StatusUnprocessableEntity},
	CodeTurnNotFound:              {"Turn not found.", false, http.StatusNotFound},
	CodeTurnNotActive:             {"The turn is not running.", false, http.StatusConflict},
	CodeTurnNotSelectable:         {"The turn is not a sibling on the active branch.", false, http.StatusConflict},
	CodeLineageInvalid:            {"The turn lineage does not match this session.", false, http.StatusUnprocessableEntity},
	CodeConfirmationNotFound:      {"Confirmation not found.", false, http.StatusNotFound},
	CodeConfirmationDecided:       {"This confirmation has already been decided.", false, http.StatusConflict},
	CodeConfirmationExpired:       {"This confirmation has expired.", false, http.StatusGone},
	CodeRequestUnauthenticated:    {"Authentication is required.", false, http.StatusUnauthorized},
	CodeRequestForbidden:          {"The caller may not perform this request.", false, http.StatusForbidden},
	CodeRequestNotFound:           {"No such route.", false, http.StatusNotFound},
	CodeRequestInvalidQuery:       {"Query parameters are invalid.", false, http.StatusBadRequest},
	CodeRequestInvalidCursor:      {"The page cursor is invalid.", false, http.StatusBadRequest},
	CodeRequestInvalidBody:        {"Request body is invalid.", false, http.StatusBadRequest},
	CodeRequestInvalidHeader:      {"A request header has an unsupported value.", false, http.StatusBadRequest},
	CodeArtifactsInvalid:          {"Artifact references are invalid.", false, http.StatusBadRequest},
	CodeTurnInterrupted:           {"The turn was stopped.", false, statusNotHTTP},
	CodeModelFailed:               {"The model request failed.", true, statusNotHTTP},
	CodeTurnLost:                  {"The turn stopped before it finished.", true, statusNotHTTP},
	CodeSessionQueueFull:          {"Too many turns are queued for this session.", true, http.StatusConflict},
	CodeMultitaskNotAllowed:       {"This session does not allow that multitask policy.", false, http.StatusUnprocessableEntity},
	CodeTurnQueueExpired:          {"The queued turn expired before it could run.", true, statusNotHTTP},
	CodeTurnCancelled:             {"The queued turn was cancelled before it ran.", false, statusNotHTTP},
	CodeQuotaExceeded:             {"A usage quota does not allow this request now.", true, http.StatusTooManyRequests},
	CodeQuotaUnavailable:          {"Usage quotas could not be checked.", true, http.StatusServiceUnavailable},
	CodeLimitExceeded:             {"The turn reached a usage limit.", false, statusNotHTTP},
	CodeAttachmentTypeUnsupported: {"This type of file cannot be attached.", false, http.StatusUnsupportedMediaType},
	CodeAttachmentTooLarge:        {"The file is too large to attach.", false, http.StatusRequestEntityTooLarge},
	CodeAttachmentInvalid:         {"The attachment is invalid.", false, http.StatusBadRequest},
	CodeAttachmentNotFound:        {"Attachment not found.", false, http.StatusNotFound},
	CodeAttachmentExpired:         {"The attachment has expired.", false, http.StatusGone},

	CodeAssistantContentInvalidRecord:      {"Assistant content record is invalid.", false, statusNotHTTP},
	CodeAssistantContentUnsupportedVersion: {"Assistant content envelope uses an unsupported version.", false, statusNotHTTP},
	CodeAssistantContentLimitExceeded:      {"Assistant content envelope exceeds its safety limit.", false, statusNotHTTP},

	CodeComponentInvalidFrame:       {"Component frame payload is invalid.", false, statusNotHTTP},
	CodeComponentUnsupportedVersion: {"Component frame uses an unsupported version.", false, statusNotHTTP},
	CodeComponentUnknownType:        {"Component frame type is unknown.", false, statusNotHTTP},
	CodeComponentUnknown:            {"Component is not registered.", false, statusNotHTTP},
	CodeComponentInvalidProps:       {"Component props are invalid.", false, statusNotHTTP},

	CodeSessionInvalidSnapshot:    {"Session snapshot payload is invalid.", false, statusNotHTTP},
	CodeSessionUnsupportedVersion: {"Session snapshot uses an unsupported version.", false, statusNotHTTP},
}

// Codes returns every code of the table above, sorted: each code a
// diagnostic from turnstream can carry (the TypeScript client's WireCode
// type is generated from it, pkg/api).
func Codes() []string { return slices.Sorted(maps.Keys(codes)) }

// NewDiagnostic returns the diagnostic of code: version 1, the code's fixed
// message and its retryability from the table above. An unknown code
// yields SERVER_INTERNAL's diagnostic, so a typo can never leak text.
// Callers may override Retryable where the table says so (MODEL_FAILED).
func NewDiagnostic(code string) Diagnostic {
	info, ok := codes[code]
	if !ok {
		code, info = CodeServerInternal, codes[CodeServerInternal]
	}
	return Diagnostic{Version: 1, Code: code, Message: info.message, Retryable: info.retryable}
}

// MethodNotAllowed returns REQUEST_METHOD_NOT_ALLOWED naming the methods a
// route accepts, so the message never contradicts the response's Allow header.
// For the turn route ("POST") it is exactly AgentsKit's fixed message "Only
// POST is supported." (docs/protocol.md#server-handler-behaviour);
// turnstream's other routes (history, artifacts, capabilities) name their own
// methods (turnstream extension), e.g. "Only GET and PUT are supported.".
// Methods must be HTTP method tokens from the route table, never request
// input.
func MethodNotAllowed(allowed ...string) Diagnostic {
	d := NewDiagnostic(CodeRequestMethodNotAllowed)
	switch len(allowed) {
	case 0:
	case 1:
		d.Message = "Only " + allowed[0] + " is supported."
	default:
		d.Message = "Only " + strings.Join(allowed[:len(allowed)-1], ", ") + " and " + allowed[len(allowed)-1] + " are supported."
	}
	return d
}

// HTTPStatus returns the HTTP status for an error body carrying code
// (docs/protocol.md#server-handler-behaviour: 405, 415, 413, 400, 409, 408,
// 499, 500; turnstream extensions 401, 403, 404, 409, 410, 422, 429, 503). Codes that never
// travel as an HTTP error body (decoder results, snapshot errors, content,
// component and session codes) and unknown codes map to 500.
func HTTPStatus(code string) int {
	if info, ok := codes[code]; ok && info.status != statusNotHTTP {
		return info.status
	}
	return http.StatusInternalServerError
}

// EncodeErrorBody returns the HTTP error body of d
// (docs/protocol.md#server-handler-behaviour):
// {"error":{"version":1,"code":…,"message":…,"retryable":…}}. Version is
// always written as 1 and EventID is not part of the body.
func EncodeErrorBody(d Diagnostic) []byte {
	b := make([]byte, 0, 64+len(d.Code)+len(d.Message))
	b = append(b, `{"error":`...)
	b = appendDiagnostic(b, &d)
	return append(b, '}')
}

// EncodeDecoderDiagnostic returns a decoder result as AgentsKit encodes it
// (docs/protocol.md#decoding-untrusted-events, fixtures 7, 11, 12):
// {"code":…,"message":…,"retryable":false} with "eventId" last, only
// when d.EventID is set. This is the shape turnctl validate prints.
func EncodeDecoderDiagnostic(d Diagnostic) []byte {
	b := make([]byte, 0, 64+len(d.Code)+len(d.Message)+len(d.EventID))
	b = append(b, `{"code":`...)
	b = appendString(b, d.Code)
	b = append(b, `,"message":`...)
	b = appendString(b, d.Message)
	b = append(b, `,"retryable":`...)
	b = appendBool(b, d.Retryable)
	if d.EventID != "" {
		b = append(b, `,"eventId":`...)
		b = appendString(b, d.EventID)
	}
	return append(b, '}')
}

// appendDiagnostic writes a TurnDiagnostic {version,code,message,retryable}.
func appendDiagnostic(b []byte, d *Diagnostic) []byte {
	b = append(b, `{"version":1,"code":`...)
	b = appendString(b, d.Code)
	b = append(b, `,"message":`...)
	b = appendString(b, d.Message)
	b = append(b, `,"retryable":`...)
	b = appendBool(b, d.Retryable)
	return append(b, '}')
}

// appendString writes s, replacing invalid UTF-8 (which no table entry
// contains) rather than failing: used only for text the package controls
// or has validated.
func appendString(b []byte, s string) []byte {
	out, ok := appendJSONString(b, s)
	if !ok {
		out, _ = appendJSONString(b, "\uFFFD")
	}
	return out
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, "true"...)
	}
	return append(b, "false"...)
}
