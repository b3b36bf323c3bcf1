package engine

import (
	"encoding/json"
	"strconv"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/protocol"
)

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

// reasoningMetadata returns meta with api.MetadataReasoning set to reasoning,
// or meta itself when reasoning is empty or hidden.
func (t *run) reasoningMetadata(meta json.RawMessage, reasoning string) json.RawMessage {
	if reasoning == "" || !t.agent.showsReasoning() {
		return meta
	}
	s, err := json.Marshal(reasoning)
	if err != nil {
		return meta
	}
	return withMember(meta, api.MetadataReasoning, s)
}

// covers reports whether msgs, as a model request's messages, can go out
// with a thinking budget: when they continue a tool loop (a tool message
// after the last assistant message, a decision's user message possibly
// after it, which providers put beside the results), the loop's first
// assistant message (the first of the assistant and tool messages before
// the last assistant message, back to a user message) must have its
// reasoning blocks to send back, since a model that thinks wants its
// reasoning before the loop's first tool use returned (Anthropic refuses
// the request otherwise). They are missing for a loop a later turn
// continues (an approval's), or one begun without a thinking budget: that
// call then goes out without one.
func (l *reasoningLog) covers(msgs []protocol.Message) bool {
	last := len(msgs) - 1
	results := false
	for ; last >= 0 && msgs[last].Role != protocol.RoleAssistant; last-- {
		results = results || msgs[last].Role == protocol.RoleTool
	}
	if !results {
		return true
	}
	start := last
	for i := last; i >= 0 && msgs[i].Role != protocol.RoleUser; i-- {
		if msgs[i].Role == protocol.RoleAssistant {
			start = i
		}
	}
	return len(l.blocks[msgs[start].ID]) > 0
}

// reasoningOf returns the api.MetadataReasoning of assistant message m,
// "" when it has none.
func reasoningOf(m protocol.Message) string {
	if len(m.Metadata) == 0 {
		return ""
	}
	var meta map[string]json.RawMessage
	var s string
	if json.Unmarshal(m.Metadata, &meta) != nil || json.Unmarshal(meta[api.MetadataReasoning], &s) != nil {
		return ""
	}
	return s
}
