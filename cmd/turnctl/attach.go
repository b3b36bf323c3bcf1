package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"

	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/protocol"
)

func init() {
	commands["attach"] = command{
		summary: "follow a session's running turn to its end (resume route)",
		run:     runAttach,
	}
}

// attachUsage documents `turnctl attach`.
const attachUsage = `usage: turnctl attach -session ID [-turn ID] [-url URL] [-history URL] [-token TOKEN | -sigv4] [-json] [-compact] [-reasoning=false]

Follows a running turn and renders it as turnctl chat does, from its
current state to its end, over the turn function's resume route
(GET <url>sessions/<session>/turns/<turn>/stream). Without -turn the
session's running turn is read from the history function
(GET <history>sessions/<session>, its currentTurn). A finished turn named
by -turn shows its last snapshot. A dropped stream is resumed again, as in
turnctl chat. -token and -sigv4 authenticate as for turnctl chat. Ctrl-C
detaches; the turn goes on. -compact reads the compact stream, as in
turnctl chat.

A queued turn (turnctl chat -multitask enqueue) named by -turn is
followed from its start: nothing is shown until it starts.

Exit status: 0 when the turn completed; 1 when it failed, was stopped or
lost, when nothing is running in the session, when the turn function does
not offer resume, or after an HTTP error (its code and message are printed
on stderr); 2 for bad usage; 130 after Ctrl-C.
`

// runAttach implements `turnctl attach`.
func runAttach(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	var opts chatOptions
	fs := flag.NewFlagSet("attach", flag.ContinueOnError)
	fs.StringVar(&opts.url, "url", defaultTurnURL(), "turn function URL (default $"+turnURLEnv+", else the dev server's)")
	historyURL := fs.String("history", defaultHistoryURL(), "history function URL, read for the running turn when -turn is not given (default $"+historyURLEnv+", else the dev server's)")
	fs.StringVar(&opts.sessionID, "session", "", "session id (required)")
	turnID := fs.String("turn", "", "turn id; default: the session's running turn (history currentTurn)")
	opts.auth.register(fs)
	fs.BoolVar(&opts.json, "json", false, "print the raw NDJSON stream lines")
	fs.BoolVar(&opts.compact, "compact", false, "ask for the compact stream (append lines between complete snapshots)")
	fs.BoolVar(&opts.reasoning, "reasoning", true, "show the model's reasoning before its answer, dimmed on a terminal (-reasoning=false hides it)")
	if status, ok := parseFlags(fs, args, attachUsage, stdout, stderr); !ok {
		return status
	}
	if fs.NArg() != 0 || !protocol.IsSafeID(opts.sessionID) {
		_, _ = fmt.Fprintln(stderr, "turnctl attach: -session ID (a SafeId) is required and no arguments are taken")
		return 2
	}
	if *turnID != "" && !protocol.IsSafeID(*turnID) {
		_, _ = fmt.Fprintln(stderr, "turnctl attach: -turn is not a SafeId (1..128 of [A-Za-z0-9._:-], starting alphanumeric)")
		return 2
	}
	for _, u := range []string{opts.url, *historyURL} {
		if p, err := url.Parse(u); err != nil || (p.Scheme != "http" && p.Scheme != "https") {
			_, _ = fmt.Fprintf(stderr, "turnctl attach: %q is not an http(s) URL\n", escapeText(u, false))
			return 2
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	opts.history = *historyURL
	cl, err := opts.auth.client(ctx, urls{turn: opts.url, history: *historyURL})
	if err != nil {
		_, _ = fmt.Fprintln(stderr, "turnctl attach:", err)
		return 2
	}
	if *turnID == "" {
		sum, err := cl.Session(ctx, opts.sessionID)
		if err != nil {
			if ctx.Err() == nil {
				reportError(stderr, "attach", err)
			}
			return detachedOr(ctx, stderr, 1)
		}
		if sum.CurrentTurn == nil {
			_, _ = fmt.Fprintf(stderr, "turnctl attach: nothing is running in session %s\n", opts.sessionID)
			if len(sum.QueuedTurns) > 0 {
				_, _ = fmt.Fprintf(stderr, "turnctl attach: %d turns are queued; -turn %s follows the next one from its start\n",
					len(sum.QueuedTurns), sum.QueuedTurns[0].TurnID)
			}
			return 1
		}
		*turnID = sum.CurrentTurn.TurnID
		_, _ = fmt.Fprintf(stderr, "attaching to turn %s (checkpoint sequence %d)\n", *turnID, sum.CurrentTurn.Sequence)
	}
	c := &chatClient{opts: opts, client: cl, stdout: stdout, stderr: stderr, tty: isTerminal(stdout), quit: func() {}}
	if c.tty {
		c.width, c.height = terminalSize(stdout)
	}
	shown := &lockedRenderer{r: c.renderer()}
	// From the start: the first line is the turn's newest state as one
	// complete snapshot, which is all a terminal that shows nothing yet
	// needs.
	s, err := cl.Resume(ctx, client.Resume{SessionID: opts.sessionID, TurnID: *turnID, After: client.FromStart, StreamOptions: c.streamOptions(shown)})
	switch {
	case ctx.Err() != nil:
		return detachedOr(ctx, stderr, 1)
	case errors.Is(err, client.ErrResumeUnavailable):
		_, _ = fmt.Fprintln(stderr, "turnctl attach: the turn function does not offer resume (its capabilities do not list it: checkpoints are off)")
		return 1
	case err != nil:
		_, _ = fmt.Fprintln(stderr, "turnctl attach:", escapeText(err.Error(), false))
		return 1
	}
	defer func() { _ = s.Close() }()
	if _, ok := c.follow(ctx, "attach", s, shown); ok {
		return 0
	}
	return detachedOr(ctx, stderr, 1)
}

// detachedOr returns exitQuit with a sentence after Ctrl-C, status
// otherwise.
func detachedOr(ctx context.Context, stderr io.Writer, status int) int {
	if ctx.Err() == nil {
		return status
	}
	_, _ = fmt.Fprintln(stderr, "turnctl attach: detached; the turn goes on (turnctl history shows how it ended)")
	return exitQuit
}
