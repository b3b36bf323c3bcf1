package protocol_test

import (
	"testing"

	"github.com/turnstream/turnstream/pkg/protocol"
)

// TestDiagnosticTable pins every code's message, retryability and HTTP status
// against docs/protocol.md#payloads,
// docs/protocol.md#decoding-untrusted-events,
// docs/protocol.md#the-canonical-message-record,
// docs/protocol.md#the-snapshot-cursor,
// docs/protocol.md#ordered-assistant-content,
// docs/protocol.md#component-frames, docs/protocol.md#the-session-envelope,
// docs/protocol.md#server-handler-behaviour and the turnstream extensions.
func TestDiagnosticTable(t *testing.T) {
	tests := []struct {
		code      string
		status    int
		retryable bool
		message   string
	}{
		{protocol.CodeProtocolUnsupportedVersion, 500, false, "Turn event uses an unsupported protocol version."},
		{protocol.CodeProtocolUnknownEvent, 500, false, "Turn event kind is unknown."},
		{protocol.CodeProtocolInvalidPayload, 500, false, "Turn event payload is invalid."},
		{protocol.CodeRequestMethodNotAllowed, 405, false, "Only POST is supported."},
		{protocol.CodeRequestUnsupportedMediaType, 415, false, "Content-Type must be application/json."},
		{protocol.CodeRequestTooLarge, 413, false, "Request body is too large."},
		{protocol.CodeRequestInvalidJSON, 400, false, "Request body is not valid JSON."},
		{protocol.CodeRequestInvalidEvent, 400, false, "Request body must be a valid turn submission."},
		{protocol.CodeSessionBusy, 409, true, "Another turn is active for this session."},
		{protocol.CodeSessionConflict, 409, true, "Another turn is active for this session."},
		{protocol.CodeServerTimeout, 408, true, "The chat request timed out."},
		{protocol.CodeRequestCancelled, 499, true, "The chat request was cancelled."},
		{protocol.CodeServerInternal, 500, true, "The chat request failed."},
		{protocol.CodeChatTurnFailed, 500, true, "The chat turn failed."},
		{protocol.CodeAdapterFailed, 500, false, "The adapter failed."},
		{protocol.CodeServerInvalidConfig, 500, false, "The chat handler configuration is invalid."},
		{protocol.CodeSessionNotFound, 404, false, "Session not found."},
		{protocol.CodeTurnAlreadyCompleted, 409, false, "This turn has already completed."},
		{protocol.CodeTurnOutcomeIndeterminate, 409, false, "The outcome of this turn is unknown."},
		{protocol.CodeTurnIDReused, 422, false, "The turn id was already used with a different input."},
		{protocol.CodeTurnNotFound, 404, false, "Turn not found."},
		{protocol.CodeTurnNotActive, 409, false, "The turn is not running."},
		{protocol.CodeLineageInvalid, 422, false, "The turn lineage does not match this session."},
		{protocol.CodeRequestUnauthenticated, 401, false, "Authentication is required."},
		{protocol.CodeRequestForbidden, 403, false, "The caller may not perform this request."},
		{protocol.CodeRequestNotFound, 404, false, "No such route."},
		{protocol.CodeRequestInvalidQuery, 400, false, "Query parameters are invalid."},
		{protocol.CodeRequestInvalidCursor, 400, false, "The page cursor is invalid."},
		{protocol.CodeRequestInvalidBody, 400, false, "Request body is invalid."},
		{protocol.CodeRequestInvalidHeader, 400, false, "A request header has an unsupported value."},
		{protocol.CodeArtifactsInvalid, 400, false, "Artifact references are invalid."},
		{protocol.CodeTurnInterrupted, 500, false, "The turn was stopped."},
		{protocol.CodeModelFailed, 500, true, "The model request failed."},
		{protocol.CodeAssistantContentInvalidRecord, 500, false, "Assistant content record is invalid."},
		{protocol.CodeAssistantContentUnsupportedVersion, 500, false, "Assistant content envelope uses an unsupported version."},
		{protocol.CodeAssistantContentLimitExceeded, 500, false, "Assistant content envelope exceeds its safety limit."},
		{protocol.CodeComponentInvalidFrame, 500, false, "Component frame payload is invalid."},
		{protocol.CodeComponentUnsupportedVersion, 500, false, "Component frame uses an unsupported version."},
		{protocol.CodeComponentUnknownType, 500, false, "Component frame type is unknown."},
		{protocol.CodeComponentUnknown, 500, false, "Component is not registered."},
		{protocol.CodeComponentInvalidProps, 500, false, "Component props are invalid."},
		{protocol.CodeSessionInvalidSnapshot, 500, false, "Session snapshot payload is invalid."},
		{protocol.CodeSessionUnsupportedVersion, 500, false, "Session snapshot uses an unsupported version."},
	}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			d := protocol.NewDiagnostic(tt.code)
			want := protocol.Diagnostic{Version: 1, Code: tt.code, Message: tt.message, Retryable: tt.retryable}
			if d != want {
				t.Errorf("NewDiagnostic = %+v; want %+v", d, want)
			}
			if got := protocol.HTTPStatus(tt.code); got != tt.status {
				t.Errorf("HTTPStatus = %d; want %d", got, tt.status)
			}
			// Every table entry is a valid TurnDiagnostic on the wire.
			ev := &protocol.Event{EventID: "e", SessionID: "s", TurnID: "t", EmittedAt: "2026-07-11T03:00Z",
				Kind: protocol.EventDiagnostic, Diagnostic: &d}
			b, err := protocol.EncodeEvent(ev)
			if err != nil {
				t.Fatal(err)
			}
			if _, diag := protocol.DecodeTurnEvent(b); diag != nil {
				t.Fatalf("diagnostic event does not decode: %+v", *diag)
			}
		})
	}
	t.Run("unknown code", func(t *testing.T) {
		if d := protocol.NewDiagnostic("NO_SUCH_CODE"); d.Code != protocol.CodeServerInternal || d.Message != "The chat request failed." {
			t.Errorf("NewDiagnostic(unknown) = %+v; want SERVER_INTERNAL", d)
		}
		if s := protocol.HTTPStatus("NO_SUCH_CODE"); s != 500 {
			t.Errorf("HTTPStatus(unknown) = %d; want 500", s)
		}
	})
}

func TestEncodeErrorBody(t *testing.T) {
	// docs/protocol.md#fixtures fixture 15.
	const want = `{"error":{"version":1,"code":"REQUEST_TOO_LARGE","message":"Request body is too large.","retryable":false}}`
	if got := string(protocol.EncodeErrorBody(protocol.NewDiagnostic(protocol.CodeRequestTooLarge))); got != want {
		t.Errorf("EncodeErrorBody = %s; want %s", got, want)
	}
	d := protocol.NewDiagnostic(protocol.CodeSessionBusy)
	d.EventID = "ignored"
	const busy = `{"error":{"version":1,"code":"SESSION_BUSY","message":"Another turn is active for this session.","retryable":true}}`
	if got := string(protocol.EncodeErrorBody(d)); got != busy {
		t.Errorf("EncodeErrorBody = %s; want %s", got, busy)
	}
}

func TestEncodeDecoderDiagnostic(t *testing.T) {
	d := protocol.NewDiagnostic(protocol.CodeProtocolInvalidPayload)
	const plain = `{"code":"PROTOCOL_INVALID_PAYLOAD","message":"Turn event payload is invalid.","retryable":false}`
	if got := string(protocol.EncodeDecoderDiagnostic(d)); got != plain {
		t.Errorf("without eventId: %s; want %s", got, plain)
	}
	d.EventID = "safe"
	const withID = `{"code":"PROTOCOL_INVALID_PAYLOAD","message":"Turn event payload is invalid.","retryable":false,"eventId":"safe"}`
	if got := string(protocol.EncodeDecoderDiagnostic(d)); got != withID {
		t.Errorf("with eventId: %s; want %s", got, withID)
	}
}

func TestMethodNotAllowed(t *testing.T) {
	tests := map[string]struct {
		allowed []string
		want    string
	}{
		"turn route keeps AgentsKit's message": {[]string{"POST"}, "Only POST is supported."},
		"one method":                           {[]string{"GET"}, "Only GET is supported."},
		"two methods":                          {[]string{"GET", "PUT"}, "Only GET and PUT are supported."},
		"three methods":                        {[]string{"GET", "HEAD", "PUT"}, "Only GET, HEAD and PUT are supported."},
		"none: the fixed message":              {nil, "Only POST is supported."},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d := protocol.MethodNotAllowed(tc.allowed...)
			if d.Code != protocol.CodeRequestMethodNotAllowed || d.Message != tc.want || d.Retryable || d.Version != 1 {
				t.Fatalf("MethodNotAllowed(%v) = %+v, want message %q", tc.allowed, d, tc.want)
			}
		})
	}
}
