package protocol

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// ErrInvalidEvent is wrapped by EncodeEvent and AppendEventLine when the
// event breaks a wire rule; the wrapping error names the field (never its
// value).
var ErrInvalidEvent = errors.New("protocol: invalid turn event")

// DecodeTurnEvent decodes one turn event from untrusted JSON text following
// AgentsKit's decodeTurnEvent (docs/protocol.md#decoding-untrusted-events).
// Exactly one result is non-nil. The diagnostic is one of:
//
//   - PROTOCOL_INVALID_PAYLOAD "Turn event is not valid JSON." for text that
//     is not strict JSON (including a duplicated key at any depth, a lone
//     surrogate escape or invalid UTF-8: docs/design.md#wire-protocol-v1),
//     without EventID;
//   - PROTOCOL_UNSUPPORTED_VERSION when protocol is agentskit.chat.turn and
//     version is a number other than 1 (checked before the event kind);
//   - PROTOCOL_UNKNOWN_EVENT when, with version 1, event is a string other
//     than the three kinds;
//   - PROTOCOL_INVALID_PAYLOAD "Turn event payload is invalid." for every
//     other schema failure (a JSON string holding an event included: the
//     text is parsed once).
//
// An object holding a case variant of one of its own fields (IsCaseVariant:
// "Event" beside or instead of "event", "INPUT" in a submit payload, at any
// object the decoder reads: envelope, payloads, lineage, usage, error,
// messages, parts, tool calls) is PROTOCOL_INVALID_PAYLOAD; in the
// envelope this is checked before the version and event kind.
//
// Diagnostic.EventID is set only when the input is an object whose eventId is
// a SafeId and which holds no case variant of "eventId"; no other input byte
// reaches a diagnostic. Unknown keys are ignored; keys match case-sensitively;
// null is invalid for optional fields; integers are integral numbers <=
// 2^53-1. A submit payload may carry the turnstream lineage extension
// (docs/design.md#storage-one-dynamodb-table) in Submit.Lineage.
func DecodeTurnEvent(data []byte) (*Event, *Diagnostic) {
	root, err := parseJSON(data)
	if err != nil {
		d := NewDiagnostic(CodeProtocolInvalidPayload)
		d.Message = MessageTurnEventNotJSON
		return nil, &d
	}
	fail := func(code string) (*Event, *Diagnostic) {
		d := NewDiagnostic(code)
		if id, ok := root.get("eventId"); ok && id.kind == kindString && IsSafeID(id.str) && !root.hasCaseVariant(eventIDField) {
			d.EventID = id.str
		}
		return nil, &d
	}
	if root.hasCaseVariant(envelopeFields) {
		return fail(CodeProtocolInvalidPayload)
	}
	if p, ok := root.get("protocol"); ok && p.kind == kindString && p.str == TurnProtocol {
		v, hasVersion := root.get("version")
		if hasVersion && v.kind == kindNumber && v.num != TurnVersion {
			return fail(CodeProtocolUnsupportedVersion)
		}
		if e, ok := root.get("event"); hasVersion && v.kind == kindNumber && ok && e.kind == kindString &&
			e.str != EventSubmit && e.str != EventSnapshot && e.str != EventDiagnostic {
			return fail(CodeProtocolUnknownEvent)
		}
	}
	ev, ok := eventFromNode(&root)
	if !ok {
		return fail(CodeProtocolInvalidPayload)
	}
	return ev, nil
}

// The fields of each object the turn decoder reads, for the case-variant
// rule (IsCaseVariant). A part's and a lineage's lists hold the fields of
// every variant of the object, whichever type or operation it has.
var (
	envelopeFields       = []string{"protocol", "version", "eventId", "sessionId", "turnId", "sequence", "emittedAt", "event", "payload"}
	eventIDField         = []string{"eventId"}
	submitFields         = []string{"input", "lineage", "confirmation", "attachments"}
	submitDecisionFields = []string{"token", "decision"}
	lineageFields        = []string{"operation", "parentTurnId", "sourceMessageId"}
	snapshotFields       = []string{"messages", "status", "usage", "error", "lineage"}
	usageFields          = []string{"promptTokens", "completionTokens", "totalTokens"}
	diagnosticFields     = []string{"version", "code", "message", "retryable"}
)

// Field readers over a parsed object. Each returns ok=false when the field
// is missing or breaks its rule; the optional readers return (nil, true)
// when the field is absent.

func strField(obj *node, key string) (string, bool) {
	v, ok := obj.get(key)
	if !ok || v.kind != kindString {
		return "", false
	}
	return v.str, true
}

func safeIDField(obj *node, key string) (string, bool) {
	s, ok := strField(obj, key)
	return s, ok && IsSafeID(s)
}

// optStrField reads an optional string: absent is (nil, true); null or a
// non-string is invalid.
func optStrField(obj *node, key string) (*string, bool) {
	v, ok := obj.get(key)
	if !ok {
		return nil, true
	}
	if v.kind != kindString {
		return nil, false
	}
	s := v.str
	return &s, true
}

// isSafeInt reports whether f is an integer in [lo, 2^53-1].
func isSafeInt(f float64, lo int64) bool {
	return f == math.Trunc(f) && f >= float64(lo) && f <= MaxSafeInteger
}

func intField(obj *node, key string, lo int64) (int64, bool) {
	v, ok := obj.get(key)
	if !ok || v.kind != kindNumber || !isSafeInt(v.num, lo) {
		return 0, false
	}
	return int64(v.num), true
}

func eventFromNode(root *node) (*Event, bool) {
	if root.kind != kindObject {
		return nil, false
	}
	if p, ok := strField(root, "protocol"); !ok || p != TurnProtocol {
		return nil, false
	}
	if v, ok := root.get("version"); !ok || v.kind != kindNumber || v.num != TurnVersion {
		return nil, false
	}
	var ev Event
	var ok1, ok2, ok3, ok4, ok5 bool
	ev.EventID, ok1 = safeIDField(root, "eventId")
	ev.SessionID, ok2 = safeIDField(root, "sessionId")
	ev.TurnID, ok3 = safeIDField(root, "turnId")
	ev.Sequence, ok4 = intField(root, "sequence", 0)
	ev.EmittedAt, ok5 = strField(root, "emittedAt")
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || !IsDateTime(ev.EmittedAt) {
		return nil, false
	}
	ev.Kind, _ = strField(root, "event")
	payload, ok := root.get("payload")
	if !ok || payload.kind != kindObject {
		return nil, false
	}
	switch ev.Kind {
	case EventSubmit:
		ev.Submit, ok = submitFromNode(payload)
	case EventSnapshot:
		ev.Snapshot, ok = snapshotFromNode(payload)
	case EventDiagnostic:
		ev.Diagnostic, ok = diagnosticFromNode(payload)
	default:
		ok = false
	}
	if !ok {
		return nil, false
	}
	return &ev, true
}

func submitFromNode(p *node) (*SubmitPayload, bool) {
	if p.hasCaseVariant(submitFields) {
		return nil, false
	}
	input, ok := strField(p, "input")
	if !ok || isBlank(input) {
		return nil, false
	}
	s := &SubmitPayload{Input: input}
	if l, present := p.get("lineage"); present {
		if s.Lineage, ok = lineageFromNode(l); !ok {
			return nil, false
		}
	}
	if c, present := p.get("confirmation"); present {
		if s.Confirmation, ok = confirmationFromNode(c); !ok {
			return nil, false
		}
		if s.Lineage != nil && s.Lineage.Operation != OperationSubmit {
			return nil, false // a decision continues a turn; it replaces none
		}
	}
	if a, present := p.get("attachments"); present {
		if s.Attachments, ok = attachmentIDs(a); !ok {
			return nil, false
		}
	}
	return s, true
}

// attachmentIDs reads the attachments extension of a submit payload: an
// array of 1..MaxSubmitAttachments unique SafeIds.
func attachmentIDs(a *node) ([]string, bool) {
	if a.kind != kindArray || len(a.kids) == 0 || len(a.kids) > MaxSubmitAttachments {
		return nil, false
	}
	ids := make([]string, 0, len(a.kids))
	for _, k := range a.kids {
		if k.kind != kindString || !IsSafeID(k.str) || slices.Contains(ids, k.str) {
			return nil, false
		}
		ids = append(ids, k.str)
	}
	return ids, true
}

// confirmationFromNode reads the confirmation extension of a submit
// payload: an object with a SafeId token and a decision of approve or deny.
func confirmationFromNode(c *node) (*SubmitConfirmation, bool) {
	if c.kind != kindObject || c.hasCaseVariant(submitDecisionFields) {
		return nil, false
	}
	token, ok := safeIDField(c, "token")
	if !ok {
		return nil, false
	}
	decision, ok := strField(c, "decision")
	if !ok || decision != DecisionApprove && decision != DecisionDeny {
		return nil, false
	}
	return &SubmitConfirmation{Token: token, Decision: decision}, true
}

func lineageFromNode(l *node) (*Lineage, bool) {
	op, ok := strField(l, "operation")
	if !ok || l.hasCaseVariant(lineageFields) {
		return nil, false
	}
	switch op {
	case OperationSubmit:
		return &Lineage{Operation: op}, true
	case OperationRetry, OperationEdit, OperationRegenerate:
		parent, ok1 := safeIDField(l, "parentTurnId")
		source, ok2 := safeIDField(l, "sourceMessageId")
		if !ok1 || !ok2 {
			return nil, false
		}
		return &Lineage{Operation: op, ParentTurnID: parent, SourceMessageID: source}, true
	}
	return nil, false
}

func diagnosticFromNode(d *node) (*Diagnostic, bool) {
	if d.hasCaseVariant(diagnosticFields) {
		return nil, false
	}
	if v, ok := d.get("version"); !ok || v.kind != kindNumber || v.num != 1 {
		return nil, false
	}
	code, ok1 := strField(d, "code")
	msg, ok2 := strField(d, "message")
	r, ok3 := d.get("retryable")
	if !ok1 || !ok2 || !ok3 || !isDiagnosticCode(code) || msg == "" || (r.kind != kindTrue && r.kind != kindFalse) {
		return nil, false
	}
	return &Diagnostic{Version: 1, Code: code, Message: msg, Retryable: r.kind == kindTrue}, true
}

func snapshotFromNode(p *node) (*SnapshotPayload, bool) {
	if p.hasCaseVariant(snapshotFields) {
		return nil, false
	}
	s := &SnapshotPayload{}
	msgs, ok := p.get("messages")
	if !ok {
		return nil, false
	}
	if s.Messages, ok = messagesFromNode(msgs); !ok {
		return nil, false
	}
	if s.Status, ok = strField(p, "status"); !ok || !isSnapshotStatus(s.Status) {
		return nil, false
	}
	u, ok := p.get("usage")
	if !ok || u.kind != kindObject || u.hasCaseVariant(usageFields) {
		return nil, false
	}
	var ok1, ok2, ok3 bool
	s.Usage.PromptTokens, ok1 = intField(u, "promptTokens", 0)
	s.Usage.CompletionTokens, ok2 = intField(u, "completionTokens", 0)
	s.Usage.TotalTokens, ok3 = intField(u, "totalTokens", 0)
	if !ok1 || !ok2 || !ok3 {
		return nil, false
	}
	if e, present := p.get("error"); present {
		if e.kind != kindObject {
			return nil, false
		}
		if s.Error, ok = diagnosticFromNode(e); !ok {
			return nil, false
		}
	}
	if l, present := p.get("lineage"); present {
		if s.Lineage, ok = lineageFromNode(l); !ok {
			return nil, false
		}
	}
	return s, true
}

func isSnapshotStatus(s string) bool {
	return s == StatusIdle || s == StatusStreaming || s == StatusComplete || s == StatusError
}

// EncodeEvent returns e as compact JSON text in the wire key order
// (docs/protocol.md#the-turn-event-envelope, "Encoded key order"): protocol,
// version, eventId, sessionId, turnId, sequence, emittedAt, event, payload; a
// snapshot payload as messages, status, usage, error, lineage; messages as
// docs/protocol.md#the-canonical-message-record orders them. Strings are
// escaped as JavaScript's JSON.stringify escapes them (U+2028, U+2029, '<',
// '>' and '&' stay raw), so content round-trips byte for byte.
//
// e is validated against the same rules DecodeTurnEvent applies, so every
// encoded event decodes to an equal value: an error wrapping ErrInvalidEvent
// names the first offending field (never its value), including strings that
// are not valid UTF-8 and message records beyond the
// docs/protocol.md#the-canonical-message-record limits. Message Metadata and
// ToolCall Args are re-emitted compactly in JSON.stringify form.
func EncodeEvent(e *Event) ([]byte, error) {
	return appendEvent(make([]byte, 0, estimateEventSize(e)), e)
}

// AppendEventLine appends the encoding of e (as EncodeEvent) and "\n" to dst,
// one NDJSON line of a turn stream
// (docs/protocol.md#server-handler-behaviour). On error dst is returned
// unchanged.
func AppendEventLine(dst []byte, e *Event) ([]byte, error) {
	out, err := appendEvent(dst, e)
	if err != nil {
		return dst, err
	}
	return append(out, '\n'), nil
}

func estimateEventSize(e *Event) int {
	n := 256
	switch {
	case e == nil:
	case e.Submit != nil:
		n += len(e.Submit.Input) + len(e.Submit.Input)/8
	case e.Snapshot != nil:
		for i := range e.Snapshot.Messages {
			m := &e.Snapshot.Messages[i]
			n += 128 + len(m.ID) + len(m.Content) + len(m.Content)/16 + len(m.Metadata)
			for j := range m.ToolCalls {
				n += 96 + len(m.ToolCalls[j].Args)
			}
		}
	}
	return n
}

// fieldError names the field of a value that breaks a wire rule; the
// exported functions wrap it with their sentinel error.
type fieldError struct{ field string }

func (e fieldError) Error() string { return e.field }

func invalid(field string) error { return fieldError{field} }

func appendEvent(dst []byte, e *Event) ([]byte, error) {
	start := len(dst)
	fail := func(err error) ([]byte, error) {
		return dst[:start], fmt.Errorf("%w: %w", ErrInvalidEvent, err)
	}
	switch {
	case e == nil:
		return fail(invalid("event is nil"))
	case !IsSafeID(e.EventID):
		return fail(invalid("eventId"))
	case !IsSafeID(e.SessionID):
		return fail(invalid("sessionId"))
	case !IsSafeID(e.TurnID):
		return fail(invalid("turnId"))
	case e.Sequence < 0 || e.Sequence > MaxSafeInteger:
		return fail(invalid("sequence"))
	case !IsDateTime(e.EmittedAt):
		return fail(invalid("emittedAt"))
	}
	set := 0
	for _, p := range []bool{e.Submit != nil, e.Snapshot != nil, e.Diagnostic != nil} {
		if p {
			set++
		}
	}
	if set != 1 {
		return fail(invalid("payload: exactly one of Submit, Snapshot, Diagnostic must be set"))
	}
	b := append(dst, `{"protocol":"agentskit.chat.turn","version":1,"eventId":"`...)
	b = append(b, e.EventID...) // SafeIds need no escaping
	b = append(b, `","sessionId":"`...)
	b = append(b, e.SessionID...)
	b = append(b, `","turnId":"`...)
	b = append(b, e.TurnID...)
	b = append(b, `","sequence":`...)
	b = appendJSONNumber(b, float64(e.Sequence))
	b = append(b, `,"emittedAt":"`...) // the datetime grammar is plain ASCII
	b = append(b, e.EmittedAt...)
	b = append(b, `","event":"`...)
	var err error
	switch e.Kind {
	case EventSubmit:
		if e.Submit == nil {
			return fail(invalid("payload: Submit is nil"))
		}
		b = append(b, EventSubmit+`","payload":`...)
		b, err = appendSubmit(b, e.Submit)
	case EventSnapshot:
		if e.Snapshot == nil {
			return fail(invalid("payload: Snapshot is nil"))
		}
		b = append(b, EventSnapshot+`","payload":`...)
		b, err = appendSnapshot(b, e.Snapshot)
	case EventDiagnostic:
		if e.Diagnostic == nil {
			return fail(invalid("payload: Diagnostic is nil"))
		}
		b = append(b, EventDiagnostic+`","payload":`...)
		if err = checkDiagnostic(e.Diagnostic, "payload"); err == nil {
			b = appendDiagnostic(b, e.Diagnostic)
		}
	default:
		return fail(invalid("event"))
	}
	if err != nil {
		return fail(err)
	}
	return append(b, '}'), nil
}

func appendSubmit(b []byte, s *SubmitPayload) ([]byte, error) {
	if isBlank(s.Input) {
		return b, invalid("payload.input")
	}
	b = append(b, `{"input":`...)
	b, ok := appendJSONString(b, s.Input)
	if !ok {
		return b, invalid("payload.input")
	}
	if s.Lineage != nil {
		var err error
		b = append(b, `,"lineage":`...)
		if b, err = appendLineage(b, s.Lineage, "payload.lineage"); err != nil {
			return b, err
		}
	}
	if c := s.Confirmation; c != nil {
		if !IsSafeID(c.Token) {
			return b, invalid("payload.confirmation.token")
		}
		if c.Decision != DecisionApprove && c.Decision != DecisionDeny {
			return b, invalid("payload.confirmation.decision")
		}
		b = append(b, `,"confirmation":{"token":"`...)
		b = append(b, c.Token...)
		b = append(b, `","decision":"`...)
		b = append(b, c.Decision...)
		b = append(b, `"}`...)
	}
	if s.Attachments != nil {
		if len(s.Attachments) == 0 || len(s.Attachments) > MaxSubmitAttachments {
			return b, invalid("payload.attachments")
		}
		b = append(b, `,"attachments":[`...)
		for i, id := range s.Attachments {
			if !IsSafeID(id) || slices.Contains(s.Attachments[:i], id) {
				return b, invalid("payload.attachments")
			}
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '"')
			b = append(b, id...)
			b = append(b, '"')
		}
		b = append(b, ']')
	}
	return append(b, '}'), nil
}

func appendLineage(b []byte, l *Lineage, field string) ([]byte, error) {
	switch l.Operation {
	case OperationSubmit:
		if l.ParentTurnID != "" || l.SourceMessageID != "" {
			return b, invalid(field + ": submit lineage carries parent ids")
		}
		return append(b, `{"operation":"submit"}`...), nil
	case OperationRetry, OperationEdit, OperationRegenerate:
		if !IsSafeID(l.ParentTurnID) {
			return b, invalid(field + ".parentTurnId")
		}
		if !IsSafeID(l.SourceMessageID) {
			return b, invalid(field + ".sourceMessageId")
		}
		b = append(b, `{"operation":"`...)
		b = append(b, l.Operation...)
		b = append(b, `","parentTurnId":"`...)
		b = append(b, l.ParentTurnID...)
		b = append(b, `","sourceMessageId":"`...)
		b = append(b, l.SourceMessageID...)
		return append(b, `"}`...), nil
	}
	return b, invalid(field + ".operation")
}

func checkDiagnostic(d *Diagnostic, field string) error {
	switch {
	case d.Version != 1:
		return invalid(field + ".version")
	case !isDiagnosticCode(d.Code):
		return invalid(field + ".code")
	case d.Message == "" || !validUTF8(d.Message):
		return invalid(field + ".message")
	}
	return nil
}

func appendSnapshot(b []byte, s *SnapshotPayload) ([]byte, error) {
	b = append(b, `{"messages":`...)
	b, err := appendMessages(b, s.Messages, "payload.messages")
	if err != nil {
		return b, err
	}
	if !isSnapshotStatus(s.Status) {
		return b, invalid("payload.status")
	}
	b = append(b, `,"status":"`...)
	b = append(b, s.Status...)
	u := &s.Usage
	for _, f := range []struct {
		name string
		v    int64
	}{{"promptTokens", u.PromptTokens}, {"completionTokens", u.CompletionTokens}, {"totalTokens", u.TotalTokens}} {
		if f.v < 0 || f.v > MaxSafeInteger {
			return b, invalid("payload.usage." + f.name)
		}
	}
	b = append(b, `","usage":{"promptTokens":`...)
	b = appendJSONNumber(b, float64(u.PromptTokens))
	b = append(b, `,"completionTokens":`...)
	b = appendJSONNumber(b, float64(u.CompletionTokens))
	b = append(b, `,"totalTokens":`...)
	b = appendJSONNumber(b, float64(u.TotalTokens))
	b = append(b, '}')
	if s.Error != nil {
		if err := checkDiagnostic(s.Error, "payload.error"); err != nil {
			return b, err
		}
		b = append(b, `,"error":`...)
		b = appendDiagnostic(b, s.Error)
	}
	if s.Lineage != nil {
		b = append(b, `,"lineage":`...)
		if b, err = appendLineage(b, s.Lineage, "payload.lineage"); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}
