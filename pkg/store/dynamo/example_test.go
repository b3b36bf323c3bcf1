package dynamo_test

import (
	"context"
	"log"
	"os"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

// A main wires the store once per process: one client, one Store shared
// by every request. With DYNAMODB_ENDPOINT set (DynamoDB Local, dynalite)
// the client talks to that server with placeholder credentials.
func ExampleNew() {
	ctx := context.Background()
	endpoint := os.Getenv("DYNAMODB_ENDPOINT")
	client, err := dynamo.NewClient(ctx, dynamo.ClientOptions{
		Endpoint:          endpoint,
		Region:            "eu-west-1",
		StaticCredentials: endpoint != "",
	})
	if err != nil {
		log.Fatal(err)
	}
	var store chat.Store = dynamo.New(client, dynamo.Options{
		Table:     os.Getenv("TABLE_NAME"),
		Now:       time.Now,
		CursorKey: []byte(os.Getenv("CURSOR_SECRET")),
	})
	_ = store // handed to pkg/turn or pkg/sessionapi
}

// CreateTable creates the table of docs/design.md#storage-one-dynamodb-table
// (for local servers and tests; deployments declare it in the SAM template).
func ExampleCreateTable() {
	ctx := context.Background()
	client, err := dynamo.NewClient(ctx, dynamo.ClientOptions{
		Endpoint: "http://127.0.0.1:8000", Region: "us-east-1", StaticCredentials: true})
	if err != nil {
		log.Fatal(err)
	}
	if err := dynamo.CreateTable(ctx, client, "turnstream"); err != nil {
		log.Fatal(err)
	}
}
