package engine

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/tool"
)

// turnTools is the tools one turn offers: its definition's own, then
// those of the definition's sources (Config.ToolSources), as listTools
// found them at the turn's start.
type turnTools struct {
	agent *agent
	set   *tool.Toolset
	// servers names the source of each remote tool offered.
	servers map[string]string
}

// listTools lists the turn's tools before its first model call: each of
// a's sources at once, within ctx. A source that fails is left out and
// gets a warning for the assistant message's metadata
// (api.MetadataWarnings); a source's tool whose name is already offered
// is left out and logged.
func listTools(ctx context.Context, a *agent, log *slog.Logger) (turnTools, []api.Warning) {
	tt := turnTools{agent: a, set: a.tools}
	if len(a.sources) == 0 {
		return tt, nil
	}
	regs := make([]*tool.Registry, len(a.sources))
	errs := make([]error, len(a.sources))
	var wg sync.WaitGroup
	for i, src := range a.sources {
		wg.Go(func() { regs[i], errs[i] = src.Tools(ctx) })
	}
	wg.Wait()
	var listed []*tool.Registry
	var warnings []api.Warning
	for i, src := range a.sources {
		if errs[i] == nil {
			listed = append(listed, regs[i])
			for _, n := range regs[i].Names() {
				if tt.servers == nil {
					tt.servers = map[string]string{}
				}
				if _, taken := tt.servers[n]; !taken {
					tt.servers[n] = src.Name()
				}
			}
			continue
		}
		if ctx.Err() != nil {
			continue // the turn is ending: no model call will be offered them
		}
		log.Warn("tool server left out of the turn", "server", src.Name(), "err", errs[i])
		warnings = append(warnings, api.Warning{
			Code:    api.WarningToolServerUnavailable,
			Message: "The tool server " + src.Name() + " could not be reached; its tools were not offered in this turn.",
			Server:  src.Name(),
		})
	}
	set, shadowed := a.tools.With(listed...)
	if len(shadowed) > 0 {
		log.Warn("remote tools left out: their names are already offered", "tools", shadowed)
		for _, n := range shadowed {
			delete(tt.servers, n) // the definition's own tool
		}
	}
	tt.set = set
	return tt, warnings
}

// requiresApproval reports whether a call of name waits for approval: the
// definition's approvalTools, or the tool's own (a remote server's
// requireApproval).
func (tt turnTools) requiresApproval(name string) bool {
	return tt.agent.requiresApproval(name) || tt.set.Approval(name)
}

// warningsMetadata returns meta with api.MetadataWarnings set to
// warnings, or meta itself when there is none.
func warningsMetadata(meta json.RawMessage, warnings []api.Warning) json.RawMessage {
	if len(warnings) == 0 {
		return meta
	}
	b, err := json.Marshal(warnings)
	if err != nil {
		return meta
	}
	return withMember(meta, api.MetadataWarnings, b)
}
