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
)

// turnTelemetry is what a run measures for its metrics document and its
// spans (pkg/telemetry, docs/operations.md). Safe for concurrent use: the
// model goroutine, the supervisor and the writer record into it.
type turnTelemetry struct {
	start time.Time   // the request's arrival (or the claim, in a drain)
	meter *chat.Meter // the run's meter (run.meter): the turn's usage from its first store request
	span  trace.Span  // the invoke_agent span
	props telemetry.Properties
	model string // the Model dimension
	clock clock.Clock

	mu            sync.Mutex
	firstSnapshot time.Time
	calls         []telemetry.ModelCall
	checkpoints   int
	stopSeen      time.Time
}

// telemetryHooks is the turn's telemetry at its steps: set up with the
// run, each model and tool call measured, and the report at its end.
type telemetryHooks struct{ t *run }

// startTelemetry sets up the run's measurements: its meter (holding what
// the request's store requests cost before the run, when the run is the
// request's own turn), the invoke_agent span, and t.ctx and t.reqCtx
// carrying both, so that every store request and span of the turn,
// cleanup included, is the turn's.
func (hk *telemetryHooks) startTelemetry(principal chat.Principal) {
	t := hk.t
	h := t.h
	tt := &turnTelemetry{start: t.startedAt, meter: t.meter, clock: h.clock}
	if sc := telemetry.ScopeFrom(t.reqCtx); sc.TakeTurn() {
		// The request's store requests before its turn's meter existed
		// (runSubmission) are the turn's too.
		tt.start = sc.Start
		t.meter.Add(sc.Meter.Usage())
	}
	defID := t.claim.Session.DefinitionID
	var provider, modelID string
	var revision int64
	if ag, err := h.agents.agentFor(defID); err == nil {
		provider, modelID, revision = providerOf(ag), ag.def.ModelID, ag.def.Revision
	}
	tt.model = modelID
	if tt.model == "" {
		tt.model = provider
	}
	tt.props = telemetry.Properties{
		SessionID: t.sessionID, TurnID: t.turnID,
		Tenant: principal.Tenant, Principal: principal.Subject,
		DefinitionID: defID, Provider: provider,
		Route: "turn", RequestID: telemetry.RequestID(t.reqCtx),
	}
	var ctx context.Context
	ctx, tt.span = h.opts.Tracing.StartAgent(t.ctx, defID, revision, provider, tt.model, t.sessionID, t.turnID)
	tt.props.TraceID = telemetry.TraceID(ctx)
	t.ctx = ctx // carrying the turn's meter already (newRun)
	t.reqCtx = trace.ContextWithSpan(t.reqCtx, tt.span)
	t.tel = tt
}

// providerOf is the provider name of an agent's definition; "custom" for
// the simple path's model, which names none.
func providerOf(ag *agent) string {
	if ag.def.Provider != "" {
		return ag.def.Provider
	}
	return "custom"
}

// firstSnapshotWritten records when the turn's first snapshot line went
// out (time to first snapshot).
func (tt *turnTelemetry) firstSnapshotWritten() {
	if tt == nil {
		return
	}
	tt.mu.Lock()
	if tt.firstSnapshot.IsZero() {
		tt.firstSnapshot = tt.clock.Now()
	}
	tt.mu.Unlock()
}

// checkpointWritten counts a checkpoint that landed.
func (tt *turnTelemetry) checkpointWritten() {
	if tt == nil {
		return
	}
	tt.mu.Lock()
	tt.checkpoints++
	tt.mu.Unlock()
}

// stopRequested records when the turn saw a stop.
func (tt *turnTelemetry) stopRequested() {
	if tt == nil {
		return
	}
	tt.mu.Lock()
	if tt.stopSeen.IsZero() {
		tt.stopSeen = tt.clock.Now()
	}
	tt.mu.Unlock()
}

// modelCallTelemetry measures one model call: its chat span, its time to
// first chunk, its usage and finish reason.
type modelCallTelemetry struct {
	tt        *turnTelemetry
	span      trace.Span
	start     time.Time
	first     time.Duration
	usage     protocol.Usage
	finish    model.FinishReason
	capture   bool
	text      []byte
	toolCalls []model.ToolCall
}

// startModelCall starts the chat span of a model call of req and counts
// the call; the returned context carries the span.
func (hk *telemetryHooks) startModelCall(ctx context.Context, req model.Request) (context.Context, *modelCallTelemetry) {
	t := hk.t
	tt := t.tel // the call and its tokens are counted by modelCall
	tr := t.h.opts.Tracing
	ctx, span := tr.StartChat(ctx, providerOf(t.agent), tt.model, t.sessionID, req.MaxTokens)
	mc := &modelCallTelemetry{tt: tt, span: span, start: tt.clock.Now(), capture: tr.CaptureContent() && span.IsRecording()}
	if mc.capture {
		span.SetAttributes(attribute.String(telemetry.AttrInputMessages, inputMessages(req)))
	}
	return ctx, mc
}

// event records one streamed model event.
func (mc *modelCallTelemetry) event(ev model.Event) {
	if mc.first == 0 {
		mc.first = max(clock.Since(mc.tt.clock, mc.start), time.Microsecond)
		mc.span.AddEvent(telemetry.EventFirstChunk, trace.WithAttributes(
			attribute.Float64(telemetry.AttrTimeToFirstChunk, float64(mc.first.Microseconds())/1000)))
	}
	if ev.Usage != nil {
		mc.usage.PromptTokens += ev.Usage.PromptTokens
		mc.usage.CompletionTokens += ev.Usage.CompletionTokens
	}
	if ev.FinishReason != "" {
		mc.finish = ev.FinishReason
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
	d := clock.Since(mc.tt.clock, mc.start)
	in, out := int64(mc.usage.PromptTokens), int64(mc.usage.CompletionTokens)
	mc.tt.mu.Lock()
	mc.tt.calls = append(mc.tt.calls, telemetry.ModelCall{Duration: d, TimeToFirstChunk: mc.first, InputTokens: in, OutputTokens: out})
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

// startToolCall starts the execute_tool span of call.
func (hk *telemetryHooks) startToolCall(ctx context.Context, call model.ToolCall) (context.Context, trace.Span) {
	t := hk.t
	tr := t.h.opts.Tracing
	ctx, span := tr.StartTool(ctx, call.Name, call.ID)
	if tr.CaptureContent() && span.IsRecording() {
		span.SetAttributes(attribute.String(telemetry.AttrToolCallArguments, string(call.Args)))
	}
	return ctx, span
}

// endToolCall ends a tool call's span with its outcome.
func (hk *telemetryHooks) endToolCall(span trace.Span, o tool.Outcome) {
	t := hk.t
	if !span.IsRecording() {
		return
	}
	if t.h.opts.Tracing.CaptureContent() {
		span.SetAttributes(attribute.String(telemetry.AttrToolCallResult, o.Text))
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

// report writes the turn's metrics document and ends its span: outcome
// as the turn's last line says it, calls and usage as measured.
func (hk *telemetryHooks) report(end ending, outcome saveOutcome, v view) {
	t := hk.t
	tt := t.tel
	if tt == nil {
		return
	}
	now := tt.clock.Now()
	o := telemetry.OutcomeComplete
	switch {
	case end.leaseLost || outcome == fenced:
		o = protocol.CodeTurnLost
	case outcome == unknown:
		o = protocol.CodeTurnOutcomeIndeterminate
	case end.status == chat.TurnInterrupted:
		o = telemetry.OutcomeInterrupted
	case end.diag != nil:
		o = end.diag.Code
	}
	calls := finishCalls(v.toolCalls, true)
	tools := make([]telemetry.ToolCall, len(calls))
	for i, c := range calls {
		tools[i] = telemetry.ToolCall{Name: c.Name, Status: c.Status}
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
		LeaseLost:   end.leaseLost || outcome == fenced,
		Model:       tt.model,
		Properties:  tt.props,
	}
	if !tt.firstSnapshot.IsZero() {
		rep.TimeToFirstSnapshot = tt.firstSnapshot.Sub(tt.start)
	}
	if !tt.stopSeen.IsZero() && end.status == chat.TurnInterrupted {
		rep.StopLatency = now.Sub(tt.stopSeen)
	}
	tt.mu.Unlock()
	t.h.opts.Metrics.Turn(rep)

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
		msgs = append(msgs, message{Role: m.Role, Parts: []part{{"text", PlainText(m.Content)}}})
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
