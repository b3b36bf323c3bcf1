package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Span attribute keys: the OpenTelemetry GenAI semantic conventions'
// (gen_ai.*, error.type) and turnstream's own (turnstream.*).
const (
	AttrOperationName         = "gen_ai.operation.name"
	AttrConversationID        = "gen_ai.conversation.id"
	AttrProviderName          = "gen_ai.provider.name"
	AttrRequestModel          = "gen_ai.request.model"
	AttrRequestMaxTokens      = "gen_ai.request.max_tokens"
	AttrResponseModel         = "gen_ai.response.model"
	AttrResponseFinishReasons = "gen_ai.response.finish_reasons"
	AttrUsageInputTokens      = "gen_ai.usage.input_tokens"
	AttrUsageOutputTokens     = "gen_ai.usage.output_tokens"
	AttrAgentID               = "gen_ai.agent.id"
	AttrAgentName             = "gen_ai.agent.name"
	AttrToolName              = "gen_ai.tool.name"
	AttrToolCallID            = "gen_ai.tool.call.id"
	AttrToolType              = "gen_ai.tool.type"
	// AttrInputMessages, AttrOutputMessages, AttrToolCallArguments and
	// AttrToolCallResult carry message content: set only when
	// Tracing.CaptureContent is true.
	AttrInputMessages     = "gen_ai.input.messages"
	AttrOutputMessages    = "gen_ai.output.messages"
	AttrToolCallArguments = "gen_ai.tool.call.arguments"
	AttrToolCallResult    = "gen_ai.tool.call.result"
	AttrErrorType         = "error.type"
	AttrTurnID            = "turnstream.turn.id"
	AttrTurnOutcome       = "turnstream.turn.outcome"
	AttrDefinitionRev     = "turnstream.definition.revision"
	// AttrToolServer is a remote tool's server (an MCP server's name from
	// the definition) on its execute_tool span, whose gen_ai.tool.type is
	// then "extension" (ToolTypeExtension).
	AttrToolServer = "turnstream.tool.server"
	// AttrTimeToFirstChunk is the EventFirstChunk event's attribute: the
	// model call's time to its first streamed event, in milliseconds.
	AttrTimeToFirstChunk = "turnstream.time_to_first_chunk_ms"
)

// GenAI operation names (gen_ai.operation.name) and span names: a turn's
// span is "invoke_agent {definition id}", a model call's "chat {model}",
// a tool call's "execute_tool {tool}".
const (
	OperationInvokeAgent = "invoke_agent"
	OperationChat        = "chat"
	OperationExecuteTool = "execute_tool"
)

// EventFirstChunk is the event a chat span gets when the model's first
// streamed event arrives (attribute AttrTimeToFirstChunk).
const EventFirstChunk = "gen_ai.first_chunk"

// ProviderName returns the gen_ai.provider.name of a turnstream model
// provider (definition.Provider*): "aws.bedrock" for bedrock, "openai"
// for openai, the name itself otherwise (echo).
func ProviderName(provider string) string {
	if provider == "bedrock" {
		return "aws.bedrock"
	}
	return provider
}

// InstrumentationName is the instrumentation scope of turnstream's own
// spans.
const InstrumentationName = "github.com/turnstream/turnstream"

// Tracing starts turnstream's spans. The zero value and a nil *Tracing
// start no-op spans.
type Tracing struct {
	tracer  trace.Tracer
	capture bool
	on      bool
}

// NewTracing returns the Tracing of tp (nil: no spans). With
// captureContent, spans carry message content (AttrInputMessages, ...);
// without it, never.
func NewTracing(tp trace.TracerProvider, captureContent bool) *Tracing {
	if tp == nil {
		return &Tracing{}
	}
	_, isNoop := tp.(noop.TracerProvider)
	return &Tracing{tracer: tp.Tracer(InstrumentationName), capture: captureContent, on: !isNoop}
}

// Enabled reports whether spans are recorded at all (a provider other
// than the no-op one): callers skip building attributes otherwise.
func (t *Tracing) Enabled() bool { return t != nil && t.on }

// CaptureContent reports whether spans may carry message content.
func (t *Tracing) CaptureContent() bool { return t != nil && t.capture }

// start starts a span, or returns ctx and the no-op span of ctx's.
func (t *Tracing) start(ctx context.Context, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if !t.Enabled() {
		return ctx, trace.SpanFromContext(noopContext)
	}
	return t.tracer.Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
}

// noopContext carries no span: SpanFromContext of it is a non-recording
// span that does nothing.
var noopContext = context.Background()

// StartAgent starts a turn's span, "invoke_agent {definitionID}" (kind
// internal: the agent runs in this process), with the GenAI attributes
// known at its start.
func (t *Tracing) StartAgent(ctx context.Context, definitionID string, revision int64, provider, model, sessionID, turnID string) (context.Context, trace.Span) {
	return t.start(ctx, OperationInvokeAgent+" "+definitionID, trace.SpanKindInternal,
		attribute.String(AttrOperationName, OperationInvokeAgent),
		attribute.String(AttrAgentID, definitionID),
		attribute.String(AttrAgentName, definitionID),
		attribute.Int64(AttrDefinitionRev, revision),
		attribute.String(AttrConversationID, sessionID),
		attribute.String(AttrProviderName, ProviderName(provider)),
		attribute.String(AttrRequestModel, model),
		attribute.String(AttrTurnID, turnID))
}

// StartChat starts a model call's span, "chat {model}" (kind client).
func (t *Tracing) StartChat(ctx context.Context, provider, model, sessionID string, maxTokens int) (context.Context, trace.Span) {
	attrs := []attribute.KeyValue{
		attribute.String(AttrOperationName, OperationChat),
		attribute.String(AttrProviderName, ProviderName(provider)),
		attribute.String(AttrRequestModel, model),
		attribute.String(AttrConversationID, sessionID),
	}
	if maxTokens > 0 {
		attrs = append(attrs, attribute.Int(AttrRequestMaxTokens, maxTokens))
	}
	return t.start(ctx, OperationChat+" "+model, trace.SpanKindClient, attrs...)
}

// Tool types (gen_ai.tool.type): a tool of the process, or one a remote
// server runs (an MCP server's).
const (
	ToolTypeFunction  = "function"
	ToolTypeExtension = "extension"
)

// StartTool starts a tool call's span, "execute_tool {tool}" (kind
// internal).
func (t *Tracing) StartTool(ctx context.Context, name, callID string) (context.Context, trace.Span) {
	return t.start(ctx, OperationExecuteTool+" "+name, trace.SpanKindInternal,
		attribute.String(AttrOperationName, OperationExecuteTool),
		attribute.String(AttrToolName, name),
		attribute.String(AttrToolCallID, callID),
		attribute.String(AttrToolType, ToolTypeFunction))
}
