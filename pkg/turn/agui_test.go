package turn_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/agui"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/turn"
)

// aguiFrame is one SSE frame of an AG-UI stream: its id and its event.
type aguiFrame struct {
	id agui.EventID
	ev map[string]any
}

func (f aguiFrame) typ() string { s, _ := f.ev["type"].(string); return s }
func (f aguiFrame) str(k string) string {
	s, _ := f.ev[k].(string)
	return s
}

// parseAGUI splits raw into frames; every frame must be "id: X\ndata: JSON".
func parseAGUI(tb testing.TB, raw []byte) []aguiFrame {
	tb.Helper()
	if len(raw) == 0 {
		return nil
	}
	if !bytes.HasSuffix(raw, []byte("\n\n")) {
		tb.Fatalf("stream does not end with a blank line: %q", raw)
	}
	var out []aguiFrame
	for _, fr := range strings.Split(strings.TrimSuffix(string(raw), "\n\n"), "\n\n") {
		lines := strings.Split(fr, "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "id: ") || !strings.HasPrefix(lines[1], "data: ") {
			tb.Fatalf("frame %q", fr)
		}
		id, err := agui.ParseEventID(strings.TrimPrefix(lines[0], "id: "))
		if err != nil {
			tb.Fatalf("frame id %q: %v", lines[0], err)
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(strings.TrimPrefix(lines[1], "data: ")), &ev); err != nil {
			tb.Fatalf("frame data %q: %v", lines[1], err)
		}
		out = append(out, aguiFrame{id: id, ev: ev})
	}
	return out
}

// idKey orders ids: "S.1" < "S.2" < "S".
func idKey(id agui.EventID) [2]int64 {
	if id.Index == 0 {
		return [2]int64{id.Sequence, math.MaxInt64}
	}
	return [2]int64{id.Sequence, int64(id.Index)}
}

func idLess(a, b agui.EventID) bool {
	ka, kb := idKey(a), idKey(b)
	return ka[0] < kb[0] || ka[0] == kb[0] && ka[1] < kb[1]
}

// checkAGUI checks what any AG-UI stream of turnstream must be: it starts
// with RUN_STARTED and ends with its only RUN_FINISHED or RUN_ERROR (when
// ended); ids never go back, and after the first frame always move on;
// text messages and tool calls open, stream and close in order, none open
// at RUN_FINISHED.
func checkAGUI(tb testing.TB, frames []aguiFrame, ended bool) {
	tb.Helper()
	if len(frames) == 0 || frames[0].typ() != agui.TypeRunStarted {
		tb.Fatalf("stream does not start with RUN_STARTED: %v", frames)
	}
	open, calls := map[string]bool{}, map[string]bool{}
	spans, thinking := map[string]bool{}, map[string]bool{} // reasoning spans and messages open
	for i, f := range frames {
		if i > 0 && !idLess(frames[i-1].id, f.id) && (i > 1 || idLess(f.id, frames[0].id)) {
			tb.Fatalf("id %s after %s", f.id, frames[i-1].id)
		}
		last := i == len(frames)-1
		switch typ := f.typ(); typ {
		case agui.TypeRunStarted:
			if i > 0 {
				tb.Fatalf("RUN_STARTED at frame %d", i)
			}
		case agui.TypeTextMessageStart:
			if open[f.str("messageId")] {
				tb.Fatalf("frame %d re-opens an open message", i)
			}
			open[f.str("messageId")] = true
		case agui.TypeTextMessageEnd:
			if !open[f.str("messageId")] {
				tb.Fatalf("frame %d: %s of a closed message", i, typ)
			}
			delete(open, f.str("messageId"))
		case agui.TypeReasoningStart:
			if spans[f.str("messageId")] {
				tb.Fatalf("frame %d re-opens an open reasoning span", i)
			}
			spans[f.str("messageId")] = true
		case agui.TypeReasoningMessageStart:
			if !spans[f.str("messageId")] || thinking[f.str("messageId")] || f.str("role") != agui.RoleReasoning {
				tb.Fatalf("frame %d: %v outside its span, re-opened, or not of role reasoning", i, f.ev)
			}
			thinking[f.str("messageId")] = true
		case agui.TypeReasoningMessageContent, agui.TypeReasoningMessageEnd:
			if !thinking[f.str("messageId")] || typ == agui.TypeReasoningMessageContent && f.str("delta") == "" {
				tb.Fatalf("frame %d: %s of a closed reasoning message or empty", i, typ)
			}
			if typ == agui.TypeReasoningMessageEnd {
				delete(thinking, f.str("messageId"))
			}
		case agui.TypeReasoningEnd:
			if !spans[f.str("messageId")] || thinking[f.str("messageId")] {
				tb.Fatalf("frame %d: REASONING_END of a closed span, or with its message open", i)
			}
			delete(spans, f.str("messageId"))
		case agui.TypeTextMessageContent:
			if len(thinking) > 0 {
				tb.Fatalf("frame %d: answer text while reasoning %v is open", i, thinking)
			}
			if !open[f.str("messageId")] || f.str("delta") == "" {
				tb.Fatalf("frame %d: %s of a closed message or empty", i, typ)
			}
		case agui.TypeToolCallStart:
			calls[f.str("toolCallId")] = true
		case agui.TypeToolCallArgs, agui.TypeToolCallEnd:
			if !calls[f.str("toolCallId")] {
				tb.Fatalf("frame %d: %s of a closed call", i, typ)
			}
			if typ == agui.TypeToolCallEnd {
				delete(calls, f.str("toolCallId"))
			}
		case agui.TypeRunFinished, agui.TypeRunError:
			if !last {
				tb.Fatalf("%s at frame %d of %d", typ, i, len(frames))
			}
			if typ == agui.TypeRunFinished && (len(open) > 0 || len(calls) > 0 || len(spans) > 0) {
				tb.Fatalf("RUN_FINISHED with open messages %v, calls %v or reasoning %v", open, calls, spans)
			}
		}
	}
	if end := frames[len(frames)-1].typ(); ended && end != agui.TypeRunFinished && end != agui.TypeRunError {
		tb.Fatalf("stream ends with %s", end)
	}
}

// aguiText applies frames to a client's texts by message id, as an AG-UI
// client does: a snapshot replaces them, a delta appends.
func aguiText(texts map[string]string, frames []aguiFrame) map[string]string {
	if texts == nil {
		texts = map[string]string{}
	}
	for _, f := range frames {
		switch f.typ() {
		case agui.TypeMessagesSnapshot:
			clear(texts)
			for _, m := range f.ev["messages"].([]any) {
				mm := m.(map[string]any)
				texts[mm["id"].(string)], _ = mm["content"].(string)
			}
		case agui.TypeTextMessageContent, agui.TypeReasoningMessageContent:
			texts[f.str("messageId")] += f.str("delta")
		}
	}
	return texts
}

// deltas concatenates the TEXT_MESSAGE_CONTENT deltas of message id.
func deltas(frames []aguiFrame, id string) string {
	var b strings.Builder
	for _, f := range frames {
		if f.typ() == agui.TypeTextMessageContent && f.str("messageId") == id {
			b.WriteString(f.str("delta"))
		}
	}
	return b.String()
}

// writeCorpus keeps raw as <name>.sse in $TURNSTREAM_AGUI_CORPUS when set:
// clients/js validates every event of these streams with @ag-ui/core's
// schemas (clients/js/test/agui.test.mjs).
func writeCorpus(tb testing.TB, name string, raw []byte) {
	dir := os.Getenv("TURNSTREAM_AGUI_CORPUS")
	if dir == "" {
		return
	}
	name = strings.NewReplacer("/", "-", " ", "-").Replace(name)
	if err := os.WriteFile(filepath.Join(dir, name+".sse"), raw, 0o644); err != nil {
		tb.Fatal(err)
	}
}

// aguiInput encodes a RunAgentInput whose last message is a user message
// with input (an assistant message when input is empty, as after an
// interrupt), with extra members.
func aguiInput(sessionID, turnID, input, extra string) []byte {
	msgs := `[{"id":"client-1","role":"user","content":"an earlier message the server ignores"}`
	if input != "" {
		b, _ := json.Marshal(input)
		msgs += `,{"id":"client-2","role":"user","content":` + string(b) + `}`
	} else {
		msgs += `,{"id":"client-3","role":"assistant","content":""}`
	}
	return []byte(`{"threadId":"` + sessionID + `","runId":"` + turnID + `","messages":` + msgs + `],"tools":[],"context":[],"state":{},"forwardedProps":{}` + extra + `}`)
}

// aguiPost runs POST /agui and reads the whole answer.
func (e *env) aguiPost(tb testing.TB, body []byte, hdr map[string]string) (int, []byte) {
	tb.Helper()
	resp := e.post(tb, context.Background(), turn.AGUIPath, body, hdr)
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	if resp.StatusCode == http.StatusOK && !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		tb.Fatalf("content type %q", resp.Header.Get("Content-Type"))
	}
	return resp.StatusCode, raw
}

// aguiRun posts a run that must stream, and checks and returns its frames.
func (e *env) aguiRun(tb testing.TB, name string, body []byte) []aguiFrame {
	tb.Helper()
	status, raw := e.aguiPost(tb, body, nil)
	if status != http.StatusOK {
		tb.Fatalf("POST /agui: %d %s", status, raw)
	}
	writeCorpus(tb, name, raw)
	frames := parseAGUI(tb, raw)
	checkAGUI(tb, frames, true)
	return frames
}

// aguiResume GETs the AG-UI resume route with Last-Event-ID lastID (none
// when empty) and returns the status and the body.
func (e *env) aguiResume(tb testing.TB, sessionID, turnID, lastID, query string) (int, []byte) {
	tb.Helper()
	req, err := http.NewRequest(http.MethodGet, e.srv.URL+"/agui/threads/"+sessionID+"/runs/"+turnID+query, nil)
	if err != nil {
		tb.Fatal(err)
	}
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return resp.StatusCode, raw
}

// stored returns the stored turn.
func (e *env) stored(tb testing.TB, sessionID, turnID string) *chat.Turn {
	tb.Helper()
	rec, err := e.store.FindTurn(context.Background(), sessionID, turnID, alice)
	if err != nil {
		tb.Fatal(err)
	}
	return rec
}

// TestAGUIRun: a run streams the turn the pipeline runs: RUN_STARTED, a
// snapshot of the session as stored (the client's history is not used),
// deltas whose concatenation is the stored answer exactly whatever the
// pacing, the final snapshot and RUN_FINISHED; the turn is recorded as a
// submit of the last user message would record it.
func TestAGUIRun(t *testing.T) {
	chunks := []string{"Grüße", ", 世界", " 😀", " and", " a rather longer tail of text"}
	for name, opt := range map[string]func(*turn.Options){
		"every state":     nil,
		"paced":           func(o *turn.Options) { o.SnapshotInterval = 20 * time.Millisecond },
		"with checkpoint": durable,
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, newStoreMemory(), &scriptModel{Chunks: chunks, Delay: 3 * time.Millisecond}, opt)
			e.submit(t, "s", "t0", "first turn", nil, nil).want(t, http.StatusOK, "")
			frames := e.aguiRun(t, "plain "+name, aguiInput("s", "t1", "hello", ""))
			rec := e.stored(t, "s", "t1")
			if rec.Status != chat.TurnComplete || rec.Messages[0].Content != "hello" {
				t.Fatalf("stored %+v", rec)
			}
			want := rec.Messages[1].Content
			if got := deltas(frames, "t1.a"); got != want {
				t.Errorf("deltas %q, stored %q", got, want)
			}
			snap := frames[1]
			if snap.typ() != agui.TypeMessagesSnapshot {
				t.Fatalf("second frame %v", snap.ev)
			}
			var ids []string
			for _, m := range snap.ev["messages"].([]any) {
				ids = append(ids, m.(map[string]any)["id"].(string))
			}
			if strings.Join(ids, ",") != "t0.u,t0.a,t1.u,t1.a" {
				t.Errorf("first snapshot %v: the stored session, not the client's history", ids)
			}
			last := frames[len(frames)-1]
			if last.typ() != agui.TypeRunFinished || last.str("runId") != "t1" || last.str("threadId") != "s" ||
				last.ev["outcome"].(map[string]any)["type"] != agui.OutcomeSuccess || last.id != (agui.EventID{Sequence: rec.LastSequence}) {
				t.Errorf("last frame %s %v (terminal sequence %d)", last.id, last.ev, rec.LastSequence)
			}
			if got := aguiText(nil, frames)["t1.a"]; got != want {
				t.Errorf("client text %q", got)
			}
		})
	}
}

// TestAGUIRejections: before the stream, POST /agui answers as POST /
// does, in the same order, with the same JSON and statuses; the bodies
// never repeat the input.
func TestAGUIRejections(t *testing.T) {
	e := newEnv(t, newStoreMemory(), &scriptModel{Chunks: []string{"ok"}}, nil)
	e.aguiRun(t, "first", aguiInput("s", "t1", "hello", ""))
	const secret = "s3cr3t-value"
	for name, tc := range map[string]struct {
		body   string
		hdr    map[string]string
		status int
		code   string
	}{
		"not JSON":       {`{"threadId":`, nil, http.StatusBadRequest, protocol.CodeRequestInvalidJSON},
		"not an input":   {`{"threadId":"s","runId":"t9","messages":[{"role":"assistant","content":"` + secret + `"}]}`, nil, http.StatusBadRequest, protocol.CodeRequestInvalidBody},
		"unsafe thread":  {string(aguiInput(secret+" x", "t9", "hi", "")), nil, http.StatusBadRequest, protocol.CodeRequestInvalidBody},
		"media type":     {string(aguiInput("s", "t9", "hi", "")), map[string]string{"Content-Type": "text/plain"}, http.StatusUnsupportedMediaType, protocol.CodeRequestUnsupportedMediaType},
		"unauthorized":   {string(aguiInput("s", "t9", "hi", "")), map[string]string{"X-Test-Subject": "nobody"}, http.StatusUnauthorized, protocol.CodeRequestUnauthenticated},
		"forbidden":      {string(aguiInput("s", "t9", "hi", "")), map[string]string{"X-Test-Subject": "banned"}, http.StatusForbidden, protocol.CodeRequestForbidden},
		"other owner":    {string(aguiInput("s", "t9", "hi", "")), map[string]string{"X-Test-Subject": "mallory"}, http.StatusNotFound, protocol.CodeSessionNotFound},
		"replay":         {string(aguiInput("s", "t1", "hello", "")), nil, http.StatusConflict, protocol.CodeTurnAlreadyCompleted},
		"reused id":      {string(aguiInput("s", "t1", "other", "")), nil, http.StatusUnprocessableEntity, protocol.CodeTurnIDReused},
		"bad decision":   {string(aguiInput("s", "t9", "", `,"resume":[{"interruptId":"cf0","status":"resolved","payload":{"approved":true}}]`)), nil, http.StatusNotFound, protocol.CodeConfirmationNotFound},
		"two decisions":  {string(aguiInput("s", "t9", "", `,"resume":[{"interruptId":"a","status":"resolved","payload":{"approved":true}},{"interruptId":"b","status":"resolved","payload":{"approved":false}}]`)), nil, http.StatusBadRequest, protocol.CodeRequestInvalidBody},
		"payload secret": {string(aguiInput("s", "t9", "", `,"resume":[{"interruptId":"a","status":"resolved","payload":"`+secret+`"}]`)), nil, http.StatusBadRequest, protocol.CodeRequestInvalidBody},
	} {
		t.Run(name, func(t *testing.T) {
			status, raw := e.aguiPost(t, []byte(tc.body), tc.hdr)
			if status != tc.status || decodeErrorBody(t, raw).Code != tc.code {
				t.Fatalf("%d %s, want %d %s", status, raw, tc.status, tc.code)
			}
			if strings.Contains(string(raw), secret) {
				t.Error("the error repeats the input")
			}
		})
	}
	req, _ := http.NewRequest(http.MethodGet, e.srv.URL+turn.AGUIPath, nil)
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	readResult(t, resp).want(t, http.StatusMethodNotAllowed, protocol.CodeRequestMethodNotAllowed)
	if strings.Contains(e.logs.String(), secret) {
		t.Error("the logs repeat the input")
	}
}

// TestAGUIEndings: each way a turn ends maps to one last event
// (docs/agui.md, "How a run ends").
func TestAGUIEndings(t *testing.T) {
	t.Run("model failure", func(t *testing.T) {
		e := newEnv(t, newStoreMemory(), &scriptModel{Chunks: []string{"partial "}, Err: errors.New("provider secret")}, nil)
		frames := e.aguiRun(t, "model-failure", aguiInput("s", "t1", "hi", ""))
		wantEnd(t, frames, agui.TypeRunError, protocol.CodeModelFailed)
		if deltas(frames, "t1.a") != "partial " {
			t.Errorf("deltas %q", deltas(frames, "t1.a"))
		}
	})
	t.Run("timeout", func(t *testing.T) {
		e := newEnv(t, newStoreMemory(), &scriptModel{Chunks: slowChunks(100), Delay: 20 * time.Millisecond}, func(o *turn.Options) {
			// Each cleanup phase gets a third of the reserve: generous for
			// a loaded machine, as in TestDeadline.
			o.TurnTimeout, o.CleanupReserve = time.Second, 900*time.Millisecond
		})
		frames := e.aguiRun(t, "timeout", aguiInput("s", "t1", "hi", ""))
		wantEnd(t, frames, agui.TypeRunError, protocol.CodeServerTimeout)
		if rec := e.stored(t, "s", "t1"); deltas(frames, "t1.a") != rec.Messages[1].Content {
			t.Errorf("deltas %q, stored %q", deltas(frames, "t1.a"), rec.Messages[1].Content)
		}
	})
	t.Run("stop", func(t *testing.T) {
		m := &scriptModel{Chunks: []string{"never"}, Hold: make(chan struct{}), Started: make(chan struct{}, 1)}
		defer close(m.Hold)
		e := newEnv(t, newStoreMemory(), m, func(o *turn.Options) { o.RenewInterval = 5 * time.Millisecond })
		done := make(chan []aguiFrame)
		go func() { done <- e.aguiRun(t, "stop", aguiInput("s", "t1", "hi", "")) }()
		<-m.Started
		readResult(t, e.post(t, context.Background(), "/stop", []byte(`{"sessionId":"s","turnId":"t1"}`), nil)).want(t, http.StatusAccepted, "")
		frames := <-done
		wantEnd(t, frames, agui.TypeRunFinished, "")
		if out := frames[len(frames)-1].ev["outcome"].(map[string]any)["type"]; out != agui.OutcomeCancelled {
			t.Errorf("outcome %v", out)
		}
	})
	t.Run("unknown outcome", func(t *testing.T) {
		fs := &failingStore{Store: newStoreMemory(), saveErr: errors.New("storage unavailable")}
		e := newEnv(t, fs, &scriptModel{Chunks: []string{"a", "b"}}, func(o *turn.Options) {
			o.LeaseDuration, o.CleanupReserve = 300*time.Millisecond, time.Second
		})
		frames := e.aguiRun(t, "indeterminate", aguiInput("s", "t1", "hi", ""))
		wantEnd(t, frames, agui.TypeRunError, protocol.CodeTurnOutcomeIndeterminate)
		for _, f := range frames {
			if f.typ() == agui.TypeMessagesSnapshot && f.id != frames[1].id {
				t.Errorf("a final snapshot of an unsaved turn")
			}
		}
	})
	t.Run("lost", func(t *testing.T) {
		fs := &failingStore{Store: newStoreMemory(), renewErr: chat.ErrLeaseLost}
		m := &scriptModel{Chunks: []string{"x"}, Hold: make(chan struct{})}
		defer close(m.Hold)
		e := newEnv(t, fs, m, func(o *turn.Options) {
			durable(o)
			o.RenewInterval, o.LeaseDuration = 5*time.Millisecond, 300*time.Millisecond
		})
		frames := e.aguiRun(t, "lost", aguiInput("s", "t1", "hi", ""))
		wantEnd(t, frames, agui.TypeRunError, protocol.CodeTurnLost)
		rec := e.stored(t, "s", "t1")
		if frames[len(frames)-1].id != (agui.EventID{Sequence: rec.LastSequence}) {
			t.Errorf("last id %s, the record's sequence %d", frames[len(frames)-1].id, rec.LastSequence)
		}
		// A resume of the lost run answers its record at once.
		status, raw := e.aguiResume(t, "s", "t1", "2", "")
		writeCorpus(t, "lost-resume", raw)
		if rf := parseAGUI(t, raw); status != http.StatusOK || len(rf) != 3 || rf[1].typ() != agui.TypeMessagesSnapshot {
			t.Errorf("resume of a lost run: %d %s", status, raw)
		} else {
			checkAGUI(t, rf, true)
			wantEnd(t, rf, agui.TypeRunError, protocol.CodeTurnLost)
		}
	})
}

// wantEnd fails unless the last frame is typ (with code, for RUN_ERROR).
func wantEnd(t *testing.T, frames []aguiFrame, typ, code string) {
	t.Helper()
	last := frames[len(frames)-1]
	if last.typ() != typ || typ == agui.TypeRunError && (last.str("code") != code || last.str("message") != protocol.NewDiagnostic(code).Message) {
		t.Fatalf("last frame %v, want %s %s", last.ev, typ, code)
	}
}

// TestAGUIToolsAndApproval: tool calls stream as TOOL_CALL_* events and
// their results as TOOL_CALL_RESULT; a call that requires approval ends
// the run with an interrupt, and a run whose resume entry resolves it
// runs the tool once, its result answering the asking call.
func TestAGUIToolsAndApproval(t *testing.T) {
	var runs atomic.Int32
	e, _ := approvalEnv(t, newStoreMemory(), &runs, nil)
	frames := e.aguiRun(t, "approval-ask", aguiInput("s", "t1", askInput, ""))
	last := frames[len(frames)-1]
	outcome := last.ev["outcome"].(map[string]any)
	in := outcome["interrupts"].([]any)
	if outcome["type"] != agui.OutcomeInterrupt || len(in) != 1 {
		t.Fatalf("last frame %v", last.ev)
	}
	interrupt := in[0].(map[string]any)
	token := interrupt["id"].(string)
	if !chat.IsConfirmationToken(token) || interrupt["toolCallId"] != "c1" || interrupt["reason"] != agui.ReasonToolApproval {
		t.Fatalf("interrupt %v", interrupt)
	}
	var started bool
	for _, f := range frames {
		started = started || f.typ() == agui.TypeToolCallStart && f.str("toolCallId") == "c1" && f.str("toolCallName") == "note_delete"
	}
	if !started || runs.Load() != 0 {
		t.Fatalf("the call was not streamed, or ran (%d)", runs.Load())
	}
	resume := fmt.Sprintf(`,"resume":[{"interruptId":%q,"status":"resolved","payload":{"approved":true}}]`, token)
	frames = e.aguiRun(t, "approval-decide", aguiInput("s", "t2", "", resume))
	wantEnd(t, frames, agui.TypeRunFinished, "")
	if runs.Load() != 1 {
		t.Fatalf("the tool ran %d times", runs.Load())
	}
	var result aguiFrame
	for _, f := range frames {
		if f.typ() == agui.TypeToolCallResult {
			result = f
		}
	}
	if result.str("toolCallId") != "c1" || result.str("content") != "Deleted." || result.str("messageId") != "t2.a.tool.c1" {
		t.Errorf("result %v", result.ev)
	}
	if rec := e.stored(t, "s", "t2"); rec.Messages[0].Content != agui.LabelApproved || deltas(frames, "t2.a") != rec.Messages[1].Content {
		t.Errorf("stored %+v, deltas %q", rec.Messages, deltas(frames, "t2.a"))
	}
	// The final snapshot answers the asking call right after it.
	msgs := frames[len(frames)-2].ev["messages"].([]any)
	var order []string
	for _, m := range msgs {
		order = append(order, m.(map[string]any)["id"].(string))
	}
	if strings.Join(order, ",") != "t1.u,t1.a,t2.a.tool.c1,t2.u,t2.a" {
		t.Errorf("final snapshot %v", order)
	}
}

// TestAGUIResume: a client that drops the connection anywhere and
// reconnects with the last id it received ends with exactly the stored
// text: no delta twice, none missed. A run that ended answers at once;
// the resume route has the NDJSON resume route's rejections.
func TestAGUIResume(t *testing.T) {
	chunks := slowChunks(40)
	for i := range chunks {
		chunks[i] = strings.Repeat(chunks[i], 10) // text outweighs its frame: an event per state
	}
	e := newEnv(t, newStoreMemory(), &scriptModel{Chunks: chunks, Delay: 10 * time.Millisecond}, durable)
	resp := e.post(t, context.Background(), turn.AGUIPath, aguiInput("s", "t1", "take your time", ""), nil)
	defer func() { _ = resp.Body.Close() }()
	// Read the live stream frame by frame; resume from several points
	// while the turn runs.
	var (
		mu   sync.Mutex
		live []byte
		wg   sync.WaitGroup
	)
	type resumed struct {
		cut  int
		last string
		raw  []byte
	}
	results := make(chan resumed, 8)
	buf := make([]byte, 0, 4096)
	cuts := map[int]bool{2: true, 3: true, 6: true, 11: true, 20: true}
	frames := 0
	chunk := make([]byte, 512)
	for {
		n, err := resp.Body.Read(chunk)
		buf = append(buf, chunk[:n]...)
		for {
			i := bytes.Index(buf, []byte("\n\n"))
			if i < 0 {
				break
			}
			mu.Lock()
			live = append(live, buf[:i+2]...)
			snapshot := append([]byte(nil), live...)
			mu.Unlock()
			buf = buf[i+2:]
			frames++
			if cuts[frames] {
				fr := parseAGUI(t, snapshot)
				lastID := fr[len(fr)-1].id.String()
				wg.Add(1)
				go func(cut int) {
					defer wg.Done()
					status, raw := e.aguiResume(t, "s", "t1", lastID, "")
					if status != http.StatusOK {
						t.Errorf("resume from %s: %d %s", lastID, status, raw)
					}
					results <- resumed{cut, lastID, raw}
				}(frames)
			}
		}
		if err != nil {
			break
		}
	}
	wg.Wait()
	close(results)
	all := parseAGUI(t, live)
	checkAGUI(t, all, true)
	want := e.stored(t, "s", "t1").Messages[1].Content
	if deltas(all, "t1.a") != want {
		t.Fatalf("live deltas %q, stored %q", deltas(all, "t1.a"), want)
	}
	for r := range results {
		writeCorpus(t, fmt.Sprintf("resume-after-%s", r.last), r.raw)
		rf := parseAGUI(t, r.raw)
		checkAGUI(t, rf, true)
		if !idLess(rf[0].id, rf[1].id) && rf[0].id.String() != r.last {
			t.Errorf("resume from %s starts at %s", r.last, rf[0].id)
		}
		// Every event after RUN_STARTED is past the client's position,
		// but for an ended run's answer to a client that holds its end.
		if pos := mustID(t, r.last); pos.Sequence < all[len(all)-1].id.Sequence {
			for _, f := range rf[1:] {
				if !idLess(pos, f.id) {
					t.Errorf("resume from %s sends %s", r.last, f.id)
				}
			}
		}
		if got := aguiText(aguiText(nil, all[:r.cut]), rf)["t1.a"]; got != want {
			t.Errorf("dropped after frame %d (%s), resumed: %q, want %q", r.cut, r.last, got, want)
		}
	}
	// Ended: at once, whatever the position.
	for _, id := range []string{"", "1", "3.1", all[len(all)-1].id.String()} {
		status, raw := e.aguiResume(t, "s", "t1", id, "")
		rf := parseAGUI(t, raw)
		if status != http.StatusOK || len(rf) != 3 || rf[1].typ() != agui.TypeMessagesSnapshot {
			t.Fatalf("resume of the ended run from %q: %d %s", id, status, raw)
		}
		checkAGUI(t, rf, true)
		if aguiText(nil, rf)["t1.a"] != want {
			t.Errorf("final snapshot text")
		}
	}
	if status, raw := e.aguiResume(t, "s", "t1", "", "?lastEventId=4.2"); status != http.StatusOK {
		t.Errorf("query parameter: %d %s", status, raw)
	}
	for name, tc := range map[string]struct {
		sessionID, turnID, lastID, query string
		status                           int
		code                             string
	}{
		"unknown turn":    {"s", "nope", "", "", http.StatusNotFound, protocol.CodeTurnNotFound},
		"unknown session": {"x", "t1", "", "", http.StatusNotFound, protocol.CodeSessionNotFound},
		"bad header":      {"s", "t1", "01", "", http.StatusBadRequest, protocol.CodeRequestInvalidHeader},
		"bad parameter":   {"s", "t1", "", "?lastEventId=-1", http.StatusBadRequest, protocol.CodeRequestInvalidQuery},
		"other parameter": {"s", "t1", "", "?after=1", http.StatusBadRequest, protocol.CodeRequestInvalidQuery},
	} {
		t.Run(name, func(t *testing.T) {
			status, raw := e.aguiResume(t, tc.sessionID, tc.turnID, tc.lastID, tc.query)
			if status != tc.status || decodeErrorBody(t, raw).Code != tc.code {
				t.Errorf("%d %s", status, raw)
			}
		})
	}
}

func mustID(t *testing.T, s string) agui.EventID {
	t.Helper()
	id, err := agui.ParseEventID(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
