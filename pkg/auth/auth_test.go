package auth_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/config"
)

// forbiddenBody fails the test when an Authenticator reads the request body
// (docs/design.md#the-turn-pipeline: authenticate before any body byte is
// read).
type forbiddenBody struct{ tb testing.TB }

func (b forbiddenBody) Read([]byte) (int, error) {
	b.tb.Error("Authenticate read the request body")
	return 0, io.EOF
}

func (b forbiddenBody) Close() error { return nil }

// newRequest returns a POST request with the given Authorization header
// values and a body that must not be read.
func newRequest(tb testing.TB, ctx context.Context, authorization ...string) *http.Request {
	tb.Helper()
	r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/", nil)
	r.Body = forbiddenBody{tb}
	for _, a := range authorization {
		r.Header.Add("Authorization", a)
	}
	return r
}

// noEnv is a lookup that finds nothing (not on Lambda).
func noEnv(string) (string, bool) { return "", false }

func mustNew(tb testing.TB, cfg config.AuthConfig, opts ...auth.Option) auth.Authenticator {
	tb.Helper()
	a, err := auth.New(context.Background(), cfg, opts...)
	if err != nil {
		tb.Fatalf("auth.New: %v", err)
	}
	return a
}

// checkResult compares an Authenticate result with a wanted principal or
// sentinel error.
func checkResult(tb testing.TB, got chat.Principal, err error, want chat.Principal, wantErr error) {
	tb.Helper()
	if wantErr != nil {
		if !errors.Is(err, wantErr) {
			tb.Fatalf("err = %v, want %v", err, wantErr)
		}
		if got != (chat.Principal{}) {
			tb.Errorf("principal %+v returned with an error", got)
		}
		return
	}
	if err != nil {
		tb.Fatalf("Authenticate: %v", err)
	}
	if got != want {
		tb.Errorf("principal = %+v, want %+v", got, want)
	}
}

func TestDev(t *testing.T) {
	tests := map[string]struct {
		trusted string
		headers []string
		want    chat.Principal
		wantErr error
	}{
		"no header is local":        {"host", nil, chat.Principal{Subject: "local", Tenant: "dev"}, nil},
		"named subject":             {"host", []string{"Bearer dev.alice"}, chat.Principal{Subject: "alice", Tenant: "dev"}, nil},
		"scheme case-insensitive":   {"host", []string{"bearer dev.alice"}, chat.Principal{Subject: "alice", Tenant: "dev"}, nil},
		"all allowed characters":    {"host", []string{"Bearer dev.A-z_0.9:x"}, chat.Principal{Subject: "A-z_0.9:x", Tenant: "dev"}, nil},
		"128 characters":            {"host", []string{"Bearer dev." + strings.Repeat("s", 128)}, chat.Principal{Subject: strings.Repeat("s", 128), Tenant: "dev"}, nil},
		"host is trusted":           {"host", []string{auth.DevAuthorization("host")}, chat.Principal{Subject: "host", Tenant: "dev", Trusted: true}, nil},
		"other trusted subject":     {"builder", []string{"Bearer dev.builder"}, chat.Principal{Subject: "builder", Tenant: "dev", Trusted: true}, nil},
		"host not trusted if other": {"builder", []string{"Bearer dev.host"}, chat.Principal{Subject: "host", Tenant: "dev"}, nil},
		"no trusted subject":        {"", []string{"Bearer dev.host"}, chat.Principal{Subject: "host", Tenant: "dev"}, nil},
		"129 characters":            {"host", []string{"Bearer dev." + strings.Repeat("s", 129)}, chat.Principal{}, auth.ErrUnauthenticated},
		"empty subject":             {"host", []string{"Bearer dev."}, chat.Principal{}, auth.ErrUnauthenticated},
		"slash in subject":          {"host", []string{"Bearer dev.a/b"}, chat.Principal{}, auth.ErrUnauthenticated},
		"space in subject":          {"host", []string{"Bearer dev.a b"}, chat.Principal{}, auth.ErrUnauthenticated},
		"non-ASCII subject":         {"host", []string{"Bearer dev.é"}, chat.Principal{}, auth.ErrUnauthenticated},
		"no dev prefix":             {"host", []string{"Bearer alice"}, chat.Principal{}, auth.ErrUnauthenticated},
		"basic scheme":              {"host", []string{"Basic ZGV2OmFsaWNl"}, chat.Principal{}, auth.ErrUnauthenticated},
		"bearer without token":      {"host", []string{"Bearer"}, chat.Principal{}, auth.ErrUnauthenticated},
		"empty header":              {"host", []string{""}, chat.Principal{}, auth.ErrUnauthenticated},
		"two headers":               {"host", []string{"Bearer dev.a", "Bearer dev.b"}, chat.Principal{}, auth.ErrUnauthenticated},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			a := mustNew(t, config.AuthConfig{Mode: config.AuthDev, TrustedSubject: tc.trusted}, auth.WithLookupEnv(noEnv))
			got, err := a.Authenticate(newRequest(t, context.Background(), tc.headers...))
			checkResult(t, got, err, tc.want, tc.wantErr)
		})
	}
}

func TestNew(t *testing.T) {
	onLambda := func(k string) (string, bool) {
		if k == "AWS_LAMBDA_FUNCTION_NAME" {
			return "turnstream-turn", true
		}
		return "", false
	}
	tests := map[string]struct {
		cfg    config.AuthConfig
		lookup func(string) (string, bool)
		wantOK bool
	}{
		"dev locally":            {config.AuthConfig{Mode: config.AuthDev}, noEnv, true},
		"dev on Lambda refused":  {config.AuthConfig{Mode: config.AuthDev}, onLambda, false},
		"iam on Lambda":          {config.AuthConfig{Mode: config.AuthIAM}, onLambda, true},
		"unknown mode":           {config.AuthConfig{Mode: "basic"}, noEnv, false},
		"empty mode":             {config.AuthConfig{}, noEnv, false},
		"jwt without JWKS URL":   {config.AuthConfig{Mode: config.AuthJWT, Issuer: "i", Audience: "a"}, noEnv, false},
		"jwt without issuer":     {config.AuthConfig{Mode: config.AuthJWT, JWKSURL: "http://127.0.0.1:1/", Audience: "a"}, noEnv, false},
		"jwt without audience":   {config.AuthConfig{Mode: config.AuthJWT, JWKSURL: "http://127.0.0.1:1/", Issuer: "i"}, noEnv, false},
		"jwt JWKS not reachable": {config.AuthConfig{Mode: config.AuthJWT, JWKSURL: "http://127.0.0.1:1/", Issuer: "i", Audience: "a"}, noEnv, false},
		// The trusted principal is a tenant and a subject (TrustedPrincipal).
		"iam trusted subject not an ARN":   {config.AuthConfig{Mode: config.AuthIAM, TrustedSubject: "host"}, onLambda, false},
		"iam trusted tenant not the ARN's": {config.AuthConfig{Mode: config.AuthIAM, TrustedSubject: "arn:aws:iam::123456789012:role/h", TrustedTenant: "210987654321"}, onLambda, false},
		"iam trusted tenant the ARN's":     {config.AuthConfig{Mode: config.AuthIAM, TrustedSubject: "arn:aws:iam::123456789012:role/h", TrustedTenant: "123456789012"}, onLambda, true},
		"dev trusted tenant not dev":       {config.AuthConfig{Mode: config.AuthDev, TrustedSubject: "host", TrustedTenant: "acme"}, noEnv, false},
		"trusted tenant without subject":   {config.AuthConfig{Mode: config.AuthIAM, TrustedTenant: "123456789012"}, onLambda, false},
		"jwt tenant claim, trusted subject alone": {config.AuthConfig{Mode: config.AuthJWT, JWKSURL: "http://127.0.0.1:1/", Issuer: "i", Audience: "a",
			TenantClaim: "tid", TrustedSubject: "host"}, noEnv, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			a, err := auth.New(context.Background(), tc.cfg, auth.WithLookupEnv(tc.lookup))
			if tc.wantOK != (err == nil) || tc.wantOK != (a != nil) {
				t.Errorf("New = %v, %v; want ok %v", a, err, tc.wantOK)
			}
		})
	}
}
