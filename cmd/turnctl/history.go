package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// maxHistoryPages bounds how many pages one `turnctl history` reads.
const maxHistoryPages = 10_000

func init() {
	commands["history"] = command{
		summary: "print a session's conversation from the history function",
		run:     runHistory,
	}
}

const historyUsage = `usage: turnctl history -session ID [-url URL] [-token TOKEN | -sigv4] [-json] [-all-branches]

Prints a session's conversation, oldest first, from a turnstream history
function (the dev server's /history/ by default, or
$TURNSTREAM_HISTORY_URL), following page cursors to the end (GET
<url>sessions/<id>/turns): one block per message with its role, status,
text, tool calls (with their results; a call the user denied reads "denied")
and the turn's artifact references. A stopped turn's answer reads "stopped";
a decision on a tool call is shown as the decision, not as a message; a
queued turn that never ran says why. An answer that was edited or
regenerated says which of its versions is shown ("answer 2 of 3"; turnctl
select switches); -all-branches prints the other versions after it,
indented (GET <url>sessions/<id>/turns/<turnId> each). -json prints each
canonical message record as one JSON line instead (GET
<url>sessions/<id>/messages). -token and -sigv4 authenticate as for
turnctl chat.

Exit status: 0 on success, 1 after an HTTP error (its JSON error code and
message are printed on stderr), 2 for bad usage.
`

// runHistory implements `turnctl history`.
func runHistory(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("history", flag.ContinueOnError)
	base := fs.String("url", defaultHistoryURL(), "history function URL (default $"+historyURLEnv+", else the dev server's)")
	sessionID := fs.String("session", "", "session id (required)")
	var authn authFlags
	authn.register(fs)
	asJSON := fs.Bool("json", false, "print one canonical message record per line")
	allBranches := fs.Bool("all-branches", false, "print every version of an edited or regenerated answer")
	if status, ok := parseFlags(fs, args, historyUsage, stdout, stderr); !ok {
		return status
	}
	if fs.NArg() != 0 || !protocol.IsSafeID(*sessionID) {
		_, _ = fmt.Fprintln(stderr, "turnctl history: -session ID (a SafeId) is required and no arguments are taken")
		return 2
	}
	cl, ctx, stop, status := authn.historyClient("history", *base, stderr)
	if cl == nil {
		return status
	}
	defer stop()
	pages := 0
	if *asJSON {
		for page, err := range cl.MessagePages(ctx, *sessionID, client.PageOptions{Limit: client.MaxPageLimit, Order: client.OrderAsc}) {
			if err != nil {
				reportError(stderr, "history", err)
				return 1
			}
			if pages++; pages > maxHistoryPages {
				_, _ = fmt.Fprintln(stderr, "turnctl history: stopped after", maxHistoryPages, "pages")
				return 1
			}
			for _, raw := range page.Raw {
				_, _ = stdout.Write(append(compactRaw(raw), '\n'))
			}
		}
		return 0
	}
	// The whole conversation is read first: a decision, in a later turn,
	// says what became of the call its asking turn shows.
	var turns []client.TurnSummary
	for page, err := range cl.TurnPages(ctx, *sessionID, client.PageOptions{Limit: client.MaxPageLimit, Order: client.OrderAsc}) {
		if err != nil {
			reportError(stderr, "history", err)
			return 1
		}
		if pages++; pages > maxHistoryPages {
			_, _ = fmt.Fprintln(stderr, "turnctl history: stopped after", maxHistoryPages, "pages")
			return 1
		}
		turns = append(turns, page.Turns...)
	}
	decided := map[string]string{}
	for _, t := range turns {
		for _, m := range t.Messages {
			if d, call := decisionOf(m); d != "" {
				decided[call] = d
			}
		}
	}
	for _, t := range turns {
		printTurn(stdout, t, decided)
		if g := t.Siblings; g != nil {
			_, _ = fmt.Fprintf(stdout, "  (answer %d of %d at this place)\n", g.Index+1, g.Count)
			if *allBranches && printSiblings(ctx, cl, stdout, stderr, *sessionID, t, decided) != nil {
				return 1
			}
		}
	}
	return 0
}

// printSiblings prints the siblings of t other than t, each read by id,
// indented under a line naming its place among them.
func printSiblings(ctx context.Context, cl *client.Client, stdout, stderr io.Writer, sessionID string, t client.TurnSummary, decided map[string]string) error {
	for i, id := range t.Siblings.TurnIDs {
		if i == t.Siblings.Index {
			continue
		}
		other, err := cl.Conversations().Turn(ctx, sessionID, id)
		if err != nil {
			reportError(stderr, "history", err)
			return err
		}
		var b strings.Builder
		printTurn(&b, *other, decided)
		_, _ = fmt.Fprintf(stdout, "  answer %d of %d (turn %s, not shown in the conversation):\n", i+1, t.Siblings.Count, escapeText(id, false))
		for _, line := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
			_, _ = fmt.Fprintf(stdout, "    %s\n", line)
		}
	}
	return nil
}

// printTurn writes a turn's messages (printMessage), then its artifact
// references, indented under the last message. A decision turn's
// user message is the decision's label, not something the user typed: it
// is shown as the decision. A turn that never ran (cancelled or expired
// in the queue) says so under its user message.
func printTurn(w io.Writer, t client.TurnSummary, decided map[string]string) {
	decision := ""
	for _, m := range t.Messages {
		if d, call := decisionOf(m); d != "" {
			decision = d + " the call " + nameOf(m, call)
		}
	}
	assistant := false
	for _, m := range t.Messages {
		switch {
		case m.Role == protocol.RoleUser && decision != "":
			_, _ = fmt.Fprintf(w, "decision (%s):\n  %s\n", escapeText(m.CreatedAt, false), escapeText(decision, false))
			continue
		case m.Role == protocol.RoleAssistant:
			assistant = true
			m.Status = statusWord(m.Status, t.Error)
		}
		printMessage(w, m, decided)
	}
	for _, a := range t.Artifacts {
		_, _ = fmt.Fprintf(w, "  artifact %s (%s)\n", escapeText(a.EntryPath, false), escapeText(a.ArtifactType, false))
	}
	if !assistant && t.Error != nil {
		switch t.Error.Code {
		case protocol.CodeTurnCancelled:
			_, _ = io.WriteString(w, "  (cancelled before it ran)\n")
		case protocol.CodeTurnQueueExpired:
			_, _ = io.WriteString(w, "  (it waited in the queue too long and never ran)\n")
		default:
			_, _ = fmt.Fprintf(w, "  (no answer: %s)\n", escapeText(t.Error.Code, false))
		}
	}
}

// decisionOf returns "approved" or "denied" and the tool call's id when m
// is the assistant message of a decision turn (its
// metadata.confirmation), "" otherwise.
func decisionOf(m protocol.Message) (decision, toolCallID string) {
	var md api.ApprovalMetadata
	if m.Role != protocol.RoleAssistant || len(m.Metadata) == 0 || json.Unmarshal(m.Metadata, &md) != nil || md.Confirmation == nil {
		return "", ""
	}
	switch md.Confirmation.Decision {
	case protocol.DecisionApprove:
		return "approved", md.Confirmation.ToolCallID
	case protocol.DecisionDeny:
		return "denied", md.Confirmation.ToolCallID
	}
	return "", ""
}

// nameOf returns the name of m's tool call id, the id itself when m has
// no such call.
func nameOf(m protocol.Message, id string) string {
	for _, tc := range m.ToolCalls {
		if tc.ID == id {
			return tc.Name
		}
	}
	return id
}

// printMessage writes one message block: "role (status, createdAt):", its
// text indented and its tool calls (printTurn adds the turn's artifact
// references). Everything from the server is escaped (escapeText): only the
// text keeps its line breaks, each line indented, so that no stored
// string can draw a block of its own or move the cursor.
func printMessage(w io.Writer, m protocol.Message, decided map[string]string) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s, %s):\n", escapeText(m.Role, false), escapeText(m.Status, false), escapeText(m.CreatedAt, false))
	if text := escapeText(displayContent(m.Content), true); text != "" {
		for _, line := range strings.Split(text, "\n") {
			fmt.Fprintf(&b, "  %s\n", line)
		}
	}
	denied := deniedCall(m)
	for _, tc := range m.ToolCalls {
		line := toolCallLine(tc, tc.ID == denied)
		if d := decided[tc.ID]; d != "" && tc.Status == protocol.ToolCallRequiresConfirmation {
			// The asking turn's record keeps the status it ended with; what
			// became of the call is the decision's.
			line = escapeText(fmt.Sprintf("tool %s %s: %s (asked for approval)", tc.Name, compactJSON(tc.Args), d), false)
		}
		fmt.Fprintf(&b, "  %s\n", line)
	}
	_, _ = io.WriteString(w, b.String())
}

func compactRaw(raw json.RawMessage) []byte {
	return []byte(compactJSON(raw))
}
