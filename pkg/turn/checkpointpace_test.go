package turn_test

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
	"testing/synctest"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/store/memory"
	"github.com/turnstream/turnstream/pkg/turn"
)

// paceStore records each checkpoint a turn writes (when, and how many
// bytes its messages encode to) and counts the session reads beside
// them (the stop flag read at a tick that writes nothing).
type paceStore struct {
	chat.Store
	start time.Time

	mu     sync.Mutex
	writes []paceWrite
	reads  int
}

type paceWrite struct {
	at    time.Duration // since start
	first bool          // the acknowledgment
	size  int           // encoded messages
	beat  bool          // messages equal to the prior's
}

func (s *paceStore) Checkpoint(ctx context.Context, c *chat.Claim, cp *chat.Checkpoint) (bool, error) {
	b, _ := json.Marshal(cp.Messages)
	p, _ := json.Marshal(cp.Prior)
	s.mu.Lock()
	s.writes = append(s.writes, paceWrite{at: time.Since(s.start), first: cp.Prior == nil, size: len(b), beat: cp.Prior != nil && bytes.Equal(b, p)})
	s.mu.Unlock()
	return s.Store.Checkpoint(ctx, c, cp)
}

func (s *paceStore) GetSession(ctx context.Context, sessionID string, p chat.Principal) (*chat.Session, error) {
	s.mu.Lock()
	s.reads++
	s.mu.Unlock()
	return s.Store.GetSession(ctx, sessionID, p)
}

func (s *paceStore) record() ([]paceWrite, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]paceWrite(nil), s.writes...), s.reads
}

// paceTurn runs one turn of chunks, one every delay, with checkpoints
// every second and CheckpointMinChange least, in a synctest bubble's
// time; stopAt, when above zero, requests a stop then.
func paceTurn(t *testing.T, chunks []string, delay time.Duration, least int, stopAt time.Duration) (*paceStore, []*protocol.Event) {
	t.Helper()
	s := &paceStore{Store: memory.New(memory.Options{}), start: time.Now()}
	h, err := turn.NewHandler(turn.Options{
		Config: turn.Config{
			Store:               s,
			Model:               &scriptModel{Chunks: chunks, Delay: delay},
			Definition:          turn.Definition{ID: "default", Revision: 1},
			LeaseDuration:       30 * time.Second,
			TurnTimeout:         time.Minute,
			SnapshotInterval:    50 * time.Millisecond,
			CheckpointInterval:  time.Second,
			CheckpointMinChange: least,
			Logger:              slog.New(slog.DiscardHandler),
		},
		Authenticator: &testAuth{},
	})
	if err != nil {
		t.Fatal(err)
	}
	if stopAt > 0 {
		stop := time.AfterFunc(stopAt, func() { // the bubble's time
			if err := s.RequestStop(context.Background(), "s", "t1", alice); err != nil {
				t.Errorf("stop: %v", err)
			}
		})
		defer stop.Stop()
	}
	r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(submitBody(t, "s", "t1", "hello", nil)))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	body, _ := io.ReadAll(w.Result().Body)
	if w.Code != http.StatusOK {
		t.Fatalf("status %d: %s", w.Code, body)
	}
	synctest.Wait()
	return s, decodeStream(t, body)
}

// TestCheckpointsPacedByWhatTheyCarry: with CheckpointMinChange a tick
// writes a checkpoint only once the messages grew by that many bytes or
// four intervals passed; the ticks between read the stop flag instead.
// A 1 KB answer at 400 characters a second (2.6 s) writes only its
// acknowledgment (every interval: the acknowledgment and three more); a
// slow answer that never grows by a kilobyte is written every four
// intervals; a fast one at every tick; and a stop is seen within an
// interval by the read, with no checkpoint written.
func TestCheckpointsPacedByWhatTheyCarry(t *testing.T) {
	kilobyte := make([]string, 260) // 1,040 characters, 4 every 10 ms
	for i := range kilobyte {
		kilobyte[i] = "abc "
	}
	later := func(ws []paceWrite) []paceWrite {
		if len(ws) == 0 || !ws[0].first {
			t.Fatalf("the first checkpoint is not the acknowledgment: %+v", ws)
		}
		return ws[1:]
	}
	t.Run("a 1 KB answer writes its acknowledgment alone", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s, evs := paceTurn(t, kilobyte, 10*time.Millisecond, 1024, 0)
			if snap := lastSnapshot(evs); snap == nil || snap.Status != protocol.StatusComplete {
				t.Fatalf("the turn ends %+v", evs[len(evs)-1])
			}
			ws, reads := s.record()
			if rest := later(ws); len(rest) != 0 {
				t.Errorf("checkpoints after the acknowledgment: %+v; want none (the answer grew by less than 1,024 bytes a tick)", rest)
			}
			if reads < 2 {
				t.Errorf("%d stop reads at the two ticks; want 2", reads)
			}
		})
	})
	t.Run("every interval without it", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s, _ := paceTurn(t, kilobyte, 10*time.Millisecond, 0, 0)
			ws, _ := s.record()
			if rest := later(ws); len(rest) < 2 {
				t.Errorf("checkpoints after the acknowledgment: %+v; want one at each of the two ticks", rest)
			}
		})
	})
	t.Run("a slow answer every four intervals", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			slow := make([]string, 50) // 200 characters, 4 every 200 ms: 10 s
			for i := range slow {
				slow[i] = "xyz "
			}
			s, _ := paceTurn(t, slow, 200*time.Millisecond, 1024, 0)
			ws, _ := s.record()
			rest := later(ws)
			if len(rest) != 2 {
				t.Fatalf("checkpoints after the acknowledgment: %+v; want 2 (at 4 s and 8 s)", rest)
			}
			prev := ws[0].at
			for _, w := range rest {
				if w.beat || w.at-prev < 4*time.Second || w.at-prev > 5*time.Second {
					t.Errorf("checkpoint %+v, %v after the one before; want a change 4 to 5 intervals later", w, w.at-prev)
				}
				prev = w.at
			}
		})
	})
	t.Run("a fast answer at every tick", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			fast := make([]string, 300) // 12,000 characters, 40 every 10 ms: 3 s
			for i := range fast {
				fast[i] = strings.Repeat("0123456789", 4)
			}
			s, _ := paceTurn(t, fast, 10*time.Millisecond, 1024, 0)
			ws, _ := s.record()
			rest := later(ws)
			if len(rest) < 2 {
				t.Fatalf("checkpoints after the acknowledgment: %+v; want one a tick", rest)
			}
			prev := ws[0].size
			for _, w := range rest {
				if w.size-prev < 1024 {
					t.Errorf("checkpoint %+v grew %d bytes; want 1,024 or more", w, w.size-prev)
				}
				prev = w.size
			}
		})
	})
	t.Run("a stop is seen by the read", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			slow := make([]string, 50)
			for i := range slow {
				slow[i] = "xyz "
			}
			s, evs := paceTurn(t, slow, 200*time.Millisecond, 1024, 1500*time.Millisecond)
			last := evs[len(evs)-1]
			if last.Snapshot == nil || last.Snapshot.Error == nil || last.Snapshot.Error.Code != protocol.CodeTurnInterrupted {
				t.Fatalf("the turn ends %+v; want TURN_INTERRUPTED", last)
			}
			ws, reads := s.record()
			if rest := later(ws); len(rest) != 0 || reads == 0 {
				t.Errorf("checkpoints after the acknowledgment %+v, %d reads; want none, the stop seen by a read", rest, reads)
			}
			got, err := s.FindTurn(context.Background(), "s", "t1", alice)
			if err != nil || got.Status != chat.TurnInterrupted {
				t.Errorf("saved %+v, %v; want interrupted", got, err)
			}
		})
	})
}
