package dynamo

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/turnstream/turnstream/pkg/chat"
)

// MeterUsage is the client option (NewClient installs it) that measures
// each request made under a context carrying a chat.Meter
// (chat.WithMeter): it asks DynamoDB for ReturnConsumedCapacity TOTAL,
// adds one StoreRequests per HTTP attempt (SDK retries included, as
// OperationLog counts them) and the capacity units the answer reports to
// ReadUnits (GetItem, BatchGetItem, Query) or WriteUnits (PutItem,
// UpdateItem, DeleteItem). A request made under a context without a
// Meter is left as it is. An error answer carries no units (DynamoDB
// bills a failed condition all the same); chat.Usage says so.
func MeterUsage(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
		if err := stack.Initialize.Add(middleware.InitializeMiddlewareFunc("turnstreamMeterUsage",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				m := chat.MeterFrom(ctx)
				if m == nil {
					return next.HandleInitialize(ctx, in)
				}
				askCapacity(in.Parameters)
				out, md, err := next.HandleInitialize(ctx, in)
				if err == nil {
					m.Add(unitsOf(out.Result))
				}
				return out, md, err
			}), middleware.After); err != nil {
			return err
		}
		return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("turnstreamMeterAttempts",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				chat.MeterFrom(ctx).Add(chat.Usage{StoreRequests: 1})
				return next.HandleFinalize(ctx, in)
			}), middleware.After)
	})
}

// askCapacity sets ReturnConsumedCapacity TOTAL on the inputs of the
// operations the store sends, unless the caller asked for more.
func askCapacity(params any) {
	total := types.ReturnConsumedCapacityTotal
	set := func(c *types.ReturnConsumedCapacity) {
		if *c == "" || *c == types.ReturnConsumedCapacityNone {
			*c = total
		}
	}
	switch in := params.(type) {
	case *dynamodb.GetItemInput:
		set(&in.ReturnConsumedCapacity)
	case *dynamodb.PutItemInput:
		set(&in.ReturnConsumedCapacity)
	case *dynamodb.UpdateItemInput:
		set(&in.ReturnConsumedCapacity)
	case *dynamodb.DeleteItemInput:
		set(&in.ReturnConsumedCapacity)
	case *dynamodb.QueryInput:
		set(&in.ReturnConsumedCapacity)
	case *dynamodb.BatchGetItemInput:
		set(&in.ReturnConsumedCapacity)
	}
}

// unitsOf returns the read or write units an operation's answer reports.
func unitsOf(result any) chat.Usage {
	var u chat.Usage
	read := func(c *types.ConsumedCapacity) {
		if c != nil && c.CapacityUnits != nil {
			u.ReadUnits += *c.CapacityUnits
		}
	}
	write := func(c *types.ConsumedCapacity) {
		if c != nil && c.CapacityUnits != nil {
			u.WriteUnits += *c.CapacityUnits
		}
	}
	switch out := result.(type) {
	case *dynamodb.GetItemOutput:
		read(out.ConsumedCapacity)
	case *dynamodb.QueryOutput:
		read(out.ConsumedCapacity)
	case *dynamodb.BatchGetItemOutput:
		for i := range out.ConsumedCapacity {
			read(&out.ConsumedCapacity[i])
		}
	case *dynamodb.PutItemOutput:
		write(out.ConsumedCapacity)
	case *dynamodb.UpdateItemOutput:
		write(out.ConsumedCapacity)
	case *dynamodb.DeleteItemOutput:
		write(out.ConsumedCapacity)
	}
	return u
}
