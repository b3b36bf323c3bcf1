package lambdabin

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestPrebuilt: with DirEnv set, Bootstraps builds nothing: it returns
// the prebuilt binaries, or an error naming the one that is missing.
func TestPrebuilt(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(DirEnv, dir)
	for _, n := range []string{"turn", "minimal"} {
		if err := os.WriteFile(filepath.Join(dir, n+exeSuffix(runtime.GOOS)), []byte("x"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	paths, err := Bootstraps(t.Context(), "/nonexistent", t.TempDir(), "turn", "minimal")
	if err != nil {
		t.Fatal(err)
	}
	if paths["turn"] != filepath.Join(dir, "turn"+exeSuffix(runtime.GOOS)) || len(paths) != 2 {
		t.Errorf("paths = %v", paths)
	}
	if _, err := Bootstraps(t.Context(), "/nonexistent", t.TempDir(), "turn", "history"); err == nil || !strings.Contains(err.Error(), "history") {
		t.Errorf("a missing prebuilt bootstrap: %v, want an error naming it", err)
	}
}

func TestUnknownName(t *testing.T) {
	if _, err := Build(t.Context(), ".", t.TempDir(), Options{}, "nosuch"); err == nil || !strings.Contains(err.Error(), "nosuch") {
		t.Errorf("Build(nosuch) = %v, want an error naming it", err)
	}
}

func TestRIEPath(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(RIEDirEnv, dir)
	p, err := RIEPath()
	if err != nil || filepath.Dir(p) != dir || !strings.HasPrefix(filepath.Base(p), "aws-lambda-rie") {
		t.Errorf("RIEPath = %q, %v; want aws-lambda-rie in %s", p, err, dir)
	}
}
