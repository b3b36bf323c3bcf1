package demo_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/pkg/protocol"
)

var update = flag.Bool("update", false, "rewrite the .want.ndjson files of clients/js/testdata from the Go decoder")

// clientFixtures is where the browser client keeps the line fixtures its
// decoder shares with the Go decoder: recorded dev-server streams and
// edge cases. Each NAME.ndjson has a NAME.want.ndjson with one result per
// input line, {"ok":true,"event":...} or {"ok":false,"diagnostic":...}.
const clientFixtures = "../../clients/js/testdata"

// TestClientFixtures pins the Go decoder's result for every line of the
// client's fixtures; the client's own tests (make js-test) hold its
// decoder to the same files, so the two decoders agree line for line.
func TestClientFixtures(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join(clientFixtures, "*", "*.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, in := range inputs {
		if strings.HasSuffix(in, ".want.ndjson") {
			continue
		}
		n++
		name, _ := filepath.Rel(clientFixtures, in)
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			for _, line := range splitLines(data) {
				got.Write(result(t, line))
				got.WriteByte('\n')
			}
			wantPath := strings.TrimSuffix(in, ".ndjson") + ".want.ndjson"
			if *update {
				if err := os.WriteFile(wantPath, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(wantPath)
			if err != nil {
				t.Fatalf("%v (regenerate with go test ./internal/demo -run TestClientFixtures -update)", err)
			}
			g, w := splitLines(got.Bytes()), splitLines(want)
			if len(g) != len(w) {
				t.Fatalf("%d results, want file has %d", len(g), len(w))
			}
			for i := range g {
				if !bytes.Equal(g[i], w[i]) {
					t.Errorf("line %d:\n got: %s\nwant: %s", i+1, g[i], w[i])
				}
			}
		})
	}
	if n < 2 {
		t.Fatalf("found %d fixture files under %s, want the recorded streams and the edge cases", n, clientFixtures)
	}
}

// splitLines splits on LF only; a final LF ends the last line.
func splitLines(data []byte) [][]byte {
	lines := bytes.Split(data, []byte("\n"))
	if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	return lines
}

func result(t *testing.T, line []byte) []byte {
	t.Helper()
	ev, diag := protocol.DecodeTurnEvent(line)
	if diag != nil {
		return []byte(`{"ok":false,"diagnostic":` + string(protocol.EncodeDecoderDiagnostic(*diag)) + `}`)
	}
	enc, err := protocol.EncodeEvent(ev)
	if err != nil {
		t.Fatalf("EncodeEvent(decoded): %v", err)
	}
	return []byte(`{"ok":true,"event":` + string(enc) + `}`)
}

// TestClientFixturesHoldCaseVariants: every case of pkg/protocol's
// case-variant table is a line of the client's fixtures, so the client's
// decoder is held to each of them too. Lines compare as JSON values (the
// table spells some keys with \u escapes, the fixture as UTF-8).
func TestClientFixturesHoldCaseVariants(t *testing.T) {
	data, err := os.ReadFile("../../pkg/protocol/testdata/case-variants.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Cases []struct {
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Cases) == 0 {
		t.Fatal("no case-variant cases")
	}
	fixture, err := os.ReadFile(filepath.Join(clientFixtures, "decode", "case-variants.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	canonical := func(text []byte) string {
		var v any
		if err := json.Unmarshal(text, &v); err != nil {
			return ""
		}
		out, err := json.Marshal(v) // map keys sorted
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	lines := map[string]bool{}
	for _, l := range splitLines(fixture) {
		lines[canonical(l)] = true
	}
	for _, c := range file.Cases {
		if !lines[canonical(c.Input)] {
			t.Errorf("case %q is not a line of clients/js/testdata/decode/case-variants.ndjson", c.Name)
		}
	}
}
