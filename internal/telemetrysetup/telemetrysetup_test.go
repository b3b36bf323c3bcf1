package telemetrysetup_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/turnstream/turnstream/internal/telemetrysetup"
	"github.com/turnstream/turnstream/pkg/telemetry"
)

// TestNew: metrics off builds no recorder, emf one per function; tracing
// only with an endpoint, whose spans FlushAfter exports after each
// request; a nil Set is telemetry off.
func TestNew(t *testing.T) {
	var exported atomic.Int32
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		exported.Add(1)
	}))
	defer collector.Close()
	cfg := telemetry.Config{Metrics: telemetry.MetricsOff, Namespace: "N", Service: "s"}
	off, err := telemetrysetup.New(cfg, io.Discard, "p", "turn")
	if err != nil {
		t.Fatal(err)
	}
	if off.Metrics("turn") != nil || off.Tracer().Enabled() || off.SDKTracerProvider() != nil {
		t.Error("telemetry off builds something")
	}
	cfg.Metrics, cfg.TracesURL = telemetry.MetricsEMF, collector.URL+"/v1/traces"
	on, err := telemetrysetup.New(cfg, io.Discard, "p", "turn", "history")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = on.Shutdown(context.Background()) }()
	if on.Metrics("turn") == nil || on.Metrics("history") == nil || on.Metrics("artifacts") != nil || !on.Tracer().Enabled() || on.SDKTracerProvider() == nil {
		t.Error("telemetry on is missing a part")
	}
	h := on.FlushAfter(on.Tracer().Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	if exported.Load() != 1 {
		t.Errorf("%d exports after one request, want its flush", exported.Load())
	}
	cfg.Namespace = "AWS/Lambda"
	if _, err := telemetrysetup.New(cfg, io.Discard, "p", "turn"); err == nil {
		t.Error("a reserved namespace accepted")
	}
	var none *telemetrysetup.Set
	if none.Metrics("turn") != nil || none.Tracer().Enabled() || none.Flush(context.Background()) != nil {
		t.Error("a nil Set is not off")
	}
}

// BenchmarkNew is what building the telemetry costs a function's start
// (once per cold start), off, with EMF metrics, and with EMF and
// tracing, each in the same run.
func BenchmarkNew(b *testing.B) {
	for name, cfg := range map[string]telemetry.Config{
		"off":         {Metrics: telemetry.MetricsOff, Namespace: "Turnstream", Service: "s"},
		"emf":         {Metrics: telemetry.MetricsEMF, Namespace: "Turnstream", Service: "s"},
		"emf+tracing": {Metrics: telemetry.MetricsEMF, Namespace: "Turnstream", Service: "s", TracesURL: "http://127.0.0.1:9/v1/traces"},
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				s, err := telemetrysetup.New(cfg, io.Discard, "turn", "turn")
				if err != nil {
					b.Fatal(err)
				}
				_ = s.Shutdown(context.Background())
			}
		})
	}
}
