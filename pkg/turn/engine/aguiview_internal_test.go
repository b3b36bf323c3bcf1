package engine

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/pkg/agui"
	"github.com/turnstream/turnstream/pkg/protocol"
)

func text(s string) *string { return &s }

// call is a tool call entry for the encoder tests.
func call(id, status string, result *string) protocol.ToolCall {
	tc := protocol.ToolCall{ID: id, Name: "note", Args: json.RawMessage(`{"a":1}`), Status: status}
	if status == protocol.ToolCallError {
		tc.Error = result
	} else {
		tc.Result = result
	}
	return tc
}

// types lists the events' types, with the text of content deltas.
func types(evs []agui.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		b.WriteString(ev.Type)
		if ev.Type == agui.TypeTextMessageContent || ev.Type == agui.TypeToolCallResult {
			b.WriteString("(")
			if ev.Delta != nil {
				b.WriteString(*ev.Delta)
			} else {
				b.WriteString(*ev.Content)
			}
			b.WriteString(")")
		}
		b.WriteString(" ")
	}
	return strings.TrimSpace(b.String())
}

// TestAGUIEncoderSteps: successive states of one assistant message become
// the events that take a client from each to the next; a change that adds
// nothing at the end becomes a snapshot.
func TestAGUIEncoderSteps(t *testing.T) {
	asst := func(content string, calls ...protocol.ToolCall) protocol.Message {
		return protocol.Message{ID: "t.a", Role: protocol.RoleAssistant, Content: content, Status: protocol.MessageStreaming, ToolCalls: calls}
	}
	for name, tc := range map[string]struct {
		states []protocol.Message
		want   []string // per step after the first
	}{
		"text grows": {
			[]protocol.Message{asst(""), asst("Hel"), asst("Hello"), asst("Hello")},
			[]string{"TEXT_MESSAGE_START TEXT_MESSAGE_CONTENT(Hel)", "TEXT_MESSAGE_CONTENT(lo)", ""},
		},
		"a call closes the text, more text re-opens it": {
			[]protocol.Message{asst("Hi"), asst("Hi", call("c1", protocol.ToolCallPending, nil)),
				asst("Hi", call("c1", protocol.ToolCallComplete, text("ok"))), asst("Hi\n\nDone", call("c1", protocol.ToolCallComplete, text("ok")))},
			[]string{"TOOL_CALL_START TOOL_CALL_ARGS TOOL_CALL_END", "TOOL_CALL_RESULT(ok)",
				"TEXT_MESSAGE_START TEXT_MESSAGE_CONTENT(\n\nDone)"},
		},
		"text and a call in one state": {
			[]protocol.Message{asst(""), asst("Saving.", call("c1", protocol.ToolCallRunning, nil))},
			[]string{"TEXT_MESSAGE_START TEXT_MESSAGE_CONTENT(Saving.) TEXT_MESSAGE_END TOOL_CALL_START TOOL_CALL_ARGS TOOL_CALL_END"},
		},
		"a result waits for the calls before it": {
			[]protocol.Message{asst("", call("c1", protocol.ToolCallRunning, nil), call("c2", protocol.ToolCallError, text("no"))),
				asst("", call("c1", protocol.ToolCallComplete, text("ok")), call("c2", protocol.ToolCallError, text("no")))},
			[]string{"TOOL_CALL_RESULT(ok) TOOL_CALL_RESULT(no)"},
		},
		"a waiting call holds nothing back": {
			[]protocol.Message{asst("", call("c1", protocol.ToolCallPending, nil), call("c2", protocol.ToolCallPending, nil)),
				asst("", call("c1", protocol.ToolCallRequiresConfirmation, nil), call("c2", protocol.ToolCallComplete, text("ok")))},
			[]string{"TOOL_CALL_RESULT(ok)"},
		},
		"text that shrinks is a snapshot": {
			[]protocol.Message{asst("Hello"), asst("Help")},
			[]string{"MESSAGES_SNAPSHOT"},
		},
		"multi-byte text is cut whole": {
			[]protocol.Message{asst("a"), asst("a😀"), asst("a😀é")},
			[]string{"TEXT_MESSAGE_START TEXT_MESSAGE_CONTENT(😀)", "TEXT_MESSAGE_CONTENT(é)"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			e := newAGUIEncoder("s", "t")
			e.snapshot(nil, nil, aguiPartOf(tc.states[0]))
			for i, st := range tc.states[1:] {
				got := types(e.advance(nil, aguiPartOf(st), func() []agui.Message { return nil }))
				if got != tc.want[i] {
					t.Errorf("step %d: %q, want %q", i+1, got, tc.want[i])
				}
			}
		})
	}
}

// TestAGUIEncoderDeltasConcatenate: whatever states the writer happens to
// see of a growing text, the deltas concatenate to the last state's text.
func TestAGUIEncoderDeltasConcatenate(t *testing.T) {
	full := "Grüße, 世界! 😀 plain ascii, then more: ñ\n\ttabs"
	for _, stride := range []int{1, 2, 3, 7, 64} {
		e := newAGUIEncoder("s", "t")
		e.snapshot(nil, nil, aguiPart{})
		var got strings.Builder
		for n := 0; n <= len(full); n += stride {
			cut := full[:n]
			for !utf8ValidEnd(cut) {
				cut = cut[:len(cut)-1]
			}
			for _, ev := range e.advance(nil, aguiPart{text: cut}, nil) {
				if ev.Type == agui.TypeTextMessageContent {
					got.WriteString(*ev.Delta)
				}
			}
		}
		for _, ev := range e.advance(nil, aguiPart{text: full}, nil) {
			if ev.Type == agui.TypeTextMessageContent {
				got.WriteString(*ev.Delta)
			}
		}
		if got.String() != full {
			t.Errorf("stride %d: %q", stride, got.String())
		}
	}
}

func utf8ValidEnd(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

// TestAGUIMessages: canonical messages as AG-UI messages: tool results as
// tool messages after their call, a continuation's decided call answered
// after the asking message (as AG-UI's TOOL_CALL_RESULT places it) and
// not listed again, ordered content as text with the envelope in metadata.
func TestAGUIMessages(t *testing.T) {
	var enc protocol.ContentEncoder
	env, err := enc.Encode(protocol.ContentPart{Kind: protocol.ContentText, Text: "Look: "})
	if err != nil {
		t.Fatal(err)
	}
	msgs := []protocol.Message{
		{ID: "a.u", Role: protocol.RoleUser, Content: "delete it"},
		{ID: "a.a", Role: protocol.RoleAssistant, Content: "Ok.", ToolCalls: []protocol.ToolCall{
			call("c1", protocol.ToolCallRequiresConfirmation, nil), call("c2", protocol.ToolCallComplete, text("saved"))}},
		{ID: "b.u", Role: protocol.RoleUser, Content: "Approved."},
		{ID: "b.a", Role: protocol.RoleAssistant, Content: "Done.", ToolCalls: []protocol.ToolCall{call("c1", protocol.ToolCallComplete, text("deleted")), call("c3", protocol.ToolCallError, text("failed"))},
			Metadata: json.RawMessage(`{"confirmation":{"token":"cf1","decision":"approve","parentTurnId":"a","toolCallId":"c1"}}`)},
		{ID: "c.u", Role: protocol.RoleUser, Content: "show"},
		{ID: "c.a", Role: protocol.RoleAssistant, Content: env},
	}
	var got []string
	for _, m := range aguiMessages(msgs) {
		var calls []string
		for _, c := range m.ToolCalls {
			calls = append(calls, c.ID)
		}
		got = append(got, m.ID+" "+m.Role+" "+m.Content+" ["+strings.Join(calls, ",")+"] "+m.Error+" "+string(m.Metadata))
	}
	want := []string{
		"a.u user delete it []  ",
		"a.a assistant Ok. [c1,c2]  ",
		"a.a.tool.c2 tool saved []  ",
		"b.a.tool.c1 tool deleted []  ",
		"b.u user Approved. []  ",
		`b.a assistant Done. [c3]  {"confirmation":{"token":"cf1","decision":"approve","parentTurnId":"a","toolCallId":"c1"}}`,
		"b.a.tool.c3 tool failed [] failed ",
		"c.u user show []  ",
		`c.a assistant Look:  []  {"orderedContent":"\u001eagentskit.chat.content/1\n{\"kind\":\"text\",\"text\":\"Look: \"}\n"}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
