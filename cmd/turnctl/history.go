package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"strings"

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

const historyUsage = `usage: turnctl history -session ID [-url URL] [-token TOKEN | -sigv4] [-json]

Prints a session's conversation, oldest first, from a turnstream history
function (the dev server's /history/ by default), following page cursors to
the end: one block per message with its role, text, tool calls and the
turn's artifact references. -json prints each canonical message record as
one JSON line instead. -token and -sigv4 authenticate as for turnctl chat.

Exit status: 0 on success, 1 after an HTTP error (its JSON error code and
message are printed on stderr), 2 for bad usage.
`

// runHistory implements `turnctl history`.
func runHistory(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("history", flag.ContinueOnError)
	base := fs.String("url", defaultHistoryURL, "history function URL")
	sessionID := fs.String("session", "", "session id (required)")
	var authn authFlags
	authn.register(fs)
	asJSON := fs.Bool("json", false, "print one canonical message record per line")
	if status, ok := parseFlags(fs, args, historyUsage, stdout, stderr); !ok {
		return status
	}
	if fs.NArg() != 0 || !protocol.IsSafeID(*sessionID) {
		_, _ = fmt.Fprintln(stderr, "turnctl history: -session ID (a SafeId) is required and no arguments are taken")
		return 2
	}
	if u, err := url.Parse(*base); err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		_, _ = fmt.Fprintln(stderr, "turnctl history: -url is not an http(s) URL")
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cl, err := authn.client(ctx, urls{history: *base})
	if err != nil {
		_, _ = fmt.Fprintln(stderr, "turnctl history:", err)
		return 2
	}
	pages := 0
	for page, err := range cl.MessagePages(ctx, *sessionID, client.PageOptions{Limit: client.MaxPageLimit, Order: client.OrderAsc}) {
		if err != nil {
			reportError(stderr, "history", err)
			return 1
		}
		if pages++; pages > maxHistoryPages {
			_, _ = fmt.Fprintln(stderr, "turnctl history: stopped after", maxHistoryPages, "pages")
			return 1
		}
		for i, m := range page.Messages {
			if *asJSON {
				_, _ = stdout.Write(append(compactRaw(page.Raw[i]), '\n'))
				continue
			}
			printMessage(stdout, m)
		}
	}
	return 0
}

// printMessage writes one message block: "role (status, createdAt):", its
// text indented, its tool calls and the artifact references kept in its
// metadata. Everything from the server is escaped (escapeText): only the
// text keeps its line breaks, each line indented, so that no stored
// string can draw a block of its own or move the cursor.
func printMessage(w io.Writer, m protocol.Message) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s, %s):\n", escapeText(m.Role, false), escapeText(m.Status, false), escapeText(m.CreatedAt, false))
	if text := escapeText(displayContent(m.Content), true); text != "" {
		for _, line := range strings.Split(text, "\n") {
			fmt.Fprintf(&b, "  %s\n", line)
		}
	}
	for _, tc := range m.ToolCalls {
		fmt.Fprintf(&b, "  %s\n", toolCallLine(tc))
	}
	var md struct {
		Artifacts []struct {
			EntryPath    string `json:"entryPath"`
			ArtifactType string `json:"artifactType"`
		} `json:"artifacts"`
	}
	if len(m.Metadata) > 0 && json.Unmarshal(m.Metadata, &md) == nil {
		for _, a := range md.Artifacts {
			fmt.Fprintf(&b, "  artifact %s (%s)\n", escapeText(a.EntryPath, false), escapeText(a.ArtifactType, false))
		}
	}
	_, _ = io.WriteString(w, b.String())
}

func compactRaw(raw json.RawMessage) []byte {
	return []byte(compactJSON(raw))
}
