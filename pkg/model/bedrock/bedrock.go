// Package bedrock is turnstream's Amazon Bedrock model provider
// (MODEL_PROVIDER=bedrock, docs/design.md#models-tools-definitions): one
// model.Stream per Bedrock ConverseStream call, through aws-sdk-go-v2's
// bedrockruntime client.
//
// Request mapping (pkg/model package documentation): Request.Messages go
// through model.ProviderMessages first (every toolUse answered by exactly
// one toolResult, unique toolUseIds of [A-Za-z0-9_-]{1,64}, and no tool
// blocks at all when Request.Tools is empty, since Converse rejects
// toolUse and toolResult blocks without a toolConfig). Request.System is one
// system text block; user messages are text blocks; assistant messages are
// a text block (when not empty) and one toolUse block per ToolCall;
// consecutive tool messages become one "user" message of toolResult blocks
// (status "error" for a failed tool); consecutive messages of one Bedrock
// role are merged, since Converse wants roles to alternate; system
// messages are ignored. Request.Tools become toolConfig toolSpec entries
// with their JSON Schema; Request.MaxTokens is inferenceConfig.maxTokens.
//
// Prompt caching: with Request.PromptCache, on a model that supports it
// (CachePoints), a cachePoint block follows the system prompt, the tool
// list and the last message, so that the next call of the tool loop, and
// the next turn, read the prefix from the cache.
//
// Reasoning: with Request.Reasoning, a model that takes a thinking budget
// (Thinks) gets additionalModelRequestFields.thinking, and the reasoning
// blocks of Request.ReasoningBlocks go back first in their assistant
// messages. A reasoningContent block's text deltas are ReasoningDeltas, and
// the whole block (text and signature, or redacted content) is one
// Event.Reasoning at its contentBlockStop.
//
// Stream mapping: contentBlockDelta text is a TextDelta; a toolUse block's
// input arrives as JSON fragments that are joined and emitted as one
// complete model.ToolCall at its contentBlockStop (input that is not a
// JSON object is passed on as it came, for the caller to record as a
// failed call); messageStop's stopReason is the FinishReason; the
// metadata event's usage is Usage (after the finish event, as Bedrock
// sends it). Service errors, before or
// during the stream, become *model.Error with the service's own error code
// (see Stream). The caller needs IAM permission
// bedrock:InvokeModelWithResponseStream on the model (or inference
// profile) ARN.
package bedrock

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go"
	smithydocument "github.com/aws/smithy-go/document"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// Error codes this package sets itself (model.Error.Code); every other
// code is the Bedrock service's own exception name.
const (
	// CodeStreamInterrupted: the event stream broke (connection reset,
	// truncated frame) or ended before messageStop. Retryable.
	CodeStreamInterrupted = "StreamInterrupted"
	// CodeConnection: the request failed without a service response
	// (DNS, refused connection, TLS). Retryable.
	CodeConnection = "ConnectionError"
	// CodeInvalidRequest: the Request cannot be mapped or the SDK rejected
	// its parameters before sending. Not retryable.
	CodeInvalidRequest = "InvalidRequest"
	// CodeMalformedToolUse: the model sent a toolUse block without a
	// name, or Bedrock stopped with malformed_tool_use or
	// malformed_model_output. Retryable (a new sample may be well formed).
	// Tool input that is not a JSON object is not an error here: it is
	// passed on in model.ToolCall.Args.
	CodeMalformedToolUse = "MalformedToolUse"
)

// retryable lists Bedrock exception codes by whether the same request may
// succeed later (Bedrock Runtime API reference, ConverseStream errors).
var retryable = map[string]bool{
	"ThrottlingException":           true,
	"ServiceUnavailableException":   true,
	"ModelNotReadyException":        true,
	"InternalServerException":       true,
	"ModelStreamErrorException":     true,
	"ModelTimeoutException":         true,
	"ValidationException":           false,
	"AccessDeniedException":         false,
	"ResourceNotFoundException":     false,
	"ModelErrorException":           false,
	"ServiceQuotaExceededException": false,
}

// errClosed is returned by Recv after Close.
var errClosed = errors.New("bedrock: stream closed")

// ConverseStreamAPI is the one bedrockruntime.Client method the provider
// calls; *bedrockruntime.Client implements it.
type ConverseStreamAPI interface {
	ConverseStream(ctx context.Context, in *bedrockruntime.ConverseStreamInput, optFns ...func(*bedrockruntime.Options)) (*bedrockruntime.ConverseStreamOutput, error)
}

// Model is the Bedrock provider. It is safe for concurrent use.
type Model struct {
	client ConverseStreamAPI
}

var _ model.Model = (*Model)(nil)

// New returns a Model calling client. Build the client once per process
// (bedrockruntime.NewFromConfig); its retryer retries throttling and 5xx
// responses before any event arrives.
func New(client ConverseStreamAPI) *Model { return &Model{client: client} }

// Stream starts one ConverseStream call with req.ModelID (a model id,
// inference profile id or ARN). Errors: ctx.Err() when ctx ended; a
// *model.Error with the service's exception code (Retryable for
// ThrottlingException, ServiceUnavailableException, ModelNotReadyException,
// InternalServerException, ModelStreamErrorException,
// ModelTimeoutException and any HTTP 429 or 5xx; not for
// ValidationException, AccessDeniedException, ResourceNotFoundException
// and other 4xx), CodeConnection when no response came, or
// CodeInvalidRequest. Recv reports mid-stream failures the same way, plus
// CodeStreamInterrupted and CodeMalformedToolUse.
func (m *Model) Stream(ctx context.Context, req model.Request) (model.Stream, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	in, err := input(req)
	if err != nil {
		return nil, &model.Error{Code: CodeInvalidRequest, Err: err}
	}
	out, err := m.client.ConverseStream(ctx, in, detachRequestBody)
	if err != nil {
		return nil, mapError(ctx, err)
	}
	es := out.GetStream()
	return &stream{ctx: ctx, es: es, events: es.Events(), done: make(chan struct{}), tools: map[int32]*toolUse{}, reasoning: map[int32]*reasoningBlock{}}, nil
}

// input maps a model.Request to a ConverseStreamInput.
func input(req model.Request) (*bedrockruntime.ConverseStreamInput, error) {
	in := &bedrockruntime.ConverseStreamInput{ModelId: &req.ModelID}
	if req.System != "" {
		in.System = []types.SystemContentBlock{&types.SystemContentBlockMemberText{Value: req.System}}
	}
	if req.MaxTokens > 0 {
		n := int32(min(req.MaxTokens, math.MaxInt32))
		in.InferenceConfig = &types.InferenceConfiguration{MaxTokens: &n}
	}
	thinking := thinkingBudget(req)
	if thinking > 0 {
		in.AdditionalModelRequestFields = document.NewLazyDocument(map[string]any{
			"thinking": map[string]any{"type": "enabled", "budget_tokens": thinking},
		})
	}
	names := map[string]bool{} // document names, unique in a request
	for i, msg := range model.ProviderMessages(req.Messages, req.Tools) {
		var reasoning []model.ReasoningBlock
		if thinking > 0 && msg.Role == protocol.RoleAssistant {
			reasoning = req.ReasoningBlocks[msg.ID]
		}
		role, blocks, err := contentBlocks(msg, reasoning)
		if msg.Role == protocol.RoleUser {
			blocks = append(attachmentBlocks(model.MessageAttachments(req, msg), names), blocks...)
		}
		if err != nil {
			return nil, fmt.Errorf("messages[%d]: %w", i, err)
		}
		if len(blocks) == 0 {
			continue
		}
		if n := len(in.Messages); n > 0 && in.Messages[n-1].Role == role {
			in.Messages[n-1].Content = append(in.Messages[n-1].Content, blocks...)
			continue
		}
		in.Messages = append(in.Messages, types.Message{Role: role, Content: blocks})
	}
	cache := CachePoints(req.ModelID)
	if !req.PromptCache {
		cache = CacheFields{}
	}
	if cache.System && len(in.System) > 0 {
		in.System = append(in.System, &types.SystemContentBlockMemberCachePoint{Value: cachePoint})
	}
	if n := len(in.Messages); cache.Messages && n > 0 {
		in.Messages[n-1].Content = append(in.Messages[n-1].Content, &types.ContentBlockMemberCachePoint{Value: cachePoint})
	}
	if len(req.Tools) > 0 {
		tc := &types.ToolConfiguration{}
		for i, t := range req.Tools {
			schema, err := toDocument(t.InputSchema)
			if err != nil {
				return nil, fmt.Errorf("tools[%d].inputSchema: %w", i, err)
			}
			spec := types.ToolSpecification{Name: ptr(t.Name), InputSchema: &types.ToolInputSchemaMemberJson{Value: schema}}
			if t.Description != "" {
				spec.Description = ptr(t.Description)
			}
			tc.Tools = append(tc.Tools, &types.ToolMemberToolSpec{Value: spec})
		}
		if cache.Tools {
			tc.Tools = append(tc.Tools, &types.ToolMemberCachePoint{Value: cachePoint})
		}
		in.ToolConfig = tc
	}
	return in, nil
}

// cachePoint is the one cache point block sent: the default type, whose
// entries live five minutes after their last use.
var cachePoint = types.CachePointBlock{Type: types.CachePointTypeDefault}

// CacheFields say where a model takes cachePoint blocks: after the
// system prompt, after the tools, inside messages.
type CacheFields struct {
	System, Tools, Messages bool
}

// cachingModels are the models with prompt caching on Bedrock, as AWS's
// prompt caching guide lists them, by the part of the model id that names
// them (a geography prefix, "us.", and a version suffix may surround it),
// with the fields each takes. Anthropic's Claude takes all three, Amazon
// Nova the system prompt and messages.
var cachingModels = []struct {
	name   string
	fields CacheFields
}{
	{"anthropic.claude-3-7-sonnet", CacheFields{true, true, true}},
	{"anthropic.claude-3-5-haiku", CacheFields{true, true, true}},
	{"anthropic.claude-sonnet-4", CacheFields{true, true, true}},
	{"anthropic.claude-opus-4", CacheFields{true, true, true}},
	{"anthropic.claude-haiku-4", CacheFields{true, true, true}},
	{"amazon.nova-micro", CacheFields{true, false, true}},
	{"amazon.nova-lite", CacheFields{true, false, true}},
	{"amazon.nova-pro", CacheFields{true, false, true}},
	{"amazon.nova-premier", CacheFields{true, false, true}},
}

// CachePoints returns where the model modelID (a model id, an inference
// profile id or either's ARN) takes cachePoint blocks; none for a model
// not known to cache, which Bedrock would refuse them for. A prefix
// shorter than the model's minimum (1,024 tokens for most Claude models)
// is simply not cached: the call succeeds all the same.
func CachePoints(modelID string) CacheFields {
	for _, m := range cachingModels {
		if strings.Contains(modelID, m.name) {
			return m.fields
		}
	}
	return CacheFields{}
}

// thinkingModels are the Bedrock models that take Anthropic's extended
// thinking request (additionalModelRequestFields.thinking), by the part
// of the model id that names them.
var thinkingModels = []string{
	"anthropic.claude-3-7-sonnet",
	"anthropic.claude-sonnet-4",
	"anthropic.claude-opus-4",
	"anthropic.claude-haiku-4-5",
}

// Thinks reports whether the model modelID (a model id, an inference
// profile id or either's ARN) takes a thinking budget: with
// Request.Reasoning, requests for it enable extended thinking. Other
// models that reason (DeepSeek-R1 on Bedrock) stream their reasoning
// unasked.
func Thinks(modelID string) bool {
	for _, m := range thinkingModels {
		if strings.Contains(modelID, m) {
			return true
		}
	}
	return false
}

// thinkingBudget is the thinking budget req's call asks for: 0 for none
// (no Request.Reasoning, a model that takes none). A budget that does not
// fit below MaxTokens (a call whose tokens a turn budget cut) shrinks to
// MaxTokens-1, and is dropped, for that call only, below
// model.MinReasoningBudget, since Anthropic refuses both.
func thinkingBudget(req model.Request) int {
	if req.Reasoning == nil || !Thinks(req.ModelID) {
		return 0
	}
	budget := req.Reasoning.BudgetTokens
	if req.MaxTokens > 0 && budget >= req.MaxTokens {
		budget = req.MaxTokens - 1
	}
	if budget < model.MinReasoningBudget {
		return 0
	}
	return budget
}

// attachmentBlocks returns the Converse image and document blocks of a
// user message's attachments, to go before its text (Bedrock takes
// images and documents as bytes in the request; a document block needs
// a text block beside it, which the message's non-blank input is).
// names collects the document names given so far: Converse wants them
// unique within a request.
func attachmentBlocks(files []model.Attachment, names map[string]bool) []types.ContentBlock {
	var blocks []types.ContentBlock
	for _, a := range files {
		if a.Kind == model.AttachmentKindImage {
			blocks = append(blocks, &types.ContentBlockMemberImage{Value: types.ImageBlock{
				Format: types.ImageFormat(a.Format),
				Source: &types.ImageSourceMemberBytes{Value: a.Data},
			}})
			continue
		}
		name := DocumentName(a.Filename)
		for n := 2; names[name]; n++ {
			name = DocumentName(a.Filename) + " (" + strconv.Itoa(n) + ")"
		}
		names[name] = true
		blocks = append(blocks, &types.ContentBlockMemberDocument{Value: types.DocumentBlock{
			Format: types.DocumentFormat(a.Format),
			Name:   &name,
			Source: &types.DocumentSourceMemberBytes{Value: a.Data},
		}})
	}
	return blocks
}

// maxDocumentName bounds a document name (Converse allows 200
// characters; room is kept for a " (n)" suffix).
const maxDocumentName = 190

// DocumentName is filename as a Converse document name, which may hold
// only letters and digits, single spaces, hyphens, parentheses and square
// brackets: the extension is dropped, every other character becomes a
// space, runs of spaces become one, and the name is cut to 190
// characters; "document" when nothing is left.
func DocumentName(filename string) string {
	if i := strings.LastIndexByte(filename, '.'); i > 0 {
		filename = filename[:i]
	}
	var b strings.Builder
	space := false
	for _, r := range filename {
		ok := r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '(' || r == ')' || r == '[' || r == ']')
		if !ok {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		if b.Len() >= maxDocumentName {
			break
		}
		b.WriteRune(r)
	}
	if b.Len() == 0 {
		return "document"
	}
	return b.String()
}

// emptyToolResult stands in for an empty tool result text: Bedrock
// rejects blank text blocks.
const emptyToolResult = "(no output)"

// contentBlocks maps one message to its Converse role and blocks; an
// assistant message's reasoning blocks go first, unchanged, as Anthropic
// wants them back.
func contentBlocks(msg protocol.Message, reasoning []model.ReasoningBlock) (types.ConversationRole, []types.ContentBlock, error) {
	var blocks []types.ContentBlock
	for _, r := range reasoning {
		var rc types.ReasoningContentBlock
		if len(r.Redacted) > 0 {
			rc = &types.ReasoningContentBlockMemberRedactedContent{Value: r.Redacted}
		} else {
			rc = &types.ReasoningContentBlockMemberReasoningText{Value: types.ReasoningTextBlock{Text: ptr(r.Text), Signature: optional(r.Signature)}}
		}
		blocks = append(blocks, &types.ContentBlockMemberReasoningContent{Value: rc})
	}
	switch msg.Role {
	case protocol.RoleUser:
		if strings.TrimSpace(msg.Content) != "" { // Converse rejects blank text blocks
			blocks = append(blocks, &types.ContentBlockMemberText{Value: msg.Content})
		}
		return types.ConversationRoleUser, blocks, nil
	case protocol.RoleAssistant:
		if strings.TrimSpace(msg.Content) != "" { // Converse rejects blank text blocks
			blocks = append(blocks, &types.ContentBlockMemberText{Value: msg.Content})
		}
		for j, tc := range msg.ToolCalls {
			args := tc.Args
			if len(bytes.TrimSpace(args)) == 0 {
				args = json.RawMessage("{}")
			}
			doc, err := toDocument(args)
			if err != nil {
				return "", nil, fmt.Errorf("toolCalls[%d].args: %w", j, err)
			}
			blocks = append(blocks, &types.ContentBlockMemberToolUse{Value: types.ToolUseBlock{
				ToolUseId: ptr(tc.ID), Name: ptr(tc.Name), Input: doc,
			}})
		}
		return types.ConversationRoleAssistant, blocks, nil
	case protocol.RoleTool:
		if msg.ToolCallID == nil || *msg.ToolCallID == "" {
			return "", nil, errors.New("tool message without toolCallId")
		}
		text := msg.Content
		if strings.TrimSpace(text) == "" {
			text = emptyToolResult
		}
		status := types.ToolResultStatusSuccess
		if msg.Status == protocol.MessageError {
			status = types.ToolResultStatusError
		}
		blocks = append(blocks, &types.ContentBlockMemberToolResult{Value: types.ToolResultBlock{
			ToolUseId: ptr(*msg.ToolCallID),
			Content:   []types.ToolResultContentBlock{&types.ToolResultContentBlockMemberText{Value: text}},
			Status:    status,
		}})
		return types.ConversationRoleUser, blocks, nil
	default: // system messages: Request.System is the system prompt
		return "", nil, nil
	}
}

// toDocument decodes a JSON object into a Smithy document, keeping numbers
// exact (document.Number).
func toDocument(raw json.RawMessage) (document.Interface, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, errors.New("not valid JSON")
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, errors.New("not a JSON object")
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the JSON object")
	}
	return document.NewLazyDocument(numbers(v)), nil
}

// numbers replaces json.Number with smithydocument.Number, which the
// document encoder writes verbatim.
func numbers(v any) any {
	switch t := v.(type) {
	case json.Number:
		return smithydocument.Number(t)
	case map[string]any:
		for k, e := range t {
			t[k] = numbers(e)
		}
	case []any:
		for i, e := range t {
			t[i] = numbers(e)
		}
	}
	return v
}

func ptr[T any](v T) *T { return &v }

// optional is a pointer to s, nil when s is empty.
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// detachRequestBody makes the HTTP client send a private in-memory copy
// of the request body. The SDK closes its request body stream as soon as
// the response headers arrive, while net/http's write loop may still be
// finishing the body (its end-of-body check); the write then fails and
// net/http closes the connection, killing the event stream mid-answer
// ("use of closed network connection"). Measured against a local server
// that answers at once; with a copy the race is gone.
func detachRequestBody(o *bedrockruntime.Options) {
	o.HTTPClient = bodyCopier{next: o.HTTPClient}
}

type bodyCopier struct{ next bedrockruntime.HTTPClient }

func (c bodyCopier) Do(r *http.Request) (*http.Response, error) {
	if r.Body != nil && r.Body != http.NoBody {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, fmt.Errorf("bedrock: read request body: %w", err)
		}
		_ = r.Body.Close()
		r.Body = io.NopCloser(bytes.NewReader(b))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
		r.ContentLength = int64(len(b))
	}
	return c.next.Do(r)
}

// mapError turns an SDK error into ctx.Err() or a *model.Error.
func mapError(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode() != "" {
		code := apiErr.ErrorCode()
		retry, known := retryable[code]
		if !known {
			retry = retryableStatus(err)
		}
		return &model.Error{Code: code, Retryable: retry, Err: err}
	}
	var respErr *smithyhttp.ResponseError
	if errors.As(err, &respErr) && respErr.Response != nil && respErr.HTTPStatusCode() != 0 {
		status := respErr.HTTPStatusCode()
		return &model.Error{Code: fmt.Sprintf("http_%d", status), Retryable: retryableStatus(err), Err: err}
	}
	var paramErr smithy.InvalidParamsError
	if errors.As(err, &paramErr) {
		return &model.Error{Code: CodeInvalidRequest, Err: err}
	}
	var serErr *smithy.SerializationError
	if errors.As(err, &serErr) {
		return &model.Error{Code: CodeInvalidRequest, Err: err}
	}
	return &model.Error{Code: CodeConnection, Retryable: true, Err: err}
}

// retryableStatus reports whether err carries an HTTP 408, 429 or 5xx.
func retryableStatus(err error) bool {
	var respErr *smithyhttp.ResponseError
	if !errors.As(err, &respErr) || respErr.Response == nil {
		return false
	}
	s := respErr.HTTPStatusCode()
	return s == 408 || s == 429 || s >= 500
}

// toolUse accumulates one toolUse content block.
type toolUse struct {
	id, name string
	input    strings.Builder
}

// reasoningBlock accumulates one reasoningContent block.
type reasoningBlock struct {
	text      strings.Builder
	signature strings.Builder
	redacted  []byte
}

type stream struct {
	ctx    context.Context
	es     *bedrockruntime.ConverseStreamEventStream
	events <-chan types.ConverseStreamOutput

	closeOnce sync.Once
	done      chan struct{}

	tools     map[int32]*toolUse
	reasoning map[int32]*reasoningBlock
	finished  bool
	err       error
}

// Recv returns the next model event; see model.Stream.
func (s *stream) Recv() (model.Event, error) {
	for s.err == nil {
		select {
		case <-s.done:
			s.err = errClosed
		case <-s.ctx.Done():
			s.err = s.ctx.Err()
		case ev, ok := <-s.events:
			if !ok {
				s.err = s.end()
				break
			}
			if out, emit, err := s.handle(ev); err != nil {
				s.err = err
			} else if emit {
				return out, nil
			}
		}
	}
	return model.Event{}, s.err
}

// end classifies the closed event channel: the stream's error, an early
// end, or io.EOF after messageStop.
func (s *stream) end() error {
	select {
	case <-s.done:
		return errClosed
	default:
	}
	if err := s.es.Err(); err != nil {
		if ctxErr := s.ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		var apiErr smithy.APIError
		if errors.As(err, &apiErr) {
			return mapError(s.ctx, err)
		}
		return &model.Error{Code: CodeStreamInterrupted, Retryable: true, Err: err}
	}
	if !s.finished {
		return &model.Error{Code: CodeStreamInterrupted, Retryable: true, Err: errors.New("bedrock: event stream ended before messageStop")}
	}
	return io.EOF
}

// handle maps one stream event; emit is false for events that carry
// nothing for the caller (messageStart, a toolUse start or fragment).
func (s *stream) handle(ev types.ConverseStreamOutput) (model.Event, bool, error) {
	switch v := ev.(type) {
	case *types.ConverseStreamOutputMemberContentBlockStart:
		if tu, ok := v.Value.Start.(*types.ContentBlockStartMemberToolUse); ok {
			s.tools[index(v.Value.ContentBlockIndex)] = &toolUse{id: deref(tu.Value.ToolUseId), name: deref(tu.Value.Name)}
		}
	case *types.ConverseStreamOutputMemberContentBlockDelta:
		switch d := v.Value.Delta.(type) {
		case *types.ContentBlockDeltaMemberText:
			if d.Value != "" {
				return model.Event{TextDelta: d.Value}, true, nil
			}
		case *types.ContentBlockDeltaMemberToolUse:
			if tu := s.tools[index(v.Value.ContentBlockIndex)]; tu != nil {
				tu.input.WriteString(deref(d.Value.Input))
			}
		case *types.ContentBlockDeltaMemberReasoningContent:
			i := index(v.Value.ContentBlockIndex)
			rb := s.reasoning[i]
			if rb == nil {
				rb = &reasoningBlock{}
				s.reasoning[i] = rb
			}
			switch r := d.Value.(type) {
			case *types.ReasoningContentBlockDeltaMemberText:
				rb.text.WriteString(r.Value)
				if r.Value != "" {
					return model.Event{ReasoningDelta: r.Value}, true, nil
				}
			case *types.ReasoningContentBlockDeltaMemberSignature:
				rb.signature.WriteString(r.Value)
			case *types.ReasoningContentBlockDeltaMemberRedactedContent:
				rb.redacted = append(rb.redacted, r.Value...)
			}
		}
	case *types.ConverseStreamOutputMemberContentBlockStop:
		i := index(v.Value.ContentBlockIndex)
		if rb := s.reasoning[i]; rb != nil {
			delete(s.reasoning, i)
			return model.Event{Reasoning: &model.ReasoningBlock{Text: rb.text.String(), Signature: rb.signature.String(), Redacted: rb.redacted}}, true, nil
		}
		tu := s.tools[i]
		if tu == nil {
			break
		}
		delete(s.tools, i)
		args := json.RawMessage(tu.input.String())
		if len(bytes.TrimSpace(args)) == 0 {
			args = json.RawMessage("{}")
		}
		// Input that is not a JSON object is passed on as it came: the
		// caller records the call as failed and the model reads why.
		if tu.name == "" {
			return model.Event{}, false, &model.Error{Code: CodeMalformedToolUse, Retryable: true, Err: errors.New("bedrock: toolUse without a name")}
		}
		return model.Event{ToolCall: &model.ToolCall{ID: tu.id, Name: tu.name, Args: args}}, true, nil
	case *types.ConverseStreamOutputMemberMessageStop:
		reason, err := finishReason(v.Value.StopReason)
		if err != nil {
			return model.Event{}, false, err
		}
		s.finished = true
		return model.Event{FinishReason: reason}, true, nil
	case *types.ConverseStreamOutputMemberMetadata:
		if u := v.Value.Usage; u != nil {
			in, out := int64(deref(u.InputTokens)), int64(deref(u.OutputTokens))
			return model.Event{Usage: &protocol.Usage{PromptTokens: in, CompletionTokens: out, TotalTokens: in + out},
				Cache: model.NewCacheTokens(int64(deref(u.CacheReadInputTokens)), int64(deref(u.CacheWriteInputTokens)))}, true, nil
		}
	}
	return model.Event{}, false, nil
}

// finishReason maps Bedrock's stopReason; an unknown future reason counts
// as FinishStop.
func finishReason(r types.StopReason) (model.FinishReason, error) {
	switch r {
	case types.StopReasonToolUse:
		return model.FinishToolUse, nil
	case types.StopReasonMaxTokens, types.StopReasonModelContextWindowExceeded:
		return model.FinishLength, nil
	case types.StopReasonGuardrailIntervened, types.StopReasonContentFiltered:
		return model.FinishContentFilter, nil
	case types.StopReasonMalformedToolUse, types.StopReasonMalformedModelOutput:
		return "", &model.Error{Code: CodeMalformedToolUse, Retryable: true, Err: fmt.Errorf("bedrock: stop reason %s", r)}
	default:
		return model.FinishStop, nil
	}
}

func index(p *int32) int32 {
	if p == nil {
		return -1
	}
	return *p
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// Close stops the event stream and releases the HTTP response. It is
// idempotent and may be called from another goroutine to end a blocked
// Recv, which then returns an error.
func (s *stream) Close() error {
	s.closeOnce.Do(func() {
		close(s.done)
		_ = s.es.Close()
	})
	return nil
}
