package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/sessionapi"
	"github.com/turnstream/turnstream/pkg/turn"
)

// benchSubject is the dev-mode principal every benchmark session belongs to.
const benchSubject = "bench"

// benchIDs numbers requests for benchIDHeader.
var benchIDs atomic.Int64

// turnResult is what a client saw of one POST /turn/.
type turnResult struct {
	BenchID string
	Status  int // HTTP status; 0 when the request failed before a response
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
	// submitOptions.RecordLines).
	Received []lineRecord
}

// lineRecord is one NDJSON line as the client received it.
type lineRecord struct {
	Arrived   time.Time
	EmittedAt time.Time // the line's emittedAt (millisecond precision); zero if unreadable
	Event     string    // protocol.EventSnapshot or protocol.EventDiagnostic
	Status    string    // a snapshot's status
}

// readLineRecord reads the fields of a line that lineRecord keeps (a
// light decode: the last line gets the strict decoder).
func readLineRecord(line []byte, arrived time.Time) lineRecord {
	var l struct {
		Event     string `json:"event"`
		EmittedAt string `json:"emittedAt"`
		Payload   struct {
			Status string `json:"status"`
		} `json:"payload"`
	}
	_ = json.Unmarshal(line, &l) // an undecodable line keeps zero fields
	r := lineRecord{Arrived: arrived, Event: l.Event, Status: l.Payload.Status}
	if t, err := time.Parse(time.RFC3339Nano, l.EmittedAt); err == nil {
		r.EmittedAt = t
	}
	return r
}

// acknowledged reports whether the stream's last line is a terminal
// snapshot with status complete: the turn the client may rely on.
func (r *turnResult) acknowledged() bool {
	return !r.Disconnected && r.Last != nil && r.Last.Snapshot != nil && r.Last.Snapshot.Status == protocol.StatusComplete
}

// lastDiagnostic returns the code of a last-line stream diagnostic, or
// of the error of a last snapshot that is a lost turn's record
// (TURN_LOST), or "".
func (r *turnResult) lastDiagnostic() string {
	switch {
	case r.Last == nil:
	case r.Last.Diagnostic != nil:
		return r.Last.Diagnostic.Code
	case r.Last.Snapshot != nil && r.Last.Snapshot.Error != nil && r.Last.Snapshot.Error.Code == protocol.CodeTurnLost:
		return protocol.CodeTurnLost
	}
	return ""
}

// submitOptions shape one submission.
type submitOptions struct {
	// TurnScope sends X-Turnstream-Snapshot-Scope: turn.
	TurnScope bool
	// DisconnectAfter, when > 0, cancels the request after that many lines.
	DisconnectAfter int
	// RecordLines keeps every line's arrival time and emittedAt.
	RecordLines bool
	// Aim asks the server for faults on the request's DynamoDB calls.
	Aim *aim
}

// submit posts one client.turn.submit to base+"/turn/" and reads the
// stream. Only the last line is decoded (with the strict protocol
// decoder), so client CPU stays small next to the server's.
func submit(ctx context.Context, c *http.Client, base, sessionID, turnID, input string, o submitOptions) *turnResult {
	res := &turnResult{BenchID: strconv.FormatInt(benchIDs.Add(1), 10)}
	body, err := protocol.EncodeEvent(&protocol.Event{
		EventID: "e-" + turnID, SessionID: sessionID, TurnID: turnID,
		EmittedAt: protocol.FormatTime(time.Now()), Kind: protocol.EventSubmit,
		Submit: &protocol.SubmitPayload{Input: input},
	})
	if err != nil {
		res.Err = err
		return res
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/turn/", bytes.NewReader(body))
	if err != nil {
		res.Err = err
		return res
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", auth.DevAuthorization(benchSubject))
	req.Header.Set(benchIDHeader, res.BenchID)
	if o.Aim != nil {
		req.Header.Set(benchFaultHeader, o.Aim.String())
	}
	if o.TurnScope {
		req.Header.Set(turn.SnapshotScopeHeader, "turn")
	}
	res.Sent = time.Now()
	resp, err := c.Do(req)
	if err != nil {
		res.Err = err
		return res
	}
	defer drain(resp.Body)
	res.Status = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(resp.Body)
		res.ErrorCode, res.Retryable = errorCode(raw)
		return res
	}
	var last []byte
	err = readLines(resp.Body, func(line []byte) bool {
		if res.Lines == 0 {
			res.FirstLine = time.Since(res.Sent)
		}
		if o.RecordLines {
			res.Received = append(res.Received, readLineRecord(line, time.Now()))
		}
		res.Lines++
		res.Bytes += len(line) + 1
		last = append(last[:0], line...)
		if o.DisconnectAfter > 0 && res.Lines >= o.DisconnectAfter {
			res.Disconnected = true
			cancel()
			return false
		}
		return true
	})
	res.Total = time.Since(res.Sent)
	if err != nil && !res.Disconnected {
		res.Err = fmt.Errorf("read stream: %w", err)
	}
	if len(last) > 0 {
		res.LastRaw = last
		ev, d := protocol.DecodeTurnEvent(last)
		if d != nil {
			res.Err = errors.Join(res.Err, fmt.Errorf("last line does not decode: %s", d.Code))
		}
		res.Last = ev
	}
	return res
}

// errorCode returns the code and retryable flag of an {"error":{...}}
// body ("" and false if it is not one).
func errorCode(raw []byte) (string, bool) {
	var b struct {
		Error struct {
			Code      string `json:"code"`
			Retryable bool   `json:"retryable"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &b) != nil {
		return "", false
	}
	return b.Error.Code, b.Error.Retryable
}

// getJSON GETs base+path as the bench principal into v (when non-nil) and
// returns the status and the benchIDHeader value sent.
func getJSON(ctx context.Context, c *http.Client, url string, v any) (int, string, error) {
	id := strconv.FormatInt(benchIDs.Add(1), 10)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, id, err
	}
	req.Header.Set("Authorization", auth.DevAuthorization(benchSubject))
	req.Header.Set(benchIDHeader, id)
	resp, err := c.Do(req)
	if err != nil {
		return 0, id, err
	}
	defer drain(resp.Body)
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, id, err
	}
	if resp.StatusCode == http.StatusOK && v != nil {
		if err := json.Unmarshal(raw, v); err != nil {
			return resp.StatusCode, id, fmt.Errorf("decode %s: %w", url, err)
		}
	}
	return resp.StatusCode, id, nil
}

// historyAll reads every turn of a session, oldest first, 100 per page.
func historyAll(ctx context.Context, c *http.Client, base, sessionID string) ([]sessionapi.TurnSummary, error) {
	var all []sessionapi.TurnSummary
	cursor := ""
	for {
		url := base + "/history/sessions/" + sessionID + "/turns?order=asc&limit=100"
		if cursor != "" {
			url += "&cursor=" + neturl.QueryEscape(cursor)
		}
		var page sessionapi.TurnPage
		status, _, err := getJSON(ctx, c, url, &page)
		if err != nil {
			return nil, err
		}
		if status != http.StatusOK {
			return nil, fmt.Errorf("history page of %s: status %d", sessionID, status)
		}
		all = append(all, page.Turns...)
		if !page.HasMore || page.NextCursor == nil {
			return all, nil
		}
		cursor = *page.NextCursor
	}
}
