package archcheck

import (
	"cmp"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"path/filepath"
	"slices"
)

// Arrow is a reference from the room From to the room To: From uses an
// identifier declared in To.
type Arrow struct{ From, To string }

// Drawing is the import drawing of one package at file level.
type Drawing struct {
	// Rooms are the package's non-test files, by base name, sorted.
	Rooms []string
	// Arrows counts the references of each arrow (ordered pair of
	// distinct rooms); its length is the number of arrows.
	Arrows map[Arrow]int
	// Order is the layering, top first: a room sits above the rooms it
	// uses, as far as cycles allow. Components of rooms that use each other
	// (strongly connected components) are placed in topological order;
	// inside one, rooms are ordered by the greedy heuristic of Eades, Lin
	// and Smyth for a small set of backward arrows (sinks to the bottom,
	// sources to the top, otherwise the room with the most outgoing minus
	// incoming arrows to the top; ties by name).
	Order []string
	// BackUp are the arrows that run back up: from a room to one above it
	// in Order. Only arrows inside a cycle can; so these are the arrows
	// that no layering without cycles has room for, as few as the heuristic
	// finds.
	BackUp []Arrow
	// InCycles is the number of arrows between rooms of one strongly
	// connected component, and Cycles the components of more than one
	// room, largest first.
	InCycles int
	Cycles   [][]string
}

// FileDrawing type-checks the package importPath of the module at root
// (its dependencies from their export data, which go list -export builds)
// and draws it: each non-test file a room, each reference from one file to
// a package-level identifier, a method or a struct field declared in
// another file an arrow.
func FileDrawing(root, importPath string) (*Drawing, error) {
	pkgs, err := List(root, "-export", "-deps", importPath)
	if err != nil {
		return nil, err
	}
	exports := map[string]string{}
	var target *Package
	for _, p := range pkgs {
		exports[p.ImportPath] = p.Export
		if p.ImportPath == importPath {
			target = p
		}
	}
	if target == nil {
		return nil, fmt.Errorf("go list did not describe %s", importPath)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range target.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(target.Dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	lookup := func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok || file == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	}
	conf := types.Config{Importer: importer.ForCompiler(fset, "gc", lookup)}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	pkg, err := conf.Check(importPath, fset, files, info)
	if err != nil {
		return nil, fmt.Errorf("type-check %s: %w", importPath, err)
	}
	room := func(pos token.Pos) string { return filepath.Base(fset.Position(pos).Filename) }
	d := &Drawing{Rooms: slices.Sorted(slices.Values(target.GoFiles)), Arrows: map[Arrow]int{}}
	for id, obj := range info.Uses {
		if obj.Pkg() != pkg || !declaredInRoom(obj, pkg) {
			continue
		}
		if from, to := room(id.Pos()), room(obj.Pos()); from != to {
			d.Arrows[Arrow{from, to}]++
		}
	}
	d.layer()
	return d, nil
}

// declaredInRoom reports whether obj belongs to a file rather than to a
// function body: a package-level name, a method or a struct field.
func declaredInRoom(obj types.Object, pkg *types.Package) bool {
	switch o := obj.(type) {
	case *types.Var:
		return o.IsField() || o.Parent() == pkg.Scope()
	case *types.Func:
		return o.Signature().Recv() != nil || o.Parent() == pkg.Scope()
	case *types.TypeName, *types.Const:
		return o.Parent() == pkg.Scope()
	}
	return false
}

// layer computes Order, BackUp, InCycles and Cycles from Rooms and Arrows.
func (d *Drawing) layer() {
	out := map[string][]string{}
	for a := range d.Arrows {
		out[a.From] = append(out[a.From], a.To)
	}
	for _, r := range d.Rooms {
		slices.Sort(out[r])
	}
	comps := sccs(d.Rooms, out)
	compOf := map[string]int{}
	for i, c := range comps {
		for _, r := range c {
			compOf[r] = i
		}
	}
	// Topological order of the components, users first (Kahn's algorithm;
	// ties by the component's first room's name).
	indeg := make([]int, len(comps))
	next := map[int]map[int]bool{}
	for a := range d.Arrows {
		f, t := compOf[a.From], compOf[a.To]
		if f == t {
			d.InCycles++
			continue
		}
		if next[f] == nil {
			next[f] = map[int]bool{}
		}
		if !next[f][t] {
			next[f][t] = true
			indeg[t]++
		}
	}
	var ready []int
	for i := range comps {
		if indeg[i] == 0 {
			ready = append(ready, i)
		}
	}
	for len(ready) > 0 {
		slices.SortFunc(ready, func(a, b int) int { return cmp.Compare(comps[a][0], comps[b][0]) })
		c := ready[0]
		ready = ready[1:]
		d.Order = append(d.Order, orderInside(comps[c], d.Arrows)...)
		for t := range next[c] {
			if indeg[t]--; indeg[t] == 0 {
				ready = append(ready, t)
			}
		}
	}
	pos := map[string]int{}
	for i, r := range d.Order {
		pos[r] = i
	}
	for a := range d.Arrows {
		if pos[a.To] < pos[a.From] {
			d.BackUp = append(d.BackUp, a)
		}
	}
	slices.SortFunc(d.BackUp, func(a, b Arrow) int { return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.To, b.To)) })
	for _, c := range comps {
		if len(c) > 1 {
			d.Cycles = append(d.Cycles, c)
		}
	}
	slices.SortStableFunc(d.Cycles, func(a, b []string) int { return cmp.Compare(len(b), len(a)) })
}

// orderInside orders the rooms of one component top first with the
// Eades-Lin-Smyth greedy heuristic, counting only arrows inside it.
func orderInside(comp []string, arrows map[Arrow]int) []string {
	left := map[string]bool{}
	for _, r := range comp {
		left[r] = true
	}
	deg := func(r string) (in, out int) {
		for a := range arrows {
			if a.From == r && left[a.To] {
				out++
			}
			if a.To == r && left[a.From] {
				in++
			}
		}
		return in, out
	}
	var top, bottom []string
	sortedLeft := func() []string {
		return slices.Sorted(func(yield func(string) bool) {
			for r := range left {
				if !yield(r) {
					return
				}
			}
		})
	}
	for len(left) > 0 {
		moved := true
		for moved {
			moved = false
			for _, r := range sortedLeft() {
				if _, out := deg(r); out == 0 {
					bottom = append([]string{r}, bottom...)
					delete(left, r)
					moved = true
					break
				}
			}
		}
		moved = true
		for moved {
			moved = false
			for _, r := range sortedLeft() {
				if in, _ := deg(r); in == 0 {
					top = append(top, r)
					delete(left, r)
					moved = true
					break
				}
			}
		}
		if len(left) == 0 {
			break
		}
		best, bestScore := "", 0
		for _, r := range sortedLeft() {
			in, out := deg(r)
			if s := out - in; best == "" || s > bestScore {
				best, bestScore = r, s
			}
		}
		top = append(top, best)
		delete(left, best)
	}
	return append(top, bottom...)
}

// sccs returns the strongly connected components of the graph (Tarjan),
// each sorted by name.
func sccs(nodes []string, out map[string][]string) [][]string {
	index, low := map[string]int{}, map[string]int{}
	onStack := map[string]bool{}
	var stack []string
	var comps [][]string
	n := 0
	var visit func(v string)
	visit = func(v string) {
		index[v], low[v] = n, n
		n++
		stack = append(stack, v)
		onStack[v] = true
		for _, w := range out[v] {
			if _, seen := index[w]; !seen {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			var c []string
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				c = append(c, w)
				if w == v {
					break
				}
			}
			slices.Sort(c)
			comps = append(comps, c)
		}
	}
	for _, v := range nodes {
		if _, seen := index[v]; !seen {
			visit(v)
		}
	}
	return comps
}
