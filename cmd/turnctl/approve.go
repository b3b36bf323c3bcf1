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
// (y or yes approves; anything else, Enter included, denies, as the
// capital N says; docs/approvals.md). The answer taken is printed, so an
// Enter that denied is never a surprise. A continuation that waits again
// is asked again. End of input leaves the call waiting. It reports
// whether every decision turn completed.
func (c *chatClient) decidePending(ctx context.Context, in *bufio.Scanner) bool {
	prompt := c.stdout
	if c.opts.json {
		prompt = c.stderr
	}
	for len(c.pending) > 0 {
		p := c.pending[0]
		_, _ = fmt.Fprintf(prompt, "%s\napprove? [y/N] (y approves; Enter or anything else denies) ",
			escapeText(fmt.Sprintf("tool %s %s requires approval", p.Action, compactJSON(p.Args)), false))
		if !in.Scan() {
			_, _ = fmt.Fprintln(prompt)
			_, _ = fmt.Fprintln(c.stderr, "turnctl chat: no answer; the call keeps waiting (it expires, or the next turn supersedes it)")
			c.pending = nil
			return true
		}
		decision := protocol.SubmitConfirmation{Token: p.Token, Decision: protocol.DecisionDeny}
		label := client.LabelDeny
		switch answer := strings.TrimSpace(in.Text()); {
		case isYes(answer):
			decision.Decision, label = protocol.DecisionApprove, client.LabelApprove
			_, _ = fmt.Fprintf(prompt, "approved: %s runs now\n", escapeText(p.Action, false))
		case answer == "":
			_, _ = fmt.Fprintf(prompt, "denied (Enter means no): %s does not run\n", escapeText(p.Action, false))
		default:
			_, _ = fmt.Fprintf(prompt, "denied: %s does not run\n", escapeText(p.Action, false))
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
