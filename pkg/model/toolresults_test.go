package model_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/protocol"
)

func TestExpandToolCalls(t *testing.T) {
	str := func(s string) *string { return &s }
	args := json.RawMessage(`{}`)
	assistant := protocol.Message{ID: "a1", Role: protocol.RoleAssistant, Content: "Saving.", Status: protocol.MessageComplete, CreatedAt: "2026-11-29T20:00:00.000Z",
		ToolCalls: []protocol.ToolCall{
			{ID: "c1", Name: "n", Args: args, Status: protocol.ToolCallComplete, Result: str("Saved.")},
			{ID: "c2", Name: "n", Args: args, Status: protocol.ToolCallError, Error: str("Tool failed.")},
			{ID: "c3", Name: "n", Args: args, Status: protocol.ToolCallRunning},
		}}
	tool := func(id, content, status string) protocol.Message {
		return protocol.Message{Role: protocol.RoleTool, ToolCallID: str(id), Content: content, Status: status, CreatedAt: assistant.CreatedAt}
	}
	user := protocol.Message{Role: protocol.RoleUser, Content: "next"}
	tests := map[string]struct {
		in, want []protocol.Message
	}{
		"no tool calls": {[]protocol.Message{user}, []protocol.Message{user}},
		"synthesized": {[]protocol.Message{user, assistant, user}, []protocol.Message{user, assistant,
			tool("c1", "Saved.", protocol.MessageComplete), tool("c2", "Tool failed.", protocol.MessageError), tool("c3", model.TextToolNotCompleted, protocol.MessageError), user}},
		"already answered calls kept once": {[]protocol.Message{assistant, tool("c1", "stored", protocol.MessageComplete), user},
			[]protocol.Message{assistant, tool("c2", "Tool failed.", protocol.MessageError), tool("c3", model.TextToolNotCompleted, protocol.MessageError), tool("c1", "stored", protocol.MessageComplete), user}},
		"answer after next user does not count": {[]protocol.Message{assistant, user, tool("c1", "late", protocol.MessageComplete)},
			[]protocol.Message{assistant, tool("c1", "Saved.", protocol.MessageComplete), tool("c2", "Tool failed.", protocol.MessageError), tool("c3", model.TextToolNotCompleted, protocol.MessageError), user, tool("c1", "late", protocol.MessageComplete)}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			before := append([]protocol.Message(nil), tc.in...)
			got := model.ExpandToolCalls(tc.in)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ExpandToolCalls =\n%+v\nwant\n%+v", got, tc.want)
			}
			if !reflect.DeepEqual(tc.in, before) {
				t.Errorf("input modified")
			}
		})
	}
}
