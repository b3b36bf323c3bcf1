package auth_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdaurl"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"
	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/config"
)

const (
	callerARN = "arn:aws:sts::123456789012:assumed-role/app/session-1"
	hostARN   = "arn:aws:iam::123456789012:role/workspace-host"
	account   = "123456789012"
)

// result is what the handler under test saw.
type result struct {
	p   chat.Principal
	err error
}

// authHandler authenticates each request (with a body that must not be
// read) and sends the result on out.
func authHandler(tb testing.TB, a auth.Authenticator, out chan<- result) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = forbiddenBody{tb}
		p, err := a.Authenticate(r)
		out <- result{p, err}
		w.WriteHeader(http.StatusNoContent)
	})
}

// viaLambdaURL serves one function URL event through lambdaurl.Wrap (the
// streaming turn function's adapter).
func viaLambdaURL(tb testing.TB, a auth.Authenticator, iam *events.LambdaFunctionURLRequestContextAuthorizerIAMDescription, headers map[string]string) result {
	tb.Helper()
	out := make(chan result, 1)
	ev := &events.LambdaFunctionURLRequest{
		RawPath: "/", Headers: headers, Body: `{"untrusted":true}`,
		RequestContext: events.LambdaFunctionURLRequestContext{
			AccountID: "999999999999", DomainName: "x.lambda-url.us-east-1.on.aws",
			HTTP: events.LambdaFunctionURLRequestContextHTTPDescription{Method: http.MethodPost, Path: "/"},
		},
	}
	if iam != nil {
		ev.RequestContext.Authorizer = &events.LambdaFunctionURLRequestContextAuthorizerDescription{IAM: iam}
	}
	resp, err := lambdaurl.Wrap(authHandler(tb, a, out))(context.Background(), ev)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		tb.Fatal(err)
	}
	return <-out
}

// viaAPIProxy serves one function URL event (payload format 2.0) through
// aws-lambda-go-api-proxy's httpadapter v2 (the buffered functions'
// adapter).
func viaAPIProxy(tb testing.TB, a auth.Authenticator, iam *events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription, headers map[string]string) result {
	tb.Helper()
	out := make(chan result, 1)
	ev := events.APIGatewayV2HTTPRequest{
		Version: "2.0", RawPath: "/sessions/s1", Headers: headers, Body: `{"untrusted":true}`,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			AccountID: "999999999999", DomainName: "x.lambda-url.us-east-1.on.aws",
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: http.MethodGet, Path: "/sessions/s1"},
		},
	}
	if iam != nil {
		ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{IAM: iam}
	}
	if _, err := httpadapter.NewV2(authHandler(tb, a, out)).ProxyWithContext(context.Background(), ev); err != nil {
		tb.Fatal(err)
	}
	return <-out
}

func TestIAM(t *testing.T) {
	a := mustNew(t, config.AuthConfig{Mode: config.AuthIAM, TrustedSubject: hostARN}, auth.WithLookupEnv(noEnv))

	// A forged identity in headers: a dev token, a JWT-looking bearer, and
	// the api-proxy's own context header.
	forged, err := json.Marshal(events.APIGatewayV2HTTPRequestContext{
		AccountID: account,
		Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{UserARN: hostARN, AccountID: account},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	spoof := map[string]string{
		"Authorization":                      auth.DevAuthorization("host"),
		"X-GoLambdaProxy-ApiGateway-Context": string(forged),
	}

	type identity struct{ arn, account string }
	tests := map[string]struct {
		id      *identity
		headers map[string]string
		want    chat.Principal
		wantErr error
	}{
		"caller":                          {&identity{callerARN, account}, nil, chat.Principal{Subject: callerARN, Tenant: account}, nil},
		"trusted host":                    {&identity{hostARN, account}, nil, chat.Principal{Subject: hostARN, Tenant: account, Trusted: true}, nil},
		"host ARN from another account":   {&identity{hostARN, "210987654321"}, nil, chat.Principal{Subject: hostARN, Tenant: "210987654321"}, nil},
		"headers ignored":                 {&identity{callerARN, account}, spoof, chat.Principal{Subject: callerARN, Tenant: account}, nil},
		"no IAM identity":                 {nil, nil, chat.Principal{}, auth.ErrUnauthenticated},
		"no IAM identity, forged headers": {nil, spoof, chat.Principal{}, auth.ErrUnauthenticated},
		"empty ARN":                       {&identity{"", account}, nil, chat.Principal{}, auth.ErrUnauthenticated},
		"empty account":                   {&identity{callerARN, ""}, nil, chat.Principal{}, auth.ErrUnauthenticated},
	}
	for name, tc := range tests {
		t.Run("lambdaurl/"+name, func(t *testing.T) {
			var iam *events.LambdaFunctionURLRequestContextAuthorizerIAMDescription
			if tc.id != nil {
				iam = &events.LambdaFunctionURLRequestContextAuthorizerIAMDescription{UserARN: tc.id.arn, AccountID: tc.id.account, CallerID: "AROAEXAMPLE:session-1"}
			}
			got := viaLambdaURL(t, a, iam, tc.headers)
			checkResult(t, got.p, got.err, tc.want, tc.wantErr)
		})
		t.Run("api-proxy/"+name, func(t *testing.T) {
			var iam *events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription
			if tc.id != nil {
				iam = &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{UserARN: tc.id.arn, AccountID: tc.id.account, CallerID: "AROAEXAMPLE:session-1"}
			}
			got := viaAPIProxy(t, a, iam, tc.headers)
			checkResult(t, got.p, got.err, tc.want, tc.wantErr)
		})
	}

	t.Run("plain request without a Lambda event", func(t *testing.T) {
		got, err := a.Authenticate(newRequest(t, context.Background(), auth.DevAuthorization("host")))
		checkResult(t, got, err, chat.Principal{}, auth.ErrUnauthenticated)
	})
}
