package fate

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/turnstream/turnstream/pkg/api"
	turnpkg "github.com/turnstream/turnstream/pkg/turn"
)

// The harness's client: every request it makes is recorded in its
// session's log, with the receipt time of every line. It speaks to the
// dev servers as a browser would (dev auth, turn-scope snapshots, no
// keep-alive, so that a killed process never leaves a stale connection).

const (
	readLimit  = 4 << 20
	readBudget = 10 * time.Second // a history read, a stop, a replay
)

type client struct {
	hc  *http.Client
	ps  *procs
	ids atomic.Int64
	// streamTimeout is how long the harness reads a stream before it
	// gives up on it (its Ending is then "timeout").
	streamTimeout time.Duration
}

func newClient(ps *procs, streamTimeout time.Duration) *client {
	return &client{
		hc:            &http.Client{Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil}},
		ps:            ps,
		streamTimeout: streamTimeout,
	}
}

// lines guards a stream's lines, which a schedule reads while they
// arrive.
var linesMu sync.Mutex

func (s *Stream) addLine(l Line) {
	linesMu.Lock()
	defer linesMu.Unlock()
	s.Lines = append(s.Lines, l)
}

// lastSequence returns the sequence of the stream's newest line above 0,
// -1 when none.
func (s *Stream) lastSequence() int64 {
	linesMu.Lock()
	defer linesMu.Unlock()
	for i := len(s.Lines) - 1; i >= 0; i-- {
		if s.Lines[i].Sequence > 0 {
			return s.Lines[i].Sequence
		}
	}
	return -1
}

// submitBody is a submit event of turn, naming attachments when there
// are any.
func submitBody(session, turn, input string, attachments []string) []byte {
	return lineageBody(session, turn, input, attachments, "", "")
}

// lineageBody is submitBody with the lineage operation on turn parent
// when operation is not empty.
func lineageBody(session, turn, input string, attachments []string, operation, parent string) []byte {
	payload := map[string]any{"input": input}
	if len(attachments) > 0 {
		payload["attachments"] = attachments
	}
	if operation != "" {
		position := "a"
		if operation == "edit" {
			position = "u"
		}
		payload["lineage"] = map[string]string{"operation": operation, "parentTurnId": parent, "sourceMessageId": turnpkg.MessageID(parent, position)}
	}
	ev := map[string]any{
		"protocol": "agentskit.chat.turn", "version": 1,
		"eventId": "e-" + turn, "sessionId": session, "turnId": turn, "sequence": 0,
		"emittedAt": time.Now().UTC().Format("2006-01-02T15:04:05.000Z"),
		"event":     "client.turn.submit", "payload": payload,
	}
	b, _ := json.Marshal(ev) // a map of strings and numbers always encodes
	return b
}

// submit posts a turn and reads its stream; dropAfter > 0 closes it
// that long after the first line.
func (c *client) submit(ctx context.Context, lg *sessionLog, proc int, session, turn, input, multitask string) *Stream {
	return c.submitAs(ctx, lg, proc, session, turn, input, multitask, "", "")
}

// submitAs is submit with a lineage operation on turn parent ("" for
// none).
func (c *client) submitAs(ctx context.Context, lg *sessionLog, proc int, session, turn, input, multitask, operation, parent string) *Stream {
	st := &Stream{ID: int(c.ids.Add(1)), Kind: "submit", Proc: proc, Session: session, Turn: turn, Input: input, After: -1, Multitask: multitask, Parent: parent}
	req, err := http.NewRequest(http.MethodPost, c.ps.base(proc)+"/turn/", bytes.NewReader(lineageBody(session, turn, input, lg.filesOf(turn), operation, parent)))
	if err != nil {
		panic(err) // a fixed URL and body
	}
	req.Header.Set("Content-Type", "application/json")
	if multitask != "" {
		req.Header.Set(api.MultitaskHeader, multitask)
	}
	c.stream(ctx, lg, st, req, 0)
	return st
}

// resume opens a resume stream; dropAfter > 0 closes it that long after
// it opened.
func (c *client) resume(ctx context.Context, lg *sessionLog, proc int, session, turn string, after int64, dropAfter time.Duration) *Stream {
	st := &Stream{ID: int(c.ids.Add(1)), Kind: "resume", Proc: proc, Session: session, Turn: turn, After: after}
	u := c.ps.base(proc) + "/turn/" + api.StreamURL(session, turn)
	if after >= 0 {
		u += fmt.Sprintf("?after=%d", after)
	}
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		panic(err)
	}
	c.stream(ctx, lg, st, req, dropAfter)
	return st
}

// stream sends req and reads its NDJSON answer into st, filing st in lg
// as soon as it starts.
func (c *client) stream(ctx context.Context, lg *sessionLog, st *Stream, req *http.Request, dropAfter time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, c.streamTimeout)
	defer cancel()
	var dropped atomic.Bool
	if dropAfter > 0 {
		t := time.AfterFunc(dropAfter, func() { dropped.Store(true); cancel() })
		defer t.Stop()
	}
	req = req.WithContext(ctx)
	req.Header.Set("Authorization", lg.auth())
	req.Header.Set(api.SnapshotScopeHeader, api.ScopeTurn)
	st.Start = time.Now()
	lg.addStream(st)
	defer func() { st.End = time.Now() }()
	ending := func(err error) string {
		switch {
		case dropped.Load():
			return "dropped"
		case ctx.Err() != nil:
			return "timeout"
		}
		return "cut"
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		st.Ending, st.Err = "failed", err.Error()
		if dropped.Load() {
			st.Ending = "dropped"
		}
		return
	}
	defer func() { _ = resp.Body.Close() }()
	st.Status = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		st.ErrCode, st.Retryable = errorBody(resp.Body)
		st.Ending = "status"
		return
	}
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	for {
		raw, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(raw)) > 0 && err == nil {
			st.addLine(decodeLine(bytes.TrimSpace(raw), time.Now()))
		}
		if err == nil {
			continue
		}
		if errors.Is(err, io.EOF) && len(raw) == 0 {
			st.Ending = "eof"
		} else {
			st.Ending, st.Err = ending(err), err.Error()
			if len(raw) > 0 && st.Ending == "cut" {
				st.Err += fmt.Sprintf(" (a partial line of %d bytes)", len(raw))
			}
		}
		return
	}
}

// errorBody reads an error body's code and retryable
// ({"error":{"code","retryable"}}).
func errorBody(body io.Reader) (code string, retryable bool) {
	var e api.ErrorBody
	b, _ := io.ReadAll(io.LimitReader(body, readLimit))
	if json.Unmarshal(b, &e) != nil || e.Error == nil {
		return "", false
	}
	return e.Error.Code, e.Error.Retryable
}

// read reads one history route of session on proc.
func (c *client) read(ctx context.Context, lg *sessionLog, proc int, session, route string) *Read {
	r := &Read{ID: int(c.ids.Add(1)), Route: route, Proc: proc, Session: session}
	u := c.ps.base(proc) + "/history/sessions/" + session
	if route != "sessions" {
		u += "/" + route + "?order=asc&limit=100"
	}
	ctx, cancel := context.WithTimeout(ctx, readBudget+c.streamTimeout/2)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		panic(err)
	}
	req.Header.Set("Authorization", lg.auth())
	r.Start = time.Now()
	resp, err := c.hc.Do(req)
	if err != nil {
		r.End, r.Err = time.Now(), err.Error()
		lg.addRead(r)
		return r
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, readLimit))
	_ = resp.Body.Close()
	r.End, r.Status = time.Now(), resp.StatusCode
	defer lg.addRead(r)
	if err != nil {
		r.Err = err.Error()
		return r
	}
	if resp.StatusCode != http.StatusOK {
		r.ErrCode, _ = errorBody(bytes.NewReader(body))
		return r
	}
	switch route {
	case "sessions":
		r.Summary = new(wireSession)
		err = json.Unmarshal(body, r.Summary)
	case "turns":
		var page struct {
			Turns []wireTurn `json:"turns"`
		}
		err = json.Unmarshal(body, &page)
		r.Turns = page.Turns
	case "messages":
		var page struct {
			Messages []json.RawMessage `json:"messages"`
		}
		err = json.Unmarshal(body, &page)
		r.Messages = page.Messages
	default: // turns/<id>: one turn by id, on the active branch or not
		var t wireTurn
		err = json.Unmarshal(body, &t)
		r.Turns = []wireTurn{t}
	}
	if err != nil {
		r.Err = "decode: " + err.Error()
		r.Summary, r.Turns, r.Messages = nil, nil, nil
	}
	return r
}

// post sends a small JSON POST as auth and returns its status, its
// error code and whether the error is retryable.
func (c *client) post(ctx context.Context, proc int, auth, path string, body []byte) (int, string, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, readBudget+c.streamTimeout/2)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.ps.base(proc)+path, bytes.NewReader(body))
	if err != nil {
		panic(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", auth)
	req.Header.Set(api.SnapshotScopeHeader, api.ScopeTurn)
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, "", false, err
	}
	defer func() { _ = resp.Body.Close() }()
	code, retryable := "", false
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusAccepted {
		code, retryable = errorBody(resp.Body)
	} else if resp.StatusCode == http.StatusOK {
		// A replay that ran the turn again: read it to its end.
		_, _ = io.Copy(io.Discard, resp.Body)
	}
	return resp.StatusCode, code, retryable, nil
}

// stop posts POST /stop for a turn.
func (c *client) stop(ctx context.Context, lg *sessionLog, proc int, session, turn string) *Stop {
	s := &Stop{Proc: proc, Turn: turn, Start: time.Now()}
	b, _ := json.Marshal(map[string]string{"sessionId": session, "turnId": turn})
	var err error
	s.Status, s.ErrCode, s.Retryable, err = c.post(ctx, proc, lg.auth(), "/turn/stop", b)
	s.End = time.Now()
	if err != nil {
		s.ErrCode = "error: " + strings.TrimSpace(err.Error())
	}
	lg.mu.Lock()
	lg.stops = append(lg.stops, s)
	lg.mu.Unlock()
	return s
}

// deleteSession sends DELETE /history/sessions/{id}.
func (c *client) deleteSession(ctx context.Context, lg *sessionLog, proc int, session string) *Delete {
	d := &Delete{Proc: proc, Start: time.Now()}
	ctx, cancel := context.WithTimeout(ctx, readBudget+c.streamTimeout/2)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, c.ps.base(proc)+"/history/sessions/"+session, nil)
	if err != nil {
		panic(err)
	}
	req.Header.Set("Authorization", lg.auth())
	resp, err := c.hc.Do(req)
	if err == nil {
		d.Status = resp.StatusCode
		if resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusAccepted {
			d.ErrCode, d.Retryable = errorBody(resp.Body)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	} else {
		d.ErrCode = "error: " + strings.TrimSpace(err.Error())
	}
	d.End = time.Now()
	lg.mu.Lock()
	lg.deletes = append(lg.deletes, d)
	lg.mu.Unlock()
	return d
}

// selectTurn sends POST /history/sessions/{id}/turns/{turn}/select.
func (c *client) selectTurn(ctx context.Context, lg *sessionLog, proc int, session, turn string) *Select {
	sel := &Select{Proc: proc, Turn: turn, Start: time.Now()}
	var err error
	sel.Status, sel.ErrCode, sel.Retryable, err = c.post(ctx, proc, lg.auth(), "/history/sessions/"+session+"/turns/"+turn+"/select", nil)
	sel.End = time.Now()
	if err != nil {
		sel.ErrCode = "error: " + strings.TrimSpace(err.Error())
	}
	lg.mu.Lock()
	lg.selects = append(lg.selects, sel)
	lg.mu.Unlock()
	return sel
}

// fork sends POST /history/sessions/{id}/fork at turn, into the session
// "<id>-fork"; its answer is not judged (the store's tests judge forks),
// only what it did to the source.
func (c *client) fork(ctx context.Context, lg *sessionLog, proc int, session, turn string) {
	body, _ := json.Marshal(map[string]string{"atTurnId": turn, "sessionId": session + "-fork"}) // strings always encode
	_, _, _, _ = c.post(ctx, proc, lg.auth(), "/history/sessions/"+session+"/fork", body)
}

// replay submits a turn id again with its input.
func (c *client) replay(ctx context.Context, lg *sessionLog, proc int, session, turn, input string, final bool) *Replay {
	r := &Replay{Proc: proc, Turn: turn, Start: time.Now(), Final: final}
	var err error
	r.Status, r.ErrCode, r.Retryable, err = c.post(ctx, proc, lg.auth(), "/turn/", submitBody(session, turn, input, lg.filesOf(turn)))
	r.End = time.Now()
	if err != nil {
		r.ErrCode = "error: " + strings.TrimSpace(err.Error())
	}
	lg.mu.Lock()
	lg.replays = append(lg.replays, r)
	lg.mu.Unlock()
	return r
}
