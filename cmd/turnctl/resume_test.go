package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/httpedge"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/sessionapi"
	"github.com/turnstream/turnstream/pkg/store/memory"
	"github.com/turnstream/turnstream/pkg/turn"
)

// Parts of the held model's answer: the first is streamed at once, the
// second once the gate opens.
const (
	partOne = "part one of the answer, "
	partTwo = "then part two"
)

// heldModel answers partOne, then waits for gate (or the call's context),
// then answers partTwo and stops. The turn it runs is certainly running
// while the gate is closed, whatever the machine's speed.
type heldModel struct{ gate chan struct{} }

func (m *heldModel) Stream(ctx context.Context, _ model.Request) (model.Stream, error) {
	return &heldStream{ctx: ctx, gate: m.gate}, nil
}

type heldStream struct {
	ctx  context.Context
	gate chan struct{}
	step int
}

func (s *heldStream) Recv() (model.Event, error) {
	s.step++
	switch s.step {
	case 1:
		return model.Event{TextDelta: partOne}, nil
	case 2:
		select {
		case <-s.ctx.Done():
			return model.Event{}, s.ctx.Err()
		case <-s.gate:
		}
		return model.Event{TextDelta: partTwo}, nil
	case 3:
		return model.Event{Usage: &protocol.Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3}, FinishReason: model.FinishStop}, nil
	}
	return model.Event{}, io.EOF
}

func (s *heldStream) Close() error { return nil }

// durableEnv serves the real turn and history handlers over one memory
// store with dev auth, the turn handler with checkpoints every
// checkpoint (0: off) and a held model. The gate opens when the first
// resume request arrives if openOnResume, and at the end of the test in
// any case.
type durableEnv struct {
	turnURL, historyURL string
	gate                chan struct{}
	resumes             atomic.Int32
	capabilities        atomic.Int32
	// forgetful, when set, answers every resume 404 SESSION_NOT_FOUND, as
	// a dev server restarted on an empty in-memory store does.
	forgetful atomic.Bool
}

func newDurableEnv(t *testing.T, checkpoint time.Duration, openOnResume bool) *durableEnv {
	t.Helper()
	e := &durableEnv{gate: make(chan struct{})}
	var once sync.Once
	open := func() { once.Do(func() { close(e.gate) }) }
	store := memory.New(memory.Options{})
	authn, err := auth.New(context.Background(), config.AuthConfig{Mode: config.AuthDev, TrustedSubject: "host"},
		auth.WithLookupEnv(func(string) (string, bool) { return "", false }))
	if err != nil {
		t.Fatal(err)
	}
	th, err := turn.NewHandler(turn.Options{
		Config: turn.Config{
			Store:              store,
			Model:              &heldModel{gate: e.gate},
			Definition:         turn.Definition{ID: "default", Revision: 1},
			CheckpointInterval: checkpoint,
			ResumePollInterval: 10 * time.Millisecond,
			LeaseDuration:      3 * time.Second,
			RenewInterval:      50 * time.Millisecond,
		},
		Authenticator: authn,
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/stream"):
			e.resumes.Add(1)
			if openOnResume {
				open()
			}
			if e.forgetful.Load() {
				httpedge.WriteError(w, protocol.NewDiagnostic(protocol.CodeSessionNotFound))
				return
			}
		case r.URL.Path == "/capabilities":
			e.capabilities.Add(1)
		}
		th.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	hh, err := sessionapi.NewHistoryHandler(sessionapi.Options{Store: store, Authenticator: authn})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(hh)
	t.Cleanup(hs.Close)
	// Registered last, run first: a held turn ends before the servers close.
	t.Cleanup(open)
	e.turnURL, e.historyURL = ts.URL+"/", hs.URL+"/"
	// Short waits between resumes: the tests do not measure them.
	savedBackoff := resumeBackoff
	resumeBackoff = time.Millisecond
	t.Cleanup(func() { resumeBackoff = savedBackoff })
	return e
}

// How cutTransport ends a submit's body after the first line with
// partOne.
type cutMode int

const (
	cutReset      cutMode = iota // after the line, a read error
	cutEOF                       // after the line, the body ends
	cutInsideLine                // inside the line, the body ends
)

// cutTransport passes requests on to http.DefaultTransport and cuts the
// body of each submit (POST to the turn URL's root) at the first line
// carrying partOne, as a dropped connection or a proxy would.
type cutTransport struct{ mode cutMode }

func (c cutTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil || req.Method != http.MethodPost || req.URL.Path != "/" || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	resp.Body = &cutBody{ReadCloser: resp.Body, lines: bufio.NewReader(resp.Body), mode: c.mode}
	return resp, nil
}

type cutBody struct {
	io.ReadCloser
	lines   *bufio.Reader
	mode    cutMode
	pending []byte
	cut     bool
}

var errConnectionReset = errors.New("connection reset by the test's proxy")

func (b *cutBody) Read(p []byte) (int, error) {
	for len(b.pending) == 0 {
		if b.cut {
			if b.mode == cutReset {
				return 0, errConnectionReset
			}
			return 0, io.EOF
		}
		line, err := b.lines.ReadBytes('\n')
		if bytes.Contains(line, []byte(partOne)) {
			b.cut = true
			if b.mode == cutInsideLine {
				line = line[:len(line)-5]
			}
		}
		b.pending = line
		if err != nil && len(line) == 0 {
			return 0, err
		}
	}
	n := copy(p, b.pending)
	b.pending = b.pending[n:]
	return n, nil
}

// useTransport routes turnctl's requests through rt for the test.
func useTransport(t *testing.T, rt http.RoundTripper) {
	saved := baseTransport
	baseTransport = rt
	t.Cleanup(func() { baseTransport = saved })
}

// TestChatReattachesAfterADrop: a submit whose connection drops mid-turn
// (reset, ended between lines, ended inside a line) is followed on over
// the resume route; the reply is shown whole, exactly as an unbroken
// stream shows it, and the turn's outcome is the exit status.
func TestChatReattachesAfterADrop(t *testing.T) {
	for name, mode := range map[string]cutMode{"reset": cutReset, "ends after a line": cutEOF, "ends inside a line": cutInsideLine} {
		t.Run(name, func(t *testing.T) {
			e := newDurableEnv(t, 20*time.Millisecond, true)
			useTransport(t, cutTransport{mode: mode})
			code, out, errOut := runTurnctl([]string{"chat", "-url", e.turnURL, "-session", "s1", "-token", "dev.alice", "question"}, "")
			if code != 0 {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
			}
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if len(lines) != 2 || lines[0] != partOne+partTwo || !strings.HasPrefix(lines[1], "[complete · seq ") {
				t.Errorf("stdout %q, want the whole reply once, then the complete status line", out)
			}
			if !strings.Contains(errOut, "reconnecting… (attempt 1 of 5)") {
				t.Errorf("stderr %q, want the reconnecting notice", errOut)
			}
			if e.resumes.Load() == 0 {
				t.Error("no resume request was made")
			}
		})
	}
}

// TestChatResumeOfAForgottenTurn: a drop whose resume finds the server
// without the turn (a dev server restarted on its in-memory store) says
// so, with the code, instead of a bare HTTP 404, and exits 1 at once.
func TestChatResumeOfAForgottenTurn(t *testing.T) {
	e := newDurableEnv(t, 20*time.Millisecond, true)
	e.forgetful.Store(true)
	useTransport(t, cutTransport{mode: cutReset})
	code, _, errOut := runTurnctl([]string{"chat", "-url", e.turnURL, "-session", "s1", "-token", "dev.alice", "question"}, "")
	if code != 1 || !strings.Contains(errOut, "the server no longer has turn") || !strings.Contains(errOut, "SESSION_NOT_FOUND") ||
		strings.Contains(errOut, "read the stream") {
		t.Errorf("exit %d, stderr %q; want 1 and the sentence naming the lost turn", code, errOut)
	}
	if n := e.resumes.Load(); n != 1 {
		t.Errorf("%d resume requests, want 1: a 404 is not retried", n)
	}
}

// TestChatReattachJSONShowsNoLineTwice: with -json, the live lines and
// the resumed ones together have strictly increasing sequences and end
// with the complete snapshot of the whole reply.
func TestChatReattachJSONShowsNoLineTwice(t *testing.T) {
	e := newDurableEnv(t, 20*time.Millisecond, true)
	useTransport(t, cutTransport{mode: cutReset})
	code, out, errOut := runTurnctl([]string{"chat", "-url", e.turnURL, "-session", "s1", "-token", "dev.alice", "-json", "question"}, "")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	var last *protocol.Event
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		ev, diag := protocol.DecodeTurnEvent([]byte(line))
		if diag != nil {
			t.Fatalf("line does not decode (%s): %s", diag.Code, line)
		}
		if last != nil && ev.Sequence <= last.Sequence {
			t.Errorf("sequence %d after %d: a line shown twice or out of order", ev.Sequence, last.Sequence)
		}
		last = ev
	}
	if last == nil || last.Snapshot == nil || last.Snapshot.Status != protocol.StatusComplete ||
		last.Snapshot.Messages[len(last.Snapshot.Messages)-1].Content != partOne+partTwo {
		t.Errorf("last line %+v, want the complete snapshot of the whole reply", last)
	}
	if e.resumes.Load() == 0 {
		t.Error("no resume request was made")
	}
}

// TestChatWithoutResumeKeepsTheOldEnding: with checkpoints off the
// capabilities offer no resume, and a drop ends the turn as before: no
// resume request, exit 1 with the same sentences.
func TestChatWithoutResumeKeepsTheOldEnding(t *testing.T) {
	tests := map[string]struct {
		mode    cutMode
		wantErr string
	}{
		"reset":              {cutReset, "turnctl chat: read the stream: " + errConnectionReset.Error()},
		"ends after a line":  {cutEOF, "the stream ended before the turn's last snapshot"},
		"ends inside a line": {cutInsideLine, "the stream ended before the turn's last snapshot"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := newDurableEnv(t, 0, true)
			useTransport(t, cutTransport{mode: tc.mode})
			code, _, errOut := runTurnctl([]string{"chat", "-url", e.turnURL, "-session", "s1", "-token", "dev.alice", "question"}, "")
			if code != 1 || !strings.Contains(errOut, tc.wantErr) {
				t.Errorf("exit %d, stderr %q; want 1 and %q", code, errOut, tc.wantErr)
			}
			if strings.Contains(errOut, "reconnecting") || e.resumes.Load() != 0 {
				t.Errorf("%d resume requests, stderr %q: want none without resume", e.resumes.Load(), errOut)
			}
			if e.capabilities.Load() != 1 {
				t.Errorf("%d capabilities requests, want 1 (read once, at the drop)", e.capabilities.Load())
			}
		})
	}
}

// startTurn submits a turn of the held model as alice and returns once
// its stream carried partOne, closing the connection (the turn goes on).
func startTurn(t *testing.T, turnURL, sessionID, turnID string) {
	t.Helper()
	body, err := protocol.EncodeEvent(&protocol.Event{
		EventID: "e-" + turnID, SessionID: sessionID, TurnID: turnID, EmittedAt: protocol.FormatTime(time.Now()),
		Kind: protocol.EventSubmit, Submit: &protocol.SubmitPayload{Input: "question"},
	})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, turnURL, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer dev.alice")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("submit: %d %s", resp.StatusCode, b)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, maxLineBytes)
	for sc.Scan() {
		if strings.Contains(sc.Text(), partOne) {
			return
		}
	}
	t.Fatalf("the live stream ended without %q (%v)", partOne, sc.Err())
}

// TestAttachFollowsTheRunningTurn: attach without -turn finds the running
// turn in history's currentTurn and shows it to its end, exit 0.
func TestAttachFollowsTheRunningTurn(t *testing.T) {
	e := newDurableEnv(t, 20*time.Millisecond, true)
	startTurn(t, e.turnURL, "s1", "t1")
	code, out, errOut := runTurnctl([]string{"attach", "-url", e.turnURL, "-history", e.historyURL, "-session", "s1", "-token", "dev.alice"}, "")
	if code != 0 {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if !strings.HasPrefix(errOut, "attaching to turn t1 (checkpoint sequence ") {
		t.Errorf("stderr %q, want the turn attached to", errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 2 || lines[0] != partOne+partTwo || !strings.HasPrefix(lines[1], "[complete · seq ") {
		t.Errorf("stdout %q, want the whole reply once, then the complete status line", out)
	}
}

// TestAttachToAStoppedTurn: attach -turn follows a turn that is stopped
// meanwhile and exits 1 with the interrupted ending, as chat does.
func TestAttachToAStoppedTurn(t *testing.T) {
	e := newDurableEnv(t, 20*time.Millisecond, false) // the model never finishes
	startTurn(t, e.turnURL, "s1", "t1")
	req, err := http.NewRequest(http.MethodPost, e.turnURL+"stop", strings.NewReader(`{"sessionId":"s1","turnId":"t1"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer dev.alice")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("stop: %d", resp.StatusCode)
	}
	code, out, errOut := runTurnctl([]string{"attach", "-url", e.turnURL, "-session", "s1", "-turn", "t1", "-token", "dev.alice"}, "")
	if code != 1 || !strings.Contains(errOut, "turnctl attach: stopped (TURN_INTERRUPTED)") {
		t.Errorf("exit %d, stderr %q; want 1 and TURN_INTERRUPTED", code, errOut)
	}
	if !strings.HasPrefix(out, partOne) || strings.Contains(out, partTwo) {
		t.Errorf("stdout %q, want the answer up to the stop", out)
	}
}

// TestAttachRefusals: nothing running, an unknown session, an unknown
// turn, and a turn function without resume are exit 1 with a sentence;
// bad usage is 2 and -h is 0.
func TestAttachRefusals(t *testing.T) {
	e := newDurableEnv(t, 20*time.Millisecond, true)
	startTurn(t, e.turnURL, "s1", "t1")
	// The turn ends: a resume of it shows its terminal snapshot (and
	// closing it opens nothing more: the gate is open).
	if code, _, errOut := runTurnctl([]string{"attach", "-url", e.turnURL, "-session", "s1", "-turn", "t1", "-token", "dev.alice"}, ""); code != 0 {
		t.Fatalf("attach to the ending turn: exit %d, stderr %q", code, errOut)
	}
	off := newDurableEnv(t, 0, true)
	urls := []string{"-url", e.turnURL, "-history", e.historyURL, "-token", "dev.alice"}
	tests := map[string]struct {
		args    []string
		want    int
		wantErr string
		wantOut string
	}{
		"nothing running": {append([]string{"attach", "-session", "s1"}, urls...), 1, "turnctl attach: nothing is running in session s1", ""},
		"unknown session": {append([]string{"attach", "-session", "s2"}, urls...), 1, "turnctl attach: HTTP 404: SESSION_NOT_FOUND", ""},
		"another user":    {[]string{"attach", "-session", "s1", "-url", e.turnURL, "-history", e.historyURL, "-token", "dev.mallory"}, 1, "HTTP 404: SESSION_NOT_FOUND", ""},
		"unknown turn":    {append([]string{"attach", "-session", "s1", "-turn", "t9"}, urls...), 1, "turnctl attach: resume: HTTP 404: TURN_NOT_FOUND", ""},
		"no resume":       {[]string{"attach", "-session", "s1", "-turn", "t1", "-url", off.turnURL, "-token", "dev.alice"}, 1, "does not offer resume", ""},
		"no session":      {[]string{"attach"}, 2, "-session ID (a SafeId) is required", ""},
		"bad turn":        {[]string{"attach", "-session", "s1", "-turn", "bad id"}, 2, "-turn is not a SafeId", ""},
		"arguments":       {[]string{"attach", "-session", "s1", "extra"}, 2, "no arguments are taken", ""},
		"not an http URL": {[]string{"attach", "-session", "s1", "-url", "ftp://x/"}, 2, "is not an http(s) URL", ""},
		"help":            {[]string{"attach", "-h"}, 0, "", "usage: turnctl attach"},
		"a finished turn": {append([]string{"attach", "-session", "s1", "-turn", "t1"}, urls...), 0, "", partOne + partTwo + "\n[complete · seq "},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := runTurnctl(tc.args, "")
			if code != tc.want || !strings.Contains(errOut, tc.wantErr) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errOut, tc.want, tc.wantErr)
			}
			if !strings.HasPrefix(out, tc.wantOut) {
				t.Errorf("stdout %q, want it to start with %q", out, tc.wantOut)
			}
		})
	}
}
