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
	"net/http"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go"
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
