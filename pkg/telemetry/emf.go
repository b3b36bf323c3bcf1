package telemetry

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
)

// Metrics modes (TELEMETRY_METRICS).
const (
	// MetricsEMF writes CloudWatch EMF documents to the log.
	MetricsEMF = "emf"
	// MetricsOff writes none.
	MetricsOff = "off"
)

// Defaults of the metrics configuration.
const (
	// DefaultNamespace is the CloudWatch namespace when
	// TELEMETRY_NAMESPACE is unset.
	DefaultNamespace = "Turnstream"
	// DefaultService is the Service dimension (and the spans'
	// service.name) when OTEL_SERVICE_NAME is unset.
	DefaultService = "turnstream"
)

// Dimension names. Each document names its dimension sets among
// [Service, Function], [Service, Outcome], [Service, Model] and, for tool
// call documents, [Service, Tool, Status] (and [Service, ToolServer,
// Status] for a remote tool's): small, fixed sets whose values
// come from configuration, outcomes and the registry's tool names, never
// from ids (cardinality is money).
const (
	DimService  = "Service"
	DimFunction = "Function"
	DimOutcome  = "Outcome"
	DimModel    = "Model"
	DimTool     = "Tool"
	// DimToolServer is a remote tool's server (an MCP server's name
	// from the definition), on the tool call documents of remote tools.
	DimToolServer = "ToolServer"
	DimStatus     = "Status"
	// DimRating is MetricFeedback's rating, "up" or "down".
	DimRating = "Rating"
)

// Metric names: the OpenTelemetry GenAI conventions' where one exists,
// turnstream.* otherwise. Durations are in milliseconds, counts and
// capacity units in Count (EMF units).
const (
	// MetricInputTokens and MetricOutputTokens are the GenAI convention's
	// gen_ai.client.token.usage with gen_ai.token.type input and output:
	// one value per model call of the turn, with dimension Model.
	MetricInputTokens  = "gen_ai.client.token.usage.input"
	MetricOutputTokens = "gen_ai.client.token.usage.output"
	// MetricOperationDuration is each model call's duration in seconds,
	// the GenAI convention's unit for it, from the request to the end of
	// its stream.
	MetricOperationDuration = "gen_ai.client.operation.duration"
	// MetricTimeToFirstChunk is each model call's time to its first
	// streamed event, in seconds as the convention's.
	MetricTimeToFirstChunk = "gen_ai.client.operation.time_to_first_chunk"
	// MetricCacheReadTokens, MetricCacheWriteTokens and
	// MetricReasoningTokens are, per model call of the turn (dimension
	// Model), the prompt tokens the provider read from and wrote to its
	// prompt cache (model.CacheTokens) and the completion tokens it spent
	// reasoning where it reports them apart (model.Event.ReasoningTokens).
	// Each is sent only when some call of the turn reported it.
	MetricCacheReadTokens  = "turnstream.model.cache_read_tokens"
	MetricCacheWriteTokens = "turnstream.model.cache_write_tokens"
	MetricReasoningTokens  = "turnstream.model.reasoning_tokens"
	// MetricTurnCount is 1 per finished turn, with dimension Outcome.
	MetricTurnCount = "turnstream.turn.count"
	// MetricTurnDuration is a turn's time from its request to its last
	// line (ms).
	MetricTurnDuration = "turnstream.turn.duration"
	// MetricTimeToFirstSnapshot is a turn's time from its request to its
	// first snapshot line written (ms); absent when none was written.
	MetricTimeToFirstSnapshot = "turnstream.turn.time_to_first_snapshot"
	// MetricModelCalls and MetricToolCalls count a turn's model calls and
	// tool calls (chat.Usage); MetricToolCalls also counts, in the tool
	// documents, the calls of one tool ending in one status.
	MetricModelCalls = "turnstream.model.calls"
	MetricToolCalls  = "turnstream.tool.calls"
	// MetricDynamoDBRequests, MetricDynamoDBReadUnits and
	// MetricDynamoDBWriteUnits are the store's requests and the capacity
	// units DynamoDB reported for them (chat.Usage).
	MetricDynamoDBRequests   = "turnstream.dynamodb.requests"
	MetricDynamoDBReadUnits  = "turnstream.dynamodb.read_units"
	MetricDynamoDBWriteUnits = "turnstream.dynamodb.write_units"
	// MetricLeaseConflicts counts submits refused because another turn
	// holds the session (SESSION_BUSY, SESSION_CONFLICT) and turns that
	// lost their lease.
	MetricLeaseConflicts = "turnstream.lease.conflicts"
	// MetricCheckpoints counts the checkpoints a turn wrote.
	MetricCheckpoints = "turnstream.checkpoints"
	// MetricResumeCount is 1 per resume request (the NDJSON or AG-UI
	// resume route).
	MetricResumeCount = "turnstream.resume.count"
	// MetricStopLatency is a stopped turn's time from seeing the stop to
	// its last line (ms).
	MetricStopLatency = "turnstream.stop.latency"
	// MetricRequestCount and MetricRequestDuration are 1 and the time
	// (ms) of a request that ran no turn (history, artifacts, stop,
	// resume, a refused submit).
	MetricRequestCount    = "turnstream.request.count"
	MetricRequestDuration = "turnstream.request.duration"
	// MetricFeedback is 1 per rating of an answer recorded (PUT of a
	// turn's feedback), by Rating: up or down.
	MetricFeedback = "turnstream.feedback"
)

// Outcomes of a turn (dimension Outcome): complete, interrupted, or the
// code of the diagnostic it ended with (MODEL_FAILED, SERVER_TIMEOUT,
// TURN_LOST, TURN_OUTCOME_INDETERMINATE, ...). A request's outcome is
// OutcomeOK or the code of its error answer.
const (
	OutcomeComplete    = "complete"
	OutcomeInterrupted = "interrupted"
	OutcomeOK          = "ok"
)

// Limits of the EMF specification the Recorder keeps to.
const (
	// MaxValuesPerMetric is how many values one metric may carry in one
	// document; a turn's per-model-call values beyond it are left out.
	MaxValuesPerMetric = 100
	// MaxDimensionValueLength is the longest dimension value, in bytes;
	// longer values are cut.
	MaxDimensionValueLength = 1024
)

// RecorderOptions configure NewRecorder.
type RecorderOptions struct {
	// Namespace is the CloudWatch namespace (TELEMETRY_NAMESPACE): 1..255
	// characters of [A-Za-z0-9._#:/-], not starting with "AWS/".
	Namespace string
	// Service is the Service dimension (OTEL_SERVICE_NAME), non-empty.
	Service string
	// Function is the Function dimension: "turn", "history" or
	// "artifacts" (any non-empty name).
	Function string
	// Now is the clock of the documents' timestamps; nil means time.Now.
	Now func() time.Time
}

// ErrInvalidNamespace is NewRecorder's error for a namespace CloudWatch
// refuses.
var ErrInvalidNamespace = errors.New("telemetry: TELEMETRY_NAMESPACE: want 1..255 characters of [A-Za-z0-9._#:/-], not starting with AWS/")

// ValidNamespace reports whether s is a namespace CloudWatch accepts for
// custom metrics: 1..255 characters of [A-Za-z0-9._#:/-], not starting
// with "AWS/". (A loop, not a regular expression: a compiled {1,255}
// repetition cost every cold start 0.7 ms of package initialisation.)
func ValidNamespace(s string) bool {
	if len(s) == 0 || len(s) > 255 || strings.HasPrefix(s, "AWS/") {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !namespaceByte(s[i]) {
			return false
		}
	}
	return true
}

// namespaceByte reports whether c may appear in a namespace.
func namespaceByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("._#:/-", c) >= 0
}

// Recorder writes EMF documents to a writer (the process's standard
// output on Lambda, the dev server's log). Each document is one line, one
// Write call, so that lines of concurrent requests never interleave. A
// nil *Recorder records nothing. Safe for concurrent use.
type Recorder struct {
	w        io.Writer
	mu       sync.Mutex
	ns       string
	service  string
	function string
	now      func() time.Time
	dropped  atomic.Int64
}

// NewRecorder returns a Recorder writing to w. It returns
// ErrInvalidNamespace for a bad namespace, and an error naming the field
// for an empty Service or Function.
func NewRecorder(w io.Writer, o RecorderOptions) (*Recorder, error) {
	switch {
	case !ValidNamespace(o.Namespace):
		return nil, ErrInvalidNamespace
	case o.Service == "" || len(o.Service) > MaxDimensionValueLength:
		return nil, errors.New("telemetry: RecorderOptions.Service: want 1..1024 bytes")
	case o.Function == "" || len(o.Function) > MaxDimensionValueLength:
		return nil, errors.New("telemetry: RecorderOptions.Function: want 1..1024 bytes")
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	return &Recorder{w: w, ns: o.Namespace, service: o.Service, function: o.Function, now: now}, nil
}

// Dropped returns how many documents could not be written (the writer
// failed or panicked).
func (r *Recorder) Dropped() int64 {
	if r == nil {
		return 0
	}
	return r.dropped.Load()
}

// TurnReport is what a finished turn reports.
type TurnReport struct {
	// Outcome is OutcomeComplete, OutcomeInterrupted or the code of the
	// diagnostic the turn ended with.
	Outcome string
	// Duration is from the request's arrival to the turn's last line.
	Duration time.Duration
	// TimeToFirstSnapshot is from the request's arrival to the first
	// snapshot line written; zero when none was written.
	TimeToFirstSnapshot time.Duration
	// Usage is the turn's usage (tokens, calls, store requests and
	// units).
	Usage chat.Usage
	// ModelCalls holds one entry per model call, in order.
	ModelCalls []ModelCall
	// ToolCalls holds one entry per tool call, in order.
	ToolCalls []ToolCall
	// Checkpoints is how many checkpoints the turn wrote.
	Checkpoints int
	// LeaseLost is whether the turn lost its lease (a lease conflict).
	LeaseLost bool
	// StopLatency is a stopped turn's time from seeing the stop to its
	// last line; zero when the turn was not stopped.
	StopLatency time.Duration
	// Model is the model id (dimension Model); the provider's name when
	// the definition names no model (echo).
	Model string
	// Properties are the ids of the turn (never dimensions): session,
	// turn, tenant, principal, definition, provider, request and trace.
	Properties Properties
}

// ModelCall is one model call of a turn.
type ModelCall struct {
	// Duration is from the call's request to the end of its stream.
	Duration time.Duration
	// TimeToFirstChunk is from the request to the first streamed event;
	// zero when none came.
	TimeToFirstChunk time.Duration
	// InputTokens and OutputTokens are the call's usage as the model
	// reported it.
	InputTokens, OutputTokens int64
	// CacheReadTokens and CacheWriteTokens are its prompt cache tokens,
	// ReasoningTokens the part of OutputTokens spent reasoning, as the
	// provider reported them (zero when it did not).
	CacheReadTokens, CacheWriteTokens, ReasoningTokens int64
}

// ToolCall is one tool call of a turn: the tool's name, the status the
// call ended in (complete, error, requires_confirmation), and the remote
// server that ran it ("" for a local tool).
type ToolCall struct {
	Name, Status, Server string
}

// Properties are the ids a document carries as plain members: searchable
// in CloudWatch Logs Insights, never metric dimensions. Empty fields are
// left out.
type Properties struct {
	SessionID    string `json:"sessionId,omitempty"`
	TurnID       string `json:"turnId,omitempty"`
	Tenant       string `json:"tenant,omitempty"`
	Principal    string `json:"principal,omitempty"`
	DefinitionID string `json:"definitionId,omitempty"`
	Provider     string `json:"provider,omitempty"`
	Route        string `json:"route,omitempty"`
	RequestID    string `json:"requestId,omitempty"`
	TraceID      string `json:"traceId,omitempty"`
}

// RequestReport is what a request that ran no turn reports.
type RequestReport struct {
	// Outcome is OutcomeOK or the code of the request's error answer.
	Outcome string
	// Duration is the request's time in the handler.
	Duration time.Duration
	// Usage is the request's store usage.
	Usage chat.Usage
	// Resume is whether the request was a resume.
	Resume bool
	// LeaseConflict is whether a submit was refused because another turn
	// held the session.
	LeaseConflict bool
	// Feedback is the rating the request recorded ("up" or "down"), ""
	// when none (MetricFeedback).
	Feedback string
	// Properties are the request's ids; Route names the route.
	Properties Properties
}

// metric is one metric of a document: its name, unit and value(s).
type metric struct {
	name  string
	unit  string
	value any // float64 or []float64
}

// directive is one EMF MetricDirective: dimension sets and metric names.
type directive struct {
	dims    [][]string
	metrics []string
}

// Turn writes the documents of a finished turn: the turn's, and one per
// (tool, status) of its tool calls.
func (r *Recorder) Turn(rep TurnReport) {
	if r == nil {
		return
	}
	u := rep.Usage
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	turnMetrics := []metric{
		{MetricTurnCount, "Count", 1.0},
		{MetricTurnDuration, "Milliseconds", ms(rep.Duration)},
		{MetricModelCalls, "Count", float64(u.ModelCalls)},
		{MetricToolCalls, "Count", float64(u.ToolCalls)},
		{MetricDynamoDBRequests, "Count", float64(u.StoreRequests)},
		{MetricDynamoDBReadUnits, "Count", u.ReadUnits},
		{MetricDynamoDBWriteUnits, "Count", u.WriteUnits},
		{MetricCheckpoints, "Count", float64(rep.Checkpoints)},
		{MetricLeaseConflicts, "Count", b2f(rep.LeaseLost)},
	}
	if rep.TimeToFirstSnapshot > 0 {
		turnMetrics = append(turnMetrics, metric{MetricTimeToFirstSnapshot, "Milliseconds", ms(rep.TimeToFirstSnapshot)})
	}
	if rep.StopLatency > 0 {
		turnMetrics = append(turnMetrics, metric{MetricStopLatency, "Milliseconds", ms(rep.StopLatency)})
	}
	var in, out, dur, ttfc, cacheRead, cacheWrite, reasoning []float64
	var anyRead, anyWrite, anyReasoning bool
	for i, c := range rep.ModelCalls {
		if i == MaxValuesPerMetric {
			break
		}
		in = append(in, float64(c.InputTokens))
		out = append(out, float64(c.OutputTokens))
		cacheRead = append(cacheRead, float64(c.CacheReadTokens))
		cacheWrite = append(cacheWrite, float64(c.CacheWriteTokens))
		reasoning = append(reasoning, float64(c.ReasoningTokens))
		anyRead = anyRead || c.CacheReadTokens > 0
		anyWrite = anyWrite || c.CacheWriteTokens > 0
		anyReasoning = anyReasoning || c.ReasoningTokens > 0
		dur = append(dur, c.Duration.Seconds())
		if c.TimeToFirstChunk > 0 {
			ttfc = append(ttfc, c.TimeToFirstChunk.Seconds())
		}
	}
	var genAI []metric
	if len(in) > 0 {
		genAI = append(genAI,
			metric{MetricInputTokens, "Count", in},
			metric{MetricOutputTokens, "Count", out},
			metric{MetricOperationDuration, "Seconds", dur})
		if len(ttfc) > 0 {
			genAI = append(genAI, metric{MetricTimeToFirstChunk, "Seconds", ttfc})
		}
		for _, m := range []struct {
			name   string
			values []float64
			any    bool
		}{{MetricCacheReadTokens, cacheRead, anyRead}, {MetricCacheWriteTokens, cacheWrite, anyWrite}, {MetricReasoningTokens, reasoning, anyReasoning}} {
			if m.any {
				genAI = append(genAI, metric{m.name, "Count", m.values})
			}
		}
	}
	dims := map[string]string{DimOutcome: cut(rep.Outcome)}
	directives := []directive{
		{dims: [][]string{{DimService, DimFunction}}, metrics: names(turnMetrics)},
		{dims: [][]string{{DimService, DimOutcome}}, metrics: []string{MetricTurnCount, MetricTurnDuration}},
	}
	if len(genAI) > 0 {
		dims[DimModel] = cut(rep.Model)
		if dims[DimModel] == "" {
			dims[DimModel] = "unknown"
		}
		directives = append(directives,
			directive{dims: [][]string{{DimService, DimModel}}, metrics: names(genAI)},
			directive{dims: [][]string{{DimService, DimFunction}}, metrics: []string{MetricInputTokens, MetricOutputTokens}})
	}
	r.write(directives, append(turnMetrics, genAI...), dims, rep.Properties)

	// One document per (tool, status), in the order first seen; a remote
	// tool's also under [Service, ToolServer, Status].
	type key struct{ name, status, server string }
	counts := map[key]int{}
	var order []key
	for _, c := range rep.ToolCalls {
		k := key{c.Name, c.Status, c.Server}
		if counts[k] == 0 {
			order = append(order, k)
		}
		counts[k]++
	}
	for _, k := range order {
		sets := [][]string{{DimService, DimTool, DimStatus}}
		dims := map[string]string{DimTool: cut(k.name), DimStatus: cut(k.status)}
		if k.server != "" {
			sets = append(sets, []string{DimService, DimToolServer, DimStatus})
			dims[DimToolServer] = cut(k.server)
		}
		r.write([]directive{{dims: sets, metrics: []string{MetricToolCalls}}},
			[]metric{{MetricToolCalls, "Count", float64(counts[k])}}, dims, rep.Properties)
	}
}

// Request writes the document of a request that ran no turn.
func (r *Recorder) Request(rep RequestReport) {
	if r == nil {
		return
	}
	u := rep.Usage
	ms := []metric{
		{MetricRequestCount, "Count", 1.0},
		{MetricRequestDuration, "Milliseconds", float64(rep.Duration.Microseconds()) / 1000},
		{MetricDynamoDBRequests, "Count", float64(u.StoreRequests)},
		{MetricDynamoDBReadUnits, "Count", u.ReadUnits},
		{MetricDynamoDBWriteUnits, "Count", u.WriteUnits},
	}
	if rep.Resume {
		ms = append(ms, metric{MetricResumeCount, "Count", 1.0})
	}
	if rep.LeaseConflict {
		ms = append(ms, metric{MetricLeaseConflicts, "Count", 1.0})
	}
	directives := []directive{
		{dims: [][]string{{DimService, DimFunction}}, metrics: names(ms)},
		{dims: [][]string{{DimService, DimOutcome}}, metrics: []string{MetricRequestCount}},
	}
	dims := map[string]string{DimOutcome: cut(rep.Outcome)}
	if rep.Feedback == "up" || rep.Feedback == "down" {
		ms = append(ms, metric{MetricFeedback, "Count", 1.0})
		directives = append(directives, directive{dims: [][]string{{DimService, DimRating}}, metrics: []string{MetricFeedback}})
		dims[DimRating] = rep.Feedback
	}
	r.write(directives, ms, dims, rep.Properties)
}

// write encodes one document and writes it as one line. A failure (or a
// panic of the writer) drops the document and counts it.
func (r *Recorder) write(directives []directive, metrics []metric, dims map[string]string, props Properties) {
	defer func() {
		if recover() != nil {
			r.dropped.Add(1)
		}
	}()
	line, err := r.encode(directives, metrics, dims, props)
	if err == nil {
		err = r.writeLine(line)
	}
	if err != nil {
		r.dropped.Add(1)
	}
}

// writeLine writes one line under the recorder's lock, released even when
// the writer panics.
func (r *Recorder) writeLine(line []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, err := r.w.Write(line)
	return err
}

// encode returns the document as a JSON line.
func (r *Recorder) encode(directives []directive, metrics []metric, dims map[string]string, props Properties) ([]byte, error) {
	type definition struct {
		Name string `json:"Name"`
		Unit string `json:"Unit"`
	}
	type metricDirective struct {
		Namespace  string       `json:"Namespace"`
		Dimensions [][]string   `json:"Dimensions"`
		Metrics    []definition `json:"Metrics"`
	}
	units := map[string]string{}
	doc := map[string]any{}
	for _, m := range metrics {
		units[m.name] = m.unit
		switch v := m.value.(type) {
		case float64:
			doc[m.name] = finite(v)
		case []float64:
			for i := range v {
				v[i] = finite(v[i])
			}
			doc[m.name] = v
		}
	}
	mds := make([]metricDirective, 0, len(directives))
	for _, d := range directives {
		md := metricDirective{Namespace: r.ns, Dimensions: d.dims}
		for _, n := range d.metrics {
			if _, ok := units[n]; ok {
				md.Metrics = append(md.Metrics, definition{Name: n, Unit: units[n]})
			}
		}
		if len(md.Metrics) > 0 {
			mds = append(mds, md)
		}
	}
	doc["_aws"] = map[string]any{"Timestamp": r.now().UnixMilli(), "CloudWatchMetrics": mds}
	doc[DimService] = r.service
	doc[DimFunction] = r.function
	for k, v := range dims {
		doc[k] = v
	}
	p, err := json.Marshal(props)
	if err != nil {
		return nil, fmt.Errorf("telemetry: encode properties: %w", err)
	}
	var pm map[string]string
	if err := json.Unmarshal(p, &pm); err != nil {
		return nil, fmt.Errorf("telemetry: encode properties: %w", err)
	}
	for k, v := range pm {
		if _, taken := doc[k]; !taken {
			doc[k] = v
		}
	}
	line, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("telemetry: encode document: %w", err)
	}
	return append(line, '\n'), nil
}

// names returns the names of ms, sorted.
func names(ms []metric) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.name
	}
	sort.Strings(out)
	return out
}

// cut returns s cut to MaxDimensionValueLength bytes (at a UTF-8
// boundary).
func cut(s string) string {
	if len(s) <= MaxDimensionValueLength {
		return s
	}
	i := MaxDimensionValueLength
	for i > 0 && s[i]&0xC0 == 0x80 {
		i--
	}
	return s[:i]
}

// finite returns v, or 0 for a NaN or an infinity (which JSON cannot
// carry).
func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
