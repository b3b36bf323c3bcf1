package api

import (
	"encoding/json"
	"strings"
)

// SessionSummary is the body of GET /sessions/{id} on the history
// function (docs/design.md#history-and-artifacts-api). Times are ISO 8601
// UTC with milliseconds (protocol.FormatTime).
//
//	{"sessionId","definitionId","definitionRevision","cursor","createdAt","updatedAt","currentTurn":CurrentTurn|null,
//	 "pendingInteractions":[PendingInteraction...],"queuedTurns":[QueuedTurn...],"session":<agentskit.chat.session v1 envelope>|null}
type SessionSummary struct {
	SessionID          string `json:"sessionId"`
	DefinitionID       string `json:"definitionId"`
	DefinitionRevision int64  `json:"definitionRevision"`
	// Sequence is the last snapshot sequence the session issued (the
	// session envelope's "cursor": a session sequence, not a page cursor).
	Sequence  int64  `json:"cursor"`
	CreatedAt string `json:"createdAt"`
	UpdatedAt string `json:"updatedAt"`
	// CurrentTurn is the turn holding the session's lease, nil (null) when
	// the session is idle. The read decides a lease that has expired
	// (docs/durable-turns.md), so an expired one shows only when that
	// could not be done: the turn is then still running, its fate not
	// yet recorded, and ExpiresAt says since when it may be lost.
	CurrentTurn *CurrentTurn `json:"currentTurn"`
	// PendingInteractions are the tool calls waiting for the owner's
	// decision, oldest first, [] when none (docs/approvals.md).
	PendingInteractions []PendingInteraction `json:"pendingInteractions"`
	// QueuedTurns are the turns submitted with MultitaskEnqueue that have
	// not started, in the order they will run, [] when none
	// (docs/multitask.md). Only the summary lists them: a queued turn
	// gets its ordinal, which orders /turns and its page cursors, when it
	// starts.
	QueuedTurns []QueuedTurn `json:"queuedTurns"`
	// Session is the session as the AgentsKit session envelope
	// agentskit.chat.session v1 (protocol.SessionEnvelope;
	// protocol.DecodeSession reads it), with its confirmations; null only
	// for a session that has no definition id.
	Session json.RawMessage `json:"session" ts:"JSONValue"`
}

// CurrentTurn is a session's running turn (SessionSummary.CurrentTurn).
// Status is always "running": a turn being stopped is still running until
// it ends.
//
//	{"turnId","status":"running","expiresAt":<epoch ms>,"sequence":<n>,"pendingInteractions":[]}
type CurrentTurn struct {
	TurnID string `json:"turnId"`
	Status string `json:"status" ts:"\"running\""`
	// ExpiresAt is the lease expiry in milliseconds since the Unix epoch.
	ExpiresAt int64 `json:"expiresAt"`
	// Sequence is the sequence of the turn's latest checkpoint (the
	// session's last sequence before the turn when none landed yet): a
	// reloaded page renders the turn as /turns shows it and resumes it
	// with GET ResumePath?after=<Sequence>.
	Sequence int64 `json:"sequence"`
	// PendingInteractions is always empty: a running turn never waits; a
	// call that waits for approval ends its turn, and the summary lists it
	// (SessionSummary.PendingInteractions).
	PendingInteractions []PendingInteraction `json:"pendingInteractions"`
}

// PendingInteraction is an interaction a session waits for ({interactionId,
// data}): a tool call awaiting approval. InteractionID is the confirmation
// token a decision names (the submit payload's confirmation.token).
type PendingInteraction struct {
	InteractionID string          `json:"interactionId"`
	Data          PendingApproval `json:"data"`
}

// PendingApproval is the Data of a PendingInteraction: a tool call that
// waits for its owner's approval (docs/approvals.md).
//
//	{"toolName","args":{...},"toolCallId","turnId","expiresAt":<epoch ms>}
type PendingApproval struct {
	ToolName string `json:"toolName"`
	// Args are the call's arguments exactly as the model gave them (a JSON
	// object).
	Args       json.RawMessage `json:"args" ts:"JSONValue"`
	ToolCallID string          `json:"toolCallId"`
	// TurnID is the turn whose call waits.
	TurnID string `json:"turnId"`
	// ExpiresAt is when the call can no longer be decided, in
	// milliseconds since the Unix epoch.
	ExpiresAt int64 `json:"expiresAt"`
}

// QueuedTurn is one turn of SessionSummary.QueuedTurns, waiting to start.
//
//	{"turnId","position":<from 1>,"inputPreview","queuedAt":"<ISO time>","expiresAt":<epoch ms>}
type QueuedTurn struct {
	TurnID string `json:"turnId"`
	// Position is its place among the waiting turns, from 1.
	Position int `json:"position"`
	// InputPreview is the start of the turn's input: at most
	// InputPreviewRunes characters (Unicode code points), "…" appended
	// when cut.
	InputPreview string `json:"inputPreview"`
	QueuedAt     string `json:"queuedAt"`
	// ExpiresAt is when the turn, not started by then, is recorded as
	// never run (TURN_QUEUE_EXPIRED), in milliseconds since the Unix epoch.
	ExpiresAt int64 `json:"expiresAt"`
}

// InputPreviewRunes bounds QueuedTurn.InputPreview.
const InputPreviewRunes = 120

// Queued is the 202 answer to a submit the turn function queued
// (MultitaskEnqueue on a busy session, docs/multitask.md).
//
//	{"sessionId","turnId","status":"queued","position":<from 1>,"streamUrl":"sessions/{sessionId}/turns/{turnId}/stream"}
type Queued struct {
	SessionID string `json:"sessionId"`
	TurnID    string `json:"turnId"`
	// Status is always QueuedStatus.
	Status string `json:"status" ts:"\"queued\""`
	// Position is the turn's place among the session's waiting turns,
	// from 1, when it was queued.
	Position int `json:"position"`
	// StreamURL is the turn's resume route (ResumePath) relative to the
	// turn function's base URL, without a leading slash. It sends nothing
	// until the turn starts.
	StreamURL string `json:"streamUrl"`
}

// QueuedStatus is Queued.Status.
const QueuedStatus = "queued"

// StopRequest is the body of POST StopPath: two SafeIds. Keys are matched
// case-sensitively; a duplicated key, or a key equal to a field's name but
// for case, is 400 REQUEST_INVALID_BODY; other keys are ignored.
//
//	{"sessionId","turnId"}
type StopRequest struct {
	SessionID string `json:"sessionId"`
	TurnID    string `json:"turnId"`
}

// StopAnswer is the 202 answer of POST StopPath.
//
//	{"stopRequested":true} or {"stopRequested":true,"cancelled":true}
type StopAnswer struct {
	// StopRequested is always true: the running turn's stop flag is set
	// (its stream ends with TURN_INTERRUPTED within about a checkpoint
	// interval), or the queued turn was cancelled.
	StopRequested bool `json:"stopRequested" ts:"true"`
	// Cancelled is true when the turn was queued and had not started: it
	// never runs, and is recorded with TURN_CANCELLED (docs/multitask.md).
	// Omitted when false.
	Cancelled bool `json:"cancelled,omitempty"`
}

// StreamURL is Queued.StreamURL of sessionID's turn turnID: ResumePath
// with its placeholders filled, relative (no leading slash). The ids are
// SafeIds, so they need no escaping.
func StreamURL(sessionID, turnID string) string {
	return strings.TrimPrefix(strings.NewReplacer("{sessionId}", sessionID, "{turnId}", turnID).Replace(ResumePath), "/")
}
