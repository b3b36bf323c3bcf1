package telemetry

import (
	"context"
	"encoding/hex"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Handler returns h with a server span around each request, continuing
// the caller's trace: a W3C traceparent header first; else the Lambda
// invocation's X-Ray trace header (the invoke context's
// "x-amzn-trace-id", which Lambda derives from the function URL
// request's X-Amzn-Trace-Id); else the request's own X-Amzn-Trace-Id.
// The span is named by the method ("POST", "GET": paths hold session
// ids) and carries http.request.method, url.path and
// http.response.status_code. Without tracing (Enabled false) h is
// returned as it is.
func (t *Tracing) Handler(h http.Handler) http.Handler {
	if !t.Enabled() {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := Extract(r.Context(), r.Header)
		ctx, span := t.tracer.Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("http.request.method", r.Method), attribute.String("url.path", r.URL.Path)))
		defer span.End()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(sw, r.WithContext(ctx))
		span.SetAttributes(attribute.Int("http.response.status_code", sw.status))
		if sw.status >= 500 {
			span.SetStatus(codes.Error, "")
		}
	})
}

// Extract returns ctx with the remote span context of the caller's trace
// headers (see Handler), or ctx itself when there is none.
func Extract(ctx context.Context, h http.Header) context.Context {
	if h.Get("traceparent") != "" {
		out := propagation.TraceContext{}.Extract(ctx, propagation.HeaderCarrier(h))
		if trace.SpanContextFromContext(out).IsValid() {
			return out
		}
	}
	header, _ := ctx.Value("x-amzn-trace-id").(string) // aws-lambda-go's key
	if sc, ok := ParseXRayHeader(header); ok {
		return trace.ContextWithRemoteSpanContext(ctx, sc)
	}
	if sc, ok := ParseXRayHeader(h.Get("X-Amzn-Trace-Id")); ok {
		return trace.ContextWithRemoteSpanContext(ctx, sc)
	}
	return ctx
}

// ParseXRayHeader parses an AWS X-Ray trace header,
// "Root=1-<8 hex epoch>-<24 hex>;Parent=<16 hex>;Sampled=<0|1>" (fields in
// any order, others ignored), into a remote span context: the trace id is
// the root's 32 hex digits, the span id the parent's. It reports false
// when the root or the parent is missing or malformed.
func ParseXRayHeader(s string) (trace.SpanContext, bool) {
	var root, parent string
	sampled := false
	for _, part := range strings.Split(s, ";") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "Root":
			root = v
		case "Parent":
			parent = v
		case "Sampled":
			sampled = v == "1"
		}
	}
	// Root: "1-" + 8 hex + "-" + 24 hex.
	if len(root) != 35 || root[:2] != "1-" || root[10] != '-' {
		return trace.SpanContext{}, false
	}
	var tid trace.TraceID
	var sid trace.SpanID
	if _, err := hex.Decode(tid[:4], []byte(root[2:10])); err != nil {
		return trace.SpanContext{}, false
	}
	if _, err := hex.Decode(tid[4:], []byte(root[11:])); err != nil {
		return trace.SpanContext{}, false
	}
	if len(parent) != 16 {
		return trace.SpanContext{}, false
	}
	if _, err := hex.Decode(sid[:], []byte(parent)); err != nil {
		return trace.SpanContext{}, false
	}
	cfg := trace.SpanContextConfig{TraceID: tid, SpanID: sid, Remote: true}
	if sampled {
		cfg.TraceFlags = trace.FlagsSampled
	}
	sc := trace.NewSpanContext(cfg)
	return sc, sc.IsValid()
}

// statusWriter records the status a handler wrote. Unwrap lets
// http.ResponseController reach the writer beneath (write deadlines).
type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(p)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush passes a flush on when the writer beneath is an http.Flusher.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
