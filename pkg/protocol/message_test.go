package protocol_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/pkg/protocol"
)

func validMessage() protocol.Message {
	return protocol.Message{ID: "msg-1", Role: protocol.RoleAssistant, Content: "hi", Status: protocol.MessageComplete,
		CreatedAt: "2026-07-11T03:00:00.000Z"}
}

func TestValidateMessages(t *testing.T) {
	ptr := func(s string) *string { return &s }
	tests := map[string]struct {
		edit  func(m *protocol.Message)
		field string // "" means valid
	}{
		"valid":                     {func(*protocol.Message) {}, ""},
		"empty content":             {func(m *protocol.Message) { m.Content = "" }, ""},
		"empty id":                  {func(m *protocol.Message) { m.ID = "" }, "messages[0].id"},
		"unknown role":              {func(m *protocol.Message) { m.Role = "bot" }, "messages[0].role"},
		"unknown status":            {func(m *protocol.Message) { m.Status = "done" }, "messages[0].status"},
		"createdAt without millis":  {func(m *protocol.Message) { m.CreatedAt = "2026-07-11T03:00:00Z" }, "messages[0].createdAt"},
		"createdAt impossible date": {func(m *protocol.Message) { m.CreatedAt = "2026-04-31T03:00:00.000Z" }, "messages[0].createdAt"},
		"content invalid UTF-8":     {func(m *protocol.Message) { m.Content = "\xc3" }, "messages[0].content"},
		"metadata nested 29":        {func(m *protocol.Message) { m.Metadata = json.RawMessage(nested(29)) }, ""},
		"metadata nested 30":        {func(m *protocol.Message) { m.Metadata = json.RawMessage(nested(30)) }, "messages[0].metadata"},
		"metadata key 257": {func(m *protocol.Message) {
			m.Metadata = json.RawMessage(`{"` + strings.Repeat("k", 257) + `":1}`)
		}, "messages[0].metadata"},
		"metadata lone surrogate": {func(m *protocol.Message) { m.Metadata = json.RawMessage(`{"a":"\udead"}`) }, "messages[0].metadata"},
		"metadata invalid JSON":   {func(m *protocol.Message) { m.Metadata = json.RawMessage(`{`) }, "messages[0].metadata"},
		"image detail": {func(m *protocol.Message) {
			m.Parts = []protocol.Part{{Type: "image", Source: ptr("s"), Detail: ptr("huge")}}
		}, "messages[0].parts[0].detail"},
		"part without source": {func(m *protocol.Message) { m.Parts = []protocol.Part{{Type: "file"}} }, "messages[0].parts[0].source"},
		"tool call bad status": {func(m *protocol.Message) {
			m.ToolCalls = []protocol.ToolCall{{ID: "c", Name: "n", Args: json.RawMessage(`{}`), Status: "done"}}
		}, "messages[0].toolCalls[0].status"},
		"args nested too deep for the record": {func(m *protocol.Message) {
			// args sit at depth 5: 27 wrappings put the innermost {} at depth 32, 28 at 33.
			m.ToolCalls = []protocol.ToolCall{{ID: "c", Name: "n", Args: json.RawMessage(nested(28)), Status: "complete"}}
		}, "messages[0].toolCalls[0].args"},
		"args nested to the limit": {func(m *protocol.Message) {
			m.ToolCalls = []protocol.ToolCall{{ID: "c", Name: "n", Args: json.RawMessage(nested(27)), Status: "complete"}}
		}, ""},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			m := validMessage()
			tt.edit(&m)
			err := protocol.ValidateMessages([]protocol.Message{validMessage(), m})
			if tt.field == "" {
				if err != nil {
					t.Fatalf("ValidateMessages: %v", err)
				}
				return
			}
			want := strings.Replace(tt.field, "messages[0]", "messages[1]", 1)
			if !errors.Is(err, protocol.ErrInvalidMessages) || !strings.Contains(err.Error(), want) {
				t.Fatalf("ValidateMessages = %v; want ErrInvalidMessages naming %s", err, want)
			}
		})
	}
	t.Run("node limit", func(t *testing.T) {
		// 3 (record) + 1000 messages x 6 values + metadata {"a":[...]}: 2 + n values.
		msgs := make([]protocol.Message, 1000)
		for i := range msgs {
			msgs[i] = validMessage()
		}
		fill := func(n int) json.RawMessage {
			return json.RawMessage(`{"a":[` + strings.TrimSuffix(strings.Repeat("1,", n), ",") + `]}`)
		}
		msgs[0].Metadata = fill(10_000 - 3 - 6000 - 2)
		if err := protocol.ValidateMessages(msgs); err != nil {
			t.Fatalf("exactly 10000 values: %v", err)
		}
		msgs[0].Metadata = fill(10_000 - 3 - 6000 - 1)
		if err := protocol.ValidateMessages(msgs); !errors.Is(err, protocol.ErrInvalidMessages) {
			t.Fatalf("10001 values: %v; want ErrInvalidMessages", err)
		}
	})
}

func TestDecodeMessages(t *testing.T) {
	t.Run("round trip", func(t *testing.T) {
		in := `[{"id":"a","role":"user","content":"x\u2028","status":"complete","createdAt":"2026-07-11T03:00:00.000Z","extra":1,` +
			`"metadata":{"artifacts":[{"entryPath":"r/index.html","artifactType":"webpage"}]}}]`
		msgs, err := protocol.DecodeMessages([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		if err := protocol.ValidateMessages(msgs); err != nil {
			t.Fatal(err)
		}
		want := validMessage()
		want.ID, want.Role, want.Content = "a", "user", "x\u2028"
		want.Metadata = json.RawMessage(`{"artifacts":[{"entryPath":"r/index.html","artifactType":"webpage"}]}`)
		if !reflect.DeepEqual(msgs, []protocol.Message{want}) {
			t.Errorf("got %+v", msgs)
		}
	})
	t.Run("empty array", func(t *testing.T) {
		msgs, err := protocol.DecodeMessages([]byte(`[]`))
		if err != nil || msgs == nil || len(msgs) != 0 {
			t.Fatalf("got %v, %v; want an empty non-nil slice", msgs, err)
		}
	})
	for name, in := range map[string]string{
		"not JSON":      `[`,
		"object":        `{}`,
		"duplicate key": `[{"id":"a","id":"b","role":"user","content":"","status":"complete","createdAt":"2026-07-11T03:00:00.000Z"}]`,
		"bad record":    `[{"id":"a","role":"user","content":"","status":"complete"}]`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := protocol.DecodeMessages([]byte(in))
			if !errors.Is(err, protocol.ErrInvalidMessages) || strings.Contains(err.Error(), `"`) {
				t.Fatalf("DecodeMessages = %v; want ErrInvalidMessages without input text", err)
			}
		})
	}
}
