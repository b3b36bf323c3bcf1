// Package telemetrysetup builds a process's telemetry from its
// configuration (pkg/config's telemetry.Config), the one way the three
// functions (functions/internal/startup) and the dev server
// (internal/devserver) build it: an EMF recorder per function served
// (pkg/telemetry), and, when an OTLP endpoint is configured, the SDK's
// tracer provider (pkg/telemetry/otlp) shared by the handlers' spans and
// the DynamoDB client's.
package telemetrysetup

import (
	"context"
	"fmt"
	"io"
	"net/http"

	smithytracing "github.com/aws/smithy-go/tracing"
	"go.opentelemetry.io/otel/trace"

	"github.com/turnstream/turnstream/pkg/telemetry"
	"github.com/turnstream/turnstream/pkg/telemetry/otlp"
)

// Set is a process's telemetry. A nil *Set is telemetry off: no
// documents, no spans.
type Set struct {
	recorders map[string]*telemetry.Recorder
	// Tracing starts the handlers' spans (no-op spans when tracing is
	// off).
	Tracing  *telemetry.Tracing
	provider *otlp.Provider
}

// New returns the telemetry of cfg for the functions a process serves
// ("turn", "history", "artifacts": the Function dimension), writing EMF
// documents to w when cfg.Metrics is telemetry.MetricsEMF. process names
// the process in the spans' resource (faas.name). The error names what is
// invalid (telemetry.NewRecorder).
func New(cfg telemetry.Config, w io.Writer, process string, functions ...string) (*Set, error) {
	s := &Set{recorders: map[string]*telemetry.Recorder{}}
	if cfg.Metrics == telemetry.MetricsEMF {
		for _, fn := range functions {
			rec, err := telemetry.NewRecorder(w, telemetry.RecorderOptions{Namespace: cfg.Namespace, Service: cfg.Service, Function: fn})
			if err != nil {
				return nil, fmt.Errorf("telemetry: %w", err)
			}
			s.recorders[fn] = rec
		}
	}
	var tp trace.TracerProvider
	if cfg.Tracing() {
		s.provider = otlp.NewProvider(cfg, process)
		tp = s.provider
	}
	s.Tracing = telemetry.NewTracing(tp, cfg.CaptureContent)
	return s, nil
}

// Metrics returns the recorder of function; nil when metrics are off.
func (s *Set) Metrics(function string) *telemetry.Recorder {
	if s == nil {
		return nil
	}
	return s.recorders[function]
}

// Tracer returns the handlers' Tracing; nil (no spans) for a nil Set.
func (s *Set) Tracer() *telemetry.Tracing {
	if s == nil {
		return nil
	}
	return s.Tracing
}

// SDKTracerProvider is the provider to give the AWS SDK's clients
// (dynamo.ClientOptions.TracerProvider); nil when tracing is off.
func (s *Set) SDKTracerProvider() smithytracing.TracerProvider {
	if s == nil || s.provider == nil {
		return nil
	}
	return telemetry.SmithyTracerProvider(s.provider)
}

// Flush exports the spans ended so far (otlp.Provider.Flush, bounded by
// otlp.FlushTimeout); nothing to do when tracing is off.
func (s *Set) Flush(ctx context.Context) error {
	if s == nil || s.provider == nil {
		return nil
	}
	return s.provider.Flush(ctx)
}

// Shutdown flushes and stops the tracer provider (a process that exits).
func (s *Set) Shutdown(ctx context.Context) error {
	if s == nil || s.provider == nil {
		return nil
	}
	return s.provider.Shutdown(ctx)
}

// FlushAfter returns h followed, on each request, by Flush: on Lambda the
// spans of an invocation must be exported before it ends, since the
// environment is frozen once it has. The flush comes after the handler
// wrote its last byte (a streamed turn's last line has reached the
// client; only the end of the body waits for it). Without tracing h is
// returned as it is.
func (s *Set) FlushAfter(h http.Handler) http.Handler {
	if s == nil || s.provider == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		_ = s.Flush(r.Context()) // a lost batch is the exporter's loss, never the request's
	})
}
