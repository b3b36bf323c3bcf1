// Package testidp is a token issuer for tests: one ES256 signing key whose
// public half is served as a JSON Web Key Set over loopback HTTP, and
// signed JWTs with the claims a test names. It lets tests run pkg/auth's
// jwt mode through the real handlers without a network identity provider.
//
// Provider (oidc.go) is a whole OpenID Connect issuer on loopback for the
// chat page's sign-in: the dev server's -signin local and the page's
// browser tests sign in through it.
package testidp

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
	"github.com/lestrrat-go/jwx/v3/jwt"
)

// Issuer and Audience are the iss and aud of every token.
const (
	Issuer   = "https://idp.example/"
	Audience = "turnstream"
)

// keyID is the kid of the signing key.
const keyID = "testidp-1"

// IdP is a running issuer. JWKSURL serves its key set until the test ends;
// Client is the HTTP client that reaches it.
type IdP struct {
	JWKSURL string
	Client  *http.Client
	key     *ecdsa.PrivateKey
}

// New starts an issuer that stops when tb ends.
func New(tb testing.TB) *IdP {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	pub, err := jwk.Import(key.Public())
	if err != nil {
		tb.Fatal(err)
	}
	for k, v := range map[string]any{jwk.KeyIDKey: keyID, jwk.AlgorithmKey: jwa.ES256()} {
		if err := pub.Set(k, v); err != nil {
			tb.Fatal(err)
		}
	}
	set := jwk.NewSet()
	if err := set.AddKey(pub); err != nil {
		tb.Fatal(err)
	}
	body, err := json.Marshal(set)
	if err != nil {
		tb.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	tb.Cleanup(srv.Close)
	return &IdP{JWKSURL: srv.URL, Client: srv.Client(), key: key}
}

// Token returns a signed JWT with iss Issuer, aud Audience, the subject
// sub, an expiry an hour from now and the extra claims (a tenant claim,
// for instance).
func (i *IdP) Token(tb testing.TB, sub string, extra map[string]any) string {
	tb.Helper()
	b := jwt.NewBuilder().Issuer(Issuer).Audience([]string{Audience}).Subject(sub).Expiration(time.Now().Add(time.Hour))
	for k, v := range extra {
		b = b.Claim(k, v)
	}
	tok, err := b.Build()
	if err != nil {
		tb.Fatal(err)
	}
	h := jws.NewHeaders()
	if err := h.Set(jws.KeyIDKey, keyID); err != nil {
		tb.Fatal(err)
	}
	signed, err := jwt.Sign(tok, jwt.WithKey(jwa.ES256(), i.key, jws.WithProtectedHeaders(h)))
	if err != nil {
		tb.Fatal(err)
	}
	return string(signed)
}

// Sign returns a compact JWS signed with the issuer's key over payload
// exactly as given (claims a builder would not write, such as "exp" as a
// string or a claim named twice), with kid, alg ES256 and the members of
// header in its protected header (a "crit" list, for instance).
func (i *IdP) Sign(tb testing.TB, header map[string]any, payload string) string {
	tb.Helper()
	h := jws.NewHeaders()
	if err := h.Set(jws.KeyIDKey, keyID); err != nil {
		tb.Fatal(err)
	}
	for k, v := range header {
		if err := h.Set(k, v); err != nil {
			tb.Fatal(err)
		}
	}
	signed, err := jws.Sign([]byte(payload), jws.WithKey(jwa.ES256(), i.key, jws.WithProtectedHeaders(h)))
	if err != nil {
		tb.Fatal(err)
	}
	return string(signed)
}
