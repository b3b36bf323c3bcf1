package bedrock_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"

	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/model/bedrock"
	"github.com/turnstream/turnstream/pkg/model/modeltest"
	"github.com/turnstream/turnstream/pkg/protocol"
)

const modelID = "anthropic.claude-test-v1:0"

// frame is one ConverseStream event-stream message: an event (Event set)
// or an exception (Exception set), with a JSON payload.
type frame struct {
	Event     string
	Exception string
	Payload   string
}

func ev(kind, payload string) frame { return frame{Event: kind, Payload: payload} }

func encodeFrame(t testing.TB, f frame) []byte {
	t.Helper()
	var msg eventstream.Message
	if f.Exception != "" {
		msg.Headers.Set(":message-type", eventstream.StringValue("exception"))
		msg.Headers.Set(":exception-type", eventstream.StringValue(f.Exception))
	} else {
		msg.Headers.Set(":message-type", eventstream.StringValue("event"))
		msg.Headers.Set(":event-type", eventstream.StringValue(f.Event))
	}
	msg.Headers.Set(":content-type", eventstream.StringValue("application/json"))
	msg.Payload = []byte(f.Payload)
	var buf bytes.Buffer
	if err := eventstream.NewEncoder().Encode(&buf, msg); err != nil {
		t.Fatalf("encode frame: %v", err)
	}
	return buf.Bytes()
}

// script is what the test server does for one request.
type script struct {
	status    int    // non-200: an error response with errorType
	errorType string // X-Amzn-ErrorType
	frames    []frame
	// truncate, when true, writes half of one more frame and then drops
	// the connection.
	truncate bool
	// hold, when true, keeps the response open until the request ends.
	hold bool
	// modelID is the model the request's path must name; "" is modelID.
	modelID string
}

type server struct {
	t      *testing.T
	script script
	got    chan []byte // request bodies
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	id := cmp.Or(s.script.modelID, modelID)
	if r.URL.EscapedPath() != "/model/"+strings.NewReplacer(":", "%3A", "/", "%2F").Replace(id)+"/converse-stream" {
		s.t.Errorf("path = %q", r.URL.EscapedPath())
	}
	if !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
		s.t.Errorf("request is not SigV4 signed")
	}
	select {
	case s.got <- body:
	default:
	}
	sc := s.script
	if sc.status != 0 && sc.status != http.StatusOK {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Amzn-ErrorType", sc.errorType)
		w.WriteHeader(sc.status)
		_, _ = io.WriteString(w, `{"message":"provider says no"}`)
		return
	}
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	w.WriteHeader(http.StatusOK)
	flush := w.(http.Flusher)
	for _, f := range sc.frames {
		_, _ = w.Write(encodeFrame(s.t, f))
		flush.Flush()
	}
	if sc.truncate {
		b := encodeFrame(s.t, ev("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"never"}}`))
		_, _ = w.Write(b[:len(b)/2])
		flush.Flush()
		panic(http.ErrAbortHandler)
	}
	if sc.hold {
		<-r.Context().Done()
	}
}

// newModel starts a server running sc and returns a bedrock Model whose
// real bedrockruntime client points at it (static credentials, no
// retries).
func newModel(t *testing.T, sc script) (*bedrock.Model, *server) {
	t.Helper()
	s := &server{t: t, script: sc, got: make(chan []byte, 1)}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	client := bedrockruntime.New(bedrockruntime.Options{
		Region:           "us-east-1",
		BaseEndpoint:     aws.String(srv.URL),
		Credentials:      credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""),
		RetryMaxAttempts: 1,
		HTTPClient:       srv.Client(),
	})
	return bedrock.New(client), s
}

func simpleRequest() model.Request {
	return model.Request{ModelID: modelID, Messages: []protocol.Message{{Role: protocol.RoleUser, Content: "hi"}}}
}

func TestStreamEvents(t *testing.T) {
	textFrames := []frame{
		ev("messageStart", `{"role":"assistant"}`),
		ev("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"Hel"}}`),
		ev("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"lo, wörld"}}`),
		ev("contentBlockStop", `{"contentBlockIndex":0}`),
	}
	stop := func(reason string) []frame {
		return []frame{
			ev("messageStop", `{"stopReason":"`+reason+`"}`),
			ev("metadata", `{"usage":{"inputTokens":12,"outputTokens":5,"totalTokens":17},"metrics":{"latencyMs":9}}`),
		}
	}
	usage := &protocol.Usage{PromptTokens: 12, CompletionTokens: 5, TotalTokens: 17}
	text := []model.Event{{TextDelta: "Hel"}, {TextDelta: "lo, wörld"}}
	tests := map[string]struct {
		frames []frame
		want   []model.Event
	}{
		"text": {append(append([]frame{}, textFrames...), stop("end_turn")...),
			append(append([]model.Event{}, text...), model.Event{FinishReason: model.FinishStop}, model.Event{Usage: usage})},
		"tool calls split across frames": {append(append(append([]frame{}, textFrames...),
			ev("contentBlockStart", `{"contentBlockIndex":1,"start":{"toolUse":{"toolUseId":"tooluse_1","name":"workspace_note"}}}`),
			ev("contentBlockDelta", `{"contentBlockIndex":1,"delta":{"toolUse":{"input":"{\"ti"}}}`),
			ev("contentBlockDelta", `{"contentBlockIndex":1,"delta":{"toolUse":{"input":"tle\":\"Pl"}}}`),
			ev("contentBlockDelta", `{"contentBlockIndex":1,"delta":{"toolUse":{"input":"an\",\"n\":1.50}"}}}`),
			ev("contentBlockStop", `{"contentBlockIndex":1}`),
			ev("contentBlockStart", `{"contentBlockIndex":2,"start":{"toolUse":{"toolUseId":"tooluse_2","name":"current_time"}}}`),
			ev("contentBlockStop", `{"contentBlockIndex":2}`),
		), stop("tool_use")...),
			append(append([]model.Event{}, text...),
				model.Event{ToolCall: &model.ToolCall{ID: "tooluse_1", Name: "workspace_note", Args: json.RawMessage(`{"title":"Plan","n":1.50}`)}},
				model.Event{ToolCall: &model.ToolCall{ID: "tooluse_2", Name: "current_time", Args: json.RawMessage(`{}`)}},
				model.Event{FinishReason: model.FinishToolUse}, model.Event{Usage: usage})},
		"max tokens":         {stop("max_tokens"), []model.Event{{FinishReason: model.FinishLength}, {Usage: usage}}},
		"context window":     {stop("model_context_window_exceeded"), []model.Event{{FinishReason: model.FinishLength}, {Usage: usage}}},
		"guardrail":          {stop("guardrail_intervened"), []model.Event{{FinishReason: model.FinishContentFilter}, {Usage: usage}}},
		"content filtered":   {stop("content_filtered"), []model.Event{{FinishReason: model.FinishContentFilter}, {Usage: usage}}},
		"stop sequence":      {stop("stop_sequence"), []model.Event{{FinishReason: model.FinishStop}, {Usage: usage}}},
		"unknown stopReason": {stop("future_reason"), []model.Event{{FinishReason: model.FinishStop}, {Usage: usage}}},
		"no metadata":        {[]frame{ev("messageStop", `{"stopReason":"end_turn"}`)}, []model.Event{{FinishReason: model.FinishStop}}},
		"unknown event type ignored": {append([]frame{ev("futureEvent", `{"x":1}`)}, stop("end_turn")...),
			[]model.Event{{FinishReason: model.FinishStop}, {Usage: usage}}},
		"prompt cache tokens": {[]frame{ev("messageStop", `{"stopReason":"end_turn"}`),
			ev("metadata", `{"usage":{"inputTokens":12,"outputTokens":5,"totalTokens":17,"cacheReadInputTokens":300,"cacheWriteInputTokens":40},"metrics":{"latencyMs":9}}`)},
			[]model.Event{{FinishReason: model.FinishStop}, {Usage: usage, Cache: &model.CacheTokens{Read: 300, Write: 40}}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m, _ := newModel(t, script{frames: tc.frames})
			modeltest.CheckEvents(t, m, simpleRequest(), tc.want)
		})
	}
}

func TestStreamErrors(t *testing.T) {
	delta := ev("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"partial "}}`)
	tests := map[string]struct {
		script        script
		wantStreamErr bool // the error comes from Stream, not Recv
		wantEvents    int
		wantCode      string
		wantRetryable bool
	}{
		"throttling 429":            {script{status: 429, errorType: "ThrottlingException"}, true, 0, "ThrottlingException", true},
		"service unavailable 503":   {script{status: 503, errorType: "ServiceUnavailableException"}, true, 0, "ServiceUnavailableException", true},
		"model not ready 429":       {script{status: 429, errorType: "ModelNotReadyException"}, true, 0, "ModelNotReadyException", true},
		"internal server 500":       {script{status: 500, errorType: "InternalServerException"}, true, 0, "InternalServerException", true},
		"validation 400":            {script{status: 400, errorType: "ValidationException"}, true, 0, "ValidationException", false},
		"access denied 403":         {script{status: 403, errorType: "AccessDeniedException"}, true, 0, "AccessDeniedException", false},
		"not found 404":             {script{status: 404, errorType: "ResourceNotFoundException"}, true, 0, "ResourceNotFoundException", false},
		"unknown 502 is retryable":  {script{status: 502, errorType: "BadGatewayThing"}, true, 0, "BadGatewayThing", true},
		"unknown 418 not retryable": {script{status: 418, errorType: "TeapotException"}, true, 0, "TeapotException", false},
		"throttling mid-stream": {script{frames: []frame{delta, {Exception: "throttlingException", Payload: `{"message":"slow down"}`}}},
			false, 1, "ThrottlingException", true},
		"model stream error mid-stream": {script{frames: []frame{delta, {Exception: "modelStreamErrorException", Payload: `{"message":"x","originalStatusCode":500}`}}},
			false, 1, "ModelStreamErrorException", true},
		"validation mid-stream": {script{frames: []frame{delta, {Exception: "validationException", Payload: `{"message":"x"}`}}},
			false, 1, "ValidationException", false},
		"connection drops mid-answer": {script{frames: []frame{delta, delta}, truncate: true},
			false, 2, bedrock.CodeStreamInterrupted, true},
		"ends before messageStop": {script{frames: []frame{delta}},
			false, 1, bedrock.CodeStreamInterrupted, true},
		"toolUse without a name": {script{frames: []frame{
			ev("contentBlockStart", `{"contentBlockIndex":0,"start":{"toolUse":{"toolUseId":"t1","name":""}}}`),
			ev("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"toolUse":{"input":"{}"}}}`),
			ev("contentBlockStop", `{"contentBlockIndex":0}`),
		}}, false, 0, bedrock.CodeMalformedToolUse, true},
		"malformed_tool_use stop": {script{frames: []frame{ev("messageStop", `{"stopReason":"malformed_tool_use"}`)}},
			false, 0, bedrock.CodeMalformedToolUse, true},
	}
	failures := map[string]modeltest.StreamFailure{}
	for name, tc := range tests {
		failures[name] = modeltest.StreamFailure{
			Model:        func(t *testing.T) model.Model { m, _ := newModel(t, tc.script); return m },
			BeforeStream: tc.wantStreamErr, Events: tc.wantEvents, Code: tc.wantCode, Retryable: tc.wantRetryable,
		}
	}
	modeltest.RunStreamFailures(t, simpleRequest(), failures)
	t.Run("connection refused", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		srv.Close()
		client := bedrockruntime.New(bedrockruntime.Options{
			Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), RetryMaxAttempts: 1,
			Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""),
		})
		_, err := bedrock.New(client).Stream(context.Background(), simpleRequest())
		var me *model.Error
		if !errors.As(err, &me) || me.Code != bedrock.CodeConnection || !me.Retryable {
			t.Fatalf("error = %v, want retryable %s", err, bedrock.CodeConnection)
		}
	})
}

func TestStreamCancellation(t *testing.T) {
	first := ev("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"a"}}`)
	modeltest.RunCancellation(t, simpleRequest(),
		func(t *testing.T) model.Model {
			m, _ := newModel(t, script{frames: []frame{first}, hold: true})
			return m
		},
		func(t *testing.T) model.Model { m, _ := newModel(t, script{}); return m })
}

// TestRequestMapping checks the Converse request the real SDK sends.
func TestRequestMapping(t *testing.T) {
	m, s := newModel(t, script{frames: []frame{ev("messageStop", `{"stopReason":"end_turn"}`)}})
	id1, id2 := "tooluse_1", "tooluse_2"
	req := model.Request{
		ModelID:   modelID,
		System:    "Be brief.",
		MaxTokens: 256,
		Messages: []protocol.Message{
			{Role: protocol.RoleSystem, Content: "ignored"},
			{Role: protocol.RoleUser, Content: "earlier"},
			{Role: protocol.RoleAssistant, Content: "answer"},
			{Role: protocol.RoleUser, Content: "save two notes"},
			{Role: protocol.RoleAssistant, Content: "", ToolCalls: []protocol.ToolCall{
				{ID: id1, Name: "workspace_note", Args: json.RawMessage(`{"title":"A","n":12345678901234567890}`)},
				{ID: id2, Name: "workspace_note", Args: json.RawMessage(`{}`)},
			}},
			{Role: protocol.RoleTool, ToolCallID: &id1, Content: "Saved.", Status: protocol.MessageComplete},
			{Role: protocol.RoleTool, ToolCallID: &id2, Content: "", Status: protocol.MessageError},
		},
		Tools: []model.ToolSpec{{Name: "workspace_note", Description: "Save a note.", InputSchema: json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"}}}`)}},
	}
	sent(t, m, req)
	want := `{
	  "system": [{"text": "Be brief."}],
	  "inferenceConfig": {"maxTokens": 256},
	  "messages": [
	    {"role": "user", "content": [{"text": "earlier"}]},
	    {"role": "assistant", "content": [{"text": "answer"}]},
	    {"role": "user", "content": [{"text": "save two notes"}]},
	    {"role": "assistant", "content": [
	      {"toolUse": {"toolUseId": "tooluse_1", "name": "workspace_note", "input": {"title": "A", "n": 12345678901234567890}}},
	      {"toolUse": {"toolUseId": "tooluse_2", "name": "workspace_note", "input": {}}}
	    ]},
	    {"role": "user", "content": [
	      {"toolResult": {"toolUseId": "tooluse_1", "content": [{"text": "Saved."}], "status": "success"}},
	      {"toolResult": {"toolUseId": "tooluse_2", "content": [{"text": "(no output)"}], "status": "error"}}
	    ]}
	  ],
	  "toolConfig": {"tools": [{"toolSpec": {"name": "workspace_note", "description": "Save a note.",
	    "inputSchema": {"json": {"type": "object", "properties": {"title": {"type": "string"}}}}}}]}
	}`
	got := <-s.got
	if !jsonEqual(t, got, []byte(want)) {
		t.Errorf("request body =\n%s\nwant\n%s", got, want)
	}
}

// sent streams req through m to its end (the test servers answer
// every request alike); the request body is then on the server's got.
func sent(t *testing.T, m *bedrock.Model, req model.Request) {
	t.Helper()
	st, err := m.Stream(context.Background(), req)
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	defer modeltest.CloseStream(t, st)
	if _, err := modeltest.Drain(t, st); err != io.EOF {
		t.Fatalf("Recv = %v", err)
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	da := json.NewDecoder(bytes.NewReader(a))
	da.UseNumber()
	db := json.NewDecoder(bytes.NewReader(b))
	db.UseNumber()
	if err := da.Decode(&va); err != nil {
		t.Fatalf("decode %s: %v", a, err)
	}
	if err := db.Decode(&vb); err != nil {
		t.Fatalf("decode want: %v", err)
	}
	return reflect.DeepEqual(va, vb)
}

// TestAttachmentBlocks: a user message's attachments go before its text
// as Converse image and document blocks, their bytes base64 in the JSON,
// document names as Converse allows them and unique; a part whose file
// the request does not hold is left out.
func TestAttachmentBlocks(t *testing.T) {
	m, s := newModel(t, script{frames: []frame{ev("messageStop", `{"stopReason":"end_turn"}`)}})
	img, doc, doc2, gone := "attachment:att_A", "attachment:att_B", "attachment:att_C", "attachment:att_D"
	part := func(kind, src string) protocol.Part { return protocol.Part{Type: kind, Source: &src} }
	req := model.Request{
		ModelID: modelID,
		Messages: []protocol.Message{{Role: protocol.RoleUser, Content: "compare these",
			Parts: []protocol.Part{part("image", img), part("file", doc), part("file", gone), part("file", doc2)}}},
		Attachments: map[string]model.Attachment{
			img:  {Kind: model.AttachmentKindImage, Format: "png", MediaType: "image/png", Filename: "cat.png", Data: []byte("PNG")},
			doc:  {Kind: model.AttachmentKindDocument, Format: "pdf", MediaType: "application/pdf", Filename: "Q3 report, final.pdf", Data: []byte("PDF")},
			doc2: {Kind: model.AttachmentKindDocument, Format: "md", MediaType: "text/markdown", Filename: "Q3 report  final.md", Data: []byte("# Q")},
		},
	}
	st, err := m.Stream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer modeltest.CloseStream(t, st)
	if _, err := modeltest.Drain(t, st); err != io.EOF {
		t.Fatalf("Recv = %v", err)
	}
	want := `{"messages": [{"role": "user", "content": [
	  {"image": {"format": "png", "source": {"bytes": "UE5H"}}},
	  {"document": {"format": "pdf", "name": "Q3 report final", "source": {"bytes": "UERG"}}},
	  {"document": {"format": "md", "name": "Q3 report final (2)", "source": {"bytes": "IyBR"}}},
	  {"text": "compare these"}
	]}]}`
	if got := <-s.got; !jsonEqual(t, got, []byte(want)) {
		t.Errorf("request body =\n%s\nwant\n%s", got, want)
	}
	for in, out := range map[string]string{"Résumé.pdf": "R sum", "../../x.txt": "x", "日本.pdf": "document", ".hidden": "hidden", "a[1](2)-b.csv": "a[1](2)-b"} {
		if got := bedrock.DocumentName(in); got != out {
			t.Errorf("DocumentName(%q) = %q, want %q", in, got, out)
		}
	}
}

// TestPromptCachePoints: with Request.PromptCache a model that caches
// gets a cachePoint after the system prompt, after its tools (Claude, not
// Nova) and at the end of the last message; a model not known to cache,
// or a request without PromptCache, gets none. The fake server's rules
// accept every such body.
func TestPromptCachePoints(t *testing.T) {
	const (
		claude  = "us.anthropic.claude-sonnet-4-20250514-v1:0"
		nova    = "amazon.nova-pro-v1:0"
		unknown = "meta.llama3-70b-instruct-v1:0"
	)
	cp := `{"cachePoint": {"type": "default"}}`
	sys := func(cached bool) string {
		if cached {
			return `[{"text": "Be brief."}, ` + cp + `]`
		}
		return `[{"text": "Be brief."}]`
	}
	last := func(cached bool) string {
		if cached {
			return `[{"text": "now"}, ` + cp + `]`
		}
		return `[{"text": "now"}]`
	}
	tools := func(cached bool) string {
		spec := `{"toolSpec": {"name": "workspace_note", "inputSchema": {"json": {"type": "object"}}}}`
		if cached {
			return `[` + spec + `, ` + cp + `]`
		}
		return `[` + spec + `]`
	}
	for name, tc := range map[string]struct {
		modelID                string
		cache                  bool
		system, tools, message bool
	}{
		"claude":              {claude, true, true, true, true},
		"claude by its ARN":   {"arn:aws:bedrock:us-east-1:123456789012:inference-profile/" + claude, true, true, true, true},
		"nova: no tools":      {nova, true, true, false, true},
		"a model that cannot": {unknown, true, false, false, false},
		"caching off":         {claude, false, false, false, false},
	} {
		t.Run(name, func(t *testing.T) {
			m, s := newModel(t, script{frames: []frame{ev("messageStop", `{"stopReason":"end_turn"}`)}, modelID: tc.modelID})
			req := model.Request{ModelID: tc.modelID, System: "Be brief.", PromptCache: tc.cache,
				Messages: []protocol.Message{
					{Role: protocol.RoleUser, Content: "earlier"},
					{Role: protocol.RoleAssistant, Content: "answer"},
					{Role: protocol.RoleUser, Content: "now"},
				},
				Tools: []model.ToolSpec{{Name: "workspace_note", InputSchema: json.RawMessage(`{"type":"object"}`)}}}
			sent(t, m, req)
			got := <-s.got
			want := `{"system": ` + sys(tc.system) + `, "messages": [
			  {"role": "user", "content": [{"text": "earlier"}]},
			  {"role": "assistant", "content": [{"text": "answer"}]},
			  {"role": "user", "content": ` + last(tc.message) + `}],
			  "toolConfig": {"tools": ` + tools(tc.tools) + `}}`
			if !jsonEqual(t, got, []byte(want)) {
				t.Errorf("request body =\n%s\nwant\n%s", got, want)
			}
			if err := modeltest.ValidateConverse(got); err != nil {
				t.Errorf("the fake server would refuse it: %v", err)
			}
		})
	}
}

// TestStreamReasoning: a reasoningContent block's text deltas are
// ReasoningDeltas as they come, and the whole block, signature or
// redacted content included, is one Event.Reasoning at its end.
func TestStreamReasoning(t *testing.T) {
	frames := []frame{
		ev("messageStart", `{"role":"assistant"}`),
		ev("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"reasoningContent":{"text":"First "}}}`),
		ev("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"reasoningContent":{"text":"this."}}}`),
		ev("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"reasoningContent":{"signature":"c2ln"}}}`),
		ev("contentBlockStop", `{"contentBlockIndex":0}`),
		ev("contentBlockDelta", `{"contentBlockIndex":1,"delta":{"reasoningContent":{"redactedContent":"AAEC"}}}`),
		ev("contentBlockStop", `{"contentBlockIndex":1}`),
		ev("contentBlockDelta", `{"contentBlockIndex":2,"delta":{"text":"Answer."}}`),
		ev("contentBlockStop", `{"contentBlockIndex":2}`),
		ev("messageStop", `{"stopReason":"end_turn"}`),
	}
	m, _ := newModel(t, script{frames: frames})
	modeltest.CheckEvents(t, m, simpleRequest(), []model.Event{
		{ReasoningDelta: "First "},
		{ReasoningDelta: "this."},
		{Reasoning: &model.ReasoningBlock{Text: "First this.", Signature: "c2ln"}},
		{Reasoning: &model.ReasoningBlock{Redacted: []byte{0, 1, 2}}},
		{TextDelta: "Answer."},
		{FinishReason: model.FinishStop},
	})
}

// TestThinkingRequest: with Request.Reasoning, a Claude model that
// thinks gets additionalModelRequestFields.thinking with the budget (cut
// below MaxTokens, dropped below the minimum), and its assistant messages
// get their reasoning blocks back first, unchanged; without Reasoning, or
// on a model that takes no budget, neither is sent.
func TestThinkingRequest(t *testing.T) {
	const (
		claude = "us.anthropic.claude-sonnet-4-20250514-v1:0"
		nova   = "amazon.nova-pro-v1:0"
	)
	blocks := map[string][]model.ReasoningBlock{"a1": {
		{Text: "Look it up.", Signature: "c2ln"},
		{Redacted: []byte{0, 1, 2}},
	}}
	back := `{"reasoningContent": {"reasoningText": {"text": "Look it up.", "signature": "c2ln"}}},
	  {"reasoningContent": {"redactedContent": "AAEC"}}, `
	for name, tc := range map[string]struct {
		modelID   string
		reasoning *model.Reasoning
		maxTokens int
		budget    int // 0: no thinking field
	}{
		"claude thinks":            {claude, &model.Reasoning{BudgetTokens: 2048}, 4096, 2048},
		"a budget cut below max":   {claude, &model.Reasoning{BudgetTokens: 4096}, 3000, 2999},
		"a budget cut below 1,024": {claude, &model.Reasoning{BudgetTokens: 2048}, 1024, 0},
		"no reasoning asked":       {claude, nil, 4096, 0},
		"a model that takes none":  {nova, &model.Reasoning{BudgetTokens: 2048}, 4096, 0},
	} {
		t.Run(name, func(t *testing.T) {
			m, s := newModel(t, script{frames: []frame{ev("messageStop", `{"stopReason":"end_turn"}`)}, modelID: tc.modelID})
			id := "lookup_1"
			req := model.Request{ModelID: tc.modelID, Reasoning: tc.reasoning, MaxTokens: tc.maxTokens, ReasoningBlocks: blocks,
				Messages: []protocol.Message{
					{Role: protocol.RoleUser, Content: "find it"},
					{ID: "a1", Role: protocol.RoleAssistant, Content: "Checking.", ToolCalls: []protocol.ToolCall{{ID: id, Name: "lookup", Args: json.RawMessage(`{}`), Status: protocol.ToolCallComplete}}},
					{Role: protocol.RoleTool, ToolCallID: &id, Content: "found"},
				},
				Tools: []model.ToolSpec{{Name: "lookup", InputSchema: json.RawMessage(`{"type":"object"}`)}}}
			sent(t, m, req)
			got := <-s.got
			extra, first := "", ""
			if tc.budget > 0 {
				extra = fmt.Sprintf(`"additionalModelRequestFields": {"thinking": {"type": "enabled", "budget_tokens": %d}}, `, tc.budget)
				first = back
			}
			want := `{` + extra + `"inferenceConfig": {"maxTokens": ` + strconv.Itoa(tc.maxTokens) + `}, "messages": [
			  {"role": "user", "content": [{"text": "find it"}]},
			  {"role": "assistant", "content": [` + first + `{"text": "Checking."}, {"toolUse": {"toolUseId": "lookup_1", "name": "lookup", "input": {}}}]},
			  {"role": "user", "content": [{"toolResult": {"toolUseId": "lookup_1", "content": [{"text": "found"}], "status": "success"}}]}],
			  "toolConfig": {"tools": [{"toolSpec": {"name": "lookup", "inputSchema": {"json": {"type": "object"}}}}]}}`
			if !jsonEqual(t, got, []byte(want)) {
				t.Errorf("request body =\n%s\nwant\n%s", got, want)
			}
		})
	}
}
