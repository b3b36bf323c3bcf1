// Package dynalite gives tests a DynamoDB API server: the one named by
// DYNAMODB_ENDPOINT (DynamoDB Local or real AWS), or else the pinned
// dynalite (package.json) started from node_modules on a free loopback
// port, once per test binary. Start starts one for any other program
// (cmd/turnbench).
//
// Test packages that use it call Main from TestMain so the server stops
// when the tests end; on Linux the server is also killed (parent-death
// signal) if the test binary dies without running Main, so no node process
// outlives it. When dynalite or Node is missing, tests are skipped, or fail
// when CI=true (make test runs `npm ci` first).
package dynalite

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

// EndpointEnv names an existing DynamoDB API server to use instead of
// starting dynalite (config DYNAMODB_ENDPOINT, docs/design.md#configuration).
const EndpointEnv = "DYNAMODB_ENDPOINT"

// region is used for the local server and when AWS_REGION is unset.
const region = "us-east-1"

// startTimeout bounds how long Endpoint waits for dynalite to answer.
const startTimeout = 15 * time.Second

var (
	once     sync.Once
	mu       sync.Mutex // guards server
	server   *Server    // started by Endpoint, nil when none runs
	endpoint string
	startErr error
	missing  string // a setup problem that skips (or fails on CI)
)

// Main runs the tests of m, stops the dynalite process if one was started
// and exits with the tests' status. Call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	Stop()
	os.Exit(code)
}

// Stop stops the dynalite process started by Endpoint, if any. Safe to
// call more than once.
func Stop() {
	mu.Lock()
	defer mu.Unlock()
	if server == nil {
		return
	}
	server.Stop()
	server = nil
}

// Endpoint returns the base URL of the DynamoDB API server for tests:
// $DYNAMODB_ENDPOINT when set, otherwise a dynalite process started once
// per test binary. It skips tb (fails it when CI=true) if dynalite or Node
// is not installed, and fails tb if the server does not start.
func Endpoint(tb testing.TB) string {
	tb.Helper()
	once.Do(start)
	if missing != "" {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("dynalite: %s", missing)
		}
		tb.Skipf("dynalite: %s", missing)
	}
	if startErr != nil {
		tb.Fatalf("dynalite: %v", startErr)
	}
	return endpoint
}

// Options returns the client options for Endpoint's server: static
// placeholder credentials for a loopback server (dynalite, DynamoDB Local),
// the environment's for any other (real AWS: pkg/awsenv). The region is
// AWS_REGION, or us-east-1.
func Options(tb testing.TB) dynamo.ClientOptions {
	tb.Helper()
	opts := dynamo.ClientOptions{Endpoint: Endpoint(tb), Region: os.Getenv("AWS_REGION")}
	if opts.Region == "" {
		opts.Region = region
	}
	opts.StaticCredentials = isLoopback(opts.Endpoint)
	// dynalite shares a busy test machine: an attempt can take seconds
	// under -race and parallel packages, far past DynamoDB's milliseconds.
	// Tests of hung attempts set their own short timeout.
	opts.AttemptTimeout = testAttemptTimeout
	return opts
}

// testAttemptTimeout is the attempt timeout of test clients.
const testAttemptTimeout = 20 * time.Second

// ResolveShare is the dynamo.Options.ResolveShare of test stores whose
// calls carry no deadline: the consistent read that resolves a failed
// write (a lost race's condition failure included) may take as long as
// one test attempt on a busy machine, where the default second can pass
// before dynalite answers.
const ResolveShare = testAttemptTimeout

// isLoopback reports whether endpoint's host is localhost or a loopback IP.
func isLoopback(endpoint string) bool {
	u, err := url.Parse(endpoint)
	if err != nil {
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Client returns a client of Endpoint's server.
func Client(tb testing.TB) dynamo.TableClient {
	tb.Helper()
	c, err := dynamo.NewClient(context.Background(), Options(tb))
	if err != nil {
		tb.Fatalf("dynalite: %v", err)
	}
	return c
}

var unsafeName = regexp.MustCompile(`[^a-zA-Z0-9_.-]+`)

// Table creates a fresh, uniquely named table (dynamo.EnsureTable) and
// deletes it when tb ends, both through a client with the default
// attempts: client may be a fault test's, whose short attempts a loaded
// machine exceeds, and a create whose answer came too late would be sent
// again and meet its own table (ResourceInUseException, which
// EnsureTable takes for the table being there: the random name is this
// call's). It returns the table name.
func Table(tb testing.TB) string {
	tb.Helper()
	admin := Client(tb)
	var suffix [4]byte
	_, _ = rand.Read(suffix[:]) // crypto/rand.Read never fails (Go 1.24+)
	base := unsafeName.ReplaceAllString(tb.Name(), "_")
	if len(base) > 200 {
		base = base[:200]
	}
	name := "ts_" + base + "_" + hex.EncodeToString(suffix[:])
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := dynamo.EnsureTable(ctx, admin, name); err != nil {
		tb.Fatalf("dynalite: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := dynamo.DeleteTable(ctx, admin, name); err != nil {
			tb.Errorf("dynalite: %v", err)
		}
	})
	return name
}

func start() {
	if ep := os.Getenv(EndpointEnv); ep != "" {
		endpoint = ep
		return
	}
	root, err := repoRoot()
	if err != nil {
		startErr = err
		return
	}
	s, err := Start(root)
	var ni *NotInstalledError
	switch {
	case errors.As(err, &ni):
		missing = ni.Missing
		return
	case err != nil:
		startErr = err
		return
	}
	mu.Lock()
	server = s
	mu.Unlock()
	endpoint = s.Endpoint()
}

// reportExit tells of a server that exited while in use (a test swaps
// it).
var reportExit = func(format string, a ...any) { fmt.Fprintf(os.Stderr, format, a...) }

// Server is a dynalite process started by Start.
type Server struct {
	cmd      *exec.Cmd
	done     chan struct{} // closed when the process has exited and been reaped
	endpoint string
	stopOnce sync.Once
	stopping atomic.Bool // set by Stop: an exit after it is expected
}

// NotInstalledError is Start's error when dynalite or Node is missing;
// Missing says what to install.
type NotInstalledError struct{ Missing string }

func (e *NotInstalledError) Error() string { return "dynalite: " + e.Missing }

// Start starts root/node_modules/.bin/dynalite (the pinned package.json
// version, patched by scripts/patch-dynalite.mjs if it is not yet; never
// through npx, whose death leaves node running) in memory
// on a free loopback port, in its own process group (on Linux also killed
// when this process dies), and waits up to 15 s until it answers HTTP.
// It returns a *NotInstalledError when dynalite or Node is missing, and
// an error naming dynalite's first stderr bytes when it does not start.
// The caller stops the server with Stop.
func Start(root string) (*Server, error) {
	bin := filepath.Join(root, "node_modules", ".bin", "dynalite")
	if m := checkInstalled(bin, root, exec.LookPath); m != "" {
		return nil, &NotInstalledError{Missing: m}
	}
	if err := ensurePatched(root); err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--host", "127.0.0.1", "--port", port,
		"--createTableMs", "0", "--deleteTableMs", "0", "--updateTableMs", "0")
	cmd.Dir = root
	cmd.Stdout = nil
	stderr := &limitedWriter{w: &strings.Builder{}, n: 4096}
	cmd.Stderr = stderr
	setProcAttr(cmd)
	s := &Server{cmd: cmd, done: make(chan struct{}), endpoint: "http://127.0.0.1:" + port}
	// On Linux the kernel sends the parent-death signal when the thread
	// that started the child exits, not the process (prctl(2),
	// PR_SET_PDEATHSIG), and the Go runtime ends a thread when a goroutine
	// locked to it exits. So the process is started, waited for and
	// reaped by one goroutine locked to its thread until then: only this
	// process's death (or Stop) ends dynalite.
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		err := cmd.Wait()
		if !s.stopping.Load() {
			// Every test sharing the server fails after this: say why.
			reportExit("dynalite: the server on %s exited while in use (%v); its stderr: %q\n", s.endpoint, err, stderr.String())
		}
		close(s.done)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	if err := waitReady(s.endpoint, s.done); err != nil {
		exited := stderr.String()
		s.Stop()
		return nil, fmt.Errorf("%w (stderr: %q)", err, exited)
	}
	return s, nil
}

// Endpoint is the server's base URL (http://127.0.0.1:port).
func (s *Server) Endpoint() string { return s.endpoint }

// Pid is the process id of the dynalite process (its group's leader).
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Stop kills the server's process group and waits for the process to be
// reaped. Safe to call more than once.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		s.stopping.Store(true)
		killGroup(s.cmd)
		<-s.done
	})
}

// waitReady polls url until it answers, exited closes or startTimeout
// passes.
func waitReady(url string, exited <-chan struct{}) error {
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return errors.New("dynalite exited before answering")
		default:
		}
		resp, err := client.Get(url)
		if err == nil {
			_ = resp.Body.Close()
			return nil
		}
		time.Sleep(25 * time.Millisecond)
	}
	return fmt.Errorf("dynalite did not answer on %s within %s", url, startTimeout)
}

// checkInstalled returns what is missing to run dynalite from bin, or "".
func checkInstalled(bin, root string, lookPath func(string) (string, error)) string {
	if _, err := os.Stat(bin); err != nil {
		return fmt.Sprintf("%s not found: run `npm ci` in %s (or set %s)", bin, root, EndpointEnv)
	}
	if _, err := lookPath("node"); err != nil {
		return "node not found in PATH: install Node 20+ (or set " + EndpointEnv + ")"
	}
	return ""
}

// patchMarkers are what scripts/patch-dynalite.mjs leaves in dynalite's
// files (relative to its package).
var patchMarkers = map[string]string{
	"db/index.js": "turnstream: skip an index entry whose item is not written yet",
	"index.js":    "turnstream: a request its client aborted is dropped",
}

// ensurePatched applies scripts/patch-dynalite.mjs (which `make deps`
// runs after npm ci) when root's dynalite lacks one of its patches:
// unpatched, dynalite 4.0.0 crashes when an index Query meets an item
// still being created, or when a client aborts a request while sending
// its body, failing every test sharing the server.
func ensurePatched(root string) error {
	patched := true
	for rel, marker := range patchMarkers {
		src, err := os.ReadFile(filepath.Join(root, "node_modules", "dynalite", filepath.FromSlash(rel)))
		if err != nil {
			return fmt.Errorf("read dynalite's %s: %w", rel, err)
		}
		patched = patched && strings.Contains(string(src), marker)
	}
	if patched {
		return nil
	}
	cmd := exec.Command("node", filepath.Join(root, "scripts", "patch-dynalite.mjs"))
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("patch dynalite: %w: %s", err, out)
	}
	return nil
}

// FreePort returns a loopback TCP port that was free a moment ago, for a
// local server that must be told its port (dynalite, the Lambda runtime
// interface emulator).
func FreePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer func() { _ = l.Close() }()
	_, port, err := net.SplitHostPort(l.Addr().String())
	return port, err
}

// repoRoot walks up from the working directory (a package directory
// under `go test`) to the directory holding go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory")
		}
		dir = parent
	}
}

type limitedWriter struct {
	mu sync.Mutex
	w  *strings.Builder
	n  int
}

// String returns what was written, up to the limit.
func (l *limitedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.String()
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if room := l.n - l.w.Len(); room > 0 {
		if len(p) > room {
			l.w.Write(p[:room])
		} else {
			l.w.Write(p)
		}
	}
	return len(p), nil
}
