package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/tool"
)

// Tool results of calls that require approval (docs/approvals.md). The
// model reads them; clients see them in the toolCalls entry's error.
const (
	// TextDenied is the result of a call its owner denied.
	TextDenied = "The user denied this tool call."
	// TextNotApproved is the result, in later turns' model context, of a
	// call that waited for approval and got none (superseded or expired).
	TextNotApproved = "Not run: the user did not approve this tool call."
	// TextCannotAwait is the result of a call that requires approval but
	// cannot wait for it: its arguments are larger than
	// chat.MaxConfirmationInput, or the turn already waits for
	// chat.MaxPendingConfirmations calls.
	TextCannotAwait = "Not run: this tool requires approval, and this call cannot wait for it."
)

// approvals is what a turn keeps about confirmations, and its steps that
// use them: the ones it asks for (model goroutine, read by the writer and
// at release) and the one its claim decided.
type approvals struct {
	t       *run // the run it belongs to (bind)
	mu      sync.Mutex
	pending []chat.Confirmation

	// decided is the confirmation the turn's claim decided (nil for a
	// turn that decides nothing); approve is the decision.
	decided *chat.Confirmation
	approve bool
	// completed is set when the turn ends complete: only then are its
	// pending confirmations recorded.
	completed bool
	// acted is set once the decided call was run or denied; a turn that
	// ends before (it failed before its stream) gives the decision back.
	acted bool
}

// requiresApproval reports whether the agent's definition makes name wait
// for approval.
func (a *agent) requiresApproval(name string) bool {
	return slices.Contains(a.def.ApprovalTools, name)
}

// awaitApproval makes call c wait for approval instead of running: its
// entry gets status requires_confirmation and a confirmation is kept for
// the release. It returns false, changing nothing, when the call cannot
// wait (TextCannotAwait); the caller then fails it.
func (ap *approvals) awaitApproval(step, n int, c *pendingCall) bool {
	t := ap.t
	entry := tool.Entry(c.call, protocol.ToolCallRequiresConfirmation)
	var input bytes.Buffer
	if json.Compact(&input, entry.Args) != nil || input.Len() > chat.MaxConfirmationInput {
		return false
	}
	a := &t.approvals
	a.mu.Lock()
	full := len(a.pending) >= chat.MaxPendingConfirmations
	a.mu.Unlock()
	if full {
		return false
	}
	token := chat.NewConfirmationToken()
	if !protocol.IsSafeID(c.call.ID) || ap.confirmationNamesCall(c.call.ID) {
		// A confirmation names its call by a SafeId unique among the
		// session's confirmations (the envelope requires it; a model may
		// reuse ids across turns): a random one, unique in the turn too.
		c.call.ID = t.loop.callID("call-"+token[2:18], step, n)
		entry.ID = c.call.ID
	}
	cf := chat.Confirmation{
		Token:      token,
		Action:     c.call.Name,
		Input:      input.Bytes(),
		ToolCallID: c.call.ID,
		TurnID:     t.turnID,
		ExpiresAt:  time.UnixMilli(t.h.clock.Now().Add(t.h.opts.ConfirmationTTL).UnixMilli()).UTC(), // as stored
		Status:     chat.ConfirmationPending,
	}
	a.mu.Lock()
	a.pending = append(a.pending, cf)
	a.mu.Unlock()
	if t.state.setCall(c.index, entry) {
		t.out.notify()
	}
	t.log.Info("tool call awaits approval", "tool", c.call.Name)
	return true
}

// confirmationNamesCall reports whether a confirmation of the session (as
// claimed) or of this turn already names call id.
func (ap *approvals) confirmationNamesCall(id string) bool {
	t := ap.t
	named := func(cf chat.Confirmation) bool { return cf.ToolCallID == id }
	ap.mu.Lock()
	defer ap.mu.Unlock()
	return slices.ContainsFunc(t.claim.Session.Confirmations, named) || slices.ContainsFunc(ap.pending, named)
}

// awaiting reports whether the turn waits for approval of a call.
func (ap *approvals) awaiting() bool {
	ap.mu.Lock()
	defer ap.mu.Unlock()
	return len(ap.pending) > 0
}

// cannotAwait is the outcome of a call that requires approval but cannot
// wait for it.
func cannotAwait(call model.ToolCall) tool.Outcome {
	return tool.Outcome{Call: call, Status: protocol.ToolCallError, Text: TextCannotAwait, Code: "approval_unavailable"}
}

// confirmationsToRecord returns the confirmations the release records:
// the pending ones of a turn that ended complete, else none.
func (ap *approvals) confirmationsToRecord(outcome chat.TerminalOutcome) []chat.Confirmation {
	t := ap.t
	a := &t.approvals
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.completed || outcome != chat.OutcomeCompleted {
		return nil
	}
	return slices.Clone(a.pending)
}

// undecide reports whether the release gives the turn's decision back
// (ReleaseRequest.Undecide): it decided a confirmation and never acted
// on it.
func (ap *approvals) undecide() bool {
	ap.mu.Lock()
	defer ap.mu.Unlock()
	return ap.decided != nil && !ap.acted
}

// decide runs the decided call of a continuation turn before its first
// model call: approve runs the tool (exactly once: the claim that moved
// the confirmation is the only one that can), deny records TextDenied.
// The call becomes the first entry of the assistant message's toolCalls,
// a model round of its own. It returns the entry as the model's context
// shows it, in place of the asking turn's requires_confirmation entry.
func (ap *approvals) decide(ctx context.Context) protocol.ToolCall {
	t := ap.t
	cf := ap.decided
	ap.mu.Lock()
	ap.acted = true
	ap.mu.Unlock()
	call := model.ToolCall{ID: cf.ToolCallID, Name: cf.Action, Args: json.RawMessage(cf.Input)}
	t.loop.callID(call.ID, 0, 1) // later calls of this turn never reuse the id
	i, _ := t.state.addCall(tool.Entry(call, protocol.ToolCallRunning))
	t.loop.addRound(1)
	var o tool.Outcome
	if ap.approve {
		t.out.notify()
		o = t.tools.set.Run(ctx, call)
		if !o.OK() {
			t.log.Info("approved tool call failed", "tool", call.Name, "code", o.Code)
			t.log.Debug("tool failure detail", "tool", call.Name, "err", o.Err)
		}
	} else {
		o = tool.Outcome{Call: call, Status: protocol.ToolCallError, Text: TextDenied, Code: "denied"}
	}
	t.state.setCall(i, o.ToolCall())
	if o.OK() {
		t.state.addArtifacts(o.Artifacts)
		if o.Component != nil && !t.state.addComponent(o.Component) {
			t.log.Warn("component left out: assistant content limit", "tool", call.Name)
		}
	}
	t.out.notify()
	t.log.Info("confirmation decided", "tool", call.Name, "approve", ap.approve, "status", o.Status)
	return o.ToolCall()
}

// approvalMetadata returns meta (nil or a JSON object) with the approval
// members of the assistant message in status: api.MetadataConfirmation on a
// continuation, api.MetadataPendingConfirmations on a complete message of a
// turn that waits for approval.
func (ap *approvals) approvalMetadata(meta json.RawMessage, status string) json.RawMessage {
	t := ap.t
	a := &t.approvals
	a.mu.Lock()
	pending := slices.Clone(a.pending)
	a.mu.Unlock()
	set := map[string]any{}
	if cf := a.decided; cf != nil {
		decision := protocol.DecisionDeny
		if a.approve {
			decision = protocol.DecisionApprove
		}
		set[api.MetadataConfirmation] = api.ConfirmationMetadata{Token: cf.Token, Decision: decision, ParentTurnID: cf.TurnID, ToolCallID: cf.ToolCallID}
	}
	if len(pending) > 0 && status != protocol.MessageError {
		list := make([]api.PendingConfirmation, len(pending))
		for i, cf := range pending {
			list[i] = api.PendingConfirmation{Token: cf.Token, ToolCallID: cf.ToolCallID, Action: cf.Action, ExpiresAt: cf.ExpiresAt.UnixMilli()}
		}
		set[api.MetadataPendingConfirmations] = list
	}
	if len(set) == 0 {
		return meta
	}
	obj := map[string]json.RawMessage{}
	if len(meta) > 0 && json.Unmarshal(meta, &obj) != nil {
		return meta
	}
	for k, v := range set {
		enc, err := json.Marshal(v)
		if err != nil {
			return meta
		}
		obj[k] = enc
	}
	out, err := json.Marshal(obj) // members sorted by name: deterministic
	if err != nil {
		return meta
	}
	return out
}

// decisionOf returns a continuation's decision from its confirmation
// metadata (api.MetadataConfirmation): the decided call's id, and whether the
// message has one. The metadata is read with the strict reader
// (protocol.UnmarshalStrict), as every JSON turnstream did not just write
// itself: a duplicated key, a lone surrogate or a case variant of
// "confirmation" or "toolCallId" makes it no decision.
func decisionOf(m protocol.Message) (string, bool) {
	if m.Role != protocol.RoleAssistant || len(m.Metadata) == 0 {
		return "", false
	}
	var meta api.ApprovalMetadata
	if protocol.UnmarshalStrict(m.Metadata, &meta) != nil || meta.Confirmation == nil || meta.Confirmation.ToolCallID == "" {
		return "", false
	}
	return meta.Confirmation.ToolCallID, true
}

// decidedCalls returns the decided calls of the continuations in context
// by call id: the first toolCalls entry of each continuation's assistant
// message.
func decidedCalls(context []protocol.Message) map[string]protocol.ToolCall {
	out := map[string]protocol.ToolCall{}
	for _, m := range context {
		if id, ok := decisionOf(m); ok && len(m.ToolCalls) > 0 && m.ToolCalls[0].ID == id {
			out[id] = m.ToolCalls[0]
		}
	}
	return out
}

// resolveAwaited rewrites the assistant messages of the model's context
// for calls that waited for approval: a call with status
// requires_confirmation takes its decided entry (as the continuation
// recorded it, or decided as the live one), or TextNotApproved when none
// decided it; a continuation's copy of its decided call is dropped (the
// model reads the call where it asked for it). Segments left with neither
// text nor calls are dropped.
func resolveAwaited(segments []protocol.Message, decided map[string]protocol.ToolCall, decider string) []protocol.Message {
	out := segments[:0:0]
	for _, m := range segments {
		calls := make([]protocol.ToolCall, 0, len(m.ToolCalls))
		for _, tc := range m.ToolCalls {
			switch {
			case decider != "" && tc.ID == decider:
				continue
			case tc.Status == protocol.ToolCallRequiresConfirmation:
				if d, ok := decided[tc.ID]; ok {
					tc = d
				} else {
					text := TextNotApproved
					tc.Status, tc.Result, tc.Error = protocol.ToolCallError, nil, &text
				}
			}
			calls = append(calls, tc)
		}
		if len(calls) == 0 {
			calls = nil
		}
		m.ToolCalls = calls
		if m.Content == "" && len(m.ToolCalls) == 0 {
			continue
		}
		out = append(out, m)
	}
	return out
}

// decisionInputHash is the input hash of a decision turn: its input label
// with the token and decision, so that a turn id reused for another
// decision is TURN_ID_REUSED.
func decisionInputHash(input string, c *protocol.SubmitConfirmation) string {
	return chat.HashInput(fmt.Sprintf("%s\x00confirmation\x00%s\x00%s", input, c.Token, c.Decision))
}

// errDecisionMissing is a decision claim whose returned session does not
// show the confirmation it moved (a store bug): the turn is refused.
var errDecisionMissing = errors.New("turn: the claim does not hold its decided confirmation")
