package client

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

// TestLineReader: lines ended by "\n", whatever the reads' sizes; a
// trailing fragment is errTruncatedLine; partial reads show an open
// line's bytes so far.
func TestLineReader(t *testing.T) {
	tests := map[string]struct {
		in      string
		want    []string
		wantErr error
	}{
		"lines":             {"a\nbb\n", []string{"a", "bb"}, io.EOF},
		"trailing fragment": {"a\nbb", []string{"a"}, errTruncatedLine},
		"empty":             {"", nil, io.EOF},
		"empty lines":       {"\n\na\n", []string{"", "", "a"}, io.EOF},
		"long line":         {strings.Repeat("x", 200_000) + "\ny\n", []string{strings.Repeat("x", 200_000), "y"}, io.EOF},
	}
	for name, tc := range tests {
		for _, reader := range []func(string) io.Reader{
			func(s string) io.Reader { return strings.NewReader(s) },
			func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) },
		} {
			t.Run(name, func(t *testing.T) {
				l := newLineReader(reader(tc.in))
				var got []string
				var err error
				for {
					var line []byte
					if line, _, err = l.next(false); err != nil {
						break
					}
					got = append(got, string(line))
				}
				if !slices.Equal(got, tc.want) || !errors.Is(err, tc.wantErr) {
					t.Errorf("lines %d %v, want %d %v", len(got), err, len(tc.want), tc.wantErr)
				}
			})
		}
	}

	l := newLineReader(iotest.OneByteReader(strings.NewReader("ab\nc")))
	var seen []string
	for {
		line, full, err := l.next(true)
		if err != nil {
			break
		}
		seen = append(seen, string(line)+map[bool]string{true: "!", false: "…"}[full])
	}
	if want := []string{"a…", "ab…", "ab!", "c…"}; !slices.Equal(seen, want) {
		t.Errorf("partial reads %q, want %q", seen, want)
	}
}
