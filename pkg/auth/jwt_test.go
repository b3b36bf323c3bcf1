package auth_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
	"github.com/lestrrat-go/jwx/v3/jwt"
	"github.com/turnstream/turnstream/internal/testidp"
	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/config"
)

const (
	testIssuer   = "https://idp.example/"
	testAudience = "turnstream-api"
)

// testNow is the injected clock of every jwt test.
var testNow = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// signer is a private key with the kid and algorithm it signs with.
type signer struct {
	kid string
	alg jwa.SignatureAlgorithm
	key crypto.Signer
}

var (
	keysOnce sync.Once
	keys     map[string]signer
)

// testKeys generates one key per algorithm family, once per test binary
// (RSA generation is the slow part).
func testKeys(tb testing.TB) map[string]signer {
	tb.Helper()
	keysOnce.Do(func() {
		rsa1, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		rsa2, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		ec256, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			panic(err)
		}
		ec384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
		if err != nil {
			panic(err)
		}
		_, ed, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			panic(err)
		}
		keys = map[string]signer{
			"RS256":   {"rsa-1", jwa.RS256(), rsa1},
			"RS512":   {"rsa-1", jwa.RS512(), rsa1},
			"PS256":   {"rsa-1", jwa.PS256(), rsa1},
			"ES256":   {"ec-256", jwa.ES256(), ec256},
			"ES384":   {"ec-384", jwa.ES384(), ec384},
			"EdDSA":   {"ed-1", jwa.EdDSA(), ed},
			"rotated": {"rsa-2", jwa.RS256(), rsa2},
		}
	})
	return keys
}

// publicJWK returns s's public key as a JWK with its kid and, when withAlg,
// its alg.
func publicJWK(tb testing.TB, s signer, withAlg bool) jwk.Key {
	tb.Helper()
	k, err := jwk.Import(s.key.Public())
	if err != nil {
		tb.Fatal(err)
	}
	if err := k.Set(jwk.KeyIDKey, s.kid); err != nil {
		tb.Fatal(err)
	}
	if withAlg {
		if err := k.Set(jwk.AlgorithmKey, s.alg); err != nil {
			tb.Fatal(err)
		}
	}
	return k
}

// jwksServer serves a JWKS that tests can replace, counting fetches.
type jwksServer struct {
	*httptest.Server
	body    atomic.Pointer[[]byte]
	fetches atomic.Int32
}

func newJWKSServer(tb testing.TB, keys ...jwk.Key) *jwksServer {
	tb.Helper()
	s := &jwksServer{}
	s.set(tb, keys...)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.fetches.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(*s.body.Load())
	}))
	tb.Cleanup(s.Close)
	return s
}

func (s *jwksServer) set(tb testing.TB, keys ...jwk.Key) {
	tb.Helper()
	set := jwk.NewSet()
	for _, k := range keys {
		if err := set.AddKey(k); err != nil {
			tb.Fatal(err)
		}
	}
	b, err := json.Marshal(set)
	if err != nil {
		tb.Fatal(err)
	}
	s.body.Store(&b)
}

// claims builds a token's claims; each test edits a copy.
type claims struct {
	iss, sub string
	aud      []string
	exp      time.Time
	nbf, iat time.Time
	extra    map[string]any
	omit     map[string]bool
}

func validClaims() claims {
	return claims{
		iss: testIssuer, sub: "user-42", aud: []string{testAudience},
		exp: testNow.Add(time.Hour), iat: testNow.Add(-time.Minute), nbf: testNow.Add(-time.Minute),
	}
}

func (c claims) token(tb testing.TB) jwt.Token {
	tb.Helper()
	b := jwt.NewBuilder()
	if !c.omit["iss"] {
		b = b.Issuer(c.iss)
	}
	if !c.omit["sub"] {
		b = b.Subject(c.sub)
	}
	if !c.omit["aud"] {
		b = b.Audience(c.aud)
	}
	if !c.omit["exp"] {
		b = b.Expiration(c.exp)
	}
	if !c.omit["nbf"] {
		b = b.NotBefore(c.nbf)
	}
	if !c.omit["iat"] {
		b = b.IssuedAt(c.iat)
	}
	for k, v := range c.extra {
		b = b.Claim(k, v)
	}
	t, err := b.Build()
	if err != nil {
		tb.Fatal(err)
	}
	return t
}

// sign signs c with s, putting kid in the protected header.
func sign(tb testing.TB, c claims, s signer, kid string) string {
	tb.Helper()
	h := jws.NewHeaders()
	if err := h.Set(jws.KeyIDKey, kid); err != nil {
		tb.Fatal(err)
	}
	out, err := jwt.Sign(c.token(tb), jwt.WithKey(s.alg, s.key, jws.WithProtectedHeaders(h)))
	if err != nil {
		tb.Fatal(err)
	}
	return string(out)
}

// unsigned returns header.payload. with the given header JSON (alg none).
func unsigned(tb testing.TB, header string, c claims) string {
	tb.Helper()
	payload, err := json.Marshal(c.token(tb))
	if err != nil {
		tb.Fatal(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(header)) + "." + enc(payload) + "."
}

func TestJWT(t *testing.T) {
	k := testKeys(t)
	rsaPublicDER, err := x509.MarshalPKIXPublicKey(k["RS256"].key.Public())
	if err != nil {
		t.Fatal(err)
	}
	rsaJWKJSON, err := json.Marshal(publicJWK(t, k["RS256"], false))
	if err != nil {
		t.Fatal(err)
	}
	// JWKS: rsa-1 without alg (inferred from the key), the others with alg.
	srv := newJWKSServer(t,
		publicJWK(t, k["RS256"], false),
		publicJWK(t, k["ES256"], true),
		publicJWK(t, k["ES384"], true),
		publicJWK(t, k["EdDSA"], true),
	)
	a := mustNew(t, config.AuthConfig{
		Mode: config.AuthJWT, JWKSURL: srv.URL, Issuer: testIssuer, Audience: testAudience,
		ClockSkew: time.Minute, TenantClaim: "iss", TrustedSubject: "host-service",
	}, auth.WithHTTPClient(srv.Client()), auth.WithNow(func() time.Time { return testNow }))

	edit := func(f func(*claims)) claims {
		c := validClaims()
		f(&c)
		return c
	}
	hmacWith := func(secret []byte) string {
		h := jws.NewHeaders()
		_ = h.Set(jws.KeyIDKey, "rsa-1")
		out, err := jwt.Sign(validClaims().token(t), jwt.WithKey(jwa.HS256(), secret, jws.WithProtectedHeaders(h)))
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	user := chat.Principal{Subject: "user-42", Tenant: testIssuer}

	tests := map[string]struct {
		header  string
		want    chat.Principal
		wantErr error
	}{
		"RS256, key without alg": {"Bearer " + sign(t, validClaims(), k["RS256"], "rsa-1"), user, nil},
		"RS512":                  {"Bearer " + sign(t, validClaims(), k["RS512"], "rsa-1"), user, nil},
		"PS256":                  {"Bearer " + sign(t, validClaims(), k["PS256"], "rsa-1"), user, nil},
		"ES256":                  {"Bearer " + sign(t, validClaims(), k["ES256"], "ec-256"), user, nil},
		"ES384":                  {"Bearer " + sign(t, validClaims(), k["ES384"], "ec-384"), user, nil},
		"EdDSA":                  {"Bearer " + sign(t, validClaims(), k["EdDSA"], "ed-1"), user, nil},
		"audience among several": {"Bearer " + sign(t, edit(func(c *claims) { c.aud = []string{"other", testAudience} }), k["ES256"], "ec-256"), user, nil},
		"expired within skew":    {"Bearer " + sign(t, edit(func(c *claims) { c.exp = testNow.Add(-30 * time.Second) }), k["ES256"], "ec-256"), user, nil},
		"nbf within skew":        {"Bearer " + sign(t, edit(func(c *claims) { c.nbf = testNow.Add(30 * time.Second) }), k["ES256"], "ec-256"), user, nil},
		"no nbf nor iat":         {"Bearer " + sign(t, edit(func(c *claims) { c.omit = map[string]bool{"nbf": true, "iat": true} }), k["ES256"], "ec-256"), user, nil},
		"client_id, no aud (Cognito access token)": {"Bearer " + sign(t, edit(func(c *claims) {
			c.omit = map[string]bool{"aud": true}
			c.extra = map[string]any{"client_id": testAudience, "token_use": "access"}
		}), k["ES256"], "ec-256"), user, nil},
		"trusted subject": {"Bearer " + sign(t, edit(func(c *claims) { c.sub = "host-service" }), k["ES256"], "ec-256"), chat.Principal{Subject: "host-service", Tenant: testIssuer, Trusted: true}, nil},

		"alg none":                   {"Bearer " + unsigned(t, `{"alg":"none","kid":"rsa-1"}`, validClaims()), chat.Principal{}, auth.ErrUnauthenticated},
		"alg none, no kid":           {"Bearer " + unsigned(t, `{"alg":"none"}`, validClaims()), chat.Principal{}, auth.ErrUnauthenticated},
		"HS256 with public key DER":  {"Bearer " + hmacWith(rsaPublicDER), chat.Principal{}, auth.ErrUnauthenticated},
		"HS256 with public key JWK":  {"Bearer " + hmacWith(rsaJWKJSON), chat.Principal{}, auth.ErrUnauthenticated},
		"expired":                    {"Bearer " + sign(t, edit(func(c *claims) { c.exp = testNow.Add(-2 * time.Minute) }), k["ES256"], "ec-256"), chat.Principal{}, auth.ErrUnauthenticated},
		"not yet valid (nbf)":        {"Bearer " + sign(t, edit(func(c *claims) { c.nbf = testNow.Add(2 * time.Minute) }), k["ES256"], "ec-256"), chat.Principal{}, auth.ErrUnauthenticated},
		"issued in the future (iat)": {"Bearer " + sign(t, edit(func(c *claims) { c.iat = testNow.Add(2 * time.Minute) }), k["ES256"], "ec-256"), chat.Principal{}, auth.ErrUnauthenticated},
		"wrong issuer":               {"Bearer " + sign(t, edit(func(c *claims) { c.iss = "https://evil.example/" }), k["ES256"], "ec-256"), chat.Principal{}, auth.ErrUnauthenticated},
		"no issuer":                  {"Bearer " + sign(t, edit(func(c *claims) { c.omit = map[string]bool{"iss": true} }), k["ES256"], "ec-256"), chat.Principal{}, auth.ErrUnauthenticated},
		"wrong audience":             {"Bearer " + sign(t, edit(func(c *claims) { c.aud = []string{"other"} }), k["ES256"], "ec-256"), chat.Principal{}, auth.ErrUnauthenticated},
		"client_id of another client, no aud": {"Bearer " + sign(t, edit(func(c *claims) {
			c.omit = map[string]bool{"aud": true}
			c.extra = map[string]any{"client_id": "other"}
		}), k["ES256"], "ec-256"), chat.Principal{}, auth.ErrUnauthenticated},
		"client_id not a string, no aud": {"Bearer " + sign(t, edit(func(c *claims) {
			c.omit = map[string]bool{"aud": true}
			c.extra = map[string]any{"client_id": []string{testAudience}}
		}), k["ES256"], "ec-256"), chat.Principal{}, auth.ErrUnauthenticated},
		"wrong aud, right client_id": {"Bearer " + sign(t, edit(func(c *claims) {
			c.aud = []string{"other"}
			c.extra = map[string]any{"client_id": testAudience}
		}), k["ES256"], "ec-256"), chat.Principal{}, auth.ErrUnauthenticated},
		"no audience":                 {"Bearer " + sign(t, edit(func(c *claims) { c.omit = map[string]bool{"aud": true} }), k["ES256"], "ec-256"), chat.Principal{}, auth.ErrUnauthenticated},
		"missing sub":                 {"Bearer " + sign(t, edit(func(c *claims) { c.omit = map[string]bool{"sub": true} }), k["ES256"], "ec-256"), chat.Principal{}, auth.ErrUnauthenticated},
		"empty sub":                   {"Bearer " + sign(t, edit(func(c *claims) { c.sub = "" }), k["ES256"], "ec-256"), chat.Principal{}, auth.ErrUnauthenticated},
		"control character in sub":    {"Bearer " + sign(t, edit(func(c *claims) { c.sub = "a\nb" }), k["ES256"], "ec-256"), chat.Principal{}, auth.ErrUnauthenticated},
		"missing exp":                 {"Bearer " + sign(t, edit(func(c *claims) { c.omit = map[string]bool{"exp": true} }), k["ES256"], "ec-256"), chat.Principal{}, auth.ErrUnauthenticated},
		"unknown kid":                 {"Bearer " + sign(t, validClaims(), k["ES256"], "no-such-key"), chat.Principal{}, auth.ErrUnauthenticated},
		"no kid":                      {"Bearer " + sign(t, validClaims(), k["ES256"], ""), chat.Principal{}, auth.ErrUnauthenticated},
		"kid of another key":          {"Bearer " + sign(t, validClaims(), k["ES256"], "ec-384"), chat.Principal{}, auth.ErrUnauthenticated},
		"signed by a key not in JWKS": {"Bearer " + sign(t, validClaims(), k["rotated"], "rsa-1"), chat.Principal{}, auth.ErrUnauthenticated},
		"tampered payload": {"Bearer " + func() string {
			parts := strings.Split(sign(t, validClaims(), k["ES256"], "ec-256"), ".")
			payload, _ := json.Marshal(edit(func(c *claims) { c.sub = "admin" }).token(t))
			parts[1] = base64.RawURLEncoding.EncodeToString(payload)
			return strings.Join(parts, ".")
		}(), chat.Principal{}, auth.ErrUnauthenticated},
		"malformed":             {"Bearer not.a.jwt", chat.Principal{}, auth.ErrUnauthenticated},
		"garbage":               {"Bearer %%%", chat.Principal{}, auth.ErrUnauthenticated},
		"too long":              {"Bearer " + strings.Repeat("a", auth.MaxTokenBytes+1), chat.Principal{}, auth.ErrUnauthenticated},
		"no Authorization":      {"", chat.Principal{}, auth.ErrUnauthenticated},
		"dev token in jwt mode": {auth.DevAuthorization("host"), chat.Principal{}, auth.ErrUnauthenticated},
		"basic scheme":          {"Basic dXNlcjpwYXNz", chat.Principal{}, auth.ErrUnauthenticated},
	}
	// The logged reason of selected rejections: each fails for the reason
	// its name says, not for another.
	reasons := map[string]string{
		"alg none":                            "algorithm not allowed",
		"HS256 with public key DER":           "algorithm not allowed",
		"HS256 with public key JWK":           "algorithm not allowed",
		"expired":                             "token expired",
		"not yet valid (nbf)":                 "not yet valid",
		"issued in the future (iat)":          "issued in the future",
		"wrong issuer":                        "wrong issuer",
		"wrong audience":                      "wrong audience",
		"no audience":                         "no audience",
		"client_id of another client, no aud": "wrong audience",
		"client_id not a string, no aud":      "no audience",
		"wrong aud, right client_id":          "wrong audience",
		"missing sub":                         "missing required claim",
		"missing exp":                         "missing required claim",
		"unknown kid":                         "unknown kid",
		"no kid":                              "no kid",
		"kid of another key":                  "does not match its key",
		"signed by a key not in JWKS":         "signature or format invalid",
		"tampered payload":                    "signature or format invalid",
		"too long":                            "too long",
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var headers []string
			if tc.header != "" {
				headers = []string{tc.header}
			}
			got, err := a.Authenticate(newRequest(t, context.Background(), headers...))
			checkResult(t, got, err, tc.want, tc.wantErr)
			if r, ok := reasons[name]; ok && !strings.Contains(err.Error(), r) {
				t.Errorf("error %q, want reason %q", err, r)
			}
			if cred := strings.TrimPrefix(tc.header, "Bearer "); err != nil && cred != "" && strings.Contains(err.Error(), cred) {
				t.Errorf("error text contains the credential")
			}
		})
	}
}

// TestJWTTenantClaim: the tenant is the configured claim when it is a
// valid identity string; a verified token without one names no principal
// and is refused as unauthenticated (401, RFC 6750 invalid_token), never
// forbidden (403).
func TestJWTTenantClaim(t *testing.T) {
	k := testKeys(t)
	srv := newJWKSServer(t, publicJWK(t, k["ES256"], true))
	a := mustNew(t, config.AuthConfig{
		Mode: config.AuthJWT, JWKSURL: srv.URL, Issuer: testIssuer, Audience: testAudience, TenantClaim: "org_id",
	}, auth.WithHTTPClient(srv.Client()), auth.WithNow(func() time.Time { return testNow }))
	tests := map[string]struct {
		extra   map[string]any
		want    chat.Principal
		wantErr error
	}{
		"string claim":  {map[string]any{"org_id": "acme"}, chat.Principal{Subject: "user-42", Tenant: "acme"}, nil},
		"missing claim": {nil, chat.Principal{}, auth.ErrUnauthenticated},
		"number claim":  {map[string]any{"org_id": 7}, chat.Principal{}, auth.ErrUnauthenticated},
		"empty claim":   {map[string]any{"org_id": ""}, chat.Principal{}, auth.ErrUnauthenticated},
		"null claim":    {map[string]any{"org_id": nil}, chat.Principal{}, auth.ErrUnauthenticated},
		"object claim":  {map[string]any{"org_id": map[string]any{"id": "acme"}}, chat.Principal{}, auth.ErrUnauthenticated},
		"control char":  {map[string]any{"org_id": "ac\nme"}, chat.Principal{}, auth.ErrUnauthenticated},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := validClaims()
			c.extra = tc.extra
			got, err := a.Authenticate(newRequest(t, context.Background(), "Bearer "+sign(t, c, k["ES256"], "ec-256")))
			checkResult(t, got, err, tc.want, tc.wantErr)
		})
	}
}

// TestJWTTrustedPrincipal: with a tenant claim, trust is bound to the
// tenant and the subject together; the trusted subject in another tenant
// is an ordinary principal, and a subject alone cannot be configured.
func TestJWTTrustedPrincipal(t *testing.T) {
	k := testKeys(t)
	srv := newJWKSServer(t, publicJWK(t, k["ES256"], true))
	cfg := config.AuthConfig{
		Mode: config.AuthJWT, JWKSURL: srv.URL, Issuer: testIssuer, Audience: testAudience, TenantClaim: "tid",
		TrustedSubject: "host", TrustedTenant: "A",
	}
	a := mustNew(t, cfg, auth.WithHTTPClient(srv.Client()), auth.WithNow(func() time.Time { return testNow }))
	tests := map[string]struct {
		sub, tid string
		want     chat.Principal
	}{
		"host of the trusted tenant": {"host", "A", chat.Principal{Subject: "host", Tenant: "A", Trusted: true}},
		"host of another tenant":     {"host", "B", chat.Principal{Subject: "host", Tenant: "B"}},
		"another subject":            {"alice", "A", chat.Principal{Subject: "alice", Tenant: "A"}},
		"tenant differing in case":   {"host", "a", chat.Principal{Subject: "host", Tenant: "a"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := validClaims()
			c.sub, c.extra = tc.sub, map[string]any{"tid": tc.tid}
			got, err := a.Authenticate(newRequest(t, context.Background(), "Bearer "+sign(t, c, k["ES256"], "ec-256")))
			checkResult(t, got, err, tc.want, nil)
		})
	}
	t.Run("subject without tenant refused", func(t *testing.T) {
		cfg := cfg
		cfg.TrustedTenant = ""
		_, err := auth.New(context.Background(), cfg, auth.WithHTTPClient(srv.Client()))
		if err == nil || !strings.Contains(err.Error(), "ARTIFACTS_TRUSTED_TENANT") {
			t.Fatalf("New = %v; want an error naming ARTIFACTS_TRUSTED_TENANT", err)
		}
	})
}

// TestJWKSRotation: a token with a kid the cached set lacks triggers one
// refetch (rate-limited), which picks up a rotated key.
func TestJWKSRotation(t *testing.T) {
	k := testKeys(t)
	srv := newJWKSServer(t, publicJWK(t, k["RS256"], true))
	now := testNow
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	a := mustNew(t, config.AuthConfig{Mode: config.AuthJWT, JWKSURL: srv.URL, Issuer: testIssuer, Audience: testAudience},
		auth.WithHTTPClient(srv.Client()), auth.WithNow(clock), auth.WithJWKSRefresh(time.Minute, time.Hour))

	authenticate := func(s signer) error {
		t.Helper()
		c := validClaims()
		c.iat, c.nbf, c.exp = clock(), clock(), clock().Add(time.Hour)
		_, err := a.Authenticate(newRequest(t, context.Background(), "Bearer "+sign(t, c, s, s.kid)))
		return err
	}
	steps := []struct {
		name        string
		do          func()
		signer      string
		wantOK      bool
		wantFetches int32
	}{
		{"initial fetch in New", func() {}, "RS256", true, 1},
		{"unknown kid within a minute of the initial fetch: no refetch", func() {}, "rotated", false, 1},
		{"unknown kid refetches once", func() { advance(time.Minute) }, "rotated", false, 2},
		{"unknown kid again within a minute: no refetch", func() {}, "rotated", false, 2},
		{"rotated set published, still rate-limited", func() {
			srv.set(t, publicJWK(t, k["RS256"], true), publicJWK(t, k["rotated"], true))
		}, "rotated", false, 2},
		{"after a minute the refetch finds the key", func() { advance(time.Minute) }, "rotated", true, 3},
		{"known kid uses the cache", func() { advance(time.Minute) }, "RS256", true, 3},
		{"stale set is refetched", func() { advance(time.Hour) }, "RS256", true, 4},
		{"old key removed; refresh failure keeps the set", func() {
			advance(time.Hour)
			empty := []byte("{not json")
			srv.body.Store(&empty)
		}, "rotated", true, 5},
	}
	for _, st := range steps {
		st.do()
		err := authenticate(k[st.signer])
		if (err == nil) != st.wantOK {
			t.Errorf("%s: Authenticate = %v, want ok %v", st.name, err, st.wantOK)
		}
		if got := srv.fetches.Load(); got != st.wantFetches {
			t.Errorf("%s: %d JWKS fetches, want %d", st.name, got, st.wantFetches)
		}
	}
}

func TestJWKSAtStart(t *testing.T) {
	k := testKeys(t)
	validKey, err := json.Marshal(publicJWK(t, k["ES256"], true))
	if err != nil {
		t.Fatal(err)
	}
	valid := `{"keys":[` + string(validKey) + `]}`
	tests := map[string]struct {
		status int
		body   string
		wantOK bool
	}{
		"valid":      {http.StatusOK, valid, true},
		"not found":  {http.StatusNotFound, valid, false},
		"not JSON":   {http.StatusOK, "<html>", false},
		"only HMAC":  {http.StatusOK, `{"keys":[{"kty":"oct","kid":"h","k":"c2VjcmV0"}]}`, false},
		"empty set":  {http.StatusOK, `{"keys":[]}`, false},
		"over 1 MiB": {http.StatusOK, valid + strings.Repeat(" ", 1<<20), false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			_, err := auth.New(context.Background(), config.AuthConfig{Mode: config.AuthJWT, JWKSURL: srv.URL, Issuer: "i", Audience: "a"}, auth.WithHTTPClient(srv.Client()))
			if (err == nil) != tc.wantOK {
				t.Errorf("New = %v, want ok %v", err, tc.wantOK)
			}
		})
	}
}

// TestJWKSDropsSymmetricKeys: an "oct" key published beside the RSA key
// cannot verify an HS256 token, even with a matching kid.
func TestJWKSDropsSymmetricKeys(t *testing.T) {
	k := testKeys(t)
	secret := []byte("0123456789abcdef0123456789abcdef")
	oct, err := jwk.Import(secret)
	if err != nil {
		t.Fatal(err)
	}
	_ = oct.Set(jwk.KeyIDKey, "hmac")
	_ = oct.Set(jwk.AlgorithmKey, jwa.HS256())
	srv := newJWKSServer(t, publicJWK(t, k["RS256"], true), oct)
	a := mustNew(t, config.AuthConfig{Mode: config.AuthJWT, JWKSURL: srv.URL, Issuer: testIssuer, Audience: testAudience},
		auth.WithHTTPClient(srv.Client()), auth.WithNow(func() time.Time { return testNow }))
	h := jws.NewHeaders()
	_ = h.Set(jws.KeyIDKey, "hmac")
	tok, err := jwt.Sign(validClaims().token(t), jwt.WithKey(jwa.HS256(), secret, jws.WithProtectedHeaders(h)))
	if err != nil {
		t.Fatal(err)
	}
	got, err := a.Authenticate(newRequest(t, context.Background(), "Bearer "+string(tok)))
	checkResult(t, got, err, chat.Principal{}, auth.ErrUnauthenticated)
}

// TestJWTConcurrent authenticates from many goroutines (run with -race):
// known kids always pass, forged kids always fail, and forged kids within
// the minimum refresh interval of the last fetch cause no refetch.
func TestJWTConcurrent(t *testing.T) {
	k := testKeys(t)
	srv := newJWKSServer(t, publicJWK(t, k["ES256"], true))
	now := testNow
	a := mustNew(t, config.AuthConfig{Mode: config.AuthJWT, JWKSURL: srv.URL, Issuer: testIssuer, Audience: testAudience},
		auth.WithHTTPClient(srv.Client()), auth.WithNow(func() time.Time { return now }), auth.WithJWKSRefresh(time.Minute, time.Hour))
	good := "Bearer " + sign(t, validClaims(), k["ES256"], "ec-256")
	forged := "Bearer " + sign(t, validClaims(), k["ES256"], "forged")

	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				header, wantOK := good, true
				if g%2 == 1 {
					header, wantOK = forged, false
				}
				r := httptest.NewRequest(http.MethodPost, "/", nil)
				r.Header.Set("Authorization", header)
				if _, err := a.Authenticate(r); (err == nil) != wantOK {
					errs <- fmt.Sprintf("goroutine %d: Authenticate = %v, want ok %v", g, err, wantOK)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if got := srv.fetches.Load(); got != 1 {
		t.Errorf("%d JWKS fetches, want only the initial one", got)
	}
}

// TestJWTCritAndNumericDates: tokens signed by the issuer's own key are
// refused when their protected header has a "crit" list (RFC 7515
// §4.1.11: no extension is understood here, so none may be critical) or
// when exp, nbf or iat is anything but a JSON number (NumericDate, RFC
// 7519 §2), such as a string of digits or an RFC 3339 time that the JWT
// library would read as a time; a claim named twice is refused too (RFC
// 7519 §4). Each fails for its own reason, and no reason quotes a claim.
func TestJWTCritAndNumericDates(t *testing.T) {
	idp := testidp.New(t)
	a := mustNew(t, config.AuthConfig{
		Mode: config.AuthJWT, JWKSURL: idp.JWKSURL, Issuer: testidp.Issuer, Audience: testidp.Audience,
	}, auth.WithHTTPClient(idp.Client), auth.WithNow(func() time.Time { return testNow }))
	exp, past := testNow.Add(time.Hour).Unix(), testNow.Add(-time.Minute).Unix()
	// claims returns a claims set with members in order: iss, aud, sub,
	// then the JSON members of rest, or exp when rest is empty.
	claims := func(rest string) string {
		if rest == "" {
			rest = fmt.Sprintf(`"exp":%d`, exp)
		}
		return fmt.Sprintf(`{"iss":%q,"aud":%q,"sub":"user-42",%s}`, testidp.Issuer, testidp.Audience, rest)
	}
	user := chat.Principal{Subject: "user-42", Tenant: testidp.Issuer}
	const (
		critReason = "crit header"
		dateReason = "not a NumericDate"
	)
	tests := map[string]struct {
		header map[string]any
		claims string
		reason string // "" for an accepted token
	}{
		"plain":                 {nil, claims(""), ""},
		"exp with a fraction":   {nil, claims(fmt.Sprintf(`"exp":%d.5`, exp)), ""},
		"exp with an exponent":  {nil, claims(`"exp":4.1e9`), ""},
		"nbf and iat numbers":   {nil, claims(fmt.Sprintf(`"exp":%d,"nbf":%d,"iat":%d`, exp, past, past)), ""},
		"unknown private claim": {nil, claims(fmt.Sprintf(`"exp":%d,"note":"1"`, exp)), ""},

		"crit naming a private header":  {map[string]any{"crit": []string{"x-ext"}, "x-ext": "v"}, claims(""), critReason},
		"crit naming an absent header":  {map[string]any{"crit": []string{"x-ext"}}, claims(""), critReason},
		"crit naming a standard header": {map[string]any{"crit": []string{"kid"}}, claims(""), critReason},
		"crit empty":                    {map[string]any{"crit": []string{}}, claims(""), critReason},
		"exp a string of digits":        {nil, claims(fmt.Sprintf(`"exp":"%d"`, exp)), dateReason},
		"exp an RFC 3339 string":        {nil, claims(`"exp":"` + testNow.Add(time.Hour).Format(time.RFC3339) + `"`), dateReason},
		"exp true":                      {nil, claims(`"exp":true`), dateReason},
		"exp null":                      {nil, claims(`"exp":null`), dateReason},
		"exp an array":                  {nil, claims(fmt.Sprintf(`"exp":[%d]`, exp)), dateReason},
		"nbf a string":                  {nil, claims(fmt.Sprintf(`"exp":%d,"nbf":"%d"`, exp, past)), dateReason},
		"iat a string":                  {nil, claims(fmt.Sprintf(`"exp":%d,"iat":"%d"`, exp, past)), dateReason},
		"exp twice, string last":        {nil, claims(fmt.Sprintf(`"exp":%d,"exp":"%d"`, exp, exp)), "a claim twice"},
		"exp twice, numbers":            {nil, claims(fmt.Sprintf(`"exp":%d,"exp":%d`, past, exp)), "a claim twice"},
		"sub twice":                     {nil, claims(fmt.Sprintf(`"exp":%d,"sub":"admin"`, exp)), "a claim twice"},
		"claims an array":               {nil, fmt.Sprintf(`[{"iss":%q}]`, testidp.Issuer), "not one JSON object"},
		"trailing data":                 {nil, claims("") + `{}`, "not one JSON object"},
		"invalid UTF-8 in a claim":      {nil, claims(fmt.Sprintf(`"exp":%d,"note":"%s"`, exp, "\xff")), "not one JSON object"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tok := idp.Sign(t, tc.header, tc.claims)
			got, err := a.Authenticate(newRequest(t, context.Background(), "Bearer "+tok))
			if tc.reason == "" {
				checkResult(t, got, err, user, nil)
				return
			}
			checkResult(t, got, err, chat.Principal{}, auth.ErrUnauthenticated)
			if !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("error %q, want reason %q", err, tc.reason)
			}
			for _, quoted := range []string{"x-ext", fmt.Sprint(exp), "admin"} {
				if strings.Contains(err.Error(), quoted) {
					t.Errorf("error %q quotes the token's %q", err, quoted)
				}
			}
		})
	}
}

// signAs signs c with s's key and s's own algorithm, but writes headerAlg
// in the protected header: the forgery RFC 8725 §3.1 warns of, where the
// header names an algorithm other than the one the key signs with.
func signAs(tb testing.TB, c claims, s signer, kid, headerAlg string) string {
	tb.Helper()
	header, err := json.Marshal(map[string]string{"alg": headerAlg, "kid": kid, "typ": "JWT"})
	if err != nil {
		tb.Fatal(err)
	}
	payload, err := json.Marshal(c.token(tb))
	if err != nil {
		tb.Fatal(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	input := enc(header) + "." + enc(payload)
	var sig []byte
	switch key := s.key.(type) {
	case *ecdsa.PrivateKey:
		if s.alg != jwa.ES256() {
			tb.Fatalf("signAs: ECDSA only with ES256, not %s", s.alg)
		}
		sum := sha256.Sum256([]byte(input))
		r, ss, err := ecdsa.Sign(rand.Reader, key, sum[:])
		if err != nil {
			tb.Fatal(err)
		}
		sig = make([]byte, 64) // RFC 7518 §3.4: R and S, 32 octets each
		r.FillBytes(sig[:32])
		ss.FillBytes(sig[32:])
	case *rsa.PrivateKey:
		if s.alg != jwa.RS256() {
			tb.Fatalf("signAs: RSA only with RS256, not %s", s.alg)
		}
		sum := sha256.Sum256([]byte(input))
		sig, err = rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
		if err != nil {
			tb.Fatal(err)
		}
	default:
		tb.Fatalf("signAs: unsupported key %T", s.key)
	}
	return input + "." + enc(sig)
}

// TestJWTAlgMustMatchKey: a token is verified with the algorithm its key
// is for (the JWKS "alg", or the one its type and curve imply), never the
// one its header picks (RFC 8725 §3.1): a header that names another
// algorithm is refused even when the signature is the key's own.
func TestJWTAlgMustMatchKey(t *testing.T) {
	k := testKeys(t)
	withAlg := func(s signer, kid string) jwk.Key {
		key := publicJWK(t, s, true)
		_ = key.Set(jwk.KeyIDKey, kid)
		return key
	}
	withoutAlg := func(s signer, kid string) jwk.Key {
		key := publicJWK(t, s, false)
		_ = key.Set(jwk.KeyIDKey, kid)
		return key
	}
	srv := newJWKSServer(t,
		withAlg(k["ES256"], "ec-256-alg"),
		withoutAlg(k["ES256"], "ec-256-crv"),
		withAlg(k["RS256"], "rsa-alg"),
		withoutAlg(k["RS256"], "rsa-type"),
		withAlg(k["EdDSA"], "ed-alg"),
	)
	a := mustNew(t, config.AuthConfig{
		Mode: config.AuthJWT, JWKSURL: srv.URL, Issuer: testIssuer, Audience: testAudience, TenantClaim: "iss",
	}, auth.WithHTTPClient(srv.Client()), auth.WithNow(func() time.Time { return testNow }))
	user := chat.Principal{Subject: "user-42", Tenant: testIssuer}
	const mismatch = "does not match its key"
	tests := map[string]struct {
		token  string
		reason string // "" for an accepted token
	}{
		"ES256 header, JWKS alg ES256":        {signAs(t, validClaims(), k["ES256"], "ec-256-alg", "ES256"), ""},
		"ES256 header, P-256 key without alg": {signAs(t, validClaims(), k["ES256"], "ec-256-crv", "ES256"), ""},
		"RS256 header, JWKS alg RS256":        {signAs(t, validClaims(), k["RS256"], "rsa-alg", "RS256"), ""},
		"RS256 header, RSA key without alg":   {signAs(t, validClaims(), k["RS256"], "rsa-type", "RS256"), ""},

		"ES384 header, signed ES256, JWKS alg ES256": {signAs(t, validClaims(), k["ES256"], "ec-256-alg", "ES384"), mismatch},
		"ES512 header, signed ES256, JWKS alg ES256": {signAs(t, validClaims(), k["ES256"], "ec-256-alg", "ES512"), mismatch},
		"ES384 header, signed ES256, P-256 no alg":   {signAs(t, validClaims(), k["ES256"], "ec-256-crv", "ES384"), mismatch},
		"RS384 header, signed RS256, JWKS alg RS256": {signAs(t, validClaims(), k["RS256"], "rsa-alg", "RS384"), mismatch},
		"PS256 header, signed RS256, JWKS alg RS256": {signAs(t, validClaims(), k["RS256"], "rsa-alg", "PS256"), mismatch},
		"RS384 header, signed RS256, RSA key no alg": {signAs(t, validClaims(), k["RS256"], "rsa-type", "RS384"), "signature or format invalid"},
		"ES256 header on an RSA key":                 {signAs(t, validClaims(), k["ES256"], "rsa-type", "ES256"), mismatch},
		"ES256 header on an Ed25519 key":             {signAs(t, validClaims(), k["ES256"], "ed-alg", "ES256"), mismatch},
		"RS256 header on a P-256 key without alg":    {signAs(t, validClaims(), k["RS256"], "ec-256-crv", "RS256"), mismatch},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := a.Authenticate(newRequest(t, context.Background(), "Bearer "+tc.token))
			if tc.reason == "" {
				checkResult(t, got, err, user, nil)
				return
			}
			checkResult(t, got, err, chat.Principal{}, auth.ErrUnauthenticated)
			if !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("error %q, want reason %q", err, tc.reason)
			}
		})
	}
}
