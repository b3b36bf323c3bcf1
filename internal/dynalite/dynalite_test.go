package dynalite

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

// TestMain runs the tests, then proves that Stop leaves no dynalite
// process behind.
func TestMain(m *testing.M) {
	code := m.Run()
	mu.Lock()
	var pid int
	if server != nil {
		pid = server.Pid()
	}
	mu.Unlock()
	Stop()
	if pid != 0 {
		if gone, err := processGone(pid); !gone {
			fmt.Fprintf(os.Stderr, "dynalite process %d still exists after Stop (%v)\n", pid, err)
			code = 1
		}
	}
	os.Exit(code)
}

func TestEndpointIsStartedOnce(t *testing.T) {
	first := Endpoint(t)
	if second := Endpoint(t); second != first {
		t.Errorf("second Endpoint = %q, want the first server %q", second, first)
	}
	if os.Getenv(EndpointEnv) == "" && server == nil {
		t.Error("no dynalite process recorded")
	}
}

func TestTableCreatedAndDeleted(t *testing.T) {
	ctx := context.Background()
	client := Client(t)
	var name string
	t.Run("create", func(t *testing.T) {
		name = Table(t)
		if err := dynamo.CreateTable(ctx, client, name); err == nil {
			t.Errorf("table %s could be created twice: Table did not create it", name)
		}
	})
	// The subtest's cleanup deleted the table: its name is free again.
	if err := dynamo.CreateTable(ctx, client, name); err != nil {
		t.Fatalf("table %s was not deleted after its test: %v", name, err)
	}
	if err := dynamo.DeleteTable(ctx, client, name); err != nil {
		t.Error(err)
	}
}

func TestRepoRootHoldsGoMod(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(root + "/go.mod"); err != nil {
		t.Errorf("repoRoot %s has no go.mod: %v", root, err)
	}
}

func TestCheckInstalled(t *testing.T) {
	root := t.TempDir()
	bin := filepath.Join(root, "dynalite")
	noNode := func(string) (string, error) { return "", exec.ErrNotFound }
	hasNode := func(string) (string, error) { return "/usr/bin/node", nil }
	if got := checkInstalled(bin, root, hasNode); !strings.Contains(got, "npm ci") {
		t.Errorf("without dynalite: %q, want advice to run `npm ci`", got)
	}
	if err := os.WriteFile(bin, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := checkInstalled(bin, root, noNode); !strings.Contains(got, "install Node") {
		t.Errorf("without node: %q, want advice to install Node", got)
	}
	if got := checkInstalled(bin, root, hasNode); got != "" {
		t.Errorf("with both: %q, want nothing missing", got)
	}
}

func TestIsLoopback(t *testing.T) {
	tests := map[string]bool{
		"http://127.0.0.1:8000":                    true,
		"http://localhost:8000":                    true,
		"http://[::1]:8000":                        true,
		"https://dynamodb.eu-west-1.amazonaws.com": false,
		"http://10.0.0.5:8000":                     false,
		"::not a url":                              false,
	}
	for endpoint, want := range tests {
		if got := isLoopback(endpoint); got != want {
			t.Errorf("isLoopback(%q) = %v, want %v", endpoint, got, want)
		}
	}
}

// TestExitWhileInUseIsReported: a server that dies while in use says so,
// with its exit and stderr (every test sharing it fails next); one that
// Stop ends says nothing.
func TestExitWhileInUseIsReported(t *testing.T) {
	if os.Getenv(EndpointEnv) != "" {
		t.Skip("a server named by " + EndpointEnv + " is not ours to kill")
	}
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	var reports atomic.Int32
	var last atomic.Value
	prev := reportExit
	reportExit = func(format string, a ...any) { reports.Add(1); last.Store(fmt.Sprintf(format, a...)) }
	t.Cleanup(func() { reportExit = prev })

	Endpoint(t) // skips without Node, and fails instead when CI=true
	killed, err := Start(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := killed.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-killed.done
	if reports.Load() != 1 || !strings.Contains(last.Load().(string), "exited while in use") {
		t.Errorf("a killed server: %d reports, last %v", reports.Load(), last.Load())
	}
	killed.Stop()

	stopped, err := Start(root)
	if err != nil {
		t.Fatal(err)
	}
	stopped.Stop()
	if reports.Load() != 1 {
		t.Errorf("a stopped server was reported: %v", last.Load())
	}
}

// TestAbortedRequestKeepsTheServer: a client that gives up while sending
// a request's body (an SDK attempt timeout) does not take the server down
// (patch-dynalite.mjs's second patch; unpatched, dynalite throws).
func TestAbortedRequestKeepsTheServer(t *testing.T) {
	if os.Getenv(EndpointEnv) != "" {
		t.Skip("a server named by " + EndpointEnv + " is not dynalite")
	}
	ep := Endpoint(t)
	u, err := url.Parse(ep)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		conn, err := net.Dial("tcp", u.Host)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.WriteString(conn, "POST / HTTP/1.1\r\nHost: "+u.Host+"\r\nContent-Type: application/x-amz-json-1.0\r\n"+
			"X-Amz-Target: DynamoDB_20120810.ListTables\r\nContent-Length: 100\r\n\r\n{\"Li")
		_ = conn.Close()
	}
	// The server answers after the aborts (a crash closes its port):
	// Table creates a table on it, and fails the test when it cannot.
	Table(t)
}
