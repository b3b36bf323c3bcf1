package api

// Members turnstream sets in an assistant message's metadata (turnstream
// extensions, docs/approvals.md, docs/reasoning.md). AgentsKit keeps
// metadata verbatim, so they travel in snapshots, history and resumes
// alike.
const (
	// MetadataPendingConfirmations is set on the assistant message of a
	// turn that ended waiting for approval: one PendingConfirmation per
	// call whose toolCalls entry has status requires_confirmation.
	MetadataPendingConfirmations = "pendingConfirmations"
	// MetadataConfirmation is set on the assistant message of a
	// continuation turn (a decision): ConfirmationMetadata. The decided
	// call is the first entry of the message's toolCalls, with its result.
	MetadataConfirmation = "confirmation"
	// MetadataReasoning holds the model's reasoning as a string: the
	// reasoning of the turn's model calls joined with a blank line, at
	// most 64 KiB, where AgentsKit's controller keeps a streamed
	// reasoning. Absent when the model did not reason or its definition
	// keeps reasoning from clients.
	MetadataReasoning = "reasoning"
	// MetadataWarnings lists what the turn went without (Warning values,
	// in the order they arose): for example an MCP server that could not
	// be listed, whose tools were not offered (docs/mcp.md). Absent when
	// there is none.
	MetadataWarnings = "warnings"
)

// Warning codes (Warning.Code).
const (
	// WarningToolServerUnavailable: a remote tool server could not be
	// listed at the turn's start; the turn ran without its tools.
	WarningToolServerUnavailable = "TOOL_SERVER_UNAVAILABLE"
)

// Warning is one entry of MetadataWarnings.
//
//	{"code","message","server"?}
type Warning struct {
	// Code is one of the Warning codes.
	Code string `json:"code"`
	// Message says it in plain words, naming nothing secret.
	Message string `json:"message"`
	// Server names the tool server, for WarningToolServerUnavailable.
	Server string `json:"server,omitempty"`
}

// ApprovalMetadata is the part of an assistant message's metadata the
// approvals extension sets: MetadataPendingConfirmations and
// MetadataConfirmation, each absent when it does not apply.
type ApprovalMetadata struct {
	PendingConfirmations []PendingConfirmation `json:"pendingConfirmations,omitempty"`
	Confirmation         *ConfirmationMetadata `json:"confirmation,omitempty"`
}

// PendingConfirmation is a tool call a turn left waiting for its owner's
// decision.
//
//	{"token","toolCallId","action","expiresAt":<epoch ms>}
type PendingConfirmation struct {
	// Token is what a decision names (the submit payload's
	// confirmation.token; PendingInteraction.InteractionID).
	Token      string `json:"token"`
	ToolCallID string `json:"toolCallId"`
	// Action is the tool's name.
	Action string `json:"action"`
	// ExpiresAt is when the call can no longer be decided, in
	// milliseconds since the Unix epoch.
	ExpiresAt int64 `json:"expiresAt"`
}

// ConfirmationMetadata records a continuation's decision.
//
//	{"token","decision":"approve"|"deny","parentTurnId","toolCallId"}
type ConfirmationMetadata struct {
	Token string `json:"token"`
	// Decision is protocol.DecisionApprove or protocol.DecisionDeny.
	Decision string `json:"decision" ts:"\"approve\" | \"deny\""`
	// ParentTurnID is the turn that asked.
	ParentTurnID string `json:"parentTurnId"`
	ToolCallID   string `json:"toolCallId"`
}
