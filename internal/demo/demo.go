package demo

import (
	"embed"
	"net/http"
)

//go:embed assets/index.html assets/app.css assets/app.js
var assets embed.FS

// file is one served asset.
type file struct {
	name        string // path inside assets
	contentType string
}

// files maps each URL path the page uses to its asset.
var files = map[string]file{
	"/":           {"assets/index.html", "text/html; charset=utf-8"},
	"/index.html": {"assets/index.html", "text/html; charset=utf-8"},
	"/app.css":    {"assets/app.css", "text/css; charset=utf-8"},
	"/app.js":     {"assets/app.js", "text/javascript; charset=utf-8"},
}

// ContentSecurityPolicy is sent with every page file: scripts, styles and
// requests go to the page's own origin only, so the page provably loads
// nothing from elsewhere.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Handler serves the demo page's files for GET and HEAD of their paths
// ("/" is the page) and hands every other request to fallback unchanged.
func Handler(fallback http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, ok := files[r.URL.Path]
		if !ok || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
			fallback.ServeHTTP(w, r)
			return
		}
		body, err := assets.ReadFile(f.name)
		if err != nil {
			fallback.ServeHTTP(w, r) // unreachable: every name is embedded
			return
		}
		h := w.Header()
		h.Set("Content-Type", f.contentType)
		h.Set("Cache-Control", "no-cache")
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		if r.Method == http.MethodHead {
			w.WriteHeader(http.StatusOK)
			return
		}
		_, _ = w.Write(body)
	})
}
