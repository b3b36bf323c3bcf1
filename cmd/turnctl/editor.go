package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/rivo/uniseg"
)

// promptYou is the prompt of a message in turnctl chat.
const promptYou = "you> "

// errInterrupted is the answer of lineSource.line to Ctrl-C typed at a
// prompt: the session ends, as Ctrl-C ends a program waiting at a prompt.
var errInterrupted = errors.New("interrupted at the prompt")

// lineSource gives turnctl chat its input, one line at a time.
type lineSource interface {
	// line shows prompt (nothing when "") and returns the next line,
	// without its line ending. It fails with io.EOF at the end of the
	// input, errInterrupted on Ctrl-C at a terminal's prompt, or the
	// read's error.
	line(prompt string) (string, error)
}

// scanSource reads lines with a bufio.Scanner: piped input, or a
// terminal where the terminal edits the line (lineEditor is not used).
type scanSource struct {
	in *bufio.Scanner
	w  io.Writer // where the prompt is printed
}

func newScanSource(r io.Reader, prompts io.Writer) *scanSource {
	in := bufio.NewScanner(r)
	in.Buffer(make([]byte, 64<<10), maxLineBytes)
	return &scanSource{in: in, w: prompts}
}

func (s *scanSource) line(prompt string) (string, error) {
	if prompt != "" {
		_, _ = io.WriteString(s.w, prompt)
	}
	if !s.in.Scan() {
		if err := s.in.Err(); err != nil {
			return "", err
		}
		return "", io.EOF
	}
	return strings.TrimRight(s.in.Text(), "\r"), nil
}

// typeahead is what was typed while a turn streams: the lines ended with
// Enter, oldest first, each the input of a turn to come, and the line
// being typed. The live renderer draws it under the turn's block.
type typeahead struct {
	lines   []string
	partial string
}

// empty reports whether nothing was typed.
func (t typeahead) empty() bool { return len(t.lines) == 0 && t.partial == "" }

// clone returns a copy of t that later typing does not change.
func (t typeahead) clone() typeahead {
	return typeahead{lines: slices.Clone(t.lines), partial: t.partial}
}

// rows returns t as the live block draws it: a "you> " row per line, the
// line being typed last and not ended by "\n" (the cursor stays at its
// end), escaped for the terminal.
func (t typeahead) rows() string {
	var b strings.Builder
	for _, l := range t.lines {
		b.WriteString(promptYou + escapeText(l, false) + "\n")
	}
	if t.partial != "" {
		b.WriteString(promptYou + escapeText(t.partial, false))
	}
	return b.String()
}

// lineEditor reads a terminal for the whole of an interactive turnctl chat
// session and edits the line being typed itself, the terminal in edit
// mode (no echo, each byte as typed). Between turns it is the prompt's
// line editor; while a turn streams, what is typed is handed to the
// turn's renderer, which draws it as the last rows of its live block
// instead of letting the echo land in the middle of the block, and it is
// carried to the next prompt: a line ended while the turn streamed is the
// next turn's input, a line not ended is the next prompt's text.
//
// Keys: printable text and Tab are typed at the end of the line; Enter
// ends it; Backspace deletes the last character (a grapheme cluster);
// Ctrl-U deletes the line, Ctrl-W the last word; Ctrl-D on an empty line
// is the end of the input; Ctrl-C at a prompt ends the session, and while
// a turn streams is the terminal's interrupt (see signals); escape
// sequences (arrow and function keys) are ignored. A line longer than
// maxLineBytes keeps its first maxLineBytes bytes.
type lineEditor struct {
	out   io.Writer // the terminal's output
	width int       // its width in columns
	mode  *editMode

	mu      sync.Mutex
	changed *sync.Cond // signalled when mu's state changed
	typed   typeahead
	eof     bool  // Ctrl-D on an empty line
	intr    bool  // Ctrl-C at a prompt
	err     error // the terminal's read failed
	// prompt is the prompt being shown ("" while a turn streams) and
	// promptRows the rows the prompt and the line occupy, the cursor at
	// their end.
	prompt     string
	promptRows int
	show       func(typeahead) // during a turn: the renderer's typing
	onIntr     func()          // Ctrl-C typed during a turn (whileBusy)
	dec        inputDecoder
}

// newLineEditor switches in, a terminal, to edit mode and starts reading
// it; close puts the terminal back. out is the terminal's output, width
// columns wide. It fails when in cannot be switched (not a terminal, or
// a platform without edit mode).
func newLineEditor(in *os.File, out io.Writer, width int) (*lineEditor, error) {
	mode, err := enterEditMode(in)
	if err != nil {
		return nil, err
	}
	e := newEditor(out, width)
	e.mode = mode
	go e.read(in)
	return e, nil
}

// newEditor returns an editor drawing on out, width columns wide, that
// reads nothing yet and switches no terminal mode (tests feed read).
func newEditor(out io.Writer, width int) *lineEditor {
	e := &lineEditor{out: out, width: width}
	e.changed = sync.NewCond(&e.mu)
	return e
}

// close puts the terminal back in the mode it had. The reading goroutine
// stays blocked on the terminal until the process ends or in is closed.
func (e *lineEditor) close() {
	if e.mode != nil {
		_ = e.mode.restore()
	}
}

// read feeds what the terminal delivers to the editor until it fails.
func (e *lineEditor) read(in io.Reader) {
	buf := make([]byte, 4096)
	for {
		n, err := in.Read(buf)
		e.mu.Lock()
		for _, k := range e.dec.keys(buf[:n]) {
			e.key(k)
		}
		if err != nil {
			e.err = err
		}
		e.refresh()
		e.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// key applies one decoded key to the typed text. e.mu is held.
func (e *lineEditor) key(k key) {
	t := &e.typed
	switch k.ctrl {
	case 0:
		if len(t.partial)+len(k.text) <= maxLineBytes {
			t.partial += k.text
		}
	case '\n':
		t.lines = append(t.lines, t.partial)
		t.partial = ""
	case 0x7f:
		t.partial = trimLastGrapheme(t.partial)
	case 'U' & 0x1f:
		t.partial = ""
	case 'W' & 0x1f:
		p := strings.TrimRight(t.partial, " \t")
		t.partial = p[:strings.LastIndexAny(p, " \t")+1]
	case 'D' & 0x1f:
		if t.partial == "" && len(t.lines) == 0 {
			e.eof = true
		}
	case 'C' & 0x1f: // a byte only while the signal keys are off
		if e.prompt == "" && e.onIntr != nil {
			e.onIntr()
		} else { // at a prompt, or the next one
			e.intr = true
		}
	}
}

// refresh shows the typed text where it is shown now (the prompt's line
// or the turn's block) and wakes a waiting line. e.mu is held.
func (e *lineEditor) refresh() {
	switch {
	case e.prompt != "" && len(e.typed.lines) == 0: // else line shows the line ended
		e.drawPrompt(e.typed.partial)
	case e.show != nil:
		e.show(e.typed.clone())
	}
	e.changed.Broadcast()
}

// drawPrompt redraws the prompt's line showing text, over what it showed.
func (e *lineEditor) drawPrompt(text string) {
	var b strings.Builder
	if e.promptRows > 1 {
		_, _ = fmt.Fprintf(&b, "\x1b[%dA", e.promptRows-1)
	}
	if e.promptRows > 0 {
		b.WriteString("\r\x1b[J")
	}
	shown := e.prompt + escapeText(text, false)
	b.WriteString(shown)
	_, _ = io.WriteString(e.out, b.String())
	e.promptRows = physicalLines(shown, e.width)
}

// line shows prompt followed by the line typed so far and returns the
// line once Enter ends it, leaving the cursor at the start of the next
// row. A line ended while a turn streamed is returned at once, shown
// after the prompt.
func (e *lineEditor) line(prompt string) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.prompt, e.promptRows = prompt, 0
	defer func() { e.prompt = "" }()
	e.drawPrompt(e.typed.partial)
	for {
		switch t := &e.typed; {
		case len(t.lines) > 0:
			l := t.lines[0]
			t.lines = t.lines[1:]
			e.drawPrompt(l)
			_, _ = io.WriteString(e.out, "\n")
			return l, nil
		case e.intr:
			e.intr = false
			return "", errInterrupted
		case e.eof:
			return "", io.EOF
		case e.err != nil:
			if e.err == io.EOF {
				return "", io.EOF
			}
			return "", e.err
		}
		e.changed.Wait()
	}
}

// typing hands what is typed from now on to show, the live renderer of
// a turn, starting with what was typed before; the returned function
// ends it.
func (e *lineEditor) typing(show func(typeahead)) (end func()) {
	e.mu.Lock()
	e.show = show
	if !e.typed.empty() {
		show(e.typed.clone())
	}
	e.mu.Unlock()
	return func() {
		e.mu.Lock()
		e.show = nil
		e.mu.Unlock()
	}
}

// signals turns the terminal's signal keys on, Ctrl-C becoming a SIGINT
// instead of a byte read; the returned function turns them off. Call it
// once SIGINT is handled (watchInterrupts), and end it before that
// handling stops.
func (e *lineEditor) signals() (end func()) {
	if e.mode == nil {
		return func() {}
	}
	_ = e.mode.signals(true)
	return func() { _ = e.mode.signals(false) }
}

// whileBusy makes Ctrl-C, while the signal keys are off, call quit
// instead of ending the next prompt: during a turn's upload and submit,
// before SIGINT is handled; the returned function ends it.
func (e *lineEditor) whileBusy(quit func()) (end func()) {
	e.mu.Lock()
	e.onIntr = quit
	e.mu.Unlock()
	return func() {
		e.mu.Lock()
		e.onIntr = nil
		e.mu.Unlock()
	}
}

// trimLastGrapheme returns s without its last grapheme cluster.
func trimLastGrapheme(s string) string {
	last, state := 0, -1
	for rest, pos := s, 0; rest != ""; {
		var c string
		c, rest, _, state = uniseg.FirstGraphemeClusterInString(rest, state)
		last = pos
		pos += len(c)
	}
	return s[:last]
}

// key is one key decoded from a terminal's input: text typed (ctrl 0),
// or a control key: '\n' (Enter), 0x7f (Backspace), or the control
// character of Ctrl-C, Ctrl-D, Ctrl-U, Ctrl-W.
type key struct {
	text string
	ctrl byte
}

// inputDecoder turns a terminal's bytes into keys, across reads: UTF-8
// split between reads is joined, escape sequences are dropped, invalid
// bytes become U+FFFD.
type inputDecoder struct {
	pending []byte // an incomplete UTF-8 sequence
	state   int    // 0 text, 1 after ESC, 2 in a control sequence
}

func (d *inputDecoder) keys(b []byte) []key {
	var ks []key
	var text []byte
	flush := func() {
		if len(text) > 0 {
			ks = append(ks, key{text: string(text)})
			text = text[:0]
		}
	}
	for _, c := range b {
		switch {
		case d.state == 1: // ESC [ or ESC O start a sequence; anything else ends it
			d.state = 0
			if c == '[' || c == 'O' {
				d.state = 2
			}
			continue
		case d.state == 2:
			if c >= 0x40 && c <= 0x7e { // a final byte
				d.state = 0
			}
			continue
		case len(d.pending) > 0 && c >= 0x80 && c <= 0xbf:
			d.pending = append(d.pending, c)
			if utf8.FullRune(d.pending) {
				text = appendRune(text, d.pending)
				d.pending = d.pending[:0]
			}
			continue
		case len(d.pending) > 0: // a sequence cut short
			text = utf8.AppendRune(text, utf8.RuneError)
			d.pending = d.pending[:0]
		}
		switch {
		case c >= 0x80:
			d.pending = append(d.pending, c)
			if utf8.FullRune(d.pending) { // an invalid lead byte
				text = appendRune(text, d.pending)
				d.pending = d.pending[:0]
			}
		case c >= 0x20 && c != 0x7f, c == '\t':
			text = append(text, c)
		case c == 0x1b:
			flush()
			d.state = 1
		case c == '\r' || c == '\n':
			flush()
			ks = append(ks, key{ctrl: '\n'})
		case c == 0x7f || c == 0x08:
			flush()
			ks = append(ks, key{ctrl: 0x7f})
		case c == 'C'&0x1f, c == 'D'&0x1f, c == 'U'&0x1f, c == 'W'&0x1f:
			flush()
			ks = append(ks, key{ctrl: c})
		}
	}
	flush()
	return ks
}

// appendRune appends the rune p encodes, U+FFFD when p is not one.
func appendRune(text, p []byte) []byte {
	r, _ := utf8.DecodeRune(p)
	return utf8.AppendRune(text, r)
}
