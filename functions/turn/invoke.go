package main

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/turnstream/turnstream/functions/internal/awsapi"
)

// eventInvoker starts asynchronous invocations of a Lambda function
// (InvocationType Event) with the one request of Lambda's Invoke API that
// this needs,
//
//	POST /2015-03-31/functions/{FunctionName}/invocations
//	X-Amz-Invocation-Type: Event
//
// sent by functions/internal/awsapi (signed for the service "lambda",
// retried as the SDK retries its calls, each attempt bounded), and
// answered 202 when Lambda has queued the event. It stands in for the
// Lambda service client, whose package initialisation (its serialisation
// schemas) took 3.4 ms of every cold start of the turn function, queued
// turns or not (docs/benchmarks.md, "A lean turn bootstrap").
type eventInvoker struct {
	api *awsapi.Client
}

// lambdaAPI is Lambda's API as awsapi calls it.
var lambdaAPI = awsapi.Service{SigningName: "lambda", Host: "lambda", EndpointVariable: "AWS_ENDPOINT_URL_LAMBDA", Name: "Lambda"}

// defaultInvokeAttemptTimeout bounds one Invoke attempt: an asynchronous
// Invoke only queues the event, and the dispatch that sends it has 10 s.
const defaultInvokeAttemptTimeout = 3 * time.Second

// newEventInvoker returns the invoker of cfg's region and credentials,
// sending through cfg's HTTP client. The endpoint is
// AWS_ENDPOINT_URL_LAMBDA when set, else cfg.BaseEndpoint
// (AWS_ENDPOINT_URL), else the region's public endpoint,
// https://lambda.<region>.amazonaws.com (.amazonaws.com.cn in the China
// regions). It returns an error when the region is empty or an endpoint
// is not an absolute http(s) URL.
func newEventInvoker(cfg aws.Config) (*eventInvoker, error) {
	api, err := awsapi.New(cfg, lambdaAPI, defaultInvokeAttemptTimeout)
	if err != nil {
		return nil, err
	}
	return &eventInvoker{api: api}, nil
}

// invokeEvent queues payload as an asynchronous invocation of function
// (a name, an ARN or a partial ARN). It returns nil once Lambda accepted
// it (2xx), an *awsapi.Error for any other answer (after the retries a
// throttle or a server error gets), or the transport's or the
// credentials' error.
func (i *eventInvoker) invokeEvent(ctx context.Context, function string, payload []byte) error {
	_, err := i.api.Do(ctx, http.MethodPost, "/2015-03-31/functions/"+url.PathEscape(function)+"/invocations",
		map[string]string{"Content-Type": "application/json", "X-Amz-Invocation-Type": "Event"}, payload)
	return err
}
