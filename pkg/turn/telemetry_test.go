package turn_test

import (
	"bytes"
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/turnstream/turnstream/internal/ddbfault"
	"github.com/turnstream/turnstream/internal/dynalite"
	"github.com/turnstream/turnstream/internal/emfcheck"
	"github.com/turnstream/turnstream/pkg/definition"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/model/modeltest"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
	"github.com/turnstream/turnstream/pkg/telemetry"
	"github.com/turnstream/turnstream/pkg/tool"
	"github.com/turnstream/turnstream/pkg/turn"
)

// The caller's trace: every span of the turn belongs to it.
const (
	callerTrace = "0af7651916cd43dd8448eb211c80319c"
	callerSpan  = "b7ad6b7169203331"
	traceparent = "00-" + callerTrace + "-" + callerSpan + "-01"
)

// telemetryEnv serves a handler whose one definition "agent" runs p with
// workspace_note, its spans exported to exp (the SDK's in-memory
// exporter, synchronously as each span ends) and its EMF documents
// written to docs.
func telemetryEnv(t *testing.T, p fakeProvider, exp *spanSink, capture bool, docs *syncBuffer) *env {
	t.Helper()
	reg := toolRegistry(t)
	d := definition.Definition{ID: "agent", Revision: 3, Provider: p.name, ModelID: p.modelID, SystemPrompt: "Use tools.",
		Tools: []string{tool.WorkspaceNoteName}, Limits: definition.Limits{MaxSteps: 4}}
	res, err := definition.New([]definition.Definition{d}, "agent", reg.Has)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := telemetry.NewRecorder(docs, telemetry.RecorderOptions{Namespace: "Turnstream", Service: "test", Function: "turn"})
	if err != nil {
		t.Fatal(err)
	}
	tp := exp.provider()
	return newEnv(t, newStoreMemory(), &scriptModel{}, func(o *turn.Options) {
		o.Model, o.Definition = nil, turn.Definition{}
		o.Definitions, o.Tools = res, reg
		o.Models = map[string]model.Model{p.name: p.model}
		o.Tracing = telemetry.NewTracing(tp, capture)
		o.Metrics = rec
	})
}

// spanSink is the SDK's in-memory exporter, fed synchronously as each
// span ends, and a span processor after it that closes serverEnded when
// the request's server span has ended, and so has been exported.
type spanSink struct {
	*tracetest.InMemoryExporter
	serverEnded chan struct{}
	once        sync.Once
}

func newSpanSink() *spanSink {
	return &spanSink{InMemoryExporter: tracetest.NewInMemoryExporter(), serverEnded: make(chan struct{})}
}

// provider returns a tracer provider exporting to s, then signalling.
func (s *spanSink) provider() *sdktrace.TracerProvider {
	return sdktrace.NewTracerProvider(sdktrace.WithSyncer(s.InMemoryExporter), sdktrace.WithSpanProcessor(s))
}

func (s *spanSink) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (s *spanSink) OnEnd(span sdktrace.ReadOnlySpan) {
	if span.SpanKind() == trace.SpanKindServer {
		s.once.Do(func() { close(s.serverEnded) })
	}
}
func (s *spanSink) Shutdown(context.Context) error   { return nil }
func (s *spanSink) ForceFlush(context.Context) error { return nil }

// endedSpans waits until the request's server span has been exported (it
// ends just after the response's last byte) and returns every exported
// span.
func endedSpans(t *testing.T, exp *spanSink) []sdktrace.ReadOnlySpan {
	t.Helper()
	select {
	case <-exp.serverEnded:
	case <-time.After(time.Minute): // a bound for a broken handler, not a pace
		t.Fatal("the server span did not end")
	}
	return exp.GetSpans().Snapshots()
}

func attrs(s sdktrace.ReadOnlySpan) map[string]any {
	m := map[string]any{}
	for _, a := range s.Attributes() {
		m[string(a.Key)] = a.Value.AsInterface()
	}
	return m
}

// TestTurnSpans: a turn with a tool call against the fake Bedrock and
// OpenAI servers makes the span tree of the GenAI conventions under the
// caller's trace: the request's server span, invoke_agent {definition},
// a chat {model} client span per model call (finish reasons, usage, the
// first chunk as an event) and an execute_tool {tool} span, with no
// message content unless asked for; its metrics document agrees.
func TestTurnSpans(t *testing.T) {
	replies := []modeltest.Reply{
		{Text: "Saving.", Calls: []modeltest.Call{{ID: "c1", Name: tool.WorkspaceNoteName, Args: `{"title":"Trip","body":"Pack."}`}}},
		{Text: "Saved."},
	}
	for _, capture := range []bool{false, true} {
		name := "content not captured"
		if capture {
			name = "content captured"
		}
		t.Run(name, func(t *testing.T) {
			forEachFakeProvider(t, replies, func(t *testing.T, p fakeProvider) {
				exp := newSpanSink()
				docs := &syncBuffer{}
				e := telemetryEnv(t, p, exp, capture, docs)
				r := e.submit(t, "s1", "t1", "Note my trip", nil, map[string]string{"traceparent": traceparent})
				r.want(t, http.StatusOK, "")
				if term := r.terminal(t); term.Status != protocol.StatusComplete {
					t.Fatalf("terminal %+v", term)
				}
				checkTurnSpans(t, endedSpans(t, exp), p, capture)
				checkTurnDocuments(t, docs.String(), p)
			})
		})
	}
}

func checkTurnSpans(t *testing.T, spans []sdktrace.ReadOnlySpan, p fakeProvider, capture bool) {
	t.Helper()
	byName := map[string][]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byName[s.Name()] = append(byName[s.Name()], s)
		if s.SpanContext().TraceID().String() != callerTrace {
			t.Errorf("span %q in trace %s, not the caller's", s.Name(), s.SpanContext().TraceID())
		}
		for k := range attrs(s) {
			isContent := k == telemetry.AttrInputMessages || k == telemetry.AttrOutputMessages ||
				k == telemetry.AttrToolCallArguments || k == telemetry.AttrToolCallResult
			if isContent && !capture {
				t.Errorf("span %q carries %s without the opt-in", s.Name(), k)
			}
		}
	}
	one := func(name string, kind trace.SpanKind) sdktrace.ReadOnlySpan {
		t.Helper()
		if len(byName[name]) != 1 {
			t.Fatalf("%d spans %q; spans: %v", len(byName[name]), name, names(spans))
		}
		s := byName[name][0]
		if s.SpanKind() != kind {
			t.Errorf("%q kind %v, want %v", name, s.SpanKind(), kind)
		}
		return s
	}
	server := one("POST /", trace.SpanKindServer) // named by its route (http.route)
	if server.Parent().SpanID().String() != callerSpan || !server.Parent().IsRemote() {
		t.Errorf("server span parent %v, want the caller's %s", server.Parent(), callerSpan)
	}
	if r := attrs(server)["http.route"]; r != "/" {
		t.Errorf("server span http.route %v, want /", r)
	}
	agent := one("invoke_agent agent", trace.SpanKindInternal)
	if agent.Parent().SpanID() != server.SpanContext().SpanID() {
		t.Error("invoke_agent is not the server span's child")
	}
	provider := map[string]string{"bedrock": "aws.bedrock", "openai": "openai"}[p.name]
	a := attrs(agent)
	for k, v := range map[string]any{
		telemetry.AttrOperationName: "invoke_agent", telemetry.AttrConversationID: "s1", telemetry.AttrProviderName: provider,
		telemetry.AttrRequestModel: p.modelID, telemetry.AttrAgentID: "agent", telemetry.AttrTurnID: "t1",
		telemetry.AttrTurnOutcome: "complete", telemetry.AttrDefinitionRev: int64(3),
		telemetry.AttrUsageInputTokens:  int64(2 * modeltest.PromptTokens),
		telemetry.AttrUsageOutputTokens: int64(2 * modeltest.CompletionTokens),
	} {
		if a[k] != v {
			t.Errorf("invoke_agent %s = %v, want %v", k, a[k], v)
		}
	}
	if _, ok := a[telemetry.AttrErrorType]; ok {
		t.Errorf("a complete turn has error.type %v", a[telemetry.AttrErrorType])
	}
	chats := byName["chat "+p.modelID]
	if len(chats) != 2 {
		t.Fatalf("%d chat spans, want 2; spans: %v", len(chats), names(spans))
	}
	slices.SortFunc(chats, func(x, y sdktrace.ReadOnlySpan) int { return x.StartTime().Compare(y.StartTime()) })
	for i, want := range []string{string(model.FinishToolUse), string(model.FinishStop)} {
		c := chats[i]
		ca := attrs(c)
		if c.SpanKind() != trace.SpanKindClient || c.Parent().SpanID() != agent.SpanContext().SpanID() {
			t.Errorf("chat %d: kind %v, parent %v", i, c.SpanKind(), c.Parent().SpanID())
		}
		// OpenAI names the model that answered; Bedrock's stream does not.
		if wantModel := map[string]any{"openai": modeltest.OpenAIModelID}[p.name]; ca[telemetry.AttrResponseModel] != wantModel {
			t.Errorf("chat %d %s = %v, want %v", i, telemetry.AttrResponseModel, ca[telemetry.AttrResponseModel], wantModel)
		}
		if fr, _ := ca[telemetry.AttrResponseFinishReasons].([]string); !slices.Equal(fr, []string{want}) {
			t.Errorf("chat %d finish reasons %v, want [%s]", i, ca[telemetry.AttrResponseFinishReasons], want)
		}
		if ca[telemetry.AttrOperationName] != "chat" || ca[telemetry.AttrProviderName] != provider || ca[telemetry.AttrRequestModel] != p.modelID ||
			ca[telemetry.AttrUsageInputTokens] != int64(modeltest.PromptTokens) || ca[telemetry.AttrUsageOutputTokens] != int64(modeltest.CompletionTokens) {
			t.Errorf("chat %d attributes %v", i, ca)
		}
		if !slices.ContainsFunc(c.Events(), func(ev sdktrace.Event) bool { return ev.Name == telemetry.EventFirstChunk }) {
			t.Errorf("chat %d has no %s event", i, telemetry.EventFirstChunk)
		}
		if capture {
			in, _ := ca[telemetry.AttrInputMessages].(string)
			out, _ := ca[telemetry.AttrOutputMessages].(string)
			if !strings.Contains(in, "Note my trip") || out == "" {
				t.Errorf("chat %d captured content: input %q output %q", i, in, out)
			}
		}
	}
	toolSpan := one("execute_tool "+tool.WorkspaceNoteName, trace.SpanKindInternal)
	ta := attrs(toolSpan)
	if toolSpan.Parent().SpanID() != agent.SpanContext().SpanID() || ta[telemetry.AttrToolName] != tool.WorkspaceNoteName ||
		ta[telemetry.AttrToolCallID] != "c1" || ta[telemetry.AttrOperationName] != "execute_tool" {
		t.Errorf("execute_tool attributes %v", ta)
	}
	if capture && !strings.Contains(ta[telemetry.AttrToolCallArguments].(string), "Pack.") {
		t.Errorf("tool arguments not captured: %v", ta)
	}
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name())
	}
	return out
}

// checkTurnDocuments: the turn's EMF documents (the turn's and its tool
// call's) are valid and say what the spans say.
func checkTurnDocuments(t *testing.T, out string, p fakeProvider) {
	t.Helper()
	var docs []*emfcheck.Document
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		d, err := emfcheck.Check([]byte(l))
		if err != nil {
			t.Fatalf("%v\n%s", err, l)
		}
		docs = append(docs, d)
	}
	if len(docs) != 2 {
		t.Fatalf("%d documents, want the turn's and one tool document:\n%s", len(docs), out)
	}
	turnDoc := docs[0]
	for name, want := range map[string][]float64{
		telemetry.MetricTurnCount:    {1},
		telemetry.MetricInputTokens:  {modeltest.PromptTokens, modeltest.PromptTokens},
		telemetry.MetricOutputTokens: {modeltest.CompletionTokens, modeltest.CompletionTokens},
		telemetry.MetricModelCalls:   {2},
		telemetry.MetricToolCalls:    {1},
	} {
		if !slices.Equal(turnDoc.Metrics[name], want) {
			t.Errorf("%s = %v, want %v", name, turnDoc.Metrics[name], want)
		}
	}
	if turnDoc.DimensionValue("Model") != p.modelID || turnDoc.DimensionValue("Outcome") != "complete" || turnDoc.Root["traceId"] != callerTrace {
		t.Errorf("turn document %v", turnDoc.Root)
	}
	if len(turnDoc.Metrics[telemetry.MetricTimeToFirstSnapshot]) != 1 || len(turnDoc.Metrics[telemetry.MetricTimeToFirstChunk]) != 2 {
		t.Errorf("latencies missing: %v", turnDoc.Metrics)
	}
	if docs[1].DimensionValue("Tool") != tool.WorkspaceNoteName || docs[1].DimensionValue("Status") != "complete" {
		t.Errorf("tool document %v", docs[1].Root)
	}
}

// TestTurnStoreUsage: on DynamoDB, the turn's requests are counted per
// HTTP attempt (the SDK's retry of an answer lost below its retryer
// included: the same count as the client's OperationLog), its write and
// read units are the ones DynamoDB reported, and the SDK's own client
// span of each operation is a child of the turn's spans.
func TestTurnStoreUsage(t *testing.T) {
	ft := ddbfault.New(nil)
	ops := &dynamo.OperationLog{}
	exp := newSpanSink()
	tp := exp.provider()
	opts := dynalite.Options(t)
	opts.Transport = ft
	opts.TracerProvider = telemetry.SmithyTracerProvider(tp)
	client, err := dynamo.NewClient(context.Background(), opts, ops.Option)
	if err != nil {
		t.Fatal(err)
	}
	store := dynamo.New(client, dynamo.Options{Table: dynalite.Table(t), CursorKey: []byte("turn-test-cursor-key-0123456789"),
		ResolveShare: dynalite.ResolveShare})
	docs := &syncBuffer{}
	rec, err := telemetry.NewRecorder(docs, telemetry.RecorderOptions{Namespace: "Turnstream", Service: "test", Function: "turn"})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, store, &scriptModel{Chunks: []string{"Hello ", "there."}}, func(o *turn.Options) {
		o.Metrics, o.Tracing = rec, telemetry.NewTracing(tp, false)
		o.CheckpointInterval = time.Hour // the acknowledgment only
	})
	exp.Reset()
	ops.Reset()
	// The save's answer is lost once: the SDK sends it again.
	ft.SetRule(ddbfault.Once(ddbfault.LoseAnswer, ddbfault.For("UpdateItem", dynamo.PurposeSave)))
	r := e.submit(t, "s1", "t1", "hi", nil, map[string]string{"traceparent": traceparent})
	r.want(t, http.StatusOK, "")
	if term := r.terminal(t); term.Status != protocol.StatusComplete {
		t.Fatalf("terminal %+v", term)
	}
	attempts := len(ops.Take())
	if n := countFaults(ft); n != 1 {
		t.Fatalf("%d faults injected, want 1", n)
	}
	doc, err := emfcheck.Check([]byte(strings.Split(docs.String(), "\n")[0]))
	if err != nil {
		t.Fatal(err)
	}
	if got := doc.Metrics[telemetry.MetricDynamoDBRequests]; len(got) != 1 || got[0] != float64(attempts) {
		t.Errorf("requests %v, the client sent %d attempts", got, attempts)
	}
	if w := doc.Metrics[telemetry.MetricDynamoDBWriteUnits]; len(w) != 1 || w[0] < 3 {
		t.Errorf("write units %v: want the claim's, the acknowledgment's and the save's at least", w)
	}
	var dynamoSpans int
	var agentID trace.SpanID
	spans := endedSpans(t, exp)
	for _, s := range spans {
		if strings.HasPrefix(s.Name(), "invoke_agent ") {
			agentID = s.SpanContext().SpanID()
		}
	}
	for _, s := range spans {
		if !strings.HasPrefix(s.Name(), "DynamoDB.") {
			continue
		}
		dynamoSpans++
		a := attrs(s)
		if s.SpanKind() != trace.SpanKindClient || a["rpc.system"] != "aws-api" || a["rpc.service"] != "DynamoDB" || s.SpanContext().TraceID().String() != callerTrace {
			t.Errorf("%s: kind %v attributes %v", s.Name(), s.SpanKind(), a)
		}
		if s.Name() == "DynamoDB.UpdateItem" && s.Parent().SpanID() == agentID {
			agentID = trace.SpanID{} // at least one write (the save, the release) under the turn's span
		}
	}
	if dynamoSpans < 3 || agentID.IsValid() {
		t.Errorf("%d DynamoDB spans, one under invoke_agent: %v; spans %v", dynamoSpans, !agentID.IsValid(), names(spans))
	}
}

// TestTelemetryFailureKeepsTurn: a metrics writer that fails, or panics,
// changes nothing a client sees: the same lines, the turn complete.
func TestTelemetryFailureKeepsTurn(t *testing.T) {
	for name, w := range map[string]failingWriter{"error": {panics: false}, "panic": {panics: true}} {
		t.Run(name, func(t *testing.T) {
			rec, err := telemetry.NewRecorder(w, telemetry.RecorderOptions{Namespace: "N", Service: "s", Function: "turn"})
			if err != nil {
				t.Fatal(err)
			}
			e := newEnv(t, newStoreMemory(), &scriptModel{Chunks: []string{"Fine."}}, func(o *turn.Options) { o.Metrics = rec })
			r := e.submit(t, "s1", "t1", "hi", nil, nil)
			r.want(t, http.StatusOK, "")
			if term := r.terminal(t); term.Status != protocol.StatusComplete || term.Messages[1].Content != "Fine." {
				t.Fatalf("terminal %+v", term)
			}
			if rec.Dropped() != 1 {
				t.Errorf("dropped %d documents, want the turn's", rec.Dropped())
			}
			// A refused submit (its request document dropped too) still
			// answers as ever.
			e.submit(t, "s1", "t1", "hi", nil, nil).want(t, http.StatusConflict, protocol.CodeTurnAlreadyCompleted)
		})
	}
}

type failingWriter struct{ panics bool }

func (w failingWriter) Write([]byte) (int, error) {
	if w.panics {
		panic("metrics writer broke")
	}
	return 0, bytes.ErrTooLarge
}

// TestAttributeKeysAreGenAI: the GenAI keys are spelled as the
// conventions spell them (a typo would silently break CloudWatch's GenAI
// views, and the span tests use the same constants).
func TestAttributeKeysAreGenAI(t *testing.T) {
	want := map[string]string{
		telemetry.AttrOperationName: "gen_ai.operation.name", telemetry.AttrConversationID: "gen_ai.conversation.id",
		telemetry.AttrProviderName: "gen_ai.provider.name", telemetry.AttrRequestModel: "gen_ai.request.model",
		telemetry.AttrResponseFinishReasons: "gen_ai.response.finish_reasons", telemetry.AttrUsageInputTokens: "gen_ai.usage.input_tokens",
		telemetry.AttrResponseModel:     "gen_ai.response.model",
		telemetry.AttrUsageOutputTokens: "gen_ai.usage.output_tokens", telemetry.AttrToolName: "gen_ai.tool.name",
		telemetry.AttrToolCallID: "gen_ai.tool.call.id", telemetry.AttrErrorType: "error.type",
		telemetry.AttrInputMessages: "gen_ai.input.messages", telemetry.AttrOutputMessages: "gen_ai.output.messages",
	}
	for got, w := range want {
		if got != w {
			t.Errorf("%s, want %s", got, w)
		}
	}
}
