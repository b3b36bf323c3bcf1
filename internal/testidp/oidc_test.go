package testidp_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/testidp"
	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/config"
)

const (
	pageOrigin = "http://127.0.0.1:9999"
	redirect   = pageOrigin + "/"
	clientID   = "chat-page"
	verifier   = "a-code-verifier-of-at-least-43-characters-0123456789"
)

// challenge is verifier's S256 code challenge.
var challenge = func() string {
	s := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(s[:])
}()

// issuer starts a provider on loopback with a settable clock.
func issuer(t *testing.T) (*testidp.Provider, *httptest.Server, *atomic.Int64) {
	t.Helper()
	var offset atomic.Int64
	srv := httptest.NewUnstartedServer(nil)
	p, err := testidp.NewProvider("http://"+srv.Listener.Addr().String(), testidp.ProviderOptions{
		ClientID: clientID, RedirectOrigins: []string{pageOrigin},
		Now: func() time.Time { return time.Now().Add(time.Duration(offset.Load())) },
	})
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = p.Handler()
	srv.Start()
	t.Cleanup(srv.Close)
	return p, srv, &offset
}

// noRedirects is a client that shows redirects instead of following them.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func authorizeQuery(edit func(url.Values)) url.Values {
	q := url.Values{
		"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {redirect}, "state": {"st-1"},
		"code_challenge": {challenge}, "code_challenge_method": {"S256"}, "scope": {"openid email"}, "nonce": {"n-1"},
	}
	if edit != nil {
		edit(q)
	}
	return q
}

// signIn submits the sign-in form as name and returns the redirect's URL.
func signIn(t *testing.T, base, name string, edit func(url.Values)) *url.URL {
	t.Helper()
	f := authorizeQuery(edit)
	f.Set("username", name)
	res, err := noRedirects.PostForm(base+"/authorize", f)
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	if res.StatusCode != http.StatusFound {
		t.Fatalf("sign-in answered %d, want 302", res.StatusCode)
	}
	u, err := url.Parse(res.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// exchange posts form to /token and returns the status and decoded body.
func exchange(t *testing.T, base string, form url.Values) (int, map[string]any) {
	t.Helper()
	res, err := http.PostForm(base+"/token", form)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = res.Body.Close() }()
	var body map[string]any
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, body
}

func codeForm(code string) url.Values {
	return url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirect}, "client_id": {clientID}, "code_verifier": {verifier}}
}

// TestProviderSignsInRefreshesAndSignsOut runs the page's whole flow and
// checks that the access token authenticates under pkg/auth's jwt mode
// configured as the deployment configures it (audience: the client id).
func TestProviderSignsInRefreshesAndSignsOut(t *testing.T) {
	p, srv, _ := issuer(t)

	res, err := http.Get(srv.URL + "/.well-known/openid-configuration")
	if err != nil {
		t.Fatal(err)
	}
	var meta map[string]any
	if err := json.NewDecoder(res.Body).Decode(&meta); err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	if meta["issuer"] != p.Issuer() || meta["token_endpoint"] != p.Issuer()+"/token" || meta["jwks_uri"] != p.JWKSURL() {
		t.Fatalf("discovery: %v", meta)
	}

	res, err = http.Get(srv.URL + "/authorize?" + authorizeQuery(nil).Encode())
	if err != nil {
		t.Fatal(err)
	}
	form, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(form), `name="username"`) {
		t.Fatalf("authorize: %d, form %q", res.StatusCode, form)
	}

	back := signIn(t, srv.URL, "ann", nil)
	if got := back.Scheme + "://" + back.Host + back.Path; got != redirect || back.Query().Get("state") != "st-1" {
		t.Fatalf("redirected to %s", back)
	}
	status, tokens := exchange(t, srv.URL, codeForm(back.Query().Get("code")))
	if status != http.StatusOK || tokens["token_type"] != "Bearer" {
		t.Fatalf("exchange: %d %v", status, tokens)
	}

	authn, err := auth.New(context.Background(), config.AuthConfig{
		Mode: config.AuthJWT, JWKSURL: p.JWKSURL(), Issuer: p.Issuer(), Audience: clientID,
	})
	if err != nil {
		t.Fatal(err)
	}
	who := func(access any) (string, error) {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("Authorization", "Bearer "+access.(string))
		pr, err := authn.Authenticate(r)
		return pr.Subject, err
	}
	if sub, err := who(tokens["access_token"]); err != nil || sub != "ann" {
		t.Fatalf("access token: subject %q, %v", sub, err)
	}
	if _, err := who(tokens["id_token"]); err != nil {
		t.Fatalf("the ID token's aud is the client id too: %v", err)
	}
	var id struct {
		Nonce string `json:"nonce"`
		Aud   string `json:"aud"`
	}
	if err := json.Unmarshal(payload(t, tokens["id_token"].(string)), &id); err != nil || id.Nonce != "n-1" || id.Aud != clientID {
		t.Fatalf("id token %+v, %v", id, err)
	}

	// A refresh gives new tokens and retires the refresh token it used.
	refresh := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tokens["refresh_token"].(string)}, "client_id": {clientID}}
	status, renewed := exchange(t, srv.URL, refresh)
	if status != http.StatusOK || renewed["access_token"] == tokens["access_token"] || renewed["refresh_token"] == tokens["refresh_token"] {
		t.Fatalf("refresh: %d %v", status, renewed)
	}
	if sub, err := who(renewed["access_token"]); err != nil || sub != "ann" {
		t.Fatalf("renewed access token: %q, %v", sub, err)
	}
	if status, body := exchange(t, srv.URL, refresh); status != http.StatusBadRequest || body["error"] != "invalid_grant" {
		t.Fatalf("a used refresh token: %d %v", status, body)
	}
	if n := p.TokensIssued(); n != 2 {
		t.Fatalf("TokensIssued %d, want 2", n)
	}

	// Sign-out revokes the sign-in's refresh tokens and returns to the page.
	q := url.Values{"id_token_hint": {renewed["id_token"].(string)}, "post_logout_redirect_uri": {redirect}, "state": {"out-1"}}
	res, err = noRedirects.Get(srv.URL + "/logout?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	if res.StatusCode != http.StatusFound || res.Header.Get("Location") != redirect+"?state=out-1" {
		t.Fatalf("logout: %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
	refresh.Set("refresh_token", renewed["refresh_token"].(string))
	if status, body := exchange(t, srv.URL, refresh); status != http.StatusBadRequest || body["error"] != "invalid_grant" {
		t.Fatalf("refresh after sign-out: %d %v", status, body)
	}
}

// payload returns a compact JWS's decoded payload.
func payload(t *testing.T, jws string) []byte {
	t.Helper()
	parts := strings.Split(jws, ".")
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestProviderRefusesBadRequests: each bad authorization or token request
// gets its RFC error, and a request that cannot be sent back is a page, not
// a redirect.
func TestProviderRefusesBadRequests(t *testing.T) {
	_, srv, offset := issuer(t)

	page := map[string]func(url.Values){
		"unknown client":              func(q url.Values) { q.Set("client_id", "other") },
		"redirect to another origin":  func(q url.Values) { q.Set("redirect_uri", "https://evil.example/") },
		"redirect URI with fragment":  func(q url.Values) { q.Set("redirect_uri", redirect+"#x") },
		"redirect URI not a URL":      func(q url.Values) { q.Set("redirect_uri", "::") },
		"redirect URI without a host": func(q url.Values) { q.Set("redirect_uri", "/relative") },
	}
	for name, edit := range page {
		t.Run(name, func(t *testing.T) {
			res, err := noRedirects.Get(srv.URL + "/authorize?" + authorizeQuery(edit).Encode())
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			_ = res.Body.Close()
			if res.StatusCode != http.StatusBadRequest || res.Header.Get("Location") != "" || strings.Contains(string(body), "evil") {
				t.Fatalf("%d, Location %q", res.StatusCode, res.Header.Get("Location"))
			}
		})
	}

	back := map[string]struct {
		edit func(url.Values)
		want string
	}{
		"no PKCE":           {func(q url.Values) { q.Del("code_challenge") }, "invalid_request"},
		"plain PKCE":        {func(q url.Values) { q.Set("code_challenge_method", "plain") }, "invalid_request"},
		"implicit flow":     {func(q url.Values) { q.Set("response_type", "token") }, "unsupported_response_type"},
		"no openid scope":   {func(q url.Values) { q.Set("scope", "email") }, "invalid_scope"},
		"challenge too big": {func(q url.Values) { q.Set("code_challenge", challenge+"x") }, "invalid_request"},
	}
	for name, tc := range back {
		t.Run(name, func(t *testing.T) {
			res, err := noRedirects.Get(srv.URL + "/authorize?" + authorizeQuery(tc.edit).Encode())
			if err != nil {
				t.Fatal(err)
			}
			_ = res.Body.Close()
			u, _ := url.Parse(res.Header.Get("Location"))
			if res.StatusCode != http.StatusFound || u.Query().Get("error") != tc.want || u.Query().Get("state") != "st-1" || u.Query().Has("code") {
				t.Fatalf("%d to %q", res.StatusCode, res.Header.Get("Location"))
			}
		})
	}

	t.Run("name the form refuses", func(t *testing.T) {
		for _, name := range []string{"", "-ann", "a b", "<script>", strings.Repeat("a", 65)} {
			f := authorizeQuery(nil)
			f.Set("username", name)
			res, err := noRedirects.PostForm(srv.URL+"/authorize", f)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			_ = res.Body.Close()
			if res.StatusCode != http.StatusBadRequest || res.Header.Get("Location") != "" || strings.Contains(string(body), "<script>") {
				t.Fatalf("name %q: %d", name, res.StatusCode)
			}
		}
	})

	tokenCases := map[string]struct {
		form   func(code string) url.Values
		status int
		want   string
	}{
		"wrong verifier": {func(c string) url.Values {
			f := codeForm(c)
			f.Set("code_verifier", verifier+"x")
			return f
		}, http.StatusBadRequest, "invalid_grant"},
		"other redirect URI": {func(c string) url.Values {
			f := codeForm(c)
			f.Set("redirect_uri", pageOrigin+"/other")
			return f
		}, http.StatusBadRequest, "invalid_grant"},
		"unknown client": {func(c string) url.Values {
			f := codeForm(c)
			f.Set("client_id", "other")
			return f
		}, http.StatusUnauthorized, "invalid_client"},
		"unknown code": {func(string) url.Values { return codeForm("no-such-code") }, http.StatusBadRequest, "invalid_grant"},
		"client credentials": {func(c string) url.Values {
			f := codeForm(c)
			f.Set("grant_type", "client_credentials")
			return f
		}, http.StatusBadRequest, "unsupported_grant_type"},
		"unknown refresh token": {func(string) url.Values {
			return url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"nope"}, "client_id": {clientID}}
		}, http.StatusBadRequest, "invalid_grant"},
	}
	for name, tc := range tokenCases {
		t.Run(name, func(t *testing.T) {
			code := signIn(t, srv.URL, "ann", nil).Query().Get("code")
			if status, body := exchange(t, srv.URL, tc.form(code)); status != tc.status || body["error"] != tc.want {
				t.Fatalf("%d %v, want %d %s", status, body, tc.status, tc.want)
			}
		})
	}

	t.Run("a code is used once", func(t *testing.T) {
		code := signIn(t, srv.URL, "ann", nil).Query().Get("code")
		if status, _ := exchange(t, srv.URL, codeForm(code)); status != http.StatusOK {
			t.Fatalf("first exchange %d", status)
		}
		if status, body := exchange(t, srv.URL, codeForm(code)); status != http.StatusBadRequest || body["error"] != "invalid_grant" {
			t.Fatalf("second exchange %d %v", status, body)
		}
	})

	t.Run("a failed exchange spends the code", func(t *testing.T) {
		code := signIn(t, srv.URL, "ann", nil).Query().Get("code")
		bad := codeForm(code)
		bad.Set("code_verifier", "guess")
		exchange(t, srv.URL, bad)
		if status, _ := exchange(t, srv.URL, codeForm(code)); status != http.StatusBadRequest {
			t.Fatalf("the right verifier after a wrong one: %d", status)
		}
	})

	t.Run("an expired code", func(t *testing.T) {
		code := signIn(t, srv.URL, "ann", nil).Query().Get("code")
		offset.Store(int64(61 * time.Second))
		defer offset.Store(0)
		if status, body := exchange(t, srv.URL, codeForm(code)); status != http.StatusBadRequest || body["error"] != "invalid_grant" {
			t.Fatalf("%d %v", status, body)
		}
	})

	t.Run("sign-out to an address not registered", func(t *testing.T) {
		res, err := noRedirects.Get(srv.URL + "/logout?post_logout_redirect_uri=" + url.QueryEscape("https://evil.example/"))
		if err != nil {
			t.Fatal(err)
		}
		_ = res.Body.Close()
		if res.StatusCode != http.StatusOK || res.Header.Get("Location") != "" {
			t.Fatalf("%d to %q", res.StatusCode, res.Header.Get("Location"))
		}
	})
}

func TestNewProviderRefusesBadOptions(t *testing.T) {
	ok := testidp.ProviderOptions{ClientID: clientID, RedirectOrigins: []string{pageOrigin}}
	for name, tc := range map[string]struct {
		issuer string
		o      testidp.ProviderOptions
	}{
		"relative issuer":         {"/idp", ok},
		"trailing slash":          {"http://127.0.0.1:1/", ok},
		"no client":               {"http://127.0.0.1:1", testidp.ProviderOptions{RedirectOrigins: []string{pageOrigin}}},
		"no origin":               {"http://127.0.0.1:1", testidp.ProviderOptions{ClientID: clientID}},
		"issuer not a URL at all": {"::", ok},
	} {
		if _, err := testidp.NewProvider(tc.issuer, tc.o); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
