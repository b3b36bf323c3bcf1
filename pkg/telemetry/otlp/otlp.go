package otlp

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/turnstream/turnstream/pkg/telemetry"
)

// FlushTimeout bounds the flush at the end of an invocation (Provider's
// Flush as the functions call it): a collector that does not answer
// costs a turn at most this, after its last line.
const FlushTimeout = 500 * time.Millisecond

// Provider is a tracer provider and the flush that must run before a
// Lambda invocation ends (the environment is frozen after it, and a span
// still in the batch would wait for the next invocation, or be lost).
type Provider struct {
	*sdktrace.TracerProvider
}

// NewProvider returns the provider of cfg (cfg.Tracing() must be true):
// a batch span processor over an Exporter posting to cfg.TracesURL, the
// resource service.name = cfg.Service and faas.name = function.
func NewProvider(cfg telemetry.Config, function string) *Provider {
	exp := NewExporter(cfg.TracesURL, cfg.TracesHeaders, nil)
	res := resource.NewSchemaless(
		attribute.String("service.name", cfg.Service),
		attribute.String("faas.name", function),
		attribute.String("cloud.provider", "aws"),
		attribute.String("telemetry.sdk.language", "go"),
		attribute.String("telemetry.sdk.name", "opentelemetry"),
	)
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp, sdktrace.WithExportTimeout(5*time.Second)),
		sdktrace.WithResource(res),
	)
	return &Provider{tp}
}

// Flush exports the spans ended so far, waiting at most FlushTimeout
// (within ctx); its error is the exporter's, for a log line at most.
func (p *Provider) Flush(ctx context.Context) error {
	if p == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), FlushTimeout)
	defer cancel()
	return p.ForceFlush(ctx)
}
