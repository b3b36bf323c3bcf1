package dynamo

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
)

// EnsureTable makes sure the table name exists with the layout of
// CreateTableInput and is ACTIVE, for local servers (the dev server on
// DynamoDB Local or dynalite) and tooling; deployments create the table
// with the SAM template. It creates the table (CreateTable) unless
// DescribeTable finds it, and a table that another process created between
// the two (CreateTable answering ResourceInUseException, e.g. two dev
// servers started at once) counts as present: EnsureTable waits until it
// is ACTIVE. It reports whether this call created the table. It does not
// compare an existing table's layout with CreateTableInput.
func EnsureTable(ctx context.Context, client TableClient, name string) (created bool, err error) {
	out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	var notFound *types.ResourceNotFoundException
	switch {
	case err == nil:
		if out.Table != nil && out.Table.TableStatus == types.TableStatusActive {
			return false, nil
		}
		return false, waitActive(ctx, client, name)
	case !errors.As(err, &notFound):
		return false, fmt.Errorf("describe table %s: %w", name, err)
	}
	err = CreateTable(ctx, client, name)
	var inUse *types.ResourceInUseException
	if errors.As(err, &inUse) { // created concurrently by someone else
		return false, waitActive(ctx, client, name)
	}
	if err != nil {
		return false, err
	}
	return true, nil
}

// waitActive waits until the table name is ACTIVE, for as long as ctx
// allows.
func waitActive(ctx context.Context, client TableClient, name string) error {
	waiter := dynamodb.NewTableExistsWaiter(client, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay = 50 * time.Millisecond
		o.MaxDelay = 2 * time.Second
	})
	if err := waiter.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, tableWait); err != nil {
		return fmt.Errorf("wait for table %s: %w", name, err)
	}
	return nil
}

// tableAdminOperations are the operations RecreateMissingTable leaves
// alone: a missing table is their answer to give.
var tableAdminOperations = map[string]bool{
	"CreateTable": true, "DeleteTable": true, "DescribeTable": true, "UpdateTable": true,
	"UpdateTimeToLive": true, "DescribeTimeToLive": true,
}

// RecreateMissingTable returns a client option (for NewClient) for the dev
// server: when an item operation fails with ResourceNotFoundException
// because the table is gone (DynamoDB Local or dynalite restarted without
// keeping its data), it recreates the table, empty, with EnsureTable
// through admin (a client without this option) and sends the operation
// once more. The first answer is ResourceNotFoundException, so the
// operation had no effect and sending it again is safe, conditional
// writes included. Recreations are serialized; onRecreate, when not nil,
// is called after each one that created the table. A failed recreation
// returns the operation's original error joined with the recreation's.
//
// Local servers only: on AWS a missing table is an operator's error to be
// reported, never papered over with a new empty table.
func RecreateMissingTable(admin TableClient, name string, onRecreate func()) func(*dynamodb.Options) {
	r := &recreator{admin: admin, name: name, onRecreate: onRecreate}
	return func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("turnstreamRecreateMissingTable", r.handle), middleware.After)
		})
	}
}

// recreator is RecreateMissingTable's middleware state.
type recreator struct {
	admin      TableClient
	name       string
	onRecreate func()
	mu         sync.Mutex
}

func (r *recreator) handle(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
	out, md, err := next.HandleInitialize(ctx, in)
	var notFound *types.ResourceNotFoundException
	if err == nil || !errors.As(err, &notFound) || tableAdminOperations[awsmiddleware.GetOperationName(ctx)] {
		return out, md, err
	}
	r.mu.Lock()
	created, ensureErr := EnsureTable(ctx, r.admin, r.name)
	r.mu.Unlock()
	if ensureErr != nil {
		return out, md, errors.Join(err, fmt.Errorf("recreate the missing table: %w", ensureErr))
	}
	if created && r.onRecreate != nil {
		r.onRecreate()
	}
	return next.HandleInitialize(ctx, in)
}
