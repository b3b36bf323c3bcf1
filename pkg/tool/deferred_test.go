package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/tool"
)

// TestBuiltInSchemasCompile: the built-in tools, which the turn function
// registers with RegisterDeferred, have input schemas that compile.
func TestBuiltInSchemasCompile(t *testing.T) {
	r := tool.NewRegistry(nil)
	for _, tl := range []tool.Tool{tool.WorkspaceNote(), tool.WorkspaceNoteDelete(nil)} {
		if err := r.Register(tl); err != nil {
			t.Errorf("%s: %v", tl.Name, err)
		}
	}
}

// TestRegisterDeferred: a deferred tool's arguments are checked against
// its schema as a registered tool's are; Register's checks other than the
// compilation still fail at once; a schema that does not compile fails
// each call (CodeFailed) without calling the tool or loading anything.
func TestRegisterDeferred(t *testing.T) {
	var calls atomic.Int32
	counted := func(context.Context, json.RawMessage) (tool.Result, error) {
		calls.Add(1)
		return tool.Result{Text: "ok"}, nil
	}
	add := tool.Tool{Name: "add", Description: "Adds.", InputSchema: json.RawMessage(addSchema), Call: counted}
	r := tool.NewRegistry(nil)
	if err := r.RegisterDeferred(add); err != nil {
		t.Fatal(err)
	}
	if o := r.Run(t.Context(), model.ToolCall{ID: "c1", Name: "add", Args: json.RawMessage(`{"a":1}`)}); o.Code != tool.CodeInvalidArgs {
		t.Errorf("arguments against the schema: %+v", o)
	}
	if o := r.Run(t.Context(), model.ToolCall{ID: "c2", Name: "add", Args: json.RawMessage(`{"a":1,"b":2}`)}); !o.OK() {
		t.Errorf("valid arguments: %+v", o)
	}
	if err := r.RegisterDeferred(add); !errors.Is(err, tool.ErrDuplicateTool) {
		t.Errorf("a second add: %v", err)
	}

	with := func(f func(*tool.Tool)) tool.Tool { c := add; f(&c); return c }
	for name, tc := range map[string]struct {
		tool  tool.Tool
		field string
	}{
		"empty name":        {with(func(t *tool.Tool) { t.Name = "" }), "name"},
		"no call":           {with(func(t *tool.Tool) { t.Call = nil }), "call"},
		"schema not JSON":   {with(func(t *tool.Tool) { t.InputSchema = json.RawMessage(`{`) }), "inputSchema"},
		"schema dup key":    {with(func(t *tool.Tool) { t.InputSchema = json.RawMessage(`{"type":"object","type":"string"}`) }), "inputSchema"},
		"schema not object": {with(func(t *tool.Tool) { t.InputSchema = json.RawMessage(`{"type":"string"}`) }), "inputSchema"},
	} {
		if err := tool.NewRegistry(nil).RegisterDeferred(tc.tool); !errors.Is(err, tool.ErrInvalidTool) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: RegisterDeferred = %v, want ErrInvalidTool naming %s", name, err, tc.field)
		}
	}

	for name, schema := range map[string]string{
		"bad keyword": `{"type":"object","minProperties":"x"}`,
		"remote $ref": `{"type":"object","properties":{"k":{"$ref":"https://example.com/s.json"}}}`,
	} {
		bad := with(func(t *tool.Tool) { t.Name, t.InputSchema = "bad", json.RawMessage(schema) })
		r := tool.NewRegistry(nil)
		if err := r.RegisterDeferred(bad); err != nil {
			t.Fatalf("%s: RegisterDeferred = %v, want the compilation deferred", name, err)
		}
		for range 2 {
			o := r.Run(t.Context(), model.ToolCall{ID: "c3", Name: "bad", Args: json.RawMessage(`{}`)})
			if tc := o.ToolCall(); o.Code != tool.CodeFailed || tc.Error == nil || strings.Contains(*tc.Error, "inputSchema") {
				t.Errorf("%s: %+v, want CodeFailed with the generic text", name, o)
			}
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the tools were called %d times, want 1", n)
	}
}
