package dynamobench

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TestAVSize checks the item size approximation on values whose DynamoDB
// size is documented.
func TestAVSize(t *testing.T) {
	item := map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "SESSION#a"}, // 2 + 9
		"n":  &types.AttributeValueMemberN{Value: "12345"},     // 1 + 4
		"ok": &types.AttributeValueMemberBOOL{Value: true},     // 2 + 1
		"list": &types.AttributeValueMemberL{Value: []types.AttributeValue{ // 4 + 3 + (1+1)
			&types.AttributeValueMemberS{Value: "x"},
		}},
	}
	if got, want := itemSize(item), 11+5+3+9; got != want {
		t.Errorf("itemSize = %d, want %d", got, want)
	}
	before := map[string]types.AttributeValue{"turnId": &types.AttributeValueMemberS{Value: "t"}, "visibleKey": &types.AttributeValueMemberS{Value: "1"}}
	after := map[string]types.AttributeValue{"turnId": &types.AttributeValueMemberS{Value: "t"}}
	if got := indexUnits(before, after); got != 2 { // turnId kept: 1; visibleKey removed: 1
		t.Errorf("indexUnits = %d, want 2", got)
	}
	if got := indexUnits(nil, before); got != 2 {
		t.Errorf("indexUnits of a new item = %d, want 2", got)
	}
	moved := map[string]types.AttributeValue{"turnId": &types.AttributeValueMemberS{Value: "t"}, "visibleKey": &types.AttributeValueMemberS{Value: "2"}}
	if got := indexUnits(before, moved); got != 3 { // turnId 1, visibleKey changed: delete + put
		t.Errorf("indexUnits of a moved key = %d, want 3", got)
	}
}
