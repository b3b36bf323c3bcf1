package turn_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/store/memory"
	"github.com/turnstream/turnstream/pkg/store/storetest"
	"github.com/turnstream/turnstream/pkg/turn"
)

func TestSubmitStreamsAndSaves(t *testing.T) {
	forEachStore(t, func(t *testing.T, newStore func(testing.TB) chat.Store) {
		m := &scriptModel{Chunks: []string{"Hel", "lo", " there"}, Delay: 2 * time.Millisecond}
		e := newEnv(t, newStore(t), m, nil)

		r := e.submit(t, "s1", "t1", "hi", nil, nil)
		r.want(t, http.StatusOK, "")
		for k, v := range map[string]string{
			"Content-Type":           "application/x-ndjson; charset=utf-8",
			"Cache-Control":          "no-store",
			"X-Content-Type-Options": "nosniff",
		} {
			if got := r.header.Get(k); got != v {
				t.Errorf("%s = %q, want %q", k, got, v)
			}
		}
		first := r.events[0]
		if first.Sequence != 1 || first.Snapshot == nil || first.Snapshot.Status != protocol.StatusStreaming {
			t.Fatalf("first line: %+v", first)
		}
		if got := first.Snapshot.Messages; len(got) != 2 || got[0].Content != "hi" || got[1].Role != protocol.RoleAssistant {
			t.Fatalf("first snapshot messages: %+v", got)
		}
		term := r.terminal(t)
		if r.last().Snapshot != term || term.Status != protocol.StatusComplete || term.Error != nil {
			t.Fatalf("last line is not a complete snapshot: %s", r.raw)
		}
		if term.Lineage == nil || *term.Lineage != (protocol.Lineage{Operation: protocol.OperationSubmit}) {
			t.Errorf("lineage %+v, want submit", term.Lineage)
		}
		asst := term.Messages[1]
		if asst.Content != "Hello there" || asst.Status != protocol.MessageComplete || asst.ID != "t1.a" || term.Messages[0].ID != "t1.u" {
			t.Errorf("assistant %+v", asst)
		}
		if term.Usage.TotalTokens != 6 {
			t.Errorf("usage %+v", term.Usage)
		}
		if m.Calls() != 1 {
			t.Errorf("model calls %d", m.Calls())
		}
		req := m.LastRequest()
		if req.System != "Be brief." || req.ModelID != "test-model" || len(req.Messages) != 1 || req.Messages[0].Content != "hi" {
			t.Errorf("model request %+v", req)
		}

		stored, err := e.store.FindTurn(context.Background(), "s1", "t1", alice)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := messagesJSON(t, stored.Messages), messagesJSON(t, term.Messages); got != want {
			t.Errorf("stored messages\n%s\nsnapshot\n%s", got, want)
		}
		if stored.Status != chat.TurnComplete || stored.FirstSequence != 1 || stored.LastSequence != r.last().Sequence {
			t.Errorf("stored turn %+v", stored)
		}

		// The next turn sees the first as context and numbers on.
		r2 := e.submit(t, "s1", "t2", "again", nil, nil)
		r2.want(t, http.StatusOK, "")
		if r2.events[0].Sequence != r.last().Sequence+1 {
			t.Errorf("second turn starts at %d after %d", r2.events[0].Sequence, r.last().Sequence)
		}
		if n := len(r2.terminal(t).Messages); n != 4 {
			t.Errorf("session scope: %d messages, want 4", n)
		}
		if n := len(m.LastRequest().Messages); n != 3 {
			t.Errorf("model context: %d messages, want 3", n)
		}
		r3 := e.submit(t, "s1", "t3", "scoped", nil, map[string]string{api.SnapshotScopeHeader: "Turn"})
		r3.want(t, http.StatusOK, "")
		for _, ev := range r3.events {
			if n := len(ev.Snapshot.Messages); n != 2 {
				t.Fatalf("turn scope: %d messages, want 2", n)
			}
		}
	})
}

// failingStore wraps a store and fails chosen methods.
type failingStore struct {
	chat.Store
	saveErr  error
	renewErr error
	saves    atomicCounter
}

type atomicCounter struct {
	mu sync.Mutex
	n  int
}

func (c *atomicCounter) add() {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
}

func (c *atomicCounter) get() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func (s *failingStore) SaveTurn(ctx context.Context, c *chat.Claim, t *chat.Turn) error {
	s.saves.add()
	if s.saveErr != nil {
		return s.saveErr
	}
	return s.Store.SaveTurn(ctx, c, t)
}

func (s *failingStore) RenewLease(ctx context.Context, req chat.RenewRequest) (*chat.Lease, error) {
	if s.renewErr != nil {
		return nil, s.renewErr
	}
	return s.Store.RenewLease(ctx, req)
}

func TestConcurrentSubmitsOneSession(t *testing.T) {
	forEachStore(t, func(t *testing.T, newStore func(testing.TB) chat.Store) {
		const n = 50
		m := &scriptModel{Chunks: []string{"one answer"}, Hold: make(chan struct{})}
		e := newEnv(t, newStore(t), m, nil)

		type reply struct {
			resp *http.Response
			err  error
		}
		replies := make(chan reply, n)
		for i := range n {
			go func() {
				body := submitBody(t, "busy", "turn-"+string(rune('a'+i%26))+strings.Repeat("x", i/26), "same input", nil)
				req, err := http.NewRequest(http.MethodPost, e.srv.URL+"/", strings.NewReader(string(body)))
				if err != nil {
					replies <- reply{err: err}
					return
				}
				req.Header.Set("Content-Type", "application/json")
				resp, err := e.srv.Client().Do(req)
				replies <- reply{resp, err}
			}()
		}
		var winner *http.Response
		busy := 0
		for range n {
			r := <-replies
			if r.err != nil {
				t.Fatal(r.err)
			}
			if r.resp.StatusCode == http.StatusOK {
				if winner != nil {
					t.Fatal("two 200 streams")
				}
				winner = r.resp
				continue
			}
			res := readResult(t, r.resp)
			res.want(t, http.StatusConflict, protocol.CodeSessionBusy)
			if !res.errD.Retryable {
				t.Error("SESSION_BUSY not retryable")
			}
			busy++
		}
		if winner == nil || busy != n-1 {
			t.Fatalf("winner %v, busy %d", winner != nil, busy)
		}
		close(m.Hold)
		res := readResult(t, winner)
		if res.terminal(t).Status != protocol.StatusComplete {
			t.Fatalf("winner stream: %s", res.raw)
		}
		if m.Calls() != 1 {
			t.Fatalf("model called %d times, want 1", m.Calls())
		}
	})
}

func TestReplay(t *testing.T) {
	forEachStore(t, func(t *testing.T, newStore func(testing.TB) chat.Store) {
		m := &scriptModel{Chunks: []string{"ok"}}
		e := newEnv(t, newStore(t), m, nil)
		e.submit(t, "s", "t1", "hello", nil, nil).want(t, http.StatusOK, "")

		r := e.submit(t, "s", "t1", "hello", nil, nil)
		r.want(t, http.StatusConflict, protocol.CodeTurnAlreadyCompleted)
		if r.errD.Retryable {
			t.Error("TURN_ALREADY_COMPLETED retryable")
		}
		e.submit(t, "s", "t1", "other input", nil, nil).want(t, http.StatusUnprocessableEntity, protocol.CodeTurnIDReused)
		e.submit(t, "s", "t2", "x", nil, map[string]string{"X-Test-Subject": "mallory"}).want(t, http.StatusNotFound, protocol.CodeSessionNotFound)
		if m.Calls() != 1 {
			t.Fatalf("model calls %d", m.Calls())
		}
	})
}

func TestDeadline(t *testing.T) {
	forEachStore(t, func(t *testing.T, newStore func(testing.TB) chat.Store) {
		chunks := make([]string, 200)
		for i := range chunks {
			chunks[i] = "w "
		}
		m := &scriptModel{Chunks: chunks, Delay: 20 * time.Millisecond}
		e := newEnv(t, newStore(t), m, func(o *turn.Options) {
			// Each cleanup phase gets a third of the reserve: keep it
			// generous for a loaded machine.
			o.TurnTimeout = time.Second
			o.CleanupReserve = 900 * time.Millisecond
		})
		r := e.submit(t, "s", "slow", "take your time", nil, nil)
		r.want(t, http.StatusOK, "")
		last := r.last()
		if last.Kind != protocol.EventDiagnostic || last.Diagnostic.Code != protocol.CodeServerTimeout || !last.Diagnostic.Retryable {
			t.Fatalf("last line %s", r.raw[strings.LastIndexByte(string(r.raw[:len(r.raw)-1]), '\n')+1:])
		}
		term := r.terminal(t)
		if term.Status != protocol.StatusError || term.Error == nil || term.Error.Code != protocol.CodeServerTimeout {
			t.Fatalf("terminal %+v", term)
		}
		stored, err := e.store.FindTurn(context.Background(), "s", "slow", alice)
		if err != nil {
			t.Fatal(err)
		}
		if stored.Status != chat.TurnError || stored.Error == nil || stored.Error.Code != protocol.CodeServerTimeout {
			t.Fatalf("stored %+v", stored)
		}
		if got := stored.Messages[1]; got.Content == "" || got.Status != protocol.MessageError {
			t.Fatalf("partial text not kept: %+v", got)
		}
		if messagesJSON(t, stored.Messages) != messagesJSON(t, term.Messages) {
			t.Error("stored messages differ from the terminal snapshot")
		}
		m.Chunks, m.Delay = []string{"quick"}, 0
		r2 := e.submit(t, "s", "next", "now quick", nil, nil)
		r2.want(t, http.StatusOK, "")
		if r2.events[0].Sequence != last.Sequence+1 {
			t.Errorf("next turn starts at %d after %d", r2.events[0].Sequence, last.Sequence)
		}
	})
}

// TestClockFarFromWallTime: the turn's clock, not package time, decides
// its deadlines, and the response's write deadline (kept by the
// connection in package time) is converted from it: a turn whose clock is
// hours behind or ahead of package time streams and saves. Unconverted,
// the write deadline of a clock 3 hours behind had passed before the
// first line (the stream ended at once, REQUEST_CANCELLED).
func TestClockFarFromWallTime(t *testing.T) {
	for _, offset := range []time.Duration{-3 * time.Hour, 3 * time.Hour} {
		t.Run(offset.String(), func(t *testing.T) {
			clock := storetest.NewClock(time.Now().Add(offset))
			store := memory.New(memory.Options{Now: clock.Now})
			e := newEnv(t, store, &scriptModel{Chunks: []string{"o", "k"}}, func(o *turn.Options) { o.Clock = clock })
			r := e.submit(t, "s", "t1", "hello", nil, nil)
			r.want(t, http.StatusOK, "")
			if term := r.terminal(t); term.Status != protocol.StatusComplete {
				t.Fatalf("terminal %+v", term)
			}
			stored, err := store.FindTurn(context.Background(), "s", "t1", alice)
			if err != nil || stored.Status != chat.TurnComplete {
				t.Fatalf("stored %+v, %v", stored, err)
			}
		})
	}
}

// TestSaveFailure: a save whose outcome stays unknown is reported as
// such, TURN_OUTCOME_INDETERMINATE, not retryable (the code a replay of
// the turn id gets) and at sequence 0 (no state of the turn), never a
// retryable failure; the lease is left to expire, and the table then
// decides the turn (lost: the save never landed) for the replay.
func TestSaveFailure(t *testing.T) {
	forEachStore(t, func(t *testing.T, newStore func(testing.TB) chat.Store) {
		fs := &failingStore{Store: newStore(t), saveErr: errors.New("storage unavailable")}
		e := newEnv(t, fs, &scriptModel{Chunks: []string{"a", "b"}}, func(o *turn.Options) {
			o.LeaseDuration, o.CleanupReserve = 300*time.Millisecond, time.Second
		})
		r := e.submit(t, "s", "t1", "hello", nil, nil)
		r.want(t, http.StatusOK, "")
		last := r.last()
		if last.Kind != protocol.EventDiagnostic || last.Diagnostic.Code != protocol.CodeTurnOutcomeIndeterminate || last.Diagnostic.Retryable || last.Sequence != 0 {
			t.Fatalf("last line: %s", r.raw)
		}
		for _, ev := range r.events {
			if ev.Kind == protocol.EventSnapshot && ev.Snapshot.Status != protocol.StatusStreaming {
				t.Fatalf("a terminal snapshot was sent for an unsaved turn: %s", r.raw)
			}
		}
		if strings.Contains(string(r.raw), "storage unavailable") {
			t.Error("internal error text reached the client")
		}
		fs.saveErr = nil
		waitFor(t, "the lease to expire", func() bool {
			return e.submit(t, "s", "t1", "hello", nil, nil).status != http.StatusConflict ||
				e.submit(t, "s", "t1", "hello", nil, nil).errD.Code == protocol.CodeTurnOutcomeIndeterminate
		})
		e.submit(t, "s", "t1", "hello", nil, nil).want(t, http.StatusConflict, protocol.CodeTurnOutcomeIndeterminate)
		e.submit(t, "s", "t2", "next", nil, nil).want(t, http.StatusOK, "")
	})
}

func TestModelError(t *testing.T) {
	forEachStore(t, func(t *testing.T, newStore func(testing.TB) chat.Store) {
		for name, tc := range map[string]struct {
			err           error
			wantRetryable bool
			wantMeta      string
		}{
			"provider throttled": {&model.Error{Code: "ThrottlingException", Retryable: true, Err: errors.New("provider says: secret detail")}, true, `{"errorCode":"ThrottlingException"}`},
			"provider rejected":  {&model.Error{Code: "ValidationException", Err: errors.New("provider says: secret detail")}, false, `{"errorCode":"ValidationException"}`},
			"other failure":      {errors.New("provider says: secret detail"), true, ""},
		} {
			t.Run(name, func(t *testing.T) {
				e := newEnv(t, newStore(t), &scriptModel{Chunks: []string{"partial "}, Err: tc.err}, nil)
				r := e.submit(t, "s", "t1", "hello", nil, nil)
				r.want(t, http.StatusOK, "")
				term := r.terminal(t)
				if r.last().Snapshot != term || term.Status != protocol.StatusError || term.Error == nil ||
					term.Error.Code != protocol.CodeModelFailed || term.Error.Retryable != tc.wantRetryable {
					t.Fatalf("terminal: %s", r.raw)
				}
				asst := term.Messages[1]
				if asst.Content != "partial " || asst.Status != protocol.MessageError || string(asst.Metadata) != tc.wantMeta {
					t.Fatalf("assistant %+v metadata %s", asst, asst.Metadata)
				}
				if strings.Contains(string(r.raw), "secret detail") || strings.Contains(e.logs.String(), "secret detail") {
					t.Error("provider text leaked")
				}
				stored, err := e.store.FindTurn(context.Background(), "s", "t1", alice)
				if err != nil {
					t.Fatal(err)
				}
				if stored.Status != chat.TurnError || messagesJSON(t, stored.Messages) != messagesJSON(t, term.Messages) {
					t.Fatalf("stored %+v", stored)
				}
			})
		}
	})
}

// TestLeaseLost: a turn that cannot renew its lease stops, saves
// nothing, and once the lease has expired reads the fate the table
// decides (its own read decides it): its stream ends with the lost record,
// what a resume and history show too.
func TestLeaseLost(t *testing.T) {
	forEachStore(t, func(t *testing.T, newStore func(testing.TB) chat.Store) {
		fs := &failingStore{Store: newStore(t), renewErr: chat.ErrLeaseLost}
		m := &scriptModel{Chunks: []string{"x"}, Hold: make(chan struct{})}
		e := newEnv(t, fs, m, func(o *turn.Options) {
			durable(o)
			o.RenewInterval, o.LeaseDuration = 5*time.Millisecond, 300*time.Millisecond
		})
		r := e.submit(t, "s", "t1", "hello", nil, nil)
		r.want(t, http.StatusOK, "")
		last := r.last()
		if last.Kind != protocol.EventSnapshot || last.Snapshot.Error == nil || last.Snapshot.Error.Code != protocol.CodeTurnLost {
			t.Fatalf("stream: %s", r.raw)
		}
		rec, err := fs.FindTurn(context.Background(), "s", "t1", alice)
		if err != nil || rec.Status != chat.TurnError || rec.LastSequence != last.Sequence || messagesJSON(t, rec.Messages) != messagesJSON(t, last.Snapshot.Messages[len(last.Snapshot.Messages)-2:]) {
			t.Errorf("the record %+v, %v; want the last line's", rec, err)
		}
		if fs.saves.get() != 0 {
			t.Error("a turn that lost its lease was saved")
		}
	})
}

func TestStop(t *testing.T) {
	forEachStore(t, func(t *testing.T, newStore func(testing.TB) chat.Store) {
		m := &scriptModel{Chunks: []string{"never"}, Hold: make(chan struct{}), Started: make(chan struct{}, 1)}
		e := newEnv(t, newStore(t), m, func(o *turn.Options) { o.RenewInterval = 100 * time.Millisecond })
		stop := func(body string, hdr map[string]string) result {
			return readResult(t, e.post(t, context.Background(), "/stop", []byte(body), hdr))
		}
		stop(`{"sessionId":"s","turnId":"t1"}`, nil).want(t, http.StatusNotFound, protocol.CodeSessionNotFound)

		resp := e.post(t, context.Background(), "/", submitBody(t, "s", "t1", "hello", nil), nil)
		<-m.Started
		for name, tc := range map[string]struct {
			body, subject string
			status        int
			code          string
		}{
			"not json":        {`{`, "", http.StatusBadRequest, protocol.CodeRequestInvalidBody},
			"missing turn":    {`{"sessionId":"s"}`, "", http.StatusBadRequest, protocol.CodeRequestInvalidBody},
			"unsafe id":       {`{"sessionId":"s","turnId":"t 1"}`, "", http.StatusBadRequest, protocol.CodeRequestInvalidBody},
			"key case":        {`{"SessionId":"s","turnId":"t1"}`, "", http.StatusBadRequest, protocol.CodeRequestInvalidBody},
			"duplicate key":   {`{"sessionId":"s","sessionId":"s","turnId":"t1"}`, "", http.StatusBadRequest, protocol.CodeRequestInvalidBody},
			"case variant":    {`{"sessionId":"s","turnId":"t1","SessionId":"x"}`, "", http.StatusBadRequest, protocol.CodeRequestInvalidBody},
			"TURNID variant":  {`{"sessionId":"s","turnId":"t1","TURNID":"t1"}`, "", http.StatusBadRequest, protocol.CodeRequestInvalidBody},
			"long s variant":  {`{"sessionId":"s","turnId":"t1","\u017fessionId":"s"}`, "", http.StatusBadRequest, protocol.CodeRequestInvalidBody},
			"array":           {`[]`, "", http.StatusBadRequest, protocol.CodeRequestInvalidBody},
			"other turn":      {`{"sessionId":"s","turnId":"t2"}`, "", http.StatusConflict, protocol.CodeTurnNotActive},
			"other owner":     {`{"sessionId":"s","turnId":"t1"}`, "mallory", http.StatusNotFound, protocol.CodeSessionNotFound},
			"unauthenticated": {`{"sessionId":"s","turnId":"t1"}`, "nobody", http.StatusUnauthorized, protocol.CodeRequestUnauthenticated},
		} {
			t.Run(name, func(t *testing.T) {
				hdr := map[string]string{}
				if tc.subject != "" {
					hdr["X-Test-Subject"] = tc.subject
				}
				stop(tc.body, hdr).want(t, tc.status, tc.code)
			})
		}
		// None of the rejected bodies set the stop flag.
		if sess, err := e.store.GetSession(context.Background(), "s", alice); err != nil || sess.ActiveTurn == nil || sess.ActiveTurn.Stop {
			t.Fatalf("after rejected stops: session %+v, %v; want the turn running without a stop flag", sess, err)
		}
		ok := stop(`{"sessionId":"s","turnId":"t1","reason":"ignored"}`, nil)
		if ok.status != http.StatusAccepted || strings.TrimSpace(string(ok.raw)) != `{"stopRequested":true}` {
			t.Fatalf("stop: %d %s", ok.status, ok.raw)
		}
		r := readResult(t, resp)
		term := r.terminal(t)
		if r.last().Snapshot != term || term.Status != protocol.StatusError || term.Error == nil || term.Error.Code != protocol.CodeTurnInterrupted {
			t.Fatalf("stream: %s", r.raw)
		}
		stored, err := e.store.FindTurn(context.Background(), "s", "t1", alice)
		if err != nil {
			t.Fatal(err)
		}
		if stored.Status != chat.TurnInterrupted {
			t.Fatalf("stored status %q", stored.Status)
		}
		close(m.Hold)
		r2 := e.submit(t, "s", "t2", "next", nil, nil)
		r2.want(t, http.StatusOK, "")
		if r2.terminal(t).Status != protocol.StatusComplete {
			t.Fatalf("next turn: %s", r2.raw)
		}
	})
}

func TestClientDisconnect(t *testing.T) {
	forEachStore(t, func(t *testing.T, newStore func(testing.TB) chat.Store) {
		m := &scriptModel{Chunks: []string{"never"}, Hold: make(chan struct{}), Started: make(chan struct{}, 1)}
		e := newEnv(t, newStore(t), m, nil)
		ctx, cancel := context.WithCancel(context.Background())
		resp := e.post(t, ctx, "/", submitBody(t, "s", "t1", "hello", nil), nil)
		<-m.Started
		buf := make([]byte, 1)
		if _, err := resp.Body.Read(buf); err != nil {
			t.Fatal(err)
		}
		cancel()
		_ = resp.Body.Close()
		waitFor(t, "the turn to be saved", func() bool {
			_, err := e.store.FindTurn(context.Background(), "s", "t1", alice)
			return err == nil
		})
		stored, _ := e.store.FindTurn(context.Background(), "s", "t1", alice)
		if stored.Status != chat.TurnError || stored.Error == nil || stored.Error.Code != protocol.CodeRequestCancelled {
			t.Fatalf("stored %+v", stored)
		}
		waitFor(t, "the lease to be released", func() bool {
			s, err := e.store.GetSession(context.Background(), "s", alice)
			return err == nil && s.ActiveTurn == nil
		})
		close(m.Hold)
		e.submit(t, "s", "t2", "next", nil, nil).want(t, http.StatusOK, "")
	})
}

// failAfterWriter is a ResponseWriter whose writes fail after the first.
type failAfterWriter struct {
	http.ResponseWriter
	mu     sync.Mutex
	writes int
}

func (w *failAfterWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes++
	if w.writes > 1 {
		return 0, errors.New("broken pipe")
	}
	return w.ResponseWriter.Write(p)
}

func TestWriteFailureCleansUp(t *testing.T) {
	forEachStore(t, func(t *testing.T, newStore func(testing.TB) chat.Store) {
		// The model streams a first text, then waits for its context: the
		// broken connection is the only way this turn ends, however slow
		// the machine.
		m := newInputModel()
		e := newEnv(t, newStore(t), &scriptModel{}, func(o *turn.Options) { o.Model = m })
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(string(submitBody(t, "s", "t1", "hold on", nil))))
		req.Header.Set("Content-Type", "application/json")
		e.h.ServeHTTP(&failAfterWriter{ResponseWriter: rec}, req)
		stored, err := e.store.FindTurn(context.Background(), "s", "t1", alice)
		if err != nil {
			t.Fatal(err)
		}
		if stored.Status != chat.TurnError || stored.Error.Code != protocol.CodeRequestCancelled {
			t.Fatalf("stored %+v", stored)
		}
		s, err := e.store.GetSession(context.Background(), "s", alice)
		if err != nil || s.ActiveTurn != nil {
			t.Fatalf("session %+v %v", s, err)
		}
	})
}

// gateWriter blocks its second Write (the first streaming snapshot after
// the initial one) until gate is closed, then records.
type gateWriter struct {
	*httptest.ResponseRecorder
	gate   chan struct{}
	mu     sync.Mutex
	writes int
}

func (w *gateWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.writes++
	n := w.writes
	w.mu.Unlock()
	if n == 2 {
		<-w.gate
	}
	return w.ResponseRecorder.Write(p)
}

func TestSlowReaderGetsFewerNewerSnapshots(t *testing.T) {
	chunks := make([]string, 100)
	for i := range chunks {
		chunks[i] = "x"
	}
	m := &scriptModel{Chunks: chunks, Finished: make(chan struct{})}
	e := newEnv(t, newStoreMemory(), m, func(o *turn.Options) { o.SnapshotInterval = time.Nanosecond })
	w := &gateWriter{ResponseRecorder: httptest.NewRecorder(), gate: m.Finished}
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(string(submitBody(t, "s", "t1", "hello", nil))))
	req.Header.Set("Content-Type", "application/json")
	e.h.ServeHTTP(w, req)
	evs := decodeStream(t, w.Body.Bytes())
	// The reader blocked on the first streaming snapshot after the initial
	// one while all 100 deltas arrived: at most one streaming snapshot of
	// the latest state follows, then the terminal.
	if len(evs) > 4 {
		t.Fatalf("%d lines for a reader blocked during the whole answer, want <= 4", len(evs))
	}
	term := evs[len(evs)-1].Snapshot
	if term == nil || term.Status != protocol.StatusComplete || term.Messages[1].Content != strings.Repeat("x", 100) {
		t.Fatalf("terminal: %s", w.Body.Bytes())
	}
}

func TestLineage(t *testing.T) {
	forEachStore(t, func(t *testing.T, newStore func(testing.TB) chat.Store) {
		m := &scriptModel{Chunks: []string{"answer"}}
		e := newEnv(t, newStore(t), m, nil)
		for i, in := range []string{"q1", "q2", "q3"} {
			e.submit(t, "s", "t"+string(rune('1'+i)), in, nil, nil).want(t, http.StatusOK, "")
		}
		e.submit(t, "other", "o1", "q1", nil, nil).want(t, http.StatusOK, "")
		calls := m.Calls()
		for name, tc := range map[string]struct {
			input   string
			lineage protocol.Lineage
		}{
			"retry with another input":   {"q1 changed", protocol.Lineage{Operation: protocol.OperationRetry, ParentTurnID: "t1", SourceMessageID: "t1.a"}},
			"regenerate another input":   {"nope", protocol.Lineage{Operation: protocol.OperationRegenerate, ParentTurnID: "t2", SourceMessageID: "t2.a"}},
			"parent in another session":  {"q1", protocol.Lineage{Operation: protocol.OperationRetry, ParentTurnID: "o1", SourceMessageID: "o1.a"}},
			"unknown parent":             {"q1", protocol.Lineage{Operation: protocol.OperationEdit, ParentTurnID: "zz", SourceMessageID: "zz.u"}},
			"source message not in turn": {"q1", protocol.Lineage{Operation: protocol.OperationRetry, ParentTurnID: "t1", SourceMessageID: "t2.a"}},
		} {
			t.Run(name, func(t *testing.T) {
				l := tc.lineage
				e.submit(t, "s", "bad", tc.input, &l, nil).want(t, http.StatusUnprocessableEntity, protocol.CodeLineageInvalid)
			})
		}
		if m.Calls() != calls {
			t.Fatal("a rejected lineage reached the model")
		}

		edit := protocol.Lineage{Operation: protocol.OperationEdit, ParentTurnID: "t2", SourceMessageID: "t2.u"}
		r := e.submit(t, "s", "t4", "q2 edited", &edit, nil)
		r.want(t, http.StatusOK, "")
		term := r.terminal(t)
		var ids []string
		for _, msg := range term.Messages {
			ids = append(ids, msg.ID)
		}
		if got := strings.Join(ids, ","); got != "t1.u,t1.a,t4.u,t4.a" {
			t.Fatalf("messages after edit: %s", got)
		}
		for _, ev := range r.events {
			if *ev.Snapshot.Lineage != edit {
				t.Fatalf("lineage not echoed: %+v", ev.Snapshot.Lineage)
			}
		}
		if n := len(m.LastRequest().Messages); n != 3 {
			t.Errorf("model context after edit: %d messages, want 3", n)
		}
		page, err := e.store.ListTurns(context.Background(), chat.ListRequest{SessionID: "s", Principal: alice, Order: chat.OrderAsc})
		if err != nil {
			t.Fatal(err)
		}
		var turnIDs []string
		for _, tt := range page.Turns {
			turnIDs = append(turnIDs, tt.TurnID)
		}
		if got := strings.Join(turnIDs, ","); got != "t1,t4" {
			t.Fatalf("visible turns %s", got)
		}
		if got := page.Turns[1]; messagesJSON(t, got.Messages) != messagesJSON(t, term.Messages[2:]) || got.Lineage != edit {
			t.Fatalf("stored edit turn %+v", got)
		}

		superseded := protocol.Lineage{Operation: protocol.OperationRetry, ParentTurnID: "t3", SourceMessageID: "t3.a"}
		e.submit(t, "s", "t5", "q3", &superseded, nil).want(t, http.StatusUnprocessableEntity, protocol.CodeLineageInvalid)
		retry := protocol.Lineage{Operation: protocol.OperationRetry, ParentTurnID: "t4", SourceMessageID: "t4.a"}
		r = e.submit(t, "s", "t6", "q2 edited", &retry, nil)
		r.want(t, http.StatusOK, "")
		if n := len(r.terminal(t).Messages); n != 4 {
			t.Fatalf("after retry: %d messages, want 4", n)
		}
	})
}

func TestUnicodeRoundTrip(t *testing.T) {
	forEachStore(t, func(t *testing.T, newStore func(testing.TB) chat.Store) {
		input := "line\u2028sep\u2029para 😀 \"q\" <b>&"
		m := &scriptModel{Chunks: []string{"😀", "\u2028", "é"}}
		e := newEnv(t, newStore(t), m, nil)
		r := e.submit(t, "s", "t1", input, nil, nil)
		r.want(t, http.StatusOK, "")
		if !strings.Contains(string(r.raw), "\u2028") || !strings.Contains(string(r.raw), "😀") {
			t.Error("U+2028 or the emoji was escaped on the wire")
		}
		stored, err := e.store.FindTurn(context.Background(), "s", "t1", alice)
		if err != nil {
			t.Fatal(err)
		}
		if stored.Messages[0].Content != input || stored.Messages[1].Content != "😀\u2028é" {
			t.Fatalf("stored %q / %q", stored.Messages[0].Content, stored.Messages[1].Content)
		}
		if got := r.terminal(t).Messages[0].Content; got != input {
			t.Fatalf("snapshot input %q", got)
		}
		if m.LastRequest().Messages[0].Content != input {
			t.Fatal("model got another input")
		}
	})
}

func TestLongTurnIDMessageIDs(t *testing.T) {
	long := strings.Repeat("t", 128)
	e := newEnv(t, newStoreMemory(), &scriptModel{Chunks: []string{"a"}}, nil)
	r := e.submit(t, "s", long, "hi", nil, nil)
	r.want(t, http.StatusOK, "")
	msgs := r.terminal(t).Messages
	if msgs[0].ID != turn.MessageID(long, "u") || msgs[1].ID != turn.MessageID(long, "a") {
		t.Fatalf("ids %s %s", msgs[0].ID, msgs[1].ID)
	}
	for _, m := range msgs {
		if !protocol.IsSafeID(m.ID) || strings.HasSuffix(m.ID, ".u") || strings.HasSuffix(m.ID, ".a") {
			t.Fatalf("long-form id %q", m.ID)
		}
	}
}

func newStoreMemory() chat.Store { return storeFactories()[0].new(nil) }

// scriptedStore wraps a store and fails ClaimTurn or LoadContext.
type scriptedStore struct {
	chat.Store
	claim func(ctx context.Context) error // nil: delegate
	load  error
}

func (s *scriptedStore) ClaimTurn(ctx context.Context, req chat.ClaimRequest) (*chat.Claim, error) {
	if s.claim != nil {
		if err := s.claim(ctx); err != nil {
			return nil, err
		}
	}
	return s.Store.ClaimTurn(ctx, req)
}

func (s *scriptedStore) LoadContext(ctx context.Context, sessionID string, before int64, maxTurns int) ([]chat.Turn, bool, error) {
	if s.load != nil {
		return nil, false, s.load
	}
	return s.Store.LoadContext(ctx, sessionID, before, maxTurns)
}

func TestClaimErrorMapping(t *testing.T) {
	wrap := func(err error) func(context.Context) error {
		return func(context.Context) error { return fmt.Errorf("claim session s: %w", err) }
	}
	for name, tc := range map[string]struct {
		claim     func(context.Context) error
		cancel    bool
		status    int
		code      string
		retryable bool
	}{
		"session not found": {claim: wrap(chat.ErrSessionNotFound), status: 404, code: protocol.CodeSessionNotFound},
		"busy":              {claim: wrap(chat.ErrSessionBusy), status: 409, code: protocol.CodeSessionBusy, retryable: true},
		"completed":         {claim: wrap(chat.ErrTurnCompleted), status: 409, code: protocol.CodeTurnAlreadyCompleted},
		"indeterminate":     {claim: wrap(chat.ErrTurnIndeterminate), status: 409, code: protocol.CodeTurnOutcomeIndeterminate},
		"turn id reused":    {claim: wrap(chat.ErrTurnIDReused), status: 422, code: protocol.CodeTurnIDReused},
		"conflict":          {claim: wrap(chat.ErrConflict), status: 409, code: protocol.CodeSessionConflict, retryable: true},
		"storage failure":   {claim: wrap(errors.New("secret storage detail")), status: 500, code: protocol.CodeServerInternal, retryable: true},
		"deadline":          {claim: func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }, status: 408, code: protocol.CodeServerTimeout, retryable: true},
		"client cancelled":  {claim: func(ctx context.Context) error { return ctx.Err() }, cancel: true, status: 499, code: protocol.CodeRequestCancelled, retryable: true},
	} {
		t.Run(name, func(t *testing.T) {
			m := &scriptModel{Chunks: []string{"x"}}
			e := newEnv(t, &scriptedStore{Store: newStoreMemory(), claim: tc.claim}, m, func(o *turn.Options) {
				o.TurnTimeout = 200 * time.Millisecond
				o.CleanupReserve = 100 * time.Millisecond
			})
			ctx, cancel := context.WithCancel(context.Background())
			if tc.cancel {
				cancel()
			}
			defer cancel()
			req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/", strings.NewReader(string(submitBody(t, "s", "t1", "hello", nil))))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			e.h.ServeHTTP(rec, req)
			r := result{status: rec.Code, header: rec.Header(), raw: rec.Body.Bytes(), errD: decodeErrorBody(t, rec.Body.Bytes())}
			r.want(t, tc.status, tc.code)
			if r.errD.Retryable != tc.retryable || r.errD.Message != protocol.NewDiagnostic(tc.code).Message {
				t.Errorf("diagnostic %+v", r.errD)
			}
			if strings.Contains(string(r.raw), "secret") || m.Calls() != 0 {
				t.Error("leaked error text or called the model")
			}
		})
	}
}

func TestContextLoadFailure(t *testing.T) {
	forEachStore(t, func(t *testing.T, newStore func(testing.TB) chat.Store) {
		s := &scriptedStore{Store: newStore(t), load: errors.New("secret read failure")}
		m := &scriptModel{Chunks: []string{"x"}}
		e := newEnv(t, s, m, nil)
		r := e.submit(t, "s", "t1", "hello", nil, nil)
		r.want(t, http.StatusInternalServerError, protocol.CodeServerInternal)
		if m.Calls() != 0 || strings.Contains(string(r.raw), "secret") {
			t.Fatal("model called or error text leaked")
		}
		if !r.errD.Retryable {
			t.Fatalf("a failed context load answered not retryable: %s", r.raw)
		}
		// The claim was withdrawn: nothing records the turn, and the
		// retry of its id runs it.
		if _, err := e.store.FindTurn(context.Background(), "s", "t1", alice); !errors.Is(err, chat.ErrTurnNotFound) {
			t.Fatalf("the turn whose context load failed is recorded: %v", err)
		}
		s.load = nil
		e.submit(t, "s", "t1", "hello", nil, nil).want(t, http.StatusOK, "")
		e.submit(t, "s", "t1", "hello", nil, nil).want(t, http.StatusConflict, protocol.CodeTurnAlreadyCompleted)
	})
}

// appliedUnanswered applies every save, then answers its first one with an
// error (an answer lost after the write applied, beyond what the store
// could resolve), or with lateErr all of them (a table that applies
// writes but cannot answer until later).
type appliedUnanswered struct {
	chat.Store
	mu      sync.Mutex
	failed  int
	always  bool
	release atomicCounter
}

func (s *appliedUnanswered) SaveTurn(ctx context.Context, c *chat.Claim, t *chat.Turn) error {
	err := s.Store.SaveTurn(ctx, c, t)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.always || s.failed == 0 {
		s.failed++
		return errors.New("storage unavailable")
	}
	return err
}

func (s *appliedUnanswered) ReleaseTurn(ctx context.Context, req chat.ReleaseRequest) (*chat.Session, error) {
	s.release.add()
	return s.Store.ReleaseTurn(ctx, req)
}

// TestSaveAppliedWithoutAnswer: a save that applied but whose answer was
// lost is learned (the save is sent again, refused as the turn is already
// terminal, and the turn read): the client is told complete and the lease
// released, never a retryable failure for a saved turn. When no answer can
// be had in time the client is told TURN_OUTCOME_INDETERMINATE (not
// retryable), and history and a replay later agree with the save.
func TestSaveAppliedWithoutAnswer(t *testing.T) {
	forEachStore(t, func(t *testing.T, newStore func(testing.TB) chat.Store) {
		for _, always := range []bool{false, true} {
			s := &appliedUnanswered{Store: newStore(t), always: always}
			e := newEnv(t, s, &scriptModel{Chunks: []string{"a", "b"}}, func(o *turn.Options) {
				durable(o)
				o.LeaseDuration, o.CleanupReserve = 300*time.Millisecond, time.Second
			})
			sid := fmt.Sprintf("s-%v", always)
			r := e.submit(t, sid, "t1", "hello", nil, nil)
			r.want(t, http.StatusOK, "")
			last := r.last()
			if !always {
				if last.Kind != protocol.EventSnapshot || last.Snapshot.Status != protocol.StatusComplete || s.release.get() != 1 {
					t.Fatalf("a save that applied unanswered: last line %s, %d releases; want complete, released", r.raw, s.release.get())
				}
				continue
			}
			if last.Kind != protocol.EventDiagnostic || last.Diagnostic.Code != protocol.CodeTurnOutcomeIndeterminate || last.Diagnostic.Retryable || last.Sequence != 0 {
				t.Fatalf("a save never answered: last line %s; want TURN_OUTCOME_INDETERMINATE, not retryable, sequence 0", r.raw)
			}
			got, err := s.FindTurn(context.Background(), sid, "t1", alice)
			if err != nil || got.Status != chat.TurnComplete {
				t.Errorf("history of the saved turn: %+v, %v; want complete", got, err)
			}
			waitFor(t, "the lease to expire", func() bool {
				return e.submit(t, sid, "t1", "hello", nil, nil).errD.Code == protocol.CodeTurnAlreadyCompleted
			})
		}
	})
}
