package archcheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
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
		timeName := ""
		for _, imp := range f.Imports {
			if imp.Path.Value == `"time"` {
				timeName = "time"
				if imp.Name != nil {
					timeName = imp.Name.Name
				}
			}
		}
		if timeName == "" {
			continue
		}
		for _, d := range f.Decls {
			in := ""
			if fd, ok := d.(*ast.FuncDecl); ok {
				in = fd.Name.Name
			}
			ast.Inspect(d, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == timeName && slices.Contains(wallClockFuncs, sel.Sel.Name) {
					sites = append(sites, ClockSite{File: filepath.ToSlash(filepath.Join(rel, name)),
						Line: fset.Position(call.Pos()).Line, Func: "time." + sel.Sel.Name, In: in})
				}
				return true
			})
		}
	}
	return sites, nil
}
