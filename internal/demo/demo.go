package demo

import (
	"embed"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/turnstream/turnstream/pkg/config"
)

//go:embed assets/index.html assets/app.css assets/app.js assets/signin.js assets/syntax.js
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
	"/signin.js":  {"assets/signin.js", "text/javascript; charset=utf-8"},
	"/syntax.js":  {"assets/syntax.js", "text/javascript; charset=utf-8"},
}

// ConfigPath is where the page reads its sign-in settings (settings).
const ConfigPath = "/config.json"

// ContentSecurityPolicy is sent with every page file of a page that signs
// in with dev auth: scripts, styles and requests go to the page's own
// origin only, so the page provably loads nothing from elsewhere. A page
// that signs in with OpenID Connect may also fetch from its issuer
// (PolicyFor).
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// PolicyFor returns the Content Security Policy of a page configured by
// page: ContentSecurityPolicy, whose connect-src also names the origin of
// page.Authority and each of page.ConnectOrigins when the page signs in
// with OpenID Connect (its discovery document, key set and token endpoint;
// the sign-in itself is a navigation, which connect-src does not govern).
func PolicyFor(page config.PageConfig) string {
	if page.Authority == "" {
		return ContentSecurityPolicy
	}
	connect := []string{"'self'"}
	for _, o := range append([]string{originOf(page.Authority)}, page.ConnectOrigins...) {
		if o != "" && !slices.Contains(connect, o) {
			connect = append(connect, o)
		}
	}
	return strings.Replace(ContentSecurityPolicy, "connect-src 'self'", "connect-src "+strings.Join(connect, " "), 1)
}

// originOf returns scheme://host of an absolute URL, "" for anything else.
func originOf(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// settings is GET /config.json: how the page signs a person in. SignIn is
// "dev" (the page's ?user= names the subject as "Bearer dev.<subject>";
// only the dev server accepts it) or "oidc" (the authorization-code flow
// with PKCE at Authority as ClientID, asking for Scope; LogoutURL, when
// set, is where sign-out goes, sent client_id and logout_uri). UploadsPath,
// when set, is where the page's origin routes the attachments' storage
// (config.PageConfig.UploadsPath).
type settings struct {
	SignIn      string `json:"signIn"`
	Authority   string `json:"authority,omitempty"`
	ClientID    string `json:"clientId,omitempty"`
	Scope       string `json:"scope,omitempty"`
	LogoutURL   string `json:"logoutUrl,omitempty"`
	UploadsPath string `json:"uploadsPath,omitempty"`
}

// Handler serves the page with dev auth: NewHandler(config.PageConfig{},
// fallback).
func Handler(fallback http.Handler) http.Handler {
	return NewHandler(config.PageConfig{}, fallback)
}

// NewHandler serves the chat page's files for GET and HEAD of their paths
// ("/" is the page), and ConfigPath: the page's sign-in settings from page
// (settings; dev auth when page.Authority is empty). Every other request,
// and every other method, goes to fallback unchanged. Each answer carries
// PolicyFor(page) and is not cached without revalidation.
func NewHandler(page config.PageConfig, fallback http.Handler) http.Handler {
	policy := PolicyFor(page)
	s := settings{SignIn: "dev"}
	if page.Authority != "" {
		s = settings{SignIn: "oidc", Authority: page.Authority, ClientID: page.ClientID, Scope: page.Scope, LogoutURL: page.LogoutURL}
	}
	s.UploadsPath = page.UploadsPath
	configBody, err := json.Marshal(s)
	if err != nil {
		panic(err) // unreachable: strings only
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			fallback.ServeHTTP(w, r)
			return
		}
		var body []byte
		contentType := "application/json"
		if r.URL.Path == ConfigPath {
			body = configBody
		} else {
			f, ok := files[r.URL.Path]
			if !ok {
				fallback.ServeHTTP(w, r)
				return
			}
			b, err := assets.ReadFile(f.name)
			if err != nil {
				fallback.ServeHTTP(w, r) // unreachable: every name is embedded
				return
			}
			body, contentType = b, f.contentType
		}
		h := w.Header()
		h.Set("Content-Type", contentType)
		h.Set("Cache-Control", "no-cache")
		h.Set("Content-Security-Policy", policy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		if r.Method == http.MethodHead {
			w.WriteHeader(http.StatusOK)
			return
		}
		_, _ = w.Write(body)
	})
}
