package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/dynalite"
	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/model/echo"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/sessionapi"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
	"github.com/turnstream/turnstream/pkg/store/memory"
	"github.com/turnstream/turnstream/pkg/turn"
)

func TestMain(m *testing.M) { dynalite.Main(m) }

// devURLs are the three base URLs of a test deployment.
type devURLs struct{ turn, history, artifacts string }

// devWiring serves the three handlers as the dev server wires them (dev
// auth with trusted subject "host", the echo model, one store shared by
// all three), each behind its own URL as behind a function URL; wrap, when
// not nil, wraps the turn handler (a deliberately broken server).
func devWiring(t *testing.T, store chat.Store, wrap func(http.Handler) http.Handler) devURLs {
	t.Helper()
	authn, err := auth.New(context.Background(), config.AuthConfig{Mode: config.AuthDev, TrustedSubject: "host"},
		auth.WithLookupEnv(func(string) (string, bool) { return "", false }))
	if err != nil {
		t.Fatal(err)
	}
	// The echo model, its long conformance turns held after their first
	// chunk until the conformance run has done what it does "while the turn
	// streams" (gatedModel); the stop is seen at the next checkpoint
	// (20 ms). Renewals come every 500 ms: every renewal moves the session
	// item's revision, and an enqueue's compare-and-set on it (a read, a
	// put and the write, a few round trips) lost ten races in a row to
	// renewals every 50 ms on a machine under two CPU hogs (409
	// SESSION_CONFLICT, make test loop run 1 at efe6404).
	gm := &gatedModel{inner: echo.New(time.Millisecond, 4), gate: make(chan struct{}, 1)}
	th, err := turn.NewHandler(turn.Options{
		Config: turn.Config{
			Store:              store,
			Model:              gm,
			Definition:         turn.Definition{ID: "default", Revision: 1},
			LeaseDuration:      3 * time.Second,
			RenewInterval:      500 * time.Millisecond,
			Logger:             slog.New(slog.DiscardHandler),
			CheckpointInterval: 20 * time.Millisecond,
			ResumePollInterval: 10 * time.Millisecond,
		},
		Authenticator: authn,
	})
	if err != nil {
		t.Fatal(err)
	}
	h := gm.releaseOnBusy(th)
	if wrap != nil {
		h = wrap(h)
	}
	opts := sessionapi.Options{Store: store, Authenticator: authn, Logger: slog.New(slog.DiscardHandler)}
	hh, err := sessionapi.NewHistoryHandler(opts)
	if err != nil {
		t.Fatal(err)
	}
	ah, err := sessionapi.NewArtifactsHandler(opts)
	if err != nil {
		t.Fatal(err)
	}
	var u devURLs
	for _, s := range []struct {
		h   http.Handler
		dst *string
	}{{h, &u.turn}, {hh, &u.history}, {ah, &u.artifacts}} {
		srv := httptest.NewServer(s.h)
		t.Cleanup(srv.Close)
		*s.dst = srv.URL + "/"
	}
	return u
}

// gatedModel wraps a model so that a turn whose input is conform's long
// input pauses after its first event until the gate opens or the turn's
// context ends (a stop). releaseOnBusy opens the gate once a second submit
// has been refused with SESSION_BUSY. So the concurrent submit and the stop
// always meet a running turn, however slow the machine: nothing depends on
// how long the turn takes.
type gatedModel struct {
	inner model.Model
	gate  chan struct{}
}

func (g *gatedModel) Stream(ctx context.Context, req model.Request) (model.Stream, error) {
	st, err := g.inner.Stream(ctx, req)
	if err != nil {
		return nil, err
	}
	last, _ := model.LastUserContent(req.Messages)
	return &gatedStream{Stream: st, ctx: ctx, gate: g.gate, held: last == longInput}, nil
}

// releaseOnBusy opens the gate after h answers 409 SESSION_BUSY, or 202
// (a turn queued behind the held one).
func (g *gatedModel) releaseOnBusy(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w}
		h.ServeHTTP(rec, r)
		if rec.status == http.StatusConflict && bytes.Contains(rec.body, []byte(protocol.CodeSessionBusy)) || rec.status == http.StatusAccepted {
			select {
			case g.gate <- struct{}{}:
			default:
			}
		}
	})
}

type gatedStream struct {
	model.Stream
	ctx      context.Context
	gate     chan struct{}
	held     bool
	received int
}

func (s *gatedStream) Recv() (model.Event, error) {
	if s.held && s.received == 1 {
		select {
		case <-s.gate:
		case <-s.ctx.Done():
			return model.Event{}, s.ctx.Err()
		}
	}
	s.received++
	return s.Stream.Recv()
}

// statusRecorder keeps the status and the first bytes of an answer.
type statusRecorder struct {
	http.ResponseWriter
	status int
	body   []byte
}

func (w *statusRecorder) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusRecorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if len(w.body) < 4096 {
		w.body = append(w.body, b[:min(len(b), 4096-len(w.body))]...)
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusRecorder) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func conformArgs(u devURLs) []string {
	return []string{"conform", "-turn", u.turn, "-history", u.history, "-artifacts", u.artifacts,
		"-token", "dev.alice", "-trusted-token", "dev.host", "-timeout", "1m"}
}

// rows parses the conformance table into check -> outcome.
func rows(t *testing.T, out string) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && (f[1] == checkPass || f[1] == checkFail || f[1] == checkSkip) {
			got[f[0]] = f[1]
		}
	}
	if len(got) == 0 {
		t.Fatalf("no table in:\n%s", out)
	}
	return got
}

// mandatory are the checks that must pass against a turnstream deployment
// (resume and approvals have no check yet and are skipped).
var mandatory = []string{
	"capabilities", "stream.headers", "stream.decode", "stream.identity", "stream.cursor", "stream.terminal-last",
	"turn.complete", "replay", "errors.shape", "errors.no-echo", "history.isomorphism", "snapshot-scope", "submit.concurrent", "stop",
	"history.pagination", "artifacts.dedupe", "compact", "agui",
	"multitask.reject", "multitask.enqueue", "multitask.interrupt", "multitask.rollback",
}

func TestConformDevWiring(t *testing.T) {
	stores := map[string]func(t *testing.T) chat.Store{
		"memory": func(*testing.T) chat.Store { return memory.New(memory.Options{}) },
		"dynalite": func(t *testing.T) chat.Store {
			client, err := dynamo.NewClient(t.Context(), dynalite.Options(t))
			if err != nil {
				t.Fatal(err)
			}
			table := dynalite.Table(t)
			return dynamo.New(client, dynamo.Options{Table: table, CursorKey: []byte("conform-test-cursor-key-0123456789")})
		},
	}
	for name, newStore := range stores {
		t.Run(name, func(t *testing.T) {
			u := devWiring(t, newStore(t), nil)
			code, out, errOut := runTurnctl(conformArgs(u), "")
			t.Logf("turnctl conform (%s):\n%s", name, out)
			if code != 0 {
				t.Errorf("exit %d, stderr %q", code, errOut)
			}
			got := rows(t, out)
			for _, check := range mandatory {
				if got[check] != checkPass {
					t.Errorf("%s: %s, want pass", check, got[check])
				}
			}
			for _, check := range []string{"resume", "approvals"} {
				if got[check] != checkSkip {
					t.Errorf("%s: %s, want skipped (not advertised)", check, got[check])
				}
			}
			if !strings.Contains(out, "TURN_INTERRUPTED") {
				t.Errorf("the stop row does not show the turn ending interrupted:\n%s", out)
			}
		})
	}
}

// lineRewriter passes a streamed body through rewrite one line at a time,
// flushing after each, so that a broken server still streams.
type lineRewriter struct {
	http.ResponseWriter
	rewrite func(line []byte) [][]byte
	buf     []byte
}

func (w *lineRewriter) Write(p []byte) (int, error) {
	if !strings.HasPrefix(w.Header().Get("Content-Type"), "application/x-ndjson") {
		return w.ResponseWriter.Write(p)
	}
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := w.buf[:i]
		for _, out := range w.rewrite(line) {
			if _, err := w.ResponseWriter.Write(append(append([]byte(nil), out...), '\n')); err != nil {
				return 0, err
			}
		}
		w.buf = w.buf[i+1:]
		w.Flush()
	}
}

func (w *lineRewriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// rewriting wraps a turn handler so that rewrite sees each stream line;
// newRewrite is called once per request.
func rewriting(newRewrite func() func([]byte) [][]byte) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.ServeHTTP(&lineRewriter{ResponseWriter: w, rewrite: newRewrite()}, r)
		})
	}
}

// TestConformBrokenServers runs conform against servers broken in one way
// each: it must exit 1 and fail exactly the check that covers the fault.
func TestConformBrokenServers(t *testing.T) {
	tests := map[string]struct {
		wrap  func(http.Handler) http.Handler
		fails []string
	}{
		"a snapshot sent twice (duplicate sequence)": {
			wrap: rewriting(func() func([]byte) [][]byte {
				n := 0
				return func(line []byte) [][]byte {
					n++
					if n == 1 {
						return [][]byte{line, line}
					}
					return [][]byte{line}
				}
			}),
			fails: []string{"stream.cursor"},
		},
		"error bodies that echo the request": {
			wrap: func(h http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.Method == http.MethodGet && r.URL.RawQuery != "" {
						w.Header().Set("Content-Type", "application/json")
						w.Header().Set("Cache-Control", "no-store")
						w.WriteHeader(http.StatusMethodNotAllowed)
						_, _ = io.WriteString(w, `{"error":{"version":1,"code":"REQUEST_METHOD_NOT_ALLOWED","message":"no GET for `+r.URL.RawQuery+`","retryable":false}}`)
						return
					}
					h.ServeHTTP(w, r)
				})
			},
			fails: []string{"errors.no-echo"},
		},
		"a stream that just stops": {
			wrap: rewriting(func() func([]byte) [][]byte {
				return func(line []byte) [][]byte {
					ev, diag := protocol.DecodeTurnEvent(line)
					if diag == nil && isTerminalEvent(ev) {
						return nil // the terminal line is never sent
					}
					return [][]byte{line}
				}
			}),
			// Everything that needs a turn to end says so.
			fails: []string{"stream.terminal-last", "turn.complete", "history.isomorphism", "submit.concurrent", "stop", "history.pagination", "compact",
				"multitask.reject", "multitask.enqueue", "multitask.interrupt", "multitask.rollback"},
		},
		"the snapshot scope header ignored": {
			wrap: func(h http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					r.Header.Del("X-Turnstream-Snapshot-Scope")
					h.ServeHTTP(w, r)
				})
			},
			// The turn-scoped turn carries the whole session, and an unknown
			// scope is not refused.
			fails: []string{"snapshot-scope", "errors.shape"},
		},
		"a snapshot of another session": {
			wrap: rewriting(func() func([]byte) [][]byte {
				return func(line []byte) [][]byte {
					return [][]byte{bytes.Replace(line, []byte(`"sessionId":"conform-`), []byte(`"sessionId":"other-`), 1)}
				}
			}),
			// The compact stream's first snapshot is another session's: its
			// append lines then apply to nothing; the queued turn's stream,
			// followed as the client follows it, shows nothing of its turn.
			fails: []string{"stream.identity", "stream.cursor", "compact", "multitask.enqueue"},
		},
	}
	tests["the multitask header ignored"] = struct {
		wrap  func(http.Handler) http.Handler
		fails []string
	}{
		wrap: func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				r.Header.Del(api.MultitaskHeader)
				h.ServeHTTP(w, r)
			})
		},
		// reject is what a server without the header does.
		fails: []string{"multitask.enqueue", "multitask.interrupt", "multitask.rollback"},
	}
	tests["rollback served as interrupt"] = struct {
		wrap  func(http.Handler) http.Handler
		fails []string
	}{
		wrap: func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get(api.MultitaskHeader) == api.MultitaskRollback {
					r.Header.Set(api.MultitaskHeader, api.MultitaskInterrupt)
				}
				h.ServeHTTP(w, r)
			})
		},
		fails: []string{"multitask.rollback"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			u := devWiring(t, memory.New(memory.Options{}), tc.wrap)
			code, out, _ := runTurnctl(conformArgs(u), "")
			if code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			got := rows(t, out)
			for check, outcome := range got {
				wantFail := false
				for _, f := range tc.fails {
					wantFail = wantFail || f == check
				}
				if wantFail != (outcome == checkFail) {
					t.Errorf("%s: %s (want fail: %v)", check, outcome, wantFail)
				}
			}
			if t.Failed() {
				t.Logf("output:\n%s", out)
			}
		})
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and concurrent
// readers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestConformPrintsRowsAsTheyRun: each row is on stdout when its check
// ends, before the next checks have sent anything: the table of the checks
// that ran is there when the multitask checks start.
func TestConformPrintsRowsAsTheyRun(t *testing.T) {
	var out syncBuffer
	var seen string
	var once sync.Once
	u := devWiring(t, memory.New(memory.Options{}), func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get(api.MultitaskHeader) != "" {
				once.Do(func() { seen = out.String() })
			}
			h.ServeHTTP(w, r)
		})
	})
	code := run(conformArgs(u), strings.NewReader(""), &out, io.Discard)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out.String())
	}
	for _, row := range []string{"CHECK  ", "\ncapabilities ", "\nstream.headers ", "\nagui "} {
		if !strings.Contains(seen, row) {
			t.Errorf("when the multitask checks started, stdout held %q, without %q", seen, row)
		}
	}
	if strings.Contains(seen, "multitask.") || strings.Contains(seen, " passed, ") {
		t.Errorf("stdout held rows of checks not run yet: %q", seen)
	}
}

// TestConformJSON: -json prints the same rows as one JSON object, for
// scripts; the broken server's failure shows there too.
func TestConformJSON(t *testing.T) {
	u := devWiring(t, memory.New(memory.Options{}), rewriting(func() func([]byte) [][]byte {
		n := 0
		return func(line []byte) [][]byte {
			if n++; n == 1 {
				return [][]byte{line, line}
			}
			return [][]byte{line}
		}
	}))
	code, out, _ := runTurnctl(append(conformArgs(u), "-json"), "")
	var got struct {
		Checks []struct {
			Check, Result, Detail string
		}
		Passed, Failed, Skipped int
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("-json output is not one JSON object: %v\n%s", err, out)
	}
	failed := map[string]bool{}
	for _, c := range got.Checks {
		if c.Result == checkFail {
			failed[c.Check] = true
		}
	}
	if code != 1 || got.Failed != 1 || !failed["stream.cursor"] || got.Passed+got.Failed+got.Skipped != len(got.Checks) {
		t.Errorf("exit %d, %+v; want 1 and stream.cursor the one failure", code, got)
	}
}

func TestConformUsage(t *testing.T) {
	for name, args := range map[string][]string{
		"no URLs":        {"conform"},
		"no history":     {"conform", "-turn", "http://127.0.0.1:1/"},
		"not a URL":      {"conform", "-turn", "ftp://x/", "-history", "http://127.0.0.1:1/"},
		"stray argument": {"conform", "-turn", "http://127.0.0.1:1/", "-history", "http://127.0.0.1:1/", "x"},
	} {
		t.Run(name, func(t *testing.T) {
			if code, _, _ := runTurnctl(args, ""); code != 2 {
				t.Errorf("exit %d, want 2", code)
			}
		})
	}
}
