package archcheck

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// enforce reports whether the limits of issue 33 that the code does not
// hold yet (the turn engine's import rules, sleeps in tests) fail the test
// (ARCHCHECK_ENFORCE=1) or are only reported; the size limits (method
// sets, file lengths, interfaces) hold and always fail it when broken.
var enforce = os.Getenv("ARCHCHECK_ENFORCE") == "1"

// TestArchitecture prints the figures docs/architecture.md quotes and
// checks them: the rules that hold today fail the test when broken (the
// size limits of issue 33 among them); the refactor's import rules are
// reported, and fail only with ARCHCHECK_ENFORCE=1.
func TestArchitecture(t *testing.T) {
	root := repoRoot(t)
	s, err := Parse(root)
	if err != nil {
		t.Fatal(err)
	}
	over := func(format string, a ...any) {
		t.Helper()
		if enforce {
			t.Errorf(format, a...)
		} else {
			t.Logf("OVER THE LIMIT (reported, not enforced yet): "+format, a...)
		}
	}

	// Lines per package.
	var b strings.Builder
	total, totalTest := 0, 0
	for _, p := range s.Pkgs {
		fmt.Fprintf(&b, "  %-45s %6d %6d\n", p.Rel, p.Lines, p.TestLines)
		total, totalTest = total+p.Lines, totalTest+p.TestLines
	}
	t.Logf("lines per package (%d packages; non-test, test):\n%s  %-45s %6d %6d", len(s.Pkgs), b.String(), "total", total, totalTest)

	// The limits.
	methods := s.MethodSets()
	t.Logf("largest method sets outside %s: %s", storeImplementers, top(methods, 6))
	for _, c := range methods {
		if c.N > MaxMethods {
			t.Errorf("%s has %d methods (limit %d)", c.Name, c.N, MaxMethods)
		}
	}
	files := s.FileLines("pkg/")
	t.Logf("longest non-test files under pkg/: %s", top(files, 6))
	for _, c := range files {
		if c.N > MaxFileLines {
			t.Errorf("%s has %d lines (limit %d)", c.Name, c.N, MaxFileLines)
		}
	}
	ifaces := s.Interfaces()
	t.Logf("largest interfaces: %s", top(ifaces, 6))
	for _, c := range ifaces {
		if strings.HasPrefix(c.Notes, "a union") {
			t.Logf("interface %s: %s, each part within the limit", c.Name, c.Notes)
		}
	}
	for _, c := range ifaces {
		if c.N > MaxInterface {
			t.Errorf("interface %s has %d methods (limit %d) %s", c.Name, c.N, MaxInterface, c.Notes)
		}
	}
	headers := s.Headers()
	names := slices.Sorted(func(yield func(string) bool) {
		for h := range headers {
			if !yield(h) {
				return
			}
		}
	})
	for _, h := range names {
		t.Logf("header %s is written in %d files: %s", h, len(headers[h]), strings.Join(headers[h], ", "))
		if len(headers[h]) > MaxHeaderFiles {
			over("header %s is declared in %d Go files (limit %d)", h, len(headers[h]), MaxHeaderFiles)
		}
	}

	// The import graph: an import against the rules fails the test.
	graph, wrong := s.ImportGraph()
	for _, p := range s.Pkgs {
		t.Logf("imports %-40s -> %s", p.Rel, strings.Join(graph[p.Rel], " "))
	}
	for _, w := range wrong {
		t.Errorf("import %s -> %s runs the wrong way: %s", w.From, w.To, w.Why)
	}
	sdk := s.SDKImporters("dynamodb")
	t.Logf("importers of the DynamoDB SDK: %s", strings.Join(sdk, ", "))
	for _, p := range sdk {
		if strings.HasPrefix(p, "pkg/") && p != "pkg/store/dynamo" {
			t.Errorf("%s imports the DynamoDB SDK: under pkg/ only pkg/store/dynamo may (its doc.go says so)", p)
		}
	}

	// The drawings of the turn engine and its HTTP edge.
	for _, pkg := range []string{"pkg/turn/engine", "pkg/turn"} {
		d, err := FileDrawing(root, s.Module+"/"+pkg)
		if err != nil {
			t.Fatal(err)
		}
		logDrawing(t, pkg, d)
	}
}

func logDrawing(t *testing.T, name string, d *Drawing) {
	t.Helper()
	refs := 0
	for _, n := range d.Arrows {
		refs += n
	}
	var back []string
	for _, a := range d.BackUp {
		back = append(back, a.From+"->"+a.To)
	}
	var cycles []string
	for _, c := range d.Cycles {
		cycles = append(cycles, fmt.Sprintf("%d rooms {%s}", len(c), strings.Join(c, " ")))
	}
	t.Logf("drawing of %s: %d rooms, %d arrows (%d references), %d arrows back up, %d arrows inside cycles\n  layering, top first: %s\n  back up: %s\n  cycles: %s",
		name, len(d.Rooms), len(d.Arrows), refs, len(d.BackUp), d.InCycles,
		strings.Join(d.Order, " "), strings.Join(back, " "), strings.Join(cycles, "; "))
}

// TestFileDrawing draws testdata/rooms: a uses b (a type, a field, a
// method); b and c use each other (a function, a constant); a local name
// is no arrow.
func TestFileDrawing(t *testing.T) {
	root := repoRoot(t)
	mod, err := ModulePath(root)
	if err != nil {
		t.Fatal(err)
	}
	d, err := FileDrawing(root, mod+"/internal/archcheck/testdata/rooms")
	if err != nil {
		t.Fatal(err)
	}
	logDrawing(t, "testdata/rooms", d)
	want := map[Arrow]int{{"a.go", "b.go"}: 3, {"b.go", "c.go"}: 1, {"c.go", "b.go"}: 1}
	if len(d.Arrows) != len(want) {
		t.Fatalf("arrows %v, want %v", d.Arrows, want)
	}
	for a, n := range want {
		if d.Arrows[a] != n {
			t.Fatalf("arrows %v, want %v", d.Arrows, want)
		}
	}
	if strings.Join(d.Order, " ") != "a.go b.go c.go" || len(d.BackUp) != 1 || d.BackUp[0] != (Arrow{"c.go", "b.go"}) ||
		d.InCycles != 2 || len(d.Cycles) != 1 {
		t.Fatalf("order %v, back up %v, in cycles %d, cycles %v", d.Order, d.BackUp, d.InCycles, d.Cycles)
	}
}

// TestLayer: the layering of a drawing with a cycle of three rooms, one
// of which also uses a fourth: the greedy order leaves one arrow back up,
// and an arrow out of the cycle never runs back up.
func TestLayer(t *testing.T) {
	d := &Drawing{Rooms: []string{"h", "x", "y", "z"}, Arrows: map[Arrow]int{
		{"h", "x"}: 1, {"x", "y"}: 1, {"y", "z"}: 1, {"z", "x"}: 1, {"x", "z"}: 1,
	}}
	d.layer()
	if d.Order[0] != "h" || len(d.BackUp) != 1 || d.InCycles != 4 || len(d.Cycles) != 1 || len(d.Cycles[0]) != 3 {
		t.Fatalf("order %v, back up %v, in cycles %d, cycles %v", d.Order, d.BackUp, d.InCycles, d.Cycles)
	}
	if d.BackUp[0].From == "h" {
		t.Fatalf("an arrow out of a cycle runs back up: %v", d.BackUp)
	}
}

func top(cs []Count, n int) string {
	var parts []string
	for _, c := range cs[:min(n, len(cs))] {
		parts = append(parts, fmt.Sprintf("%s %d", c.Name, c.N))
	}
	return strings.Join(parts, ", ")
}

func repoRoot(tb testing.TB) string {
	tb.Helper()
	dir, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		tb.Fatalf("no go.mod at %s: %v", dir, err)
	}
	return dir
}
