package agui

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"github.com/turnstream/turnstream/pkg/protocol"
)

// Labels are the input of a decision run whose last message is not a new
// user message: a decision turn needs an input, which only labels it
// (docs/approvals.md).
const (
	LabelApproved = "Approved."
	LabelDenied   = "Denied."
)

// RunInput is what turnstream reads of an AG-UI RunAgentInput
// (docs/agui.md, "What a RunAgentInput means").
type RunInput struct {
	// ThreadID is the session id and RunID the turn id; both SafeIds.
	ThreadID string
	RunID    string
	// Input is the turn's input: the text of the last message when it is
	// a user message; for a decision without one, LabelApproved or
	// LabelDenied. Never blank.
	Input string
	// Decision is the one resolved resume entry, nil for a plain run.
	Decision *Decision
}

// Decision is a resolved resume entry: the owner's answer to a tool
// approval interrupt.
type Decision struct {
	// InterruptID is the interrupt's id: a confirmation token, a SafeId.
	InterruptID string
	// Approve is the payload's "approved".
	Approve bool
}

// InputError is a RunAgentInput turnstream does not accept: Field names
// the member (a JSON name of RunAgentInput) and Reason the rule it breaks.
// Neither ever holds a value of the input.
type InputError struct {
	Field  string
	Reason string
}

func (e *InputError) Error() string { return "agui: RunAgentInput " + e.Field + ": " + e.Reason }

// ErrInvalidJSON is a body that is empty or not JSON text.
var ErrInvalidJSON = errors.New("agui: RunAgentInput is not valid JSON")

// runAgentInput is the part of RunAgentInput turnstream reads; the other
// members it knows (state, tools, context, forwardedProps, parentRunId)
// are accepted and ignored (docs/agui.md), but declared, so that the
// strict reader refuses a member equal to one of them but for case.
type runAgentInput struct {
	ThreadID        *string           `json:"threadId"`
	RunID           *string           `json:"runId"`
	ProtocolVersion *string           `json:"protocolVersion"`
	Messages        []json.RawMessage `json:"messages"`
	Resume          []json.RawMessage `json:"resume"`
	State           json.RawMessage   `json:"state"`
	Tools           json.RawMessage   `json:"tools"`
	Context         json.RawMessage   `json:"context"`
	ForwardedProps  json.RawMessage   `json:"forwardedProps"`
	ParentRunID     json.RawMessage   `json:"parentRunId"`
}

// inputMessage is an AG-UI message as turnstream reads the last one.
type inputMessage struct {
	Role       *string         `json:"role"`
	Content    json.RawMessage `json:"content"`
	ID         json.RawMessage `json:"id"`
	Name       json.RawMessage `json:"name"`
	ToolCalls  json.RawMessage `json:"toolCalls"`
	ToolCallID json.RawMessage `json:"toolCallId"`
	Metadata   json.RawMessage `json:"metadata"`
}

// textContent is a message whose content is a string.
type textContent struct {
	Content string `json:"content"`
}

// resumeEntry is one entry of RunAgentInput.resume.
type resumeEntry struct {
	InterruptID *string         `json:"interruptId"`
	Status      *string         `json:"status"`
	Payload     json.RawMessage `json:"payload"`
	Metadata    json.RawMessage `json:"metadata"`
}

// approval is a resolved entry's payload.
type approval struct {
	Approved *bool `json:"approved"`
}

// isObject reports whether raw, a JSON value, is an object.
func isObject(raw json.RawMessage) bool { return len(raw) > 0 && raw[0] == '{' }

// DecodeRunAgentInput reads body as an AG-UI RunAgentInput, strictly
// (package documentation). It returns ErrInvalidJSON for a body that is
// not JSON, and an *InputError for JSON that is not a RunAgentInput
// turnstream runs:
//
//   - threadId and runId must be SafeIds (they are the session and turn
//     ids); protocolVersion, when present, must be "1" or start "1.";
//   - messages must be an array of objects; only the last one is read;
//   - resume, when present, is an array of {interruptId, status,
//     payload?}; at most one entry may be "resolved", with payload
//     {"approved": true|false} and a SafeId interruptId (the decision);
//     "cancelled" entries are accepted and change nothing;
//   - without a decision, the last message must be a user message whose
//     content is a non-blank string: the turn's input. With one, such a
//     message is the decision turn's label, and LabelApproved or
//     LabelDenied stands in when the last message is anything else.
func DecodeRunAgentInput(body []byte) (*RunInput, error) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || !json.Valid(trimmed) {
		return nil, ErrInvalidJSON
	}
	if trimmed[0] != '{' {
		return nil, &InputError{Field: "(body)", Reason: "not a JSON object"}
	}
	var in runAgentInput
	if err := protocol.UnmarshalStrict(trimmed, &in); err != nil {
		return nil, &InputError{Field: "(body)", Reason: "a member has the wrong type or is null, a name is duplicated or differs from a field's only by case, or a string is not valid UTF-16"}
	}
	out := &RunInput{}
	switch {
	case in.ThreadID == nil || !protocol.IsSafeID(*in.ThreadID):
		return nil, &InputError{Field: "threadId", Reason: "required, a SafeId (1-128 letters, digits, '.', '_', ':', '-')"}
	case in.RunID == nil || !protocol.IsSafeID(*in.RunID):
		return nil, &InputError{Field: "runId", Reason: "required, a SafeId (1-128 letters, digits, '.', '_', ':', '-')"}
	case in.ProtocolVersion != nil && *in.ProtocolVersion != "1" && !strings.HasPrefix(*in.ProtocolVersion, "1."):
		return nil, &InputError{Field: "protocolVersion", Reason: "only AG-UI 1.x is spoken"}
	case in.Messages == nil:
		return nil, &InputError{Field: "messages", Reason: "required, an array"}
	}
	out.ThreadID, out.RunID = *in.ThreadID, *in.RunID
	for _, m := range in.Messages {
		if !isObject(m) {
			return nil, &InputError{Field: "messages", Reason: "every message must be an object"}
		}
	}
	var err error
	if out.Decision, err = decision(in.Resume); err != nil {
		return nil, err
	}
	text, ok, err := lastUserText(in.Messages)
	switch {
	case err != nil:
		return nil, err
	case ok:
		out.Input = text
	case out.Decision == nil:
		return nil, &InputError{Field: "messages", Reason: "the last message must be a user message with non-blank string content"}
	case out.Decision.Approve:
		out.Input = LabelApproved
	default:
		out.Input = LabelDenied
	}
	return out, nil
}

// lastUserText returns the content of the last message when it is a user
// message; ok is false when it is another role (or there is none). A user
// message whose content is not a non-blank string is an error.
func lastUserText(msgs []json.RawMessage) (string, bool, error) {
	if len(msgs) == 0 {
		return "", false, nil
	}
	last := msgs[len(msgs)-1]
	var m inputMessage
	if err := protocol.UnmarshalStrict(last, &m); err != nil {
		return "", false, &InputError{Field: "messages", Reason: "the last message has a member of the wrong type, or one whose name differs from a field's only by case"}
	}
	if m.Role == nil || *m.Role != RoleUser {
		return "", false, nil
	}
	var c textContent
	if len(m.Content) == 0 || m.Content[0] != '"' || protocol.UnmarshalStrict(last, &c) != nil || protocol.IsBlank(c.Content) {
		return "", false, &InputError{Field: "messages", Reason: "the last user message's content must be a non-blank string"}
	}
	return c.Content, true, nil
}

// decision reads the resume entries: the one resolved entry, or nil.
func decision(entries []json.RawMessage) (*Decision, error) {
	var out *Decision
	for _, raw := range entries {
		var e resumeEntry
		if !isObject(raw) || protocol.UnmarshalStrict(raw, &e) != nil {
			return nil, &InputError{Field: "resume", Reason: "every entry must be an object {interruptId, status, payload?}, its member names exactly these"}
		}
		if e.InterruptID == nil || e.Status == nil {
			return nil, &InputError{Field: "resume", Reason: "every entry needs interruptId and status"}
		}
		switch *e.Status {
		case "cancelled":
			continue
		case "resolved":
		default:
			return nil, &InputError{Field: "resume", Reason: `status must be "resolved" or "cancelled"`}
		}
		if out != nil {
			return nil, &InputError{Field: "resume", Reason: "at most one entry may be resolved: a run decides one approval"}
		}
		if !protocol.IsSafeID(*e.InterruptID) {
			return nil, &InputError{Field: "resume", Reason: "interruptId must be an interrupt id this server sent"}
		}
		var a approval
		if !isObject(e.Payload) || protocol.UnmarshalStrict(e.Payload, &a) != nil || a.Approved == nil {
			return nil, &InputError{Field: "resume", Reason: `a resolved entry's payload must be {"approved": true|false}`}
		}
		out = &Decision{InterruptID: *e.InterruptID, Approve: *a.Approved}
	}
	return out, nil
}
