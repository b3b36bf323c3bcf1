package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/turn"
)

// line is one NDJSON line a client received.
type line struct {
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

// streamLog is everything a client saw of one NDJSON stream.
type streamLog struct {
	Status int
	Sent   time.Time
	Lines  []line
	Err    error
}

// last returns the last line, or nil.
func (s *streamLog) last() *line {
	if len(s.Lines) == 0 {
		return nil
	}
	return &s.Lines[len(s.Lines)-1]
}

// follow reads an NDJSON response into a streamLog. Every line is
// decoded with the strict protocol decoder when decodeAll is set (else
// only its size and time are kept, and the last line is decoded). onLine,
// when set, is called after each line and stops the read by returning
// false.
func follow(ctx context.Context, c *http.Client, req *http.Request, decodeAll, keepMessages bool, onLine func(*line) bool) *streamLog {
	log := &streamLog{Sent: time.Now()}
	resp, err := c.Do(req.WithContext(ctx))
	if err != nil {
		log.Err = err
		return log
	}
	defer drain(resp.Body)
	log.Status = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(resp.Body)
		log.Err = fmt.Errorf("status %d %s", resp.StatusCode, apiErrorCode(raw))
		return log
	}
	var lastRaw []byte
	err = readLines(resp.Body, func(b []byte) bool {
		l := line{At: time.Now(), Bytes: len(b) + 1}
		if decodeAll {
			decodeLine(&l, b, keepMessages)
		} else {
			lastRaw = append(lastRaw[:0], b...)
		}
		log.Lines = append(log.Lines, l)
		return onLine == nil || onLine(&log.Lines[len(log.Lines)-1])
	})
	if err != nil && ctx.Err() == nil {
		log.Err = fmt.Errorf("read stream: %w", err)
	}
	if !decodeAll && len(lastRaw) > 0 {
		decodeLine(log.last(), lastRaw, true)
	}
	return log
}

// decodeLine fills l from the raw line b.
func decodeLine(l *line, b []byte, keepMessages bool) {
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
				l.Answer = runeLen(ev.Snapshot.Messages[i].Content)
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

// submitRequest is a POST /turn/ of client.turn.submit.
func submitRequest(base, sessionID, turnID, input string, turnScope bool) (*http.Request, error) {
	body, err := protocol.EncodeEvent(&protocol.Event{
		EventID: "e-" + turnID, SessionID: sessionID, TurnID: turnID,
		EmittedAt: protocol.FormatTime(time.Now()), Kind: protocol.EventSubmit,
		Submit: &protocol.SubmitPayload{Input: input},
	})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequest(http.MethodPost, base+"/turn/", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", auth.DevAuthorization(benchSubject))
	if turnScope {
		req.Header.Set(turn.SnapshotScopeHeader, "turn")
	}
	return req, nil
}

// resumeRequest is a GET of the resume route after sequence after.
func resumeRequest(base, sessionID, turnID string, after int64) (*http.Request, error) {
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("%s/turn/sessions/%s/turns/%s/stream?after=%d", base, sessionID, turnID, after), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", auth.DevAuthorization(benchSubject))
	return req, nil
}

// postStop sends POST /turn/stop for the turn and checks the 202.
func postStop(ctx context.Context, c *http.Client, base, sessionID, turnID string) error {
	body, _ := json.Marshal(map[string]string{"sessionId": sessionID, "turnId": turnID})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/turn/stop", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", auth.DevAuthorization(benchSubject))
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer drain(resp.Body)
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("stop: status %d", resp.StatusCode)
	}
	return nil
}

// inputOf is an ASCII input of n bytes; the echo model answers "Echo: "
// and the input, so the answer is n + 6 characters.
func inputOf(n int) string {
	const s = "A checkpoint holds what changed since the previous one; the final save replaces them all. "
	return strings.Repeat(s, n/len(s)+1)[:n]
}

// apiErrorCode returns the code of an {"error":{"code":...}} body, or "".
func apiErrorCode(raw []byte) string {
	var b struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &b) != nil {
		return ""
	}
	return b.Error.Code
}
