package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/protocol"
)

// TestUncleanPaths: on the wire, request targets that are not canonical
// paths ("//", "..", an empty segment) and unknown paths are answered
// with the JSON 404 REQUEST_NOT_FOUND, never a redirect (the
// ServeMux's 307 with an HTML body), on GET and on POST.
func TestUncleanPaths(t *testing.T) {
	t.Parallel()
	s := startServer(t, devEnv)
	u, err := url.Parse(s.url)
	if err != nil {
		t.Fatal(err)
	}
	want := string(protocol.EncodeErrorBody(protocol.NewDiagnostic(protocol.CodeRequestNotFound)))
	for _, target := range []string{"//", "/turn//", "/turn//stop", "/turn/../history/sessions/s1", "/history/sessions/s1/../..", "/turn/%2e%2e/history/sessions/s1", "/./", "/nope"} {
		for _, method := range []string{http.MethodGet, http.MethodPost} {
			t.Run(method+" "+target, func(t *testing.T) {
				resp, body := rawRequest(t, u.Host, method, target)
				if resp.StatusCode != http.StatusNotFound || string(body) != want {
					t.Fatalf("status %d, body %q; want 404 %s", resp.StatusCode, body, want)
				}
				if loc := resp.Header.Get("Location"); loc != "" {
					t.Errorf("Location %q: a redirect", loc)
				}
			})
		}
	}
}

// rawRequest sends method target exactly as written (Go's client would
// keep them too, but this says so) with an empty JSON body and returns
// the answer and its body.
func rawRequest(t *testing.T, host, method, target string) (*http.Response, []byte) {
	t.Helper()
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	req := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}", method, target, host)
	if _, err := conn.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	if err := conn.SetReadDeadline(time.Now().Add(guard)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}
