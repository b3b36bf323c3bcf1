package turn_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/store/storetest"
	"github.com/turnstream/turnstream/pkg/turn"
)

// inputModel answers every call "re: <input>", the input being the
// request's last user message. An input that starts with "hold" first
// streams "partial", then waits until its call's context ends (a stop, a
// deadline) or release is closed, then streams " done". It records each
// request.
type inputModel struct {
	release chan struct{}
	once    sync.Once
	mu      sync.Mutex
	reqs    []model.Request
}

func newInputModel() *inputModel { return &inputModel{release: make(chan struct{})} }

// finish lets every held call go on.
func (m *inputModel) finish() { m.once.Do(func() { close(m.release) }) }

func (m *inputModel) Stream(ctx context.Context, req model.Request) (model.Stream, error) {
	m.mu.Lock()
	m.reqs = append(m.reqs, req)
	m.mu.Unlock()
	input := ""
	for _, msg := range req.Messages {
		if msg.Role == protocol.RoleUser {
			input = msg.Content
		}
	}
	return &inputStream{ctx: ctx, m: m, input: input}, nil
}

// requestOf returns the request of the call whose input is input.
func (m *inputModel) requestOf(input string) (model.Request, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.reqs {
		if u := r.Messages[len(r.Messages)-1]; u.Role == protocol.RoleUser && u.Content == input {
			return r, true
		}
	}
	return model.Request{}, false
}

// inputs returns the inputs of the calls, in call order.
func (m *inputModel) inputs() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, r := range m.reqs {
		out = append(out, r.Messages[len(r.Messages)-1].Content)
	}
	return out
}

type inputStream struct {
	ctx   context.Context
	m     *inputModel
	input string
	step  int
}

func (s *inputStream) Recv() (model.Event, error) {
	if err := s.ctx.Err(); err != nil {
		return model.Event{}, err
	}
	s.step++
	hold := strings.HasPrefix(s.input, "hold")
	switch {
	case !hold && s.step == 1:
		return model.Event{TextDelta: "re: " + s.input}, nil
	case hold && s.step == 1:
		return model.Event{TextDelta: "partial"}, nil
	case hold && s.step == 2:
		select {
		case <-s.ctx.Done():
			return model.Event{}, s.ctx.Err()
		case <-s.m.release:
		}
		return model.Event{TextDelta: " done"}, nil
	case s.step <= 3:
		return usageEvent(2, 1), nil
	}
	return model.Event{}, io.EOF
}

func (s *inputStream) Close() error { return nil }

// multitaskEnv is a durable handler over store with an inputModel.
func multitaskEnv(t *testing.T, store chat.Store, opt func(*turn.Options)) (*env, *inputModel) {
	t.Helper()
	m := newInputModel()
	t.Cleanup(m.finish)
	e := newEnv(t, store, &scriptModel{}, func(o *turn.Options) {
		durable(o)
		o.Model = m
		if opt != nil {
			opt(o)
		}
	})
	return e, m
}

// policy is the header naming a multitask policy.
func policy(p string) map[string]string { return map[string]string{api.MultitaskHeader: p} }

// queued is the 202 answer of an enqueued submit.
type queued struct {
	SessionID, TurnID, Status, StreamURL string
	Position                             int
}

// enqueue submits turnID with the enqueue policy and decodes the 202.
func (e *env) enqueue(t *testing.T, sessionID, turnID, input string) queued {
	t.Helper()
	resp := e.post(t, context.Background(), "/", submitBody(t, sessionID, turnID, input, nil), policy("enqueue"))
	defer func() { _ = resp.Body.Close() }()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("enqueue %s: %d %s", turnID, resp.StatusCode, raw)
	}
	var q queued
	if err := json.Unmarshal(raw, &q); err != nil {
		t.Fatalf("202 body %s: %v", raw, err)
	}
	return q
}

// runningTurn reports whether turnID has checkpointed (its model runs).
func runningTurn(e *env, sessionID, turnID string) func() bool {
	return func() bool {
		got, err := e.store.FindTurn(context.Background(), sessionID, turnID, alice)
		return err == nil && got.Status == chat.TurnRunning && len(got.Messages) == 2 && got.Messages[1].Content == "partial"
	}
}

// history returns the session's visible turns, oldest first.
func history(t *testing.T, e *env, sessionID string) []chat.Turn {
	t.Helper()
	page, err := e.store.ListTurns(context.Background(), chat.ListRequest{SessionID: sessionID, Principal: alice, Order: chat.OrderAsc, Limit: chat.MaxPageLimit})
	if err != nil {
		t.Fatal(err)
	}
	return page.Turns
}

// turnIDsOf returns the turn ids of turns.
func turnIDsOf(turns []chat.Turn) []string {
	var ids []string
	for _, t := range turns {
		ids = append(ids, t.TurnID)
	}
	return ids
}

// openStream GETs the resume route of turnID and reads its lines as they
// arrive.
func (e *env) openStream(t *testing.T, streamURL string) *liveStream {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, e.srv.URL+"/"+streamURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %d %s", streamURL, resp.StatusCode, b)
	}
	return readLive(resp)
}

// TestEnqueue: B submitted with enqueue while A runs is answered 202 with
// its position and stream route, at once; the same enqueue again answers
// the same and queues nothing twice, another input under its id is 422.
// Its stream stays silent while it waits. When A ends, B runs without
// another request, with A in its context, and its stream shows it from
// its first line to its terminal one; history lists A then B.
func TestEnqueue(t *testing.T) {
	forEachStore(t, func(t *testing.T, newStore func(testing.TB) chat.Store) {
		e, m := multitaskEnv(t, newStore(t), nil)
		a := e.startLive(t, context.Background(), "s", "A", "hold A")
		waitFor(t, "A running", runningTurn(e, "s", "A"))

		q := e.enqueue(t, "s", "B", "question B")
		if q.Status != "queued" || q.Position != 1 || q.SessionID != "s" || q.TurnID != "B" || q.StreamURL != "sessions/s/turns/B/stream" {
			t.Fatalf("202 body %+v", q)
		}
		if again := e.enqueue(t, "s", "B", "question B"); again != q {
			t.Errorf("the same enqueue again: %+v, want %+v", again, q)
		}
		if c := e.enqueue(t, "s", "C", "question C"); c.Position != 2 {
			t.Errorf("C at position %d, want 2", c.Position)
		}
		e.submit(t, "s", "B", "other input", nil, policy("enqueue")).want(t, http.StatusUnprocessableEntity, protocol.CodeTurnIDReused)
		// Without a policy the busy session still answers as AgentsKit's does.
		e.submit(t, "s", "D", "plain", nil, nil).want(t, http.StatusConflict, protocol.CodeSessionBusy)

		b := e.openStream(t, q.StreamURL)
		// B's stream is open and B waits: every line it reads from here
		// until A ends would be sent while B waited. The requests below
		// round-trip through the handler while B's stream is open.
		if again := e.enqueue(t, "s", "B", "question B"); again != q {
			t.Errorf("the same enqueue with B's stream open: %+v, want %+v", again, q)
		}
		waiting := b.count()
		m.finish()
		<-a.done
		<-b.done
		if waiting != 0 {
			t.Fatalf("B's stream sent %d lines while B waited: %s", waiting, b.lines[0])
		}
		evs := b.events(t)
		term := terminalOf(evs)
		if term == nil || term.TurnID != "B" || term.Snapshot.Status != protocol.StatusComplete || term != evs[len(evs)-1] {
			t.Fatalf("B's stream %s", b.lines)
		}
		if got := term.Snapshot.Messages[len(term.Snapshot.Messages)-1].Content; got != "re: question B" {
			t.Errorf("B answered %q", got)
		}
		// History lists C from its claim: wait for its save, which comes
		// after its model call (a hogged run read the calls before it).
		waitFor(t, "C completed", func() bool {
			h := history(t, e, "s")
			return len(h) == 3 && h[2].Status == chat.TurnComplete
		})
		if ids := turnIDsOf(history(t, e, "s")); !slices.Equal(ids, []string{"A", "B", "C"}) {
			t.Errorf("history %v, want A B C", ids)
		}
		req, ok := m.requestOf("question B")
		if !ok || !slices.ContainsFunc(req.Messages, func(msg protocol.Message) bool { return msg.Content == "hold A" }) {
			t.Errorf("B's model context %+v lacks A", req.Messages)
		}
		if in := m.inputs(); !slices.Equal(in, []string{"hold A", "question B", "question C"}) {
			t.Errorf("model calls %v, want A B C once each", in)
		}
	})
}

// TestQueueFull: beyond MaxQueuedTurns an enqueue is 409
// SESSION_QUEUE_FULL, retryable; nothing is queued.
func TestQueueFull(t *testing.T) {
	forEachStore(t, func(t *testing.T, newStore func(testing.TB) chat.Store) {
		e, m := multitaskEnv(t, newStore(t), func(o *turn.Options) { o.MaxQueuedTurns = 1 })
		a := e.startLive(t, context.Background(), "s", "A", "hold A")
		waitFor(t, "A running", runningTurn(e, "s", "A"))
		e.enqueue(t, "s", "B", "question B")
		r := e.submit(t, "s", "C", "question C", nil, policy("enqueue"))
		r.want(t, http.StatusConflict, protocol.CodeSessionQueueFull)
		if !r.errD.Retryable {
			t.Error("SESSION_QUEUE_FULL not retryable")
		}
		m.finish()
		<-a.done
		waitFor(t, "B completed", func() bool { return len(history(t, e, "s")) == 2 })
		if ids := turnIDsOf(history(t, e, "s")); !slices.Equal(ids, []string{"A", "B"}) {
			t.Errorf("history %v, want A B", ids)
		}
	})
}

// TestInterrupt: B with interrupt stops the running A as POST /stop does
// (its partial answer kept, TURN_INTERRUPTED) and streams in its own
// request; A's partial answer is in B's context; history shows A and B.
func TestInterrupt(t *testing.T) {
	forEachStore(t, func(t *testing.T, newStore func(testing.TB) chat.Store) {
		e, m := multitaskEnv(t, newStore(t), nil)
		a := e.startLive(t, context.Background(), "s", "A", "hold A")
		waitFor(t, "A running", runningTurn(e, "s", "A"))
		r := e.submit(t, "s", "B", "question B", nil, policy("interrupt"))
		r.want(t, http.StatusOK, "")
		if term := r.terminal(t); term.Status != protocol.StatusComplete || term.Messages[len(term.Messages)-1].Content != "re: question B" {
			t.Fatalf("B's terminal snapshot %+v", term)
		}
		<-a.done
		lt := terminalOf(a.events(t))
		if lt == nil || lt.Snapshot.Error == nil || lt.Snapshot.Error.Code != protocol.CodeTurnInterrupted {
			t.Fatalf("A's stream ends %+v, want TURN_INTERRUPTED", lt)
		}
		turns := history(t, e, "s")
		if ids := turnIDsOf(turns); !slices.Equal(ids, []string{"A", "B"}) {
			t.Fatalf("history %v, want A B", ids)
		}
		if a := turns[0]; a.Error == nil || a.Error.Code != protocol.CodeTurnInterrupted || a.Messages[1].Content != "partial" {
			t.Errorf("A as stored: %+v", a)
		}
		req, _ := m.requestOf("question B")
		if !slices.ContainsFunc(req.Messages, func(msg protocol.Message) bool { return msg.Content == "partial" }) {
			t.Errorf("B's model context %+v lacks A's partial answer", req.Messages)
		}
	})
}

// TestRollback: as interrupt, and A is superseded: gone from history and
// from B's model context.
func TestRollback(t *testing.T) {
	forEachStore(t, func(t *testing.T, newStore func(testing.TB) chat.Store) {
		e, m := multitaskEnv(t, newStore(t), nil)
		e.submit(t, "s", "Z", "earlier", nil, nil).want(t, http.StatusOK, "")
		a := e.startLive(t, context.Background(), "s", "A", "hold A")
		waitFor(t, "A running", runningTurn(e, "s", "A"))
		r := e.submit(t, "s", "B", "question B", nil, policy("rollback"))
		r.want(t, http.StatusOK, "")
		<-a.done
		if ids := turnIDsOf(history(t, e, "s")); !slices.Equal(ids, []string{"Z", "B"}) {
			t.Fatalf("history %v, want Z B (A superseded)", ids)
		}
		req, _ := m.requestOf("question B")
		for _, msg := range req.Messages {
			if msg.Content == "hold A" || msg.Content == "partial" {
				t.Errorf("B's model context holds A: %+v", req.Messages)
			}
		}
		if !slices.ContainsFunc(req.Messages, func(msg protocol.Message) bool { return msg.Content == "earlier" }) {
			t.Errorf("B's model context %+v lost Z", req.Messages)
		}
		term := r.terminal(t)
		for _, msg := range term.Messages {
			if msg.Content == "hold A" {
				t.Errorf("B's terminal snapshot shows A: %+v", term.Messages)
			}
		}
	})
}

// TestInterruptWaitsAtMostInterruptWait: a running turn that does not end
// within InterruptWait (its stop is seen only at its next checkpoint,
// here an hour away) leaves the interrupt 409 SESSION_BUSY; the running
// turn then ends interrupted at its next chance, and nothing else ran.
func TestInterruptWaitsAtMostInterruptWait(t *testing.T) {
	forEachStore(t, func(t *testing.T, newStore func(testing.TB) chat.Store) {
		e, m := multitaskEnv(t, newStore(t), func(o *turn.Options) {
			o.CheckpointInterval, o.RenewInterval, o.InterruptWait = time.Hour, time.Hour, 100*time.Millisecond
		})
		a := e.startLive(t, context.Background(), "s", "A", "hold A")
		waitFor(t, "A's last checkpoint for an hour", runningTurn(e, "s", "A"))
		e.submit(t, "s", "B", "question B", nil, policy("interrupt")).want(t, http.StatusConflict, protocol.CodeSessionBusy)
		m.finish()
		<-a.done
		if ids := turnIDsOf(history(t, e, "s")); !slices.Equal(ids, []string{"A"}) {
			t.Errorf("history %v, want A only", ids)
		}
		if in := m.inputs(); !slices.Equal(in, []string{"hold A"}) {
			t.Errorf("model calls %v", in)
		}
	})
}

// TestStopCancelsAQueuedTurn: POST /stop naming a queued turn that has
// not started answers 202 with "cancelled": it never runs, its stream
// and a replay say TURN_CANCELLED; the turns after it run.
func TestStopCancelsAQueuedTurn(t *testing.T) {
	forEachStore(t, func(t *testing.T, newStore func(testing.TB) chat.Store) {
		e, m := multitaskEnv(t, newStore(t), nil)
		a := e.startLive(t, context.Background(), "s", "A", "hold A")
		waitFor(t, "A running", runningTurn(e, "s", "A"))
		qb := e.enqueue(t, "s", "B", "question B")
		e.enqueue(t, "s", "C", "question C")
		b := e.openStream(t, qb.StreamURL)

		body, _ := json.Marshal(map[string]string{"sessionId": "s", "turnId": "B"})
		resp := e.post(t, context.Background(), "/stop", body, nil)
		raw, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted || strings.TrimSpace(string(raw)) != `{"stopRequested":true,"cancelled":true}` {
			t.Fatalf("stop of a queued turn: %d %s", resp.StatusCode, raw)
		}
		body, _ = json.Marshal(map[string]string{"sessionId": "s", "turnId": "nope"})
		r := readResult(t, e.post(t, context.Background(), "/stop", body, nil))
		r.want(t, http.StatusConflict, protocol.CodeTurnNotActive)

		m.finish()
		<-a.done
		<-b.done
		evs := b.events(t)
		if len(evs) != 1 || evs[0].Kind != protocol.EventDiagnostic || evs[0].Diagnostic.Code != protocol.CodeTurnCancelled {
			t.Fatalf("B's stream %+v, want one TURN_CANCELLED diagnostic", evs)
		}
		// C's record is complete before its release: the replay of B below
		// would meet C's lease (SESSION_BUSY) until then.
		waitFor(t, "C completed and released", func() bool {
			got, err := e.store.FindTurn(context.Background(), "s", "C", alice)
			sess, serr := e.store.GetSession(context.Background(), "s", alice)
			return err == nil && got.Status == chat.TurnComplete && serr == nil && sess.ActiveTurn == nil && len(sess.Queue) == 0
		})
		if in := m.inputs(); !slices.Equal(in, []string{"hold A", "question C"}) {
			t.Errorf("model calls %v, want A and C (B cancelled)", in)
		}
		e.submit(t, "s", "B", "question B", nil, nil).want(t, http.StatusConflict, protocol.CodeTurnAlreadyCompleted)
	})
}

// TestQueuedTurnExpires: a queued turn still waiting after QueuedTurnTTL
// is recorded as never run, TURN_QUEUE_EXPIRED, which its stream shows.
// The store and the handler read a clock the test moves past the TTL.
func TestQueuedTurnExpires(t *testing.T) {
	clk := storetest.NewClock(time.Now().UTC().Truncate(time.Millisecond))
	for _, sf := range storeFactoriesAt(clk.Now) {
		t.Run(sf.name, func(t *testing.T) { queuedTurnExpires(t, clk, sf.new(t)) })
	}
}

func queuedTurnExpires(t *testing.T, clk *storetest.Clock, store chat.Store) {
	e, m := multitaskEnv(t, store, func(o *turn.Options) { o.QueuedTurnTTL, o.Clock = 50*time.Millisecond, clk })
	a := e.startLive(t, context.Background(), "s", "A", "hold A")
	waitFor(t, "A running", runningTurn(e, "s", "A"))
	q := e.enqueue(t, "s", "B", "question B")
	clk.Advance(100 * time.Millisecond)
	m.finish()
	<-a.done
	status, evs, raw := e.resume(t, "s", "B", "", nil)
	if status != http.StatusOK || len(evs) != 1 || evs[0].Kind != protocol.EventDiagnostic || evs[0].Diagnostic.Code != protocol.CodeTurnQueueExpired {
		t.Fatalf("resume of %s: %d %s", q.StreamURL, status, raw)
	}
	if in := m.inputs(); !slices.Equal(in, []string{"hold A"}) {
		t.Errorf("model calls %v: the expired turn ran", in)
	}
}

// TestMultitaskRejections: a header value that is no policy, or repeated,
// is 400 REQUEST_INVALID_HEADER before the body is read; a policy the
// deployment cannot serve (no checkpoints) is 422 MULTITASK_NOT_ALLOWED;
// nothing is stored by either.
func TestMultitaskRejections(t *testing.T) {
	e, _ := multitaskEnv(t, newStoreMemory(), nil)
	e.submit(t, "s", "t1", "hi", nil, policy("queue")).want(t, http.StatusBadRequest, protocol.CodeRequestInvalidHeader)
	e.submit(t, "s", "t1", "hi", nil, policy("")).want(t, http.StatusBadRequest, protocol.CodeRequestInvalidHeader)
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/", strings.NewReader(string(submitBody(t, "s", "t1", "hi", nil))))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Add(api.MultitaskHeader, "enqueue")
	req.Header.Add(api.MultitaskHeader, "enqueue")
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	readResult(t, resp).want(t, http.StatusBadRequest, protocol.CodeRequestInvalidHeader)
	if _, err := e.store.GetSession(context.Background(), "s", alice); err == nil {
		t.Error("a rejected submit created the session")
	}
	// Case and spaces do not matter.
	e.submit(t, "s", "t1", "hi", nil, policy(" Enqueue ")).want(t, http.StatusOK, "")

	plain := newEnv(t, newStoreMemory(), &scriptModel{Chunks: []string{"x"}}, nil) // no checkpoints
	plain.submit(t, "s", "t1", "hi", nil, policy("enqueue")).want(t, http.StatusUnprocessableEntity, protocol.CodeMultitaskNotAllowed)
	plain.submit(t, "s", "t1", "hi", nil, policy("reject")).want(t, http.StatusOK, "")
}

// TestDispatchedDrain: with Options.Dispatch (the Lambda path), the
// release that finds turns waiting dispatches a drain instead of running
// it in process; Handler.Drain runs the queued turns, and a drain whose
// deadline leaves no room for another whole turn dispatches the next one
// after its first turn.
func TestDispatchedDrain(t *testing.T) {
	forEachStore(t, func(t *testing.T, newStore func(testing.TB) chat.Store) {
		var mu sync.Mutex
		var dispatched []turn.DrainRequest
		var h *turn.Handler
		e, m := multitaskEnv(t, newStore(t), func(o *turn.Options) {
			o.TurnTimeout, o.CleanupReserve = 10*time.Second, 3*time.Second // the drain below leaves room for one turn
			o.Dispatch = func(_ context.Context, d turn.DrainRequest) error {
				mu.Lock()
				dispatched = append(dispatched, d)
				mu.Unlock()
				changes.fire()
				return nil
			}
		})
		h = e.h.(*turn.Handler)
		count := func() int {
			mu.Lock()
			defer mu.Unlock()
			return len(dispatched)
		}
		a := e.startLive(t, context.Background(), "s", "A", "hold A")
		waitFor(t, "A running", runningTurn(e, "s", "A"))
		e.enqueue(t, "s", "B", "question B")
		e.enqueue(t, "s", "C", "question C")
		n := count() // the enqueues' nudges found the session busy
		m.finish()
		<-a.done
		waitFor(t, "a dispatch after A's release", func() bool { return count() > n })
		mu.Lock()
		d := dispatched[len(dispatched)-1]
		mu.Unlock()
		if d.SessionID != "s" {
			t.Fatalf("dispatched %+v", d)
		}
		if in := m.inputs(); len(in) != 1 {
			t.Fatalf("model calls %v before the drain ran: the release drained in process", in)
		}
		// A drain invocation whose deadline leaves room for one turn only
		// (TurnTimeout 10 s + CleanupReserve 3 s): B runs, C is dispatched.
		n = count()
		ctx, cancel := context.WithTimeout(context.Background(), 12*time.Second)
		defer cancel()
		h.Drain(ctx, d)
		if ids := turnIDsOf(history(t, e, "s")); !slices.Equal(ids, []string{"A", "B"}) {
			t.Fatalf("history after one drain %v, want A B", ids)
		}
		if count() != n+1 {
			t.Fatalf("%d dispatches after the drain's first turn, want %d", count(), n+1)
		}
		h.Drain(context.Background(), turn.DrainRequest{SessionID: "s"})
		if ids := turnIDsOf(history(t, e, "s")); !slices.Equal(ids, []string{"A", "B", "C"}) {
			t.Fatalf("history %v, want A B C", ids)
		}
		// Draining an empty queue, or a session that does not exist, does nothing.
		h.Drain(context.Background(), turn.DrainRequest{SessionID: "s"})
		h.Drain(context.Background(), turn.DrainRequest{SessionID: "none"})
		if in := m.inputs(); !slices.Equal(in, []string{"hold A", "question B", "question C"}) {
			t.Errorf("model calls %v", in)
		}
	})
}

// TestCapabilitiesListMultitask: the capabilities name the header, the
// policies, the default and the limits; without checkpoints only reject
// is available.
func TestCapabilitiesListMultitask(t *testing.T) {
	get := func(e *env) map[string]any {
		resp, err := e.srv.Client().Get(e.srv.URL + "/capabilities")
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		var c struct {
			Extensions []string       `json:"extensions"`
			Multitask  map[string]any `json:"multitask"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
			t.Fatal(err)
		}
		c.Multitask["listed"] = slices.Contains(c.Extensions, api.ExtensionMultitask)
		return c.Multitask
	}
	e, _ := multitaskEnv(t, newStoreMemory(), func(o *turn.Options) { o.MaxQueuedTurns = 3 })
	c := get(e)
	if c["available"] != true || c["listed"] != true || c["header"] != api.MultitaskHeader || c["default"] != "reject" ||
		c["maxQueuedTurns"] != float64(3) || c["queuedTurnTtlMs"] != float64(chat.DefaultQueuedTurnTTL.Milliseconds()) ||
		c["interruptWaitMs"] != float64(turn.DefaultInterruptWait.Milliseconds()) {
		t.Errorf("multitask capability %+v", c)
	}
	if p, _ := json.Marshal(c["policies"]); string(p) != `["reject","enqueue","interrupt","rollback"]` {
		t.Errorf("policies %s", p)
	}
	plain := newEnv(t, newStoreMemory(), &scriptModel{}, nil)
	c = get(plain)
	if p, _ := json.Marshal(c["policies"]); c["available"] != false || c["listed"] != false || string(p) != `["reject"]` {
		t.Errorf("without checkpoints: %+v", c)
	}
}

// TestPendingApprovalCountsAsBusy: a tool call waiting for approval makes
// the session busy for the multitask policies: an enqueued turn waits for
// the decision turn and runs after it; an interrupt runs at once and the
// confirmation expires (the tool never runs); a rollback also supersedes
// the turn that asked.
func TestPendingApprovalCountsAsBusy(t *testing.T) {
	forEachStore(t, func(t *testing.T, newStore func(testing.TB) chat.Store) {
		var runs atomic.Int32
		e, _ := approvalEnv(t, newStore(t), &runs, durable)
		token := askDelete(t, e, "s", "t1")
		q := e.enqueue(t, "s", "q1", "after the decision")
		if q.Position != 1 {
			t.Errorf("position %d", q.Position)
		}
		// The queued turn waits for the decision: the history after it
		// (t1 t2 q1, below) would list q1 before t2 if it had not.
		if ids := turnIDsOf(history(t, e, "s")); !slices.Equal(ids, []string{"t1"}) {
			t.Fatalf("history %v before the decision: the queued turn did not wait", ids)
		}
		e.decide(t, "s", "t2", token, protocol.DecisionApprove, nil).want(t, http.StatusOK, "")
		waitFor(t, "q1 completed and released", func() bool {
			sess, err := e.store.GetSession(context.Background(), "s", alice)
			return err == nil && sess.ActiveTurn == nil && len(sess.Queue) == 0
		})
		if ids := turnIDsOf(history(t, e, "s")); !slices.Equal(ids, []string{"t1", "t2", "q1"}) {
			t.Fatalf("history %v, want t1 t2 q1", ids)
		}

		token = askAgain(t, e, "s", "t3")
		e.submit(t, "s", "t4", "never mind", nil, policy("interrupt")).want(t, http.StatusOK, "")
		if cf := storedConfirmation(t, e.store, "s", token); cf.Status != chat.ConfirmationExpired {
			t.Errorf("confirmation after the interrupt: %s, want expired", cf.Status)
		}
		e.decide(t, "s", "t5", token, protocol.DecisionApprove, nil).want(t, http.StatusGone, protocol.CodeConfirmationExpired)

		askAgain(t, e, "s", "t6")
		e.submit(t, "s", "t7", "forget that", nil, policy("rollback")).want(t, http.StatusOK, "")
		if ids := turnIDsOf(history(t, e, "s")); !slices.Equal(ids, []string{"t1", "t2", "q1", "t3", "t4", "t7"}) {
			t.Fatalf("history %v, want t6 superseded", ids)
		}
		if n := runs.Load(); n != 1 {
			t.Errorf("the tool ran %d times, want once (the approved call)", n)
		}
	})
}

// askAgain runs turn turnID, which ends waiting for approval, and returns
// the token of its confirmation (askDelete for a session whose earlier
// turns already used the call id).
func askAgain(t *testing.T, e *env, sessionID, turnID string) string {
	t.Helper()
	e.submit(t, sessionID, turnID, askInput, nil, nil).want(t, http.StatusOK, "")
	s, err := e.store.GetSession(context.Background(), sessionID, alice)
	if err != nil {
		t.Fatal(err)
	}
	for _, cf := range s.Confirmations {
		if cf.TurnID == turnID && cf.Status == chat.ConfirmationPending {
			return cf.Token
		}
	}
	t.Fatalf("%s left no pending confirmation: %+v", turnID, s.Confirmations)
	return ""
}

// gatedStore holds chosen store calls at a gate, so that a test orders a
// race between requests: the first ClaimTurn of a turn id (hold "claim")
// or its first ReleaseTurn (hold "release") waits until the test opens its
// gate.
type gatedStore struct {
	chat.Store
	mu    sync.Mutex
	gates map[string]*gate
	// claims are the errors of the ClaimTurn calls that returned, by
	// turn id, in order.
	claims map[string][]error
}

// gate is one held call: arrived closes when the call reaches the gate,
// open lets it go on, result then carries its error.
type gate struct {
	arrived, open chan struct{}
	result        chan error
}

func newGatedStore(s chat.Store) *gatedStore {
	return &gatedStore{Store: s, gates: make(map[string]*gate), claims: make(map[string][]error)}
}

// claimed returns the errors of turnID's ClaimTurn calls that returned.
func (s *gatedStore) claimed(turnID string) []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.claims[turnID])
}

// hold arms a gate for the first call op ("claim" or "release") of turnID.
func (s *gatedStore) hold(op, turnID string) *gate {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := &gate{arrived: make(chan struct{}), open: make(chan struct{}), result: make(chan error, 1)}
	s.gates[op+" "+turnID] = g
	return g
}

// take returns the armed gate of op and turnID, once, or nil.
func (s *gatedStore) take(op, turnID string) *gate {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.gates[op+" "+turnID]
	delete(s.gates, op+" "+turnID)
	return g
}

func (s *gatedStore) ClaimTurn(ctx context.Context, req chat.ClaimRequest) (*chat.Claim, error) {
	g := s.take("claim", req.TurnID)
	if g != nil {
		close(g.arrived)
		select {
		case <-g.open:
		case <-ctx.Done(): // the test failed and is closing its server
		}
	}
	c, err := s.Store.ClaimTurn(ctx, req)
	if g != nil {
		g.result <- err
	}
	s.mu.Lock()
	s.claims[req.TurnID] = append(s.claims[req.TurnID], err)
	s.mu.Unlock()
	return c, err
}

func (s *gatedStore) ReleaseTurn(ctx context.Context, req chat.ReleaseRequest) (*chat.Session, error) {
	g := s.take("release", req.Claim.Lease.TurnID)
	if g == nil {
		return s.Store.ReleaseTurn(ctx, req)
	}
	close(g.arrived)
	select {
	case <-g.open:
	case <-ctx.Done(): // the test failed and is closing its server
	}
	sess, err := s.Store.ReleaseTurn(ctx, req)
	g.result <- err
	return sess, err
}

// submitAsync posts a turn from another goroutine; the function it
// returns waits for the answer and reads it whole.
func (e *env) submitAsync(t *testing.T, sessionID, turnID, input string, hdr map[string]string) func() result {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.srv.URL+"/", bytes.NewReader(submitBody(t, sessionID, turnID, input, nil)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	type answer struct {
		resp *http.Response
		err  error
	}
	ch := make(chan answer, 1)
	go func() {
		resp, err := e.srv.Client().Do(req)
		ch <- answer{resp, err}
	}()
	return func() result {
		t.Helper()
		a := <-ch
		if a.err != nil {
			t.Fatalf("POST / %s: %v", turnID, a.err)
		}
		return readResult(t, a.resp)
	}
}

// sessionFree reports whether the session's lease is free.
func sessionFree(e *env, sessionID string) func() bool {
	return func() bool {
		sess, err := e.store.GetSession(context.Background(), sessionID, alice)
		return err == nil && sess.ActiveTurn == nil
	}
}

// wantCompleteKept checks that turnID, answered complete to its client,
// is listed complete in history and still resumes as complete.
func wantCompleteKept(t *testing.T, e *env, sessionID, turnID, answer string) {
	t.Helper()
	turns := history(t, e, sessionID)
	i := slices.IndexFunc(turns, func(tr chat.Turn) bool { return tr.TurnID == turnID })
	if i < 0 {
		t.Fatalf("history %v lost %s, a turn its client saw complete", turnIDsOf(turns), turnID)
	}
	if got := turns[i]; got.Status != chat.TurnComplete || got.Messages[len(got.Messages)-1].Content != answer {
		t.Errorf("%s as listed: %+v", turnID, got)
	}
	status, evs, raw := e.resume(t, sessionID, turnID, "", nil)
	if term := terminalOf(evs); status != http.StatusOK || term == nil || term.Snapshot.Status != protocol.StatusComplete {
		t.Errorf("resume of %s: %d %s", turnID, status, raw)
	}
}

// TestRollbackKeepsATurnItDidNotStop: A runs; R (rollback) stops A; before
// R claims, another submit P (a plain one, or a second rollback that also
// stopped A) claims, runs and completes. R's claim then finds the session
// moved on: R runs as a plain submit would (the session is free), after
// P, superseding nothing. P, seen complete by its client, stays in
// history and in R's context, and still resumes as complete; A stays, as
// interrupted.
func TestRollbackKeepsATurnItDidNotStop(t *testing.T) {
	for _, other := range []string{"plain", "rollback"} {
		t.Run(other, func(t *testing.T) {
			forEachStore(t, func(t *testing.T, newStore func(testing.TB) chat.Store) {
				gs := newGatedStore(newStore(t))
				e, m := multitaskEnv(t, gs, func(o *turn.Options) { o.InterruptWait = time.Minute })
				e.submit(t, "s", "Z", "earlier", nil, nil).want(t, http.StatusOK, "")
				a := e.startLive(t, context.Background(), "s", "A", "hold A")
				waitFor(t, "A running", runningTurn(e, "s", "A"))

				rGate := gs.hold("claim", "R")
				var aRelease *gate
				if other == "rollback" {
					aRelease = gs.hold("release", "A") // P must find A running, to stop it too
				}
				r := e.submitAsync(t, "s", "R", "question R", policy("rollback"))
				<-rGate.arrived // R stopped A and is about to claim
				var p result
				if other == "plain" {
					<-a.done
					waitFor(t, "A released", sessionFree(e, "s"))
					p = e.submit(t, "s", "P", "question P", nil, nil)
				} else {
					<-aRelease.arrived // A ended, not yet released
					pGate := gs.hold("claim", "P")
					pr := e.submitAsync(t, "s", "P", "question P", policy("rollback"))
					<-pGate.arrived // P found A running and stopped it too
					close(pGate.open)
					if err := <-pGate.result; !errors.Is(err, chat.ErrSessionBusy) {
						t.Fatalf("P's first claim while A holds the session: %v", err)
					}
					close(aRelease.open)
					p = pr()
				}
				p.want(t, http.StatusOK, "")
				if term := p.terminal(t); term.Status != protocol.StatusComplete {
					t.Fatalf("P's terminal snapshot %+v", term)
				}
				close(rGate.open)
				rr := r()
				rr.want(t, http.StatusOK, "")
				if term := rr.terminal(t); term.Status != protocol.StatusComplete || term.Messages[len(term.Messages)-1].Content != "re: question R" {
					t.Fatalf("R's terminal snapshot %+v", term)
				}
				<-a.done

				wantCompleteKept(t, e, "s", "P", "re: question P")
				want := []string{"Z", "A", "P", "R"}
				if other == "rollback" {
					want = []string{"Z", "P", "R"} // P rolled back A, which it stopped
				}
				if ids := turnIDsOf(history(t, e, "s")); !slices.Equal(ids, want) {
					t.Errorf("history %v, want %v", ids, want)
				}
				req, _ := m.requestOf("question R")
				if !slices.ContainsFunc(req.Messages, func(msg protocol.Message) bool { return msg.Content == "re: question P" }) {
					t.Errorf("R's model context %+v lacks P", req.Messages)
				}
			})
		})
	}
}

// TestInterruptDoesNotWaitForATurnItDidNotStop: A runs; I (interrupt or
// rollback) stops A; A ends; before I claims, P claims and runs. I's
// claim finds the session moved on and answers what a plain submit gets
// at that moment, 409 SESSION_BUSY (retryable), at once: it neither waits
// for P, which it did not stop, nor runs after it. History keeps A and P.
func TestInterruptDoesNotWaitForATurnItDidNotStop(t *testing.T) {
	for _, pol := range []string{"interrupt", "rollback"} {
		t.Run(pol, func(t *testing.T) {
			forEachStore(t, func(t *testing.T, newStore func(testing.TB) chat.Store) {
				gs := newGatedStore(newStore(t))
				e, m := multitaskEnv(t, gs, func(o *turn.Options) { o.InterruptWait = time.Minute })
				a := e.startLive(t, context.Background(), "s", "A", "hold A")
				waitFor(t, "A running", runningTurn(e, "s", "A"))

				iGate := gs.hold("claim", "I")
				i := e.submitAsync(t, "s", "I", "question I", policy(pol))
				<-iGate.arrived
				<-a.done
				waitFor(t, "A released", sessionFree(e, "s"))
				p := e.startLive(t, context.Background(), "s", "P", "hold P")
				waitFor(t, "P running", runningTurn(e, "s", "P"))
				close(iGate.open)
				if err := <-iGate.result; !errors.Is(err, chat.ErrSessionBusy) {
					t.Fatalf("I's claim while P holds the session: %v", err)
				}
				// I's next claim (a plain one, or another try at its own)
				// also meets P; then P may end: I must not take its place.
				waitFor(t, "I's second claim", func() bool { return len(gs.claimed("I")) >= 2 })
				if err := gs.claimed("I")[1]; !errors.Is(err, chat.ErrSessionBusy) {
					t.Fatalf("I's second claim while P holds the session: %v", err)
				}
				m.finish()
				ir := i()
				ir.want(t, http.StatusConflict, protocol.CodeSessionBusy)
				if !ir.errD.Retryable {
					t.Error("SESSION_BUSY not retryable")
				}
				<-p.done
				if term := terminalOf(p.events(t)); term == nil || term.Snapshot.Status != protocol.StatusComplete {
					t.Fatalf("P's stream %s", p.lines)
				}
				wantCompleteKept(t, e, "s", "P", "partial done")
				if ids := turnIDsOf(history(t, e, "s")); !slices.Equal(ids, []string{"A", "P"}) {
					t.Errorf("history %v, want A P", ids)
				}
				if in := m.inputs(); !slices.Equal(in, []string{"hold A", "hold P"}) {
					t.Errorf("model calls %v, want A and P only", in)
				}
			})
		})
	}
}

// TestRollbackKeepsATurnThatEndedOnItsOwn: A's answer completes, and
// before its release a rollback R finds A holding the session and sends
// its stop, too late to stop anything. A's client was shown A complete,
// which never changes: R runs after A and supersedes nothing (before, R
// superseded A and history lost it; the fate harness's race schedules
// met it when a retried rollback found the turn it raced just ending).
func TestRollbackKeepsATurnThatEndedOnItsOwn(t *testing.T) {
	forEachStore(t, func(t *testing.T, newStore func(testing.TB) chat.Store) {
		gs := newGatedStore(newStore(t))
		e, m := multitaskEnv(t, gs, func(o *turn.Options) { o.InterruptWait = time.Minute })
		a := e.startLive(t, context.Background(), "s", "A", "hold A")
		waitFor(t, "A running", runningTurn(e, "s", "A"))
		aRelease := gs.hold("release", "A")
		m.finish()
		<-aRelease.arrived // A saved complete, its lease still held
		r := e.submitAsync(t, "s", "R", "question R", policy("rollback"))
		waitFor(t, "R's first claim", func() bool { return len(gs.claimed("R")) >= 1 })
		close(aRelease.open)
		rr := r()
		rr.want(t, http.StatusOK, "")
		<-a.done
		wantCompleteKept(t, e, "s", "A", "partial done")
		if ids := turnIDsOf(history(t, e, "s")); !slices.Equal(ids, []string{"A", "R"}) {
			t.Errorf("history %v, want [A R]", ids)
		}
		req, _ := m.requestOf("question R")
		if !slices.ContainsFunc(req.Messages, func(msg protocol.Message) bool { return msg.Content == "partial done" }) {
			t.Errorf("R's model context %+v lacks A's answer", req.Messages)
		}
	})
}
