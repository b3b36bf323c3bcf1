package mcptest

import (
	"bufio"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TSServer is the MCP server of tsserver/server.mjs, built with the
// official TypeScript SDK (@modelcontextprotocol/sdk, pinned in
// package.json): an SDK other than the one turnstream's client uses.
// Its tools: add {a, b} and remove {title}.
type TSServer struct {
	// URL is the endpoint (http://127.0.0.1:port/mcp).
	URL string
}

// StartTypeScript starts the TypeScript server with node for tb's
// duration. Without node or the npm packages (npm ci) the test is
// skipped, or fails when CI=true.
func StartTypeScript(tb testing.TB) *TSServer {
	tb.Helper()
	root, err := moduleRoot()
	if err != nil {
		tb.Fatal(err)
	}
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(root, "node_modules", "@modelcontextprotocol", "sdk", "package.json"))
	}
	if err != nil {
		msg := "node or @modelcontextprotocol/sdk is missing (npm ci installs it): " + err.Error()
		if os.Getenv("CI") == "true" {
			tb.Fatal(msg)
		}
		tb.Skip(msg)
	}
	cmd := exec.Command(node, filepath.Join(root, "internal", "mcptest", "tsserver", "server.mjs"))
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = stdin.Close() // the server exits when its stdin ends
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second): // a bound for a stuck server, not a pace
			_ = cmd.Process.Kill()
			<-done
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		tb.Fatalf("the TypeScript MCP server did not start: %v", err)
	}
	return &TSServer{URL: strings.TrimSpace(line)}
}

// Calls returns how many times the tool name ran.
func (s *TSServer) Calls(tb testing.TB, name string) int {
	tb.Helper()
	resp, err := http.Get(strings.TrimSuffix(s.URL, "/mcp") + "/calls")
	if err != nil {
		tb.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var calls map[string]int
	if err := json.NewDecoder(resp.Body).Decode(&calls); err != nil {
		tb.Fatal(err)
	}
	return calls[name]
}

// moduleRoot is the directory of the module's go.mod, from the working
// directory up.
func moduleRoot() (string, error) {
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
			return "", errors.New("mcptest: no go.mod above the working directory")
		}
		dir = parent
	}
}
