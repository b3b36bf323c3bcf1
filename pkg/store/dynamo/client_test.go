package dynamo_test

import (
	"context"
	"hash/crc32"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

// TestNewClientKeepsConnectionsOfConcurrentCalls holds 40 calls open at
// once against a stand-in endpoint (each answer waits until all 40 have
// arrived, so they need 40 connections), twice: the second round must
// find its connections idle in the pool, not dial new ones (the SDK's
// default pool keeps 10 per host, and a process serving more sessions at
// once than that dialled for most calls).
func TestNewClientKeepsConnectionsOfConcurrentCalls(t *testing.T) {
	const calls = 40
	var (
		mu      sync.Mutex
		waiting int
		release = make(chan struct{})
		conns   atomic.Int64
	)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		waiting++
		if waiting == calls {
			waiting = 0
			close(release)
			release = make(chan struct{})
			mu.Unlock()
		} else {
			ch := release
			mu.Unlock()
			<-ch
		}
		body := []byte(`{}`) // an item not found
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10)) // the SDK checks it
		_, _ = w.Write(body)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)

	// Answers wait for the slowest of 40 calls to be sent: no attempt
	// timeout may cut them on a slow machine (a retry would dial).
	client, err := dynamo.NewClient(context.Background(), dynamo.ClientOptions{Endpoint: srv.URL, Region: "us-east-1",
		StaticCredentials: true, AttemptTimeout: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	round := func() {
		var wg sync.WaitGroup
		for range calls {
			wg.Go(func() {
				_, err := client.GetItem(t.Context(), &dynamodb.GetItemInput{
					TableName: aws.String("t"),
					Key: map[string]types.AttributeValue{
						dynamo.AttrPK: &types.AttributeValueMemberS{Value: "p"},
						dynamo.AttrSK: &types.AttributeValueMemberS{Value: "s"},
					},
				})
				if err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	round()
	first := conns.Load()
	round()
	if first != calls || conns.Load() != first {
		t.Errorf("connections: %d for the first %d concurrent calls, %d more for the second; want %d, then none", first, calls, conns.Load()-first, calls)
	}
}

// TestNewClientCredentials: ClientOptions.Credentials signs the client's
// calls over StaticCredentials' placeholders and the environment's keys;
// StaticCredentials over the environment's; without either, the
// environment's keys (pkg/awsenv).
func TestNewClientCredentials(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDFROMENV")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	given := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{AccessKeyID: "AKIDGIVEN", SecretAccessKey: "s"}, nil
	})
	for name, tc := range map[string]struct {
		opts dynamo.ClientOptions
		want string
	}{
		"given":       {dynamo.ClientOptions{Region: "us-east-1", Credentials: given, StaticCredentials: true}, "AKIDGIVEN"},
		"static":      {dynamo.ClientOptions{Region: "us-east-1", StaticCredentials: true}, "local"},
		"environment": {dynamo.ClientOptions{Region: "us-east-1"}, "AKIDFROMENV"},
	} {
		c, err := dynamo.NewClient(t.Context(), tc.opts)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := c.Options().Credentials.Retrieve(t.Context())
		if err != nil || got.AccessKeyID != tc.want {
			t.Errorf("%s: credentials %q, %v; want %q", name, got.AccessKeyID, err, tc.want)
		}
	}
}
