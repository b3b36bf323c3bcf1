package protocol_test

import (
	_ "embed"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/pkg/protocol"
)

// testdata/case-variants.json: turn events holding a key that equals one
// of its object's fields case-insensitively but not exactly, one or more
// per object kind the decoder reads, and accepted look-alikes.
//
//go:embed testdata/case-variants.json
var caseVariantCases []byte

type caseVariantCase struct {
	Name    string          `json:"name"`
	Object  string          `json:"object"`
	OK      bool            `json:"ok"`
	Code    string          `json:"code"`
	EventID string          `json:"eventId"`
	Input   json.RawMessage `json:"input"`
	Same    json.RawMessage `json:"same"`
}

// TestDecodeCaseVariants: a case-variant key in any object the decoder
// reads is PROTOCOL_INVALID_PAYLOAD with the fixed message, echoing the
// eventId only when the envelope holds no variant of "eventId"; keys that
// are no variant stay ignored.
func TestDecodeCaseVariants(t *testing.T) {
	var file struct {
		Cases []caseVariantCase `json:"cases"`
	}
	if err := json.Unmarshal(caseVariantCases, &file); err != nil {
		t.Fatal(err)
	}
	objects := map[string]bool{}
	for _, c := range file.Cases {
		objects[c.Object] = true
		t.Run(c.Name, func(t *testing.T) {
			ev, diag := protocol.DecodeTurnEvent(c.Input)
			if (ev == nil) == (diag == nil) {
				t.Fatalf("event %v and diagnostic %v; want exactly one", ev, diag)
			}
			if c.OK {
				if diag != nil {
					t.Fatalf("diagnostic %+v; want the event to decode", *diag)
				}
				same, d := protocol.DecodeTurnEvent(c.Same)
				if d != nil {
					t.Fatalf("the 'same' event does not decode: %+v", *d)
				}
				if !reflect.DeepEqual(ev, same) {
					t.Fatalf("decoded %+v; want %+v", ev, same)
				}
				return
			}
			if diag == nil {
				t.Fatalf("decoded %+v; want %s", *ev, c.Code)
			}
			if diag.Code != c.Code || diag.Message != invalid || diag.EventID != c.EventID || diag.Retryable {
				t.Fatalf("diagnostic %+v; want %s %q, eventId %q", *diag, c.Code, invalid, c.EventID)
			}
		})
	}
	for _, kind := range []string{"envelope", "submit payload", "lineage", "snapshot payload", "usage", "error",
		"diagnostic payload", "message", "part", "tool call"} {
		if !objects[kind] {
			t.Errorf("no case for object kind %q", kind)
		}
	}
}

// TestDecodeMessagesCaseVariants: DecodeMessages (the history record
// reader) applies the rule to messages, parts and tool calls too.
func TestDecodeMessagesCaseVariants(t *testing.T) {
	const msg = `{"id":"m1","role":"assistant","content":"x","status":"complete","createdAt":"2026-07-11T03:00:00.000Z"`
	if _, err := protocol.DecodeMessages([]byte(`[` + msg + `}]`)); err != nil {
		t.Fatalf("base record: %v", err)
	}
	for name, extra := range map[string]string{
		"message Content": `,"Content":"y"`,
		"part Type":       `,"parts":[{"type":"text","text":"a","Type":"image"}]`,
		"tool call Name":  `,"toolCalls":[{"id":"c","name":"n","Name":"m","args":{},"status":"complete"}]`,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := protocol.DecodeMessages([]byte(`[` + msg + extra + `}]`)); err == nil {
				t.Fatal("decoded; want ErrInvalidMessages")
			}
		})
	}
}

// TestIsCaseVariant pins the folding: Unicode simple case folding as
// strings.EqualFold applies it (and Go's encoding/json when it matches
// keys to fields), so U+017F LATIN SMALL LETTER LONG S folds to "s" and
// U+212A KELVIN SIGN to "k"; full case folding (U+00DF "ß" as "ss") is
// not applied.
func TestIsCaseVariant(t *testing.T) {
	tests := []struct {
		key   string
		known []string
		want  bool
	}{
		{"event", []string{"event"}, false}, // the field itself
		{"Event", []string{"event"}, true},
		{"EVENT", []string{"protocol", "event"}, true},
		{"eVeNt", []string{"event"}, true},
		{"\u017ftatus", []string{"status"}, true},             // long s
		{"STATU\u017f", []string{"status"}, true},             // long s, upper-case rest
		{"promptTo\u212aens", []string{"promptTokens"}, true}, // KELVIN SIGN
		{"me\u00dfage", []string{"message"}, false},           // ß is not ss (simple folding)
		{"\u0130nput", []string{"input"}, false},              // dotted capital I does not fold to i
		{"events", []string{"event"}, false},                  // another key
		{"évent", []string{"event"}, false},                   // another letter
		{"future", []string{"event", "payload"}, false},       // unknown keys stay unknown
		{"", []string{"event"}, false},
		{"Id", nil, false},
	}
	for _, tt := range tests {
		name := strings.ToValidUTF8(tt.key, "?")
		t.Run(name, func(t *testing.T) {
			if got := protocol.IsCaseVariant(tt.key, tt.known...); got != tt.want {
				t.Fatalf("IsCaseVariant(%q, %q) = %v; want %v", tt.key, tt.known, got, tt.want)
			}
			// The rule is strings.EqualFold's, not an approximation of it.
			fold := false
			for _, k := range tt.known {
				fold = fold || (k != tt.key && strings.EqualFold(k, tt.key))
			}
			if fold != tt.want {
				t.Fatalf("case disagrees with strings.EqualFold")
			}
		})
	}
}
