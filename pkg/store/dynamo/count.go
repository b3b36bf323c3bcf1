package dynamo

import (
	"context"
	"slices"
	"sync"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"
)

// OperationLog records the DynamoDB operations a client sends, one entry
// ("GetItem", "UpdateItem", ...) per HTTP attempt, SDK retries included,
// for tests and tools that hold code to a request budget. Install it with
// its Option (a client option for NewClient). The zero value is ready to
// use and safe for concurrent use.
type OperationLog struct {
	mu  sync.Mutex
	ops []string
}

// Option is the client option that records every attempt of the client
// into l.
func (l *OperationLog) Option(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
		return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("turnstreamOperationLog",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				l.mu.Lock()
				l.ops = append(l.ops, awsmiddleware.GetOperationName(ctx))
				l.mu.Unlock()
				return next.HandleFinalize(ctx, in)
			}), middleware.After)
	})
}

// Take returns the operations recorded since the last Take or Reset, in
// the order they were sent, and starts a new record.
func (l *OperationLog) Take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	ops := slices.Clip(l.ops)
	l.ops = nil
	return ops
}

// Reset forgets the operations recorded so far.
func (l *OperationLog) Reset() { _ = l.Take() }
