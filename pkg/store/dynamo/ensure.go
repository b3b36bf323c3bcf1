package dynamo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
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
// is ACTIVE. It reports whether this call created the table. An existing
// table whose secondary indexes differ from CreateTableInput's (one made
// by an older layout) is ErrTableLayout, so that the store never runs on
// items it cannot read or list.
func EnsureTable(ctx context.Context, client TableClient, name string) (created bool, err error) {
	out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	var notFound *types.ResourceNotFoundException
	switch {
	case err == nil:
		want := CreateTableInput(name)
		if out.Table != nil && (indexLayout(out.Table.LocalSecondaryIndexes) != indexLayout(want.LocalSecondaryIndexes) ||
			globalLayout(out.Table.GlobalSecondaryIndexes) != globalLayout(want.GlobalSecondaryIndexes)) {
			return false, fmt.Errorf("table %s: %w", name, ErrTableLayout)
		}
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

// ErrTableLayout is EnsureTable's error for an existing table with other
// secondary indexes than CreateTableInput's: delete it (a local server's
// data is disposable; DynamoDB Local and dynalite cannot add an index) or
// use another table name.
var ErrTableLayout = errors.New("dynamo: the table has another index layout than this version's")

// indexLayout describes local secondary indexes as one comparable string:
// name, keys, projection type and projected attributes, sorted.
func indexLayout[I types.LocalSecondaryIndex | types.LocalSecondaryIndexDescription](indexes []I) string {
	var out []string
	for _, ix := range indexes {
		var name string
		var keys []types.KeySchemaElement
		var p *types.Projection
		switch ix := any(ix).(type) {
		case types.LocalSecondaryIndex:
			name, keys, p = aws.ToString(ix.IndexName), ix.KeySchema, ix.Projection
		case types.LocalSecondaryIndexDescription:
			name, keys, p = aws.ToString(ix.IndexName), ix.KeySchema, ix.Projection
		}
		s := name
		for _, k := range keys {
			s += " " + aws.ToString(k.AttributeName) + ":" + string(k.KeyType)
		}
		if p != nil {
			attrs := slices.Sorted(slices.Values(p.NonKeyAttributes))
			s += " " + string(p.ProjectionType) + " " + strings.Join(attrs, ",")
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return strings.Join(out, "; ")
}

// globalLayout describes global secondary indexes as indexLayout does
// local ones.
func globalLayout[I types.GlobalSecondaryIndex | types.GlobalSecondaryIndexDescription](indexes []I) string {
	local := make([]types.LocalSecondaryIndex, 0, len(indexes))
	for _, ix := range indexes {
		switch ix := any(ix).(type) {
		case types.GlobalSecondaryIndex:
			local = append(local, types.LocalSecondaryIndex{IndexName: ix.IndexName, KeySchema: ix.KeySchema, Projection: ix.Projection})
		case types.GlobalSecondaryIndexDescription:
			local = append(local, types.LocalSecondaryIndex{IndexName: ix.IndexName, KeySchema: ix.KeySchema, Projection: ix.Projection})
		}
	}
	return indexLayout(local)
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
