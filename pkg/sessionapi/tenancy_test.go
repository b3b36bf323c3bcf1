package sessionapi_test

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/turnstream/turnstream/internal/testidp"
	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/sessionapi"
)

// Tenancy through the real handlers and authenticators: a principal is
// its tenant and subject together, the trusted artifacts writer is bound
// to both, and another tenant's session is 404 on every route, to the
// trusted writer too.

// withAuthenticator rebuilds f's handlers around a.
func (f *fixture) withAuthenticator(a auth.Authenticator) {
	opts := sessionapi.Options{
		Store:         f.store,
		Authenticator: a,
		Logger:        slog.New(slog.NewJSONHandler(f.logs, nil)),
		MaxBodyBytes:  4096,
		Now:           f.clock.Now,
	}
	f.history, f.artifacts = newHandlers(f.t, opts)
}

// tenancyCase is one request and its expected outcome; status 200 checks
// only the status.
type tenancyCase struct {
	method, target string
	caller         string // a key of the test's callers
	status         int
	code           string
}

const (
	tenancyStored = `{"artifacts":[{"entryPath":"keep.html","artifactType":"webpage"}]}`
	tenancyNew    = `{"artifacts":[{"entryPath":"new.html","artifactType":"webpage"}]}`
)

// tenancyCases are the routes of both functions, called on session "sa"
// (tenant A, owner "owner-A") and "sc" (tenant C, owner "owner-C") by the
// callers every mode's test defines: owner-A; same-subject-B (owner-A's
// subject in tenant B); host-A (the trusted writer, tenant A); host-B (the
// trusted subject in tenant B).
var tenancyCases = map[string]tenancyCase{
	"owner reads session":                                           {"GET", "/sessions/sa", "owner-A", 200, ""},
	"owner reads turns":                                             {"GET", "/sessions/sa/turns", "owner-A", 200, ""},
	"owner reads messages":                                          {"GET", "/sessions/sa/messages", "owner-A", 200, ""},
	"owner reads artifacts":                                         {"GET", "/sessions/sa/turns/t1/artifacts", "owner-A", 200, ""},
	"same subject, other tenant: session":                           {"GET", "/sessions/sa", "same-subject-B", 404, protocol.CodeSessionNotFound},
	"same subject, other tenant: turns":                             {"GET", "/sessions/sa/turns", "same-subject-B", 404, protocol.CodeSessionNotFound},
	"same subject, other tenant: messages":                          {"GET", "/sessions/sa/messages", "same-subject-B", 404, protocol.CodeSessionNotFound},
	"same subject, other tenant: artifacts":                         {"GET", "/sessions/sa/turns/t1/artifacts", "same-subject-B", 404, protocol.CodeSessionNotFound},
	"owner of A reads C":                                            {"GET", "/sessions/sc/turns", "owner-A", 404, protocol.CodeSessionNotFound},
	"trusted writer reads no history":                               {"GET", "/sessions/sa/turns", "host-A", 404, protocol.CodeSessionNotFound},
	"trusted writer, other tenant's session":                        {"PUT", "/sessions/sc/turns/t1/artifacts", "host-A", 404, protocol.CodeSessionNotFound},
	"trusted subject of another tenant":                             {"PUT", "/sessions/sa/turns/t1/artifacts", "host-B", 403, protocol.CodeRequestForbidden},
	"trusted subject of another tenant on its own tenant's session": {"PUT", "/sessions/sb/turns/t1/artifacts", "host-B", 403, protocol.CodeRequestForbidden},
	"owner may not write":                                           {"PUT", "/sessions/sa/turns/t1/artifacts", "owner-A", 403, protocol.CodeRequestForbidden},
	"trusted writer, own tenant":                                    {"PUT", "/sessions/sa/turns/t1/artifacts", "host-A", 200, ""},
}

// runTenancy seeds sessions sa (tenant A), sb (tenant B) and sc (tenant C)
// with one turn each and stored artifacts, runs every tenancyCase through
// call, and checks after each that no rejected request changed a stored
// collection.
func runTenancy(t *testing.T, f *fixture, owners map[string]chat.Principal, call func(t *testing.T, tc tenancyCase, body string) response) {
	t.Helper()
	for _, sid := range []string{"sa", "sb", "sc"} {
		f.runTurn(sid, owners[sid], turnSpec{id: "t1", artifacts: []chat.ArtifactReference{{EntryPath: "keep.html", ArtifactType: chat.ArtifactWebpage}}})
	}
	for name, tc := range tenancyCases {
		if tc.status == http.StatusOK && tc.method == http.MethodPut {
			continue // run last: it changes sa
		}
		t.Run(name, func(t *testing.T) { checkTenancy(t, f, owners, tc, call) })
	}
	name := "trusted writer, own tenant"
	t.Run(name, func(t *testing.T) { checkTenancy(t, f, owners, tenancyCases[name], call) })
	got, err := f.store.GetArtifacts(f.ctx, "sa", "t1", owners["sa"])
	if err != nil || len(got) != 1 || got[0].EntryPath != "new.html" {
		t.Fatalf("sa artifacts after the trusted PUT = %v, %v; want new.html", got, err)
	}
}

func checkTenancy(t *testing.T, f *fixture, owners map[string]chat.Principal, tc tenancyCase, call func(t *testing.T, tc tenancyCase, body string) response) {
	t.Helper()
	body := ""
	if tc.method == http.MethodPut {
		body = tenancyNew
	}
	resp := call(t, tc, body)
	if tc.status == http.StatusOK {
		if resp.status != http.StatusOK {
			t.Fatalf("status %d, body %s; want 200", resp.status, resp.body)
		}
		return
	}
	wantError(t, tc.method+" "+tc.target, resp, tc.status, tc.code)
	for _, sid := range []string{"sa", "sb", "sc"} {
		got, err := f.store.GetArtifacts(f.ctx, sid, "t1", owners[sid])
		if err != nil || len(got) != 1 || got[0].EntryPath != "keep.html" {
			t.Fatalf("%s artifacts = %v, %v; a rejected request changed them", sid, got, err)
		}
	}
}

// TestTenancyJWT: jwt mode with JWT_TENANT_CLAIM=tid and the trusted
// writer {tid: A, sub: host}. The token {sub: host, tid: B} is not
// trusted anywhere.
func TestTenancyJWT(t *testing.T) {
	idp := testidp.New(t)
	authn, err := auth.New(context.Background(), config.AuthConfig{
		Mode: config.AuthJWT, JWKSURL: idp.JWKSURL, Issuer: testidp.Issuer, Audience: testidp.Audience,
		ClockSkew: time.Minute, TenantClaim: "tid", TrustedSubject: "host", TrustedTenant: "A",
	}, auth.WithHTTPClient(idp.Client))
	if err != nil {
		t.Fatal(err)
	}
	owners := map[string]chat.Principal{
		"sa": {Subject: "owner", Tenant: "A"}, "sb": {Subject: "owner", Tenant: "B"}, "sc": {Subject: "owner-c", Tenant: "C"},
	}
	token := func(sub, tid string) string { return idp.Token(t, sub, map[string]any{"tid": tid}) }
	tokens := map[string]string{
		"owner-A":        token("owner", "A"),
		"same-subject-B": token("owner", "B"),
		"host-A":         token("host", "A"),
		"host-B":         token("host", "B"), // the token: trusted subject, another tenant
	}
	forEachStore(t, func(t *testing.T, f *fixture) {
		f.withAuthenticator(authn)
		runTenancy(t, f, owners, func(t *testing.T, tc tenancyCase, body string) response {
			h := f.history
			if strings.HasSuffix(tc.target, "/artifacts") {
				h = f.artifacts
			}
			req := request{method: tc.method, target: tc.target, auth: "Bearer " + tokens[tc.caller], body: body}
			if body != "" {
				req.contentType = "application/json"
			}
			return f.do(h, req)
		})
		// A verified token without the tenant claim names no principal:
		// 401 with the Bearer challenge, as every other token fault, on
		// both functions.
		noTenant := "Bearer " + idp.Token(t, "owner", nil)
		for _, target := range []string{"/sessions/sa", "/sessions/sa/turns/t1/artifacts"} {
			h := f.history
			if strings.HasSuffix(target, "/artifacts") {
				h = f.artifacts
			}
			resp := f.do(h, request{method: http.MethodGet, target: target, auth: noTenant})
			wantError(t, "no tenant claim: "+target, resp, http.StatusUnauthorized, protocol.CodeRequestUnauthenticated)
			if got := resp.header.Get("WWW-Authenticate"); got != "Bearer" {
				t.Errorf("no tenant claim: %s: WWW-Authenticate %q, want Bearer", target, got)
			}
		}
	})
}

// TestTenancyIAM: iam mode through the function URL adapter (the identity
// comes from the event's request context): a principal is its ARN and
// account; the trusted writer is an ARN of account A.
func TestTenancyIAM(t *testing.T) {
	const (
		acctA, acctB, acctC = "111111111111", "222222222222", "333333333333"
		ownerARN            = "arn:aws:iam::111111111111:user/owner"
		hostARN             = "arn:aws:iam::111111111111:role/host"
	)
	authn, err := auth.New(context.Background(), config.AuthConfig{Mode: config.AuthIAM, TrustedSubject: hostARN})
	if err != nil {
		t.Fatal(err)
	}
	owners := map[string]chat.Principal{
		"sa": {Subject: ownerARN, Tenant: acctA},
		"sb": {Subject: "arn:aws:iam::222222222222:user/owner", Tenant: acctB},
		"sc": {Subject: "arn:aws:iam::333333333333:user/owner", Tenant: acctC},
	}
	// The same ARN strings under another account cannot come from Lambda,
	// but they prove that trust and ownership compare the account too.
	identities := map[string][2]string{
		"owner-A":        {ownerARN, acctA},
		"same-subject-B": {ownerARN, acctB},
		"host-A":         {hostARN, acctA},
		"host-B":         {hostARN, acctB},
	}
	forEachStore(t, func(t *testing.T, f *fixture) {
		f.withAuthenticator(authn)
		history := sessionapi.NewFunctionURLHandler(f.history)
		artifacts := sessionapi.NewFunctionURLHandler(f.artifacts)
		runTenancy(t, f, owners, func(t *testing.T, tc tenancyCase, body string) response {
			h := history
			if strings.HasSuffix(tc.target, "/artifacts") {
				h = artifacts
			}
			id := identities[tc.caller]
			ev := events.APIGatewayV2HTTPRequest{
				Version: "2.0", RawPath: tc.target, Body: body, Headers: map[string]string{},
				RequestContext: events.APIGatewayV2HTTPRequestContext{
					AccountID: "999999999999", DomainName: "x.lambda-url.us-east-1.on.aws",
					HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: tc.method, Path: tc.target},
					Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
						IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{UserARN: id[0], AccountID: id[1]},
					},
				},
			}
			if body != "" {
				ev.Headers["content-type"] = "application/json"
			}
			resp, err := h(f.ctx, ev)
			if err != nil {
				t.Fatalf("invocation failed: %v", err)
			}
			return response{status: resp.StatusCode, header: header(resp), body: []byte(resp.Body)}
		})
	})
}
