package turn_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/turn"
)

var compactHeader = map[string]string{api.StreamModeHeader: "compact"}

// compactRead is a compact stream read whole: its lines, and how a
// CompactCursor and an AgentsKit-style SnapshotCursor (which ignores the
// append lines) ended.
type compactRead struct {
	header  http.Header
	lines   [][]byte
	appends int
	snaps   int
	compact *protocol.CompactCursor
	plain   *protocol.SnapshotCursor
}

// readCompact reads a 200 compact stream of session sessionID line by
// line, calling onLine (when set) after each, and feeds each line to both
// cursors. Every line must be a turn event an AgentsKit decoder takes, or
// an append line it reports as an unknown kind; no line may be a gap or a
// malformed append.
func readCompact(t *testing.T, sessionID string, resp *http.Response, onLine ...func(line []byte)) compactRead {
	t.Helper()
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, raw)
	}
	r := compactRead{header: resp.Header}
	r.compact, _ = protocol.NewCompactCursor(sessionID)
	r.plain, _ = protocol.NewSnapshotCursor(sessionID)
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadBytes('\n')
		if err == io.EOF && len(line) == 0 {
			break
		}
		if err != nil {
			t.Fatalf("the stream ended inside a line (%v): %q", err, line)
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		r.lines = append(r.lines, line)
		ev, d := protocol.DecodeTurnEvent(line)
		switch {
		case d != nil && d.Code == protocol.CodeProtocolUnknownEvent && protocol.IsAppendLine(line):
			r.appends++
		case d != nil:
			t.Fatalf("line does not decode: %+v: %s", *d, line)
		case ev.Kind == protocol.EventSnapshot:
			r.snaps++
		}
		if _, err := r.compact.Apply(line); err != nil {
			t.Fatalf("compact cursor: %v at %s", err, line)
		}
		r.plain.Apply(line)
		for _, f := range onLine {
			f(line)
		}
	}
	if len(r.lines) == 0 {
		t.Fatal("an empty stream")
	}
	return r
}

// gatedModel streams Parts[0], waits for gates[0] (or the call's
// context), streams Parts[1], and so on, Delay apart, then usage.
type gatedModel struct {
	Parts [][]string
	Delay time.Duration
	gates []chan struct{}
}

func newGatedModel(delay time.Duration, parts ...[]string) *gatedModel {
	m := &gatedModel{Parts: parts, Delay: delay}
	for range len(parts) - 1 {
		m.gates = append(m.gates, make(chan struct{}))
	}
	return m
}

func (m *gatedModel) Stream(ctx context.Context, _ model.Request) (model.Stream, error) {
	var evs []func() (model.Event, error)
	wait := func(ch <-chan struct{}) func() (model.Event, error) {
		return func() (model.Event, error) {
			select {
			case <-ctx.Done():
				return model.Event{}, ctx.Err()
			case <-ch:
			}
			return model.Event{}, nil
		}
	}
	for i, part := range m.Parts {
		if i > 0 {
			evs = append(evs, wait(m.gates[i-1]))
		}
		for _, s := range part {
			evs = append(evs, func() (model.Event, error) {
				select {
				case <-ctx.Done():
					return model.Event{}, ctx.Err()
				case <-time.After(m.Delay):
				}
				return model.Event{TextDelta: s}, nil
			})
		}
	}
	evs = append(evs, func() (model.Event, error) {
		return model.Event{Usage: &protocol.Usage{PromptTokens: 2, CompletionTokens: 40, TotalTokens: 42}, FinishReason: model.FinishStop}, nil
	})
	return &funcStream{evs: evs}, nil
}

type funcStream struct{ evs []func() (model.Event, error) }

func (s *funcStream) Recv() (model.Event, error) {
	if len(s.evs) == 0 {
		return model.Event{}, io.EOF
	}
	f := s.evs[0]
	s.evs = s.evs[1:]
	return f()
}

func (s *funcStream) Close() error { return nil }

// TestCompactStream: a compact stream opens and ends with complete
// snapshots and carries the text between them in append lines; a compact
// client and an AgentsKit client that ignores the append lines end with
// the same state, the terminal snapshot's, which is also what was saved.
func TestCompactStream(t *testing.T) {
	forEachStore(t, func(t *testing.T, newStore func(testing.TB) chat.Store) {
		// The model waits after its first words until the client has seen
		// an append line, so the stream has one whatever the machine's speed.
		chunks := slowChunks(40)
		m := newGatedModel(3*time.Millisecond, chunks[:5], chunks[5:])
		e := newEnv(t, newStore(t), &scriptModel{}, func(o *turn.Options) {
			o.Model = m
			o.SnapshotInterval = 5 * time.Millisecond
			o.CompactLineSpan = 30 * time.Millisecond
		})
		resp := e.post(t, context.Background(), "/", submitBody(t, "s", "t1", "hi", nil), compactHeader)
		var once sync.Once
		r := readCompact(t, "s", resp, func(line []byte) {
			if protocol.IsAppendLine(line) {
				once.Do(func() { close(m.gates[0]) })
			}
		})
		if got := r.header.Get(api.StreamModeHeader); got != api.StreamModeCompact {
			t.Errorf("response %s = %q", api.StreamModeHeader, got)
		}
		if r.appends == 0 {
			t.Fatalf("no append lines in %d lines", len(r.lines))
		}
		first, _ := protocol.DecodeTurnEvent(r.lines[0])
		last, _ := protocol.DecodeTurnEvent(r.lines[len(r.lines)-1])
		if first == nil || first.Kind != protocol.EventSnapshot || last == nil || last.Kind != protocol.EventSnapshot || last.Snapshot.Status != protocol.StatusComplete {
			t.Fatalf("the first and last lines must be complete snapshots: %s ... %s", r.lines[0], r.lines[len(r.lines)-1])
		}
		want := strings.Join(chunks, "")
		for name, snap := range map[string]*protocol.Event{"compact": r.compact.Snapshot(), "plain": r.plain.Snapshot()} {
			if snap.Sequence != last.Sequence || messagesJSON(t, snap.Snapshot.Messages) != messagesJSON(t, last.Snapshot.Messages) || snap.Snapshot.Messages[1].Content != want {
				t.Errorf("%s cursor ended at %d with %q", name, snap.Sequence, snap.Snapshot.Messages[1].Content)
			}
		}
		saved, err := e.store.FindTurn(context.Background(), "s", "t1", alice)
		if err != nil || saved.Messages[1].Content != want || saved.LastSequence != last.Sequence {
			t.Fatalf("saved turn %+v, %v", saved, err)
		}
		// The state the append lines built before the terminal line is the
		// answer's text: nothing was lost or applied twice on the way.
		c, _ := protocol.NewCompactCursor("s")
		for _, l := range r.lines[:len(r.lines)-1] {
			if _, err := c.Apply(l); err != nil {
				t.Fatal(err)
			}
		}
		if got := c.Snapshot().Snapshot.Messages[1].Content; !strings.HasPrefix(want, got) || len(got) == 0 {
			t.Errorf("before the terminal line the state was %q", got)
		}
	})
}

// TestCompactStreamWithCheckpointsAndResume: with checkpoints on, a resume
// in compact mode starts with a complete snapshot and follows with append
// lines; a client holding the live stream's state can resume after it and
// take the resumed lines through the same cursor without a gap.
func TestCompactStreamWithCheckpointsAndResume(t *testing.T) {
	// The model waits twice: until the resume's first line has arrived,
	// then until the resume has sent an append line, so the resume has
	// both whatever the machine's speed.
	chunks := slowChunks(60)
	m := newGatedModel(2*time.Millisecond, chunks[:5], chunks[5:20], chunks[20:])
	e := newEnv(t, newStoreMemory(), &scriptModel{}, func(o *turn.Options) {
		durable(o)
		o.Model = m
		o.SnapshotInterval = 5 * time.Millisecond
		o.CompactLineSpan = 20 * time.Millisecond
	})
	live := e.post(t, context.Background(), "/", submitBody(t, "s", "t1", "tell me", nil), compactHeader)
	waitFor(t, "a checkpoint with text", func() bool {
		got, err := e.store.FindTurn(context.Background(), "s", "t1", alice)
		return err == nil && got.Status == chat.TurnRunning && got.Messages[1].Content != ""
	})
	req, err := http.NewRequest(http.MethodGet, e.srv.URL+"/sessions/s/turns/t1/stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(api.StreamModeHeader, "Compact")
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var started, appended sync.Once
	resumed := readCompact(t, "s", resp, func(line []byte) {
		started.Do(func() { close(m.gates[0]) })
		if protocol.IsAppendLine(line) {
			appended.Do(func() { close(m.gates[1]) })
		}
	})
	lr := readCompact(t, "s", live)
	first, _ := protocol.DecodeTurnEvent(resumed.lines[0])
	if first == nil || first.Kind != protocol.EventSnapshot {
		t.Fatalf("a compact resume must start with a complete snapshot: %s", resumed.lines[0])
	}
	if resumed.appends == 0 {
		t.Errorf("the resume sent no append lines (%d lines)", len(resumed.lines))
	}
	ls, rs := lr.compact.Snapshot(), resumed.compact.Snapshot()
	if ls.Sequence != rs.Sequence || messagesJSON(t, ls.Snapshot.Messages) != messagesJSON(t, rs.Snapshot.Messages) {
		t.Fatalf("live ended at %d, resumed at %d, with other messages", ls.Sequence, rs.Sequence)
	}
	// One cursor over the live stream's first half, then the resumed
	// lines: stale ones are ignored, and a line built on a state this
	// cursor skipped is a gap that waits for the next complete snapshot;
	// the cursor ends with the same state.
	c, _ := protocol.NewCompactCursor("s")
	for _, l := range lr.lines[:len(lr.lines)/2] {
		if _, err := c.Apply(l); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range resumed.lines {
		if _, err := c.Apply(l); err != nil && !errors.Is(err, protocol.ErrAppendGap) {
			t.Fatal(err)
		}
	}
	if got := c.Snapshot(); got.Sequence != ls.Sequence || messagesJSON(t, got.Snapshot.Messages) != messagesJSON(t, ls.Snapshot.Messages) {
		t.Errorf("the mixed cursor ended at %d", got.Sequence)
	}
}

// TestStreamModeHeaderRejections: an unknown or repeated mode is 400
// REQUEST_INVALID_HEADER on both routes, before the body is read.
func TestStreamModeHeaderRejections(t *testing.T) {
	e := newEnv(t, newStoreMemory(), &scriptModel{Chunks: []string{"x"}}, durable)
	for name, values := range map[string][]string{"unknown": {"deltas"}, "repeated": {"compact", "compact"}, "empty": {""}} {
		t.Run(name, func(t *testing.T) {
			for _, route := range []string{"submit", "resume"} {
				var req *http.Request
				if route == "submit" {
					req, _ = http.NewRequest(http.MethodPost, e.srv.URL+"/", bytes.NewReader(submitBody(t, "s", "t1", "hi", nil)))
					req.Header.Set("Content-Type", "application/json")
				} else {
					req, _ = http.NewRequest(http.MethodGet, e.srv.URL+"/sessions/s/turns/t1/stream", nil)
				}
				for _, v := range values {
					req.Header.Add(api.StreamModeHeader, v)
				}
				resp, err := e.srv.Client().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				r := readResult(t, resp)
				r.want(t, http.StatusBadRequest, protocol.CodeRequestInvalidHeader)
			}
		})
	}
	if m := e.model.Calls(); m != 0 {
		t.Errorf("the model ran %d times", m)
	}
}

// BenchmarkCompactVisibleUpdates streams one compact turn per op (300
// chunks 10 ms apart, about 3 s, text written at most every 50 ms) through
// a real HTTP server and reads it as the browser client does, showing an
// open line's text as it arrives. It reports the visible updates per turn
// and the largest gap between two of them: the writer's cadence, apart
// from turnbench's many concurrent streams.
func BenchmarkCompactVisibleUpdates(b *testing.B) {
	h, err := turn.NewHandler(turn.Options{
		Config: turn.Config{
			Store:      newStoreMemory(),
			Model:      &scriptModel{Chunks: slowChunks(300), Delay: 10 * time.Millisecond},
			Definition: turn.Definition{ID: "default", Revision: 1},
		},
		Authenticator: &testAuth{},
	})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	var updates int
	var longest time.Duration
	for i := 0; b.Loop(); i++ {
		sid := "bench-" + strconv.Itoa(i)
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/", bytes.NewReader(submitBody(b, sid, "t1", "hi", nil)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(api.StreamModeHeader, api.StreamModeCompact)
		resp, err := srv.Client().Do(req)
		if err != nil {
			b.Fatal(err)
		}
		cur, _ := protocol.NewCompactCursor(sid)
		var pending []byte
		buf := make([]byte, 32<<10)
		shown, last := 0, time.Time{}
		for {
			n, rerr := resp.Body.Read(buf)
			now := time.Now()
			pending = append(pending, buf[:n]...)
			for j := bytes.IndexByte(pending, '\n'); j >= 0; j = bytes.IndexByte(pending, '\n') {
				if _, err := cur.Apply(pending[:j]); err != nil {
					b.Fatal(err)
				}
				pending = pending[j+1:]
			}
			visible := 0
			if s := cur.Snapshot(); s != nil {
				visible = len(s.Snapshot.Messages[1].Content)
			}
			if p, ok := cur.Provisional(pending); ok {
				visible = max(visible, len(p))
			}
			if visible > shown {
				if !last.IsZero() {
					longest = max(longest, now.Sub(last))
				}
				updates++
				shown, last = visible, now
			}
			if rerr != nil {
				break
			}
		}
		_ = resp.Body.Close()
	}
	b.ReportMetric(float64(updates)/float64(b.N), "updates/turn")
	b.ReportMetric(float64(longest.Microseconds())/1000, "max-gap-ms")
}

// TestCompactStreamWithToolsAndComponents: a tool call's state changes and
// the switch to ordered content records are not appended text: they go
// out as complete snapshots, and text around them as append lines; both
// cursors still end with the terminal state.
func TestCompactStreamWithToolsAndComponents(t *testing.T) {
	words := func(prefix string, n int) []model.Event {
		var evs []model.Event
		for i := range n {
			evs = append(evs, model.Event{TextDelta: prefix + strconv.Itoa(i) + " "})
		}
		return evs
	}
	m := &slowSteps{stepModel: stepModel{Steps: [][]model.Event{
		append(words("a", 20), callEvent("c1", "chart", `{}`), usageEvent(1, 1)),
		append(words("b", 20), usageEvent(1, 1)),
	}}, delay: 2 * time.Millisecond}
	e := toolEnv(t, newStoreMemory(), m, 4, func(o *turn.Options) { o.SnapshotInterval = time.Millisecond })
	resp := e.post(t, context.Background(), "/", submitBody(t, "s", "t1", "chart it", nil), compactHeader)
	r := readCompact(t, "s", resp)
	t.Logf("%d complete snapshots, %d append lines", r.snaps, r.appends) // how many depends on the machine's speed
	last, _ := protocol.DecodeTurnEvent(r.lines[len(r.lines)-1])
	for name, snap := range map[string]*protocol.Event{"compact": r.compact.Snapshot(), "plain": r.plain.Snapshot()} {
		if snap.Sequence != last.Sequence || messagesJSON(t, snap.Snapshot.Messages) != messagesJSON(t, last.Snapshot.Messages) {
			t.Errorf("%s cursor ended at %d", name, snap.Sequence)
		}
	}
	if calls := last.Snapshot.Messages[1].ToolCalls; len(calls) != 1 || calls[0].Status != protocol.ToolCallComplete {
		t.Errorf("tool calls %+v", calls)
	}
}

// slowSteps is a stepModel whose events come delay apart.
type slowSteps struct {
	stepModel
	delay time.Duration
}

func (m *slowSteps) Stream(ctx context.Context, req model.Request) (model.Stream, error) {
	s, err := m.stepModel.Stream(ctx, req)
	if err != nil {
		return nil, err
	}
	return &slowStream{Stream: s, delay: m.delay}, nil
}

// slowStream paces a model's events delay apart, as a slow provider does
// (a pace, not a wait for something to happen).
type slowStream struct {
	model.Stream
	delay time.Duration
}

func (s *slowStream) Recv() (model.Event, error) {
	t := time.NewTimer(s.delay)
	<-t.C
	return s.Stream.Recv()
}

// TestCompactDisconnectIsNotAStop: a compact client that disconnects
// mid-line leaves the turn running (checkpoints on): the default writer
// takes over numbering states for the checkpoints, the whole answer is
// saved, and a compact resume ends with it.
func TestCompactDisconnectIsNotAStop(t *testing.T) {
	chunks := slowChunks(30)
	m := newGatedModel(time.Millisecond, chunks[:5], chunks[5:])
	e := newEnv(t, newStoreMemory(), &scriptModel{}, func(o *turn.Options) {
		durable(o)
		o.Model = m
		o.SnapshotInterval = 2 * time.Millisecond
	})
	ctx, cancel := context.WithCancel(context.Background())
	resp := e.post(t, ctx, "/", submitBody(t, "s", "t1", "hi", nil), compactHeader)
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadBytes('\n'); err != nil { // the first snapshot
		t.Fatal(err)
	}
	// Some bytes of the first append line, then the client goes.
	if b, err := br.Peek(len(`{"protocol":"agentskit.chat.turn","version":1,"event":"turnstream.turn.append"`)); err != nil || !protocol.IsAppendLine(b) {
		t.Fatalf("after the first snapshot: %q %v", b, err)
	}
	cancel()
	_ = resp.Body.Close()
	close(m.gates[0])
	waitFor(t, "the turn saved", func() bool {
		got, err := e.store.FindTurn(context.Background(), "s", "t1", alice)
		return err == nil && got.Status == chat.TurnComplete
	})
	want := strings.Join(chunks, "")
	if got, _ := e.store.FindTurn(context.Background(), "s", "t1", alice); got.Messages[1].Content != want {
		t.Errorf("saved answer %q", got.Messages[1].Content)
	}
	req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/sessions/s/turns/t1/stream", nil)
	req.Header.Set(api.StreamModeHeader, api.StreamModeCompact)
	rr, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r := readCompact(t, "s", rr)
	if s := r.compact.Snapshot(); s.Snapshot.Status != protocol.StatusComplete || s.Snapshot.Messages[1].Content != want {
		t.Errorf("resume after the disconnect ended with %+v", s.Snapshot)
	}
}
