package protocol

import "encoding/json"

// Wire constants of AgentsKit Chat turn protocol v1
// (docs/protocol.md#the-turn-event-envelope).
const (
	// TurnProtocol is the envelope's `protocol` value.
	TurnProtocol = "agentskit.chat.turn"
	// TurnVersion is the only supported envelope `version`.
	TurnVersion = 1
)

// Event kinds (docs/protocol.md#the-turn-event-envelope).
const (
	EventSubmit     = "client.turn.submit"
	EventSnapshot   = "server.turn.snapshot"
	EventDiagnostic = "server.turn.diagnostic"
)

// Snapshot statuses (docs/protocol.md#payloads).
const (
	StatusIdle      = "idle"
	StatusStreaming = "streaming"
	StatusComplete  = "complete"
	StatusError     = "error"
)

// Lineage operations (docs/protocol.md#payloads; turnstream extension on
// submit, docs/design.md#storage-one-dynamodb-table).
const (
	OperationSubmit     = "submit"
	OperationRetry      = "retry"
	OperationEdit       = "edit"
	OperationRegenerate = "regenerate"
)

// Message roles and statuses of the canonical message record
// (docs/protocol.md#the-canonical-message-record).
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleSystem    = "system"
	RoleTool      = "tool"

	MessagePending   = "pending"
	MessageStreaming = "streaming"
	MessageComplete  = "complete"
	MessageError     = "error"
)

// Tool call statuses (docs/protocol.md#the-canonical-message-record).
const (
	ToolCallPending              = "pending"
	ToolCallRunning              = "running"
	ToolCallComplete             = "complete"
	ToolCallError                = "error"
	ToolCallRequiresConfirmation = "requires_confirmation"
)

// Event is one turn event envelope (docs/protocol.md#the-turn-event-envelope).
// Exactly one of Submit, Snapshot and Diagnostic is set, matching Kind.
// Protocol and Version are implied (TurnProtocol, TurnVersion) and always
// encoded.
type Event struct {
	EventID   string // SafeId
	SessionID string // SafeId
	TurnID    string // SafeId
	Sequence  int64  // >= 0, <= 2^53-1
	EmittedAt string // ISO datetime, docs/protocol.md#the-turn-event-envelope grammar
	Kind      string // EventSubmit | EventSnapshot | EventDiagnostic

	Submit     *SubmitPayload
	Snapshot   *SnapshotPayload
	Diagnostic *Diagnostic
}

// SubmitPayload is the payload of client.turn.submit
// (docs/protocol.md#payloads). Lineage is a turnstream extension
// (docs/design.md#storage-one-dynamodb-table): nil means a plain submit.
// Confirmation is a turnstream extension too: the decision on a pending tool
// call confirmation (docs/approvals.md); nil means none. A payload carries at
// most one of a non-submit Lineage and a Confirmation.
type SubmitPayload struct {
	Input        string              `json:"input"`
	Lineage      *Lineage            `json:"lineage,omitempty"`
	Confirmation *SubmitConfirmation `json:"confirmation,omitempty"`
	// Attachments is the turnstream extension naming the attachment ids
	// (docs/attachments.md) the user message carries: 1 to
	// MaxSubmitAttachments unique SafeIds, in the order given; absent or
	// nil: none. An empty array, a repeated id or another value is an
	// invalid payload. Encoded after confirmation.
	Attachments []string `json:"attachments,omitempty"`
}

// MaxSubmitAttachments is the most attachment ids one submit may name:
// 20 images and 5 documents, the most a model request takes.
const MaxSubmitAttachments = 25

// Decisions of a SubmitConfirmation.
const (
	DecisionApprove = "approve"
	DecisionDeny    = "deny"
)

// SubmitConfirmation is the submit payload's decision on a pending confirmation
// of the session: {token: SafeId, decision: "approve"|"deny"}, decoded
// like the lineage extension (unknown keys ignored, case variants of its
// own keys invalid). Encoded key order: token, decision.
type SubmitConfirmation struct {
	Token    string `json:"token"`
	Decision string `json:"decision"`
}

// SnapshotPayload is the payload of server.turn.snapshot
// (docs/protocol.md#payloads). Encoded key order: messages, status, usage,
// error, lineage.
type SnapshotPayload struct {
	Messages []Message   `json:"messages"`
	Status   string      `json:"status"`
	Usage    Usage       `json:"usage"`
	Error    *Diagnostic `json:"error,omitempty"`
	Lineage  *Lineage    `json:"lineage,omitempty"`
}

// Usage counts tokens of a turn; each field an integer >= 0
// (docs/protocol.md#payloads).
type Usage struct {
	PromptTokens     int64 `json:"promptTokens"`
	CompletionTokens int64 `json:"completionTokens"`
	TotalTokens      int64 `json:"totalTokens"`
}

// Lineage says how a turn relates to an earlier one (docs/protocol.md#payloads).
// For OperationSubmit both ids are empty; otherwise both are SafeIds.
type Lineage struct {
	Operation       string `json:"operation"`
	ParentTurnID    string `json:"parentTurnId,omitempty"`
	SourceMessageID string `json:"sourceMessageId,omitempty"`
}

// Diagnostic is AgentsKit's TurnDiagnostic (docs/protocol.md#payloads):
// version 1, an UPPER_SNAKE code, a fixed non-empty message and whether a
// retry may succeed. EventID is set only on decoder results whose input
// carried a valid SafeId eventId (docs/protocol.md#decoding-untrusted-events);
// it is never part of a wire payload.
type Diagnostic struct {
	Version   int    `json:"version"`
	Code      string `json:"code"`
	Message   string `json:"message"`
	Retryable bool   `json:"retryable"`
	EventID   string `json:"-"`
}

// Message is one canonical message record
// (docs/protocol.md#the-canonical-message-record). Encoded key order: id,
// role, content, status, createdAt, parts, toolCalls, toolCallId, metadata.
// Metadata, when present, is a JSON object kept verbatim.
type Message struct {
	ID         string          `json:"id"`
	Role       string          `json:"role"`
	Content    string          `json:"content"`
	Status     string          `json:"status"`
	CreatedAt  string          `json:"createdAt"` // YYYY-MM-DDTHH:MM:SS.mmmZ
	Parts      []Part          `json:"parts,omitempty"`
	ToolCalls  []ToolCall      `json:"toolCalls,omitempty"`
	ToolCallID *string         `json:"toolCallId,omitempty"`
	Metadata   json.RawMessage `json:"metadata,omitempty"`
}

// Part is one message part (docs/protocol.md#the-canonical-message-record):
// type "text" with Text, or "image" | "audio" | "video" | "file" with Source
// and the optional fields allowed for that type.
type Part struct {
	Type        string   `json:"type"`
	Text        *string  `json:"text,omitempty"`
	Source      *string  `json:"source,omitempty"`
	MimeType    *string  `json:"mimeType,omitempty"`
	Detail      *string  `json:"detail,omitempty"`      // image: low | high | auto
	DurationSec *float64 `json:"durationSec,omitempty"` // audio, video: finite >= 0
	Filename    *string  `json:"filename,omitempty"`    // file
}

// ToolCall is one tool call of an assistant message
// (docs/protocol.md#the-canonical-message-record). Args is a JSON object kept
// verbatim.
type ToolCall struct {
	ID     string          `json:"id"`
	Name   string          `json:"name"`
	Args   json.RawMessage `json:"args"`
	Status string          `json:"status"`
	Result *string         `json:"result,omitempty"`
	Error  *string         `json:"error,omitempty"`
}
