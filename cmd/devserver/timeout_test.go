package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/protocol"
)

// guard is how long a test waits for the server before calling it hung.
// It only bounds a failing run: a passing one never waits for it.
const guard = 2 * time.Minute

// TestTimeouts: with -read-timeout set short, a body trickled a byte at a
// time is cut (the server answers an error or closes the connection while
// the body is still incomplete), on each mount that reads a body; a body
// that stops arriving is answered 408 SERVER_TIMEOUT (not 499, as if the
// client had gone); and a
// turn whose stream lasts several times the read timeout still streams to
// its terminal snapshot (ReadTimeout bounds reading the request, never
// the response).
func TestTimeouts(t *testing.T) {
	t.Parallel()
	const readTimeout = 300 * time.Millisecond
	env := map[string]string{"ECHO_DELAY": "200ms", "ECHO_CHUNK_RUNES": "4", "LEASE_DURATION": "3s"}
	s := startServer(t, env, "-read-timeout", readTimeout.String())

	t.Run("trickled body is cut", func(t *testing.T) {
		for name, target := range map[string]struct{ method, path string }{
			"turn submit": {http.MethodPost, "/turn/"},
			"turn stop":   {http.MethodPost, "/turn/stop"},
			"artifacts":   {http.MethodPut, "/artifacts/sessions/s1/turns/t1/artifacts"},
		} {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				trickle(t, s.url, target.method, target.path)
			})
		}
	})

	t.Run("stalled body is 408", func(t *testing.T) {
		for name, target := range map[string]struct{ method, path string }{
			"turn submit": {http.MethodPost, "/turn/"},
			"turn stop":   {http.MethodPost, "/turn/stop"},
			"artifacts":   {http.MethodPut, "/artifacts/sessions/s1/turns/t1/artifacts"},
		} {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				resp, body := stall(t, s.url, target.method, target.path)
				want := string(protocol.EncodeErrorBody(protocol.NewDiagnostic(protocol.CodeServerTimeout)))
				if resp.StatusCode != http.StatusRequestTimeout || string(body) != want {
					t.Fatalf("status %d, body %s; want 408 %s", resp.StatusCode, body, want)
				}
				if ct := resp.Header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
					t.Errorf("Content-Type %q", ct)
				}
			})
		}
	})

	t.Run("long stream is not cut", func(t *testing.T) {
		t.Parallel()
		// 10 echo chunks 200 ms apart: the stream lasts about 2 s, more
		// than six read timeouts, however fast the machine.
		const input = "forty characters of input, streamed slow"
		events := submit(t, s.url+"/turn/", "alice", "long-stream", "t1", input)
		last := events[len(events)-1]
		if last.Snapshot == nil || last.Snapshot.Status != protocol.StatusComplete {
			t.Fatalf("last line = %+v, want a complete snapshot", last)
		}
		if n := len(events); n < 3 {
			t.Fatalf("%d lines, want a streaming turn of several snapshots", n)
		}
	})
}

// trickle opens a connection, sends a request declaring a 60,000-byte body
// (under MAX_BODY_BYTES, so no early 413) and writes it one byte every
// 10 ms, which would take ten minutes. It passes when the server, before
// the body is complete, answers an error status or closes the
// connection; it fails when nothing happens within guard.
func trickle(t *testing.T, base, method, path string) {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	const bodySize = 60_000
	head := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"+
		"Authorization: Bearer dev.host\r\nContent-Length: %d\r\n\r\n", method, path, u.Host, bodySize)
	if _, err := conn.Write([]byte(head + "{")); err != nil {
		t.Fatal(err)
	}
	var sent atomic.Int64
	sent.Store(1)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for sent.Load() < bodySize-1 {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if _, err := conn.Write([]byte(" ")); err != nil {
				return // the server closed the connection
			}
			sent.Add(1)
		}
	}()

	if err := conn.SetReadDeadline(time.Now().Add(guard)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	switch {
	case err == nil:
		_ = resp.Body.Close()
		if resp.StatusCode < 400 {
			t.Fatalf("status %d for an incomplete body, want an error status", resp.StatusCode)
		}
	case errors.Is(err, os.ErrDeadlineExceeded):
		t.Fatalf("the server still waited for the trickled body after %s (%d of %d bytes sent)", guard, sent.Load(), bodySize)
	default:
		// EOF or a reset: the server closed the connection.
		if !isClosed(err) {
			t.Fatalf("reading the answer: %v, want a response or a closed connection", err)
		}
	}
	if n := sent.Load(); n >= bodySize-1 {
		t.Fatalf("the whole body (%d bytes) was sent before the server answered", n)
	}
}

// stall sends a request declaring a 100-byte body, sends one byte of it
// and then nothing, and returns the server's answer and its body. The
// client writes nothing more, so the server has read every byte it was
// sent when it answers, and its close cannot reset the answer away. A
// connection closed with no answer at all is the header read timing out
// on a machine too busy to read it in time (net/http answers nothing
// then): stall tries again on a new connection until guard passes.
func stall(t *testing.T, base, method, path string) (*http.Response, []byte) {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(guard)
	for attempt := 1; ; attempt++ {
		resp, body, err := stallOnce(u.Host, method, path, deadline)
		if err == nil {
			return resp, body
		}
		if errors.Is(err, os.ErrDeadlineExceeded) || !isClosed(err) || time.Now().After(deadline) {
			t.Fatalf("attempt %d: no answer to a stalled body: %v", attempt, err)
		}
	}
}

// stallOnce is one attempt of stall.
func stallOnce(host, method, path string, deadline time.Time) (*http.Response, []byte, error) {
	conn, err := net.Dial("tcp", host)
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = conn.Close() }()
	head := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"+
		"Authorization: Bearer dev.host\r\nContent-Length: 100\r\n\r\n{", method, path, host)
	if _, err := conn.Write([]byte(head)); err != nil {
		return nil, nil, err
	}
	if err := conn.SetReadDeadline(deadline); err != nil {
		return nil, nil, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return resp, body, err
}

// isClosed reports whether err says the peer closed the connection.
func isClosed(err error) bool {
	var op *net.OpError
	return errors.Is(err, net.ErrClosed) || errors.As(err, &op) ||
		strings.Contains(err.Error(), "EOF") || strings.Contains(err.Error(), "connection reset")
}
