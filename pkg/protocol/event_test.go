package protocol_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/protocol"
)

const (
	envelope = `"protocol":"agentskit.chat.turn","version":1,"sessionId":"session-conformance","turnId":"turn-conformance","emittedAt":"2026-07-11T03:00:00.000Z"`
	// submitEvent is docs/protocol.md#fixtures fixture 1.
	submitEvent = `{` + envelope + `,"eventId":"event-submit","sequence":0,"event":"client.turn.submit","payload":{"input":"hello"}}`
	// snapshotEvent is docs/protocol.md#fixtures fixture 3 (one message,
	// submit lineage).
	snapshotEvent = `{` + envelope + `,"eventId":"event-streaming","sequence":2,"event":"server.turn.snapshot","payload":{"status":"streaming","lineage":{"operation":"submit"},"usage":{"promptTokens":2,"completionTokens":1,"totalTokens":3},"messages":[{"id":"message-assistant","role":"assistant","content":"AgentsKit","status":"streaming","createdAt":"2026-07-11T03:00:00.000Z"}]}}`
	// diagnosticEvent is docs/protocol.md#fixtures fixture 5.
	diagnosticEvent = `{` + envelope + `,"eventId":"event-diagnostic","sequence":4,"event":"server.turn.diagnostic","payload":{"version":1,"code":"ADAPTER_FAILED","message":"The adapter failed.","retryable":false}}`
)

// replace returns s with the first old replaced by new; old must occur.
func replace(tb testing.TB, s, old, new string) string {
	tb.Helper()
	if !strings.Contains(s, old) {
		tb.Fatalf("%q not found in %s", old, s)
	}
	return strings.Replace(s, old, new, 1)
}

// withMessage returns snapshotEvent whose only message gets extra members
// appended (a leading comma is added).
func withMessage(tb testing.TB, members string) string {
	tb.Helper()
	return replace(tb, snapshotEvent, `"createdAt":"2026-07-11T03:00:00.000Z"}`, `"createdAt":"2026-07-11T03:00:00.000Z",`+members+`}`)
}

func nested(levels int) string {
	return strings.Repeat(`{"nested":`, levels) + `{}` + strings.Repeat(`}`, levels)
}

const (
	notJSON = "Turn event is not valid JSON."
	invalid = "Turn event payload is invalid."
)

// TestDecodeTurnEvent covers docs/protocol.md#decoding-untrusted-events and
// the docs/design.md#wire-protocol-v1 hazards. code "" means the input
// decodes; eventID is the diagnostic's expected EventID; msg (when set) its
// expected message.
func TestDecodeTurnEvent(t *testing.T) {
	type tc struct {
		input   string
		code    string
		eventID string
		msg     string
	}
	ok := func(input string) tc { return tc{input: input} }
	bad := func(input, eventID string) tc {
		return tc{input: input, code: protocol.CodeProtocolInvalidPayload, eventID: eventID, msg: invalid}
	}
	badJSON := func(input string) tc {
		return tc{input: input, code: protocol.CodeProtocolInvalidPayload, msg: notJSON}
	}
	version := func(v string) string { return replace(t, submitEvent, `"version":1`, `"version":`+v) }
	sub := func(old, new string) string { return replace(t, submitEvent, old, new) }
	snap := func(old, new string) string { return replace(t, snapshotEvent, old, new) }
	input := func(s string) string { return sub(`"input":"hello"`, `"input":`+s) }
	emitted := func(s string) string { return sub(`"2026-07-11T03:00:00.000Z"`, `"`+s+`"`) }
	createdAt := func(s string) string {
		return snap(`"createdAt":"2026-07-11T03:00:00.000Z"`, `"createdAt":"`+s+`"`)
	}
	key := func(units int, char string) string {
		return withMessage(t, `"metadata":{"`+strings.Repeat(char, units)+`":1}`)
	}
	// items returns a message whose metadata holds an array of n numbers:
	// the record then has 11+n JSON values (record, version, messages,
	// message, its 5 fields, metadata, the array, n items).
	items := func(n int) string {
		return withMessage(t, `"metadata":{"a":[`+strings.TrimSuffix(strings.Repeat("0,", n), ",")+`]}`)
	}

	tests := map[string]tc{
		// Algorithm order (docs/protocol.md#decoding-untrusted-events).
		"fixture submit":                  ok(submitEvent),
		"not JSON":                        badJSON(`{`),
		"empty text":                      badJSON(``),
		"trailing garbage":                badJSON(submitEvent + `x`),
		"JSON whitespace around":          ok(" \t\r\n" + submitEvent + "\r\n "),
		"null":                            bad(`null`, ""),
		"array":                           bad(`[`+submitEvent+`]`, ""),
		"number":                          bad(`1`, ""),
		"JSON string holding an event":    bad(mustMarshal(t, submitEvent), ""),
		"version 2":                       {version("2"), protocol.CodeProtocolUnsupportedVersion, "event-submit", "Turn event uses an unsupported protocol version."},
		"version 1.5":                     {version("1.5"), protocol.CodeProtocolUnsupportedVersion, "event-submit", ""},
		"version -1":                      {version("-1"), protocol.CodeProtocolUnsupportedVersion, "event-submit", ""},
		"version overflowing to Infinity": {version("1e400"), protocol.CodeProtocolUnsupportedVersion, "event-submit", ""},
		"version 1.0":                     ok(version("1.0")),
		"version 1e0":                     ok(version("1e0")),
		"version 10e-1":                   ok(version("10e-1")),
		"version string":                  bad(version(`"1"`), "event-submit"),
		"version null":                    bad(version(`null`), "event-submit"),
		"version missing":                 bad(sub(`"version":1,`, ``), "event-submit"),
		"version 2 wins over unknown event": {replace(t, version("2"), `"client.turn.submit"`, `"server.turn.future"`),
			protocol.CodeProtocolUnsupportedVersion, "event-submit", ""},
		"version 2 with another protocol": bad(replace(t, version("2"), `agentskit.chat.turn`, `agentskit.chat.other`), "event-submit"),
		"unknown event":                   {sub(`"client.turn.submit"`, `"server.turn.future"`), protocol.CodeProtocolUnknownEvent, "event-submit", "Turn event kind is unknown."},
		"unknown event, payload ignored": {replace(t, sub(`"client.turn.submit"`, `"x"`), `{"input":"hello"}`, `"not an object"`),
			protocol.CodeProtocolUnknownEvent, "event-submit", ""},
		"unknown event, no version":  bad(replace(t, sub(`"client.turn.submit"`, `"x"`), `"version":1,`, ``), "event-submit"),
		"event not a string":         bad(sub(`"client.turn.submit"`, `5`), "event-submit"),
		"event kind of another body": bad(sub(`"client.turn.submit"`, `"server.turn.snapshot"`), "event-submit"),

		// Diagnostics echo only a valid SafeId eventId.
		"eventId with LF":      bad(sub(`"event-submit"`, `"unsafe\nlog-entry"`), ""),
		"eventId 129 chars":    bad(sub(`"event-submit"`, `"`+strings.Repeat("a", 129)+`"`), ""),
		"eventId 128 chars":    ok(sub(`"event-submit"`, `"`+strings.Repeat("a", 128)+`"`)),
		"eventId leading dash": bad(sub(`"event-submit"`, `"-a"`), ""),
		"eventId non-ASCII":    bad(sub(`"event-submit"`, `"é"`), ""),
		"eventId a number":     bad(sub(`"event-submit"`, `7`), ""),

		// Case-sensitive keys (docs/design.md#wire-protocol-v1).
		"Version key":  bad(sub(`"version":1`, `"Version":1`), "event-submit"),
		"Protocol key": bad(sub(`"protocol"`, `"Protocol"`), "event-submit"),
		"EventId key":  bad(sub(`"eventId"`, `"EventId"`), ""),
		"Input key":    bad(sub(`"input"`, `"Input"`), "event-submit"),
		"Payload key":  bad(sub(`"payload"`, `"Payload"`), "event-submit"),
		// ... and a key equal to a field but for case is rejected even
		// beside the field itself (one body, two readings; more in
		// testdata/case-variants.json).
		"Event beside event": bad(sub(`"event":`, `"Event":"server.turn.snapshot","event":`), "event-submit"),
		"INPUT beside input": bad(input(`"hello","INPUT":"x"`), "event-submit"),

		// Duplicate keys anywhere (docs/design.md#wire-protocol-v1).
		"duplicate top-level key":           badJSON(sub(`"sequence":0`, `"sequence":0,"sequence":0`)),
		"duplicate key in payload":          badJSON(input(`"hello","input":"other"`)),
		"duplicate key through an escape":   badJSON(input(`"hello","\u0069nput":"other"`)),
		"duplicate key in an unknown value": badJSON(sub(`"payload"`, `"future":{"a":{"b":1,"b":2}},"payload"`)),
		"duplicate key in deep metadata":    badJSON(withMessage(t, `"metadata":{"a":[{"b":{"c":1,"c":1}}]}`)),
		"same key in sibling objects":       ok(sub(`"payload"`, `"future":[{"a":1},{"a":2}],"payload"`)),

		// Lone surrogates and invalid UTF-8 (docs/design.md#wire-protocol-v1).
		"lone high surrogate":             badJSON(input(`"\ud800"`)),
		"lone low surrogate":              badJSON(input(`"a\udc00b"`)),
		"high surrogate then letter":      badJSON(input(`"\ud800\u0041"`)),
		"reversed pair":                   badJSON(input(`"\ude00\ud83d"`)),
		"lone surrogate in unknown key":   badJSON(sub(`"payload"`, `"future":"\udfff","payload"`)),
		"lone surrogate in an object key": badJSON(sub(`"payload"`, `"\ud800":1,"payload"`)),
		"surrogate pair":                  ok(input(`"\ud83d\ude00"`)),
		"invalid UTF-8 byte":              badJSON(input("\"a\xffb\"")),
		"UTF-8 encoded surrogate":         badJSON(input("\"\xed\xa0\x80\"")),
		"overlong UTF-8":                  badJSON(input("\"\xc0\xaf\"")),
		"raw control character":           badJSON(input("\"a\x01\"")),
		"raw U+2028 and emoji":            ok(input("\"\u2028😀\"")),

		// null is not absent (wire, "Optional fields").
		"snapshot error null":   bad(snap(`"status":"streaming"`, `"status":"streaming","error":null`), "event-streaming"),
		"snapshot lineage null": bad(snap(`{"operation":"submit"}`, `null`), "event-streaming"),
		"submit lineage null":   bad(input(`"hello","lineage":null`), "event-submit"),
		"toolCallId null":       bad(withMessage(t, `"toolCallId":null`), "event-streaming"),
		"parts null":            bad(withMessage(t, `"parts":null`), "event-streaming"),
		"metadata null":         bad(withMessage(t, `"metadata":null`), "event-streaming"),
		"tool result null": bad(withMessage(t, `"toolCalls":[{"id":"c","name":"n","args":{},"status":"complete","result":null}]`),
			"event-streaming"),

		// Integers: integral numbers <= 2^53-1.
		"sequence 1.0":              ok(sub(`"sequence":0`, `"sequence":1.0`)),
		"sequence -0":               ok(sub(`"sequence":0`, `"sequence":-0`)),
		"sequence 2^53-1":           ok(sub(`"sequence":0`, `"sequence":9007199254740991`)),
		"sequence 2^53":             bad(sub(`"sequence":0`, `"sequence":9007199254740992`), "event-submit"),
		"sequence 2^53+1":           bad(sub(`"sequence":0`, `"sequence":9007199254740993`), "event-submit"),
		"sequence in exponent form": ok(sub(`"sequence":0`, `"sequence":9.007199254740991e15`)),
		"sequence -1":               bad(sub(`"sequence":0`, `"sequence":-1`), "event-submit"),
		"sequence 0.5":              bad(sub(`"sequence":0`, `"sequence":0.5`), "event-submit"),
		"sequence 1e400":            bad(sub(`"sequence":0`, `"sequence":1e400`), "event-submit"),
		"sequence string":           bad(sub(`"sequence":0`, `"sequence":"0"`), "event-submit"),
		"usage 2^53":                bad(snap(`"promptTokens":2`, `"promptTokens":9007199254740992`), "event-streaming"),
		"usage 2.0":                 ok(snap(`"promptTokens":2`, `"promptTokens":2.0`)),
		"usage negative":            bad(snap(`"promptTokens":2`, `"promptTokens":-2`), "event-streaming"),
		"usage sum unchecked":       ok(snap(`"totalTokens":3`, `"totalTokens":300`)),
		"usage missing field":       bad(snap(`"promptTokens":2,`, ``), "event-streaming"),
		"bad number syntax":         badJSON(sub(`"sequence":0`, `"sequence":01`)),
		"bad number dot":            badJSON(sub(`"sequence":0`, `"sequence":1.`)),

		// Blank input uses JavaScript's trim() (docs/protocol.md#payloads).
		"blank spaces":        bad(input(`"   "`), "event-submit"),
		"blank ASCII set":     bad(input(`"\t\n\u000b\f\r "`), "event-submit"),
		"blank U+FEFF":        bad(input(`"\ufeff"`), "event-submit"),
		"blank U+00A0":        bad(input(`"\u00a0"`), "event-submit"),
		"blank U+2028 U+2029": bad(input(`"\u2028\u2029"`), "event-submit"),
		"blank U+3000 (Zs)":   bad(input(`"\u3000\u1680\u202f"`), "event-submit"),
		"U+0085 not blank":    ok(input(`"\u0085"`)),
		"U+200B not blank":    ok(input(`"\u200b"`)),
		"U+180E not blank":    ok(input(`"\u180e"`)),
		"empty input":         bad(input(`""`), "event-submit"),
		"input not a string":  bad(input(`5`), "event-submit"),

		// emittedAt grammar (docs/protocol.md#the-turn-event-envelope).
		"emittedAt minutes only":   ok(emitted("2026-07-11T03:00Z")),
		"emittedAt offset":         ok(emitted("2026-07-11T03:00:00+02:00")),
		"emittedAt 9 fraction":     ok(emitted("2026-07-11T03:00:00.123456789Z")),
		"emittedAt leap day":       ok(emitted("2024-02-29T00:00:00Z")),
		"emittedAt year 2000 leap": ok(emitted("2000-02-29T00:00Z")),
		"emittedAt no zone":        bad(emitted("2026-07-11T03:00:00"), "event-submit"),
		"emittedAt +0200":          bad(emitted("2026-07-11T03:00:00+0200"), "event-submit"),
		"emittedAt +02":            bad(emitted("2026-07-11T03:00:00+02"), "event-submit"),
		"emittedAt lowercase z":    bad(emitted("2026-07-11T03:00:00z"), "event-submit"),
		"emittedAt lowercase t":    bad(emitted("2026-07-11t03:00:00Z"), "event-submit"),
		"emittedAt space":          bad(emitted("2026-07-11 03:00:00Z"), "event-submit"),
		"emittedAt 24:00":          bad(emitted("2026-07-11T24:00Z"), "event-submit"),
		"emittedAt :60":            bad(emitted("2026-07-11T03:00:60Z"), "event-submit"),
		"emittedAt Feb 30":         bad(emitted("2026-02-30T03:00Z"), "event-submit"),
		"emittedAt 2100-02-29":     bad(emitted("2100-02-29T03:00Z"), "event-submit"),
		"emittedAt empty fraction": bad(emitted("2026-07-11T03:00:00.Z"), "event-submit"),
		"emittedAt offset 24:00":   bad(emitted("2026-07-11T03:00:00+24:00"), "event-submit"),

		// Submit lineage (turnstream extension,
		// docs/design.md#storage-one-dynamodb-table).
		"submit lineage edit":        ok(input(`"hello","lineage":{"operation":"edit","parentTurnId":"turn-1","sourceMessageId":"msg-1"}`)),
		"submit lineage submit":      ok(input(`"hello","lineage":{"operation":"submit"}`)),
		"submit lineage no parents":  bad(input(`"hello","lineage":{"operation":"retry"}`), "event-submit"),
		"submit lineage bad parent":  bad(input(`"hello","lineage":{"operation":"retry","parentTurnId":"-x","sourceMessageId":"m"}`), "event-submit"),
		"submit lineage unknown op":  bad(input(`"hello","lineage":{"operation":"fork"}`), "event-submit"),
		"submit lineage not object":  bad(input(`"hello","lineage":"edit"`), "event-submit"),
		"snapshot lineage edit bare": bad(snap(`{"operation":"submit"}`, `{"operation":"edit"}`), "event-streaming"),

		// Submit confirmation decision (turnstream extension, docs/approvals.md).
		"submit confirmation approve":        ok(input(`"yes","confirmation":{"token":"cf1","decision":"approve"}`)),
		"submit confirmation deny":           ok(input(`"no","confirmation":{"token":"cf1","decision":"deny","future":1}`)),
		"submit confirmation submit lineage": ok(input(`"yes","lineage":{"operation":"submit"},"confirmation":{"token":"cf1","decision":"approve"}`)),
		"submit confirmation edit lineage":   bad(input(`"yes","lineage":{"operation":"edit","parentTurnId":"turn-1","sourceMessageId":"msg-1"},"confirmation":{"token":"cf1","decision":"approve"}`), "event-submit"),
		"submit confirmation null":           bad(input(`"yes","confirmation":null`), "event-submit"),
		"submit confirmation not object":     bad(input(`"yes","confirmation":"cf1"`), "event-submit"),
		"submit confirmation no token":       bad(input(`"yes","confirmation":{"decision":"approve"}`), "event-submit"),
		"submit confirmation bad token":      bad(input(`"yes","confirmation":{"token":"-x","decision":"approve"}`), "event-submit"),
		"submit confirmation other decision": bad(input(`"yes","confirmation":{"token":"cf1","decision":"Approve"}`), "event-submit"),
		"submit confirmation no decision":    bad(input(`"yes","confirmation":{"token":"cf1"}`), "event-submit"),
		"submit confirmation blank input":    bad(input(`" ","confirmation":{"token":"cf1","decision":"approve"}`), "event-submit"),
		"submit confirmation Decision":       bad(input(`"yes","confirmation":{"token":"cf1","decision":"approve","Decision":"deny"}`), "event-submit"),
		"submit confirmation TOKEN":          bad(input(`"yes","confirmation":{"token":"cf1","TOKEN":"cf2","decision":"approve"}`), "event-submit"),
		"submit Confirmation beside":         bad(input(`"yes","confirmation":{"token":"cf1","decision":"approve"},"Confirmation":{}`), "event-submit"),

		// Submit attachments (turnstream extension, docs/attachments.md).
		"submit attachments":             ok(input(`"look","attachments":["att_A","att_B"]`)),
		"submit attachments 25":          ok(input(`"look","attachments":["a0","a1","a2","a3","a4","a5","a6","a7","a8","a9","a10","a11","a12","a13","a14","a15","a16","a17","a18","a19","a20","a21","a22","a23","a24"]`)),
		"submit attachments 26":          bad(input(`"look","attachments":["a0","a1","a2","a3","a4","a5","a6","a7","a8","a9","a10","a11","a12","a13","a14","a15","a16","a17","a18","a19","a20","a21","a22","a23","a24","a25"]`), "event-submit"),
		"submit attachments empty":       bad(input(`"look","attachments":[]`), "event-submit"),
		"submit attachments null":        bad(input(`"look","attachments":null`), "event-submit"),
		"submit attachments string":      bad(input(`"look","attachments":"att_A"`), "event-submit"),
		"submit attachments number":      bad(input(`"look","attachments":[1]`), "event-submit"),
		"submit attachments repeated":    bad(input(`"look","attachments":["att_A","att_A"]`), "event-submit"),
		"submit attachments not SafeId":  bad(input(`"look","attachments":["../x"]`), "event-submit"),
		"submit Attachments beside":      bad(input(`"look","attachments":["att_A"],"Attachments":[]`), "event-submit"),
		"submit attachments blank input": bad(input(`" ","attachments":["att_A"]`), "event-submit"),

		// Canonical message records
		// (docs/protocol.md#the-canonical-message-record).
		"metadata nested 29 levels":           ok(withMessage(t, `"metadata":`+nested(29))),
		"metadata nested 30 levels":           bad(withMessage(t, `"metadata":`+nested(30)), "event-streaming"),
		"metadata key 256 units":              ok(key(256, "k")),
		"metadata key 257 units":              bad(key(257, "k"), "event-streaming"),
		"key of 128 emoji":                    ok(key(128, "😀")),
		"key of 129 emoji":                    bad(key(129, "😀"), "event-streaming"),
		"record of 10000 values":              ok(items(9989)),
		"record of 10001 values":              bad(items(9990), "event-streaming"),
		"unknown keys count toward the limit": bad(replace(t, items(9989), `"role"`, `"future":1,"role"`), "event-streaming"),
		"metadata array":                      bad(withMessage(t, `"metadata":[]`), "event-streaming"),
		"metadata overflowing number":         bad(withMessage(t, `"metadata":{"n":1e999}`), "event-streaming"),
		"empty message id":                    bad(snap(`"id":"message-assistant"`, `"id":""`), "event-streaming"),
		"message id not a SafeId":             ok(snap(`"id":"message-assistant"`, `"id":"any id, ok"`)),
		"unknown role":                        bad(snap(`"role":"assistant"`, `"role":"robot"`), "event-streaming"),
		"unknown message status":              bad(snap(`"status":"streaming","createdAt"`, `"status":"done","createdAt"`), "event-streaming"),
		"empty content":                       ok(snap(`"content":"AgentsKit"`, `"content":""`)),
		"createdAt leap day":                  ok(createdAt("2024-02-29T23:59:59.999Z")),
		"createdAt year 0":                    ok(createdAt("0000-01-01T00:00:00.000Z")),
		"createdAt Feb 30":                    bad(createdAt("2026-02-30T00:00:00.000Z"), "event-streaming"),
		"createdAt no millis":                 bad(createdAt("2026-07-11T03:00:00Z"), "event-streaming"),
		"createdAt 24:00":                     bad(createdAt("2026-07-11T24:00:00.000Z"), "event-streaming"),
		"createdAt offset":                    bad(createdAt("2026-07-11T03:00:00.000+00:00"), "event-streaming"),
		"parts all types": ok(withMessage(t, `"parts":[{"type":"text","text":"t"},{"type":"image","source":"s","mimeType":"image/png","detail":"low"},`+
			`{"type":"audio","source":"s","durationSec":1.5},{"type":"video","source":"s","durationSec":0},{"type":"file","source":"s","filename":"f"}]`)),
		"part text without text":          bad(withMessage(t, `"parts":[{"type":"text"}]`), "event-streaming"),
		"part image detail medium":        bad(withMessage(t, `"parts":[{"type":"image","source":"s","detail":"medium"}]`), "event-streaming"),
		"part negative duration":          bad(withMessage(t, `"parts":[{"type":"audio","source":"s","durationSec":-1}]`), "event-streaming"),
		"part unknown type":               bad(withMessage(t, `"parts":[{"type":"gif","source":"s"}]`), "event-streaming"),
		"part foreign fields ignored":     ok(withMessage(t, `"parts":[{"type":"text","text":"t","mimeType":5},{"type":"image","source":"s","durationSec":"x"}]`)),
		"part mimeType not a string":      bad(withMessage(t, `"parts":[{"type":"file","source":"s","mimeType":5}]`), "event-streaming"),
		"tool call args array":            bad(withMessage(t, `"toolCalls":[{"id":"c","name":"n","args":[],"status":"complete"}]`), "event-streaming"),
		"tool call without args":          bad(withMessage(t, `"toolCalls":[{"id":"c","name":"n","status":"complete"}]`), "event-streaming"),
		"tool call empty name":            bad(withMessage(t, `"toolCalls":[{"id":"c","name":"","args":{},"status":"complete"}]`), "event-streaming"),
		"tool call requires_confirmation": ok(withMessage(t, `"toolCalls":[{"id":"c","name":"n","args":{},"status":"requires_confirmation"}]`)),
		"messages not an array":           bad(snap(`"messages":[`, `"messages":"x","m":[`), "event-streaming"),

		// Diagnostic payload (docs/protocol.md#payloads).
		"diagnostic fixture":        ok(diagnosticEvent),
		"diagnostic lowercase code": bad(replace(t, diagnosticEvent, `"ADAPTER_FAILED"`, `"adapter_failed"`), "event-diagnostic"),
		"diagnostic empty message":  bad(replace(t, diagnosticEvent, `"The adapter failed."`, `""`), "event-diagnostic"),
		"diagnostic version 2":      bad(replace(t, diagnosticEvent, `{"version":1,`, `{"version":2,`), "event-diagnostic"),
		"diagnostic retryable text": bad(replace(t, diagnosticEvent, `"retryable":false`, `"retryable":"false"`), "event-diagnostic"),
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			ev, diag := protocol.DecodeTurnEvent([]byte(tt.input))
			if (ev == nil) == (diag == nil) {
				t.Fatalf("got event %v and diagnostic %v; want exactly one", ev, diag)
			}
			if tt.code == "" {
				if diag != nil {
					t.Fatalf("diagnostic %+v; want the event to decode", *diag)
				}
				return
			}
			if diag == nil {
				t.Fatalf("decoded %+v; want %s", *ev, tt.code)
			}
			if diag.Code != tt.code || diag.EventID != tt.eventID || diag.Retryable || diag.Version != 1 {
				t.Errorf("diagnostic %+v; want code %s, eventId %q, retryable false", *diag, tt.code, tt.eventID)
			}
			if tt.msg != "" && diag.Message != tt.msg {
				t.Errorf("message %q; want %q", diag.Message, tt.msg)
			}
		})
	}
}

func mustMarshal(tb testing.TB, v any) string {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// TestDecodeTurnEventValues checks decoded values, not just acceptance.
func TestDecodeTurnEventValues(t *testing.T) {
	t.Run("integral floats become integers", func(t *testing.T) {
		ev, diag := protocol.DecodeTurnEvent([]byte(replace(t, submitEvent, `"sequence":0`, `"sequence":7.0`)))
		if diag != nil || ev.Sequence != 7 {
			t.Fatalf("got %+v, %+v; want sequence 7", ev, diag)
		}
	})
	t.Run("unknown keys are dropped", func(t *testing.T) {
		plain, _ := protocol.DecodeTurnEvent([]byte(submitEvent))
		extra, diag := protocol.DecodeTurnEvent([]byte(replace(t, submitEvent, `"input":"hello"`, `"input":"hello","future":true,"inputs":"x"`)))
		if diag != nil || !reflect.DeepEqual(plain, extra) {
			t.Fatalf("got %+v; want %+v", extra, plain)
		}
	})
	t.Run("escapes decode to characters", func(t *testing.T) {
		ev, diag := protocol.DecodeTurnEvent([]byte(replace(t, submitEvent, `"hello"`, `"\ud83d\ude00\u2028\n\"\\\/<&>"`)))
		if diag != nil || ev.Submit.Input != "😀\u2028\n\"\\/<&>" {
			t.Fatalf("got %+v, %+v", ev, diag)
		}
	})
	t.Run("submit lineage", func(t *testing.T) {
		ev, diag := protocol.DecodeTurnEvent([]byte(replace(t, submitEvent, `"input":"hello"`,
			`"input":"hello","lineage":{"operation":"edit","parentTurnId":"turn-1","sourceMessageId":"msg-1","x":1}`)))
		want := &protocol.Lineage{Operation: "edit", ParentTurnID: "turn-1", SourceMessageID: "msg-1"}
		if diag != nil || !reflect.DeepEqual(ev.Submit.Lineage, want) {
			t.Fatalf("got %+v, %+v; want lineage %+v", ev, diag, want)
		}
	})
	t.Run("submit lineage drops parent fields", func(t *testing.T) {
		ev, diag := protocol.DecodeTurnEvent([]byte(replace(t, snapshotEvent, `{"operation":"submit"}`,
			`{"operation":"submit","parentTurnId":"t","sourceMessageId":"m"}`)))
		if diag != nil || *ev.Snapshot.Lineage != (protocol.Lineage{Operation: "submit"}) {
			t.Fatalf("got %+v, %+v", ev, diag)
		}
	})
	t.Run("message projection", func(t *testing.T) {
		in := withMessage(t, `"future":1,"toolCallId":"","parts":[{"type":"image","source":"s","filename":"dropped","detail":"auto","x":1}],`+
			`"toolCalls":[{"id":"c","name":"n","args":{"b":[1.50,-0,1e21,1E-7,"<&>"],"a":{}},"status":"error","error":"e","x":1}],`+
			`"metadata":{ "z" : null , "a":true, "10":1, "2":2, "01":3, "4294967295":4, "4294967294":5 }`)
		ev, diag := protocol.DecodeTurnEvent([]byte(in))
		if diag != nil {
			t.Fatalf("diagnostic %+v", *diag)
		}
		m := ev.Snapshot.Messages[0]
		src, detail, empty, errText := "s", "auto", "", "e"
		want := protocol.Message{
			ID: "message-assistant", Role: "assistant", Content: "AgentsKit", Status: "streaming",
			CreatedAt: "2026-07-11T03:00:00.000Z", ToolCallID: &empty,
			Parts: []protocol.Part{{Type: "image", Source: &src, Detail: &detail}},
			ToolCalls: []protocol.ToolCall{{ID: "c", Name: "n", Status: "error", Error: &errText,
				Args: json.RawMessage(`{"b":[1.5,0,1e+21,1e-7,"<&>"],"a":{}}`)}},
			// JavaScript enumerates array-index keys first, ascending.
			Metadata: json.RawMessage(`{"2":2,"10":1,"4294967294":5,"z":null,"a":true,"01":3,"4294967295":4}`),
		}
		if !reflect.DeepEqual(m, want) {
			t.Errorf("message\n got: %+v\nwant: %+v\nargs %s metadata %s", m, want, m.ToolCalls[0].Args, m.Metadata)
		}
	})
}

func TestEncodeEvent(t *testing.T) {
	base := func() *protocol.Event {
		return &protocol.Event{EventID: "e1", SessionID: "s1", TurnID: "t1", Sequence: 1,
			EmittedAt: "2026-07-11T03:00:00.000Z", Kind: protocol.EventSubmit,
			Submit: &protocol.SubmitPayload{Input: "hi"}}
	}
	snapshot := func(m protocol.Message) *protocol.Event {
		e := base()
		e.Kind, e.Submit = protocol.EventSnapshot, nil
		e.Snapshot = &protocol.SnapshotPayload{Messages: []protocol.Message{m}, Status: "complete"}
		return e
	}
	msg := func() protocol.Message {
		return protocol.Message{ID: "m", Role: "user", Content: "c", Status: "complete", CreatedAt: "2026-07-11T03:00:00.000Z"}
	}
	t.Run("escaping matches JSON.stringify", func(t *testing.T) {
		e := base()
		e.Submit.Input = "a\u2028b\u2029c<d>&e😀\x00\x1f\u007f\"\\\b\f\n\r\t/"
		got, err := protocol.EncodeEvent(e)
		if err != nil {
			t.Fatal(err)
		}
		const want = `"input":"a` + "\u2028b\u2029c<d>&e😀" + `\u0000\u001f` + "\u007f" + `\"\\\b\f\n\r\t/"`
		if !strings.Contains(string(got), want) {
			t.Errorf("encoding %s\nwant it to contain %s", got, want)
		}
		back, diag := protocol.DecodeTurnEvent(got)
		if diag != nil || back.Submit.Input != e.Submit.Input {
			t.Errorf("round trip: %+v %+v", back, diag)
		}
	})
	tests := map[string]struct {
		event *protocol.Event
		field string
	}{
		"nil event":            {nil, "event is nil"},
		"bad event id":         {func() *protocol.Event { e := base(); e.EventID = "a b"; return e }(), "eventId"},
		"negative sequence":    {func() *protocol.Event { e := base(); e.Sequence = -1; return e }(), "sequence"},
		"sequence past 2^53-1": {func() *protocol.Event { e := base(); e.Sequence = 1 << 53; return e }(), "sequence"},
		"bad emittedAt":        {func() *protocol.Event { e := base(); e.EmittedAt = "yesterday"; return e }(), "emittedAt"},
		"blank input":          {func() *protocol.Event { e := base(); e.Submit.Input = " \u3000"; return e }(), "payload.input"},
		"invalid UTF-8 input":  {func() *protocol.Event { e := base(); e.Submit.Input = "a\xff"; return e }(), "payload.input"},
		"kind mismatch": {func() *protocol.Event {
			e := base()
			e.Kind = protocol.EventSnapshot
			return e
		}(), "payload: Snapshot is nil"},
		"two payloads": {func() *protocol.Event {
			e := base()
			e.Diagnostic = &protocol.Diagnostic{}
			return e
		}(), "payload: exactly one"},
		"edit lineage without parent": {func() *protocol.Event {
			e := base()
			e.Submit.Lineage = &protocol.Lineage{Operation: "edit", SourceMessageID: "m"}
			return e
		}(), "payload.lineage.parentTurnId"},
		"diagnostic version 0": {func() *protocol.Event {
			e := base()
			e.Kind, e.Submit = protocol.EventDiagnostic, nil
			e.Diagnostic = &protocol.Diagnostic{Code: "X", Message: "m"}
			return e
		}(), "payload.version"},
		"bad createdAt": {snapshot(func() protocol.Message { m := msg(); m.CreatedAt = "2026-02-30T00:00:00.000Z"; return m }()),
			"payload.messages[0].createdAt"},
		"metadata not an object": {snapshot(func() protocol.Message { m := msg(); m.Metadata = json.RawMessage(`[1]`); return m }()),
			"payload.messages[0].metadata"},
		"metadata duplicate key": {snapshot(func() protocol.Message { m := msg(); m.Metadata = json.RawMessage(`{"a":1,"a":2}`); return m }()),
			"payload.messages[0].metadata"},
		"metadata too deep": {snapshot(func() protocol.Message { m := msg(); m.Metadata = json.RawMessage(nested(30)); return m }()),
			"payload.messages[0].metadata"},
		"tool call without args": {snapshot(func() protocol.Message {
			m := msg()
			m.ToolCalls = []protocol.ToolCall{{ID: "c", Name: "n", Status: "running"}}
			return m
		}()), "payload.messages[0].toolCalls[0].args"},
		"negative usage": {func() *protocol.Event {
			e := snapshot(msg())
			e.Snapshot.Usage.TotalTokens = -1
			return e
		}(), "payload.usage.totalTokens"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			b, err := protocol.EncodeEvent(tt.event)
			if !errors.Is(err, protocol.ErrInvalidEvent) || !strings.Contains(err.Error(), tt.field) {
				t.Fatalf("EncodeEvent = %s, %v; want ErrInvalidEvent naming %q", b, err, tt.field)
			}
			dst := []byte("keep")
			out, err := protocol.AppendEventLine(dst, tt.event)
			if err == nil || string(out) != "keep" {
				t.Errorf("AppendEventLine = %q, %v; want dst unchanged and an error", out, err)
			}
		})
	}
	t.Run("valid snapshot with every field round-trips", func(t *testing.T) {
		m := msg()
		text, src, mime, dur, name, id, res := "t", "s", "audio/ogg", 2.25, "f.txt", "call", "r"
		m.Parts = []protocol.Part{{Type: "text", Text: &text}, {Type: "audio", Source: &src, MimeType: &mime, DurationSec: &dur},
			{Type: "file", Source: &src, Filename: &name}}
		m.ToolCalls = []protocol.ToolCall{{ID: "c", Name: "n", Args: json.RawMessage(`{ "q" : [1, 2] }`), Status: "complete", Result: &res}}
		m.ToolCallID = &id
		m.Metadata = json.RawMessage(`{"code":"MODEL_FAILED"}`)
		e := snapshot(m)
		e.Snapshot.Error = &protocol.Diagnostic{Version: 1, Code: "MODEL_FAILED", Message: "The model request failed.", Retryable: true}
		e.Snapshot.Lineage = &protocol.Lineage{Operation: "retry", ParentTurnID: "t0", SourceMessageID: "m0"}
		b, err := protocol.EncodeEvent(e)
		if err != nil {
			t.Fatal(err)
		}
		back, diag := protocol.DecodeTurnEvent(b)
		if diag != nil {
			t.Fatalf("%+v\n%s", *diag, b)
		}
		e.Snapshot.Messages[0].ToolCalls[0].Args = json.RawMessage(`{"q":[1,2]}`) // compacted
		if !reflect.DeepEqual(back, e) {
			t.Errorf("round trip\n got: %+v\nwant: %+v", back.Snapshot.Messages[0], e.Snapshot.Messages[0])
		}
	})
}

func TestFormatTime(t *testing.T) {
	for in, want := range map[string]string{
		"2026-07-11T03:00:00.123456789+02:00": "2026-07-11T01:00:00.123Z",
		"2026-07-11T03:00:00Z":                "2026-07-11T03:00:00.000Z",
		"0001-01-01T00:00:00.999999Z":         "0001-01-01T00:00:00.999Z",
	} {
		t.Run(in, func(t *testing.T) {
			tm, err := timeParse(in)
			if err != nil {
				t.Fatal(err)
			}
			got := protocol.FormatTime(tm)
			if got != want || !protocol.IsCreatedAt(got) {
				t.Errorf("FormatTime = %s; want %s", got, want)
			}
		})
	}
}

func TestIsSafeID(t *testing.T) {
	for s, want := range map[string]bool{
		"a": true, "A.b_c:d-e": true, "0": true, strings.Repeat("x", 128): true,
		"": false, strings.Repeat("x", 129): false, ".a": false, "_a": false, "a b": false, "a/b": false, "é": false,
	} {
		t.Run(fmt.Sprintf("%.20q", s), func(t *testing.T) {
			if got := protocol.IsSafeID(s); got != want {
				t.Errorf("IsSafeID = %v; want %v", got, want)
			}
		})
	}
}

func timeParse(s string) (time.Time, error) { return time.Parse(time.RFC3339Nano, s) }

// TestSubmitAttachmentsRoundTrip: the attachments extension encodes after
// the confirmation and decodes back; an encoder is refused what the
// decoder would refuse.
func TestSubmitAttachmentsRoundTrip(t *testing.T) {
	ev := &protocol.Event{EventID: "e1", SessionID: "s", TurnID: "t", EmittedAt: "2026-07-11T03:00:00.000Z", Kind: protocol.EventSubmit,
		Submit: &protocol.SubmitPayload{Input: "look", Attachments: []string{"att_B", "att_A"}}}
	b, err := protocol.EncodeEvent(ev)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(b), `"payload":{"input":"look","attachments":["att_B","att_A"]}}`) {
		t.Errorf("encoded %s", b)
	}
	got, d := protocol.DecodeTurnEvent(b)
	if d != nil || !slices.Equal(got.Submit.Attachments, []string{"att_B", "att_A"}) {
		t.Fatalf("decoded %+v, %v", got, d)
	}
	for _, ids := range [][]string{{}, {"att_A", "att_A"}, {"-x"}, make([]string, protocol.MaxSubmitAttachments+1)} {
		ev.Submit.Attachments = ids
		if _, err := protocol.EncodeEvent(ev); err == nil {
			t.Errorf("encoded attachments %q", ids)
		}
	}
}
