package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/model/echo"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/sessionapi"
	"github.com/turnstream/turnstream/pkg/store/memory"
	"github.com/turnstream/turnstream/pkg/turn"
)

// realServers serves the real turn and history handlers over one
// in-memory store with dev auth, as the dev server does.
func realServers(t *testing.T) (turnURL, historyURL string) {
	t.Helper()
	store := memory.New(memory.Options{})
	authn, err := auth.New(context.Background(), config.AuthConfig{Mode: config.AuthDev, TrustedSubject: "host"},
		auth.WithLookupEnv(func(string) (string, bool) { return "", false }))
	if err != nil {
		t.Fatal(err)
	}
	th, err := turn.NewHandler(turn.Options{
		Config: turn.Config{
			Store:      store,
			Model:      echo.New(0, 3),
			Definition: turn.Definition{ID: "default", Revision: 1},
		},
		Authenticator: authn,
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(th)
	t.Cleanup(ts.Close)
	hh, err := sessionapi.NewHistoryHandler(sessionapi.Options{Store: store, Authenticator: authn})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(hh)
	t.Cleanup(hs.Close)
	return ts.URL + "/", hs.URL + "/"
}

// runTurnctl runs turnctl with args and stdin; it returns the exit status,
// stdout and stderr.
func runTurnctl(args []string, stdin string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := run(args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestChatAndHistoryAgainstHandlers(t *testing.T) {
	turnURL, historyURL := realServers(t)

	code, out, errOut := runTurnctl([]string{"chat", "-url", turnURL, "-session", "s1", "-token", "dev.alice", "hello", "there"}, "")
	if code != 0 {
		t.Fatalf("chat exit %d, stderr %q", code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 2 || lines[0] != "Echo: hello there" || !strings.HasPrefix(lines[1], "[complete · seq ") {
		t.Errorf("chat output %q, want the reply then the status line", out)
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("chat wrote escape sequences to a non-terminal: %q", out)
	}

	code, out, errOut = runTurnctl([]string{"chat", "-url", turnURL, "-session", "s1", "-token", "dev.alice", "-json", "again"}, "")
	if code != 0 {
		t.Fatalf("chat -json exit %d, stderr %q", code, errOut)
	}
	var last *protocol.Event
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		ev, diag := protocol.DecodeTurnEvent([]byte(line))
		if diag != nil {
			t.Fatalf("chat -json line does not decode (%s): %s", diag.Code, line)
		}
		last = ev
	}
	if last.Snapshot == nil || last.Snapshot.Status != protocol.StatusComplete || len(last.Snapshot.Messages) != 4 {
		t.Errorf("last -json line %+v, want a complete snapshot of both turns", last)
	}

	code, out, errOut = runTurnctl([]string{"history", "-url", historyURL, "-session", "s1", "-token", "dev.alice"}, "")
	if code != 0 {
		t.Fatalf("history exit %d, stderr %q", code, errOut)
	}
	want := []string{"  hello there", "  Echo: hello there", "  again", "  Echo: again"}
	got := []string{}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "  ") {
			got = append(got, line)
		}
	}
	if strings.Join(got, "|") != strings.Join(want, "|") || !strings.HasPrefix(out, "user (complete, ") {
		t.Errorf("history output:\n%s\nwant the four messages in order", out)
	}

	code, _, errOut = runTurnctl([]string{"history", "-url", historyURL, "-session", "s1", "-token", "dev.mallory"}, "")
	if code != 1 || !strings.Contains(errOut, "HTTP 404: SESSION_NOT_FOUND") {
		t.Errorf("history of another principal: exit %d, stderr %q; want 1 and SESSION_NOT_FOUND", code, errOut)
	}
}

// scripted returns a server answering every request with status, content
// type and body, recording the requests' bodies and Authorization headers.
type scripted struct {
	mu       sync.Mutex
	bodies   [][]byte
	authz    []string
	status   int
	ctype    string
	response string
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.bodies = append(s.bodies, body)
	s.authz = append(s.authz, r.Header.Get("Authorization"))
	s.mu.Unlock()
	w.Header().Set("Content-Type", s.ctype)
	w.WriteHeader(s.status)
	_, _ = io.WriteString(w, asSubmitted(s.response, body))
}

// asSubmitted rewrites the lines of eventLine (session s1, turn t1) to
// the session and turn of a submit body, as a server answers the turn it
// was sent; a body that is not a submit leaves them.
func asSubmitted(lines string, body []byte) string {
	ev, diag := protocol.DecodeTurnEvent(body)
	if diag != nil {
		return lines
	}
	lines = strings.ReplaceAll(lines, `"sessionId":"s1"`, `"sessionId":"`+ev.SessionID+`"`)
	return asTurn(lines, ev.TurnID)
}

// asTurn rewrites the lines of eventLine (turn t1) to turnID.
func asTurn(lines, turnID string) string {
	return strings.ReplaceAll(lines, `"turnId":"t1"`, `"turnId":"`+turnID+`"`)
}

// eventLine is one line of session s1's turn t1 (asTurn answers it for
// another turn).
func eventLine(t *testing.T, seq int64, kind string, snap *protocol.SnapshotPayload, diag *protocol.Diagnostic) string {
	t.Helper()
	b, err := protocol.AppendEventLine(nil, &protocol.Event{
		EventID: "e1", SessionID: "s1", TurnID: "t1", Sequence: seq, EmittedAt: "2026-11-29T12:00:00.000Z",
		Kind: kind, Snapshot: snap, Diagnostic: diag,
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func snapshot(status, text string, d *protocol.Diagnostic) *protocol.SnapshotPayload {
	return &protocol.SnapshotPayload{
		Status: status,
		Messages: []protocol.Message{
			{ID: "t1.u", Role: protocol.RoleUser, Content: "q", Status: protocol.MessageComplete, CreatedAt: "2026-11-29T12:00:00.000Z"},
			{ID: "t1.a", Role: protocol.RoleAssistant, Content: text, Status: protocol.MessageStreaming, CreatedAt: "2026-11-29T12:00:00.000Z",
				ToolCalls: []protocol.ToolCall{{ID: "c1", Name: "lookup", Args: json.RawMessage(`{"q": 1}`), Status: protocol.ToolCallComplete}}},
		},
		Usage: protocol.Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3},
		Error: d,
	}
}

func TestChatFailures(t *testing.T) {
	interrupted := protocol.NewDiagnostic(protocol.CodeTurnInterrupted)
	timeout := protocol.NewDiagnostic(protocol.CodeServerTimeout)
	tests := map[string]struct {
		status    int
		ctype     string
		body      func(t *testing.T) string
		wantErr   string
		wantOut   string
		wantTotal int
	}{
		"JSON error": {
			status: http.StatusConflict, ctype: "application/json",
			body: func(*testing.T) string {
				return string(protocol.EncodeErrorBody(protocol.NewDiagnostic(protocol.CodeSessionBusy)))
			},
			wantErr: "turnctl chat: HTTP 409: SESSION_BUSY: Another turn is active for this session. (retryable)",
		},
		"non-JSON error": {
			status: http.StatusBadGateway, ctype: "text/plain",
			body:    func(*testing.T) string { return "upstream said no" },
			wantErr: "HTTP 502 Bad Gateway",
		},
		"stream diagnostic": {
			status: http.StatusOK, ctype: "application/x-ndjson",
			body: func(t *testing.T) string {
				return eventLine(t, 1, protocol.EventSnapshot, snapshot(protocol.StatusStreaming, "par", nil), nil) +
					eventLine(t, 2, protocol.EventDiagnostic, nil, &timeout)
			},
			wantErr: "stream diagnostic: SERVER_TIMEOUT: The chat request timed out. (retryable)",
			wantOut: "par",
		},
		"failed turn": {
			status: http.StatusOK, ctype: "application/x-ndjson",
			body: func(t *testing.T) string {
				return eventLine(t, 1, protocol.EventSnapshot, snapshot(protocol.StatusError, "partial", &interrupted), nil)
			},
			wantErr: "turnctl chat: stopped (TURN_INTERRUPTED); the answer so far is kept",
			wantOut: "partial",
		},
		"stream cut short": {
			status: http.StatusOK, ctype: "application/x-ndjson",
			body: func(t *testing.T) string {
				return eventLine(t, 1, protocol.EventSnapshot, snapshot(protocol.StatusStreaming, "par", nil), nil)
			},
			wantErr: "the stream ended before the turn's last snapshot",
		},
		"line that is not an event": {
			status: http.StatusOK, ctype: "application/x-ndjson",
			body:    func(*testing.T) string { return "{\"hello\":1}\n" },
			wantErr: "not a turn event (PROTOCOL_INVALID_PAYLOAD)",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(&scripted{status: tc.status, ctype: tc.ctype, response: tc.body(t)})
			defer srv.Close()
			code, out, errOut := runTurnctl([]string{"chat", "-url", srv.URL, "-session", "s1", "q"}, "")
			if code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			if !strings.Contains(errOut, tc.wantErr) {
				t.Errorf("stderr %q, want it to contain %q", errOut, tc.wantErr)
			}
			if !strings.Contains(out, tc.wantOut) {
				t.Errorf("stdout %q, want it to contain %q", out, tc.wantOut)
			}
		})
	}
}

func TestChatSubmitsEachStdinLine(t *testing.T) {
	s := &scripted{status: http.StatusOK, ctype: "application/x-ndjson"}
	s.response = eventLine(t, 1, protocol.EventSnapshot, snapshot(protocol.StatusComplete, "ok", nil), nil)
	srv := httptest.NewServer(s)
	defer srv.Close()

	code, out, errOut := runTurnctl([]string{"chat", "-url", srv.URL, "-token", "dev.alice"}, "first\n\n  \nsecond\r\n")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if !strings.HasPrefix(errOut, "session session-") {
		t.Errorf("stderr %q, want the generated session id", errOut)
	}
	if strings.Count(out, "lookup") != 2 || strings.Count(out, "[complete · seq 1 · tokens 1 in / 2 out / 3 total]") != 2 {
		t.Errorf("stdout %q, want two rendered turns with their tool call", out)
	}
	if len(s.bodies) != 2 {
		t.Fatalf("%d turns submitted, want 2 (blank lines skipped)", len(s.bodies))
	}
	var sessions, turns []string
	for i, body := range s.bodies {
		ev, diag := protocol.DecodeTurnEvent(body)
		if diag != nil || ev.Kind != protocol.EventSubmit {
			t.Fatalf("request %d is not a valid submit (%v): %s", i, diag, body)
		}
		if want := []string{"first", "second"}[i]; ev.Submit.Input != want {
			t.Errorf("request %d input %q, want %q", i, ev.Submit.Input, want)
		}
		if s.authz[i] != "Bearer dev.alice" {
			t.Errorf("request %d Authorization %q", i, s.authz[i])
		}
		sessions = append(sessions, ev.SessionID)
		turns = append(turns, ev.TurnID)
	}
	if sessions[0] != sessions[1] || turns[0] == turns[1] {
		t.Errorf("sessions %v turns %v: want one session and two turn ids", sessions, turns)
	}
}

func TestChatUsage(t *testing.T) {
	tests := map[string]struct {
		args []string
		want int
	}{
		"bad session": {[]string{"chat", "-session", "bad id!", "x"}, 2},
		"bad flag":    {[]string{"chat", "-nope"}, 2},
		"help":        {[]string{"chat", "-h"}, 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if code, _, _ := runTurnctl(tc.args, ""); code != tc.want {
				t.Errorf("exit %d, want %d", code, tc.want)
			}
		})
	}
}

func TestLiveRendererRedrawsInPlace(t *testing.T) {
	var out bytes.Buffer
	r := &liveRenderer{w: &out, width: 20, height: 24}
	first := &protocol.Event{Kind: protocol.EventSnapshot, Sequence: 1, Snapshot: snapshot(protocol.StatusStreaming, "Echo: he", nil)}
	second := &protocol.Event{Kind: protocol.EventSnapshot, Sequence: 2, Snapshot: snapshot(protocol.StatusComplete, "Echo: hello", nil)}
	r.event(nil, first)
	drawn := out.Len()
	lines := physicalLines(out.String(), 20)
	r.event(nil, second)
	r.done()
	redraw := out.String()[drawn:]
	if want := "\x1b[" + strconv.Itoa(lines) + "A\r\x1b[J"; !strings.HasPrefix(redraw, want) {
		t.Errorf("redraw starts %q, want cursor up %d lines and clear (%q)", redraw, lines, want)
	}
	if !strings.Contains(redraw, "assistant> Echo: hello\n") || !strings.Contains(redraw, "[complete · seq 2") {
		t.Errorf("redraw %q lacks the new text or status", redraw)
	}

	// A block taller than the terminal switches to appending.
	out.Reset()
	r = &liveRenderer{w: &out, width: 10, height: 3}
	r.event(nil, second)
	r.event(nil, &protocol.Event{Kind: protocol.EventSnapshot, Sequence: 3, Snapshot: snapshot(protocol.StatusComplete, "Echo: hello world", nil)})
	r.done()
	if strings.Contains(out.String(), "A\r") || !strings.Contains(out.String(), "Echo: hello world") {
		t.Errorf("tall block output %q, want appended text without cursor movement", out.String())
	}
}

func TestPhysicalLines(t *testing.T) {
	tests := map[string]struct {
		block string
		width int
		want  int
	}{
		"one short line":  {"abc\n", 10, 1},
		"exact width":     {"abcdefghij\n", 10, 1},
		"wraps":           {"abcdefghijk\n", 10, 2},
		"empty line":      {"a\n\nb\n", 10, 3},
		"runes not bytes": {"ééééé\n", 5, 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := physicalLines(tc.block, tc.width); got != tc.want {
				t.Errorf("physicalLines(%q, %d) = %d, want %d", tc.block, tc.width, got, tc.want)
			}
		})
	}
}

func TestChatCtrlCStopsTheTurn(t *testing.T) {
	store := memory.New(memory.Options{})
	authn, err := auth.New(context.Background(), config.AuthConfig{Mode: config.AuthDev},
		auth.WithLookupEnv(func(string) (string, bool) { return "", false }))
	if err != nil {
		t.Fatal(err)
	}
	// A reply of one rune per 100 ms runs for seconds unless stopped; the
	// lease is renewed (and the stop flag read) every 50 ms.
	th, err := turn.NewHandler(turn.Options{
		Config: turn.Config{
			Store:         store,
			Model:         echo.New(100*time.Millisecond, 1),
			Definition:    turn.Definition{ID: "default", Revision: 1},
			LeaseDuration: 3 * time.Second,
			RenewInterval: 50 * time.Millisecond,
		},
		Authenticator: authn,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(th)
	defer srv.Close()

	// Ctrl-C arrives as soon as the stream has started.
	saved := notifyInterrupts
	t.Cleanup(func() { notifyInterrupts = saved })
	notifyInterrupts = func() (<-chan os.Signal, func()) {
		ch := make(chan os.Signal, 1)
		ch <- os.Interrupt
		return ch, func() {}
	}

	code, out, errOut := runTurnctl([]string{"chat", "-url", srv.URL + "/", "-session", "s1", "-token", "dev.alice",
		"a long question that takes the echo model many seconds to repeat"}, "")
	if code != 1 {
		t.Errorf("exit %d, want 1 for an interrupted turn", code)
	}
	if !strings.Contains(errOut, "stopping the turn") || !strings.Contains(errOut, "turnctl chat: stopped (TURN_INTERRUPTED); the answer so far is kept") {
		t.Errorf("stderr %q, want the stop notice and TURN_INTERRUPTED", errOut)
	}
	if strings.Contains(out, "many seconds to repeat") {
		t.Errorf("stdout %q has the whole reply: the turn was not stopped", out)
	}
}

// TestChatSecondCtrlCQuits: the second Ctrl-C during a turn ends turnctl
// with a sentence and status 130, never a raw "context canceled".
func TestChatSecondCtrlCQuits(t *testing.T) {
	var stops int
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/stop" {
			mu.Lock()
			stops++
			mu.Unlock()
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		_, _ = io.WriteString(w, eventLine(t, 1, protocol.EventSnapshot, snapshot(protocol.StatusStreaming, "par", nil), nil))
		w.(http.Flusher).Flush()
		<-r.Context().Done() // a turn that never ends by itself
	}))
	defer srv.Close()
	saved := notifyInterrupts
	t.Cleanup(func() { notifyInterrupts = saved })
	notifyInterrupts = func() (<-chan os.Signal, func()) {
		ch := make(chan os.Signal, 2)
		ch <- os.Interrupt
		ch <- os.Interrupt
		return ch, func() {}
	}
	code, _, errOut := runTurnctl([]string{"chat", "-url", srv.URL + "/", "-session", "s1", "q"}, "")
	if code != exitQuit {
		t.Errorf("exit %d, want %d", code, exitQuit)
	}
	if strings.Contains(errOut, "context canceled") || !strings.Contains(errOut, "turnctl chat: quit;") ||
		!strings.Contains(errOut, noticeStopping) {
		t.Errorf("stderr %q, want the stop notice and the quit sentence only", errOut)
	}
	mu.Lock()
	defer mu.Unlock()
	if stops != 1 {
		t.Errorf("%d stop requests, want 1", stops)
	}
}

// TestChatCtrlDEndsThePromptLine: end of input at the interactive prompt
// leaves the prompt's line with a newline.
func TestChatCtrlDEndsThePromptLine(t *testing.T) {
	saved := isTerminal
	t.Cleanup(func() { isTerminal = saved })
	isTerminal = func(any) bool { return true }
	code, out, errOut := runTurnctl([]string{"chat", "-session", "s1", "-url", "http://127.0.0.1:1/"}, "")
	if code != 0 || out != "you> \n" {
		t.Errorf("exit %d, stdout %q, stderr %q; want 0 and the prompt ended by a newline", code, out, errOut)
	}
}

// TestChatCtrlDAfterAFailedTurn: at an interactive prompt Ctrl-D ends the
// session with status 0 after a turn that failed (shown as it failed);
// with piped input the failure is the exit status.
func TestChatCtrlDAfterAFailedTurn(t *testing.T) {
	saved := isTerminal
	t.Cleanup(func() { isTerminal = saved })
	args := []string{"chat", "-session", "s1", "-url", "http://127.0.0.1:1/"}
	for name, tc := range map[string]struct {
		terminal bool
		want     int
	}{"a terminal": {true, 0}, "a pipe": {false, 1}} {
		isTerminal = func(any) bool { return tc.terminal }
		code, _, errOut := runTurnctl(args, "hello\n")
		if code != tc.want || errOut == "" {
			t.Errorf("%s: exit %d, stderr %q; want %d and the failed turn's error", name, code, errOut, tc.want)
		}
	}
}
