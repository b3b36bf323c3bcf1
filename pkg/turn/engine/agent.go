package engine

import (
	"errors"
	"fmt"

	"github.com/turnstream/turnstream/pkg/definition"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/tool"
)

// agent is what one definition runs with: the definition, its model
// provider and the tools it offers (docs/design.md#models-tools-definitions).
type agent struct {
	def   definition.Definition
	model model.Model
	tools *tool.Toolset
	// sources are the definition's remote tools (Config.ToolSources).
	sources []tool.Source
}

// simpleID is the agents key of the simple path's single definition.
const simpleID = ""

// newAgents builds the agent of every definition of opts (see New
// for the checks). The simple path gets one agent under simpleID.
func newAgents(opts Config) (map[string]*agent, error) {
	reg := opts.Tools
	if reg == nil {
		reg = tool.NewRegistry(nil)
	}
	if opts.Definitions == nil {
		if len(opts.ToolSources) > 0 {
			return nil, errors.New("turn: Options.ToolSources needs Options.Definitions")
		}
		d := opts.Definition
		switch {
		case opts.Model == nil:
			return nil, errors.New("turn: Options.Model is nil (and Options.Definitions is nil)")
		case !protocol.IsSafeID(d.ID):
			return nil, errors.New("turn: Options.Definition.ID is not a SafeId")
		case d.Revision < 1:
			return nil, errors.New("turn: Options.Definition.Revision must be >= 1")
		}
		ts, _ := reg.Select(nil) // no names: never an error
		limits := d.Limits
		if limits.MaxSteps == 0 {
			limits.MaxSteps = definition.DefaultMaxSteps
		}
		return map[string]*agent{simpleID: {
			def: definition.Definition{
				ID: d.ID, Revision: d.Revision, SystemPrompt: d.SystemPrompt, ModelID: d.ModelID, TitleModelID: d.TitleModelID,
				Limits: limits, Quotas: d.Quotas,
			},
			model: opts.Model,
			tools: ts,
		}}, nil
	}
	agents := map[string]*agent{}
	for _, d := range opts.Definitions.All() {
		m := opts.Models[d.Provider]
		if m == nil {
			return nil, fmt.Errorf("turn: Options.Models has no %q provider (definition %s)", d.Provider, d.ID)
		}
		ts, err := reg.Select(d.Tools)
		if err != nil {
			return nil, fmt.Errorf("turn: definition %s: Options.Tools: %w", d.ID, err)
		}
		if d.Limits.MaxSteps < 1 {
			return nil, fmt.Errorf("turn: definition %s: limits.maxSteps must be >= 1", d.ID)
		}
		d.Quotas = opts.Definitions.Quotas(d.ID) // its own over the deployment's default
		agents[d.ID] = &agent{def: d, model: m, tools: ts, sources: opts.ToolSources[d.ID]}
	}
	for id := range opts.ToolSources {
		if agents[id] == nil {
			return nil, fmt.Errorf("turn: Options.ToolSources: %q is not a definition", id)
		}
	}
	return agents, nil
}

// errDefinitionGone marks a session whose stored definition id is no
// longer configured: the turn is refused (500 SERVER_INTERNAL, logged),
// never run with another definition (pkg/definition).
var errDefinitionGone = errors.New("turn: the session's definition is not configured")

// agentSet is what each definition id runs with (newAgents, built once by
// New: the resolver is immutable) and the resolver that names a
// session's definition; nil on the simple path (Config.Definition), whose
// one agent is byID[simpleID].
type agentSet struct {
	byID     map[string]*agent
	resolver *definition.Resolver
}

// defaultDefinition is the definition a claim records on a session it
// creates: the simple path's one definition, else the resolver's default.
// An existing session keeps its own (chat.ClaimRequest).
func (a *agentSet) defaultDefinition() definition.Definition {
	if a.resolver == nil {
		return a.byID[simpleID].def
	}
	return a.resolver.Default()
}

// agentFor returns the agent for a claimed session's stored definition id, at
// the definition's current revision (a bumped revision applies to new turns,
// docs/design.md#models-tools-definitions). The definition is resolved after
// the claim, from the session the claim returned, so it costs no store request
// (docs/design.md#storage-one-dynamodb-table request budget). An id that is no
// longer configured is errDefinitionGone.
func (a *agentSet) agentFor(definitionID string) (*agent, error) {
	if a.resolver == nil {
		return a.byID[simpleID], nil
	}
	d, err := a.resolver.Resolve(definitionID)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errDefinitionGone, err)
	}
	ag := a.byID[d.ID]
	if ag == nil {
		return nil, fmt.Errorf("%w: %s", errDefinitionGone, d.ID)
	}
	return ag, nil
}
