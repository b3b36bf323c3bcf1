package dynamobench

import (
	"context"
	"errors"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

// CompareAndSet is one conditional UpdateItem of the shape of every store
// write (SET with a compare-and-set condition on a revision): it sets the
// revision of item (pk, sk "CAS") in table to rev+1 when it is rev or
// absent. A benchmark's baseline of the server's write ceiling; a failed
// condition is returned as the SDK's error.
func CompareAndSet(ctx context.Context, client dynamo.Client, table, pk string, rev int64) error {
	_, err := client.UpdateItem(ctx, casInput(table, itemKey(pk, casSK), rev))
	return err
}

// CompareAndSetOwned is CompareAndSet for a caller that is the item's only
// writer: a failed condition whose consistent read finds the revision at
// rev+1 is the call's own effect (an attempt whose answer was lost, say
// to the attempt timeout on a busy machine, applied, and the SDK's retry
// then failed the condition), so it returns nil. Any other failure is
// returned, joined with the read's error when the read fails too.
func CompareAndSetOwned(ctx context.Context, client dynamo.Client, table, pk string, rev int64) error {
	return compareAndSetOwned(ctx, client, casInput(table, itemKey(pk, casSK), rev), rev)
}

// casSK is the sort key of CompareAndSet's items.
const casSK = "CAS"

// itemKey is the key (pk, sk).
func itemKey(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		dynamo.AttrPK: &types.AttributeValueMemberS{Value: pk},
		dynamo.AttrSK: &types.AttributeValueMemberS{Value: sk},
	}
}

// casInput is CompareAndSet's UpdateItem of the item key.
func casInput(table string, key map[string]types.AttributeValue, rev int64) *dynamodb.UpdateItemInput {
	return &dynamodb.UpdateItemInput{
		TableName:                aws.String(table),
		Key:                      key,
		UpdateExpression:         aws.String("SET #r = :n"),
		ConditionExpression:      aws.String("attribute_not_exists(#r) OR #r = :p"),
		ExpressionAttributeNames: map[string]string{"#r": "rev"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":n": &types.AttributeValueMemberN{Value: strconv.FormatInt(rev+1, 10)},
			":p": &types.AttributeValueMemberN{Value: strconv.FormatInt(rev, 10)},
		},
	}
}

// compareAndSetOwned sends in, a compare-and-set of its item's revision
// from rev to rev+1, with CompareAndSetOwned's reading of a failed
// condition.
func compareAndSetOwned(ctx context.Context, client dynamo.Client, in *dynamodb.UpdateItemInput, rev int64) error {
	_, err := client.UpdateItem(ctx, in)
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return err
	}
	out, rerr := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: in.TableName, Key: in.Key, ConsistentRead: aws.Bool(true)})
	if rerr != nil {
		return errors.Join(err, rerr)
	}
	if n, ok := out.Item["rev"].(*types.AttributeValueMemberN); ok && n.Value == strconv.FormatInt(rev+1, 10) {
		return nil // applied by an earlier attempt of this call
	}
	return err
}
