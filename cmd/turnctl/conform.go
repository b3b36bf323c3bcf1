package main

import (
	"bufio"
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
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

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
  resume, approvals, compact  run when the capabilities advertise them

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
	results := c.run(ctx)
	if opts.json {
		printJSON(stdout, results)
	} else {
		printResults(stdout, opts, results)
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
	opts                   conformOptions
	turn, history, trusted *http.Client
	// artifacts reads artifact references as the caller (the session's
	// owner); trusted writes them.
	artifacts *http.Client
	marker    string
	caps      *capabilitiesDoc
	results   []checkResult
}

// capabilitiesDoc is the part of GET /capabilities that conform reads.
type capabilitiesDoc struct {
	Protocols []struct {
		Protocol string `json:"protocol"`
		Versions []int  `json:"versions"`
	} `json:"protocols"`
	Extensions []string `json:"extensions"`
}

func (d *capabilitiesDoc) has(ext string) bool { return d != nil && slices.Contains(d.Extensions, ext) }

func newConformer(ctx context.Context, opts conformOptions) (*conformer, error) {
	c := &conformer{opts: opts, marker: "cfmk" + randomHex(8)}
	var err error
	if c.turn, err = opts.auth.client(ctx, opts.turnURL); err != nil {
		return nil, err
	}
	if c.history, err = opts.auth.client(ctx, opts.historyURL); err != nil {
		return nil, err
	}
	if opts.artifactsURL != "" {
		trusted := opts.auth
		if opts.trustedToken != "" {
			trusted = authFlags{token: opts.trustedToken}
		}
		if c.trusted, err = trusted.client(ctx, opts.artifactsURL); err != nil {
			return nil, err
		}
		if c.artifacts, err = opts.auth.client(ctx, opts.artifactsURL); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (c *conformer) record(name, outcome, format string, args ...any) {
	c.results = append(c.results, checkResult{name: name, outcome: outcome, detail: escapeText(fmt.Sprintf(format, args...), false)})
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
	for _, ext := range []string{"resume", "approvals", "compact"} {
		if c.caps.has(ext) {
			c.record(ext, checkSkip, "advertised by /capabilities; this turnctl has no check for it yet")
		} else {
			c.record(ext, checkSkip, "not advertised by /capabilities")
		}
	}
	return c.results
}

// printResults writes the table and a summary line.
func printResults(w io.Writer, opts conformOptions, results []checkResult) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "turnctl conform: turn %s, history %s\n\n", escapeText(opts.turnURL, false), escapeText(opts.historyURL, false))
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "CHECK\tRESULT\tDETAIL")
	counts := map[string]int{}
	for _, r := range results {
		counts[r.outcome]++
		_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\n", r.name, r.outcome, r.detail)
	}
	_ = tw.Flush()
	fmt.Fprintf(&b, "\n%d passed, %d failed, %d skipped\n", counts[checkPass], counts[checkFail], counts[checkSkip])
	_, _ = w.Write(b.Bytes())
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
	status, _, body, err := c.do(ctx, c.turn, http.MethodGet, c.turnPath("/capabilities"), nil, "")
	switch {
	case err != nil:
		c.record("capabilities", checkFail, "GET /capabilities: %v", err)
		return
	case status == http.StatusNotFound || status == http.StatusMethodNotAllowed:
		c.record("capabilities", checkSkip, "GET /capabilities answered %d: optional checks are skipped", status)
		return
	case status != http.StatusOK:
		c.record("capabilities", checkFail, "GET /capabilities answered %d", status)
		return
	}
	var doc capabilitiesDoc
	if err := json.Unmarshal(body, &doc); err != nil {
		c.record("capabilities", checkFail, "GET /capabilities: not the capabilities JSON")
		return
	}
	for _, p := range doc.Protocols {
		if p.Protocol == protocol.TurnProtocol && slices.Contains(p.Versions, protocol.TurnVersion) {
			c.caps = &doc
			c.record("capabilities", checkPass, "%s v%d; extensions: %s", protocol.TurnProtocol, protocol.TurnVersion, strings.Join(doc.Extensions, ", "))
			return
		}
	}
	c.record("capabilities", checkFail, "protocols do not include %s v%d", protocol.TurnProtocol, protocol.TurnVersion)
}

// submitted is one submitted turn and what its stream held.
type submitted struct {
	sessionID, turnID string
	body              []byte
	header0           http.Header // extra request headers
	status            int
	header            http.Header
	errBody           []byte
	lines             [][]byte
	events            []*protocol.Event
	undecodable       []int // indexes of lines that did not decode
	readErr           error
}

// last returns the last decoded event, or nil.
func (s *submitted) last() *protocol.Event {
	if len(s.events) == 0 || s.events[len(s.events)-1] == nil {
		return nil
	}
	return s.events[len(s.events)-1]
}

func newSessionID() string { return "conform-" + randomHex(8) }

// submitBody encodes a client.turn.submit of input.
func submitBody(sessionID, turnID, input string) []byte {
	b, _ := json.Marshal(map[string]any{
		"protocol": protocol.TurnProtocol, "version": protocol.TurnVersion, "eventId": "event-" + randomHex(8),
		"sessionId": sessionID, "turnId": turnID, "sequence": 0, "emittedAt": protocol.FormatTime(time.Now()),
		"event": protocol.EventSubmit, "payload": map[string]string{"input": input},
	})
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
	s := &submitted{sessionID: sessionID, turnID: "turn-" + randomHex(8)}
	s.body = submitBody(sessionID, s.turnID, input)
	c.stream(ctx, s, onLine)
	return s
}

// stream posts s.body and fills in s.
func (c *conformer) stream(ctx context.Context, s *submitted, onLine func(i int, ev *protocol.Event)) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.opts.turnURL, bytes.NewReader(s.body))
	if err != nil {
		s.readErr = err
		return
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range s.header0 {
		req.Header[k] = v
	}
	resp, err := c.turn.Do(req)
	if err != nil {
		s.readErr = err
		return
	}
	defer func() { _ = resp.Body.Close() }()
	s.status, s.header = resp.StatusCode, resp.Header
	if resp.StatusCode != http.StatusOK {
		s.errBody, _ = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), maxLineBytes)
	for sc.Scan() {
		line := append([]byte(nil), sc.Bytes()...)
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
	s.readErr = sc.Err()
}

// isTerminal reports whether ev ends a stream: a diagnostic, or a snapshot
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

// streamProblems checks one 200 stream: decoding, identity, the snapshot
// cursor and the terminal line. Each kind of problem goes to its check.
type streamFindings struct {
	headers, decode, identity, cursor, terminal problems
}

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

// checkStream submits a first turn and checks its stream. It returns the
// turn for the checks that follow (nil when the submit failed).
func (c *conformer) checkStream(ctx context.Context) *submitted {
	s := c.submit(ctx, newSessionID(), shortInput, nil)
	names := []string{"stream.headers", "stream.decode", "stream.identity", "stream.cursor", "stream.terminal-last", "turn.complete"}
	if s.status != http.StatusOK {
		why := fmt.Sprintf("the submit answered %d %s", s.status, errorCode(s.errBody))
		if s.readErr != nil {
			why = fmt.Sprintf("the submit failed: %v", s.readErr)
		}
		c.record(names[0], checkFail, "%s", why)
		for _, n := range names[1:] {
			c.record(n, checkSkip, "no stream: %s", why)
		}
		return nil
	}
	f := examineStream(s)
	snapshots := 0
	for _, ev := range s.events {
		if ev != nil && ev.Kind == protocol.EventSnapshot {
			snapshots++
		}
	}
	c.report("stream.headers", f.headers, "200 "+s.header.Get("Content-Type"))
	c.report("stream.decode", f.decode, fmt.Sprintf("%d lines", len(s.lines)))
	c.report("stream.identity", f.identity, "session "+s.sessionID)
	c.report("stream.cursor", f.cursor, fmt.Sprintf("%d snapshots, sequences strictly increasing", snapshots))
	c.report("stream.terminal-last", f.terminal, "the last line is terminal")
	switch last := s.last(); {
	case last == nil:
		c.record("turn.complete", checkFail, "no decodable last line")
	case last.Kind == protocol.EventSnapshot && last.Snapshot.Status == protocol.StatusComplete:
		c.record("turn.complete", checkPass, "complete, %d messages", len(last.Snapshot.Messages))
	case last.Kind == protocol.EventSnapshot && last.Snapshot.Error != nil:
		c.record("turn.complete", checkFail, "the turn ended %s: %s", last.Snapshot.Status, last.Snapshot.Error.Code)
	case last.Kind == protocol.EventDiagnostic:
		c.record("turn.complete", checkFail, "the stream ended with diagnostic %s", last.Diagnostic.Code)
	default:
		c.record("turn.complete", checkFail, "the turn ended %s", last.Kind)
	}
	return s
}

// checkReplay submits the first turn's body again.
func (c *conformer) checkReplay(ctx context.Context, first *submitted) {
	if first == nil || first.status != http.StatusOK {
		c.record("replay", checkSkip, "no first turn")
		return
	}
	again := &submitted{sessionID: first.sessionID, turnID: first.turnID, body: first.body}
	c.stream(ctx, again, nil)
	var p problems
	switch {
	case again.readErr != nil && again.status == 0:
		p.addf("the replay failed: %v", again.readErr)
	case again.status != http.StatusConflict:
		p.addf("the replay answered %d, want 409", again.status)
	default:
		p = append(p, errorBodyProblems(again.header, again.errBody, []string{protocol.CodeTurnAlreadyCompleted, protocol.CodeSessionBusy})...)
	}
	c.report("replay", p, "409 "+errorCode(again.errBody))
}

// errorCase is one bad request and the error it must get.
type errorCase struct {
	what        string
	client      *http.Client
	method, url string
	contentType string
	header      http.Header
	body        []byte
	status      int
	codes       []string
}

// checkErrors sends bad requests carrying planted markers and checks each
// answer's shape, status and code, and that no body repeats a marker.
func (c *conformer) checkErrors(ctx context.Context) {
	m := c.marker
	sessionID := newSessionID()
	validSubmit := submitBody(sessionID, "turn-"+randomHex(8), "x")
	cases := []errorCase{
		{what: "GET on the submit route", client: c.turn, method: http.MethodGet, url: c.opts.turnURL + "?" + m + "=" + m,
			status: http.StatusMethodNotAllowed, codes: []string{protocol.CodeRequestMethodNotAllowed}},
		{what: "text/plain submit", client: c.turn, method: http.MethodPost, url: c.opts.turnURL, contentType: "text/plain",
			body: []byte(`{"note":"` + m + `"}`), status: http.StatusUnsupportedMediaType, codes: []string{protocol.CodeRequestUnsupportedMediaType}},
		{what: "invalid JSON", client: c.turn, method: http.MethodPost, url: c.opts.turnURL, contentType: "application/json",
			body: []byte(`{"` + m + `": [`), status: http.StatusBadRequest, codes: []string{protocol.CodeRequestInvalidJSON}},
		{what: "an invalid event", client: c.turn, method: http.MethodPost, url: c.opts.turnURL, contentType: "application/json",
			body:   bytes.Replace(bytes.Replace(validSubmit, []byte(`"sequence":0`), []byte(`"sequence":"`+m+`"`), 1), []byte(`"input":"x"`), []byte(`"input":"`+m+`"`), 1),
			status: http.StatusBadRequest, codes: []string{protocol.CodeRequestInvalidEvent}},
		{what: "a submit of version 2", client: c.turn, method: http.MethodPost, url: c.opts.turnURL, contentType: "application/json",
			body:   bytes.Replace(bytes.Replace(validSubmit, []byte(`"version":1`), []byte(`"version":2`), 1), []byte(`"input":"x"`), []byte(`"input":"`+m+`"`), 1),
			status: http.StatusBadRequest, codes: []string{protocol.CodeRequestInvalidEvent}},
		{what: "history of an unknown session", client: c.history, method: http.MethodGet,
			url:    c.historyPath("/sessions/" + m + "/messages"),
			status: http.StatusNotFound, codes: []string{protocol.CodeSessionNotFound}},
		{what: "a tampered page cursor", client: c.history, method: http.MethodGet,
			url:    c.historyPath("/sessions/"+sessionID+"/turns") + "?cursor=" + m,
			status: http.StatusBadRequest, codes: []string{protocol.CodeRequestInvalidCursor, protocol.CodeSessionNotFound}},
		{what: "a bad page limit", client: c.history, method: http.MethodGet,
			url:    c.historyPath("/sessions/"+sessionID+"/turns") + "?limit=" + m,
			status: http.StatusBadRequest, codes: []string{protocol.CodeRequestInvalidQuery, protocol.CodeSessionNotFound}},
	}
	if c.caps.has("snapshotScope") {
		cases = append(cases, errorCase{what: "an unknown snapshot scope", client: c.turn, method: http.MethodPost, url: c.opts.turnURL,
			contentType: "application/json", header: http.Header{snapshotScopeHeader: {m}}, body: validSubmit,
			status: http.StatusBadRequest, codes: []string{protocol.CodeRequestInvalidHeader}})
	}
	if c.caps.has("stop") {
		cases = append(cases, errorCase{what: "a stop of no turn", client: c.turn, method: http.MethodPost, url: c.turnPath("/stop"),
			contentType: "application/json", body: []byte(`{"sessionId":"` + m + `","turnId":"` + m + `"}`),
			status: http.StatusNotFound, codes: []string{protocol.CodeSessionNotFound, protocol.CodeTurnNotActive, protocol.CodeTurnNotFound}})
	}
	var shape, echo problems
	for _, ec := range cases {
		status, header, body, err := c.doWith(ctx, ec.client, ec.method, ec.url, ec.body, ec.contentType, ec.header)
		if err != nil {
			shape.addf("%s: %v", ec.what, err)
			continue
		}
		// A tampered cursor or a bad limit on an unknown session may be
		// answered 404 first; either is a refusal in the right shape.
		wantStatus := status == ec.status || (status == http.StatusNotFound && slices.Contains(ec.codes, protocol.CodeSessionNotFound))
		if !wantStatus {
			shape.addf("%s: status %d, want %d", ec.what, status, ec.status)
		}
		for _, pr := range errorBodyProblems(header, body, ec.codes) {
			shape.addf("%s: %s", ec.what, pr)
		}
		if bytes.Contains(body, []byte(m)) || headerContains(header, m) {
			echo.addf("%s: the answer repeats the planted marker", ec.what)
		}
	}
	c.report("errors.shape", shape, fmt.Sprintf("%d bad requests refused in the diagnostic shape", len(cases)))
	c.report("errors.no-echo", echo, fmt.Sprintf("no answer repeats the marker planted in %d requests", len(cases)))
}

func headerContains(h http.Header, s string) bool {
	for _, vs := range h {
		for _, v := range vs {
			if strings.Contains(v, s) {
				return true
			}
		}
	}
	return false
}

var diagnosticCode = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

// errorBodyProblems checks an error answer: a JSON content type,
// Cache-Control no-store and exactly {"error":{"version":1,"code","message","retryable"}} with a
// protocol code among codes (any code when codes is empty).
func errorBodyProblems(header http.Header, body []byte, codes []string) problems {
	var p problems
	if ct := strings.ToLower(header.Get("Content-Type")); !strings.HasPrefix(ct, "application/json") {
		p.addf("Content-Type %q, want application/json", header.Get("Content-Type"))
	}
	if cc := header.Get("Cache-Control"); !strings.Contains(strings.ToLower(cc), "no-store") {
		p.addf("Cache-Control %q, want no-store", cc)
	}
	var outer map[string]json.RawMessage
	if err := json.Unmarshal(body, &outer); err != nil || len(outer) != 1 || outer["error"] == nil {
		p.addf("body is not {\"error\":{...}}")
		return p
	}
	var d map[string]json.RawMessage
	if err := json.Unmarshal(outer["error"], &d); err != nil {
		p.addf("error is not an object")
		return p
	}
	var version int
	var code, message string
	var retryable bool
	if json.Unmarshal(d["version"], &version) != nil || version != 1 {
		p.addf("error.version is not 1")
	}
	if json.Unmarshal(d["code"], &code) != nil || !diagnosticCode.MatchString(code) {
		p.addf("error.code is not a diagnostic code")
	} else if len(codes) > 0 && !slices.Contains(codes, code) {
		p.addf("code %s, want %s", code, strings.Join(codes, " or "))
	}
	if json.Unmarshal(d["message"], &message) != nil || message == "" {
		p.addf("error.message is not a non-empty string")
	}
	if d["retryable"] == nil || json.Unmarshal(d["retryable"], &retryable) != nil {
		p.addf("error.retryable is not a boolean")
	} else if want, known := retryableOf(code); known && retryable != want {
		p.addf("%s has retryable %v, want %v", code, retryable, want)
	}
	for k := range d {
		if k != "version" && k != "code" && k != "message" && k != "retryable" {
			p.addf("error has an extra member %q", k)
		}
	}
	return p
}

// retryableOf returns the protocol's retryable value for code.
func retryableOf(code string) (retryable, known bool) {
	if !diagnosticCode.MatchString(code) {
		return false, false
	}
	d := protocol.NewDiagnostic(code) // an unknown code yields SERVER_INTERNAL's
	if d.Code != code {
		return false, false
	}
	return d.Retryable, true
}

// errorCode returns the code of an error body, or "" when it has none.
func errorCode(body []byte) string {
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil {
		return ""
	}
	return e.Error.Code
}

// checkIsomorphism compares the first turn's last live snapshot with what
// the history function returns for its session.
func (c *conformer) checkIsomorphism(ctx context.Context, first *submitted) {
	if first == nil || first.last() == nil || first.last().Kind != protocol.EventSnapshot {
		c.record("history.isomorphism", checkSkip, "no first turn ending in a snapshot")
		return
	}
	msgs, err := c.historyMessages(ctx, first.sessionID)
	if err != nil {
		c.record("history.isomorphism", checkFail, "%v", err)
		return
	}
	c.report("history.isomorphism", compareMessages(first.last().Snapshot.Messages, msgs),
		fmt.Sprintf("%d messages, the same ids, roles, content, parts and tool calls", len(msgs)))
}

// compareMessages reports how history's messages differ from the live
// ones. Metadata is not compared: history adds the turn's artifact
// references there.
func compareMessages(live, stored []protocol.Message) problems {
	var p problems
	if len(live) != len(stored) {
		p.addf("history has %d messages, the live stream %d", len(stored), len(live))
		return p
	}
	for i := range live {
		a, b := live[i], stored[i]
		a.Metadata, b.Metadata = nil, nil
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if !bytes.Equal(ja, jb) {
			p.addf("message %d (%s) differs from the live one", i, live[i].ID)
		}
	}
	return p
}

// historyMessages reads all of a session's messages, oldest first.
func (c *conformer) historyMessages(ctx context.Context, sessionID string) ([]protocol.Message, error) {
	var all []protocol.Message
	cursor := ""
	for range 1000 {
		q := url.Values{"order": {"asc"}, "limit": {"100"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		status, _, body, err := c.do(ctx, c.history, http.MethodGet, c.historyPath("/sessions/"+sessionID+"/messages")+"?"+q.Encode(), nil, "")
		if err != nil {
			return nil, fmt.Errorf("GET messages: %w", err)
		}
		if status != http.StatusOK {
			return nil, fmt.Errorf("GET messages answered %d %s", status, errorCode(body))
		}
		var page struct {
			Messages   json.RawMessage `json:"messages"`
			NextCursor *string         `json:"nextCursor"`
			HasMore    bool            `json:"hasMore"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			return nil, errors.New("GET messages: not a messages page")
		}
		msgs, err := protocol.DecodeMessages(page.Messages)
		if err != nil {
			return nil, errors.New("GET messages: the messages are not canonical message records")
		}
		all = append(all, msgs...)
		if !page.HasMore || page.NextCursor == nil {
			return all, nil
		}
		cursor = *page.NextCursor
	}
	return nil, errors.New("GET messages: more than 1000 pages")
}

// snapshotScopeHeader is turnstream's request header choosing what a
// snapshot carries: the whole session (default) or the current turn.
const snapshotScopeHeader = "X-Turnstream-Snapshot-Scope"

// checkSnapshotScope submits a second turn to the first turn's session
// asking for turn-scoped snapshots: none may carry the first turn's
// messages, every one must carry the new turn's input.
func (c *conformer) checkSnapshotScope(ctx context.Context, first *submitted) {
	switch {
	case !c.caps.has("snapshotScope"):
		c.record("snapshot-scope", checkSkip, "not advertised by /capabilities")
		return
	case first == nil || first.last() == nil || first.last().Kind != protocol.EventSnapshot:
		c.record("snapshot-scope", checkSkip, "no first turn ending in a snapshot")
		return
	}
	earlier := map[string]bool{}
	for _, m := range first.last().Snapshot.Messages {
		earlier[m.ID] = true
	}
	s := &submitted{sessionID: first.sessionID, turnID: "turn-" + randomHex(8), header0: http.Header{snapshotScopeHeader: {"turn"}}}
	s.body = submitBody(s.sessionID, s.turnID, shortInput)
	c.stream(ctx, s, nil)
	var p problems
	if s.status != http.StatusOK {
		c.record("snapshot-scope", checkFail, "a turn-scoped submit answered %d %s", s.status, errorCode(s.errBody))
		return
	}
	snapshots := 0
	for i, ev := range s.events {
		if ev == nil || ev.Kind != protocol.EventSnapshot {
			continue
		}
		snapshots++
		hasInput := false
		for _, m := range ev.Snapshot.Messages {
			if earlier[m.ID] {
				p.addf("line %d carries message %s of the earlier turn", i+1, m.ID)
				break
			}
			hasInput = hasInput || (m.Role == protocol.RoleUser && m.Content == shortInput)
		}
		if !hasInput {
			p.addf("line %d lacks the turn's own input", i+1)
		}
	}
	if snapshots == 0 {
		p.addf("no snapshot")
	}
	c.report("snapshot-scope", p, fmt.Sprintf("%d turn-scoped snapshots, none with the earlier turn", snapshots))
}

// checkConcurrent submits a second turn while a long one streams.
func (c *conformer) checkConcurrent(ctx context.Context) {
	sessionID := newSessionID()
	var second *submitted
	var endedFirst bool
	long := c.submit(ctx, sessionID, longInput, func(i int, ev *protocol.Event) {
		if second != nil || endedFirst {
			return
		}
		if isTerminalEvent(ev) {
			endedFirst = true
			return
		}
		second = c.submit(ctx, sessionID, shortInput, nil)
	})
	switch {
	case long.status != http.StatusOK:
		c.record("submit.concurrent", checkFail, "the long turn answered %d %s", long.status, errorCode(long.errBody))
		return
	case second == nil:
		c.record("submit.concurrent", checkSkip, "the long turn ended in its first line; nothing ran concurrently")
		return
	}
	var p problems
	if second.status != http.StatusConflict {
		p.addf("a second turn while one streams answered %d, want 409", second.status)
	} else {
		p = append(p, errorBodyProblems(second.header, second.errBody, []string{protocol.CodeSessionBusy})...)
	}
	f := examineStream(long)
	p = append(p, f.terminal...)
	c.report("submit.concurrent", p, "409 SESSION_BUSY while the first turn streamed")
}

// checkStop stops a long turn once it streams.
func (c *conformer) checkStop(ctx context.Context) {
	if !c.caps.has("stop") {
		c.record("stop", checkSkip, "not advertised by /capabilities")
		return
	}
	sessionID := newSessionID()
	var stopStatus int
	var stopBody []byte
	var stopErr error
	sent := false
	long := &submitted{sessionID: sessionID, turnID: "turn-" + randomHex(8)}
	long.body = submitBody(sessionID, long.turnID, longInput)
	c.stream(ctx, long, func(i int, ev *protocol.Event) {
		if sent || isTerminalEvent(ev) {
			return
		}
		sent = true
		body, _ := json.Marshal(map[string]string{"sessionId": sessionID, "turnId": long.turnID})
		stopStatus, _, stopBody, stopErr = c.do(ctx, c.turn, http.MethodPost, c.turnPath("/stop"), body, "application/json")
	})
	var p problems
	switch {
	case long.status != http.StatusOK:
		c.record("stop", checkFail, "the long turn answered %d %s", long.status, errorCode(long.errBody))
		return
	case !sent:
		c.record("stop", checkSkip, "the long turn ended in its first line; nothing to stop")
		return
	case stopErr != nil:
		p.addf("POST /stop: %v", stopErr)
	case stopStatus == http.StatusConflict && errorCode(stopBody) == protocol.CodeTurnNotActive:
		c.record("stop", checkSkip, "the turn ended before the stop reached it")
		return
	case stopStatus != http.StatusAccepted:
		p.addf("POST /stop answered %d %s, want 202", stopStatus, errorCode(stopBody))
	}
	f := examineStream(long)
	p = append(p, f.terminal...)
	detail := "202, then the stream ended"
	if last := long.last(); last != nil && last.Kind == protocol.EventSnapshot {
		detail += " " + last.Snapshot.Status
		if last.Snapshot.Error != nil {
			detail += " " + last.Snapshot.Error.Code
		}
		if last.Snapshot.Status == protocol.StatusComplete {
			detail += " (the turn finished before the stop took effect: accepted, not seen to stop)"
		}
	}
	c.report("stop", p, detail)
}

// checkPagination pages a session's turns one at a time, oldest first,
// appending a turn after the first page.
func (c *conformer) checkPagination(ctx context.Context) {
	if c.caps != nil && !c.caps.has("history") {
		c.record("history.pagination", checkSkip, "history not advertised by /capabilities")
		return
	}
	sessionID := newSessionID()
	var want []string
	for range 3 {
		s := c.submit(ctx, sessionID, shortInput, nil)
		if s.status != http.StatusOK {
			c.record("history.pagination", checkFail, "a set-up turn answered %d %s", s.status, errorCode(s.errBody))
			return
		}
		if !isTerminalEvent(s.last()) {
			c.record("history.pagination", checkFail, "a set-up turn's stream ended without a terminal line")
			return
		}
		want = append(want, s.turnID)
	}
	var seen []string
	var p problems
	cursor := ""
	for page := 0; page < 20; page++ {
		q := url.Values{"order": {"asc"}, "limit": {"1"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		status, _, body, err := c.do(ctx, c.history, http.MethodGet, c.historyPath("/sessions/"+sessionID+"/turns")+"?"+q.Encode(), nil, "")
		if err != nil || status != http.StatusOK {
			p.addf("page %d: %d %s %v", page+1, status, errorCode(body), err)
			break
		}
		var pg struct {
			Turns []struct {
				TurnID string `json:"turnId"`
			} `json:"turns"`
			NextCursor *string `json:"nextCursor"`
			HasMore    bool    `json:"hasMore"`
		}
		if err := json.Unmarshal(body, &pg); err != nil {
			p.addf("page %d is not a turns page", page+1)
			break
		}
		if len(pg.Turns) > 1 {
			p.addf("page %d has %d turns with limit 1", page+1, len(pg.Turns))
		}
		if len(pg.Turns) == 0 && pg.HasMore {
			p.addf("page %d is empty but says more follow", page+1)
		}
		for _, t := range pg.Turns {
			seen = append(seen, t.TurnID)
		}
		if page == 0 { // a turn appended between pages
			s := c.submit(ctx, sessionID, shortInput, nil)
			if s.status != http.StatusOK {
				p.addf("the appended turn answered %d", s.status)
			}
			want = append(want, s.turnID)
		}
		if !pg.HasMore || pg.NextCursor == nil {
			break
		}
		cursor = *pg.NextCursor
	}
	if !slices.Equal(seen, want) && len(p) == 0 {
		p.addf("pages returned %d turns %v, want %d in order %v", len(seen), short(seen), len(want), short(want))
	}
	c.report("history.pagination", p, fmt.Sprintf("%d pages of one turn, a turn appended after the first", len(seen)))
}

func short(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id[max(0, len(id)-6):]
	}
	return out
}

// checkArtifacts replaces the first turn's artifact references with a list
// that repeats a path and reads them back.
func (c *conformer) checkArtifacts(ctx context.Context, first *submitted) {
	switch {
	case c.opts.artifactsURL == "":
		c.record("artifacts.dedupe", checkSkip, "no -artifacts URL")
		return
	case first == nil || first.status != http.StatusOK:
		c.record("artifacts.dedupe", checkSkip, "no first turn")
		return
	}
	path := c.artifactsPath("/sessions/" + first.sessionID + "/turns/" + first.turnID + "/artifacts")
	put := []byte(`{"artifacts":[{"entryPath":"conform/a.md","artifactType":"document"},` +
		`{"entryPath":"conform/b.png","artifactType":"image"},{"entryPath":"conform/a.md","artifactType":"webpage"}]}`)
	status, _, body, err := c.do(ctx, c.trusted, http.MethodPut, path, put, "application/json")
	switch {
	case err != nil:
		c.record("artifacts.dedupe", checkFail, "PUT: %v", err)
		return
	case status == http.StatusForbidden || status == http.StatusUnauthorized:
		c.record("artifacts.dedupe", checkSkip, "PUT answered %d %s: the caller is not the trusted principal (pass -trusted-token)", status, errorCode(body))
		return
	}
	var p problems
	if status != http.StatusOK {
		p.addf("PUT answered %d %s, want 200", status, errorCode(body))
	}
	status, _, body, err = c.do(ctx, c.artifacts, http.MethodGet, path, nil, "")
	if err != nil || status != http.StatusOK {
		p.addf("GET answered %d %s %v", status, errorCode(body), err)
		c.report("artifacts.dedupe", p, "")
		return
	}
	var got struct {
		Artifacts []struct {
			EntryPath    string `json:"entryPath"`
			ArtifactType string `json:"artifactType"`
		} `json:"artifacts"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		p.addf("GET: not an artifacts list")
	}
	byPath := map[string]string{}
	for _, a := range got.Artifacts {
		if _, dup := byPath[a.EntryPath]; dup {
			p.addf("%s is listed twice", a.EntryPath)
		}
		byPath[a.EntryPath] = a.ArtifactType
	}
	if len(got.Artifacts) != 2 || byPath["conform/a.md"] != "webpage" || byPath["conform/b.png"] != "image" {
		p.addf("GET lists %v, want conform/a.md webpage (the last reference wins) and conform/b.png image", byPath)
	}
	c.report("artifacts.dedupe", p, "a repeated entry path kept once, the last reference winning")
}

// do sends one request and reads the whole answer (up to 1 MiB).
func (c *conformer) do(ctx context.Context, client *http.Client, method, target string, body []byte, contentType string) (int, http.Header, []byte, error) {
	return c.doWith(ctx, client, method, target, body, contentType, nil)
}

// doWith is do with extra request headers.
func (c *conformer) doWith(ctx context.Context, client *http.Client, method, target string, body []byte, contentType string, extra http.Header) (int, http.Header, []byte, error) {
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
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, resp.Header, data, err
}

// turnPath, historyPath and artifactsPath join a route to a base URL.
func (c *conformer) turnPath(route string) string      { return joinURL(c.opts.turnURL, route) }
func (c *conformer) historyPath(route string) string   { return joinURL(c.opts.historyURL, route) }
func (c *conformer) artifactsPath(route string) string { return joinURL(c.opts.artifactsURL, route) }

func joinURL(base, route string) string {
	u, err := url.Parse(base)
	if err != nil {
		return strings.TrimSuffix(base, "/") + route
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + route
	u.RawQuery = ""
	return u.String()
}
