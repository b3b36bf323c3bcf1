package tool

import (
	"context"
	"encoding/json"
	"fmt"
)

// WorkspaceNoteDeleteName is the name of the built-in demo tool
// WorkspaceNoteDelete.
const WorkspaceNoteDeleteName = "workspace_note_delete"

const workspaceNoteDeleteSchema = `{
  "type": "object",
  "properties": {
    "title": {"type": "string", "minLength": 1, "maxLength": 200, "description": "Title of the note to delete."}
  },
  "required": ["title"],
  "additionalProperties": false
}`

// WorkspaceNoteDelete returns the built-in demo tool
// "workspace_note_delete", the destructive counterpart of WorkspaceNote
// that local runs (make dev) mark as requiring approval. For {"title": t}
// it returns the text `Deleted note "notes/<slug>.md".`, slug being
// Slug(t). Like WorkspaceNote it touches no file (the host's workspace
// owns files); it is deterministic and offline.
func WorkspaceNoteDelete() Tool {
	return Tool{
		Name:        WorkspaceNoteDeleteName,
		Description: "Delete a note from the user's workspace by its title. Asks the user for approval first.",
		InputSchema: json.RawMessage(workspaceNoteDeleteSchema),
		Call: func(ctx context.Context, args json.RawMessage) (Result, error) {
			var in struct {
				Title string `json:"title"`
			}
			if err := DecodeArgs(args, &in); err != nil {
				return Result{}, fmt.Errorf("workspace_note_delete: decode arguments: %w", err)
			}
			return Result{Text: fmt.Sprintf("Deleted note %q.", "notes/"+Slug(in.Title)+".md")}, nil
		},
	}
}
