package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/protocol"
)

func init() {
	commands["fork"] = command{
		summary: "copy a session's conversation up to one of its turns into a new session",
		run:     runFork,
	}
	commands["select"] = command{
		summary: "show another version of an edited or regenerated answer, and continue from it",
		run:     runSelect,
	}
}

const forkUsage = `usage: turnctl fork [-title TITLE] [-new ID] [-url URL] [-token TOKEN | -sigv4] [-json] SESSION TURN

Creates a new session of yours whose conversation is SESSION's, as it is
shown, up to and including the turn TURN (POST <url>sessions/<id>/fork on a
turnstream history function, the dev server's /history/ by default;
docs/branches.md), and prints it as turnctl sessions lists it. SESSION is
not changed. -new names the new session (a SafeId; the server makes one up
otherwise), -title titles it ("Fork of <SESSION's title>" otherwise).
-json prints the server's answer as one JSON line. -token and -sigv4
authenticate as for turnctl chat.

Exit status: 0 on success, 1 after an HTTP error, 2 for bad usage.
`

const selectUsage = `usage: turnctl select [-url URL] [-token TOKEN | -sigv4] SESSION TURN

Makes TURN, one version of an edited or regenerated answer (turnctl history
-all-branches lists them), and the turns that followed it the conversation
SESSION shows and continues from (POST <url>sessions/<id>/turns/<turn>/select;
docs/branches.md). The other versions are kept. A turn that is not such a
version is refused with TURN_NOT_SELECTABLE, a session whose turn runs with
SESSION_BUSY. -token and -sigv4 authenticate as for turnctl chat.

Exit status: 0 on success, 1 after an HTTP error, 2 for bad usage.
`

// branchArgs parses the flags and the two operands (SESSION TURN) of
// fork and select; ok false with the exit status otherwise.
func branchArgs(fs *flag.FlagSet, name string, args []string, usage string, stdout, stderr io.Writer) (sessionID, turnID string, status int, ok bool) {
	if status, ok := parseFlags(fs, args, usage, stdout, stderr); !ok {
		return "", "", status, false
	}
	if fs.NArg() != 2 || !protocol.IsSafeID(fs.Arg(0)) || !protocol.IsSafeID(fs.Arg(1)) {
		_, _ = fmt.Fprintf(stderr, "turnctl %s: SESSION and TURN (SafeIds) are required (see turnctl %s -h)\n", name, name)
		return "", "", 2, false
	}
	return fs.Arg(0), fs.Arg(1), 0, true
}

// runFork implements `turnctl fork`.
func runFork(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fork", flag.ContinueOnError)
	base := fs.String("url", defaultHistoryURL(), "history function URL (default $"+historyURLEnv+", else the dev server's)")
	title := fs.String("title", "", "the new session's title")
	newID := fs.String("new", "", "the new session's id")
	var authn authFlags
	authn.register(fs)
	asJSON := fs.Bool("json", false, "print the new session as JSON")
	sessionID, turnID, status, ok := branchArgs(fs, "fork", args, forkUsage, stdout, stderr)
	if !ok {
		return status
	}
	if *newID != "" && !protocol.IsSafeID(*newID) {
		_, _ = fmt.Fprintln(stderr, "turnctl fork: -new must be a SafeId")
		return 2
	}
	cl, ctx, stop, status := authn.historyClient("fork", *base, stderr)
	if cl == nil {
		return status
	}
	defer stop()
	item, err := cl.Conversations().Fork(ctx, sessionID, client.ForkOptions{AtTurnID: turnID, SessionID: *newID, Title: *title})
	if err != nil {
		reportError(stderr, "fork", err)
		return 1
	}
	if *asJSON {
		return printJSONLine(stdout, item)
	}
	printSessions(stdout, []client.SessionListItem{*item})
	return 0
}

// runSelect implements `turnctl select`.
func runSelect(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("select", flag.ContinueOnError)
	base := fs.String("url", defaultHistoryURL(), "history function URL (default $"+historyURLEnv+", else the dev server's)")
	var authn authFlags
	authn.register(fs)
	sessionID, turnID, status, ok := branchArgs(fs, "select", args, selectUsage, stdout, stderr)
	if !ok {
		return status
	}
	cl, ctx, stop, status := authn.historyClient("select", *base, stderr)
	if cl == nil {
		return status
	}
	defer stop()
	if err := cl.Conversations().Select(ctx, sessionID, turnID); err != nil {
		reportError(stderr, "select", err)
		return 1
	}
	_, _ = fmt.Fprintf(stdout, "selected %s in %s\n", escapeText(turnID, false), escapeText(sessionID, false))
	return 0
}
