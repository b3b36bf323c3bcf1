package turn

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/clock"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/telemetry"
	"github.com/turnstream/turnstream/pkg/tool"
	"github.com/turnstream/turnstream/pkg/turn/engine"
)

// turnTelemetry is what a turn measures for its metrics document and its
// spans (pkg/telemetry, docs/operations.md): the state of its
// telemetryTrace. Safe for concurrent use: the model goroutine, the
// supervisor and the writer record into it.
type turnTelemetry struct {
	h     *Handler
	start time.Time   // the request's arrival (or the claim, in a drain)
	meter *chat.Meter // the turn's meter: its usage from its first store request
	span  trace.Span  // the invoke_agent span
	props telemetry.Properties
	model string // the Model dimension
	prov  string // the provider
	sess  string

	mu            sync.Mutex
	firstSnapshot time.Time
	calls         []telemetry.ModelCall
	checkpoints   int
	stopSeen      time.Time
}

// telemetryTrace is the engine's Config.Trace: it returns the hooks
// (engine.Trace) that measure the turn s for h's metrics
// (Options.Metrics) and spans (Options.Tracing), and the
// function that puts the turn's invoke_agent span into a context, for
// the turn's contexts (so that every store request and span of the turn,
// cleanup included, is the turn's). When the turn is its request's own,
// the request's store requests before the turn's meter existed
// (runSubmission) are added to it.
func (h *Handler) telemetryTrace(s engine.TurnStart) (func(context.Context) context.Context, *engine.Trace) {
	tt := &turnTelemetry{h: h, start: s.StartedAt, meter: s.Meter, model: s.ModelID, prov: s.Provider, sess: s.SessionID}
	if sc := telemetry.ScopeFrom(s.Request); sc.TakeTurn() {
		tt.start = sc.Start
		s.Meter.Add(sc.Meter.Usage())
	}
	if tt.model == "" {
		tt.model = s.Provider
	}
	tt.props = telemetry.Properties{
		SessionID: s.SessionID, TurnID: s.TurnID,
		Tenant: s.Principal.Tenant, Principal: s.Principal.Subject,
		DefinitionID: s.DefinitionID, Provider: s.Provider,
		Route: "turn", RequestID: telemetry.RequestID(s.Request),
	}
	ctx, span := h.opts.Tracing.StartAgent(s.Ctx, s.DefinitionID, s.Revision, s.Provider, tt.model, s.SessionID, s.TurnID)
	tt.span = span
	tt.props.TraceID = telemetry.TraceID(ctx)
	wrap := func(c context.Context) context.Context { return trace.ContextWithSpan(c, span) }
	return wrap, &engine.Trace{
		FirstSnapshot: tt.firstSnapshotWritten,
		Checkpoint:    tt.checkpointWritten,
		StopSeen:      tt.stopRequested,
		ModelCall:     tt.startModelCall,
		ToolCall:      tt.startToolCall,
		Ended:         tt.report,
	}
}

// firstSnapshotWritten records when the turn's first snapshot line went
// out (time to first snapshot).
func (tt *turnTelemetry) firstSnapshotWritten(at time.Time) {
	tt.mu.Lock()
	if tt.firstSnapshot.IsZero() {
		tt.firstSnapshot = at
	}
	tt.mu.Unlock()
}

// checkpointWritten counts a checkpoint that landed.
func (tt *turnTelemetry) checkpointWritten() {
	tt.mu.Lock()
	tt.checkpoints++
	tt.mu.Unlock()
}

// stopRequested records when the turn first saw a stop.
func (tt *turnTelemetry) stopRequested(at time.Time) {
	tt.mu.Lock()
	if tt.stopSeen.IsZero() {
		tt.stopSeen = at
	}
	tt.mu.Unlock()
}

// modelCallTelemetry measures one model call: its chat span, its time to
// first chunk, its usage and finish reason.
type modelCallTelemetry struct {
	tt    *turnTelemetry
	span  trace.Span
	start time.Time
	first time.Duration
	usage protocol.Usage
	// cacheRead, cacheWrite and reasoning are the call's prompt cache and
	// reasoning tokens, as its provider reported them.
	cacheRead, cacheWrite, reasoning int64
	finish                           model.FinishReason
	respModel                        string // the provider's name of the model that answered, when it gives one
	capture                          bool
	text                             []byte
	toolCalls                        []model.ToolCall
}

// startModelCall starts the chat span of a model call of req and counts
// the call; the returned context carries the span.
func (tt *turnTelemetry) startModelCall(ctx context.Context, req model.Request) (context.Context, engine.ModelCallTrace) {
	tr := tt.h.opts.Tracing
	ctx, span := tr.StartChat(ctx, tt.prov, tt.model, tt.sess, req.MaxTokens)
	mc := &modelCallTelemetry{tt: tt, span: span, start: tt.h.eng.Clock().Now(), capture: tr.CaptureContent() && span.IsRecording()}
	if mc.capture {
		span.SetAttributes(attribute.String(telemetry.AttrInputMessages, inputMessages(req)))
	}
	return ctx, engine.ModelCallTrace{Event: mc.event, Done: mc.end}
}

// event records one streamed model event.
func (mc *modelCallTelemetry) event(ev model.Event) {
	if mc.first == 0 {
		mc.first = max(clock.Since(mc.tt.h.eng.Clock(), mc.start), time.Microsecond)
		mc.span.AddEvent(telemetry.EventFirstChunk, trace.WithAttributes(
			attribute.Float64(telemetry.AttrTimeToFirstChunk, float64(mc.first.Microseconds())/1000)))
	}
	if ev.Usage != nil {
		mc.usage.PromptTokens += ev.Usage.PromptTokens
		mc.usage.CompletionTokens += ev.Usage.CompletionTokens
		mc.reasoning += ev.ReasoningTokens
	}
	if c := ev.Cache; c != nil {
		mc.cacheRead += c.Read
		mc.cacheWrite += c.Write
	}
	if ev.FinishReason != "" {
		mc.finish = ev.FinishReason
	}
	if ev.ResponseModel != "" {
		mc.respModel = ev.ResponseModel
	}
	if mc.capture {
		mc.text = append(mc.text, ev.TextDelta...)
		if ev.ToolCall != nil {
			mc.toolCalls = append(mc.toolCalls, *ev.ToolCall)
		}
	}
}

// end ends the model call: its span with the usage, finish reason and
// error type, its usage added to the turn's, its entry for the metrics.
func (mc *modelCallTelemetry) end(err error) {
	d := clock.Since(mc.tt.h.eng.Clock(), mc.start)
	in, out := int64(mc.usage.PromptTokens), int64(mc.usage.CompletionTokens)
	mc.tt.mu.Lock()
	mc.tt.calls = append(mc.tt.calls, telemetry.ModelCall{Duration: d, TimeToFirstChunk: mc.first, InputTokens: in, OutputTokens: out,
		CacheReadTokens: mc.cacheRead, CacheWriteTokens: mc.cacheWrite, ReasoningTokens: mc.reasoning})
	mc.tt.mu.Unlock()
	if !mc.span.IsRecording() {
		return
	}
	mc.span.SetAttributes(
		attribute.Int64(telemetry.AttrUsageInputTokens, in),
		attribute.Int64(telemetry.AttrUsageOutputTokens, out))
	if mc.finish != "" {
		mc.span.SetAttributes(attribute.StringSlice(telemetry.AttrResponseFinishReasons, []string{string(mc.finish)}))
	}
	if mc.respModel != "" {
		mc.span.SetAttributes(attribute.String(telemetry.AttrResponseModel, mc.respModel))
	}
	if mc.capture {
		mc.span.SetAttributes(attribute.String(telemetry.AttrOutputMessages, outputMessages(string(mc.text), mc.toolCalls, mc.finish)))
	}
	if err != nil {
		mc.span.SetAttributes(attribute.String(telemetry.AttrErrorType, errorType(err)))
		mc.span.SetStatus(codes.Error, "")
	}
	mc.span.End()
}

// errorType is the error.type of a model or tool failure: the
// provider's code (model.Error), "cancelled" or "timeout" for a context
// that ended, "_OTHER" otherwise (never error text).
func errorType(err error) string {
	var me *model.Error
	switch {
	case errors.As(err, &me):
		return me.Code
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	}
	return "_OTHER"
}

// startToolCall starts the execute_tool span of call; the returned
// function ends it with the call's outcome.
func (tt *turnTelemetry) startToolCall(ctx context.Context, call model.ToolCall) (context.Context, func(tool.Outcome)) {
	tr := tt.h.opts.Tracing
	ctx, span := tr.StartTool(ctx, call.Name, call.ID)
	if tr.CaptureContent() && span.IsRecording() {
		span.SetAttributes(attribute.String(telemetry.AttrToolCallArguments, string(call.Args)))
	}
	return ctx, func(o tool.Outcome) {
		if !span.IsRecording() {
			return
		}
		if tr.CaptureContent() {
			span.SetAttributes(attribute.String(telemetry.AttrToolCallResult, o.Text))
		}
		if o.Server != "" {
			span.SetAttributes(attribute.String(telemetry.AttrToolServer, o.Server),
				attribute.String(telemetry.AttrToolType, telemetry.ToolTypeExtension))
		}
		if !o.OK() {
			code := o.Code
			if code == "" {
				code = "_OTHER"
			}
			span.SetAttributes(attribute.String(telemetry.AttrErrorType, code))
			span.SetStatus(codes.Error, "")
		}
		span.End()
	}
}

// report writes the turn's metrics document and ends its span: outcome
// as the turn's last line says it, calls and usage as measured.
func (tt *turnTelemetry) report(e engine.TurnEnd) {
	now := tt.h.eng.Clock().Now()
	o := e.Outcome
	switch o {
	case engine.OutcomeComplete:
		o = telemetry.OutcomeComplete
	case engine.OutcomeInterrupted:
		o = telemetry.OutcomeInterrupted
	}
	tools := make([]telemetry.ToolCall, len(e.ToolCalls))
	for i, c := range e.ToolCalls {
		tools[i] = telemetry.ToolCall{Name: c.Name, Status: c.Status, Server: e.ToolServers[c.Name]}
	}
	u := tt.meter.Usage()
	tt.mu.Lock()
	rep := telemetry.TurnReport{
		Outcome:     o,
		Duration:    now.Sub(tt.start),
		Usage:       u,
		ModelCalls:  tt.calls,
		ToolCalls:   tools,
		Checkpoints: tt.checkpoints,
		LeaseLost:   e.LeaseLost,
		Model:       tt.model,
		Properties:  tt.props,
	}
	if !tt.firstSnapshot.IsZero() {
		rep.TimeToFirstSnapshot = tt.firstSnapshot.Sub(tt.start)
	}
	if !tt.stopSeen.IsZero() && e.Status == chat.TurnInterrupted {
		rep.StopLatency = now.Sub(tt.stopSeen)
	}
	tt.mu.Unlock()
	tt.h.opts.Metrics.Turn(rep)

	if tt.span.IsRecording() {
		tt.span.SetAttributes(
			attribute.Int64(telemetry.AttrUsageInputTokens, u.InputTokens),
			attribute.Int64(telemetry.AttrUsageOutputTokens, u.OutputTokens),
			attribute.String(telemetry.AttrTurnOutcome, o))
		if o != telemetry.OutcomeComplete {
			tt.span.SetAttributes(attribute.String(telemetry.AttrErrorType, o))
			tt.span.SetStatus(codes.Error, "")
		}
	}
	tt.span.End()
}

// inputMessages is the gen_ai.input.messages of a request (content
// capture only): the system prompt and each message's role and text.
func inputMessages(req model.Request) string {
	type part struct {
		Type    string `json:"type"`
		Content string `json:"content"`
	}
	type message struct {
		Role  string `json:"role"`
		Parts []part `json:"parts"`
	}
	msgs := make([]message, 0, len(req.Messages)+1)
	if req.System != "" {
		msgs = append(msgs, message{Role: "system", Parts: []part{{"text", req.System}}})
	}
	for _, m := range req.Messages {
		msgs = append(msgs, message{Role: m.Role, Parts: []part{{"text", engine.PlainText(m.Content)}}})
	}
	b, _ := json.Marshal(msgs) // strings only: never fails
	return string(b)
}

// outputMessages is the gen_ai.output.messages of a model call (content
// capture only): its text and tool calls.
func outputMessages(text string, calls []model.ToolCall, finish model.FinishReason) string {
	type part struct {
		Type      string          `json:"type"`
		Content   string          `json:"content,omitempty"`
		ID        string          `json:"id,omitempty"`
		Name      string          `json:"name,omitempty"`
		Arguments json.RawMessage `json:"arguments,omitempty"`
	}
	parts := []part{}
	if text != "" {
		parts = append(parts, part{Type: "text", Content: text})
	}
	for _, c := range calls {
		args := c.Args
		if !json.Valid(args) {
			args = nil
		}
		parts = append(parts, part{Type: "tool_call", ID: c.ID, Name: c.Name, Arguments: args})
	}
	b, _ := json.Marshal([]struct {
		Role         string `json:"role"`
		Parts        []part `json:"parts"`
		FinishReason string `json:"finish_reason,omitempty"`
	}{{"assistant", parts, string(finish)}})
	return string(b)
}
