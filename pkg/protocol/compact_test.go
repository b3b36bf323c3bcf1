package protocol_test

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/pkg/protocol"
)

// snapshotLine encodes a snapshot of session "s1", turn "t1" whose last
// message is the assistant message with content.
func snapshotLine(tb testing.TB, seq int64, status, content string) []byte {
	tb.Helper()
	msgStatus := protocol.MessageStreaming
	if status != protocol.StatusStreaming {
		msgStatus = protocol.MessageComplete
	}
	ev := &protocol.Event{
		EventID: "e1", SessionID: "s1", TurnID: "t1", Sequence: seq,
		EmittedAt: "2026-12-01T10:00:00.000Z", Kind: protocol.EventSnapshot,
		Snapshot: &protocol.SnapshotPayload{
			Status: status,
			Messages: []protocol.Message{
				{ID: "t1-user", Role: protocol.RoleUser, Content: "hi", Status: protocol.MessageComplete, CreatedAt: "2026-12-01T10:00:00.000Z"},
				{ID: "t1-assistant", Role: protocol.RoleAssistant, Content: content, Status: msgStatus, CreatedAt: "2026-12-01T10:00:00.000Z"},
			},
		},
	}
	line, err := protocol.AppendEventLine(nil, ev)
	if err != nil {
		tb.Fatal(err)
	}
	return line
}

func appendLine(tb testing.TB, a protocol.Append) []byte {
	tb.Helper()
	line, err := protocol.AppendAppendLine(nil, &a)
	if err != nil {
		tb.Fatal(err)
	}
	return line
}

func TestAppendLineRoundTrip(t *testing.T) {
	for name, a := range map[string]protocol.Append{
		"plain":   {Sequence: 5, After: 4, Offset: 3, Text: "hello"},
		"escapes": {Sequence: 9, After: 2, Offset: 0, Text: "a\"b\\c\nd\te\u0001 é 😀 \u2028"},
		"usage":   {Sequence: 2, After: 1, Offset: 7, Usage: &protocol.Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3}},
		"reasoning": {Sequence: 4, After: 3, Offset: 0, Usage: &protocol.Usage{TotalTokens: 3},
			Reasoning: &protocol.AppendReasoning{Offset: 12, Text: "think \"hard\" é😀\n"}, Text: "then"},
	} {
		t.Run(name, func(t *testing.T) {
			line := appendLine(t, a)
			if !strings.HasSuffix(string(line), "\"}\n") || strings.Count(string(line), "\n") != 1 {
				t.Fatalf("line %q is not one line ending in the text member", line)
			}
			got, err := protocol.DecodeAppend(line)
			if err != nil {
				t.Fatal(err)
			}
			if got.Sequence != a.Sequence || got.After != a.After ||
				got.Offset != a.Offset || got.Text != a.Text || (got.Usage == nil) != (a.Usage == nil) || (a.Usage != nil && *got.Usage != *a.Usage) ||
				(got.Reasoning == nil) != (a.Reasoning == nil) || (a.Reasoning != nil && *got.Reasoning != *a.Reasoning) {
				t.Fatalf("decoded %+v, want %+v", got, a)
			}
		})
	}
}

// An AgentsKit decoder sees an append line as an unknown event kind: inert
// to its snapshot cursor, never a malformed payload.
func TestAppendLineIsInertToAgentsKitDecoding(t *testing.T) {
	line := appendLine(t, protocol.Append{Sequence: 3, After: 2, Text: "x"})
	_, d := protocol.DecodeTurnEvent(line)
	if d == nil || d.Code != protocol.CodeProtocolUnknownEvent {
		t.Fatalf("DecodeTurnEvent: %+v, want PROTOCOL_UNKNOWN_EVENT", d)
	}
	c, _ := protocol.NewSnapshotCursor("s1")
	if !c.Apply(snapshotLine(t, 2, protocol.StatusStreaming, "")) || c.Apply(line) {
		t.Fatal("the snapshot cursor must take the snapshot and ignore the append line")
	}
	if !c.Apply(snapshotLine(t, 4, protocol.StatusComplete, "x")) || c.Snapshot().Snapshot.Messages[1].Content != "x" {
		t.Fatal("the terminal snapshot must carry the final state")
	}
}

func TestDecodeAppendRejectsBadInput(t *testing.T) {
	good := `{"protocol":"agentskit.chat.turn","version":1,"event":"turnstream.turn.append","sequence":3,"after":2,"offset":0,"text":"x"}`
	for name, line := range map[string]string{
		"not JSON":            `{"protocol":"agentskit.chat.turn","version":1,"event":"turnstream.turn.append","text":"x`,
		"array":               `[1,"x"]`,
		"wrong protocol":      strings.Replace(good, `agentskit.chat.turn`, `other`, 1),
		"version 2":           strings.Replace(good, `"version":1`, `"version":2`, 1),
		"other event":         strings.Replace(good, `turnstream.turn.append`, `server.turn.snapshot`, 1),
		"missing sequence":    strings.Replace(good, `"sequence":3,`, ``, 1),
		"missing offset":      strings.Replace(good, `,"offset":0`, ``, 1),
		"sequence 0":          strings.Replace(good, `"sequence":3,"after":2`, `"sequence":0,"after":0`, 1),
		"after = sequence":    strings.Replace(good, `"after":2`, `"after":3`, 1),
		"negative after":      strings.Replace(good, `"after":2`, `"after":-1`, 1),
		"fractional offset":   strings.Replace(good, `"offset":0`, `"offset":0.5`, 1),
		"string offset":       strings.Replace(good, `"offset":0`, `"offset":"0"`, 1),
		"text not a string":   strings.Replace(good, `"text":"x"`, `"text":1`, 1),
		"missing text":        strings.Replace(good, `,"text":"x"`, ``, 1),
		"null usage":          strings.Replace(good, `"offset":0`, `"offset":0,"usage":null`, 1),
		"partial usage":       strings.Replace(good, `"offset":0`, `"offset":0,"usage":{"promptTokens":1}`, 1),
		"duplicate text":      strings.Replace(good, `"text":"x"`, `"text":"x","text":"y"`, 1),
		"case variant":        strings.Replace(good, `"offset":0`, `"offset":0,"Text":"y"`, 1),
		"lone surrogate":      strings.Replace(good, `"text":"x"`, `"text":"\ud800"`, 1),
		"raw control in str":  strings.Replace(good, `"text":"x"`, "\"text\":\"\x01\"", 1),
		"huge sequence":       strings.Replace(good, `"sequence":3`, `"sequence":9007199254740992`, 1),
		"reasoning a string":  strings.Replace(good, `"offset":0`, `"offset":0,"reasoning":"x"`, 1),
		"reasoning null":      strings.Replace(good, `"offset":0`, `"offset":0,"reasoning":null`, 1),
		"reasoning no offset": strings.Replace(good, `"offset":0`, `"offset":0,"reasoning":{"text":"x"}`, 1),
		"reasoning no text":   strings.Replace(good, `"offset":0`, `"offset":0,"reasoning":{"offset":0}`, 1),
		"reasoning offset -1": strings.Replace(good, `"offset":0`, `"offset":0,"reasoning":{"offset":-1,"text":"x"}`, 1),
		"reasoning variant":   strings.Replace(good, `"offset":0`, `"offset":0,"reasoning":{"offset":0,"text":"x","Text":"y"}`, 1),
		"Reasoning variant":   strings.Replace(good, `"offset":0`, `"offset":0,"Reasoning":{"offset":0,"text":"x"}`, 1),
	} {
		t.Run(name, func(t *testing.T) {
			if a, err := protocol.DecodeAppend([]byte(line)); !errors.Is(err, protocol.ErrInvalidAppend) {
				t.Fatalf("DecodeAppend = %+v, %v; want ErrInvalidAppend", a, err)
			}
		})
	}
	if _, err := protocol.DecodeAppend([]byte(good)); err != nil {
		t.Fatalf("the good line: %v", err)
	}
	// The error names a field, never the input.
	_, err := protocol.DecodeAppend([]byte(strings.Replace(good, `"text":"x"`, `"text":{"secret":1}`, 1)))
	if err == nil || strings.Contains(err.Error(), "secret") {
		t.Fatalf("error %v", err)
	}
}

func TestAppendAppendOpenRejectsBadAppends(t *testing.T) {
	for name, a := range map[string]protocol.Append{
		"sequence":       {Sequence: 1, After: 1},
		"after":          {Sequence: 1, After: -1},
		"offset":         {Sequence: 2, After: 1, Offset: -1},
		"usage":          {Sequence: 2, After: 1, Usage: &protocol.Usage{TotalTokens: -1}},
		"text":           {Sequence: 2, After: 1, Text: "\xff"},
		"reasoning":      {Sequence: 2, After: 1, Reasoning: &protocol.AppendReasoning{Offset: -1}},
		"reasoning text": {Sequence: 2, After: 1, Reasoning: &protocol.AppendReasoning{Text: "\xff"}},
	} {
		t.Run(name, func(t *testing.T) {
			dst := []byte("keep")
			out, err := protocol.AppendAppendLine(dst, &a)
			if !errors.Is(err, protocol.ErrInvalidAppend) || string(out) != "keep" {
				t.Fatalf("AppendAppendLine = %q, %v", out, err)
			}
		})
	}
}

func TestCompactCursor(t *testing.T) {
	ap := func(seq, after, offset int64, text string) []byte {
		return appendLine(t, protocol.Append{Sequence: seq, After: after, Offset: offset, Text: text})
	}
	type step struct {
		line    []byte
		changed bool
		err     error
		content string // after the step
		seq     int64
	}
	for name, steps := range map[string][]step{
		"appends between snapshots": {
			{line: snapshotLine(t, 2, protocol.StatusStreaming, "ab"), changed: true, content: "ab", seq: 2},
			{line: ap(3, 2, 2, "cd"), changed: true, content: "abcd", seq: 3},
			{line: ap(4, 3, 4, "é😀"), changed: true, content: "abcdé😀", seq: 4},
			{line: ap(5, 4, 7, "!"), changed: true, content: "abcdé😀!", seq: 5},
			{line: snapshotLine(t, 6, protocol.StatusComplete, "abcdé😀!"), changed: true, content: "abcdé😀!", seq: 6},
		},
		"a duplicate is never applied twice": {
			{line: snapshotLine(t, 2, protocol.StatusStreaming, "a"), changed: true, content: "a", seq: 2},
			{line: ap(3, 2, 1, "b"), changed: true, content: "ab", seq: 3},
			{line: ap(3, 2, 1, "b"), content: "ab", seq: 3},
			{line: snapshotLine(t, 3, protocol.StatusStreaming, "ab"), content: "ab", seq: 3},
		},
		"a gap waits for the next complete snapshot": {
			{line: snapshotLine(t, 2, protocol.StatusStreaming, "a"), changed: true, content: "a", seq: 2},
			{line: ap(4, 3, 2, "c"), err: protocol.ErrAppendGap, content: "a", seq: 2},
			{line: ap(5, 4, 3, "d"), err: protocol.ErrAppendGap, content: "a", seq: 2},
			{line: snapshotLine(t, 5, protocol.StatusStreaming, "abcd"), changed: true, content: "abcd", seq: 5},
			{line: ap(6, 5, 4, "e"), changed: true, content: "abcde", seq: 6},
		},
		"wrong base: offset": {
			{line: snapshotLine(t, 2, protocol.StatusStreaming, "a"), changed: true, content: "a", seq: 2},
			{line: ap(3, 2, 0, "b"), err: protocol.ErrAppendGap, content: "a", seq: 2},
		},
		"wrong base: terminal snapshot held": {
			{line: snapshotLine(t, 2, protocol.StatusComplete, "a"), changed: true, content: "a", seq: 2},
			{line: ap(3, 2, 1, "b"), err: protocol.ErrAppendGap, content: "a", seq: 2},
		},
		"nothing held": {
			{line: ap(3, 2, 0, "b"), err: protocol.ErrAppendGap, seq: -1},
		},
		"malformed append line": {
			{line: snapshotLine(t, 2, protocol.StatusStreaming, "a"), changed: true, content: "a", seq: 2},
			{line: []byte(`{"protocol":"agentskit.chat.turn","version":1,"event":"turnstream.turn.append","sequence":"3"}`), err: protocol.ErrInvalidAppend, content: "a", seq: 2},
		},
		"another session's snapshots are ignored": {
			{line: snapshotLine(t, 2, protocol.StatusStreaming, "a"), changed: true, content: "a", seq: 2},
			{line: bytes.Replace(snapshotLine(t, 3, protocol.StatusStreaming, "ab"), []byte(`"s1"`), []byte(`"s2"`), 1), content: "a", seq: 2},
		},
		"other lines are ignored": {
			{line: []byte(`{`), seq: -1},
			{line: []byte(`{"protocol":"agentskit.chat.turn","version":1,"event":"server.turn.future"}`), seq: -1},
		},
	} {
		t.Run(name, func(t *testing.T) {
			c, err := protocol.NewCompactCursor("s1")
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range steps {
				changed, err := c.Apply(s.line)
				if changed != s.changed || !errors.Is(err, s.err) || (s.err == nil && err != nil) {
					t.Fatalf("step %d: Apply = %v, %v; want %v, %v", i, changed, err, s.changed, s.err)
				}
				if got := c.Sequence(); got != s.seq {
					t.Fatalf("step %d: sequence %d, want %d", i, got, s.seq)
				}
				if snap := c.Snapshot(); snap != nil && snap.Snapshot.Messages[1].Content != s.content {
					t.Fatalf("step %d: content %q, want %q", i, snap.Snapshot.Messages[1].Content, s.content)
				}
			}
		})
	}
	if _, err := protocol.NewCompactCursor("not a safe id"); !errors.Is(err, protocol.ErrInvalidSessionID) {
		t.Fatalf("NewCompactCursor: %v", err)
	}
}

// TestCompactCursorApplyEvent: a decoded snapshot is taken as its line
// is, as a copy, and an append line then applies to it.
func TestCompactCursorApplyEvent(t *testing.T) {
	c, _ := protocol.NewCompactCursor("s1")
	ev, diag := protocol.DecodeTurnEvent(snapshotLine(t, 2, protocol.StatusStreaming, "a"))
	if diag != nil {
		t.Fatal(diag.Code)
	}
	if !c.ApplyEvent(ev) || c.ApplyEvent(ev) {
		t.Fatal("ApplyEvent: want the snapshot taken once")
	}
	ev.Snapshot.Messages[1].Content = "changed by its caller"
	if changed, err := c.Apply(appendLine(t, protocol.Append{Sequence: 3, After: 2, Offset: 1, Text: "b"})); !changed || err != nil {
		t.Fatalf("append after ApplyEvent: %v %v", changed, err)
	}
	if got := c.Snapshot().Snapshot.Messages[1].Content; got != "ab" {
		t.Errorf("content %q, want ab", got)
	}
	other := *ev
	other.SessionID, other.Sequence = "s2", 9
	if c.ApplyEvent(&other) || c.ApplyEvent(nil) {
		t.Error("ApplyEvent took another session's snapshot or nil")
	}
}

// Every cut of an open append line yields a prefix of its text, never a
// broken character or escape, and the whole text once the closing quote
// has arrived.
func TestDecodePartialAppendAtEveryCut(t *testing.T) {
	text := "ab \"q\" \\ é 😀\n\t\u0001 end"
	line := appendLine(t, protocol.Append{Sequence: 3, After: 2, Offset: 1, Text: text})
	c, _ := protocol.NewCompactCursor("s1")
	if _, err := c.Apply(snapshotLine(t, 2, protocol.StatusStreaming, "a")); err != nil {
		t.Fatal(err)
	}
	open := strings.Index(string(line), `"text":"`) + len(`"text":"`)
	last := ""
	for cut := 0; cut < len(line); cut++ {
		a, ok := protocol.DecodePartialAppend(line[:cut])
		if cut < open {
			if ok {
				t.Fatalf("cut %d: decoded a line whose text member has not begun", cut)
			}
			continue
		}
		if !ok || !strings.HasPrefix(text, a.Text) || len(a.Text) < len(last) {
			t.Fatalf("cut %d: %v %q (last %q)", cut, ok, a.Text, last)
		}
		last = a.Text
		p, ok := c.Provisional(line[:cut])
		if !ok || p != "a"+a.Text {
			t.Fatalf("cut %d: provisional %q %v", cut, p, ok)
		}
	}
	if last != text {
		t.Fatalf("at the last cut: %q", last)
	}
	if _, ok := protocol.DecodePartialAppend([]byte(`{"protocol":"agentskit.chat.turn","version":1,"event":"turnstream.turn.append","sequence":3,"after":2,"offset":1,"text":"` + "\x01")); ok {
		t.Fatal("a raw control byte in the text must not decode")
	}
	if _, ok := c.Provisional(appendLine(t, protocol.Append{Sequence: 3, After: 1, Offset: 1})); ok {
		t.Fatal("a line of another base has no provisional text")
	}
}

// BenchmarkAppendLine measures the compact encoder on one open line: its
// header and 20-byte pieces of text (50 ms of a 400 B/s model), the
// writer's pattern, into a reused buffer.
func BenchmarkAppendLine(b *testing.B) {
	a := &protocol.Append{Sequence: 1234, After: 1233, Offset: 40000}
	piece := "lorem ipsum dolor s "
	b.ReportAllocs()
	var buf []byte
	for b.Loop() {
		buf, _ = protocol.AppendAppendOpen(buf[:0], a)
		for range 20 {
			buf, _ = protocol.AppendAppendText(buf, piece)
		}
		buf = append(buf, protocol.AppendClose...)
	}
	b.SetBytes(int64(len(buf)))
}

// BenchmarkCompactCursorApply measures the decoder side: one append line
// applied to a held 16 KB state.
func BenchmarkCompactCursorApply(b *testing.B) {
	content := strings.Repeat("x", 16<<10)
	snap := snapshotLine(b, 2, protocol.StatusStreaming, content)
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		c, _ := protocol.NewCompactCursor("s1")
		if _, err := c.Apply(snap); err != nil {
			b.Fatal(err)
		}
		line := appendLine(b, protocol.Append{Sequence: 3, After: 2, Offset: int64(len(content)), Text: "lorem ipsum dolor s lorem ipsum dolor s"})
		b.StartTimer()
		if ok, err := c.Apply(line); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}

//go:embed testdata/compact.json
var compactCases []byte

// TestAppendFixtures decodes the shared append line fixtures (also read
// by the JavaScript decoder's tests, clients/js/test/compact.test.mjs).
func TestAppendFixtures(t *testing.T) {
	var file struct {
		Cases []struct {
			Name   string `json:"name"`
			Line   string `json:"line"`
			Append *struct {
				Sequence, After, Offset int64
				Usage                   *protocol.Usage
				Reasoning               *protocol.AppendReasoning
				Text                    string
			} `json:"append"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(compactCases, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Cases) < 10 {
		t.Fatalf("%d cases", len(file.Cases))
	}
	for _, c := range file.Cases {
		t.Run(c.Name, func(t *testing.T) {
			got, err := protocol.DecodeAppend([]byte(c.Line))
			if c.Append == nil {
				if !errors.Is(err, protocol.ErrInvalidAppend) {
					t.Fatalf("DecodeAppend = %+v, %v; want ErrInvalidAppend", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			w := c.Append
			if got.Sequence != w.Sequence || got.After != w.After || got.Offset != w.Offset || got.Text != w.Text ||
				(got.Usage == nil) != (w.Usage == nil) || (w.Usage != nil && *got.Usage != *w.Usage) ||
				(got.Reasoning == nil) != (w.Reasoning == nil) || (w.Reasoning != nil && *got.Reasoning != *w.Reasoning) {
				t.Fatalf("decoded %+v, want %+v", got, w)
			}
		})
	}
}

// TestCompactCursorReasoning: an append line's reasoning extends the
// streaming message's metadata.reasoning (created when absent, the other
// members kept), checked against its own offset; a wrong reasoning offset
// is a gap that changes nothing.
func TestCompactCursorReasoning(t *testing.T) {
	c, _ := protocol.NewCompactCursor("s1")
	snap := snapshotLine(t, 2, protocol.StatusStreaming, "")
	if ok, err := c.Apply(snap); !ok || err != nil {
		t.Fatalf("snapshot: %v %v", ok, err)
	}
	steps := []struct {
		a    protocol.Append
		err  error
		r, s string // reasoning and content after the step
	}{
		{protocol.Append{Sequence: 3, After: 2, Reasoning: &protocol.AppendReasoning{Offset: 0, Text: "First é😀"}}, nil, "First é😀", ""},
		{protocol.Append{Sequence: 4, After: 3, Reasoning: &protocol.AppendReasoning{Offset: 9, Text: ", then"}, Text: "An"}, nil, "First é😀, then", "An"},
		{protocol.Append{Sequence: 5, After: 4, Offset: 2, Reasoning: &protocol.AppendReasoning{Offset: 3, Text: "x"}}, protocol.ErrAppendGap, "First é😀, then", "An"},
		{protocol.Append{Sequence: 5, After: 4, Offset: 2, Text: "swer"}, nil, "First é😀, then", "Answer"},
	}
	for i, s := range steps {
		_, err := c.Apply(appendLine(t, s.a))
		if !errors.Is(err, s.err) || s.err == nil && err != nil {
			t.Fatalf("step %d: %v, want %v", i, err, s.err)
		}
		m := c.Snapshot().Snapshot.Messages[1]
		if got := protocol.MessageReasoning(m); got != s.r || m.Content != s.s {
			t.Fatalf("step %d: reasoning %q, content %q; want %q, %q", i, got, m.Content, s.r, s.s)
		}
	}
	// Other metadata members stay, in name order as the server writes them.
	c2, _ := protocol.NewCompactCursor("s1")
	ev, _ := protocol.DecodeTurnEvent(snap)
	ev.Snapshot.Messages[1].Metadata = json.RawMessage(`{"toolRounds":[{"textEnd":0,"toolCalls":1}],"errorCode":""}`)
	c2.ApplyEvent(ev)
	if _, err := c2.Apply(appendLine(t, protocol.Append{Sequence: 3, After: 2, Reasoning: &protocol.AppendReasoning{Text: "r"}})); err != nil {
		t.Fatal(err)
	}
	if got := string(c2.Snapshot().Snapshot.Messages[1].Metadata); got != `{"errorCode":"","reasoning":"r","toolRounds":[{"textEnd":0,"toolCalls":1}]}` {
		t.Errorf("metadata %s", got)
	}
}
