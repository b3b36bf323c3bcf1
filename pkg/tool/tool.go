package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// Limits of a tool Result, checked by Registry.Run.
const (
	// MaxResultTextBytes bounds Result.Text in UTF-8 bytes (64 KiB): the
	// text is stored twice per call (the toolCalls entry and the tool
	// message) in a turn item that must stay well under DynamoDB's 400 KB
	// (docs/design.md#storage-one-dynamodb-table).
	MaxResultTextBytes = 64 << 10
	// MaxArtifacts bounds Result.Artifacts per call.
	MaxArtifacts = 64
	// MaxNameLen is the longest tool name (model.ToolSpec: the intersection
	// of Bedrock's and OpenAI's rules).
	MaxNameLen = 64
)

// Outcome codes: Outcome.Code of a failed call, for logs and the tool
// call's metadata. They never reach a client as a diagnostic code.
const (
	// CodeUnknownTool: no registered tool has the call's name.
	CodeUnknownTool = "unknown_tool"
	// CodeInvalidArgs: the arguments are not one JSON object (duplicate
	// names and invalid UTF-8 count as invalid) or break the tool's schema.
	CodeInvalidArgs = "invalid_args"
	// CodeFailed: the tool returned an error.
	CodeFailed = "tool_failed"
	// CodePanic: the tool panicked; the panic was recovered.
	CodePanic = "tool_panic"
	// CodeTimeout: the tool's own Timeout passed.
	CodeTimeout = "tool_timeout"
	// CodeCancelled: the caller's context ended (turn deadline, stop).
	CodeCancelled = "cancelled"
	// CodeInvalidResult: Result.Text is too long or not UTF-8, or an
	// artifact reference is invalid or too many.
	CodeInvalidResult = "invalid_result"
	// CodeInvalidComponent: Result.Component is not a valid render frame or
	// the registry's component manifest rejects it
	// (docs/protocol.md#component-frames COMPONENT_UNKNOWN /
	// COMPONENT_INVALID_PROPS).
	CodeInvalidComponent = "invalid_component"
)

// Fixed texts the model receives for failed calls (Outcome.Text).
const (
	textUnknownTool      = "Tool is not available."
	textInvalidArgs      = "Arguments are invalid"
	textFailed           = "Tool failed."
	textTimeout          = "Tool timed out."
	textCancelled        = "Tool call was cancelled."
	textInvalidResult    = "Tool returned an invalid result."
	textInvalidComponent = "Tool returned an invalid component."
)

// Errors of Register and Specs.
var (
	// ErrInvalidTool is wrapped by Register; the wrapping error names the
	// field at fault.
	ErrInvalidTool = errors.New("tool: invalid tool")
	// ErrDuplicateTool is wrapped by Register when the name is taken.
	ErrDuplicateTool = errors.New("tool: duplicate tool name")
	// ErrUnknownTool is wrapped by Specs for a name that is not registered.
	ErrUnknownTool = errors.New("tool: unknown tool")
)

// Tool is one model-callable Go function.
type Tool struct {
	// Name is how the model calls the tool: 1..64 of [A-Za-z0-9_-]
	// (model.ToolSpec).
	Name string
	// Description tells the model what the tool does and when to use it;
	// required.
	Description string
	// InputSchema is a JSON Schema document (draft 2020-12 unless its
	// $schema says otherwise) whose root has "type": "object" (Bedrock and
	// OpenAI accept only object inputs). It may not $ref external
	// documents. Compiled once, by Register (or at the first call, by
	// RegisterDeferred).
	InputSchema json.RawMessage
	// Timeout bounds one call; 0 means only the caller's context.
	Timeout time.Duration
	// Approval makes the tool's calls wait for the session owner's
	// approval before they run (docs/approvals.md): set by the tools of a
	// remote server that requires it (pkg/tool/mcp); a definition's
	// approvalTools mark its local ones.
	Approval bool
	// Server names the remote server that runs the tool (an MCP server's
	// name, pkg/tool/mcp); "" for a tool of this process. It reaches the
	// call's Outcome, for telemetry.
	Server string
	// Call runs the tool with arguments that already passed InputSchema:
	// a JSON object, compact or not, exactly as the model sent it (decode
	// it with DecodeArgs). It must honour ctx. A returned *Error's Message
	// reaches the model (and the client's snapshot); any other error is
	// logged only and the model reads "Tool failed.".
	Call func(ctx context.Context, args json.RawMessage) (Result, error)
}

// Result is what a successful call produced. Any combination of fields
// may be set.
type Result struct {
	// Text is the result for the model and the toolCalls entry's result:
	// valid UTF-8, at most MaxResultTextBytes.
	Text string
	// Artifacts are workspace files the call produced
	// (docs/design.md#history-and-artifacts-api); at most MaxArtifacts, each
	// valid by chat.ValidateArtifacts. The turn records them before its
	// terminal snapshot.
	Artifacts []chat.ArtifactReference
	// Component is a render frame to append to the ordered assistant content
	// (docs/protocol.md#ordered-assistant-content,
	// docs/protocol.md#component-frames); it must pass the registry's
	// manifest.
	Component *protocol.RenderFrame
}

// Error is a tool failure meant for the model: Message is shown to the
// model and kept in the toolCalls entry's error, so it must not carry
// secrets or internal detail. Err is for logs.
type Error struct {
	Message string
	Err     error
}

// Error returns "tool: " and Message, followed by Err when set.
func (e *Error) Error() string {
	if e.Err == nil {
		return "tool: " + e.Message
	}
	return fmt.Sprintf("tool: %s: %v", e.Message, e.Err)
}

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

// Outcome is the result of Registry.Run for one call. Status is
// protocol.ToolCallComplete or protocol.ToolCallError.
type Outcome struct {
	// Call is the model's call as given to Run, with Args "{}" when the
	// model sent none.
	Call model.ToolCall
	// Status is protocol.ToolCallComplete or protocol.ToolCallError.
	Status string
	// Text is for the model: Result.Text on success, otherwise a fixed
	// text (or an *Error's Message) describing the failure.
	Text string
	// Code is "" on success, otherwise one of the Code constants.
	Code string
	// Artifacts are the validated artifact references (success only).
	Artifacts []chat.ArtifactReference
	// Component is the checked render frame, or nil (success only).
	Component *protocol.RenderFrame
	// Err is the underlying failure for logs; nil on success.
	Err error
	// Server is the tool's Server ("" for a local tool or an unknown
	// one).
	Server string
}

// OK reports whether the call completed.
func (o Outcome) OK() bool { return o.Status == protocol.ToolCallComplete }

// ToolCall returns the assistant message's toolCalls entry for the finished
// call (docs/protocol.md#the-canonical-message-record): Result set when
// complete, Error when failed. Args is the call's JSON object; a call whose
// Args were not a JSON object gets "{}" so the record stays valid.
func (o Outcome) ToolCall() protocol.ToolCall {
	args := o.Call.Args
	if !isJSONObject(args) {
		args = json.RawMessage("{}")
	}
	tc := protocol.ToolCall{ID: o.Call.ID, Name: o.Call.Name, Args: args, Status: o.Status}
	text := o.Text
	if o.OK() {
		tc.Result = &text
	} else {
		tc.Error = &text
	}
	return tc
}

// ToolMessage returns the tool result message of the model round trip
// (pkg/model package documentation): Role tool, ToolCallID the call's id,
// Content Outcome.Text, Status complete or error. The caller supplies the
// message id and createdAt (YYYY-MM-DDTHH:MM:SS.mmmZ).
func (o Outcome) ToolMessage(id, createdAt string) protocol.Message {
	callID := o.Call.ID
	status := protocol.MessageComplete
	if !o.OK() {
		status = protocol.MessageError
	}
	return protocol.Message{
		ID:         id,
		Role:       protocol.RoleTool,
		Content:    o.Text,
		Status:     status,
		CreatedAt:  createdAt,
		ToolCallID: &callID,
	}
}

// Registry maps tool names to Tools with compiled schemas. Register tools
// at start-up (Register, or RegisterDeferred); Specs, Has and Run are safe for concurrent use with each
// other and with Register.
type Registry struct {
	manifest *Manifest

	mu    sync.RWMutex
	tools map[string]*entry
}

type entry struct {
	tool Tool
	// schema returns the compiled input schema: compiled by Register, or
	// on the first call of a tool added by RegisterDeferred.
	schema func() (*jsonschema.Schema, error)
}

// NewRegistry returns an empty registry. manifest is the closed component
// manifest that tool render frames must pass
// (docs/protocol.md#component-frames); nil means no component is registered,
// so every tool component is rejected.
func NewRegistry(manifest *Manifest) *Registry {
	return &Registry{manifest: manifest, tools: map[string]*entry{}}
}

// noRemoteLoader refuses every $ref outside a schema's own document (a
// tool's input schema, a manifest's props schemas), so compiling one
// never touches the file system or network. It names what it refuses for.
type noRemoteLoader struct{ what string }

func (l noRemoteLoader) Load(string) (any, error) {
	return nil, fmt.Errorf("tool: %s may not reference external documents", l.what)
}

// Register adds t, its input schema compiled now. It returns an error
// wrapping ErrInvalidTool (naming the field: name, description,
// inputSchema, call) or ErrDuplicateTool.
func (r *Registry) Register(t Tool) error {
	doc, err := check(t)
	if err != nil {
		return err
	}
	sch, err := compileSchema(t.Name, doc)
	if err != nil {
		return fmt.Errorf("%w: %s: inputSchema: %w", ErrInvalidTool, t.Name, err)
	}
	return r.add(t, func() (*jsonschema.Schema, error) { return sch, nil })
}

// RegisterDeferred adds t as Register does, except that its input schema
// is compiled at the tool's first call instead of now: the first schema a
// process compiles also compiles its draft's metaschemas, about 2 ms of
// CPU, which a cold start would otherwise pay before its first turn. Use
// it for tools whose schemas a test compiles (the built-in tools:
// TestBuiltInSchemasCompile). Register's other checks (the name, the
// description, the call, the timeout, a schema that is one JSON object
// with "type": "object") still fail here; a schema that then does not
// compile fails every call of the tool with CodeFailed, its arguments
// unchecked and the tool not called.
func (r *Registry) RegisterDeferred(t Tool) error {
	doc, err := check(t)
	if err != nil {
		return err
	}
	return r.add(t, sync.OnceValues(func() (*jsonschema.Schema, error) { return compileSchema(t.Name, doc) }))
}

// check runs Register's checks of t but the compilation of its input
// schema, and returns the schema's document.
func check(t Tool) (any, error) {
	if !validName(t.Name) {
		return nil, fmt.Errorf("%w: name: want 1..%d of [A-Za-z0-9_-]", ErrInvalidTool, MaxNameLen)
	}
	if strings.TrimSpace(t.Description) == "" {
		return nil, fmt.Errorf("%w: %s: description: required", ErrInvalidTool, t.Name)
	}
	if t.Call == nil {
		return nil, fmt.Errorf("%w: %s: call: required", ErrInvalidTool, t.Name)
	}
	if t.Timeout < 0 {
		return nil, fmt.Errorf("%w: %s: timeout: negative", ErrInvalidTool, t.Name)
	}
	doc, err := parseSchema(t.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: inputSchema: %w", ErrInvalidTool, t.Name, err)
	}
	return doc, nil
}

// add registers t with its schema (compiled, or compiled on first use).
func (r *Registry) add(t Tool, schema func() (*jsonschema.Schema, error)) error {
	t.InputSchema = append(json.RawMessage(nil), t.InputSchema...)
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.tools[t.Name]; ok {
		return fmt.Errorf("%w: %s", ErrDuplicateTool, t.Name)
	}
	r.tools[t.Name] = &entry{tool: t, schema: schema}
	return nil
}

// parseSchema decodes an input schema: one JSON object (no duplicate
// names) whose root has "type": "object".
func parseSchema(raw json.RawMessage) (any, error) {
	if !jsontext.Value(raw).IsValid() {
		return nil, errors.New("not valid JSON")
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, errors.New("not valid JSON")
	}
	obj, ok := doc.(map[string]any)
	if !ok || obj["type"] != "object" {
		return nil, errors.New(`root must be an object schema with "type": "object"`)
	}
	return doc, nil
}

// compileSchema compiles a parsed input schema, refusing every reference
// outside its own document.
func compileSchema(name string, doc any) (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.UseLoader(noRemoteLoader{"schemas"})
	url := "urn:turnstream:tool:" + name
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	return c.Compile(url)
}

// Has reports whether a tool named name is registered.
func (r *Registry) Has(name string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	_, ok := r.tools[name]
	return ok
}

// Names returns the registered tool names, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.tools))
	for n := range r.tools {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Specs returns the model.ToolSpec of each named tool, in the order given
// (a definition's tools, for model.Request.Tools). No names gives nil. A
// name that is not registered is an error wrapping ErrUnknownTool.
func (r *Registry) Specs(names []string) ([]model.ToolSpec, error) {
	if len(names) == 0 {
		return nil, nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	specs := make([]model.ToolSpec, 0, len(names))
	for _, n := range names {
		e, ok := r.tools[n]
		if !ok {
			return nil, fmt.Errorf("%w: %q", ErrUnknownTool, n)
		}
		specs = append(specs, model.ToolSpec{
			Name:        e.tool.Name,
			Description: e.tool.Description,
			InputSchema: append(json.RawMessage(nil), e.tool.InputSchema...),
		})
	}
	return specs, nil
}

// Run executes one call and reports its Outcome; it never panics and has
// no error result. Steps, in order: look the tool up (CodeUnknownTool);
// check the arguments are one JSON object without duplicate names and
// valid against the schema (CodeInvalidArgs; the tool is not called);
// call it under its Timeout (CodeTimeout, CodeCancelled when ctx ended,
// CodePanic, CodeFailed); check the Result (CodeInvalidResult,
// CodeInvalidComponent). A call is only made while ctx is live. The
// caller should restrict calls to the tools it offered the model (a
// definition's tools): Run runs any registered tool.
func (r *Registry) Run(ctx context.Context, call model.ToolCall) Outcome {
	if len(bytes.TrimSpace(call.Args)) == 0 {
		call.Args = json.RawMessage("{}")
	}
	o := Outcome{Call: call}
	r.mu.RLock()
	e, ok := r.tools[call.Name]
	r.mu.RUnlock()
	if !ok {
		return o.fail(CodeUnknownTool, textUnknownTool, fmt.Errorf("%w: %q", ErrUnknownTool, call.Name))
	}
	o.Server = e.tool.Server
	if !isJSONObject(call.Args) {
		return o.fail(CodeInvalidArgs, argsProblem(call.Args), errNotObject)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(call.Args))
	if err != nil {
		return o.fail(CodeInvalidArgs, textInvalidArgs+": not a JSON object.", err)
	}
	sch, err := e.schema()
	if err != nil {
		return o.fail(CodeFailed, textFailed, fmt.Errorf("%w: %s: inputSchema: %w", ErrInvalidTool, call.Name, err))
	}
	if err := sch.Validate(inst); err != nil {
		return o.fail(CodeInvalidArgs, textInvalidArgs+": "+describe(err), err)
	}
	if err := ctx.Err(); err != nil {
		return o.fail(CodeCancelled, textCancelled, err)
	}
	res, err := e.call(ctx, call.Args)
	if err != nil {
		var te *Error
		switch {
		case errors.Is(err, errPanic):
			return o.fail(CodePanic, textFailed, err)
		case ctx.Err() != nil:
			return o.fail(CodeCancelled, textCancelled, err)
		case errors.Is(err, errTimeout):
			return o.fail(CodeTimeout, textTimeout, err)
		case errors.As(err, &te) && te.Message != "" && utf8.ValidString(te.Message):
			return o.fail(CodeFailed, te.Message, err)
		default:
			return o.fail(CodeFailed, textFailed, err)
		}
	}
	return r.accept(o, res)
}

var (
	errNotObject = errors.New("tool: arguments are not one JSON object (valid UTF-8, no duplicate names)")
	errPanic     = errors.New("tool: panic")
	errTimeout   = errors.New("tool: timeout")
)

// call runs the tool under its timeout, turning a panic into errPanic and
// the tool's own deadline into errTimeout.
func (e *entry) call(ctx context.Context, args json.RawMessage) (res Result, err error) {
	callCtx := ctx
	if e.tool.Timeout > 0 {
		var cancel context.CancelFunc
		callCtx, cancel = context.WithTimeoutCause(ctx, e.tool.Timeout, errTimeout)
		defer cancel()
	}
	defer func() {
		if p := recover(); p != nil {
			res, err = Result{}, fmt.Errorf("%w: %s: %v", errPanic, e.tool.Name, p)
		}
	}()
	res, err = e.tool.Call(callCtx, args)
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(callCtx), errTimeout) {
		err = fmt.Errorf("%w: %s after %v: %w", errTimeout, e.tool.Name, e.tool.Timeout, err)
	}
	return res, err
}

// accept checks res against the limits and the manifest.
func (r *Registry) accept(o Outcome, res Result) Outcome {
	if len(res.Text) > MaxResultTextBytes || !utf8.ValidString(res.Text) {
		return o.fail(CodeInvalidResult, textInvalidResult, fmt.Errorf("tool: %s: result text is not UTF-8 or exceeds %d bytes", o.Call.Name, MaxResultTextBytes))
	}
	if len(res.Artifacts) > MaxArtifacts {
		return o.fail(CodeInvalidResult, textInvalidResult, fmt.Errorf("tool: %s: %d artifact references, limit %d", o.Call.Name, len(res.Artifacts), MaxArtifacts))
	}
	if err := chat.ValidateArtifacts(res.Artifacts); err != nil {
		return o.fail(CodeInvalidResult, textInvalidResult, fmt.Errorf("tool: %s: %w", o.Call.Name, err))
	}
	if res.Component != nil {
		if _, err := protocol.EncodeRenderFrame(res.Component); err != nil {
			return o.fail(CodeInvalidComponent, textInvalidComponent, fmt.Errorf("tool: %s: %w", o.Call.Name, err))
		}
		if r.manifest == nil {
			return o.fail(CodeInvalidComponent, textInvalidComponent, fmt.Errorf("tool: %s: component %s: no component manifest", o.Call.Name, res.Component.ComponentKey))
		}
		if d := r.manifest.Check(res.Component); d != nil {
			return o.fail(CodeInvalidComponent, textInvalidComponent, fmt.Errorf("tool: %s: component %s: %s", o.Call.Name, res.Component.ComponentKey, d.Code))
		}
	}
	o.Status = protocol.ToolCallComplete
	o.Text = res.Text
	o.Artifacts = append([]chat.ArtifactReference(nil), res.Artifacts...)
	o.Component = res.Component
	return o
}

func (o Outcome) fail(code, text string, err error) Outcome {
	o.Status = protocol.ToolCallError
	o.Code = code
	o.Text = text
	o.Err = err
	return o
}

// describe summarizes a schema validation error for the model: one
// "<instance JSON pointer>: <keyword>" per failing leaf, at most 8, with
// the missing property names of "required" and the unexpected names of
// "additionalProperties", so the model can fix its call. Values are
// never quoted.
func describe(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return "schema validation failed."
	}
	var leaves []string
	var walk func(v *jsonschema.ValidationError)
	walk = func(v *jsonschema.ValidationError) {
		if len(v.Causes) == 0 {
			loc := "/" + strings.Join(escapePointer(v.InstanceLocation), "/")
			kw := "schema"
			if v.ErrorKind != nil {
				if p := v.ErrorKind.KeywordPath(); len(p) > 0 {
					kw = strings.Join(p, "/")
				}
			}
			switch k := v.ErrorKind.(type) {
			case *kind.Required:
				kw += " (missing " + strings.Join(k.Missing, ", ") + ")"
			case *kind.AdditionalProperties:
				kw += " (unexpected " + strings.Join(k.Properties, ", ") + ")"
			}
			leaves = append(leaves, loc+": "+kw)
			return
		}
		for _, c := range v.Causes {
			walk(c)
		}
	}
	walk(ve)
	sort.Strings(leaves)
	if len(leaves) > 8 {
		leaves = append(leaves[:8], "...")
	}
	return strings.Join(leaves, "; ") + "."
}

func escapePointer(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		out[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1")
	}
	return out
}

// argsProblem is the model's text for arguments that are not one JSON
// object: "not valid JSON" (also for invalid UTF-8 and duplicate names,
// which the strict reader refuses), "a JSON array" / "a JSON string" /
// "a JSON number" / "a JSON boolean" / "JSON null" for valid JSON of
// another kind, and "not a JSON object" otherwise. The arguments
// themselves are never quoted.
func argsProblem(raw json.RawMessage) string {
	v := jsontext.Value(raw)
	if !v.IsValid() {
		return textInvalidArgs + ": not valid JSON; send one JSON object."
	}
	kind := map[jsontext.Kind]string{'[': "a JSON array", '"': "a JSON string", '0': "a JSON number", 't': "a JSON boolean", 'f': "a JSON boolean", 'n': "JSON null"}[v.Kind()]
	if kind == "" {
		return textInvalidArgs + ": not a JSON object."
	}
	return textInvalidArgs + ": " + kind + ", not a JSON object."
}

// isJSONObject reports whether raw is exactly one JSON object with valid UTF-8
// and no duplicate names (the JSON reader rules of
// docs/design.md#wire-protocol-v1: two parsers must never read one value two
// ways).
func isJSONObject(raw json.RawMessage) bool {
	v := jsontext.Value(raw)
	return v.IsValid() && v.Kind() == '{'
}

// DecodeArgs decodes a tool's arguments into v with case-sensitive member
// names, duplicate names rejected and unknown members rejected
// (github.com/go-json-experiment/json), unlike encoding/json, which
// matches names case-insensitively and lets a duplicate win: a tool reads
// exactly what its schema validated.
func DecodeArgs(args json.RawMessage, v any) error {
	return jsonv2.Unmarshal(args, v, jsonv2.RejectUnknownMembers(true))
}

func validName(s string) bool {
	if len(s) < 1 || len(s) > MaxNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && c != '_' && c != '-' {
			return false
		}
	}
	return true
}
