package modeltest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3/option"

	"github.com/turnstream/turnstream/pkg/model/openai"
)

// OpenAIModelID is the model the OpenAI fake expects in its requests.
const OpenAIModelID = "gpt-fake"

// OpenAIKey is the bearer key the fake expects.
const OpenAIKey = "sk-fake-key"

// OpenAI is a fake OpenAI chat completions server (streaming). It is safe
// for concurrent use.
type OpenAI struct {
	t   testing.TB
	srv *httptest.Server

	mu      sync.Mutex
	replies []Reply
	bodies  [][]byte
}

// NewOpenAI starts a fake chat completions server answering its calls
// with replies, in order; a call past the script, or a request that
// ValidateChatCompletions rejects, gets a 400 invalid_request_error and
// fails t. The server stops when t ends.
func NewOpenAI(t testing.TB, replies ...Reply) *OpenAI {
	t.Helper()
	o := &OpenAI{t: t, replies: replies}
	o.srv = httptest.NewServer(http.HandlerFunc(o.serve))
	t.Cleanup(o.srv.Close)
	return o
}

// Model returns an openai.Model whose real openai-go client calls the
// fake (no retries).
func (o *OpenAI) Model() *openai.Model {
	return openai.New(o.srv.URL+"/v1/", OpenAIKey, option.WithMaxRetries(0), option.WithHTTPClient(o.srv.Client()))
}

// BaseURL is the fake's API base URL (OPENAI_BASE_URL, with its "/v1/")
// for a client built elsewhere, which must send OpenAIKey.
func (o *OpenAI) BaseURL() string { return o.srv.URL + "/v1/" }

// Add appends replies to the script.
func (o *OpenAI) Add(replies ...Reply) {
	o.mu.Lock()
	o.replies = append(o.replies, replies...)
	o.mu.Unlock()
}

// Requests returns the request bodies received so far, oldest first.
func (o *OpenAI) Requests() [][]byte {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([][]byte(nil), o.bodies...)
}

// Transcripts returns, per request, its conversation in the lines
// Bedrock.Transcripts writes (system messages left out; a tool message is
// "result <tool_call_id>: <content>").
func (o *OpenAI) Transcripts() [][]string {
	var out [][]string
	for _, body := range o.Requests() {
		var req chatRequest
		_ = json.Unmarshal(body, &req)
		var lines []string
		for _, m := range req.Messages {
			switch m.Role {
			case "user", "assistant":
				if text := m.text(); text != "" {
					lines = append(lines, transcriptLine(m.Role, text))
				}
				for _, tc := range m.ToolCalls {
					lines = append(lines, "call "+tc.ID+" "+tc.Function.Name+" "+compactJSON([]byte(tc.Function.Arguments)))
				}
			case "tool":
				lines = append(lines, transcriptLine("result "+m.ToolCallID, m.text()))
			}
		}
		out = append(out, lines)
	}
	return out
}

func (o *OpenAI) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	o.mu.Lock()
	o.bodies = append(o.bodies, body)
	n := len(o.bodies)
	var reply *Reply
	if n <= len(o.replies) {
		reply = &o.replies[n-1]
	}
	o.mu.Unlock()
	err := ValidateChatCompletions(body)
	switch {
	case r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions":
		err = fmt.Errorf("unexpected request %s %s", r.Method, r.URL.Path)
	case r.Header.Get("Authorization") != "Bearer "+OpenAIKey:
		err = errors.New("wrong or missing bearer key")
	case err == nil && reply == nil:
		err = fmt.Errorf("call %d is past the script", n)
	}
	if err != nil {
		o.t.Errorf("openai fake: request %d rejected: %v\n%s", n, err, body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		msg, _ := json.Marshal(map[string]any{"error": map[string]any{"message": err.Error(), "type": "invalid_request_error", "param": "messages", "code": nil}})
		_, _ = w.Write(msg)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for _, line := range chatChunks(*reply) {
		_, _ = io.WriteString(w, "data: "+line+"\n\n")
	}
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
}

// chatChunks encodes reply as chat.completion.chunk events: the role, the
// text, each call's id and name then its arguments in two fragments, the
// finish reason, and a usage chunk.
func chatChunks(reply Reply) []string {
	type obj = map[string]any
	chunk := func(delta obj, finish any) string {
		b, _ := json.Marshal(obj{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1, "model": OpenAIModelID,
			"choices": []obj{{"index": 0, "delta": delta, "finish_reason": finish}}})
		return string(b)
	}
	lines := []string{chunk(obj{"role": "assistant", "content": ""}, nil)}
	if reply.Reasoning != "" {
		lines = append(lines, chunk(obj{"content": nil, "reasoning_content": reply.Reasoning}, nil))
	}
	if reply.Text != "" {
		lines = append(lines, chunk(obj{"content": reply.Text}, nil))
	}
	for i, c := range reply.Calls {
		half := len(c.Args) / 2
		lines = append(lines,
			chunk(obj{"tool_calls": []obj{{"index": i, "id": c.ID, "type": "function", "function": obj{"name": c.Name, "arguments": c.Args[:half]}}}}, nil),
			chunk(obj{"tool_calls": []obj{{"index": i, "function": obj{"arguments": c.Args[half:]}}}}, nil))
	}
	finish := "stop"
	if len(reply.Calls) > 0 {
		finish = "tool_calls"
	}
	lines = append(lines, chunk(obj{}, finish))
	u, _ := json.Marshal(obj{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1, "model": OpenAIModelID, "choices": []obj{},
		"usage": obj{"prompt_tokens": PromptTokens, "completion_tokens": CompletionTokens, "total_tokens": PromptTokens + CompletionTokens}})
	return append(lines, string(u))
}

// chatRequest is the part of a chat completions request the rules read.
type chatRequest struct {
	Model    string        `json:"model"`
	Stream   bool          `json:"stream"`
	Messages []chatMessage `json:"messages"`
	Tools    []struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// text returns the message's content: a string, or its text parts joined.
func (m chatMessage) text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(m.Content, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// ValidateChatCompletions checks a chat completions request body against
// the rules of the real API that tool use depends on, and returns the
// first one broken (nil when none is). The rules, each stated in
// docs/providers.md with where it is documented:
//
//	O1  a "tool" message answers a tool_calls id of the assistant message
//	    that starts its run of tool messages (only tool messages between);
//	O2  an assistant message with tool_calls is followed by tool messages
//	    answering every one of its ids before any other message;
//	O3  tool call ids are unique (within the request), and each is
//	    answered once;
//	O4  an assistant message has content or tool_calls;
//	O5  (stricter than OpenAI, as some compatible servers are) a request
//	    with tool_calls or tool messages offers tools;
//	O6  the request streams (stream: true) and names the model.
func ValidateChatCompletions(body []byte) error {
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return fmt.Errorf("body is not a chat completions request: %w", err)
	}
	if !req.Stream || req.Model == "" {
		return errors.New("O6: the request must stream and name the model")
	}
	ids := map[string]bool{}
	var open map[string]bool // ids of the last assistant's tool_calls not yet answered
	for i, m := range req.Messages {
		where := fmt.Sprintf("messages[%d]", i)
		if m.Role != "tool" && len(open) > 0 {
			return fmt.Errorf("O2: %s: an assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'", where)
		}
		switch m.Role {
		case "system", "developer", "user":
		case "assistant":
			if len(m.ToolCalls) == 0 && m.text() == "" {
				return fmt.Errorf("O4: %s: an assistant message needs content or tool_calls", where)
			}
			open = nil
			if len(m.ToolCalls) > 0 {
				if len(req.Tools) == 0 {
					return fmt.Errorf("O5: %s: tool_calls in a request that offers no tools", where)
				}
				open = map[string]bool{}
			}
			for j, tc := range m.ToolCalls {
				if tc.ID == "" || tc.Function.Name == "" {
					return fmt.Errorf("%s.tool_calls[%d]: id and function name are required", where, j)
				}
				if ids[tc.ID] {
					return fmt.Errorf("O3: %s.tool_calls[%d]: tool call id %q is used twice", where, j, tc.ID)
				}
				ids[tc.ID] = true
				open[tc.ID] = true
			}
		case "tool":
			if len(req.Tools) == 0 {
				return fmt.Errorf("O5: %s: a tool message in a request that offers no tools", where)
			}
			if open == nil || !open[m.ToolCallID] {
				return fmt.Errorf("O1: %s: messages with role 'tool' must be a response to a preceding message with 'tool_calls' (tool_call_id %q unknown or answered already)", where, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
			if len(open) == 0 {
				open = map[string]bool{} // the run may end; a further tool message is O1
			}
		default:
			return fmt.Errorf("%s: role %q", where, m.Role)
		}
	}
	if len(open) > 0 {
		return errors.New("O2: the request ends with tool_calls that no tool message answers")
	}
	return nil
}
