// Package modeltest holds local fake model provider servers and the model
// conformance suite that every pkg/model provider runs.
//
// The fakes speak the real wire protocols to the real SDK clients: Bedrock
// is an event-stream ConverseStream server for the bedrockruntime client,
// OpenAI a server-sent-events chat completions server for openai-go. Each
// answers its calls with scripted Replies, records every request body,
// and first checks the request against the validation rules of the real
// API that matter for tool use (see ValidateConverse and
// ValidateChatCompletions, and docs/providers.md for where each rule is
// documented). A request the real provider would reject is answered with
// that provider's validation error and reported to the test with
// t.Errorf, so a request shape a real provider rejects fails the test
// that sent it.
//
// Run is the conformance suite: the same cases (stored histories with tool
// exchanges, with and without tools offered, with repeated, empty and
// foreign tool call ids, arguments that are not objects, text written
// after tool results; and, for scripted providers, model output with such
// arguments and ids) against any model.Model.
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

// Reply is what a scripted fake answers one model call with: Text first
// (none when empty), then Calls; the finish reason is tool use when there
// are calls, else stop. Usage is always 10 prompt and 5 completion tokens.
type Reply struct {
	Text  string
	Calls []Call
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
