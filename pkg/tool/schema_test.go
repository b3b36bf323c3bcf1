package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/tool"
)

// schemaTool is a tool whose arguments must pass schema.
func schemaTool(schema string) tool.Tool {
	return tool.Tool{Name: "t", Description: "d", InputSchema: json.RawMessage(schema), Call: fixed(tool.Result{Text: "ok"}, nil)}
}

// TestInputSchemaRejected lists input schemas that Register must refuse
// at start (ErrInvalidTool naming inputSchema) instead of failing every
// later call or accepting arguments the author meant to refuse.
func TestInputSchemaRejected(t *testing.T) {
	tests := map[string]string{
		"unknown $schema":     `{"$schema":"https://example.com/my-draft","type":"object"}`,
		"dangling local $ref": `{"type":"object","properties":{"k":{"$ref":"#/$defs/nope"}}}`,
		"unknown type name":   `{"type":"object","properties":{"k":{"type":"strin"}}}`,
		"negative minLength":  `{"type":"object","properties":{"k":{"type":"string","minLength":-1}}}`,
		"bad pattern":         `{"type":"object","properties":{"k":{"type":"string","pattern":"("}}}`,
		"required not array":  `{"type":"object","required":"k"}`,
		"property not schema": `{"type":"object","properties":{"k":5}}`,
		"file $ref":           `{"type":"object","properties":{"k":{"$ref":"file:///etc/passwd"}}}`,
	}
	for name, schema := range tests {
		t.Run(name, func(t *testing.T) {
			err := tool.NewRegistry(nil).Register(schemaTool(schema))
			if !errors.Is(err, tool.ErrInvalidTool) || !strings.Contains(err.Error(), "inputSchema") {
				t.Fatalf("Register = %v, want ErrInvalidTool naming inputSchema", err)
			}
		})
	}
}

// TestInputSchemaNoFetch checks that neither a remote $ref nor a remote
// $schema is ever loaded: Register refuses the schema and the server
// that holds the referenced document sees no request.
func TestInputSchemaNoFetch(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte(`{"type":"object"}`))
	}))
	defer srv.Close()
	tests := map[string]string{
		"$ref at root":         `{"type":"object","$ref":"` + srv.URL + `/s.json"}`,
		"$ref in a property":   `{"type":"object","properties":{"k":{"$ref":"` + srv.URL + `/s.json"}}}`,
		"$schema":              `{"$schema":"` + srv.URL + `/meta.json","type":"object"}`,
		"relative to an $id":   `{"$id":"` + srv.URL + `/root.json","type":"object","properties":{"k":{"$ref":"other.json"}}}`,
		"component props $ref": "",
	}
	for name, schema := range tests {
		t.Run(name, func(t *testing.T) {
			before := hits.Load()
			var err error
			if schema == "" {
				_, err = tool.NewManifest(map[string][]byte{"chart": []byte(`{"$ref":"` + srv.URL + `/props.json"}`)})
			} else {
				err = tool.NewRegistry(nil).Register(schemaTool(schema))
			}
			if err == nil {
				t.Fatal("schema with a remote reference was accepted")
			}
			if n := hits.Load() - before; n != 0 {
				t.Fatalf("compiling the schema made %d requests to %s", n, srv.URL)
			}
		})
	}
}

// TestInputSchemaValidation pins how the schemas users write behave:
// draft 2020-12 by default, draft-07 when $schema says so, local
// references, enums, decimal numbers, and the model's diagnostic text,
// which names instance locations and keywords but never a value.
func TestInputSchemaValidation(t *testing.T) {
	const draft7 = `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object",
		"definitions":{"n":{"type":"integer"}},
		"properties":{"t":{"type":"array","items":[{"type":"string"}],"additionalItems":false},"n":{"$ref":"#/definitions/n"}}}`
	const defs = `{"type":"object","$defs":{"n":{"$anchor":"num","type":"integer"}},
		"properties":{"p":{"$ref":"#/$defs/n"},"q":{"$ref":"#num"}}}`
	const list = `{"type":"object","properties":{"xs":{"type":"array","items":{"type":"integer"}},
		"kind":{"enum":["a","b",1]},"step":{"type":"number","multipleOf":0.1}},"additionalProperties":false}`
	const prefix = `{"type":"object","properties":{"t":{"type":"array","prefixItems":[{"type":"string"}],"items":false}}}`
	const draft4 = `{"$schema":"http://json-schema.org/draft-04/schema#","type":"object",
		"properties":{"n":{"type":"number","maximum":5,"exclusiveMaximum":true}}}`
	const draft2019 = `{"$schema":"https://json-schema.org/draft/2019-09/schema","type":"object",
		"properties":{"e":{"type":"string","format":"email"}},"dependentRequired":{"a":["b"]}}`
	const format7 = `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object",
		"properties":{"e":{"type":"string","format":"email"}}}`
	const format2020 = `{"type":"object","properties":{"e":{"type":"string","format":"email"}}}`
	tests := map[string]struct {
		schema, args string
		want         string // "" when the call must run
	}{
		"draft-04 boolean exclusiveMaximum": {draft4, `{"n":5}`, "Arguments are invalid: /n: exclusiveMaximum."},
		"draft-04 below maximum":            {draft4, `{"n":4.5}`, ""},
		"2019-09 dependentRequired":         {draft2019, `{"a":1}`, "Arguments are invalid: /: dependentRequired/a."},
		"2019-09 format is an annotation":   {draft2019, `{"e":"not an address"}`, ""},
		"draft-07 format asserted":          {format7, `{"e":"not an address"}`, "Arguments are invalid: /e: format."},
		"draft-07 format ok":                {format7, `{"e":"a@example.com"}`, ""},
		"2020-12 format is an annotation":   {format2020, `{"e":"not an address"}`, ""},
		"draft-07 tuple ok":                 {draft7, `{"t":["a"],"n":1}`, ""},
		"draft-07 tuple item":               {draft7, `{"t":[1]}`, "Arguments are invalid: /t/0: type."},
		"draft-07 additionalItems":          {draft7, `{"t":["a","b"]}`, "Arguments are invalid: /t: additionalItems."},
		"draft-07 definitions $ref":         {draft7, `{"n":"x"}`, "Arguments are invalid: /n: type."},
		"2020-12 prefixItems ok":            {prefix, `{"t":["a"]}`, ""},
		"2020-12 items false":               {prefix, `{"t":["a","b"]}`, "Arguments are invalid: /t/1: schema."},
		"$defs $ref":                        {defs, `{"p":"x"}`, "Arguments are invalid: /p: type."},
		"$anchor $ref":                      {defs, `{"q":1.5}`, "Arguments are invalid: /q: type."},
		"integer as 1.0":                    {defs, `{"p":1.0}`, ""},
		"big integer":                       {defs, `{"p":123456789012345678901234567890}`, ""},
		"enum number":                       {list, `{"kind":1.0}`, ""},
		"enum miss":                         {list, `{"kind":"c"}`, "Arguments are invalid: /kind: enum."},
		"decimal multipleOf":                {list, `{"step":0.3}`, ""},
		"decimal not multiple":              {list, `{"step":0.35}`, "Arguments are invalid: /step: multipleOf."},
		"item location":                     {list, `{"xs":[1,"two",3]}`, "Arguments are invalid: /xs/1: type."},
		"every failure listed": {list, `{"xs":["a","b"],"kind":"c","z":1}`,
			"Arguments are invalid: /: additionalProperties (unexpected z); /kind: enum; /xs/0: type; /xs/1: type."},
		"at most eight": {list, `{"xs":["a","b","c","d","e","f","g","h","i"]}`,
			"Arguments are invalid: /xs/0: type; /xs/1: type; /xs/2: type; /xs/3: type; /xs/4: type; /xs/5: type; /xs/6: type; /xs/7: type; ...."},
		"pointer escaping": {`{"type":"object","properties":{"a/b~c":{"type":"integer"}}}`, `{"a/b~c":"x"}`,
			"Arguments are invalid: /a~1b~0c: type."},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := newRegistry(t, schemaTool(tc.schema))
			o := r.Run(context.Background(), model.ToolCall{ID: "1", Name: "t", Args: json.RawMessage(tc.args)})
			if tc.want == "" {
				if !o.OK() {
					t.Fatalf("Run = %s %q (%v), want the call to run", o.Code, o.Text, o.Err)
				}
				return
			}
			if o.Code != tool.CodeInvalidArgs || o.Text != tc.want {
				t.Fatalf("Run = %s %q, want %s %q", o.Code, o.Text, tool.CodeInvalidArgs, tc.want)
			}
		})
	}
}

// TestInputSchemaConcurrentFirstUse registers draft-06 schemas (no other
// test uses that draft, so its metaschemas are compiled here, on first
// use) from several goroutines at once; run with -race it checks that
// loading a draft is synchronised.
func TestInputSchemaConcurrentFirstUse(t *testing.T) {
	const draft6 = `{"$schema":"http://json-schema.org/draft-06/schema#","type":"object",
		"properties":{"n":{"type":"number","exclusiveMaximum":5}}}`
	errs := make(chan string, 8)
	for range cap(errs) {
		go func() {
			r := tool.NewRegistry(nil)
			if err := r.Register(schemaTool(draft6)); err != nil {
				errs <- "Register: " + err.Error()
				return
			}
			o := r.Run(context.Background(), model.ToolCall{ID: "1", Name: "t", Args: json.RawMessage(`{"n":5}`)})
			errs <- o.Text
		}()
	}
	for range cap(errs) {
		if got := <-errs; got != "Arguments are invalid: /n: exclusiveMaximum." {
			t.Errorf("got %q, want the exclusiveMaximum diagnostic", got)
		}
	}
}
