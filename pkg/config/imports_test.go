package config_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestNotImportedInward: configuration flows outward only. The packages
// under pkg/ own their options (auth.Config, definition.Config, ...) and
// limits, and only the mains (functions/, cmd/) and tests read pkg/config,
// which builds those options from the environment.
func TestNotImportedInward(t *testing.T) {
	const self = "github.com/turnstream/turnstream/pkg/config"
	fset := token.NewFileSet()
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == self {
				t.Errorf("%s imports pkg/config; take an options type of its own package instead", path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
