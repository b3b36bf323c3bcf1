package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// line is one NDJSON line of session s1's turn t1 whose assistant message
// holds text.
func line(t *testing.T, seq int64, status, text string) string {
	t.Helper()
	b, err := protocol.AppendEventLine(nil, &protocol.Event{
		EventID: "e1", SessionID: "s1", TurnID: "t1", Sequence: seq, EmittedAt: "2026-12-01T12:00:00.000Z",
		Kind: protocol.EventSnapshot, Snapshot: &protocol.SnapshotPayload{Status: status, Messages: []protocol.Message{
			{ID: "t1.u", Role: protocol.RoleUser, Content: "q", Status: protocol.MessageComplete, CreatedAt: "2026-12-01T12:00:00.000Z"},
			{ID: "t1.a", Role: protocol.RoleAssistant, Content: text, Status: protocol.MessageStreaming, CreatedAt: "2026-12-01T12:00:00.000Z"},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// diagnosticLine is a diagnostic line of session s1's turn t1.
func diagnosticLine(t *testing.T, seq int64, code string) string {
	t.Helper()
	d := protocol.NewDiagnostic(code)
	b, err := protocol.AppendEventLine(nil, &protocol.Event{EventID: "e2", SessionID: "s1", TurnID: "t1", Sequence: seq,
		EmittedAt: "2026-12-01T12:00:00.000Z", Kind: protocol.EventDiagnostic, Diagnostic: &d})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// script is a turn function: a submit answers live; capabilities offer
// resume when resumes is not nil, and the i-th resume answers resumes[i]
// (a 503 past the end). It records each resume's query.
type script struct {
	live    string
	resumes []string

	mu      sync.Mutex
	queries []string
}

func (s *script) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/":
		w.Header().Set("Content-Type", "application/x-ndjson")
		_, _ = io.WriteString(w, s.live)
	case r.URL.Path == "/capabilities" && s.resumes != nil:
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"protocols":[{"protocol":"agentskit.chat.turn","versions":[1]}],"extensions":["resume"],`+
			`"resume":{"available":true,"method":"GET","path":"/sessions/{sessionId}/turns/{turnId}/stream","parameter":"after"}}`)
	case r.URL.Path == "/sessions/s1/turns/t1/stream":
		s.mu.Lock()
		i := len(s.queries)
		s.queries = append(s.queries, r.URL.RawQuery)
		s.mu.Unlock()
		if i >= len(s.resumes) {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		_, _ = io.WriteString(w, s.resumes[i])
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write(protocol.EncodeErrorBody(protocol.NewDiagnostic(protocol.CodeRequestNotFound)))
	}
}

func newScripted(t *testing.T, s *script) *client.Client {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	c, err := client.New(client.Options{TurnURL: srv.URL + "/", ResumeBackoff: 1})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// sequences reads s to its end and returns the sequences Next returned
// and the error that ended it (nil for io.EOF).
func sequences(s *client.Stream) ([]int64, error) {
	var seqs []int64
	for {
		ev, err := s.Next()
		if errors.Is(err, io.EOF) {
			return seqs, nil
		}
		if err != nil {
			return seqs, err
		}
		seqs = append(seqs, ev.Sequence)
	}
}

// TestStreamResumes: a stream that drops is resumed after the last
// sequence it accepted, repeated and older snapshots are skipped, and a
// resume's own SERVER_TIMEOUT is resumed again; OnResume sees each
// attempt and the end of the wait.
func TestStreamResumes(t *testing.T) {
	s := &script{
		live: line(t, 1, protocol.StatusStreaming, "a") + line(t, 2, protocol.StatusStreaming, "ab"),
		resumes: []string{
			line(t, 2, protocol.StatusStreaming, "ab") + line(t, 4, protocol.StatusStreaming, "abcd") +
				line(t, 3, protocol.StatusStreaming, "abc") + diagnosticLine(t, 5, protocol.CodeServerTimeout),
			line(t, 7, protocol.StatusComplete, "abcdefg"),
		},
	}
	c := newScripted(t, s)
	var attempts []int
	st, err := c.Submit(t.Context(), client.Submit{SessionID: "s1", TurnID: "t1", Input: "q",
		StreamOptions: client.StreamOptions{OnResume: func(attempt, of int) { attempts = append(attempts, attempt, of) }}})
	if err != nil {
		t.Fatal(err)
	}
	seqs, err := sequences(st)
	if err != nil || len(seqs) != 4 || seqs[0] != 1 || seqs[1] != 2 || seqs[2] != 4 || seqs[3] != 7 {
		t.Errorf("sequences %v, %v; want 1 2 4 7", seqs, err)
	}
	if q := strings.Join(s.queries, " "); q != "after=2 after=4" {
		t.Errorf("resume queries %q, want after=2 after=4", q)
	}
	if want := []int{1, 5, 0, 5, 1, 5, 0, 5}; !slices.Equal(attempts, want) {
		t.Errorf("OnResume calls %v, want %v", attempts, want)
	}
}

// TestStreamEndings: how a stream that does not complete ends, with and
// without resume.
func TestStreamEndings(t *testing.T) {
	tests := map[string]struct {
		s        *script
		wantKind client.Kind
		wantText string
	}{
		"a diagnostic line": {s: &script{live: line(t, 1, protocol.StatusStreaming, "a") + diagnosticLine(t, 2, protocol.CodeSessionConflict)},
			wantKind: client.KindDiagnostic, wantText: "stream diagnostic: SESSION_CONFLICT"},
		"cut short, no resume": {s: &script{live: line(t, 1, protocol.StatusStreaming, "a")},
			wantKind: client.KindIncomplete, wantText: "the stream ended before the turn's last snapshot"},
		"cut inside a line": {s: &script{live: line(t, 1, protocol.StatusStreaming, "a") + `{"protocol":`},
			wantKind: client.KindIncomplete},
		"not a turn event": {s: &script{live: "{\"hello\":1}\n"},
			wantKind: client.KindInvalidLine, wantText: "(PROTOCOL_INVALID_PAYLOAD)"},
		"resumes that bring nothing": {s: &script{live: line(t, 1, protocol.StatusStreaming, "a"), resumes: []string{}},
			wantKind: client.KindNetwork, wantText: "the stream dropped and 5 resumes in a row brought nothing new: resume: HTTP 503 Service Unavailable"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			st, err := newScripted(t, tc.s).Submit(t.Context(), client.Submit{SessionID: "s1", TurnID: "t1", Input: "q"})
			if err != nil {
				t.Fatal(err)
			}
			_, err = sequences(st)
			var e *client.Error
			if !errors.As(err, &e) || e.Kind != tc.wantKind || !strings.Contains(err.Error(), tc.wantText) {
				t.Fatalf("error %v (%#v), want kind %d with %q", err, e, tc.wantKind, tc.wantText)
			}
			if tc.wantKind != client.KindInvalidLine && e.Sequence != 1 {
				t.Errorf("Sequence %d, want 1 (the last accepted)", e.Sequence)
			}
			if _, again := st.Next(); again != err {
				t.Errorf("Next after the end: %v, want the same error", again)
			}
		})
	}
}

// TestDrain: Drain reads to the end and decodes only the last line.
func TestDrain(t *testing.T) {
	tests := map[string]struct {
		live     string
		wantKind client.Kind // 0: no error
		wantSeq  int64
	}{
		"complete":     {line(t, 1, protocol.StatusStreaming, "a") + line(t, 2, protocol.StatusComplete, "ab"), 0, 2},
		"diagnostic":   {line(t, 1, protocol.StatusStreaming, "a") + diagnosticLine(t, 2, protocol.CodeServerTimeout), client.KindDiagnostic, 2},
		"cut short":    {line(t, 1, protocol.StatusStreaming, "a"), client.KindIncomplete, 1},
		"invalid last": {line(t, 1, protocol.StatusStreaming, "a") + "[]\n", client.KindInvalidLine, -1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			lines := 0
			st, err := newScripted(t, &script{live: tc.live}).Submit(t.Context(), client.Submit{SessionID: "s1", TurnID: "t1", Input: "q",
				StreamOptions: client.StreamOptions{OnLine: func([]byte) { lines++ }}})
			if err != nil {
				t.Fatal(err)
			}
			last, err := st.Drain()
			var e *client.Error
			switch {
			case tc.wantKind == 0 && err != nil, tc.wantKind != 0 && (!errors.As(err, &e) || e.Kind != tc.wantKind):
				t.Errorf("Drain: %v, want kind %d", err, tc.wantKind)
			case tc.wantSeq >= 0 && (last == nil || last.Sequence != tc.wantSeq):
				t.Errorf("last %+v, want sequence %d", last, tc.wantSeq)
			}
			if lines != strings.Count(tc.live, "\n") {
				t.Errorf("OnLine saw %d lines, want %d", lines, strings.Count(tc.live, "\n"))
			}
		})
	}
}

// TestRefusals: an error answer is a KindHTTP *Error with its diagnostic,
// a function URL front end's message, or its status alone.
func TestRefusals(t *testing.T) {
	tests := map[string]struct {
		status    int
		body      string
		code      string
		retryable bool
		message   string
	}{
		"protocol error body": {http.StatusConflict, string(protocol.EncodeErrorBody(protocol.NewDiagnostic(protocol.CodeSessionBusy))),
			protocol.CodeSessionBusy, true, ""},
		"function URL front end": {http.StatusForbidden, `{"Message":"Forbidden"}`, client.CodeResponseInvalid, false, "Forbidden"},
		"status alone":           {http.StatusBadGateway, "upstream said no", client.CodeResponseInvalid, true, ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			c, err := client.New(client.Options{TurnURL: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Submit(t.Context(), client.Submit{SessionID: "s1", Input: "q"})
			var e *client.Error
			if !errors.As(err, &e) || e.Kind != client.KindHTTP || e.Status != tc.status || e.Code() != tc.code ||
				e.Retryable() != tc.retryable || e.FunctionURLMessage != tc.message || string(e.Body) != tc.body {
				t.Errorf("Submit: %#v", err)
			}
		})
	}
}

// TestContextEndsTheStream: a cancelled context ends the stream with its
// own error, also while it waits to resume.
func TestContextEndsTheStream(t *testing.T) {
	c := newScripted(t, &script{live: line(t, 1, protocol.StatusStreaming, "a"), resumes: []string{}})
	ctx, cancel := context.WithCancel(t.Context())
	st, err := c.Submit(ctx, client.Submit{SessionID: "s1", TurnID: "t1", Input: "q",
		StreamOptions: client.StreamOptions{OnResume: func(attempt, _ int) {
			if attempt == 2 {
				cancel()
			}
		}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sequences(st); !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
}

// TestProvisional: in compact mode with Provisional, an append line that
// is still arriving shows its text so far; the cursor holds only whole
// lines.
func TestProvisional(t *testing.T) {
	first := line(t, 1, protocol.StatusStreaming, "Hel")
	appendLine := `{"protocol":"agentskit.chat.turn","version":1,"event":"turnstream.turn.append","sequence":2,"after":1,"offset":3,"text":"lo, world"}` + "\n"
	half := len(appendLine) - 6 // "lo, wo" received, "rld\"}\n" not yet
	last := line(t, 3, protocol.StatusComplete, "Hello, world")
	next := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.Header().Set(api.StreamModeHeader, r.Header.Get(api.StreamModeHeader))
		for _, part := range []string{first + appendLine[:half], appendLine[half:] + last} {
			_, _ = io.WriteString(w, part)
			w.(http.Flusher).Flush()
			<-next
		}
	}))
	defer srv.Close()
	defer close(next)
	c, err := client.New(client.Options{TurnURL: srv.URL, Compact: true})
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.Submit(t.Context(), client.Submit{SessionID: "s1", TurnID: "t1", Input: "q",
		StreamOptions: client.StreamOptions{Provisional: true}})
	if err != nil {
		t.Fatal(err)
	}
	type shown struct {
		seq         int64
		text        string
		provisional bool
	}
	var got []shown
	for {
		ev, err := st.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		msgs := ev.Snapshot.Messages
		got = append(got, shown{ev.Sequence, msgs[len(msgs)-1].Content, st.Provisional()})
		if st.Provisional() {
			next <- struct{}{} // the rest of the line
		}
	}
	want := []shown{{1, "Hel", false}, {1, "Hello, wo", true}, {2, "Hello, world", false}, {3, "Hello, world", false}}
	if len(got) != len(want) {
		t.Fatalf("shown %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("shown[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}
	if seq := st.Sequence(); seq != 3 {
		t.Errorf("Sequence %d, want 3", seq)
	}
}
