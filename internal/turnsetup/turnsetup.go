// Package turnsetup builds the turn handler a configuration describes
// (pkg/config), the one way the turn function (functions/turn) and the
// dev server (internal/devserver) build it: the demo tools registered, the
// definitions loaded, the models built for them, and the timings and
// limits of the configuration in turn.Options.
package turnsetup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/turnstream/turnstream/pkg/attach"
	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/definition"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/telemetry"
	"github.com/turnstream/turnstream/pkg/tool"
	"github.com/turnstream/turnstream/pkg/turn"
)

// Deps are what the handler runs on beside its configuration.
type Deps struct {
	Store         chat.Store
	Authenticator auth.Authenticator
	// Models returns the model of each provider the definitions name
	// (definition.Definition.Provider): the turn function builds echo,
	// bedrock and openai; the dev server echo only.
	Models func(defs *definition.Resolver) (map[string]model.Model, error)
	// ReadFile reads DEFINITIONS_FILE; nil means os.ReadFile.
	ReadFile func(name string) ([]byte, error)
	// Logger receives the handler's records; nil discards them.
	Logger *slog.Logger
	// Dispatch starts a drain of a session's queued turns in another
	// invocation (turn.Options.Dispatch); nil drains in the process (the
	// dev server).
	Dispatch func(ctx context.Context, d turn.DrainRequest) error
	// Metrics and Tracing are the handler's telemetry
	// (turn.Options.Metrics, turn.Options.Tracing); nil means none.
	Metrics *telemetry.Recorder
	Tracing *telemetry.Tracing
	// Attachments is where submits' attachments are read
	// (turn.Options.Attachments); nil means none.
	Attachments attach.Reader
	// ToolSources returns the remote tools of the definitions that name
	// MCP servers (turn.Options.ToolSources; pkg/tool/mcp.ForDefinitions);
	// nil means this build has no MCP client, and such a definition is
	// an error saying how to build one.
	ToolSources func(defs *definition.Resolver) (map[string][]tool.Source, error)
	// Adjust, when set, changes the options just before the handler is
	// built (a benchmark's model, a shorter lease).
	Adjust func(*turn.Options)
}

// NewHandler returns the turn handler of cfg on d. It returns an error
// naming what failed: a demo tool that does not register, a definition
// the configuration gets wrong (definition.Load), a model that cannot be
// built, or options turn.NewHandler rejects.
func NewHandler(cfg config.Config, d Deps) (*turn.Handler, error) {
	reg, err := Tools(d.Store)
	if err != nil {
		return nil, err
	}
	readFile := d.ReadFile
	if readFile == nil {
		readFile = os.ReadFile
	}
	defs, err := definition.Load(cfg.Definitions(), readFile, reg.Has)
	if err != nil {
		return nil, fmt.Errorf("definitions: %w", err)
	}
	models, err := d.Models(defs)
	if err != nil {
		return nil, err
	}
	sources, err := toolSources(defs, d.ToolSources)
	if err != nil {
		return nil, err
	}
	logger := d.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	opts := turn.Options{
		Config: turn.Config{
			Store:                  d.Store,
			Definitions:            defs,
			Models:                 models,
			Tools:                  reg,
			ToolSources:            sources,
			TurnTimeout:            cfg.TurnTimeout,
			CleanupReserve:         cfg.CleanupReserve,
			LeaseDuration:          cfg.LeaseDuration,
			SnapshotInterval:       cfg.SnapshotInterval,
			SnapshotBytesPerSecond: cfg.SnapshotBytesPerSecond,
			MaxSnapshotGap:         cfg.SnapshotMaxGap,
			CheckpointInterval:     cfg.CheckpointInterval,
			CheckpointMinChange:    cfg.CheckpointMinChange,
			ResumePollInterval:     cfg.ResumePollInterval,
			MaxBodyBytes:           cfg.MaxBodyBytes,
			ConfirmationTTL:        cfg.ConfirmationTTL,
			MaxQueuedTurns:         cfg.MaxQueuedTurns,
			QueuedTurnTTL:          cfg.QueuedTurnTTL,
			Ledger:                 cfg.Usage.Ledger,
			QuotaFailOpen:          cfg.Usage.QuotaFailOpen,
			QuotaCache:             cfg.Usage.QuotaCache,
			Dispatch:               d.Dispatch,
			Logger:                 logger,
			Attachments:            d.Attachments,
		},
		Authenticator: d.Authenticator,
		Metrics:       d.Metrics,
		Tracing:       d.Tracing,
	}
	if d.Adjust != nil {
		d.Adjust(&opts)
	}
	h, err := turn.NewHandler(opts)
	if err != nil {
		return nil, fmt.Errorf("turn handler: %w", err)
	}
	return h, nil
}

// ErrNoMCP is NewHandler's error for a definition naming MCP servers in
// a build without an MCP client (Deps.ToolSources nil).
var ErrNoMCP = errors.New("a definition names mcpServers, and this turn bootstrap has no MCP client: build it with `make build TURN_TOOLS=mcp` (go build -tags tools.mcp; docs/mcp.md)")

// toolSources returns the definitions' remote tools through build, or
// ErrNoMCP when a definition needs them and build is nil.
func toolSources(defs *definition.Resolver, build func(*definition.Resolver) (map[string][]tool.Source, error)) (map[string][]tool.Source, error) {
	needed := false
	for _, d := range defs.All() {
		needed = needed || len(d.MCPServers) > 0
	}
	if !needed {
		return nil, nil
	}
	if build == nil {
		return nil, ErrNoMCP
	}
	sources, err := build(defs)
	if err != nil {
		return nil, fmt.Errorf("mcp servers: %w", err)
	}
	return sources, nil
}

// Tools returns the tools definitions may offer: the demo tools
// workspace_note and workspace_note_delete (pkg/tool; a definition offers
// them only when it names them, the second typically marked as requiring
// approval), the second looking notes up in store's history
// (tool.SessionNotes). No component manifest is registered.
func Tools(store chat.Store) (*tool.Registry, error) {
	reg := tool.NewRegistry(nil)
	for _, t := range []tool.Tool{tool.WorkspaceNote(), tool.WorkspaceNoteDelete(tool.SessionNotes(store))} {
		if err := reg.RegisterDeferred(t); err != nil {
			return nil, fmt.Errorf("tools: %w", err)
		}
	}
	return reg, nil
}
