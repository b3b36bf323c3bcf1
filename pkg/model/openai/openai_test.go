package openai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/openai/openai-go/v3/option"

	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/model/modeltest"
	"github.com/turnstream/turnstream/pkg/model/openai"
	"github.com/turnstream/turnstream/pkg/protocol"
)

const (
	modelID = "gpt-test"
	apiKey  = "sk-test-key"
)

// script is what the test server does for one request: an HTTP error
// (status, body) or SSE data lines.
type script struct {
	status   int
	body     string
	data     []string // each sent as "data: <line>\n\n"
	done     bool     // send "data: [DONE]"
	truncate bool     // drop the connection after data
	hold     bool     // keep the response open until the request ends
}

type server struct {
	t      *testing.T
	script script
	got    chan []byte
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		s.t.Errorf("request %s %s", r.Method, r.URL.Path)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer "+apiKey {
		s.t.Errorf("Authorization = %q", got)
	}
	select {
	case s.got <- body:
	default:
	}
	sc := s.script
	if sc.status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(sc.status)
		_, _ = io.WriteString(w, sc.body)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	flush := w.(http.Flusher)
	for _, d := range sc.data {
		_, _ = io.WriteString(w, "data: "+d+"\n\n")
		flush.Flush()
	}
	if sc.truncate {
		_, _ = io.WriteString(w, `data: {"id":"c","choices":[{"index":0,"delta":{"content":"nev`)
		flush.Flush()
		panic(http.ErrAbortHandler)
	}
	if sc.hold {
		<-r.Context().Done()
		return
	}
	if sc.done {
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
	}
}

func newModel(t *testing.T, sc script) (*openai.Model, *server) {
	t.Helper()
	s := &server{t: t, script: sc, got: make(chan []byte, 1)}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return openai.New(srv.URL+"/v1/", apiKey, option.WithMaxRetries(0), option.WithHTTPClient(srv.Client())), s
}

func simpleRequest() model.Request {
	return model.Request{ModelID: modelID, Messages: []protocol.Message{{Role: protocol.RoleUser, Content: "hi"}}}
}

func chunk(delta, finish string) string {
	f := "null"
	if finish != "" {
		f = `"` + finish + `"`
	}
	return `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + f + `}]}`
}

const usageChunk = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17}}`

func TestStreamEvents(t *testing.T) {
	usage := &protocol.Usage{PromptTokens: 12, CompletionTokens: 5, TotalTokens: 17}
	text := []string{
		chunk(`{"role":"assistant","content":""}`, ""),
		chunk(`{"content":"Hel"}`, ""),
		chunk(`{"content":"lo, wörld"}`, ""),
	}
	textEvents := []model.Event{{TextDelta: "Hel"}, {TextDelta: "lo, wörld"}}
	with := func(lines ...string) []string { return append(append([]string{}, text...), lines...) }
	events := func(evs ...model.Event) []model.Event { return append(append([]model.Event{}, textEvents...), evs...) }
	tests := map[string]struct {
		data []string
		want []model.Event
	}{
		"text": {with(chunk(`{}`, "stop"), usageChunk), events(model.Event{FinishReason: model.FinishStop, ResponseModel: "gpt-test"}, model.Event{Usage: usage})},
		"tool calls split across chunks": {with(
			chunk(`{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"workspace_note","arguments":""}}]}`, ""),
			chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"ti"}}]}`, ""),
			chunk(`{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"current_time","arguments":""}}]}`, ""),
			chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"tle\":\"Pl"}}]}`, ""),
			chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"an\",\"n\":1.50}"}}]}`, ""),
			chunk(`{}`, "tool_calls"),
			usageChunk,
		), events(
			model.Event{ToolCall: &model.ToolCall{ID: "call_a", Name: "workspace_note", Args: json.RawMessage(`{"title":"Plan","n":1.50}`)}},
			model.Event{ToolCall: &model.ToolCall{ID: "call_b", Name: "current_time", Args: json.RawMessage(`{}`)}},
			model.Event{FinishReason: model.FinishToolUse, ResponseModel: "gpt-test"},
			model.Event{Usage: usage},
		)},
		"length":         {with(chunk(`{}`, "length"), usageChunk), events(model.Event{FinishReason: model.FinishLength, ResponseModel: "gpt-test"}, model.Event{Usage: usage})},
		"content filter": {with(chunk(`{}`, "content_filter")), events(model.Event{FinishReason: model.FinishContentFilter, ResponseModel: "gpt-test"})},
		"prompt cache tokens": {with(chunk(`{}`, "stop"),
			`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17,"prompt_tokens_details":{"cached_tokens":8,"cache_write_tokens":2}}}`),
			events(model.Event{FinishReason: model.FinishStop, ResponseModel: "gpt-test"}, model.Event{Usage: usage, Cache: &model.CacheTokens{Read: 8, Write: 2}})},
		"unknown reason": {with(chunk(`{}`, "future")), events(model.Event{FinishReason: model.FinishStop, ResponseModel: "gpt-test"})},
		"finish with content in the same chunk": {[]string{chunk(`{"content":"x"}`, "stop")},
			[]model.Event{{TextDelta: "x"}, {FinishReason: model.FinishStop, ResponseModel: "gpt-test"}}},
		"usage repeated, last wins": {with(
			`{"id":"c","choices":[{"index":0,"delta":{"content":"!"},"finish_reason":null}],"usage":{"prompt_tokens":12,"completion_tokens":4,"total_tokens":16}}`,
			chunk(`{}`, "stop"), usageChunk),
			events(model.Event{TextDelta: "!"}, model.Event{FinishReason: model.FinishStop, ResponseModel: "gpt-test"}, model.Event{Usage: usage})},
		"usage null on chunks": {with(`{"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}`),
			events(model.Event{FinishReason: model.FinishStop})}, // a chunk without "model" names none
		"no usage chunk": {with(chunk(`{}`, "stop")), events(model.Event{FinishReason: model.FinishStop, ResponseModel: "gpt-test"})},
		"reasoning_content, then the answer": {[]string{
			chunk(`{"role":"assistant","content":null,"reasoning_content":"First "}`, ""),
			chunk(`{"content":null,"reasoning_content":"this."}`, ""),
			chunk(`{"content":"Done.","reasoning_content":null}`, ""),
			chunk(`{}`, "stop"),
			`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17,"completion_tokens_details":{"reasoning_tokens":3}}}`,
		}, []model.Event{{ReasoningDelta: "First "}, {ReasoningDelta: "this."}, {TextDelta: "Done."},
			{FinishReason: model.FinishStop, ResponseModel: "gpt-test"}, {Usage: usage, ReasoningTokens: 3}}},
		"reasoning, as OpenRouter names it": {[]string{chunk(`{"reasoning":"Hm."}`, ""), chunk(`{"content":"Ok."}`, "stop")},
			[]model.Event{{ReasoningDelta: "Hm."}, {TextDelta: "Ok."}, {FinishReason: model.FinishStop, ResponseModel: "gpt-test"}}},
		"reasoning that is not a string is ignored": {[]string{chunk(`{"reasoning_content":{"x":1},"reasoning":7}`, ""), chunk(`{"content":"Ok."}`, "stop")},
			[]model.Event{{TextDelta: "Ok."}, {FinishReason: model.FinishStop, ResponseModel: "gpt-test"}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m, _ := newModel(t, script{data: tc.data, done: true})
			modeltest.CheckEvents(t, m, simpleRequest(), tc.want)
		})
	}
}

func TestStreamErrors(t *testing.T) {
	partial := chunk(`{"content":"partial "}`, "")
	tests := map[string]struct {
		script        script
		wantStreamErr bool // the error comes from Stream, not Recv
		wantEvents    int
		wantCode      string
		wantRetryable bool
	}{
		"rate limited 429": {script{status: 429, body: `{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`},
			true, 0, "rate_limit_exceeded", true},
		"server error 500 type only": {script{status: 500, body: `{"error":{"message":"x","type":"server_error","code":null}}`},
			true, 0, "server_error", true},
		"bad gateway no body": {script{status: 502, body: `<html>bad gateway</html>`}, true, 0, "http_502", true},
		"bad request 400": {script{status: 400, body: `{"error":{"message":"x","type":"invalid_request_error","code":"context_length_exceeded"}}`},
			true, 0, "context_length_exceeded", false},
		"unauthorized 401": {script{status: 401, body: `{"error":{"message":"x","type":"invalid_request_error","code":"invalid_api_key"}}`},
			true, 0, "invalid_api_key", false},
		"forbidden 403": {script{status: 403, body: `{"error":{"message":"x","type":"permission_error"}}`}, true, 0, "permission_error", false},
		"not found 404": {script{status: 404, body: `{"error":{"message":"x","type":"invalid_request_error","code":"model_not_found"}}`},
			true, 0, "model_not_found", false},
		"error event mid-stream": {script{data: []string{partial, `{"error":{"message":"overloaded","type":"server_error","code":"overloaded"}}`}},
			false, 1, "overloaded", true},
		"invalid request event mid-stream": {script{data: []string{partial, `{"error":{"message":"x","type":"invalid_request_error"}}`}},
			false, 1, "invalid_request_error", false},
		"connection drops mid-answer": {script{data: []string{partial, partial}, truncate: true},
			false, 2, openai.CodeStreamInterrupted, true},
		"ends before finish_reason": {script{data: []string{partial}, done: true},
			false, 1, openai.CodeStreamInterrupted, true},
		"tool call without a name": {script{data: []string{
			chunk(`{"tool_calls":[{"index":0,"id":"c1","function":{"arguments":"{}"}}]}`, ""),
			chunk(`{}`, "tool_calls"),
		}, done: true}, false, 0, openai.CodeInvalidToolArguments, true},
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
		m := openai.New(srv.URL+"/v1/", apiKey, option.WithMaxRetries(0))
		_, err := m.Stream(context.Background(), simpleRequest())
		var me *model.Error
		if !errors.As(err, &me) || me.Code != openai.CodeConnection || !me.Retryable {
			t.Fatalf("error = %v, want retryable %s", err, openai.CodeConnection)
		}
	})
}

func TestStreamCancellation(t *testing.T) {
	first := chunk(`{"content":"a"}`, "")
	modeltest.RunCancellation(t, simpleRequest(),
		func(t *testing.T) model.Model {
			m, _ := newModel(t, script{data: []string{first}, hold: true})
			return m
		},
		func(t *testing.T) model.Model { m, _ := newModel(t, script{}); return m })
}

// TestRequestMapping checks the chat completions request the real SDK
// sends.
func TestRequestMapping(t *testing.T) {
	m, s := newModel(t, script{data: []string{chunk(`{}`, "stop")}, done: true})
	id1, id2 := "call_1", "call_2"
	req := model.Request{
		ModelID:   modelID,
		System:    "Be brief.",
		MaxTokens: 256,
		Messages: []protocol.Message{
			{Role: protocol.RoleSystem, Content: "ignored"},
			{Role: protocol.RoleUser, Content: "save two notes"},
			{Role: protocol.RoleAssistant, Content: "", ToolCalls: []protocol.ToolCall{
				{ID: id1, Name: "workspace_note", Args: json.RawMessage(`{"title":"A","n":12345678901234567890}`)},
				{ID: id2, Name: "workspace_note", Args: nil},
			}},
			{Role: protocol.RoleTool, ToolCallID: &id1, Content: "Saved.", Status: protocol.MessageComplete},
			{Role: protocol.RoleTool, ToolCallID: &id2, Content: "Tool failed.", Status: protocol.MessageError},
			{Role: protocol.RoleAssistant, Content: "Done."},
		},
		Tools: []model.ToolSpec{{Name: "workspace_note", Description: "Save a note.", InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"number","maximum":12345678901234567890}}}`)}},
	}
	st, err := m.Stream(context.Background(), req)
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	defer modeltest.CloseStream(t, st)
	if _, err := modeltest.Drain(t, st); err != io.EOF {
		t.Fatalf("Recv = %v", err)
	}
	want := `{
	  "model": "gpt-test",
	  "stream": true,
	  "stream_options": {"include_usage": true},
	  "max_completion_tokens": 256,
	  "messages": [
	    {"role": "system", "content": "Be brief."},
	    {"role": "user", "content": "save two notes"},
	    {"role": "assistant", "tool_calls": [
	      {"id": "call_1", "type": "function", "function": {"name": "workspace_note", "arguments": "{\"title\":\"A\",\"n\":12345678901234567890}"}},
	      {"id": "call_2", "type": "function", "function": {"name": "workspace_note", "arguments": "{}"}}
	    ]},
	    {"role": "tool", "tool_call_id": "call_1", "content": "Saved."},
	    {"role": "tool", "tool_call_id": "call_2", "content": "Error: Tool failed."},
	    {"role": "assistant", "content": "Done."}
	  ],
	  "tools": [{"type": "function", "function": {"name": "workspace_note", "description": "Save a note.",
	    "parameters": {"type": "object", "properties": {"n": {"type": "number", "maximum": 12345678901234567890}}}}}]
	}`
	got := <-s.got
	if !jsonEqual(t, got, []byte(want)) {
		t.Errorf("request body =\n%s\nwant\n%s", got, want)
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	decode := func(data []byte) any {
		d := json.NewDecoder(bytes.NewReader(data))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			t.Fatalf("decode %s: %v", data, err)
		}
		return v
	}
	return reflect.DeepEqual(decode(a), decode(b))
}

// TestUsageBeforeAnError: a stream cut after its usage chunk (the
// connection dropped, an error event) still gives the provider's
// usage before its error, so the caller counts the provider's figures, not
// an estimate.
func TestUsageBeforeAnError(t *testing.T) {
	usage := protocol.Usage{PromptTokens: 12, CompletionTokens: 5, TotalTokens: 17}
	for name, sc := range map[string]script{
		"connection drops": {data: []string{chunk(`{"content":"partial "}`, ""), usageChunk}, truncate: true},
		"error event":      {data: []string{chunk(`{"content":"partial "}`, ""), usageChunk, `{"error":{"message":"x","type":"server_error","code":"overloaded"}}`}},
	} {
		t.Run(name, func(t *testing.T) {
			m, _ := newModel(t, sc)
			s, err := m.Stream(context.Background(), simpleRequest())
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = s.Close() }()
			var got *protocol.Usage
			for {
				ev, err := s.Recv()
				if err != nil {
					if err == io.EOF {
						t.Fatal("io.EOF, want an error")
					}
					break
				}
				if ev.Usage != nil {
					got = ev.Usage
				}
			}
			if got == nil || *got != usage {
				t.Errorf("usage %+v, want %+v before the error", got, usage)
			}
		})
	}
}

// TestAttachmentParts: a user message's attachments go before its text:
// an image as a data URL, a PDF as a file part, a text document as text,
// a Word document as a note that the model cannot read it.
func TestAttachmentParts(t *testing.T) {
	m, s := newModel(t, script{data: []string{chunk(`{}`, "stop")}, done: true})
	img, pdf, md, docx := "attachment:att_A", "attachment:att_B", "attachment:att_C", "attachment:att_D"
	part := func(kind, src string) protocol.Part { return protocol.Part{Type: kind, Source: &src} }
	req := model.Request{
		ModelID: modelID,
		Messages: []protocol.Message{{Role: protocol.RoleUser, Content: "compare",
			Parts: []protocol.Part{part("image", img), part("file", pdf), part("file", md), part("file", docx)}}},
		Attachments: map[string]model.Attachment{
			img:  {Kind: model.AttachmentKindImage, MediaType: "image/png", Filename: "cat.png", Data: []byte("PNG")},
			pdf:  {Kind: model.AttachmentKindDocument, MediaType: "application/pdf", Filename: "q3.pdf", Data: []byte("PDF")},
			md:   {Kind: model.AttachmentKindDocument, MediaType: "text/markdown", Filename: "notes.md", Data: []byte("# Notes")},
			docx: {Kind: model.AttachmentKindDocument, MediaType: "application/vnd.openxmlformats-officedocument.wordprocessingml.document", Filename: "a.docx", Data: []byte("PK")},
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
	want := `{"model": "gpt-test", "stream": true, "stream_options": {"include_usage": true},
	  "messages": [{"role": "user", "content": [
	    {"type": "image_url", "image_url": {"url": "data:image/png;base64,UE5H"}},
	    {"type": "file", "file": {"file_data": "data:application/pdf;base64,UERG", "filename": "q3.pdf"}},
	    {"type": "text", "text": "Attached file notes.md (text/markdown):\n# Notes"},
	    {"type": "text", "text": "Attached file a.docx (application/vnd.openxmlformats-officedocument.wordprocessingml.document): this model cannot read files of this type."},
	    {"type": "text", "text": "compare"}
	  ]}]}`
	if got := <-s.got; !jsonEqual(t, got, []byte(want)) {
		t.Errorf("request body =\n%s\nwant\n%s", got, want)
	}
}
