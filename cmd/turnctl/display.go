package main

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/rivo/uniseg"
)

// Text from a server (model output, tool names and arguments, artifact
// entry paths, stored history) is untrusted: printed raw, an escape
// sequence could clear the screen, move the cursor or recolour the
// terminal, a carriage return could overwrite what is shown, and a
// bidirectional override could make a line read differently from its
// bytes. Every such string goes through escapeText before it is printed.

// tabWidth is how many spaces a tab in server text becomes: a fixed
// expansion keeps the width of a line computable.
const tabWidth = 4

// escapeText returns s with everything a terminal would interpret made
// visible and inert:
//   - C0 controls but line feed (and tab, expanded to tabWidth spaces), DEL
//     and C1 controls (U+0080..U+009F, where U+009B is a CSI) become \xHH;
//   - bidirectional embeddings, overrides and isolates (U+202A..U+202E,
//     U+2066..U+2069) and the line and paragraph separators U+2028,
//     U+2029 become \uHHHH;
//   - with multiline false, line feeds become \n as well (single-line
//     fields: names, paths, statuses).
//
// A backslash is kept as is: the escapes are for reading, not for
// decoding back. Invalid UTF-8 bytes become U+FFFD.
func escapeText(s string, multiline bool) string {
	if isPlain(s, multiline) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for _, r := range s {
		switch {
		case r == '\n' && multiline:
			b.WriteByte('\n')
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(strings.Repeat(" ", tabWidth))
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
			fmt.Fprintf(&b, `\x%02x`, r)
		case isBidiControl(r) || r == '\u2028' || r == '\u2029':
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r) // utf8.RuneError for an invalid byte
		}
	}
	return b.String()
}

// isPlain reports whether escapeText(s, multiline) is s: the fast path.
func isPlain(s string, multiline bool) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if needsEscape(r, multiline) {
			return false
		}
	}
	return true
}

// needsEscape reports whether escapeText changes r.
func needsEscape(r rune, multiline bool) bool {
	switch {
	case r == '\n':
		return !multiline
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	}
	return isBidiControl(r) || r == '\u2028' || r == '\u2029'
}

// isBidiControl reports the explicit bidirectional formatting characters
// that reorder what follows them: LRE, RLE, PDF, LRO, RLO and the isolates
// LRI, RLI, FSI, PDI.
func isBidiControl(r rune) bool {
	return r >= '\u202a' && r <= '\u202e' || r >= '\u2066' && r <= '\u2069'
}

// displayWidth is the number of terminal columns s occupies (one line,
// already escaped): grapheme clusters measured by uniseg, so East Asian
// wide characters and emoji count 2, combining marks 0.
func displayWidth(s string) int { return uniseg.StringWidth(s) }

// physicalLines counts the terminal rows block (lines separated by "\n",
// an optional final "\n" not starting a row) occupies at width columns,
// the way a terminal wraps: a grapheme that does not fit in what is left
// of a row starts the next one, and a row filled exactly does not wrap
// until something more is written on it.
func physicalLines(block string, width int) int {
	if width < 1 {
		width = 80
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSuffix(block, "\n"), "\n") {
		n += rowsOf(line, width)
	}
	return n
}

// rowsOf returns the rows one line (no "\n") occupies at width columns.
func rowsOf(line string, width int) int {
	rows, col := 1, 0
	state := -1
	for len(line) > 0 {
		var w int
		_, line, w, state = uniseg.FirstGraphemeClusterInString(line, state)
		if w == 0 {
			continue
		}
		if col > 0 && col+w > width {
			rows++
			col = 0
		}
		col += w
	}
	return rows
}
