package main

import (
	"bufio"
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
	"os"
	"os/signal"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/turnstream/turnstream/pkg/protocol"
)

// Defaults of `turnctl chat` and `turnctl history`: the dev server's mounts
// (DESIGN §10).
const (
	defaultTurnURL    = "http://127.0.0.1:8787/turn/"
	defaultHistoryURL = "http://127.0.0.1:8787/history/"
)

// maxLineBytes bounds one NDJSON line of a turn stream (a snapshot carries
// the whole session; 16 MiB is far beyond any Lambda response line).
const maxLineBytes = 16 << 20

func init() {
	commands["chat"] = command{
		summary: "submit turns and show the streamed snapshots live",
		run:     runChat,
	}
}

// chatUsage documents `turnctl chat`.
const chatUsage = `usage: turnctl chat [-url URL] [-session ID] [-token TOKEN | -sigv4] [-json] [message...]

Submits one turn per message to a turnstream turn function (the dev server's
/turn/ by default) and renders the streamed snapshots: the assistant's text
as it grows, tool calls, and a status line with the turn's state, snapshot
sequence and token usage. With message arguments they are joined into one
turn; without, each line read from stdin is a turn. -json prints the raw
NDJSON lines instead. On a terminal the reply is redrawn in place; otherwise
text is appended without cursor movement.

Authentication: -token sends a bearer token (jwt mode, or dev.<subject> on
the dev server); -sigv4 signs each request with AWS SigV4 for a function URL
with AuthType AWS_IAM (iam mode), with the default AWS credential chain. A
https://<id>.lambda-url.<region>.on.aws/ URL without -token is signed
automatically.

Ctrl-C during a turn asks the server to stop it (POST <url>/stop) and shows
the turn ending; a second Ctrl-C quits at once.

Exit status: 0 when every turn completed, 1 after an HTTP error, a
diagnostic or a failed turn (its code and message are printed on stderr),
2 for bad usage.

flags:
`

// chatOptions are the flags of `turnctl chat`.
type chatOptions struct {
	url       string
	sessionID string
	auth      authFlags
	json      bool
}

// runChat implements `turnctl chat`.
func runChat(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var opts chatOptions
	fs := flag.NewFlagSet("chat", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { _, _ = fmt.Fprint(stderr, chatUsage); fs.PrintDefaults() }
	fs.StringVar(&opts.url, "url", defaultTurnURL, "turn function URL")
	fs.StringVar(&opts.sessionID, "session", "", "session id (a SafeId); default: a new random one, printed on stderr")
	opts.auth.register(fs)
	fs.BoolVar(&opts.json, "json", false, "print the raw NDJSON stream lines")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
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
	httpClient, err := opts.auth.client(ctx, opts.url)
	if err != nil {
		_, _ = fmt.Fprintln(stderr, "turnctl chat:", err)
		return 2
	}
	c := &chatClient{opts: opts, http: httpClient, stdout: stdout, stderr: stderr, tty: isTerminal(stdout), quit: cancel}
	if c.tty {
		c.width, c.height = terminalSize(stdout)
	}

	if fs.NArg() > 0 {
		if !c.turn(ctx, strings.Join(fs.Args(), " ")) {
			return 1
		}
		return 0
	}
	status := 0
	interactive := isTerminal(stdin) && c.tty && !opts.json
	in := bufio.NewScanner(stdin)
	in.Buffer(make([]byte, 64<<10), maxLineBytes)
	for {
		if interactive {
			_, _ = fmt.Fprint(stdout, "you> ")
		}
		if !in.Scan() {
			break
		}
		line := strings.TrimRight(in.Text(), "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		if !c.turn(ctx, line) {
			status = 1
		}
		if ctx.Err() != nil {
			break
		}
	}
	if err := in.Err(); err != nil {
		_, _ = fmt.Fprintln(stderr, "turnctl chat: read stdin:", err)
		return 1
	}
	return status
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
	http          *http.Client
	stdout        io.Writer
	stderr        io.Writer
	tty           bool
	width, height int
	// quit cancels every request and ends the session (a second Ctrl-C
	// during a turn, see watchInterrupts).
	quit context.CancelFunc
}

// turn submits input as a new turn and renders its stream. It reports
// whether the turn completed.
func (c *chatClient) turn(ctx context.Context, input string) bool {
	turnID := "turn-" + randomHex(8)
	body, err := json.Marshal(map[string]any{
		"protocol":  protocol.TurnProtocol,
		"version":   protocol.TurnVersion,
		"eventId":   "event-" + randomHex(8),
		"sessionId": c.opts.sessionID,
		"turnId":    turnID,
		"sequence":  0,
		"emittedAt": protocol.FormatTime(time.Now()),
		"event":     protocol.EventSubmit,
		"payload":   map[string]string{"input": input},
	})
	if err != nil {
		_, _ = fmt.Fprintln(c.stderr, "turnctl chat: encode the turn:", err)
		return false
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.opts.url, bytes.NewReader(body))
	if err != nil {
		_, _ = fmt.Fprintln(c.stderr, "turnctl chat: -url:", err)
		return false
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/x-ndjson")
	resp, err := c.http.Do(req)
	if err != nil {
		_, _ = fmt.Fprintln(c.stderr, "turnctl chat:", err)
		return false
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		reportHTTPError(c.stderr, "chat", resp)
		return false
	}

	interrupts, stopNotify := notifyInterrupts()
	defer stopNotify()
	watchDone := make(chan struct{})
	defer close(watchDone)
	go c.watchInterrupts(ctx, turnID, interrupts, watchDone)

	var r renderer
	switch {
	case c.opts.json:
		r = &rawRenderer{w: c.stdout}
	case c.tty:
		r = &liveRenderer{w: c.stdout, width: c.width, height: c.height}
	default:
		r = &appendRenderer{w: c.stdout}
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), maxLineBytes)
	for sc.Scan() {
		line := sc.Bytes()
		ev, diag := protocol.DecodeTurnEvent(line)
		if diag != nil {
			r.done()
			_, _ = fmt.Fprintf(c.stderr, "turnctl chat: the server sent a line that is not a turn event (%s)\n", diag.Code)
			return false
		}
		r.event(line, ev)
		switch {
		case ev.Kind == protocol.EventDiagnostic:
			r.done()
			printDiagnostic(c.stderr, "stream diagnostic", *ev.Diagnostic)
			return false
		case ev.Kind == protocol.EventSnapshot && ev.Snapshot.Status == protocol.StatusError:
			r.done()
			if ev.Snapshot.Error != nil {
				printDiagnostic(c.stderr, "turn failed", *ev.Snapshot.Error)
			} else {
				_, _ = fmt.Fprintln(c.stderr, "turn failed")
			}
			return false
		case ev.Kind == protocol.EventSnapshot && ev.Snapshot.Status == protocol.StatusComplete:
			r.done()
			return true
		}
	}
	r.done()
	if err := sc.Err(); err != nil {
		_, _ = fmt.Fprintln(c.stderr, "turnctl chat: read the stream:", err)
		return false
	}
	_, _ = fmt.Fprintln(c.stderr, "turnctl chat: the stream ended before the turn's last snapshot")
	return false
}

// watchInterrupts handles Ctrl-C while turnID streams, until done closes.
// The first asks the server to stop the turn (POST <url>/stop: on Lambda a
// client disconnect does not stop a turn, DESIGN §4), and the stream goes
// on showing it until it ends as interrupted; the next one quits.
func (c *chatClient) watchInterrupts(ctx context.Context, turnID string, interrupts <-chan os.Signal, done <-chan struct{}) {
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
			_, _ = fmt.Fprintln(c.stderr, "\nstopping the turn (Ctrl-C again to quit)")
			c.requestStop(ctx, turnID)
		}
	}
}

// requestStop posts {"sessionId","turnId"} to the turn function's /stop
// route and reports a refusal on stderr.
func (c *chatClient) requestStop(ctx context.Context, turnID string) {
	body, _ := json.Marshal(map[string]string{"sessionId": c.opts.sessionID, "turnId": turnID})
	ctx, cancel := context.WithTimeout(ctx, stopTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(c.opts.url, "/")+"/stop", bytes.NewReader(body))
	if err != nil {
		_, _ = fmt.Fprintln(c.stderr, "turnctl chat: stop:", err)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		_, _ = fmt.Fprintln(c.stderr, "turnctl chat: stop:", err)
		return
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusAccepted {
		reportHTTPError(c.stderr, "chat stop", resp)
	}
}

// renderer shows a turn's stream. event is called for each decoded line
// (raw is the line as received), done once at the end.
type renderer interface {
	event(raw []byte, ev *protocol.Event)
	done()
}

// rawRenderer prints every line as received (-json).
type rawRenderer struct{ w io.Writer }

func (r *rawRenderer) event(raw []byte, _ *protocol.Event) {
	_, _ = r.w.Write(raw)
	_, _ = io.WriteString(r.w, "\n")
}

func (r *rawRenderer) done() {}

// turnView is what a snapshot says about the current turn.
type turnView struct {
	text      string
	toolCalls []string
	status    string
}

// viewOf returns the current turn's assistant text and tool calls (the
// messages after the last user message) and the status line.
func viewOf(ev *protocol.Event) turnView {
	s := ev.Snapshot
	start := 0
	for i, m := range s.Messages {
		if m.Role == protocol.RoleUser {
			start = i + 1
		}
	}
	var v turnView
	var text strings.Builder
	for _, m := range s.Messages[start:] {
		if m.Role != protocol.RoleAssistant {
			continue
		}
		text.WriteString(displayContent(m.Content))
		for _, tc := range m.ToolCalls {
			v.toolCalls = append(v.toolCalls, fmt.Sprintf("tool %s %s: %s", tc.Name, compactJSON(tc.Args), tc.Status))
		}
	}
	v.text = text.String()
	v.status = fmt.Sprintf("[%s · seq %d · tokens %d in / %d out / %d total]",
		s.Status, ev.Sequence, s.Usage.PromptTokens, s.Usage.CompletionTokens, s.Usage.TotalTokens)
	return v
}

// displayContent returns content for display: the text and component
// fallbacks of ordered assistant content (agentskit.chat.content/1), the
// string itself otherwise.
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
// terminal): text as it grows, each tool call state once, the final status
// line at the end.
type appendRenderer struct {
	w         io.Writer
	last      *protocol.Event
	text      string
	toolLines map[string]bool
}

func (r *appendRenderer) event(_ []byte, ev *protocol.Event) {
	if ev.Kind != protocol.EventSnapshot {
		return
	}
	r.last = ev
	v := viewOf(ev)
	if strings.HasPrefix(v.text, r.text) {
		_, _ = io.WriteString(r.w, v.text[len(r.text):])
	} else { // the text was rewritten: start it again on a new line
		_, _ = io.WriteString(r.w, "\n"+v.text)
	}
	r.text = v.text
	for _, tl := range v.toolCalls {
		if r.toolLines == nil {
			r.toolLines = map[string]bool{}
		}
		if !r.toolLines[tl] {
			r.toolLines[tl] = true
			_, _ = fmt.Fprintf(r.w, "\n%s\n", tl)
		}
	}
}

func (r *appendRenderer) done() {
	if r.last == nil {
		return
	}
	if r.text != "" && !strings.HasSuffix(r.text, "\n") {
		_, _ = io.WriteString(r.w, "\n")
	}
	_, _ = fmt.Fprintln(r.w, viewOf(r.last).status)
}

// liveRenderer redraws the current turn in place on a terminal: it moves
// the cursor up over the block it drew last and clears to the end of the
// screen. A block taller than the terminal cannot be redrawn; from then on
// the text is appended as by appendRenderer.
type liveRenderer struct {
	w             io.Writer
	width, height int
	lines         int // physical lines of the block drawn last
	appending     *appendRenderer
	last          *protocol.Event
}

func (r *liveRenderer) event(raw []byte, ev *protocol.Event) {
	if ev.Kind != protocol.EventSnapshot {
		return
	}
	r.last = ev
	if r.appending != nil {
		r.appending.event(raw, ev)
		return
	}
	v := viewOf(ev)
	block := "assistant> " + v.text + "\n"
	for _, tl := range v.toolCalls {
		block += "  " + tl + "\n"
	}
	block += v.status + "\n"
	n := physicalLines(block, r.width)
	var b strings.Builder
	if r.lines > 0 {
		_, _ = fmt.Fprintf(&b, "\x1b[%dA\r\x1b[J", r.lines) // up over the last block, clear below
	}
	if n >= r.height {
		// Too tall to redraw: keep what is on screen and append from here.
		r.appending = &appendRenderer{w: r.w, text: v.text}
		b.WriteString("assistant> " + v.text)
		_, _ = io.WriteString(r.w, b.String())
		r.lines = 0
		return
	}
	b.WriteString(block)
	_, _ = io.WriteString(r.w, b.String())
	r.lines = n
}

func (r *liveRenderer) done() {
	if r.appending != nil {
		r.appending.done()
	}
}

// physicalLines counts the terminal lines block occupies at width columns
// (one column per rune; wide characters are undercounted).
func physicalLines(block string, width int) int {
	if width < 1 {
		width = 80
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSuffix(block, "\n"), "\n") {
		cols := utf8.RuneCountInString(line)
		n += max(1, (cols+width-1)/width)
	}
	return n
}

// reportHTTPError prints an error response: its JSON error code and
// message when it has one (DESIGN §6 shape), the HTTP status otherwise.
func reportHTTPError(w io.Writer, cmd string, resp *http.Response) {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var body struct {
		Error *protocol.Diagnostic `json:"error"`
	}
	if json.Unmarshal(data, &body) == nil && body.Error != nil && body.Error.Code != "" {
		printDiagnostic(w, fmt.Sprintf("turnctl %s: HTTP %d", cmd, resp.StatusCode), *body.Error)
		return
	}
	_, _ = fmt.Fprintf(w, "turnctl %s: HTTP %s\n", cmd, resp.Status)
}

// printDiagnostic prints "prefix: CODE: message (retryable|not retryable)".
func printDiagnostic(w io.Writer, prefix string, d protocol.Diagnostic) {
	retry := "not retryable"
	if d.Retryable {
		retry = "retryable"
	}
	_, _ = fmt.Fprintf(w, "%s: %s: %s (%s)\n", prefix, d.Code, d.Message, retry)
}

// isTerminal reports whether f is a character device (a terminal).
func isTerminal(f any) bool {
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
