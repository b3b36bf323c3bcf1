package dynamobench

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

// Request describes what one API call asked DynamoDB.
type Request struct {
	// Op is the operation name: "GetItem", "PutItem", "UpdateItem",
	// "DeleteItem", "Query", ...
	Op string
	// PK and SK are the key (or a put item's key) of a keyed call (a
	// BatchGetItem's first key); a Query's PK is the session or usage
	// ledger partition its key condition names, its SK "".
	PK, SK string
	// Index is a Query's index name ("" for the table).
	Index string
	// Condition and Update are the condition and update expressions.
	Condition, Update string
	// Names are the attribute names the expressions alias (the values of
	// ExpressionAttributeNames), sorted.
	Names []string
	// LeaseExpiresAt is the leaseExpiresAt an UpdateItem sets (epoch ms
	// in the store), or the zero time.
	LeaseExpiresAt time.Time
	// Purpose is what the store made the call for (its label,
	// dynamo.PurposeOf the call's context); "" for a call made outside a
	// store.
	Purpose dynamo.Purpose
}

// Outcome is how an API call ended.
type Outcome struct {
	// Err is the error its caller got, nil on success.
	Err error
	// ConditionFailed reports that Err is a failed condition.
	ConditionFailed bool
	// Attempts is how many HTTP attempts it took (the SDK's retries are
	// the attempts beyond the first).
	Attempts int
	// WriteUnits and ReadUnits are the capacity units the server reported
	// the call consumed, with Observer.Capacity set (0 otherwise, or when
	// it reported none). A total without its read and write parts is
	// filed by the operation: PutItem, UpdateItem and DeleteItem write.
	WriteUnits, ReadUnits float64
}

// Exchange is one HTTP attempt's round trip as the transport saw it.
type Exchange struct {
	// Start is when the signed request went to the transport, End when
	// its response's headers came back (or the transport failed); the
	// SDK reads and decodes the body after End.
	Start, End time.Time
	// Sent and Received are the request and response body bytes (their
	// Content-Length; 0 when unknown or empty).
	Sent, Received int64
	// Status is the response's HTTP status code, 0 when none came back.
	Status int
	// Err is the transport's error, nil when a response came back
	// (whatever its status).
	Err error
}

// Observer reports the API calls and HTTP attempts of a client built with
// its Option. Any of the functions may be nil.
type Observer struct {
	// Call is called once per API call, before the SDK validates its
	// input and before its retryer, with what the call asks. It returns
	// the context the call goes on with (the HTTP attempts, and the
	// transport below them, receive it; a net/http/httptrace trace in it
	// sees the attempts' connections) and a function called with the
	// call's outcome when it has ended.
	Call func(ctx context.Context, r Request) (context.Context, func(Outcome))
	// Attempt is called once per HTTP attempt, after the retryer, with
	// the call's context; condFailed reports that err is a failed
	// condition.
	Attempt func(ctx context.Context, err error, condFailed bool)
	// Exchange is called once per HTTP attempt with the call's context
	// and the attempt's round trip alone, measured innermost (after
	// signing, around the transport).
	Exchange func(ctx context.Context, e Exchange)
	// Capacity makes every item and query call ask for its consumed
	// capacity (ReturnConsumedCapacity TOTAL), reported in its Outcome.
	Capacity bool
}

// ClientOption is an option of dynamo.NewClient (its optFns).
type ClientOption = func(*dynamodb.Options)

type attemptsKey struct{}

// Option installs the observer on a client: pass it to dynamo.NewClient.
func (o Observer) Option() ClientOption {
	return func(opts *dynamodb.Options) {
		opts.APIOptions = append(opts.APIOptions, o.addTo)
	}
}

func (o Observer) addTo(stack *middleware.Stack) error {
	err := stack.Initialize.Add(middleware.InitializeMiddlewareFunc("dynamobenchCall",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			op := awsmiddleware.GetOperationName(ctx)
			if o.Capacity {
				askCapacity(in.Parameters)
			}
			done := func(Outcome) {}
			if o.Call != nil {
				r := Describe(op, in.Parameters)
				r.Purpose = dynamo.PurposeOf(ctx)
				ctx, done = o.Call(ctx, r)
			}
			attempts := new(int)
			ctx = context.WithValue(ctx, attemptsKey{}, attempts)
			out, md, err := next.HandleInitialize(ctx, in)
			oc := Outcome{Err: err, ConditionFailed: conditionFailed(err), Attempts: *attempts}
			if o.Capacity {
				oc.WriteUnits, oc.ReadUnits = consumed(op, out.Result)
			}
			done(oc)
			return out, md, err
		}), middleware.Before)
	if err != nil {
		return err
	}
	err = stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("dynamobenchAttempt",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			if n, ok := ctx.Value(attemptsKey{}).(*int); ok {
				*n++ // the attempts of one call are sequential
			}
			out, md, err := next.HandleFinalize(ctx, in)
			if o.Attempt != nil {
				o.Attempt(ctx, err, conditionFailed(err))
			}
			return out, md, err
		}), middleware.After)
	if err != nil || o.Exchange == nil {
		return err
	}
	return stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("dynamobenchExchange",
		func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
			e := Exchange{Start: time.Now()}
			out, md, err := next.HandleDeserialize(ctx, in)
			e.End, e.Err = time.Now(), err
			if r, ok := in.Request.(*smithyhttp.Request); ok && r.ContentLength > 0 {
				e.Sent = r.ContentLength
			}
			if r, ok := out.RawResponse.(*smithyhttp.Response); ok && r.Response != nil {
				e.Status = r.StatusCode
				if r.ContentLength > 0 {
					e.Received = r.ContentLength
				}
			}
			o.Exchange(ctx, e)
			return out, md, err
		}), middleware.After)
}

// askCapacity asks an item or query call's input for the consumed
// capacity, in total.
func askCapacity(params any) {
	total := types.ReturnConsumedCapacityTotal
	switch in := params.(type) {
	case *dynamodb.GetItemInput:
		in.ReturnConsumedCapacity = total
	case *dynamodb.PutItemInput:
		in.ReturnConsumedCapacity = total
	case *dynamodb.UpdateItemInput:
		in.ReturnConsumedCapacity = total
	case *dynamodb.DeleteItemInput:
		in.ReturnConsumedCapacity = total
	case *dynamodb.QueryInput:
		in.ReturnConsumedCapacity = total
	}
}

// consumed returns the write and read units an item or query call's
// result reports; a bare total is op's, a write for the item writes.
func consumed(op string, result any) (write, read float64) {
	var cc *types.ConsumedCapacity
	switch out := result.(type) {
	case *dynamodb.GetItemOutput:
		cc = out.ConsumedCapacity
	case *dynamodb.PutItemOutput:
		cc = out.ConsumedCapacity
	case *dynamodb.UpdateItemOutput:
		cc = out.ConsumedCapacity
	case *dynamodb.DeleteItemOutput:
		cc = out.ConsumedCapacity
	case *dynamodb.QueryOutput:
		cc = out.ConsumedCapacity
	}
	if cc == nil {
		return 0, 0
	}
	if cc.WriteCapacityUnits == nil && cc.ReadCapacityUnits == nil {
		switch op {
		case "PutItem", "UpdateItem", "DeleteItem":
			return aws.ToFloat64(cc.CapacityUnits), 0
		default:
			return 0, aws.ToFloat64(cc.CapacityUnits)
		}
	}
	return aws.ToFloat64(cc.WriteCapacityUnits), aws.ToFloat64(cc.ReadCapacityUnits)
}

func conditionFailed(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return err != nil && errors.As(err, &ccf)
}

// Describe returns what params (an API call's input) asks.
func Describe(op string, params any) Request {
	r := Request{Op: op}
	var names map[string]string
	switch in := params.(type) {
	case *dynamodb.UpdateItemInput:
		r.PK, r.SK = strAttr(in.Key, dynamo.AttrPK), strAttr(in.Key, dynamo.AttrSK)
		r.Condition, r.Update = aws.ToString(in.ConditionExpression), aws.ToString(in.UpdateExpression)
		names = in.ExpressionAttributeNames
		r.LeaseExpiresAt = leaseExpiryOf(in)
	case *dynamodb.GetItemInput:
		r.PK, r.SK = strAttr(in.Key, dynamo.AttrPK), strAttr(in.Key, dynamo.AttrSK)
	case *dynamodb.BatchGetItemInput:
		for _, ka := range in.RequestItems { // the store reads one table
			if len(ka.Keys) > 0 {
				r.PK, r.SK = strAttr(ka.Keys[0], dynamo.AttrPK), strAttr(ka.Keys[0], dynamo.AttrSK)
			}
		}
	case *dynamodb.PutItemInput:
		r.PK, r.SK = strAttr(in.Item, dynamo.AttrPK), strAttr(in.Item, dynamo.AttrSK)
		r.Condition = aws.ToString(in.ConditionExpression)
		names = in.ExpressionAttributeNames
	case *dynamodb.DeleteItemInput:
		r.PK, r.SK = strAttr(in.Key, dynamo.AttrPK), strAttr(in.Key, dynamo.AttrSK)
		r.Condition = aws.ToString(in.ConditionExpression)
		names = in.ExpressionAttributeNames
	case *dynamodb.QueryInput:
		r.PK, r.Index = sessionOfQuery(in), aws.ToString(in.IndexName)
		names = in.ExpressionAttributeNames
	}
	for _, n := range names {
		r.Names = append(r.Names, n)
	}
	slices.Sort(r.Names)
	return r
}

// setClause matches one "#name = :value" assignment of an update
// expression built by the SDK's expression builder (#0, #1, ...).
var setClause = regexp.MustCompile(`(#[0-9A-Za-z]+) = (:[0-9A-Za-z]+)`)

// leaseExpiryOf returns the leaseExpiresAt (epoch ms) an update writes,
// or the zero time.
func leaseExpiryOf(in *dynamodb.UpdateItemInput) time.Time {
	for _, m := range setClause.FindAllStringSubmatch(aws.ToString(in.UpdateExpression), -1) {
		if in.ExpressionAttributeNames[m[1]] != leaseExpiresAt {
			continue
		}
		n, ok := in.ExpressionAttributeValues[m[2]].(*types.AttributeValueMemberN)
		if !ok {
			return time.Time{}
		}
		ms, err := strconv.ParseInt(n.Value, 10, 64)
		if err != nil {
			return time.Time{}
		}
		return time.UnixMilli(ms)
	}
	return time.Time{}
}

// leaseExpiresAt is the store's attribute of a lease's expiry.
const leaseExpiresAt = "leaseExpiresAt"

// sessionOfQuery returns the session pk (or the usage ledger partition)
// a Query's key condition names.
func sessionOfQuery(in *dynamodb.QueryInput) string {
	for _, v := range in.ExpressionAttributeValues {
		if s, ok := v.(*types.AttributeValueMemberS); ok && (isSessionPK(s.Value) || dynamo.IsLedgerPartition(s.Value)) {
			return s.Value
		}
	}
	return ""
}

func isSessionPK(pk string) bool {
	_, ok := dynamo.SessionIDOf(pk)
	return ok
}

func strAttr(item map[string]types.AttributeValue, name string) string {
	v, _ := item[name].(*types.AttributeValueMemberS)
	if v == nil {
		return ""
	}
	return v.Value
}
