package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"

	"github.com/turnstream/turnstream/pkg/protocol"
)

func init() {
	commands["attach"] = command{
		summary: "follow a session's running turn to its end (resume route)",
		run:     runAttach,
	}
}

// attachUsage documents `turnctl attach`.
const attachUsage = `usage: turnctl attach -session ID [-turn ID] [-url URL] [-history URL] [-token TOKEN | -sigv4] [-json] [-compact]

Follows a running turn and renders it as turnctl chat does, from its
current state to its end, over the turn function's resume route
(GET <url>sessions/<session>/turns/<turn>/stream). Without -turn the
session's running turn is read from the history function
(GET <history>sessions/<session>, its currentTurn). A finished turn named
by -turn shows its last snapshot. A dropped stream is resumed again, as in
turnctl chat. -token and -sigv4 authenticate as for turnctl chat. Ctrl-C
detaches; the turn goes on. -compact reads the compact stream, as in
turnctl chat.

Exit status: 0 when the turn completed; 1 when it failed, was stopped or
lost, when nothing is running in the session, when the turn function does
not offer resume, or after an HTTP error (its code and message are printed
on stderr); 2 for bad usage; 130 after Ctrl-C.
`

// runAttach implements `turnctl attach`.
func runAttach(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	var opts chatOptions
	fs := flag.NewFlagSet("attach", flag.ContinueOnError)
	fs.StringVar(&opts.url, "url", defaultTurnURL, "turn function URL")
	historyURL := fs.String("history", defaultHistoryURL, "history function URL (read for the running turn when -turn is not given)")
	fs.StringVar(&opts.sessionID, "session", "", "session id (required)")
	turnID := fs.String("turn", "", "turn id; default: the session's running turn (history currentTurn)")
	opts.auth.register(fs)
	fs.BoolVar(&opts.json, "json", false, "print the raw NDJSON stream lines")
	fs.BoolVar(&opts.compact, "compact", false, "ask for the compact stream (append lines between complete snapshots)")
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
	turnClient, err := opts.auth.client(ctx, opts.url)
	if err != nil {
		_, _ = fmt.Fprintln(stderr, "turnctl attach:", err)
		return 2
	}
	if *turnID == "" {
		historyClient, err := opts.auth.client(ctx, *historyURL)
		if err != nil {
			_, _ = fmt.Fprintln(stderr, "turnctl attach:", err)
			return 2
		}
		cur, ok := currentTurn(ctx, historyClient, *historyURL, opts.sessionID, stderr)
		if !ok {
			return detachedOr(ctx, stderr, 1)
		}
		if cur == nil {
			_, _ = fmt.Fprintf(stderr, "turnctl attach: nothing is running in session %s\n", opts.sessionID)
			return 1
		}
		*turnID = cur.TurnID
		_, _ = fmt.Fprintf(stderr, "attaching to turn %s (checkpoint sequence %d)\n", *turnID, cur.Sequence)
	}
	route, ok := fetchResumeRoute(ctx, turnClient, opts.url)
	if !ok {
		if ctx.Err() != nil {
			return detachedOr(ctx, stderr, 1)
		}
		_, _ = fmt.Fprintln(stderr, "turnctl attach: the turn function does not offer resume (its capabilities do not list it: checkpoints are off)")
		return 1
	}
	// From the start: the first line is the turn's newest state as one
	// complete snapshot, which is all a terminal that shows nothing yet
	// needs.
	body, err := openResume(ctx, turnClient, opts.url, route, opts.sessionID, *turnID, -1, opts.compact)
	if err != nil {
		if ctx.Err() != nil {
			return detachedOr(ctx, stderr, 1)
		}
		_, _ = fmt.Fprintln(stderr, "turnctl attach:", err)
		return 1
	}
	c := &chatClient{opts: opts, http: turnClient, stdout: stdout, stderr: stderr, tty: isTerminal(stdout), quit: func() {}}
	if c.tty {
		c.width, c.height = terminalSize(stdout)
	}
	if c.attach(ctx, *turnID, body) {
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

// runningTurn is a session's currentTurn in GET /sessions/{id}: the turn
// holding the session's lease and its latest checkpoint's sequence.
type runningTurn struct {
	TurnID   string `json:"turnId"`
	Status   string `json:"status"`
	Sequence int64  `json:"sequence"`
}

// currentTurn reads the session's running turn from the history function:
// nil when none runs. Errors are printed; false then.
func currentTurn(ctx context.Context, client *http.Client, historyURL, sessionID string, stderr io.Writer) (*runningTurn, bool) {
	u, err := url.Parse(historyURL)
	if err != nil {
		_, _ = fmt.Fprintln(stderr, "turnctl attach: -history is not an http(s) URL")
		return nil, false
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/sessions/" + sessionID
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		_, _ = fmt.Fprintln(stderr, "turnctl attach: -history is not an http(s) URL")
		return nil, false
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			_, _ = fmt.Fprintln(stderr, "turnctl attach:", err)
		}
		return nil, false
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		reportHTTPError(stderr, "attach", resp)
		return nil, false
	}
	var s struct {
		CurrentTurn *runningTurn `json:"currentTurn"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&s); err != nil {
		_, _ = fmt.Fprintln(stderr, "turnctl attach: the session does not decode:", escapeText(err.Error(), false))
		return nil, false
	}
	if s.CurrentTurn != nil && !protocol.IsSafeID(s.CurrentTurn.TurnID) {
		_, _ = fmt.Fprintln(stderr, "turnctl attach: the session's currentTurn has no valid turnId")
		return nil, false
	}
	return s.CurrentTurn, true
}

// attach renders the resume stream body of turnID to the turn's end, as
// turn does for a live stream, and reports whether the turn completed.
func (c *chatClient) attach(ctx context.Context, turnID string, body io.ReadCloser) bool {
	var r renderer
	switch {
	case c.opts.json:
		r = &rawRenderer{w: c.stdout, notices: c.stderr}
	case c.tty:
		r = &liveRenderer{w: c.stdout, width: c.width, height: c.height}
	default:
		r = &appendRenderer{w: c.stdout, notices: c.stderr}
	}
	shown := &lockedRenderer{r: r}
	defer shown.done()
	s, err := newReattachingStream(ctx, c.http, c.opts.url, c.opts.sessionID, turnID, body, shown.status, c.opts.compact)
	if err != nil { // the session id was checked as a SafeId: cannot happen
		_ = body.Close()
		_, _ = fmt.Fprintln(c.stderr, "turnctl attach:", err)
		return false
	}
	s.resumed = true
	defer func() { _ = s.Close() }()
	sc := bufio.NewScanner(s)
	sc.Buffer(make([]byte, 64<<10), maxLineBytes)
	for sc.Scan() {
		line := sc.Bytes()
		ev, diag := protocol.DecodeTurnEvent(line)
		if diag != nil {
			shown.done()
			_, _ = fmt.Fprintf(c.stderr, "turnctl attach: the server sent a line that is not a turn event (%s)\n", diag.Code)
			return false
		}
		shown.event(line, ev)
		if ok, ended := c.outcome(ev, shown); ended {
			return ok
		}
	}
	shown.done()
	if ctx.Err() != nil {
		return false // Ctrl-C: reported by runAttach
	}
	if err := sc.Err(); err != nil {
		_, _ = fmt.Fprintln(c.stderr, "turnctl attach: read the stream:", err)
		return false
	}
	_, _ = fmt.Fprintln(c.stderr, "turnctl attach: the stream ended before the turn's last snapshot")
	return false
}

// outcome reports whether ev ends the turn (ended) and then whether the
// turn completed (ok), printing a failure as turnctl chat does: a
// diagnostic, or a snapshot with status error and its error.
func (c *chatClient) outcome(ev *protocol.Event, shown *lockedRenderer) (ok, ended bool) {
	switch {
	case ev.Kind == protocol.EventDiagnostic:
		shown.done()
		printDiagnostic(c.stderr, "stream diagnostic", *ev.Diagnostic)
		return false, true
	case ev.Kind == protocol.EventSnapshot && ev.Snapshot.Status == protocol.StatusError:
		shown.done()
		if ev.Snapshot.Error != nil {
			printDiagnostic(c.stderr, "turn failed", *ev.Snapshot.Error)
		} else {
			_, _ = fmt.Fprintln(c.stderr, "turn failed")
		}
		return false, true
	case ev.Kind == protocol.EventSnapshot && ev.Snapshot.Status == protocol.StatusComplete:
		shown.done()
		return true, true
	}
	return false, false
}
