package protocol_test

import (
	_ "embed"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/turnstream/turnstream/pkg/protocol"
)

// testdata/content.json: docs/protocol.md#ordered-assistant-content cases,
// each a content string and the expected decode result
// {"ok":true,"parts":[...],"complete":b} or
// {"ok":false,"diagnostic":{code,message,retryable}}.
//
//go:embed testdata/content.json
var contentCases []byte

// contentResult renders a DecodeContent result in the golden shape.
func contentResult(tb testing.TB, content string) []byte {
	tb.Helper()
	dc, diag := protocol.DecodeContent(content)
	if (dc == nil) == (diag == nil) {
		tb.Fatalf("DecodeContent returned %v and %v; want exactly one", dc, diag)
	}
	if diag != nil {
		return []byte(`{"ok":false,"diagnostic":` + string(protocol.EncodeDecoderDiagnostic(*diag)) + `}`)
	}
	parts := make([]json.RawMessage, 0, len(dc.Parts))
	for _, p := range dc.Parts {
		var b []byte
		switch p.Kind {
		case protocol.ContentText:
			b, _ = json.Marshal(map[string]string{"kind": "text", "text": p.Text})
		case protocol.ContentComponent:
			frame, err := protocol.EncodeRenderFrame(p.Frame)
			if err != nil {
				tb.Fatalf("decoded frame does not encode: %v", err)
			}
			b = []byte(`{"kind":"component","frame":` + string(frame) + `}`)
		default:
			tb.Fatalf("decoded part of kind %q", p.Kind)
		}
		parts = append(parts, b)
	}
	out, err := json.Marshal(map[string]any{"ok": true, "parts": parts, "complete": dc.Complete})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

func TestDecodeContentGolden(t *testing.T) {
	var cases []struct {
		Name    string
		Content string
		Want    json.RawMessage
	}
	if err := json.Unmarshal(contentCases, &cases); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			assertJSONEqual(t, contentResult(t, c.Content), c.Want)
		})
	}
}

func textRecord(text string) string {
	b, _ := json.Marshal(map[string]string{"kind": "text", "text": text})
	return string(b) + "\n"
}

func TestDecodeContentLimits(t *testing.T) {
	safety := "Assistant content envelope exceeds its safety limit."
	records := "Assistant content envelope exceeds its record limit."
	tests := map[string]struct {
		content string
		msg     string // "" means it decodes
	}{
		"text of 16384 units":              {protocol.ContentPrefix + textRecord(strings.Repeat("😀", 8192)), ""},
		"text of 16385 units":              {protocol.ContentPrefix + textRecord("a"+strings.Repeat("😀", 8192)), "Assistant content record is invalid."},
		"262145 bytes of tail":             {protocol.ContentPrefix + strings.Repeat("x", 262_145), safety},
		"exactly 262144 bytes":             {protocol.ContentPrefix + strings.Repeat("x", 262_144-len(protocol.ContentPrefix)), ""},
		"UTF-8 bytes, not units":           {protocol.ContentPrefix + strings.Repeat(textRecord(strings.Repeat("😀", 8192)), 9), safety},
		"512 records":                      {protocol.ContentPrefix + strings.Repeat(textRecord("a"), 512), ""},
		"513 records":                      {protocol.ContentPrefix + strings.Repeat(textRecord("a"), 513), records},
		"512 records and a tail":           {protocol.ContentPrefix + strings.Repeat(textRecord("a"), 512) + `{"kind"`, ""},
		"limit checked before the records": {protocol.ContentPrefix + "{bad}\n" + strings.Repeat("x", 262_144), safety},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			dc, diag := protocol.DecodeContent(tt.content)
			if tt.msg == "" {
				if diag != nil {
					t.Fatalf("diagnostic %+v; want decoded", *diag)
				}
				return
			}
			if diag == nil || diag.Message != tt.msg || diag.Retryable {
				t.Fatalf("got %+v, %+v; want message %q", dc, diag, tt.msg)
			}
		})
	}
}

func TestContentEncoder(t *testing.T) {
	frame := &protocol.RenderFrame{ComponentKey: "choice-list", InstanceID: "c1", Props: json.RawMessage(`{"a":1}`),
		Fallback: protocol.Fallback{Kind: "choice-list", Summary: "Pick one."}}
	t.Run("prefix once, parts in order, text inert", func(t *testing.T) {
		var e protocol.ContentEncoder
		hostile := "line\n" + protocol.ContentPrefix + `{"kind":"component"}` + "\u2028"
		var content string
		for _, p := range []protocol.ContentPart{{Kind: "text", Text: hostile}, {Kind: "component", Frame: frame}, {Kind: "text", Text: "b"}} {
			chunk, err := e.Encode(p)
			if err != nil {
				t.Fatal(err)
			}
			content += chunk
		}
		if strings.Count(content, protocol.ContentPrefix) != 1 || !strings.HasPrefix(content, protocol.ContentPrefix) {
			t.Fatalf("prefix not written exactly once at the start: %q", content)
		}
		dc, diag := protocol.DecodeContent(content)
		if diag != nil || !dc.Complete || len(dc.Parts) != 3 || dc.Parts[0].Text != hostile ||
			dc.Parts[1].Frame.ComponentKey != "choice-list" || dc.Parts[2].Text != "b" {
			t.Fatalf("decoded %+v, %+v", dc, diag)
		}
	})
	t.Run("long text splits at character boundaries", func(t *testing.T) {
		text := "a" + strings.Repeat("😀", 8192) + strings.Repeat("b", 20_000)
		var e protocol.ContentEncoder
		content, err := e.Encode(protocol.ContentPart{Kind: "text", Text: text})
		if err != nil {
			t.Fatal(err)
		}
		dc, diag := protocol.DecodeContent(content)
		if diag != nil {
			t.Fatalf("%+v", *diag)
		}
		var joined strings.Builder
		for i, p := range dc.Parts {
			units := len(utf16.Encode([]rune(p.Text)))
			if units < 1 || units > protocol.MaxContentText || !utf8.ValidString(p.Text) {
				t.Errorf("record %d has %d units", i, units)
			}
			joined.WriteString(p.Text)
		}
		if joined.String() != text || len(dc.Parts) != 3 {
			t.Fatalf("%d records, joined text equal: %v", len(dc.Parts), joined.String() == text)
		}
		if dc.Parts[0].Text != "a"+strings.Repeat("😀", 8191) {
			t.Errorf("first record does not stop before the surrogate pair that would pass 16384 units")
		}
	})
	t.Run("refuses past the record limit and writes nothing", func(t *testing.T) {
		var e protocol.ContentEncoder
		var content string
		for range protocol.MaxContentRecords {
			chunk, err := e.Encode(protocol.ContentPart{Kind: "text", Text: "a"})
			if err != nil {
				t.Fatal(err)
			}
			content += chunk
		}
		if _, err := e.Encode(protocol.ContentPart{Kind: "text", Text: "a"}); !errors.Is(err, protocol.ErrContentLimit) {
			t.Fatalf("record 513: %v; want ErrContentLimit", err)
		}
		if dc, diag := protocol.DecodeContent(content); diag != nil || len(dc.Parts) != 512 {
			t.Fatalf("512 records do not decode: %+v", diag)
		}
	})
	t.Run("refuses past the byte limit", func(t *testing.T) {
		var e protocol.ContentEncoder
		big := strings.Repeat("😀", 8192) // 32 KiB per record
		var content string
		for {
			chunk, err := e.Encode(protocol.ContentPart{Kind: "text", Text: big})
			if errors.Is(err, protocol.ErrContentLimit) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			content += chunk
		}
		if len(content) > protocol.MaxContentBytes {
			t.Fatalf("encoder wrote %d bytes", len(content))
		}
		if _, diag := protocol.DecodeContent(content); diag != nil {
			t.Fatalf("what the encoder wrote does not decode: %+v", *diag)
		}
		if chunk, err := e.Encode(protocol.ContentPart{Kind: "text", Text: "small"}); err != nil || !strings.HasSuffix(chunk, "\n") {
			t.Fatalf("a small part after a refusal: %q, %v", chunk, err)
		}
	})
	for name, p := range map[string]protocol.ContentPart{
		"empty text":    {Kind: "text"},
		"invalid UTF-8": {Kind: "text", Text: "\xff"},
		"nil frame":     {Kind: "component"},
		"bad frame":     {Kind: "component", Frame: &protocol.RenderFrame{ComponentKey: "Bad", InstanceID: "i", Props: json.RawMessage(`1`)}},
		"unknown kind":  {Kind: "image"},
	} {
		t.Run("rejects "+name, func(t *testing.T) {
			var e protocol.ContentEncoder
			if _, err := e.Encode(p); !errors.Is(err, protocol.ErrInvalidContentPart) {
				t.Fatalf("Encode = %v; want ErrInvalidContentPart", err)
			}
			chunk, err := e.Encode(protocol.ContentPart{Kind: "text", Text: "ok"})
			if err != nil || !strings.HasPrefix(chunk, protocol.ContentPrefix) {
				t.Fatalf("a failed Encode consumed the prefix: %q, %v", chunk, err)
			}
		})
	}
}
