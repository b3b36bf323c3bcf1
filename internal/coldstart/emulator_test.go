package coldstart

import (
	"io"
	"strings"
	"testing"
	"time"
)

// TestLineWatch: the first line of a streamed response is the first
// '\n' after the prelude's 8 NUL bytes, however the reads split it; a
// buffered response (no NULs) has none.
func TestLineWatch(t *testing.T) {
	streamed := `{"statusCode":200,"headers":{"content-type":"application/x-ndjson"}}` + strings.Repeat("\x00", 8) + "{\"a\":1}\n{\"b\":2}\n"
	tests := map[string]struct {
		body  string
		chunk int
		want  int // reads before the line was seen (1-based); 0: never
	}{
		"one read":               {streamed, len(streamed), 1},
		"byte by byte":           {streamed, 1, strings.Index(streamed, "\n") + 1},
		"split before the line":  {streamed, len(streamed) - 14, 2},
		"buffered: no prelude":   {`{"statusCode":200,"body":"x\ny"}` + "\n", 5, 0},
		"seven NULs are no body": {"{}" + strings.Repeat("\x00", 7) + "x\n", 3, 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			reads, seenAt := 0, 0
			lw := &lineWatch{ReadCloser: io.NopCloser(&chunked{s: tc.body, n: tc.chunk}), seen: func(time.Time) {
				if seenAt != 0 {
					t.Fatal("seen twice")
				}
				seenAt = reads
			}}
			buf := make([]byte, 4096)
			var got strings.Builder
			for {
				reads++
				n, err := lw.Read(buf)
				got.Write(buf[:n])
				if err != nil {
					break
				}
			}
			if got.String() != tc.body {
				t.Fatalf("passed through %q, want %q", got.String(), tc.body)
			}
			if seenAt != tc.want {
				t.Fatalf("line seen at read %d, want %d", seenAt, tc.want)
			}
		})
	}
}

// chunked reads s at most n bytes at a time.
type chunked struct {
	s string
	n int
}

func (c *chunked) Read(p []byte) (int, error) {
	if c.s == "" {
		return 0, io.EOF
	}
	k := copy(p, c.s[:min(c.n, len(c.s))])
	c.s = c.s[k:]
	return k, nil
}
