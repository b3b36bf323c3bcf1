package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/protocol"
)

// resumeScript is a turn function whose submit answers live, whose
// capabilities offer resume, and whose resume requests answer resumes[i]
// in turn (status and NDJSON body); it records each resume's query.
type resumeScript struct {
	t       *testing.T
	live    string
	resumes []scriptedResponse

	mu      sync.Mutex
	queries []string
}

type scriptedResponse struct {
	status int
	body   string
}

const resumeCapabilitiesJSON = `{"extensions":["stop","resume","durableTurns"],"resume":{"available":true,"method":"GET",` +
	`"path":"/sessions/{sessionId}/turns/{turnId}/stream","parameter":"after","pollIntervalMs":250,"cost":"x"}}`

func (s *resumeScript) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/":
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/x-ndjson")
		_, _ = io.WriteString(w, asSubmitted(s.live, body))
	case r.URL.Path == "/capabilities":
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(resumeCapabilitiesJSON))
	case strings.HasPrefix(r.URL.Path, "/sessions/s1/turns/") && strings.HasSuffix(r.URL.Path, "/stream"):
		s.mu.Lock()
		i := len(s.queries)
		s.queries = append(s.queries, r.URL.RawQuery)
		s.mu.Unlock()
		resp := scriptedResponse{status: http.StatusServiceUnavailable}
		if i < len(s.resumes) {
			resp = s.resumes[i]
		}
		if resp.status == http.StatusOK {
			w.Header().Set("Content-Type", "application/x-ndjson")
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(resp.status)
		turnID := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/sessions/s1/turns/"), "/stream")
		_, _ = io.WriteString(w, asTurn(resp.body, turnID))
	default:
		s.t.Errorf("unexpected request %s %s", r.Method, r.URL)
		w.WriteHeader(http.StatusTeapot)
	}
}

func (s *resumeScript) recorded() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.queries...)
}

// fastResumes shortens the waits between resumes for the test.
func fastResumes(t *testing.T) {
	saved := resumeBackoff
	resumeBackoff = time.Millisecond
	t.Cleanup(func() { resumeBackoff = saved })
}

// TestReattachTakesOnlyNewerSnapshots: a resumed stream that repeats
// sequences the client holds (allowed: duplicates are harmless) shows each
// sequence once; a resume's own SERVER_TIMEOUT (no terminal snapshot
// before it) is followed by another resume after the last sequence shown.
func TestReattachTakesOnlyNewerSnapshots(t *testing.T) {
	fastResumes(t)
	timeout := protocol.NewDiagnostic(protocol.CodeServerTimeout)
	s := &resumeScript{t: t,
		live: eventLine(t, 1, protocol.EventSnapshot, snapshot(protocol.StatusStreaming, "a", nil), nil) +
			eventLine(t, 2, protocol.EventSnapshot, snapshot(protocol.StatusStreaming, "ab", nil), nil),
		resumes: []scriptedResponse{
			{http.StatusOK, eventLine(t, 1, protocol.EventSnapshot, snapshot(protocol.StatusStreaming, "a", nil), nil) +
				eventLine(t, 2, protocol.EventSnapshot, snapshot(protocol.StatusStreaming, "ab", nil), nil) +
				eventLine(t, 4, protocol.EventSnapshot, snapshot(protocol.StatusStreaming, "abcd", nil), nil) +
				eventLine(t, 3, protocol.EventSnapshot, snapshot(protocol.StatusStreaming, "abc", nil), nil) +
				eventLine(t, 5, protocol.EventDiagnostic, nil, &timeout)},
			{http.StatusOK, eventLine(t, 4, protocol.EventSnapshot, snapshot(protocol.StatusStreaming, "abcd", nil), nil) +
				eventLine(t, 7, protocol.EventSnapshot, snapshot(protocol.StatusComplete, "abcdefg", nil), nil)},
		},
	}
	srv := httptest.NewServer(s)
	defer srv.Close()

	code, out, errOut := runTurnctl([]string{"chat", "-url", srv.URL + "/", "-session", "s1", "-json", "q"}, "")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	var seqs []int64
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		ev, diag := protocol.DecodeTurnEvent([]byte(line))
		if diag != nil {
			t.Fatalf("line does not decode (%s): %s", diag.Code, line)
		}
		seqs = append(seqs, ev.Sequence)
	}
	if got := sprintSeqs(seqs); got != "1 2 4 7" {
		t.Errorf("sequences shown %q, want 1 2 4 7 (each once, never older than the last)", got)
	}
	if q := s.recorded(); len(q) != 2 || q[0] != "after=2" || q[1] != "after=4" {
		t.Errorf("resume queries %q, want after=2 then after=4", q)
	}
	if strings.Count(errOut, "reconnecting…") != 2 {
		t.Errorf("stderr %q, want one reconnecting notice per resume", errOut)
	}
}

func sprintSeqs(seqs []int64) string {
	var b strings.Builder
	for i, s := range seqs {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.FormatInt(s, 10))
	}
	return b.String()
}

// TestReattachGivesUp: failing resumes are tried resumeAttempts times in
// a row, then the turn ends as failed with a sentence; a refusal for good
// (404 TURN_NOT_FOUND) is not retried; a TURN_LOST diagnostic ends it.
func TestReattachGivesUp(t *testing.T) {
	fastResumes(t)
	live := eventLine(t, 1, protocol.EventSnapshot, snapshot(protocol.StatusStreaming, "a", nil), nil)
	notFound := string(protocol.EncodeErrorBody(protocol.NewDiagnostic(protocol.CodeTurnNotFound)))
	lost := protocol.NewDiagnostic(protocol.CodeTurnLost)
	tests := map[string]struct {
		resumes  []scriptedResponse
		wantErr  string
		wantHits int
	}{
		"unavailable every time": {nil, "turnctl chat: read the stream: the stream dropped and 5 resumes in a row brought nothing new: resume: HTTP 503", 5},
		"turn not found":         {[]scriptedResponse{{http.StatusNotFound, notFound}}, "turnctl chat: the stream was lost and the server no longer has turn ", 1},
		"turn lost": {[]scriptedResponse{{http.StatusOK, eventLine(t, 2, protocol.EventDiagnostic, nil, &lost)}},
			"stream diagnostic: TURN_LOST", 1},
		"resumes that bring nothing new": {[]scriptedResponse{{http.StatusOK, live}, {http.StatusOK, live}, {http.StatusOK, ""}, {http.StatusOK, live}, {http.StatusOK, live}},
			"5 resumes in a row brought nothing new", 5},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := &resumeScript{t: t, live: live, resumes: tc.resumes}
			srv := httptest.NewServer(s)
			defer srv.Close()
			code, out, errOut := runTurnctl([]string{"chat", "-url", srv.URL + "/", "-session", "s1", "q"}, "")
			if code != 1 || !strings.Contains(errOut, tc.wantErr) {
				t.Errorf("exit %d, stderr %q; want 1 and %q", code, errOut, tc.wantErr)
			}
			if got := len(s.recorded()); got != tc.wantHits {
				t.Errorf("%d resume requests, want %d", got, tc.wantHits)
			}
			if !strings.HasPrefix(out, "a\ntool lookup") || strings.Count(out, "lookup") != 1 || strings.Count(out, "[streaming · seq 1") != 1 {
				t.Errorf("stdout %q, want the text, tool call and status line of sequence 1 once", out)
			}
		})
	}
}

// TestLiveRendererReconnectingStatus: on a terminal the reconnecting
// status is drawn in the redrawn block under the status line and removed
// when the stream is back, the stop notice staying.
func TestLiveRendererReconnectingStatus(t *testing.T) {
	var out strings.Builder
	r := &liveRenderer{w: &out, width: 80, height: 24}
	shown := &lockedRenderer{r: r}
	shown.event(nil, &protocol.Event{Kind: protocol.EventSnapshot, Sequence: 1, Snapshot: snapshot(protocol.StatusStreaming, "par", nil)})
	shown.notice(noticeStopping)
	shown.status(noticeReconnecting + " (attempt 1 of 5)")
	shown.status(noticeReconnecting + " (attempt 2 of 5)")
	if want := []string{noticeStopping, noticeReconnecting + " (attempt 2 of 5)"}; strings.Join(r.notices, "|") != strings.Join(want, "|") {
		t.Errorf("notices %q, want %q", r.notices, want)
	}
	drawn := out.Len()
	shown.status("")
	redraw := out.String()[drawn:]
	if !strings.HasPrefix(redraw, "\x1b[") || strings.Contains(redraw, noticeReconnecting) ||
		!strings.Contains(redraw, "[streaming · seq 1") || !strings.Contains(redraw, noticeStopping) {
		t.Errorf("redraw after the reconnect %q, want the block without the reconnecting line", redraw)
	}
	shown.done()
	shown.status(noticeReconnecting) // after the end: dropped
	if len(r.notices) != 1 {
		t.Errorf("notices %q after done, want the stop notice only", r.notices)
	}
}
