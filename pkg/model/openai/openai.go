// Package openai is turnstream's provider for OpenAI-compatible streaming chat
// completions (MODEL_PROVIDER=openai,
// docs/design.md#models-tools-definitions), through
// github.com/openai/openai-go/v3, at any base URL (OPENAI_BASE_URL).
//
// Request mapping (pkg/model package documentation): Request.Messages go
// through model.ProviderMessages first (each assistant tool_calls entry
// answered by exactly one "tool" message right after it, unique ids, and
// no tool messages at all when Request.Tools is empty, which some
// compatible servers reject). Request.System is a leading "system" message; user messages are "user" messages; assistant
// messages carry content (when not empty) and tool_calls; tool messages
// become "tool" messages with tool_call_id, a failed tool's content
// prefixed with "Error: " (chat completions has no status field); system
// messages in Request.Messages are ignored. Request.Tools are function
// tools with their JSON Schema as parameters; Request.MaxTokens is
// max_completion_tokens. Every call sets stream_options.include_usage.
//
// Stream mapping: choices[0].delta.reasoning_content (or "reasoning", as
// some compatible servers name it) is a ReasoningDelta, which needs no
// round trip; choices[0].delta.content is a TextDelta; tool call
// fragments (choices[0].delta.tool_calls, keyed by index, the id and name
// in the first fragment, arguments split across chunks) are joined and
// emitted as complete model.ToolCalls, ordered by index, just before the
// finish event (arguments that are not a JSON object passed on as they
// came); finish_reason is the FinishReason; the usage chunk is
// Usage, emitted once, last, when the stream ends, normally or with an
// error after the usage chunk came (the last usage seen, as some
// compatible servers repeat a running usage). HTTP errors and error events inside the stream become
// *model.Error (see Stream).
package openai

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"

	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// Error codes this package sets itself (model.Error.Code); otherwise the
// code is the API error body's "code", else its "type", else
// "http_<status>".
const (
	// CodeStreamInterrupted: the response stream broke (connection reset,
	// truncated body) or ended before a finish_reason. Retryable.
	CodeStreamInterrupted = "stream_interrupted"
	// CodeConnection: the request failed without an HTTP response.
	// Retryable.
	CodeConnection = "connection_error"
	// CodeStreamError: an error event inside the stream named no code or
	// type. Retryable.
	CodeStreamError = "stream_error"
	// CodeInvalidToolArguments: a tool call has no function name.
	// Retryable (a new sample may be well formed). Arguments that are not
	// a JSON object are not an error here: they are passed on in
	// model.ToolCall.Args.
	CodeInvalidToolArguments = "invalid_tool_arguments"
	// CodeInvalidRequest: the Request cannot be mapped (a tool message
	// without ToolCallID, tool args or a schema that is not a JSON
	// object). Not retryable.
	CodeInvalidRequest = "invalid_request"
)

// errClosed is returned by Recv after Close.
var errClosed = errors.New("openai: stream closed")

// Model is the OpenAI-compatible provider. It is safe for concurrent use.
type Model struct {
	client openai.Client
}

var _ model.Model = (*Model)(nil)

// New returns a Model for the chat completions API at baseURL (for
// example "https://api.openai.com/v1/" or a local server's
// "http://127.0.0.1:8000/v1/"; empty means the SDK's default) with
// apiKey (may be empty for servers that need none; never logged). opts
// are further SDK options, such as option.WithHTTPClient or
// option.WithMaxRetries (the SDK retries 408, 409, 429 and 5xx responses
// twice by default, before any output).
func New(baseURL, apiKey string, opts ...option.RequestOption) *Model {
	var all []option.RequestOption
	if baseURL != "" {
		all = append(all, option.WithBaseURL(baseURL))
	}
	all = append(all, option.WithAPIKey(apiKey))
	all = append(all, opts...)
	return &Model{client: openai.NewClient(all...)}
}

// Stream starts one streaming chat completion with model req.ModelID.
// Errors: ctx.Err() when ctx ended; for an HTTP error response a
// *model.Error whose Code is the error body's code, else its type, else
// "http_<status>", Retryable for 408, 409, 429 and 5xx (not for 400, 401,
// 403, 404 and other 4xx); CodeConnection when no response came;
// CodeInvalidRequest. Recv reports error events inside the stream (Code
// from the event's code or type, Retryable unless its type is
// invalid_request_error), CodeStreamInterrupted and
// CodeInvalidToolArguments.
func (m *Model) Stream(ctx context.Context, req model.Request) (model.Stream, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	params, err := newParams(req)
	if err != nil {
		return nil, &model.Error{Code: CodeInvalidRequest, Err: err}
	}
	callCtx, cancel := context.WithCancel(ctx)
	st := m.client.Chat.Completions.NewStreaming(callCtx, params)
	if err := st.Err(); err != nil {
		cancel()
		_ = st.Close()
		return nil, mapError(ctx, err)
	}
	return &stream{ctx: ctx, cancel: cancel, st: st, calls: map[int64]*toolCall{}}, nil
}

func newParams(req model.Request) (openai.ChatCompletionNewParams, error) {
	p := openai.ChatCompletionNewParams{
		Model:         shared.ChatModel(req.ModelID),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	if req.MaxTokens > 0 {
		p.MaxCompletionTokens = openai.Int(int64(req.MaxTokens))
	}
	if req.System != "" {
		p.Messages = append(p.Messages, openai.SystemMessage(req.System))
	}
	for i, msg := range model.ProviderMessages(req.Messages, req.Tools) {
		switch msg.Role {
		case protocol.RoleUser:
			if files := model.MessageAttachments(req, msg); len(files) > 0 {
				p.Messages = append(p.Messages, openai.UserMessage(append(attachmentParts(files), openai.TextContentPart(msg.Content))))
				continue
			}
			p.Messages = append(p.Messages, openai.UserMessage(msg.Content))
		case protocol.RoleAssistant:
			a := &openai.ChatCompletionAssistantMessageParam{}
			if msg.Content != "" {
				a.Content.OfString = openai.String(msg.Content)
			}
			for j, tc := range msg.ToolCalls {
				args := tc.Args
				if len(bytes.TrimSpace(args)) == 0 {
					args = json.RawMessage("{}")
				}
				if !isObject(args) {
					return p, fmt.Errorf("messages[%d].toolCalls[%d].args: not a JSON object", i, j)
				}
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID:       tc.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: string(args)},
					},
				})
			}
			if msg.Content == "" && len(a.ToolCalls) == 0 {
				continue
			}
			p.Messages = append(p.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: a})
		case protocol.RoleTool:
			if msg.ToolCallID == nil || *msg.ToolCallID == "" {
				return p, fmt.Errorf("messages[%d]: tool message without toolCallId", i)
			}
			content := msg.Content
			if msg.Status == protocol.MessageError {
				content = "Error: " + content
			}
			p.Messages = append(p.Messages, openai.ToolMessage(content, *msg.ToolCallID))
		}
	}
	for i, t := range req.Tools {
		// Members stay raw JSON: the SDK's encoder writes json.Number as a
		// string, which would change a schema's numbers.
		var members map[string]json.RawMessage
		if err := json.Unmarshal(t.InputSchema, &members); err != nil || members == nil {
			return p, fmt.Errorf("tools[%d].inputSchema: not a JSON object", i)
		}
		schema := make(shared.FunctionParameters, len(members))
		for k, v := range members {
			schema[k] = v
		}
		fn := shared.FunctionDefinitionParam{Name: t.Name, Parameters: schema}
		if t.Description != "" {
			fn.Description = openai.String(t.Description)
		}
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(fn))
	}
	return p, nil
}

// mapError turns an SDK error into ctx.Err() or a *model.Error.
func mapError(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		code := apiErr.Code
		if code == "" {
			code = apiErr.Type
		}
		if code == "" {
			code = fmt.Sprintf("http_%d", apiErr.StatusCode)
		}
		s := apiErr.StatusCode
		return &model.Error{Code: code, Retryable: s == 408 || s == 409 || s == 429 || s >= 500, Err: err}
	}
	var se *ssestream.StreamError
	if errors.As(err, &se) {
		var body struct {
			Error struct {
				Code json.RawMessage `json:"code"`
				Type string          `json:"type"`
			} `json:"error"`
		}
		_ = json.Unmarshal(se.Event.Data, &body)
		code := codeString(body.Error.Code)
		if code == "" {
			code = body.Error.Type
		}
		if code == "" {
			code = CodeStreamError
		}
		return &model.Error{Code: code, Retryable: body.Error.Type != "invalid_request_error", Err: err}
	}
	return &model.Error{Code: CodeConnection, Retryable: true, Err: err}
}

// codeString returns an error body's code, a string or a number, or "".
func codeString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

// toolCall accumulates one tool call's fragments.
type toolCall struct {
	id, name string
	args     strings.Builder
}

type stream struct {
	ctx    context.Context
	cancel context.CancelFunc
	st     *ssestream.Stream[openai.ChatCompletionChunk]

	closeOnce sync.Once
	closed    atomic.Bool

	calls   map[int64]*toolCall
	pending []model.Event
	usage   *protocol.Usage // the last usage seen, emitted at io.EOF
	cache   *model.CacheTokens
	// reasoningTokens are the usage's completion_tokens_details
	// reasoning_tokens, emitted with it.
	reasoningTokens int64
	finished        bool
	err             error
}

// Recv returns the next model event; see model.Stream.
func (s *stream) Recv() (model.Event, error) {
	for {
		if len(s.pending) > 0 {
			e := s.pending[0]
			s.pending = s.pending[1:]
			return e, nil
		}
		if s.err != nil {
			// The usage seen goes out before the end, an error included
			// (a stream cut after its usage chunk): the provider's own
			// figures, rather than the caller's estimate (docs/quotas.md).
			if u := s.usage; u != nil {
				s.usage = nil
				return model.Event{Usage: u, Cache: s.cache, ReasoningTokens: s.reasoningTokens}, nil
			}
			return model.Event{}, s.err
		}
		if !s.st.Next() {
			s.err = s.end()
			continue
		}
		if err := s.handle(s.st.Current()); err != nil {
			s.err = err
		}
	}
}

// end classifies the end of the SSE stream.
func (s *stream) end() error {
	if s.closed.Load() {
		return errClosed
	}
	if err := s.ctx.Err(); err != nil {
		return err
	}
	if err := s.st.Err(); err != nil {
		var se *ssestream.StreamError
		if errors.As(err, &se) {
			return mapError(s.ctx, err)
		}
		return &model.Error{Code: CodeStreamInterrupted, Retryable: true, Err: err}
	}
	if !s.finished {
		return &model.Error{Code: CodeStreamInterrupted, Retryable: true, Err: errors.New("openai: stream ended before finish_reason")}
	}
	return io.EOF
}

// handle queues the events of one chunk.
func (s *stream) handle(c openai.ChatCompletionChunk) error {
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue
		}
		if r := reasoningDelta(ch.Delta); r != "" {
			s.pending = append(s.pending, model.Event{ReasoningDelta: r})
		}
		if ch.Delta.Content != "" {
			s.pending = append(s.pending, model.Event{TextDelta: ch.Delta.Content})
		}
		for _, f := range ch.Delta.ToolCalls {
			tc := s.calls[f.Index]
			if tc == nil {
				tc = &toolCall{}
				s.calls[f.Index] = tc
			}
			if f.ID != "" {
				tc.id = f.ID
			}
			if f.Function.Name != "" {
				tc.name = f.Function.Name
			}
			tc.args.WriteString(f.Function.Arguments)
		}
		if ch.FinishReason != "" && !s.finished {
			if err := s.flushCalls(); err != nil {
				return err
			}
			s.finished = true
			s.pending = append(s.pending, model.Event{FinishReason: finishReason(ch.FinishReason), ResponseModel: c.Model})
		}
	}
	if c.JSON.Usage.Valid() {
		// Some compatible servers repeat a running usage on many chunks:
		// keep the last and emit it once, at the end of the stream.
		u := c.Usage
		s.usage = &protocol.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.PromptTokens + u.CompletionTokens}
		s.cache = model.NewCacheTokens(u.PromptTokensDetails.CachedTokens, u.PromptTokensDetails.CacheWriteTokens)
		s.reasoningTokens = u.CompletionTokensDetails.ReasoningTokens
	}
	return nil
}

// reasoningDelta returns the reasoning text of a delta: the
// "reasoning_content" member that DeepSeek, Qwen and vLLM send, else the
// "reasoning" member of OpenRouter and Ollama; "" when neither is a
// string.
func reasoningDelta(d openai.ChatCompletionChunkChoiceDelta) string {
	for _, name := range []string{"reasoning_content", "reasoning"} {
		// Extra members are never Valid (no type to decode them into):
		// their raw JSON is all there is.
		f, ok := d.JSON.ExtraFields[name]
		if !ok {
			continue
		}
		var text string
		if json.Unmarshal([]byte(f.Raw()), &text) == nil && text != "" {
			return text
		}
	}
	return ""
}

// flushCalls queues the accumulated tool calls in index order.
func (s *stream) flushCalls() error {
	idx := make([]int64, 0, len(s.calls))
	for i := range s.calls {
		idx = append(idx, i)
	}
	sort.Slice(idx, func(a, b int) bool { return idx[a] < idx[b] })
	for _, i := range idx {
		tc := s.calls[i]
		args := json.RawMessage(tc.args.String())
		if len(bytes.TrimSpace(args)) == 0 {
			args = json.RawMessage("{}")
		}
		// Arguments that are not a JSON object and a missing id are passed
		// on: the caller records such a call as failed, or gives it an id.
		if tc.name == "" {
			return &model.Error{Code: CodeInvalidToolArguments, Retryable: true, Err: fmt.Errorf("openai: tool call %d: no function name", i)}
		}
		s.pending = append(s.pending, model.Event{ToolCall: &model.ToolCall{ID: tc.id, Name: tc.name, Args: args}})
	}
	clear(s.calls)
	return nil
}

// finishReason maps finish_reason; an unknown future reason counts as
// FinishStop.
func finishReason(r string) model.FinishReason {
	switch r {
	case "tool_calls", "function_call":
		return model.FinishToolUse
	case "length":
		return model.FinishLength
	case "content_filter":
		return model.FinishContentFilter
	default:
		return model.FinishStop
	}
}

func isObject(raw json.RawMessage) bool {
	d := json.NewDecoder(bytes.NewReader(raw))
	var v map[string]json.RawMessage
	if err := d.Decode(&v); err != nil || v == nil {
		return false
	}
	_, err := d.Token()
	return err == io.EOF
}

// Close cancels the call and releases the HTTP response. It is idempotent
// and may be called from another goroutine to end a blocked Recv, which
// then returns an error.
func (s *stream) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		s.cancel()
		_ = s.st.Close()
	})
	return nil
}

// attachmentParts returns the content parts of a user message's
// attachments, to go before its text: an image as an image_url part
// holding a data URL, a PDF as a file part (file_data a data URL, and its
// filename), a text document (plain, Markdown, CSV, HTML) as a text part
// holding its name and its text, and any other document (Word, Excel),
// which chat completions do not read, as a text part saying so.
func attachmentParts(files []model.Attachment) []openai.ChatCompletionContentPartUnionParam {
	parts := make([]openai.ChatCompletionContentPartUnionParam, 0, len(files))
	for _, a := range files {
		dataURL := "data:" + a.MediaType + ";base64," + base64.StdEncoding.EncodeToString(a.Data)
		switch {
		case a.Kind == model.AttachmentKindImage:
			parts = append(parts, openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: dataURL}))
		case a.MediaType == "application/pdf":
			parts = append(parts, openai.FileContentPart(openai.ChatCompletionContentPartFileFileParam{
				FileData: openai.String(dataURL), Filename: openai.String(a.Filename),
			}))
		case strings.HasPrefix(a.MediaType, "text/"):
			parts = append(parts, openai.TextContentPart("Attached file "+a.Filename+" ("+a.MediaType+"):\n"+string(a.Data)))
		default:
			parts = append(parts, openai.TextContentPart("Attached file "+a.Filename+" ("+a.MediaType+"): this model cannot read files of this type."))
		}
	}
	return parts
}
