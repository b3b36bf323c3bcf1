package engine

import (
	"encoding/json"
	"reflect"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/clock"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// The compact stream (api.StreamModeHeader, turnstream extension,
// docs/compact.md) on POST / and on the resume route: "compact" asks for
// complete snapshots only at the start, at changes that are not appended
// text, and at the end, with append lines (protocol.EventAppend) between
// them; absent or "snapshots" is the default stream of complete snapshots.
// Values are matched case-insensitively; any other value, a repeated
// header included, is a 400 REQUEST_INVALID_HEADER before the body is
// read. A compact response carries the header back with "compact".

// DefaultCompactLineSpan is Config.CompactLineSpan's default.
const DefaultCompactLineSpan = time.Second

// parseStreamMode reads api.StreamModeHeader: it reports whether the compact
// stream was asked for, and false for ok on an invalid value.
func parseStreamMode(values []string) (compact, ok bool) {
	switch len(values) {
	case 0:
		return false, true
	case 1:
	default:
		return false, false
	}
	switch v := strings.TrimSpace(values[0]); {
	case strings.EqualFold(v, api.StreamModeSnapshots):
		return false, true
	case strings.EqualFold(v, api.StreamModeCompact):
		return true, true
	}
	return false, false
}

func compactCapabilities(opts Config) compactCapability {
	return compactCapability{
		Header: api.StreamModeHeader, Values: []string{api.StreamModeSnapshots, api.StreamModeCompact}, Default: api.StreamModeSnapshots,
		Event: protocol.EventAppend, IntervalMs: opts.SnapshotInterval.Milliseconds(), LineSpanMs: opts.CompactLineSpan.Milliseconds(),
		Doc: "docs/compact.md",
	}
}

// compactState is what a compact stream's client holds once it has read
// every byte written: the assistant message, its usage, and the sequence
// of that state. The live writer and a resume keep one each.
type compactState struct {
	assistant protocol.Message
	usage     protocol.Usage
	seq       int64
	length    int64 // UTF-16 code units of assistant.Content
	// reasoning is assistant's reasoning (api.MetadataReasoning),
	// reasoningLength its UTF-16 code units.
	reasoning       string
	reasoningLength int64
}

func newCompactState(seq int64, assistant protocol.Message, usage protocol.Usage) compactState {
	r := protocol.MessageReasoning(assistant)
	return compactState{assistant: assistant, usage: usage, seq: seq, length: utf16Len(assistant.Content),
		reasoning: r, reasoningLength: utf16Len(r)}
}

// appended returns the reasoning and the text that turn held into next,
// when next differs from held only by text appended to its reasoning
// (api.MetadataReasoning) and to its content (and its usage): the change
// an append line carries. Text that ends inside a UTF-8 sequence is cut
// before it (the rest follows later). ok=false for any other change: a
// complete snapshot carries it.
func appended(held compactState, next protocol.Message) (reasoning, text string, ok bool) {
	nextReasoning := protocol.MessageReasoning(next)
	if !strings.HasPrefix(next.Content, held.assistant.Content) || !strings.HasPrefix(nextReasoning, held.reasoning) {
		return "", "", false
	}
	a, b := held.assistant, next
	a.Content, b.Content = "", ""
	if nextReasoning != held.reasoning {
		a.Metadata, b.Metadata = withoutMember(a.Metadata, api.MetadataReasoning), withoutMember(b.Metadata, api.MetadataReasoning)
	}
	if !reflect.DeepEqual(a, b) {
		return "", "", false
	}
	reasoning, ok1 := wholeCharacters(nextReasoning[len(held.reasoning):])
	text, ok2 := wholeCharacters(next.Content[len(held.assistant.Content):])
	return reasoning, text, ok1 && ok2
}

// wholeCharacters returns delta cut before a UTF-8 sequence it ends
// inside of; ok=false when what is left is still not valid UTF-8.
func wholeCharacters(delta string) (string, bool) {
	for i := 0; i < utf8.UTFMax && delta != "" && !utf8.ValidString(delta); i++ {
		delta = delta[:len(delta)-1]
	}
	return delta, utf8.ValidString(delta)
}

// withoutMember returns the metadata object meta without member name (nil
// when nothing is left), as the turn writes metadata (members in name
// order); meta unchanged if it is not an object.
func withoutMember(meta json.RawMessage, name string) json.RawMessage {
	obj := map[string]json.RawMessage{}
	if len(meta) == 0 || json.Unmarshal(meta, &obj) != nil {
		return meta
	}
	delete(obj, name)
	if len(obj) == 0 {
		return nil
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return meta
	}
	return out
}

// utf16Len is the length of s in UTF-16 code units.
func utf16Len(s string) int64 {
	var n int64
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// compactWriter is the writer goroutine of a compact stream (see writer
// for the default one). After the first complete snapshot (held, written
// by streamTurn) it sends text as append lines: a line opens with its
// header and the new text, takes more text at most every SnapshotInterval
// while it is open, and closes after CompactLineSpan, when a look finds
// nothing new, before any other line, and when the lease can no longer be
// proven. A change that is not appended text (a tool call, metadata, the
// ordered content envelope) closes the line and goes out as a complete
// snapshot, paced as in the default mode (snapshotGap). Each closed line
// and each snapshot is remembered for checkpoints, so a resume's complete
// snapshot of a sequence is the state the live lines built. After a write
// failure (the client is gone, the turn goes on with checkpoints) the
// default writer takes over.
func (nw *ndjsonStream) compactWriter(first time.Time, held compactState) {
	t := nw.t
	handover := false
	defer func() {
		if !handover {
			close(t.out.done)
		}
	}()
	o, clk := t.h.opts, t.h.clock
	var (
		buf         []byte
		lastWrite   = first
		lastSnap    = first
		snapGap     = o.SnapshotInterval
		lastVersion uint64
		open        bool      // an append line is open
		openSeq     int64     // its sequence
		openedAt    time.Time // when it opened
		lastCalls   = toolCallStates(held.assistant.ToolCalls)
	)
	// closeLine ends the open line: its state is then held at openSeq.
	closeLine := func() {
		if !open {
			return
		}
		open = false
		firstText := held.assistant.Content != "" && nw.lastRememberedEmpty()
		held.seq = openSeq
		t.live.remember(openSeq, held.assistant, held.usage, firstText, false)
		t.out.write([]byte(protocol.AppendClose))
		lastWrite = clk.Now()
	}
	// sleep waits d, unless the final lines arrive first (then false).
	sleep := func(d time.Duration) bool {
		if d <= 0 {
			return true
		}
		timer := clk.NewTimer(d)
		defer timer.Stop()
		select {
		case lines := <-t.out.final:
			closeLine()
			t.out.write(lines)
			return false
		case <-timer.C():
			return true
		}
	}
	idle := clk.NewTimer(o.SnapshotInterval)
	defer idle.Stop()
	for {
		var look <-chan time.Time
		if open {
			// An open line is closed at the first look that finds nothing
			// new, so readers of whole lines see its text soon.
			idle.Reset(2 * o.SnapshotInterval)
			look = idle.C()
		}
		select {
		case lines := <-t.out.final:
			closeLine()
			t.out.write(lines)
			return
		case <-t.out.wake:
		case <-look:
		}
		if !sleep(o.SnapshotInterval - clock.Since(clk, lastWrite)) {
			return
		}
		if t.out.writeFailed {
			if t.h.opts.CheckpointInterval == 0 {
				return
			}
			handover = true
			nw.writer(lastWrite)
			return
		}
		v := t.state.view()
		now := clk.Now()
		if !t.lease.heldAt(now) {
			// The supervisor ends the turn; the open line ends now, within
			// the lease margin, and nothing else goes out meanwhile.
			closeLine()
			continue
		}
		if v.version == lastVersion {
			closeLine()
			continue
		}
		assistant := t.assistant(v, protocol.MessageStreaming, "")
		rdelta, delta, ok := appended(held, assistant)
		if !ok {
			closeLine()
			if !sleep(snapGap - clock.Since(clk, lastSnap)) {
				return
			}
			// The newest state after the wait.
			v = t.state.view()
			now = clk.Now()
			if !t.lease.heldAt(now) {
				continue
			}
			assistant = t.assistant(v, protocol.MessageStreaming, "")
			seq, ok := t.seqs.next()
			if !ok {
				continue // closed: the terminal lines are on their way
			}
			calls := toolCallStates(assistant.ToolCalls)
			t.live.remember(seq, assistant, v.usage, held.assistant.Content == "" && assistant.Content != "", calls != lastCalls)
			lastCalls, lastVersion = calls, v.version
			held = newCompactState(seq, assistant, v.usage)
			buf = t.lines.snapshotLineAt(buf[:0], now, seq, protocol.StatusStreaming, assistant, v.usage, nil)
			snapGap, lastSnap, lastWrite = t.lines.snapshotGap(len(buf)), clk.Now(), clk.Now()
			if !t.out.write(buf) && t.h.opts.CheckpointInterval == 0 {
				return
			}
			continue
		}
		usageChanged := v.usage != held.usage
		// Reasoning goes in a line's head: more of it starts a new line.
		if open && (usageChanged || rdelta != "" || clock.Since(clk, openedAt) >= o.CompactLineSpan) {
			closeLine()
		}
		if delta == "" && rdelta == "" && !usageChanged {
			continue // a partial character only: the rest follows
		}
		lastVersion = v.version
		buf = buf[:0]
		if !open {
			seq, ok := t.seqs.next()
			if !ok {
				continue
			}
			a := &protocol.Append{Sequence: seq, After: held.seq, Offset: held.length}
			if usageChanged {
				u := v.usage
				a.Usage = &u
			}
			if rdelta != "" {
				a.Reasoning = &protocol.AppendReasoning{Offset: held.reasoningLength, Text: rdelta}
			}
			var err error
			if buf, err = protocol.AppendAppendOpen(buf, a); err != nil {
				t.log.Error("append line encoding failed", "err", err)
				continue
			}
			open, openSeq, openedAt = true, seq, clk.Now()
			if rdelta != "" {
				// The held message takes the new reasoning: its metadata is
				// next's, which differs from held's only there (appended).
				held.assistant.Metadata = assistant.Metadata
				held.reasoning += rdelta
				held.reasoningLength += utf16Len(rdelta)
			}
		}
		buf, _ = protocol.AppendAppendText(buf, delta) // delta is valid UTF-8 (appended)
		held.assistant.Content += delta
		held.length += utf16Len(delta)
		held.usage = v.usage
		lastWrite = clk.Now()
		if !t.out.write(buf) && t.h.opts.CheckpointInterval == 0 {
			return
		}
	}
}

// lastRememberedEmpty reports whether the state last remembered for
// checkpoints had no assistant text: the first text is a moment a
// checkpoint must not miss.
func (nw *ndjsonStream) lastRememberedEmpty() bool {
	t := nw.t
	return t.live.latest().assistant.Content == ""
}

// compactResume is a resume stream's compact state: the state its last
// line left the client with, nil before the first line.
type compactResume struct {
	held *compactState
}

// line returns the line that takes the resumer from its held state to the
// streaming state (seq, assistant, usage): an append line when that state
// differs only by appended text, otherwise (and first) a complete
// snapshot.
func (c *compactResume) line(s *run, seq int64, assistant protocol.Message, usage protocol.Usage) []byte {
	defer func() { st := newCompactState(seq, assistant, usage); c.held = &st }()
	if c.held != nil && seq > c.held.seq {
		if rdelta, delta, ok := appended(*c.held, assistant); ok && c.held.assistant.Content+delta == assistant.Content &&
			c.held.reasoning+rdelta == protocol.MessageReasoning(assistant) {
			a := &protocol.Append{Sequence: seq, After: c.held.seq, Offset: c.held.length, Text: delta}
			if usage != c.held.usage {
				a.Usage = &usage
			}
			if rdelta != "" {
				a.Reasoning = &protocol.AppendReasoning{Offset: c.held.reasoningLength, Text: rdelta}
			}
			if line, err := protocol.AppendAppendLine(nil, a); err == nil {
				return line
			}
		}
	}
	return s.lines.snapshotLine(nil, seq, protocol.StatusStreaming, assistant, usage, nil)
}
