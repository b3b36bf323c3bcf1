package telemetry

import (
	"context"
	"fmt"

	smithytracing "github.com/aws/smithy-go/tracing"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// SmithyTracerProvider adapts tp to the AWS SDK's own tracing interface
// (smithy-go/tracing; the role of AWS's smithyoteltracing adapter, which
// the Go module proxy does not serve). The SDK then starts a client span
// per operation ("DynamoDB.GetItem", with rpc.system, rpc.service,
// rpc.method and, on failure, the API error code) as a child of the span
// in the call's context. The SDK's internal steps (serialize, sign,
// retry loop, each attempt) are left out: they would multiply a turn's
// spans by seven and say nothing an operator acts on. Nil when tp is nil.
func SmithyTracerProvider(tp trace.TracerProvider) smithytracing.TracerProvider {
	if tp == nil {
		return nil
	}
	return smithyProvider{tp}
}

type smithyProvider struct{ tp trace.TracerProvider }

func (p smithyProvider) Tracer(scope string, _ ...smithytracing.TracerOption) smithytracing.Tracer {
	return smithyTracer{p.tp.Tracer(scope)}
}

type smithyTracer struct{ t trace.Tracer }

func (t smithyTracer) StartSpan(ctx context.Context, name string, opts ...smithytracing.SpanOption) (context.Context, smithytracing.Span) {
	var o smithytracing.SpanOptions
	for _, fn := range opts {
		fn(&o)
	}
	if o.Kind != smithytracing.SpanKindClient {
		// An internal step: no span; its children (none that matter)
		// stay under the operation's.
		return ctx, smithySpan{name: name}
	}
	attrs := make([]attribute.KeyValue, 0, 4)
	for k, v := range o.Properties.Values() {
		if kv, ok := smithyAttr(k, v); ok {
			attrs = append(attrs, kv)
		}
	}
	ctx, span := t.t.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	return ctx, smithySpan{name: name, span: span}
}

// smithySpan is a smithy span over an OpenTelemetry span (nil for an
// internal step, which records nothing).
type smithySpan struct {
	name string
	span trace.Span
}

func (s smithySpan) Name() string { return s.name }

func (s smithySpan) Context() smithytracing.SpanContext {
	if s.span == nil {
		return smithytracing.SpanContext{}
	}
	sc := s.span.SpanContext()
	return smithytracing.SpanContext{TraceID: sc.TraceID().String(), SpanID: sc.SpanID().String(), IsRemote: sc.IsRemote()}
}

func (s smithySpan) AddEvent(name string, opts ...smithytracing.EventOption) {
	if s.span == nil {
		return
	}
	var o smithytracing.EventOptions
	for _, fn := range opts {
		fn(&o)
	}
	var attrs []attribute.KeyValue
	for k, v := range o.Properties.Values() {
		if kv, ok := smithyAttr(k, v); ok {
			attrs = append(attrs, kv)
		}
	}
	s.span.AddEvent(name, trace.WithAttributes(attrs...))
}

func (s smithySpan) SetStatus(status smithytracing.SpanStatus) {
	if s.span == nil {
		return
	}
	switch status {
	case smithytracing.SpanStatusOK:
		s.span.SetStatus(codes.Ok, "")
	case smithytracing.SpanStatusError:
		s.span.SetStatus(codes.Error, "")
	}
}

func (s smithySpan) SetProperty(k, v any) {
	if s.span == nil {
		return
	}
	if k == "exception.message" {
		return // may quote request values (a key, a condition)
	}
	if kv, ok := smithyAttr(k, v); ok {
		s.span.SetAttributes(kv)
	}
}

func (s smithySpan) End() {
	if s.span != nil {
		s.span.End()
	}
}

// smithyAttr converts a smithy property to an attribute (string keys,
// scalar values; others are left out).
func smithyAttr(k, v any) (attribute.KeyValue, bool) {
	key, ok := k.(string)
	if !ok {
		return attribute.KeyValue{}, false
	}
	switch v := v.(type) {
	case string:
		return attribute.String(key, v), true
	case bool:
		return attribute.Bool(key, v), true
	case int:
		return attribute.Int(key, v), true
	case int64:
		return attribute.Int64(key, v), true
	case float64:
		return attribute.Float64(key, v), true
	case fmt.Stringer:
		return attribute.String(key, v.String()), true
	}
	return attribute.KeyValue{}, false
}
