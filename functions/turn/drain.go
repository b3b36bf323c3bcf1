package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdaurl"

	"github.com/turnstream/turnstream/internal/telemetrysetup"
	"github.com/turnstream/turnstream/pkg/awsenv"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/turn"
)

// Queued turns on Lambda (docs/multitask.md): a turn function invocation
// cannot keep working once its response ends (Lambda freezes the
// environment), and a client's stream ends only when the invocation does.
// So the invocation that ends a turn with queued turns waiting starts
// their drain in another invocation of the same function: an
// asynchronous Invoke (InvocationType Event) whose payload is a
// drainEvent. That invocation runs turn.Handler.Drain under its own
// deadline, turn after turn while its deadline leaves room for a whole
// turn, and invokes the function again for the rest.

// drainEvent is the payload of a drain invocation:
//
//	{"turnstreamDrain":{"sessionId":"<SafeId>","notBefore":"<RFC 3339>"}}
type drainEvent struct {
	Drain *turn.DrainRequest `json:"turnstreamDrain"`
}

// invoker is what a dispatcher needs of Lambda: an asynchronous
// invocation of a function (eventInvoker).
type invoker interface {
	invokeEvent(ctx context.Context, function string, payload []byte) error
}

// newDispatcher returns turn.Options.Dispatch for the function named
// function (AWS_LAMBDA_FUNCTION_NAME, the function's own): each drain is
// an asynchronous invocation of the function with a drainEvent. The
// client comes from newClient on the first dispatch, so a deployment
// that never queues a turn pays nothing for it at cold start. An Invoke
// error is returned (the SDK has retried it); Lambda itself retries an
// accepted asynchronous invocation whose function fails.
func newDispatcher(function string, newClient func(context.Context) (invoker, error)) func(context.Context, turn.DrainRequest) error {
	var once sync.Once
	var client invoker
	var clientErr error
	return func(ctx context.Context, d turn.DrainRequest) error {
		once.Do(func() { client, clientErr = newClient(ctx) })
		if clientErr != nil {
			return fmt.Errorf("drain dispatch: Lambda client: %w", clientErr)
		}
		payload, err := json.Marshal(drainEvent{Drain: &d})
		if err != nil {
			return fmt.Errorf("drain dispatch: %w", err)
		}
		if err := client.invokeEvent(ctx, function, payload); err != nil {
			return fmt.Errorf("drain dispatch: invoke %s: %w", function, err)
		}
		return nil
	}
}

// lambdaClient builds the invoker of the dispatcher: the function's
// credentials from its environment in region (pkg/awsenv;
// AWS_ENDPOINT_URL_LAMBDA points it
// elsewhere, as it would the SDK's Lambda client: newEventInvoker).
func lambdaClient(region string) func(context.Context) (invoker, error) {
	return func(ctx context.Context) (invoker, error) {
		cfg, err := awsenv.Config(region)
		if err != nil {
			return nil, err
		}
		return newEventInvoker(cfg)
	}
}

// lambdaHandler returns the turn function's Lambda handler: a drain
// event runs h.Drain under the invocation's deadline (a session id that
// is no SafeId is logged and ignored); any other payload is a function
// URL request, served by serve (the turn handler and the export in
// front of it, newHandler) in streaming mode (lambdaurl.Wrap). Either way
// the invocation's spans are flushed before it ends (tel, nil when off).
func lambdaHandler(h *turn.Handler, serve http.Handler, logger *slog.Logger, tel *telemetrysetup.Set) func(context.Context, json.RawMessage) (any, error) {
	serveURL := lambdaurl.Wrap(tel.FlushAfter(serve))
	return func(ctx context.Context, payload json.RawMessage) (any, error) {
		var ev drainEvent
		if json.Unmarshal(payload, &ev) == nil && ev.Drain != nil {
			if !protocol.IsSafeID(ev.Drain.SessionID) {
				logger.Error("drain event without a valid session id")
				return nil, nil
			}
			h.Drain(ctx, *ev.Drain)
			_ = tel.Flush(ctx) // a lost batch is the exporter's loss, never the drain's
			return nil, nil
		}
		var req events.LambdaFunctionURLRequest
		if err := json.Unmarshal(payload, &req); err != nil {
			return nil, fmt.Errorf("turn: payload is neither a function URL request nor a drain event: %w", err)
		}
		return serveURL(ctx, &req)
	}
}
