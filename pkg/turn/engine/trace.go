package turn

import (
	"context"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/tool"
)

// turnTrace is the hooks the engine calls at the steps of one turn, in
// the shape of net/http/httptrace.ClientTrace: a struct of functions,
// any of them nil, each called on the goroutine of its step (the
// model's, the supervisor's, the writer's), so an implementation is safe
// for concurrent use. The engine says what happened; the hooks decide
// what to measure and where it goes. The one implementation is the turn's
// metrics and spans (telemetryTrace, telemetry.go); the engine itself
// knows neither.
type turnTrace struct {
	// firstSnapshot is called once the stream's first lines were written.
	firstSnapshot func(at time.Time)
	// checkpoint is called after each checkpoint that landed, the
	// acknowledgment included.
	checkpoint func()
	// stopSeen is called each time the turn sees a stop request.
	stopSeen func(at time.Time)
	// modelCall is called before each model call with its request; it
	// returns the context the call runs under and the hooks of the call.
	modelCall func(ctx context.Context, req model.Request) (context.Context, modelCallTrace)
	// toolCall is called before each tool call the turn runs; it returns
	// the context the call runs under and the function called with its
	// outcome.
	toolCall func(ctx context.Context, call model.ToolCall) (context.Context, func(tool.Outcome))
	// ended is called once, after the turn's last line (or its error
	// answer before any line).
	ended func(turnEnd)
}

// modelCallTrace is the hooks of one model call: event with each event
// the stream returned, done once when it ended (err nil: it completed).
type modelCallTrace struct {
	event func(model.Event)
	done  func(err error)
}

// turnStart is what the trace of a claimed turn starts from.
type turnStart struct {
	sessionID, turnID string
	principal         chat.Principal
	definitionID      string
	revision          int64
	provider, modelID string
	startedAt         time.Time
	// request is the request's own context (the submit's or the drain's),
	// ctx the turn's: the trace's spans are made under ctx.
	request, ctx context.Context
	// meter is the turn's meter (run.meter).
	meter *chat.Meter
}

// turnEnd is how a turn ended, as its last line said it.
type turnEnd struct {
	// outcome is "complete", "interrupted", or the code of the turn's
	// error (TURN_LOST when its lease was lost or its save fenced,
	// TURN_OUTCOME_INDETERMINATE when its save's outcome stayed unknown).
	outcome string
	status  chat.TurnStatus
	// leaseLost is set when the turn lost its lease or its save was
	// fenced.
	leaseLost bool
	// toolCalls are the turn's tool calls as its record shows them.
	toolCalls []protocol.ToolCall
}

// Outcome names of turnEnd that are no error code.
const (
	outcomeComplete    = "complete"
	outcomeInterrupted = "interrupted"
)

// The engine's calls of the hooks: each does nothing when the hook, or
// the trace, is nil.

func (tr *turnTrace) onFirstSnapshot(at time.Time) {
	if tr != nil && tr.firstSnapshot != nil {
		tr.firstSnapshot(at)
	}
}

func (tr *turnTrace) onCheckpoint() {
	if tr != nil && tr.checkpoint != nil {
		tr.checkpoint()
	}
}

func (tr *turnTrace) onStopSeen(at time.Time) {
	if tr != nil && tr.stopSeen != nil {
		tr.stopSeen(at)
	}
}

func (tr *turnTrace) onModelCall(ctx context.Context, req model.Request) (context.Context, modelCallTrace) {
	var mc modelCallTrace
	if tr != nil && tr.modelCall != nil {
		ctx, mc = tr.modelCall(ctx, req)
	}
	if mc.event == nil {
		mc.event = func(model.Event) {}
	}
	if mc.done == nil {
		mc.done = func(error) {}
	}
	return ctx, mc
}

func (tr *turnTrace) onToolCall(ctx context.Context, call model.ToolCall) (context.Context, func(tool.Outcome)) {
	var done func(tool.Outcome)
	if tr != nil && tr.toolCall != nil {
		ctx, done = tr.toolCall(ctx, call)
	}
	if done == nil {
		done = func(tool.Outcome) {}
	}
	return ctx, done
}

// report tells the trace how the turn ended: the ending the supervisor
// decided, what became of its save, and its last view.
func (tr *turnTrace) report(end ending, outcome saveOutcome, v view) {
	if tr == nil || tr.ended == nil {
		return
	}
	e := turnEnd{outcome: outcomeComplete, status: end.status, leaseLost: end.leaseLost || outcome == fenced,
		toolCalls: finishCalls(v.toolCalls, true)}
	switch {
	case e.leaseLost:
		e.outcome = protocol.CodeTurnLost
	case outcome == unknown:
		e.outcome = protocol.CodeTurnOutcomeIndeterminate
	case end.status == chat.TurnInterrupted:
		e.outcome = outcomeInterrupted
	case end.diag != nil:
		e.outcome = end.diag.Code
	}
	tr.ended(e)
}

// startTrace starts the turn's hooks (t.trace) for principal's turn, and
// carries what they put in a context into the turn's contexts.
func (t *run) startTrace(principal chat.Principal) {
	h := t.h
	s := turnStart{sessionID: t.sessionID, turnID: t.turnID, principal: principal, definitionID: t.claim.Session.DefinitionID,
		startedAt: t.startedAt, request: t.reqCtx, ctx: t.ctx, meter: t.meter}
	if ag, err := h.agents.agentFor(s.definitionID); err == nil {
		s.provider, s.modelID, s.revision = providerOf(ag), ag.def.ModelID, ag.def.Revision
	}
	wrap, tr := telemetryTrace(h, s)
	t.ctx, t.reqCtx, t.trace = wrap(t.ctx), wrap(t.reqCtx), tr
}
