package main

// The checks of `turnctl conform`, in the order run runs them.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/protocol"
)

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
	again := &submitted{sessionID: first.sessionID, turnID: first.turnID, sub: first.sub}
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
		{what: "GET on the submit route", method: http.MethodGet, url: c.opts.turnURL + "?" + m + "=" + m,
			status: http.StatusMethodNotAllowed, codes: []string{protocol.CodeRequestMethodNotAllowed}},
		{what: "text/plain submit", method: http.MethodPost, url: c.opts.turnURL, contentType: "text/plain",
			body: []byte(`{"note":"` + m + `"}`), status: http.StatusUnsupportedMediaType, codes: []string{protocol.CodeRequestUnsupportedMediaType}},
		{what: "invalid JSON", method: http.MethodPost, url: c.opts.turnURL, contentType: "application/json",
			body: []byte(`{"` + m + `": [`), status: http.StatusBadRequest, codes: []string{protocol.CodeRequestInvalidJSON}},
		{what: "an invalid event", method: http.MethodPost, url: c.opts.turnURL, contentType: "application/json",
			body:   bytes.Replace(bytes.Replace(validSubmit, []byte(`"sequence":0`), []byte(`"sequence":"`+m+`"`), 1), []byte(`"input":"x"`), []byte(`"input":"`+m+`"`), 1),
			status: http.StatusBadRequest, codes: []string{protocol.CodeRequestInvalidEvent}},
		{what: "a submit of version 2", method: http.MethodPost, url: c.opts.turnURL, contentType: "application/json",
			body:   bytes.Replace(bytes.Replace(validSubmit, []byte(`"version":1`), []byte(`"version":2`), 1), []byte(`"input":"x"`), []byte(`"input":"`+m+`"`), 1),
			status: http.StatusBadRequest, codes: []string{protocol.CodeRequestInvalidEvent}},
		{what: "history of an unknown session", method: http.MethodGet,
			url:    c.historyPath("/sessions/" + m + "/messages"),
			status: http.StatusNotFound, codes: []string{protocol.CodeSessionNotFound}},
		{what: "a tampered page cursor", method: http.MethodGet,
			url:    c.historyPath("/sessions/"+sessionID+"/turns") + "?cursor=" + m,
			status: http.StatusBadRequest, codes: []string{protocol.CodeRequestInvalidCursor, protocol.CodeSessionNotFound}},
		{what: "a bad page limit", method: http.MethodGet,
			url:    c.historyPath("/sessions/"+sessionID+"/turns") + "?limit=" + m,
			status: http.StatusBadRequest, codes: []string{protocol.CodeRequestInvalidQuery, protocol.CodeSessionNotFound}},
	}
	if c.caps.Has("snapshotScope") {
		cases = append(cases, errorCase{what: "an unknown snapshot scope", method: http.MethodPost, url: c.opts.turnURL,
			contentType: "application/json", header: http.Header{snapshotScopeHeader: {m}}, body: validSubmit,
			status: http.StatusBadRequest, codes: []string{protocol.CodeRequestInvalidHeader}})
	}
	if c.caps.Has("stop") {
		cases = append(cases, errorCase{what: "a stop of no turn", method: http.MethodPost, url: c.turnPath("/stop"),
			contentType: "application/json", body: []byte(`{"sessionId":"` + m + `","turnId":"` + m + `"}`),
			status: http.StatusNotFound, codes: []string{protocol.CodeSessionNotFound, protocol.CodeTurnNotActive, protocol.CodeTurnNotFound}})
	}
	var shape, echo problems
	for _, ec := range cases {
		status, header, body, err := c.do(ctx, ec.method, ec.url, ec.body, ec.contentType, ec.header)
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

// errorText describes a failed client call: "<status> <code>" for an
// error answer, else the error's text.
func errorText(err error) string {
	var e *client.Error
	if errors.As(err, &e) && e.Kind == client.KindHTTP {
		return fmt.Sprintf("%d %s", e.Status, errorCode(e.Body))
	}
	return err.Error()
}

// errorCode returns the code of an error body, or "" when it has none.
func errorCode(body []byte) string {
	var e api.ErrorBody
	if json.Unmarshal(body, &e) != nil || e.Error == nil {
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
	pages := 0
	for page, err := range c.api.MessagePages(ctx, sessionID, client.PageOptions{Limit: client.MaxPageLimit, Order: client.OrderAsc}) {
		if err != nil {
			return nil, fmt.Errorf("GET messages: %w", err)
		}
		if pages++; pages > 1000 {
			return nil, errors.New("GET messages: more than 1000 pages")
		}
		all = append(all, page.Messages...)
	}
	return all, nil
}

// snapshotScopeHeader is turnstream's request header choosing what a
// snapshot carries: the whole session (default) or the current turn.
const snapshotScopeHeader = api.SnapshotScopeHeader

// checkSnapshotScope submits a second turn to the first turn's session
// asking for turn-scoped snapshots: none may carry the first turn's
// messages, every one must carry the new turn's input.
func (c *conformer) checkSnapshotScope(ctx context.Context, first *submitted) {
	switch {
	case !c.caps.Has("snapshotScope"):
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
	sub := newSubmit(first.sessionID, shortInput)
	sub.Scope = api.ScopeTurn
	s := &submitted{sessionID: sub.SessionID, turnID: sub.TurnID, sub: sub}
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
	if !c.caps.Has("stop") {
		c.record("stop", checkSkip, "not advertised by /capabilities")
		return
	}
	sessionID := newSessionID()
	var stopStatus int
	var stopBody []byte
	var stopErr error
	sent := false
	sub := newSubmit(sessionID, longInput)
	long := &submitted{sessionID: sessionID, turnID: sub.TurnID, sub: sub}
	c.stream(ctx, long, func(i int, ev *protocol.Event) {
		if sent || isTerminalEvent(ev) {
			return
		}
		sent = true
		body, _ := json.Marshal(map[string]string{"sessionId": sessionID, "turnId": long.turnID})
		stopStatus, _, stopBody, stopErr = c.do(ctx, http.MethodPost, c.turnPath("/stop"), body, "application/json", nil)
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
	if c.caps != nil && !c.caps.Has("history") {
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
	page := 0
	for pg, err := range c.api.TurnPages(ctx, sessionID, client.PageOptions{Limit: 1, Order: client.OrderAsc}) {
		if page++; page > 20 {
			break
		}
		if err != nil {
			p.addf("page %d: %s", page, errorText(err))
			break
		}
		if len(pg.Turns) > 1 {
			p.addf("page %d has %d turns with limit 1", page, len(pg.Turns))
		}
		if len(pg.Turns) == 0 && pg.HasMore {
			p.addf("page %d is empty but says more follow", page)
		}
		for _, t := range pg.Turns {
			seen = append(seen, t.TurnID)
		}
		if page == 1 { // a turn appended between pages
			s := c.submit(ctx, sessionID, shortInput, nil)
			if s.status != http.StatusOK {
				p.addf("the appended turn answered %d", s.status)
			}
			want = append(want, s.turnID)
		}
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
	put := []client.ArtifactReference{{EntryPath: "conform/a.md", ArtifactType: "document"},
		{EntryPath: "conform/b.png", ArtifactType: "image"}, {EntryPath: "conform/a.md", ArtifactType: "webpage"}}
	_, err := c.trusted.PutArtifacts(ctx, first.sessionID, first.turnID, put)
	var e *client.Error
	var p problems
	switch {
	case errors.As(err, &e) && (e.Status == http.StatusForbidden || e.Status == http.StatusUnauthorized):
		c.record("artifacts.dedupe", checkSkip, "PUT answered %d %s: the caller is not the trusted principal (pass -trusted-token)", e.Status, e.Code())
		return
	case errors.As(err, &e) && e.Kind == client.KindHTTP:
		p.addf("PUT answered %d %s, want 200", e.Status, e.Code())
	case err != nil:
		c.record("artifacts.dedupe", checkFail, "PUT: %s", errorText(err))
		return
	}
	got, err := c.api.Artifacts(ctx, first.sessionID, first.turnID)
	if err != nil {
		p.addf("GET: %s", errorText(err))
		c.report("artifacts.dedupe", p, "")
		return
	}
	byPath := map[string]string{}
	for _, a := range got {
		if _, dup := byPath[a.EntryPath]; dup {
			p.addf("%s is listed twice", a.EntryPath)
		}
		byPath[a.EntryPath] = a.ArtifactType
	}
	if len(got) != 2 || byPath["conform/a.md"] != "webpage" || byPath["conform/b.png"] != "image" {
		p.addf("GET lists %v, want conform/a.md webpage (the last reference wins) and conform/b.png image", byPath)
	}
	c.report("artifacts.dedupe", p, "a repeated entry path kept once, the last reference winning")
}

// checkCompact submits a turn asking for the compact stream
// (docs/compact.md): the response must say it is compact; every line must
// be a turn event or an append line, which the turn decoder must report
// as an unknown event kind (inert to AgentsKit clients); the first and
// the last line must be complete snapshots; a compact cursor must apply
// every line without a gap, and a plain snapshot cursor, which ignores the
// append lines, must end with the same state.
func (c *conformer) checkCompact(ctx context.Context) {
	if !c.caps.Has("compact") {
		c.record("compact", checkSkip, "not advertised by /capabilities")
		return
	}
	sub := newSubmit(newSessionID(), compactInput)
	sub.Compact = true
	s := &submitted{sessionID: sub.SessionID, turnID: sub.TurnID, sub: sub}
	c.stream(ctx, s, nil)
	if s.status != http.StatusOK {
		c.record("compact", checkFail, "a compact submit answered %d %s", s.status, errorCode(s.errBody))
		return
	}
	var p problems
	if got := s.header.Get(streamModeHeader); !strings.EqualFold(got, "compact") {
		p.addf("the response's %s is %q, want compact", streamModeHeader, got)
	}
	compact, _ := protocol.NewCompactCursor(s.sessionID)
	plain, _ := protocol.NewSnapshotCursor(s.sessionID)
	appends := 0
	for i, line := range s.lines {
		_, diag := protocol.DecodeTurnEvent(line)
		if protocol.IsAppendLine(line) {
			appends++
			if diag == nil || diag.Code != protocol.CodeProtocolUnknownEvent {
				p.addf("append line %d is not an unknown event kind to the turn decoder", i+1)
			}
		} else if diag != nil {
			p.addf("line %d does not decode (%s)", i+1, diag.Code)
		}
		if _, err := compact.Apply(line); err != nil {
			p.addf("line %d: %v", i+1, err)
		}
		plain.Apply(line)
	}
	if n := len(s.events); n == 0 || s.events[0] == nil || s.events[0].Kind != protocol.EventSnapshot {
		p.addf("the first line is not a complete snapshot")
	}
	if last := s.last(); last == nil || last.Kind != protocol.EventSnapshot || last.Snapshot.Status == protocol.StatusStreaming {
		p.addf("the last line is not a terminal snapshot")
	}
	cs, ps := compact.Snapshot(), plain.Snapshot()
	if cs == nil || ps == nil || cs.Sequence != ps.Sequence || !sameJSON(cs.Snapshot.Messages, ps.Snapshot.Messages) {
		p.addf("a compact cursor and a plain snapshot cursor end with different states")
	}
	if s.readErr != nil {
		p.addf("read: %v", s.readErr)
	}
	c.report("compact", p, fmt.Sprintf("%d lines, %d append lines; both cursors end with the terminal state", len(s.lines), appends))
}

// compactInput is the compact check's input: long enough for a streaming
// model to send text between the first and the last line.
var compactInput = strings.Repeat("Write this sentence back to me, word for word. ", 4)

// sameJSON reports whether a and b encode alike.
func sameJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}
