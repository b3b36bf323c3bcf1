package agui

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// ProtocolVersion is the AG-UI protocol version these shapes follow
// (@ag-ui/core 1.0.0's PROTOCOL_VERSION).
const ProtocolVersion = "1.0"

// Event types turnstream sends (AG-UI 1.0 EventType values).
const (
	TypeRunStarted         = "RUN_STARTED"
	TypeRunFinished        = "RUN_FINISHED"
	TypeRunError           = "RUN_ERROR"
	TypeTextMessageStart   = "TEXT_MESSAGE_START"
	TypeTextMessageContent = "TEXT_MESSAGE_CONTENT"
	TypeTextMessageEnd     = "TEXT_MESSAGE_END"
	TypeToolCallStart      = "TOOL_CALL_START"
	TypeToolCallArgs       = "TOOL_CALL_ARGS"
	TypeToolCallEnd        = "TOOL_CALL_END"
	TypeToolCallResult     = "TOOL_CALL_RESULT"
	TypeMessagesSnapshot   = "MESSAGES_SNAPSHOT"
	// The reasoning events: a span (REASONING_START, REASONING_END)
	// around one streamed reasoning message.
	TypeReasoningStart          = "REASONING_START"
	TypeReasoningMessageStart   = "REASONING_MESSAGE_START"
	TypeReasoningMessageContent = "REASONING_MESSAGE_CONTENT"
	TypeReasoningMessageEnd     = "REASONING_MESSAGE_END"
	TypeReasoningEnd            = "REASONING_END"
)

// Message roles (AG-UI 1.0 Role values turnstream sends).
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleSystem    = "system"
	RoleTool      = "tool"
	// RoleReasoning is a reasoning message's role, and
	// REASONING_MESSAGE_START's.
	RoleReasoning = "reasoning"
)

// Run outcomes (RUN_FINISHED outcome.type).
const (
	OutcomeSuccess   = "success"
	OutcomeInterrupt = "interrupt"
	OutcomeCancelled = "cancelled"
)

// ReasonToolApproval is the reason of the interrupts turnstream sends: a
// tool call that waits for its owner's approval (docs/approvals.md).
const ReasonToolApproval = "tool_approval"

// Event is one AG-UI event. Type selects which other fields it carries;
// the others are zero and left out of its JSON. Fields are encoded in
// this order, type first.
type Event struct {
	Type string `json:"type"`
	// ThreadID and RunID: RUN_STARTED, RUN_FINISHED.
	ThreadID string `json:"threadId,omitzero"`
	RunID    string `json:"runId,omitzero"`
	// MessageID: TEXT_MESSAGE_*, TOOL_CALL_RESULT (the tool message),
	// REASONING_* (the reasoning message).
	MessageID string `json:"messageId,omitzero"`
	// Role: TEXT_MESSAGE_START ("assistant"), TOOL_CALL_RESULT ("tool"),
	// REASONING_MESSAGE_START ("reasoning").
	Role string `json:"role,omitzero"`
	// ToolCallID: TOOL_CALL_*; ToolCallName and ParentMessageID:
	// TOOL_CALL_START.
	ToolCallID      string `json:"toolCallId,omitzero"`
	ToolCallName    string `json:"toolCallName,omitzero"`
	ParentMessageID string `json:"parentMessageId,omitzero"`
	// Delta: TEXT_MESSAGE_CONTENT, TOOL_CALL_ARGS,
	// REASONING_MESSAGE_CONTENT.
	Delta *string `json:"delta,omitzero"`
	// Content: TOOL_CALL_RESULT.
	Content *string `json:"content,omitzero"`
	// Messages: MESSAGES_SNAPSHOT (never nil there: an empty list is
	// encoded as []).
	Messages []Message `json:"messages,omitzero"`
	// Outcome and Usage: RUN_FINISHED; Usage also RUN_ERROR.
	Outcome *Outcome     `json:"outcome,omitzero"`
	Message string       `json:"message,omitzero"` // RUN_ERROR
	Code    string       `json:"code,omitzero"`    // RUN_ERROR
	Usage   []TokenUsage `json:"usage,omitzero"`
	// Metadata is any JSON object; RUN_ERROR carries {"retryable": bool}.
	Metadata jsontext.Value `json:"metadata,omitzero"`
}

// Message is one AG-UI message of a MESSAGES_SNAPSHOT: a user, system or
// assistant message, or a tool message answering a tool call.
type Message struct {
	ID   string `json:"id"`
	Role string `json:"role"`
	// Content is always sent (an assistant message's may be empty).
	Content   string     `json:"content"`
	ToolCalls []ToolCall `json:"toolCalls,omitzero"`
	// ToolCallID and Error: tool messages only.
	ToolCallID string `json:"toolCallId,omitzero"`
	Error      string `json:"error,omitzero"`
	// Metadata is the JSON object of extra facts (docs/agui.md), absent
	// when there are none.
	Metadata jsontext.Value `json:"metadata,omitzero"`
}

// ToolCall is a call an assistant message made.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"` // always "function"
	Function FunctionCall `json:"function"`
}

// FunctionCall is a tool call's name and its arguments as JSON text.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Outcome is why a run that did not fail ended (RUN_FINISHED outcome).
type Outcome struct {
	Type       string      `json:"type"`
	Interrupts []Interrupt `json:"interrupts,omitzero"`
}

// Interrupt is something a run waits for before it can continue: for
// turnstream, a tool call that requires approval. A resume entry of a
// later RunAgentInput answers it by ID.
type Interrupt struct {
	ID         string `json:"id"`
	Reason     string `json:"reason"`
	Message    string `json:"message,omitzero"`
	ToolCallID string `json:"toolCallId,omitzero"`
	// ResponseSchema is the JSON Schema of the answer a resolved resume
	// entry carries as its payload.
	ResponseSchema jsontext.Value `json:"responseSchema,omitzero"`
	// ExpiresAt is an ISO 8601 time (milliseconds, UTC).
	ExpiresAt string         `json:"expiresAt,omitzero"`
	Metadata  jsontext.Value `json:"metadata,omitzero"`
}

// TokenUsage is one provider's token counts of a run.
type TokenUsage struct {
	InputTokens  int64 `json:"inputTokens"`
	OutputTokens int64 `json:"outputTokens"`
	TotalTokens  int64 `json:"totalTokens"`
}

// Text returns a pointer to s, for the optional string fields of Event.
func Text(s string) *string { return &s }

// EventID is the position an SSE event's id names in a run's stream
// (docs/agui.md, "Event ids"): Sequence is the turn state the event
// belongs to (a turnstream sequence), Index its place among the events that
// lead to that state. Index 0 is the last of them, the event after which a
// client holds state Sequence exactly: its id is the sequence alone,
// "42". The events before it are "42.1", "42.2", ...: the client is on its
// way to state 42 and may hold part of it.
type EventID struct {
	Sequence int64
	Index    int
}

// MaxSequence is the largest sequence an id may carry (2^53-1, the
// protocol's integer limit).
const MaxSequence = 1<<53 - 1

// maxIndex bounds an id's index; no state leads to more events.
const maxIndex = 999_999

// Complete reports whether id names a whole state (no index).
func (id EventID) Complete() bool { return id.Index == 0 }

// String formats id: "<sequence>" or "<sequence>.<index>".
func (id EventID) String() string {
	if id.Index == 0 {
		return strconv.FormatInt(id.Sequence, 10)
	}
	return strconv.FormatInt(id.Sequence, 10) + "." + strconv.Itoa(id.Index)
}

// ErrInvalidEventID is the error of an event id that is not
// "<sequence>" or "<sequence>.<index>" (decimal, no sign or leading zero,
// sequence at most MaxSequence, index 1..999999).
var ErrInvalidEventID = errors.New("agui: invalid event id")

// ParseEventID parses an id EventID.String wrote. It returns
// ErrInvalidEventID for anything else.
func ParseEventID(s string) (EventID, error) {
	seq, idx, dotted := strings.Cut(s, ".")
	n, ok := decimal(seq, 16)
	if !ok || n > MaxSequence {
		return EventID{}, ErrInvalidEventID
	}
	id := EventID{Sequence: n}
	if dotted {
		i, ok := decimal(idx, 6)
		if !ok || i == 0 || i > maxIndex {
			return EventID{}, ErrInvalidEventID
		}
		id.Index = int(i)
	}
	return id, nil
}

// decimal parses s as a decimal integer of at most digits digits, with no
// sign and no leading zero.
func decimal(s string, digits int) (int64, bool) {
	if s == "" || len(s) > digits || len(s) > 1 && s[0] == '0' {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// AppendFrame appends ev as one SSE frame with id: "id: <id>\ndata:
// <json>\n\n". It fails only for a value JSON cannot hold (invalid UTF-8
// in a string, metadata that is not valid JSON).
func AppendFrame(dst []byte, id EventID, ev *Event) ([]byte, error) {
	data, err := jsonv2.Marshal(ev)
	if err != nil {
		return dst, fmt.Errorf("agui: encode %s: %w", ev.Type, err)
	}
	dst = append(dst, "id: "...)
	dst = append(dst, id.String()...)
	dst = append(dst, "\ndata: "...)
	dst = append(dst, data...)
	return append(dst, "\n\n"...), nil
}

// AppendBatch appends the events that lead a client to state seq, as SSE
// frames with ids "<seq>.1", "<seq>.2", ... and "<seq>" for the last
// (EventID). An event that cannot be encoded is left out; the error
// names the first.
func AppendBatch(dst []byte, seq int64, events []Event) ([]byte, error) {
	var first error
	for i := range events {
		id := EventID{Sequence: seq, Index: i + 1}
		if i == len(events)-1 {
			id.Index = 0
		}
		out, err := AppendFrame(dst, id, &events[i])
		if err != nil && first == nil {
			first = err
		}
		dst = out
	}
	return dst, first
}
