package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/turnstream/turnstream/pkg/protocol"
)

// Reattaching to a running turn. A turn stream that drops before its
// terminal line (a connection error, or a body that ends without a
// terminal snapshot or diagnostic) is followed on over the turn function's
// resume route, GET {url}sessions/{sessionId}/turns/{turnId}/stream?after=N,
// when GET {url}capabilities offers it. The resumed stream carries the live
// stream's sequences; a snapshot cursor takes only snapshots strictly newer
// than the last one shown, so no line is shown twice. A resumer may see
// gaps: every snapshot is complete, so a gap loses nothing.

// Reattach limits: at most resumeAttempts resumes in a row without a new
// snapshot, the first after resumeBackoff, each later one after twice the
// last wait, at most maxResumeBackoff (250 ms, 500 ms, 1 s, 2 s, 4 s). They are variables so that tests
// can shorten the waits.
var (
	resumeAttempts   = 5
	resumeBackoff    = 250 * time.Millisecond
	maxResumeBackoff = 4 * time.Second
)

// capabilitiesTimeout bounds GET /capabilities and resumeOpenTimeout the
// wait for a resume stream's response header (not its body, which lasts as
// long as the turn).
const (
	capabilitiesTimeout = 10 * time.Second
	resumeOpenTimeout   = 30 * time.Second
)

// resumeRoute is how a turn function resumes a turn, from the resume
// object of GET /capabilities.
type resumeRoute struct {
	// path has {sessionId} and {turnId} placeholders; parameter names the
	// query parameter that carries the last sequence held.
	path, parameter string
}

// fetchResumeRoute reads GET {turnURL}capabilities and returns its resume
// route; false when the turn function does not offer resume (resume
// unavailable, not listed in extensions, or no capabilities at all).
func fetchResumeRoute(ctx context.Context, client *http.Client, turnURL string) (resumeRoute, bool) {
	ctx, cancel := context.WithTimeout(ctx, capabilitiesTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(turnURL, "/")+"/capabilities", nil)
	if err != nil {
		return resumeRoute{}, false
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return resumeRoute{}, false
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return resumeRoute{}, false
	}
	var caps struct {
		Extensions []string `json:"extensions"`
		Resume     struct {
			Available bool   `json:"available"`
			Method    string `json:"method"`
			Path      string `json:"path"`
			Parameter string `json:"parameter"`
		} `json:"resume"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&caps); err != nil {
		return resumeRoute{}, false
	}
	r := caps.Resume
	listed := false
	for _, e := range caps.Extensions {
		listed = listed || e == "resume"
	}
	if !listed || !r.Available || r.Method != http.MethodGet || r.Parameter == "" ||
		!strings.Contains(r.Path, "{sessionId}") || !strings.Contains(r.Path, "{turnId}") {
		return resumeRoute{}, false
	}
	return resumeRoute{path: r.Path, parameter: r.Parameter}, true
}

// resumeError is a resume request the server refused for good (a 4xx
// other than 408 and 429): retrying cannot help.
type resumeError struct{ text string }

func (e *resumeError) Error() string { return e.text }

// openResume starts a resume of turnID after sequence after (from the
// start when after < 0), in compact mode when compact is set, and returns
// its 200 body. A refusal for good is a *resumeError carrying the server's
// error code and message, escaped.
func openResume(ctx context.Context, client *http.Client, turnURL string, route resumeRoute, sessionID, turnID string, after int64, compact bool) (io.ReadCloser, error) {
	u, err := url.Parse(strings.TrimSuffix(turnURL, "/"))
	if err != nil {
		return nil, &resumeError{"the turn URL does not parse"}
	}
	p := strings.NewReplacer("{sessionId}", sessionID, "{turnId}", turnID).Replace(route.path)
	u.Path = strings.TrimSuffix(u.Path, "/") + p
	if after >= 0 {
		u.RawQuery = url.Values{route.parameter: {strconv.FormatInt(after, 10)}}.Encode()
	}
	// The header must come within resumeOpenTimeout; the body then lasts
	// as long as ctx.
	openCtx, cancelOpen := context.WithCancel(ctx)
	timer := time.AfterFunc(resumeOpenTimeout, cancelOpen)
	req, err := http.NewRequestWithContext(openCtx, http.MethodGet, u.String(), nil)
	if err != nil {
		timer.Stop()
		cancelOpen()
		return nil, &resumeError{"the resume URL does not parse"}
	}
	req.Header.Set("Accept", "application/x-ndjson")
	if compact {
		req.Header.Set(streamModeHeader, "compact")
	}
	resp, err := client.Do(req)
	if !timer.Stop() && err == nil {
		// The timer fired as the header arrived: the body is cancelled.
		_ = resp.Body.Close()
		cancelOpen()
		return nil, errors.New("resume: no response in time")
	}
	if err != nil {
		cancelOpen()
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		var b strings.Builder
		reportHTTPError(&b, "resume", resp)
		_ = resp.Body.Close()
		cancelOpen()
		text := strings.TrimPrefix(strings.TrimSuffix(b.String(), "\n"), "turnctl ")
		if resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusRequestTimeout && resp.StatusCode != http.StatusTooManyRequests {
			return nil, &resumeError{text}
		}
		return nil, errors.New(text)
	}
	return &cancelOnClose{ReadCloser: resp.Body, cancel: cancelOpen}, nil
}

// cancelOnClose releases a request's context when its body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// errTruncatedLine is a stream's last line without its "\n": the
// connection ended inside it.
var errTruncatedLine = errors.New("the stream ended inside a line")

// splitFullLines is a bufio.SplitFunc returning only lines ended by "\n"
// (without it); data left at the end of input is errTruncatedLine.
func splitFullLines(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return i + 1, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return 0, nil, errTruncatedLine
	}
	return 0, nil, nil
}

// reattachingStream reads a turn's NDJSON stream line by line and passes
// on each line ended by "\n" (with its "\n") that is new: every snapshot
// of the session the cursor takes (strictly newer than the last one), a
// snapshot of another session as it is (a server fault, for the reader to
// show as before), every diagnostic
// that ends the turn, and lines that do not decode (for the reader to
// report). When the stream drops before the turn ended, it resumes the turn
// from the last snapshot passed on (bounded attempts with exponential
// backoff, see resumeAttempts), showing "reconnecting…" through status,
// and goes on. Without resume (the capabilities do not offer it) a drop
// ends it as before: the read error, or EOF.
//
// In compact mode (docs/compact.md) an append line that applies to the
// state passed on is passed on as the complete snapshot it makes (the
// cursor's state, encoded); a stale one is dropped; one that does not fit
// (a gap) ends the current stream, and the resume that follows starts
// from a complete snapshot. A malformed append line is passed on as it
// is, for the reader to report.
type reattachingStream struct {
	ctx       context.Context
	client    *http.Client
	turnURL   string
	sessionID string
	turnID    string
	// status shows a transient line ("reconnecting…", "" to clear it).
	status func(text string)

	body    io.ReadCloser
	lines   *bufio.Scanner
	resumed bool // lines come from a resume stream
	compact bool // resumes ask for the compact stream
	gap     bool // an append line did not fit: resume
	cursor  *protocol.CompactCursor
	last    int64 // sequence of the last snapshot passed on; -1 none
	ended   bool  // a terminal snapshot or a final diagnostic was passed on
	route   *resumeRoute
	noRoute bool // the capabilities were read: no resume
	// failures counts resumes since the last snapshot passed on.
	failures int
	pending  []byte
}

// newReattachingStream follows turnID of sessionID from body (the live
// stream; nil to start with a resume from the first line).
func newReattachingStream(ctx context.Context, client *http.Client, turnURL, sessionID, turnID string, body io.ReadCloser, status func(string), compact bool) (*reattachingStream, error) {
	cursor, err := protocol.NewCompactCursor(sessionID)
	if err != nil {
		return nil, err
	}
	s := &reattachingStream{ctx: ctx, client: client, turnURL: turnURL, sessionID: sessionID, turnID: turnID,
		status: status, cursor: cursor, last: -1, compact: compact}
	if body != nil {
		s.setBody(body, false)
	}
	return s, nil
}

func (s *reattachingStream) setBody(body io.ReadCloser, resumed bool) {
	s.body, s.resumed = body, resumed
	s.lines = bufio.NewScanner(body)
	s.lines.Buffer(make([]byte, 64<<10), maxLineBytes)
	s.lines.Split(splitFullLines)
}

// Read implements io.Reader over the lines passed on.
func (s *reattachingStream) Read(p []byte) (int, error) {
	for len(s.pending) == 0 {
		line, err := s.next()
		if err != nil {
			return 0, err
		}
		s.pending = append(append(s.pending[:0], line...), '\n')
	}
	n := copy(p, s.pending)
	s.pending = s.pending[n:]
	return n, nil
}

// Close closes the current body.
func (s *reattachingStream) Close() error {
	if s.body == nil {
		return nil
	}
	return s.body.Close()
}

// next returns the next line to pass on.
func (s *reattachingStream) next() ([]byte, error) {
	for {
		if s.ended {
			return nil, io.EOF
		}
		if !s.gap && s.lines != nil && s.lines.Scan() {
			if line, ok := s.take(s.lines.Bytes()); ok {
				return line, nil
			}
			continue
		}
		s.gap = false
		dropped := io.EOF
		if s.lines != nil {
			if err := s.lines.Err(); err != nil {
				dropped = err
			}
		}
		if s.ctx.Err() != nil {
			return nil, s.ctx.Err()
		}
		if err := s.reattach(dropped); err != nil {
			return nil, err
		}
	}
}

// take decides whether line is passed on.
func (s *reattachingStream) take(line []byte) ([]byte, bool) {
	if protocol.IsAppendLine(line) {
		changed, err := s.cursor.Apply(line)
		switch {
		case errors.Is(err, protocol.ErrAppendGap):
			s.gap = true
			return nil, false
		case err != nil:
			return line, true // the reader reports it
		case !changed:
			return nil, false // stale
		}
		snap := s.cursor.Snapshot()
		out, err := protocol.AppendEventLine(nil, snap)
		if err != nil {
			return line, true
		}
		s.last, s.failures = snap.Sequence, 0
		return out[:len(out)-1], true
	}
	ev, diag := protocol.DecodeTurnEvent(line)
	switch {
	case diag != nil:
		return line, true // the reader reports it
	case ev.Kind == protocol.EventSnapshot && ev.SessionID != s.sessionID:
		// Not this session's (a server fault): passed on as before, for
		// the reader to show; the cursor holds this session's only.
		s.ended = ev.Snapshot.Status != protocol.StatusStreaming
		return line, true
	case ev.Kind == protocol.EventSnapshot:
		if changed, _ := s.cursor.Apply(line); !changed {
			return nil, false // held already (or another session's)
		}
		s.last, s.failures = ev.Sequence, 0
		s.ended = ev.Snapshot.Status != protocol.StatusStreaming
		return line, true
	case ev.Kind == protocol.EventDiagnostic:
		if s.resumed && ev.Diagnostic.Code == protocol.CodeServerTimeout {
			// The resume's own deadline passed while the turn runs on (a
			// timeout of the turn itself comes after its terminal
			// snapshot, which ended the stream): resume again.
			return nil, false
		}
		s.ended = true
		return line, true
	}
	return line, true
}

// reattach replaces a dropped stream (dropped: why it ended) by a resume
// stream, or returns the error that ends the stream: dropped itself when
// resume is not offered, a refusal, or the last failure after
// resumeAttempts tries.
func (s *reattachingStream) reattach(dropped error) error {
	if s.body != nil {
		_ = s.body.Close()
		s.body, s.lines = nil, nil
	}
	if s.route == nil && !s.noRoute {
		if r, ok := fetchResumeRoute(s.ctx, s.client, s.turnURL); ok {
			s.route = &r
		} else {
			s.noRoute = true
		}
	}
	if s.route == nil {
		if errors.Is(dropped, errTruncatedLine) {
			return io.EOF // as before: the stream ended before the turn's last line
		}
		return dropped
	}
	lastErr := dropped
	for s.failures < resumeAttempts {
		s.failures++
		wait := min(resumeBackoff<<(s.failures-1), maxResumeBackoff)
		s.status(fmt.Sprintf("%s (attempt %d of %d)", noticeReconnecting, s.failures, resumeAttempts))
		t := time.NewTimer(wait)
		select {
		case <-s.ctx.Done():
			t.Stop()
			s.status("")
			return s.ctx.Err()
		case <-t.C:
		}
		body, err := openResume(s.ctx, s.client, s.turnURL, *s.route, s.sessionID, s.turnID, s.last, s.compact)
		if err == nil {
			s.status("")
			s.setBody(body, true)
			return nil
		}
		if s.ctx.Err() != nil {
			s.status("")
			return s.ctx.Err()
		}
		var refused *resumeError
		if errors.As(err, &refused) {
			s.status("")
			return err
		}
		lastErr = err
	}
	s.status("")
	return fmt.Errorf("the stream dropped and %d resumes in a row brought nothing new: %w", resumeAttempts, lastErr)
}

// follow returns the lines of turnID's live stream body, reattaching over
// the resume route when it drops mid-turn; "reconnecting…" is shown on
// shown's status line meanwhile.
func (c *chatClient) follow(ctx context.Context, turnID string, body io.ReadCloser, shown *lockedRenderer) io.ReadCloser {
	s, err := newReattachingStream(ctx, c.http, c.opts.url, c.opts.sessionID, turnID, body, shown.status, c.opts.compact)
	if err != nil { // the session id was checked as a SafeId: cannot happen
		return body
	}
	return s
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

// streamModeHeader negotiates the compact stream (the turn function's
// turn.StreamModeHeader, docs/compact.md).
const streamModeHeader = "X-Turnstream-Stream-Mode"

// noticeReconnecting starts the transient status shown while a dropped
// stream is resumed.
const noticeReconnecting = "reconnecting…"

// status replaces the transient status line under the status line (the
// notices that start with noticeReconnecting) by text, or removes it for
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
		if !strings.HasPrefix(n, noticeReconnecting) {
			kept = append(kept, n)
		}
	}
	r.notices = kept
	if text != "" {
		r.notices = append(r.notices, text)
	}
	r.redraw()
}
