package engine

import (
	"encoding/json"
	"strconv"

	"github.com/turnstream/turnstream/pkg/model"
)

// MetadataReasoning is the assistant message metadata member that holds
// the model's reasoning as text (docs/reasoning.md): a string, the
// reasoning of the turn's model calls joined with a blank line, as
// AgentsKit's controller keeps a streamed reasoning in
// metadata.reasoning. Absent when the model did not reason, or the
// definition hides its reasoning (definition.Reasoning.Hidden).
const MetadataReasoning = "reasoning"

// reasoning is the model.Request.Reasoning of the agent's calls: the
// definition's thinking budget, nil when it asks for none.
func (a *agent) reasoning() *model.Reasoning {
	if r := a.def.Reasoning; r != nil && r.BudgetTokens > 0 {
		return &model.Reasoning{BudgetTokens: r.BudgetTokens}
	}
	return nil
}

// showsReasoning reports whether the agent's reasoning goes to clients.
func (a *agent) showsReasoning() bool {
	return a.def.Reasoning == nil || !a.def.Reasoning.Hidden
}

// roundID is the id of the assistant message of the tool round of model
// call step, in the messages the tool loop sends back to the model.
func roundID(turnID string, step int) string {
	return MessageID(turnID, "a"+strconv.Itoa(step))
}

// reasoningLog keeps the reasoning blocks of a turn's model calls by the
// id of the call's round message (roundID), for the next calls of its
// tool loop (model.Request.ReasoningBlocks). Used by the model goroutine
// only.
type reasoningLog struct {
	blocks map[string][]model.ReasoningBlock
}

// add records a block of the round message id.
func (l *reasoningLog) add(id string, b model.ReasoningBlock) {
	if l.blocks == nil {
		l.blocks = map[string][]model.ReasoningBlock{}
	}
	l.blocks[id] = append(l.blocks[id], b)
}

// reasoningMetadata returns meta with MetadataReasoning set to reasoning,
// or meta itself when reasoning is empty or hidden.
func (t *run) reasoningMetadata(meta json.RawMessage, reasoning string) json.RawMessage {
	if reasoning == "" || !t.agent.showsReasoning() {
		return meta
	}
	s, err := json.Marshal(reasoning)
	if err != nil {
		return meta
	}
	return withMember(meta, MetadataReasoning, s)
}
