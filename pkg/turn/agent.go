package turn

import (
	"context"
	"errors"
	"fmt"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/definition"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/tool"
)

// agent is what one definition runs with: the definition, its model
// provider and the tools it offers (DESIGN §8).
type agent struct {
	def   definition.Definition
	model model.Model
	tools *tool.Toolset
}

// simpleID is the agents key of the simple path's single definition.
const simpleID = ""

// newAgents builds the agent of every definition of opts (see NewHandler
// for the checks). The simple path gets one agent under simpleID.
func newAgents(opts Options) (map[string]*agent, error) {
	reg := opts.Tools
	if reg == nil {
		reg = tool.NewRegistry(nil)
	}
	if opts.Definitions == nil {
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
		return map[string]*agent{simpleID: {
			def: definition.Definition{
				ID: d.ID, Revision: d.Revision, SystemPrompt: d.SystemPrompt, ModelID: d.ModelID,
				Limits: definition.Limits{MaxSteps: definition.DefaultMaxSteps},
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
		agents[d.ID] = &agent{def: d, model: m, tools: ts}
	}
	return agents, nil
}

// errDefinitionGone marks a session whose stored definition id is no
// longer configured: the turn is refused (500 SERVER_INTERNAL, logged),
// never run with another definition (pkg/definition).
var errDefinitionGone = errors.New("turn: the session's definition is not configured")

// resolveAgent returns the agent a turn of the session runs with. With a
// resolver it reads the session (one store request) for its definition
// id: a session that does not exist, or that p does not own, gets the
// default definition (the claim then rejects a foreign session as
// SESSION_NOT_FOUND). Store errors are returned as they are.
func (h *handler) resolveAgent(ctx context.Context, sessionID string, p chat.Principal) (*agent, error) {
	if h.opts.Definitions == nil {
		return h.agents[simpleID], nil
	}
	id := ""
	sess, err := h.opts.Store.GetSession(ctx, sessionID, p)
	switch {
	case errors.Is(err, chat.ErrSessionNotFound):
	case err != nil:
		return nil, fmt.Errorf("read session %s for its definition: %w", sessionID, err)
	default:
		id = sess.DefinitionID
	}
	d, err := h.opts.Definitions.Resolve(id)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errDefinitionGone, err)
	}
	a := h.agents[d.ID]
	if a == nil {
		return nil, fmt.Errorf("%w: %s", errDefinitionGone, d.ID)
	}
	return a, nil
}
