package turn_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/store/memory"
	"github.com/turnstream/turnstream/pkg/turn"
)

// countingWriter is a ResponseWriter that counts body bytes, keeps the
// last line and records when the first byte was written.
type countingWriter struct {
	header http.Header
	mu     sync.Mutex
	n      int
	lines  int
	first  time.Time
	line   []byte // the current and last complete lines
	last   []byte
}

func newCountingWriter() *countingWriter { return &countingWriter{header: http.Header{}} }

func (w *countingWriter) Header() http.Header { return w.header }
func (w *countingWriter) WriteHeader(int)     {}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.first.IsZero() {
		w.first = time.Now()
	}
	n := len(p)
	w.n += n
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.line = append(w.line, p...)
			break
		}
		w.line = append(w.line, p[:i+1]...)
		w.last = append(w.last[:0], w.line...)
		w.line = w.line[:0]
		w.lines++
		p = p[i+1:]
	}
	return n, nil
}

// BenchmarkWireBytes streams a 1,000-chunk answer (5-byte chunks, 1 ms
// apart: about a second, a realistic pace for a model) and reports the
// bytes on the wire against the size of the final snapshot line. The
// per-delta sub-benchmark (SnapshotInterval 1 ns: a snapshot for every
// delta the writer keeps up with) is the uncoalesced baseline.
func BenchmarkWireBytes(b *testing.B) {
	chunks := make([]string, 1000)
	for i := range chunks {
		chunks[i] = "word "
	}
	for _, bc := range []struct {
		name     string
		interval time.Duration
	}{
		{"interval=50ms", turn.DefaultSnapshotInterval},
		{"per-delta", time.Nanosecond},
	} {
		b.Run(bc.name, func(b *testing.B) {
			m := &scriptModel{Chunks: chunks, Delay: time.Millisecond}
			h := benchHandler(b, memory.New(memory.Options{}), m, bc.interval)
			var wire, final, lines int
			for i := 0; b.Loop(); i++ {
				w := newCountingWriter()
				h.ServeHTTP(w, benchRequest(b, fmt.Sprintf("s%d", i), "t1"))
				wire, final, lines = w.n, len(w.last), w.lines
			}
			b.ReportMetric(float64(wire), "wire-bytes")
			b.ReportMetric(float64(final), "final-snapshot-bytes")
			b.ReportMetric(float64(wire)/float64(final), "wire/final")
			b.ReportMetric(float64(lines), "lines")
		})
	}
}

// BenchmarkFirstSnapshot reports the p50 time from the start of ServeHTTP
// to the first byte of the first snapshot, side by side with the p50 of
// the memory store's ClaimTurn alone (the baseline): the difference is
// what the handler adds before the stream starts.
func BenchmarkFirstSnapshot(b *testing.B) {
	b.Run("ClaimTurn", func(b *testing.B) {
		s := memory.New(memory.Options{})
		var d []time.Duration
		for i := 0; b.Loop(); i++ {
			start := time.Now()
			_, err := s.ClaimTurn(context.Background(), chat.ClaimRequest{
				SessionID: fmt.Sprintf("s%d", i), TurnID: "t1", Principal: alice, InputHash: chat.HashInput("hello"),
				DefinitionID: "default", DefinitionRevision: 1, LeaseDuration: time.Minute,
			})
			d = append(d, time.Since(start))
			if err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(p50(d).Nanoseconds()), "p50-ns")
	})
	b.Run("Handler", func(b *testing.B) {
		h := benchHandler(b, memory.New(memory.Options{}), &scriptModel{Chunks: []string{"ok"}}, turn.DefaultSnapshotInterval)
		var d []time.Duration
		for i := 0; b.Loop(); i++ {
			w := newCountingWriter()
			req := benchRequest(b, fmt.Sprintf("s%d", i), "t1")
			start := time.Now()
			h.ServeHTTP(w, req)
			d = append(d, w.first.Sub(start))
		}
		b.ReportMetric(float64(p50(d).Nanoseconds()), "p50-ns")
	})
}

func p50(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[len(d)/2]
}

func benchHandler(b *testing.B, store chat.Store, m *scriptModel, interval time.Duration) http.Handler {
	b.Helper()
	h, err := turn.NewHandler(turn.Options{
		Config: turn.Config{
			Store:            store,
			Model:            m,
			Definition:       turn.Definition{ID: "default", Revision: 1},
			SnapshotInterval: interval,
		},
		Authenticator: &testAuth{},
	})
	if err != nil {
		b.Fatal(err)
	}
	return h
}

func benchRequest(b *testing.B, sessionID, turnID string) *http.Request {
	b.Helper()
	req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(submitBody(b, sessionID, turnID, "hello", nil)))
	req.Header.Set("Content-Type", "application/json")
	return req
}

// BenchmarkWireBytesByMode streams the turn of BenchmarkWireBytes (1,000
// 5-byte chunks 1 ms apart, default pacing) as the default stream, the
// compact stream and the AG-UI stream (POST /agui), and reports each
// one's body bytes over the default stream's final snapshot line
// ("x-final"), the same denominator for all three in the same run.
// BenchmarkAGUIPacedWire runs the slow, long answers.
func BenchmarkWireBytesByMode(b *testing.B) {
	chunks := make([]string, 1000)
	for i := range chunks {
		chunks[i] = "word "
	}
	final := 0
	for _, mode := range []string{"snapshots", "compact", "agui"} {
		b.Run(mode, func(b *testing.B) {
			m := &scriptModel{Chunks: chunks, Delay: time.Millisecond}
			h := benchHandler(b, memory.New(memory.Options{}), m, turn.DefaultSnapshotInterval)
			var wire int
			for i := 0; b.Loop(); i++ {
				w := newCountingWriter()
				req := benchRequest(b, fmt.Sprintf("s%d", i), "t1")
				switch mode {
				case "compact":
					req.Header.Set(api.StreamModeHeader, api.StreamModeCompact)
				case "agui":
					req = httptest.NewRequest(http.MethodPost, turn.AGUIPath, bytes.NewReader(aguiInput(fmt.Sprintf("s%d", i), "t1", "hello", "")))
					req.Header.Set("Content-Type", "application/json")
				}
				h.ServeHTTP(w, req)
				wire = w.n
				if mode == "snapshots" {
					final = len(w.last)
				}
			}
			b.ReportMetric(float64(wire), "wire-bytes")
			if final > 0 {
				b.ReportMetric(float64(wire)/float64(final), "x-final")
			}
		})
	}
}
