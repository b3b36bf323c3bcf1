package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestDemoPage: the root serves the embedded demo page; other unknown
// paths are still the JSON not-found answer.
func TestDemoPage(t *testing.T) {
	srv := startServer(t, map[string]string{"ECHO_DELAY": "0"})
	res, err := http.Get(srv.url + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(string(body), `<script type="module" src="app.js">`) {
		t.Fatalf("GET / = %d %q, want the demo page", res.StatusCode, res.Header.Get("Content-Type"))
	}
	res, err = http.Get(srv.url + "/nope")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(res.Body)
	_ = res.Body.Close()
	if res.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "REQUEST_NOT_FOUND") {
		t.Fatalf("GET /nope = %d %s, want the JSON not-found body", res.StatusCode, body)
	}
	srv.stop(t)
}
