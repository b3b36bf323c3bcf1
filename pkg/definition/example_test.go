package definition_test

import (
	"fmt"
	"os"

	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/definition"
	"github.com/turnstream/turnstream/pkg/tool"
)

// A main resolves definitions once at start; each turn resolves its
// session's definition id ("" for a new session).
func ExampleFromConfig() {
	reg := tool.NewRegistry(nil)
	if err := reg.Register(tool.WorkspaceNote()); err != nil {
		panic(err)
	}
	m := config.ModelConfig{Provider: config.ProviderEcho, DefinitionID: "default", DefinitionRevision: 2,
		SystemPrompt: "Be brief.", Tools: []string{tool.WorkspaceNoteName}, MaxSteps: 8}
	defs, err := definition.FromConfig(m, os.ReadFile, reg.Has)
	if err != nil {
		panic(err)
	}
	d, err := defs.Resolve("")
	if err != nil {
		panic(err)
	}
	fmt.Println(d.ID, d.Revision, d.Provider, d.Tools, d.Limits.MaxSteps)
	// Output: default 2 echo [workspace_note] 8
}
