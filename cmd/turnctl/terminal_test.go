package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rivo/uniseg"

	"github.com/turnstream/turnstream/pkg/protocol"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/terminal")

// screen is a small model of a terminal: it applies what the live renderer
// writes (text, "\n", "\r", cursor up "ESC[nA", clear to the end of the
// screen "ESC[J") to a grid of cells width columns wide, wrapping like a
// VT100-style terminal: a grapheme that does not fit in the rest of a row
// starts the next one, and a row filled exactly wraps only when more is
// written on it. Rows never scroll away (the renderer never draws a block
// as tall as the terminal). Any other control byte fails the test: text
// from the server must reach the terminal escaped.
type screen struct {
	t           *testing.T
	width       int
	rows        [][]string // one entry per cell; "" is blank, a wide grapheme's second cell is "\x00"
	row, col    int
	pendingWrap bool
}

func newScreen(t *testing.T, width int) *screen {
	return &screen{t: t, width: width, rows: [][]string{nil}}
}

func (s *screen) ensureRow() {
	for len(s.rows) <= s.row {
		s.rows = append(s.rows, nil)
	}
}

func (s *screen) write(out string) {
	s.t.Helper()
	state := -1
	for len(out) > 0 {
		if out[0] < 0x20 || out[0] == 0x7f {
			state = -1 // a control ends any grapheme cluster
		}
		switch {
		case out[0] == '\n': // the tty's output processing adds the CR
			s.row++
			s.col, s.pendingWrap = 0, false
			s.ensureRow()
			out = out[1:]
		case out[0] == '\r':
			s.col, s.pendingWrap = 0, false
			out = out[1:]
		case out[0] == 0x1b:
			end := strings.IndexAny(out, "AJ")
			if !strings.HasPrefix(out, "\x1b[") || end < 0 {
				s.t.Fatalf("unexpected escape sequence %q", out[:min(len(out), 8)])
			}
			param, final := out[2:end], out[end]
			out = out[end+1:]
			switch final {
			case 'A':
				n, err := strconv.Atoi(param)
				if err != nil || n < 1 {
					s.t.Fatalf("bad cursor up %q", param)
				}
				s.row = max(0, s.row-n)
				s.pendingWrap = false
			case 'J':
				if param != "" {
					s.t.Fatalf("clear %q, want ESC[J", param)
				}
				s.ensureRow()
				s.rows[s.row] = truncateCells(s.rows[s.row], s.col)
				s.rows = s.rows[:s.row+1]
			}
		case out[0] < 0x20 || out[0] == 0x7f:
			s.t.Fatalf("control byte %#x reached the terminal", out[0])
		default:
			var cluster string
			var w int
			cluster, out, w, state = uniseg.FirstGraphemeClusterInString(out, state)
			for _, r := range cluster {
				if r >= 0x80 && r <= 0x9f || isBidiControl(r) {
					s.t.Fatalf("control character %U reached the terminal", r)
				}
			}
			s.put(cluster, w)
		}
	}
}

func (s *screen) put(cluster string, w int) {
	if w == 0 { // a lone combining mark: joins the previous cell
		s.ensureRow()
		if r := s.rows[s.row]; s.col > 0 && s.col <= len(r) {
			r[s.col-1] += cluster
		}
		return
	}
	if s.pendingWrap || s.col+w > s.width {
		s.row++
		s.col, s.pendingWrap = 0, false
	}
	s.ensureRow()
	r := s.rows[s.row]
	for len(r) < s.col+w {
		r = append(r, "")
	}
	r[s.col] = cluster
	for i := 1; i < w; i++ {
		r[s.col+i] = "\x00"
	}
	s.rows[s.row] = r
	s.col += w
	if s.col == s.width { // the cursor stays on the last column until more is written
		s.pendingWrap = true
	}
}

func truncateCells(r []string, n int) []string {
	if len(r) > n {
		return r[:n]
	}
	return r
}

// text returns the screen as lines, trailing blank lines and cells
// dropped.
func (s *screen) text() string {
	var lines []string
	for _, r := range s.rows {
		var b strings.Builder
		for _, c := range r {
			switch c {
			case "":
				b.WriteByte(' ')
			case "\x00":
			default:
				b.WriteString(c)
			}
		}
		lines = append(lines, strings.TrimRight(b.String(), " "))
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return strings.Join(lines, "\n")
}

// snap is a snapshot event of one turn whose assistant text is text.
func snap(seq int64, status, text string, tools ...protocol.ToolCall) *protocol.Event {
	return &protocol.Event{Kind: protocol.EventSnapshot, Sequence: seq, Snapshot: &protocol.SnapshotPayload{
		Status: status,
		Messages: []protocol.Message{
			{ID: "t1.u", Role: protocol.RoleUser, Content: "q", Status: protocol.MessageComplete, CreatedAt: "2026-11-29T12:00:00.000Z"},
			{ID: "t1.a", Role: protocol.RoleAssistant, Content: text, Status: protocol.MessageStreaming, CreatedAt: "2026-11-29T12:00:00.000Z", ToolCalls: tools},
		},
		Usage: protocol.Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3},
	}}
}

// step is one thing the live renderer is shown: a snapshot or a notice.
type step struct {
	ev     *protocol.Event
	notice string
}

// TestLiveRendererScreen replays streams through the live renderer onto a
// modelled terminal and checks after every step that the screen shows the
// current block and nothing else: no stale copy of an earlier, longer or
// wider draw, no lost notice.
func TestLiveRendererScreen(t *testing.T) {
	lookup := protocol.ToolCall{ID: "c1", Name: "lookup", Args: json.RawMessage(`{"q":"日本"}`), Status: protocol.ToolCallRunning}
	tests := map[string]struct {
		width int
		steps []step
	}{
		"Japanese text wrapping at 20 columns": {20, []step{
			{ev: snap(1, protocol.StatusStreaming, "こんにちは")},
			{ev: snap(2, protocol.StatusStreaming, "こんにちは、世界。今日は")},
			{ev: snap(3, protocol.StatusStreaming, "こんにちは、世界。今日はいい天気ですね。")},
			{ev: snap(4, protocol.StatusComplete, "短い")},
		}},
		"emoji and ZWJ sequences": {16, []step{
			{ev: snap(1, protocol.StatusStreaming, "👍")},
			{ev: snap(2, protocol.StatusStreaming, "👍 👨‍👩‍👧‍👦 🇯🇵 ok")},
			{ev: snap(3, protocol.StatusStreaming, "👍 👨‍👩‍👧‍👦 🇯🇵 ok 🎉🎉🎉🎉🎉🎉")},
		}},
		"combining marks take no column": {12, []step{
			{ev: snap(1, protocol.StatusStreaming, "e\u0301e\u0301e\u0301e\u0301e\u0301e\u0301e\u0301e\u0301e\u0301e\u0301e\u0301e\u0301")},
			{ev: snap(2, protocol.StatusComplete, "done")},
		}},
		"escape sequences and controls in the text": {30, []step{
			{ev: snap(1, protocol.StatusStreaming, "clear\x1b[2J\x1b[H me\rover\u202egnp.exe\u0085x\u009b31m")},
			{ev: snap(2, protocol.StatusStreaming, "a\tb\nline two\x07", lookup)},
		}},
		"a row filled exactly": {10, []step{
			{ev: snap(1, protocol.StatusStreaming, "0123")},      // "assistant> 0123" wraps once
			{ev: snap(2, protocol.StatusStreaming, "012345678")}, // fills two rows exactly
			{ev: snap(3, protocol.StatusStreaming, "x")},
		}},
		"the stop notice stays through redraws": {24, []step{
			{ev: snap(1, protocol.StatusStreaming, "Echo: a long")},
			{notice: noticeStopping},
			{ev: snap(2, protocol.StatusStreaming, "Echo: a longer reply that wraps")},
			{ev: snap(3, protocol.StatusError, "Echo: a longer reply")},
		}},
		"a notice before any snapshot": {40, []step{
			{notice: noticeStopping},
			{ev: snap(1, protocol.StatusStreaming, "Echo")},
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			r := &liveRenderer{w: &out, width: tc.width, height: 40}
			scr := newScreen(t, tc.width)
			var notices []string
			var last *protocol.Event
			for i, st := range tc.steps {
				out.Reset()
				if st.ev != nil {
					r.event(nil, st.ev)
					last = st.ev
				} else {
					r.notice(st.notice)
					notices = append(notices, st.notice)
				}
				scr.write(out.String())
				// What a fresh terminal shows for the current block alone.
				var fresh bytes.Buffer
				fr := &liveRenderer{w: &fresh, width: tc.width, height: 40, notices: notices}
				if last != nil {
					fr.event(nil, last)
				} else {
					fr.redraw()
				}
				want := newScreen(t, tc.width)
				want.write(fresh.String())
				if got := scr.text(); got != want.text() {
					t.Fatalf("step %d: screen\n%s\nwant\n%s", i, got, want.text())
				}
				if scr.row != want.row || scr.col != 0 {
					t.Fatalf("step %d: cursor at row %d col %d, want row %d col 0", i, scr.row, scr.col, want.row)
				}
			}
			r.done()
		})
	}
}

// TestTerminalGolden pins the exact bytes turnctl writes to a terminal
// for one stream of wide, emoji, combining and hostile text, with the stop
// notice, and the screen they leave (testdata/terminal; -update rewrites).
func TestTerminalGolden(t *testing.T) {
	var out bytes.Buffer
	r := &liveRenderer{w: &out, width: 24, height: 40}
	r.event(nil, snap(1, protocol.StatusStreaming, "日本語と"))
	r.event(nil, snap(2, protocol.StatusStreaming, "日本語とemoji 🎉 and e\u0301"))
	r.notice(noticeStopping)
	r.event(nil, snap(3, protocol.StatusStreaming, "日本語とemoji 🎉 and e\u0301 \x1b]0;owned\x07\x1b[31mred",
		protocol.ToolCall{ID: "c1", Name: "note\x1b[2J", Args: json.RawMessage(`{"title":"a\nb"}`), Status: protocol.ToolCallComplete}))
	r.event(nil, snap(4, protocol.StatusError, "日本語"))
	r.done()
	scr := newScreen(t, 24)
	scr.write(out.String())
	golden(t, "live.golden", out.String())
	golden(t, "live.screen.golden", scr.text()+"\n")
}

// TestHistoryEscapesStoredText: a stored message or artifact reference
// carrying newlines, escape sequences and a bidi override cannot forge a
// block or drive the terminal.
func TestHistoryEscapesStoredText(t *testing.T) {
	forged := "fine\n\nassistant (complete, 2026-11-29T12:00:00.000Z):\n\x1b[2J\x1b[Hyou were hacked\rcovered"
	msgs := []protocol.Message{
		{ID: "t1.u", Role: protocol.RoleUser, Content: forged, Status: protocol.MessageComplete, CreatedAt: "2026-11-29T12:00:00.000Z"},
		{ID: "t1.a", Role: protocol.RoleAssistant, Content: "reply \u202eexe.txt\u202c 日本 👍", Status: protocol.MessageComplete,
			CreatedAt: "2026-11-29T12:00:00.000Z",
			ToolCalls: []protocol.ToolCall{{ID: "c1", Name: "workspace_note", Args: json.RawMessage(`{"title":"x\u001b[31m"}`), Status: protocol.ToolCallComplete}}},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"turns": []map[string]any{{"turnId": "t1", "ordinal": 1, "status": "complete",
			"messages": msgs, "error": nil, "artifacts": []map[string]string{{"entryPath": "notes/a.md\n\nassistant (complete, now):\n  \u001b]0;title\u0007pwned",
				"artifactType": "document"}}}}, "nextCursor": nil, "hasMore": false})
	}))
	defer srv.Close()
	code, out, errOut := runTurnctl([]string{"history", "-url", srv.URL + "/", "-session", "s1"}, "")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if !strings.HasPrefix(line, "  ") && !strings.HasPrefix(line, "user (") && !strings.HasPrefix(line, "assistant (") {
			t.Errorf("line %q is neither a block header nor indented", line)
		}
	}
	if n := strings.Count(out, "\nassistant (") + strings.Count(out[:min(len(out), 10)], "assistant ("); n != 1 {
		t.Errorf("%d assistant block headers, want 1:\n%s", n, out)
	}
	scr := newScreen(t, 200) // fails on any control byte reaching the terminal
	scr.write(out)
	golden(t, "history.golden", out)
}

func TestEscapeText(t *testing.T) {
	tests := map[string]struct {
		in, multi, single string
	}{
		"plain ASCII":     {"hello", "hello", "hello"},
		"plain UTF-8":     {"日本 👍 é", "日本 👍 é", "日本 👍 é"},
		"newline":         {"a\nb", "a\nb", `a\nb`},
		"ESC":             {"a\x1b[2Jb", `a\x1b[2Jb`, `a\x1b[2Jb`},
		"CR":              {"a\rb", `a\x0db`, `a\x0db`},
		"tab":             {"a\tb", "a    b", "a    b"},
		"DEL":             {"a\x7fb", `a\x7fb`, `a\x7fb`},
		"C1 CSI":          {"a\u009b31mb", `a\x9b31mb`, `a\x9b31mb`},
		"NEL":             {"a\u0085b", `a\x85b`, `a\x85b`},
		"bidi override":   {"a\u202eb\u202c", `a\u202eb\u202c`, `a\u202eb\u202c`},
		"bidi isolate":    {"\u2066x\u2069", `\u2066x\u2069`, `\u2066x\u2069`},
		"line separator":  {"a\u2028b", `a\u2028b`, `a\u2028b`},
		"invalid UTF-8":   {"a\xffb", "a\uFFFDb", "a\uFFFDb"},
		"backslash kept":  {`a\x1b`, `a\x1b`, `a\x1b`},
		"NUL":             {"a\x00b", `a\x00b`, `a\x00b`},
		"combining marks": {"e\u0301", "e\u0301", "e\u0301"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := escapeText(tc.in, true); got != tc.multi {
				t.Errorf("escapeText(%q, true) = %q, want %q", tc.in, got, tc.multi)
			}
			if got := escapeText(tc.in, false); got != tc.single {
				t.Errorf("escapeText(%q, false) = %q, want %q", tc.in, got, tc.single)
			}
		})
	}
}

func TestDisplayWidthAndRows(t *testing.T) {
	tests := map[string]struct {
		line  string
		width int
		cols  int
		rows  int
	}{
		"ASCII":                 {"abc", 10, 3, 1},
		"exact width":           {"abcdefghij", 10, 10, 1},
		"one more wraps":        {"abcdefghijk", 10, 11, 2},
		"runes not bytes":       {"ééééé", 5, 5, 1},
		"wide characters":       {"日本語", 6, 6, 1},
		"wide wraps whole":      {"日本語", 5, 6, 2}, // 日本 fills 4 columns, 語 does not fit in the 5th
		"emoji":                 {"👍👍", 4, 4, 1},
		"ZWJ family is one":     {"👨‍👩‍👧‍👦", 2, 2, 1},
		"flag":                  {"🇯🇵", 2, 2, 1},
		"combining marks":       {"e\u0301e\u0301", 2, 2, 1},
		"empty line":            {"", 10, 0, 1},
		"many rows of wide":     {strings.Repeat("語", 10), 4, 20, 5},
		"odd width, wide chars": {strings.Repeat("語", 4), 3, 8, 4},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := displayWidth(tc.line); got != tc.cols {
				t.Errorf("displayWidth(%q) = %d, want %d", tc.line, got, tc.cols)
			}
			if got := rowsOf(tc.line, tc.width); got != tc.rows {
				t.Errorf("rowsOf(%q, %d) = %d, want %d", tc.line, tc.width, got, tc.rows)
			}
			scr := newScreen(t, tc.width)
			scr.write(tc.line + "\n")
			if got := len(scr.rows) - 1; got != tc.rows {
				t.Errorf("the modelled terminal used %d rows, rowsOf says %d", got, tc.rows)
			}
		})
	}
}

func TestEverySubcommandHelp(t *testing.T) {
	for _, name := range sortedNames() {
		for _, h := range []string{"-h", "-help", "--help"} {
			t.Run(name+" "+h, func(t *testing.T) {
				code, out, errOut := runTurnctl([]string{name, h}, "")
				if code != 0 || !strings.HasPrefix(out, "usage: turnctl "+name) || errOut != "" {
					t.Errorf("exit %d, stdout %q, stderr %q; want 0 and the usage on stdout", code, out, errOut)
				}
			})
		}
	}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "terminal", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update once to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs:\n got: %q\nwant: %q", name, got, want)
	}
}

// TestTallBlockNotice: once the block is too tall to redraw, the text is
// appended; a notice then gets a line of its own and the reply goes on
// below it without being printed again.
func TestTallBlockNotice(t *testing.T) {
	var out bytes.Buffer
	r := &liveRenderer{w: &out, width: 10, height: 3}
	r.event(nil, snap(1, protocol.StatusStreaming, "Echo: hello"))
	r.notice(noticeStopping)
	r.event(nil, snap(2, protocol.StatusStreaming, "Echo: hello world"))
	r.event(nil, snap(3, protocol.StatusError, "Echo: hello world"))
	r.done()
	want := "assistant> Echo: hello\n" + noticeStopping + "\n world\n[error · seq 3 · tokens 1 in / 2 out / 3 total]\n"
	if out.String() != want {
		t.Errorf("output %q\nwant   %q", out.String(), want)
	}
}

// TestPipedNoticeWaitsForLineEnd: piped, with stderr in the same place as
// stdout (2>&1), a notice that comes while the reply is mid-line waits for
// the line's end, like a tool call's line, instead of cutting a word in two;
// one that comes at a line start is printed at once.
func TestPipedNoticeWaitsForLineEnd(t *testing.T) {
	var out bytes.Buffer
	r := &appendRenderer{w: &out, notices: &out}
	r.event(nil, snap(1, protocol.StatusStreaming, "Echo: a question lon"))
	r.notice(noticeStopping)
	r.event(nil, snap(2, protocol.StatusStreaming, "Echo: a question long enough"))
	r.event(nil, snap(3, protocol.StatusStreaming, "Echo: a question long enough\n"))
	r.notice("a second notice")
	r.event(nil, snap(4, protocol.StatusStreaming, "Echo: a question long enough\nto"))
	r.notice("a third notice")
	r.event(nil, snap(5, protocol.StatusError, "Echo: a question long enough\nto stop"))
	r.done()
	want := "Echo: a question long enough\n" + noticeStopping + "\na second notice\nto stop\na third notice\n" +
		"[error · seq 5 · tokens 1 in / 2 out / 3 total]\n"
	if out.String() != want {
		t.Errorf("output %q\nwant   %q", out.String(), want)
	}
}

// TestErrorTextEscaped: an error body's message reaches the terminal
// escaped too.
func TestErrorTextEscaped(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusConflict)
		_, _ = w.Write([]byte(`{"error":{"version":1,"code":"SESSION_CONFLICT","message":"busy\u001b[2J\u001b]0;x\u0007\nforged line","retryable":true}}`))
	}))
	defer srv.Close()
	code, _, errOut := runTurnctl([]string{"chat", "-url", srv.URL + "/", "-session", "s1", "q"}, "")
	want := `turnctl chat: HTTP 409: SESSION_CONFLICT: busy\x1b[2J\x1b]0;x\x07\nforged line (retryable)` + "\n"
	if code != 1 || errOut != want {
		t.Errorf("exit %d, stderr %q; want 1, %q", code, errOut, want)
	}
}
