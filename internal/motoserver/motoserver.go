// Package motoserver starts moto's server (moto_server, Python) for tests
// that need an AWS API other than DynamoDB: S3 for attachments, and
// CloudFormation, Lambda, IAM and the rest for the deploy walk-through.
// moto is no oracle of DynamoDB semantics (internal/dynalite is) and does
// not verify S3 POST policies (attach.VerifyPost does, docs/attachments.md).
package motoserver

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// Start starts moto's server on a free loopback port until tb ends and
// returns its URL ("http://127.0.0.1:<port>"). Without moto_server on the
// PATH it skips tb with the install hint, or fails it under CI=true
// (.ci/run installs moto).
func Start(tb testing.TB) string {
	tb.Helper()
	srv, err := Run()
	if errors.Is(err, ErrMissing) {
		msg := "*** moto_server not found: pip install 'moto[server]' (.ci/run does) ***"
		if os.Getenv("CI") == "true" {
			tb.Fatal(msg)
		}
		tb.Skip(msg)
	}
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(srv.Stop)
	return srv.URL
}

// ErrMissing is Run's error when moto_server is not on the PATH.
var ErrMissing = errors.New("motoserver: moto_server not found on the PATH (pip install 'moto[server]')")

// Server is one moto_server process (Run).
type Server struct {
	// URL is its base URL: "http://127.0.0.1:<port>".
	URL    string
	cmd    *exec.Cmd
	exited chan struct{}
}

// Run starts moto's server on a free loopback port and waits, up to two
// minutes, until it answers: for programs (turnbench) rather than tests
// (Start). The caller stops it with Stop. ErrMissing without moto_server
// on the PATH.
func Run() (*Server, error) {
	bin, err := exec.LookPath("moto_server")
	if err != nil {
		return nil, ErrMissing
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	_ = l.Close()
	cmd := exec.Command(bin, "-H", "127.0.0.1", "-p", port)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	setProcAttr(cmd)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	srv := &Server{URL: "http://127.0.0.1:" + port, cmd: cmd, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(srv.exited) }()
	// moto takes a few seconds to import its services; a loaded machine
	// takes longer, so the wait is generous and polls.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := http.Get(srv.URL + "/moto-api/")
		if err == nil {
			_ = resp.Body.Close()
			return srv, nil
		}
		select {
		case <-srv.exited:
			return nil, fmt.Errorf("moto_server exited: %s", out.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			srv.Stop()
			return nil, fmt.Errorf("moto_server does not answer on %s", srv.URL)
		}
	}
}

// Stop kills the server and waits for it to exit.
func (s *Server) Stop() {
	_ = s.cmd.Process.Kill()
	<-s.exited
}
