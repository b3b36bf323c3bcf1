package docstest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/protocol"
)

// runDocs are the documents whose shell blocks TestREADMERunsAsPasted
// runs, in this order, in one shell: the README's first session, then the
// local walk-through. The deploy page's blocks are internal/deploytest's.
var runDocs = []string{"README.md", "docs/walkthrough.md"}

// markerPrefix starts every run marker; a document that holds one must be
// in runDocs, so that no block stops running unnoticed.
const markerPrefix = "<!-- readme: "

// A shell block of a runDocs document is preceded by one of these markers:
//
//	<!-- readme: run -->                       run it as pasted
//	<!-- readme: run; expects CODE, CODE -->   run it; those codes must show, no other
//	<!-- readme: dev -->                       "[VAR=value ...] make dev": (re)start the dev server so
//	<!-- readme: not run: REASON -->           said why
var readmeMarkerRE = regexp.MustCompile(`^<!-- readme: (run(?:; expects ([A-Z0-9_, ]+))?|dev|not run: .+) -->$`)

// localBlock is one shell block of a runDocs document.
type localBlock struct {
	kind    string   // "run", "dev" or "not run"
	expects []string // codes a run block's output must show
	code    string
	doc     string // the document, as runDocs names it
	line    int
}

// where is the block's place, "doc:line".
func (b localBlock) where() string { return fmt.Sprintf("%s:%d", b.doc, b.line) }

// readmeLocalBlocks returns the blocks of runDocs in order (localBlocks),
// failing t on every problem, and on a document outside runDocs that
// holds a run marker.
func readmeLocalBlocks(t *testing.T) []localBlock {
	t.Helper()
	root := repoRoot(t)
	var all []localBlock
	for _, name := range runDocs {
		raw, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
		if err != nil {
			t.Fatal(err)
		}
		blocks, problems := localBlocks(name, string(raw))
		for _, p := range problems {
			t.Error(p)
		}
		all = append(all, blocks...)
	}
	others, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range others {
		name := "docs/" + filepath.Base(f)
		if slices.Contains(runDocs, name) {
			continue
		}
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(raw), "\n"+markerPrefix) {
			t.Errorf("%s holds a run marker (%q...) but is not one of the documents the test runs (runDocs)", name, markerPrefix)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	return all
}

// localBlocks returns the shell blocks of the document name's text in
// order, each with its marker, and the problems: a block without a marker,
// a transcript ("$ " lines) fenced as anything but text.
func localBlocks(name, text string) (blocks []localBlock, problems []string) {
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "```") {
			continue
		}
		open, lang := i, strings.TrimPrefix(lines[i], "```")
		for i++; i < len(lines) && lines[i] != "```"; i++ {
		}
		body := lines[open+1 : min(i, len(lines))]
		if lang != "sh" {
			if lang != "text" && slices.ContainsFunc(body, func(l string) bool { return strings.HasPrefix(l, "$ ") }) {
				problems = append(problems, fmt.Sprintf("%s:%d: a transcript of commands fenced as %q: make the commands a sh block and the output text", name, open+1, lang))
			}
			continue
		}
		b := localBlock{code: strings.Join(body, "\n") + "\n", doc: name, line: open + 1}
		var m []string
		if open > 0 {
			m = readmeMarkerRE.FindStringSubmatch(lines[open-1])
		}
		switch {
		case m == nil:
			problems = append(problems, fmt.Sprintf("%s: a shell block without a readme marker (run, dev, or not run: REASON)", b.where()))
			continue
		case strings.HasPrefix(m[1], "run"):
			b.kind = "run"
			for _, c := range strings.Split(m[2], ",") {
				if c = strings.TrimSpace(c); c != "" {
					b.expects = append(b.expects, c)
				}
			}
		case m[1] == "dev":
			b.kind = "dev"
		default:
			b.kind = "not run"
		}
		blocks = append(blocks, b)
	}
	return blocks, problems
}

// TestREADMEMarkers: what the README test accepts and refuses.
func TestREADMEMarkers(t *testing.T) {
	doc := "# R\n\n<!-- readme: dev -->\n```sh\nECHO_DELAY=1s make dev\n```\n\n<!-- readme: run; expects SESSION_BUSY, TURN_INTERRUPTED -->\n```sh\ncurl x\n```\n" +
		"\n<!-- readme: not run: needs AWS -->\n```sh\naws y\n```\n\n```text\n$ output\n```\n\n<!-- readme: run -->\n```sh\necho after\n```\n"
	blocks, problems := localBlocks("page.md", doc)
	if len(problems) != 0 || len(blocks) != 4 || blocks[0].kind != "dev" || blocks[1].kind != "run" || blocks[2].kind != "not run" ||
		blocks[3].code != "echo after\n" || strings.Join(blocks[1].expects, " ") != "SESSION_BUSY TURN_INTERRUPTED" ||
		blocks[3].where() != "page.md:23" {
		t.Fatalf("blocks %+v, problems %q", blocks, problems)
	}
	for name, bad := range map[string]string{
		"no marker":            "```sh\ncurl x\n```\n",
		"a transcript as code": "```\n$ curl x\n```\n",
		"an unknown marker":    "<!-- readme: maybe -->\n```sh\ncurl x\n```\n",
	} {
		if _, problems := localBlocks("page.md", bad); len(problems) != 1 {
			t.Errorf("%s: problems %q, want one", name, problems)
		}
	}
	if got := codesIn(`{"code":"CONFIRMATION_NOT_FOUND"} HTTP 404: SESSION_NOT_FOUND: x; NOT_A_CODE, TURN_INTERRUPTED`); strings.Join(got, " ") != "CONFIRMATION_NOT_FOUND SESSION_NOT_FOUND TURN_INTERRUPTED" {
		t.Errorf("codesIn = %v", got)
	}
}

// TestRunDocs checks, without running anything, that the documents
// TestREADMERunsAsPasted runs parse (every shell block marked), that no
// other page holds a run marker, and that no run block has gone missing.
func TestRunDocs(t *testing.T) {
	runs := 0
	for _, b := range readmeLocalBlocks(t) {
		if b.kind == "run" {
			runs++
		}
	}
	if runs < minRunBlocks {
		t.Errorf("%s hold %d run blocks, want at least %d", strings.Join(runDocs, " and "), runs, minRunBlocks)
	}
}

// devLineRE is a dev block's command: environment assignments, then make dev.
var devLineRE = regexp.MustCompile(`^((?:[A-Z][A-Z0-9_]*=\S*\s+)*)make dev(?:\s+#.*)?$`)

// devEnv returns the environment a dev block starts make dev with.
func devEnv(t *testing.T, b localBlock) []string {
	t.Helper()
	var found []string
	n := 0
	for _, l := range strings.Split(strings.TrimSpace(b.code), "\n") {
		if l = strings.TrimSpace(l); l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		m := devLineRE.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("%s: a dev block holds %q: only [VAR=value ...] make dev", b.where(), l)
		}
		n++
		found = strings.Fields(m[1])
	}
	if n != 1 {
		t.Fatalf("%s: a dev block must hold one make dev", b.where())
	}
	return found
}

// codeRE finds diagnostic codes in output; only the protocol's own codes
// count (protocol.NewDiagnostic knows them).
var codeRE = regexp.MustCompile(`\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b`)

func codesIn(out string) []string {
	var codes []string
	for _, c := range codeRE.FindAllString(out, -1) {
		if protocol.NewDiagnostic(c).Code == c && !slices.Contains(codes, c) {
			codes = append(codes, c)
		}
	}
	return codes
}

// TestREADMERunsAsPasted runs the shell blocks of runDocs (the README's
// first session, then docs/walkthrough.md) in order, as a reader pastes them, in one bash (variables
// carry from block to block) in the repository's root: a dev block
// (re)starts the dev server with its environment (built from this
// checkout, on a free port: the blocks' 127.0.0.1:8787 is replaced by it,
// and turnctl's default URLs point at it through TURNSTREAM_TURN_URL,
// TURNSTREAM_HISTORY_URL and TURNSTREAM_ARTIFACTS_URL); a run block must succeed (bash -e, pipefail)
// and its output must show exactly the diagnostic codes its marker
// expects: a CONFIRMATION_NOT_FOUND or SESSION_NOT_FOUND nobody expected
// fails it. Builds (make turnctl) use the race detector when this test
// does, so that they reuse the suite's build cache.
func TestREADMERunsAsPasted(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "make", "timeout", "mktemp", "grep"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is missing: the README test cannot run", tool)
			}
			t.Skipf("!!! %s is missing: the blocks of %s were NOT run", tool, strings.Join(runDocs, " and "))
		}
	}
	blocks := readmeLocalBlocks(t)
	root := repoRoot(t)
	dir := t.TempDir()
	goflags := strings.TrimSpace(os.Getenv("GOFLAGS"))
	if raceEnabled && !strings.Contains(goflags, "-race") {
		goflags = strings.TrimSpace(goflags + " -race")
	}
	devserver := filepath.Join(dir, "devserver")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", devserver, "./cmd/devserver")
	build.Dir, build.Env = root, append(os.Environ(), "GOFLAGS="+goflags)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the dev server: %v\n%s", err, out)
	}

	var srv *devProcess
	t.Cleanup(func() { srv.stop() })
	sh := newShell(t, root, append(os.Environ(), "GOFLAGS="+goflags))
	ran := 0
	for i, b := range blocks {
		switch b.kind {
		case "not run":
			continue
		case "dev":
			srv.stop()
			srv = startDev(t, devserver, dir, devEnv(t, b))
			sh.run(t, b.where(), fmt.Sprintf("export TURNSTREAM_TURN_URL=http://%[1]s/turn/ TURNSTREAM_HISTORY_URL=http://%[1]s/history/ TURNSTREAM_ARTIFACTS_URL=http://%[1]s/artifacts/", srv.addr))
			continue
		}
		if srv == nil {
			t.Fatalf("%s: a run block before any dev block: nothing serves it", b.where())
		}
		code := strings.ReplaceAll(b.code, "127.0.0.1:8787", srv.addr)
		start := time.Now()
		out := sh.run(t, b.where(), code)
		ran++
		t.Logf("%s (block %d, %v):\n%s", b.where(), i, time.Since(start).Round(time.Millisecond), out)
		got := codesIn(out)
		for _, c := range got {
			if !slices.Contains(b.expects, c) {
				t.Errorf("%s: the output shows %s, which the block does not expect:\n%s", b.where(), c, out)
			}
		}
		for _, c := range b.expects {
			if !slices.Contains(got, c) {
				t.Errorf("%s: the output does not show %s, which the block expects:\n%s", b.where(), c, out)
			}
		}
	}
	if ran < minRunBlocks {
		t.Errorf("only %d blocks ran, want at least %d", ran, minRunBlocks)
	}
}

// minRunBlocks is how many run blocks ran when the walk-through moved from
// the README to docs/walkthrough.md (its 14, plus the README's first
// session): fewer means a block stopped running.
const minRunBlocks = 15

// shell is one bash process that runs blocks one after the other.
type shell struct {
	stdin io.WriteCloser
	lines chan string
	done  chan struct{}
	n     int
}

func newShell(t *testing.T, dir string, env []string) *shell {
	t.Helper()
	cmd := exec.Command("bash", "--noprofile", "--norc")
	cmd.Dir, cmd.Env = dir, env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &shell{stdin: stdin, lines: make(chan string, 1024), done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		_ = pw.Close()
		close(s.done)
	}()
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
	}()
	t.Cleanup(func() {
		_ = stdin.Close()
		select {
		case <-s.done:
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
		}
	})
	return s
}

// blockTimeout bounds one block: far beyond what any takes, so that a
// block that hangs fails the test instead of the whole run.
const blockTimeout = 5 * time.Minute

// run runs code in the shell under set -e and pipefail and returns its
// output; a failure (the shell exits) or a hang fails the test.
func (s *shell) run(t *testing.T, where string, code string) string {
	t.Helper()
	s.n++
	sentinel := fmt.Sprintf("@@readme-block-%d-done@@", s.n)
	script := "set -e -o pipefail\n" + code + "\nset +e +o pipefail\necho " + sentinel + "\n"
	if _, err := io.WriteString(s.stdin, script); err != nil {
		t.Fatalf("%s: the shell is gone: %v", where, err)
	}
	var out strings.Builder
	timer := time.NewTimer(blockTimeout)
	defer timer.Stop()
	for {
		select {
		case l, ok := <-s.lines:
			if !ok {
				t.Fatalf("%s: the block failed (the shell exited):\n%s", where, out.String())
			}
			if l == sentinel {
				return out.String()
			}
			out.WriteString(l + "\n")
		case <-timer.C:
			t.Fatalf("%s: the block did not end within %v:\n%s", where, blockTimeout, out.String())
		}
	}
}

// devProcess is a running dev server.
type devProcess struct {
	cmd  *exec.Cmd
	addr string
	exit chan struct{}
}

// startDev starts the dev server binary on a free loopback port with env
// added to this process's environment, as make dev starts it.
func startDev(t *testing.T, bin, dir string, env []string) *devProcess {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	cmd := exec.Command(bin, "-addr", addr)
	cmd.Dir = dir
	var base []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "ECHO_DELAY", "ECHO_CHUNK_RUNES", "CHECKPOINT_INTERVAL", "MODEL_TOOLS", "DYNAMODB_ENDPOINT", "ADDR", "AUTH_MODE":
			continue // what make dev would find in a reader's shell: nothing of ours
		}
		base = append(base, kv)
	}
	cmd.Env = append(base, env...)
	log, err := os.Create(filepath.Join(dir, "devserver-"+strings.ReplaceAll(addr, ":", "-")+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &devProcess{cmd: cmd, addr: addr, exit: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		_ = log.Close()
		close(p.exit)
	}()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			_ = c.Close()
			return p
		}
		select {
		case <-p.exit:
			b, _ := os.ReadFile(log.Name())
			t.Fatalf("the dev server (%v) exited:\n%s", env, b)
		case <-ctx.Done():
			t.Fatalf("the dev server does not listen on %s", addr)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stop ends the dev server as Ctrl-C does and waits for it.
func (p *devProcess) stop() {
	if p == nil {
		return
	}
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.exit:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exit
	}
}
