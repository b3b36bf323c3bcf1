package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/store/memory"
	"github.com/turnstream/turnstream/pkg/turn"
)

// appendCounter is a ResponseWriter that counts the append lines written
// through it (each begins a Write or follows an LF) and passes flushes on.
type appendCounter struct {
	http.ResponseWriter
	n       *atomic.Int32
	onLine  func() // after each append line
	mu      sync.Mutex
	pending []byte
}

func (a *appendCounter) Write(p []byte) (int, error) {
	a.mu.Lock()
	a.pending = append(a.pending, p...)
	for {
		i := bytes.IndexByte(a.pending, '\n')
		if i < 0 {
			break
		}
		if protocol.IsAppendLine(a.pending[:i]) {
			a.n.Add(1)
			a.onLine()
		}
		a.pending = a.pending[i+1:]
	}
	a.mu.Unlock()
	return a.ResponseWriter.Write(p)
}

func (a *appendCounter) Flush() { _ = http.NewResponseController(a.ResponseWriter).Flush() }

// compactEnv is newDurableEnv's turn handler (held model, checkpoints
// every 20 ms) behind a counter of append lines and of compact requests.
type compactEnv struct {
	turnURL  string
	gate     chan struct{}
	appends  atomic.Int32
	compacts atomic.Int32
	once     sync.Once
	// openOnAppend opens the gate once the first append line is written.
	openOnAppend atomic.Bool
}

// open lets the held model answer part two.
func (e *compactEnv) open() { e.once.Do(func() { close(e.gate) }) }

func newCompactEnv(t *testing.T) *compactEnv {
	t.Helper()
	e := &compactEnv{gate: make(chan struct{})}
	authn, err := auth.New(context.Background(), config.AuthConfig{Mode: config.AuthDev, TrustedSubject: "host"},
		auth.WithLookupEnv(func(string) (string, bool) { return "", false }))
	if err != nil {
		t.Fatal(err)
	}
	th, err := turn.NewHandler(turn.Options{
		Config: turn.Config{
			Store:              memory.New(memory.Options{}),
			Model:              &heldModel{gate: e.gate},
			Definition:         turn.Definition{ID: "default", Revision: 1},
			CheckpointInterval: 20 * time.Millisecond,
			ResumePollInterval: 10 * time.Millisecond,
			LeaseDuration:      3 * time.Second,
			RenewInterval:      50 * time.Millisecond,
			SnapshotInterval:   5 * time.Millisecond,
		},
		Authenticator: authn,
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(streamModeHeader) == "compact" {
			e.compacts.Add(1)
		}
		if strings.HasSuffix(r.URL.Path, "/stream") {
			e.open()
		}
		th.ServeHTTP(&appendCounter{ResponseWriter: w, n: &e.appends, onLine: func() {
			if e.openOnAppend.Load() {
				e.open()
			}
		}}, r)
	}))
	t.Cleanup(ts.Close)
	t.Cleanup(e.open)
	e.turnURL = ts.URL + "/"
	saved := resumeBackoff
	resumeBackoff = time.Millisecond
	t.Cleanup(func() { resumeBackoff = saved })
	return e
}

// TestChatCompact: chat -compact -json asks for the compact stream and
// prints each state as a complete snapshot, sequences increasing, ending
// with the whole reply; the server did send append lines. A drop mid-turn
// resumes in compact mode and still shows every state once.
func TestChatCompact(t *testing.T) {
	for name, cut := range map[string]bool{"whole stream": false, "dropped and resumed": true} {
		t.Run(name, func(t *testing.T) {
			e := newCompactEnv(t)
			if cut {
				useTransport(t, cutTransport{mode: cutReset})
			} else {
				e.openOnAppend.Store(true) // part two after part one's append line
			}
			code, out, errOut := runTurnctl([]string{"chat", "-url", e.turnURL, "-session", "s1", "-token", "dev.alice", "-json", "-compact", "question"}, "")
			if code != 0 {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
			}
			var last *protocol.Event
			for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
				ev, diag := protocol.DecodeTurnEvent([]byte(line))
				if diag != nil || ev.Kind != protocol.EventSnapshot {
					t.Fatalf("printed line is not a complete snapshot (%v): %s", diag, line)
				}
				if last != nil && ev.Sequence <= last.Sequence {
					t.Errorf("sequence %d after %d", ev.Sequence, last.Sequence)
				}
				last = ev
			}
			if last.Snapshot.Status != protocol.StatusComplete || last.Snapshot.Messages[1].Content != partOne+partTwo {
				t.Errorf("last line %+v", last.Snapshot)
			}
			if e.appends.Load() == 0 || e.compacts.Load() == 0 {
				t.Errorf("%d append lines written, %d compact requests", e.appends.Load(), e.compacts.Load())
			}
		})
	}
}

// TestAttachCompact: attach -compact follows a running turn over a
// compact resume, which starts with a complete snapshot.
func TestAttachCompact(t *testing.T) {
	e := newCompactEnv(t)
	startTurn(t, e.turnURL, "s1", "t1")
	code, out, errOut := runTurnctl([]string{"attach", "-url", e.turnURL, "-session", "s1", "-turn", "t1", "-token", "dev.alice", "-compact"}, "")
	if code != 0 {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 2 || lines[0] != partOne+partTwo || !strings.HasPrefix(lines[1], "[complete · seq ") {
		t.Errorf("stdout %q, want the whole reply once, then the complete status line", out)
	}
	if e.compacts.Load() == 0 {
		t.Error("no compact request")
	}
}
