package engine

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/agui"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// wireTurn is a virtual turn for the wire simulations: an answer of size
// bytes written at rate bytes a second, with ids as long as real ones
// (random UUIDs), in a new session.
type wireTurn struct {
	size, rate          int
	sessionID, turnID   string
	user                protocol.Message
	createdAt, answered string
}

func newWireTurn(size, rate int) wireTurn {
	w := wireTurn{size: size, rate: rate, sessionID: newUUID(), turnID: newUUID(), createdAt: "2026-12-01T12:00:00.000Z"}
	w.user = userMessage(w.turnID, "Tell me a long story about the sea, the ships and the people on them.", w.createdAt, nil)
	w.answered = strings.Repeat("Words of an answer. ", size/20+1)[:size]
	return w
}

func (w wireTurn) assistant(text, status string) protocol.Message {
	return protocol.Message{ID: MessageID(w.turnID, positionAssistant), Role: protocol.RoleAssistant, Content: text, Status: status, CreatedAt: w.createdAt}
}

// at is the text written after d.
func (w wireTurn) at(d time.Duration) string {
	return w.answered[:min(w.size, int(float64(w.rate)*d.Seconds()))]
}

func (w wireTurn) duration() time.Duration {
	return time.Duration(float64(w.size) / float64(w.rate) * float64(time.Second))
}

// chunked is the size of an HTTP/1.1 chunk carrying n bytes: its size in
// hex, CRLF, the bytes, CRLF.
func chunked(n int) int { return len(strconv.FormatInt(int64(n), 16)) + 4 + n }

// snapshotBytes is the NDJSON snapshot line of the turn at text, in
// status (the terminal one is the simulations' "final snapshot").
func (w wireTurn) snapshotBytes(tb testing.TB, seq int64, text, status string) int {
	msgStatus := protocol.MessageStreaming
	if status != protocol.StatusStreaming {
		msgStatus = protocol.MessageComplete
	}
	line, err := protocol.AppendEventLine(nil, &protocol.Event{
		EventID: newUUID(), SessionID: w.sessionID, TurnID: w.turnID, Sequence: seq, EmittedAt: w.createdAt, Kind: protocol.EventSnapshot,
		Snapshot: &protocol.SnapshotPayload{Messages: []protocol.Message{w.user, w.assistant(text, msgStatus)}, Status: status,
			Usage: protocol.Usage{PromptTokens: 20, CompletionTokens: int64(w.size / 4), TotalTokens: 20 + int64(w.size/4)}, Lineage: &protocol.Lineage{Operation: protocol.OperationSubmit}},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return len(line)
}

// simulateAGUI runs the AG-UI writer's law and encoder over w: a wake-up
// every SnapshotInterval, text sent when aguiTextDue says so, the real
// frames counted with their chunk framing. It returns the bytes on the
// wire and the longest wait between two text events.
//
// With meta, the answer ends with metadata the deltas do not carry (as a
// turn that called tools does: its tool rounds), so the stream ends with
// the final MESSAGES_SNAPSHOT; a plain answer needs none.
func simulateAGUI(tb testing.TB, w wireTurn, meta bool) (wire int, longest time.Duration) {
	enc := newAGUIEncoder(w.sessionID, w.turnID)
	first := w.assistant("", protocol.MessageStreaming)
	events := enc.runStarted(nil)
	events = enc.snapshot(events, aguiMessages([]protocol.Message{w.user, first}), aguiPartOf(first))
	seq := int64(1)
	frames, _ := agui.AppendBatch(nil, seq, events)
	wire += chunked(len(frames))
	framing := len(must(agui.AppendFrame(nil, agui.EventID{Sequence: 1 << 20, Index: 1}, &agui.Event{
		Type: agui.TypeTextMessageContent, MessageID: enc.assistantID, Delta: agui.Text("")})))
	var lastText time.Duration
	for at := DefaultSnapshotInterval; at < w.duration(); at += DefaultSnapshotInterval {
		text := w.at(at)
		if text == enc.held.text || !aguiTextDue(len(text)-len(enc.held.text), framing, at-lastText) {
			continue
		}
		longest, lastText = max(longest, at-lastText), at
		seq++
		frames, _ = agui.AppendBatch(frames[:0], seq, enc.advance(nil, aguiPart{text: text}, nil))
		wire += chunked(len(frames))
	}
	final := w.assistant(w.answered, protocol.MessageComplete)
	if meta {
		final.Metadata = []byte(`{"toolRounds":[{"textEnd":0,"toolCalls":0}]}`)
	}
	rec := &chat.Turn{Status: chat.TurnComplete, Messages: []protocol.Message{w.user, final}, LastSequence: seq + 1,
		Usage: protocol.Usage{PromptTokens: 20, CompletionTokens: int64(w.size / 4), TotalTokens: 20 + int64(w.size/4)}}
	frames, _ = agui.AppendBatch(frames[:0], seq+1, enc.end(nil, rec, func() []agui.Message { return aguiMessages(rec.Messages) }))
	return wire + chunked(len(frames)), max(longest, w.duration()-lastText)
}

// simulateCompact models the compact writer over w (docs/compact.md):
// the first snapshot, the text written every SnapshotInterval into append
// lines that close after CompactLineSpan (each with its header and close),
// every write with its chunk framing, and the terminal snapshot.
func simulateCompact(tb testing.TB, w wireTurn) int {
	wire := chunked(w.snapshotBytes(tb, 1, "", protocol.StatusStreaming))
	header := len(must(protocol.AppendAppendOpen(nil, &protocol.Append{Sequence: 1000, After: 999, Offset: int64(w.size / 2)})))
	sent, lineOpened := 0, time.Duration(-1)
	for at := DefaultSnapshotInterval; at < w.duration(); at += DefaultSnapshotInterval {
		text := w.at(at)
		n := len(text) - sent
		if n == 0 {
			continue
		}
		if lineOpened >= 0 && at-lineOpened >= DefaultCompactLineSpan {
			wire += chunked(len(protocol.AppendClose))
			lineOpened = -1
		}
		if lineOpened < 0 {
			n += header
			lineOpened = at
		}
		wire += chunked(n)
		sent = len(text)
	}
	return wire + chunked(len(protocol.AppendClose)+w.snapshotBytes(tb, 2, w.answered, protocol.StatusComplete))
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// BenchmarkAGUIPacedWire is the wire cost of one turn per answer size at
// 400 B/s (100 tokens a second), with real ids and HTTP chunk framing: the
// AG-UI stream (its writer's law and encoder) and the compact stream
// (modelled from docs/compact.md) over the turn's final NDJSON snapshot
// ("x-final"), in the same run: agui for a plain answer (the deltas leave
// the client with the record, no final snapshot), agui-snapshot-end for
// an answer that ends with the final MESSAGES_SNAPSHOT (metadata, as a
// turn with tool calls has); agui-max-gap-ms is the longest wait between
// two AG-UI text events.
func BenchmarkAGUIPacedWire(b *testing.B) {
	for _, size := range []int{1 << 10, 16 << 10, 64 << 10} {
		w := newWireTurn(size, 400)
		final := w.snapshotBytes(b, 2, w.answered, protocol.StatusComplete)
		b.Run(fmt.Sprintf("%dKB", size>>10), func(b *testing.B) {
			var aguiWire, aguiMetaWire, compactWire int
			var longest time.Duration
			b.ReportAllocs()
			for b.Loop() {
				aguiWire, longest = simulateAGUI(b, w, false)
				aguiMetaWire, _ = simulateAGUI(b, w, true)
				compactWire = simulateCompact(b, w)
			}
			b.ReportMetric(float64(final), "final-bytes")
			b.ReportMetric(float64(aguiWire)/float64(final), "agui-x-final")
			b.ReportMetric(float64(aguiMetaWire)/float64(final), "agui-snapshot-end-x-final")
			b.ReportMetric(float64(compactWire)/float64(final), "compact-x-final")
			b.ReportMetric(float64(longest.Milliseconds()), "agui-max-gap-ms")
		})
	}
}
