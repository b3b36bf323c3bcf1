package benchwire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/turnstream/turnstream/internal/loadcheck"
	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// The benchmark's clients are pkg/client's, as the bench principal, over
// HTTP clients whose transport adds the headers a request's context
// carries (loadcheck.Tag: the request id its DynamoDB calls are filed
// under, the faults it aims at).

// Subject is the dev-mode principal every benchmark session belongs to.
const Subject = "bench"

// countingConn counts the bytes read from a connection.
type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// NewHTTPClient returns a keep-alive client for up to conns parallel
// connections. With wire set, every connection counts the bytes it reads
// into wire and keep-alive is off, so one request is one connection.
func NewHTTPClient(conns int, wire *atomic.Int64) *http.Client {
	d := &net.Dialer{Timeout: 5 * time.Second}
	tr := &http.Transport{
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
		DialContext:         d.DialContext,
	}
	if wire != nil {
		tr.DisableKeepAlives = true
		tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return countingConn{Conn: c, n: wire}, nil
		}
	}
	return &http.Client{Transport: loadcheck.TagRequests(tr)}
}

// Client returns a client of w's three functions as the bench principal
// over hc. A dropped stream is not resumed: every section reads its
// streams as they come.
func (w *Wiring) Client(hc *http.Client) *client.Client { return w.ClientAs(hc, Subject) }

// ClientAs is Client as the dev-mode principal subject (a SafeId).
func (w *Wiring) ClientAs(hc *http.Client, subject string) *client.Client {
	c, err := client.New(client.Options{TurnURL: w.base + "/turn/", HistoryURL: w.base + "/history/", ArtifactsURL: w.base + "/artifacts/",
		HTTPClient: hc, Auth: client.Bearer(strings.TrimPrefix(auth.DevAuthorization(subject), "Bearer ")),
		Resume: client.ResumeOff})
	if err != nil { // w.base is a loopback http URL
		panic(err)
	}
	return c
}

// streamErr is what of a Drain error is a failure of the read: not the
// stream's own ending (a diagnostic line, or no terminal line), which its
// last line shows.
func streamErr(err error) error {
	var e *client.Error
	if errors.As(err, &e) && (e.Kind == client.KindDiagnostic || e.Kind == client.KindIncomplete) {
		return nil
	}
	return err
}

// Line is one NDJSON line a client received.
type Line struct {
	At       time.Time
	Bytes    int // with its newline
	Sequence int64
	Kind     string
	Status   string // a snapshot's status
	Code     string // a snapshot's error code, or a diagnostic's code
	// Answer is the runes of the snapshot's last assistant message.
	Answer int
	// Messages is the snapshot's messages as JSON (kept for the last line
	// and when asked).
	Messages []byte
	Err      string // the decoder's diagnostic code when the line does not decode
}

// StreamLog is everything a client saw of one NDJSON stream.
type StreamLog struct {
	Sent  time.Time
	Lines []Line
	// Err is a refusal (a *client.Error of KindHTTP: Status says which)
	// or a failed read.
	Err error
}

// Last returns the last line, or nil.
func (s *StreamLog) Last() *Line {
	if len(s.Lines) == 0 {
		return nil
	}
	return &s.Lines[len(s.Lines)-1]
}

// Status is the HTTP status of a refusal, 0 otherwise.
func (s *StreamLog) Status() int {
	var e *client.Error
	if errors.As(s.Err, &e) && e.Kind == client.KindHTTP {
		return e.Status
	}
	return 0
}

// Follow opens a stream with open and reads it into a StreamLog. Every
// line is decoded with the strict protocol decoder when decodeAll is set
// (else only its size and time are kept, and the last line is decoded).
// onLine, when set, is called after each line.
func Follow(open func(client.StreamOptions) (*client.Stream, error), decodeAll, keepMessages bool, onLine func(*Line)) *StreamLog {
	log := &StreamLog{Sent: time.Now()}
	var lastRaw []byte
	s, err := open(client.StreamOptions{OnLine: func(b []byte) {
		l := Line{At: time.Now(), Bytes: len(b) + 1}
		if decodeAll {
			decodeLine(&l, b, keepMessages)
		} else {
			lastRaw = append(lastRaw[:0], b...)
		}
		log.Lines = append(log.Lines, l)
		if onLine != nil {
			onLine(&log.Lines[len(log.Lines)-1])
		}
	}})
	if err != nil {
		log.Err = err
		return log
	}
	_, err = s.Drain()
	if err = streamErr(err); err != nil && !errors.Is(err, context.Canceled) {
		log.Err = fmt.Errorf("read stream: %w", err)
	}
	if !decodeAll && len(lastRaw) > 0 {
		decodeLine(log.Last(), lastRaw, true)
	}
	return log
}

// decodeLine fills l from the raw line b.
func decodeLine(l *Line, b []byte, keepMessages bool) {
	ev, d := protocol.DecodeTurnEvent(b)
	if d != nil {
		l.Err = d.Code
		return
	}
	l.Sequence, l.Kind = ev.Sequence, ev.Kind
	switch {
	case ev.Snapshot != nil:
		l.Status = ev.Snapshot.Status
		if ev.Snapshot.Error != nil {
			l.Code = ev.Snapshot.Error.Code
		}
		for i := len(ev.Snapshot.Messages) - 1; i >= 0; i-- {
			if ev.Snapshot.Messages[i].Role == protocol.RoleAssistant {
				l.Answer = utf8.RuneCountInString(ev.Snapshot.Messages[i].Content)
				break
			}
		}
		if keepMessages {
			l.Messages, _ = json.Marshal(ev.Snapshot.Messages)
		}
	case ev.Diagnostic != nil:
		l.Code = ev.Diagnostic.Code
	}
}

// Submitting returns Follow's open function for a submit of input as
// turnID of sessionID through c (turn-scoped snapshots with turnScope).
func Submitting(ctx context.Context, c *client.Client, sessionID, turnID, input string, turnScope bool) func(client.StreamOptions) (*client.Stream, error) {
	return func(o client.StreamOptions) (*client.Stream, error) {
		if turnScope {
			o.Scope = api.ScopeTurn
		}
		return c.Submit(ctx, client.Submit{SessionID: sessionID, TurnID: turnID, EventID: "e-" + turnID, Input: input, StreamOptions: o})
	}
}

// InputOf is an ASCII input of n bytes; the echo model answers "Echo: "
// and the input, so the answer is n + 6 characters.
func InputOf(n int) string {
	const s = "A checkpoint holds what changed since the previous one; the final save replaces them all. "
	return strings.Repeat(s, n/len(s)+1)[:n]
}

// TurnsPage reads one page of a session's turns through c as a request of
// its own bench id, which it returns (its trace's key).
func TurnsPage(ctx context.Context, c *client.Client, sessionID string, o client.PageOptions) (*client.TurnPage, string, error) {
	id := loadcheck.NextID()
	p, err := c.Turns(loadcheck.Tag(ctx, id, nil), sessionID, o)
	return p, id, err
}
