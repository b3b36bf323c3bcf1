// Package model is the seam between the turn pipeline and a language model
// provider (docs/design.md#models-tools-definitions).
//
// A Model turns one Request (system prompt, conversation, tool specs) into a
// Stream of Events: text deltas, complete tool calls, usage and one finish
// reason. The shape is the common ground of Amazon Bedrock ConverseStream
// (contentBlockDelta text / toolUse input fragments, messageStop
// stopReason, metadata usage) and OpenAI streaming chat completions
// (choices[0].delta.content / tool_calls fragments, finish_reason, the
// usage chunk of stream_options.include_usage): providers accumulate a tool
// call's argument fragments and emit the call once, complete.
//
// Tool round trips. When a stream finishes with FinishToolUse, the caller
// runs the tools and calls Stream again with Messages extended by:
//  1. the assistant message as streamed: Role protocol.RoleAssistant,
//     Content this call's text (may be empty), ToolCalls one entry per
//     Event.ToolCall with its Name and Args (Status ignored) and an ID
//     unique within the turn (the model's own unless empty or repeated);
//  2. one message per tool call, in the same order: Role protocol.RoleTool,
//     ToolCallID the call's ID, Content the tool's result text; Status
//     protocol.MessageError marks a failed tool (Content is then the error
//     text meant for the model).
//
// Providers first pass Messages through ProviderMessages, which pairs
// every call with exactly one result, makes tool call ids unique and
// valid, and renders tool exchanges as plain text when the request offers
// no tools: the request is then one the provider's API accepts whatever
// the stored history holds.
//
// Bedrock providers map consecutive tool messages to one "user" message of
// toolResult blocks (status "error" for failed ones) and assistant tool
// calls to toolUse blocks; OpenAI providers map them to "tool" messages
// with tool_call_id and to the assistant's tool_calls. Messages with Role
// protocol.RoleSystem are ignored by providers: the system prompt is
// Request.System.
//
// Implementations: pkg/model/echo (deterministic, offline, the default);
// Bedrock and OpenAI providers live in their own packages.
package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/turnstream/turnstream/pkg/protocol"
)

// Model is a language model provider. Implementations are safe for
// concurrent use.
type Model interface {
	// Stream starts one model call. An error here means no call was made
	// or it failed before any output (a *Error for provider failures,
	// ctx.Err() when ctx ended). On success the caller must Close the
	// Stream. Cancelling ctx ends the stream: Recv then returns an error
	// that satisfies errors.Is(err, ctx.Err()).
	Stream(ctx context.Context, req Request) (Stream, error)
}

// Request is one model call.
type Request struct {
	// ModelID is the provider's model id (config MODEL_ID); providers that
	// need none (echo) ignore it.
	ModelID string
	// System is the system prompt; empty means none.
	System string
	// Messages is the conversation, oldest first: the context turns'
	// canonical messages and then the new user message, plus any tool
	// round trips of this turn (see the package documentation). Providers
	// read Role, Content, ToolCalls, ToolCallID and Status.
	Messages []protocol.Message
	// Tools are the tools the model may call; nil means none.
	Tools []ToolSpec
	// MaxTokens caps the completion in tokens; 0 means the provider's
	// default.
	MaxTokens int
	// PromptCache asks the provider to mark the request's prefix for its
	// prompt cache where the model supports one (Bedrock's cachePoint
	// blocks, pkg/model/bedrock.CachePoints): later calls that start with
	// the same prefix read it at a fraction of the input price. Providers
	// that cache without being asked (OpenAI) or cannot ignore it.
	PromptCache bool
	// Attachments are the files the user messages' parts name, by the
	// part's Source ("attachment:<id>", docs/attachments.md): what a
	// provider sends beside the message's text, as its API takes images
	// and documents. A part whose source is absent here is left out of
	// the request (its file could not be read). Nil: none.
	Attachments map[string]Attachment
	// Reasoning asks the model to reason before it answers, where the
	// provider takes such a request (Bedrock's Claude models: extended
	// thinking); nil leaves the model's default. Models that reason by
	// themselves stream their reasoning either way
	// (Event.ReasoningDelta).
	Reasoning *Reasoning
	// ReasoningBlocks are, by the ID of an assistant message of Messages,
	// the reasoning blocks the model produced with it (Event.Reasoning),
	// in order. With Reasoning set, providers that need them send them
	// back before the message's text and tool calls, unchanged (Bedrock
	// refuses a thinking request whose last tool use lacks its signed
	// reasoning); providers that do not need them ignore them. Nil: none.
	ReasoningBlocks map[string][]ReasoningBlock
}

// Reasoning is a request's reasoning settings.
type Reasoning struct {
	// BudgetTokens is how many tokens the model may spend reasoning in
	// one call, at least MinReasoningBudget and below the request's
	// MaxTokens (the reasoning counts in the completion); a provider that
	// takes no budget ignores it.
	BudgetTokens int
}

// MinReasoningBudget is the smallest Reasoning.BudgetTokens (Anthropic's
// minimum thinking budget).
const MinReasoningBudget = 1024

// ReasoningBlock is one block of a model's reasoning as the provider
// needs it back: the reasoning text with the provider's Signature over
// it, or Redacted, reasoning the provider sends encrypted (no Text).
// Turnstream keeps blocks opaque: it stores them with the turn and sends
// them back unchanged, never to clients. JSON: {"text", "signature",
// "redacted" (base64)}, each omitted when empty.
type ReasoningBlock struct {
	Text      string `json:"text,omitempty"`
	Signature string `json:"signature,omitempty"`
	Redacted  []byte `json:"redacted,omitempty"`
}

// Attachment is one attached file as a provider sends it.
type Attachment struct {
	// Kind is "image" or "document".
	Kind string
	// MediaType is the file's media type ("image/png",
	// "application/pdf", ...); Format the Bedrock Converse format name
	// of it ("png", "pdf", "docx", ...).
	MediaType, Format string
	// Filename is the name the person gave the file.
	Filename string
	// Data is the file's bytes, at most 4.5 MiB.
	Data []byte
}

// AttachmentKindImage and AttachmentKindDocument are Attachment.Kind's
// values.
const (
	AttachmentKindImage    = "image"
	AttachmentKindDocument = "document"
)

// MessageAttachments returns the attachments of m that req holds, in
// the order of m's parts (parts whose source req does not hold are
// skipped).
func MessageAttachments(req Request, m protocol.Message) []Attachment {
	var out []Attachment
	for _, p := range m.Parts {
		if p.Source == nil {
			continue
		}
		if a, ok := req.Attachments[*p.Source]; ok {
			out = append(out, a)
		}
	}
	return out
}

// ToolSpec describes one callable tool to the model.
type ToolSpec struct {
	// Name is the tool name the model calls it by: 1..64 of
	// [A-Za-z0-9_-] (the intersection of Bedrock's and OpenAI's rules).
	Name string
	// Description tells the model what the tool does.
	Description string
	// InputSchema is a JSON Schema object for the tool's arguments.
	InputSchema json.RawMessage
}

// Stream is one model call's output. Recv and Close must not be called
// concurrently with each other, except that Close may be called from
// another goroutine to abort a blocked Recv.
type Stream interface {
	// Recv returns the next event. It returns io.EOF after the last event
	// (the stream ended normally), a *Error for a provider failure, or an
	// error satisfying errors.Is(err, ctx.Err()) when the Stream's context
	// ended. After any error, Recv keeps returning an error.
	Recv() (Event, error)
	// Close releases the call's resources (an open HTTP response, a
	// pending timer). It is idempotent and may be called at any time,
	// including after io.EOF; it returns nil unless releasing failed.
	Close() error
}

// Event is one stream event. Any combination of fields may be set; a
// consumer handles them in field order. Guarantees over a stream that
// ends with io.EOF: every TextDelta and ToolCall comes before or with the
// single event carrying a non-empty FinishReason; Usage appears at most
// once, possibly after the finish event (OpenAI sends usage last).
type Event struct {
	// ReasoningDelta is text appended to the call's reasoning, which
	// streams before (and, in a tool loop, between) the answer's text;
	// never splits a UTF-8 character.
	ReasoningDelta string
	// Reasoning is a complete reasoning block, at its end, for providers
	// that want reasoning back on the next call (Request.ReasoningBlocks):
	// its Text repeats the ReasoningDeltas that came before it. Nil for
	// providers whose reasoning needs no round trip.
	Reasoning *ReasoningBlock
	// TextDelta is text appended to the assistant message; never splits a
	// UTF-8 character.
	TextDelta string
	// ToolCall is a complete tool call (all argument fragments joined).
	ToolCall *ToolCall
	// Usage is the call's token usage; TotalTokens = PromptTokens +
	// CompletionTokens.
	Usage *protocol.Usage
	// Cache is the prompt-cache part of the call's usage, where the
	// provider reports it (with Usage); nil when it reports none or both
	// counts are zero.
	Cache *CacheTokens
	// ReasoningTokens are the part of Usage.CompletionTokens the model
	// spent reasoning, where the provider reports it apart (OpenAI's
	// completion_tokens_details.reasoning_tokens), with Usage; 0 where it
	// does not (Bedrock counts reasoning in outputTokens only).
	ReasoningTokens int64
	// FinishReason is why the model stopped; set on exactly one event.
	FinishReason FinishReason
	// ResponseModel is the model that answered as the provider names it
	// (OpenAI's chunk "model"), on the FinishReason event; empty where the
	// provider does not say (Bedrock's ConverseStream, echo).
	ResponseModel string
}

// CacheTokens are the prompt tokens a provider read from (Read) or wrote
// to (Write) its prompt cache in one call, as it reports them: Bedrock's
// cacheReadInputTokens and cacheWriteInputTokens (not part of its
// inputTokens), OpenAI's prompt_tokens_details.cached_tokens and
// cache_write_tokens (part of its prompt_tokens). The usage ledger records
// them beside the input tokens (chat.Usage).
type CacheTokens struct {
	Read, Write int64
}

// NewCacheTokens returns the cache counts read and write, nil when both
// are zero.
func NewCacheTokens(read, write int64) *CacheTokens {
	if read == 0 && write == 0 {
		return nil
	}
	return &CacheTokens{Read: read, Write: write}
}

// ToolCall is one complete tool call the model asked for.
type ToolCall struct {
	// ID is the provider's call id (Bedrock toolUseId, OpenAI
	// tool_calls[].id), sent back as the tool message's ToolCallID. It
	// may be empty or repeat another call's id (models do both): the
	// caller makes ids unique within its turn before recording them, and
	// ProviderMessages makes them unique and valid within each request.
	ID string
	// Name is the ToolSpec.Name called.
	Name string
	// Args is the arguments exactly as the model sent them: normally a
	// JSON object, "{}" when the model sent none. Models also send
	// arguments that are not an object ([1,2], a string) or not JSON at
	// all: providers pass those on unchanged rather than failing the
	// stream, and the caller records such a call as failed (pkg/tool
	// reports it as invalid arguments).
	Args json.RawMessage
}

// FinishReason is why a model stopped generating.
type FinishReason string

// Finish reasons (normalized from Bedrock stopReason and OpenAI
// finish_reason).
const (
	// FinishStop: the model ended its answer (Bedrock end_turn,
	// stop_sequence; OpenAI stop).
	FinishStop FinishReason = "stop"
	// FinishToolUse: the model wants tool results (Bedrock tool_use;
	// OpenAI tool_calls).
	FinishToolUse FinishReason = "tool_use"
	// FinishLength: MaxTokens or the context window was reached (Bedrock
	// max_tokens, model_context_window_exceeded; OpenAI length).
	FinishLength FinishReason = "length"
	// FinishContentFilter: output was blocked (Bedrock guardrail_intervened,
	// content_filtered; OpenAI content_filter).
	FinishContentFilter FinishReason = "content_filter"
)

// Error is a provider failure. Code is the provider's own error code (for
// example Bedrock "ThrottlingException", OpenAI "rate_limit_exceeded" or an
// HTTP status such as "http_503"); the turn keeps it in the message's
// metadata, never Err's text in a client-visible message
// (docs/design.md#snapshots).
type Error struct {
	// Code is the provider's error code; never empty.
	Code string
	// Retryable reports whether the same request may succeed later
	// (throttling, a 5xx, a dropped connection).
	Retryable bool
	// Err is the underlying error, for logs; may be nil.
	Err error
}

// Error returns "model: <code>" followed by the underlying error, if any.
func (e *Error) Error() string {
	if e.Err == nil {
		return "model: " + e.Code
	}
	return fmt.Sprintf("model: %s: %v", e.Code, e.Err)
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// IsRetryable reports whether err is, or wraps, a *Error with Retryable set.
func IsRetryable(err error) bool {
	var me *Error
	return errors.As(err, &me) && me.Retryable
}

// LastUserContent returns the Content of the last message with Role
// protocol.RoleUser, and false when there is none.
func LastUserContent(msgs []protocol.Message) (string, bool) {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == protocol.RoleUser {
			return msgs[i].Content, true
		}
	}
	return "", false
}
