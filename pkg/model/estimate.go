package model

// Token estimates for a model call whose provider never reported its usage
// (docs/quotas.md, "When the provider reports no usage"): a stream stopped,
// cut by its deadline or failed before the provider's usage arrived
// (Bedrock sends it in the metadata event after messageStop, OpenAI in the
// last chunk), or a provider that sends none. The input was sent and the
// output generated all the same, so the turn counts an estimate instead of
// nothing, and says so in its record.
//
// The estimator is one rule, here only: a text costs ceil(bytes/4)
// tokens, bytes being its UTF-8 length. Four characters per token is the
// published rule of thumb for English with the GPT and Claude tokenizers;
// counting bytes rather than characters makes text outside ASCII cost
// more per character (2-4 bytes each), as tokenizers also spend more
// tokens on it, so the estimate does not collapse for Chinese or Greek as
// a character count would. It needs no tokenizer and gives the same
// figure for every provider and model; it is an estimate, never a bill,
// and a provider's own usage always replaces it when it arrives.

// BytesPerToken is the divisor of the estimator: EstimateTokens counts one
// token per started group of BytesPerToken bytes.
const BytesPerToken = 4

// EstimateTokens returns the estimated token count of n bytes of UTF-8
// text or JSON: ceil(n/BytesPerToken), 0 for n <= 0.
func EstimateTokens(n int) int64 {
	if n <= 0 {
		return 0
	}
	return int64((n + BytesPerToken - 1) / BytesPerToken)
}

// EstimateInputTokens returns the estimated prompt tokens of req as the
// caller sent it: EstimateTokens of the bytes of its system prompt, of
// each message's role, content, tool call id and tool calls (name and
// arguments), and of each tool spec (name, description and input
// schema). The framing a provider adds around them (message separators,
// the tool-use preamble) is not counted, so the estimate leans low.
func EstimateInputTokens(req Request) int64 {
	n := len(req.System)
	for _, m := range req.Messages {
		n += len(m.Role) + len(m.Content)
		if m.ToolCallID != nil {
			n += len(*m.ToolCallID)
		}
		for _, tc := range m.ToolCalls {
			n += len(tc.Name) + len(tc.Args)
		}
	}
	for _, t := range req.Tools {
		n += len(t.Name) + len(t.Description) + len(t.InputSchema)
	}
	return EstimateTokens(n)
}

// OutputBytes returns the bytes of generated output ev carries, for
// EstimateTokens: its reasoning and text deltas, and its tool call's name
// and arguments (a complete reasoning block repeats deltas already
// counted; redacted reasoning counts its bytes).
func OutputBytes(ev Event) int {
	n := len(ev.ReasoningDelta) + len(ev.TextDelta)
	if r := ev.Reasoning; r != nil {
		n += len(r.Redacted)
	}
	if tc := ev.ToolCall; tc != nil {
		n += len(tc.Name) + len(tc.Args)
	}
	return n
}
