package archcheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// boundedRepeat finds a regexp's bounded repetitions, {n,m} or {m}.
var boundedRepeat = regexp.MustCompile(`\{(\d+)(?:,(\d+))?\}`)

// maxInitRepeat is the largest bound a package-level regexp of a
// function's bootstrap may repeat by: Go compiles x{1,128} into 128
// copies of x, at every cold start (pkg/definition's header and tool name
// patterns took 2 to 9 ms of package init before they became loops).
const maxInitRepeat = 16

// TestNoCostlyInitRegexps: no package-level regexp.MustCompile of a
// package the three functions link repeats by more than maxInitRepeat.
func TestNoCostlyInitRegexps(t *testing.T) {
	root := repoRoot(t)
	pkgs, err := List(root, "-deps", "-tags", "lambda.norpc,tools.mcp,provider.openai", "./functions/...")
	if err != nil {
		t.Fatal(err)
	}
	mod, err := ModulePath(root)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, p := range pkgs {
		if p.Standard || !strings.HasPrefix(p.ImportPath, mod) {
			continue
		}
		for _, f := range p.GoFiles {
			fset := token.NewFileSet()
			file, err := parser.ParseFile(fset, filepath.Join(p.Dir, f), nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			checked++
			for _, decl := range file.Decls {
				gd, ok := decl.(*ast.GenDecl)
				if !ok || gd.Tok != token.VAR {
					continue // inside functions a regexp is compiled when used
				}
				ast.Inspect(gd, func(n ast.Node) bool {
					call, ok := n.(*ast.CallExpr)
					if !ok || len(call.Args) != 1 {
						return true
					}
					sel, ok := call.Fun.(*ast.SelectorExpr)
					lit, isLit := call.Args[0].(*ast.BasicLit)
					if !ok || sel.Sel.Name != "MustCompile" || !isLit {
						return true
					}
					pattern, err := strconv.Unquote(lit.Value)
					if err != nil {
						return true
					}
					for _, m := range boundedRepeat.FindAllStringSubmatch(pattern, -1) {
						bound := m[1]
						if m[2] != "" {
							bound = m[2]
						}
						if n, _ := strconv.Atoi(bound); n > maxInitRepeat {
							t.Errorf("%s: a package-level regexp repeats by %d at init; check it with a loop", fset.Position(call.Pos()), n)
						}
					}
					return true
				})
			}
		}
	}
	if checked == 0 {
		t.Fatal("no file was checked")
	}
}
