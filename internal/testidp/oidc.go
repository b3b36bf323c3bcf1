package testidp

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
	"github.com/lestrrat-go/jwx/v3/jwt"
)

// Provider is a small OpenID Connect issuer for the chat page's sign-in on
// a developer's machine and in its browser tests: the authorization-code
// flow with PKCE (S256 only) for one public client, refresh tokens (rotated
// on use), RP-initiated logout, discovery and a key set. It signs in
// whoever types a name, with no password: it is for loopback use, never a
// deployment. Its tokens have the shapes Amazon Cognito's have, so the
// page and the functions are tested as a deployment configures them: the
// access token carries "client_id" (the client's id) and no "aud"; the ID
// token's "aud" is the client's id.
//
// Paths under the issuer URL: /.well-known/openid-configuration, /jwks,
// /authorize (GET shows the sign-in form, POST submits it), /token and
// /logout. Errors at /token are RFC 6749 §5.2 JSON bodies; an unknown
// client or a redirect URI outside the allowed origins is a 400 page,
// never a redirect.
type Provider struct {
	issuer    string
	clientID  string
	origins   []string
	accessTTL time.Duration
	now       func() time.Time
	key       *ecdsa.PrivateKey
	keys      []byte // the JWKS document

	mu       sync.Mutex
	codes    map[string]grant // authorization code -> what it was issued for
	refresh  map[string]grant // refresh token -> the sign-in it continues
	signedIn int              // tokens issued, both grants
}

// grant is what a code or refresh token stands for.
type grant struct {
	subject     string
	redirectURI string
	challenge   string // PKCE S256 code_challenge; codes only
	nonce       string
	scope       string
	expires     time.Time // codes only
}

// ProviderOptions configures NewProvider.
type ProviderOptions struct {
	// ClientID is the one client's id ("client_id"), required.
	ClientID string
	// RedirectOrigins are the origins (scheme://host[:port], no path) whose
	// URIs may be redirect and post-logout redirect URIs; at least one.
	RedirectOrigins []string
	// AccessTTL is an access and ID token's lifetime; default 5 minutes.
	AccessTTL time.Duration
	// Now is the clock of codes and tokens; default time.Now.
	Now func() time.Time
}

// DefaultAccessTTL is a token's lifetime when ProviderOptions leaves it 0.
const DefaultAccessTTL = 5 * time.Minute

// codeTTL is how long an authorization code may wait for its exchange.
const codeTTL = time.Minute

// providerKeyID is the kid of a Provider's signing key.
const providerKeyID = "testidp-oidc-1"

// usernamePattern is what the sign-in form accepts as a name: it becomes
// the subject, so it is kept to characters every part of the system takes
// as an identifier.
var usernamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// NewProvider returns an issuer whose URL is issuer (http://127.0.0.1:port
// once its listener is open, no trailing slash), with a fresh P-256 key.
// It returns an error for a missing client id or origin, or an issuer URL
// that is not absolute.
func NewProvider(issuer string, o ProviderOptions) (*Provider, error) {
	u, err := url.Parse(issuer)
	switch {
	case err != nil || u.Scheme == "" || u.Host == "" || strings.HasSuffix(issuer, "/"):
		return nil, errors.New("testidp: issuer must be an absolute URL without a trailing slash")
	case o.ClientID == "":
		return nil, errors.New("testidp: ClientID is required")
	case len(o.RedirectOrigins) == 0:
		return nil, errors.New("testidp: RedirectOrigins needs at least one origin")
	}
	if o.AccessTTL <= 0 {
		o.AccessTTL = DefaultAccessTTL
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	pub, err := jwk.Import(key.Public())
	if err != nil {
		return nil, err
	}
	for k, v := range map[string]any{jwk.KeyIDKey: providerKeyID, jwk.AlgorithmKey: jwa.ES256(), jwk.KeyUsageKey: "sig"} {
		if err := pub.Set(k, v); err != nil {
			return nil, err
		}
	}
	set := jwk.NewSet()
	if err := set.AddKey(pub); err != nil {
		return nil, err
	}
	keys, err := json.Marshal(set)
	if err != nil {
		return nil, err
	}
	return &Provider{
		issuer: issuer, clientID: o.ClientID, origins: slices.Clone(o.RedirectOrigins),
		accessTTL: o.AccessTTL, now: o.Now, key: key, keys: keys,
		codes: map[string]grant{}, refresh: map[string]grant{},
	}, nil
}

// Issuer is the issuer URL: the "iss" of every token and the base of
// every path.
func (p *Provider) Issuer() string { return p.issuer }

// JWKSURL is the URL of the key set (the functions' JWT_JWKS_URL).
func (p *Provider) JWKSURL() string { return p.issuer + "/jwks" }

// TokensIssued counts the token responses given so far, sign-ins and
// refreshes together: a test sees a refresh happen by it.
func (p *Provider) TokensIssued() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.signedIn
}

// Handler serves the issuer's paths.
func (p *Provider) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", p.discovery)
	mux.HandleFunc("GET /jwks", p.jwks)
	mux.HandleFunc("GET /authorize", p.authorizeForm)
	mux.HandleFunc("POST /authorize", p.authorizeSubmit)
	mux.HandleFunc("POST /token", p.token)
	mux.HandleFunc("OPTIONS /token", p.preflight)
	mux.HandleFunc("GET /logout", p.logout)
	return mux
}

// allowedURI reports whether s is an absolute URI on one of the allowed
// origins, without a fragment (RFC 6749 §3.1.2).
func (p *Provider) allowedURI(s string) bool {
	u, err := url.Parse(s)
	if err != nil || u.Fragment != "" || u.Host == "" {
		return false
	}
	return slices.Contains(p.origins, u.Scheme+"://"+u.Host)
}

// cors lets the allowed origins read the answer (the page calls the
// discovery, key set and token paths with fetch).
func (p *Provider) cors(w http.ResponseWriter, r *http.Request) {
	if o := r.Header.Get("Origin"); slices.Contains(p.origins, o) {
		w.Header().Set("Access-Control-Allow-Origin", o)
		w.Header().Add("Vary", "Origin")
	}
}

func (p *Provider) preflight(w http.ResponseWriter, r *http.Request) {
	p.cors(w, r)
	w.Header().Set("Access-Control-Allow-Methods", "POST")
	w.Header().Set("Access-Control-Allow-Headers", "Content-Type, Accept")
	w.WriteHeader(http.StatusNoContent)
}

func (p *Provider) discovery(w http.ResponseWriter, r *http.Request) {
	p.cors(w, r)
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                p.issuer,
		"authorization_endpoint":                p.issuer + "/authorize",
		"token_endpoint":                        p.issuer + "/token",
		"jwks_uri":                              p.JWKSURL(),
		"end_session_endpoint":                  p.issuer + "/logout",
		"response_types_supported":              []string{"code"},
		"grant_types_supported":                 []string{"authorization_code", "refresh_token"},
		"code_challenge_methods_supported":      []string{"S256"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"ES256"},
		"token_endpoint_auth_methods_supported": []string{"none"},
		"scopes_supported":                      []string{"openid", "profile", "email"},
	})
}

func (p *Provider) jwks(w http.ResponseWriter, r *http.Request) {
	p.cors(w, r)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(p.keys)
}

// signInPage is the sign-in form, and the page of a request that cannot be
// sent back to its client.
var signInPage = template.Must(template.New("signin").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sign in (local issuer)</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body><main>
{{if .Problem}}<h1>Cannot sign in</h1><p role="alert">{{.Problem}}</p>{{else}}
<h1>Sign in</h1>
<p>The local test issuer: any name signs in, no password.</p>
<form method="post" action="authorize">
{{range $k, $v := .Fields}}<input type="hidden" name="{{$k}}" value="{{$v}}">
{{end}}<label for="username">Name</label>
<input id="username" name="username" autocomplete="username" required pattern="[A-Za-z0-9][A-Za-z0-9._\-]{0,63}">
{{if .Invalid}}<p role="alert">A name is a letter or digit, then up to 63 letters, digits, dots, underscores or hyphens.</p>{{end}}
<button type="submit">Sign in</button>
</form>{{end}}
</main></body></html>
`))

// authorizeFields are the authorization request's parameters the form
// carries to its POST.
var authorizeFields = []string{"response_type", "client_id", "redirect_uri", "state", "code_challenge", "code_challenge_method", "scope", "nonce"}

func (p *Provider) authorizeForm(w http.ResponseWriter, r *http.Request) {
	p.authorize(w, r, r.URL.Query(), false)
}

func (p *Provider) authorizeSubmit(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		page(w, http.StatusBadRequest, "The sign-in form could not be read.")
		return
	}
	p.authorize(w, r, r.PostForm, true)
}

// authorize checks an authorization request (RFC 6749 §4.1.1, RFC 7636
// §4.3) and either shows the form or, once submitted with a valid name,
// redirects to the client with a code.
func (p *Provider) authorize(w http.ResponseWriter, r *http.Request, q url.Values, submitted bool) {
	redirect := q.Get("redirect_uri")
	if q.Get("client_id") != p.clientID || !p.allowedURI(redirect) {
		page(w, http.StatusBadRequest, "The application that sent you here is unknown, or asked to be answered at an address it did not register.")
		return
	}
	back := func(params url.Values) {
		if s := q.Get("state"); s != "" {
			params.Set("state", s)
		}
		u, _ := url.Parse(redirect) // allowedURI parsed it
		v := u.Query()
		for k, vs := range params {
			v[k] = vs
		}
		u.RawQuery = v.Encode()
		http.Redirect(w, r, u.String(), http.StatusFound)
	}
	switch {
	case q.Get("response_type") != "code":
		back(url.Values{"error": {"unsupported_response_type"}})
		return
	case q.Get("code_challenge_method") != "S256" || len(q.Get("code_challenge")) != 43:
		back(url.Values{"error": {"invalid_request"}, "error_description": {"PKCE with S256 is required"}})
		return
	case !slices.Contains(strings.Fields(q.Get("scope")), "openid"):
		back(url.Values{"error": {"invalid_scope"}, "error_description": {"the openid scope is required"}})
		return
	}
	name := q.Get("username")
	if !submitted || !usernamePattern.MatchString(name) {
		fields := map[string]string{}
		for _, k := range authorizeFields {
			fields[k] = q.Get(k)
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		// form-action governs the redirect that answers the form too: the
		// client's origins must be named.
		w.Header().Set("Content-Security-Policy", "default-src 'none'; form-action 'self' "+strings.Join(p.origins, " ")+"; frame-ancestors 'none'")
		status := http.StatusOK
		if submitted {
			status = http.StatusBadRequest
		}
		w.WriteHeader(status)
		_ = signInPage.Execute(w, map[string]any{"Fields": fields, "Invalid": submitted})
		return
	}
	code := randomToken()
	p.mu.Lock()
	p.codes[code] = grant{
		subject: name, redirectURI: redirect, challenge: q.Get("code_challenge"),
		nonce: q.Get("nonce"), scope: q.Get("scope"), expires: p.now().Add(codeTTL),
	}
	p.mu.Unlock()
	back(url.Values{"code": {code}})
}

// token serves both grants (RFC 6749 §4.1.3 with RFC 7636 §4.5, and §6).
func (p *Provider) token(w http.ResponseWriter, r *http.Request) {
	p.cors(w, r)
	w.Header().Set("Cache-Control", "no-store")
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		tokenError(w, http.StatusBadRequest, "invalid_request", "the body is not a form")
		return
	}
	f := r.PostForm
	if f.Get("client_id") != p.clientID {
		tokenError(w, http.StatusUnauthorized, "invalid_client", "unknown client")
		return
	}
	var g grant
	p.mu.Lock()
	switch f.Get("grant_type") {
	case "authorization_code":
		code := f.Get("code")
		found, ok := p.codes[code]
		delete(p.codes, code) // one use, whatever the outcome
		sum := sha256.Sum256([]byte(f.Get("code_verifier")))
		switch {
		case !ok || !p.now().Before(found.expires):
			p.mu.Unlock()
			tokenError(w, http.StatusBadRequest, "invalid_grant", "unknown, used or expired code")
			return
		case found.redirectURI != f.Get("redirect_uri"):
			p.mu.Unlock()
			tokenError(w, http.StatusBadRequest, "invalid_grant", "redirect_uri differs from the authorization request's")
			return
		case base64.RawURLEncoding.EncodeToString(sum[:]) != found.challenge:
			p.mu.Unlock()
			tokenError(w, http.StatusBadRequest, "invalid_grant", "code_verifier does not match the code_challenge")
			return
		}
		g = found
	case "refresh_token":
		old := f.Get("refresh_token")
		found, ok := p.refresh[old]
		if !ok {
			p.mu.Unlock()
			tokenError(w, http.StatusBadRequest, "invalid_grant", "unknown or revoked refresh token")
			return
		}
		delete(p.refresh, old) // rotated: each refresh token is used once
		g = found
	default:
		p.mu.Unlock()
		tokenError(w, http.StatusBadRequest, "unsupported_grant_type", "authorization_code or refresh_token")
		return
	}
	g.challenge, g.expires = "", time.Time{}
	refresh := randomToken()
	p.refresh[refresh] = g
	p.signedIn++
	p.mu.Unlock()

	now := p.now()
	access, err := p.sign(map[string]any{
		"iss": p.issuer, "sub": g.subject, "client_id": p.clientID, "token_use": "access",
		"scope": g.scope, "iat": now.Unix(), "exp": now.Add(p.accessTTL).Unix(), "jti": randomToken(),
	})
	if err != nil {
		tokenError(w, http.StatusInternalServerError, "server_error", "signing failed")
		return
	}
	idClaims := map[string]any{
		"iss": p.issuer, "sub": g.subject, "aud": p.clientID, "token_use": "id",
		"preferred_username": g.subject, "iat": now.Unix(), "exp": now.Add(p.accessTTL).Unix(),
	}
	if g.nonce != "" && f.Get("grant_type") == "authorization_code" {
		idClaims["nonce"] = g.nonce
	}
	id, err := p.sign(idClaims)
	if err != nil {
		tokenError(w, http.StatusInternalServerError, "server_error", "signing failed")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token": access, "id_token": id, "refresh_token": refresh,
		"token_type": "Bearer", "expires_in": int(p.accessTTL / time.Second), "scope": g.scope,
	})
}

// logout ends the sign-in named by id_token_hint (its refresh tokens stop
// working) and returns to post_logout_redirect_uri when it is allowed
// (OpenID Connect RP-Initiated Logout 1.0).
func (p *Provider) logout(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if hint := q.Get("id_token_hint"); hint != "" {
		if sub, ok := p.subjectOf(hint); ok {
			p.mu.Lock()
			for t, g := range p.refresh {
				if g.subject == sub {
					delete(p.refresh, t)
				}
			}
			p.mu.Unlock()
		}
	}
	if to := q.Get("post_logout_redirect_uri"); to != "" && p.allowedURI(to) {
		u, _ := url.Parse(to)
		if s := q.Get("state"); s != "" {
			v := u.Query()
			v.Set("state", s)
			u.RawQuery = v.Encode()
		}
		http.Redirect(w, r, u.String(), http.StatusFound)
		return
	}
	page(w, http.StatusOK, "You are signed out.")
}

// subjectOf returns the "sub" of a token this issuer signed.
func (p *Provider) subjectOf(token string) (string, bool) {
	t, err := jwt.Parse([]byte(token), jwt.WithKey(jwa.ES256(), p.key.Public()), jwt.WithValidate(false))
	if err != nil {
		return "", false
	}
	return t.Subject()
}

// sign returns the compact JWS of claims under the provider's key.
func (p *Provider) sign(claims map[string]any) (string, error) {
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	h := jws.NewHeaders()
	for k, v := range map[string]any{jws.KeyIDKey: providerKeyID, jws.TypeKey: "JWT"} {
		if err := h.Set(k, v); err != nil {
			return "", err
		}
	}
	signed, err := jws.Sign(payload, jws.WithKey(jwa.ES256(), p.key, jws.WithProtectedHeaders(h)))
	return string(signed), err
}

// randomToken returns 32 random bytes, base64url: a code, a refresh token
// or a jti.
func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// tokenError writes an RFC 6749 §5.2 error body.
func tokenError(w http.ResponseWriter, status int, code, description string) {
	writeJSON(w, status, map[string]string{"error": code, "error_description": description})
}

// page writes the issuer's plain page with one message.
func page(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
	w.WriteHeader(status)
	_ = signInPage.Execute(w, map[string]any{"Problem": msg})
}
