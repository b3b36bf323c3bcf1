package definition_test

import (
	"fmt"
	"os"

	"github.com/turnstream/turnstream/pkg/definition"
	"github.com/turnstream/turnstream/pkg/tool"
)

// A main resolves definitions once at start; each turn resolves its
// session's definition id ("" for a new session).
func ExampleLoad() {
	reg := tool.NewRegistry(nil)
	if err := reg.Register(tool.WorkspaceNote()); err != nil {
		panic(err)
	}
	c := definition.Config{DefaultID: "default", Single: definition.Definition{
		Revision: 2, Provider: definition.ProviderEcho, SystemPrompt: "Be brief.",
		Tools: []string{tool.WorkspaceNoteName}, Limits: definition.Limits{MaxSteps: 8},
	}}
	defs, err := definition.Load(c, os.ReadFile, reg.Has)
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
