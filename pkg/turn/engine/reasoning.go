package engine

import (
	"encoding/json"
	"strconv"
	"sync"

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

// MaxStoredReasoningBytes bounds the reasoning blocks a turn stores for
// a later turn (chat.Turn.ReasoningBlocks, as JSON): 1 MiB. Past it none
// are stored, and the continuation's model call goes without a thinking
// budget (covers).
const MaxStoredReasoningBytes = 1 << 20

// reasoningLog keeps the reasoning blocks of a turn's model calls by the
// id of the call's round message (roundID), for the next calls of its tool
// loop (model.Request.ReasoningBlocks), and those of earlier turns that
// the context brought (load). blocks is used by the model goroutine (and
// the context load before it) only; kept, the blocks the turn's save
// stores, under mu.
type reasoningLog struct {
	blocks map[string][]model.ReasoningBlock

	mu   sync.Mutex
	kept []byte
}

// keep sets aside, for the turn's save, the blocks of the turn's first
// round (roundID(turnID, 1)): what a later turn that continues the turn's
// tool loop (an approval's) must send back (covers).
func (l *reasoningLog) keep(turnID string) {
	id := roundID(turnID, 1)
	if len(l.blocks[id]) == 0 {
		return
	}
	data, err := json.Marshal(map[string][]model.ReasoningBlock{id: l.blocks[id]})
	if err != nil || len(data) > MaxStoredReasoningBytes {
		return
	}
	l.mu.Lock()
	l.kept = data
	l.mu.Unlock()
}

// stored returns the blocks keep set aside (nil when none).
func (l *reasoningLog) stored() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.kept
}

// load adds the blocks an earlier turn stored (chat.Turn.ReasoningBlocks);
// data that does not decode is left out (its loop's next call then goes
// without a thinking budget).
func (l *reasoningLog) load(data []byte) {
	if len(data) == 0 {
		return
	}
	var m map[string][]model.ReasoningBlock
	if json.Unmarshal(data, &m) != nil {
		return
	}
	for id, bs := range m {
		for _, b := range bs {
			l.add(id, b)
		}
	}
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
// the request otherwise). A turn that waits for approval stores its loop's
// blocks for the turn that continues it (keep, load); they are missing
// when they were too large to store, or the loop began without a thinking
// budget: that call then goes out without one.
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
