package turnsetup_test

import (
	"errors"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/turnsetup"
	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/definition"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/model/echo"
	"github.com/turnstream/turnstream/pkg/store/memory"
	"github.com/turnstream/turnstream/pkg/tool"
	"github.com/turnstream/turnstream/pkg/tool/mcp"
	"github.com/turnstream/turnstream/pkg/turn"
)

// TestNewHandler: the configuration's timings reach the options, the demo
// tools are registered, the models are asked for the loaded definitions,
// and Adjust sees the options last.
func TestNewHandler(t *testing.T) {
	env := map[string]string{"AUTH_MODE": "dev", "MODEL_TOOLS": "workspace_note,workspace_note_delete:approval", "LEASE_DURATION": "7s"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	cfg, err := config.FromLookup(lookup)
	if err != nil {
		t.Fatal(err)
	}
	authn, err := auth.New(t.Context(), cfg.Auth, auth.WithLookupEnv(lookup))
	if err != nil {
		t.Fatal(err)
	}
	var seen turn.Options
	var asked []string
	_, err = turnsetup.NewHandler(cfg, turnsetup.Deps{Store: memory.New(memory.Options{}), Authenticator: authn,
		Models: func(defs *definition.Resolver) (map[string]model.Model, error) {
			for _, d := range defs.All() {
				asked = append(asked, d.Provider)
			}
			return map[string]model.Model{config.ProviderEcho: echo.New(0, 4)}, nil
		},
		Adjust: func(o *turn.Options) { seen = *o },
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen.LeaseDuration != 7*time.Second || seen.TurnTimeout != cfg.TurnTimeout || seen.Tools == nil || seen.Logger == nil {
		t.Errorf("options %+v", seen)
	}
	for _, name := range []string{tool.WorkspaceNoteName, tool.WorkspaceNoteDeleteName} {
		if !seen.Tools.Has(name) {
			t.Errorf("tool %s not registered", name)
		}
	}
	if len(asked) != 1 || asked[0] != config.ProviderEcho {
		t.Errorf("models asked for %v, want the default definition's echo", asked)
	}

	boom := errors.New("no such provider here")
	if _, err := turnsetup.NewHandler(cfg, turnsetup.Deps{Store: memory.New(memory.Options{}), Authenticator: authn,
		Models: func(*definition.Resolver) (map[string]model.Model, error) { return nil, boom }}); !errors.Is(err, boom) {
		t.Errorf("a model that cannot be built: %v", err)
	}
}

// TestMCPServersNeedAClient: a definition naming MCP servers starts only
// in a build with an MCP client (Deps.ToolSources), which then gets the
// definitions and whose sources reach the options; without one, the error
// says how to build it.
func TestMCPServersNeedAClient(t *testing.T) {
	const file = `[{"id": "d", "revision": 1, "provider": "echo", "mcpServers": [{"name": "calc", "url": "http://127.0.0.1:9/mcp"}]}]`
	env := map[string]string{"AUTH_MODE": "dev", "DEFINITIONS_FILE": "defs.json", "DEFINITION_ID": "d"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	cfg, err := config.FromLookup(lookup)
	if err != nil {
		t.Fatal(err)
	}
	authn, err := auth.New(t.Context(), cfg.Auth, auth.WithLookupEnv(lookup))
	if err != nil {
		t.Fatal(err)
	}
	deps := turnsetup.Deps{Store: memory.New(memory.Options{}), Authenticator: authn,
		ReadFile: func(string) ([]byte, error) { return []byte(file), nil },
		Models: func(*definition.Resolver) (map[string]model.Model, error) {
			return map[string]model.Model{config.ProviderEcho: echo.New(0, 4)}, nil
		},
	}
	if _, err := turnsetup.NewHandler(cfg, deps); !errors.Is(err, turnsetup.ErrNoMCP) {
		t.Fatalf("without an MCP client: %v, want ErrNoMCP", err)
	}
	var seen turn.Options
	deps.Adjust = func(o *turn.Options) { seen = *o }
	deps.ToolSources = func(defs *definition.Resolver) (map[string][]tool.Source, error) {
		d, err := defs.Resolve("d")
		if err != nil || len(d.MCPServers) != 1 || d.MCPServers[0].Name != "calc" {
			t.Errorf("definition %+v, %v", d, err)
		}
		return map[string][]tool.Source{"d": {mcp.New(d.MCPServers[0], mcp.Options{})}}, nil
	}
	if _, err := turnsetup.NewHandler(cfg, deps); err != nil {
		t.Fatal(err)
	}
	if len(seen.ToolSources["d"]) != 1 || seen.ToolSources["d"][0].Name() != "calc" {
		t.Errorf("tool sources %v", seen.ToolSources)
	}
	boom := errors.New("secret unreadable")
	deps.ToolSources = func(*definition.Resolver) (map[string][]tool.Source, error) { return nil, boom }
	if _, err := turnsetup.NewHandler(cfg, deps); !errors.Is(err, boom) {
		t.Errorf("sources that cannot be built: %v", err)
	}
}
