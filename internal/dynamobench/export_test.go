package dynamobench

import (
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// DescribeForTest describes an UpdateItem of update with the aliases
// names and the string and number values given.
func DescribeForTest(op, update string, names, strs map[string]string, nums map[string]int64) Request {
	values := map[string]types.AttributeValue{}
	for k, v := range strs {
		values[k] = &types.AttributeValueMemberS{Value: v}
	}
	for k, v := range nums {
		values[k] = &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
	}
	return Describe(op, &dynamodb.UpdateItemInput{
		UpdateExpression: aws.String(update), ExpressionAttributeNames: names, ExpressionAttributeValues: values,
	})
}
