package main

import (
	"bufio"
	"context"
	"fmt"
	"strings"

	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// decidePending asks, for each tool call the last turn waits for,
// "approve? [y/N]" on the terminal and sends the answer as a decision turn
// (y or yes approves; anything else denies; docs/approvals.md); a
// continuation that waits again is asked again. End of input leaves the
// call waiting. It reports whether every decision turn completed.
func (c *chatClient) decidePending(ctx context.Context, in *bufio.Scanner) bool {
	prompt := c.stdout
	if c.opts.json {
		prompt = c.stderr
	}
	for len(c.pending) > 0 {
		p := c.pending[0]
		_, _ = fmt.Fprintf(prompt, "%s\napprove? [y/N] ", escapeText(fmt.Sprintf("tool %s %s requires approval", p.Action, compactJSON(p.Args)), false))
		if !in.Scan() {
			_, _ = fmt.Fprintln(prompt)
			_, _ = fmt.Fprintln(c.stderr, "turnctl chat: no answer; the call keeps waiting (it expires, or the next turn supersedes it)")
			c.pending = nil
			return true
		}
		decision := protocol.SubmitConfirmation{Token: p.Token, Decision: protocol.DecisionDeny}
		label := client.LabelDeny
		if isYes(in.Text()) {
			decision.Decision, label = protocol.DecisionApprove, client.LabelApprove
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
