package model_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// render writes msgs as one line each: role, tool call ids or the tool
// message's id, and the content.
func render(msgs []protocol.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(m.Role)
		for _, tc := range m.ToolCalls {
			b.WriteString(" call:" + tc.ID + ":" + string(tc.Args))
		}
		if m.ToolCallID != nil {
			b.WriteString(" answers:" + *m.ToolCallID)
		}
		b.WriteString(" " + strings.ReplaceAll(m.Content, "\n", "|") + "\n")
	}
	return b.String()
}

func TestProviderMessages(t *testing.T) {
	s := func(v string) *string { return &v }
	call := func(id, args string) protocol.ToolCall {
		return protocol.ToolCall{ID: id, Name: "note", Args: json.RawMessage(args), Status: protocol.ToolCallComplete, Result: s("r-" + id)}
	}
	res := func(id, text string) protocol.Message {
		return protocol.Message{Role: protocol.RoleTool, ToolCallID: s(id), Content: text, Status: protocol.MessageComplete}
	}
	u := protocol.Message{Role: protocol.RoleUser, Content: "go"}
	spec := []model.ToolSpec{{Name: "note", InputSchema: json.RawMessage(`{"type":"object"}`)}}
	tests := map[string]struct {
		msgs  []protocol.Message
		tools []model.ToolSpec
		want  string
	}{
		"duplicate ids renamed, results paired in order": {
			msgs:  []protocol.Message{u, {Role: protocol.RoleAssistant, ToolCalls: []protocol.ToolCall{call("d", `{}`), call("d", `{}`)}}, res("d", "one"), res("d", "two")},
			tools: spec,
			want:  "user go\nassistant call:d:{} call:call_1:{} \ntool answers:d one\ntool answers:call_1 two\n",
		},
		"invalid and empty ids renamed around taken ones": {
			msgs:  []protocol.Message{u, {Role: protocol.RoleAssistant, ToolCalls: []protocol.ToolCall{call("f.x:0", `{}`), call("", `{}`), call("call_1", `{}`)}}},
			tools: spec,
			want:  "user go\nassistant call:call_2:{} call:call_3:{} call:call_1:{} \ntool answers:call_2 r-f.x:0\ntool answers:call_3 r-\ntool answers:call_1 r-call_1\n",
		},
		"arguments not an object sent as {}": {
			msgs:  []protocol.Message{u, {Role: protocol.RoleAssistant, ToolCalls: []protocol.ToolCall{call("a", `[1,2]`)}}, res("a", "bad")},
			tools: spec,
			want:  "user go\nassistant call:a:{} \ntool answers:a bad\n",
		},
		"orphan tool message dropped": {
			msgs:  []protocol.Message{u, res("x", "?"), {Role: protocol.RoleAssistant, Content: "hi"}},
			tools: spec,
			want:  "user go\nassistant hi\n",
		},
		"no tools: exchanges as text, assistant messages joined": {
			msgs: []protocol.Message{u, {Role: protocol.RoleAssistant, Content: "Saving.", ToolCalls: []protocol.ToolCall{call("a", `{"t": 1}`)}},
				res("a", "Saved."), {Role: protocol.RoleAssistant, Content: "Done."}, u},
			want: "user go\nassistant Saving.||[Tool call note {\"t\":1}]|[Tool result: Saved.]||Done.\nuser go\n",
		},
		"no tools: failed call": {
			msgs: []protocol.Message{u, {Role: protocol.RoleAssistant, ToolCalls: []protocol.ToolCall{{ID: "a", Name: "note", Args: json.RawMessage(`{}`), Status: protocol.ToolCallError, Error: s("Nope.")}}}},
			want: "user go\nassistant [Tool call note {}]|[Tool error: Nope.]\n",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			before := render(tc.msgs)
			got := render(model.ProviderMessages(tc.msgs, tc.tools))
			if got != tc.want {
				t.Fatalf("got\n%s\nwant\n%s", got, tc.want)
			}
			if render(tc.msgs) != before {
				t.Fatal("msgs was modified")
			}
		})
	}
}
