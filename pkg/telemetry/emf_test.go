package telemetry_test

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/emfcheck"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/httpedge"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/telemetry"
)

func newRecorder(t *testing.T, w *bytes.Buffer) *telemetry.Recorder {
	t.Helper()
	rec, err := telemetry.NewRecorder(w, telemetry.RecorderOptions{
		Namespace: "Turnstream", Service: "stack-1", Function: "turn",
		Now: func() time.Time { return time.UnixMilli(1_800_000_000_000) },
	})
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func lines(b *bytes.Buffer) [][]byte {
	var out [][]byte
	for _, l := range bytes.Split(b.Bytes(), []byte("\n")) {
		if len(l) > 0 {
			out = append(out, l)
		}
	}
	return out
}

var report = telemetry.TurnReport{
	Outcome:             telemetry.OutcomeComplete,
	Duration:            1500 * time.Millisecond,
	TimeToFirstSnapshot: 12500 * time.Microsecond,
	Usage: chat.Usage{InputTokens: 30, OutputTokens: 12, ModelCalls: 2, ToolCalls: 3,
		StoreRequests: 6, ReadUnits: 1.5, WriteUnits: 9},
	ModelCalls: []telemetry.ModelCall{
		{Duration: 400 * time.Millisecond, TimeToFirstChunk: 90 * time.Millisecond, InputTokens: 10, OutputTokens: 5},
		{Duration: 600 * time.Millisecond, TimeToFirstChunk: 110 * time.Millisecond, InputTokens: 20, OutputTokens: 7},
	},
	ToolCalls: []telemetry.ToolCall{{Name: "workspace_note", Status: "complete"}, {Name: "calc__add", Status: "error", Server: "calc"},
		{Name: "workspace_note", Status: "complete"}},
	Checkpoints: 3,
	Model:       "anthropic.claude-x",
	Properties:  telemetry.Properties{SessionID: "s-1", TurnID: "t-1", Tenant: "acme", Principal: "alice", RequestID: "req-1"},
}

// TestTurnDocuments: a finished turn writes one document with the turn's
// metrics and one per (tool, status), each valid EMF; ids are
// properties, never dimensions.
func TestTurnDocuments(t *testing.T) {
	var buf bytes.Buffer
	newRecorder(t, &buf).Turn(report)
	ls := lines(&buf)
	if len(ls) != 3 {
		t.Fatalf("%d documents, want the turn's and two tool documents:\n%s", len(ls), buf.String())
	}
	doc, err := emfcheck.Check(ls[0])
	if err != nil {
		t.Fatalf("turn document: %v\n%s", err, ls[0])
	}
	want := map[string][]float64{
		telemetry.MetricTurnCount:           {1},
		telemetry.MetricTurnDuration:        {1500},
		telemetry.MetricTimeToFirstSnapshot: {12.5},
		telemetry.MetricInputTokens:         {10, 20},
		telemetry.MetricOutputTokens:        {5, 7},
		telemetry.MetricOperationDuration:   {0.4, 0.6},
		telemetry.MetricTimeToFirstChunk:    {0.09, 0.11},
		telemetry.MetricModelCalls:          {2},
		telemetry.MetricToolCalls:           {3},
		telemetry.MetricDynamoDBRequests:    {6},
		telemetry.MetricDynamoDBReadUnits:   {1.5},
		telemetry.MetricDynamoDBWriteUnits:  {9},
		telemetry.MetricCheckpoints:         {3},
		telemetry.MetricLeaseConflicts:      {0},
	}
	for name, values := range want {
		if !slices.Equal(doc.Metrics[name], values) {
			t.Errorf("%s = %v, want %v", name, doc.Metrics[name], values)
		}
	}
	if _, ok := doc.Metrics[telemetry.MetricStopLatency]; ok {
		t.Errorf("a turn that was not stopped reports %s", telemetry.MetricStopLatency)
	}
	if doc.Units[telemetry.MetricTurnDuration] != "Milliseconds" || doc.Units[telemetry.MetricTurnCount] != "Count" ||
		doc.Units[telemetry.MetricOperationDuration] != "Seconds" || doc.Units[telemetry.MetricTimeToFirstChunk] != "Seconds" {
		t.Errorf("units %v", doc.Units)
	}
	for dim, v := range map[string]string{"Service": "stack-1", "Function": "turn", "Outcome": "complete", "Model": "anthropic.claude-x"} {
		if got := doc.DimensionValue(dim); got != v {
			t.Errorf("dimension %s = %q, want %q", dim, got, v)
		}
	}
	allowed := [][]string{{"Service", "Function"}, {"Service", "Outcome"}, {"Service", "Model"}}
	for _, set := range doc.DimensionSets {
		if !slices.ContainsFunc(allowed, func(a []string) bool { return slices.Equal(a, set) }) {
			t.Errorf("dimension set %v is not one of the fixed sets", set)
		}
	}
	for k, v := range map[string]string{"sessionId": "s-1", "turnId": "t-1", "tenant": "acme", "principal": "alice", "requestId": "req-1"} {
		if doc.Root[k] != v {
			t.Errorf("property %s = %v, want %q", k, doc.Root[k], v)
		}
		for _, set := range doc.DimensionSets {
			if slices.Contains(set, k) {
				t.Errorf("%s is a dimension", k)
			}
		}
	}
	tools := map[string]float64{}
	for _, l := range ls[1:] {
		d, err := emfcheck.Check(l)
		if err != nil {
			t.Fatalf("tool document: %v\n%s", err, l)
		}
		wantSets := [][]string{{"Service", "Tool", "Status"}}
		if d.DimensionValue("Tool") == "calc__add" { // a remote tool: its server too
			wantSets = append(wantSets, []string{"Service", "ToolServer", "Status"})
		}
		if !slices.EqualFunc(d.DimensionSets, wantSets, slices.Equal) {
			t.Errorf("tool document dimensions %v, want %v", d.DimensionSets, wantSets)
		}
		tools[d.DimensionValue("Tool")+"/"+d.DimensionValue("Status")+"/"+d.DimensionValue("ToolServer")] = d.Metrics[telemetry.MetricToolCalls][0]
	}
	if len(tools) != 2 || tools["workspace_note/complete/"] != 2 || tools["calc__add/error/calc"] != 1 {
		t.Errorf("tool calls %v, want workspace_note 2 complete, calc__add (server calc) 1 error", tools)
	}
}

// TestTurnDocumentCacheAndReasoningTokens: prompt cache and reasoning
// tokens go out per model call, each only when some call reported it.
func TestTurnDocumentCacheAndReasoningTokens(t *testing.T) {
	for name, tc := range map[string]struct {
		calls []telemetry.ModelCall
		want  map[string][]float64 // nil: absent
	}{
		"none reported": {report.ModelCalls, map[string][]float64{
			telemetry.MetricCacheReadTokens: nil, telemetry.MetricCacheWriteTokens: nil, telemetry.MetricReasoningTokens: nil}},
		"cache read and reasoning": {[]telemetry.ModelCall{
			{InputTokens: 10, OutputTokens: 5, ReasoningTokens: 3},
			{InputTokens: 20, OutputTokens: 7, CacheReadTokens: 1200},
		}, map[string][]float64{
			telemetry.MetricCacheReadTokens: {0, 1200}, telemetry.MetricCacheWriteTokens: nil, telemetry.MetricReasoningTokens: {3, 0}}},
	} {
		t.Run(name, func(t *testing.T) {
			rep := report
			rep.ModelCalls = tc.calls
			var buf bytes.Buffer
			newRecorder(t, &buf).Turn(rep)
			doc, err := emfcheck.Check(lines(&buf)[0])
			if err != nil {
				t.Fatal(err)
			}
			for metric, values := range tc.want {
				got, ok := doc.Metrics[metric]
				if values == nil && ok || values != nil && !slices.Equal(got, values) {
					t.Errorf("%s = %v (present %v), want %v", metric, got, ok, values)
				}
				if values != nil && doc.Units[metric] != "Count" {
					t.Errorf("%s unit %q", metric, doc.Units[metric])
				}
			}
		})
	}
}

// TestTurnDocumentStoppedAndLost: the stop latency appears when the turn
// was stopped; a lost lease counts as a lease conflict; a turn without
// model calls has no Model dimension and no GenAI metrics.
func TestTurnDocumentStoppedAndLost(t *testing.T) {
	var buf bytes.Buffer
	newRecorder(t, &buf).Turn(telemetry.TurnReport{Outcome: "TURN_LOST", Duration: time.Second, LeaseLost: true, StopLatency: 300 * time.Millisecond})
	doc, err := emfcheck.Check(lines(&buf)[0])
	if err != nil {
		t.Fatal(err)
	}
	if doc.Metrics[telemetry.MetricLeaseConflicts][0] != 1 || doc.Metrics[telemetry.MetricStopLatency][0] != 300 {
		t.Errorf("metrics %v", doc.Metrics)
	}
	if _, ok := doc.Root["Model"]; ok || doc.Metrics[telemetry.MetricInputTokens] != nil {
		t.Errorf("a turn without model calls has GenAI metrics: %v", doc.Root)
	}
	if doc.DimensionValue("Outcome") != "TURN_LOST" {
		t.Errorf("outcome %q", doc.DimensionValue("Outcome"))
	}
}

// TestManyModelCalls: past telemetry.MaxValuesPerMetric model calls the
// values stop (EMF takes at most 100 per metric); the document stays
// valid.
func TestManyModelCalls(t *testing.T) {
	calls := make([]telemetry.ModelCall, 150)
	for i := range calls {
		calls[i] = telemetry.ModelCall{Duration: time.Millisecond, InputTokens: 1}
	}
	var buf bytes.Buffer
	newRecorder(t, &buf).Turn(telemetry.TurnReport{Outcome: "complete", ModelCalls: calls, Model: strings.Repeat("m", 2000)})
	doc, err := emfcheck.Check(lines(&buf)[0])
	if err != nil {
		t.Fatal(err)
	}
	if n := len(doc.Metrics[telemetry.MetricInputTokens]); n != telemetry.MaxValuesPerMetric {
		t.Errorf("%d values", n)
	}
	if n := len(doc.DimensionValue("Model")); n != telemetry.MaxDimensionValueLength {
		t.Errorf("model dimension of %d bytes", n)
	}
}

// TestRequestDocument: a request that ran no turn.
func TestRequestDocument(t *testing.T) {
	var buf bytes.Buffer
	newRecorder(t, &buf).Request(telemetry.RequestReport{Outcome: "SESSION_BUSY", Duration: 3 * time.Millisecond,
		Usage: chat.Usage{StoreRequests: 1, WriteUnits: 1}, LeaseConflict: true, Resume: true,
		Properties: telemetry.Properties{Route: "submit", SessionID: "s"}})
	doc, err := emfcheck.Check(lines(&buf)[0])
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]float64{telemetry.MetricRequestCount: 1, telemetry.MetricRequestDuration: 3,
		telemetry.MetricLeaseConflicts: 1, telemetry.MetricResumeCount: 1, telemetry.MetricDynamoDBWriteUnits: 1} {
		if got := doc.Metrics[name]; len(got) != 1 || got[0] != v {
			t.Errorf("%s = %v, want %v", name, got, v)
		}
	}
	if doc.DimensionValue("Outcome") != "SESSION_BUSY" || doc.Root["route"] != "submit" {
		t.Errorf("outcome %q route %v", doc.DimensionValue("Outcome"), doc.Root["route"])
	}
}

// TestFeedbackDocument: a request that recorded a rating counts it by
// rating; one that recorded none carries no feedback metric.
func TestFeedbackDocument(t *testing.T) {
	var buf bytes.Buffer
	rec := newRecorder(t, &buf)
	rec.Request(telemetry.RequestReport{Outcome: telemetry.OutcomeOK, Feedback: "down", Properties: telemetry.Properties{Route: "feedback"}})
	rec.Request(telemetry.RequestReport{Outcome: telemetry.OutcomeOK, Feedback: "sideways", Properties: telemetry.Properties{Route: "feedback"}})
	ls := lines(&buf)
	doc, err := emfcheck.Check(ls[0])
	if err != nil {
		t.Fatal(err)
	}
	if got := doc.Metrics[telemetry.MetricFeedback]; len(got) != 1 || got[0] != 1 || doc.DimensionValue(telemetry.DimRating) != "down" {
		t.Errorf("feedback %v, rating %q", got, doc.DimensionValue(telemetry.DimRating))
	}
	doc, err = emfcheck.Check(ls[1])
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := doc.Metrics[telemetry.MetricFeedback]; ok {
		t.Error("a rating other than up or down was counted")
	}
}

// TestCheckRejects: the checker refuses documents that break the
// specification, so that the tests above can fail.
func TestCheckRejects(t *testing.T) {
	valid := `{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"N","Dimensions":[["D"]],"Metrics":[{"Name":"m","Unit":"Count"}]}]},"D":"x","m":1}`
	if _, err := emfcheck.Check([]byte(valid)); err != nil {
		t.Fatalf("valid document refused: %v", err)
	}
	for name, doc := range map[string]string{
		"no _aws":                `{"D":"x","m":1}`,
		"no timestamp":           `{"_aws":{"CloudWatchMetrics":[]},"m":1}`,
		"fractional timestamp":   `{"_aws":{"Timestamp":1.5,"CloudWatchMetrics":[]}}`,
		"unknown _aws member":    `{"_aws":{"Timestamp":1,"CloudWatchMetrics":[],"X":1}}`,
		"bad namespace":          strings.Replace(valid, `"N"`, `"AWS Lambda!"`, 1),
		"dimension not a string": strings.Replace(valid, `"D":"x"`, `"D":1`, 1),
		"dimension missing":      strings.Replace(valid, `,"D":"x"`, ``, 1),
		"empty dimension":        strings.Replace(valid, `"D":"x"`, `"D":""`, 1),
		"metric missing":         strings.Replace(valid, `,"m":1`, ``, 1),
		"metric a string":        strings.Replace(valid, `"m":1`, `"m":"1"`, 1),
		"empty value array":      strings.Replace(valid, `"m":1`, `"m":[]`, 1),
		"bad unit":               strings.Replace(valid, `"Count"`, `"Tokens"`, 1),
		"bad resolution":         strings.Replace(valid, `"Unit":"Count"`, `"Unit":"Count","StorageResolution":5`, 1),
		"extra definition field": strings.Replace(valid, `"Unit":"Count"`, `"Unit":"Count","Kind":"x"`, 1),
		"duplicate member":       strings.Replace(valid, `"m":1`, `"m":1,"m":2`, 1),
		"dimension and metric":   strings.Replace(valid, `[["D"]]`, `[["m"]]`, 1),
		"trailing text":          valid + ` x`,
	} {
		if _, err := emfcheck.Check([]byte(doc)); err == nil {
			t.Errorf("%s: accepted %s", name, doc)
		}
	}
}

// TestRecorderFailures: a nil Recorder records nothing; a writer that
// fails or panics drops the document, counted, and never reaches the
// caller.
func TestRecorderFailures(t *testing.T) {
	var nilRec *telemetry.Recorder
	nilRec.Turn(report)
	nilRec.Request(telemetry.RequestReport{})
	for name, w := range map[string]writerFunc{
		"error": func([]byte) (int, error) { return 0, errors.New("disk full") },
		"panic": func([]byte) (int, error) { panic("broken writer") },
	} {
		rec, err := telemetry.NewRecorder(w, telemetry.RecorderOptions{Namespace: "N", Service: "s", Function: "f"})
		if err != nil {
			t.Fatal(err)
		}
		rec.Turn(report)
		rec.Request(telemetry.RequestReport{Outcome: "ok"})
		if got := rec.Dropped(); got != 4 {
			t.Errorf("%s: dropped %d, want 4 (turn, two tool documents, request)", name, got)
		}
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func TestNewRecorderOptions(t *testing.T) {
	for name, o := range map[string]telemetry.RecorderOptions{
		"empty namespace": {Service: "s", Function: "f"},
		"AWS/ namespace":  {Namespace: "AWS/Lambda", Service: "s", Function: "f"},
		"space":           {Namespace: "My App", Service: "s", Function: "f"},
		"no service":      {Namespace: "N", Function: "f"},
		"no function":     {Namespace: "N", Service: "s"},
	} {
		if _, err := telemetry.NewRecorder(&bytes.Buffer{}, o); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestMeasureNamesTheErrorCode: a request answered with an error body
// (httpedge.WriteError) through a writer that wraps Measure's own is
// reported with the body's code as its outcome, and flushes reach the
// client's writer through Measure's; a request answered without an error
// body is OK.
func TestMeasureNamesTheErrorCode(t *testing.T) {
	var buf bytes.Buffer
	rec := newRecorder(t, &buf)
	busy := telemetry.Measure(rec, nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		logged := &httpedge.Recorder{ResponseWriter: w}
		httpedge.WriteError(logged, protocol.NewDiagnostic(protocol.CodeSessionBusy))
		if logged.Code != protocol.CodeSessionBusy {
			t.Errorf("the outer recorder noted %q", logged.Code)
		}
	}))
	ok := telemetry.Measure(rec, nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("{}\n"))
		if err := http.NewResponseController(w).Flush(); err != nil {
			t.Errorf("flush: %v", err)
		}
	}))
	busy.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/", nil))
	w := httptest.NewRecorder()
	ok.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
	if !w.Flushed {
		t.Error("the flush did not reach the client's writer")
	}
	docs := lines(&buf)
	if len(docs) != 2 {
		t.Fatalf("%d documents, want 2", len(docs))
	}
	for i, want := range []string{protocol.CodeSessionBusy, telemetry.OutcomeOK} {
		doc, err := emfcheck.Check(docs[i])
		if err != nil {
			t.Fatal(err)
		}
		if got := doc.DimensionValue("Outcome"); got != want {
			t.Errorf("request %d: outcome %q, want %q", i, got, want)
		}
		conflicts := doc.Metrics[telemetry.MetricLeaseConflicts]
		if wantConflict := want == protocol.CodeSessionBusy; (len(conflicts) == 1 && conflicts[0] == 1) != wantConflict {
			t.Errorf("request %d: lease conflicts %v", i, conflicts)
		}
	}
}
