package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// Source is tools known only while the process runs: a remote server's
// listing (pkg/tool/mcp). A turn asks each of its definition's sources
// for their tools before its first model call and offers them after the
// definition's own (Toolset.With).
type Source interface {
	// Name names the source in logs and warnings (a server's name).
	Name() string
	// Tools returns the source's tools now; an error leaves them out of
	// the turn, which goes on without them.
	Tools(ctx context.Context) (*Registry, error)
}

// Toolset is the tools one definition offers the model: a fixed subset of
// a Registry, with (With) the tools of other registries added for a turn
// (a remote server's listing). It is immutable and safe for concurrent
// use.
type Toolset struct {
	owner map[string]*Registry
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
	ts := &Toolset{owner: make(map[string]*Registry, len(names)), specs: specs}
	for _, n := range names {
		ts.owner[n] = r
	}
	return ts, nil
}

// With returns a Toolset offering ts's tools, then every tool of each of
// regs in the order of its names (Names). A name ts or an earlier
// registry already offers is left out, and returned in shadowed. ts
// itself is not changed.
func (ts *Toolset) With(regs ...*Registry) (_ *Toolset, shadowed []string) {
	out := &Toolset{owner: make(map[string]*Registry, len(ts.owner)), specs: slices.Clone(ts.specs)}
	maps.Copy(out.owner, ts.owner)
	for _, r := range regs {
		for _, n := range r.Names() {
			if out.owner[n] != nil {
				shadowed = append(shadowed, n)
				continue
			}
			specs, err := r.Specs([]string{n})
			if err != nil {
				continue // gone since Names: never, registries only grow
			}
			out.owner[n] = r
			out.specs = append(out.specs, specs...)
		}
	}
	return out, shadowed
}

// Specs returns model.Request.Tools for this set (nil when empty). The
// caller must not modify the result.
func (ts *Toolset) Specs() []model.ToolSpec { return ts.specs }

// Len returns the number of tools in the set.
func (ts *Toolset) Len() int { return len(ts.specs) }

// Approval reports whether the set offers name and the tool itself says
// its calls wait for approval (Tool.Approval; a definition's
// approvalTools are the caller's to check).
func (ts *Toolset) Approval(name string) bool {
	r := ts.owner[name]
	if r == nil {
		return false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	e := r.tools[name]
	return e != nil && e.tool.Approval
}

// Run runs call like Registry.Run, except that a tool outside the set is
// CodeUnknownTool even when it is registered: the model may only call what
// it was offered.
func (ts *Toolset) Run(ctx context.Context, call model.ToolCall) Outcome {
	r := ts.owner[call.Name]
	if r == nil {
		o := Outcome{Call: call}
		if len(o.Call.Args) == 0 {
			o.Call.Args = []byte("{}")
		}
		return o.fail(CodeUnknownTool, textUnknownTool, fmt.Errorf("%w: %q is not offered", ErrUnknownTool, call.Name))
	}
	return r.Run(ctx, call)
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
