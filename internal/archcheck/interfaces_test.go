package archcheck

import (
	"os"
	"path/filepath"
	"testing"
)

// TestInterfacesUnion: an interface made only of embedded interfaces of
// the module is held to the limit by its parts (its figure the largest
// part's, its total in its notes); one with a method of its own counts
// every method.
func TestInterfacesUnion(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/u\n\ngo 1.26\n",
		"p/p.go": "package p\n\ntype A interface {\n\tA1()\n\tA2()\n\tA3()\n}\n\ntype B interface {\n\tB1()\n\tB2()\n}\n\n" +
			"// U is a union.\ntype U interface {\n\tA\n\tB\n}\n\n// M has a method of its own.\ntype M interface {\n\tA\n\tM1()\n}\n",
	}
	for name, src := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Parse(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Count{}
	for _, c := range s.Interfaces() {
		got[c.Name] = c
	}
	if u := got["p.U"]; u.N != 3 || u.Notes != "a union of 2 interfaces, 5 methods in all" {
		t.Errorf("union U: %+v", u)
	}
	if m := got["p.M"]; m.N != 4 || m.Notes != "" {
		t.Errorf("M: %+v", m)
	}
}
