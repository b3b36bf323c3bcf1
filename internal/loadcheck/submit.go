package loadcheck

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// Result is what a client saw of one POST /turn/.
type Result struct {
	ID     string
	Status int // HTTP status; 0 when the request failed before a response
	// ErrorCode and Retryable are the JSON error of a non-200 response.
	ErrorCode string
	Retryable bool
	// Lines is the number of NDJSON lines received; Bytes the body bytes.
	Lines int
	Bytes int
	// FirstLine is when the first line arrived, measured from Sent.
	Sent      time.Time
	FirstLine time.Duration
	// Total is Sent -> the end of the body (or the disconnect).
	Total time.Duration
	// Last is the last complete line received, decoded (nil if none or
	// undecodable); LastRaw its bytes.
	Last    *protocol.Event
	LastRaw []byte
	// Disconnected is set when the client cancelled the request mid-stream.
	Disconnected bool
	// Err is a transport or decoding failure.
	Err error
	// Received is every line with its arrival time (with
	// SubmitOptions.RecordLines).
	Received []LineRecord
}

// LineRecord is one NDJSON line as the client received it.
type LineRecord struct {
	Arrived   time.Time
	EmittedAt time.Time // the line's emittedAt (millisecond precision); zero if unreadable
	Event     string    // protocol.EventSnapshot or protocol.EventDiagnostic
	Status    string    // a snapshot's status
}

// readLine reads the fields of a line that LineRecord keeps (a
// light decode: the last line gets the strict decoder).
func readLine(line []byte, arrived time.Time) LineRecord {
	var l struct {
		Event     string `json:"event"`
		EmittedAt string `json:"emittedAt"`
		Payload   struct {
			Status string `json:"status"`
		} `json:"payload"`
	}
	_ = json.Unmarshal(line, &l) // an undecodable line keeps zero fields
	r := LineRecord{Arrived: arrived, Event: l.Event, Status: l.Payload.Status}
	if t, err := time.Parse(time.RFC3339Nano, l.EmittedAt); err == nil {
		r.EmittedAt = t
	}
	return r
}

// Acknowledged reports whether the stream's last line is a terminal
// snapshot with status complete: the turn the client may rely on.
func (r *Result) Acknowledged() bool {
	return !r.Disconnected && r.Last != nil && r.Last.Snapshot != nil && r.Last.Snapshot.Status == protocol.StatusComplete
}

// LastDiagnostic returns the code of a last-line stream diagnostic, or
// of the error of a last snapshot that is a lost turn's record
// (TURN_LOST), or "".
func (r *Result) LastDiagnostic() string {
	switch {
	case r.Last == nil:
	case r.Last.Diagnostic != nil:
		return r.Last.Diagnostic.Code
	case r.Last.Snapshot != nil && r.Last.Snapshot.Error != nil && r.Last.Snapshot.Error.Code == protocol.CodeTurnLost:
		return protocol.CodeTurnLost
	}
	return ""
}

// SubmitOptions shape one submission.
type SubmitOptions struct {
	// TurnScope asks for turn-scoped snapshots.
	TurnScope bool
	// DisconnectAfter, when > 0, cancels the request after that many lines.
	DisconnectAfter int
	// RecordLines keeps every line's arrival time and emittedAt.
	RecordLines bool
	// Aim asks the server for faults on the request's DynamoDB calls.
	Aim *aim
}

// submit submits one turn through c and reads its stream. Only the last
// line is decoded (with the strict protocol decoder: client.Stream.Drain),
// so client CPU stays small next to the server's.
func Submit(ctx context.Context, c *client.Client, sessionID, turnID, input string, o SubmitOptions) *Result {
	res := &Result{ID: NextID()}
	ctx, cancel := context.WithCancel(Tag(ctx, res.ID, o.Aim))
	defer cancel()
	sub := client.Submit{SessionID: sessionID, TurnID: turnID, EventID: "e-" + turnID, Input: input}
	if o.TurnScope {
		sub.Scope = api.ScopeTurn
	}
	sub.OnLine = func(line []byte) {
		if res.Lines == 0 {
			res.FirstLine = time.Since(res.Sent)
		}
		if o.RecordLines {
			res.Received = append(res.Received, readLine(line, time.Now()))
		}
		res.Lines++
		res.Bytes += len(line) + 1
		if o.DisconnectAfter > 0 && res.Lines >= o.DisconnectAfter {
			res.Disconnected = true
			cancel()
		}
	}
	res.Sent = time.Now()
	s, err := c.Submit(ctx, sub)
	if err != nil {
		var e *client.Error
		if errors.As(err, &e) && e.Kind == client.KindHTTP {
			res.Status = e.Status
			if e.Code() != client.CodeResponseInvalid {
				res.ErrorCode, res.Retryable = e.Code(), e.Retryable()
			}
			return res
		}
		res.Err = err
		return res
	}
	res.Status = http.StatusOK
	res.Last, err = s.Drain()
	res.Total = time.Since(res.Sent)
	if raw := s.Line(); len(raw) > 0 {
		res.LastRaw = append([]byte(nil), raw...)
	}
	if err := endOf(err); err != nil && !res.Disconnected {
		res.Err = fmt.Errorf("read stream: %w", err)
	}
	return res
}

// endOf is what of a Drain error is a failure of the read: not the
// stream's own ending (a diagnostic line, or no terminal line), which its
// last line shows.
func endOf(err error) error {
	var e *client.Error
	if errors.As(err, &e) && (e.Kind == client.KindDiagnostic || e.Kind == client.KindIncomplete) {
		return nil
	}
	return err
}
