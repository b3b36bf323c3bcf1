package otlp_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/turnstream/turnstream/pkg/telemetry"
	"github.com/turnstream/turnstream/pkg/telemetry/otlp"
)

// collector records the bodies posted to it.
type collector struct {
	mu     sync.Mutex
	bodies map[string][]byte // by content type
	header http.Header
	status int
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.URL.Path != "/v1/traces" || r.Method != http.MethodPost {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	c.bodies[r.Header.Get("Content-Type")] = b
	c.header = r.Header.Clone()
	if c.status != 0 {
		w.WriteHeader(c.status)
	}
}

// spans makes a few spans of every shape the exporter must carry: a
// remote parent, kinds, every attribute type, events, a link, statuses,
// two instrumentation scopes.
func spans(t *testing.T) []sdktrace.ReadOnlySpan {
	t.Helper()
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "svc"), attribute.Int("n", 7))))
	parent, _ := telemetry.ParseXRayHeader("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1")
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), parent)
	a := tp.Tracer("scope-a", trace.WithInstrumentationVersion("1.2.3"))
	ctx, root := a.Start(ctx, "invoke_agent d", trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
		attribute.String("s", "text ü"), attribute.Bool("b", false), attribute.Int64("i", -1<<40),
		attribute.Float64("f", 0.25), attribute.Float64("zero", 0), attribute.Float64("nan", math.NaN()),
		attribute.Float64("inf", math.Inf(-1)),
		attribute.StringSlice("ss", []string{"tool_use", ""}), attribute.BoolSlice("bs", []bool{true}),
		attribute.Int64Slice("is", []int64{1, 2}), attribute.Float64Slice("fs", []float64{1.5}),
	))
	_, child := tp.Tracer("scope-b").Start(ctx, "chat m", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithLinks(trace.Link{SpanContext: parent, Attributes: []attribute.KeyValue{attribute.String("k", "v")}}))
	child.AddEvent("gen_ai.first_chunk", trace.WithAttributes(attribute.Float64(telemetry.AttrTimeToFirstChunk, 12.5)))
	child.SetStatus(codes.Error, "provider error")
	child.End()
	_, ok := a.Start(ctx, "execute_tool t")
	ok.SetStatus(codes.Ok, "")
	ok.End()
	root.End()
	return sr.Ended()
}

// TestExporterMatchesOTLPHTTP: the JSON this exporter sends decodes, with
// the generated OTLP types, to the very message the SDK's own
// otlptracehttp exporter sends as protobuf for the same spans.
func TestExporterMatchesOTLPHTTP(t *testing.T) {
	c := &collector{bodies: map[string][]byte{}}
	srv := httptest.NewServer(c)
	defer srv.Close()
	ss := spans(t)
	ctx := context.Background()

	official, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(srv.URL+"/v1/traces"))
	if err != nil {
		t.Fatal(err)
	}
	if err := official.ExportSpans(ctx, ss); err != nil {
		t.Fatal(err)
	}
	ours := otlp.NewExporter(srv.URL+"/v1/traces", map[string]string{"Authorization": "Bearer x"}, nil)
	if err := ours.ExportSpans(ctx, ss); err != nil {
		t.Fatal(err)
	}

	var want, got collectorpb.ExportTraceServiceRequest
	if err := proto.Unmarshal(c.bodies["application/x-protobuf"], &want); err != nil {
		t.Fatalf("official body: %v", err)
	}
	if err := unmarshalOTLPJSON(c.bodies["application/json"], &got); err != nil {
		t.Fatalf("our body is not OTLP JSON: %v\n%s", err, c.bodies["application/json"])
	}
	sortScopes(&want)
	sortScopes(&got)
	if !proto.Equal(&want, &got) {
		t.Errorf("our message differs from otlptracehttp's:\nwant %v\n got %v", &want, &got)
	}
	if n := len(got.GetResourceSpans()); n != 1 || len(got.ResourceSpans[0].ScopeSpans) != 2 {
		t.Errorf("grouping: %v", &got)
	}
	if c.header.Get("Authorization") != "Bearer x" {
		t.Errorf("headers %v", c.header)
	}
	// Trace and span ids are hex strings in OTLP JSON, not base64.
	if !strings.Contains(string(c.bodies["application/json"]), `"traceId":"5759e988bd862e3fe1be46a994272793"`) {
		t.Errorf("trace id not hex:\n%s", c.bodies["application/json"])
	}
}

// unmarshalOTLPJSON decodes OTLP JSON into m: the protobuf JSON mapping
// with OTLP's one exception, trace and span ids as hex strings where the
// mapping has base64 (converted here before protojson reads them).
func unmarshalOTLPJSON(b []byte, m proto.Message) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	var walk func(any) error
	walk = func(v any) error {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if s, ok := e.(string); ok && (k == "traceId" || k == "spanId" || k == "parentSpanId") {
					raw, err := hex.DecodeString(s)
					if err != nil {
						return fmt.Errorf("%s %q is not hex: %w", k, s, err)
					}
					v[k] = base64.StdEncoding.EncodeToString(raw)
					continue
				}
				if err := walk(e); err != nil {
					return err
				}
			}
		case []any:
			for _, e := range v {
				if err := walk(e); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(v); err != nil {
		return err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return protojson.Unmarshal(b, m)
}

func sortScopes(r *collectorpb.ExportTraceServiceRequest) {
	for _, rs := range r.ResourceSpans {
		slices.SortFunc(rs.ScopeSpans, func(a, b *tracepb.ScopeSpans) int {
			return strings.Compare(a.GetScope().GetName(), b.GetScope().GetName())
		})
	}
}

// TestExporterErrors: a refused export is an error naming its status;
// after Shutdown nothing is sent.
func TestExporterErrors(t *testing.T) {
	c := &collector{bodies: map[string][]byte{}, status: http.StatusServiceUnavailable}
	srv := httptest.NewServer(c)
	defer srv.Close()
	e := otlp.NewExporter(srv.URL+"/v1/traces", nil, nil)
	if err := e.ExportSpans(context.Background(), spans(t)); err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("export to a 503: %v", err)
	}
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.bodies = map[string][]byte{}
	c.status = 0
	if err := e.ExportSpans(context.Background(), spans(t)); err != nil || len(c.bodies) != 0 {
		t.Errorf("after shutdown: %v, %d bodies", err, len(c.bodies))
	}
}

// TestProviderFlush: the provider's spans reach the collector at Flush,
// not before (the batch holds them), within otlp.FlushTimeout.
func TestProviderFlush(t *testing.T) {
	c := &collector{bodies: map[string][]byte{}}
	srv := httptest.NewServer(c)
	defer srv.Close()
	p := otlp.NewProvider(telemetry.Config{TracesURL: srv.URL + "/v1/traces", Service: "svc"}, "turn")
	defer func() { _ = p.Shutdown(context.Background()) }()
	_, s := p.Tracer("x").Start(context.Background(), "work")
	s.End()
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	var got collectorpb.ExportTraceServiceRequest
	c.mu.Lock()
	body := c.bodies["application/json"]
	c.mu.Unlock()
	if err := unmarshalOTLPJSON(body, &got); err != nil {
		t.Fatal(err)
	}
	attrs := map[string]string{}
	for _, kv := range got.ResourceSpans[0].GetResource().GetAttributes() {
		attrs[kv.Key] = kv.Value.GetStringValue()
	}
	if attrs["service.name"] != "svc" || attrs["faas.name"] != "turn" || got.ResourceSpans[0].ScopeSpans[0].Spans[0].Name != "work" {
		t.Errorf("exported %v", &got)
	}
}
