package protocol

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
)

// Limits of a canonical message record {version:1, messages}
// (docs/protocol.md#the-canonical-message-record; upstream cloneJsonRecord).
// The record is depth 0, the messages array depth 1, each message depth 2;
// every JSON value counts as a node.
const (
	MaxRecordNodes = 10_000 // values in the whole record
	MaxRecordDepth = 32     // deepest value
	MaxRecordItems = 10_000 // items of one array or keys of one object
	MaxRecordKey   = 256    // UTF-16 code units of one object key
)

// ErrInvalidMessages is wrapped by ValidateMessages and DecodeMessages when
// messages are not a valid canonical record
// (docs/protocol.md#the-canonical-message-record). The wrapping error names
// the field, never its value.
var ErrInvalidMessages = errors.New("protocol: invalid message record")

func validUTF8(s string) bool { return utf8.ValidString(s) }

// ValidateMessages checks msgs as AgentsKit's validateMemoryRecord checks
// {version:1, messages} (docs/protocol.md#the-canonical-message-record):
// non-empty id; role user | assistant | system | tool; status pending |
// streaming | complete | error; createdAt exactly YYYY-MM-DDTHH:MM:SS.mmmZ
// naming a real instant; parts and tool calls of the allowed shapes; Metadata
// (if set) and every Args a JSON object; the whole-record limits
// (MaxRecordNodes, MaxRecordDepth, MaxRecordItems, MaxRecordKey, finite
// numbers); all strings valid UTF-8 and Metadata/Args strict JSON (no
// duplicate keys). It returns nil or an error wrapping ErrInvalidMessages
// naming the first bad field.
func ValidateMessages(msgs []Message) error {
	_, err := appendMessages(nil, msgs, "messages")
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidMessages, err)
	}
	return nil
}

// DecodeMessages decodes a JSON array of canonical message records with the
// strict reader of DecodeTurnEvent (duplicate keys, lone surrogates and
// invalid UTF-8 rejected) and the
// docs/protocol.md#the-canonical-message-record rules, dropping unknown keys
// on messages, parts and tool calls. An empty array yields an empty, non-nil
// slice. Errors wrap ErrInvalidMessages and never quote the input.
func DecodeMessages(data []byte) ([]Message, error) {
	root, err := parseJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%w: not valid JSON", ErrInvalidMessages)
	}
	msgs, ok := messagesFromNode(&root)
	if !ok {
		return nil, fmt.Errorf("%w: a record breaks docs/protocol.md#the-canonical-message-record", ErrInvalidMessages)
	}
	return msgs, nil
}

// recordLimits counts nodes of one record against MaxRecordNodes.
type recordLimits struct{ nodes int }

// walk checks n, found at depth, and everything below it.
func (l *recordLimits) walk(n *node, depth int) bool {
	l.nodes++
	if l.nodes > MaxRecordNodes || depth > MaxRecordDepth {
		return false
	}
	switch n.kind {
	case kindNumber:
		return !math.IsInf(n.num, 0)
	case kindArray, kindObject:
		if len(n.kids) > MaxRecordItems {
			return false
		}
		for i := range n.kids {
			if n.kind == kindObject && !lenBetween(n.kids[i].key, 0, MaxRecordKey) {
				return false
			}
			if !l.walk(&n.kids[i], depth+1) {
				return false
			}
		}
	}
	return true
}

// messagesFromNode validates an untrusted messages array (as the record's
// depth-1 value) and projects it to Messages.
func messagesFromNode(arr *node) ([]Message, bool) {
	if arr.kind != kindArray || len(arr.kids) > MaxRecordItems {
		return nil, false
	}
	lim := recordLimits{nodes: 3} // the record object, its version, the array
	for i := range arr.kids {
		if !lim.walk(&arr.kids[i], 2) {
			return nil, false
		}
	}
	out := make([]Message, len(arr.kids))
	for i := range arr.kids {
		if !messageFromNode(&arr.kids[i], &out[i]) {
			return nil, false
		}
	}
	return out, true
}

// The fields of a message, a part (of any type) and a tool call, for the
// case-variant rule (IsCaseVariant).
var (
	messageFields  = []string{"id", "role", "content", "status", "createdAt", "parts", "toolCalls", "toolCallId", "metadata"}
	partFields     = []string{"type", "text", "source", "mimeType", "detail", "durationSec", "filename"}
	toolCallFields = []string{"id", "name", "args", "status", "result", "error"}
)

func isRole(s string) bool {
	return s == RoleUser || s == RoleAssistant || s == RoleSystem || s == RoleTool
}

func isMessageStatus(s string) bool {
	return s == MessagePending || s == MessageStreaming || s == MessageComplete || s == MessageError
}

func isToolCallStatus(s string) bool {
	switch s {
	case ToolCallPending, ToolCallRunning, ToolCallComplete, ToolCallError, ToolCallRequiresConfirmation:
		return true
	}
	return false
}

func messageFromNode(n *node, m *Message) bool {
	if n.kind != kindObject || n.hasCaseVariant(messageFields) {
		return false
	}
	var ok1, ok2, ok3, ok4, ok5, ok6 bool
	m.ID, ok1 = strField(n, "id")
	m.Content, ok2 = strField(n, "content")
	m.Role, ok3 = strField(n, "role")
	m.Status, ok4 = strField(n, "status")
	m.CreatedAt, ok5 = strField(n, "createdAt")
	m.ToolCallID, ok6 = optStrField(n, "toolCallId")
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || !ok6 || m.ID == "" || !isRole(m.Role) ||
		!isMessageStatus(m.Status) || !IsCreatedAt(m.CreatedAt) {
		return false
	}
	if parts, ok := n.get("parts"); ok {
		if parts.kind != kindArray {
			return false
		}
		m.Parts = make([]Part, len(parts.kids))
		for i := range parts.kids {
			if !partFromNode(&parts.kids[i], &m.Parts[i]) {
				return false
			}
		}
	}
	if calls, ok := n.get("toolCalls"); ok {
		if calls.kind != kindArray {
			return false
		}
		m.ToolCalls = make([]ToolCall, len(calls.kids))
		for i := range calls.kids {
			if !toolCallFromNode(&calls.kids[i], &m.ToolCalls[i]) {
				return false
			}
		}
	}
	if md, ok := n.get("metadata"); ok {
		if md.kind != kindObject {
			return false
		}
		m.Metadata = appendNode(nil, md)
	}
	return true
}

func partFromNode(n *node, p *Part) bool {
	if n.kind != kindObject || n.hasCaseVariant(partFields) {
		return false
	}
	typ, ok := strField(n, "type")
	if !ok {
		return false
	}
	p.Type = typ
	switch typ {
	case "text":
		t, ok := strField(n, "text")
		p.Text = &t
		return ok
	case "image", "audio", "video", "file":
	default:
		return false
	}
	src, ok := strField(n, "source")
	if !ok {
		return false
	}
	p.Source = &src
	if p.MimeType, ok = optStrField(n, "mimeType"); !ok {
		return false
	}
	switch typ {
	case "image":
		if p.Detail, ok = optStrField(n, "detail"); !ok || (p.Detail != nil && !isDetail(*p.Detail)) {
			return false
		}
	case "audio", "video":
		if d, present := n.get("durationSec"); present {
			if d.kind != kindNumber || math.IsInf(d.num, 0) || d.num < 0 {
				return false
			}
			v := d.num
			if v == 0 {
				v = 0 // JSON.stringify writes -0 as 0
			}
			p.DurationSec = &v
		}
	case "file":
		if p.Filename, ok = optStrField(n, "filename"); !ok {
			return false
		}
	}
	return true
}

func isDetail(s string) bool { return s == "low" || s == "high" || s == "auto" }

func toolCallFromNode(n *node, c *ToolCall) bool {
	if n.kind != kindObject || n.hasCaseVariant(toolCallFields) {
		return false
	}
	var ok1, ok2, ok3, ok4, ok5 bool
	c.ID, ok1 = strField(n, "id")
	c.Name, ok2 = strField(n, "name")
	c.Status, ok3 = strField(n, "status")
	c.Result, ok4 = optStrField(n, "result")
	c.Error, ok5 = optStrField(n, "error")
	args, hasArgs := n.get("args")
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || !hasArgs || args.kind != kindObject ||
		c.ID == "" || c.Name == "" || !isToolCallStatus(c.Status) {
		return false
	}
	c.Args = appendNode(nil, args)
	return true
}

// Encoding (and validation) of Go-built messages.

func fieldErr(path string, i int, field string) error {
	return invalid(path + "[" + strconv.Itoa(i) + "]" + field)
}

// appendMessages validates msgs as the record's messages array and writes them
// in docs/protocol.md#the-canonical-message-record key order. Errors are
// fieldErrors.
func appendMessages(b []byte, msgs []Message, path string) ([]byte, error) {
	if len(msgs) > MaxRecordItems {
		return b, invalid(path + ": too many messages")
	}
	lim := recordLimits{nodes: 3 + len(msgs)}
	b = append(b, '[')
	var ok bool
	for i := range msgs {
		m := &msgs[i]
		if i > 0 {
			b = append(b, ',')
		}
		switch {
		case m.ID == "":
			return b, fieldErr(path, i, ".id")
		case !isRole(m.Role):
			return b, fieldErr(path, i, ".role")
		case !isMessageStatus(m.Status):
			return b, fieldErr(path, i, ".status")
		case !IsCreatedAt(m.CreatedAt):
			return b, fieldErr(path, i, ".createdAt")
		}
		lim.nodes += 5
		b = append(b, `{"id":`...)
		if b, ok = appendJSONString(b, m.ID); !ok {
			return b, fieldErr(path, i, ".id")
		}
		b = append(b, `,"role":"`...)
		b = append(b, m.Role...)
		b = append(b, `","content":`...)
		if b, ok = appendJSONString(b, m.Content); !ok {
			return b, fieldErr(path, i, ".content")
		}
		b = append(b, `,"status":"`...)
		b = append(b, m.Status...)
		b = append(b, `","createdAt":"`...)
		b = append(b, m.CreatedAt...)
		b = append(b, '"')
		var err error
		if m.Parts != nil {
			if b, err = appendParts(b, m.Parts, &lim, path, i); err != nil {
				return b, err
			}
		}
		if m.ToolCalls != nil {
			if b, err = appendToolCalls(b, m.ToolCalls, &lim, path, i); err != nil {
				return b, err
			}
		}
		if m.ToolCallID != nil {
			lim.nodes++
			b = append(b, `,"toolCallId":`...)
			if b, ok = appendJSONString(b, *m.ToolCallID); !ok {
				return b, fieldErr(path, i, ".toolCallId")
			}
		}
		if m.Metadata != nil {
			b = append(b, `,"metadata":`...)
			if b, ok = appendRawObject(b, m.Metadata, &lim, 3); !ok {
				return b, fieldErr(path, i, ".metadata")
			}
		}
		b = append(b, '}')
		if lim.nodes > MaxRecordNodes {
			return b, invalid(path + ": more than 10000 JSON values")
		}
	}
	return append(b, ']'), nil
}

// appendRawObject parses raw strictly, checks it is an object within the
// record limits at depth, and writes it in JSON.stringify form.
func appendRawObject(b []byte, raw json.RawMessage, lim *recordLimits, depth int) ([]byte, bool) {
	p := borrowParser(raw)
	defer p.release()
	n, err := p.parse()
	if err != nil || n.kind != kindObject || !lim.walk(&n, depth) {
		return b, false
	}
	return appendNode(b, &n), true
}

func appendOptString(b []byte, key string, s *string, lim *recordLimits) ([]byte, bool) {
	if s == nil {
		return b, true
	}
	lim.nodes++
	b = append(b, key...)
	return appendJSONString(b, *s)
}

func appendParts(b []byte, parts []Part, lim *recordLimits, path string, i int) ([]byte, error) {
	if len(parts) > MaxRecordItems {
		return b, fieldErr(path, i, ".parts")
	}
	lim.nodes += 1 + len(parts)
	b = append(b, `,"parts":[`...)
	for j := range parts {
		p := &parts[j]
		field := func(name string) string { return ".parts[" + strconv.Itoa(j) + "]" + name }
		if j > 0 {
			b = append(b, ',')
		}
		lim.nodes++ // type
		var ok bool
		switch p.Type {
		case "text":
			if p.Text == nil {
				return b, fieldErr(path, i, field(".text"))
			}
			b = append(b, `{"type":"text"`...)
			b, ok = appendOptString(b, `,"text":`, p.Text, lim)
		case "image", "audio", "video", "file":
			if p.Source == nil {
				return b, fieldErr(path, i, field(".source"))
			}
			b = append(b, `{"type":"`...)
			b = append(b, p.Type...)
			b = append(b, '"')
			b, ok = appendOptString(b, `,"source":`, p.Source, lim)
			if ok {
				b, ok = appendOptString(b, `,"mimeType":`, p.MimeType, lim)
			}
			switch {
			case !ok:
			case p.Type == "image":
				if p.Detail != nil && !isDetail(*p.Detail) {
					return b, fieldErr(path, i, field(".detail"))
				}
				b, ok = appendOptString(b, `,"detail":`, p.Detail, lim)
			case p.Type == "file":
				b, ok = appendOptString(b, `,"filename":`, p.Filename, lim)
			case p.DurationSec != nil:
				d := *p.DurationSec
				if math.IsNaN(d) || math.IsInf(d, 0) || d < 0 {
					return b, fieldErr(path, i, field(".durationSec"))
				}
				lim.nodes++
				b = append(b, `,"durationSec":`...)
				b = appendJSONNumber(b, d)
			}
		default:
			return b, fieldErr(path, i, field(".type"))
		}
		if !ok {
			return b, fieldErr(path, i, field(""))
		}
		b = append(b, '}')
	}
	return append(b, ']'), nil
}

func appendToolCalls(b []byte, calls []ToolCall, lim *recordLimits, path string, i int) ([]byte, error) {
	if len(calls) > MaxRecordItems {
		return b, fieldErr(path, i, ".toolCalls")
	}
	lim.nodes += 1 + len(calls)
	b = append(b, `,"toolCalls":[`...)
	for j := range calls {
		c := &calls[j]
		field := func(name string) string { return ".toolCalls[" + strconv.Itoa(j) + "]" + name }
		if j > 0 {
			b = append(b, ',')
		}
		if c.ID == "" {
			return b, fieldErr(path, i, field(".id"))
		}
		if c.Name == "" {
			return b, fieldErr(path, i, field(".name"))
		}
		if !isToolCallStatus(c.Status) {
			return b, fieldErr(path, i, field(".status"))
		}
		lim.nodes += 3
		b = append(b, `{"id":`...)
		var ok bool
		b, ok = appendJSONString(b, c.ID)
		if ok {
			b = append(b, `,"name":`...)
			b, ok = appendJSONString(b, c.Name)
		}
		if ok {
			b = append(b, `,"args":`...)
			if b, ok = appendRawObject(b, c.Args, lim, 5); !ok {
				return b, fieldErr(path, i, field(".args"))
			}
			b = append(b, `,"status":"`...)
			b = append(b, c.Status...)
			b = append(b, '"')
			b, ok = appendOptString(b, `,"result":`, c.Result, lim)
		}
		if ok {
			b, ok = appendOptString(b, `,"error":`, c.Error, lim)
		}
		if !ok {
			return b, fieldErr(path, i, field(""))
		}
		b = append(b, '}')
	}
	return append(b, ']'), nil
}
