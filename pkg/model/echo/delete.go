package echo

import (
	"encoding/json"
	"strings"

	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// The demo deletion call, for trying approvals locally (make dev): when
// the request offers a tool named DeleteToolName and the last user
// message is "/delete <title>" (the title trimmed, non-empty), the reply
// is no text but one tool call {ID DeleteCallID, Name DeleteToolName,
// Args {"title"}}, unless a tool message already follows that user
// message. Without the tool offered, "/delete ..." is echoed.
const (
	// DeleteCommand starts a user message that asks for the delete tool.
	DeleteCommand = "/delete "
	// DeleteToolName is the tool the command calls:
	// tool.WorkspaceNoteDeleteName.
	DeleteToolName = "workspace_note_delete"
	// DeleteCallID is the id of the tool call echo makes.
	DeleteCallID = "echo-delete-1"
)

// deleteCall returns the tool call of the delete command, or nil.
func deleteCall(req model.Request, input string) *model.ToolCall {
	rest, ok := strings.CutPrefix(input, DeleteCommand)
	title := strings.TrimSpace(rest)
	if !ok || title == "" {
		return nil
	}
	offered := false
	for _, t := range req.Tools {
		offered = offered || t.Name == DeleteToolName
	}
	if !offered {
		return nil
	}
	for i := len(req.Messages) - 1; i >= 0 && req.Messages[i].Role != protocol.RoleUser; i-- {
		if req.Messages[i].Role == protocol.RoleTool {
			return nil
		}
	}
	args, err := json.Marshal(struct {
		Title string `json:"title"`
	}{title})
	if err != nil {
		return nil // a string always marshals
	}
	return &model.ToolCall{ID: DeleteCallID, Name: DeleteToolName, Args: args}
}
