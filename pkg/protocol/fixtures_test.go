package protocol_test

import (
	"bytes"
	"embed"
	"encoding/json"
	"path"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/pkg/protocol"
)

// testdata/turn holds docs/protocol.md#fixtures fixtures 1-14: NAME.input.json is
// the decoder input (byte for byte), NAME.want.json the expected result,
// {"ok":true,"event":<event>} or {"ok":false,"diagnostic":<decoder result>}.
//
//go:embed testdata/turn
var turnFixtures embed.FS

type fixture struct {
	name  string
	input []byte
	want  []byte
}

func loadTurnFixtures(tb testing.TB) []fixture {
	tb.Helper()
	entries, err := turnFixtures.ReadDir("testdata/turn")
	if err != nil {
		tb.Fatal(err)
	}
	var out []fixture
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".input.json")
		if !ok {
			continue
		}
		input, err := turnFixtures.ReadFile(path.Join("testdata/turn", e.Name()))
		if err != nil {
			tb.Fatal(err)
		}
		want, err := turnFixtures.ReadFile(path.Join("testdata/turn", name+".want.json"))
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, fixture{name: name, input: input, want: want})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	if len(out) != 15 {
		tb.Fatalf("found %d turn fixtures, want 15 (docs/protocol.md#fixtures fixtures 1-14, 14 has two cases)", len(out))
	}
	return out
}

// decodeResult renders a DecodeTurnEvent result in the golden files' shape.
func decodeResult(tb testing.TB, data []byte) []byte {
	tb.Helper()
	ev, diag := protocol.DecodeTurnEvent(data)
	if (ev == nil) == (diag == nil) {
		tb.Fatalf("DecodeTurnEvent returned event %v and diagnostic %v; want exactly one", ev, diag)
	}
	if diag != nil {
		return []byte(`{"ok":false,"diagnostic":` + string(protocol.EncodeDecoderDiagnostic(*diag)) + `}`)
	}
	enc, err := protocol.EncodeEvent(ev)
	if err != nil {
		tb.Fatalf("EncodeEvent(decoded event): %v", err)
	}
	return []byte(`{"ok":true,"event":` + string(enc) + `}`)
}

// assertJSONEqual compares two JSON texts as values.
func assertJSONEqual(tb testing.TB, got, want []byte) {
	tb.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		tb.Fatalf("got is not JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		tb.Fatalf("want is not JSON: %v\n%s", err, want)
	}
	if !reflect.DeepEqual(g, w) {
		tb.Errorf("JSON differs\n got: %s\nwant: %s", got, bytes.TrimSpace(want))
	}
}

func TestTurnFixtures(t *testing.T) {
	for _, f := range loadTurnFixtures(t) {
		t.Run(f.name, func(t *testing.T) {
			assertJSONEqual(t, decodeResult(t, f.input), f.want)
		})
	}
}

// TestTurnFixturesEncodeInWireOrder pins the byte-exact encoding of the
// valid fixtures: AgentsKit's key order and JSON.stringify escaping.
func TestTurnFixturesEncodeInWireOrder(t *testing.T) {
	want := map[string]string{
		"01-submit":            `{"protocol":"agentskit.chat.turn","version":1,"eventId":"event-submit","sessionId":"session-conformance","turnId":"turn-conformance","sequence":0,"emittedAt":"2026-07-11T03:00:00.000Z","event":"client.turn.submit","payload":{"input":"hello"}}`,
		"04-snapshot-complete": `{"protocol":"agentskit.chat.turn","version":1,"eventId":"event-complete","sessionId":"session-conformance","turnId":"turn-conformance","sequence":3,"emittedAt":"2026-07-11T03:00:00.000Z","event":"server.turn.snapshot","payload":{"messages":[{"id":"message-assistant","role":"assistant","content":"AgentsKit received: hello","status":"complete","createdAt":"2026-07-11T03:00:01.000Z","toolCalls":[{"id":"tool-call-1","name":"lookup","args":{"query":"hello"},"status":"complete","result":"found"}]}],"status":"complete","usage":{"promptTokens":2,"completionTokens":3,"totalTokens":5},"lineage":{"operation":"regenerate","parentTurnId":"turn-previous","sourceMessageId":"message-assistant"}}}`,
		"06-snapshot-error":    `{"protocol":"agentskit.chat.turn","version":1,"eventId":"event-error","sessionId":"session-conformance","turnId":"turn-conformance","sequence":5,"emittedAt":"2026-07-11T03:00:00.000Z","event":"server.turn.snapshot","payload":{"messages":[],"status":"error","usage":{"promptTokens":2,"completionTokens":0,"totalTokens":2},"error":{"version":1,"code":"ADAPTER_FAILED","message":"The adapter failed.","retryable":false}}}`,
		"05-diagnostic":        `{"protocol":"agentskit.chat.turn","version":1,"eventId":"event-diagnostic","sessionId":"session-conformance","turnId":"turn-conformance","sequence":4,"emittedAt":"2026-07-11T03:00:00.000Z","event":"server.turn.diagnostic","payload":{"version":1,"code":"ADAPTER_FAILED","message":"The adapter failed.","retryable":false}}`,
	}
	for _, f := range loadTurnFixtures(t) {
		w, ok := want[f.name]
		if !ok {
			continue
		}
		t.Run(f.name, func(t *testing.T) {
			ev, diag := protocol.DecodeTurnEvent(f.input)
			if diag != nil {
				t.Fatalf("decode: %+v", diag)
			}
			got, err := protocol.EncodeEvent(ev)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != w {
				t.Errorf("EncodeEvent\n got: %s\nwant: %s", got, w)
			}
			line, err := protocol.AppendEventLine([]byte("x"), ev)
			if err != nil || string(line) != "x"+w+"\n" {
				t.Errorf("AppendEventLine = %q, %v; want the encoding after dst plus LF", line, err)
			}
		})
	}
}

// TestTurnFixturesRoundTrip: every accepted fixture re-encodes to an event
// that decodes to an equal value.
func TestTurnFixturesRoundTrip(t *testing.T) {
	for _, f := range loadTurnFixtures(t) {
		ev, diag := protocol.DecodeTurnEvent(f.input)
		if diag != nil {
			continue
		}
		t.Run(f.name, func(t *testing.T) {
			enc, err := protocol.EncodeEvent(ev)
			if err != nil {
				t.Fatal(err)
			}
			again, diag := protocol.DecodeTurnEvent(enc)
			if diag != nil {
				t.Fatalf("re-decode: %+v", diag)
			}
			if !reflect.DeepEqual(ev, again) {
				t.Errorf("round trip changed the event\nfirst:  %+v\nsecond: %+v", ev, again)
			}
		})
	}
}
