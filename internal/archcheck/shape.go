package archcheck

import (
	"cmp"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Limits of issue 33 ("the engine-shape figures").
const (
	MaxMethods        = 25  // declared methods of one type outside the store implementations
	MaxFileLines      = 700 // lines of one non-test Go file under pkg/
	MaxInterface      = 10  // methods of one interface
	MaxHeaderFiles    = 1   // non-test Go files that write one X-Turnstream-* name
	storeImplementers = "pkg/store/dynamo pkg/store/memory"
)

// Source is the parsed non-test Go code of the module's packages.
type Source struct {
	Module string // module path
	Root   string
	Fset   *token.FileSet
	Pkgs   []*SourcePackage
}

// SourcePackage is one package's parsed non-test files and its line
// counts.
type SourcePackage struct {
	*Package
	Rel       string // import path relative to the module, e.g. "pkg/turn"
	Files     []*ast.File
	Lines     int // non-test Go lines
	TestLines int // _test.go lines
}

// Parse lists the module's packages at root and parses their non-test
// files (no type-checking).
func Parse(root string) (*Source, error) {
	mod, err := ModulePath(root)
	if err != nil {
		return nil, err
	}
	pkgs, err := List(root, "./...")
	if err != nil {
		return nil, err
	}
	s := &Source{Module: mod, Root: root, Fset: token.NewFileSet()}
	for _, p := range pkgs {
		sp := &SourcePackage{Package: p, Rel: strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, mod), "/")}
		for _, name := range slices.Concat(p.GoFiles, p.CgoFiles) {
			f, err := parser.ParseFile(s.Fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				return nil, err
			}
			sp.Files = append(sp.Files, f)
			sp.Lines += s.Fset.File(f.Pos()).LineCount()
		}
		for _, name := range slices.Concat(p.TestGoFiles, p.XTestGoFiles) {
			n, err := lineCount(filepath.Join(p.Dir, name))
			if err != nil {
				return nil, err
			}
			sp.TestLines += n
		}
		s.Pkgs = append(s.Pkgs, sp)
	}
	return s, nil
}

// Count is one measured thing: what, where, how many.
type Count struct {
	Name  string // e.g. "pkg/turn.run", "pkg/turn/run.go"
	N     int
	Notes string
}

// MethodSets counts, for each named type outside the store
// implementations, the methods declared with it (or a pointer to it) as
// receiver, largest first. Promoted methods of embedded fields are not
// counted: these are the methods the type's own code carries.
func (s *Source) MethodSets() []Count {
	n := map[string]int{}
	for _, p := range s.Pkgs {
		if slices.Contains(strings.Fields(storeImplementers), p.Rel) {
			continue
		}
		for _, f := range p.Files {
			for _, decl := range f.Decls {
				fd, ok := decl.(*ast.FuncDecl)
				if !ok || fd.Recv == nil || len(fd.Recv.List) == 0 {
					continue
				}
				if name := receiverName(fd.Recv.List[0].Type); name != "" {
					n[p.Rel+"."+name]++
				}
			}
		}
	}
	return sortCounts(n)
}

func receiverName(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.ParenExpr:
			e = t.X
		case *ast.Ident:
			return t.Name
		default:
			return ""
		}
	}
}

// Interfaces counts the methods of each named interface type of the
// module, with the methods of embedded interfaces declared in the module;
// an embedded interface from outside it (io.Reader) is named in Notes and
// not counted. Largest first.
func (s *Source) Interfaces() []Count {
	type decl struct {
		it      *ast.InterfaceType
		imports map[string]string // local name -> import path
		pkg     string            // import path
	}
	decls := map[string]decl{} // "importpath.Name"
	for _, p := range s.Pkgs {
		for _, f := range p.Files {
			imports := map[string]string{}
			for _, im := range f.Imports {
				ip, _ := strconv.Unquote(im.Path.Value)
				name := path.Base(ip)
				if im.Name != nil {
					name = im.Name.Name
				}
				imports[name] = ip
			}
			ast.Inspect(f, func(n ast.Node) bool {
				ts, ok := n.(*ast.TypeSpec)
				if !ok {
					return true
				}
				if it, ok := ts.Type.(*ast.InterfaceType); ok {
					decls[p.ImportPath+"."+ts.Name.Name] = decl{it, imports, p.ImportPath}
				}
				return true
			})
		}
	}
	var count func(key string, seen map[string]bool) (int, []string)
	count = func(key string, seen map[string]bool) (int, []string) {
		d, ok := decls[key]
		if !ok || seen[key] {
			return 0, nil
		}
		seen[key] = true
		n, outside := 0, []string(nil)
		for _, field := range d.it.Methods.List {
			switch t := field.Type.(type) {
			case *ast.FuncType:
				n += max(1, len(field.Names))
			case *ast.Ident:
				m, o := count(d.pkg+"."+t.Name, seen)
				n, outside = n+m, append(outside, o...)
			case *ast.SelectorExpr:
				x, _ := t.X.(*ast.Ident)
				if x == nil {
					continue
				}
				key := d.imports[x.Name] + "." + t.Sel.Name
				if _, in := decls[key]; in {
					m, o := count(key, seen)
					n, outside = n+m, append(outside, o...)
				} else {
					outside = append(outside, x.Name+"."+t.Sel.Name)
				}
			}
		}
		return n, outside
	}
	// parts returns the module's interfaces a pure union embeds (an
	// interface of embedded module interfaces only, as io.ReadWriteCloser
	// is), nil for any other interface.
	parts := func(key string) []string {
		d := decls[key]
		var ps []string
		for _, field := range d.it.Methods.List {
			pk := ""
			switch t := field.Type.(type) {
			case *ast.Ident:
				pk = d.pkg + "." + t.Name
			case *ast.SelectorExpr:
				if x, _ := t.X.(*ast.Ident); x != nil {
					pk = d.imports[x.Name] + "." + t.Sel.Name
				}
			}
			if _, in := decls[pk]; !in {
				return nil
			}
			ps = append(ps, pk)
		}
		return ps
	}
	var out []Count
	for key := range decls {
		n, outside := count(key, map[string]bool{})
		name := strings.TrimPrefix(strings.TrimPrefix(key, s.Module), "/")
		c := Count{Name: name, N: n}
		if len(outside) > 0 {
			c.Notes = "embeds " + strings.Join(outside, ", ") + " (not counted)"
		}
		// A union of two or more interfaces is held to the limit by its
		// parts, each counted on its own: its figure is its largest part's.
		if ps := parts(key); len(ps) >= 2 {
			c.N = 0
			for _, pk := range ps {
				m, _ := count(pk, map[string]bool{})
				c.N = max(c.N, m)
			}
			c.Notes = fmt.Sprintf("a union of %d interfaces, %d methods in all", len(ps), n)
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Count) int { return cmp.Or(cmp.Compare(b.N, a.N), cmp.Compare(a.Name, b.Name)) })
	return out
}

// FileLines returns the line count of every non-test Go file whose
// package path starts with prefix ("pkg/"), longest first.
func (s *Source) FileLines(prefix string) []Count {
	n := map[string]int{}
	for _, p := range s.Pkgs {
		if !strings.HasPrefix(p.Rel+"/", prefix) {
			continue
		}
		for _, f := range p.Files {
			tf := s.Fset.File(f.Pos())
			rel, _ := filepath.Rel(s.Root, tf.Name())
			n[filepath.ToSlash(rel)] = tf.LineCount()
		}
	}
	return sortCounts(n)
}

// headerRE matches a string literal that is an X-Turnstream-* header name.
var headerRE = regexp.MustCompile(`^(?i)x-turnstream-[a-z0-9-]+$`)

// Headers returns, for each X-Turnstream-* header name (lower case), the
// non-test Go files that write it as a string literal: where it is
// declared. One file per name is the wire contract written once.
func (s *Source) Headers() map[string][]string {
	out := map[string][]string{}
	for _, p := range s.Pkgs {
		for _, f := range p.Files {
			rel, _ := filepath.Rel(s.Root, s.Fset.File(f.Pos()).Name())
			rel = filepath.ToSlash(rel)
			ast.Inspect(f, func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				v, err := strconv.Unquote(lit.Value)
				if err != nil || !headerRE.MatchString(v) {
					return true
				}
				h := strings.ToLower(v)
				if !slices.Contains(out[h], rel) {
					out[h] = append(out[h], rel)
				}
				return true
			})
		}
	}
	for h := range out {
		slices.Sort(out[h])
	}
	return out
}

// Layering is the import rules docs/architecture.md draws: for each
// package under pkg/, the module packages it may import (May, enforced).
var Layering = []layerRule{
	{Pkg: "pkg/protocol"},
	{Pkg: "pkg/clock"},
	{Pkg: "pkg/awsenv"},
	{Pkg: "pkg/attach", May: []string{"pkg/protocol"}},
	{Pkg: "pkg/attach/s3attach", May: []string{"pkg/attach"}},
	{Pkg: "pkg/attach/s3read", May: []string{"pkg/attach"}},
	{Pkg: "pkg/attach/attachtest", May: []string{"pkg/attach"}},
	{Pkg: "pkg/api", May: []string{"pkg/protocol"}},
	{Pkg: "pkg/chat", May: []string{"pkg/protocol"}},
	{Pkg: "pkg/agui", May: []string{"pkg/protocol"}},
	{Pkg: "pkg/client", May: []string{"pkg/api", "pkg/protocol", "pkg/agui"}},
	{Pkg: "pkg/model", May: []string{"pkg/protocol"}},
	{Pkg: "pkg/model/echo", May: []string{"pkg/model", "pkg/protocol"}},
	{Pkg: "pkg/model/bedrock", May: []string{"pkg/model", "pkg/protocol"}},
	{Pkg: "pkg/model/openai", May: []string{"pkg/model", "pkg/protocol"}},
	{Pkg: "pkg/model/modeltest", May: []string{"pkg/model", "pkg/model/bedrock", "pkg/model/openai", "pkg/protocol"}},
	{Pkg: "pkg/store/dynamo", May: []string{"pkg/awsenv", "pkg/chat", "pkg/protocol"}},
	{Pkg: "pkg/store/memory", May: []string{"pkg/chat", "pkg/protocol"}},
	{Pkg: "pkg/store/storetest", May: []string{"pkg/chat", "pkg/clock", "pkg/protocol"}},
	{Pkg: "pkg/auth", May: []string{"pkg/chat", "pkg/protocol"}},
	{Pkg: "pkg/definition", May: []string{"pkg/api", "pkg/chat", "pkg/model", "pkg/protocol"}},
	{Pkg: "pkg/tool", May: []string{"pkg/chat", "pkg/model", "pkg/protocol"}},
	// Remote tools: an MCP server's listing as a tool registry.
	{Pkg: "pkg/tool/mcp", May: []string{"pkg/clock", "pkg/definition", "pkg/tool"}},
	{Pkg: "pkg/httpedge", May: []string{"pkg/api", "pkg/attach", "pkg/auth", "pkg/chat", "pkg/protocol"}},
	{Pkg: "pkg/telemetry", May: []string{"pkg/chat", "pkg/protocol"}},
	{Pkg: "pkg/telemetry/otlp", May: []string{"pkg/telemetry"}},
	// The quotas over the usage ledger, which the engine asks at a turn's
	// steps.
	{Pkg: "pkg/quota", May: []string{"pkg/chat", "pkg/clock"}},
	// The turn engine: the turn itself, from the request's checks and the
	// claim to the release. It knows neither authentication (its
	// Config.Authenticate hook), nor telemetry (Config.Trace), nor the
	// routes. It answers its requests through the shared error table
	// (httpedge: a submit's checks interleave with its claim), and its
	// stream encoders, AG-UI's included (agui: the wire), stay in its
	// package (docs/architecture.md#where-the-encoders-sit-and-why-not-further-out).
	{Pkg: "pkg/turn/engine", May: []string{"pkg/agui", "pkg/api", "pkg/attach", "pkg/chat", "pkg/clock", "pkg/definition", "pkg/httpedge", "pkg/model", "pkg/protocol", "pkg/quota", "pkg/tool"}},
	// The turn function's HTTP edge: the routes, authentication and
	// telemetry around the engine.
	{Pkg: "pkg/turn", May: []string{"pkg/api", "pkg/auth", "pkg/chat", "pkg/clock", "pkg/httpedge", "pkg/model", "pkg/protocol", "pkg/telemetry", "pkg/tool", "pkg/turn/engine"}},
	{Pkg: "pkg/sessionapi", May: []string{"pkg/api", "pkg/attach", "pkg/auth", "pkg/chat", "pkg/httpedge", "pkg/protocol", "pkg/telemetry"}},
	{Pkg: "pkg/sessionapi/internal/artifactsfuzz"},
	{Pkg: "pkg/config", May: []string{"pkg/auth", "pkg/chat", "pkg/definition", "pkg/httpedge", "pkg/protocol", "pkg/telemetry"}},
}

// layerRule is one package's rule of Layering.
type layerRule struct {
	Pkg string
	May []string
}

// WrongWay is an import that breaks Layering, or a package under pkg/
// that imports a rig, a command or a function, or a package under pkg/
// that Layering does not place.
type WrongWay struct {
	From, To string
	Why      string
}

// ImportGraph returns each package's imports of the module's own packages
// (relative paths), and the imports that run the wrong way.
func (s *Source) ImportGraph() (map[string][]string, []WrongWay) {
	graph := map[string][]string{}
	for _, p := range s.Pkgs {
		for _, im := range p.Imports {
			if rel, ok := strings.CutPrefix(im, s.Module+"/"); ok {
				graph[p.Rel] = append(graph[p.Rel], rel)
			}
		}
		slices.Sort(graph[p.Rel])
	}
	var wrong []WrongWay
	for _, p := range s.Pkgs {
		if !strings.HasPrefix(p.Rel, "pkg/") {
			continue
		}
		i := slices.IndexFunc(Layering, func(l layerRule) bool { return l.Pkg == p.Rel })
		if i < 0 {
			wrong = append(wrong, WrongWay{From: p.Rel, Why: "not placed in archcheck.Layering: say what it may import"})
			continue
		}
		l := Layering[i]
		for _, to := range graph[p.Rel] {
			switch {
			case strings.HasPrefix(to, "internal/") || strings.HasPrefix(to, "cmd/") || strings.HasPrefix(to, "functions/"):
				wrong = append(wrong, WrongWay{From: p.Rel, To: to, Why: "a library package imports a rig, a command or a function"})
			case strings.HasPrefix(to, p.Rel+"/internal/"):
			case !slices.Contains(l.May, to):
				wrong = append(wrong, WrongWay{From: p.Rel, To: to, Why: fmt.Sprintf("%s may import only %s", p.Rel, orNothing(l.May))})
			}
		}
	}
	return graph, wrong
}

// SDKImporters returns the module's packages (non-test files) that
// import an AWS SDK package whose path contains part ("dynamodb").
func (s *Source) SDKImporters(part string) []string {
	var out []string
	for _, p := range s.Pkgs {
		for _, im := range p.Imports {
			if strings.HasPrefix(im, "github.com/aws/aws-sdk-go-v2/") && strings.Contains(im, part) {
				out = append(out, p.Rel)
				break
			}
		}
	}
	return out
}

func orNothing(s []string) string {
	if len(s) == 0 {
		return "nothing of the module"
	}
	return strings.Join(s, ", ")
}

func sortCounts(n map[string]int) []Count {
	var out []Count
	for k, v := range n {
		out = append(out, Count{Name: k, N: v})
	}
	slices.SortFunc(out, func(a, b Count) int { return cmp.Or(cmp.Compare(b.N, a.N), cmp.Compare(a.Name, b.Name)) })
	return out
}
