package model

import "github.com/turnstream/turnstream/pkg/protocol"

// TextToolNotCompleted is the tool result text ExpandToolCalls gives a
// stored tool call that never finished (status pending, running or
// requires_confirmation, for example after a crashed turn).
const TextToolNotCompleted = "Tool call did not complete."

// ExpandToolCalls returns msgs with the tool round trips that providers need
// made explicit (see the package documentation): after every assistant message
// with ToolCalls, one protocol.RoleTool message per call that is not already
// answered by a tool message with its ToolCallID before the next user or
// assistant message. The synthesized message has Content the call's Result
// (status complete) or Error (status error; Status protocol.MessageError), or
// TextToolNotCompleted with Status protocol.MessageError for an unfinished
// call. A turn that stores one assistant message per turn with its toolCalls
// (docs/protocol.md#the-canonical-message-record) calls this on the loaded
// context before Stream. msgs is not modified; messages without tool calls are
// kept as they are.
func ExpandToolCalls(msgs []protocol.Message) []protocol.Message {
	out := make([]protocol.Message, 0, len(msgs))
	for i, m := range msgs {
		out = append(out, m)
		if m.Role != protocol.RoleAssistant || len(m.ToolCalls) == 0 {
			continue
		}
		answered := map[string]bool{}
		for _, next := range msgs[i+1:] {
			if next.Role == protocol.RoleUser || next.Role == protocol.RoleAssistant {
				break
			}
			if next.Role == protocol.RoleTool && next.ToolCallID != nil {
				answered[*next.ToolCallID] = true
			}
		}
		for _, tc := range m.ToolCalls {
			if answered[tc.ID] {
				continue
			}
			msg := resultOf(tc, m.CreatedAt)
			out = append(out, msg)
		}
	}
	return out
}
