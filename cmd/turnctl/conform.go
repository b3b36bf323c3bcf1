package main

import (
	"bytes"
	"context"
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
	"time"

	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/protocol"
)

func init() {
	commands["conform"] = command{
		summary: "check a deployment (or any server) against the turn protocol, black-box",
		run:     runConform,
	}
}

const conformUsage = `usage: turnctl conform -turn URL -history URL [-artifacts URL] [-token TOKEN | -sigv4] [-trusted-token TOKEN] [-json]

Runs a black-box conformance suite against a turn function and a history
function (a turnstream deployment, the dev server, or another
implementation of AgentsKit Chat's turn protocol v1 and turnstream's
history API) and prints one row per check: pass, fail, or skipped with the
reason. It creates a few sessions of its own (ids starting "conform-") and
never touches others.

What it checks:
  capabilities          GET <turn>/capabilities names agentskit.chat.turn v1; the
                        extensions it lists decide which optional checks run
  stream.headers        a submit answers 200 application/x-ndjson, no-store
  stream.decode         every line decodes as a turn event
  stream.identity       every line names the submitted session and turn
  stream.cursor         a snapshot cursor accepts every snapshot, in order, none twice
  stream.terminal-last  the last line, and only it, is terminal
  turn.complete         the turn ends complete
  replay                the same submit again is 409, in the diagnostic shape
  errors.shape          bad requests get the diagnostic shape, status and code
  errors.no-echo        no error body repeats the markers planted in the request
  history.isomorphism   history returns the live stream's last messages
  snapshot-scope        X-Turnstream-Snapshot-Scope: turn leaves earlier turns out
  submit.concurrent     a second turn while one streams is 409 SESSION_BUSY
  stop                  POST <turn>/stop ends a running turn with a terminal line
  history.pagination    page cursors stay stable while turns are appended
  artifacts.dedupe      PUT keeps the last reference of each entry path (needs
                        -artifacts, and -trusted-token unless the caller is trusted)
  compact               (when advertised) X-Turnstream-Stream-Mode: compact: append
                        lines are unknown event kinds, first and last lines complete
                        snapshots, a compact and a plain cursor end alike
  agui                  (when advertised) POST <turn>/agui answers an AG-UI run: ids of
                        the documented grammar in order, RUN_STARTED to RUN_FINISHED; a
                        resume with Last-Event-ID answers the ended run alike (docs/agui.md)
  multitask.reject      (when listed in capabilities.multitask.policies) a submit with
                        X-Turnstream-Multitask: reject while a turn runs is 409 SESSION_BUSY
  multitask.enqueue     (when listed) enqueue while a turn runs is 202 queued; the queued
                        turn runs after it, followed over its streamUrl, to complete
  multitask.interrupt   (when listed) interrupt stops the running turn (TURN_INTERRUPTED)
                        and the new turn streams to complete
  multitask.rollback    (when listed) as interrupt, and the stopped turn is gone from history
  resume, approvals     run when the capabilities advertise them

Each row is printed as its check ends (the long checks take seconds each).

-token and -sigv4 authenticate as for turnctl chat (a function URL host is
signed automatically). -json prints the rows as one JSON object. Exit status 0 when no check failed, 1 otherwise, 2
for bad usage.
`

// conformOptions are the flags of `turnctl conform`.
type conformOptions struct {
	turnURL, historyURL, artifactsURL string
	auth                              authFlags
	trustedToken                      string
	timeout                           time.Duration
	json                              bool
}

// Check outcomes.
const (
	checkPass = "pass"
	checkFail = "fail"
	checkSkip = "skipped"
)

// checkResult is one row of the conformance table.
type checkResult struct {
	name, outcome, detail string
}

func runConform(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	var opts conformOptions
	fs := flag.NewFlagSet("conform", flag.ContinueOnError)
	fs.StringVar(&opts.turnURL, "turn", "", "turn function URL (required)")
	fs.StringVar(&opts.historyURL, "history", "", "history function URL (required)")
	fs.StringVar(&opts.artifactsURL, "artifacts", "", "artifacts function URL (optional: enables artifacts.dedupe)")
	fs.StringVar(&opts.trustedToken, "trusted-token", "", "bearer token of the trusted host principal for artifacts writes (dev server: dev.host)")
	fs.DurationVar(&opts.timeout, "timeout", 2*time.Minute, "bound on each request, a whole streamed turn included")
	fs.BoolVar(&opts.json, "json", false, `print {"checks":[{"check","result","detail"}],"passed","failed","skipped"} instead of the table`)
	opts.auth.register(fs)
	if status, ok := parseFlags(fs, args, conformUsage, stdout, stderr); !ok {
		return status
	}
	if fs.NArg() != 0 || opts.turnURL == "" || opts.historyURL == "" {
		_, _ = fmt.Fprintln(stderr, "turnctl conform: -turn URL and -history URL are required and no arguments are taken")
		return 2
	}
	for _, u := range []string{opts.turnURL, opts.historyURL, opts.artifactsURL} {
		if u == "" {
			continue
		}
		if p, err := url.Parse(u); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			_, _ = fmt.Fprintln(stderr, "turnctl conform: a URL is not an absolute http(s) URL")
			return 2
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	c, err := newConformer(ctx, opts)
	if err != nil {
		_, _ = fmt.Fprintln(stderr, "turnctl conform:", err)
		return 2
	}
	if !opts.json {
		// Rows as they come: a check against a real model takes seconds.
		printHeader(stdout, opts)
		c.onRow = func(r checkResult) { printRow(stdout, r) }
	}
	results := c.run(ctx)
	if opts.json {
		printJSON(stdout, results)
	} else {
		printSummary(stdout, results)
	}
	for _, r := range results {
		if r.outcome == checkFail {
			return 1
		}
	}
	return 0
}

// conformer runs the checks against one deployment.
type conformer struct {
	opts conformOptions
	// api calls the three functions as the caller (the sessions' owner);
	// trusted writes artifact references (nil without -artifacts); raw
	// sends the requests the client cannot (bad ones, replays) with the
	// caller's credentials.
	api, trusted *client.Client
	raw          *http.Client
	marker       string
	caps         *client.Capabilities
	results      []checkResult
	// onRow, when set, is called with each row as it is recorded.
	onRow func(checkResult)
}

func newConformer(ctx context.Context, opts conformOptions) (*conformer, error) {
	c := &conformer{opts: opts, marker: "cfmk" + randomHex(8)}
	u := urls{turn: opts.turnURL, history: opts.historyURL, artifacts: opts.artifactsURL}
	authn, err := opts.auth.authenticator(ctx, u.turn)
	if err != nil {
		return nil, err
	}
	c.raw = &http.Client{Transport: authTransport{auth: authn, base: baseTransport}}
	// One stream is checked as it is: no resume.
	newClient := func(authn client.Authenticator) (*client.Client, error) {
		return client.New(client.Options{TurnURL: u.turn, HistoryURL: u.history, ArtifactsURL: u.artifacts,
			HTTPClient: &http.Client{Transport: baseTransport}, Auth: authn, Resume: client.ResumeOff})
	}
	if c.api, err = newClient(authn); err != nil {
		return nil, err
	}
	if opts.artifactsURL != "" {
		trusted := authn
		if opts.trustedToken != "" {
			trusted = client.Bearer(opts.trustedToken)
		}
		if c.trusted, err = newClient(trusted); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// authTransport authenticates the raw requests as the client does.
type authTransport struct {
	auth client.Authenticator
	base http.RoundTripper
}

func (t authTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if t.auth == nil {
		return t.base.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	if err := t.auth.Authenticate(r); err != nil {
		return nil, err
	}
	return t.base.RoundTrip(r)
}

func (c *conformer) record(name, outcome, format string, args ...any) {
	c.add(checkResult{name: name, outcome: outcome, detail: escapeText(fmt.Sprintf(format, args...), false)})
}

// add records one row (its detail escaped already).
func (c *conformer) add(r checkResult) {
	c.results = append(c.results, r)
	if c.onRow != nil {
		c.onRow(r)
	}
}

// problems collects the failures of one check.
type problems []string

func (p *problems) addf(format string, args ...any) { *p = append(*p, fmt.Sprintf(format, args...)) }

// report records name as passed with passDetail, or failed with the first
// problems.
func (c *conformer) report(name string, p problems, passDetail string) {
	if len(p) == 0 {
		c.record(name, checkPass, "%s", passDetail)
		return
	}
	detail := strings.Join(p[:min(len(p), 3)], "; ")
	if len(p) > 3 {
		detail += fmt.Sprintf("; and %d more", len(p)-3)
	}
	c.record(name, checkFail, "%s", detail)
}

// run runs every check in order and returns the table rows.
func (c *conformer) run(ctx context.Context) []checkResult {
	c.checkCapabilities(ctx)
	first := c.checkStream(ctx)
	c.checkReplay(ctx, first)
	c.checkErrors(ctx)
	c.checkIsomorphism(ctx, first)
	c.checkSnapshotScope(ctx, first)
	c.checkConcurrent(ctx)
	c.checkStop(ctx)
	c.checkPagination(ctx)
	c.checkArtifacts(ctx, first)
	c.checkCompact(ctx)
	c.add(conformAGUI(ctx, c.raw, c.opts.turnURL, c.caps.Has("agui")))
	multitaskChecks{c}.checkMultitask(ctx)
	for _, ext := range []string{"resume", "approvals"} {
		if c.caps.Has(ext) {
			c.record(ext, checkSkip, "advertised by /capabilities; this turnctl has no check for it yet")
		} else {
			c.record(ext, checkSkip, "not advertised by /capabilities")
		}
	}
	return c.results
}

// nameWidth and resultWidth are the widths of the table's first two
// columns: the longest check name and result, and two spaces.
const (
	nameWidth   = len("stream.terminal-last") + 2
	resultWidth = len(checkSkip) + 2
)

// printHeader writes the run's first lines and the table's header.
func printHeader(w io.Writer, opts conformOptions) {
	_, _ = fmt.Fprintf(w, "turnctl conform: turn %s, history %s\n\n", escapeText(opts.turnURL, false), escapeText(opts.historyURL, false))
	_, _ = fmt.Fprintf(w, "%-*s%-*s%s\n", nameWidth, "CHECK", resultWidth, "RESULT", "DETAIL")
}

// printRow writes one row of the table.
func printRow(w io.Writer, r checkResult) {
	_, _ = fmt.Fprintf(w, "%-*s%-*s%s\n", nameWidth, r.name, resultWidth, r.outcome, r.detail)
}

// printSummary writes the summary line after the table.
func printSummary(w io.Writer, results []checkResult) {
	counts := map[string]int{}
	for _, r := range results {
		counts[r.outcome]++
	}
	_, _ = fmt.Fprintf(w, "\n%d passed, %d failed, %d skipped\n", counts[checkPass], counts[checkFail], counts[checkSkip])
}

// printJSON writes the results as one JSON object (details escaped as in
// the table).
func printJSON(w io.Writer, results []checkResult) {
	type row struct {
		Check  string `json:"check"`
		Result string `json:"result"`
		Detail string `json:"detail"`
	}
	out := struct {
		Checks  []row `json:"checks"`
		Passed  int   `json:"passed"`
		Failed  int   `json:"failed"`
		Skipped int   `json:"skipped"`
	}{Checks: []row{}}
	for _, r := range results {
		out.Checks = append(out.Checks, row{r.name, r.outcome, r.detail})
		switch r.outcome {
		case checkPass:
			out.Passed++
		case checkFail:
			out.Failed++
		default:
			out.Skipped++
		}
	}
	b, _ := json.Marshal(out) // plain strings and ints: cannot fail
	_, _ = w.Write(append(b, '\n'))
}

func (c *conformer) checkCapabilities(ctx context.Context) {
	caps, err := c.api.Capabilities(ctx)
	var e *client.Error
	switch {
	case errors.As(err, &e) && (e.Status == http.StatusNotFound || e.Status == http.StatusMethodNotAllowed):
		c.record("capabilities", checkSkip, "GET /capabilities answered %d: optional checks are skipped", e.Status)
		return
	case errors.As(err, &e) && e.Kind == client.KindHTTP:
		c.record("capabilities", checkFail, "GET /capabilities answered %d", e.Status)
		return
	case errors.As(err, &e) && e.Kind == client.KindInvalidResponse:
		c.record("capabilities", checkFail, "GET /capabilities: not the capabilities JSON")
		return
	case err != nil:
		c.record("capabilities", checkFail, "GET /capabilities: %v", err)
		return
	}
	for _, p := range caps.Protocols {
		if p.Protocol == protocol.TurnProtocol && slices.Contains(p.Versions, protocol.TurnVersion) {
			c.caps = caps
			c.record("capabilities", checkPass, "%s v%d; extensions: %s", protocol.TurnProtocol, protocol.TurnVersion, strings.Join(caps.Extensions, ", "))
			return
		}
	}
	c.record("capabilities", checkFail, "protocols do not include %s v%d", protocol.TurnProtocol, protocol.TurnVersion)
}

// submitted is one submitted turn and what its stream held.
type submitted struct {
	sessionID, turnID string
	// sub is what was submitted (its event id and time fixed, so that it
	// can be sent again as it was).
	sub         client.Submit
	status      int
	header      http.Header
	errBody     []byte
	lines       [][]byte
	events      []*protocol.Event
	undecodable []int // indexes of lines that did not decode
	readErr     error
}

// last returns the last decoded event, or nil.
func (s *submitted) last() *protocol.Event {
	if len(s.events) == 0 || s.events[len(s.events)-1] == nil {
		return nil
	}
	return s.events[len(s.events)-1]
}

func newSessionID() string { return "conform-" + randomHex(8) }

// newSubmit is a submit of input to a new turn of sessionID, its event
// id and time fixed.
func newSubmit(sessionID, input string) client.Submit {
	return client.Submit{SessionID: sessionID, TurnID: "turn-" + randomHex(8), EventID: "event-" + randomHex(8),
		EmittedAt: protocol.FormatTime(time.Now()), Input: input}
}

// submitBody encodes a client.turn.submit of input.
func submitBody(sessionID, turnID, input string) []byte {
	s := newSubmit(sessionID, input)
	s.TurnID = turnID
	b, _ := client.SubmitBody(s) // SafeIds: cannot fail
	return b
}

// shortInput is the input of short turns; longInput asks a model (and
// makes the echo model take a while) for a long reply, so that the turn is
// still streaming when the concurrent submit and the stop are sent.
const shortInput = "Reply with one short sentence."

var longInput = strings.Repeat("Count slowly from one to three hundred, one number in words per line. ", 8)

// submit posts a turn and reads its stream to the end. onLine, when not
// nil, is called after each line with its index, before the next is read.
func (c *conformer) submit(ctx context.Context, sessionID, input string, onLine func(i int, ev *protocol.Event)) *submitted {
	sub := newSubmit(sessionID, input)
	s := &submitted{sessionID: sessionID, turnID: sub.TurnID, sub: sub}
	c.stream(ctx, s, onLine)
	return s
}

// stream submits s.sub and fills in s with every line of its stream, as
// received: the client's cursor is not used, so that every check sees
// what the server sent.
func (c *conformer) stream(ctx context.Context, s *submitted, onLine func(i int, ev *protocol.Event)) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.timeout)
	defer cancel()
	sub := s.sub
	sub.OnLine = func(raw []byte) {
		line := append([]byte(nil), raw...)
		ev, diag := protocol.DecodeTurnEvent(line)
		if diag != nil {
			s.undecodable = append(s.undecodable, len(s.lines))
			ev = nil
		}
		s.lines = append(s.lines, line)
		s.events = append(s.events, ev)
		if onLine != nil {
			onLine(len(s.lines)-1, ev)
		}
	}
	st, err := c.api.Submit(ctx, sub)
	var e *client.Error
	switch {
	case errors.As(err, &e) && e.Kind == client.KindHTTP:
		s.status, s.header, s.errBody = e.Status, e.Header, e.Body
		return
	case err != nil:
		s.readErr = err
		return
	}
	defer func() { _ = st.Close() }()
	s.status, s.header = http.StatusOK, st.Header()
	// What the lines hold is judged by the checks; only a failed read or
	// the end of the time bound is an error here.
	if _, err := st.Drain(); errors.As(err, &e) && e.Kind == client.KindNetwork || ctx.Err() != nil {
		s.readErr = err
	}
}

// isTerminalEvent reports whether ev ends a stream: a diagnostic, or a snapshot
// whose status is complete or error.
func isTerminalEvent(ev *protocol.Event) bool {
	if ev == nil {
		return false
	}
	if ev.Kind == protocol.EventDiagnostic {
		return true
	}
	return ev.Kind == protocol.EventSnapshot && (ev.Snapshot.Status == protocol.StatusComplete || ev.Snapshot.Status == protocol.StatusError)
}

// streamFindings are the problems examineStream finds in one 200 stream,
// by the check they belong to.
type streamFindings struct {
	headers, decode, identity, cursor, terminal problems
}

// examineStream checks one 200 stream: headers, decoding, identity, the
// snapshot cursor and the terminal line.
func examineStream(s *submitted) streamFindings {
	var f streamFindings
	if s.readErr != nil {
		f.terminal.addf("reading the stream: %v", s.readErr)
	}
	if ct := s.header.Get("Content-Type"); !strings.HasPrefix(strings.ToLower(ct), "application/x-ndjson") {
		f.headers.addf("Content-Type %q, want application/x-ndjson", ct)
	}
	if cc := s.header.Get("Cache-Control"); !strings.Contains(strings.ToLower(cc), "no-store") {
		f.headers.addf("Cache-Control %q, want no-store", cc)
	}
	for _, i := range s.undecodable {
		f.decode.addf("line %d does not decode as a turn event", i+1)
	}
	cursor, err := protocol.NewSnapshotCursor(s.sessionID)
	if err != nil {
		f.cursor.addf("cursor: %v", err)
		return f
	}
	for i, ev := range s.events {
		if ev == nil {
			continue
		}
		if ev.SessionID != s.sessionID || ev.TurnID != s.turnID {
			f.identity.addf("line %d names session %q turn %q", i+1, ev.SessionID, ev.TurnID)
		}
		if ev.Kind == protocol.EventSubmit {
			f.decode.addf("line %d is a client.turn.submit", i+1)
		}
		if ev.Kind == protocol.EventSnapshot {
			if !cursor.Apply(s.lines[i]) {
				f.cursor.addf("line %d (sequence %d) is not accepted: not newer than the last snapshot", i+1, ev.Sequence)
			} else if cursor.Apply(s.lines[i]) {
				f.cursor.addf("line %d is accepted twice", i+1)
			}
		}
		if isTerminalEvent(ev) && i != len(s.events)-1 {
			f.terminal.addf("line %d is terminal but %d more follow", i+1, len(s.events)-1-i)
		}
	}
	switch {
	case len(s.lines) == 0:
		f.terminal.addf("the stream has no lines")
	case !isTerminalEvent(s.last()):
		f.terminal.addf("the last line is not terminal (a complete or error snapshot, or a diagnostic)")
	}
	return f
}

// do sends one raw request with the caller's credentials and reads the
// whole answer (up to 1 MiB); extra are extra request headers.
func (c *conformer) do(ctx context.Context, method, target string, body []byte, contentType string, extra http.Header) (int, http.Header, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return 0, nil, nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for k, v := range extra {
		req.Header[k] = v
	}
	resp, err := c.raw.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, resp.Header, data, err
}

// turnPath and historyPath join a route to a base URL.
func (c *conformer) turnPath(route string) string    { return joinURL(c.opts.turnURL, route) }
func (c *conformer) historyPath(route string) string { return joinURL(c.opts.historyURL, route) }

func joinURL(base, route string) string {
	u, err := url.Parse(base)
	if err != nil {
		return strings.TrimSuffix(base, "/") + route
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + route
	u.RawQuery = ""
	return u.String()
}
