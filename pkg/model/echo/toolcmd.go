package echo

import (
	"encoding/json"
	"strings"

	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// The generic tool call, to drive any offered tool locally (make dev; a
// remote MCP server's tools included, docs/mcp.md): when the last user
// message is "/tool <name> <json>" (ToolCommand; <name> a tool the
// request offers, <json> one JSON object, its surrounding spaces
// trimmed; "/tool <name>" alone calls it with {}), the reply is no text
// but one tool call {ID ToolCallID, Name <name>, Args <json> compacted},
// unless a tool message already follows that user message. A name not
// offered, or arguments that are not one JSON object, are echoed like
// any input.
const (
	// ToolCommand starts a user message that asks for a tool call.
	ToolCommand = "/tool "
	// ToolCallID is the id of the tool call echo makes.
	ToolCallID = "echo-tool-1"
)

// toolCall returns the tool call of the tool command, or nil.
func toolCall(req model.Request, input string) *model.ToolCall {
	rest, ok := strings.CutPrefix(input, ToolCommand)
	if !ok {
		return nil
	}
	name, args, _ := strings.Cut(strings.TrimSpace(rest), " ")
	args = strings.TrimSpace(args)
	if args == "" {
		args = "{}"
	}
	offered := false
	for _, t := range req.Tools {
		offered = offered || t.Name == name
	}
	var obj map[string]json.RawMessage
	if !offered || name == "" || json.Unmarshal([]byte(args), &obj) != nil || obj == nil {
		return nil
	}
	for i := len(req.Messages) - 1; i >= 0 && req.Messages[i].Role != protocol.RoleUser; i-- {
		if req.Messages[i].Role == protocol.RoleTool {
			return nil
		}
	}
	var compact strings.Builder
	enc := json.NewEncoder(&compact)
	enc.SetEscapeHTML(false)
	if enc.Encode(json.RawMessage(args)) != nil {
		return nil
	}
	return &model.ToolCall{ID: ToolCallID, Name: name, Args: json.RawMessage(strings.TrimSuffix(compact.String(), "\n"))}
}
