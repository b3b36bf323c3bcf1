package docstest

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// skipDirs are never scanned: dependencies, generated bundles and test
// output that the repository does not author.
var skipDirs = []string{".git", "node_modules"}

var skipPrefixes = []string{"internal/demo/assets/", "clients/js/test-output/"}

// sep is what may stand between two words of a citation: spaces, or one
// line break followed by a comment leader (Go //, shell, YAML and Make #).
const sep = `(?:[ \t]+|[ \t]*\r?\n[ \t]*(?://+|#+|\*)?[ \t]*)`

// stale are citations of documents that are not in the repository. Each
// pattern is built so that its own source text does not match it.
// Each pattern contains its literal word and runs only on a short window
// around each occurrence of it, which keeps the scan of the whole
// repository fast.
var stale = []struct {
	word string
	re   *regexp.Regexp
	what string
}{
	{"DESIGN", regexp.MustCompile(`\bDESIGN(?:\.md)?` + sep + `?§`), "a design-notes section (use docs/design.md#<heading>)"},
	{"DESIGN", regexp.MustCompile(`\bDESIGN\.md\b`), "the design notes (use docs/design.md)"},
	{"AgentsKit", regexp.MustCompile(`\bAgentsKit` + sep + `wire\b`), "the wire-reference notes (use docs/protocol.md#<heading>)"},
	{"wire", regexp.MustCompile(`(?:^|[^\w/.-])wire` + sep + `?§`), "a wire-reference section (use docs/protocol.md#<heading>)"},
	{"agentskit-", regexp.MustCompile(`\bagentskit-wire\.md\b`), "the wire-reference notes (use docs/protocol.md)"},
	{"ADR-", regexp.MustCompile(`\bADR-\d{3,4}\b`), "an upstream decision record (use docs/decisions.md D-NNNN)"},
	{"NOTES", regexp.MustCompile(`\bNOTES\.md\b`), "the tool notes (cite the docs/ section holding the fact)"},
	{"NOTES", regexp.MustCompile(`\bNOTES` + sep + `"`), "a tool-notes section (cite the docs/ section holding the fact)"},
	{"shared/", regexp.MustCompile(`(?:\.\./|/work/)shared/`), "the engineers' shared folder"},
}

// refTailRE matches what may follow a reference to a markdown document
// ("name.md"): an anchor ("#the-turn-pipeline"), legacy section numbers
// ("§4", "§6-7", "§3-§5, §10") or decision ids ("D-0012"), or nothing.
var refTailRE = regexp.MustCompile(`^(?:#([\w-]+)` +
	`|` + sep + `(§[ \t]*\d+(?:[ \t]*(?:[-–]|,` + sep + `?)[ \t]*§?[ \t]*\d+)*)` +
	`|` + sep + `(D-\d{4}(?:,[ \t]*D-\d{4})*))?`)

var (
	idRE       = regexp.MustCompile(`D-\d{4}`)
	headingRE  = regexp.MustCompile(`(?m)^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$`)
	decisionRE = regexp.MustCompile(`(?m)^## (D-\d{4})\b`)
	// localRE is, inside a docs page, a link to one of its own headings
	// ("](#anchor)"), a legacy section (§N) or a decision (D-NNNN) named
	// without a file: it refers to that page, or to decisions.md.
	localRE = regexp.MustCompile(`\]\(#([\w-]+)\)|§[ \t]*\d+(?:[ \t]*[-–][ \t]*§?[ \t]*\d+)?|\bD-\d{4}\b`)
	// fenceRE matches a fenced code block, whose lines are no headings.
	fenceRE = regexp.MustCompile("(?ms)^```.*?^```")
)

// doc is what a docs page offers to references: the anchors of its
// headings and its decision ids.
type doc struct {
	anchors   map[string]bool
	decisions map[string]bool
}

func parseDoc(text string) doc {
	d := doc{anchors: map[string]bool{}, decisions: map[string]bool{}}
	text = fenceRE.ReplaceAllString(text, "")
	for _, m := range headingRE.FindAllStringSubmatch(text, -1) {
		a := slug(m[1])
		for n := 1; d.anchors[a]; n++ { // a repeated heading gets -1, -2, ...
			a = slug(m[1]) + "-" + strconv.Itoa(n)
		}
		d.anchors[a] = true
	}
	for _, m := range decisionRE.FindAllStringSubmatch(text, -1) {
		d.decisions[m[1]] = true
	}
	return d
}

// slug is the anchor GitHub gives a heading: lower case, letters, digits,
// spaces, hyphens and underscores kept (other punctuation, backticks
// included, dropped), spaces made hyphens.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// checker holds the docs pages (by repository path, "docs/design.md").
type checker struct {
	docs map[string]doc
}

// check returns the problems of one file's text, each "path:line: ...".
func (c checker) check(path, text string) []string {
	var out []string
	report := func(off int, format string, args ...any) {
		line := 1 + strings.Count(text[:off], "\n")
		out = append(out, fmt.Sprintf("%s:%d: %s", path, line, fmt.Sprintf(format, args...)))
	}
	for _, s := range stale {
		seen := map[int]bool{}
		for _, idx := range indexes(text, s.word) {
			lo, hi := max(0, idx-8), min(len(text), idx+len(s.word)+160)
			for _, loc := range s.re.FindAllStringIndex(text[lo:hi], -1) {
				start, end := lo+loc[0], lo+loc[1]
				if start <= idx && end >= idx+len(s.word) && !seen[start] {
					seen[start] = true
					report(start, "cites %s: %q", s.what, text[start:end])
				}
			}
		}
	}

	inDocs := strings.HasPrefix(path, "docs/") && strings.HasSuffix(path, ".md")
	if !inDocs && !strings.Contains(text, ".md") {
		return out
	}
	var covered [][2]int
	for _, idx := range indexes(text, ".md") {
		after := idx + len(".md")
		if after < len(text) && isWordByte(text[after]) {
			continue // ".mdx"
		}
		j := idx
		for j > 0 && isNameByte(text[j-1]) {
			j--
		}
		if j == idx {
			continue
		}
		name, start := text[j:idx], j
		hasDocsPrefix := j >= 5 && text[j-5:j] == "docs/" && (j == 5 || !isWordByte(text[j-6]))
		if hasDocsPrefix {
			start = j - 5
		}
		if !hasDocsPrefix && !inDocs {
			continue // README.md, the go.md files of other folders: not ours to resolve
		}
		tail := refTailRE.FindStringSubmatchIndex(text[after:min(len(text), after+300)])
		group := func(i int) string {
			if tail[2*i] < 0 {
				return ""
			}
			return text[after+tail[2*i] : after+tail[2*i+1]]
		}
		anchor, sections, decisions := group(1), group(2), group(3)
		target := "docs/" + name + ".md"
		covered = append(covered, [2]int{start, after + tail[1]})
		at := func(f string, a ...any) { report(start, f, a...) }
		d, ok := c.docs[target]
		if !ok {
			link := start >= 2 && text[start-2:start] == "]("
			if hasDocsPrefix || link || anchor != "" || sections != "" || decisions != "" {
				at("%s does not exist", target)
			}
			continue
		}
		if anchor != "" && !d.anchors[anchor] {
			at("%s has no heading #%s", target, anchor)
		}
		if sections != "" {
			c.checkSections(sections, target, d, at)
		}
		for _, id := range idRE.FindAllString(decisions, -1) {
			if !d.decisions[id] {
				at("%s has no decision %s", target, id)
			}
		}
	}
	if inDocs {
		self := c.docs[path]
		decisions := c.docs["docs/decisions.md"]
		for _, loc := range localRE.FindAllStringSubmatchIndex(text, -1) {
			if inside(loc[0], covered) {
				continue
			}
			ref := text[loc[0]:loc[1]]
			switch {
			case loc[2] >= 0:
				if a := text[loc[2]:loc[3]]; !self.anchors[a] {
					report(loc[0], "%s has no heading #%s", path, a)
				}
			case strings.HasPrefix(ref, "D-"):
				if !decisions.decisions[ref] {
					report(loc[0], "docs/decisions.md has no decision %s", ref)
				}
			default:
				c.checkSections(ref, path, self, func(f string, a ...any) { report(loc[0], f, a...) })
			}
		}
	}
	return out
}

// checkSections refuses a section number ("§4", "§3-§5"): the design
// and protocol documents cite their headings by anchor
// ("docs/design.md#the-turn-pipeline"), which survive a new section.
func (checker) checkSections(list, target string, _ doc, report func(string, ...any)) {
	report("%s %s: cite the heading's anchor (%s#<anchor>), not a section number", target, list, target)
}

// indexes returns the offsets of every occurrence of word in text.
func indexes(text, word string) []int {
	var out []int
	for off := 0; ; {
		i := strings.Index(text[off:], word)
		if i < 0 {
			return out
		}
		out = append(out, off+i)
		off += i + len(word)
	}
}

func isWordByte(b byte) bool {
	return b == '_' || '0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z'
}

// isNameByte reports whether b may be part of a docs page's name.
func isNameByte(b byte) bool { return isWordByte(b) || b == '-' }

func inside(off int, spans [][2]int) bool {
	for _, s := range spans {
		if off >= s[0] && off < s[1] {
			return true
		}
	}
	return false
}

// repoRoot is the directory holding the module's go.mod.
func repoRoot(tb testing.TB) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "docs")); err == nil {
				return dir
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Fatal("no go.mod with a docs folder above the test's directory")
		}
		dir = parent
	}
}

func skipped(rel string) bool {
	for _, part := range strings.Split(rel, "/") {
		for _, d := range skipDirs {
			if part == d {
				return true
			}
		}
	}
	for _, p := range skipPrefixes {
		if strings.HasPrefix(rel, p) {
			return true
		}
	}
	return false
}

// repoFiles lists the repository's files (slash-separated, relative to
// root): tracked and untracked-but-not-ignored ones from git when it is
// available, else every file under root.
func repoFiles(tb testing.TB, root string) []string {
	tb.Helper()
	var files []string
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	if out, err := cmd.Output(); err == nil {
		for _, f := range strings.Split(string(out), "\x00") {
			if f != "" {
				files = append(files, f)
			}
		}
	} else {
		err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			rel = filepath.ToSlash(rel)
			if e.IsDir() {
				if rel != "." && skipped(rel+"/") {
					return filepath.SkipDir
				}
				return nil
			}
			files = append(files, rel)
			return nil
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
	kept := files[:0]
	for _, f := range files {
		if !skipped(f) {
			kept = append(kept, f)
		}
	}
	sort.Strings(kept)
	return kept
}

// readText returns a file's text, or ok false for binary files, files that
// are not UTF-8 and files listed by git but deleted from the work tree.
func readText(path string) (string, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", false
	}
	head := b
	if len(head) > 8192 {
		head = head[:8192]
	}
	if bytes.IndexByte(head, 0) >= 0 || !utf8.Valid(b) {
		return "", false
	}
	return string(b), true
}

// TestReferencesResolve scans every text file of the repository for
// citations of documents outside it and for docs/ references whose file,
// heading, legacy section or decision does not exist.
func TestReferencesResolve(t *testing.T) {
	root := repoRoot(t)
	files := repoFiles(t, root)
	texts := map[string]string{}
	c := checker{docs: map[string]doc{}}
	for _, f := range files {
		text, ok := readText(filepath.Join(root, filepath.FromSlash(f)))
		if !ok {
			continue
		}
		texts[f] = text
		if strings.HasPrefix(f, "docs/") && strings.HasSuffix(f, ".md") && !strings.Contains(f[len("docs/"):], "/") {
			c.docs[f] = parseDoc(text)
		}
	}
	for _, required := range []string{"docs/design.md", "docs/protocol.md", "docs/decisions.md"} {
		if _, ok := c.docs[required]; !ok {
			t.Fatalf("%s is missing", required)
		}
	}
	var problems []string
	for _, f := range files {
		if text, ok := texts[f]; ok {
			problems = append(problems, c.check(f, text)...)
		}
	}
	for _, p := range problems {
		t.Error(p)
	}
	if len(texts) < 50 {
		t.Fatalf("scanned only %d text files under %s; the file listing is broken", len(texts), root)
	}
}

// TestChecker proves that the checker finds what it must find. The stale
// forms are assembled at run time so that this file cites nothing.
func TestChecker(t *testing.T) {
	c := checker{docs: map[string]doc{
		"docs/design.md":    parseDoc("# d\n\n## The three functions\n\n## Wire protocol v1\n\n## Snapshots\n\n```\n## Not a heading\n```\n"),
		"docs/decisions.md": parseDoc("# d\n\n## D-0010: ten\n\n## D-0012 twelve\n"),
	}}
	design, wire, adr, notes, sec := "DES"+"IGN", "AgentsKit"+" wire", "AD"+"R-", "NO"+"TES", "§"
	tests := map[string]struct {
		path, text string
		want       []string // substrings of the problems, in order
	}{
		"resolving references": {
			path: "pkg/x/x.go",
			text: "// a (docs/design.md#the-three-functions, docs/design.md#snapshots)\n// docs/decisions.md D-0010, D-0012 and docs/design.md\n",
		},
		"missing heading":  {path: "a.go", text: "// x\n// (docs/design.md#the-turn-pipeline)\n", want: []string{"a.go:2: docs/design.md has no heading #the-turn-pipeline"}},
		"fenced heading":   {path: "a.go", text: "// docs/design" + ".md#not-a-heading\n", want: []string{"no heading #not-a-heading"}},
		"section number":   {path: "a.go", text: "// x\n// (docs/design.md " + sec + "4)\n", want: []string{"a.go:2: docs/design.md " + sec + "4: cite the heading's anchor"}},
		"section list":     {path: "a.go", text: "// docs/design.md " + sec + "1, " + sec + "3 and docs/design.md\n// " + sec + "2.\n", want: []string{"cite the heading's anchor", "cite the heading's anchor"}},
		"section range":    {path: "a.go", text: "// docs/design.md " + sec + "2-" + sec + "5\n", want: []string{"not a section number"}},
		"missing decision": {path: "a.yaml", text: "# docs/decisions.md D-0011\n", want: []string{"a.yaml:1: docs/decisions.md has no decision D-0011"}},
		"missing file":     {path: "Makefile", text: "# docs/" + "nowhere.md#x\n", want: []string{"Makefile:1: docs/" + "nowhere.md does not exist"}},
		"old design":       {path: "a.go", text: "// (" + design + " " + sec + "4)\n", want: []string{"design-notes section"}},
		"old design wrapped": {
			path: "a.go", text: "// x (" + design + "\n// " + sec + "8)\n", want: []string{"a.go:1: cites a design-notes section"},
		},
		"old design file": {path: "t.yaml", text: "# " + design + ".md " + sec + "1\n", want: []string{"design-notes section", "the design notes"}},
		"old wire":        {path: "a.go", text: "// (" + wire + " " + sec + "9)\n", want: []string{"wire-reference notes", "wire-reference section"}},
		"old wire rules":  {path: "a.go", text: "// (" + wire + ", \"SafeId\")\n", want: []string{"wire-reference notes"}},
		"short wire":      {path: "a_test.go", text: "\t// Algorithm order (wi" + "re " + sec + "3).\n", want: []string{"a_test.go:1: cites a wire-reference section"}},
		"decision record": {path: "a.go", text: "// (" + adr + "0012)\n", want: []string{"upstream decision record"}},
		"tool notes":      {path: "a.go", text: "// (" + notes + ".md) and " + notes + " \"JSON in Go\"\n", want: []string{"tool notes", "tool-notes section"}},
		"docs page, own headings": {
			path: "docs/design.md", text: "## Snapshots\n\nsee [x](#snapshots), [y](#wire-protocol-v2), D-0012, D-0099\n",
			want: []string{"docs/design.md:3: docs/design.md has no heading #wire-protocol-v2", "docs/design.md:3: docs/decisions.md has no decision D-0099"},
		},
		"docs page, relative links": {
			path: "docs/design.md", text: "## Snapshots\n\n(decisions.md D-0013) [x](faults.md) [y](design.md#snapshots) [z](design.md#gone)\n",
			want: []string{"docs/decisions.md has no decision D-0013", "docs/faults.md does not exist", "docs/design.md has no heading #gone"},
		},
		"other markdown is not resolved": {path: "a.go", text: "// README.md#anything, CHANGES.md\n"},
		"prose is not a citation":        {path: "a.go", text: "// on the wire, the hardwire " + sec + " and docs/design.md\n"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := c.check(tc.path, tc.text)
			if len(got) != len(tc.want) {
				t.Fatalf("problems = %q, want %d matching %q", got, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, got[i], w)
				}
			}
		})
	}
}

func TestSlug(t *testing.T) {
	for heading, want := range map[string]string{
		"Storage: one DynamoDB table": "storage-one-dynamodb-table",
		"Models, tools, definitions":  "models-tools-definitions",
		"Cold `make test`":            "cold-make-test",
		"D-0101: No storage write":    "d-0101-no-storage-write",
		"The tool demo: `/note`":      "the-tool-demo-note",
	} {
		if got := slug(heading); got != want {
			t.Errorf("slug(%q) = %q, want %q", heading, got, want)
		}
	}
}
