package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/tool"
)

const addSchema = `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"],"additionalProperties":false}`

// newRegistry returns a registry with a manifest of one component
// ("chart", props {"points": [numbers]}) and the given tools.
func newRegistry(t *testing.T, tools ...tool.Tool) *tool.Registry {
	t.Helper()
	m, err := tool.NewManifest(map[string][]byte{
		"chart": []byte(`{"type":"object","properties":{"points":{"type":"array","items":{"type":"number"}}},"required":["points"]}`),
	})
	if err != nil {
		t.Fatalf("NewManifest: %v", err)
	}
	r := tool.NewRegistry(m)
	for _, tl := range tools {
		if err := r.Register(tl); err != nil {
			t.Fatalf("Register(%s): %v", tl.Name, err)
		}
	}
	return r
}

func fixed(res tool.Result, err error) func(context.Context, json.RawMessage) (tool.Result, error) {
	return func(context.Context, json.RawMessage) (tool.Result, error) { return res, err }
}

func TestRegister(t *testing.T) {
	ok := tool.Tool{Name: "add", Description: "Adds.", InputSchema: json.RawMessage(addSchema), Call: fixed(tool.Result{}, nil)}
	with := func(f func(*tool.Tool)) tool.Tool { c := ok; f(&c); return c }
	tests := map[string]struct {
		tool    tool.Tool
		wantErr error
		field   string
	}{
		"valid":              {ok, nil, ""},
		"empty name":         {with(func(t *tool.Tool) { t.Name = "" }), tool.ErrInvalidTool, "name"},
		"name with dot":      {with(func(t *tool.Tool) { t.Name = "a.b" }), tool.ErrInvalidTool, "name"},
		"name too long":      {with(func(t *tool.Tool) { t.Name = strings.Repeat("a", 65) }), tool.ErrInvalidTool, "name"},
		"no description":     {with(func(t *tool.Tool) { t.Description = " " }), tool.ErrInvalidTool, "description"},
		"no call":            {with(func(t *tool.Tool) { t.Call = nil }), tool.ErrInvalidTool, "call"},
		"negative timeout":   {with(func(t *tool.Tool) { t.Timeout = -1 }), tool.ErrInvalidTool, "timeout"},
		"schema not JSON":    {with(func(t *tool.Tool) { t.InputSchema = json.RawMessage(`{`) }), tool.ErrInvalidTool, "inputSchema"},
		"schema dup key":     {with(func(t *tool.Tool) { t.InputSchema = json.RawMessage(`{"type":"object","type":"string"}`) }), tool.ErrInvalidTool, "inputSchema"},
		"schema not object":  {with(func(t *tool.Tool) { t.InputSchema = json.RawMessage(`{"type":"string"}`) }), tool.ErrInvalidTool, "inputSchema"},
		"schema missing":     {with(func(t *tool.Tool) { t.InputSchema = nil }), tool.ErrInvalidTool, "inputSchema"},
		"schema bad keyword": {with(func(t *tool.Tool) { t.InputSchema = json.RawMessage(`{"type":"object","minProperties":"x"}`) }), tool.ErrInvalidTool, "inputSchema"},
		"schema remote ref": {with(func(t *tool.Tool) {
			t.InputSchema = json.RawMessage(`{"type":"object","$ref":"https://example.com/s.json"}`)
		}), tool.ErrInvalidTool, "inputSchema"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := tool.NewRegistry(nil).Register(tc.tool)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Register = %v, want %v", err, tc.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), tc.field) {
				t.Errorf("error %q does not name %q", err, tc.field)
			}
		})
	}
	t.Run("duplicate", func(t *testing.T) {
		r := newRegistry(t, ok)
		if err := r.Register(ok); !errors.Is(err, tool.ErrDuplicateTool) {
			t.Fatalf("second Register = %v, want ErrDuplicateTool", err)
		}
	})
}

func TestSpecs(t *testing.T) {
	r := newRegistry(t,
		tool.Tool{Name: "add", Description: "Adds.", InputSchema: json.RawMessage(addSchema), Call: fixed(tool.Result{}, nil)},
		tool.WorkspaceNote(),
	)
	specs, err := r.Specs([]string{tool.WorkspaceNoteName, "add"})
	if err != nil {
		t.Fatalf("Specs: %v", err)
	}
	if len(specs) != 2 || specs[0].Name != tool.WorkspaceNoteName || specs[1].Name != "add" {
		t.Fatalf("Specs order = %+v", specs)
	}
	if string(specs[1].InputSchema) != addSchema || specs[1].Description != "Adds." {
		t.Errorf("spec = %+v", specs[1])
	}
	if got, err := r.Specs(nil); got != nil || err != nil {
		t.Errorf("Specs(nil) = %v, %v", got, err)
	}
	if _, err := r.Specs([]string{"add", "missing"}); !errors.Is(err, tool.ErrUnknownTool) {
		t.Errorf("Specs(missing) = %v, want ErrUnknownTool", err)
	}
	if got := r.Names(); len(got) != 2 || got[0] != "add" || got[1] != tool.WorkspaceNoteName {
		t.Errorf("Names = %v", got)
	}
	if !r.Has("add") || r.Has("Add") {
		t.Errorf("Has is not exact")
	}
}

func TestRun(t *testing.T) {
	var calls int
	add := tool.Tool{
		Name: "add", Description: "Adds.", InputSchema: json.RawMessage(addSchema),
		Call: func(_ context.Context, args json.RawMessage) (tool.Result, error) {
			calls++
			var in struct {
				A int `json:"a"`
				B int `json:"b"`
			}
			if err := tool.DecodeArgs(args, &in); err != nil {
				return tool.Result{}, err
			}
			return tool.Result{Text: "sum " + strings.Repeat("I", in.A+in.B)}, nil
		},
	}
	chart := &protocol.RenderFrame{ComponentKey: "chart", InstanceID: "c1", Props: json.RawMessage(`{"points":[1,2]}`), Fallback: protocol.Fallback{Kind: "chart", Summary: "Two points."}}
	badProps := *chart
	badProps.Props = json.RawMessage(`{"points":"x"}`)
	unknownKey := *chart
	unknownKey.ComponentKey = "table"
	badFrame := *chart
	badFrame.InstanceID = "bad id"
	doc := chat.ArtifactReference{EntryPath: "a/b.md", ArtifactType: chat.ArtifactDocument}
	simple := func(name string, res tool.Result, err error) tool.Tool {
		return tool.Tool{Name: name, Description: "d", InputSchema: json.RawMessage(`{"type":"object"}`), Call: fixed(res, err)}
	}
	r := newRegistry(t, add,
		simple("exposed", tool.Result{}, &tool.Error{Message: "Quota reached.", Err: errors.New("internal detail")}),
		simple("internal", tool.Result{}, errors.New("db password wrong")),
		simple("artifacts", tool.Result{Text: "ok", Artifacts: []chat.ArtifactReference{doc}}, nil),
		simple("bad-artifact", tool.Result{Artifacts: []chat.ArtifactReference{{EntryPath: "../x", ArtifactType: chat.ArtifactDocument}}}, nil),
		simple("too-many-artifacts", tool.Result{Artifacts: make([]chat.ArtifactReference, tool.MaxArtifacts+1)}, nil),
		simple("big-text", tool.Result{Text: strings.Repeat("x", tool.MaxResultTextBytes+1)}, nil),
		simple("bad-utf8", tool.Result{Text: "\xff"}, nil),
		simple("component", tool.Result{Text: "drawn", Component: chart}, nil),
		simple("bad-props", tool.Result{Component: &badProps}, nil),
		simple("unknown-component", tool.Result{Component: &unknownKey}, nil),
		simple("bad-frame", tool.Result{Component: &badFrame}, nil),
	)
	// A tool that panics.
	if err := r.Register(tool.Tool{Name: "boom", Description: "d", InputSchema: json.RawMessage(`{"type":"object"}`),
		Call: func(context.Context, json.RawMessage) (tool.Result, error) { panic("kaboom") }}); err != nil {
		t.Fatal(err)
	}

	tests := map[string]struct {
		name, args    string
		wantStatus    string
		wantCode      string
		wantText      string
		wantArtifacts int
		wantComponent bool
		wantCalled    bool
	}{
		"valid":                 {"add", `{"a":1,"b":2}`, protocol.ToolCallComplete, "", "sum III", 0, false, true},
		"unknown tool":          {"nope", `{}`, protocol.ToolCallError, tool.CodeUnknownTool, "Tool is not available.", 0, false, false},
		"missing property":      {"add", `{"a":1}`, protocol.ToolCallError, tool.CodeInvalidArgs, "Arguments are invalid: /: required (missing b).", 0, false, false},
		"wrong type":            {"add", `{"a":1,"b":"two"}`, protocol.ToolCallError, tool.CodeInvalidArgs, "Arguments are invalid: /b: type.", 0, false, false},
		"extra property":        {"add", `{"a":1,"b":2,"c":3}`, protocol.ToolCallError, tool.CodeInvalidArgs, "Arguments are invalid: /: additionalProperties (unexpected c).", 0, false, false},
		"case-folded duplicate": {"add", `{"a":1,"b":2,"B":3}`, protocol.ToolCallError, tool.CodeInvalidArgs, "Arguments are invalid: /: additionalProperties (unexpected B).", 0, false, false},
		"duplicate key":         {"add", `{"a":1,"b":2,"b":3}`, protocol.ToolCallError, tool.CodeInvalidArgs, "Arguments are invalid: not valid JSON; send one JSON object.", 0, false, false},
		"not JSON":              {"add", `{"a":1,`, protocol.ToolCallError, tool.CodeInvalidArgs, "Arguments are invalid: not valid JSON; send one JSON object.", 0, false, false},
		"array args":            {"add", `[1,2]`, protocol.ToolCallError, tool.CodeInvalidArgs, "Arguments are invalid: a JSON array, not a JSON object.", 0, false, false},
		"string args":           {"add", `"a=1"`, protocol.ToolCallError, tool.CodeInvalidArgs, "Arguments are invalid: a JSON string, not a JSON object.", 0, false, false},
		"number args":           {"add", `3`, protocol.ToolCallError, tool.CodeInvalidArgs, "Arguments are invalid: a JSON number, not a JSON object.", 0, false, false},
		"boolean args":          {"add", `true`, protocol.ToolCallError, tool.CodeInvalidArgs, "Arguments are invalid: a JSON boolean, not a JSON object.", 0, false, false},
		"null args":             {"add", `null`, protocol.ToolCallError, tool.CodeInvalidArgs, "Arguments are invalid: JSON null, not a JSON object.", 0, false, false},
		"two objects":           {"add", `{"a":1,"b":2}{}`, protocol.ToolCallError, tool.CodeInvalidArgs, "Arguments are invalid: not valid JSON; send one JSON object.", 0, false, false},
		"empty args are {}":     {"artifacts", ``, protocol.ToolCallComplete, "", "ok", 1, false, false},
		"exposed error":         {"exposed", `{}`, protocol.ToolCallError, tool.CodeFailed, "Quota reached.", 0, false, false},
		"internal error hidden": {"internal", `{}`, protocol.ToolCallError, tool.CodeFailed, "Tool failed.", 0, false, false},
		"panic recovered":       {"boom", `{}`, protocol.ToolCallError, tool.CodePanic, "Tool failed.", 0, false, false},
		"artifacts":             {"artifacts", `{}`, protocol.ToolCallComplete, "", "ok", 1, false, false},
		"invalid artifact":      {"bad-artifact", `{}`, protocol.ToolCallError, tool.CodeInvalidResult, "Tool returned an invalid result.", 0, false, false},
		"too many artifacts":    {"too-many-artifacts", `{}`, protocol.ToolCallError, tool.CodeInvalidResult, "Tool returned an invalid result.", 0, false, false},
		"text too long":         {"big-text", `{}`, protocol.ToolCallError, tool.CodeInvalidResult, "Tool returned an invalid result.", 0, false, false},
		"text not UTF-8":        {"bad-utf8", `{}`, protocol.ToolCallError, tool.CodeInvalidResult, "Tool returned an invalid result.", 0, false, false},
		"component":             {"component", `{}`, protocol.ToolCallComplete, "", "drawn", 0, true, false},
		"component bad props":   {"bad-props", `{}`, protocol.ToolCallError, tool.CodeInvalidComponent, "Tool returned an invalid component.", 0, false, false},
		"component unknown":     {"unknown-component", `{}`, protocol.ToolCallError, tool.CodeInvalidComponent, "Tool returned an invalid component.", 0, false, false},
		"component bad frame":   {"bad-frame", `{}`, protocol.ToolCallError, tool.CodeInvalidComponent, "Tool returned an invalid component.", 0, false, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			calls = 0
			o := r.Run(context.Background(), model.ToolCall{ID: "call-1", Name: tc.name, Args: json.RawMessage(tc.args)})
			if o.Status != tc.wantStatus || o.Code != tc.wantCode || o.Text != tc.wantText {
				t.Fatalf("Run = status %q code %q text %q; want %q %q %q (err %v)", o.Status, o.Code, o.Text, tc.wantStatus, tc.wantCode, tc.wantText, o.Err)
			}
			if len(o.Artifacts) != tc.wantArtifacts || (o.Component != nil) != tc.wantComponent {
				t.Errorf("artifacts %d component %v", len(o.Artifacts), o.Component != nil)
			}
			if got := calls > 0; got != tc.wantCalled {
				t.Errorf("add called = %v, want %v", got, tc.wantCalled)
			}
			if o.OK() != (o.Err == nil) {
				t.Errorf("OK %v but Err %v", o.OK(), o.Err)
			}
			if o.Call.ID != "call-1" || o.Call.Name != tc.name {
				t.Errorf("Outcome.Call = %+v", o.Call)
			}
		})
	}
}

func TestRunContext(t *testing.T) {
	blocking := func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
		<-ctx.Done()
		return tool.Result{}, ctx.Err()
	}
	r := newRegistry(t,
		tool.Tool{Name: "slow", Description: "d", InputSchema: json.RawMessage(`{"type":"object"}`), Timeout: time.Millisecond, Call: blocking},
		tool.Tool{Name: "wait", Description: "d", InputSchema: json.RawMessage(`{"type":"object"}`), Call: blocking},
	)
	t.Run("tool timeout", func(t *testing.T) {
		o := r.Run(context.Background(), model.ToolCall{ID: "1", Name: "slow", Args: json.RawMessage(`{}`)})
		if o.Code != tool.CodeTimeout || o.Text != "Tool timed out." {
			t.Fatalf("Run = %q %q (%v)", o.Code, o.Text, o.Err)
		}
	})
	t.Run("caller cancelled during call", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(time.Millisecond, cancel)
		o := r.Run(ctx, model.ToolCall{ID: "1", Name: "wait", Args: json.RawMessage(`{}`)})
		if o.Code != tool.CodeCancelled || !errors.Is(o.Err, context.Canceled) {
			t.Fatalf("Run = %q (%v)", o.Code, o.Err)
		}
	})
	t.Run("caller cancelled before call", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		o := r.Run(ctx, model.ToolCall{ID: "1", Name: "slow", Args: json.RawMessage(`{}`)})
		if o.Code != tool.CodeCancelled {
			t.Fatalf("Run = %q (%v)", o.Code, o.Err)
		}
	})
}

func TestOutcomeRecords(t *testing.T) {
	r := newRegistry(t, tool.WorkspaceNote())
	ok := r.Run(context.Background(), model.ToolCall{ID: "tc-1", Name: tool.WorkspaceNoteName, Args: json.RawMessage(`{"title":"Plan","body":"x"}`)})
	bad := r.Run(context.Background(), model.ToolCall{ID: "tc-2", Name: tool.WorkspaceNoteName, Args: json.RawMessage(`not json`)})
	tests := map[string]struct {
		o          tool.Outcome
		wantCall   string
		wantStatus string
	}{
		"complete": {ok, `{"id":"tc-1","name":"workspace_note","args":{"title":"Plan","body":"x"},"status":"complete","result":"Saved note \"notes/plan.md\" (1 characters)."}`, protocol.MessageComplete},
		"error":    {bad, `{"id":"tc-2","name":"workspace_note","args":{},"status":"error","error":"Arguments are invalid: not valid JSON; send one JSON object."}`, protocol.MessageError},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := json.Marshal(tc.o.ToolCall())
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.wantCall {
				t.Errorf("ToolCall JSON =\n %s\nwant\n %s", got, tc.wantCall)
			}
			m := tc.o.ToolMessage("m-1", "2026-11-29T20:00:00.000Z")
			if m.Role != protocol.RoleTool || m.ToolCallID == nil || *m.ToolCallID != tc.o.Call.ID || m.Content != tc.o.Text || m.Status != tc.wantStatus {
				t.Errorf("ToolMessage = %+v", m)
			}
		})
	}
}

func TestWorkspaceNote(t *testing.T) {
	r := newRegistry(t, tool.WorkspaceNote())
	tests := map[string]struct {
		args     string
		wantPath string
		wantText string
	}{
		"simple":    {`{"title":"Meeting Notes","body":"héllo"}`, "notes/meeting-notes.md", `Saved note "notes/meeting-notes.md" (5 characters).`},
		"symbols":   {`{"title":"  ../Q3: plan?! ","body":""}`, "notes/q3-plan.md", `Saved note "notes/q3-plan.md" (0 characters).`},
		"no ascii":  {`{"title":"日本","body":"b"}`, "notes/note.md", `Saved note "notes/note.md" (1 characters).`},
		"long":      {`{"title":"` + strings.Repeat("ab ", 60) + `","body":""}`, "notes/" + strings.Repeat("ab-", 22)[:64] + ".md", ""},
		"same args": {`{"title":"Meeting Notes","body":"héllo"}`, "notes/meeting-notes.md", `Saved note "notes/meeting-notes.md" (5 characters).`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o := r.Run(context.Background(), model.ToolCall{ID: "1", Name: tool.WorkspaceNoteName, Args: json.RawMessage(tc.args)})
			if !o.OK() {
				t.Fatalf("Run failed: %s %s (%v)", o.Code, o.Text, o.Err)
			}
			want := []chat.ArtifactReference{{EntryPath: tc.wantPath, ArtifactType: chat.ArtifactDocument}}
			if len(o.Artifacts) != 1 || o.Artifacts[0] != want[0] {
				t.Errorf("Artifacts = %+v, want %+v", o.Artifacts, want)
			}
			if tc.wantText != "" && o.Text != tc.wantText {
				t.Errorf("Text = %q, want %q", o.Text, tc.wantText)
			}
		})
	}
	t.Run("schema rejects missing body", func(t *testing.T) {
		o := r.Run(context.Background(), model.ToolCall{ID: "1", Name: tool.WorkspaceNoteName, Args: json.RawMessage(`{"title":"x"}`)})
		if o.Code != tool.CodeInvalidArgs {
			t.Fatalf("Code = %q", o.Code)
		}
	})
}

func TestSlug(t *testing.T) {
	tests := map[string]struct{ in, want string }{
		"lower":         {"abc", "abc"},
		"upper":         {"ABC Def", "abc-def"},
		"trim":          {"--a--", "a"},
		"empty":         {"", "note"},
		"only symbols":  {"!!!", "note"},
		"max length":    {strings.Repeat("a", 100), strings.Repeat("a", 64)},
		"no dash at 64": {strings.Repeat("a", 63) + " b", strings.Repeat("a", 63)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := tool.Slug(tc.in); got != tc.want {
				t.Errorf("Slug(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestDecodeArgs(t *testing.T) {
	type in struct {
		Title string `json:"title"`
	}
	tests := map[string]struct {
		args    string
		wantErr bool
	}{
		"exact":        {`{"title":"x"}`, false},
		"case differs": {`{"Title":"x"}`, true},
		"duplicate":    {`{"title":"x","title":"y"}`, true},
		"unknown":      {`{"title":"x","z":1}`, true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var v in
			err := tool.DecodeArgs(json.RawMessage(tc.args), &v)
			if (err != nil) != tc.wantErr {
				t.Fatalf("DecodeArgs = %v, wantErr %v", err, tc.wantErr)
			}
		})
	}
}

func TestToolset(t *testing.T) {
	add := tool.Tool{Name: "add", Description: "Adds.", InputSchema: json.RawMessage(addSchema), Call: fixed(tool.Result{Text: "3"}, nil)}
	r := newRegistry(t, add, tool.WorkspaceNote())
	ts, err := r.Select([]string{"add"})
	if err != nil {
		t.Fatalf("Select: %v", err)
	}
	if ts.Len() != 1 || ts.Specs()[0].Name != "add" {
		t.Fatalf("Specs = %+v", ts.Specs())
	}
	tests := map[string]struct {
		name     string
		wantCode string
	}{
		"offered":                {"add", ""},
		"registered not offered": {tool.WorkspaceNoteName, tool.CodeUnknownTool},
		"not registered":         {"nope", tool.CodeUnknownTool},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o := ts.Run(context.Background(), model.ToolCall{ID: "1", Name: tc.name, Args: json.RawMessage(`{"a":1,"b":2}`)})
			if o.Code != tc.wantCode {
				t.Errorf("Code = %q, want %q (%v)", o.Code, tc.wantCode, o.Err)
			}
		})
	}
	t.Run("empty", func(t *testing.T) {
		empty, err := r.Select(nil)
		if err != nil || empty.Specs() != nil || empty.Len() != 0 {
			t.Fatalf("Select(nil) = %+v, %v", empty, err)
		}
	})
	t.Run("unknown name", func(t *testing.T) {
		if _, err := r.Select([]string{"nope"}); !errors.Is(err, tool.ErrUnknownTool) {
			t.Fatalf("Select(nope) = %v", err)
		}
	})
}

// TestToolsetWith: a turn's set adds other registries' tools after the
// definition's, leaves out (and names) a name already offered, runs each
// tool from its own registry, and reports the tools' own approval.
func TestToolsetWith(t *testing.T) {
	add := tool.Tool{Name: "add", Description: "Adds.", InputSchema: json.RawMessage(addSchema), Call: fixed(tool.Result{Text: "local"}, nil)}
	base, err := newRegistry(t, add).Select([]string{"add"})
	if err != nil {
		t.Fatal(err)
	}
	remoteAdd := add
	remoteAdd.Call = fixed(tool.Result{Text: "remote"}, nil)
	gated := tool.Tool{Name: "srv__gated", Description: "Gated.", InputSchema: json.RawMessage(addSchema), Approval: true, Call: fixed(tool.Result{Text: "gated"}, nil)}
	open := tool.Tool{Name: "srv__open", Description: "Open.", InputSchema: json.RawMessage(addSchema), Call: fixed(tool.Result{Text: "open"}, nil)}
	remote := newRegistry(t, remoteAdd, gated, open)
	ts, shadowed := base.With(remote)
	if strings.Join(shadowed, " ") != "add" {
		t.Errorf("shadowed %v, want [add]", shadowed)
	}
	var names []string
	for _, s := range ts.Specs() {
		names = append(names, s.Name)
	}
	if strings.Join(names, " ") != "add srv__gated srv__open" || base.Len() != 1 {
		t.Fatalf("specs %v (base %d)", names, base.Len())
	}
	for name, want := range map[string]string{"add": "local", "srv__gated": "gated", "srv__open": "open"} {
		if o := ts.Run(context.Background(), model.ToolCall{ID: "1", Name: name, Args: json.RawMessage(`{"a":1,"b":2}`)}); o.Text != want {
			t.Errorf("%s ran %q, want %q", name, o.Text, want)
		}
	}
	if o := base.Run(context.Background(), model.ToolCall{ID: "1", Name: "srv__open", Args: json.RawMessage(`{"a":1,"b":2}`)}); o.Code != tool.CodeUnknownTool {
		t.Errorf("the definition's own set runs a tool it does not offer: %+v", o)
	}
	if !ts.Approval("srv__gated") || ts.Approval("srv__open") || ts.Approval("add") || ts.Approval("nope") {
		t.Error("Approval: want srv__gated only")
	}
}

func TestEntry(t *testing.T) {
	tests := map[string]struct {
		args, status, want string
	}{
		"pending":  {`{"a":1}`, protocol.ToolCallPending, `{"id":"c1","name":"add","args":{"a":1},"status":"pending"}`},
		"running":  {`{"a":1}`, protocol.ToolCallRunning, `{"id":"c1","name":"add","args":{"a":1},"status":"running"}`},
		"no args":  {``, protocol.ToolCallPending, `{"id":"c1","name":"add","args":{},"status":"pending"}`},
		"bad args": {`[1]`, protocol.ToolCallRunning, `{"id":"c1","name":"add","args":{},"status":"running"}`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := json.Marshal(tool.Entry(model.ToolCall{ID: "c1", Name: "add", Args: json.RawMessage(tc.args)}, tc.status))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("Entry = %s, want %s", got, tc.want)
			}
		})
	}
}
