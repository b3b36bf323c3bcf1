package client

import (
	"encoding/json"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// Reasoning returns the model's reasoning that assistant message m
// carries (its metadata.reasoning: the reasoning of the turn's model
// calls joined with a blank line, as it streams or as stored), "" when it
// carries none: the model did not reason, or its definition keeps
// reasoning from clients. Like everything a server sends, it is
// untrusted text.
func Reasoning(m protocol.Message) string {
	if len(m.Metadata) == 0 {
		return ""
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(m.Metadata, &meta) != nil {
		return ""
	}
	var s string
	if json.Unmarshal(meta[api.MetadataReasoning], &s) != nil {
		return ""
	}
	return s
}
