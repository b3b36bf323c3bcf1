package sessionapi

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"
)

// FunctionURLHandler is a Lambda handler of function URL events (payload
// format 2.0, the same JSON as API Gateway HTTP API v2), as passed to
// lambda.Start.
type FunctionURLHandler func(ctx context.Context, event events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// NewFunctionURLHandler adapts h to function URL events in BUFFERED mode
// with aws-lambda-go-api-proxy v0.16.2 httpadapter.NewV2(h).ProxyWithContext
// (DESIGN §1). The adapter decodes an isBase64Encoded body (standard
// encoding) before h reads it and puts the Lambda context in the request
// context (lambdacontext.FromContext gives the request id; the function
// URL request context is core.GetAPIGatewayV2ContextFromContext).
//
// One gap of the adapter is closed here: a body marked isBase64Encoded that
// is not valid base64 makes the adapter fail the invocation (a 502 from the
// function URL). Such a body is passed on as an empty body instead, which
// every route that reads a body rejects with 400 REQUEST_INVALID_BODY after
// the usual checks (method, content type, authentication), so the order of
// checks stays the same.
func NewFunctionURLHandler(h http.Handler) FunctionURLHandler {
	adapter := httpadapter.NewV2(h)
	return func(ctx context.Context, event events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		if event.IsBase64Encoded {
			if _, err := base64.StdEncoding.DecodeString(event.Body); err != nil {
				event.Body, event.IsBase64Encoded = "", false
			}
		}
		resp, err := adapter.ProxyWithContext(ctx, event)
		if err != nil {
			return resp, fmt.Errorf("sessionapi: function URL adapter: %w", err)
		}
		return resp, nil
	}
}
