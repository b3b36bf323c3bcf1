package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/turnstream/turnstream/pkg/client"
)

func init() {
	commands["sessions"] = command{
		summary: "list your sessions, most recently active first; rename, delete or export one; erase a principal's",
		run:     runSessions,
	}
}

const sessionsUsage = `usage: turnctl sessions [-limit N] [-q WORDS] [-cursor C] [-url URL] [-token TOKEN | -sigv4] [-json]
       turnctl sessions rename [-url URL] [-token TOKEN | -sigv4] SESSION TITLE
       turnctl sessions rm [-url URL] [-token TOKEN | -sigv4] SESSION...
       turnctl sessions export [-o FILE] [-url URL] [-token TOKEN | -sigv4] SESSION
       turnctl sessions erase [-url URL] [-token TOKEN | -sigv4] SUBJECT

Lists your sessions from a turnstream history function's GET /sessions (the
dev server's /history/ by default), most recently active first: when the
last turn ended, its status, the session id, the title and the start of the
last answer (docs/conversations.md). -q keeps the sessions whose title holds
each of its words; -limit is the page size (1-100); a next page's cursor is
printed last, to pass as -cursor. -json prints the server's page as one JSON
line. rename sets a session's title (1-120 characters, no control or
invisible characters). rm deletes sessions for good (their turns, artifacts
references and queued turns; a session with a running turn is refused with
SESSION_BUSY). export writes a session's whole conversation as one JSON
document to stdout, or to FILE with -o. erase deletes every session of the
principal SUBJECT of your tenant: only the tenant's trusted principal may;
it prints how many were deleted and how many wait for their running turns.
-token and -sigv4 authenticate as for turnctl chat.

Exit status: 0 on success, 1 after an HTTP error (or an erase that left
busy sessions), 2 for bad usage.
`

// sessionsArgs are the operands each subcommand of turnctl sessions
// takes: exactly n, or at least one when n is -1.
var sessionsArgs = map[string]int{"": 0, "rename": 2, "rm": -1, "export": 1, "erase": 1}

// runSessions implements `turnctl sessions`.
func runSessions(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	sub := ""
	if len(args) > 0 {
		if _, ok := sessionsArgs[args[0]]; ok && args[0] != "" {
			sub, args = args[0], args[1:]
		}
	}
	fs := flag.NewFlagSet("sessions", flag.ContinueOnError)
	base := fs.String("url", defaultHistoryURL(), "history function URL (default $"+historyURLEnv+", else the dev server's)")
	limit := fs.Int("limit", 0, "sessions per page, 1-100 (default: the server's, 20)")
	query := fs.String("q", "", "words the titles must hold")
	cursor := fs.String("cursor", "", "the cursor a previous page printed")
	out := fs.String("o", "", "export: write the document to this file instead of stdout")
	var authn authFlags
	authn.register(fs)
	asJSON := fs.Bool("json", false, "print the page as JSON")
	if status, ok := parseFlags(fs, args, sessionsUsage, stdout, stderr); !ok {
		return status
	}
	if n := sessionsArgs[sub]; n >= 0 && fs.NArg() != n || n < 0 && fs.NArg() == 0 {
		name := strings.TrimSpace("turnctl sessions " + sub)
		_, _ = fmt.Fprintf(stderr, "%s: wrong number of arguments (see turnctl sessions -h)\n", name)
		return 2
	}
	cl, ctx, stop, status := authn.historyClient("sessions", *base, stderr)
	if cl == nil {
		return status
	}
	defer stop()
	switch sub {
	case "rename":
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
	case "rm":
		for _, id := range fs.Args() {
			if err := cl.Conversations().Delete(ctx, id); err != nil {
				reportError(stderr, "sessions rm "+escapeText(id, false), err)
				return 1
			}
			_, _ = fmt.Fprintf(stdout, "deleted %s\n", escapeText(id, false))
		}
		return 0
	case "export":
		return exportSession(ctx, cl, fs.Arg(0), *out, stdout, stderr)
	case "erase":
		got, err := cl.Conversations().Erase(ctx, fs.Arg(0))
		if err != nil {
			reportError(stderr, "sessions erase", err)
			return 1
		}
		_, _ = fmt.Fprintf(stdout, "%s: %d sessions deleted, %d busy\n", got.Status, got.Deleted, got.Busy)
		if got.Status != client.DeleteStatusDeleted {
			_, _ = fmt.Fprintln(stderr, "turnctl sessions erase: sessions remain (their turns are running); run it again once they ended")
			return 1
		}
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

// exportSession writes session id's export document to stdout, or to
// the file out (created, or truncated; removed again when the export
// failed).
func exportSession(ctx context.Context, cl *client.Client, id, out string, stdout, stderr io.Writer) int {
	w := stdout
	var f *os.File
	if out != "" {
		var err error
		if f, err = os.Create(out); err != nil {
			_, _ = fmt.Fprintf(stderr, "turnctl sessions export: %v\n", err)
			return 1
		}
		w = f
	}
	n, err := cl.Conversations().Export(ctx, id, w)
	if f != nil {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			_ = os.Remove(out)
		}
	}
	if err != nil {
		reportError(stderr, "sessions export", err)
		return 1
	}
	if f != nil {
		_, _ = fmt.Fprintf(stderr, "wrote %d bytes to %s\n", n, out)
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
