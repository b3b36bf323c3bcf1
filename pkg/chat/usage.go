package chat

import (
	"context"
	"sync"
)

// Usage is what one turn, or one request, consumed: the one account of a
// turn's cost that metrics (pkg/telemetry) report and that a per-tenant
// ledger can add up (Add is associative and commutative, and the zero
// value is "nothing"). Every field is a count of the turn's own work:
//
//   - InputTokens and OutputTokens are the model's own token counts
//     (model usage events), summed over the turn's model calls; a model
//     call whose provider reported none (stopped, cut by the deadline,
//     failed mid-stream) counts pkg/model's estimate instead
//     (EstimateTokens, docs/quotas.md), the turn's record marking it;
//     CacheReadTokens and CacheWriteTokens are the prompt tokens the
//     provider reports read from or written to its prompt cache, where it
//     reports them (Bedrock cacheReadInputTokens and
//     cacheWriteInputTokens, OpenAI prompt_tokens_details), zero
//     elsewhere; providers count them as they bill them (OpenAI's cached
//     tokens are part of its prompt tokens, Bedrock's are not);
//     ReasoningTokens are the part of OutputTokens the model spent
//     reasoning, where the provider reports it apart (OpenAI's
//     completion_tokens_details.reasoning_tokens, docs/reasoning.md),
//     zero elsewhere;
//   - ModelCalls counts model calls started (each tool round trip is
//     one more); ToolCalls counts tool calls the model asked for,
//     including those that failed or never ran;
//   - StoreRequests counts the HTTP attempts the store sent to DynamoDB
//     (SDK retries included); ReadUnits and WriteUnits are the capacity
//     units DynamoDB reported in its answers (ReturnConsumedCapacity
//     TOTAL). DynamoDB reports no units with an error answer (a failed
//     condition is billed all the same) nor for an attempt whose answer
//     was lost, so the units are those of the answered requests; the
//     in-memory store reports none of the three.
type Usage struct {
	InputTokens   int64   `json:"inputTokens"`
	OutputTokens  int64   `json:"outputTokens"`
	ModelCalls    int64   `json:"modelCalls"`
	ToolCalls     int64   `json:"toolCalls"`
	StoreRequests int64   `json:"storeRequests"`
	ReadUnits     float64 `json:"readUnits"`
	WriteUnits    float64 `json:"writeUnits"`
	// CacheReadTokens and CacheWriteTokens came after the fields above
	// (additive: zero means none reported).
	CacheReadTokens  int64 `json:"cacheReadTokens"`
	CacheWriteTokens int64 `json:"cacheWriteTokens"`
	// ReasoningTokens came after them (additive as well).
	ReasoningTokens int64 `json:"reasoningTokens"`
}

// Add adds v to u, field by field.
func (u *Usage) Add(v Usage) {
	u.ReasoningTokens += v.ReasoningTokens
	u.InputTokens += v.InputTokens
	u.OutputTokens += v.OutputTokens
	u.CacheReadTokens += v.CacheReadTokens
	u.CacheWriteTokens += v.CacheWriteTokens
	u.ModelCalls += v.ModelCalls
	u.ToolCalls += v.ToolCalls
	u.StoreRequests += v.StoreRequests
	u.ReadUnits += v.ReadUnits
	u.WriteUnits += v.WriteUnits
}

// Meter accumulates the Usage of one turn or request from the goroutines
// that do its work: the turn pipeline adds tokens and calls, the store's
// client adds its requests and units (pkg/store/dynamo, from a context
// that carries the Meter: WithMeter). A nil *Meter discards what is
// added; the zero value is ready to use and safe for concurrent use.
type Meter struct {
	mu sync.Mutex
	u  Usage
}

// Add adds v to the meter's usage.
func (m *Meter) Add(v Usage) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.u.Add(v)
	m.mu.Unlock()
}

// Usage returns the usage added so far (the zero Usage for a nil Meter).
func (m *Meter) Usage() Usage {
	if m == nil {
		return Usage{}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.u
}

type meterKey struct{}

// WithMeter returns ctx carrying m: the store requests made under it (and
// under contexts derived from it, detached cleanup contexts included) are
// added to m.
func WithMeter(ctx context.Context, m *Meter) context.Context {
	return context.WithValue(ctx, meterKey{}, m)
}

// MeterFrom returns the Meter ctx carries, or nil.
func MeterFrom(ctx context.Context) *Meter {
	m, _ := ctx.Value(meterKey{}).(*Meter)
	return m
}
