package demo_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"

	"github.com/turnstream/turnstream/internal/demo"
	"github.com/turnstream/turnstream/pkg/config"
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
		"sign-in":       {"GET", "/signin.js", 200, "text/javascript; charset=utf-8"},
		"highlighter":   {"GET", "/syntax.js", 200, "text/javascript; charset=utf-8"},
		"settings":      {"GET", "/config.json", 200, "application/json"},
		"post settings": {"POST", "/config.json", http.StatusTeapot, ""},
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
	// highlight.js's console warnings (unescaped HTML in highlightElement,
	// the deprecated highlight(lang, code) form; the page calls neither), and the bundled
	// libraries' license notices at the end of app.js.
	inert := regexp.MustCompile(`http://www\.w3\.org/|Please report this to https://github\.com/markedjs/marked\.|https://github\.com/highlightjs/highlight\.js/(?:wiki/security|issues/2277)|\(\*! [^\n]*\*\)`)
	for _, path := range []string{"/", "/app.js", "/app.css", "/signin.js", "/syntax.js"} {
		if loc := external.FindString(inert.ReplaceAllString(get(path), "")); loc != "" {
			t.Errorf("%s names another origin: %q", path, loc)
		}
	}
}

// TestSignInSettings: /config.json tells the page how to sign in, and the
// Content Security Policy lets it reach its issuer and nothing else.
func TestSignInSettings(t *testing.T) {
	get := func(h http.Handler, path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		return rec
	}
	dev := get(demo.Handler(http.NotFoundHandler()), "/config.json")
	if got := dev.Body.String(); got != `{"signIn":"dev"}` {
		t.Errorf("dev settings %s", got)
	}

	page := config.PageConfig{
		Serve: true, Authority: "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_Pool", ClientID: "client-1",
		Scope: "openid email", LogoutURL: "https://chat.auth.us-east-1.amazoncognito.com/logout",
		ConnectOrigins: []string{"https://chat.auth.us-east-1.amazoncognito.com", "https://cognito-idp.us-east-1.amazonaws.com"},
		UploadsPath:    "/uploads/",
	}
	h := demo.NewHandler(page, http.NotFoundHandler())
	rec := get(h, "/config.json")
	want := `{"signIn":"oidc","authority":"https://cognito-idp.us-east-1.amazonaws.com/us-east-1_Pool","clientId":"client-1","scope":"openid email","logoutUrl":"https://chat.auth.us-east-1.amazoncognito.com/logout","uploadsPath":"/uploads/"}`
	if got := rec.Body.String(); got != want {
		t.Errorf("settings\n%s\nwant\n%s", got, want)
	}
	policy := "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self' https://cognito-idp.us-east-1.amazonaws.com https://chat.auth.us-east-1.amazoncognito.com; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
	for _, path := range []string{"/", "/app.js", "/signin.js", "/config.json"} {
		if got := get(h, path).Header().Get("Content-Security-Policy"); got != policy {
			t.Errorf("%s: policy %q", path, got)
		}
	}
	if got := demo.PolicyFor(config.PageConfig{Serve: true}); got != demo.ContentSecurityPolicy {
		t.Errorf("a dev page's policy %q", got)
	}
}
