package engine

import (
	"encoding/json"
	"testing"

	"github.com/turnstream/turnstream/pkg/protocol"
)

// TestDecisionOfReadsStrictly: a continuation's confirmation metadata is
// read with the strict reader, so metadata that a case-folding or
// last-key-wins reader would take for a decision is none.
func TestDecisionOfReadsStrictly(t *testing.T) {
	for name, tc := range map[string]struct {
		meta string
		want string // "" for no decision
	}{
		"decision":                  {`{"confirmation":{"token":"cf-1","toolCallId":"call-1"},"other":null}`, "call-1"},
		"none":                      {`{"other":1}`, ""},
		"duplicated toolCallId":     {`{"confirmation":{"toolCallId":"call-1","toolCallId":"call-2"}}`, ""},
		"duplicated confirmation":   {`{"confirmation":{"toolCallId":"call-1"},"confirmation":{"toolCallId":"call-2"}}`, ""},
		"ToolCallId beside":         {`{"confirmation":{"toolCallId":"call-1","ToolCallId":"call-2"}}`, ""},
		"Confirmation for":          {`{"Confirmation":{"toolCallId":"call-1"}}`, ""},
		"lone surrogate":            {`{"confirmation":{"toolCallId":"call-1\ud800"}}`, ""},
		"null confirmation":         {`{"confirmation":null}`, ""},
		"confirmation not a object": {`{"confirmation":"call-1"}`, ""},
	} {
		t.Run(name, func(t *testing.T) {
			m := protocol.Message{Role: protocol.RoleAssistant, Metadata: json.RawMessage(tc.meta)}
			got, ok := decisionOf(m)
			if got != tc.want || ok != (tc.want != "") {
				t.Errorf("decisionOf(%s) = %q, %v; want %q", tc.meta, got, ok, tc.want)
			}
		})
	}
}
