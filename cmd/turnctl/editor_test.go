package main

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/pkg/protocol"
)

func TestInputDecoder(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reads []string
		want  []key
	}{
		{"text and Enter", []string{"hi there\r"}, []key{{text: "hi there"}, {ctrl: '\n'}}},
		{"line feed is Enter too", []string{"a\nb"}, []key{{text: "a"}, {ctrl: '\n'}, {text: "b"}}},
		{"UTF-8 split between reads", []string{"caf\xc3", "\xa9 \xe2\x82", "\xac"}, []key{{text: "caf"}, {text: "é "}, {text: "€"}}},
		{"invalid bytes", []string{"a\xffb\xc3c"}, []key{{text: "a\ufffdb\ufffdc"}}},
		{"arrow and function keys dropped", []string{"a\x1b[A\x1b[1;5Cb\x1bOPc\x1b", "[Bd"}, []key{{text: "a"}, {text: "b"}, {text: "c"}, {text: "d"}}},
		{"alt-key dropped", []string{"\x1bxy"}, []key{{text: "y"}}},
		{"editing keys", []string{"ab\x7f\x08\x15\x17"}, []key{{text: "ab"}, {ctrl: 0x7f}, {ctrl: 0x7f}, {ctrl: 0x15}, {ctrl: 0x17}}},
		{"Ctrl-C and Ctrl-D", []string{"\x03\x04"}, []key{{ctrl: 0x03}, {ctrl: 0x04}}},
		{"other controls dropped, Tab kept", []string{"a\x00\x07\tb\x1c\x1a"}, []key{{text: "a\tb"}}},
		{"C1 bytes alone are invalid", []string{"\x9b2J"}, []key{{text: "\ufffd2J"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d inputDecoder
			var got []key
			for _, r := range tc.reads {
				got = append(got, d.keys([]byte(r))...)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("keys %q, want %q", got, tc.want)
			}
		})
	}
}

func TestLineEditorKeys(t *testing.T) {
	e := &lineEditor{}
	apply := func(s string) {
		for _, k := range e.dec.keys([]byte(s)) {
			e.key(k)
		}
	}
	apply("hello wor\x7fld")
	if e.typed.partial != "hello wold" {
		t.Fatalf("partial %q", e.typed.partial)
	}
	apply("\x17\x17x")
	if e.typed.partial != "x" {
		t.Fatalf("after two Ctrl-W: %q", e.typed.partial)
	}
	apply("\x15e\u0301\U0001F1EB\U0001F1F7\x7f") // Backspace deletes a flag's two code points
	if e.typed.partial != "e\u0301" {
		t.Fatalf("after Ctrl-U and Backspace: %q", e.typed.partial)
	}
	apply("\x7f\x7f\x04") // Backspace on an empty line does nothing; Ctrl-D ends the input
	if e.typed.partial != "" || !e.eof {
		t.Fatalf("partial %q, eof %v", e.typed.partial, e.eof)
	}
	e.eof = false
	apply("one\rtwo\r\x04thr")
	if !slices.Equal(e.typed.lines, []string{"one", "two"}) || e.typed.partial != "thr" || e.eof {
		t.Fatalf("typed %+v eof %v: want two lines, thr, and no end (Ctrl-D after text is ignored)", e.typed, e.eof)
	}
}

// TestLineEditorPrompt runs line over a scripted input: the prompt is
// redrawn in place as the line is edited, and Ctrl-C and Ctrl-D end it.
func TestLineEditorPrompt(t *testing.T) {
	for _, tc := range []struct {
		name, input string
		want        string
		err         error
		screen      string
	}{
		{"edited line", "helo\x7flo\r", "hello", nil, "you> hello"},
		{"Ctrl-C", "abc\x03", "", errInterrupted, "you> abc"},
		{"Ctrl-D", "\x04", "", io.EOF, "you>"},
		{"end of input", "ab", "", io.EOF, "you> ab"},
		{"escaped text", "a\u202eb\r", "a\u202eb", nil, `you> a\u202eb`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			e := newEditor(&out, 20)
			done := make(chan struct{})
			go func() { defer close(done); e.read(strings.NewReader(tc.input)) }()
			got, err := e.line(promptYou)
			<-done
			if got != tc.want || !errors.Is(err, tc.err) {
				t.Errorf("line %q, %v; want %q, %v", got, err, tc.want, tc.err)
			}
			s := newScreen(t, 20)
			s.write(out.String())
			if s.text() != tc.screen {
				t.Errorf("screen %q, want %q", s.text(), tc.screen)
			}
		})
	}
}

// TestLineEditorPromptWraps: a line longer than the terminal is redrawn
// over all its rows.
func TestLineEditorPromptWraps(t *testing.T) {
	var out bytes.Buffer
	e := newEditor(&out, 10)
	go e.read(strings.NewReader("abcdefghijklmnopq\x7f\x7f\x7f\x7f\x7f\x7f\x7f\x7fZ\r"))
	got, err := e.line(promptYou)
	if err != nil || got != "abcdefghiZ" {
		t.Fatalf("line %q, %v", got, err)
	}
	s := newScreen(t, 10)
	s.write(out.String())
	if want := "you> abcde\nfghiZ"; s.text() != want {
		t.Errorf("screen %q, want %q", s.text(), want)
	}
}

// TestLiveRendererTyping: what is typed while a turn streams is drawn as
// the block's last rows, the cursor at the end of the line being typed;
// redraws keep it there, and the end of the turn takes it away (the next
// prompt shows it).
func TestLiveRendererTyping(t *testing.T) {
	var out bytes.Buffer
	r := &liveRenderer{w: &out, width: 44, height: 24}
	s := newScreen(t, 44) // the second snapshot's text wraps
	step := func(f func()) string {
		out.Reset()
		f()
		s.write(out.String())
		return s.text()
	}
	first := &protocol.Event{Kind: protocol.EventSnapshot, Sequence: 1, Snapshot: snapshot(protocol.StatusStreaming, "Hel", nil)}
	second := &protocol.Event{Kind: protocol.EventSnapshot, Sequence: 2, Snapshot: snapshot(protocol.StatusStreaming, "Hello there, a longer line that wraps", nil)}
	step(func() { r.event(nil, first) })
	block := s.text()
	got := step(func() { r.typing(typeahead{partial: "next q"}) })
	if want := block + "\nyou> next q"; got != want {
		t.Fatalf("typed row:\n%s\nwant\n%s", got, want)
	}
	if s.row != strings.Count(got, "\n") || s.col != len("you> next q") {
		t.Errorf("cursor at %d,%d; want at the end of the typed row", s.row, s.col)
	}
	got = step(func() { r.event(nil, second) })
	if !strings.HasSuffix(got, "\nyou> next q") || strings.Count(got, "you>") != 1 || !strings.Contains(got, "raps") {
		t.Fatalf("after a snapshot:\n%s", got)
	}
	got = step(func() { r.typing(typeahead{lines: []string{"next question"}, partial: "and \x1b[2J"}) })
	if !strings.HasSuffix(got, "\nyou> next question\nyou> and \\x1b[2J") {
		t.Fatalf("a line ended and one typed:\n%s", got)
	}
	got = step(func() { r.notice("stopping the turn") })
	if !strings.HasSuffix(got, "\nstopping the turn\nyou> next question\nyou> and \\x1b[2J") {
		t.Fatalf("a notice goes above the typed rows:\n%s", got)
	}
	got = step(r.done)
	if strings.Contains(got, "you>") || !strings.HasSuffix(got, "\nstopping the turn") || s.col != 0 {
		t.Fatalf("after the turn's end the typed rows move to the prompt:\n%s (cursor column %d)", got, s.col)
	}

	// Typed rows that would make the block as tall as the terminal wait
	// for the prompt; the block is still redrawn in place.
	out.Reset()
	r = &liveRenderer{w: &out, width: 30, height: 6}
	s = newScreen(t, 30)
	step(func() { r.event(nil, first) })
	block = s.text()
	if got := step(func() { r.typing(typeahead{lines: []string{"a", "b", "c"}}) }); got != block {
		t.Errorf("too tall with the typed rows:\n%s\nwant the block alone:\n%s", got, block)
	}
}

// BenchmarkLiveRendererTyping measures a redraw of the live block after a
// snapshot with and without a typed row under it (the cost of keeping the
// typed line while an answer streams).
func BenchmarkLiveRendererTyping(b *testing.B) {
	ev := &protocol.Event{Kind: protocol.EventSnapshot, Sequence: 2,
		Snapshot: snapshot(protocol.StatusStreaming, strings.Repeat("a reply of some length, ", 12), nil)}
	for _, bc := range []struct {
		name  string
		typed typeahead
	}{{"block", typeahead{}}, {"block+typed", typeahead{partial: "a question typed meanwhile"}}} {
		b.Run(bc.name, func(b *testing.B) {
			r := &liveRenderer{w: io.Discard, width: 80, height: 40, typed: bc.typed}
			for b.Loop() {
				r.event(nil, ev)
			}
		})
	}
}
