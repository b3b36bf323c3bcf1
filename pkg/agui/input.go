package agui

import (
	"bytes"
	"encoding/base64"
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
	// Media are the image and document parts of the last user message,
	// in their order (at most MaxMediaParts); nil when its content is a
	// string.
	Media []MediaPart
}

// MaxMediaParts is the most image and document parts a user message may
// carry (protocol.MaxSubmitAttachments, as a submit's attachments).
const MaxMediaParts = protocol.MaxSubmitAttachments

// AttachmentURLPrefix is the scheme of the only URL source turnstream
// reads: "attachment:<id>" names an attachment the caller uploaded to the
// thread's session (docs/attachments.md). No other URL is fetched.
const AttachmentURLPrefix = "attachment:"

// MediaPart is one image or document part of a user message: an
// uploaded attachment (AttachmentID, from a source {"type":"url",
// "value":"attachment:<id>"}) or inline bytes (Data and MediaType, from a
// source {"type":"data","value":<base64>,"mimeType":...}).
type MediaPart struct {
	// Kind is the part's type: "image" or "document".
	Kind string
	// AttachmentID is a SafeId; "" for inline bytes.
	AttachmentID string
	// MediaType and Data are inline bytes: the source's mimeType as sent
	// and the decoded value (at least one byte).
	MediaType string
	Data      []byte
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

// partsContent is a message whose content is an array of content parts.
type partsContent struct {
	Content []json.RawMessage `json:"content"`
}

// contentPart is one AG-UI content part (ContentPart): text, image,
// audio, video or document.
type contentPart struct {
	Type     *string         `json:"type"`
	ID       json.RawMessage `json:"id"`
	Text     *string         `json:"text"`
	Source   json.RawMessage `json:"source"`
	Metadata json.RawMessage `json:"metadata"`
}

// partSource is a media part's source (PartSource): data, url or file.
type partSource struct {
	Type     *string `json:"type"`
	Value    *string `json:"value"`
	MimeType *string `json:"mimeType"`
	Provider *string `json:"provider"`
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
//     content is a non-blank string, or an array of content parts whose
//     text parts, joined, are not blank: the turn's input. Its image and
//     document parts are Media (readMedia); audio and video parts are
//     refused. With a decision, such a message (text only) is the
//     decision turn's label, and LabelApproved or LabelDenied stands in
//     when the last message is anything else.
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
	text, media, ok, err := lastUserText(in.Messages)
	switch {
	case err != nil:
		return nil, err
	case ok && len(media) > 0 && out.Decision != nil:
		return nil, &InputError{Field: "messages", Reason: "a run that decides an approval carries no image or document"}
	case ok:
		out.Input, out.Media = text, media
	case out.Decision == nil:
		return nil, &InputError{Field: "messages", Reason: "the last message must be a user message with non-blank string content"}
	case out.Decision.Approve:
		out.Input = LabelApproved
	default:
		out.Input = LabelDenied
	}
	return out, nil
}

// lastUserText returns the text and media of the last message when it is
// a user message; ok is false when it is another role (or there is none).
// A user message whose content is neither a non-blank string nor parts
// with non-blank text is an error.
func lastUserText(msgs []json.RawMessage) (text string, media []MediaPart, ok bool, err error) {
	if len(msgs) == 0 {
		return "", nil, false, nil
	}
	last := msgs[len(msgs)-1]
	var m inputMessage
	if err := protocol.UnmarshalStrict(last, &m); err != nil {
		return "", nil, false, &InputError{Field: "messages", Reason: "the last message has a member of the wrong type, or one whose name differs from a field's only by case"}
	}
	if m.Role == nil || *m.Role != RoleUser {
		return "", nil, false, nil
	}
	if len(m.Content) > 0 && m.Content[0] == '[' {
		var pc partsContent
		if protocol.UnmarshalStrict(last, &pc) != nil {
			return "", nil, false, &InputError{Field: "messages", Reason: "the last user message's content must be a string or an array of content parts"}
		}
		text, media, err := readParts(pc.Content)
		return text, media, err == nil, err
	}
	var c textContent
	if len(m.Content) == 0 || m.Content[0] != '"' || protocol.UnmarshalStrict(last, &c) != nil || protocol.IsBlank(c.Content) {
		return "", nil, false, &InputError{Field: "messages", Reason: "the last user message's content must be a non-blank string"}
	}
	return c.Content, nil, true, nil
}

// readParts reads a user message's content parts: the text parts joined
// (as AG-UI's contentToText joins them), which must not be blank, and the
// image and document parts (readMedia). Audio and video are refused.
func readParts(parts []json.RawMessage) (string, []MediaPart, error) {
	var text strings.Builder
	var media []MediaPart
	for _, raw := range parts {
		var p contentPart
		if !isObject(raw) || protocol.UnmarshalStrict(raw, &p) != nil || p.Type == nil {
			return "", nil, &InputError{Field: "messages", Reason: "every content part must be an object with a type, its member names those of AG-UI's content parts"}
		}
		switch *p.Type {
		case "text":
			if p.Text == nil || p.Source != nil {
				return "", nil, &InputError{Field: "messages", Reason: "a text part needs text and has no source"}
			}
			text.WriteString(*p.Text)
		case "image", "document":
			if p.Text != nil {
				return "", nil, &InputError{Field: "messages", Reason: "an image or document part has a source and no text"}
			}
			mp, err := readMedia(*p.Type, p.Source)
			if err != nil {
				return "", nil, err
			}
			if len(media) == MaxMediaParts {
				return "", nil, &InputError{Field: "messages", Reason: "a user message carries at most 25 image and document parts"}
			}
			media = append(media, mp)
		case "audio", "video":
			return "", nil, &InputError{Field: "messages", Reason: "audio and video parts are not accepted: images and documents only"}
		default:
			return "", nil, &InputError{Field: "messages", Reason: `a content part's type must be "text", "image" or "document"`}
		}
	}
	if protocol.IsBlank(text.String()) {
		return "", nil, &InputError{Field: "messages", Reason: "the last user message's text parts must not be blank"}
	}
	return text.String(), media, nil
}

// readMedia reads an image or document part's source: a url source
// "attachment:<SafeId>" (no other URL: turnstream fetches nothing a
// client names), or a data source of standard base64 (padded) with a
// mimeType, at least one byte. A file source (a model provider's handle)
// is refused. Which media types and sizes are accepted is the turn's
// check (docs/attachments.md), not this one's.
func readMedia(kind string, raw json.RawMessage) (MediaPart, error) {
	var src partSource
	if !isObject(raw) || protocol.UnmarshalStrict(raw, &src) != nil || src.Type == nil || src.Value == nil {
		return MediaPart{}, &InputError{Field: "messages", Reason: "an image or document part needs a source {type, value}"}
	}
	switch *src.Type {
	case "url":
		id, found := strings.CutPrefix(*src.Value, AttachmentURLPrefix)
		if !found || !protocol.IsSafeID(id) {
			return MediaPart{}, &InputError{Field: "messages", Reason: "a url source must be attachment:<id>, an attachment uploaded to this thread's session; no other URL is fetched"}
		}
		return MediaPart{Kind: kind, AttachmentID: id}, nil
	case "data":
		if src.MimeType == nil || *src.MimeType == "" || src.Provider != nil {
			return MediaPart{}, &InputError{Field: "messages", Reason: "a data source needs a mimeType"}
		}
		data, err := base64.StdEncoding.Strict().DecodeString(*src.Value)
		if err != nil || len(data) == 0 {
			return MediaPart{}, &InputError{Field: "messages", Reason: "a data source's value must be non-empty standard base64"}
		}
		return MediaPart{Kind: kind, MediaType: *src.MimeType, Data: data}, nil
	case "file":
		return MediaPart{}, &InputError{Field: "messages", Reason: "a file source (a model provider's handle) is not accepted: upload the file and send attachment:<id>"}
	}
	return MediaPart{}, &InputError{Field: "messages", Reason: `a source's type must be "url" or "data"`}
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
