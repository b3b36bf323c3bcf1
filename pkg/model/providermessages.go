package model

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/turnstream/turnstream/pkg/protocol"
)

// MaxToolCallIDLen is the longest tool call id ProviderMessages sends: the
// Bedrock Converse limit for toolUseId (1..64 of [A-Za-z0-9_-]), which
// OpenAI-compatible servers accept too.
const MaxToolCallIDLen = 64

// ValidToolCallID reports whether id is 1..MaxToolCallIDLen of
// [A-Za-z0-9_-], the tool call ids ProviderMessages keeps as they are.
func ValidToolCallID(id string) bool {
	if len(id) < 1 || len(id) > MaxToolCallIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}

// ProviderMessages returns msgs (a Request's Messages) in the shape every
// provider accepts for a request offering tools (nil or empty: none).
// Providers call it before mapping messages to their API; msgs is not
// modified. The rules, each one a request shape Bedrock Converse or
// OpenAI chat completions rejects otherwise (docs/providers.md):
//
//   - Pairing. Every assistant message with ToolCalls is followed at once
//     by exactly one tool message per call, in call order: the first
//     unused tool message before the next user or assistant message whose
//     ToolCallID is the call's id (so two calls sharing an id take the
//     results in order), else one made from the call as ExpandToolCalls
//     does. Tool messages that answer no call of the assistant message
//     before them are dropped, and so are system messages in between.
//   - Arguments. A call's Args that are not one JSON object become "{}".
//   - Ids. Tool call ids are unique in the result and ValidToolCallID: the
//     first use of a valid id keeps it; a repeated, empty or invalid id
//     becomes "call_<m>_<k>", m the position of its message among the
//     messages that are not tool messages (from 0) and k the call's
//     position in it (from 1), with "_2", "_3", ... added while that is
//     taken; the answering tool message carries the same new id.
//   - No tools offered. With no tools, each exchange (an assistant
//     message's calls and their results) is rendered as plain text
//     appended to that assistant message's content (see
//     ToolExchangeText), and consecutive assistant messages are joined
//     with a blank line, so the request holds no tool blocks at all.
func ProviderMessages(msgs []protocol.Message, tools []ToolSpec) []protocol.Message {
	type exchange struct {
		msg     protocol.Message   // the message; for an assistant, its ToolCalls copied
		results []protocol.Message // one per call of an assistant message
	}
	var xs []exchange
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		if m.Role == protocol.RoleTool {
			continue // an orphan: answered results are taken below
		}
		if m.Role != protocol.RoleAssistant || len(m.ToolCalls) == 0 {
			xs = append(xs, exchange{msg: m})
			continue
		}
		j := i + 1
		for j < len(msgs) && msgs[j].Role != protocol.RoleUser && msgs[j].Role != protocol.RoleAssistant {
			j++
		}
		following := msgs[i+1 : j]
		used := make([]bool, len(following))
		m.ToolCalls = append([]protocol.ToolCall(nil), m.ToolCalls...)
		x := exchange{msg: m}
		for k, tc := range m.ToolCalls {
			if !isObject(tc.Args) {
				m.ToolCalls[k].Args = json.RawMessage("{}")
			}
			var res *protocol.Message
			for f, next := range following {
				if !used[f] && next.Role == protocol.RoleTool && next.ToolCallID != nil && *next.ToolCallID == tc.ID {
					used[f] = true
					r := next
					res = &r
					break
				}
			}
			if res == nil {
				r := resultOf(tc, m.CreatedAt)
				res = &r
			}
			x.results = append(x.results, *res)
		}
		xs = append(xs, x)
		i = j - 1
	}

	// Ids: keep the first use of each valid id, then rename the others.
	taken := map[string]bool{}
	keep := make([][]bool, len(xs))
	for i, x := range xs {
		keep[i] = make([]bool, len(x.msg.ToolCalls))
		for k, tc := range x.msg.ToolCalls {
			if ValidToolCallID(tc.ID) && !taken[tc.ID] {
				taken[tc.ID] = true
				keep[i][k] = true
			}
		}
	}
	for i := range xs {
		for k := range xs[i].msg.ToolCalls {
			if !keep[i][k] {
				// Named by position, so that the ids of a history stay
				// the same as turns are appended (providers cache prompt
				// prefixes).
				base := "call_" + strconv.Itoa(i) + "_" + strconv.Itoa(k+1)
				id := base
				for n := 2; taken[id]; n++ {
					id = base + "_" + strconv.Itoa(n)
				}
				taken[id] = true
				xs[i].msg.ToolCalls[k].ID = id
			}
			id := xs[i].msg.ToolCalls[k].ID
			xs[i].results[k].ToolCallID = &id
		}
	}

	out := make([]protocol.Message, 0, len(msgs))
	if len(tools) == 0 {
		for _, x := range xs {
			m := x.msg
			if len(m.ToolCalls) > 0 {
				m.Content = joinText(m.Content, ToolExchangeText(m.ToolCalls, x.results))
				m.ToolCalls = nil
			}
			if n := len(out); n > 0 && m.Role == protocol.RoleAssistant && out[n-1].Role == protocol.RoleAssistant {
				out[n-1].Content = joinText(out[n-1].Content, m.Content)
				continue
			}
			out = append(out, m)
		}
		return out
	}
	for _, x := range xs {
		out = append(out, x.msg)
		out = append(out, x.results...)
	}
	return out
}

// joinText joins two texts with a blank line, leaving out an empty one.
func joinText(a, b string) string {
	switch {
	case strings.TrimSpace(a) == "":
		return b
	case strings.TrimSpace(b) == "":
		return a
	}
	return a + "\n\n" + b
}

// ToolExchangeText renders tool calls and their results (results[i]
// answers calls[i]; a tool message with Status protocol.MessageError is a
// failure) as the plain text ProviderMessages uses when a request offers
// no tools. Each call is two lines:
//
//	[Tool call <name> <args JSON>]
//	[Tool result: <text>]   or   [Tool error: <text>]
//
// with one blank line between calls.
func ToolExchangeText(calls []protocol.ToolCall, results []protocol.Message) string {
	var b strings.Builder
	for i, tc := range calls {
		if i > 0 {
			b.WriteString("\n\n")
		}
		args := tc.Args
		if !isObject(args) {
			args = json.RawMessage("{}")
		}
		var compact bytes.Buffer
		if json.Compact(&compact, args) != nil {
			compact.Reset()
			compact.WriteString("{}")
		}
		b.WriteString("[Tool call " + tc.Name + " " + compact.String() + "]\n")
		kind, text := "result", ""
		if i < len(results) {
			text = results[i].Content
			if results[i].Status == protocol.MessageError {
				kind = "error"
			}
		}
		b.WriteString("[Tool " + kind + ": " + text + "]")
	}
	return b.String()
}

// resultOf is the tool message ExpandToolCalls makes for a stored call
// that no tool message answers.
func resultOf(tc protocol.ToolCall, createdAt string) protocol.Message {
	id := tc.ID
	msg := protocol.Message{Role: protocol.RoleTool, ToolCallID: &id, Status: protocol.MessageError, Content: TextToolNotCompleted, CreatedAt: createdAt}
	switch {
	case tc.Status == protocol.ToolCallComplete:
		msg.Status = protocol.MessageComplete
		msg.Content = ""
		if tc.Result != nil {
			msg.Content = *tc.Result
		}
	case tc.Status == protocol.ToolCallError && tc.Error != nil:
		msg.Content = *tc.Error
	}
	return msg
}

// isObject reports whether raw is exactly one JSON object.
func isObject(raw json.RawMessage) bool {
	trimmed := bytes.TrimLeft(raw, " \t\r\n")
	return len(trimmed) > 0 && trimmed[0] == '{' && json.Valid(raw)
}
