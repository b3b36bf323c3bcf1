package turn_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/turn"
)

// durable turns the checkpoints on with short intervals.
func durable(o *turn.Options) {
	o.CheckpointInterval = 20 * time.Millisecond
	o.ResumePollInterval = 10 * time.Millisecond
}

// slowChunks returns n chunks "w00 ", "w01 ", ...
func slowChunks(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "w" + string(rune('a'+i%26)) + " "
	}
	return out
}

// liveStream is a submit whose lines are read as they arrive.
type liveStream struct {
	mu    sync.Mutex
	lines [][]byte
	done  chan struct{}
	resp  *http.Response
}

func (e *env) startLive(t testing.TB, ctx context.Context, sessionID, turnID, input string) *liveStream {
	t.Helper()
	resp := e.post(t, ctx, "/", submitBody(t, sessionID, turnID, input, nil), nil)
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("submit: %d %s", resp.StatusCode, b)
	}
	return readLive(resp)
}

// readLive reads resp's NDJSON lines as they arrive, in a goroutine.
func readLive(resp *http.Response) *liveStream {
	ls := &liveStream{done: make(chan struct{}), resp: resp}
	go func() {
		defer close(ls.done)
		defer func() { _ = resp.Body.Close() }()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			ls.mu.Lock()
			ls.lines = append(ls.lines, append([]byte(nil), sc.Bytes()...))
			ls.mu.Unlock()
			changes.fire()
		}
	}()
	return ls
}

func (ls *liveStream) count() int {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return len(ls.lines)
}

func (ls *liveStream) events(t *testing.T) []*protocol.Event {
	t.Helper()
	ls.mu.Lock()
	defer ls.mu.Unlock()
	var out []*protocol.Event
	for _, l := range ls.lines {
		ev, d := protocol.DecodeTurnEvent(l)
		if d != nil {
			t.Fatalf("live line does not decode: %+v", *d)
		}
		out = append(out, ev)
	}
	return out
}

// resume GETs the resume route and returns the status and the lines.
func (e *env) resume(t *testing.T, sessionID, turnID, query string, hdr map[string]string) (int, []*protocol.Event, []byte) {
	t.Helper()
	url := e.srv.URL + "/sessions/" + sessionID + "/turns/" + turnID + "/stream" + query
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, nil, raw
	}
	var evs []*protocol.Event
	for _, l := range strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n") {
		if l == "" {
			continue
		}
		ev, d := protocol.DecodeTurnEvent([]byte(l))
		if d != nil {
			t.Fatalf("resumed line does not decode: %+v: %s", *d, l)
		}
		evs = append(evs, ev)
	}
	return resp.StatusCode, evs, raw
}

// terminalOf returns the terminal snapshot among evs (nil if none).
func terminalOf(evs []*protocol.Event) *protocol.Event {
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Kind == protocol.EventSnapshot && evs[i].Snapshot.Status != protocol.StatusStreaming {
			return evs[i]
		}
	}
	return nil
}

// TestResumeMidTurn: a resume while the turn runs starts with the newest
// checkpoint as one complete snapshot and ends with the live stream's
// terminal snapshot, messages equal byte for byte. Every resumed line
// with a sequence the live stream also sent carries the same messages, so
// one snapshot cursor over both streams never takes a sequence twice with
// different content; and the cursor takes the whole stream.
func TestResumeMidTurn(t *testing.T) {
	forEachStore(t, func(t *testing.T, newStore func(testing.TB) chat.Store) {
		m := &scriptModel{Chunks: slowChunks(60), Delay: 8 * time.Millisecond}
		e := newEnv(t, newStore(t), m, durable)
		ls := e.startLive(t, context.Background(), "s", "t1", "tell me")
		// The checkpoint may land before the reader has the first line (a
		// loaded machine: make test loop run 1 at 6175b33): wait for both.
		waitFor(t, "a checkpoint with text and the live stream's first line", func() bool {
			got, err := e.store.FindTurn(context.Background(), "s", "t1", alice)
			return err == nil && got.Status == chat.TurnRunning && got.Messages[1].Content != "" && ls.count() > 0
		})
		first := ls.events(t)[0].Sequence
		status, resumed, raw := e.resume(t, "s", "t1", "?after="+itoa(first), nil)
		if status != http.StatusOK {
			t.Fatalf("resume: %d %s", status, raw)
		}
		<-ls.done
		live := ls.events(t)
		lt, rt := terminalOf(live), terminalOf(resumed)
		if lt == nil || rt == nil {
			t.Fatalf("terminal snapshots: live %v, resumed %v", lt != nil, rt != nil)
		}
		if lt.Sequence != rt.Sequence || messagesJSON(t, lt.Snapshot.Messages) != messagesJSON(t, rt.Snapshot.Messages) {
			t.Errorf("resumed terminal (seq %d) differs from the live one (seq %d)", rt.Sequence, lt.Sequence)
		}
		if resumed[0].Kind != protocol.EventSnapshot || resumed[0].Sequence <= first {
			t.Errorf("resume starts with %+v, want a snapshot newer than %d", resumed[0], first)
		}
		bySeq := map[int64]string{}
		for _, ev := range live {
			if ev.Kind == protocol.EventSnapshot {
				bySeq[ev.Sequence] = messagesJSON(t, ev.Snapshot.Messages)
			}
		}
		for _, ev := range resumed {
			if want, ok := bySeq[ev.Sequence]; ok && ev.Kind == protocol.EventSnapshot && messagesJSON(t, ev.Snapshot.Messages) != want {
				t.Errorf("sequence %d carries other messages in the resumed stream", ev.Sequence)
			}
		}
		cur, err := protocol.NewSnapshotCursor("s")
		if err != nil {
			t.Fatal(err)
		}
		taken := 0
		for _, ev := range append(live[:2:2], resumed...) {
			b, err := protocol.EncodeEvent(ev)
			if err != nil {
				t.Fatal(err)
			}
			if cur.Apply(b) {
				taken++
			}
		}
		if taken < 2 {
			t.Errorf("the cursor took %d lines of live and resumed streams", taken)
		}
	})
}

// TestResumeFinishedTurn: a finished turn answers its terminal snapshot at
// once, whatever after (a stream always ends with a terminal line; a
// client that holds it already ignores it), and a timeout's trailing
// diagnostic too.
func TestResumeFinishedTurn(t *testing.T) {
	e := newEnv(t, newStoreMemory(), &scriptModel{Chunks: []string{"done"}}, durable)
	live := e.submit(t, "s", "t1", "hi", nil, nil)
	live.want(t, http.StatusOK, "")
	_, resumed, _ := e.resume(t, "s", "t1", "", nil)
	if len(resumed) != 1 || terminalOf(resumed) == nil {
		t.Fatalf("resume of a finished turn: %d lines", len(resumed))
	}
	lt := terminalOf(live.events)
	if resumed[0].Sequence != lt.Sequence || messagesJSON(t, resumed[0].Snapshot.Messages) != messagesJSON(t, lt.Snapshot.Messages) {
		t.Error("resumed terminal snapshot differs from the live one")
	}
	for _, after := range []int64{lt.Sequence, lt.Sequence + 100} {
		status, evs, raw := e.resume(t, "s", "t1", "?after="+itoa(after), nil)
		if status != http.StatusOK || len(evs) != 1 || evs[0].Sequence != lt.Sequence || terminalOf(evs) == nil {
			t.Errorf("resume after %d, past the terminal sequence: %d, %s", after, status, raw)
		}
	}
}

// TestResumeRejections: bad input and foreign callers get typed errors.
func TestResumeRejections(t *testing.T) {
	e := newEnv(t, newStoreMemory(), &scriptModel{Chunks: []string{"done"}}, durable)
	e.submit(t, "s", "t1", "hi", nil, nil).want(t, http.StatusOK, "")
	tests := map[string]struct {
		session, turn, query string
		hdr                  map[string]string
		status               int
		code                 string
	}{
		"another principal":  {"s", "t1", "", map[string]string{"X-Test-Subject": "mallory"}, http.StatusNotFound, protocol.CodeSessionNotFound},
		"unknown turn":       {"s", "nope", "", nil, http.StatusNotFound, protocol.CodeTurnNotFound},
		"unknown session":    {"other", "t1", "", nil, http.StatusNotFound, protocol.CodeSessionNotFound},
		"after not a number": {"s", "t1", "?after=abc", nil, http.StatusBadRequest, protocol.CodeRequestInvalidQuery},
		"after negative":     {"s", "t1", "?after=-1", nil, http.StatusBadRequest, protocol.CodeRequestInvalidQuery},
		"after fraction":     {"s", "t1", "?after=1.5", nil, http.StatusBadRequest, protocol.CodeRequestInvalidQuery},
		"after too large":    {"s", "t1", "?after=9007199254740992", nil, http.StatusBadRequest, protocol.CodeRequestInvalidQuery},
		"after twice":        {"s", "t1", "?after=1&after=2", nil, http.StatusBadRequest, protocol.CodeRequestInvalidQuery},
		"unknown parameter":  {"s", "t1", "?since=1", nil, http.StatusBadRequest, protocol.CodeRequestInvalidQuery},
		"unauthenticated":    {"s", "t1", "", map[string]string{"X-Test-Subject": "nobody"}, http.StatusUnauthorized, protocol.CodeRequestUnauthenticated},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			status, _, raw := e.resume(t, tc.session, tc.turn, tc.query, tc.hdr)
			if status != tc.status || !strings.Contains(string(raw), `"code":"`+tc.code+`"`) {
				t.Errorf("got %d %s, want %d %s", status, raw, tc.status, tc.code)
			}
			if strings.Contains(string(raw), "abc") || strings.Contains(string(raw), "nope") {
				t.Errorf("the error echoes input: %s", raw)
			}
		})
	}
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/sessions/s/turns/t1/stream", nil)
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST on the resume route: %d", resp.StatusCode)
	}
}

// TestDisconnectIsNotAStop: with checkpoints, a client that goes away
// mid-turn does not end the turn: it runs to its end and is saved, and a
// resume gets its terminal snapshot. A resume that goes away does not stop
// it either.
func TestDisconnectIsNotAStop(t *testing.T) {
	forEachStore(t, func(t *testing.T, newStore func(testing.TB) chat.Store) {
		m := &scriptModel{Chunks: slowChunks(20), Delay: 5 * time.Millisecond, Hold: make(chan struct{})}
		e := newEnv(t, newStore(t), m, durable)
		ctx, cancel := context.WithCancel(context.Background())
		ls := e.startLive(t, ctx, "s", "t1", "hi")
		waitFor(t, "the first line", func() bool { return ls.count() > 0 })
		cancel() // the client disconnects
		<-ls.done
		close(m.Hold)
		waitFor(t, "the turn saved", func() bool {
			got, err := e.store.FindTurn(context.Background(), "s", "t1", alice)
			return err == nil && got.Status == chat.TurnComplete
		})
		got, _ := e.store.FindTurn(context.Background(), "s", "t1", alice)
		if !strings.HasPrefix(got.Messages[1].Content, "wa wb") {
			t.Errorf("saved answer %q", got.Messages[1].Content)
		}
		_, resumed, _ := e.resume(t, "s", "t1", "", nil)
		if tt := terminalOf(resumed); tt == nil || tt.Snapshot.Status != protocol.StatusComplete {
			t.Errorf("resume after the disconnect: %+v", resumed)
		}
	})
}

// TestStopSeenAtCheckpoint: a stop takes effect at the next checkpoint,
// not the next lease renewal (here never), and a resumer sees the
// interrupted ending.
func TestStopSeenAtCheckpoint(t *testing.T) {
	forEachStore(t, func(t *testing.T, newStore func(testing.TB) chat.Store) {
		m := &scriptModel{Chunks: []string{"a"}, Hold: make(chan struct{})}
		e := newEnv(t, newStore(t), m, func(o *turn.Options) {
			durable(o)
			o.RenewInterval = time.Hour
		})
		defer close(m.Hold)
		ls := e.startLive(t, context.Background(), "s", "t1", "hi")
		waitFor(t, "the running turn's checkpoint", func() bool {
			got, err := e.store.FindTurn(context.Background(), "s", "t1", alice)
			return err == nil && got.Status == chat.TurnRunning
		})
		resumed := make(chan []*protocol.Event, 1)
		go func() {
			_, evs, _ := e.resume(t, "s", "t1", "", nil)
			resumed <- evs
		}()
		body, _ := json.Marshal(map[string]string{"sessionId": "s", "turnId": "t1"})
		resp := e.post(t, context.Background(), "/stop", body, nil)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNoContent {
			t.Fatalf("stop: %d", resp.StatusCode)
		}
		<-ls.done
		lt := terminalOf(ls.events(t))
		if lt == nil || lt.Snapshot.Error == nil || lt.Snapshot.Error.Code != protocol.CodeTurnInterrupted {
			t.Fatalf("live stream ends %+v, want TURN_INTERRUPTED", lt)
		}
		rt := terminalOf(<-resumed)
		if rt == nil || rt.Snapshot.Error == nil || rt.Snapshot.Error.Code != protocol.CodeTurnInterrupted {
			t.Errorf("resumer ends %+v, want the interrupted snapshot", rt)
		}
	})
}

// TestResumeOfALostTurn: a turn whose process died (checkpointed, never
// saved) is resumed as its last checkpoint; once its lease has expired the
// resume's poll decides it, and the resume ends with the lost record (its
// last checkpoint closed, TURN_LOST) as a terminal snapshot at the lost
// turn's own terminal sequence, which no live line used; history shows the
// same record. A resume opened after that, whatever its after, ends with
// that record at once.
func TestResumeOfALostTurn(t *testing.T) {
	store := newStoreMemory()
	e := newEnv(t, store, &scriptModel{}, durable)
	ctx := context.Background()
	c, err := store.ClaimTurn(ctx, chat.ClaimRequest{SessionID: "s", TurnID: "t1", Principal: alice,
		InputHash: chat.HashInput("hi"), Lineage: protocol.Lineage{Operation: protocol.OperationSubmit},
		DefinitionID: "default", DefinitionRevision: 1, LeaseDuration: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	stamp := protocol.FormatTime(now)
	cp := &chat.Checkpoint{SessionID: "s", TurnID: "t1", Ordinal: c.Lease.Ordinal, InputHash: c.Lease.InputHash,
		Lineage: c.Lease.Lineage, FirstSequence: 1, Sequence: 4, StartedAt: now,
		Messages: []protocol.Message{
			{ID: "t1.u", Role: protocol.RoleUser, Content: "hi", Status: protocol.MessageComplete, CreatedAt: stamp},
			{ID: "t1.a", Role: protocol.RoleAssistant, Content: "Partial", Status: protocol.MessageStreaming, CreatedAt: stamp},
		}}
	if _, err := store.Checkpoint(ctx, c, cp); err != nil {
		t.Fatal(err)
	}
	lost := c.BaseSequence + chat.SequenceGapAfterCrash
	_, evs, raw := e.resume(t, "s", "t1", "", nil)
	if len(evs) != 2 || evs[0].Kind != protocol.EventSnapshot || evs[0].Sequence != 4 || evs[0].Snapshot.Status != protocol.StatusStreaming ||
		evs[1].Kind != protocol.EventSnapshot || evs[1].Sequence != lost || evs[1].Snapshot.Status != protocol.StatusError ||
		evs[1].Snapshot.Error == nil || evs[1].Snapshot.Error.Code != protocol.CodeTurnLost ||
		evs[1].Snapshot.Messages[1].Content != "Partial" {
		t.Fatalf("resume of a lost turn: %s", raw)
	}
	got, err := store.FindTurn(ctx, "s", "t1", alice)
	if err != nil || got.Status != chat.TurnError || got.Messages[1].Content != "Partial" || got.LastSequence != lost {
		t.Errorf("history of the lost turn: %+v, %v", got, err)
	}
	for _, after := range []string{"", "?after=0", "?after=4", "?after=" + itoa(lost), "?after=" + itoa(lost+5)} {
		_, evs, raw := e.resume(t, "s", "t1", after, nil)
		if len(evs) != 1 || evs[0].Sequence != lost || evs[0].Snapshot == nil || evs[0].Snapshot.Error.Code != protocol.CodeTurnLost {
			t.Errorf("resume after=%q of the decided turn: %s", after, raw)
		}
	}
}

// TestCapabilitiesDeclareDurableTurns: resume and durableTurns are listed
// with checkpoints on, with the least change a checkpoint waits for, and
// declared unavailable, not omitted, with them off.
func TestCapabilitiesDeclareDurableTurns(t *testing.T) {
	paced := func(o *turn.Options) { durable(o); o.CheckpointMinChange = 1024 }
	for name, opt := range map[string]func(*turn.Options){"on": paced, "off": nil} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, newStoreMemory(), &scriptModel{}, opt)
			resp, err := e.srv.Client().Get(e.srv.URL + "/capabilities")
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = resp.Body.Close() }()
			var c struct {
				Extensions []string `json:"extensions"`
				Resume     *struct {
					Available bool   `json:"available"`
					Path      string `json:"path"`
				} `json:"resume"`
				DurableTurns *struct {
					Available bool `json:"available"`
					MinChange int  `json:"checkpointMinChangeBytes"`
				} `json:"durableTurns"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
				t.Fatal(err)
			}
			on := name == "on"
			listed := strings.Contains(strings.Join(c.Extensions, ","), "resume")
			if c.Resume == nil || c.DurableTurns == nil || c.Resume.Available != on || c.DurableTurns.Available != on || listed != on ||
				on != (c.DurableTurns.MinChange == 1024) {
				t.Errorf("capabilities %+v", c)
			}
		})
	}
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestAcknowledgedTurnIsRecorded: from the moment a turn's 200 stream
// starts, the turn (its user message at least) is recorded: history finds
// it running before the model said anything, and a resume opened then
// follows it to its end.
func TestAcknowledgedTurnIsRecorded(t *testing.T) {
	forEachStore(t, func(t *testing.T, newStore func(testing.TB) chat.Store) {
		m := &scriptModel{Chunks: []string{"late ", "answer"}, Hold: make(chan struct{}), Started: make(chan struct{}, 1)}
		e := newEnv(t, newStore(t), m, func(o *turn.Options) {
			durable(o)
			o.CheckpointInterval = time.Hour // only the acknowledgment and the first text checkpoint
		})
		ls := e.startLive(t, context.Background(), "s", "t1", "hi")
		<-m.Started
		got, err := e.store.FindTurn(context.Background(), "s", "t1", alice)
		if err != nil || got.Status != chat.TurnRunning || len(got.Messages) != 2 || got.Messages[0].Content != "hi" {
			t.Fatalf("a turn whose stream started, before its first text: %+v, %v; want it running with its user message", got, err)
		}
		// The resume follows the turn from before its first text: its
		// first line (the acknowledged state) has arrived before the model
		// goes on.
		rs := e.openStream(t, "sessions/s/turns/t1/stream")
		waitFor(t, "the resume's first line", func() bool { return rs.count() > 0 })
		close(m.Hold)
		<-ls.done
		<-rs.done
		if first := rs.events(t)[0]; first.Snapshot == nil || first.Snapshot.Status != protocol.StatusStreaming {
			t.Errorf("the resume's first line %+v, want the running turn", first)
		}
		rt := terminalOf(rs.events(t))
		lt := terminalOf(ls.events(t))
		if rt == nil || lt == nil || messagesJSON(t, rt.Snapshot.Messages) != messagesJSON(t, lt.Snapshot.Messages) {
			t.Errorf("resumed terminal %+v, live %+v", rt, lt)
		}
	})
}
