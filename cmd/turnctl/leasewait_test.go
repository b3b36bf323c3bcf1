package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/clock"
	"github.com/turnstream/turnstream/pkg/protocol"
)

var leaseT0 = time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)

func running(turnID string, expires time.Time) *client.CurrentTurn {
	return &client.CurrentTurn{TurnID: turnID, Status: "running", ExpiresAt: expires.UnixMilli()}
}

// TestLeaseStatus: what a silent resume says from the reads of its
// session's lease: a countdown while the lease stands; "stopped" once it
// was not renewed when a live server would have renewed it (below 3/5 of
// the time it had at the first read); a renewal (the server alive) judged
// afresh; the expiry; a turn no longer running; reads that fail.
func TestLeaseStatus(t *testing.T) {
	at := func(s int) time.Time { return leaseT0.Add(time.Duration(s) * time.Second) }
	type step struct {
		read  int // seconds after the resume opened; -1: no read
		ct    *client.CurrentTurn
		err   error
		at    int // when the status is drawn
		want  string
		phase leasePhase
	}
	tests := map[string][]step{
		"a stopped server": {
			{2, running("t1", at(32)), nil, 2, "no news from the server that ran this answer for 2 s; if it stopped, its lease expires in 30 s", phaseNoNews},
			{-1, nil, nil, 3, "no news from the server that ran this answer for 3 s; if it stopped, its lease expires in 29 s", phaseNoNews},
			{14, running("t1", at(32)), nil, 14, "no news from the server that ran this answer for 14 s; if it stopped, its lease expires in 18 s", phaseNoNews},
			{-1, nil, nil, 15, "the server that ran this answer stopped; waiting up to 17 s for its lease to expire", phaseStopped},
			{-1, nil, nil, 31, "the server that ran this answer stopped; waiting up to 1 s for its lease to expire", phaseStopped},
			{32, running("t1", at(32)), nil, 32, "the lease of the server that ran this answer expired; waiting for the stored answer", phaseExpired},
			{35, nil, nil, 35, "the turn is no longer running; waiting for its last line", phaseFinished},
		},
		"a live, quiet server": {
			{2, running("t1", at(22)), nil, 2, "no news from the server that ran this answer for 2 s; if it stopped, its lease expires in 20 s", phaseNoNews},
			{9, running("t1", at(39)), nil, 9, "the server that runs this answer renewed its lease; no news from it for 9 s", phaseAlive},
			// Judged from the renewal on: 30 s left then, below 18 s
			// unrenewed it stopped.
			{21, running("t1", at(39)), nil, 21, "the server that runs this answer renewed its lease; no news from it for 21 s", phaseAlive},
			{-1, nil, nil, 22, "the server that ran this answer stopped; waiting up to 17 s for its lease to expire", phaseStopped},
		},
		"another turn runs": {
			{2, running("t2", at(30)), nil, 2, "the turn is no longer running; waiting for its last line", phaseFinished},
		},
		"an unreadable session": {
			{2, nil, errors.New("connection refused"), 2, "no news from the server that ran this answer for 2 s", phaseUnread},
			{5, running("t1", at(30)), nil, 5, "no news from the server that ran this answer for 5 s; if it stopped, its lease expires in 25 s", phaseNoNews},
			// A failed read later keeps the countdown of the last one.
			{8, nil, errors.New("timeout"), 8, "no news from the server that ran this answer for 8 s; if it stopped, its lease expires in 22 s", phaseNoNews},
		},
	}
	for name, steps := range tests {
		t.Run(name, func(t *testing.T) {
			st := leaseState{turnID: "t1", quietSince: leaseT0}
			for i, s := range steps {
				if s.read >= 0 {
					st.observe(s.ct, s.err, at(s.read))
				}
				text, phase := st.status(at(s.at))
				if text != s.want || phase != s.phase {
					t.Errorf("step %d: %q (phase %d), want %q (phase %d)", i, text, phase, s.want, s.phase)
				}
				if !isLeaseStatus(text) {
					t.Errorf("step %d: %q is not recognised as a lease status (a redraw would keep it)", i, text)
				}
			}
		})
	}
}

// statusLog is a renderer that records the statuses shown.
type statusLog struct {
	mu       sync.Mutex
	statuses []string
}

func (l *statusLog) event([]byte, *protocol.Event) {}
func (l *statusLog) notice(string)                 {}
func (l *statusLog) done()                         {}
func (l *statusLog) status(text string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.statuses = append(l.statuses, text)
}

func (l *statusLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.statuses...)
}

// watchLease runs a leaseWait over a fake clock whose session reads
// answer read; step advances the clock by one tick and waits for the
// watch to handle it.
func watchLease(t *testing.T, live bool, read func(now time.Time) (*client.CurrentTurn, error)) (lw *leaseWait, log *statusLog, step func()) {
	t.Helper()
	f := clock.NewFake(leaseT0)
	log = &statusLog{}
	ticked := make(chan struct{})
	var reads atomic.Int32
	lw = &leaseWait{shown: &lockedRenderer{r: log}, clock: f, live: live,
		read: func(context.Context) (*client.CurrentTurn, error) {
			reads.Add(1)
			return read(f.Now())
		},
		afterTick: func() { ticked <- struct{}{} }}
	lw.bind(t.Context(), "t1")
	lw.resumed()
	t.Cleanup(lw.news)
	return lw, log, func() {
		f.Advance(leaseTick)
		select {
		case <-ticked:
		case <-t.Context().Done():
		}
	}
}

// TestLeaseWaitCountdown: on a terminal the watch redraws its status each
// second from the reads of the lease (every leaseReadEvery), shows the
// stop once the lease was not renewed in time, the expiry, and clears
// its status when the stream's next line comes.
func TestLeaseWaitCountdown(t *testing.T) {
	lw, log, step := watchLease(t, true, func(time.Time) (*client.CurrentTurn, error) {
		return running("t1", leaseT0.Add(32*time.Second)), nil
	})
	for range 33 {
		step()
	}
	got := log.all()
	if len(got) != 32 { // one a second from the 2nd (leaseQuiet) to the 33rd
		t.Fatalf("%d statuses, want 32: %q", len(got), got)
	}
	want := map[int]string{
		0:  "no news from the server that ran this answer for 2 s; if it stopped, its lease expires in 30 s",
		12: "no news from the server that ran this answer for 14 s; if it stopped, its lease expires in 18 s",
		13: "the server that ran this answer stopped; waiting up to 17 s for its lease to expire",
		28: "the server that ran this answer stopped; waiting up to 2 s for its lease to expire",
		30: "the lease of the server that ran this answer expired; waiting for the stored answer",
	}
	for i, w := range want {
		if got[i] != w {
			t.Errorf("status %d: %q, want %q", i, got[i], w)
		}
	}
	lw.news()
	if last := log.all(); last[len(last)-1] != "" {
		t.Errorf("the stream's next line left the status %q", last[len(last)-1])
	}
}

// TestLeaseWaitPhases: off a terminal each phase is one notice line, not
// one a second.
func TestLeaseWaitPhases(t *testing.T) {
	_, log, step := watchLease(t, false, func(time.Time) (*client.CurrentTurn, error) {
		return running("t1", leaseT0.Add(32*time.Second)), nil
	})
	for range 40 {
		step()
	}
	got := log.all()
	want := []string{
		"no news from the server that ran this answer for 2 s; if it stopped, its lease expires in 30 s",
		"the server that ran this answer stopped; waiting up to 17 s for its lease to expire",
		"the lease of the server that ran this answer expired; waiting for the stored answer",
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("statuses %q, want %q", got, want)
	}
}

// TestLeaseWaitWithoutHistory: without a history URL nothing is read and
// nothing is watched.
func TestLeaseWaitWithoutHistory(t *testing.T) {
	lw := &leaseWait{shown: &lockedRenderer{r: &statusLog{}}, clock: clock.NewFake(leaseT0)}
	lw.bind(t.Context(), "t1")
	lw.resumed()
	if lw.stop != nil {
		t.Error("a watch started without a way to read the lease")
	}
}

// TestChatSaysWhatASilentResumeWaitsFor: the stream of a turn whose
// server stopped drops; the resume opens and stays silent until the lease
// expires, then sends the turn as stored, lost, with less text than was
// shown. turnctl says what it waited for (read from the history
// function's session summary) and that the stored answer is shorter, and
// shows the stored one last.
func TestChatSaysWhatASilentResumeWaitsFor(t *testing.T) {
	fastResumes(t)
	for _, v := range []*time.Duration{&leaseQuiet, &leaseTick, &leaseReadEvery} {
		saved := *v
		*v = 5 * time.Millisecond
		t.Cleanup(func() { *v = saved })
	}
	lost := protocol.NewDiagnostic(protocol.CodeTurnLost)
	const shownText, storedText = "part one, part two and three", "part one"
	secondRead := make(chan struct{})
	var reads atomic.Int32
	var turnID atomic.Value // the submitted turn's id
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/turn/":
			body, _ := io.ReadAll(r.Body)
			if ev, d := protocol.DecodeTurnEvent(body); d == nil {
				turnID.Store(ev.TurnID)
			}
			w.Header().Set("Content-Type", "application/x-ndjson")
			// The server stops after this line: the body ends.
			_, _ = io.WriteString(w, asSubmitted(eventLine(t, 1, protocol.EventSnapshot, snapshot(protocol.StatusStreaming, shownText, nil), nil), body))
		case r.URL.Path == "/turn/capabilities":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(resumeCapabilitiesJSON))
		case strings.HasPrefix(r.URL.Path, "/turn/sessions/s1/turns/"):
			turnID := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/turn/sessions/s1/turns/"), "/stream")
			w.Header().Set("Content-Type", "application/x-ndjson")
			w.WriteHeader(http.StatusOK)
			_ = http.NewResponseController(w).Flush()
			select { // silent until the lease was read twice
			case <-secondRead:
			case <-r.Context().Done():
				return
			}
			// A lost turn's terminal sequence is past any the stream
			// could have reached (chat.SequenceGapAfterCrash).
			_, _ = io.WriteString(w, asTurn(eventLine(t, 1+chat.SequenceGapAfterCrash, protocol.EventSnapshot, snapshot(protocol.StatusError, storedText, &lost), nil), turnID))
		case r.URL.Path == "/history/sessions/s1":
			w.Header().Set("Content-Type", "application/json")
			_, _ = fmt.Fprintf(w, `{"sessionId":"s1","currentTurn":{"turnId":%q,"status":"running","expiresAt":%d,"sequence":1,"pendingInteractions":[]}}`,
				turnID.Load(), time.Now().Add(30*time.Second).UnixMilli())
			if reads.Add(1) == 2 {
				close(secondRead)
			}
		default:
			t.Errorf("unexpected request %s %s", r.Method, r.URL)
			w.WriteHeader(http.StatusTeapot)
		}
	}))
	defer srv.Close()
	code, out, errOut := runTurnctl([]string{"chat", "-url", srv.URL + "/turn/", "-history", srv.URL + "/history/", "-session", "s1", "q"}, "")
	if code != 1 {
		t.Fatalf("exit %d, want 1 (a lost turn); stderr %q", code, errOut)
	}
	for _, want := range []string{
		"reconnecting… (attempt 1 of 5)",
		"no news from the server that ran this answer for ",
		"turn failed: TURN_LOST: The turn stopped before it finished. (retryable)\nturnctl chat: the stored answer is shorter than what was shown (8 of 28 characters): the server stopped before it saved the rest; " +
			"the answer shown last is the one the conversation keeps",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr %q, want %q", errOut, want)
		}
	}
	if !strings.Contains(out, shownText+"\n"+storedText+"\n") {
		t.Errorf("stdout %q, want the text shown, then the stored text on a line of its own", out)
	}
}

// TestChatRefusesABadHistoryURL: -history must be an http(s) URL; the
// refusal (exit 2) sends nothing and does not repeat the value.
func TestChatRefusesABadHistoryURL(t *testing.T) {
	for _, bad := range []string{"ftp://files.example/", "not a url", "://x"} {
		code, _, errOut := runTurnctl([]string{"chat", "-history", bad, "-session", "s1", "hello"}, "")
		if code != 2 || errOut != "turnctl chat: -history is not an http(s) URL\n" {
			t.Errorf("-history %q: exit %d, stderr %q", bad, code, errOut)
		}
	}
}
