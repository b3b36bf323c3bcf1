// Package telemetrybench measures, for turnbench's telemetry section
// (-only telemetry, docs/benchmarks.md), what telemetry costs a turn: the
// process's CPU time per turn and the time to first snapshot, with
// telemetry off (the baseline), with EMF metrics on (written to
// /dev/null, one write per document as to a Lambda's standard output)
// and with EMF and tracing on (spans batched and exported as OTLP JSON
// to a collector on loopback that discards them, flushed after every
// turn as the functions flush before an invocation ends). The three
// wirings serve the same DynamoDB store; rounds alternate the variants
// (each round a batch of turns of each, in a rotating order) so that the
// machine's other load falls on all of them alike, and the figures are
// medians over the rounds. CPU is this process's (handlers, DynamoDB
// client, the benchmark's own client, the exporter): the same work in
// every variant but the telemetry, which the differences isolate.
package telemetrybench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"time"

	"github.com/turnstream/turnstream/internal/benchwire"
	"github.com/turnstream/turnstream/internal/loadcheck"
	"github.com/turnstream/turnstream/internal/telemetrysetup"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/model/echo"
	"github.com/turnstream/turnstream/pkg/telemetry"
	"github.com/turnstream/turnstream/pkg/turn"
)

// telemetryVariant is one wiring of the section.
type telemetryVariant struct {
	name string
	set  *telemetrysetup.Set
	w    *benchwire.Wiring
	cpu  []time.Duration // per turn, one per round
	ttfs []time.Duration // every turn's
}

// Result is the section's measurements, by variant name
// (telemetryOff first).
type Result struct {
	Rounds, Batch int
	Variants      []*telemetryVariant
}

const (
	telemetryOff     = "telemetry off"
	telemetryEMF     = "EMF metrics on, tracing off"
	telemetryTracing = "EMF metrics and tracing on"
)

// Env is what Run measures on.
type Env struct {
	// Store is the DynamoDB store every variant's wiring serves.
	Store chat.Store
	// Prefix makes the run's sessions its own.
	Prefix string
	// Quick measures 3 rounds of 5 turns instead of 30 of 10.
	Quick    bool
	Progress func(format string, a ...any)
}

// Run measures every variant, round by round.
func Run(ctx context.Context, e Env) (*Result, error) {
	rounds, batch := 30, 10
	if e.Quick {
		rounds, batch = 3, 5
	}
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	defer func() { _ = devNull.Close() }()
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	defer collector.Close()
	base := telemetry.Config{Metrics: telemetry.MetricsEMF, Namespace: telemetry.DefaultNamespace, Service: "turnbench"}
	traced := base
	traced.TracesURL = collector.URL + "/v1/traces"
	res := &Result{Rounds: rounds, Batch: batch}
	for _, v := range []struct {
		name string
		cfg  *telemetry.Config
	}{{telemetryOff, nil}, {telemetryEMF, &base}, {telemetryTracing, &traced}} {
		tv := &telemetryVariant{name: v.name}
		if v.cfg != nil {
			if tv.set, err = telemetrysetup.New(*v.cfg, devNull, "turnbench", "turn", "history", "artifacts"); err != nil {
				return nil, err
			}
			defer func() { _ = tv.set.Shutdown(context.Background()) }()
		}
		tv.w, err = benchwire.NewTurnTelemetry(e.Store, tv.set, func(o *turn.Options) { o.Model = echo.New(0, 4) })
		if err != nil {
			return nil, err
		}
		defer tv.w.Close()
		res.Variants = append(res.Variants, tv)
	}
	hc := benchwire.NewHTTPClient(1, nil)
	defer hc.CloseIdleConnections()
	e.Progress("telemetry: %d rounds of %d turns per variant", rounds, batch)
	n := 0
	for r := range rounds {
		for i := range res.Variants {
			tv := res.Variants[(r+i)%len(res.Variants)]
			c := tv.w.Client(hc)
			start := processCPU()
			for range batch {
				n++
				out := loadcheck.Submit(ctx, c, fmt.Sprintf("%s-tel-%d", e.Prefix, n), "t1", "ping", loadcheck.SubmitOptions{})
				if out.Err != nil || !out.Acknowledged() {
					return nil, fmt.Errorf("telemetry turn (%s): status %d, %v", tv.name, out.Status, out.Err)
				}
				tv.ttfs = append(tv.ttfs, out.FirstLine)
				_ = tv.set.Flush(ctx) // as the functions flush before an invocation ends
			}
			if cpu := processCPU(); start >= 0 && cpu >= 0 {
				tv.cpu = append(tv.cpu, (cpu-start)/time.Duration(batch))
			}
		}
	}
	return res, nil
}

// Rows renders the section: each variant's CPU per turn and
// time to first snapshot beside telemetry off's in the same run, with
// the goal (at most 5 % CPU and 0.2 ms time to first snapshot added by
// EMF with tracing off).
func (res *Result) Rows() [][4]string {
	if res == nil || len(res.Variants) == 0 {
		return nil
	}
	off := res.Variants[0]
	var rows [][4]string
	offCPU, offTTFS := median(off.cpu), median(off.ttfs)
	for _, v := range res.Variants[1:] {
		goal := ""
		if v.name == telemetryEMF {
			goal = "; goal <= 1.05x CPU, <= +0.2 ms"
		}
		if len(v.cpu) > 0 && len(off.cpu) > 0 {
			cpu := median(v.cpu)
			rows = append(rows, [4]string{
				fmt.Sprintf("CPU per turn, %s (this process, median of %d rounds of %d turns)", v.name, len(v.cpu), res.Batch),
				ms(cpu), fmt.Sprintf("%s: %s", telemetryOff, ms(offCPU)),
				fmt.Sprintf("%.3fx (%s)%s", float64(cpu)/float64(offCPU), signedDuration(cpu-offCPU), goal),
			})
		}
		t := median(v.ttfs)
		rows = append(rows, [4]string{
			fmt.Sprintf("time to first snapshot, %s (median of %d turns)", v.name, len(v.ttfs)),
			ms(t), fmt.Sprintf("%s: %s", telemetryOff, ms(offTTFS)),
			fmt.Sprintf("%s%s", signedDuration(t-offTTFS), goal),
		})
	}
	return rows
}

// median returns the median of d (0 for none).
func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// signedDuration is d in milliseconds with its sign.
func signedDuration(d time.Duration) string {
	return fmt.Sprintf("%+.3f ms", float64(d)/float64(time.Millisecond))
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }
