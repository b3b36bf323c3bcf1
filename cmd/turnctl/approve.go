package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// decidePending asks, for each tool call the last turn waits for,
// "approve? [y/N]" (on prompts) and sends the answer as a decision turn
// (y or yes approves; anything else, Enter included, denies, as the
// capital N says; docs/approvals.md). The answer taken is printed, so an
// Enter that denied is never a surprise. A continuation that waits again
// is asked again. End of input leaves the call waiting; Ctrl-C at the
// question sets c.interrupted. It reports whether every decision turn
// completed.
func (c *chatClient) decidePending(ctx context.Context, in lineSource, prompts io.Writer) bool {
	for len(c.pending) > 0 {
		p := c.pending[0]
		_, _ = fmt.Fprintln(prompts, escapeText(fmt.Sprintf("tool %s %s requires approval", p.Action, compactJSON(p.Args)), false))
		answer, err := in.line("approve? [y/N] (y approves; Enter or anything else denies) ")
		if err != nil {
			_, _ = fmt.Fprintln(prompts)
			c.pending = nil
			switch {
			case errors.Is(err, errInterrupted):
				c.interrupted = true
				return false
			case err != io.EOF:
				_, _ = fmt.Fprintln(c.stderr, "turnctl chat: read stdin:", err)
				return false
			}
			_, _ = fmt.Fprintln(c.stderr, "turnctl chat: no answer; the call keeps waiting (it expires, or the next turn supersedes it)")
			return true
		}
		decision := protocol.SubmitConfirmation{Token: p.Token, Decision: protocol.DecisionDeny}
		label := client.LabelDeny
		switch answer = strings.TrimSpace(answer); {
		case isYes(answer):
			decision.Decision, label = protocol.DecisionApprove, client.LabelApprove
			_, _ = fmt.Fprintf(prompts, "approved: %s runs now\n", escapeText(p.Action, false))
		case answer == "":
			_, _ = fmt.Fprintf(prompts, "denied (Enter means no): %s does not run\n", escapeText(p.Action, false))
		default:
			_, _ = fmt.Fprintf(prompts, "denied: %s does not run\n", escapeText(p.Action, false))
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
