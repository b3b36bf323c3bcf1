package turn_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/dynalite"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
	"github.com/turnstream/turnstream/pkg/turn"
)

// countedStore is a dynalite store whose DynamoDB operations are recorded.
func countedStore(tb testing.TB) (chat.Store, *dynamo.OperationLog) {
	tb.Helper()
	ops := &dynamo.OperationLog{}
	client, err := dynamo.NewClient(context.Background(), dynalite.Options(tb), ops.Option)
	if err != nil {
		tb.Fatal(err)
	}
	table := dynalite.Table(tb)
	ops.Reset()
	return dynamo.New(client, dynamo.Options{Table: table, CursorKey: []byte("turn-test-cursor-key-0123456789")}), ops
}

// BenchmarkResumeReads measures, on dynalite, the DynamoDB reads that
// resumes of one running turn cost (BatchGetItem and Query a second, all
// of them and per resumer) with 1 and 50 resumers following it at the
// default poll interval, in one process (the dev server; on Lambda each
// resume is its own invocation and polls for itself). A poll reads only
// what is newer, and the resumes of a turn share one poller.
//
//	go test ./pkg/turn -run '^$' -bench ResumeReads -benchtime 1x
func BenchmarkResumeReads(b *testing.B) {
	for _, resumers := range []int{1, 50} {
		b.Run(fmt.Sprintf("resumers=%d", resumers), func(b *testing.B) {
			var perSecond []float64
			for range b.N {
				perSecond = append(perSecond, resumeReads(b, resumers))
			}
			slices.Sort(perSecond)
			med := perSecond[len(perSecond)/2]
			b.ReportMetric(med, "reads/s")
			b.ReportMetric(med/float64(resumers), "reads/s/resumer")
		})
	}
}

// resumeReads runs one turn of about four seconds, with resumers
// following it from its first second, and returns the reads a second
// issued while they followed it.
func resumeReads(b *testing.B, resumers int) float64 {
	store, ops := countedStore(b)
	chunks := make([]string, 80)
	for i := range chunks {
		chunks[i] = "word "
	}
	// The resumers start a second into the turn: at its 21st chunk.
	m := &scriptModel{Chunks: chunks, Delay: 50 * time.Millisecond, Started: make(chan struct{}, 1), Reached: make(chan struct{}), ReachedAt: 21}
	e := newEnv(b, store, m, func(o *turn.Options) {
		durable(o)
		o.ResumePollInterval = turn.DefaultResumePollInterval
	})
	ls := e.startLive(b, context.Background(), "s", "t1", "hello")
	<-m.Started
	<-m.Reached
	ops.Reset()
	start := time.Now()
	var wg sync.WaitGroup
	for range resumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := e.srv.Client().Get(e.srv.URL + "/sessions/s/turns/t1/stream")
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}()
	}
	wg.Wait()
	took := time.Since(start)
	reads := 0
	for _, op := range ops.Take() {
		if op == "BatchGetItem" || op == "Query" {
			reads++
		}
	}
	<-ls.done
	if took <= 0 {
		return 0
	}
	return float64(reads) / took.Seconds()
}

// BenchmarkFirstLine measures, on dynalite, the time from a submit to its
// first line with checkpoints on (the turn is acknowledged, its turn and
// live items written at once, before the stream starts) and off (the
// baseline: nothing written before the stream), one turn at a time.
//
//	go test ./pkg/turn -run '^$' -bench FirstLine -benchtime 50x
func BenchmarkFirstLine(b *testing.B) {
	for _, mode := range []string{"checkpoints=off", "checkpoints=on"} {
		b.Run(mode, func(b *testing.B) {
			store, _ := countedStore(b)
			e := newEnv(b, store, &scriptModel{Chunks: []string{"ok"}}, func(o *turn.Options) {
				if mode == "checkpoints=on" {
					durable(o)
				}
			})
			var firsts []time.Duration
			b.ResetTimer()
			for i := range b.N {
				start := time.Now()
				resp := e.post(b, context.Background(), "/", submitBody(b, "s", fmt.Sprintf("t%d", i), "hi", nil), nil)
				buf := make([]byte, 1)
				if _, err := resp.Body.Read(buf); err != nil || resp.StatusCode != http.StatusOK {
					b.Fatalf("first byte: %v, status %d", err, resp.StatusCode)
				}
				firsts = append(firsts, time.Since(start))
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			}
			b.StopTimer()
			slices.Sort(firsts)
			b.ReportMetric(float64(firsts[len(firsts)/2].Microseconds())/1000, "ms-median/first-line")
			b.ReportMetric(float64(firsts[len(firsts)*99/100].Microseconds())/1000, "ms-p99/first-line")
		})
	}
}
