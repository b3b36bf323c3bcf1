package engine

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/pkg/protocol"
)

// TestSplitRounds: an assistant message splits back into the model calls
// that wrote it when its tool rounds fit its text and calls, and is left
// whole when they do not.
func TestSplitRounds(t *testing.T) {
	calls := func(ids ...string) []protocol.ToolCall {
		var out []protocol.ToolCall
		for _, id := range ids {
			out = append(out, protocol.ToolCall{ID: id, Name: "n", Args: json.RawMessage(`{}`), Status: protocol.ToolCallComplete})
		}
		return out
	}
	render := func(msgs []protocol.Message) string {
		var parts []string
		for _, m := range msgs {
			s := strings.ReplaceAll(m.Content, "\n", "|")
			for _, tc := range m.ToolCalls {
				s += " +" + tc.ID
			}
			parts = append(parts, "["+s+"]")
		}
		return strings.Join(parts, "")
	}
	tests := map[string]struct {
		content string
		calls   []protocol.ToolCall
		meta    string
		want    string
	}{
		"no metadata":         {"A.\n\nB.", calls("c1"), ``, "[A.||B. +c1]"},
		"other metadata":      {"A.\n\nB.", calls("c1"), `{"errorCode":"x"}`, "[A.||B. +c1]"},
		"one round":           {"A.\n\nB.", calls("c1"), `{"toolRounds":[{"textEnd":2,"toolCalls":1}]}`, "[A. +c1][B.]"},
		"rounds without text": {"B.", calls("c1", "c2"), `{"toolRounds":[{"textEnd":0,"toolCalls":1},{"textEnd":0,"toolCalls":1}]}`, "[ +c1][ +c2][B.]"},
		"no text after":       {"A.", calls("c1"), `{"toolRounds":[{"textEnd":2,"toolCalls":1}]}`, "[A. +c1]"},
		"calls past rounds":   {"A.\n\nB.", calls("c1", "c2"), `{"toolRounds":[{"textEnd":2,"toolCalls":1}]}`, "[A. +c1][B. +c2]"},
		"text cut short":      {"A.", calls("c1", "c2"), `{"toolRounds":[{"textEnd":2,"toolCalls":1},{"textEnd":9,"toolCalls":1}]}`, "[A. +c1][ +c2]"},
		"too many calls":      {"A.\n\nB.", calls("c1"), `{"toolRounds":[{"textEnd":2,"toolCalls":2}]}`, "[A.||B. +c1]"},
		"inside a character":  {"é.", calls("c1"), `{"toolRounds":[{"textEnd":1,"toolCalls":1}]}`, "[é. +c1]"},
		"going backwards":     {"A.\n\nB.", calls("c1", "c2"), `{"toolRounds":[{"textEnd":5,"toolCalls":1},{"textEnd":2,"toolCalls":1}]}`, "[A.||B. +c1 +c2]"},
		"negative":            {"A.", calls("c1"), `{"toolRounds":[{"textEnd":-1,"toolCalls":1}]}`, "[A. +c1]"},
		"malformed":           {"A.", calls("c1"), `{"toolRounds":{"textEnd":1}}`, "[A. +c1]"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m := protocol.Message{Role: protocol.RoleAssistant, Content: tc.content, ToolCalls: tc.calls}
			if tc.meta != "" {
				m.Metadata = json.RawMessage(tc.meta)
			}
			if got := render(splitRounds(m)); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// TestLoopLog: ids are unique within a turn, and the metadata keeps its
// other members.
func TestLoopLog(t *testing.T) {
	var l loopLog
	got := []string{l.callID("a", 1, 1), l.callID("a", 1, 2), l.callID("", 1, 3), l.callID("call-1-2", 2, 1), l.callID("a", 1, 2)}
	want := []string{"a", "call-1-2", "call-1-3", "call-2-1", "call-1-2-2"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("ids %v, want %v", got, want)
	}
	if m := l.metadata(json.RawMessage(`{"errorCode":"x"}`), false); string(m) != `{"errorCode":"x"}` {
		t.Fatalf("metadata without rounds %s", m)
	}
	l.addText(3)
	l.addRound(2)
	if m := l.metadata(json.RawMessage(`{"errorCode":"x"}`), false); string(m) != `{"errorCode":"x","toolRounds":[{"textEnd":3,"toolCalls":2}]}` {
		t.Fatalf("metadata %s", m)
	}
	if m := l.metadata(nil, true); string(m) != `{"toolRounds":[{"textEnd":3,"toolCalls":2},{"textEnd":3,"toolCalls":1}]}` {
		t.Fatalf("pending metadata %s", m)
	}
}
