package modeltest

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Call is one tool call a scripted Reply makes.
type Call struct {
	// ID is the provider's call id, sent as is (it may be empty or repeat
	// another call's id, as real models do).
	ID string
	// Name is the tool name.
	Name string
	// Args is the arguments text exactly as the model writes it: normally
	// a JSON object, but any text (not JSON, an array) is sent unchanged.
	Args string
}

// Reply is what a scripted fake answers one model call with: Reasoning
// first (none when empty), then Text (none when empty), then Calls; the
// finish reason is tool use when there are calls, else stop. Usage is
// always 10 prompt and 5 completion tokens.
//
// Reasoning streams as the provider's reasoning deltas: on the Bedrock
// fake only for a request that enables thinking (as Claude reasons only
// when asked), as one signed reasoningText block (Signature), followed by
// a redacted block when RedactedReasoning is set; on the OpenAI fake as
// reasoning_content deltas.
type Reply struct {
	Reasoning         string
	RedactedReasoning bool
	Text              string
	Calls             []Call
}

// Usage tokens every scripted reply reports.
const (
	PromptTokens     = 10
	CompletionTokens = 5
)

// compactJSON returns raw as compact JSON with object members sorted by
// name (Bedrock's SDK reorders a toolUse input, OpenAI's arguments keep
// the model's order), or raw itself when it is not JSON.
func compactJSON(raw []byte) string {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return string(raw)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return string(raw)
	}
	return string(b)
}

// transcriptLine formats one line of a request transcript (see
// Bedrock.Transcripts).
func transcriptLine(kind, text string) string {
	return kind + ": " + strings.ReplaceAll(text, "\n", `\n`)
}
