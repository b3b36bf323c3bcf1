package modeltest

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"

	"github.com/turnstream/turnstream/pkg/model/bedrock"
)

// BedrockModelID is the model id the Bedrock fake expects in its path.
const BedrockModelID = "anthropic.claude-fake-v1:0"

// BedrockCachingModelID is the other model id the fake serves: one that
// pkg/model/bedrock.CachePoints knows to cache, so that requests for it
// carry cachePoint blocks (rule B10), and the fake reports cache tokens
// for them (CacheTokens).
const BedrockCachingModelID = "us.anthropic.claude-sonnet-4-fake-v1:0"

// CacheTokens is what the fake reports for a request with cachePoint
// blocks: that many cacheWriteInputTokens when the prefix before its
// first cachePoint is new to it, that many cacheReadInputTokens when an
// earlier request had that prefix.
const CacheTokens = 40

// Bedrock is a fake Amazon Bedrock ConverseStream server. It is safe for
// concurrent use.
type Bedrock struct {
	t   testing.TB
	srv *httptest.Server

	mu      sync.Mutex
	replies []Reply
	bodies  [][]byte
	cached  map[string]bool // the prefixes before a first cachePoint seen so far
}

// NewBedrock starts a fake Bedrock server answering its calls with
// replies, in order; a call past the script, or a request that
// ValidateConverse rejects, gets a ValidationException and fails t. The
// server stops when t ends.
func NewBedrock(t testing.TB, replies ...Reply) *Bedrock {
	t.Helper()
	b := &Bedrock{t: t, replies: replies}
	b.srv = httptest.NewServer(http.HandlerFunc(b.serve))
	t.Cleanup(b.srv.Close)
	return b
}

// Model returns a bedrock.Model whose real bedrockruntime client calls
// the fake (static credentials, SigV4 signed, no retries).
func (b *Bedrock) Model() *bedrock.Model {
	client := bedrockruntime.New(bedrockruntime.Options{
		Region:           "us-east-1",
		BaseEndpoint:     aws.String(b.srv.URL),
		Credentials:      credentials.NewStaticCredentialsProvider("AKIDFAKE", "fake-secret", ""),
		RetryMaxAttempts: 1,
		HTTPClient:       b.srv.Client(),
	})
	return bedrock.New(client)
}

// URL is the fake's endpoint (AWS_ENDPOINT_URL_BEDROCK_RUNTIME) for a
// client built elsewhere: any credentials sign, the path names
// BedrockModelID.
func (b *Bedrock) URL() string { return b.srv.URL }

// Add appends replies to the script.
func (b *Bedrock) Add(replies ...Reply) {
	b.mu.Lock()
	b.replies = append(b.replies, replies...)
	b.mu.Unlock()
}

// Requests returns the request bodies received so far, oldest first.
func (b *Bedrock) Requests() [][]byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([][]byte(nil), b.bodies...)
}

// Transcripts returns, per request, its conversation as provider-neutral
// lines: "user: <text>", "assistant: <text>", "call <id> <name> <args>"
// for a toolUse block, "result <id>: <text>" for a toolResult block
// ("Error: " before the text of a failed one), newlines written as \n.
// The OpenAI fake writes the same lines for the same conversation.
func (b *Bedrock) Transcripts() [][]string {
	var out [][]string
	for _, body := range b.Requests() {
		var req converseRequest
		_ = json.Unmarshal(body, &req)
		var lines []string
		for _, m := range req.Messages {
			for _, c := range m.Content {
				switch {
				case c.Text != nil:
					lines = append(lines, transcriptLine(m.Role, *c.Text))
				case c.ToolUse != nil:
					lines = append(lines, "call "+c.ToolUse.ToolUseID+" "+c.ToolUse.Name+" "+compactJSON(c.ToolUse.Input))
				case c.ToolResult != nil:
					text := ""
					for _, rc := range c.ToolResult.Content {
						if rc.Text != nil {
							text += *rc.Text
						}
					}
					if c.ToolResult.Status == "error" {
						text = "Error: " + text
					}
					lines = append(lines, transcriptLine("result "+c.ToolResult.ToolUseID, text))
				}
			}
		}
		out = append(out, lines)
	}
	return out
}

func (b *Bedrock) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	b.mu.Lock()
	b.bodies = append(b.bodies, body)
	n := len(b.bodies)
	var reply *Reply
	if n <= len(b.replies) {
		reply = &b.replies[n-1]
	}
	b.mu.Unlock()
	path := func(id string) string { return "/model/" + strings.ReplaceAll(id, ":", "%3A") + "/converse-stream" }
	err := ValidateConverse(body)
	switch {
	case r.Method != http.MethodPost || r.URL.EscapedPath() != path(BedrockModelID) && r.URL.EscapedPath() != path(BedrockCachingModelID):
		err = fmt.Errorf("unexpected request %s %s", r.Method, r.URL.EscapedPath())
	case !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 "):
		err = errors.New("request is not SigV4 signed")
	case err == nil && reply == nil:
		err = fmt.Errorf("call %d is past the script", n)
	}
	if err != nil {
		b.t.Errorf("bedrock fake: request %d rejected: %v\n%s", n, err, body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Amzn-ErrorType", "ValidationException")
		w.WriteHeader(http.StatusBadRequest)
		msg, _ := json.Marshal(map[string]string{"message": err.Error()})
		_, _ = w.Write(msg)
		return
	}
	read, write := b.cacheUse(body)
	if !thinks(body) {
		r := *reply
		r.Reasoning, r.RedactedReasoning = "", false
		reply = &r
	}
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	w.WriteHeader(http.StatusOK)
	for _, f := range converseFrames(*reply, read, write) {
		_, _ = w.Write(f)
	}
}

// cacheUse returns the cache tokens the fake reports for body
// (CacheTokens): none without a cachePoint; read when the prefix before
// its first cachePoint (the system prompt, or the system prompt and the
// first message's blocks before it) was seen before, else written.
func (b *Bedrock) cacheUse(body []byte) (read, write int) {
	var req struct {
		System   []json.RawMessage `json:"system"`
		Messages []struct {
			Content []json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(body, &req) != nil {
		return 0, 0
	}
	isPoint := func(raw json.RawMessage) bool { return bytes.HasPrefix(bytes.TrimSpace(raw), []byte(`{"cachePoint"`)) }
	var prefix []json.RawMessage
	found := false
	for _, s := range req.System {
		if isPoint(s) {
			found = true
			break
		}
		prefix = append(prefix, s)
	}
	for i := 0; !found && i < len(req.Messages); i++ {
		for _, c := range req.Messages[i].Content {
			if isPoint(c) {
				found = true
				break
			}
			prefix = append(prefix, c)
		}
	}
	if !found {
		return 0, 0
	}
	key, _ := json.Marshal(prefix)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cached[string(key)] {
		return CacheTokens, 0
	}
	if b.cached == nil {
		b.cached = map[string]bool{}
	}
	b.cached[string(key)] = true
	return 0, CacheTokens
}

// converseFrames encodes reply as ConverseStream events: the text block,
// one toolUse block per call (its input split in two fragments),
// messageStop and metadata (usage with cacheRead and cacheWrite tokens
// when not zero).
func converseFrames(reply Reply, cacheRead, cacheWrite int) [][]byte {
	ev := func(kind string, payload any) []byte {
		p, _ := json.Marshal(payload)
		var msg eventstream.Message
		msg.Headers.Set(":message-type", eventstream.StringValue("event"))
		msg.Headers.Set(":event-type", eventstream.StringValue(kind))
		msg.Headers.Set(":content-type", eventstream.StringValue("application/json"))
		msg.Payload = p
		var buf bytes.Buffer
		_ = eventstream.NewEncoder().Encode(&buf, msg)
		return buf.Bytes()
	}
	type obj = map[string]any
	frames := [][]byte{ev("messageStart", obj{"role": "assistant"})}
	idx := 0
	if reply.Reasoning != "" {
		half := len(reply.Reasoning) / 2
		for half > 0 && !utf8.RuneStart(reply.Reasoning[half]) {
			half--
		}
		for _, part := range []string{reply.Reasoning[:half], reply.Reasoning[half:]} {
			if part != "" {
				frames = append(frames, ev("contentBlockDelta", obj{"contentBlockIndex": idx, "delta": obj{"reasoningContent": obj{"text": part}}}))
			}
		}
		frames = append(frames,
			ev("contentBlockDelta", obj{"contentBlockIndex": idx, "delta": obj{"reasoningContent": obj{"signature": Signature(reply.Reasoning)}}}),
			ev("contentBlockStop", obj{"contentBlockIndex": idx}))
		idx++
	}
	if reply.RedactedReasoning {
		frames = append(frames,
			ev("contentBlockDelta", obj{"contentBlockIndex": idx, "delta": obj{"reasoningContent": obj{"redactedContent": RedactedReasoning}}}),
			ev("contentBlockStop", obj{"contentBlockIndex": idx}))
		idx++
	}
	if reply.Text != "" {
		frames = append(frames,
			ev("contentBlockDelta", obj{"contentBlockIndex": idx, "delta": obj{"text": reply.Text}}),
			ev("contentBlockStop", obj{"contentBlockIndex": idx}))
		idx++
	}
	for _, c := range reply.Calls {
		half := len(c.Args) / 2
		frames = append(frames,
			ev("contentBlockStart", obj{"contentBlockIndex": idx, "start": obj{"toolUse": obj{"toolUseId": c.ID, "name": c.Name}}}),
			ev("contentBlockDelta", obj{"contentBlockIndex": idx, "delta": obj{"toolUse": obj{"input": c.Args[:half]}}}),
			ev("contentBlockDelta", obj{"contentBlockIndex": idx, "delta": obj{"toolUse": obj{"input": c.Args[half:]}}}),
			ev("contentBlockStop", obj{"contentBlockIndex": idx}))
		idx++
	}
	stop := "end_turn"
	if len(reply.Calls) > 0 {
		stop = "tool_use"
	}
	usage := obj{"inputTokens": PromptTokens, "outputTokens": CompletionTokens, "totalTokens": PromptTokens + CompletionTokens}
	if cacheRead > 0 {
		usage["cacheReadInputTokens"] = cacheRead
	}
	if cacheWrite > 0 {
		usage["cacheWriteInputTokens"] = cacheWrite
	}
	return append(frames,
		ev("messageStop", obj{"stopReason": stop}),
		ev("metadata", obj{"usage": usage, "metrics": obj{"latencyMs": 1}}))
}

// RedactedReasoning is the redacted reasoning block's content the
// Bedrock fake sends (Reply.RedactedReasoning) and wants back unchanged.
var RedactedReasoning = []byte("\x00encrypted reasoning\xff")

// Signature is the signature the Bedrock fake gives a reasoning block of
// text, and wants back with it unchanged (rule B12).
func Signature(text string) string {
	sum := sha256.Sum256([]byte("fake-signing-key\x00" + text))
	return base64.StdEncoding.EncodeToString(sum[:])
}

// thinks reports whether a request body enables extended thinking.
func thinks(body []byte) bool {
	var req converseRequest
	return json.Unmarshal(body, &req) == nil && req.thinking() != nil
}

// converseRequest is the part of a Converse request body the rules read.
type converseRequest struct {
	AdditionalModelRequestFields map[string]json.RawMessage `json:"additionalModelRequestFields"`
	InferenceConfig              *struct {
		MaxTokens *int `json:"maxTokens"`
	} `json:"inferenceConfig"`
	System   []converseBlock `json:"system"`
	Messages []struct {
		Role    string          `json:"role"`
		Content []converseBlock `json:"content"`
	} `json:"messages"`
	ToolConfig *struct {
		Tools []struct {
			ToolSpec *struct {
				Name        string          `json:"name"`
				InputSchema json.RawMessage `json:"inputSchema"`
			} `json:"toolSpec"`
			CachePoint *cachePoint `json:"cachePoint"`
		} `json:"tools"`
	} `json:"toolConfig"`
}

// cachePoint is a Converse cachePoint block.
type cachePoint struct {
	Type string `json:"type"`
}

// thinkingConfig is additionalModelRequestFields.thinking.
type thinkingConfig struct {
	Type         string `json:"type"`
	BudgetTokens int    `json:"budget_tokens"`
}

// thinking returns the request's thinking config, nil when it has none.
func (r converseRequest) thinking() *thinkingConfig {
	raw, ok := r.AdditionalModelRequestFields["thinking"]
	if !ok {
		return nil
	}
	var t thinkingConfig
	if json.Unmarshal(raw, &t) != nil {
		return &thinkingConfig{Type: "invalid"}
	}
	return &t
}

type converseBlock struct {
	Text             *string     `json:"text"`
	CachePoint       *cachePoint `json:"cachePoint"`
	ReasoningContent *struct {
		ReasoningText *struct {
			Text      string `json:"text"`
			Signature string `json:"signature"`
		} `json:"reasoningText"`
		RedactedContent []byte `json:"redactedContent"`
	} `json:"reasoningContent"`
	ToolUse *struct {
		ToolUseID string          `json:"toolUseId"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
	} `json:"toolUse"`
	ToolResult *struct {
		ToolUseID string `json:"toolUseId"`
		Status    string `json:"status"`
		Content   []struct {
			Text *string `json:"text"`
		} `json:"content"`
	} `json:"toolResult"`
}

// bedrockName is the pattern of Converse toolUseIds and tool names.
var bedrockName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// ValidateConverse checks a Converse / ConverseStream request body
// against the rules of the real API that tool use depends on, and returns
// the first one broken (nil when none is). The rules, each stated in
// docs/providers.md with where AWS documents it:
//
//	B1  messages is not empty and starts with a user message;
//	B2  roles alternate user / assistant;
//	B3  no text block is blank (empty or only white space);
//	B4  a request with any toolUse or toolResult block has a toolConfig
//	    with at least one tool;
//	B5  toolUseIds and tool names are 1..64 of [a-zA-Z0-9_-]; toolUse
//	    input is a JSON object; toolConfig names are unique;
//	B6  toolUseIds are unique within the request;
//	B7  an assistant message with toolUse blocks is followed by a user
//	    message that starts with exactly one toolResult block per toolUse
//	    of it, and no other toolResult block;
//	B8  a toolResult block answers a toolUse of the assistant message
//	    just before its own message;
//	B9  a toolResult has content, and its text blocks are not blank;
//	B10 at most 4 cachePoint blocks in all (system, tools, messages), each
//	    of type "default", none first in its list;
//	B11 thinking (additionalModelRequestFields.thinking) is of type
//	    "enabled" with budget_tokens at least 1,024 and below
//	    inferenceConfig.maxTokens;
//	B12 reasoningContent blocks appear only in assistant messages, before
//	    their other blocks, each as the model sent it (a reasoningText with
//	    its signature, or redactedContent); with thinking enabled and the
//	    request in a tool loop (it ends with a user message that starts
//	    with toolResult blocks), the loop's first assistant message (the
//	    first after the last user message that does not) starts
//	    with one: a model that thinks once per turn, as Claude does without
//	    interleaved thinking, reasons before its first tool use only.
func ValidateConverse(body []byte) error {
	var req converseRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return fmt.Errorf("body is not a Converse request: %w", err)
	}
	if err := checkCachePoints(req); err != nil {
		return err
	}
	if err := checkReasoning(req); err != nil {
		return err
	}
	if len(req.Messages) == 0 || req.Messages[0].Role != "user" {
		return errors.New("B1: a conversation must start with a user message")
	}
	names := map[string]bool{}
	if req.ToolConfig != nil {
		for _, t := range req.ToolConfig.Tools {
			if t.ToolSpec == nil {
				continue
			}
			if !bedrockName.MatchString(t.ToolSpec.Name) || names[t.ToolSpec.Name] {
				return fmt.Errorf("B5: toolConfig tool name %q is invalid or repeated", t.ToolSpec.Name)
			}
			names[t.ToolSpec.Name] = true
		}
	}
	hasTools := req.ToolConfig != nil && len(req.ToolConfig.Tools) > 0
	ids := map[string]bool{}
	var pending []string // toolUseIds of the previous assistant message
	for i, m := range req.Messages {
		if i > 0 && m.Role == req.Messages[i-1].Role {
			return fmt.Errorf("B2: messages[%d]: roles must alternate between user and assistant", i)
		}
		if m.Role != "user" && m.Role != "assistant" {
			return fmt.Errorf("messages[%d]: role %q", i, m.Role)
		}
		var uses []string
		answered := map[string]bool{}
		results := 0
		for j, c := range m.Content {
			where := fmt.Sprintf("messages[%d].content[%d]", i, j)
			switch {
			case c.Text != nil:
				if strings.TrimSpace(*c.Text) == "" {
					return fmt.Errorf("B3: %s: the text field is blank", where)
				}
			case c.ToolUse != nil:
				if !hasTools {
					return fmt.Errorf("B4: %s: the toolConfig field must be defined when using toolUse and toolResult content blocks", where)
				}
				if m.Role != "assistant" {
					return fmt.Errorf("%s: toolUse in a %s message", where, m.Role)
				}
				if !bedrockName.MatchString(c.ToolUse.ToolUseID) || !bedrockName.MatchString(c.ToolUse.Name) {
					return fmt.Errorf("B5: %s: toolUseId or name does not match [a-zA-Z0-9_-]{1,64}", where)
				}
				if in := bytes.TrimSpace(c.ToolUse.Input); len(in) == 0 || in[0] != '{' || !json.Valid(in) {
					return fmt.Errorf("B5: %s: toolUse input is not a JSON object", where)
				}
				if ids[c.ToolUse.ToolUseID] {
					return fmt.Errorf("B6: %s: toolUseId %q is used twice", where, c.ToolUse.ToolUseID)
				}
				ids[c.ToolUse.ToolUseID] = true
				uses = append(uses, c.ToolUse.ToolUseID)
			case c.ToolResult != nil:
				if !hasTools {
					return fmt.Errorf("B4: %s: the toolConfig field must be defined when using toolUse and toolResult content blocks", where)
				}
				if m.Role != "user" {
					return fmt.Errorf("%s: toolResult in a %s message", where, m.Role)
				}
				if results != j {
					return fmt.Errorf("B7: %s: toolResult blocks must come first in the message", where)
				}
				id := c.ToolResult.ToolUseID
				if !bedrockName.MatchString(id) {
					return fmt.Errorf("B5: %s: toolUseId does not match [a-zA-Z0-9_-]{1,64}", where)
				}
				known := false
				for _, p := range pending {
					known = known || p == id
				}
				if !known || answered[id] {
					return fmt.Errorf("B8: %s: toolResult %q answers no toolUse of the previous assistant message (or answers one twice)", where, id)
				}
				answered[id] = true
				results++
				if len(c.ToolResult.Content) == 0 {
					return fmt.Errorf("B9: %s: toolResult content is empty", where)
				}
				for _, rc := range c.ToolResult.Content {
					if rc.Text != nil && strings.TrimSpace(*rc.Text) == "" {
						return fmt.Errorf("B9: %s: toolResult text is blank", where)
					}
				}
			}
		}
		if len(pending) > 0 && len(answered) != len(pending) {
			return fmt.Errorf("B7: messages[%d]: expected %d toolResult blocks answering the previous toolUse blocks, found %d", i, len(pending), len(answered))
		}
		pending = uses
	}
	if len(pending) > 0 {
		return errors.New("B7: the conversation ends with toolUse blocks that no toolResult answers")
	}
	return nil
}

// maxCachePoints is Bedrock's limit of cache checkpoints in a request.
const maxCachePoints = 4

// checkCachePoints checks rule B10.
func checkCachePoints(req converseRequest) error {
	var points []*cachePoint
	first := func(where string, i int, c *cachePoint) error {
		if c != nil {
			if i == 0 {
				return fmt.Errorf("B10: %s[0]: a cachePoint must follow the content it caches", where)
			}
			points = append(points, c)
		}
		return nil
	}
	for i, b := range req.System {
		if err := first("system", i, b.CachePoint); err != nil {
			return err
		}
	}
	if req.ToolConfig != nil {
		for i, t := range req.ToolConfig.Tools {
			if err := first("toolConfig.tools", i, t.CachePoint); err != nil {
				return err
			}
		}
	}
	for i, m := range req.Messages {
		for j, c := range m.Content {
			if err := first(fmt.Sprintf("messages[%d].content", i), j, c.CachePoint); err != nil {
				return err
			}
		}
	}
	if len(points) > maxCachePoints {
		return fmt.Errorf("B10: %d cachePoint blocks, at most %d", len(points), maxCachePoints)
	}
	for _, c := range points {
		if c.Type != "default" {
			return fmt.Errorf("B10: cachePoint type %q, want default", c.Type)
		}
	}
	return nil
}

// checkReasoning checks rules B11 and B12.
func checkReasoning(req converseRequest) error {
	t := req.thinking()
	if t != nil {
		if t.Type != "enabled" || t.BudgetTokens < 1024 {
			return errors.New("B11: thinking.type must be enabled with budget_tokens of at least 1024")
		}
		if req.InferenceConfig == nil || req.InferenceConfig.MaxTokens == nil || t.BudgetTokens >= *req.InferenceConfig.MaxTokens {
			return errors.New("B11: max_tokens must be greater than thinking.budget_tokens")
		}
	}
	loopStart := -1 // the tool loop's first assistant message
	for i, m := range req.Messages {
		if m.Role != "assistant" {
			if !carriesResults(m.Content) {
				loopStart = -1
			}
			continue
		}
		if loopStart < 0 {
			loopStart = i
		}
		others := false
		for j, c := range m.Content {
			where := fmt.Sprintf("messages[%d].content[%d]", i, j)
			if c.ReasoningContent == nil {
				others = true
				continue
			}
			if others {
				return fmt.Errorf("B12: %s: reasoningContent must come before the message's other blocks", where)
			}
			switch rc := c.ReasoningContent; {
			case rc.ReasoningText != nil:
				if rc.ReasoningText.Signature != Signature(rc.ReasoningText.Text) {
					return fmt.Errorf("B12: %s: the reasoning block's signature does not match its text", where)
				}
			case !bytes.Equal(rc.RedactedContent, RedactedReasoning):
				return fmt.Errorf("B12: %s: the redacted reasoning block was changed", where)
			}
		}
	}
	for i, m := range req.Messages {
		for j, c := range m.Content {
			if c.ReasoningContent != nil && m.Role != "assistant" {
				return fmt.Errorf("B12: messages[%d].content[%d]: reasoningContent in a %s message", i, j, m.Role)
			}
		}
	}
	n := len(req.Messages)
	if t != nil && loopStart >= 0 && n > 0 && req.Messages[n-1].Role == "user" && carriesResults(req.Messages[n-1].Content) {
		if c := req.Messages[loopStart].Content; len(c) == 0 || c[0].ReasoningContent == nil {
			return fmt.Errorf("B12: messages[%d]: expected thinking or redacted_thinking, but found tool_use: with thinking enabled, the tool loop's first assistant message must start with its reasoning", loopStart)
		}
	}
	return nil
}

// carriesResults reports whether a user message's blocks start with a
// toolResult block (rule B7 puts them first): the message answers the
// assistant's tool use, within its turn, rather than opening a new one.
func carriesResults(blocks []converseBlock) bool {
	return len(blocks) > 0 && blocks[0].ToolResult != nil
}
