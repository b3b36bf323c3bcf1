package client_test

import (
	"encoding/json"
	"testing"

	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// TestReasoning: metadata.reasoning as a string, and "" for every other
// shape a server may send.
func TestReasoning(t *testing.T) {
	for meta, want := range map[string]string{
		`{"reasoning":"First this.\n\nThen that."}`: "First this.\n\nThen that.",
		`{"toolRounds":[],"reasoning":"x"}`:         "x",
		``:                                          "",
		`{}`:                                        "",
		`{"reasoning":7}`:                           "",
		`{"reasoning":null}`:                        "",
		`{"reasoning":["a"]}`:                       "",
		`[1]`:                                       "",
	} {
		m := protocol.Message{Role: protocol.RoleAssistant}
		if meta != "" {
			m.Metadata = json.RawMessage(meta)
		}
		if got := client.Reasoning(m); got != want {
			t.Errorf("Reasoning(%s) = %q, want %q", meta, got, want)
		}
	}
}
