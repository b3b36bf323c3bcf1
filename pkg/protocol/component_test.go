package protocol_test

import (
	_ "embed"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/pkg/protocol"
)

// testdata/component.json: docs/protocol.md#component-frames cases for render
// frames, each with the expected decode result.
//
//go:embed testdata/component.json
var componentCases []byte

type goldenCase struct {
	Name  string
	Input string
	Want  json.RawMessage
}

func diagnosticResult(d *protocol.Diagnostic) []byte {
	return []byte(`{"ok":false,"diagnostic":` + string(protocol.EncodeDecoderDiagnostic(*d)) + `}`)
}

func renderResult(tb testing.TB, f *protocol.RenderFrame, d *protocol.Diagnostic) []byte {
	tb.Helper()
	if (f == nil) == (d == nil) {
		tb.Fatalf("got frame %v and diagnostic %v; want exactly one", f, d)
	}
	if d != nil {
		return diagnosticResult(d)
	}
	b, err := protocol.EncodeRenderFrame(f)
	if err != nil {
		tb.Fatalf("decoded frame does not encode: %v", err)
	}
	return []byte(`{"ok":true,"frame":` + string(b) + `}`)
}

func TestComponentGolden(t *testing.T) {
	var cases struct{ Render []goldenCase }
	if err := json.Unmarshal(componentCases, &cases); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases.Render {
		t.Run("render/"+c.Name, func(t *testing.T) {
			f, d := protocol.DecodeRenderFrame([]byte(c.Input))
			assertJSONEqual(t, renderResult(t, f, d), c.Want)
		})
	}
}

func frameWithProps(props string) string {
	return `{"protocol":"agentskit.chat.component","version":1,"type":"render","componentKey":"k","instanceId":"i",` +
		`"props":` + props + `,"fallback":{"kind":"k","summary":"s"}}`
}

// TestBoundedJSONLimits pins the docs/protocol.md#component-frames limits at
// their edges.
func TestBoundedJSONLimits(t *testing.T) {
	list := func(n int) string { return "[" + strings.TrimSuffix(strings.Repeat("0,", n), ",") + "]" }
	tests := map[string]struct {
		input string
		ok    bool
	}{
		"1000 nodes":           {frameWithProps(list(999)), true},
		"1001 nodes":           {frameWithProps(list(1000)), false},
		"string 16384 units":   {frameWithProps(`"` + strings.Repeat("😀", 8192) + `"`), true},
		"string 16385 units":   {frameWithProps(`"a` + strings.Repeat("😀", 8192) + `"`), false},
		"key 256 units":        {frameWithProps(`{"` + strings.Repeat("k", 256) + `":1}`), true},
		"key 257 units":        {frameWithProps(`{"` + strings.Repeat("k", 257) + `":1}`), false},
		"summary 4096 units":   {strings.Replace(frameWithProps("1"), `"summary":"s"`, `"summary":"`+strings.Repeat("😀", 2048)+`"`, 1), true},
		"summary 4097 units":   {strings.Replace(frameWithProps("1"), `"summary":"s"`, `"summary":"a`+strings.Repeat("😀", 2048)+`"`, 1), false},
		"fallback kind 64":     {strings.Replace(frameWithProps("1"), `"kind":"k"`, `"kind":"`+strings.Repeat("k", 64)+`"`, 1), true},
		"fallback kind 65":     {strings.Replace(frameWithProps("1"), `"kind":"k"`, `"kind":"`+strings.Repeat("k", 65)+`"`, 1), false},
		"1000 object keys":     {frameWithProps(objectOf(999)), true},
		"keys count as values": {frameWithProps(objectOf(1000)), false},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			f, d := protocol.DecodeRenderFrame([]byte(tt.input))
			if tt.ok != (d == nil) {
				t.Fatalf("got %v, %+v; want ok=%v", f, d, tt.ok)
			}
			if d != nil && d.Code != protocol.CodeComponentInvalidFrame {
				t.Fatalf("code %s; want COMPONENT_INVALID_FRAME", d.Code)
			}
		})
	}
}

func objectOf(n int) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"k` + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + itoa(i) + `":0`)
	}
	return b.String() + "}"
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestEncodeComponentErrors(t *testing.T) {
	good := protocol.RenderFrame{ComponentKey: "k", InstanceID: "i", Props: json.RawMessage(`null`),
		Fallback: protocol.Fallback{Kind: "k", Summary: "s"}}
	for name, tt := range map[string]struct {
		edit  func(f *protocol.RenderFrame)
		field string
	}{
		"nil props":          {func(f *protocol.RenderFrame) { f.Props = nil }, "props"},
		"props dup key":      {func(f *protocol.RenderFrame) { f.Props = json.RawMessage(`{"a":1,"a":1}`) }, "props"},
		"bad key":            {func(f *protocol.RenderFrame) { f.ComponentKey = "9k" }, "componentKey"},
		"bad instance":       {func(f *protocol.RenderFrame) { f.InstanceID = "" }, "instanceId"},
		"empty summary":      {func(f *protocol.RenderFrame) { f.Fallback.Summary = "" }, "fallback.summary"},
		"invalid UTF-8 kind": {func(f *protocol.RenderFrame) { f.Fallback.Kind = "\xff" }, "fallback.kind"},
	} {
		t.Run(name, func(t *testing.T) {
			f := good
			tt.edit(&f)
			if _, err := protocol.EncodeRenderFrame(&f); !errors.Is(err, protocol.ErrInvalidFrame) || !strings.Contains(err.Error(), tt.field) {
				t.Fatalf("EncodeRenderFrame = %v; want ErrInvalidFrame naming %s", err, tt.field)
			}
		})
	}
}
