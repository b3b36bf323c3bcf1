package protocol_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/pkg/protocol"
)

// wireEvent mirrors the envelope with encoding/json tags: the baseline of
// the benchmarks below decodes and encodes the same bytes through it.
type wireEvent[P any] struct {
	Protocol  string `json:"protocol"`
	Version   int    `json:"version"`
	EventID   string `json:"eventId"`
	SessionID string `json:"sessionId"`
	TurnID    string `json:"turnId"`
	Sequence  int64  `json:"sequence"`
	EmittedAt string `json:"emittedAt"`
	Event     string `json:"event"`
	Payload   P      `json:"payload"`
}

// prose returns about n bytes of chat text with some non-ASCII characters,
// quotes and line breaks.
func prose(n int) string {
	const para = "The turn protocol streams complete snapshots, never deltas. Café \"quotes\", naïve résumé — emoji 😀 too.\n"
	return strings.Repeat(para, n/len(para)+1)[:n]
}

func submitBody(tb testing.TB) []byte {
	tb.Helper()
	e := &protocol.Event{EventID: "event-1", SessionID: "session-1", TurnID: "turn-1", Sequence: 0,
		EmittedAt: "2026-07-11T03:00:00.000Z", Kind: protocol.EventSubmit,
		Submit: &protocol.SubmitPayload{Input: strings.ToValidUTF8(prose(16<<10), "")}}
	b, err := protocol.EncodeEvent(e)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// BenchmarkDecodeSubmit16KiB: DecodeTurnEvent versus encoding/json
// Unmarshal of the same bytes into the equivalent struct (target <= 2x).
func BenchmarkDecodeSubmit16KiB(b *testing.B) {
	body := submitBody(b)
	b.Run("protocol", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, diag := protocol.DecodeTurnEvent(body); diag != nil {
				b.Fatal(diag.Code)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			var e wireEvent[protocol.SubmitPayload]
			if err := json.Unmarshal(body, &e); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// snapshot50 returns a streaming snapshot of a 50-message conversation:
// user and assistant turns of 200 B-2 KiB, some with tool calls and
// metadata.
func snapshot50() *protocol.Event {
	msgs := make([]protocol.Message, 50)
	for i := range msgs {
		m := protocol.Message{
			ID: fmt.Sprintf("turn-%03d.m%d", i/2, i%2), Role: protocol.RoleUser, Status: protocol.MessageComplete,
			CreatedAt: fmt.Sprintf("2026-07-11T03:%02d:%02d.000Z", i/60, i%60),
			Content:   strings.ToValidUTF8(prose(200+(i*137)%1800), ""),
		}
		if i%2 == 1 {
			m.Role = protocol.RoleAssistant
			m.Metadata = json.RawMessage(`{"model":"echo","artifacts":[{"entryPath":"reports/index.html","artifactType":"webpage"}]}`)
			if i%6 == 1 {
				res := "found 3 results"
				m.ToolCalls = []protocol.ToolCall{{ID: fmt.Sprintf("call-%d", i), Name: "search",
					Args: json.RawMessage(`{"query":"turn protocol","limit":5,"filters":{"lang":["en","fr"]}}`), Status: "complete", Result: &res}}
			}
		}
		msgs[i] = m
	}
	msgs[49].Status = protocol.MessageStreaming
	return &protocol.Event{EventID: "event-9", SessionID: "session-1", TurnID: "turn-024", Sequence: 97,
		EmittedAt: "2026-07-11T03:01:00.000Z", Kind: protocol.EventSnapshot,
		Snapshot: &protocol.SnapshotPayload{Messages: msgs, Status: protocol.StatusStreaming,
			Usage:   protocol.Usage{PromptTokens: 5000, CompletionTokens: 700, TotalTokens: 5700},
			Lineage: &protocol.Lineage{Operation: protocol.OperationSubmit}}}
}

// BenchmarkEncodeSnapshot50: EncodeEvent versus encoding/json Marshal of
// the equivalent struct (target <= 1.5x). EncodeEvent also validates every
// field and re-checks Metadata/Args strictly; json.Marshal only compacts
// them.
func BenchmarkEncodeSnapshot50(b *testing.B) {
	e := snapshot50()
	w := wireEvent[*protocol.SnapshotPayload]{Protocol: protocol.TurnProtocol, Version: 1, EventID: e.EventID,
		SessionID: e.SessionID, TurnID: e.TurnID, Sequence: e.Sequence, EmittedAt: e.EmittedAt, Event: e.Kind, Payload: e.Snapshot}
	size, err := protocol.EncodeEvent(e)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("protocol", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(size)))
		for b.Loop() {
			if _, err := protocol.EncodeEvent(e); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(size)))
		for b.Loop() {
			if _, err := json.Marshal(&w); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestBenchmarkInputsAreValid keeps the benchmark inputs honest: the
// snapshot is valid and both encoders describe the same JSON value.
func TestBenchmarkInputsAreValid(t *testing.T) {
	e := snapshot50()
	got, err := protocol.EncodeEvent(e)
	if err != nil {
		t.Fatal(err)
	}
	w := wireEvent[*protocol.SnapshotPayload]{Protocol: protocol.TurnProtocol, Version: 1, EventID: e.EventID,
		SessionID: e.SessionID, TurnID: e.TurnID, Sequence: e.Sequence, EmittedAt: e.EmittedAt, Event: e.Kind, Payload: e.Snapshot}
	want, err := json.Marshal(&w)
	if err != nil {
		t.Fatal(err)
	}
	assertJSONEqual(t, got, want)
	if _, diag := protocol.DecodeTurnEvent(submitBody(t)); diag != nil {
		t.Fatalf("submit body: %+v", *diag)
	}
}

// BenchmarkDecodeSnapshot50: DecodeTurnEvent of snapshot50 versus
// encoding/json Unmarshal of the same bytes into the equivalent struct.
// DecodeTurnEvent also checks every object for case-variant keys
// (IsCaseVariant), every record limit and every message field.
func BenchmarkDecodeSnapshot50(b *testing.B) {
	body, err := protocol.EncodeEvent(snapshot50())
	if err != nil {
		b.Fatal(err)
	}
	b.Run("protocol", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, diag := protocol.DecodeTurnEvent(body); diag != nil {
				b.Fatal(diag.Code)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			var e wireEvent[*protocol.SnapshotPayload]
			if err := json.Unmarshal(body, &e); err != nil {
				b.Fatal(err)
			}
		}
	})
}
