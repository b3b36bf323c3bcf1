package auth

import (
	"net/http"

	"github.com/aws/aws-lambda-go/lambdaurl"
	"github.com/awslabs/aws-lambda-go-api-proxy/core"
	"github.com/turnstream/turnstream/pkg/chat"
)

// iamAuthenticator implements iam mode: function URL AuthType AWS_IAM
// (docs/design.md#authentication-and-tenancy). Lambda verified the SigV4
// signature before invoking; the identity is read from the raw event that the
// adapter put in the request context, never from headers
// (aws-lambda-go-api-proxy also copies the event into an
// X-GoLambdaProxy-ApiGateway-Context header, which a caller could forge: it is
// ignored).
type iamAuthenticator struct {
	trusted trust
}

func (a iamAuthenticator) Authenticate(r *http.Request) (chat.Principal, error) {
	arn, account, ok := iamIdentity(r)
	if !ok {
		return chat.Principal{}, unauthenticated("no IAM identity in the request context")
	}
	if !validIdentity(arn) || !validIdentity(account) {
		return chat.Principal{}, unauthenticated("IAM identity is malformed")
	}
	return chat.Principal{Subject: arn, Tenant: account, Trusted: a.trusted.of(account, arn)}, nil
}

// iamIdentity returns the caller ARN and account id of the function URL
// event in r's context: lambdaurl's (streaming) or api-proxy's (buffered).
func iamIdentity(r *http.Request) (arn, account string, ok bool) {
	ctx := r.Context()
	if ev, found := lambdaurl.RequestFromContext(ctx); found && ev != nil {
		if az := ev.RequestContext.Authorizer; az != nil && az.IAM != nil {
			return az.IAM.UserARN, az.IAM.AccountID, true
		}
		return "", "", false
	}
	if rc, found := core.GetAPIGatewayV2ContextFromContext(ctx); found {
		if az := rc.Authorizer; az != nil && az.IAM != nil {
			return az.IAM.UserARN, az.IAM.AccountID, true
		}
	}
	return "", "", false
}
