package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"
	"sync"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/tool"
)

// TextStepLimit is the error of the tool calls a model asks for in the
// last model call a definition allows (definition.Limits.MaxSteps): they
// are recorded as failed and never run.
const TextStepLimit = "Step limit reached."

// TextRepeatedCallID is the error of a tool call whose id an earlier call
// of the same model call already has: the call is recorded as failed
// under a new id (loopLog.callID) and never runs, so that a model that
// sends one call twice does not run its tool twice. The text names no
// value the model sent.
const TextRepeatedCallID = "Not run: another tool call in the same response has this id."

// codeRepeatedCallID is the tool.Outcome code of such a call (logs only).
const codeRepeatedCallID = "repeated_call_id"

// stepSeparator goes between the text of two model calls of one turn
// when both have text, so that "Let me check." and "Done." do not run
// together in the assistant message.
const stepSeparator = "\n\n"

// pendingCall is a tool call of the current model call and its index in
// the assistant message's toolCalls. repeated marks a call whose id the
// model already gave an earlier call of the same model call: it is
// recorded as failed (TextRepeatedCallID) and never runs.
type pendingCall struct {
	call     model.ToolCall
	index    int
	repeated bool
}

// runModel is the model-tool loop (docs/design.md#models-tools-definitions):
// up to MaxSteps model calls, each followed by the tools it asked for, their
// results fed back for the next call. It returns nil when the model finished,
// or the error that ended the loop (a model error, or ctx's). Every change
// goes into the state and wakes the writer.
func (t *run) runModel(ctx context.Context) error {
	a := t.agent
	var warnings []api.Warning
	t.tools, warnings = listTools(ctx, a, t.log)
	if len(warnings) > 0 || t.tools.servers != nil {
		if t.state.change(func() { t.state.warnings, t.state.toolServers = append(t.state.warnings, warnings...), t.tools.servers }) && len(warnings) > 0 {
			t.out.notify()
		}
	}
	var live map[string]protocol.ToolCall
	if t.approvals.decided != nil { // a continuation: the decided call first
		tc := t.approvals.decide(ctx)
		live = map[string]protocol.ToolCall{tc.ID: tc}
	}
	msgs := modelMessages(t.context, live)
	msgs = append(msgs, t.user)
	attachments := loadAttachments(ctx, t.h.opts.Attachments, t.claim.Session.Owner, t.sessionID, msgs, t.files, t.log)
	for step := 1; ; step++ {
		// Budgets and token quotas before each call (quota.go).
		maxTokens, err := t.budget.beforeModelCall(ctx, step)
		if err != nil {
			return err
		}
		req := model.Request{
			ModelID:   a.def.ModelID,
			System:    a.def.SystemPrompt,
			Messages:  msgs,
			Tools:     t.tools.set.Specs(),
			MaxTokens: maxTokens,

			PromptCache:     !a.def.NoPromptCache,
			Attachments:     attachments,
			Reasoning:       a.reasoning(),
			ReasoningBlocks: t.reasoning.blocks,
		}
		if req.Reasoning != nil && !t.reasoning.covers(msgs) {
			req.Reasoning = nil
			t.log.Info("model call without a thinking budget: the tool loop's reasoning is not at hand", "step", step)
		}
		text, calls, finish, err := t.modelCall(ctx, req, step)
		if err != nil {
			return err
		}
		capped := finish == model.FinishLength && maxTokens > 0 && maxTokens != a.def.Limits.MaxTokens
		if err := t.budget.afterModelCall(ctx, len(calls), capped); err != nil {
			// The call reached a limit: it is the turn's last. Calls
			// within a tool call budget still run; the others never do.
			var le *limitError
			run := 0
			if errors.As(err, &le) && le.detail.Name == BudgetToolCalls {
				run = max(0, len(calls)-int(le.detail.Used-le.detail.Limit))
			}
			t.failCalls(calls[run:], TextLimitReached)
			if run > 0 {
				t.runTools(ctx, step, text, calls[:run])
			}
			return err
		}
		if len(calls) == 0 {
			return nil
		}
		if step >= a.def.Limits.MaxSteps {
			t.failCalls(calls, TextStepLimit)
			// The turn completes; its message says which limit stopped it.
			t.budget.limit.Store(&limitDetail{Scope: ScopeTurn, Name: BudgetSteps, Limit: int64(a.def.Limits.MaxSteps), Used: int64(step)})
			t.log.Info("step limit reached", "maxSteps", a.def.Limits.MaxSteps, "toolCalls", len(calls))
			return nil
		}
		msgs = append(msgs, t.runTools(ctx, step, text, calls)...)
		if err := ctx.Err(); err != nil {
			return err
		}
		if t.approvals.awaiting() {
			// The turn ends waiting for approval (approvals.go); the turn
			// that continues its loop gets back its reasoning.
			t.reasoning.keep(t.turnID)
			return nil
		}
	}
}

// failCalls records calls as failed with text (their tools never run);
// a repeated call keeps its own error.
func (t *run) failCalls(calls []pendingCall, text string) {
	for _, c := range calls {
		if c.repeated {
			continue // already failed, with its own error
		}
		tc := tool.Entry(c.call, protocol.ToolCallError)
		msg := text
		tc.Error = &msg
		if t.state.setCall(c.index, tc) {
			t.out.notify()
		}
	}
}

// modelCall streams one model call into the state. It returns the call's
// own text, its tool calls, each already added as a pending toolCalls
// entry, or as a failed one when its id repeats an earlier call's of this
// model call (pendingCall.repeated), and why the model stopped. The
// call, its tokens and the tool calls it asks for are added to the
// turn's meter.
//
// Tokens: until the provider's usage arrives, the meter holds an estimate
// of the call's tokens (callEstimate), so that a checkpoint taken while
// it streams, and the ledger of a turn lost then, count them; the
// provider's usage replaces the estimate when it arrives. A call that
// ends without it (stopped, cut by the deadline, failed, or a provider
// that sends none) keeps the estimate, which is added to the turn's usage
// and marked as estimated in its record (MetadataUsageEstimate).
func (t *run) modelCall(ctx context.Context, req model.Request, step int) (_ string, _ []pendingCall, _ model.FinishReason, err error) {
	ctx, mc := t.trace.onModelCall(ctx, req)
	defer func() { mc.Done(err) }()
	t.meter.Add(chat.Usage{ModelCalls: 1})
	est := newCallEstimate(t.meter, &t.state, req)
	defer func() {
		if est.end() {
			t.out.notify()
		}
	}()
	s, err := t.agent.model.Stream(ctx, req)
	if err != nil {
		if ctx.Err() == nil {
			// The provider refused the call before any output (a
			// *model.Error): nothing was generated, and no bill is known.
			// A call cut by ctx may have been sent: its input counts.
			est.withdraw()
		}
		return "", nil, "", err
	}
	t.model.set(s)
	defer func() {
		t.model.set(nil)
		_ = s.Close() // a close failure changes nothing the client sees
	}()
	var (
		text      strings.Builder
		reasoning bool // this call has streamed reasoning
		calls     []pendingCall
		sent      = map[string]bool{} // the non-empty ids the model sent in this call
		finish    model.FinishReason
	)
	for {
		ev, err := s.Recv()
		if err == io.EOF {
			if len(calls) > 0 {
				t.loop.addRound(len(calls))
			}
			return text.String(), calls, finish, nil
		}
		if err != nil {
			return "", nil, "", err
		}
		if ev.FinishReason != "" {
			finish = ev.FinishReason
		}
		mc.Event(ev)
		est.output(model.OutputBytes(ev))
		changed := false
		if ev.ReasoningDelta != "" {
			changed = t.state.addReasoning(ev.ReasoningDelta, !reasoning)
			reasoning = true
		}
		if ev.Reasoning != nil {
			t.reasoning.add(roundID(t.turnID, step), *ev.Reasoning)
		}
		if ev.TextDelta != "" {
			delta := ev.TextDelta
			if text.Len() == 0 && step > 1 && t.state.hasContent() {
				delta = stepSeparator + delta
			}
			text.WriteString(ev.TextDelta)
			if t.state.addText(delta) {
				t.loop.addText(len(delta))
				changed = true
			}
		}
		if tc := ev.ToolCall; tc != nil {
			t.meter.Add(chat.Usage{ToolCalls: 1})
			call := *tc
			// The same id twice in one model call is one call sent twice,
			// not two calls: the second fails without running. (Across
			// model calls an id may come back for a new call: it is only
			// given a new id.)
			repeated := call.ID != "" && sent[call.ID]
			sent[call.ID] = true
			if id := t.loop.callID(call.ID, step, len(calls)+1); id != call.ID {
				// The record needs a non-empty id, unique in its message,
				// and a result must answer exactly one call: an empty or
				// repeated id gets a new one.
				t.log.Info("tool call id replaced", "step", step, "empty", call.ID == "", "notRun", repeated)
				call.ID = id
			}
			entry := tool.Entry(call, protocol.ToolCallPending)
			if repeated {
				entry = repeatedCall(call).ToolCall()
			}
			if !t.fitsRecord(entry) {
				return "", nil, "", errInvalidToolCall
			}
			if i, ok := t.state.addCall(entry); ok {
				calls = append(calls, pendingCall{call: call, index: i, repeated: repeated})
				changed = true
			}
		}
		if ev.Usage != nil {
			est.reported() // the provider's own figures replace the estimate
			changed = t.state.addUsage(*ev.Usage) || changed
			u := chat.Usage{InputTokens: ev.Usage.PromptTokens, OutputTokens: ev.Usage.CompletionTokens}
			if c := ev.Cache; c != nil {
				u.CacheReadTokens, u.CacheWriteTokens = c.Read, c.Write
			}
			u.ReasoningTokens = ev.ReasoningTokens
			t.meter.Add(u)
		}
		if changed {
			t.out.notify()
		}
	}
}

// callEstimate is the estimated token usage of one model call while its
// provider has not reported its own (pkg/model's estimator: input from the
// request as sent, output from the text and tool calls received so far).
// It keeps its figures in the turn's meter as they grow, and in the
// state's in-flight usage (state.setInflight), which snapshots, and so
// checkpoints, show: a turn decided lost after a checkpoint is recorded
// and counted with the estimate as of that checkpoint. The provider's
// usage replaces it (reported), a call never made drops it (withdraw),
// and a call that ended without either keeps it (end). Used by the model
// goroutine only.
type callEstimate struct {
	meter    *chat.Meter
	state    *state
	in, out  int64 // the estimated tokens in the meter now
	outBytes int   // the output bytes received so far
	done     bool  // reported, withdrawn or ended
}

// newCallEstimate adds the estimated input tokens of req to meter and st
// and returns the call's estimate.
func newCallEstimate(meter *chat.Meter, st *state, req model.Request) *callEstimate {
	e := &callEstimate{meter: meter, state: st, in: model.EstimateInputTokens(req)}
	meter.Add(chat.Usage{InputTokens: e.in})
	st.setInflight(e.usage())
	return e
}

// usage returns the estimate as a protocol usage.
func (e *callEstimate) usage() protocol.Usage {
	return protocol.Usage{PromptTokens: e.in, CompletionTokens: e.out, TotalTokens: e.in + e.out}
}

// output counts n more bytes of generated output, adding the tokens the
// estimate gains.
func (e *callEstimate) output(n int) {
	if e.done || n == 0 {
		return
	}
	e.outBytes += n
	if out := model.EstimateTokens(e.outBytes); out != e.out {
		e.meter.Add(chat.Usage{OutputTokens: out - e.out})
		e.out = out
		e.state.setInflight(e.usage())
	}
}

// reported takes the estimate back out of the meter: the provider's own
// usage, which the caller adds to the meter and the state
// (state.addUsage, which drops the in-flight estimate), replaces it.
func (e *callEstimate) reported() {
	if e.done {
		return
	}
	e.meter.Add(chat.Usage{InputTokens: -e.in, OutputTokens: -e.out})
	e.done = true
}

// withdraw drops the estimate of a call that was never made.
func (e *callEstimate) withdraw() {
	if e.done {
		return
	}
	e.reported()
	e.state.endInflight(false)
}

// end ends a call whose estimate was neither reported nor withdrawn: the
// estimate stays in the meter and becomes part of the turn's usage,
// marked as estimated. It reports whether the state changed.
func (e *callEstimate) end() bool {
	if e.done {
		return false
	}
	e.done = true
	return e.state.endInflight(true)
}

// MetadataUsageEstimate is the assistant message metadata member of a
// finished turn whose usage is in part an estimate: the model calls that
// ended without the provider's usage (stopped, cut by the deadline,
// failed, or a provider that reports none) count estimated tokens
// (pkg/model, EstimateTokens: ceil(UTF-8 bytes / 4) of the request as
// sent and of the output received; docs/quotas.md). Its value is
//
//	{"estimated": true, "promptTokens": <int>, "completionTokens": <int>}
//
// the estimated part of the message's usage (the rest is what providers
// reported). The snapshot's usage keeps the protocol's shape
// {promptTokens, completionTokens, totalTokens}, estimates included.
// Absent when every model call's usage was reported.
const MetadataUsageEstimate = "usageEstimate"

// usageEstimateMetadata returns meta with MetadataUsageEstimate set from
// estimated, the estimated part of the turn's usage; meta itself when
// nothing was estimated.
func usageEstimateMetadata(meta json.RawMessage, estimated protocol.Usage) json.RawMessage {
	if estimated == (protocol.Usage{}) {
		return meta
	}
	v, err := json.Marshal(struct {
		Estimated        bool  `json:"estimated"`
		PromptTokens     int64 `json:"promptTokens"`
		CompletionTokens int64 `json:"completionTokens"`
	}{true, estimated.PromptTokens, estimated.CompletionTokens})
	if err != nil {
		return meta
	}
	return withMember(meta, MetadataUsageEstimate, v)
}

// errInvalidToolCall ends a model call that asked for a tool call no canonical
// record can hold (docs/protocol.md#the-canonical-message-record: an empty
// name, arguments nested past protocol.MaxRecordDepth, a non-finite number, an
// over-long key, or calls that together pass protocol.MaxRecordNodes): the
// turn ends as MODEL_FAILED (not retryable; the error code is kept in the
// assistant message's metadata) instead of every later snapshot failing to
// encode and an unencodable turn being saved.
var errInvalidToolCall = &model.Error{Code: "invalid_tool_call"}

// fitsRecord reports whether the turn's messages with tc added to the
// assistant message's toolCalls are still a valid canonical record
// (docs/protocol.md#the-canonical-message-record) once every call has
// finished: each call is checked with a result, and the message with error
// metadata, as in the largest final shape of the record.
func (t *run) fitsRecord(tc protocol.ToolCall) bool {
	calls := append(t.state.view().toolCalls, tc) // the view is capped: a copy
	done := ""
	for i := range calls {
		calls[i].Status, calls[i].Result, calls[i].Error = protocol.ToolCallComplete, &done, nil
	}
	return protocol.ValidateMessages([]protocol.Message{t.user, {
		ID:        MessageID(t.turnID, positionAssistant),
		Role:      protocol.RoleAssistant,
		Status:    protocol.MessageError,
		CreatedAt: t.createdAt,
		ToolCalls: calls,
		Metadata:  t.loop.metadata(json.RawMessage(`{"errorCode":""}`), true),
	}}) == nil
}

// runTools runs the calls of one model call in order, each shown running
// then complete or error, and returns the messages of the round trip for
// the next model call: the assistant message of this call (its text and
// calls) and one tool message per call (pkg/model package documentation).
// Artifacts and component frames of successful calls go into the state.
// A call made after ctx ended is recorded as cancelled without running;
// a repeated call (pendingCall.repeated) keeps its error and never runs.
func (t *run) runTools(ctx context.Context, step int, text string, calls []pendingCall) []protocol.Message {
	entries := make([]protocol.ToolCall, len(calls))
	for i, c := range calls {
		entries[i] = tool.Entry(c.call, protocol.ToolCallPending)
	}
	out := make([]protocol.Message, 0, 1+len(calls))
	out = append(out, protocol.Message{
		ID:        roundID(t.turnID, step),
		Role:      protocol.RoleAssistant,
		Content:   text,
		Status:    protocol.MessageComplete,
		CreatedAt: t.createdAt,
		ToolCalls: entries,
	})
	for i, c := range calls {
		if c.repeated {
			out = append(out, repeatedCall(c.call).ToolMessage(MessageID(t.turnID, fmt.Sprintf("t%d.%d", step, i+1)), t.createdAt))
			continue
		}
		if t.tools.requiresApproval(c.call.Name) {
			if t.approvals.awaitApproval(step, i+1, &calls[i]) {
				continue
			}
			o := cannotAwait(c.call)
			if t.state.setCall(c.index, o.ToolCall()) {
				t.out.notify()
			}
			out = append(out, o.ToolMessage(MessageID(t.turnID, fmt.Sprintf("t%d.%d", step, i+1)), t.createdAt))
			continue
		}
		if t.state.setCall(c.index, tool.Entry(c.call, protocol.ToolCallRunning)) {
			t.out.notify()
		}
		toolCtx, done := t.trace.onToolCall(ctx, c.call)
		o := t.tools.set.Run(toolCtx, c.call)
		done(o)
		if !o.OK() {
			t.log.Info("tool call failed", "tool", c.call.Name, "code", o.Code)
			t.log.Debug("tool failure detail", "tool", c.call.Name, "err", o.Err)
		}
		changed := t.state.setCall(c.index, o.ToolCall())
		if o.OK() {
			changed = t.state.addArtifacts(o.Artifacts) || changed
			if o.Component != nil {
				if !t.state.addComponent(o.Component) {
					t.log.Warn("component left out: assistant content limit", "tool", c.call.Name)
				}
				changed = true
			}
		}
		if changed {
			t.out.notify()
		}
		out = append(out, o.ToolMessage(MessageID(t.turnID, fmt.Sprintf("t%d.%d", step, i+1)), t.createdAt))
	}
	return out
}

// repeatedCall is the outcome of a call whose id repeats an earlier
// call's of the same model call (TextRepeatedCallID).
func repeatedCall(call model.ToolCall) tool.Outcome {
	if len(call.Args) == 0 {
		call.Args = json.RawMessage("{}")
	}
	return tool.Outcome{Call: call, Status: protocol.ToolCallError, Text: TextRepeatedCallID, Code: codeRepeatedCallID}
}

// modelMessages returns the context as providers read it: assistant
// contents in the ordered envelope reduced to their text (models only
// ever see plain text; components are for clients), each assistant
// message split back into the model calls that wrote it (splitRounds),
// and each stored tool call followed by its tool result message
// (model.ExpandToolCalls). Calls that waited for approval are resolved
// with their decisions, live adding the current continuation's
// (resolveAwaited).
func modelMessages(context []protocol.Message, live map[string]protocol.ToolCall) []protocol.Message {
	decided := decidedCalls(context)
	maps.Copy(decided, live)
	msgs := make([]protocol.Message, 0, len(context)+1)
	for _, m := range context {
		if m.Role != protocol.RoleAssistant {
			msgs = append(msgs, m)
			continue
		}
		m.Content = PlainText(m.Content)
		decider, _ := decisionOf(m)
		msgs = append(msgs, resolveAwaited(splitRounds(m), decided, decider)...)
	}
	return model.ExpandToolCalls(msgs)
}

// PlainText returns the text of an assistant message's content: content itself
// when it is plain, or, for ordered content (agentskit.chat.content/1,
// docs/protocol.md#ordered-assistant-content), its text parts joined without
// separator (a long text is split into several records) and its components
// left out. Content that starts like an envelope but does not decode is
// returned as it is.
func PlainText(content string) string {
	if !strings.HasPrefix(content, "\x1e") {
		return content
	}
	dc, d := protocol.DecodeContent(content)
	if d != nil {
		return content
	}
	var b strings.Builder
	for _, p := range dc.Parts {
		if p.Kind == protocol.ContentText {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// modelStream holds the open model stream of a turn, so that cleanup can
// close it to abort a Recv that ignores cancellation. Safe for concurrent
// use.
type modelStream struct {
	mu sync.Mutex
	s  model.Stream
}

// set records s as the open stream (nil: none).
func (m *modelStream) set(s model.Stream) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.s = s
}

// close closes the open stream, if any; its error is ignored.
func (m *modelStream) close() {
	m.mu.Lock()
	s := m.s
	m.mu.Unlock()
	if s != nil {
		_ = s.Close()
	}
}
