package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/clock"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// Defaults of -url (chat, attach) and -history (chat, attach; -url of
// history): the dev server's mounts (docs/design.md#running-it), unless the
// environment names others (turnURLEnv, historyURLEnv).
const (
	devTurnURL      = "http://127.0.0.1:8787/turn/"
	devHistoryURL   = "http://127.0.0.1:8787/history/"
	devArtifactsURL = "http://127.0.0.1:8787/artifacts/"
)

// Environment variables that replace the default turn and history URLs:
// for a dev server on another address, or a stack used often.
const (
	turnURLEnv      = "TURNSTREAM_TURN_URL"
	historyURLEnv   = "TURNSTREAM_HISTORY_URL"
	artifactsURLEnv = "TURNSTREAM_ARTIFACTS_URL"
)

// lookupEnv reads the environment; tests replace it.
var lookupEnv = os.LookupEnv

// defaultTurnURL is -url's default: $TURNSTREAM_TURN_URL, else the dev
// server's turn mount.
func defaultTurnURL() string { return envOr(turnURLEnv, devTurnURL) }

// defaultHistoryURL is the history URL's default: $TURNSTREAM_HISTORY_URL,
// else the dev server's history mount.
func defaultHistoryURL() string { return envOr(historyURLEnv, devHistoryURL) }

// defaultArtifactsURL is -artifacts' default: $TURNSTREAM_ARTIFACTS_URL,
// else the dev server's artifacts mount.
func defaultArtifactsURL() string { return envOr(artifactsURLEnv, devArtifactsURL) }

func envOr(name, dflt string) string {
	if v, ok := lookupEnv(name); ok && v != "" {
		return v
	}
	return dflt
}

// maxLineBytes bounds one line read from stdin.
const maxLineBytes = 16 << 20

func init() {
	commands["chat"] = command{
		summary: "submit turns and show the streamed snapshots live",
		run:     runChat,
	}
}

// chatUsage documents `turnctl chat`.
const chatUsage = `usage: turnctl chat [-url URL] [-session ID] [-token TOKEN | -sigv4] [-json] [-compact] [-reasoning=false] [-multitask POLICY] [-attach FILE]... [-artifacts URL] [-history URL] [message...]

Submits one turn per message to a turnstream turn function (the dev server's
/turn/ by default, or $TURNSTREAM_TURN_URL) and renders the streamed
snapshots: the assistant's text as it grows, tool calls, and a status line
with the turn's state, snapshot sequence and token usage. With message
arguments they are joined into one turn; without, each line read from stdin
is a turn. -json prints the raw NDJSON lines instead. On a terminal the
reply is redrawn in place; otherwise text is appended without cursor
movement.

The model's reasoning, when it reasons and its definition shows it
(docs/reasoning.md), comes first, after "thinking> ", dimmed on a terminal;
-reasoning=false leaves it out.

-compact asks for the compact stream (X-Turnstream-Stream-Mode: compact,
docs/compact.md): complete snapshots at the start, at changes other than
appended text and at the end, append lines between them. Each append line
is applied to the last snapshot and shown (and, with -json, printed) as
the complete snapshot it makes; text arrives at least once a second. A gap
(an append line that does not fit the state shown) resumes the turn, which
starts again from a complete snapshot.

Authentication: -token sends a bearer token (jwt mode, or dev.<subject> on
the dev server); -sigv4 signs each request with AWS SigV4 for a function URL
with AuthType AWS_IAM (iam mode), with the default AWS credential chain. A
https://<id>.lambda-url.<region>.on.aws/ URL without -token is signed
automatically.

-attach FILE sends FILE with the first turn (repeat it for several): an
image (.png, .jpg, .gif, .webp) or a document (.pdf, .txt, .md, .csv,
.html, .docx, .xlsx) within its size limit (docs/attachments.md). Each is
uploaded before the turn, straight to the storage, through the artifacts
function at -artifacts (the dev server's /artifacts/ by default, or
$TURNSTREAM_ARTIFACTS_URL); on a terminal its progress is shown, then
"attached NAME (TYPE, N bytes)" on stderr. A file of another type, too
large, or unreadable is refused before anything is sent (exit status 2).

-multitask says what to do when the session is busy with another turn
(X-Turnstream-Multitask, docs/multitask.md): reject (the server's 409
SESSION_BUSY), enqueue (the turn waits for the turns before it: "queued
(n)" is shown, then the turn as it runs), interrupt (the running turn is
stopped, its answer so far kept, and this one runs) or rollback (as
interrupt, and the stopped turn is removed from the conversation). Without
it the session's definition decides (reject unless configured).

When the stream drops before the turn's last line and GET <url>capabilities
offers resume, the turn is resumed after the last sequence shown
("reconnecting… (attempt n of 5)" is shown meanwhile; up to 5 resumes in a
row without news, 250 ms apart and doubling; a server that cannot be
reached, even for its capabilities, counts as one attempt), and no line is
shown twice. A resume that opens but stays silent for 2 s says what it
waits for, from the session's lease read at -history (the history
function: the dev server's /history/ by default, or
$TURNSTREAM_HISTORY_URL): no news yet, with the time the lease has left;
"the server that ran this answer stopped; waiting up to N s for its lease
to expire" with a countdown once the lease was not renewed in time; a
server that renewed its lease and is only quiet. Once the lease expires
the turn function decides the turn lost and sends what it stored: when
that answer is shorter than what was shown, turnctl says so, and the
answer shown last is the one the conversation keeps. When the attempts
run out, the turn id and the turnctl attach command that follows the turn
are printed. A resume answered
SESSION_NOT_FOUND or TURN_NOT_FOUND ends at once and says that the server
no longer has the turn (as a dev server restarted on its in-memory store);
another refused resume prints the attach command too. turnctl attach
follows a running turn from another terminal.

A tool call that waits for approval asks "approve? [y/N]": y or yes
approves it, anything else (Enter included) denies it; the answer taken is
printed. Tool calls are shown with their results and errors; a call the
user denied reads "denied".

Ctrl-C during a turn asks the server to stop it (POST <url>/stop) and shows
the turn ending as "stopped" with its answer so far (a queued turn that has
not started is cancelled); a second Ctrl-C quits at once (exit status 130).
Ctrl-D at the prompt ends the session with exit status 0, whatever earlier
turns did (each was shown as it ended); with input from a pipe or a file
the status is 1 when a turn failed.

Text from the server is shown escaped: control characters, escape
sequences and bidirectional overrides appear as \xHH or \uHHHH, tabs as
spaces. Widths are counted in terminal columns (wide characters and emoji
take two, combining marks none), so redraws cover exactly what was drawn.

Exit status: 0 when every turn completed, 1 after an HTTP error, a
diagnostic, a stopped or failed turn (its code and message are printed on
stderr), 2 for bad usage, 130 after a quit.
`

// chatOptions are the flags of `turnctl chat`.
type chatOptions struct {
	url       string
	sessionID string
	auth      authFlags
	json      bool
	compact   bool   // X-Turnstream-Stream-Mode: compact
	multitask string // X-Turnstream-Multitask; "" sends none
	attach    fileList
	artifacts string // the artifacts function URL, for -attach
	// history is the history function URL, read for the lease of a turn
	// whose resume stays silent (leasewait.go); "" reads nothing.
	history string
	// reasoning shows the model's reasoning (-reasoning, default true),
	// dimmed on a terminal.
	reasoning bool
}

// fileList is a repeatable flag's values.
type fileList []string

func (f *fileList) String() string { return strings.Join(*f, ",") }

// Set implements flag.Value.
func (f *fileList) Set(v string) error {
	*f = append(*f, v)
	return nil
}

// runChat implements `turnctl chat`.
func runChat(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var opts chatOptions
	fs := flag.NewFlagSet("chat", flag.ContinueOnError)
	fs.StringVar(&opts.url, "url", defaultTurnURL(), "turn function URL (default $"+turnURLEnv+", else the dev server's)")
	fs.StringVar(&opts.sessionID, "session", "", "session id (a SafeId); default: a new random one, printed on stderr")
	opts.auth.register(fs)
	fs.BoolVar(&opts.json, "json", false, "print the raw NDJSON stream lines")
	fs.BoolVar(&opts.compact, "compact", false, "ask for the compact stream (append lines between complete snapshots)")
	fs.BoolVar(&opts.reasoning, "reasoning", true, "show the model's reasoning before its answer, dimmed on a terminal (-reasoning=false hides it)")
	fs.StringVar(&opts.multitask, "multitask", "", "when the session is busy: reject, enqueue, interrupt or rollback (default: the definition's)")
	fs.Var(&opts.attach, "attach", "a file to send with the first turn (repeatable)")
	fs.StringVar(&opts.history, "history", defaultHistoryURL(), "history function URL, read for the lease of a turn whose resume stays silent (default $"+historyURLEnv+", else the dev server's)")
	fs.StringVar(&opts.artifacts, "artifacts", defaultArtifactsURL(), "artifacts function URL, for -attach (default $"+artifactsURLEnv+", else the dev server's)")
	if status, ok := parseFlags(fs, args, chatUsage, stdout, stderr); !ok {
		return status
	}
	files, err := checkFiles(opts.attach)
	if err != nil {
		_, _ = fmt.Fprintln(stderr, "turnctl chat:", escapeText(err.Error(), false))
		return 2
	}
	if u, err := url.Parse(opts.history); opts.history != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https")) {
		_, _ = fmt.Fprintln(stderr, "turnctl chat: -history is not an http(s) URL")
		return 2
	}
	if opts.multitask != "" && !slices.Contains(api.MultitaskPolicies, opts.multitask) {
		_, _ = fmt.Fprintf(stderr, "turnctl chat: -multitask must be one of %s\n", strings.Join(api.MultitaskPolicies, ", "))
		return 2
	}
	if opts.sessionID == "" {
		opts.sessionID = "session-" + randomHex(8)
		_, _ = fmt.Fprintf(stderr, "session %s\n", opts.sessionID)
	} else if !protocol.IsSafeID(opts.sessionID) {
		_, _ = fmt.Fprintln(stderr, "turnctl chat: -session is not a SafeId (1..128 of [A-Za-z0-9._:-], starting alphanumeric)")
		return 2
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cl, err := opts.auth.client(ctx, urls{turn: opts.url, history: opts.history, artifacts: opts.artifacts})
	if err != nil {
		_, _ = fmt.Fprintln(stderr, "turnctl chat:", err)
		return 2
	}
	c := &chatClient{opts: opts, client: cl, stdout: stdout, stderr: stderr, tty: isTerminal(stdout), quit: cancel, files: files}
	if c.tty {
		c.width, c.height = terminalSize(stdout)
	}

	status := 0
	interactive := isTerminal(stdin) && c.tty && !opts.json
	prompts := stdout // where approval questions go: stderr keeps -json's stdout NDJSON
	if opts.json {
		prompts = stderr
	}
	var input lineSource = newScanSource(stdin, prompts)
	if f, ok := stdin.(*os.File); ok && interactive && fs.NArg() == 0 {
		// turnctl edits the line itself, so that typing while an answer
		// streams does not break the live block (lineEditor).
		if ed, err := newLineEditor(f, stdout, c.width); err == nil {
			defer ed.close()
			c.editor, input = ed, ed
		}
	}
	if fs.NArg() > 0 {
		ok := c.turn(ctx, strings.Join(fs.Args(), " "), nil)
		if ok {
			ok = c.decidePending(ctx, input, prompts)
		}
		if ctx.Err() != nil {
			return quitMessage(stderr)
		}
		if !ok {
			return 1
		}
		return 0
	}
	for {
		prompt := ""
		if interactive {
			prompt = promptYou
		}
		line, err := input.line(prompt)
		if err != nil {
			if interactive { // Ctrl-D or Ctrl-C: leave the prompt's line
				_, _ = fmt.Fprintln(stdout)
			}
			if errors.Is(err, errInterrupted) {
				return exitQuit
			}
			if err != io.EOF {
				_, _ = fmt.Fprintln(stderr, "turnctl chat: read stdin:", err)
				return 1
			}
			break
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		if !c.turn(ctx, line, nil) || !c.decidePending(ctx, input, prompts) {
			status = 1
		}
		if c.interrupted {
			return exitQuit
		}
		if ctx.Err() != nil {
			return quitMessage(stderr)
		}
	}
	if interactive {
		return 0 // a person ended the session; a script reads the status below
	}
	return status
}

// exitQuit is the exit status after a second Ctrl-C during a turn: the
// shell's status for a process ended by SIGINT.
const exitQuit = 130

// quitMessage reports a quit (a second Ctrl-C during a turn) and returns
// exitQuit.
func quitMessage(stderr io.Writer) int {
	_, _ = fmt.Fprintln(stderr, "turnctl chat: quit; the server may still be finishing the turn (turnctl history shows how it ended)")
	return exitQuit
}

// notifyInterrupts delivers SIGINT (Ctrl-C) to turnctl chat instead of
// ending the process, while a turn streams; the returned function stops
// the delivery (between turns Ctrl-C ends the process as usual). Tests
// replace it.
var notifyInterrupts = func() (<-chan os.Signal, func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt)
	return ch, func() { signal.Stop(ch) }
}

// stopTimeout bounds the stop request sent on Ctrl-C.
const stopTimeout = 10 * time.Second

// chatClient submits turns of one session.
type chatClient struct {
	opts          chatOptions
	client        *client.Client
	stdout        io.Writer
	stderr        io.Writer
	tty           bool
	width, height int
	// quit cancels every request and ends the session (a second Ctrl-C
	// during a turn, see watchInterrupts).
	quit context.CancelFunc
	// pending are the confirmations the last turn ended waiting for
	// (approve.go).
	pending []client.PendingConfirmation
	// files are the -attach files the next turn sends (attachments.go).
	files []localFile
	// editor, when set, reads the terminal and edits the line typed
	// (editor.go); interrupted records Ctrl-C at an approval question.
	editor      *lineEditor
	interrupted bool
}

// turn submits input as a new turn and renders its stream; decision,
// when set, is the payload's confirmation decision (approve.go). It
// reports whether the turn completed, and keeps the confirmations it
// ended waiting for in c.pending.
func (c *chatClient) turn(ctx context.Context, input string, decision *protocol.SubmitConfirmation) bool {
	c.pending = nil
	if c.editor != nil { // Ctrl-C before the stream opens quits, as during it
		defer c.editor.whileBusy(c.quit)()
	}
	// The interrupt watcher shows its notices through the renderer, so
	// that a redraw counts them instead of erasing them.
	shown := &lockedRenderer{r: c.renderer()}
	sub := client.Submit{
		SessionID: c.opts.sessionID, TurnID: "turn-" + randomHex(8), EventID: "event-" + randomHex(8),
		Input: input, Confirmation: decision, StreamOptions: c.streamOptions(shown),
	}
	if len(c.files) > 0 && decision == nil {
		ids, ok := c.uploadFiles(ctx)
		if !ok {
			return false
		}
		sub.Attachments, c.files = ids, nil
	}
	if decision == nil {
		sub.Multitask = c.opts.multitask
	}
	if c.editor != nil { // what is typed from now on is drawn under the block
		defer c.editor.typing(shown.typing)()
	}
	s, err := c.client.Submit(ctx, sub)
	if err != nil {
		shown.done()          // the typed rows move to the prompt before the error is printed
		if ctx.Err() == nil { // else quit: reported by runChat
			reportError(c.stderr, "chat", err)
			var e *client.Error
			if errors.As(err, &e) && e.Code() == protocol.CodeSessionBusy {
				_, _ = fmt.Fprintln(c.stderr, "turnctl chat: another turn runs in this session; -multitask enqueue queues a message behind it, interrupt stops it")
			}
		}
		return false
	}
	if q := s.Queued(); q != nil {
		shown.status(fmt.Sprintf("%s%d): turn %s waits for the turn before it to end", noticeQueued, q.Position, s.TurnID()))
	}
	defer func() { _ = s.Close() }()
	interrupts, stopNotify := notifyInterrupts()
	defer stopNotify()
	if c.editor != nil { // Ctrl-C is the terminal's interrupt while the turn streams
		defer c.editor.signals()()
	}
	watchDone := make(chan struct{})
	defer close(watchDone)
	go c.watchInterrupts(ctx, s.TurnID(), shown, interrupts, watchDone)
	// A drop mid-turn is followed on over the resume route (pkg/client).
	last, ok := c.follow(ctx, "chat", s, shown)
	if ok {
		c.pending = client.PendingConfirmations(last.Snapshot)
	}
	return ok
}

// renderer returns the renderer of c's output: raw lines (-json), redrawn
// in place (a terminal) or appended.
func (c *chatClient) renderer() renderer {
	switch {
	case c.opts.json:
		return &rawRenderer{w: c.stdout, notices: c.stderr}
	case c.tty:
		return &liveRenderer{w: c.stdout, width: c.width, height: c.height, reasoning: c.opts.reasoning}
	}
	return &appendRenderer{w: c.stdout, notices: c.stderr, reasoning: c.opts.reasoning}
}

// streamOptions are the options of c's streams: compact when asked,
// "reconnecting…" shown on shown's status line while a drop is resumed,
// and once a resume opened, what it waits for while it stays silent
// (shown.lease, leasewait.go).
func (c *chatClient) streamOptions(shown *lockedRenderer) client.StreamOptions {
	lw := &leaseWait{shown: shown, clock: turnctlClock, live: c.tty && !c.opts.json}
	if c.opts.history != "" {
		lw.read = func(ctx context.Context) (*client.CurrentTurn, error) {
			sum, err := c.client.Session(ctx, c.opts.sessionID)
			if err != nil {
				return nil, err
			}
			return sum.CurrentTurn, nil
		}
	}
	shown.lease = lw
	return client.StreamOptions{Compact: c.opts.compact, OnResume: func(attempt, of int) {
		if attempt == 0 {
			shown.status("")
			lw.resumed()
			return
		}
		lw.news()
		shown.status(fmt.Sprintf("%s (attempt %d of %d)", noticeReconnecting, attempt, of))
	}}
}

// turnctlClock is the clock of turnctl's waits on the server (leaseWait);
// tests replace it.
var turnctlClock = clock.Real

// follow renders s to the turn's end and reports whether the turn
// completed, with its terminal snapshot; a failure is printed: a
// diagnostic, a snapshot with status error and its error, a line that is
// not a turn event, a stream that ended early.
func (c *chatClient) follow(ctx context.Context, cmd string, s *client.Stream, shown *lockedRenderer) (*protocol.Event, bool) {
	defer shown.done()
	if lw := shown.lease; lw != nil {
		lw.bind(ctx, s.TurnID())
		defer lw.news()
	}
	var longest turnView // the longest answer shown
	for first := true; ; first = false {
		ev, err := s.Next()
		if shown.lease != nil {
			shown.lease.news()
		}
		if first && err == nil && s.Queued() != nil {
			shown.status("") // it started
		}
		if err != nil {
			var e *client.Error
			isDiag := errors.As(err, &e) && e.Kind == client.KindDiagnostic
			if isDiag { // -json prints the line
				shown.event(s.Line(), &protocol.Event{Kind: protocol.EventDiagnostic, Diagnostic: &e.Diagnostic})
			}
			shown.done()
			switch {
			case ctx.Err() != nil:
				return nil, false // Ctrl-C: reported by the command
			case isDiag && e.Code() == protocol.CodeTurnCancelled:
				_, _ = fmt.Fprintf(c.stderr, "turnctl %s: the queued turn was cancelled before it ran\n", cmd)
			case isDiag && e.Code() == protocol.CodeTurnQueueExpired:
				_, _ = fmt.Fprintf(c.stderr, "turnctl %s: the queued turn waited too long and never ran (TURN_QUEUE_EXPIRED); send it again\n", cmd)
			case isDiag:
				printDiagnostic(c.stderr, "stream diagnostic", e.Diagnostic)
			case errors.As(err, &e) && e.Kind == client.KindInvalidLine:
				_, _ = fmt.Fprintf(c.stderr, "turnctl %s: %s\n", cmd, escapeText(err.Error(), false))
			case errors.As(err, &e) && e.Kind == client.KindIncomplete:
				_, _ = fmt.Fprintf(c.stderr, "turnctl %s: %s\n", cmd, escapeText(err.Error(), false))
				c.attachHint(cmd, s)
			case errors.As(err, &e) && e.Kind == client.KindHTTP && e.Op == "resume" &&
				(e.Code() == protocol.CodeSessionNotFound || e.Code() == protocol.CodeTurnNotFound):
				// The server answers, but not for this turn: a dev server
				// restarted on its in-memory store has none of it.
				_, _ = fmt.Fprintf(c.stderr, "turnctl %s: the stream was lost and the server no longer has turn %s (%s): "+
					"the server that ran it may have restarted without its store (the dev server's in-memory store starts empty); "+
					"the answer shown above is all that was received and may not have been saved\n", cmd, s.TurnID(), e.Code())
			case errors.As(err, &e) && e.Kind == client.KindHTTP && e.Op == "resume":
				_, _ = fmt.Fprintf(c.stderr, "turnctl %s: the stream was lost and its resume was refused: %s\n", cmd, escapeText(err.Error(), false))
				c.attachHint(cmd, s)
			default:
				_, _ = fmt.Fprintf(c.stderr, "turnctl %s: read the stream: %s\n", cmd, escapeText(err.Error(), false))
				if errors.As(err, &e) && e.Kind == client.KindNetwork {
					c.attachHint(cmd, s)
				}
			}
			return nil, false
		}
		shown.event(s.Line(), ev)
		if v := viewOf(ev); len(v.text) >= len(longest.text) {
			longest = v
		}
		switch ev.Snapshot.Status {
		case protocol.StatusError:
			shown.done()
			defer c.shorterStored(cmd, longest, viewOf(ev))
			switch d := ev.Snapshot.Error; {
			case d != nil && d.Code == protocol.CodeTurnInterrupted:
				_, _ = fmt.Fprintf(c.stderr, "turnctl %s: stopped (TURN_INTERRUPTED); the answer so far is kept\n", cmd)
			case d != nil:
				printDiagnostic(c.stderr, "turn failed", *d)
			default:
				_, _ = fmt.Fprintln(c.stderr, "turn failed")
			}
			return ev, false
		case protocol.StatusComplete:
			return ev, true
		}
	}
}

// shorterStored says so when the answer as stored (the terminal
// snapshot's, stored) is shorter than the longest one shown: the server
// stopped after streaming text it had not checkpointed yet (a lost turn
// keeps its last checkpoint), and what the conversation keeps is what is
// shown last.
func (c *chatClient) shorterStored(cmd string, longest, stored turnView) {
	had, kept := utf8.RuneCountInString(longest.text), utf8.RuneCountInString(stored.text)
	if kept >= had {
		return
	}
	_, _ = fmt.Fprintf(c.stderr, "turnctl %s: the stored answer is shorter than what was shown (%d of %d characters): "+
		"the server stopped before it saved the rest; the answer shown last is the one the conversation keeps\n", cmd, kept, had)
}

// attachHint tells how to follow the turn of s, whose stream was lost
// before its end while the turn may still be running: its id and the
// turnctl attach command (flags for a non-default URL, and a reminder of
// the credentials, never the token itself).
func (c *chatClient) attachHint(cmd string, s *client.Stream) {
	attach := fmt.Sprintf("turnctl attach -session %s -turn %s", s.SessionID(), s.TurnID())
	if c.opts.url != defaultTurnURL() {
		attach += " -url " + escapeText(c.opts.url, false)
	}
	if c.opts.auth.token != "" || c.opts.auth.sigv4 {
		attach += " (with the same -token or -sigv4)"
	}
	_, _ = fmt.Fprintf(c.stderr, "turnctl %s: turn %s may still be running; follow it with: %s\n", cmd, s.TurnID(), attach)
}

// Notices shown while a turn streams.
const (
	noticeStopping = "stopping the turn (Ctrl-C again to quit)"
)

// watchInterrupts handles Ctrl-C while turnID streams, until done closes.
// The first asks the server to stop the turn (POST <url>/stop: on Lambda a
// client disconnect does not stop a turn) and shows a notice;
// the stream goes on showing the turn until it ends as interrupted. The
// next one quits.
func (c *chatClient) watchInterrupts(ctx context.Context, turnID string, shown *lockedRenderer, interrupts <-chan os.Signal, done <-chan struct{}) {
	stopped := false
	for {
		select {
		case <-done:
			return
		case <-interrupts:
			if stopped {
				c.quit()
				return
			}
			stopped = true
			shown.notice(noticeStopping)
			c.requestStop(ctx, turnID, shown)
		}
	}
}

// requestStop asks the turn function to stop turnID (POST <url>/stop)
// and shows a refusal as a notice, and a queued turn's cancellation.
func (c *chatClient) requestStop(ctx context.Context, turnID string, shown *lockedRenderer) {
	ctx, cancel := context.WithTimeout(ctx, stopTimeout)
	defer cancel()
	ans, err := c.client.StopTurn(ctx, c.opts.sessionID, turnID)
	switch {
	case err != nil && ctx.Err() == nil:
		var b strings.Builder
		reportError(&b, "chat stop", err)
		shown.notice(strings.TrimSuffix(b.String(), "\n"))
	case err == nil && ans.Cancelled:
		shown.status("") // no longer queued
		shown.notice("cancelled the queued turn before it started")
	}
}

// renderer shows a turn's stream. event is called for each decoded line
// (raw is the line as received), notice for a line of turnctl's own (the
// stop notice), done once at the end. Its methods are called from one
// goroutine at a time (lockedRenderer).
type renderer interface {
	event(raw []byte, ev *protocol.Event)
	notice(text string)
	done()
}

// lockedRenderer serializes the stream loop's and the interrupt watcher's
// calls to a renderer; after done, notices are dropped (the turn has been
// reported).
type lockedRenderer struct {
	mu       sync.Mutex
	r        renderer
	finished bool
	// lease, when set, says what a silent resume waits for (leasewait.go).
	lease *leaseWait
}

func (l *lockedRenderer) event(raw []byte, ev *protocol.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.finished {
		l.r.event(raw, ev)
	}
}

func (l *lockedRenderer) notice(text string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.finished {
		l.r.notice(text)
	}
}

func (l *lockedRenderer) done() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.finished {
		l.finished = true
		l.r.done()
	}
}

// typingRenderer is a renderer that draws what is typed while the turn
// streams (lineEditor).
type typingRenderer interface {
	typing(t typeahead)
}

// typing shows t where the renderer draws typed text; a renderer that
// does not draw it ignores it.
func (l *lockedRenderer) typing(t typeahead) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if tr, ok := l.r.(typingRenderer); ok && !l.finished {
		tr.typing(t)
	}
}

// rawRenderer prints every line as received (-json); notices go to
// notices (stderr), keeping stdout NDJSON.
type rawRenderer struct{ w, notices io.Writer }

func (r *rawRenderer) event(raw []byte, _ *protocol.Event) {
	_, _ = r.w.Write(raw)
	_, _ = io.WriteString(r.w, "\n")
}

func (r *rawRenderer) notice(text string) { _, _ = fmt.Fprintln(r.notices, text) }

func (r *rawRenderer) done() {}

// turnView is what a snapshot says about the current turn, escaped for
// the terminal (escapeText).
type turnView struct {
	reasoning string // the model's reasoning (client.Reasoning)
	text      string
	toolCalls []string
	toolIDs   []string // the calls' ids, toolCalls[i] being toolIDs[i]'s line
	status    string
}

// viewOf returns the current turn's assistant text and tool calls (the
// messages after the last user message) and the status line: the
// snapshot's status, "stopped" for a turn ended by a stop.
func viewOf(ev *protocol.Event) turnView {
	s := ev.Snapshot
	start := 0
	for i, m := range s.Messages {
		if m.Role == protocol.RoleUser {
			start = i + 1
		}
	}
	var v turnView
	var text, reasoning strings.Builder
	for _, m := range s.Messages[start:] {
		if m.Role != protocol.RoleAssistant {
			continue
		}
		reasoning.WriteString(client.Reasoning(m))
		text.WriteString(displayContent(m.Content))
		denied := deniedCall(m)
		for _, tc := range m.ToolCalls {
			v.toolCalls = append(v.toolCalls, toolCallLine(tc, tc.ID == denied))
			v.toolIDs = append(v.toolIDs, tc.ID)
		}
	}
	v.text = escapeText(text.String(), true)
	v.reasoning = escapeText(reasoning.String(), true)
	v.status = fmt.Sprintf("[%s · seq %d · tokens %d in / %d out / %d total]",
		escapeText(statusWord(s.Status, s.Error), false), ev.Sequence, s.Usage.PromptTokens, s.Usage.CompletionTokens, s.Usage.TotalTokens)
	return v
}

// reasoningLabel starts the model's reasoning where it is shown.
const reasoningLabel = "thinking> "

// shown is the turn's text as printed without cursor movement: with
// reasoning, the model's reasoning first (reasoningLabel, then a blank
// line before the answer, once there is one).
func (v turnView) shown(reasoning bool) string {
	if !reasoning || v.reasoning == "" {
		return v.text
	}
	if v.text == "" {
		return reasoningLabel + v.reasoning
	}
	return reasoningLabel + v.reasoning + "\n\n" + v.text
}

// statusWord is how a turn's status reads: "stopped" for an error
// status whose diagnostic is TURN_INTERRUPTED (the user stopped it),
// the status itself otherwise.
func statusWord(status string, d *protocol.Diagnostic) string {
	if status == protocol.StatusError && d != nil && d.Code == protocol.CodeTurnInterrupted {
		return "stopped"
	}
	return status
}

// deniedCall returns the id of the tool call that message m's decision
// turn denied (its metadata.confirmation, docs/approvals.md), "" when m
// carries no denial.
func deniedCall(m protocol.Message) string {
	var md api.ApprovalMetadata
	if len(m.Metadata) == 0 || json.Unmarshal(m.Metadata, &md) != nil || md.Confirmation == nil || md.Confirmation.Decision != protocol.DecisionDeny {
		return ""
	}
	return md.Confirmation.ToolCallID
}

// maxShownResult bounds the tool result or error shown on a tool call's
// line, in runes.
const maxShownResult = 200

// toolCallLine is one tool call as shown, escaped: "tool <name> <args>:
// <status>", followed by " → <result>" for a complete call, ": <error>"
// for a failed one; a call the user denied reads "denied" (not an error).
func toolCallLine(tc protocol.ToolCall, denied bool) string {
	line := fmt.Sprintf("tool %s %s: %s", tc.Name, compactJSON(tc.Args), tc.Status)
	switch {
	case denied && tc.Status == protocol.ToolCallError:
		line = fmt.Sprintf("tool %s %s: denied (it did not run)", tc.Name, compactJSON(tc.Args))
	case tc.Status == protocol.ToolCallComplete && tc.Result != nil && *tc.Result != "":
		line += " → " + clip(*tc.Result)
	case tc.Status == protocol.ToolCallError && tc.Error != nil && *tc.Error != "":
		line += ": " + clip(*tc.Error)
	}
	return escapeText(line, false)
}

// clip returns s cut to maxShownResult runes, "…" appended when cut.
func clip(s string) string {
	n := 0
	for i := range s {
		if n == maxShownResult {
			return s[:i] + "…"
		}
		n++
	}
	return s
}

// displayContent returns content for display: the text and component
// fallbacks of ordered assistant content (agentskit.chat.content/1), the
// string itself otherwise. The result is not escaped yet.
func displayContent(content string) string {
	if !strings.HasPrefix(content, "\x1e") {
		return content
	}
	dc, diag := protocol.DecodeContent(content)
	if diag != nil {
		return content
	}
	var b strings.Builder
	for _, p := range dc.Parts {
		if p.Frame != nil {
			_, _ = fmt.Fprintf(&b, "[%s: %s]", p.Frame.ComponentKey, p.Frame.Fallback.Summary)
			continue
		}
		b.WriteString(p.Text)
	}
	return b.String()
}

func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return "{…}"
	}
	return b.String()
}

// appendRenderer writes without cursor movement (stdout is not a
// terminal): text as it grows, each tool call's state when it changes, the
// final status line at the end; notices go to notices (stderr). Neither a
// tool call's line nor a notice cuts a line of text in two (stderr and
// stdout often end up in one place, as with 2>&1): one that comes while
// text is mid-line waits for the line's end (or the turn's); of a tool
// call only the newest state is then printed.
type appendRenderer struct {
	w       io.Writer
	notices io.Writer
	last    *protocol.Event
	// text is what was printed of the turn (turnView.shown), reasoning
	// whether that shows the model's reasoning.
	text      string
	reasoning bool
	// printed is the line last printed for each tool call id; pending the
	// calls whose newer line waits for the text's line end, in order.
	printed map[string]string
	pending []string
	waiting map[string]string
	// held are the notices that wait for the text's line end, in order.
	held []string
	// lineStart: the last thing written ended a line (a tool line or a
	// notice), whatever text ends with.
	lineStart bool
}

func (r *appendRenderer) event(_ []byte, ev *protocol.Event) {
	if ev.Kind != protocol.EventSnapshot {
		return
	}
	r.last = ev
	v := viewOf(ev)
	shown := v.shown(r.reasoning)
	if strings.HasPrefix(shown, r.text) {
		if delta := shown[len(r.text):]; delta != "" {
			_, _ = io.WriteString(r.w, delta)
			r.lineStart = false
		}
	} else { // the text was rewritten: start it again on a new line
		_, _ = io.WriteString(r.w, "\n"+shown)
		r.lineStart = false
	}
	r.text = shown
	if r.printed == nil {
		r.printed, r.waiting = map[string]string{}, map[string]string{}
	}
	for i, tl := range v.toolCalls {
		id := v.toolIDs[i]
		if r.printed[id] == tl || r.waiting[id] == tl {
			continue
		}
		if _, ok := r.waiting[id]; !ok {
			r.pending = append(r.pending, id)
		}
		r.waiting[id] = tl
	}
	if r.atLineStart() {
		r.flushTools()
		r.flushNotices()
	}
}

// flushNotices prints the notices that wait, at a line start.
func (r *appendRenderer) flushNotices() {
	for _, text := range r.held {
		_, _ = fmt.Fprintln(r.notices, text)
	}
	r.held = r.held[:0]
}

// flushTools prints the tool lines that wait, at a line start.
func (r *appendRenderer) flushTools() {
	for _, id := range r.pending {
		_, _ = fmt.Fprintln(r.w, r.waiting[id])
		r.printed[id] = r.waiting[id]
		delete(r.waiting, id)
		r.lineStart = true
	}
	r.pending = r.pending[:0]
}

func (r *appendRenderer) notice(text string) {
	if r.notices == nil { // the live renderer's appending mode: same stream
		// The notice gets a line of its own; the reply goes on below it.
		if !r.atLineStart() {
			_, _ = io.WriteString(r.w, "\n")
		}
		_, _ = fmt.Fprintln(r.w, text)
		r.lineStart = true
		return
	}
	if !r.atLineStart() {
		r.held = append(r.held, text)
		return
	}
	_, _ = fmt.Fprintln(r.notices, text)
}

// atLineStart reports whether what was written last ends a line.
func (r *appendRenderer) atLineStart() bool {
	return r.lineStart || r.text == "" || strings.HasSuffix(r.text, "\n")
}

func (r *appendRenderer) done() {
	if r.last == nil {
		return
	}
	if !r.atLineStart() {
		_, _ = io.WriteString(r.w, "\n")
		r.lineStart = true
	}
	if len(r.pending) > 0 {
		r.flushTools()
	}
	r.flushNotices()
	_, _ = fmt.Fprintln(r.w, viewOf(r.last).status)
}

// liveRenderer redraws the current turn in place on a terminal: it moves
// the cursor up over the block it drew last and clears to the end of the
// screen. The block is the reply, its tool calls, the status line and the
// notices, and its height is counted in terminal rows (display widths,
// wrapped lines), so that each redraw covers exactly what the last one
// drew. A block as tall as the terminal cannot be redrawn; from then on
// the text is appended as by appendRenderer.
type liveRenderer struct {
	w             io.Writer
	width, height int
	lines         int // terminal rows of the block drawn last
	appending     *appendRenderer
	last          *protocol.Event
	view          *turnView
	notices       []string
	reasoning     bool // show the model's reasoning, dimmed
	// typed is what was typed while the turn streams (lineEditor), drawn
	// as the block's last rows; open says the block drawn last ended on
	// the line being typed, the cursor at its end rather than under the
	// block.
	typed typeahead
	open  bool
}

func (r *liveRenderer) event(raw []byte, ev *protocol.Event) {
	if ev.Kind != protocol.EventSnapshot {
		return
	}
	if r.appending != nil {
		r.appending.event(raw, ev)
		return
	}
	v := viewOf(ev)
	r.last, r.view = ev, &v
	r.redraw()
}

func (r *liveRenderer) notice(text string) {
	if r.appending != nil {
		r.appending.notice(text)
		return
	}
	r.notices = append(r.notices, text)
	r.redraw()
}

// redraw draws the block of the current view and notices over the last.
func (r *liveRenderer) redraw() {
	// head is the reasoning line, drawn dimmed; block the rest. Both count
	// in the block's height as plain text (SGR codes take no column).
	var head string
	var block strings.Builder
	if v := r.view; v != nil {
		if r.reasoning && v.reasoning != "" {
			head = reasoningLabel + v.reasoning + "\n"
		}
		block.WriteString("assistant> " + v.text + "\n")
		for _, tl := range v.toolCalls {
			block.WriteString("  " + tl + "\n")
		}
		block.WriteString(v.status + "\n")
	}
	for _, n := range r.notices {
		block.WriteString(n + "\n")
	}
	n := 0
	if head != "" || block.Len() > 0 {
		n = physicalLines(head+block.String(), r.width)
	}
	var b strings.Builder
	if up := r.lines; up > 0 { // up over the last block, clear below
		if r.open {
			up--
		}
		if up > 0 {
			_, _ = fmt.Fprintf(&b, "\x1b[%dA", up)
		}
		b.WriteString("\r\x1b[J")
	}
	r.open = false
	if n >= r.height && r.view != nil {
		// Too tall to redraw: keep what is on screen and append from here.
		// What is typed from now on is shown at the next prompt.
		shown := r.view.shown(r.reasoning)
		r.appending = &appendRenderer{w: r.w, text: shown, reasoning: r.reasoning, last: r.last, printed: map[string]string{}, waiting: map[string]string{}}
		b.WriteString("assistant> " + shown)
		_, _ = io.WriteString(r.w, b.String())
		r.lines = 0
		return
	}
	if head != "" {
		b.WriteString(sgrDim + strings.TrimSuffix(head, "\n") + sgrNormal + "\n")
	}
	b.WriteString(block.String())
	// The typed rows fit under the block, or wait for the next prompt.
	if typed := r.typed.rows(); typed != "" {
		if t := physicalLines(typed, r.width); n+t < r.height {
			b.WriteString(typed)
			n += t
			r.open = !strings.HasSuffix(typed, "\n")
		}
	}
	_, _ = io.WriteString(r.w, b.String())
	r.lines = n
}

// typing shows t, what was typed while the turn streams, under the block.
func (r *liveRenderer) typing(t typeahead) {
	if r.appending != nil {
		return
	}
	r.typed = t
	r.redraw()
}

// SGR codes around the reasoning on a terminal: faint, then normal
// intensity.
const (
	sgrDim    = "\x1b[2m"
	sgrNormal = "\x1b[22m"
)

func (r *liveRenderer) done() {
	if r.appending != nil {
		r.appending.done()
		return
	}
	if !r.typed.empty() { // the typed rows move to the next prompt
		r.typed = typeahead{}
		r.redraw()
	}
}

// reportError prints a failed request as "turnctl <cmd>: ...": an HTTP
// error answer with its JSON error code and message when it has one
// (docs/design.md#history-and-artifacts-api shape), a function URL's own
// {"Message"} refusal, or the HTTP status; any other error as it is.
// Everything from the server is escaped.
func reportError(w io.Writer, cmd string, err error) {
	var e *client.Error
	if !errors.As(err, &e) || e.Kind != client.KindHTTP {
		_, _ = fmt.Fprintf(w, "turnctl %s: %s\n", cmd, escapeText(err.Error(), false))
		return
	}
	switch {
	case e.Diagnostic.Code != client.CodeResponseInvalid:
		printDiagnostic(w, fmt.Sprintf("turnctl %s: HTTP %d", cmd, e.Status), e.Diagnostic)
		printRetryAfter(w, cmd, e) // usage.go
	case e.FunctionURLMessage != "":
		// Lambda's function URL front end answers refused signatures and
		// missing permissions itself, as {"Message":"..."}.
		_, _ = fmt.Fprintf(w, "turnctl %s: HTTP %s: %s\n", cmd, httpStatus(e.Status), escapeText(e.FunctionURLMessage, false))
	default:
		_, _ = fmt.Fprintf(w, "turnctl %s: HTTP %s\n", cmd, httpStatus(e.Status))
	}
}

// httpStatus is "502 Bad Gateway".
func httpStatus(code int) string {
	if t := http.StatusText(code); t != "" {
		return fmt.Sprintf("%d %s", code, t)
	}
	return fmt.Sprint(code)
}

// printDiagnostic prints "prefix: CODE: message (retryable|not retryable)",
// the code and message escaped (escapeText).
func printDiagnostic(w io.Writer, prefix string, d protocol.Diagnostic) {
	retry := "not retryable"
	if d.Retryable {
		retry = "retryable"
	}
	// The code and message come from the server: escaped like any text.
	_, _ = fmt.Fprintf(w, "%s: %s: %s (%s)\n", prefix, escapeText(d.Code, false), escapeText(d.Message, false), retry)
}

// isTerminal reports whether f is a character device (a terminal). Tests
// replace it.
var isTerminal = isCharDevice

func isCharDevice(f any) bool {
	file, ok := f.(*os.File)
	if !ok {
		return false
	}
	st, err := file.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}

// statusRenderer is a renderer that shows a transient status (such as
// "reconnecting…") in its status block; "" clears it.
type statusRenderer interface {
	status(text string)
}

// status shows text as the renderer's transient status: in place on a
// terminal (statusRenderer), as a notice line otherwise (clearing shows
// nothing).
func (l *lockedRenderer) status(text string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.finished {
		return
	}
	if sr, ok := l.r.(statusRenderer); ok {
		sr.status(text)
		return
	}
	if text != "" {
		l.r.notice(text)
	}
}

// streamModeHeader negotiates the compact stream (docs/compact.md).
const streamModeHeader = api.StreamModeHeader

// noticeReconnecting starts the transient status shown while a dropped
// stream is resumed; noticeQueued the one shown while a queued turn
// waits to start.
const (
	noticeReconnecting = "reconnecting…"
	noticeQueued       = "queued ("
)

// isTransient reports whether a notice line is a transient status.
func isTransient(n string) bool {
	return strings.HasPrefix(n, noticeReconnecting) || strings.HasPrefix(n, noticeQueued) || isLeaseStatus(n)
}

// status replaces the transient status line under the status line (the
// notices isTransient recognises) by text, or removes it for
// "", and redraws. While appending (a block too tall to redraw) it is a
// notice line.
func (r *liveRenderer) status(text string) {
	if r.appending != nil {
		if text != "" {
			r.appending.notice(text)
		}
		return
	}
	kept := r.notices[:0]
	for _, n := range r.notices {
		if !isTransient(n) {
			kept = append(kept, n)
		}
	}
	r.notices = kept
	if text != "" {
		r.notices = append(r.notices, text)
	}
	r.redraw()
}
