package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/turnstream/turnstream/pkg/protocol"
)

// pendingConfirmation is one element of the assistant message metadata
// member pendingConfirmations (pkg/turn MetadataPendingConfirmations): a
// tool call that waits for the owner's decision.
type pendingConfirmation struct {
	Token      string `json:"token"`
	ToolCallID string `json:"toolCallId"`
	Action     string `json:"action"`
	ExpiresAt  int64  `json:"expiresAt"`
	// args are the call's arguments, from its toolCalls entry.
	args json.RawMessage
}

// pendingOf returns the confirmations a terminal snapshot's last
// assistant message waits for (none when absent or malformed).
func pendingOf(s *protocol.SnapshotPayload) []pendingConfirmation {
	if len(s.Messages) == 0 {
		return nil
	}
	m := s.Messages[len(s.Messages)-1]
	if m.Role != protocol.RoleAssistant || len(m.Metadata) == 0 {
		return nil
	}
	var meta struct {
		Pending []pendingConfirmation `json:"pendingConfirmations"`
	}
	if json.Unmarshal(m.Metadata, &meta) != nil {
		return nil
	}
	var out []pendingConfirmation
	for _, p := range meta.Pending {
		if !protocol.IsSafeID(p.Token) {
			continue
		}
		for _, tc := range m.ToolCalls {
			if tc.ID == p.ToolCallID && tc.Status == protocol.ToolCallRequiresConfirmation {
				p.args = tc.Args
				out = append(out, p)
			}
		}
	}
	return out
}

// Decision labels: the input of a decision turn. The input is only a
// label; payload.confirmation decides.
const (
	labelApprove = "Approved."
	labelDeny    = "Denied."
)

// decidePending asks, for each tool call the last turn waits for,
// "approve? [y/N]" on the terminal and sends the answer as a decision turn
// (y or yes approves; anything else denies); a continuation that waits
// again is asked again. End of input leaves the call waiting. It reports
// whether every decision turn completed.
func (c *chatClient) decidePending(ctx context.Context, in *bufio.Scanner) bool {
	prompt := c.stdout
	if c.opts.json {
		prompt = c.stderr
	}
	for len(c.pending) > 0 {
		p := c.pending[0]
		_, _ = fmt.Fprintf(prompt, "%s\napprove? [y/N] ", escapeText(fmt.Sprintf("tool %s %s requires approval", p.Action, compactJSON(p.args)), false))
		if !in.Scan() {
			_, _ = fmt.Fprintln(prompt)
			_, _ = fmt.Fprintln(c.stderr, "turnctl chat: no answer; the call keeps waiting (it expires, or the next turn supersedes it)")
			c.pending = nil
			return true
		}
		approve := isYes(in.Text())
		decision := protocol.SubmitConfirmation{Token: p.Token, Decision: protocol.DecisionDeny}
		label := labelDeny
		if approve {
			decision.Decision, label = protocol.DecisionApprove, labelApprove
		}
		if !c.turn(ctx, label, &decision) {
			return false
		}
	}
	return true
}

// isYes reports whether an answer to "[y/N]" is yes.
func isYes(answer string) bool {
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return true
	}
	return false
}
