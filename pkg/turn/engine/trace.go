package engine

import (
	"context"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/tool"
)

// Trace is the hooks the engine calls at the steps of one turn, in the
// shape of net/http/httptrace.ClientTrace: a struct of functions, any of
// them nil, each called on the goroutine of its step (the model's, the
// supervisor's, the writer's), so an implementation must be safe for
// concurrent use. The engine says what happened; the hooks decide what to
// measure and where it goes (Config.Trace). pkg/turn's implementation is
// the turn's metrics and spans; the engine knows neither.
type Trace struct {
	// FirstSnapshot is called once the stream's first lines were written.
	FirstSnapshot func(at time.Time)
	// Checkpoint is called after each checkpoint that landed, the
	// acknowledgment included.
	Checkpoint func()
	// StopSeen is called each time the turn sees a stop request.
	StopSeen func(at time.Time)
	// ModelCall is called before each model call with its request; it
	// returns the context the call runs under and the hooks of the call.
	ModelCall func(ctx context.Context, req model.Request) (context.Context, ModelCallTrace)
	// ToolCall is called before each tool call the turn runs; it returns
	// the context the call runs under and the function called with its
	// outcome (nil: none).
	ToolCall func(ctx context.Context, call model.ToolCall) (context.Context, func(tool.Outcome))
	// Ended is called once, after the turn's last line (or its error
	// answer before any line).
	Ended func(TurnEnd)
}

// ModelCallTrace is the hooks of one model call, either nil: Event with
// each event the stream returned, Done once when it ended (err nil: it
// completed).
type ModelCallTrace struct {
	Event func(model.Event)
	Done  func(err error)
}

// TurnStart is what the trace of a claimed turn starts from
// (Config.Trace).
type TurnStart struct {
	SessionID, TurnID string
	Principal         chat.Principal
	DefinitionID      string
	Revision          int64
	// Provider is the definition's provider name ("custom" for the simple
	// path's model, which names none); ModelID its model id, possibly
	// empty.
	Provider, ModelID string
	StartedAt         time.Time
	// Request is the request's own context (the submit's, the resume's or
	// the drain's), Ctx the turn's: spans of the turn are made under Ctx.
	Request, Ctx context.Context
	// Meter is the turn's meter: its store requests and capacity units
	// from its claim on.
	Meter *chat.Meter
}

// TurnEnd is how a turn ended, as its last line said it.
type TurnEnd struct {
	// Outcome is OutcomeComplete, OutcomeInterrupted, or the code of the
	// turn's error (TURN_LOST when its lease was lost or its save fenced,
	// TURN_OUTCOME_INDETERMINATE when its save's outcome stayed unknown).
	Outcome string
	Status  chat.TurnStatus
	// LeaseLost is set when the turn lost its lease or its save was
	// fenced.
	LeaseLost bool
	// ToolCalls are the turn's tool calls as its record shows them.
	ToolCalls []protocol.ToolCall
	// ToolServers names the remote server of each remote tool the turn
	// offered (Config.ToolSources), by tool name; nil when none.
	ToolServers map[string]string
}

// Outcomes of TurnEnd that are no error code.
const (
	OutcomeComplete    = "complete"
	OutcomeInterrupted = "interrupted"
)

// The engine's calls of the hooks: each does nothing when the hook, or
// the trace, is nil.

func (tr *Trace) onFirstSnapshot(at time.Time) {
	if tr != nil && tr.FirstSnapshot != nil {
		tr.FirstSnapshot(at)
	}
}

func (tr *Trace) onCheckpoint() {
	if tr != nil && tr.Checkpoint != nil {
		tr.Checkpoint()
	}
}

func (tr *Trace) onStopSeen(at time.Time) {
	if tr != nil && tr.StopSeen != nil {
		tr.StopSeen(at)
	}
}

func (tr *Trace) onModelCall(ctx context.Context, req model.Request) (context.Context, ModelCallTrace) {
	var mc ModelCallTrace
	if tr != nil && tr.ModelCall != nil {
		ctx, mc = tr.ModelCall(ctx, req)
	}
	if mc.Event == nil {
		mc.Event = func(model.Event) {}
	}
	if mc.Done == nil {
		mc.Done = func(error) {}
	}
	return ctx, mc
}

func (tr *Trace) onToolCall(ctx context.Context, call model.ToolCall) (context.Context, func(tool.Outcome)) {
	var done func(tool.Outcome)
	if tr != nil && tr.ToolCall != nil {
		ctx, done = tr.ToolCall(ctx, call)
	}
	if done == nil {
		done = func(tool.Outcome) {}
	}
	return ctx, done
}

// report tells the trace how the turn ended: the ending the supervisor
// decided, what became of its save, and its last view.
func (tr *Trace) report(end ending, outcome saveOutcome, v view) {
	if tr == nil || tr.Ended == nil {
		return
	}
	e := TurnEnd{Outcome: OutcomeComplete, Status: end.status, LeaseLost: end.leaseLost || outcome == fenced,
		ToolCalls: finishCalls(v.toolCalls, true), ToolServers: v.toolServers}
	switch {
	case e.LeaseLost:
		e.Outcome = protocol.CodeTurnLost
	case outcome == unknown:
		e.Outcome = protocol.CodeTurnOutcomeIndeterminate
	case end.status == chat.TurnInterrupted:
		e.Outcome = OutcomeInterrupted
	case end.diag != nil:
		e.Outcome = end.diag.Code
	}
	tr.Ended(e)
}

// startTrace starts the turn's hooks (t.trace, Config.Trace) for
// principal's turn, and carries what they put in a context into the
// turn's contexts.
func (t *run) startTrace(principal chat.Principal) {
	h := t.h
	if h.opts.Trace == nil {
		return
	}
	s := TurnStart{SessionID: t.sessionID, TurnID: t.turnID, Principal: principal, DefinitionID: t.claim.Session.DefinitionID,
		StartedAt: t.startedAt, Request: t.reqCtx, Ctx: t.ctx, Meter: t.meter}
	if ag, err := h.agents.agentFor(s.DefinitionID); err == nil {
		s.Provider, s.ModelID, s.Revision = providerOf(ag), ag.def.ModelID, ag.def.Revision
	}
	wrap, tr := h.opts.Trace(s)
	if wrap != nil {
		t.ctx, t.reqCtx = wrap(t.ctx), wrap(t.reqCtx)
	}
	t.trace = tr
}

// providerOf is the provider name of an agent's definition; "custom" for
// the simple path's model, which names none.
func providerOf(ag *agent) string {
	if ag.def.Provider != "" {
		return ag.def.Provider
	}
	return "custom"
}
