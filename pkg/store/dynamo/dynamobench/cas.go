package dynamobench

import (
	"context"
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
	_, err := client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(table),
		Key: map[string]types.AttributeValue{
			dynamo.AttrPK: &types.AttributeValueMemberS{Value: pk},
			dynamo.AttrSK: &types.AttributeValueMemberS{Value: "CAS"},
		},
		UpdateExpression:         aws.String("SET #r = :n"),
		ConditionExpression:      aws.String("attribute_not_exists(#r) OR #r = :p"),
		ExpressionAttributeNames: map[string]string{"#r": "rev"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":n": &types.AttributeValueMemberN{Value: strconv.FormatInt(rev+1, 10)},
			":p": &types.AttributeValueMemberN{Value: strconv.FormatInt(rev, 10)},
		},
	})
	return err
}
