package turn_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/dynalite"
	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
	"github.com/turnstream/turnstream/pkg/store/memory"
	"github.com/turnstream/turnstream/pkg/turn"
)

// storeFactory builds an empty store for one test.
type storeFactory struct {
	name string
	new  func(tb testing.TB) chat.Store
}

// storeFactories are the stores the pipeline tests run on.
func storeFactories() []storeFactory { return storeFactoriesAt(nil) }

// storeFactoriesAt is storeFactories with the stores on the clock now
// (nil: real time).
func storeFactoriesAt(now func() time.Time) []storeFactory {
	return []storeFactory{
		{"memory", func(testing.TB) chat.Store { return memory.New(memory.Options{Now: now}) }},
		{"dynalite", func(tb testing.TB) chat.Store {
			tb.Helper()
			client, err := dynamo.NewClient(context.Background(), dynalite.Options(tb))
			if err != nil {
				tb.Fatalf("dynamo client: %v", err)
			}
			return dynamo.New(client, dynamo.Options{Table: dynalite.Table(tb), Now: now, CursorKey: []byte("turn-test-cursor-key-0123456789")})
		}},
	}
}

// TestMain stops the dynalite server the DynamoDB cases started.
func TestMain(m *testing.M) { dynalite.Main(m) }

// forEachStore runs f as a named subtest per store.
func forEachStore(t *testing.T, f func(t *testing.T, newStore func(testing.TB) chat.Store)) {
	t.Helper()
	forEachStoreAt(t, nil, f)
}

// forEachStoreAt is forEachStore with the stores on the clock now (nil:
// real time).
func forEachStoreAt(t *testing.T, now func() time.Time, f func(t *testing.T, newStore func(testing.TB) chat.Store)) {
	t.Helper()
	for _, sf := range storeFactoriesAt(now) {
		t.Run(sf.name, func(t *testing.T) { f(t, sf.new) })
	}
}

// testAuth is a header-only Authenticator: the X-Test-Subject header names
// the subject ("alice" when absent); "nobody" is unauthenticated and
// "banned" forbidden. It counts calls.
type testAuth struct{ calls atomic.Int32 }

func (a *testAuth) Authenticate(r *http.Request) (chat.Principal, error) {
	a.calls.Add(1)
	switch s := r.Header.Get("X-Test-Subject"); s {
	case "":
		return chat.Principal{Subject: "alice", Tenant: "t"}, nil
	case "nobody":
		return chat.Principal{}, fmt.Errorf("no credential: %w", auth.ErrUnauthenticated)
	case "banned":
		return chat.Principal{}, fmt.Errorf("no tenant: %w", auth.ErrForbidden)
	default:
		return chat.Principal{Subject: s, Tenant: "t"}, nil
	}
}

// scriptModel is a scripted model.Model: each call streams Chunks as text
// deltas, Delay apart, then Usage, then ends with Err (io.EOF when nil).
// It honours context cancellation and counts calls.
type scriptModel struct {
	Chunks []string
	Delay  time.Duration
	Usage  *protocol.Usage
	Err    error
	// Hold, when set, blocks each call before its first delta until it is
	// closed (or the call's context ends).
	Hold chan struct{}
	// Started, when set, receives one value per call once it started.
	Started chan struct{}
	// Finished, when set, is closed when a call returned its last event.
	Finished chan struct{}
	// Reached, when set, is closed when a call has returned chunk
	// ReachedAt (counted from 1).
	Reached    chan struct{}
	ReachedAt  int
	reachOnce  sync.Once
	finishOnce sync.Once

	calls atomic.Int32
	mu    sync.Mutex
	reqs  []model.Request
}

// requests returns the requests of every call so far.
func (m *scriptModel) requests() []model.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]model.Request(nil), m.reqs...)
}

func (m *scriptModel) Stream(ctx context.Context, req model.Request) (model.Stream, error) {
	m.calls.Add(1)
	m.mu.Lock()
	m.reqs = append(m.reqs, req)
	m.mu.Unlock()
	if m.Started != nil {
		m.Started <- struct{}{}
	}
	return &scriptStream{m: m, ctx: ctx}, nil
}

// Calls returns how many times Stream was called.
func (m *scriptModel) Calls() int { return int(m.calls.Load()) }

// LastRequest returns the last request.
func (m *scriptModel) LastRequest() model.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reqs[len(m.reqs)-1]
}

type scriptStream struct {
	m      *scriptModel
	ctx    context.Context
	i      int
	held   bool
	usage  bool
	closed atomic.Bool
}

func (s *scriptStream) wait(d time.Duration, ch <-chan struct{}) error {
	var tc <-chan time.Time
	if ch == nil {
		if d <= 0 {
			return s.ctx.Err()
		}
		t := time.NewTimer(d)
		defer t.Stop()
		tc = t.C
	}
	select {
	case <-s.ctx.Done():
		return s.ctx.Err()
	case <-ch:
	case <-tc:
	}
	return nil
}

func (s *scriptStream) Recv() (model.Event, error) {
	if s.closed.Load() {
		return model.Event{}, errors.New("closed")
	}
	if !s.held && s.m.Hold != nil {
		s.held = true
		if err := s.wait(0, s.m.Hold); err != nil {
			return model.Event{}, err
		}
	}
	if s.i < len(s.m.Chunks) {
		if s.i > 0 {
			if err := s.wait(s.m.Delay, nil); err != nil {
				return model.Event{}, err
			}
		}
		s.i++
		if s.m.Reached != nil && s.i == s.m.ReachedAt {
			s.m.reachOnce.Do(func() { close(s.m.Reached) })
		}
		return model.Event{TextDelta: s.m.Chunks[s.i-1]}, nil
	}
	if !s.usage {
		s.usage = true
		u := protocol.Usage{PromptTokens: 3, CompletionTokens: int64(len(s.m.Chunks)), TotalTokens: 3 + int64(len(s.m.Chunks))}
		if s.m.Usage != nil {
			u = *s.m.Usage
		}
		return model.Event{Usage: &u, FinishReason: model.FinishStop}, nil
	}
	if s.m.Finished != nil {
		s.m.finishOnce.Do(func() { close(s.m.Finished) })
	}
	if s.m.Err != nil {
		return model.Event{}, s.m.Err
	}
	return model.Event{}, io.EOF
}

func (s *scriptStream) Close() error { s.closed.Store(true); return nil }

// env is a handler under test with its collaborators.
type env struct {
	store chat.Store
	model *scriptModel
	auth  *testAuth
	logs  *syncBuffer
	// deleteTool is the approval tests' tool that requires approval (approvalEnvWith).
	deleteTool string
	srv        *httptest.Server
	h          http.Handler
}

// syncBuffer is a goroutine-safe log sink.
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

// newEnv builds a handler over store with m, tuned by opt, and serves it
// with a real HTTP server (chunked streaming).
func newEnv(t testing.TB, store chat.Store, m *scriptModel, opt func(*turn.Options)) *env {
	t.Helper()
	e := newHandlerEnv(t, store, m, opt)
	e.srv = httptest.NewServer(e.h)
	t.Cleanup(e.srv.Close)
	return e
}

// newHandlerEnv is newEnv without its server (e.srv nil): for tests that
// call e.h.ServeHTTP themselves, in a testing/synctest bubble.
func newHandlerEnv(t testing.TB, store chat.Store, m *scriptModel, opt func(*turn.Options)) *env {
	t.Helper()
	e := &env{store: store, model: m, auth: &testAuth{}, logs: &syncBuffer{}}
	opts := turn.Options{
		Config: turn.Config{
			Store:                  store,
			Model:                  m,
			Definition:             turn.Definition{ID: "default", Revision: 1, SystemPrompt: "Be brief.", ModelID: "test-model"},
			SnapshotInterval:       time.Millisecond,
			SnapshotBytesPerSecond: 1 << 40,
			// Generous: a test that waits for a deadline sets its own.
			// A loaded machine with a busy dynalite must not run out of
			// these (make test beside two CPU hogs once needed 12 s for a
			// stopped turn to save).
			TurnTimeout:    30 * time.Second,
			CleanupReserve: 10 * time.Second,
			Logger:         slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
		},
		Authenticator: e.auth,
	}
	if opt != nil {
		opt(&opts)
	}
	opts.Store = watched{opts.Store}
	h, err := turn.NewHandler(opts)
	if err != nil {
		t.Fatalf("NewHandler: %v", err)
	}
	e.h = h
	return e
}

// submitBody encodes a client.turn.submit event.
func submitBody(tb testing.TB, sessionID, turnID, input string, lineage *protocol.Lineage) []byte {
	tb.Helper()
	b, err := protocol.EncodeEvent(&protocol.Event{
		EventID: "ev-submit", SessionID: sessionID, TurnID: turnID, Sequence: 0,
		EmittedAt: "2026-07-11T03:00:00.000Z", Kind: protocol.EventSubmit,
		Submit: &protocol.SubmitPayload{Input: input, Lineage: lineage},
	})
	if err != nil {
		tb.Fatalf("encode submit: %v", err)
	}
	return b
}

// post sends body to path with a JSON content type and extra headers.
//
// Without a server (newHandlerEnv) the handler serves it directly into a
// recorder: the whole response, as a testing/synctest bubble needs.
func (e *env) post(tb testing.TB, ctx context.Context, path string, body []byte, hdr map[string]string) *http.Response {
	tb.Helper()
	if e.srv == nil {
		req := httptest.NewRequestWithContext(ctx, http.MethodPost, path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		return rec.Result()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		tb.Fatalf("POST %s: %v", path, err)
	}
	return resp
}

// result is a finished response: status, headers and, for 200, the
// decoded stream; otherwise the JSON error.
type result struct {
	status int
	header http.Header
	events []*protocol.Event
	raw    []byte
	errD   protocol.Diagnostic
}

// submit posts a turn and reads the whole response.
func (e *env) submit(tb testing.TB, sessionID, turnID, input string, lineage *protocol.Lineage, hdr map[string]string) result {
	tb.Helper()
	resp := e.post(tb, context.Background(), "/", submitBody(tb, sessionID, turnID, input, lineage), hdr)
	return readResult(tb, resp)
}

// readResult reads resp fully; a 200 body must be a valid stream.
func readResult(tb testing.TB, resp *http.Response) result {
	tb.Helper()
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("read body: %v", err)
	}
	r := result{status: resp.StatusCode, header: resp.Header, raw: raw}
	if resp.StatusCode == http.StatusOK {
		r.events = decodeStream(tb, raw)
	} else {
		r.errD = decodeErrorBody(tb, raw)
	}
	return r
}

// decodeErrorBody decodes {"error":{...}}.
func decodeErrorBody(tb testing.TB, raw []byte) protocol.Diagnostic {
	tb.Helper()
	var body struct {
		Error protocol.Diagnostic `json:"error"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		tb.Fatalf("error body %q: %v", raw, err)
	}
	return body.Error
}

// decodeStream decodes every NDJSON line with protocol.DecodeTurnEvent
// and checks the stream invariants: sequences contiguous, snapshots
// before the last line streaming, the last line terminal. The last line
// may leave the contiguous run in two ways: the record of a turn the
// table decided lost (its TURN_LOST terminal snapshot or diagnostic, at
// its own terminal sequence, above every line of the turn), and a
// diagnostic that is no state of the turn (an outcome the table did not
// confirm, a resume's own ending), at sequence 0.
func decodeStream(tb testing.TB, raw []byte) []*protocol.Event {
	tb.Helper()
	if len(raw) == 0 || raw[len(raw)-1] != '\n' {
		tb.Fatalf("stream does not end with a newline: %q", raw)
	}
	var evs []*protocol.Event
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		ev, d := protocol.DecodeTurnEvent(sc.Bytes())
		if d != nil {
			tb.Fatalf("line %d does not decode: %+v: %s", len(evs)+1, *d, sc.Bytes())
		}
		if n := len(evs); n > 0 && ev.Sequence != evs[n-1].Sequence+1 && !outOfRun(ev, evs[n-1]) {
			tb.Fatalf("sequence %d follows %d", ev.Sequence, evs[n-1].Sequence)
		}
		if n := len(evs); n > 0 && outOfRun(evs[n-1], evs[max(n-2, 0)]) && evs[n-1].Sequence != evs[max(n-2, 0)].Sequence+1 {
			tb.Fatalf("a line follows the out-of-run line at sequence %d", evs[n-1].Sequence)
		}
		evs = append(evs, ev)
	}
	if len(evs) == 0 {
		tb.Fatal("empty stream")
	}
	for i, ev := range evs[:len(evs)-1] {
		if ev.Kind == protocol.EventSnapshot && ev.Snapshot.Status != protocol.StatusStreaming && !isTerminalBeforeTrailer(evs, i) {
			tb.Fatalf("line %d has status %q before the end", i+1, ev.Snapshot.Status)
		}
	}
	last := evs[len(evs)-1]
	if last.Kind == protocol.EventSnapshot && last.Snapshot.Status == protocol.StatusStreaming {
		tb.Fatal("stream ends with a streaming snapshot")
	}
	return evs
}

// outOfRun reports whether ev, following prev, may leave the contiguous
// run of sequences: a lost turn's record above it, or a diagnostic at 0.
func outOfRun(ev, prev *protocol.Event) bool {
	switch {
	case ev.Kind == protocol.EventDiagnostic && ev.Sequence == 0:
		return true
	case ev.Sequence <= prev.Sequence:
		return false
	case ev.Kind == protocol.EventDiagnostic:
		return ev.Diagnostic.Code == protocol.CodeTurnLost
	}
	return ev.Snapshot.Error != nil && ev.Snapshot.Error.Code == protocol.CodeTurnLost
}

// isTerminalBeforeTrailer: a terminal snapshot may be followed by one
// trailing diagnostic.
func isTerminalBeforeTrailer(evs []*protocol.Event, i int) bool {
	return i == len(evs)-2 && evs[i+1].Kind == protocol.EventDiagnostic
}

// terminal returns the stream's terminal snapshot, failing if none.
func (r result) terminal(tb testing.TB) *protocol.SnapshotPayload {
	tb.Helper()
	for i := len(r.events) - 1; i >= 0; i-- {
		if ev := r.events[i]; ev.Kind == protocol.EventSnapshot && ev.Snapshot.Status != protocol.StatusStreaming {
			return ev.Snapshot
		}
	}
	tb.Fatalf("no terminal snapshot in %s", r.raw)
	return nil
}

// lost reports whether the stream ends with the record of a turn the
// table decided lost: its terminal snapshot with TURN_LOST (a turn that
// checkpointed), or the TURN_LOST diagnostic (one with nothing recorded).
func (r result) lost() bool {
	last := r.last()
	if last.Kind == protocol.EventDiagnostic {
		return last.Diagnostic.Code == protocol.CodeTurnLost
	}
	return last.Snapshot.Status == protocol.StatusError && last.Snapshot.Error != nil && last.Snapshot.Error.Code == protocol.CodeTurnLost
}

// last returns the stream's last event.
func (r result) last() *protocol.Event { return r.events[len(r.events)-1] }

// wantStatus fails unless r has status and, for errors, code.
func (r result) want(tb testing.TB, status int, code string) {
	tb.Helper()
	if r.status != status {
		tb.Fatalf("status %d (body %s), want %d", r.status, r.raw, status)
	}
	if code != "" && r.errD.Code != code {
		tb.Fatalf("code %q, want %q", r.errD.Code, code)
	}
}

// alice is the default test principal.
var alice = chat.Principal{Subject: "alice", Tenant: "t"}

// waitFor waits until cond holds, reading it again after each change
// the handlers' stores, the stream readers and the tests' hooks report
// (changes); no wait polls. It fails after a minute: a bound for a hang,
// never a pace (a loaded machine is slow, not wrong).
func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	woken, done := changes.subscribe()
	defer done()
	bound := time.NewTimer(time.Minute)
	defer bound.Stop()
	for !cond() {
		select {
		case <-woken:
		case <-bound.C:
			tb.Fatalf("no change made %s hold within a minute", what)
		}
	}
}

// changes tells the waits (waitFor) that something they may be waiting
// for changed: a write to a handler's store (watched), a line read from a
// stream, a test hook's call.
var changes = &signal{waiters: make(map[chan struct{}]struct{})}

// signal wakes its subscribers. Its channels are made by the subscriber,
// outside any testing/synctest bubble, so a bubble's goroutines may fire
// it.
type signal struct {
	mu      sync.Mutex
	waiters map[chan struct{}]struct{}
}

// subscribe returns a channel that receives after each fire (at most one
// pending), and the func that ends the subscription.
func (s *signal) subscribe() (<-chan struct{}, func()) {
	c := make(chan struct{}, 1)
	s.mu.Lock()
	s.waiters[c] = struct{}{}
	s.mu.Unlock()
	return c, func() {
		s.mu.Lock()
		delete(s.waiters, c)
		s.mu.Unlock()
	}
}

// fire wakes every subscriber; it never blocks.
func (s *signal) fire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.waiters {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

// watched is the store a test handler writes to: each write fires changes
// when it returns (applied or not), so waits read their condition again.
// Reads pass through unwatched: a wait's own reads wake nobody.
type watched struct{ chat.Store }

func fired[T any](v T, err error) (T, error) {
	changes.fire()
	return v, err
}

func (w watched) ClaimTurn(ctx context.Context, req chat.ClaimRequest) (*chat.Claim, error) {
	return fired(w.Store.ClaimTurn(ctx, req))
}

func (w watched) RenewLease(ctx context.Context, req chat.RenewRequest) (*chat.Lease, error) {
	return fired(w.Store.RenewLease(ctx, req))
}

func (w watched) RequestStop(ctx context.Context, sessionID, turnID string, p chat.Principal) error {
	defer changes.fire()
	return w.Store.RequestStop(ctx, sessionID, turnID, p)
}

func (w watched) AbandonLease(ctx context.Context, c *chat.Claim) error {
	defer changes.fire()
	return w.Store.AbandonLease(ctx, c)
}

func (w watched) WithdrawClaim(ctx context.Context, c *chat.Claim) (bool, error) {
	return fired(w.Store.WithdrawClaim(ctx, c))
}

func (w watched) ReleaseTurn(ctx context.Context, req chat.ReleaseRequest) (*chat.Session, error) {
	return fired(w.Store.ReleaseTurn(ctx, req))
}

func (w watched) Checkpoint(ctx context.Context, c *chat.Claim, cp *chat.Checkpoint) (bool, error) {
	return fired(w.Store.Checkpoint(ctx, c, cp))
}

func (w watched) SaveTurn(ctx context.Context, c *chat.Claim, t *chat.Turn) error {
	defer changes.fire()
	return w.Store.SaveTurn(ctx, c, t)
}

func (w watched) Supersede(ctx context.Context, c *chat.Claim, from, to int64) (*chat.Siblings, error) {
	defer changes.fire()
	return w.Store.Supersede(ctx, c, from, to)
}

func (w watched) PutArtifacts(ctx context.Context, sessionID, turnID string, p chat.Principal, refs []chat.ArtifactReference) ([]chat.ArtifactReference, error) {
	return fired(w.Store.PutArtifacts(ctx, sessionID, turnID, p, refs))
}

func (w watched) EnqueueTurn(ctx context.Context, req chat.EnqueueRequest) (*chat.Enqueued, error) {
	return fired(w.Store.EnqueueTurn(ctx, req))
}

func (w watched) ClaimQueued(ctx context.Context, sessionID string, lease time.Duration) (*chat.Claim, *chat.QueuedTurn, error) {
	defer changes.fire()
	return w.Store.ClaimQueued(ctx, sessionID, lease)
}

func (w watched) CancelQueued(ctx context.Context, sessionID, turnID string, p chat.Principal) error {
	defer changes.fire()
	return w.Store.CancelQueued(ctx, sessionID, turnID, p)
}

func (w watched) RecordUsage(ctx context.Context, le chat.LedgerEntry) error {
	defer changes.fire()
	return w.Store.RecordUsage(ctx, le)
}

func (w watched) Admit(ctx context.Context, req chat.AdmitRequest) (*chat.PrincipalUsage, error) {
	return fired(w.Store.Admit(ctx, req))
}

func (w watched) CancelAdmission(ctx context.Context, p chat.Principal, a chat.Admission) error {
	defer changes.fire()
	return w.Store.CancelAdmission(ctx, p, a)
}

// messagesJSON renders messages for comparison.
func messagesJSON(tb testing.TB, msgs []protocol.Message) string {
	tb.Helper()
	b, err := json.Marshal(msgs)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

var _ = strings.Contains
