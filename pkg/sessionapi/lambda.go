package sessionapi

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/turnstream/turnstream/pkg/httpedge"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// FunctionURLHandler is a Lambda handler of function URL events (payload
// format 2.0, the same JSON as API Gateway HTTP API v2), as passed to
// lambda.Start.
type FunctionURLHandler func(ctx context.Context, event events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// NewFunctionURLHandler adapts h to function URL events in BUFFERED mode with
// aws-lambda-go-api-proxy v0.16.2 httpadapter.NewV2(h).ProxyWithContext
// (docs/design.md#the-three-functions). The adapter decodes an isBase64Encoded
// body (standard encoding) before h reads it and puts the Lambda context in
// the request context (lambdacontext.FromContext gives the request id; the
// function URL request context is core.GetAPIGatewayV2ContextFromContext).
//
// One gap of the adapter is closed here: a body marked isBase64Encoded that
// is not valid base64 makes the adapter fail the invocation (a 502 from the
// function URL). Such a body is passed on as an empty body instead, which
// every route that reads a body rejects with 400 REQUEST_INVALID_BODY after
// the usual checks (method, content type, authentication), so the order of
// checks stays the same.
//
// An event whose path is not a valid URL path (such as "/sessions/%zz"),
// which the adapter cannot turn into an http.Request, is answered with 404
// REQUEST_NOT_FOUND rather than a failed invocation, before the adapter
// sees it (the adapter would print the raw path to stdout).
func NewFunctionURLHandler(h http.Handler) FunctionURLHandler {
	adapter := httpadapter.NewV2(h)
	return func(ctx context.Context, event events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		if event.IsBase64Encoded {
			if _, err := base64.StdEncoding.DecodeString(event.Body); err != nil {
				event.Body, event.IsBase64Encoded = "", false
			}
		}
		if !validRequestURI(event) {
			return notFoundResponse(), nil
		}
		resp, err := adapter.ProxyWithContext(ctx, event)
		if err != nil {
			// The handler always writes a status, so the adapter fails only
			// while converting the event, before h runs.
			return notFoundResponse(), nil
		}
		return resp, nil
	}
}

// validRequestURI reports whether the event's path and query form a valid
// request URI, as the adapter builds it (rawPath, else requestContext.http.path).
func validRequestURI(event events.APIGatewayV2HTTPRequest) bool {
	p := event.RawPath
	if p == "" {
		p = event.RequestContext.HTTP.Path
	}
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	if event.RawQueryString != "" {
		p += "?" + event.RawQueryString
	}
	_, err := url.ParseRequestURI(p)
	return err == nil
}

// notFoundResponse is the function URL response of a path no route
// serves: the status, headers and body httpedge.NotFound writes.
func notFoundResponse() events.APIGatewayV2HTTPResponse {
	d := protocol.NewDiagnostic(protocol.CodeRequestNotFound)
	h := http.Header{}
	httpedge.SetJSONHeaders(h)
	resp := events.APIGatewayV2HTTPResponse{StatusCode: protocol.HTTPStatus(d.Code), Headers: make(map[string]string, len(h)), Body: string(protocol.EncodeErrorBody(d))}
	for k := range h {
		resp.Headers[k] = h.Get(k)
	}
	return resp
}
