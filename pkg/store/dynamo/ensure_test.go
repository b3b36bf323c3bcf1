package dynamo_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/turnstream/turnstream/internal/dynalite"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

// freshTableName returns a table name no test has used, deleted when t
// ends.
func freshTableName(t *testing.T, client dynamo.TableClient) string {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "ensure_" + hex.EncodeToString(b)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := dynamo.DeleteTable(ctx, client, name); err != nil {
			t.Errorf("delete table: %v", err)
		}
	})
	return name
}

func TestEnsureTable(t *testing.T) {
	client := dynalite.Client(t)
	name := freshTableName(t, client)
	created, err := dynamo.EnsureTable(t.Context(), client, name)
	if err != nil || !created {
		t.Fatalf("first EnsureTable: created %v, %v; want true, nil", created, err)
	}
	created, err = dynamo.EnsureTable(t.Context(), client, name)
	if err != nil || created {
		t.Fatalf("second EnsureTable: created %v, %v; want false, nil", created, err)
	}
}

// TestEnsureTableConcurrently: processes that start at once against one
// DynamoDB all find the table present; exactly one created it, none fails
// with ResourceInUseException.
func TestEnsureTableConcurrently(t *testing.T) {
	client := dynalite.Client(t)
	for round := range 5 {
		name := freshTableName(t, client)
		var wg sync.WaitGroup
		var creators atomic.Int32
		errs := make([]error, 6)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				created, err := dynamo.EnsureTable(t.Context(), client, name)
				errs[i] = err
				if created {
					creators.Add(1)
				}
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if n := creators.Load(); n != 1 {
			t.Errorf("round %d: %d callers report creating the table, want 1", round, n)
		}
	}
}

// TestRecreateMissingTable deletes the table under a client with the
// option: the next item operation recreates it and succeeds, once.
func TestRecreateMissingTable(t *testing.T) {
	admin := dynalite.Client(t)
	name := freshTableName(t, admin)
	if _, err := dynamo.EnsureTable(t.Context(), admin, name); err != nil {
		t.Fatal(err)
	}
	var recreated atomic.Int32
	client, err := dynamo.NewClient(t.Context(), dynalite.Options(t), dynamo.RecreateMissingTable(admin, name, func() { recreated.Add(1) }))
	if err != nil {
		t.Fatal(err)
	}
	put := func(sk string) error {
		_, err := client.PutItem(t.Context(), &dynamodb.PutItemInput{
			TableName:           aws.String(name),
			Item:                map[string]types.AttributeValue{dynamo.AttrPK: &types.AttributeValueMemberS{Value: "SESSION#s1"}, dynamo.AttrSK: &types.AttributeValueMemberS{Value: sk}},
			ConditionExpression: aws.String("attribute_not_exists(pk)"),
		})
		return err
	}
	if err := put("a"); err != nil {
		t.Fatal(err)
	}
	if err := dynamo.DeleteTable(t.Context(), admin, name); err != nil {
		t.Fatal(err)
	}
	if err := put("a"); err != nil { // the old item went with the table: the condition holds
		t.Fatalf("put after the table vanished: %v", err)
	}
	if n := recreated.Load(); n != 1 {
		t.Errorf("recreated %d times, want 1", n)
	}
	out, err := client.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(name), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{dynamo.AttrPK: &types.AttributeValueMemberS{Value: "SESSION#s1"}, dynamo.AttrSK: &types.AttributeValueMemberS{Value: "a"}}})
	if err != nil || out.Item == nil {
		t.Fatalf("the retried put is not in the new table: %v %v", out, err)
	}
	// Table operations keep their own answers.
	_, err = client.DescribeTable(t.Context(), &dynamodb.DescribeTableInput{TableName: aws.String(name + "_none")})
	var notFound *types.ResourceNotFoundException
	if !errors.As(err, &notFound) || recreated.Load() != 1 {
		t.Errorf("DescribeTable of a missing table: %v, recreated %d; want ResourceNotFoundException and no recreation", err, recreated.Load())
	}
}

// TestEnsureTableRefusesAnotherLayout: a table made with other index
// projections (an older layout) is refused, not used.
func TestEnsureTableRefusesAnotherLayout(t *testing.T) {
	client := dynalite.Client(t)
	name := freshTableName(t, client)
	old := dynamo.CreateTableInput(name)
	for i := range old.LocalSecondaryIndexes {
		old.LocalSecondaryIndexes[i].Projection = &types.Projection{ProjectionType: types.ProjectionTypeAll}
	}
	if _, err := client.CreateTable(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	if _, err := dynamo.EnsureTable(t.Context(), client, name); !errors.Is(err, dynamo.ErrTableLayout) {
		t.Fatalf("EnsureTable on a table of another layout: %v, want ErrTableLayout", err)
	}
}
