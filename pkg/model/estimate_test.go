package model_test

import (
	"encoding/json"
	"testing"

	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/protocol"
)

func TestEstimateTokens(t *testing.T) {
	for n, want := range map[int]int64{-1: 0, 0: 0, 1: 1, 3: 1, 4: 1, 5: 2, 8: 2, 9: 3, 4000: 1000} {
		if got := model.EstimateTokens(n); got != want {
			t.Errorf("EstimateTokens(%d) = %d, want %d", n, got, want)
		}
	}
}

// TestEstimateInputTokens: every part of the request the provider is sent
// counts: the system prompt, each message's role, content, tool call id and
// tool calls, and each tool spec.
func TestEstimateInputTokens(t *testing.T) {
	id := "call-1"
	req := model.Request{
		System: "sys!", // 4
		Messages: []protocol.Message{
			{Role: protocol.RoleUser, Content: "hello wo"},                                                                  // 4 + 8
			{Role: protocol.RoleAssistant, ToolCalls: []protocol.ToolCall{{Name: "get", Args: json.RawMessage(`{"a":1}`)}}}, // 9 + 3 + 7
			{Role: protocol.RoleTool, ToolCallID: &id, Content: "result"},                                                   // 4 + 6 + 6
		},
		Tools: []model.ToolSpec{{Name: "get", Description: "Gets.", InputSchema: json.RawMessage(`{"type":"object"}`)}}, // 3 + 5 + 17
	}
	const bytes = 4 + (4 + 8) + (9 + 3 + 7) + (4 + 6 + 6) + (3 + 5 + 17)
	if got, want := model.EstimateInputTokens(req), model.EstimateTokens(bytes); got != want {
		t.Errorf("EstimateInputTokens = %d, want %d (%d bytes)", got, want, bytes)
	}
	// Non-ASCII text counts its UTF-8 bytes: four 3-byte characters are 3 tokens.
	if got := model.EstimateInputTokens(model.Request{System: "日本語訳"}); got != 3 {
		t.Errorf("EstimateInputTokens(4 CJK characters) = %d, want 3", got)
	}
	if got := model.OutputBytes(model.Event{TextDelta: "abc", ToolCall: &model.ToolCall{Name: "get", Args: json.RawMessage(`{}`)}}); got != 3+3+2 {
		t.Errorf("OutputBytes = %d, want 8", got)
	}
	// Reasoning counts once: its deltas, not the block that repeats them,
	// except redacted reasoning, which has no deltas.
	if got := model.OutputBytes(model.Event{ReasoningDelta: "hmm"}); got != 3 {
		t.Errorf("OutputBytes(reasoning delta) = %d, want 3", got)
	}
	if got := model.OutputBytes(model.Event{Reasoning: &model.ReasoningBlock{Text: "hmm", Signature: "sig"}}); got != 0 {
		t.Errorf("OutputBytes(signed block) = %d, want 0", got)
	}
	if got := model.OutputBytes(model.Event{Reasoning: &model.ReasoningBlock{Redacted: []byte("abcd")}}); got != 4 {
		t.Errorf("OutputBytes(redacted block) = %d, want 4", got)
	}
}
