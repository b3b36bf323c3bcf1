package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// reattach replaces a dropped body (dropped: why it ended) by a resume
// stream, or returns the error that ends the stream: without resume a
// KindIncomplete *Error (the body ended) or a KindNetwork one (the read
// failed); a refusal for good; or, after Options.ResumeAttempts resumes in
// a row without a new snapshot, a KindNetwork *Error wrapping the last
// failure. Capabilities that cannot be read (the server unreachable at
// the moment of the drop) count as a failed attempt and are asked again
// at the next one; only capabilities that answer without resume end the
// stream at once.
func (s *Stream) reattach(dropped error) error {
	_ = s.Close()
	s.lines = nil
	droppedErr := func() error {
		if errors.Is(dropped, io.EOF) || errors.Is(dropped, errTruncatedLine) {
			return &Error{Kind: KindIncomplete, Op: "stream", Sequence: -1,
				Diagnostic: clientDiagnostic(CodeStreamIncomplete, "The turn stream ended before the turn did.", true)}
		}
		return networkError("stream", dropped)
	}
	if s.c.opts.Resume == ResumeOff {
		return droppedErr()
	}
	// lookup reads the resume route once it is known to exist; it reports
	// a transient failure (to try again) apart from a definite answer.
	lookup := func() (transient, err error) {
		if s.route != nil {
			return nil, nil
		}
		route, ok, err := s.c.resumeRouteOf(s.ctx)
		switch {
		case err != nil && s.ctx.Err() != nil:
			return nil, s.ctx.Err()
		case err != nil:
			return err, nil
		case !ok:
			return nil, droppedErr()
		}
		s.route = &route
		return nil, nil
	}
	lastErr := dropped
	if transient, err := lookup(); err != nil {
		return err
	} else if transient != nil {
		lastErr = transient
	}
	of := s.c.opts.ResumeAttempts
	status := func(attempt int) {
		if s.opts.OnResume != nil {
			s.opts.OnResume(attempt, of)
		}
	}
	for s.failures < of {
		s.failures++
		wait := min(s.c.opts.ResumeBackoff<<(s.failures-1), s.c.opts.MaxResumeBackoff)
		status(s.failures)
		t := time.NewTimer(wait)
		select {
		case <-s.ctx.Done():
			t.Stop()
			status(0)
			return s.ctx.Err()
		case <-t.C:
		}
		transient, err := lookup()
		if err != nil {
			status(0)
			return err
		}
		if transient != nil {
			lastErr = transient
			continue
		}
		after := s.Sequence()
		if after < 0 {
			after = s.after
		}
		target := s.resumeTarget(*s.route, after)
		if s.queued != nil && s.Sequence() < 0 {
			target = joinURL(s.c.opts.TurnURL, "/"+s.queued.StreamURL) // not started yet, perhaps
		}
		body, header, err := s.open(target)
		if err == nil {
			status(0)
			s.setBody(body, header, true, nil)
			return nil
		}
		if s.ctx.Err() != nil {
			status(0)
			return s.ctx.Err()
		}
		if refusedForGood(err) {
			status(0)
			return err
		}
		lastErr = err
	}
	status(0)
	if errors.Is(lastErr, io.EOF) || errors.Is(lastErr, errTruncatedLine) {
		// Not wrapped: a caller must never read this end as io.EOF, the
		// end of a complete stream.
		lastErr = errors.New("the stream ended early")
	}
	return networkError("resume", fmt.Errorf("the stream dropped and %d resumes in a row brought nothing new: %w", of, lastErr))
}

// openResume starts a resume of the stream's turn after sequence after
// (from the newest state when after < 0) and returns its 200 body (open).
func (s *Stream) openResume(route ResumeCapability, after int64) (io.ReadCloser, http.Header, error) {
	return s.open(s.resumeTarget(route, after))
}

// resumeTarget is the URL of a resume of the stream's turn over route
// after sequence after (from the newest state when after < 0).
func (s *Stream) resumeTarget(route ResumeCapability, after int64) string {
	p := strings.NewReplacer("{sessionId}", url.PathEscape(s.sessionID), "{turnId}", url.PathEscape(s.turnID)).Replace(route.Path)
	target := joinURL(s.c.opts.TurnURL, p)
	if after >= 0 {
		target += "?" + url.Values{route.Parameter: {strconv.FormatInt(after, 10)}}.Encode()
	}
	return target
}

// open GETs a resume stream at target and returns its 200 body. The
// answer's header must come within resumeOpenTimeout; the body then lasts
// as long as the stream's context.
func (s *Stream) open(target string) (io.ReadCloser, http.Header, error) {
	ctx, cancel := context.WithCancel(s.ctx)
	timer := time.AfterFunc(resumeOpenTimeout, cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		timer.Stop()
		cancel()
		return nil, nil, err
	}
	s.setHeaders(req)
	resp, err := s.c.send(req, "resume")
	if !timer.Stop() && err == nil {
		// The timer fired as the header arrived: the body is cancelled.
		_ = resp.Body.Close()
		cancel()
		return nil, nil, networkError("resume", errors.New("resume: no answer in time"))
	}
	if err != nil {
		cancel()
		if errors.Is(err, context.Canceled) && s.ctx.Err() == nil {
			return nil, nil, networkError("resume", errors.New("resume: no answer in time"))
		}
		return nil, nil, err
	}
	return &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}, resp.Header, nil
}

// sleepCtx waits d, or until ctx ends (false).
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
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

// maxLineBytes bounds one NDJSON line (a snapshot carries the whole
// session; 16 MiB is far beyond any Lambda response line).
const maxLineBytes = 16 << 20

// lineReader splits a stream into lines ended by "\n".
type lineReader struct {
	r       io.Reader
	buf     []byte
	pos     int
	end     int
	out     []byte
	partial bool // the last next returned a partial line
}

func newLineReader(r io.Reader) *lineReader { return &lineReader{r: r, buf: make([]byte, 32<<10)} }

// next returns the next line without its "\n" (full), or, with partial
// set, the bytes of an unfinished line after a read that did not finish
// it (not full; returned once per read). At the end of input it returns
// io.EOF, or errTruncatedLine when a line was left unfinished; a read
// error as it is. The slice is reused by the next call.
func (l *lineReader) next(partial bool) (line []byte, full bool, err error) {
	if !l.partial {
		l.out = l.out[:0]
	}
	l.partial = false
	for {
		if l.pos < l.end {
			if i := bytes.IndexByte(l.buf[l.pos:l.end], '\n'); i >= 0 {
				l.out = append(l.out, l.buf[l.pos:l.pos+i]...)
				l.pos += i + 1
				return l.out, true, nil
			}
			l.out = append(l.out, l.buf[l.pos:l.end]...)
			l.pos = l.end
			if len(l.out) > maxLineBytes {
				return nil, false, errors.New("a stream line exceeds 16 MiB")
			}
			if partial {
				l.partial = true
				return l.out, false, nil
			}
		}
		n, err := l.r.Read(l.buf)
		l.pos, l.end = 0, n
		if n == 0 && err != nil {
			if err == io.EOF && len(l.out) > 0 {
				return nil, false, errTruncatedLine
			}
			return nil, false, err
		}
	}
}
