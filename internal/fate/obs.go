package fate

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"
)

// What clients saw: every stream with its lines, every history read,
// every stop. The checker reads nothing else of the dev servers.

// Event kinds of the wire (docs/protocol.md, the turn event envelope).
const (
	eventSnapshot   = "server.turn.snapshot"
	eventDiagnostic = "server.turn.diagnostic"
)

// Codes the checker reads (docs/protocol.md, payloads).
const (
	codeTurnLost          = "TURN_LOST"
	codeInterrupted       = "TURN_INTERRUPTED"
	codeIndeterminate     = "TURN_OUTCOME_INDETERMINATE"
	codeAlreadyCompleted  = "TURN_ALREADY_COMPLETED"
	codeSessionBusy       = "SESSION_BUSY"
	codeServerTimeout     = "SERVER_TIMEOUT"
	codeRequestCancelled  = "REQUEST_CANCELLED"
	codeServerInternal    = "SERVER_INTERNAL"
	codeSessionConflict   = "SESSION_CONFLICT"
	codeTurnNotFound      = "TURN_NOT_FOUND"
	statusStreaming       = "streaming"
	statusComplete        = "complete"
	statusError           = "error"
	historyRunning        = "running"
	historyInterrupted    = "interrupted"
	outcomeCompleted      = "completed"
	outcomeIndeterminate  = "indeterminate"
	stopLatencyUnmeasured = -1
)

// Line is one NDJSON line of a stream.
type Line struct {
	Recv      time.Time // when the harness read it
	Event     string
	TurnID    string
	Sequence  int64
	Emitted   time.Time // emittedAt (millisecond precision)
	Status    string    // a snapshot's status
	Code      string    // a snapshot's error code, or a diagnostic's code
	Retryable bool      // a diagnostic's
	// Messages are a terminal snapshot's messages, canonical JSON; a
	// streaming snapshot keeps only their head and tail, for evidence
	// (a long run holds hundreds of thousands of lines).
	Messages string
	// Key is a digest of the event kind and the canonical payload: what
	// one sequence must carry wherever it appears (I6).
	Key string
	Bad string // why the line does not decode ("" when it does)
}

// terminal reports whether l ends a stream: a complete or error
// snapshot, or a diagnostic.
func (l *Line) terminal() bool {
	switch l.Event {
	case eventSnapshot:
		return l.Status == statusComplete || l.Status == statusError
	case eventDiagnostic:
		return true
	}
	return false
}

// fate is the terminal state l shows of its turn, ok false when it shows
// none: a diagnostic at sequence 0 is "no state of the turn", and the
// trailing SERVER_TIMEOUT/REQUEST_CANCELLED diagnostic repeats its
// snapshot's error.
func (l *Line) fate() (f fateState, ok bool) {
	switch {
	case l.Event == eventSnapshot && l.Status == statusComplete:
		return fateState{Kind: statusComplete, Messages: l.Messages}, true
	case l.Event == eventSnapshot && l.Status == statusError:
		return fateState{Kind: kindOfError(l.Code), Code: l.Code, Messages: l.Messages}, true
	case l.Event == eventDiagnostic && l.Sequence > 0 && l.Code == codeTurnLost:
		return fateState{Kind: codeTurnLost, Code: l.Code, Messages: "none"}, true
	}
	return fateState{}, false
}

func kindOfError(code string) string {
	switch code {
	case codeTurnLost:
		return codeTurnLost
	case codeInterrupted:
		return historyInterrupted
	}
	return statusError
}

// fateState is a turn's terminal state as one observation shows it.
type fateState struct {
	Kind     string // complete, interrupted, error or TURN_LOST
	Code     string
	Messages string // canonical JSON; "none" for a lost turn without messages
}

func (f fateState) String() string {
	s := f.Kind
	if f.Code != "" && f.Code != f.Kind {
		s += " " + f.Code
	}
	return s
}

// same reports whether two observations of a terminal state agree.
// "none" (a lost turn without messages) agrees only with a lost state.
func (f fateState) same(g fateState) bool {
	if f.Kind != g.Kind || f.Code != g.Code {
		return false
	}
	if f.Messages == "none" || g.Messages == "none" {
		return true // the record without messages is the same decision
	}
	return f.Messages == g.Messages
}

// Stream is one submit or resume request and what it delivered.
type Stream struct {
	ID      int
	Kind    string // "submit" or "resume"
	Proc    int
	Session string
	Turn    string
	Input   string // a submit's input
	After   int64  // a resume's after (-1: none)
	Start   time.Time
	End     time.Time
	Status  int    // HTTP status; 0 without an answer
	ErrCode string // the error body's code of a non-200
	// Retryable is the error body's retryable of a non-200.
	Retryable bool
	// Multitask is a submit's X-Turnstream-Multitask ("" when none).
	Multitask string
	// Parent is, on a submit with lineage, the turn it replaces.
	Parent string
	Lines  []Line
	// Ending is how the stream ended: "eof" (cleanly), "cut" (the
	// connection broke), "dropped" (the harness closed it), "timeout"
	// (the harness gave up), "failed" (no answer: connection refused or
	// broken before the header), "status" (a non-200 answer).
	Ending string
	Err    string
	// Final marks a resume of the quiescent round.
	Final bool
}

func (s *Stream) last() *Line {
	if len(s.Lines) == 0 {
		return nil
	}
	return &s.Lines[len(s.Lines)-1]
}

func (s *Stream) String() string {
	after := ""
	if s.Kind == "resume" {
		after = fmt.Sprintf(" after=%d", s.After)
	}
	return fmt.Sprintf("%s#%d %s on p%d%s [%s..%s] HTTP %d %s, %d lines, %s",
		s.Kind, s.ID, s.Turn, s.Proc, after, clock(s.Start), clock(s.End), s.Status, s.ErrCode, len(s.Lines), s.Ending)
}

// Read is one history read.
type Read struct {
	ID         int
	Route      string // "sessions", "turns" or "messages"
	Proc       int
	Session    string
	Start, End time.Time
	Status     int
	ErrCode    string
	Summary    *wireSession
	Turns      []wireTurn
	Messages   []json.RawMessage
	Err        string
}

func (r *Read) String() string {
	return fmt.Sprintf("read#%d /%s on p%d [%s..%s] HTTP %d %s", r.ID, r.Route, r.Proc, clock(r.Start), clock(r.End), r.Status, r.ErrCode)
}

// Stop is one POST /stop.
type Stop struct {
	Proc       int
	Turn       string
	Start, End time.Time
	Status     int
	ErrCode    string
	Retryable  bool
	// DuringCheckpointFaults says the stop was sent while a checkpoint
	// fault window of its session was open.
	DuringCheckpointFaults bool
	// Series is the start of the first stop of a client that sends it
	// again after each retryable answer (its Start when it is the first).
	Series time.Time
}

// Delete is one DELETE /history/sessions/{id} (a delete schedule's).
type Delete struct {
	Proc       int
	Start, End time.Time
	Status     int
	ErrCode    string
	Retryable  bool
}

// Select is a select of a version of an answer (docs/branches.md).
type Select struct {
	Proc       int
	Turn       string
	Start, End time.Time
	Status     int
	ErrCode    string
	Retryable  bool
}

func (s *Select) String() string {
	return fmt.Sprintf("select %s on p%d [%s..%s] HTTP %d %s", s.Turn, s.Proc, clock(s.Start), clock(s.End), s.Status, s.ErrCode)
}

func (d *Delete) String() string {
	return fmt.Sprintf("delete on p%d [%s..%s] HTTP %d %s", d.Proc, clock(d.Start), clock(d.End), d.Status, d.ErrCode)
}

// Replay is a submission of a turn id whose turn already ran.
type Replay struct {
	Proc       int
	Turn       string
	Start, End time.Time
	Status     int
	ErrCode    string
	Retryable  bool
	Final      bool // sent at quiescence
}

// wireSession is the part of GET /sessions/{id} the checker reads.
type wireSession struct {
	CurrentTurn *struct {
		TurnID    string `json:"turnId"`
		Status    string `json:"status"`
		ExpiresAt int64  `json:"expiresAt"`
		Sequence  int64  `json:"sequence"`
	} `json:"currentTurn"`
	Cursor  int64 `json:"cursor"`
	Session *struct {
		TerminalTurns []struct {
			TurnID  string `json:"turnId"`
			Outcome string `json:"outcome"`
		} `json:"terminalTurns"`
	} `json:"session"`
}

// wireTurn is one turn of GET /sessions/{id}/turns.
type wireTurn struct {
	TurnID    string          `json:"turnId"`
	Ordinal   int64           `json:"ordinal"`
	Status    string          `json:"status"`
	Messages  json.RawMessage `json:"messages"`
	Error     *wireDiagnostic `json:"error"`
	ExpiresAt *int64          `json:"expiresAt"`
	// Siblings are the versions of the turn's answer; Superseded is set
	// on a turn read by id off the active branch (docs/branches.md).
	Siblings *struct {
		TurnIDs []string `json:"turnIds"`
	} `json:"siblings"`
	Superseded bool `json:"superseded"`
}

type wireDiagnostic struct {
	Code      string `json:"code"`
	Retryable bool   `json:"retryable"`
}

// fate is the terminal state t shows, ok false while it runs.
func (t *wireTurn) fate() (fateState, bool) {
	code := ""
	if t.Error != nil {
		code = t.Error.Code
	}
	msgs := canonical(t.Messages)
	switch t.Status {
	case historyRunning:
		return fateState{}, false
	case statusComplete:
		return fateState{Kind: statusComplete, Code: code, Messages: msgs}, true
	case historyInterrupted:
		return fateState{Kind: historyInterrupted, Code: code, Messages: msgs}, true
	case statusError:
		return fateState{Kind: kindOfError(code), Code: code, Messages: msgs}, true
	}
	return fateState{Kind: "status " + t.Status, Code: code, Messages: msgs}, true
}

// userContent returns the content of t's first message when it is the
// user's.
func (t *wireTurn) userContent() (string, bool) {
	var msgs []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	if json.Unmarshal(t.Messages, &msgs) != nil || len(msgs) == 0 || msgs[0].Role != "user" {
		return "", false
	}
	return msgs[0].Content, true
}

// decodeLine decodes one stream line received at recv.
func decodeLine(raw []byte, recv time.Time) Line {
	l := Line{Recv: recv}
	var ev struct {
		Event     string          `json:"event"`
		TurnID    string          `json:"turnId"`
		Sequence  int64           `json:"sequence"`
		EmittedAt string          `json:"emittedAt"`
		Payload   json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(raw, &ev); err != nil {
		l.Bad = "not a JSON event: " + err.Error()
		return l
	}
	l.Event, l.TurnID, l.Sequence = ev.Event, ev.TurnID, ev.Sequence
	if t, err := time.Parse(time.RFC3339Nano, ev.EmittedAt); err == nil {
		l.Emitted = t
	} else {
		l.Bad = "emittedAt: " + err.Error()
	}
	sum := sha256.Sum256([]byte(ev.Event + " " + canonical(ev.Payload)))
	l.Key = hex.EncodeToString(sum[:])
	switch ev.Event {
	case eventSnapshot:
		var p struct {
			Messages json.RawMessage `json:"messages"`
			Status   string          `json:"status"`
			Error    *wireDiagnostic `json:"error"`
		}
		if err := json.Unmarshal(ev.Payload, &p); err != nil {
			l.Bad = "snapshot payload: " + err.Error()
			return l
		}
		l.Status, l.Messages = p.Status, canonical(p.Messages)
		if !l.terminal() {
			l.Messages = brief(l.Messages)
		}
		if p.Error != nil {
			l.Code = p.Error.Code
		}
	case eventDiagnostic:
		var d wireDiagnostic
		if err := json.Unmarshal(ev.Payload, &d); err != nil {
			l.Bad = "diagnostic payload: " + err.Error()
			return l
		}
		l.Code, l.Retryable = d.Code, d.Retryable
	}
	return l
}

// canonical re-encodes JSON with sorted object keys, so that equal values
// compare equal as strings.
func canonical(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "null"
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "invalid:" + string(raw)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "invalid:" + string(raw)
	}
	return string(b)
}

// describe is a line as evidence: its times, sequence, kind and state.
func (l *Line) describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seq %d ", l.Sequence)
	switch l.Event {
	case eventSnapshot:
		fmt.Fprintf(&b, "snapshot %s", l.Status)
	case eventDiagnostic:
		fmt.Fprintf(&b, "diagnostic")
	default:
		fmt.Fprintf(&b, "%s", l.Event)
	}
	if l.Code != "" {
		fmt.Fprintf(&b, " %s", l.Code)
	}
	if l.Event == eventDiagnostic {
		fmt.Fprintf(&b, " retryable=%v", l.Retryable)
	}
	fmt.Fprintf(&b, " emitted %s recv %s", clock(l.Emitted), clock(l.Recv))
	if l.Messages != "" {
		fmt.Fprintf(&b, " messages %s", brief(l.Messages))
	}
	return b.String()
}

// brief shortens s for evidence: its head, its length and its tail.
func brief(s string) string {
	const keep = 60
	if len(s) <= 2*keep+20 {
		return s
	}
	return fmt.Sprintf("%s…(%d bytes)…%s", s[:keep], len(s), s[len(s)-keep:])
}

// clock formats t for evidence (the harness and the dev servers share a
// clock).
func clock(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Format("15:04:05.000")
}

// sessionLog is every observation of one session, in the order made.
type sessionLog struct {
	mu   sync.Mutex
	plan *Plan
	// principal is the dev subject of the session's requests; quota the
	// submits of a quota schedule's bursts (on sessions of their own).
	principal string
	quota     []*Stream
	streams   []*Stream
	reads     []*Read
	stops     []*Stop
	replays   []*Replay
	deletes   []*Delete
	selects   []*Select
	inputs    map[string]string // turn id -> input
	// uploaded are an attach schedule's attachment ids by label, files
	// the ids each turn's submits name, uploadErrs the uploads that
	// failed, uploadProc the process that holds the files (a dev server
	// keeps uploads in its memory).
	uploaded   map[string]string
	uploadProc int
	files      map[string][]string
	uploadErrs []string
	hooks      []*hook
	windows    []*window
	firstRun   time.Time
}

// auth is the Authorization header of the session's requests.
func (s *sessionLog) auth() string {
	if s.principal == "" {
		return "Bearer dev.fate"
	}
	return "Bearer dev." + s.principal
}

// filesOf returns the attachment ids turn's submits name.
func (s *sessionLog) filesOf(turn string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.files[turn]
}

func (s *sessionLog) addStream(st *Stream) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.streams = append(s.streams, st)
}

func (s *sessionLog) addRead(r *Read) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads = append(s.reads, r)
}

// jsonUnmarshal decodes raw into v keeping numbers as written.
func jsonUnmarshal(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return dec.Decode(v)
}

// canonicalValue encodes a decoded value as canonical does.
func canonicalValue(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("invalid:%v", v)
	}
	return string(b)
}
