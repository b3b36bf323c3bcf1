package auth

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
	"github.com/lestrrat-go/jwx/v3/jwt"
	"github.com/turnstream/turnstream/pkg/chat"
)

// maxJWKSBytes bounds a JWKS response body.
const maxJWKSBytes = 1 << 20

// asymmetric is the allowlist of JWS algorithms
// (docs/design.md#authentication-and-tenancy): RSA PKCS#1 v1.5 and PSS, ECDSA
// and EdDSA (RFC 7518, RFC 8037). "none" and every HMAC algorithm are refused
// before any key is looked up, which closes the HS256-with-the- public-key
// confusion.
var asymmetric = map[string]bool{
	"RS256": true, "RS384": true, "RS512": true,
	"PS256": true, "PS384": true, "PS512": true,
	"ES256": true, "ES384": true, "ES512": true,
	"EdDSA": true, "Ed25519": true, // Ed25519: RFC 9864 fully-specified EdDSA
}

// jwtAuthenticator implements jwt mode
// (docs/design.md#authentication-and-tenancy).
type jwtAuthenticator struct {
	issuer, audience string
	skew             time.Duration
	tenantClaim      string
	trusted          trust
	now              func() time.Time
	keys             *keyCache
}

func newJWT(ctx context.Context, cfg Config, trusted trust, o options) (*jwtAuthenticator, error) {
	switch {
	case cfg.JWKSURL == "":
		return nil, errors.New("auth: jwt mode needs JWT_JWKS_URL")
	case cfg.Issuer == "":
		return nil, errors.New("auth: jwt mode needs JWT_ISSUER")
	case cfg.Audience == "":
		return nil, errors.New("auth: jwt mode needs JWT_AUDIENCE")
	case cfg.ClockSkew < 0:
		return nil, errors.New("auth: JWT_CLOCK_SKEW is negative")
	}
	tenantClaim := cfg.TenantClaim
	if tenantClaim == "" {
		tenantClaim = jwt.IssuerKey
	}
	kc := &keyCache{
		url:        cfg.JWKSURL,
		client:     o.httpClient,
		now:        o.now,
		minRefresh: o.minRefresh,
		maxAge:     o.maxAge,
	}
	if err := kc.refresh(ctx); err != nil {
		return nil, fmt.Errorf("auth: initial JWKS fetch: %w", err)
	}
	return &jwtAuthenticator{
		issuer:      cfg.Issuer,
		audience:    cfg.Audience,
		skew:        cfg.ClockSkew,
		tenantClaim: tenantClaim,
		trusted:     trusted,
		now:         o.now,
		keys:        kc,
	}, nil
}

func (a *jwtAuthenticator) Authenticate(r *http.Request) (chat.Principal, error) {
	tok, present, err := bearer(r)
	if err != nil {
		return chat.Principal{}, err
	}
	if !present {
		return chat.Principal{}, unauthenticated("no Authorization header")
	}
	if len(tok) > MaxTokenBytes {
		return chat.Principal{}, unauthenticated("bearer token too long")
	}
	raw := []byte(tok)

	// Read the protected header first: refuse a non-allowlisted algorithm
	// and find the key id, without trusting anything else yet.
	msg, err := jws.Parse(raw, jws.WithCompact())
	if err != nil {
		return chat.Principal{}, unauthenticated("malformed token")
	}
	sigs := msg.Signatures()
	if len(sigs) != 1 {
		return chat.Principal{}, unauthenticated("token must carry exactly one signature")
	}
	hdr := sigs[0].ProtectedHeaders()
	alg, ok := hdr.Algorithm()
	if !ok || !asymmetric[alg.String()] {
		return chat.Principal{}, unauthenticated("token algorithm not allowed")
	}
	kid, ok := hdr.KeyID()
	if !ok || kid == "" {
		return chat.Principal{}, unauthenticated("token has no kid")
	}
	// RFC 7515 §4.1.11: a recipient must refuse a "crit" extension it
	// does not understand. None is understood here, and jwx checks "crit"
	// only when asked to (jws.WithCritValidation), which jwt.Parse with a
	// key set does not do: any "crit" member refuses the token.
	if hdr.Has(jws.CriticalKey) {
		return chat.Principal{}, unauthenticated("token has a crit header")
	}
	if reason := claimsProblem(msg.Payload()); reason != "" {
		return chat.Principal{}, unauthenticated(reason)
	}
	set, err := a.keys.setWithKey(r.Context(), kid)
	if err != nil {
		return chat.Principal{}, unauthenticated("unknown kid")
	}
	key, ok := set.LookupKeyID(kid)
	if !ok {
		return chat.Principal{}, unauthenticated("unknown kid")
	}
	// RFC 8725 §3.1: the algorithm is the key's, not the token's choice.
	// The header's alg must be one the key is for, and the signature is
	// verified with that algorithm and that key only.
	if !keyAllows(key, alg.String()) {
		return chat.Principal{}, unauthenticated("token algorithm does not match its key")
	}

	t, err := jwt.Parse(raw,
		jwt.WithKey(alg, key),
		jwt.WithValidate(true),
		jwt.WithClock(jwt.ClockFunc(a.now)),
		jwt.WithAcceptableSkew(a.skew),
		jwt.WithIssuer(a.issuer),
		jwt.WithRequiredClaim(jwt.SubjectKey),
		jwt.WithRequiredClaim(jwt.ExpirationKey),
	)
	if err != nil {
		return chat.Principal{}, unauthenticated(jwtReason(err))
	}
	if reason := a.audienceProblem(t); reason != "" {
		return chat.Principal{}, unauthenticated(reason)
	}
	sub, _ := t.Subject()
	if !validIdentity(sub) {
		return chat.Principal{}, unauthenticated("sub claim is empty or malformed")
	}
	// A token without a usable tenant claim names no principal: it is an
	// invalid token (401, RFC 6750 §3.1 invalid_token), not a valid one
	// lacking privileges (403 insufficient_scope), and only a new token
	// can fix it (docs/security.md).
	var tenant string
	if a.tenantClaim == jwt.IssuerKey {
		tenant, _ = t.Issuer()
	} else if err := t.Get(a.tenantClaim, &tenant); err != nil {
		return chat.Principal{}, unauthenticated("tenant claim missing or not a string")
	}
	if !validIdentity(tenant) {
		return chat.Principal{}, unauthenticated("tenant claim empty or malformed")
	}
	return chat.Principal{Subject: sub, Tenant: tenant, Trusted: a.trusted.of(tenant, sub)}, nil
}

// audienceProblem checks that t is meant for this service: its "aud"
// holds the configured audience or, for a token without "aud", its
// "client_id" is it. Amazon Cognito's access tokens carry no "aud", only
// the app client's id as "client_id" (API Gateway's JWT authorizers
// accept the same two); an "aud" that does not hold the audience is
// refused whatever "client_id" says. It returns "" or a fixed reason.
func (a *jwtAuthenticator) audienceProblem(t jwt.Token) string {
	if aud, ok := t.Audience(); ok && len(aud) > 0 {
		if !slices.Contains(aud, a.audience) {
			return "wrong audience"
		}
		return ""
	}
	var client string
	if err := t.Get("client_id", &client); err != nil {
		return "no audience (aud or client_id)"
	}
	if client != a.audience {
		return "wrong audience"
	}
	return ""
}

// keyAllows reports whether a token signed with the JWS algorithm alg may
// be verified with key (RFC 8725 §3.1, docs/security.md): when the JWKS
// gives the key an "alg", alg must be exactly it; otherwise alg must be
// the one its type implies: ES256 for a P-256 key, ES384 for P-384, ES512
// for P-521, EdDSA or Ed25519 for an Ed25519 key, and any RSA algorithm of
// the allowlist (RS256-RS512, PS256-PS512) for an RSA key. Every other key
// allows nothing.
func keyAllows(key jwk.Key, alg string) bool {
	if !asymmetric[alg] {
		return false
	}
	if a, ok := key.Algorithm(); ok {
		return a.String() == alg
	}
	switch key.KeyType() {
	case jwa.RSA():
		return strings.HasPrefix(alg, "RS") || strings.HasPrefix(alg, "PS")
	case jwa.EC(), jwa.OKP():
		c, ok := key.(interface {
			Crv() (jwa.EllipticCurveAlgorithm, bool)
		})
		if !ok {
			return false
		}
		crv, ok := c.Crv()
		if !ok {
			return false
		}
		return curveAlgs[crv.String()][alg]
	}
	return false
}

// curveAlgs maps a JWK "crv" to the JWS algorithms a key on that curve
// signs with (RFC 7518 §3.4, RFC 8037, RFC 9864).
var curveAlgs = map[string]map[string]bool{
	"P-256":   {"ES256": true},
	"P-384":   {"ES384": true},
	"P-521":   {"ES512": true},
	"Ed25519": {"EdDSA": true, "Ed25519": true},
}

// numericDates are the claims whose value is a NumericDate (RFC 7519 §2,
// §4.1.4-§4.1.6): a JSON number of seconds since the epoch.
var numericDates = map[string]bool{jwt.ExpirationKey: true, jwt.NotBeforeKey: true, jwt.IssuedAtKey: true}

// claimsProblem checks the claims set as JSON before jwx reads it, for
// what jwx accepts and RFC 7519 does not: it must be one JSON object (no
// trailing data, valid UTF-8) whose claim names are unique (§4; jwx keeps
// the last of two), and exp, nbf and iat, when present, must be JSON
// numbers (jwx also reads a string of digits or an RFC 3339 time). It
// returns "" when the claims pass, else a fixed reason that quotes
// nothing from the token.
func claimsProblem(payload []byte) string {
	const notObject = "claims are not one JSON object"
	dec := jsontext.NewDecoder(bytes.NewReader(payload)) // duplicate names and invalid UTF-8 are errors
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return notObject
	}
	for dec.PeekKind() == '"' {
		tok, err := dec.ReadToken()
		if err != nil {
			if errors.Is(err, jsontext.ErrDuplicateName) {
				return "claims name a claim twice"
			}
			return notObject
		}
		date := numericDates[tok.String()] // tok is void after the next read
		v, err := dec.ReadValue()
		if err != nil {
			return notObject
		}
		if date && v.Kind() != '0' {
			return "exp, nbf or iat is not a NumericDate (a JSON number)"
		}
	}
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '}' {
		return notObject
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return notObject
	}
	return ""
}

// jwtReason names a jwt.Parse failure with a fixed text (the library's
// message is not logged: it may quote claim values).
func jwtReason(err error) string {
	switch {
	case errors.Is(err, jwt.TokenExpiredError()):
		return "token expired"
	case errors.Is(err, jwt.TokenNotYetValidError()):
		return "token not yet valid (nbf)"
	case errors.Is(err, jwt.InvalidIssuedAtError()):
		return "token issued in the future (iat)"
	case errors.Is(err, jwt.InvalidIssuerError()):
		return "wrong issuer"
	case errors.Is(err, jwt.InvalidAudienceError()):
		return "wrong audience"
	case errors.Is(err, jwt.MissingRequiredClaimError()):
		return "missing required claim (sub or exp)"
	case errors.Is(err, jwt.ValidateError()):
		return "claims invalid"
	}
	return "signature or format invalid"
}

// keyCache holds the JWKS: fetched at start, refetched when older than
// maxAge or, at most once per minRefresh, when a token names an unknown
// kid. One fetch runs at a time; requests whose kid is cached never wait
// for it (a stale set keeps serving while it is refreshed). A failed
// refresh keeps the previous set.
type keyCache struct {
	url        string
	client     *http.Client
	now        func() time.Time
	minRefresh time.Duration
	maxAge     time.Duration

	fetchMu sync.Mutex // serializes fetches; never held with mu across a fetch

	mu        sync.Mutex // guards the fields below
	set       jwk.Set
	fetchedAt time.Time // last successful fetch
	triedAt   time.Time // last attempt, successful or not
}

// lookup reports the cached set, whether it holds kid and whether it is
// fresh.
func (c *keyCache) lookup(kid string) (set jwk.Set, have, fresh bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, have = c.set.LookupKeyID(kid)
	return c.set, have, c.now().Sub(c.fetchedAt) < c.maxAge
}

// setWithKey returns a key set that contains kid, refreshing when the
// cached set is stale or lacks kid (rate-limited by minRefresh).
func (c *keyCache) setWithKey(ctx context.Context, kid string) (jwk.Set, error) {
	set, have, fresh := c.lookup(kid)
	if have && fresh {
		return set, nil
	}
	if have {
		// Stale: refresh unless another request already is, and serve the
		// current set either way.
		if c.fetchMu.TryLock() {
			c.refreshLockedIfDue(ctx)
			c.fetchMu.Unlock()
		}
		return set, nil
	}
	// Unknown kid: wait for any fetch in flight, then fetch if due.
	c.fetchMu.Lock()
	if set, have, _ = c.lookup(kid); !have {
		c.refreshLockedIfDue(ctx)
		set, have, _ = c.lookup(kid)
	}
	c.fetchMu.Unlock()
	if !have {
		return nil, errors.New("auth: kid not in JWKS")
	}
	return set, nil
}

// refreshLockedIfDue fetches when minRefresh has passed since the last
// attempt. The caller holds fetchMu. A failure keeps the previous set.
func (c *keyCache) refreshLockedIfDue(ctx context.Context) {
	c.mu.Lock()
	due := c.now().Sub(c.triedAt) >= c.minRefresh
	c.mu.Unlock()
	if due {
		_ = c.refreshLocked(ctx) // the previous set stays in use
	}
}

// refresh fetches the JWKS now.
func (c *keyCache) refresh(ctx context.Context) error {
	c.fetchMu.Lock()
	defer c.fetchMu.Unlock()
	return c.refreshLocked(ctx)
}

// refreshLocked fetches the JWKS; the caller holds fetchMu.
func (c *keyCache) refreshLocked(ctx context.Context) error {
	started := c.now()
	set, err := c.fetch(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.triedAt = started
	if err != nil {
		return err
	}
	c.set, c.fetchedAt = set, started
	return nil
}

// fetch downloads and parses the JWKS, keeping only public asymmetric
// signature keys (symmetric "oct" keys and private keys are dropped).
func (c *keyCache) fetch(ctx context.Context) (jwk.Set, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	if err != nil {
		return nil, fmt.Errorf("JWKS request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("JWKS fetch: %w", err)
	}
	defer func() { _ = resp.Body.Close() }() // read errors are reported by ReadAll
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("JWKS fetch: HTTP status %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil {
		return nil, fmt.Errorf("JWKS read: %w", err)
	}
	if len(body) > maxJWKSBytes {
		return nil, errors.New("JWKS larger than 1 MiB")
	}
	parsed, err := jwk.Parse(body)
	if err != nil {
		return nil, fmt.Errorf("JWKS parse: %w", err)
	}
	out := jwk.NewSet()
	for i := 0; i < parsed.Len(); i++ {
		k, _ := parsed.Key(i)
		if k.KeyType() == jwa.OctetSeq() {
			continue
		}
		pub, err := jwk.PublicKeyOf(k)
		if err != nil {
			return nil, fmt.Errorf("JWKS key %d: %w", i, err)
		}
		if err := out.AddKey(pub); err != nil {
			return nil, fmt.Errorf("JWKS key: %w", err)
		}
	}
	if out.Len() == 0 {
		return nil, errors.New("JWKS has no asymmetric keys")
	}
	return out, nil
}
