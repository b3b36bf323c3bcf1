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
