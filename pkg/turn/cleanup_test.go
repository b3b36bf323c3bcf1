package turn_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/turn"
)

// panicModel is a model.Model that panics in Stream (InStream) or in the
// stream's first Recv.
type panicModel struct{ InStream bool }

func (m panicModel) Stream(context.Context, model.Request) (model.Stream, error) {
	if m.InStream {
		panic("model bug: secret detail")
	}
	return panicStream{}, nil
}

type panicStream struct{}

func (panicStream) Recv() (model.Event, error) { panic("stream bug: secret detail") }
func (panicStream) Close() error               { return nil }

// inBubble runs f in a testing/synctest bubble and reports how many
// goroutines it left: f's request is served on the bubble's clock, and
// once f returns every goroutine it started is waited for until it exited
// or is blocked for good (synctest.Wait), so that a goroutine of the
// request still waiting on a timer or a channel counts.
//
// Only the goroutines of bubbles are counted (their tracebacks name their
// bubble): a goroutine an earlier test left outside any bubble, which may
// start or end at any time, does not count. No pkg/turn test runs in
// parallel, so the bubbles are this one's.
func inBubble(t *testing.T, f func(t *testing.T)) (left int) {
	synctest.Test(t, func(t *testing.T) {
		before := bubbleGoroutines()
		f(t)
		synctest.Wait()
		left = bubbleGoroutines() - before
	})
	return left
}

// bubbleGoroutines counts the goroutines whose traceback header names a
// testing/synctest bubble.
func bubbleGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return bytes.Count(buf[:n], []byte(", synctest bubble "))
		}
		buf = make([]byte, 2*len(buf))
	}
}

// TestExitPathsCleanUp runs one turn per exit path through ServeHTTP (no
// server goroutines) and checks the cleanup guarantees of
// docs/design.md#snapshots, docs/design.md#the-turn-pipeline: the stream ends
// with a terminal snapshot or diagnostic (decodeStream also checks contiguous
// sequences and nothing after the terminal line), the lease is released, the
// turn is saved, no internal text reaches the client, and no goroutine of the
// request outlives it.
func TestExitPathsCleanUp(t *testing.T) {
	tests := map[string]struct {
		// model returns the model, made inside the bubble: its channels
		// are then the bubble's own, which its clock waits on.
		model    func() model.Model
		opt      func(*turn.Options)
		wantCode string // the terminal error code; "" for a completed turn
	}{
		"completed":         {model: func() model.Model { return &scriptModel{Chunks: []string{"a", "b"}} }},
		"model error":       {model: func() model.Model { return &scriptModel{Chunks: []string{"a"}, Err: errors.New("secret detail")} }, wantCode: protocol.CodeModelFailed},
		"panic in Stream":   {model: func() model.Model { return panicModel{InStream: true} }, wantCode: protocol.CodeModelFailed},
		"panic in Recv":     {model: func() model.Model { return panicModel{} }, wantCode: protocol.CodeModelFailed},
		"request deadline":  {model: func() model.Model { return &scriptModel{Chunks: []string{"a"}, Hold: make(chan struct{})} }, opt: func(o *turn.Options) { o.TurnTimeout, o.CleanupReserve = 200*time.Millisecond, 150*time.Millisecond }, wantCode: protocol.CodeServerTimeout},
		"many renewals run": {model: func() model.Model { return &scriptModel{Chunks: []string{"a", "b", "c"}, Delay: 20 * time.Millisecond} }, opt: func(o *turn.Options) { o.RenewInterval = 5 * time.Millisecond }},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if left := inBubble(t, func(t *testing.T) { exitPath(t, tc.model(), tc.opt, tc.wantCode) }); left > 0 {
				t.Errorf("%d goroutines of the request outlived it", left)
			}
		})
	}
}

// exitPath serves one turn of model m through ServeHTTP and checks its
// cleanup (TestExitPathsCleanUp).
func exitPath(t *testing.T, m model.Model, opt func(*turn.Options), wantCode string) {
	store := newStoreMemory()
	e := newHandlerEnv(t, store, &scriptModel{}, func(o *turn.Options) {
		o.Model = m
		if opt != nil {
			opt(o)
		}
	})
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(string(submitBody(t, "s", "t1", "hello", nil))))
	req.Header.Set("Content-Type", "application/json")
	e.h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	evs := decodeStream(t, rec.Body.Bytes())
	r := result{status: rec.Code, events: evs, raw: rec.Body.Bytes()}
	term := r.terminal(t)
	switch {
	case wantCode == "" && term.Status != protocol.StatusComplete,
		wantCode != "" && (term.Error == nil || term.Error.Code != wantCode):
		t.Fatalf("want terminal code %q, stream %s", wantCode, r.raw)
	}
	if strings.Contains(string(r.raw), "secret detail") || strings.Contains(e.logs.String(), "secret detail") {
		t.Error("internal error text reached the client or the info log")
	}
	s, err := store.GetSession(context.Background(), "s", alice)
	if err != nil || s.ActiveTurn != nil {
		t.Fatalf("lease not released: %+v %v", s, err)
	}
	stored, err := store.FindTurn(context.Background(), "s", "t1", alice)
	if err != nil {
		t.Fatalf("turn not saved: %v", err)
	}
	var termSeq int64
	for _, ev := range evs {
		if ev.Kind == protocol.EventSnapshot && ev.Snapshot == term {
			termSeq = ev.Sequence
		}
	}
	if stored.FirstSequence != evs[0].Sequence || stored.LastSequence != termSeq {
		t.Errorf("stored sequences %d..%d, stream %d..%d", stored.FirstSequence, stored.LastSequence, evs[0].Sequence, termSeq)
	}
}

// TestLeaseExpiredWithoutRenewal: when renewals keep failing (storage
// unavailable, not a lost lease) the lease runs out, and another turn may
// claim the session. The turn must stop streaming then and save nothing,
// not keep running and saving beside its successor until the request
// deadline (docs/design.md#the-turn-pipeline: the lease is the mutual
// exclusion); its last line is its fate as the table decided it once the
// lease expired (lost), and the session is free.
func TestLeaseExpiredWithoutRenewal(t *testing.T) {
	tests := map[string]struct {
		renewErr error
	}{
		"storage unavailable": {renewErr: errors.New("storage unavailable")},
		"timeout":             {renewErr: context.DeadlineExceeded},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			fs := &failingStore{Store: newStoreMemory(), renewErr: tc.renewErr}
			m := &scriptModel{Chunks: []string{"x"}, Hold: make(chan struct{})}
			e := newEnv(t, fs, m, func(o *turn.Options) {
				o.LeaseDuration, o.RenewInterval = 60*time.Millisecond, 10*time.Millisecond
				o.TurnTimeout, o.CleanupReserve = 3*time.Second, time.Second
			})
			start := time.Now()
			r := e.submit(t, "s", "t1", "hello", nil, nil)
			r.want(t, http.StatusOK, "")
			if !r.lost() {
				t.Fatalf("after %v the stream ends %s", time.Since(start), r.raw)
			}
			if fs.saves.get() != 0 {
				t.Error("a turn whose lease expired was saved")
			}
			close(m.Hold)
			fs.renewErr = nil
			e.submit(t, "s", "t2", "next", nil, nil).want(t, http.StatusOK, "")
		})
	}
}

// TestFailurePathsLeakNoGoroutine: the storage and transport failure exit
// paths end every goroutine of the request (writer, model, timers) by
// the time ServeHTTP returns, give or take their exit.
func TestFailurePathsLeakNoGoroutine(t *testing.T) {
	tests := map[string]struct {
		store  func() *failingStore
		writer func(http.ResponseWriter) http.ResponseWriter
		model  func() *scriptModel // made inside the bubble, its channels the bubble's
		renew  time.Duration
		lease  time.Duration
	}{
		"save fails":  {store: func() *failingStore { return &failingStore{Store: newStoreMemory(), saveErr: errors.New("down")} }},
		"lease lost":  {store: func() *failingStore { return &failingStore{Store: newStoreMemory(), renewErr: chat.ErrLeaseLost} }, model: func() *scriptModel { return &scriptModel{Chunks: []string{"x"}, Hold: make(chan struct{})} }, renew: 5 * time.Millisecond, lease: 200 * time.Millisecond},
		"write fails": {writer: func(w http.ResponseWriter) http.ResponseWriter { return &failAfterWriter{ResponseWriter: w} }, model: func() *scriptModel { return &scriptModel{Chunks: []string{"a", "b", "c"}, Delay: 5 * time.Millisecond} }},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			left := inBubble(t, func(t *testing.T) {
				store := chat.Store(newStoreMemory())
				if tc.store != nil {
					store = tc.store()
				}
				m := &scriptModel{Chunks: []string{"a"}}
				if tc.model != nil {
					m = tc.model()
				}
				e := newHandlerEnv(t, store, m, func(o *turn.Options) {
					if tc.renew > 0 {
						o.RenewInterval = tc.renew
					}
					if tc.lease > 0 {
						o.LeaseDuration = tc.lease
					}
				})
				rec := httptest.NewRecorder()
				var w http.ResponseWriter = rec
				if tc.writer != nil {
					w = tc.writer(rec)
				}
				req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(string(submitBody(t, "s", "t1", "hello", nil))))
				req.Header.Set("Content-Type", "application/json")
				e.h.ServeHTTP(w, req)
				if tc.writer == nil {
					decodeStream(t, rec.Body.Bytes())
				}
			})
			if left > 0 {
				t.Errorf("%d goroutines of the request outlived it", left)
			}
		})
	}
}

// errorWriter is a ResponseWriter whose every Write fails with a text
// that names the peer, as net/http's write errors do.
type errorWriter struct{ *httptest.ResponseRecorder }

func (errorWriter) Write([]byte) (int, error) {
	return 0, errors.New("write tcp 10.0.0.1:443->203.0.113.7:51234: write: broken pipe")
}

// TestWriteFailureLogsNoErrorText: a failed stream write is logged at
// info level without the error's text (it names the client's address),
// which goes to the debug level only.
func TestWriteFailureLogsNoErrorText(t *testing.T) {
	tests := map[string]struct {
		level      slog.Level
		wantDetail bool
	}{
		"info":  {slog.LevelInfo, false},
		"debug": {slog.LevelDebug, true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			logs := &syncBuffer{}
			e := newEnv(t, newStoreMemory(), &scriptModel{Chunks: []string{"a"}}, func(o *turn.Options) {
				o.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: tc.level}))
			})
			req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(string(submitBody(t, "s", "t1", "hello", nil))))
			req.Header.Set("Content-Type", "application/json")
			e.h.ServeHTTP(errorWriter{httptest.NewRecorder()}, req)
			out := logs.String()
			if !strings.Contains(out, "stream write failed") {
				t.Fatalf("no write failure logged: %s", out)
			}
			if got := strings.Contains(out, "203.0.113.7"); got != tc.wantDetail {
				t.Errorf("error text logged %v at level %v, want %v: %s", got, tc.level, tc.wantDetail, out)
			}
		})
	}
}
