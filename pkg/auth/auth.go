package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/turnstream/turnstream/pkg/chat"
)

// Sentinel errors of Authenticate. Handlers map them with errors.Is; the
// wrapping text (a fixed reason) is for logs only.
var (
	// ErrUnauthenticated: no acceptable credential (missing, malformed,
	// expired, badly signed, wrong issuer or audience, without a usable
	// subject or tenant claim, no IAM identity). HTTP 401.
	ErrUnauthenticated = errors.New("auth: unauthenticated")
	// ErrForbidden: the principal is known but may not do what it asked
	// (an artifact write by a principal that is not the trusted one,
	// pkg/sessionapi). HTTP 403. No Authenticator of this package returns
	// it: a credential that names no principal is ErrUnauthenticated.
	ErrForbidden = errors.New("auth: forbidden")
)

// Authenticator establishes the principal of a request
// (docs/design.md#authentication-and-tenancy).
type Authenticator interface {
	// Authenticate returns the caller's principal. It reads r's headers and
	// context only, never r.Body. Errors wrap ErrUnauthenticated or
	// ErrForbidden. Safe for concurrent use.
	Authenticate(r *http.Request) (chat.Principal, error)
}

// Limits on identities and credentials.
const (
	// MaxSubjectBytes bounds a jwt or iam principal's Subject and Tenant
	// (an IAM ARN is at most 2048 characters; subjects are stored as the
	// session owner).
	MaxSubjectBytes = 2048
	// MaxTokenBytes bounds a bearer JWT; longer ones are rejected unparsed.
	MaxTokenBytes = 16 << 10
	// DevTenant is the Tenant of every dev-mode principal.
	DevTenant = "dev"
	// DevDefaultSubject is the dev-mode Subject when no Authorization
	// header is sent.
	DevDefaultSubject = "local"
	// DevTokenPrefix starts a dev-mode bearer token: "dev.<subject>".
	DevTokenPrefix = "dev."
)

// DevAuthorization returns the Authorization header value naming subject in
// dev mode: "Bearer dev.<subject>".
func DevAuthorization(subject string) string {
	return "Bearer " + DevTokenPrefix + subject
}

// Option adjusts New.
type Option func(*options)

type options struct {
	lookupEnv  func(string) (string, bool)
	httpClient *http.Client
	now        func() time.Time
	minRefresh time.Duration
	maxAge     time.Duration
}

// WithLookupEnv replaces os.LookupEnv for New's own environment checks (dev
// mode refuses to start when AWS_LAMBDA_FUNCTION_NAME is set). For tests.
func WithLookupEnv(lookup func(string) (string, bool)) Option {
	return func(o *options) { o.lookupEnv = lookup }
}

// WithHTTPClient sets the client that fetches the JWKS (jwt mode). The
// default is a client with a 10 s timeout.
func WithHTTPClient(c *http.Client) Option {
	return func(o *options) { o.httpClient = c }
}

// WithNow sets the clock for token validation and JWKS cache ages
// (default time.Now).
func WithNow(now func() time.Time) Option {
	return func(o *options) { o.now = now }
}

// WithJWKSRefresh sets how the JWKS cache refreshes (jwt mode): the set is
// refetched when older than maxAge (default 15 min), and when a token
// names an unknown kid, at most once per minInterval (default 1 min) so
// that forged kids cannot hammer the issuer. A failed refresh keeps the
// previous set.
func WithJWKSRefresh(minInterval, maxAge time.Duration) Option {
	return func(o *options) { o.minRefresh, o.maxAge = minInterval, maxAge }
}

// New returns the Authenticator of cfg.Mode (ModeDev, ModeJWT or
// ModeIAM). It fails when the mode is unknown, when dev mode is asked for
// on Lambda (AWS_LAMBDA_FUNCTION_NAME set), when jwt settings are missing,
// when the trusted principal is incomplete or impossible
// (Config.TrustedPrincipal), or when the first JWKS fetch fails
// (ctx bounds it), so that a misconfigured function fails at start rather
// than on every request. A principal is Trusted exactly when its Tenant
// and Subject are both those of cfg.TrustedPrincipal.
func New(ctx context.Context, cfg Config, opts ...Option) (Authenticator, error) {
	o := options{
		lookupEnv:  os.LookupEnv,
		httpClient: &http.Client{Timeout: 10 * time.Second},
		now:        time.Now,
		minRefresh: time.Minute,
		maxAge:     15 * time.Minute,
	}
	for _, opt := range opts {
		opt(&o)
	}
	var trusted trust
	switch cfg.Mode {
	case ModeDev, ModeIAM, ModeJWT:
		var err error
		if trusted.tenant, trusted.subject, _, err = cfg.TrustedPrincipal(); err != nil {
			return nil, fmt.Errorf("auth: %w", err)
		}
	}
	switch cfg.Mode {
	case ModeDev:
		if v, ok := o.lookupEnv("AWS_LAMBDA_FUNCTION_NAME"); ok && v != "" {
			return nil, errors.New("auth: AUTH_MODE dev refused on Lambda (AWS_LAMBDA_FUNCTION_NAME is set)")
		}
		return devAuthenticator{trusted: trusted}, nil
	case ModeIAM:
		return iamAuthenticator{trusted: trusted}, nil
	case ModeJWT:
		a, err := newJWT(ctx, cfg, trusted, o)
		if err != nil {
			return nil, err // never a typed nil in the interface
		}
		return a, nil
	}
	return nil, fmt.Errorf("auth: unknown AUTH_MODE (want %s, %s or %s)", ModeDev, ModeJWT, ModeIAM)
}

// unauthenticated wraps ErrUnauthenticated with a fixed reason.
func unauthenticated(reason string) error {
	return fmt.Errorf("%w: %s", ErrUnauthenticated, reason)
}

// bearer returns the token of the request's single "Authorization: Bearer
// <token>" header (scheme case-insensitive, RFC 7235 §2.1). present is
// false when no Authorization header was sent.
func bearer(r *http.Request) (token string, present bool, err error) {
	values := r.Header.Values("Authorization")
	switch len(values) {
	case 0:
		return "", false, nil
	case 1:
	default:
		return "", true, unauthenticated("more than one Authorization header")
	}
	scheme, tok, ok := strings.Cut(values[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", true, unauthenticated("Authorization is not a Bearer credential")
	}
	tok = strings.Trim(tok, " ")
	if tok == "" {
		return "", true, unauthenticated("empty bearer token")
	}
	return tok, true, nil
}

// validIdentity reports whether s can be a jwt or iam Subject or Tenant:
// 1..MaxSubjectBytes bytes of valid UTF-8 without control characters.
func validIdentity(s string) bool {
	if s == "" || len(s) > MaxSubjectBytes || !utf8.ValidString(s) {
		return false
	}
	return strings.IndexFunc(s, unicode.IsControl) < 0
}

// trust is the configured trusted principal (Config.TrustedPrincipal);
// the zero value trusts nobody.
type trust struct{ tenant, subject string }

// of reports whether a principal with tenant and subject is the trusted
// one: both must match, so the same subject in another tenant is not.
func (t trust) of(tenant, subject string) bool {
	return t.subject != "" && subject == t.subject && tenant == t.tenant
}
