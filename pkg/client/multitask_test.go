package client_test

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

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/sessionapi"
	"github.com/turnstream/turnstream/pkg/store/memory"
	"github.com/turnstream/turnstream/pkg/turn"
)

// gatedModel echoes its input in two parts; the second waits for gate
// (or the call's context), so a turn it runs is certainly running while
// the gate is closed.
type gatedModel struct{ gate chan struct{} }

func (m *gatedModel) Stream(ctx context.Context, req model.Request) (model.Stream, error) {
	input := ""
	for _, msg := range req.Messages {
		if msg.Role == protocol.RoleUser {
			input = msg.Content
		}
	}
	return &gatedStream{ctx: ctx, gate: m.gate, text: "Echo: " + input}, nil
}

type gatedStream struct {
	ctx  context.Context
	gate chan struct{}
	text string
	step int
}

func (s *gatedStream) Recv() (model.Event, error) {
	s.step++
	switch s.step {
	case 1:
		return model.Event{TextDelta: s.text[:4]}, nil
	case 2:
		select {
		case <-s.ctx.Done():
			return model.Event{}, s.ctx.Err()
		case <-s.gate:
		}
		return model.Event{TextDelta: s.text[4:]}, nil
	case 3:
		return model.Event{Usage: &protocol.Usage{PromptTokens: 1, CompletionTokens: 1, TotalTokens: 2}, FinishReason: model.FinishStop}, nil
	}
	return model.Event{}, io.EOF
}

func (s *gatedStream) Close() error { return nil }

// queueEnv is the turn and history handlers on one memory store, dev
// auth, a gated model, checkpoints every checkpoint (0: off) and at most
// two queued turns per session; queued turns drain in process.
type queueEnv struct {
	turnURL, historyURL string
	open                func()
}

func newQueueEnv(t *testing.T, checkpoint time.Duration) *queueEnv {
	t.Helper()
	gate := make(chan struct{})
	var once sync.Once
	e := &queueEnv{open: func() { once.Do(func() { close(gate) }) }}
	store := memory.New(memory.Options{})
	authn, err := auth.New(context.Background(), config.AuthConfig{Mode: config.AuthDev},
		auth.WithLookupEnv(func(string) (string, bool) { return "", false }))
	if err != nil {
		t.Fatal(err)
	}
	th, err := turn.NewHandler(turn.Options{
		Config: turn.Config{
			Store:              store,
			Model:              &gatedModel{gate: gate},
			Definition:         turn.Definition{ID: "default", Revision: 1},
			CheckpointInterval: checkpoint,
			ResumePollInterval: 10 * time.Millisecond,
			LeaseDuration:      3 * time.Second,
			// Renewals move the session's revision, which an enqueue's
			// compare-and-set reads: not so often that a loaded machine's
			// enqueue loses every race (cmd/turnctl's conformance wiring).
			RenewInterval:  500 * time.Millisecond,
			MaxQueuedTurns: 2,
		},
		Authenticator: authn,
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(th)
	hh, err := sessionapi.NewHistoryHandler(sessionapi.Options{Store: store, Authenticator: authn})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(hh)
	t.Cleanup(hs.Close)
	t.Cleanup(ts.Close)
	t.Cleanup(e.open) // run first: held turns end before the servers close
	e.turnURL, e.historyURL = ts.URL+"/", hs.URL+"/"
	return e
}

func (e *queueEnv) client(t *testing.T) *client.Client {
	t.Helper()
	c, err := client.New(client.Options{TurnURL: e.turnURL, HistoryURL: e.historyURL, Auth: client.Bearer("dev.alice")})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// running submits a turn of sessionID and returns its stream once the
// turn runs (its first snapshot read).
func running(t *testing.T, c *client.Client, sessionID, turnID string) *client.Stream {
	t.Helper()
	s, err := c.Submit(t.Context(), client.Submit{SessionID: sessionID, TurnID: turnID, Input: "first"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if _, err := s.Next(); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSubmitEnqueue: a submit with MultitaskEnqueue while a turn runs is
// queued (202, its position), listed in the session summary, and its
// Stream follows it once the running turn ends, to its completion; a
// queued turn stopped before it starts is cancelled and its stream ends
// TURN_CANCELLED; one more than the session may hold is
// SESSION_QUEUE_FULL; reject is SESSION_BUSY.
func TestSubmitEnqueue(t *testing.T) {
	e := newQueueEnv(t, 20*time.Millisecond)
	c := e.client(t)
	a := running(t, c, "q1", "ta")
	b, err := c.Submit(t.Context(), client.Submit{SessionID: "q1", TurnID: "tb", Input: "second", Multitask: api.MultitaskEnqueue})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = b.Close() }()
	if q := b.Queued(); q == nil || q.Position != 1 || q.StreamURL != "sessions/q1/turns/tb/stream" || q.TurnID != "tb" {
		t.Fatalf("Queued() = %+v, want position 1 and tb's stream", q)
	}
	cs, err := c.Submit(t.Context(), client.Submit{SessionID: "q1", TurnID: "tc", Input: "third", Multitask: api.MultitaskEnqueue})
	if err != nil || cs.Queued() == nil || cs.Queued().Position != 2 {
		t.Fatalf("second enqueue: %v %+v", err, cs)
	}
	_, err = c.Submit(t.Context(), client.Submit{SessionID: "q1", TurnID: "td", Input: "fourth", Multitask: api.MultitaskEnqueue})
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code() != protocol.CodeSessionQueueFull || !ce.Retryable() || !client.IsMultitaskCode(ce.Code()) {
		t.Fatalf("a third enqueue: %v, want SESSION_QUEUE_FULL", err)
	}
	_, err = c.Submit(t.Context(), client.Submit{SessionID: "q1", TurnID: "te", Input: "fifth", Multitask: api.MultitaskReject})
	if !errors.As(err, &ce) || ce.Code() != protocol.CodeSessionBusy || client.IsMultitaskCode(ce.Code()) {
		t.Fatalf("reject: %v, want SESSION_BUSY", err)
	}
	sum, err := c.Session(t.Context(), "q1")
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.QueuedTurns) != 2 || sum.QueuedTurns[0].TurnID != "tb" || sum.QueuedTurns[0].Position != 1 ||
		sum.QueuedTurns[0].InputPreview != "second" || sum.QueuedTurns[1].TurnID != "tc" || sum.QueuedTurns[0].ExpiresAt <= 0 {
		t.Fatalf("queuedTurns %+v", sum.QueuedTurns)
	}
	ans, err := c.StopTurn(t.Context(), "q1", "tc")
	if err != nil || !ans.StopRequested || !ans.Cancelled {
		t.Fatalf("StopTurn of the queued turn: %+v, %v; want cancelled", ans, err)
	}
	e.open()
	if _, err := sequences(a); err != nil {
		t.Fatalf("the running turn: %v", err)
	}
	var last *protocol.Event
	for {
		ev, err := b.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the queued turn's stream: %v", err)
		}
		last = ev
	}
	msgs := last.Snapshot.Messages
	if last.Snapshot.Status != protocol.StatusComplete || msgs[len(msgs)-1].Content != "Echo: second" {
		t.Fatalf("the queued turn ended %+v", last.Snapshot)
	}
	_, err = sequences(cs)
	if !errors.As(err, &ce) || ce.Kind != client.KindDiagnostic || ce.Code() != protocol.CodeTurnCancelled {
		t.Fatalf("the cancelled turn's stream: %v, want TURN_CANCELLED", err)
	}
	var order []string
	for page, err := range c.TurnPages(t.Context(), "q1", client.PageOptions{Order: client.OrderAsc}) {
		if err != nil {
			t.Fatal(err)
		}
		for _, tu := range page.Turns {
			order = append(order, tu.TurnID+":"+tu.Status)
		}
	}
	if got := strings.Join(order, " "); !strings.HasPrefix(got, "ta:complete ") || !strings.Contains(got, "tb:complete") {
		t.Errorf("history %s, want ta then tb, complete", got)
	}
}

// TestSubmitPolicyRefused: a deployment without checkpoints serves only
// reject: enqueue is MULTITASK_NOT_ALLOWED; a policy that is none is
// refused before any request.
func TestSubmitPolicyRefused(t *testing.T) {
	e := newQueueEnv(t, 0)
	c := e.client(t)
	running(t, c, "q2", "ta")
	_, err := c.Submit(t.Context(), client.Submit{SessionID: "q2", Input: "x", Multitask: api.MultitaskEnqueue})
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Status != http.StatusUnprocessableEntity || ce.Code() != protocol.CodeMultitaskNotAllowed ||
		ce.Retryable() || !client.IsMultitaskCode(ce.Code()) {
		t.Fatalf("enqueue without checkpoints: %v, want 422 MULTITASK_NOT_ALLOWED", err)
	}
	caps, err := c.Capabilities(t.Context())
	if err != nil || caps.Allows(api.MultitaskEnqueue) || !caps.Allows(api.MultitaskReject) {
		t.Fatalf("capabilities %+v, %v: want reject only", caps, err)
	}
	if _, err := c.Submit(t.Context(), client.Submit{SessionID: "q2", Input: "x", Multitask: "later"}); !errors.Is(err, client.ErrInvalidPolicy) {
		t.Fatalf("an unknown policy: %v, want ErrInvalidPolicy", err)
	}
}

// queuedScript answers a submit 202 with body, and the queued turn's
// stream waits answers ending with the resumer's own SERVER_TIMEOUT
// before it answers its snapshots.
type queuedScript struct {
	body  string
	waits int
	opens atomic.Int32
	t     *testing.T
}

func (s *queuedScript) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/":
		if r.Header.Get(api.MultitaskHeader) != api.MultitaskEnqueue {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		_, _ = io.WriteString(w, s.body)
	case r.URL.Path == "/capabilities":
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"protocols":[{"protocol":"agentskit.chat.turn","versions":[1]}],"extensions":["resume"],`+
			`"resume":{"available":true,"method":"GET","path":"/sessions/{sessionId}/turns/{turnId}/stream","parameter":"after"}}`)
	case r.URL.Path == "/sessions/s1/turns/t1/stream" && r.URL.RawQuery == "":
		w.Header().Set("Content-Type", "application/x-ndjson")
		if int(s.opens.Add(1)) <= s.waits {
			_, _ = io.WriteString(w, diagnosticLine(s.t, 0, protocol.CodeServerTimeout))
			return
		}
		_, _ = io.WriteString(w, line(s.t, 1, protocol.StatusStreaming, "a")+line(s.t, 2, protocol.StatusComplete, "ab"))
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

// TestQueuedStream: the stream of a queued turn waits through any number
// of the server's silent waits (more than the resume attempts: a wait is
// no failure), then returns the turn's snapshots; a 202 that is not the
// queued answer of this turn is an invalid response.
func TestQueuedStream(t *testing.T) {
	good := `{"sessionId":"s1","turnId":"t1","status":"queued","position":3,"streamUrl":"sessions/s1/turns/t1/stream"}`
	s := &queuedScript{body: good, waits: client.DefaultResumeAttempts + 2, t: t}
	srv := httptest.NewServer(s)
	defer srv.Close()
	qc, err := client.New(client.Options{TurnURL: srv.URL + "/", ResumeBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	st, err := qc.Submit(t.Context(), client.Submit{SessionID: "s1", TurnID: "t1", Input: "q", Multitask: api.MultitaskEnqueue})
	if err != nil {
		t.Fatal(err)
	}
	if q := st.Queued(); q == nil || q.Position != 3 {
		t.Fatalf("Queued() = %+v", q)
	}
	seqs, err := sequences(st)
	if err != nil || fmt.Sprint(seqs) != "[1 2]" {
		t.Fatalf("sequences %v, %v; want [1 2]", seqs, err)
	}
	if n := s.opens.Load(); n != int32(s.waits+1) {
		t.Errorf("%d opens of the stream URL, want %d", n, s.waits+1)
	}

	bad := map[string]string{
		"another turn":            strings.Replace(good, `"turnId":"t1"`, `"turnId":"t2"`, 1),
		"another session":         strings.Replace(good, `"sessionId":"s1"`, `"sessionId":"s2"`, 1),
		"not queued":              strings.Replace(good, `"queued"`, `"running"`, 1),
		"position 0":              strings.Replace(good, `"position":3`, `"position":0`, 1),
		"an absolute URL":         strings.Replace(good, `"sessions/s1`, `"https://elsewhere.example/sessions/s1`, 1),
		"a rooted path":           strings.Replace(good, `"sessions/s1`, `"/sessions/s1`, 1),
		"a dot segment":           strings.Replace(good, `"sessions/s1`, `"../sessions/s1`, 1),
		"a query":                 strings.Replace(good, `/stream"`, `/stream?x=1"`, 1),
		"not JSON":                "queued",
		"far too long":            good + strings.Repeat(" ", 5000),
		"no stream URL":           strings.Replace(good, `,"streamUrl":"sessions/s1/turns/t1/stream"`, "", 1),
		"a protocol-relative URL": strings.Replace(good, `"sessions/s1`, `"//elsewhere.example/s1`, 1),
	}
	for name, body := range bad {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(&queuedScript{body: body, t: t})
			defer srv.Close()
			c, err := client.New(client.Options{TurnURL: srv.URL + "/"})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Submit(t.Context(), client.Submit{SessionID: "s1", TurnID: "t1", Input: "q", Multitask: api.MultitaskEnqueue})
			var ce *client.Error
			if !errors.As(err, &ce) || ce.Kind != client.KindInvalidResponse || ce.Code() != client.CodeResponseInvalid {
				t.Fatalf("Submit: %v, want an invalid response", err)
			}
		})
	}
}

// TestResumeWhileCapabilitiesFail: a stream that drops while the server's
// capabilities cannot be read (no answer, 503) keeps trying: the lookup
// counts as a failed attempt and is asked again, and the turn is followed
// to its end once the server answers.
func TestResumeWhileCapabilitiesFail(t *testing.T) {
	var capsCalls atomic.Int32
	s := &script{live: line(t, 1, protocol.StatusStreaming, "a"), resumes: []string{line(t, 2, protocol.StatusComplete, "ab")}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/capabilities" && capsCalls.Add(1) <= 2 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		s.ServeHTTP(w, r)
	}))
	defer srv.Close()
	c, err := client.New(client.Options{TurnURL: srv.URL + "/", ResumeBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var attempts []int
	st, err := c.Submit(t.Context(), client.Submit{SessionID: "s1", TurnID: "t1", Input: "q",
		StreamOptions: client.StreamOptions{OnResume: func(attempt, _ int) { attempts = append(attempts, attempt) }}})
	if err != nil {
		t.Fatal(err)
	}
	seqs, err := sequences(st)
	if err != nil || fmt.Sprint(seqs) != "[1 2]" {
		t.Fatalf("sequences %v, %v; want [1 2]", seqs, err)
	}
	if n := capsCalls.Load(); n != 3 {
		t.Errorf("%d capabilities requests, want 3 (two failed, then the route)", n)
	}
	if fmt.Sprint(attempts) != "[1 2 0]" {
		t.Errorf("OnResume attempts %v, want [1 2 0]: the failed lookup was attempt 1", attempts)
	}
}

// TestResumesThatOnlyTimeOut: resumes of a running turn that each end
// with the resumer's own SERVER_TIMEOUT and bring nothing new give up
// after the attempts, with an error that is not io.EOF (the end of a
// complete stream).
func TestResumesThatOnlyTimeOut(t *testing.T) {
	timeout := diagnosticLine(t, 0, protocol.CodeServerTimeout)
	s := &script{live: line(t, 1, protocol.StatusStreaming, "a"), resumes: []string{timeout, timeout, timeout, timeout, timeout, timeout}}
	st, err := newScripted(t, s).Submit(t.Context(), client.Submit{SessionID: "s1", TurnID: "t1", Input: "q"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = sequences(st)
	var ce *client.Error
	if err == nil || errors.Is(err, io.EOF) || !errors.As(err, &ce) || ce.Kind != client.KindNetwork {
		t.Fatalf("error %v, want a network error that is not io.EOF", err)
	}
}
