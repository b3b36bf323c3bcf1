package memory

import (
	"bytes"
	"slices"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// ms returns t at millisecond precision in UTC, as the DynamoDB store keeps
// times (epoch ms, chat.Lease). The zero time stays zero.
func ms(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return time.UnixMilli(t.UnixMilli()).UTC()
}

func cloneLease(l *chat.Lease) *chat.Lease {
	if l == nil {
		return nil
	}
	c := *l
	return &c
}

func cloneSession(s *chat.Session) *chat.Session {
	c := *s
	c.ActiveTurn = cloneLease(s.ActiveTurn)
	c.TerminalTurns = slices.Clone(s.TerminalTurns)
	c.Confirmations = cloneConfirmations(s.Confirmations)
	c.Queue = slices.Clone(s.Queue)
	return &c
}

func cloneTurn(t *chat.Turn) *chat.Turn {
	c := *t
	c.Messages = cloneMessages(t.Messages)
	c.Error = clonePtr(t.Error)
	c.Artifacts = slices.Clone(t.Artifacts)
	c.Feedback = clonePtr(t.Feedback)
	c.ReasoningBlocks = bytes.Clone(t.ReasoningBlocks)
	c.Siblings = t.Siblings.Clone()
	return &c
}

func cloneMessages(msgs []protocol.Message) []protocol.Message {
	if msgs == nil {
		return nil
	}
	out := make([]protocol.Message, len(msgs))
	for i, m := range msgs {
		m.ToolCallID = clonePtr(m.ToolCallID)
		m.Metadata = bytes.Clone(m.Metadata)
		if m.Parts != nil {
			parts := make([]protocol.Part, len(m.Parts))
			for j, p := range m.Parts {
				p.Text = clonePtr(p.Text)
				p.Source = clonePtr(p.Source)
				p.MimeType = clonePtr(p.MimeType)
				p.Detail = clonePtr(p.Detail)
				p.DurationSec = clonePtr(p.DurationSec)
				p.Filename = clonePtr(p.Filename)
				parts[j] = p
			}
			m.Parts = parts
		}
		if m.ToolCalls != nil {
			calls := make([]protocol.ToolCall, len(m.ToolCalls))
			for j, tc := range m.ToolCalls {
				tc.Args = bytes.Clone(tc.Args)
				tc.Result = clonePtr(tc.Result)
				tc.Error = clonePtr(tc.Error)
				calls[j] = tc
			}
			m.ToolCalls = calls
		}
		out[i] = m
	}
	return out
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	c := *p
	return &c
}
