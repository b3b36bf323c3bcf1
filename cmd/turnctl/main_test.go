package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// fixture is one docs/protocol.md#fixtures turn fixture from pkg/protocol's
// golden files: the decoder input and the expected decode result.
type fixture struct {
	name  string
	input []byte
	want  struct {
		OK         bool            `json:"ok"`
		Event      json.RawMessage `json:"event"`
		Diagnostic json.RawMessage `json:"diagnostic"`
	}
}

func loadFixtures(tb testing.TB) []fixture {
	tb.Helper()
	dir := filepath.Join("..", "..", "pkg", "protocol", "testdata", "turn")
	inputs, err := filepath.Glob(filepath.Join(dir, "*.input.json"))
	if err != nil || len(inputs) != 15 {
		tb.Fatalf("found %d fixtures in %s (%v); want 15", len(inputs), dir, err)
	}
	sort.Strings(inputs)
	out := make([]fixture, len(inputs))
	for i, in := range inputs {
		f := &out[i]
		f.name = strings.TrimSuffix(filepath.Base(in), ".input.json")
		if f.input, err = os.ReadFile(in); err != nil {
			tb.Fatal(err)
		}
		f.input = bytes.TrimSuffix(f.input, []byte("\n")) // one line each
		want, err := os.ReadFile(strings.TrimSuffix(in, ".input.json") + ".want.json")
		if err != nil {
			tb.Fatal(err)
		}
		if err := json.Unmarshal(want, &f.want); err != nil {
			tb.Fatal(err)
		}
	}
	return out
}

// expectedLine is the verdict line turnctl validate must print for f.
func expectedLine(tb testing.TB, f fixture) string {
	tb.Helper()
	if !f.want.OK {
		return `{"ok":false,"diagnostic":` + compact(tb, f.want.Diagnostic) + `}`
	}
	var ev struct{ Event string }
	if err := json.Unmarshal(f.want.Event, &ev); err != nil {
		tb.Fatal(err)
	}
	return `{"ok":true,"event":"` + ev.Event + `"}`
}

func compact(tb testing.TB, raw json.RawMessage) string {
	tb.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		tb.Fatal(err)
	}
	return b.String()
}

func TestValidateFixtures(t *testing.T) {
	fixtures := loadFixtures(t)
	var stdin bytes.Buffer
	var want []string
	for _, f := range fixtures {
		stdin.Write(f.input)
		stdin.WriteByte('\n')
		want = append(want, expectedLine(t, f))
	}
	var stdout, stderr bytes.Buffer
	status := run([]string{"validate"}, &stdin, &stdout, &stderr)
	if status != 1 {
		t.Errorf("exit status %d; want 1 (some fixtures are invalid)", status)
	}
	got := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	if !reflect.DeepEqual(got, want) {
		for i := range max(len(got), len(want)) {
			var g, w string
			if i < len(got) {
				g = got[i]
			}
			if i < len(want) {
				w = want[i]
			}
			if g != w {
				t.Errorf("line %d\n got: %s\nwant: %s", i+1, g, w)
			}
		}
	}
	if stderr.Len() != 0 {
		t.Errorf("stderr: %s", stderr.String())
	}
}

func TestValidate(t *testing.T) {
	fixtures := loadFixtures(t)
	submit := string(fixtures[0].input)
	okLine := `{"ok":true,"event":"client.turn.submit"}` + "\n"
	notJSON := `{"ok":false,"diagnostic":{"code":"PROTOCOL_INVALID_PAYLOAD","message":"Turn event is not valid JSON.","retryable":false}}` + "\n"
	long := strings.Replace(submit, `"hello"`, `"`+strings.Repeat("a", 1<<20)+`"`, 1)
	tests := map[string]struct {
		stdin  string
		stdout string
		status int
	}{
		"empty input":                 {"", "", 0},
		"all valid":                   {submit + "\n" + submit + "\n", okLine + okLine, 0},
		"last line without LF":        {submit + "\n" + submit, okLine + okLine, 0},
		"CRLF: CR is JSON whitespace": {submit + "\r\n", okLine, 0},
		"empty line":                  {submit + "\n\n", okLine + notJSON, 1},
		"lone CR line":                {"\r\n", notJSON, 1},
		"1 MiB line":                  {long + "\n", okLine, 0},
		"U+2028 inside a line is not a line break": {strings.Replace(submit, `hello`, "a\u2028b", 1) + "\n", okLine, 0},
		"a line never leaks input": {`{"protocol":"agentskit.chat.turn","version":1,"eventId":"a b","secret":"x"}` + "\n",
			`{"ok":false,"diagnostic":{"code":"PROTOCOL_INVALID_PAYLOAD","message":"Turn event payload is invalid.","retryable":false}}` + "\n", 1},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			status := run([]string{"validate"}, strings.NewReader(tt.stdin), &stdout, &stderr)
			if status != tt.status || stdout.String() != tt.stdout {
				t.Errorf("status %d, stdout %.300q; want %d, %.300q", status, stdout.String(), tt.status, tt.stdout)
			}
		})
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("closed") }

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("broken pipe") }

func TestCommandLine(t *testing.T) {
	tests := map[string]struct {
		args      []string
		stdin     string
		stdout    func(*bytes.Buffer) bool
		stderrHas string
		status    int
	}{
		"no subcommand":      {nil, "", empty, "usage: turnctl", 2},
		"unknown subcommand": {[]string{"chat-not-yet"}, "", empty, "usage: turnctl", 2},
		"help":               {[]string{"help"}, "", func(b *bytes.Buffer) bool { return strings.Contains(b.String(), "validate") }, "", 0},
		"validate with args": {[]string{"validate", "file.ndjson"}, "", empty, "takes no arguments", 2},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			status := run(tt.args, strings.NewReader(tt.stdin), &stdout, &stderr)
			if status != tt.status || !tt.stdout(&stdout) || !strings.Contains(stderr.String(), tt.stderrHas) {
				t.Errorf("status %d stdout %q stderr %q", status, stdout.String(), stderr.String())
			}
		})
	}
	t.Run("write error", func(t *testing.T) {
		var stderr bytes.Buffer
		if status := run([]string{"validate"}, strings.NewReader("{}\n"), failingWriter{}, &stderr); status != 1 ||
			!strings.Contains(stderr.String(), "write stdout") {
			t.Errorf("status %d stderr %q; want 1 and a write error", status, stderr.String())
		}
	})
	t.Run("read error", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		if status := run([]string{"validate"}, failingReader{}, &stdout, &stderr); status != 1 ||
			!strings.Contains(stderr.String(), "read stdin") {
			t.Errorf("status %d stderr %q; want 1 and a read error", status, stderr.String())
		}
	})
}

func empty(b *bytes.Buffer) bool { return b.Len() == 0 }
