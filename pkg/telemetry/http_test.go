package telemetry_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/turnstream/turnstream/pkg/telemetry"
)

func TestParseXRayHeader(t *testing.T) {
	sc, ok := telemetry.ParseXRayHeader("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1")
	if !ok || sc.TraceID().String() != "5759e988bd862e3fe1be46a994272793" || sc.SpanID().String() != "53995c3f42cd8ad8" || !sc.IsSampled() || !sc.IsRemote() {
		t.Fatalf("parsed %v %v", sc, ok)
	}
	if sc, ok := telemetry.ParseXRayHeader("Parent=53995c3f42cd8ad8; Root=1-5759e988-bd862e3fe1be46a994272793; Sampled=0; Lineage=a:1"); !ok || sc.IsSampled() {
		t.Errorf("reordered, not sampled: %v %v", sc, ok)
	}
	for _, bad := range []string{
		"", "Root=1-5759e988-bd862e3fe1be46a994272793", // no parent
		"Root=2-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8",
		"Root=1-5759e98g-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8",
		"Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f",
		"Root=1-00000000-000000000000000000000000;Parent=0000000000000000",
	} {
		if _, ok := telemetry.ParseXRayHeader(bad); ok {
			t.Errorf("accepted %q", bad)
		}
	}
}

// TestHandlerContinuesTrace: the server span continues a traceparent
// first, then the Lambda invocation's X-Ray header, then the request's
// X-Amzn-Trace-Id; it records method, path and status.
func TestHandlerContinuesTrace(t *testing.T) {
	const (
		w3c    = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
		xrayID = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
		other  = "Root=1-6759e988-bd862e3fe1be46a994272793;Parent=63995c3f42cd8ad8;Sampled=1"
	)
	for name, tc := range map[string]struct {
		headers           map[string]string
		lambdaTrace       string
		wantTrace, parent string
	}{
		"traceparent wins": {map[string]string{"traceparent": w3c, "X-Amzn-Trace-Id": other}, xrayID, "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"},
		"lambda context":   {map[string]string{"X-Amzn-Trace-Id": other}, xrayID, "5759e988bd862e3fe1be46a994272793", "53995c3f42cd8ad8"},
		"request header":   {map[string]string{"X-Amzn-Trace-Id": other}, "", "6759e988bd862e3fe1be46a994272793", "63995c3f42cd8ad8"},
		"none":             {nil, "", "", ""},
	} {
		t.Run(name, func(t *testing.T) {
			exp := tracetest.NewInMemoryExporter()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
			tr := telemetry.NewTracing(tp, false)
			h := tr.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if !trace.SpanContextFromContext(r.Context()).IsValid() {
					t.Error("no span in the handler's context")
				}
				w.WriteHeader(http.StatusTeapot)
			}))
			req := httptest.NewRequest(http.MethodPost, "/sessions/s1/turns", nil)
			for k, v := range tc.headers {
				req.Header.Set(k, v)
			}
			if tc.lambdaTrace != "" {
				req = req.WithContext(context.WithValue(req.Context(), "x-amzn-trace-id", tc.lambdaTrace)) //nolint:staticcheck // aws-lambda-go's own key
			}
			h.ServeHTTP(httptest.NewRecorder(), req)
			spans := exp.GetSpans().Snapshots()
			if len(spans) != 1 {
				t.Fatalf("%d spans", len(spans))
			}
			s := spans[0]
			if s.SpanKind() != trace.SpanKindServer || s.Name() != "POST" {
				t.Errorf("span %q kind %v", s.Name(), s.SpanKind())
			}
			if tc.wantTrace != "" && (s.SpanContext().TraceID().String() != tc.wantTrace || s.Parent().SpanID().String() != tc.parent) {
				t.Errorf("trace %s parent %s, want %s %s", s.SpanContext().TraceID(), s.Parent().SpanID(), tc.wantTrace, tc.parent)
			}
			if tc.wantTrace == "" && s.Parent().IsValid() {
				t.Errorf("a parent without trace headers: %v", s.Parent())
			}
			attrs := map[string]any{}
			for _, a := range s.Attributes() {
				attrs[string(a.Key)] = a.Value.AsInterface()
			}
			if attrs["http.response.status_code"] != int64(http.StatusTeapot) || attrs["url.path"] != "/sessions/s1/turns" {
				t.Errorf("attributes %v", attrs)
			}
		})
	}
}

// TestTracingOff: without a provider nothing is wrapped and spans are
// no-ops.
func TestTracingOff(t *testing.T) {
	for _, tr := range []*telemetry.Tracing{nil, telemetry.NewTracing(nil, true)} {
		if tr.Enabled() || tr.CaptureContent() {
			t.Errorf("%v: enabled", tr)
		}
		h := http.NotFoundHandler()
		if got := tr.Handler(h); got == nil {
			t.Error("nil handler")
		}
		_, span := tr.StartAgent(context.Background(), "d", 1, "echo", "m", "s", "t")
		if span.IsRecording() {
			t.Error("recording span without tracing")
		}
		span.End()
	}
}

// TestServerSpanNamedByRoute: a request whose route records its path
// template (Scope.SetHTTPRoute, from ServeMux's Request.Pattern) gets a
// server span named "<method> <template>" with http.route; one that
// matches no route keeps the method alone, and no span carries an id of
// the path.
func TestServerSpanNamedByRoute(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tr := telemetry.NewTracing(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)), false)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /sessions/{id}/turns", func(w http.ResponseWriter, r *http.Request) {
		telemetry.ScopeFrom(r.Context()).SetHTTPRoute(r.Pattern)
	})
	mux.HandleFunc("/sessions/{id}", func(w http.ResponseWriter, r *http.Request) {
		telemetry.ScopeFrom(r.Context()).SetHTTPRoute(r.Pattern)
	})
	mux.HandleFunc("POST /{$}", func(w http.ResponseWriter, r *http.Request) {
		telemetry.ScopeFrom(r.Context()).SetHTTPRoute(r.Pattern)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		telemetry.ScopeFrom(r.Context()).SetHTTPRoute("") // no route
		w.WriteHeader(http.StatusNotFound)
	})
	h := telemetry.Measure(nil, tr, mux)
	for _, tc := range []struct{ method, path, name, route string }{
		{http.MethodGet, "/sessions/s-9/turns", "GET /sessions/{id}/turns", "/sessions/{id}/turns"},
		{http.MethodDelete, "/sessions/s-9", "DELETE /sessions/{id}", "/sessions/{id}"},
		{http.MethodPost, "/", "POST /", "/"},
		{http.MethodGet, "/nowhere/s-9", "GET", ""},
	} {
		exp.Reset()
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(tc.method, tc.path, nil))
		spans := exp.GetSpans().Snapshots()
		if len(spans) != 1 {
			t.Fatalf("%s %s: %d spans", tc.method, tc.path, len(spans))
		}
		route := ""
		for _, a := range spans[0].Attributes() {
			if a.Key == "http.route" {
				route = a.Value.AsString()
			}
		}
		if spans[0].Name() != tc.name || route != tc.route {
			t.Errorf("%s %s: span %q, http.route %q; want %q, %q", tc.method, tc.path, spans[0].Name(), route, tc.name, tc.route)
		}
	}
}
