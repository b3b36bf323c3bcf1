package main

import (
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/turnstream/turnstream/pkg/client"
)

func init() {
	commands["sessions"] = command{
		summary: "list your sessions, most recently active first, or rename one",
		run:     runSessions,
	}
}

const sessionsUsage = `usage: turnctl sessions [-limit N] [-q WORDS] [-cursor C] [-url URL] [-token TOKEN | -sigv4] [-json]
       turnctl sessions rename [-url URL] [-token TOKEN | -sigv4] SESSION TITLE

Lists your sessions from a turnstream history function's GET /sessions (the
dev server's /history/ by default), most recently active first: when the
last turn ended, its status, the session id, the title and the start of the
last answer (docs/conversations.md). -q keeps the sessions whose title holds
each of its words; -limit is the page size (1-100); a next page's cursor is
printed last, to pass as -cursor. -json prints the server's page as one JSON
line. rename sets a session's title (1-120 characters, no control or
invisible characters). -token and -sigv4 authenticate as for turnctl chat.

Exit status: 0 on success, 1 after an HTTP error, 2 for bad usage.
`

// runSessions implements `turnctl sessions`.
func runSessions(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	rename := len(args) > 0 && args[0] == "rename"
	if rename {
		args = args[1:]
	}
	fs := flag.NewFlagSet("sessions", flag.ContinueOnError)
	base := fs.String("url", defaultHistoryURL(), "history function URL (default $"+historyURLEnv+", else the dev server's)")
	limit := fs.Int("limit", 0, "sessions per page, 1-100 (default: the server's, 20)")
	query := fs.String("q", "", "words the titles must hold")
	cursor := fs.String("cursor", "", "the cursor a previous page printed")
	var authn authFlags
	authn.register(fs)
	asJSON := fs.Bool("json", false, "print the page as JSON")
	if status, ok := parseFlags(fs, args, sessionsUsage, stdout, stderr); !ok {
		return status
	}
	switch {
	case rename && fs.NArg() != 2:
		_, _ = fmt.Fprintln(stderr, "turnctl sessions rename: takes SESSION and TITLE")
		return 2
	case !rename && fs.NArg() != 0:
		_, _ = fmt.Fprintln(stderr, "turnctl sessions: takes no arguments (rename SESSION TITLE renames one)")
		return 2
	}
	cl, ctx, stop, status := authn.historyClient("sessions", *base, stderr)
	if cl == nil {
		return status
	}
	defer stop()
	if rename {
		item, err := cl.Conversations().Rename(ctx, fs.Arg(0), fs.Arg(1))
		if err != nil {
			reportError(stderr, "sessions rename", err)
			return 1
		}
		if *asJSON {
			return printJSONLine(stdout, item)
		}
		printSessions(stdout, []client.SessionListItem{*item})
		return 0
	}
	page, err := cl.Conversations().List(ctx, client.ListOptions{Limit: *limit, Query: *query, Cursor: *cursor})
	if err != nil {
		reportError(stderr, "sessions", err)
		return 1
	}
	if *asJSON {
		return printJSONLine(stdout, page)
	}
	printSessions(stdout, page.Sessions)
	if page.NextCursor != nil {
		_, _ = fmt.Fprintf(stdout, "more: -cursor %s\n", escapeText(*page.NextCursor, false))
	}
	return 0
}

// printSessions prints listed sessions, one line each, every server
// string escaped for the terminal.
func printSessions(w io.Writer, sessions []client.SessionListItem) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, s := range sessions {
		updated, status, title, preview := "-", "-", "(untitled)", ""
		if s.UpdatedAt != nil {
			updated = *s.UpdatedAt
		}
		if s.LastTurn != nil {
			status, preview = s.LastTurn.Status, s.LastTurn.Preview
		}
		if s.Title != nil {
			title = *s.Title
		}
		_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", escapeText(updated, false), escapeText(status, false),
			escapeText(s.SessionID, false), escapeText(title, false), escapeText(preview, false))
	}
	_ = tw.Flush()
}
