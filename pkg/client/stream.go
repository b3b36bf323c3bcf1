package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"slices"
	"time"
	"unicode/utf16"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// StreamOptions shape how a turn's stream is asked for and read.
type StreamOptions struct {
	// Scope is the snapshot scope (api.SnapshotScopeHeader): "" or
	// api.ScopeSession for the whole session, api.ScopeTurn for this turn's messages only (page
	// older ones from history).
	Scope string
	// Compact asks for the compact stream (docs/compact.md) beside
	// Options.Compact: complete snapshots at the start, at changes other
	// than appended text and at the end, append lines between them. Each
	// append line is applied to the state held and Next returns the
	// complete snapshot it makes. A server without the extension answers
	// with complete snapshots, read as usual.
	Compact bool
	// Provisional, in compact mode, makes Next also return a provisional
	// snapshot while an append line is arriving and its text so far makes
	// the content longer than the last one returned: the held snapshot
	// with the text received so far appended, its Sequence the held one's
	// (Stream.Provisional reports it). It is never the cursor's state.
	Provisional bool
	// OnLine, when set, is called with every line received (without its
	// LF; the slice is reused after the call), before it is decoded, by
	// Next and Drain alike: what a benchmark or a conformance check
	// records of the raw stream.
	OnLine func(line []byte)
	// OnResume, when set, is called before each resume of a dropped
	// stream with its attempt (1..of) and Options.ResumeAttempts, and
	// with (0, of) once the resume is open or has failed for good: what a
	// terminal shows as "reconnecting…".
	OnResume func(attempt, of int)
}

// Submit is one client.turn.submit (docs/protocol.md#payloads).
type Submit struct {
	// SessionID is the session (a SafeId); a new id starts a session.
	SessionID string
	// TurnID is the turn's id (a SafeId), random when "". Submitting the
	// same turn id again is a replay: TURN_ALREADY_COMPLETED once it
	// completed (docs/decisions.md D-0105).
	TurnID string
	// Input is the user message.
	Input string
	// Lineage retries, edits or regenerates an earlier turn (a turnstream
	// extension, docs/design.md#storage-one-dynamodb-table); nil is a
	// plain submit.
	Lineage *protocol.Lineage
	// Confirmation decides a tool call waiting for approval
	// (docs/approvals.md); see Client.Decide.
	Confirmation *protocol.SubmitConfirmation
	// Attachments are ids of files uploaded to the session (Upload;
	// docs/attachments.md): 1..protocol.MaxSubmitAttachments distinct
	// ids, or none. A turnstream extension of the submit payload.
	Attachments []string
	// EventID and EmittedAt are the envelope's; random and now when "".
	// Set both to send the very same body again.
	EventID   string
	EmittedAt string
	// Multitask is the policy when the session is busy with another turn
	// (api.MultitaskHeader; docs/multitask.md): "" sends none (the session's
	// definition decides, reject unless configured), else one of
	// api.MultitaskPolicies. With api.MultitaskEnqueue a busy session queues the
	// turn: Submit returns a Stream whose Queued says so, and which
	// follows the turn from its start (Next waits until then).
	Multitask string
	StreamOptions
}

// SubmitBody returns the client.turn.submit event of s as the turn route
// takes it, with its defaults filled in (a random turn and event id, now):
// for a caller that sends it itself (a function URL event, a replay).
func SubmitBody(s Submit) ([]byte, error) {
	if s.TurnID == "" {
		s.TurnID = NewID()
	}
	if s.EventID == "" {
		s.EventID = NewID()
	}
	if s.EmittedAt == "" {
		s.EmittedAt = protocol.FormatTime(time.Now())
	}
	if !protocol.IsSafeID(s.SessionID) || !protocol.IsSafeID(s.TurnID) {
		return nil, ErrInvalidID
	}
	return protocol.EncodeEvent(&protocol.Event{
		EventID: s.EventID, SessionID: s.SessionID, TurnID: s.TurnID, EmittedAt: s.EmittedAt,
		Kind:   protocol.EventSubmit,
		Submit: &protocol.SubmitPayload{Input: s.Input, Lineage: s.Lineage, Confirmation: s.Confirmation, Attachments: s.Attachments},
	})
}

// NewID returns a random SafeId of 32 hex digits.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// Submit sends s to the turn function (POST {TurnURL}) and returns its
// stream once the answer is 200, or 202 for a turn the server queued
// (Stream.Queued). A refusal is a KindHTTP *Error (409 SESSION_BUSY while
// another turn runs, 409 SESSION_QUEUE_FULL and 422 MULTITASK_NOT_ALLOWED
// refusing the policy (IsMultitaskCode), TURN_ALREADY_COMPLETED for a
// replay, 404 SESSION_NOT_FOUND for another caller's session, ...). A
// 202 whose body is not a Queued naming the turn is KindInvalidResponse.
// ErrInvalidPolicy for a Multitask that is not a policy. ctx bounds the
// whole stream, resumes and the wait of a queued turn included: cancel
// it to leave the stream (the turn runs on until it ends or Stop is
// called; Stop cancels a queued turn that has not started).
func (c *Client) Submit(ctx context.Context, s Submit) (*Stream, error) {
	if s.TurnID == "" {
		s.TurnID = NewID()
	}
	if s.Multitask != "" && !slices.Contains(api.MultitaskPolicies, s.Multitask) {
		return nil, ErrInvalidPolicy
	}
	body, err := SubmitBody(s)
	if err != nil {
		return nil, err
	}
	st := c.newStream(ctx, s.SessionID, s.TurnID, s.StreamOptions, -1)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, joinURL(c.opts.TurnURL, "/"), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if s.Multitask != "" {
		req.Header.Set(api.MultitaskHeader, s.Multitask)
	}
	st.setHeaders(req)
	resp, err := c.send(req, "submit")
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusAccepted {
		q, err := readQueued(resp, s.SessionID, s.TurnID)
		if err != nil {
			return nil, err
		}
		st.queued, st.header = q, resp.Header
		return st, nil
	}
	st.setBody(resp.Body, resp.Header, false, nil)
	return st, nil
}

// Decision is the owner's decision on a tool call waiting for approval
// (docs/approvals.md#the-decision).
type Decision struct {
	SessionID string
	// Token is the confirmation's token: PendingConfirmation.Token, or a
	// session summary's PendingInteraction.InteractionID.
	Token string
	// Approve runs the call (once); false denies it.
	Approve bool
	// Label is the continuation's user message, a label only (it never
	// decides): "Approved." or "Denied." when "".
	Label string
	// TurnID is the continuation's turn id, random when "".
	TurnID string
	StreamOptions
}

// Decision labels, the input of a decision turn when Decision.Label is "".
const (
	LabelApprove = "Approved."
	LabelDeny    = "Denied."
)

// Decide sends a decision: a new turn whose submit payload carries
// confirmation {token, decision}. Its stream is the continuation: on
// approve the call runs first (running, then complete or error), on deny
// the call ends as error "The user denied this tool call.", then the model
// answers. A refused decision is a KindHTTP *Error whose code
// IsConfirmationCode, sent before any stream and with nothing changed.
func (c *Client) Decide(ctx context.Context, d Decision) (*Stream, error) {
	if !protocol.IsSafeID(d.Token) {
		return nil, ErrInvalidID
	}
	conf := &protocol.SubmitConfirmation{Token: d.Token, Decision: protocol.DecisionDeny}
	label := LabelDeny
	if d.Approve {
		conf.Decision, label = protocol.DecisionApprove, LabelApprove
	}
	if d.Label != "" {
		label = d.Label
	}
	return c.Submit(ctx, Submit{SessionID: d.SessionID, TurnID: d.TurnID, Input: label, Confirmation: conf, StreamOptions: d.StreamOptions})
}

// FromStart is Resume.After for a reader that holds nothing yet.
const FromStart = -1

// Resume names a running turn to read from where a reader left it.
type Resume struct {
	SessionID, TurnID string
	// After is the last sequence the reader already holds (a session
	// summary's CurrentTurn.Sequence, or Stream.Sequence); snapshots up to
	// it are skipped. FromStart (< 0) starts with the turn's newest state.
	After int64
	StreamOptions
}

// Resume reads a turn that is already running, e.g. after a page reload
// mid-answer, over the resume route the capabilities offer
// (GET {TurnURL}sessions/{sessionId}/turns/{turnId}/stream?after=N): the
// turn's newest state as one complete snapshot, then newer ones, with the
// live stream's sequences, to its terminal line; a finished turn answers
// its terminal snapshot. It returns ErrResumeUnavailable when the turn
// function does not offer resume, and a KindHTTP *Error for a refusal
// (404 TURN_NOT_FOUND before the turn's first checkpoint). Reading a turn
// never runs it, and leaving it never stops it.
func (c *Client) Resume(ctx context.Context, r Resume) (*Stream, error) {
	if !protocol.IsSafeID(r.SessionID) || !protocol.IsSafeID(r.TurnID) {
		return nil, ErrInvalidID
	}
	route, ok, err := c.resumeRoute(ctx)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, ErrResumeUnavailable
	}
	after := max(r.After, FromStart)
	st := c.newStream(ctx, r.SessionID, r.TurnID, r.StreamOptions, after)
	body, header, err := st.openResume(route, after)
	if err != nil {
		return nil, err
	}
	st.setBody(body, header, true, nil)
	return st, nil
}

// Stream is one turn's NDJSON stream, read through a snapshot cursor
// (protocol.CompactCursor; docs/protocol.md#the-snapshot-cursor): Next
// returns each snapshot the cursor accepts (complete, strictly newer than
// the last; never a delta), in order, up to the terminal one (status
// complete or error: a stopped turn ends with error TURN_INTERRUPTED).
// Lines of another session or turn are skipped. A stream that drops
// before its terminal line is resumed after the last accepted sequence
// when the capabilities offer resume (Options.Resume), and its cursor
// takes only what is new, so no snapshot is returned twice. A Stream is
// read by one goroutine; Close it when done.
type Stream struct {
	c         *Client
	ctx       context.Context
	sessionID string
	turnID    string
	opts      StreamOptions
	compact   bool

	body    io.ReadCloser
	header  http.Header
	lines   *lineReader
	resumed bool // the body is a resume stream's
	route   *ResumeCapability
	cursor  *protocol.CompactCursor
	// after is the last sequence the reader held before the stream (a
	// resume's After): snapshots up to it are skipped.
	after int64
	// raw is the line of the event Next returned last.
	raw         []byte
	provisional bool
	shown       int // UTF-16 length of the last content returned
	ended       bool
	err         error // sticky: every later call returns it
	failures    int   // resumes since the last accepted snapshot
	gap         bool  // an append line did not fit: resume
	// queued is the 202 answer of a queued submit; nil otherwise. Until
	// the turn's first snapshot its stream is read from queued.StreamURL,
	// opened again each time the server ends a silent wait (waiting).
	queued  *Queued
	waiting bool
}

func (c *Client) newStream(ctx context.Context, sessionID, turnID string, opts StreamOptions, after int64) *Stream {
	cursor, _ := protocol.NewCompactCursor(sessionID) // the session id was checked as a SafeId
	return &Stream{c: c, ctx: ctx, sessionID: sessionID, turnID: turnID, opts: opts,
		compact: opts.Compact || c.opts.Compact, cursor: cursor, after: after, shown: -1}
}

// setHeaders sets the stream's request headers on req.
func (s *Stream) setHeaders(req *http.Request) {
	req.Header.Set("Accept", "application/x-ndjson")
	if s.opts.Scope != "" {
		req.Header.Set(api.SnapshotScopeHeader, s.opts.Scope)
	}
	if s.compact {
		req.Header.Set(api.StreamModeHeader, api.StreamModeCompact)
	}
}

// setBody starts reading body, the answer of the stream's first request
// or of a resume.
func (s *Stream) setBody(body io.ReadCloser, header http.Header, resumed bool, route *ResumeCapability) {
	s.body, s.resumed = body, resumed
	if s.header == nil {
		s.header = header
	}
	if route != nil {
		s.route = route
	}
	s.lines = newLineReader(body)
}

// SessionID and TurnID name the stream's turn.
func (s *Stream) SessionID() string { return s.sessionID }

// TurnID returns the stream's turn id (random when the submit left it "").
func (s *Stream) TurnID() string { return s.turnID }

// Header is the answer header of the request that opened the stream.
func (s *Stream) Header() http.Header { return s.header }

// Sequence returns the last accepted sequence, where a resume continues
// after; -1 when none.
func (s *Stream) Sequence() int64 { return s.cursor.Sequence() }

// Snapshot returns a copy of the newest accepted snapshot, nil when none.
func (s *Stream) Snapshot() *protocol.Event { return s.cursor.Snapshot() }

// Line returns the line of the event Next returned last, without its LF:
// as received, or, for the state an append line made, that state encoded
// as a complete snapshot line; nil for a provisional snapshot. The slice
// is valid until the next call.
func (s *Stream) Line() []byte { return s.raw }

// Queued returns the 202 answer of a submit the server queued
// (api.MultitaskEnqueue on a busy session), nil for a turn that streamed at
// once. Next then waits, sending nothing back, until the turn starts
// after the turns before it, and returns its snapshots as for any turn; a
// queued turn that never runs ends Next with a KindDiagnostic *Error
// TURN_CANCELLED (Stop) or TURN_QUEUE_EXPIRED.
func (s *Stream) Queued() *Queued { return s.queued }

// Provisional reports whether the event Next returned last is a
// provisional snapshot (StreamOptions.Provisional).
func (s *Stream) Provisional() bool { return s.provisional }

// Close ends the read (the turn runs on).
func (s *Stream) Close() error {
	if s.body == nil {
		return nil
	}
	err := s.body.Close()
	s.body = nil
	return err
}

// Stop asks the server to stop the stream's turn (Client.Stop).
func (s *Stream) Stop(ctx context.Context) error { return s.c.Stop(ctx, s.sessionID, s.turnID) }

// Next returns the next snapshot the cursor accepts. After the terminal
// snapshot it returns io.EOF. A diagnostic line is a KindDiagnostic
// *Error; a line that is not a turn event a KindInvalidLine one; a stream
// that ends early and cannot be resumed a KindIncomplete or KindNetwork
// one (the resume's refusal, a KindHTTP one, when the server refused it
// for good); a context that ended its error. Errors are final.
func (s *Stream) Next() (*protocol.Event, error) {
	for {
		if s.err != nil {
			return nil, s.err
		}
		if s.ended {
			_ = s.Close()
			return nil, io.EOF
		}
		if s.queued != nil && s.Sequence() < 0 && (s.lines == nil && s.failures == 0 || s.waiting) {
			// A queued turn not started yet: (re)open its stream, which
			// stays silent until the turn starts. A wait the server ended
			// at its own deadline is no failure: the queue's TTL bounds it.
			if s.waiting && !sleepCtx(s.ctx, s.c.opts.ResumeBackoff) {
				return nil, s.fail(s.ctx.Err())
			}
			s.waiting, s.gap = false, false
			body, header, err := s.open(joinURL(s.c.opts.TurnURL, "/"+s.queued.StreamURL))
			if err != nil {
				if cerr := s.ctx.Err(); cerr != nil {
					return nil, s.fail(cerr)
				}
				if rerr := s.reattach(err); rerr != nil {
					return nil, s.fail(rerr)
				}
				continue
			}
			s.setBody(body, header, true, nil)
			continue
		}
		if !s.gap && s.lines != nil {
			line, full, err := s.lines.next(s.compact && s.opts.Provisional)
			if err == nil && !full {
				if ev := s.provisionalOf(line); ev != nil {
					return ev, nil
				}
				continue
			}
			if err == nil {
				if ev, ok := s.take(line); ok {
					return ev, nil
				}
				continue
			}
			if cerr := s.ctx.Err(); cerr != nil {
				return nil, s.fail(cerr)
			}
			if err := s.reattach(err); err != nil {
				return nil, s.fail(err)
			}
			continue
		}
		s.gap = false
		if err := s.reattach(io.EOF); err != nil {
			return nil, s.fail(err)
		}
	}
}

// fail makes err the stream's final error and returns it.
func (s *Stream) fail(err error) error {
	s.end(err)
	return err
}

// end makes err the stream's final error, which Next returns next.
func (s *Stream) end(err error) {
	var e *Error
	if errors.As(err, &e) && e.Sequence < 0 && e.Kind != KindHTTP {
		e.Sequence = s.Sequence()
	}
	s.err = err
	_ = s.Close()
}

// take decides what a complete line is: the event to return (ok), or
// nothing (a line skipped); a diagnostic or undecodable line sets s.err.
func (s *Stream) take(line []byte) (*protocol.Event, bool) {
	if s.opts.OnLine != nil {
		s.opts.OnLine(line)
	}
	s.provisional = false
	if s.compact && protocol.IsAppendLine(line) {
		changed, err := s.cursor.Apply(line)
		switch {
		case errors.Is(err, protocol.ErrAppendGap):
			s.gap = true
			return nil, false
		case err != nil:
			_, diag := protocol.DecodeTurnEvent(line)
			if diag == nil {
				d := protocol.NewDiagnostic(protocol.CodeProtocolInvalidPayload)
				diag = &d
			}
			s.end(&Error{Kind: KindInvalidLine, Op: "stream", Diagnostic: *diag, Sequence: -1})
			return nil, false
		case !changed:
			return nil, false // stale
		}
		snap := s.cursor.Snapshot()
		out, err := protocol.AppendEventLine(s.raw[:0], snap)
		if err != nil { // a state the cursor built from valid lines always encodes
			s.end(invalidResponse("stream", http.StatusOK))
			return nil, false
		}
		s.raw, s.failures = out[:len(out)-1], 0
		s.shown = contentLength(snap)
		return snap, true
	}
	ev, diag := protocol.DecodeTurnEvent(line)
	switch {
	case diag != nil:
		s.end(&Error{Kind: KindInvalidLine, Op: "stream", Diagnostic: *diag, Sequence: -1})
		return nil, false
	case ev.SessionID != s.sessionID || ev.TurnID != s.turnID:
		return nil, false // not this turn's: inert
	case ev.Kind == protocol.EventDiagnostic:
		if s.resumed && ev.Diagnostic.Code == protocol.CodeServerTimeout {
			// The resume's own deadline passed while the turn runs on (a
			// timeout of the turn itself comes after its terminal
			// snapshot, which ended the stream), or while a queued turn
			// waits to start: resume again.
			s.gap = true
			s.waiting = s.queued != nil && s.Sequence() < 0
			return nil, false
		}
		s.raw = append(s.raw[:0], line...)
		s.end(&Error{Kind: KindDiagnostic, Op: "stream", Diagnostic: *ev.Diagnostic, Sequence: -1})
		return nil, false
	case ev.Kind != protocol.EventSnapshot, ev.Sequence <= s.after, !s.cursor.ApplyEvent(ev):
		return nil, false // not a snapshot, or one held already
	}
	s.raw = append(s.raw[:0], line...)
	s.failures = 0
	s.ended = ev.Snapshot.Status != protocol.StatusStreaming
	s.shown = contentLength(ev)
	return ev, true
}

// provisionalOf returns the provisional snapshot an open append line
// (partial) makes, or nil when it shows nothing new.
func (s *Stream) provisionalOf(partial []byte) *protocol.Event {
	content, ok := s.cursor.Provisional(partial)
	if !ok || utf16Len(content) <= s.shown {
		return nil
	}
	ev := s.cursor.Snapshot()
	msgs := ev.Snapshot.Messages
	msgs[len(msgs)-1].Content = content
	s.shown, s.raw, s.provisional = utf16Len(content), nil, true
	return ev
}

// contentLength is the UTF-16 length of a snapshot's last message's
// content, what a provisional snapshot must exceed.
func contentLength(ev *protocol.Event) int {
	msgs := ev.Snapshot.Messages
	if len(msgs) == 0 {
		return 0
	}
	return utf16Len(msgs[len(msgs)-1].Content)
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// Drain reads the rest of the stream without decoding its lines (OnLine
// still sees each) and returns its last line decoded: what a benchmark
// or a check that needs only the end asks for, at little CPU. A terminal
// snapshot returns (event, nil); otherwise the event, when the last line
// decodes, comes with the error: a KindDiagnostic *Error for a diagnostic
// line, KindIncomplete for a stream that ended without a terminal line,
// KindNetwork for a read that failed, ctx's error when it ended, and
// KindInvalidLine (with a nil event) for a last line that is not a turn
// event. Drain neither applies the cursor nor resumes.
func (s *Stream) Drain() (*protocol.Event, error) {
	if s.err != nil || s.ended {
		ev, _ := protocol.DecodeTurnEvent(s.raw)
		if s.err != nil {
			return ev, s.err
		}
		return ev, nil
	}
	last := append([]byte(nil), s.raw...)
	var rerr error
	for s.lines != nil {
		if s.ctx.Err() != nil {
			rerr = s.ctx.Err()
			break
		}
		line, _, err := s.lines.next(false)
		if err != nil {
			rerr = err
			break
		}
		if s.opts.OnLine != nil {
			s.opts.OnLine(line)
		}
		last = append(last[:0], line...)
	}
	_ = s.Close()
	s.raw = last
	var ev *protocol.Event
	if len(last) > 0 {
		var diag *protocol.Diagnostic
		if ev, diag = protocol.DecodeTurnEvent(last); diag != nil {
			return nil, s.fail(&Error{Kind: KindInvalidLine, Op: "stream", Diagnostic: *diag, Sequence: -1})
		}
	}
	switch {
	case s.ctx.Err() != nil:
		return ev, s.fail(s.ctx.Err())
	case rerr != nil && rerr != io.EOF && !errors.Is(rerr, errTruncatedLine):
		return ev, s.fail(networkError("stream", rerr))
	case ev != nil && ev.Kind == protocol.EventDiagnostic:
		return ev, s.fail(&Error{Kind: KindDiagnostic, Op: "stream", Diagnostic: *ev.Diagnostic, Sequence: -1})
	case ev != nil && ev.Kind == protocol.EventSnapshot && ev.Snapshot.Status != protocol.StatusStreaming:
		s.ended = true
		return ev, nil
	}
	return ev, s.fail(&Error{Kind: KindIncomplete, Op: "stream", Sequence: -1,
		Diagnostic: clientDiagnostic(CodeStreamIncomplete, "The turn stream ended before the turn did.", true)})
}
