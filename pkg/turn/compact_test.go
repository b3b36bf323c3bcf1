package turn_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/turn"
)

var compactHeader = map[string]string{turn.StreamModeHeader: "compact"}

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

// readCompact reads a 200 compact stream of session sessionID and feeds
// each line to both cursors. Every line must be a turn event an AgentsKit
// decoder takes, or an append line it reports as an unknown kind; no line
// may be a gap or a malformed append.
func readCompact(t *testing.T, sessionID string, resp *http.Response) compactRead {
	t.Helper()
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, raw)
	}
	r := compactRead{header: resp.Header}
	r.compact, _ = protocol.NewCompactCursor(sessionID)
	r.plain, _ = protocol.NewSnapshotCursor(sessionID)
	if !bytes.HasSuffix(raw, []byte("\n")) {
		t.Fatalf("stream does not end with a newline: %q", raw)
	}
	for _, line := range bytes.Split(bytes.TrimSuffix(raw, []byte("\n")), []byte("\n")) {
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
	}
	return r
}

// TestCompactStream: a compact stream opens and ends with complete
// snapshots and carries the text between them in append lines; a compact
// client and an AgentsKit client that ignores the append lines end with
// the same state, the terminal snapshot's, which is also what was saved.
func TestCompactStream(t *testing.T) {
	forEachStore(t, func(t *testing.T, newStore func(testing.TB) chat.Store) {
		m := &scriptModel{Chunks: slowChunks(40), Delay: 3 * time.Millisecond, Usage: &protocol.Usage{PromptTokens: 2, CompletionTokens: 40, TotalTokens: 42}}
		e := newEnv(t, newStore(t), m, func(o *turn.Options) {
			o.SnapshotInterval = 5 * time.Millisecond
			o.CompactLineSpan = 30 * time.Millisecond
		})
		resp := e.post(t, context.Background(), "/", submitBody(t, "s", "t1", "hi", nil), compactHeader)
		r := readCompact(t, "s", resp)
		if got := r.header.Get(turn.StreamModeHeader); got != turn.StreamModeCompact {
			t.Errorf("response %s = %q", turn.StreamModeHeader, got)
		}
		if r.appends == 0 {
			t.Fatalf("no append lines in %d lines", len(r.lines))
		}
		first, _ := protocol.DecodeTurnEvent(r.lines[0])
		last, _ := protocol.DecodeTurnEvent(r.lines[len(r.lines)-1])
		if first == nil || first.Kind != protocol.EventSnapshot || last == nil || last.Kind != protocol.EventSnapshot || last.Snapshot.Status != protocol.StatusComplete {
			t.Fatalf("the first and last lines must be complete snapshots: %s ... %s", r.lines[0], r.lines[len(r.lines)-1])
		}
		want := strings.Join(slowChunks(40), "")
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
	m := &scriptModel{Chunks: slowChunks(80), Delay: 5 * time.Millisecond}
	e := newEnv(t, newStoreMemory(), m, func(o *turn.Options) {
		durable(o)
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
	req.Header.Set(turn.StreamModeHeader, "Compact")
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resumed := readCompact(t, "s", resp)
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
	// lines: stale ones are ignored, the rest apply without a gap.
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
					req.Header.Add(turn.StreamModeHeader, v)
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
		Store: newStoreMemory(), Model: &scriptModel{Chunks: slowChunks(300), Delay: 10 * time.Millisecond},
		Authenticator: &testAuth{}, Definition: turn.Definition{ID: "default", Revision: 1},
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
		req.Header.Set(turn.StreamModeHeader, turn.StreamModeCompact)
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
