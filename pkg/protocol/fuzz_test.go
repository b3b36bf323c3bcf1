package protocol_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/pkg/protocol"
)

// decoderMessages are the only messages DecodeTurnEvent may return.
var decoderMessages = map[string]string{
	"Turn event is not valid JSON.":                    protocol.CodeProtocolInvalidPayload,
	"Turn event payload is invalid.":                   protocol.CodeProtocolInvalidPayload,
	"Turn event uses an unsupported protocol version.": protocol.CodeProtocolUnsupportedVersion,
	"Turn event kind is unknown.":                      protocol.CodeProtocolUnknownEvent,
}

// FuzzDecodeTurnEvent checks, for any input: no panic; exactly one result;
// a diagnostic is one of the fixed code/message pairs and carries no input
// byte except the input's own valid eventId; an accepted event re-encodes
// and decodes to an equal value.
func FuzzDecodeTurnEvent(f *testing.F) {
	for _, fx := range loadTurnFixtures(f) {
		f.Add(fx.input)
	}
	for _, s := range []string{
		snapshotEvent, diagnosticEvent, `"` + strings.ReplaceAll(submitEvent, `"`, `\"`) + `"`,
		strings.Replace(submitEvent, `"hello"`, `"\ud800"`, 1),
		strings.Replace(submitEvent, `"version":1`, `"Version":1`, 1),
		strings.Replace(submitEvent, `"event":`, `"Event":"x","event":`, 1),
		strings.Replace(submitEvent, `"input":"hello"`, `"input":"hello","Input":"x","INPUT":""`, 1),
		strings.Replace(submitEvent, `"sequence":0`, `"sequence":0,"sequence":1`, 1),
		strings.Replace(submitEvent, `"hello"`, `"\u2028😀<&>"`, 1),
		strings.Replace(snapshotEvent, `"status":"streaming","createdAt"`,
			`"status":"streaming","metadata":{"a":[1.5e300,-0,{"b":null}]},"parts":[{"type":"image","source":"x","detail":"low"}],"createdAt"`, 1),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, diag := protocol.DecodeTurnEvent(data)
		if (ev == nil) == (diag == nil) {
			t.Fatalf("event %v and diagnostic %v; want exactly one", ev, diag)
		}
		if diag != nil {
			checkDecoderDiagnostic(t, data, diag)
			return
		}
		enc, err := protocol.EncodeEvent(ev)
		if err != nil {
			t.Fatalf("accepted event does not encode: %v", err)
		}
		again, diag := protocol.DecodeTurnEvent(enc)
		if diag != nil {
			t.Fatalf("re-encoded event does not decode: %+v\n%s", *diag, enc)
		}
		if !reflect.DeepEqual(ev, again) {
			t.Fatalf("round trip changed the event\n in: %q\nout: %s", data, enc)
		}
	})
}

func checkDecoderDiagnostic(t *testing.T, data []byte, d *protocol.Diagnostic) {
	t.Helper()
	if code, ok := decoderMessages[d.Message]; !ok || code != d.Code || d.Retryable || d.Version != 1 {
		t.Fatalf("diagnostic %+v is not one of the fixed decoder results", *d)
	}
	if d.EventID == "" {
		return
	}
	if !protocol.IsSafeID(d.EventID) {
		t.Fatalf("diagnostic echoes an eventId that is not a SafeId: %q", d.EventID)
	}
	var top map[string]json.RawMessage
	var id string
	if json.Unmarshal(data, &top) != nil || json.Unmarshal(top["eventId"], &id) != nil || id != d.EventID {
		t.Fatalf("diagnostic eventId %q is not the input's eventId", d.EventID)
	}
}

var contentMessages = map[string]string{
	"Assistant content envelope is invalid.":                  protocol.CodeAssistantContentInvalidRecord,
	"Assistant content record is invalid.":                    protocol.CodeAssistantContentInvalidRecord,
	"Assistant content envelope uses an unsupported version.": protocol.CodeAssistantContentUnsupportedVersion,
	"Assistant content envelope exceeds its safety limit.":    protocol.CodeAssistantContentLimitExceeded,
	"Assistant content envelope exceeds its record limit.":    protocol.CodeAssistantContentLimitExceeded,
}

// FuzzDecodeContent checks, for any content string: no panic; exactly one
// result; a diagnostic is a fixed code/message pair; accepted parts
// re-encode with ContentEncoder and decode to equal parts.
func FuzzDecodeContent(f *testing.F) {
	var cases []struct{ Content string }
	if err := json.Unmarshal(contentCases, &cases); err != nil {
		f.Fatal(err)
	}
	for _, c := range cases {
		f.Add(c.Content)
	}
	f.Add(protocol.ContentPrefix + textRecord("a\u2028") + "\r\n")
	f.Fuzz(func(t *testing.T, content string) {
		dc, diag := protocol.DecodeContent(content)
		if (dc == nil) == (diag == nil) {
			t.Fatalf("result %v and diagnostic %v; want exactly one", dc, diag)
		}
		if diag != nil {
			if code, ok := contentMessages[diag.Message]; !ok || code != diag.Code || diag.Retryable {
				t.Fatalf("diagnostic %+v is not a fixed content result", *diag)
			}
			return
		}
		if len(dc.Parts) == 0 {
			return
		}
		var e protocol.ContentEncoder
		var out strings.Builder
		for _, p := range dc.Parts {
			chunk, err := e.Encode(p)
			if errors.Is(err, protocol.ErrContentLimit) {
				return // the canonical form can be longer (1e2 becomes 100)
			}
			if err != nil {
				t.Fatalf("decoded part does not encode: %v", err)
			}
			out.WriteString(chunk)
		}
		again, diag := protocol.DecodeContent(out.String())
		if diag != nil || !again.Complete || !reflect.DeepEqual(again.Parts, dc.Parts) {
			t.Fatalf("round trip changed the parts: %+v %+v", again, diag)
		}
	})
}
