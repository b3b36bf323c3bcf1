package dynamobench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

// Shape is a request shape: CompareAndSet's conditional UpdateItem with at
// most one feature of the store's turn writes added, so that a benchmark
// can set the server's cost of each feature beside the bare write's.
type Shape struct {
	// Name says what the shape adds to the bare write.
	Name string
	// sk is the item's sort key ("" for casSK).
	sk string
	// seed holds the item's extra attributes, written once by Seed.
	seed map[string]types.AttributeValue
	// edit adds the shape's feature to the bare write (nil: none).
	edit func(in *dynamodb.UpdateItemInput)
}

// Shapes returns the request shapes, the bare write first. Each adds one
// feature of the store's turn writes: many SET clauses (the claim sets 15
// attributes, the save 16 and removes 7), ReturnValues ALL_NEW (the
// claim's answer is the session item), a larger item (the session item
// carries the terminal window, the turn item the messages), and an item
// both local secondary indexes project (a turn item, each write of which
// also rewrites its index entries).
func Shapes() []Shape {
	return []Shape{
		{Name: "bare (SET 1 attribute, compare-and-set on it)"},
		{Name: "SET 16 attributes", edit: func(in *dynamodb.UpdateItemInput) {
			expr := aws.ToString(in.UpdateExpression)
			for i := range 15 {
				k := fmt.Sprintf("a%d", i)
				expr += fmt.Sprintf(", #%s = :%s", k, k)
				in.ExpressionAttributeNames["#"+k] = k
				in.ExpressionAttributeValues[":"+k] = &types.AttributeValueMemberN{Value: strconv.Itoa(i)}
			}
			in.UpdateExpression = aws.String(expr)
		}},
		{Name: "ReturnValues ALL_NEW of a 1 KB item", seed: map[string]types.AttributeValue{
			"blob": &types.AttributeValueMemberS{Value: strings.Repeat("x", 1000)},
		}, edit: func(in *dynamodb.UpdateItemInput) { in.ReturnValues = types.ReturnValueAllNew }},
		{Name: "item of 4 KB", seed: map[string]types.AttributeValue{
			"blob": &types.AttributeValueMemberS{Value: strings.Repeat("x", 4000)},
		}},
		{Name: "item in both LSIs (turnId, visibleKey set)", sk: dynamo.TurnSortKey(1), seed: map[string]types.AttributeValue{
			dynamo.AttrTurnID:     &types.AttributeValueMemberS{Value: "t0"},
			dynamo.AttrVisibleKey: &types.AttributeValueMemberS{Value: dynamo.OrdinalKey(1)},
		}},
	}
}

// key is the shape's item key in partition pk.
func (s Shape) key(pk string) map[string]types.AttributeValue {
	sk := s.sk
	if sk == "" {
		sk = casSK
	}
	return itemKey(pk, sk)
}

// Seed writes the shape's item in partition pk with its extra attributes,
// before its first write; for a shape without any it sends nothing. The
// put is conditional on the item's absence, and the caller, the item's
// only writer, is told nil when the condition fails: the item is there,
// written by an earlier attempt of the same put.
func (s Shape) Seed(ctx context.Context, client dynamo.Client, table, pk string) error {
	if len(s.seed) == 0 {
		return nil
	}
	item := s.key(pk)
	for k, v := range s.seed {
		item[k] = v
	}
	_, err := client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                aws.String(table),
		Item:                     item,
		ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": dynamo.AttrPK},
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("seed %s: %w", s.Name, err)
	}
	return nil
}

// CompareAndSetOwned is CompareAndSetOwned of the shape's item in
// partition pk, with the shape's feature added to the write.
func (s Shape) CompareAndSetOwned(ctx context.Context, client dynamo.Client, table, pk string, rev int64) error {
	in := casInput(table, s.key(pk), rev)
	if s.edit != nil {
		s.edit(in)
	}
	return compareAndSetOwned(ctx, client, in, rev)
}
