package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/turnstream/turnstream/pkg/client"
)

func init() {
	commands["feedback"] = command{
		summary: "rate a turn's answer up or down (or remove the rating)",
		run:     runFeedback,
	}
}

const feedbackUsage = `usage: turnctl feedback [-comment TEXT] [-url URL] [-token TOKEN | -sigv4] [-json] SESSION TURN up|down|remove

Rates the answer of a turn of one of your sessions on a turnstream history
function (the dev server's /history/ by default): up or down, with an
optional comment (at most 1,000 characters), replacing an earlier rating;
remove deletes it (docs/conversations.md). /turns and /messages show it.
-token and -sigv4 authenticate as for turnctl chat.

Exit status: 0 on success, 1 after an HTTP error, 2 for bad usage.
`

// runFeedback implements `turnctl feedback`.
func runFeedback(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("feedback", flag.ContinueOnError)
	base := fs.String("url", defaultHistoryURL(), "history function URL (default $"+historyURLEnv+", else the dev server's)")
	comment := fs.String("comment", "", "a comment on the answer")
	var authn authFlags
	authn.register(fs)
	asJSON := fs.Bool("json", false, "print the stored feedback as JSON")
	if status, ok := parseFlags(fs, args, feedbackUsage, stdout, stderr); !ok {
		return status
	}
	rating := fs.Arg(2)
	if fs.NArg() != 3 || rating != "up" && rating != "down" && rating != "remove" || rating == "remove" && *comment != "" {
		_, _ = fmt.Fprintln(stderr, "turnctl feedback: takes SESSION TURN and up, down or remove (a comment only with a rating)")
		return 2
	}
	cl, ctx, stop, status := authn.historyClient("feedback", *base, stderr)
	if cl == nil {
		return status
	}
	defer stop()
	var f *client.Feedback
	if rating != "remove" {
		f = &client.Feedback{Rating: rating, Comment: *comment}
	}
	stored, err := cl.Conversations().SetFeedback(ctx, fs.Arg(0), fs.Arg(1), f)
	if err != nil {
		reportError(stderr, "feedback", err)
		return 1
	}
	switch {
	case *asJSON:
		return printJSONLine(stdout, stored)
	case stored == nil:
		_, _ = fmt.Fprintln(stdout, "removed")
	default:
		_, _ = fmt.Fprintf(stdout, "%s %s\n", escapeText(stored.Rating, false), escapeText(stored.CreatedAt, false))
	}
	return 0
}
