package bedrock

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	smithydocument "github.com/aws/smithy-go/document"

	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// The request mapping: a model.Request as a ConverseStreamInput (the
// package documentation says how).

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
