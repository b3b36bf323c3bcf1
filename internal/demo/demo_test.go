package demo_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"

	"github.com/turnstream/turnstream/internal/demo"
)

func TestHandler(t *testing.T) {
	fallback := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
	})
	h := demo.Handler(fallback)
	tests := map[string]struct {
		method, path string
		status       int
		contentType  string
	}{
		"page":          {"GET", "/", 200, "text/html; charset=utf-8"},
		"page by name":  {"GET", "/index.html", 200, "text/html; charset=utf-8"},
		"script":        {"GET", "/app.js", 200, "text/javascript; charset=utf-8"},
		"styles":        {"GET", "/app.css", 200, "text/css; charset=utf-8"},
		"head":          {"HEAD", "/", 200, "text/html; charset=utf-8"},
		"unknown path":  {"GET", "/favicon.ico", http.StatusTeapot, ""},
		"a mount":       {"GET", "/turn/capabilities", http.StatusTeapot, ""},
		"post the page": {"POST", "/", http.StatusTeapot, ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d", rec.Code, tc.status)
			}
			if tc.contentType == "" {
				return
			}
			if got := rec.Header().Get("Content-Type"); got != tc.contentType {
				t.Errorf("Content-Type %q, want %q", got, tc.contentType)
			}
			if got := rec.Header().Get("Content-Security-Policy"); got != demo.ContentSecurityPolicy {
				t.Errorf("Content-Security-Policy %q", got)
			}
			if tc.method == "HEAD" && rec.Body.Len() != 0 {
				t.Errorf("HEAD wrote %d body bytes", rec.Body.Len())
			}
			if tc.method == "GET" && rec.Body.Len() == 0 {
				t.Error("empty body")
			}
		})
	}
}

// TestPageIsSelfContained: the page references only its own files, and
// no asset names another origin (no CDN, no network at run time).
func TestPageIsSelfContained(t *testing.T) {
	h := demo.Handler(http.NotFoundHandler())
	get := func(path string) string {
		t.Helper()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		b, _ := io.ReadAll(rec.Body)
		return string(b)
	}
	page := get("/")
	refs := regexp.MustCompile(`(?:src|href)="([^"]*)"`).FindAllStringSubmatch(page, -1)
	if len(refs) < 2 {
		t.Fatalf("page references %d files, want its script and styles", len(refs))
	}
	for _, m := range refs {
		ref := m[1]
		if ref == "data:," {
			continue // the empty icon, so the browser asks for no favicon
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/"+ref, nil))
		if rec.Code != http.StatusOK {
			t.Errorf("page references %q: status %d", ref, rec.Code)
		}
	}
	external := regexp.MustCompile(`(?i)(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}/`)
	// Text that names a URL without loading it: namespace URIs, marked's
	// own error message ("Please report this to https://github.com/..."),
	// and the bundled libraries' license notices at the end of app.js.
	inert := regexp.MustCompile(`http://www\.w3\.org/|Please report this to https://github\.com/markedjs/marked\.|\(\*! [^\n]*\*\)`)
	for _, path := range []string{"/", "/app.js", "/app.css"} {
		if loc := external.FindString(inert.ReplaceAllString(get(path), "")); loc != "" {
			t.Errorf("%s names another origin: %q", path, loc)
		}
	}
}
