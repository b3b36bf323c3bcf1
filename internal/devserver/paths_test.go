package devserver

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/store/memory"
)

// syncBuffer is a bytes.Buffer safe for the request log's concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestUncleanPaths: a path that is not canonical ("//", a "." or ".."
// segment, escaped or not) is the JSON 404 REQUEST_NOT_FOUND on every
// method, never the ServeMux's 307 redirect with an HTML body, and is
// logged without the path; so is an unknown path. Canonical paths still
// reach their handler.
func TestUncleanPaths(t *testing.T) {
	env := map[string]string{"AUTH_MODE": "dev"}
	cfg, err := config.FromLookup(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	authn, err := auth.New(context.Background(), cfg.Auth, auth.WithLookupEnv(func(string) (string, bool) { return "", false }))
	if err != nil {
		t.Fatal(err)
	}
	var log syncBuffer
	h, err := NewHandler(Options{
		Config: cfg, Store: memory.New(memory.Options{}), Authenticator: authn,
		RequestLog: slog.New(slog.NewJSONHandler(&log, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	notFound := string(protocol.EncodeErrorBody(protocol.NewDiagnostic(protocol.CodeRequestNotFound)))
	for _, target := range []string{
		"//",
		"///",
		"//turn/",
		"/turn//stop",
		"/turn/stop/",
		"/history//sessions/s1",
		"/history/sessions/s1//turns",
		"/turn/../history/sessions/s1",
		"/turn/%2e%2e/history/sessions/s1",
		"/turn/%2E%2E/history/sessions/s1",
		"/history/sessions/s1/..",
		"/history/sessions/s1/../../artifacts/sessions/s1/turns/t1/artifacts",
		"/..",
		"/./",
		"/.",
		"/turn/.",
		"/turn/./stop",
		"/turn/%2e/stop",
		"/no-such-route",
		"/turnx",
		"/history/../../etc/passwd",
	} {
		for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodPut} {
			t.Run(method+" "+target, func(t *testing.T) {
				rec := httptest.NewRecorder()
				r := httptest.NewRequest(method, target, strings.NewReader(`{"sessionId":"s1","turnId":"t1","input":"hi"}`))
				r.Header.Set("Content-Type", "application/json")
				h.ServeHTTP(rec, r)
				if rec.Code != http.StatusNotFound || rec.Body.String() != notFound {
					t.Fatalf("status %d, body %q; want 404 %s", rec.Code, rec.Body, notFound)
				}
				if ct := rec.Header().Get("Content-Type"); ct != "application/json; charset=utf-8" {
					t.Errorf("Content-Type %q", ct)
				}
				if loc := rec.Header().Get("Location"); loc != "" {
					t.Errorf("Location %q: a redirect", loc)
				}
			})
		}
	}
	if strings.Contains(log.String(), "passwd") || strings.Contains(log.String(), "%2e") {
		t.Errorf("the request log names a path:\n%s", log.String())
	}
	if !strings.Contains(log.String(), `"mount":"unclean"`) {
		t.Errorf("no request line for an unclean path:\n%s", log.String())
	}

	// Canonical paths still reach their handlers.
	for target, want := range map[string]int{
		"/turn/capabilities":     http.StatusOK,
		"/turn/capabilities/":    http.StatusNotFound, // the turn handler's own 404
		"/history/sessions/nope": http.StatusNotFound,
		"/":                      http.StatusOK, // the demo page
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
		if rec.Code != want {
			t.Errorf("GET %s: status %d, want %d (body %s)", target, rec.Code, want, rec.Body)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/history/sessions/nope", nil))
	if want := string(protocol.EncodeErrorBody(protocol.NewDiagnostic(protocol.CodeSessionNotFound))); rec.Body.String() != want {
		t.Errorf("GET /history/sessions/nope: %s, want %s", rec.Body, want)
	}
}

func TestCanonicalPath(t *testing.T) {
	for p, want := range map[string]bool{
		"/": true, "/turn": true, "/turn/": true, "/turn/stop": true, "/a/b/": true, "/a.b/..c/.d": true,
		"": false, "turn": false, "//": false, "/a//b": false, "/a/": true, "/a//": false,
		"/.": false, "/..": false, "/a/.": false, "/a/./b": false, "/a/../b": false, "/a/..": false, "/a/b/../": false,
	} {
		if got := canonicalPath(p); got != want {
			t.Errorf("canonicalPath(%q) = %v, want %v", p, got, want)
		}
	}
}
