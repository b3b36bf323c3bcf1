package archcheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// wallClockFuncs are package time's functions that read the runtime's
// clock or arm its timers.
var wallClockFuncs = []string{"Now", "Since", "Until", "NewTimer", "NewTicker", "After", "AfterFunc", "Tick", "Sleep"}

// ClockSite is one call of a wallClockFuncs function.
type ClockSite struct {
	File string // relative to the module root
	Line int
	Func string // "time.Now", …
	In   string // the enclosing function's name ("" at package level)
	// InBubble is set for a call inside the function a call of
	// testing/synctest's Test runs: there time is the bubble's, and a
	// sleep passes none of the runtime's.
	InBubble bool
}

func (s ClockSite) String() string {
	return fmt.Sprintf("%s:%d %s in %s", s.File, s.Line, s.Func, s.In)
}

// WallClockCalls lists the calls of package time's clock functions in the
// Go files of the module directory rel (relative to root; not its
// subdirectories), test files only when tests is set, non-test files
// otherwise. A file that imports package time under another name is read
// under that name.
func WallClockCalls(root, rel string, tests bool) ([]ClockSite, error) {
	dir := filepath.Join(root, rel)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var sites []ClockSite
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") != tests {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		timeName := importName(f, "time")
		if timeName == "" {
			continue
		}
		synctestName := importName(f, "testing/synctest")
		for _, d := range f.Decls {
			in := ""
			if fd, ok := d.(*ast.FuncDecl); ok {
				in = fd.Name.Name
			}
			var bubbles []ast.Node // the synctest.Test calls around the node
			ast.Inspect(d, func(n ast.Node) bool {
				if n == nil {
					return true
				}
				for len(bubbles) > 0 && n.Pos() >= bubbles[len(bubbles)-1].End() {
					bubbles = bubbles[:len(bubbles)-1]
				}
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				x, ok := sel.X.(*ast.Ident)
				switch {
				case !ok:
				case synctestName != "" && x.Name == synctestName && sel.Sel.Name == "Test":
					bubbles = append(bubbles, call)
				case x.Name == timeName && slices.Contains(wallClockFuncs, sel.Sel.Name):
					sites = append(sites, ClockSite{File: filepath.ToSlash(filepath.Join(rel, name)),
						Line: fset.Position(call.Pos()).Line, Func: "time." + sel.Sel.Name, In: in, InBubble: len(bubbles) > 0})
				}
				return true
			})
		}
	}
	return sites, nil
}

// importName is the name f imports the package path under ("" when it
// does not import it).
func importName(f *ast.File, path string) string {
	for _, imp := range f.Imports {
		if imp.Path.Value == strconv.Quote(path) {
			if imp.Name != nil {
				return imp.Name.Name
			}
			return path[strings.LastIndex(path, "/")+1:]
		}
	}
	return ""
}
