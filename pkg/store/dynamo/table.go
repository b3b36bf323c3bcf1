package dynamo

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/tracing"

	"github.com/turnstream/turnstream/pkg/awsenv"
)

// Attribute and index names of the table layout
// (docs/design.md#storage-one-dynamodb-table). They are exported so that the
// SAM template (and its test) declare the same table.
const (
	// AttrPK and AttrSK are the table's key attributes (both S).
	AttrPK = "pk"
	AttrSK = "sk"
	// AttrVisibleKey is the sort key of VisibleIndex: the zero-padded
	// ordinal, present only on turn items that are saved and not superseded
	// (a sparse index, so history pages and context loads never read
	// superseded turns).
	AttrVisibleKey = "visibleKey"
	// AttrTurnID is the sort key of TurnIDIndex, present only on turn items.
	AttrTurnID = "turnId"
	// AttrPurgeAt is the TTL attribute (epoch seconds). This package never
	// writes it; it is reserved for an optional session retention
	// (docs/design.md#storage-one-dynamodb-table). No other field may be named
	// purgeAt: DynamoDB would delete the item.
	AttrPurgeAt = "purgeAt"

	// VisibleIndex is the local secondary index (pk, visibleKey), projection
	// ALL: one Query per history page or context load, which need every
	// attribute of the turns they read (fetching them from the table
	// instead would cost one more read per turn).
	VisibleIndex = "visible"
	// TurnIDIndex is the local secondary index (pk, turnId), projection
	// INCLUDE TurnIDIndexAttributes: one Query finds a turn by id. A claim
	// whose full terminal window misses its turn id reads only the index;
	// FindTurn and the artifact calls fetch the item from the table.
	TurnIDIndex = "byTurnId"

	// AttrOwnerKey is a session item's owner (its principal's subject and
	// tenant, one string): SessionsIndex's partition key.
	AttrOwnerKey = attrOwnerKey
	// AttrListedAt is SessionsIndex's sort key (N, epoch milliseconds):
	// when the session's last listed turn ended, present once one did.
	AttrListedAt = "listedAt"
	// SessionsIndex is the global secondary index (ownerKey, listedAt),
	// projection INCLUDE SessionsIndexAttributes: a principal's sessions,
	// most recently active first, one Query per page
	// (chat.ConversationStore).
	SessionsIndex = "byOwner"
)

// TurnIDIndexAttributes are the non-key attributes TurnIDIndex projects:
// a turn's status, input hash, owner, save id and live flag, about 350
// bytes an entry, so that writing a turn item costs one write unit in
// this index whatever the turn's size.
var TurnIDIndexAttributes = slices.Clone(turnIDProjection)

// TableClient is the subset of the DynamoDB API that CreateTable and
// DeleteTable call; *dynamodb.Client implements it.
type TableClient interface {
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
	DeleteTable(ctx context.Context, in *dynamodb.DeleteTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteTableOutput, error)
}

// CreateTableInput returns the table definition of
// docs/design.md#storage-one-dynamodb-table for name: keys pk (S, hash) and sk
// (S, range), PAY_PER_REQUEST, the two local secondary indexes
// VisibleIndex (projection ALL) and TurnIDIndex (projection INCLUDE
// TurnIDIndexAttributes), and the global secondary index SessionsIndex
// (projection INCLUDE SessionsIndexAttributes). Local secondary indexes
// limit one session's item collection to 10 GB and cannot change once the
// table exists: a changed layout of them is a new table. A global one can
// be added to a table that has data (DynamoDB backfills it; a session
// enters it at its next turn's release).
func CreateTableInput(name string) *dynamodb.CreateTableInput {
	s := types.ScalarAttributeTypeS
	return &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(AttrPK), AttributeType: s},
			{AttributeName: aws.String(AttrSK), AttributeType: s},
			{AttributeName: aws.String(AttrVisibleKey), AttributeType: s},
			{AttributeName: aws.String(AttrTurnID), AttributeType: s},
			{AttributeName: aws.String(AttrOwnerKey), AttributeType: s},
			{AttributeName: aws.String(AttrListedAt), AttributeType: types.ScalarAttributeTypeN},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(AttrPK), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(AttrSK), KeyType: types.KeyTypeRange},
		},
		LocalSecondaryIndexes: []types.LocalSecondaryIndex{
			localIndex(VisibleIndex, AttrVisibleKey, &types.Projection{ProjectionType: types.ProjectionTypeAll}),
			localIndex(TurnIDIndex, AttrTurnID, &types.Projection{ProjectionType: types.ProjectionTypeInclude,
				NonKeyAttributes: slices.Clone(TurnIDIndexAttributes)}),
		},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName: aws.String(SessionsIndex),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(AttrOwnerKey), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(AttrListedAt), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeInclude,
				NonKeyAttributes: slices.Clone(SessionsIndexAttributes)},
		}},
	}
}

func localIndex(name, sortKey string, p *types.Projection) types.LocalSecondaryIndex {
	return types.LocalSecondaryIndex{
		IndexName: aws.String(name),
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(AttrPK), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(sortKey), KeyType: types.KeyTypeRange},
		},
		Projection: p,
	}
}

// tableWait bounds how long CreateTable waits for the table to become ACTIVE.
const tableWait = 2 * time.Minute

// CreateTable creates the table name (see CreateTableInput), waits until it
// is ACTIVE and enables TTL on AttrPurgeAt. A server without the TTL
// operation (dynalite answers UnknownOperationException) is tolerated:
// expiry is always compared in code, never left to TTL. Point-in-time
// recovery is a deployment setting (the SAM template), not set here.
func CreateTable(ctx context.Context, client TableClient, name string) error {
	if _, err := client.CreateTable(ctx, CreateTableInput(name)); err != nil {
		return fmt.Errorf("create table %s: %w", name, err)
	}
	waiter := dynamodb.NewTableExistsWaiter(client, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay = 50 * time.Millisecond
		o.MaxDelay = 2 * time.Second
	})
	if err := waiter.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, tableWait); err != nil {
		return fmt.Errorf("wait for table %s: %w", name, err)
	}
	_, err := client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(AttrPurgeAt),
			Enabled:       aws.Bool(true),
		},
	})
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode() == "UnknownOperationException" {
		err = nil
	}
	if err != nil {
		return fmt.Errorf("enable TTL on table %s: %w", name, err)
	}
	return nil
}

// DeleteTable deletes the table name and waits until it is gone, so that
// its name can be used again at once; a table that does not exist is not
// an error. Meant for tests and tooling.
func DeleteTable(ctx context.Context, client TableClient, name string) error {
	_, err := client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	var notFound *types.ResourceNotFoundException
	if errors.As(err, &notFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete table %s: %w", name, err)
	}
	waiter := dynamodb.NewTableNotExistsWaiter(client, func(o *dynamodb.TableNotExistsWaiterOptions) {
		o.MinDelay = 20 * time.Millisecond
		o.MaxDelay = time.Second
	})
	if err := waiter.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, tableWait); err != nil {
		return fmt.Errorf("wait for table %s to be deleted: %w", name, err)
	}
	return nil
}

// ClientOptions configures NewClient.
type ClientOptions struct {
	// Endpoint is the base URL of a DynamoDB API server (DynamoDB Local,
	// dynalite: config DYNAMODB_ENDPOINT); empty means AWS's regional
	// endpoint. A client of an Endpoint sends each call's Purpose in the
	// PurposeHeader request header, for the proxies in front of a local
	// server.
	Endpoint string
	// Region is the AWS region; empty means AWS_REGION, else
	// AWS_DEFAULT_REGION (pkg/awsenv).
	Region string
	// Credentials, when set, signs the calls: any provider, one from the
	// SDK's shared-configuration loader (profiles, SSO) for instance.
	Credentials aws.CredentialsProvider
	// StaticCredentials uses fixed placeholder credentials: for local
	// servers, which accept any. Without it or Credentials, the
	// environment's are used (awsenv.Credentials: the Lambda runtime's
	// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, or a
	// container credentials endpoint).
	StaticCredentials bool
	// AttemptTimeout bounds one HTTP attempt (connect, send, answer), so
	// that a hung connection costs one attempt and the SDK retries on a
	// new one within the caller's deadline (config
	// DYNAMODB_ATTEMPT_TIMEOUT). 0 means DefaultAttemptTimeout.
	AttemptTimeout time.Duration
	// MaxAttempts is how many attempts the SDK makes of one request
	// (first try included); 0 means DefaultMaxAttempts.
	MaxAttempts int
	// Transport, when set, carries the HTTP attempts under AttemptTimeout
	// in place of the SDK's default transport: tests inject faults there,
	// below the SDK's retryer (internal/ddbfault).
	Transport http.RoundTripper
	// TracerProvider receives the SDK's own spans of each request (one
	// client span per operation; pkg/telemetry adapts an OpenTelemetry
	// provider); nil means none.
	TracerProvider tracing.TracerProvider
}

// Client defaults. A DynamoDB request answers in milliseconds; an attempt
// still unanswered after a second is far more likely hung than slow, and
// the caller's deadline (a lease, the cleanup reserve) bounds the retries.
const (
	DefaultAttemptTimeout = time.Second
	DefaultMaxAttempts    = 4
	// maxRetryBackoff caps the SDK's jittered backoff between attempts
	// (its default cap is 20 s, longer than any budget it serves here).
	maxRetryBackoff = 500 * time.Millisecond
	// maxIdleConnsPerHost lets the one DynamoDB endpoint keep as many
	// idle connections as the SDK's transport keeps in all. The SDK's
	// default per host is 10: a process serving more sessions at once
	// (the dev server, turnbench) dialled a new connection for a large
	// share of its calls (measured: 0.74 dials per turn at 64 sessions).
	// A Lambda instance serves one request at a time and never fills it.
	maxIdleConnsPerHost = 100 // awshttp.DefaultHTTPTransportMaxIdleConns
)

// NewClient returns a DynamoDB client for mains, the dev server and tests.
// optFns are applied last (tests add middleware through them).
func NewClient(ctx context.Context, opts ClientOptions, optFns ...func(*dynamodb.Options)) (*dynamodb.Client, error) {
	cfg, err := awsenv.Config(opts.Region)
	if err != nil {
		return nil, fmt.Errorf("AWS configuration: %w", err)
	}
	switch {
	case opts.Credentials != nil:
		cfg.Credentials = opts.Credentials
	case opts.StaticCredentials:
		cfg.Credentials = credentials.NewStaticCredentialsProvider("local", "local", "")
	}
	attempt := opts.AttemptTimeout
	if attempt <= 0 {
		attempt = DefaultAttemptTimeout
	}
	attempts := opts.MaxAttempts
	if attempts <= 0 {
		attempts = DefaultMaxAttempts
	}
	cfg.HTTPClient = awshttp.NewBuildableClient().WithTimeout(attempt).
		WithTransportOptions(func(tr *http.Transport) { tr.MaxIdleConnsPerHost = maxIdleConnsPerHost })
	cfg.Retryer = func() aws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = attempts
			o.MaxBackoff = maxRetryBackoff
			// No client-side retry quota: under sustained faults it
			// gives up on calls after one attempt, turning outcomes the
			// next attempt would have resolved into unknown ones. The
			// callers' deadlines bound the retries instead.
			o.RateLimiter = ratelimit.None
		})
	}
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		MeterUsage(o)
		if opts.TracerProvider != nil {
			o.TracerProvider = opts.TracerProvider
		}
		if opts.Endpoint != "" {
			o.BaseEndpoint = aws.String(opts.Endpoint)
			sendPurpose(o)
		}
		if opts.Transport != nil {
			// Set here, not in the loaded config, which requires the SDK's
			// buildable client (it adds AWS_CA_BUNDLE roots to it).
			o.HTTPClient = &http.Client{Transport: opts.Transport, Timeout: attempt}
		}
		for _, fn := range optFns {
			fn(o)
		}
	}), nil
}
