package tool

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// Toolset is the tools one definition offers the model: a fixed subset of
// a Registry. It is immutable and safe for concurrent use.
type Toolset struct {
	reg   *Registry
	names map[string]bool
	specs []model.ToolSpec
}

// Select returns the Toolset of the named tools, in the order given (a
// definition's tools). A name that is not registered is an error wrapping
// ErrUnknownTool. No names gives an empty Toolset whose Specs is nil.
func (r *Registry) Select(names []string) (*Toolset, error) {
	specs, err := r.Specs(names)
	if err != nil {
		return nil, err
	}
	ts := &Toolset{reg: r, names: make(map[string]bool, len(names)), specs: specs}
	for _, n := range names {
		ts.names[n] = true
	}
	return ts, nil
}

// Specs returns model.Request.Tools for this set (nil when empty). The
// caller must not modify the result.
func (ts *Toolset) Specs() []model.ToolSpec { return ts.specs }

// Len returns the number of tools in the set.
func (ts *Toolset) Len() int { return len(ts.specs) }

// Run runs call like Registry.Run, except that a tool outside the set is
// CodeUnknownTool even when it is registered: the model may only call what
// it was offered.
func (ts *Toolset) Run(ctx context.Context, call model.ToolCall) Outcome {
	if !ts.names[call.Name] {
		o := Outcome{Call: call}
		if len(o.Call.Args) == 0 {
			o.Call.Args = []byte("{}")
		}
		return o.fail(CodeUnknownTool, textUnknownTool, fmt.Errorf("%w: %q is not offered", ErrUnknownTool, call.Name))
	}
	return ts.reg.Run(ctx, call)
}

// Entry returns the toolCalls entry
// (docs/protocol.md#the-canonical-message-record) of a call that has not
// finished: status protocol.ToolCallPending (the model asked for it) or
// protocol.ToolCallRunning (Run has started), with Args "{}" when the model
// sent none or they are not a JSON object. Outcome.ToolCall gives the finished
// entry.
func Entry(call model.ToolCall, status string) protocol.ToolCall {
	args := call.Args
	if !isJSONObject(args) {
		args = json.RawMessage("{}")
	}
	return protocol.ToolCall{ID: call.ID, Name: call.Name, Args: args, Status: status}
}
