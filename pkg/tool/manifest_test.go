package tool_test

import (
	"strings"
	"testing"

	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/tool"
)

const choiceListSchema = `{
  "type": "object",
  "required": ["prompt", "choices"],
  "properties": {
    "prompt": {"type": "string", "minLength": 1},
    "choices": {
      "type": "array", "minItems": 1, "maxItems": 20,
      "items": {
        "type": "object", "required": ["id", "label"],
        "properties": {
          "id": {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$"},
          "label": {"type": "string", "minLength": 1},
          "description": {"type": "string", "minLength": 1}
        }
      }
    }
  }
}`

func TestManifest(t *testing.T) {
	m, err := tool.NewManifest(map[string][]byte{"choice-list": []byte(choiceListSchema), "note": []byte(`true`)})
	if err != nil {
		t.Fatal(err)
	}
	frame := func(key, props string) []byte {
		return []byte(`{"protocol":"agentskit.chat.component","version":1,"type":"render","componentKey":"` + key + `","instanceId":"i",` +
			`"props":` + props + `,"fallback":{"kind":"k","summary":"s"}}`)
	}
	valid := `{"prompt":"Where next?","choices":[{"id":"docs","label":"Docs"}]}`
	tests := map[string]struct {
		input []byte
		code  string
	}{
		"valid":             {frame("choice-list", valid), ""},
		"any props allowed": {frame("note", `[1,"x",null]`), ""},
		"unregistered":      {frame("chart", valid), protocol.CodeComponentUnknown},
		"constructor":       {frame("constructor", valid), protocol.CodeComponentUnknown},
		"empty prompt":      {frame("choice-list", `{"prompt":"","choices":[{"id":"a","label":"A"}]}`), protocol.CodeComponentInvalidProps},
		"no choices":        {frame("choice-list", `{"prompt":"p","choices":[]}`), protocol.CodeComponentInvalidProps},
		"bad choice id":     {frame("choice-list", `{"prompt":"p","choices":[{"id":"a b","label":"A"}]}`), protocol.CodeComponentInvalidProps},
		"null props":        {frame("choice-list", `null`), protocol.CodeComponentInvalidProps},
		"frame invalid":     {[]byte(`{`), protocol.CodeComponentInvalidFrame},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			f, d := m.Resolve(tt.input)
			if tt.code == "" {
				if d != nil {
					t.Fatalf("diagnostic %+v", *d)
				}
				if !m.Has(f.ComponentKey) {
					t.Fatal("resolved an unregistered key")
				}
				return
			}
			if d == nil || d.Code != tt.code || d.Retryable {
				t.Fatalf("got %v, %+v; want %s", f, d, tt.code)
			}
			if strings.Contains(d.Message, "prompt") || strings.Contains(d.Message, "choices") {
				t.Fatalf("diagnostic leaks schema details: %q", d.Message)
			}
		})
	}
	for name, schemas := range map[string]map[string][]byte{
		"bad key":         {"Choice": []byte(`{}`)},
		"not JSON":        {"a": []byte(`{`)},
		"invalid schema":  {"a": []byte(`{"type": 5}`)},
		"external $ref":   {"a": []byte(`{"$ref": "https://example.com/schema.json"}`)},
		"file $ref":       {"a": []byte(`{"$ref": "file:///etc/passwd"}`)},
		"unknown keyword": {"a": []byte(`{"minLength": "x"}`)},
	} {
		t.Run("NewManifest rejects "+name, func(t *testing.T) {
			if _, err := tool.NewManifest(schemas); err == nil {
				t.Fatal("NewManifest accepted the manifest")
			}
		})
	}
}
