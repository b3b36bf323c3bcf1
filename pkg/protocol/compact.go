package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"unicode/utf8"
)

// This file holds the compact stream extension (docs/compact.md): between
// complete snapshots, a turnstream server may send append lines, events of
// the kind EventAppend that add text to the streaming assistant message of
// the held snapshot. To an AgentsKit decoder an append line is an unknown
// event kind (PROTOCOL_UNKNOWN_EVENT), which protocol v1 keeps inert, so a
// client that ignores it still ends with the terminal snapshot's exact state.

// EventAppend is the compact extension's event kind: one append line.
const EventAppend = "turnstream.turn.append"

// Errors of the compact extension. The wrapping error, when there is one,
// names the offending field, never its value.
var (
	// ErrInvalidAppend is a line of kind EventAppend that breaks the
	// append grammar (docs/compact.md "Grammar"), or an Append that
	// AppendAppendOpen cannot encode.
	ErrInvalidAppend = errors.New("protocol: invalid append line")
	// ErrAppendGap is an append line, newer than the held state, that
	// does not apply to it: another base sequence, turn or content length,
	// or no streaming snapshot held. The client keeps its state and waits
	// for the next complete snapshot, or resumes after its sequence
	// (docs/compact.md "Gaps").
	ErrAppendGap = errors.New("protocol: append line does not apply to the held state")
)

// Append is one append line: Text is added to the content of the last
// message (the streaming assistant message) of the state at sequence
// After, giving the state at Sequence. A line names no session or turn: it
// is meaningful only on the stream that carries it, whose session and turn
// the request named, and sequences are per session.
type Append struct {
	// Sequence is the state this line produces: > After, <= 2^53-1.
	Sequence int64
	// After is the sequence of the state it applies to (>= 0).
	After int64
	// Offset is the length of that state's assistant content in UTF-16
	// code units (JavaScript's String#length), a check on the base.
	Offset int64
	// Usage, when set, replaces the snapshot's usage.
	Usage *Usage
	// Reasoning, when set, is appended to the same message's reasoning
	// (its metadata member MetadataReasoning), before Text.
	Reasoning *AppendReasoning
	// Text is appended to the content; may be empty (a usage change, or
	// reasoning only).
	Text string
}

// AppendReasoning is the reasoning part of an append line: Text added to
// the streaming assistant message's reasoning, whose length in UTF-16
// code units in the state at After is Offset (a check on the base: 0 when
// the message has no reasoning yet).
type AppendReasoning struct {
	Offset int64
	Text   string
}

// MetadataReasoning is the assistant message metadata member that holds
// the model's reasoning as a string (api.MetadataReasoning,
// docs/reasoning.md), which append lines extend.
const MetadataReasoning = "reasoning"

// MessageReasoning returns m's metadata.reasoning, "" when it has none
// (no metadata, not an object, the member absent or not a string).
func MessageReasoning(m Message) string {
	if len(m.Metadata) == 0 {
		return ""
	}
	root, err := parseJSON(m.Metadata)
	if err != nil || root.kind != kindObject {
		return ""
	}
	s, _ := strField(&root, MetadataReasoning)
	return s
}

// appendPrefix starts every append line, members in this order.
const appendPrefix = `{"protocol":"agentskit.chat.turn","version":1,"event":"` + EventAppend + `"`

// textMember opens the text member, the last of an append line.
const textMember = `,"text":"`

// AppendClose ends an append line opened by AppendAppendOpen: the end of
// the text string, of the object and of the line.
const AppendClose = "\"}\n"

// AppendAppendOpen appends the opening of a's line to dst: every member up
// to and including the text member's opening quote, in the order the
// grammar fixes (protocol, version, event, sequence, after, offset, usage
// when set, reasoning when set, text). a.Text is not written: follow with AppendAppendText for
// each piece and AppendClose. It returns dst unchanged and an error
// wrapping ErrInvalidAppend for sequences outside 0 <= After < Sequence <=
// 2^53-1, a negative Offset or a negative usage count.
func AppendAppendOpen(dst []byte, a *Append) ([]byte, error) {
	var field string
	switch {
	case a.Sequence <= a.After || a.Sequence > MaxSafeInteger:
		field = "sequence"
	case a.After < 0:
		field = "after"
	case a.Offset < 0 || a.Offset > MaxSafeInteger:
		field = "offset"
	case a.Usage != nil && (a.Usage.PromptTokens < 0 || a.Usage.CompletionTokens < 0 || a.Usage.TotalTokens < 0):
		field = "usage"
	case a.Reasoning != nil && (a.Reasoning.Offset < 0 || a.Reasoning.Offset > MaxSafeInteger || !utf8.ValidString(a.Reasoning.Text)):
		field = "reasoning"
	}
	if field != "" {
		return dst, fmt.Errorf("%w: %s", ErrInvalidAppend, field)
	}
	b := append(dst, appendPrefix...)
	b = append(b, `,"sequence":`...)
	b = appendJSONNumber(b, float64(a.Sequence))
	b = append(b, `,"after":`...)
	b = appendJSONNumber(b, float64(a.After))
	b = append(b, `,"offset":`...)
	b = appendJSONNumber(b, float64(a.Offset))
	if u := a.Usage; u != nil {
		b = append(b, `,"usage":{"promptTokens":`...)
		b = appendJSONNumber(b, float64(u.PromptTokens))
		b = append(b, `,"completionTokens":`...)
		b = appendJSONNumber(b, float64(u.CompletionTokens))
		b = append(b, `,"totalTokens":`...)
		b = appendJSONNumber(b, float64(u.TotalTokens))
		b = append(b, '}')
	}
	if r := a.Reasoning; r != nil {
		b = append(b, `,"reasoning":{"offset":`...)
		b = appendJSONNumber(b, float64(r.Offset))
		b = append(b, `,"text":`...)
		b, _ = appendJSONString(b, r.Text) // valid UTF-8: checked above
		b = append(b, '}')
	}
	return append(b, textMember...), nil
}

// AppendAppendText appends s to dst as the inside of a JSON string, escaped
// as JSON.stringify escapes it, so that pieces written one after another
// read as the concatenated text. It reports false, dst unchanged, when s
// is not valid UTF-8 (a piece must never split a character).
func AppendAppendText(dst []byte, s string) ([]byte, bool) {
	out, ok := appendJSONString(dst, s)
	if !ok {
		return dst, false
	}
	// appendJSONString adds the quotes; drop them.
	n := len(dst)
	copy(out[n:], out[n+1:len(out)-1])
	return out[:len(out)-2], true
}

// AppendAppendLine appends a's whole line (AppendAppendOpen, a.Text,
// AppendClose) to dst; on error dst is returned unchanged.
func AppendAppendLine(dst []byte, a *Append) ([]byte, error) {
	out, err := AppendAppendOpen(dst, a)
	if err != nil {
		return dst, err
	}
	out, ok := AppendAppendText(out, a.Text)
	if !ok {
		return dst, fmt.Errorf("%w: text", ErrInvalidAppend)
	}
	return append(out, AppendClose...), nil
}

// appendFields are the members an append line defines, for the
// case-variant rule (IsCaseVariant).
var appendFields = []string{"protocol", "version", "event", "sequence", "after", "offset", "usage", "reasoning", "text"}

// appendReasoningFields are the members of an append line's reasoning.
var appendReasoningFields = []string{"offset", "text"}

// IsAppendLine reports whether line (JSON text, with or without its LF)
// begins as an append line does. It is a quick test, not validation.
func IsAppendLine(line []byte) bool { return bytes.HasPrefix(line, []byte(appendPrefix)) }

// DecodeAppend decodes one complete append line from untrusted JSON text (its
// LF, if any, and JSON whitespace are allowed). Members may come in any order;
// unknown members are ignored. The error wraps ErrInvalidAppend when the text
// is not strict JSON (docs/design.md#wire-protocol-v1: duplicated keys, lone
// surrogates and invalid UTF-8 are errors), is not an object of kind
// EventAppend, holds a case variant of one of its members, or breaks a
// member's rule: sequence, after and offset integers with 0 <= after <
// sequence <= 2^53-1 and offset >= 0, usage (if present) the snapshot's usage
// object, reasoning (if present) an object {offset, text} with offset >= 0
// and text a string, text a string.
func DecodeAppend(line []byte) (*Append, error) {
	root, err := parseJSON(line)
	if err != nil {
		return nil, fmt.Errorf("%w: not JSON", ErrInvalidAppend)
	}
	fail := func(field string) (*Append, error) {
		return nil, fmt.Errorf("%w: %s", ErrInvalidAppend, field)
	}
	if root.kind != kindObject {
		return fail("not an object")
	}
	if root.hasCaseVariant(appendFields) {
		return fail("case variant of a member")
	}
	if p, ok := strField(&root, "protocol"); !ok || p != TurnProtocol {
		return fail("protocol")
	}
	if v, ok := root.get("version"); !ok || v.kind != kindNumber || v.num != TurnVersion {
		return fail("version")
	}
	if e, ok := strField(&root, "event"); !ok || e != EventAppend {
		return fail("event")
	}
	a := &Append{}
	var ok bool
	if a.Sequence, ok = intField(&root, "sequence", 1); !ok {
		return fail("sequence")
	}
	if a.After, ok = intField(&root, "after", 0); !ok || a.After >= a.Sequence {
		return fail("after")
	}
	if a.Offset, ok = intField(&root, "offset", 0); !ok {
		return fail("offset")
	}
	if u, present := root.get("usage"); present {
		usage, ok := usageFromNode(u)
		if !ok {
			return fail("usage")
		}
		a.Usage = &usage
	}
	if r, present := root.get("reasoning"); present {
		if r.kind != kindObject || r.hasCaseVariant(appendReasoningFields) {
			return fail("reasoning")
		}
		var ar AppendReasoning
		if ar.Offset, ok = intField(r, "offset", 0); !ok {
			return fail("reasoning")
		}
		if ar.Text, ok = strField(r, "text"); !ok {
			return fail("reasoning")
		}
		a.Reasoning = &ar
	}
	if a.Text, ok = strField(&root, "text"); !ok {
		return fail("text")
	}
	return a, nil
}

// usageFromNode reads a usage object as a snapshot carries it.
func usageFromNode(u *node) (Usage, bool) {
	if u.kind != kindObject || u.hasCaseVariant(usageFields) {
		return Usage{}, false
	}
	var out Usage
	var ok1, ok2, ok3 bool
	out.PromptTokens, ok1 = intField(u, "promptTokens", 0)
	out.CompletionTokens, ok2 = intField(u, "completionTokens", 0)
	out.TotalTokens, ok3 = intField(u, "totalTokens", 0)
	return out, ok1 && ok2 && ok3
}

// DecodePartialAppend reads the beginning of an append line whose end has
// not arrived yet: the members before text, written in the grammar's
// order, and the text received so far. It returns the line's Append with
// Text set to the longest prefix of the received text that ends on a
// whole character and a whole escape, and ok=false when partial is not the
// beginning of a valid append line (or its text member has not begun).
// The text it returns is provisional: the state at a.Sequence exists only
// once the whole line has arrived (docs/compact.md "Rendering an open
// line").
func DecodePartialAppend(partial []byte) (*Append, bool) {
	if !IsAppendLine(partial) {
		return nil, false
	}
	i := bytes.Index(partial, []byte(textMember))
	if i < 0 {
		return nil, false
	}
	head := make([]byte, 0, i+len(textMember)+2)
	head = append(head, partial[:i+len(textMember)]...)
	head = append(head, `"}`...)
	a, err := DecodeAppend(head)
	if err != nil {
		return nil, false
	}
	body := partial[i+len(textMember):]
	n := completeStringPrefix(body)
	if n == 0 {
		return a, true
	}
	quoted := make([]byte, 0, n+2)
	quoted = append(quoted, '"')
	quoted = append(quoted, body[:n]...)
	quoted = append(quoted, '"')
	s, err := parseJSON(quoted)
	if err != nil || s.kind != kindString {
		return nil, false // a raw control byte or a bad escape: not a valid line
	}
	a.Text = s.str
	return a, true
}

// completeStringPrefix returns the length of the longest prefix of body
// (the inside of a JSON string, possibly cut anywhere) that ends on a
// whole UTF-8 character and a whole escape, before the closing quote. A
// high-surrogate escape is whole only with its low surrogate.
func completeStringPrefix(body []byte) int {
	n := 0
	for i := 0; i < len(body); {
		c := body[i]
		switch {
		case c == '"':
			return n // the string's end
		case c == '\\':
			if i+1 >= len(body) {
				return n
			}
			if body[i+1] != 'u' {
				i += 2
				n = i
				continue
			}
			if i+6 > len(body) {
				return n
			}
			r := hexRune(body[i+2 : i+6])
			if r >= 0xD800 && r < 0xDC00 { // a high surrogate: its pair must follow
				if i+12 > len(body) {
					return n
				}
				i += 12
			} else {
				i += 6
			}
			n = i
		case c < utf8.RuneSelf:
			i++
			n = i
		default:
			if !utf8.FullRune(body[i:]) {
				return n
			}
			_, size := utf8.DecodeRune(body[i:])
			i += size
			n = i
		}
	}
	return n
}

// hexRune reads four hex digits; -1 when they are not.
func hexRune(h []byte) rune {
	var r rune
	for _, c := range h {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return -1
		}
	}
	return r
}

// CompactCursor holds the newest state of one session in a compact stream:
// a SnapshotCursor that also applies append lines (docs/compact.md). A
// complete snapshot is accepted as SnapshotCursor accepts it (its session,
// a strictly greater sequence); an append line only when it applies to the
// held state exactly (its After is the held sequence, the held snapshot
// streaming with its last message a streaming assistant message of Offset
// UTF-16 code units). Append lines carry no session id: feed a cursor only
// the streams of its session. So a sequence is
// never applied twice, and a gap leaves the state as it was until the next
// complete snapshot. It is safe for concurrent use.
type CompactCursor struct {
	sessionID string

	mu       sync.Mutex
	snapshot *Event
	length   int64 // UTF-16 length of the held assistant content
	// reasoning is the UTF-16 length of its MetadataReasoning.
	reasoning int64
}

// NewCompactCursor returns a cursor for sessionID, which must be a SafeId
// (ErrInvalidSessionID otherwise).
func NewCompactCursor(sessionID string) (*CompactCursor, error) {
	if !IsSafeID(sessionID) {
		return nil, ErrInvalidSessionID
	}
	return &CompactCursor{sessionID: sessionID}, nil
}

// Apply offers one complete line (JSON text, its LF optional). It reports
// whether the held state changed. A complete snapshot is taken as
// SnapshotCursor.Apply takes it. An append line is decoded with DecodeAppend (an error wrapping ErrInvalidAppend when it is
// malformed); one whose Sequence is not above the held sequence is stale
// and ignored (false, nil); a newer one that does not apply to the held
// state is ErrAppendGap. Any other line (a diagnostic, an unknown kind,
// invalid input) is (false, nil): the caller decodes what it needs.
func (c *CompactCursor) Apply(line []byte) (bool, error) {
	if !IsAppendLine(bytes.TrimLeft(line, " \t\r\n")) {
		ev, diag := DecodeTurnEvent(line)
		if diag != nil {
			return false, nil
		}
		return c.ApplyEvent(ev), nil
	}
	a, err := DecodeAppend(line)
	if err != nil {
		return false, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.snapshot != nil && a.Sequence <= c.snapshot.Sequence {
		return false, nil
	}
	if !c.appliesLocked(a) {
		return false, ErrAppendGap
	}
	next := *c.snapshot
	payload := *next.Snapshot
	payload.Messages = append([]Message(nil), payload.Messages...)
	last := &payload.Messages[len(payload.Messages)-1]
	if r := a.Reasoning; r != nil {
		meta, ok := withReasoning(last.Metadata, MessageReasoning(*last)+r.Text)
		if !ok {
			return false, ErrAppendGap
		}
		last.Metadata = meta
		c.reasoning += int64(utf16Len(r.Text, -1))
	}
	last.Content += a.Text
	if a.Usage != nil {
		payload.Usage = *a.Usage
	}
	next.Snapshot, next.Sequence = &payload, a.Sequence
	c.snapshot = &next
	c.length += int64(utf16Len(a.Text, -1))
	return true, nil
}

// ApplyEvent offers a decoded event, as Apply offers its line, for a
// reader that decoded the line already (DecodeTurnEvent): a snapshot of
// the cursor's session with a strictly greater sequence is kept (a deep
// copy: ev stays the caller's). It reports whether the held state changed.
func (c *CompactCursor) ApplyEvent(ev *Event) bool {
	if ev == nil || ev.Kind != EventSnapshot || ev.Snapshot == nil || ev.SessionID != c.sessionID {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.snapshot != nil && ev.Sequence <= c.snapshot.Sequence {
		return false
	}
	c.snapshot = cloneEvent(ev)
	c.length, c.reasoning = 0, 0
	if n := len(ev.Snapshot.Messages); n > 0 {
		last := ev.Snapshot.Messages[n-1]
		c.length = int64(utf16Len(last.Content, -1))
		c.reasoning = int64(utf16Len(MessageReasoning(last), -1))
	}
	return true
}

// appliesLocked reports whether a applies to the held state; c.mu is held.
func (c *CompactCursor) appliesLocked(a *Append) bool {
	s := c.snapshot
	if s == nil || a.After != s.Sequence || s.Snapshot.Status != StatusStreaming {
		return false
	}
	msgs := s.Snapshot.Messages
	if len(msgs) == 0 {
		return false
	}
	last := msgs[len(msgs)-1]
	return last.Role == RoleAssistant && last.Status == MessageStreaming && c.length == a.Offset &&
		(a.Reasoning == nil || c.reasoning == a.Reasoning.Offset)
}

// withReasoning returns metadata (nil or a JSON object) with
// MetadataReasoning set to reasoning, members in name order as the server
// writes them; ok=false when metadata is not an object.
func withReasoning(metadata []byte, reasoning string) ([]byte, bool) {
	obj := map[string]json.RawMessage{}
	if len(metadata) > 0 && json.Unmarshal(metadata, &obj) != nil {
		return nil, false
	}
	s, err := json.Marshal(reasoning)
	if err != nil {
		return nil, false
	}
	obj[MetadataReasoning] = s
	out, err := json.Marshal(obj)
	return out, err == nil
}

// Provisional returns the held snapshot's assistant content followed by
// the text received so far of an open append line (partial: the bytes
// after the last LF), when that line applies to the held state; ok=false
// otherwise (nothing held, not an append line's beginning, or another
// base). Nothing changes: the text becomes state only when the line ends.
func (c *CompactCursor) Provisional(partial []byte) (content string, ok bool) {
	a, ok := DecodePartialAppend(partial)
	if !ok {
		return "", false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if (c.snapshot != nil && a.Sequence <= c.snapshot.Sequence) || !c.appliesLocked(a) {
		return "", false
	}
	msgs := c.snapshot.Snapshot.Messages
	return msgs[len(msgs)-1].Content + a.Text, true
}

// Sequence returns the held state's sequence, or -1 when none is held.
func (c *CompactCursor) Sequence() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.snapshot == nil {
		return -1
	}
	return c.snapshot.Sequence
}

// Snapshot returns the held state as a deep copy of a snapshot event (the
// last complete snapshot with every applied append line: its Sequence the
// last applied line's, its EventID and EmittedAt the complete
// snapshot's), or nil when none is held.
func (c *CompactCursor) Snapshot() *Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.snapshot == nil {
		return nil
	}
	return cloneEvent(c.snapshot)
}
