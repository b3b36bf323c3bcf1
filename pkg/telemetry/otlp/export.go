package otlp

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Exporter is an sdktrace.SpanExporter that sends spans to an OTLP/HTTP
// endpoint in OTLP's JSON encoding (the protobuf JSON mapping, with trace
// and span ids as hex strings: opentelemetry-proto's "JSON Protobuf
// Encoding"). The message is the one the SDK's otlptracehttp exporter
// sends as protobuf, field for field (a test decodes both into the
// generated types and compares them). Safe for concurrent use.
type Exporter struct {
	url     string
	headers map[string]string
	client  *http.Client

	mu       sync.Mutex
	shutdown bool
}

var _ sdktrace.SpanExporter = (*Exporter)(nil)

// NewExporter returns an Exporter posting to url (the full traces URL,
// ".../v1/traces") with headers, through client (nil: a client with
// no timeout of its own; the export's context bounds each request).
func NewExporter(url string, headers map[string]string, client *http.Client) *Exporter {
	if client == nil {
		client = &http.Client{}
	}
	return &Exporter{url: url, headers: headers, client: client}
}

// ExportSpans sends spans in one request. A non-2xx answer is an error
// naming its status (the SDK's batch processor reports it to the global
// error handler and drops the batch: telemetry never retries at a
// request's expense).
func (e *Exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.mu.Lock()
	done := e.shutdown
	e.mu.Unlock()
	if done || len(spans) == 0 {
		return nil
	}
	body, err := json.Marshal(tracesData(spans))
	if err != nil {
		return fmt.Errorf("otlp: encode spans: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("otlp: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range e.headers {
		req.Header.Set(k, v)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return fmt.Errorf("otlp: export: %w", err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("otlp: export: HTTP %d", resp.StatusCode)
	}
	return nil
}

// Shutdown makes later exports do nothing.
func (e *Exporter) Shutdown(context.Context) error {
	e.mu.Lock()
	e.shutdown = true
	e.mu.Unlock()
	return nil
}

// The OTLP JSON message (opentelemetry-proto trace/v1, common/v1,
// resource/v1). 64-bit integers are decimal strings, as the protobuf JSON
// mapping writes them; zero values are left out, as it does.
type (
	jsonTraces struct {
		ResourceSpans []jsonResourceSpans `json:"resourceSpans"`
	}
	jsonResourceSpans struct {
		Resource   *jsonResource    `json:"resource,omitempty"`
		ScopeSpans []jsonScopeSpans `json:"scopeSpans"`
		SchemaURL  string           `json:"schemaUrl,omitempty"`
	}
	jsonResource struct {
		Attributes []jsonKeyValue `json:"attributes,omitempty"`
	}
	jsonScopeSpans struct {
		Scope     *jsonScope `json:"scope,omitempty"`
		Spans     []jsonSpan `json:"spans"`
		SchemaURL string     `json:"schemaUrl,omitempty"`
	}
	jsonScope struct {
		Name       string         `json:"name,omitempty"`
		Version    string         `json:"version,omitempty"`
		Attributes []jsonKeyValue `json:"attributes,omitempty"`
	}
	jsonSpan struct {
		TraceID                string         `json:"traceId"`
		SpanID                 string         `json:"spanId"`
		TraceState             string         `json:"traceState,omitempty"`
		ParentSpanID           string         `json:"parentSpanId,omitempty"`
		Flags                  uint32         `json:"flags,omitempty"`
		Name                   string         `json:"name,omitempty"`
		Kind                   int            `json:"kind,omitempty"`
		StartTimeUnixNano      string         `json:"startTimeUnixNano,omitempty"`
		EndTimeUnixNano        string         `json:"endTimeUnixNano,omitempty"`
		Attributes             []jsonKeyValue `json:"attributes,omitempty"`
		DroppedAttributesCount uint32         `json:"droppedAttributesCount,omitempty"`
		Events                 []jsonEvent    `json:"events,omitempty"`
		DroppedEventsCount     uint32         `json:"droppedEventsCount,omitempty"`
		Links                  []jsonLink     `json:"links,omitempty"`
		DroppedLinksCount      uint32         `json:"droppedLinksCount,omitempty"`
		Status                 *jsonStatus    `json:"status,omitempty"`
	}
	jsonEvent struct {
		TimeUnixNano           string         `json:"timeUnixNano,omitempty"`
		Name                   string         `json:"name,omitempty"`
		Attributes             []jsonKeyValue `json:"attributes,omitempty"`
		DroppedAttributesCount uint32         `json:"droppedAttributesCount,omitempty"`
	}
	jsonLink struct {
		TraceID                string         `json:"traceId"`
		SpanID                 string         `json:"spanId"`
		Attributes             []jsonKeyValue `json:"attributes,omitempty"`
		DroppedAttributesCount uint32         `json:"droppedAttributesCount,omitempty"`
		Flags                  uint32         `json:"flags,omitempty"`
	}
	jsonStatus struct {
		Message string `json:"message,omitempty"`
		Code    int    `json:"code,omitempty"`
	}
	jsonKeyValue struct {
		Key   string   `json:"key"`
		Value *jsonAny `json:"value"`
	}
	jsonAny struct {
		StringValue *string     `json:"stringValue,omitempty"`
		BoolValue   *bool       `json:"boolValue,omitempty"`
		IntValue    *string     `json:"intValue,omitempty"`
		DoubleValue any         `json:"doubleValue,omitempty"`
		ArrayValue  *jsonArray  `json:"arrayValue,omitempty"`
		KvlistValue *jsonKvlist `json:"kvlistValue,omitempty"`
		BytesValue  *string     `json:"bytesValue,omitempty"`
	}
	jsonArray struct {
		Values []*jsonAny `json:"values,omitempty"`
	}
	jsonKvlist struct {
		Values []jsonKeyValue `json:"values,omitempty"`
	}
)

// OTLP span flags: the W3C trace flags in the low byte, and whether the
// parent is known to be remote (opentelemetry-proto SpanFlags).
const (
	flagHasIsRemote = 0x100
	flagIsRemote    = 0x200
)

// tracesData groups spans by resource and instrumentation scope.
func tracesData(spans []sdktrace.ReadOnlySpan) jsonTraces {
	type scopeKey struct {
		r attribute.Distinct
		s instrumentation.Scope
	}
	var out jsonTraces
	resources := map[attribute.Distinct]int{}
	scopes := map[scopeKey][2]int{}
	for _, sd := range spans {
		if sd == nil {
			continue
		}
		rk := sd.Resource().Equivalent()
		ri, ok := resources[rk]
		if !ok {
			ri = len(out.ResourceSpans)
			resources[rk] = ri
			rs := jsonResourceSpans{SchemaURL: sd.Resource().SchemaURL()}
			if sd.Resource() != nil {
				rs.Resource = &jsonResource{Attributes: iterValues(sd.Resource().Iter())}
			}
			out.ResourceSpans = append(out.ResourceSpans, rs)
		}
		sk := scopeKey{rk, sd.InstrumentationScope()}
		pos, ok := scopes[sk]
		if !ok {
			scope := sd.InstrumentationScope()
			ss := jsonScopeSpans{SchemaURL: scope.SchemaURL, Spans: []jsonSpan{}}
			if scope != (instrumentation.Scope{}) {
				ss.Scope = &jsonScope{Name: scope.Name, Version: scope.Version, Attributes: iterValues(scope.Attributes.Iter())}
			}
			rs := &out.ResourceSpans[ri]
			pos = [2]int{ri, len(rs.ScopeSpans)}
			scopes[sk] = pos
			rs.ScopeSpans = append(rs.ScopeSpans, ss)
		}
		ss := &out.ResourceSpans[pos[0]].ScopeSpans[pos[1]]
		ss.Spans = append(ss.Spans, span(sd))
	}
	return out
}

func span(sd sdktrace.ReadOnlySpan) jsonSpan {
	sc := sd.SpanContext()
	s := jsonSpan{
		TraceID:                hexID(sc.TraceID()),
		SpanID:                 hexID(sc.SpanID()),
		TraceState:             sc.TraceState().String(),
		Name:                   sd.Name(),
		Kind:                   spanKind(sd.SpanKind()),
		StartTimeUnixNano:      nanos(sd.StartTime().UnixNano()),
		EndTimeUnixNano:        nanos(sd.EndTime().UnixNano()),
		Attributes:             keyValues(sd.Attributes()),
		DroppedAttributesCount: clamp(sd.DroppedAttributes()),
		DroppedEventsCount:     clamp(sd.DroppedEvents()),
		DroppedLinksCount:      clamp(sd.DroppedLinks()),
		Status:                 status(sd.Status()),
	}
	if p := sd.Parent(); p.SpanID().IsValid() {
		s.ParentSpanID = hexID(p.SpanID())
	}
	s.Flags = flags(sc.TraceFlags(), sd.Parent())
	for _, ev := range sd.Events() {
		s.Events = append(s.Events, jsonEvent{
			TimeUnixNano: nanos(ev.Time.UnixNano()), Name: ev.Name,
			Attributes: keyValues(ev.Attributes), DroppedAttributesCount: clamp(ev.DroppedAttributeCount),
		})
	}
	for _, l := range sd.Links() {
		s.Links = append(s.Links, jsonLink{
			TraceID: hexID(l.SpanContext.TraceID()), SpanID: hexID(l.SpanContext.SpanID()),
			Attributes: keyValues(l.Attributes), DroppedAttributesCount: clamp(l.DroppedAttributeCount),
			Flags: flags(l.SpanContext.TraceFlags(), l.SpanContext),
		})
	}
	return s
}

func hexID[T trace.TraceID | trace.SpanID](id T) string {
	switch v := any(id).(type) {
	case trace.TraceID:
		return hex.EncodeToString(v[:])
	case trace.SpanID:
		return hex.EncodeToString(v[:])
	}
	return ""
}

func flags(tf trace.TraceFlags, parent trace.SpanContext) uint32 {
	f := uint32(tf) | flagHasIsRemote
	if parent.IsRemote() {
		f |= flagIsRemote
	}
	return f
}

// nanos is a Unix time in nanoseconds as the JSON mapping writes a
// fixed64: a decimal string; "" (left out) for zero or before 1970.
func nanos(n int64) string {
	if n <= 0 {
		return ""
	}
	return strconv.FormatInt(n, 10)
}

func clamp(n int) uint32 {
	switch {
	case n < 0:
		return 0
	case int64(n) > math.MaxUint32:
		return math.MaxUint32
	}
	return uint32(n)
}

// spanKind maps the API's kind to OTLP's enum (the same numbers:
// unspecified 0, internal 1, server 2, client 3, producer 4, consumer 5).
func spanKind(k trace.SpanKind) int {
	switch k {
	case trace.SpanKindInternal, trace.SpanKindServer, trace.SpanKindClient, trace.SpanKindProducer, trace.SpanKindConsumer:
		return int(k)
	}
	return 0
}

// status maps the SDK's status to OTLP's (unset 0, ok 1, error 2: not
// the API's numbering).
func status(s sdktrace.Status) *jsonStatus {
	out := &jsonStatus{Message: s.Description}
	switch s.Code {
	case codes.Ok:
		out.Code = 1
	case codes.Error:
		out.Code = 2
	}
	return out
}

func iterValues(it attribute.Iterator) []jsonKeyValue {
	var out []jsonKeyValue
	for it.Next() {
		kv := it.Attribute()
		out = append(out, jsonKeyValue{Key: string(kv.Key), Value: value(kv.Value)})
	}
	return out
}

func keyValues(attrs []attribute.KeyValue) []jsonKeyValue {
	if len(attrs) == 0 {
		return nil
	}
	out := make([]jsonKeyValue, len(attrs))
	for i, kv := range attrs {
		out[i] = jsonKeyValue{Key: string(kv.Key), Value: value(kv.Value)}
	}
	return out
}

// value converts an attribute value to an AnyValue, as the SDK's OTLP
// exporter does (an unknown type becomes the string "INVALID").
func value(v attribute.Value) *jsonAny {
	str := func(s string) *jsonAny { return &jsonAny{StringValue: &s} }
	boolean := func(b bool) *jsonAny { return &jsonAny{BoolValue: &b} }
	integer := func(n int64) *jsonAny { s := strconv.FormatInt(n, 10); return &jsonAny{IntValue: &s} }
	double := func(f float64) *jsonAny { return &jsonAny{DoubleValue: jsonDouble(f)} }
	array := func(vs []*jsonAny) *jsonAny { return &jsonAny{ArrayValue: &jsonArray{Values: vs}} }
	switch v.Type() {
	case attribute.BOOL:
		return boolean(v.AsBool())
	case attribute.INT64:
		return integer(v.AsInt64())
	case attribute.FLOAT64:
		return double(v.AsFloat64())
	case attribute.STRING:
		return str(v.AsString())
	case attribute.BOOLSLICE:
		var vs []*jsonAny
		for _, b := range v.AsBoolSlice() {
			vs = append(vs, boolean(b))
		}
		return array(vs)
	case attribute.INT64SLICE:
		var vs []*jsonAny
		for _, n := range v.AsInt64Slice() {
			vs = append(vs, integer(n))
		}
		return array(vs)
	case attribute.FLOAT64SLICE:
		var vs []*jsonAny
		for _, f := range v.AsFloat64Slice() {
			vs = append(vs, double(f))
		}
		return array(vs)
	case attribute.STRINGSLICE:
		var vs []*jsonAny
		for _, s := range v.AsStringSlice() {
			vs = append(vs, str(s))
		}
		return array(vs)
	case attribute.BYTESLICE:
		s := base64.StdEncoding.EncodeToString(v.AsByteSlice())
		return &jsonAny{BytesValue: &s}
	case attribute.SLICE:
		var vs []*jsonAny
		for _, e := range v.AsSlice() {
			vs = append(vs, value(e))
		}
		return array(vs)
	case attribute.MAP:
		return &jsonAny{KvlistValue: &jsonKvlist{Values: keyValues(v.AsMap())}}
	case attribute.EMPTY:
		return &jsonAny{}
	}
	return str("INVALID")
}

// jsonDouble is a double as the protobuf JSON mapping writes it: a
// number, or "NaN", "Infinity", "-Infinity". A zero is the number 0 (not
// left out: the member says which value the AnyValue holds).
func jsonDouble(f float64) any {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return json.Number(strconv.FormatFloat(f, 'g', -1, 64))
}
