package tool_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/tool"
)

// A turn offers the definition's tools to the model and runs each call
// the model makes; invalid arguments become an error result the model
// reads, not a failed turn.
func ExampleRegistry_Run() {
	reg := tool.NewRegistry(nil)
	if err := reg.Register(tool.WorkspaceNote()); err != nil {
		panic(err)
	}
	specs, _ := reg.Specs([]string{tool.WorkspaceNoteName})
	fmt.Println("offered:", specs[0].Name)

	ok := reg.Run(context.Background(), model.ToolCall{ID: "call-1", Name: "workspace_note", Args: json.RawMessage(`{"title":"Q3 plan","body":"Ship it."}`)})
	fmt.Println(ok.Status, ok.Text, ok.Artifacts)

	bad := reg.Run(context.Background(), model.ToolCall{ID: "call-2", Name: "workspace_note", Args: json.RawMessage(`{"title":"x"}`)})
	fmt.Println(bad.Status, bad.Code, bad.Text)
	// Output:
	// offered: workspace_note
	// complete Saved note "notes/q3-plan.md" (8 characters). [{notes/q3-plan.md document}]
	// error invalid_args Arguments are invalid: /: required (missing body).
}
