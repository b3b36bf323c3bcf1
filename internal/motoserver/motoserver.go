// Package motoserver starts moto's server (moto_server, Python) for tests
// that need an AWS API other than DynamoDB: S3 for attachments, and
// CloudFormation, Lambda, IAM and the rest for the deploy walk-through.
// moto is no oracle of DynamoDB semantics (internal/dynalite is) and does
// not verify S3 POST policies (attach.VerifyPost does, docs/attachments.md).
package motoserver

import (
	"bytes"
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
	bin, err := exec.LookPath("moto_server")
	if err != nil {
		msg := "*** moto_server not found: pip install 'moto[server]' (.ci/run does) ***"
		if os.Getenv("CI") == "true" {
			tb.Fatal(msg)
		}
		tb.Skip(msg)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	_ = l.Close()
	cmd := exec.Command(bin, "-H", "127.0.0.1", "-p", port)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	setProcAttr(cmd)
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	url := "http://127.0.0.1:" + port
	// moto takes a few seconds to import its services; a loaded machine
	// takes longer, so the wait is generous and polls.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := http.Get(url + "/moto-api/")
		if err == nil {
			_ = resp.Body.Close()
			return url
		}
		select {
		case <-exited:
			tb.Fatalf("moto_server exited: %s", out.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			tb.Fatalf("moto_server does not answer on %s", url)
		}
	}
}
