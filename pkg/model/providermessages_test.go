package model_test

import (
	"encoding/json"
	"fmt"
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
			want:  "user go\nassistant call:d:{} call:call_1_2:{} \ntool answers:d one\ntool answers:call_1_2 two\n",
		},
		"invalid and empty ids renamed around taken ones": {
			msgs:  []protocol.Message{u, {Role: protocol.RoleAssistant, ToolCalls: []protocol.ToolCall{call("f.x:0", `{}`), call("", `{}`), call("call_1_2", `{}`), call("call_1_2", `{}`), call("call_1", `{}`)}}},
			tools: spec,
			want: "user go\nassistant call:call_1_1:{} call:call_1_2_2:{} call:call_1_2:{} call:call_1_4:{} call:call_1:{} \n" +
				"tool answers:call_1_1 r-f.x:0\ntool answers:call_1_2_2 r-\ntool answers:call_1_2 r-call_1_2\ntool answers:call_1_4 r-call_1_2\ntool answers:call_1 r-call_1\n",
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

// A stored turn with a tool exchange, sent to a provider under a
// definition that no longer offers tools: the exchange becomes text.
func ExampleProviderMessages() {
	result, id := "Saved note \"notes/trip.md\" (5 characters).", "c1"
	msgs := []protocol.Message{
		{Role: protocol.RoleUser, Content: "Save my trip"},
		{Role: protocol.RoleAssistant, Content: "Saving.", ToolCalls: []protocol.ToolCall{{
			ID: id, Name: "workspace_note", Args: json.RawMessage(`{"title": "Trip", "body": "Pack."}`),
			Status: protocol.ToolCallComplete, Result: &result,
		}}},
		{Role: protocol.RoleTool, ToolCallID: &id, Content: result, Status: protocol.MessageComplete},
		{Role: protocol.RoleAssistant, Content: "Saved it."},
		{Role: protocol.RoleUser, Content: "Anything else?"},
	}
	for _, m := range model.ProviderMessages(msgs, nil) {
		fmt.Printf("%s: %s\n", m.Role, m.Content)
	}
	// Output:
	// user: Save my trip
	// assistant: Saving.
	//
	// [Tool call workspace_note {"title":"Trip","body":"Pack."}]
	// [Tool result: Saved note "notes/trip.md" (5 characters).]
	//
	// Saved it.
	// user: Anything else?
}

// history is a session of n turns, each with one tool exchange (the call
// and its stored result, as a turn's context holds it), then a new user
// message.
func history(n int) []protocol.Message {
	var msgs []protocol.Message
	for i := range n {
		res := fmt.Sprintf("Saved note %d.", i)
		msgs = append(msgs,
			protocol.Message{Role: protocol.RoleUser, Content: "Save a note"},
			protocol.Message{Role: protocol.RoleAssistant, Content: "Saving.\n\nSaved.", ToolCalls: []protocol.ToolCall{{
				ID: "echo-note-1", Name: "workspace_note", Args: json.RawMessage(`{"title":"T","body":"B"}`),
				Status: protocol.ToolCallComplete, Result: &res,
			}}})
	}
	return append(msgs, protocol.Message{Role: protocol.RoleUser, Content: "Next"})
}

// BenchmarkExpandToolCalls is the baseline: what the loop already did to
// a 64-turn context before every model call.
func BenchmarkExpandToolCalls(b *testing.B) {
	msgs := history(64)
	b.ReportAllocs()
	for b.Loop() {
		model.ExpandToolCalls(msgs)
	}
}

// BenchmarkProviderMessages is what each provider now adds on the same
// context, with tools offered (pairing and id renaming: every turn
// reuses one id) and without (the exchanges rendered as text).
func BenchmarkProviderMessages(b *testing.B) {
	msgs := model.ExpandToolCalls(history(64))
	spec := []model.ToolSpec{{Name: "workspace_note", InputSchema: json.RawMessage(`{"type":"object"}`)}}
	b.Run("tools", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			model.ProviderMessages(msgs, spec)
		}
	})
	b.Run("no tools", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			model.ProviderMessages(msgs, nil)
		}
	})
}

// TestProviderMessagesStableIDs: the ids a history is sent with do not
// change as turns are appended (every turn here reuses one id), so a
// provider's prompt cache keeps matching the earlier part.
func TestProviderMessagesStableIDs(t *testing.T) {
	spec := []model.ToolSpec{{Name: "workspace_note", InputSchema: json.RawMessage(`{"type":"object"}`)}}
	short := model.ProviderMessages(model.ExpandToolCalls(history(3)), spec)
	long := model.ProviderMessages(model.ExpandToolCalls(history(4)), spec)
	got, want := render(long[:len(short)-1]), render(short[:len(short)-1])
	if got != want {
		t.Fatalf("a longer history changed the earlier ids:\n%s\nwant\n%s", got, want)
	}
	if !strings.Contains(want, "call:echo-note-1:") || !strings.Contains(want, "call:call_3_1:") {
		t.Fatalf("ids %s", want)
	}
}
