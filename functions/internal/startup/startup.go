// Package startup is the start-up that the turn, history and artifacts
// functions share: read the configuration once, log JSON to stdout, build
// the function's handler under a bounded context, then hand it to the
// Lambda runtime, streaming (lambdaurl) or buffered (lambda with the
// function URL adapter). Each function's main keeps only what is its own:
// which handler it builds and how it is served.
package startup

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdaurl"

	"github.com/turnstream/turnstream/functions/internal/secrets"
	"github.com/turnstream/turnstream/internal/telemetrysetup"
	"github.com/turnstream/turnstream/pkg/attach"
	"github.com/turnstream/turnstream/pkg/attach/s3read"
	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/awsenv"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/definition"
	"github.com/turnstream/turnstream/pkg/sessionapi"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

// InitTimeout bounds a function's start-up work: AWS configuration, the
// cursor secret, a JWKS fetch in jwt mode.
const InitTimeout = 10 * time.Second

// Setup builds a function from cfg under ctx (bounded by InitTimeout) and
// returns what serves its invocations (Streaming or Buffered); cfg may be
// changed (the history function installs its cursor secret). logger
// writes JSON to stdout at LOG_LEVEL.
// tel is the function's telemetry (internal/telemetrysetup), built from
// cfg.Telemetry for the function name.
type Setup func(ctx context.Context, cfg *config.Config, logger *slog.Logger, tel *telemetrysetup.Set) (serve func(), err error)

// Main runs the function name: it reads the configuration (config.FromEnv),
// calls setup, and on success calls the serve function it returned, which
// does not return on Lambda. A configuration or setup error is logged as
// "<name>: configuration" or "<name>: start" with the error, and the
// process exits with status 1.
func Main(name string, setup Setup) {
	cfg, err := config.FromEnv()
	if err != nil {
		slog.Error(name+": configuration", "error", err)
		os.Exit(1)
	}
	logger := slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: cfg.LogLevel}))
	// EMF documents go to standard output with the logs: CloudWatch Logs
	// extracts the metrics from the function's log group.
	tel, err := telemetrysetup.New(cfg.Telemetry, os.Stdout, name, name)
	if err != nil {
		logger.Error(name+": configuration", "error", err)
		os.Exit(1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), InitTimeout)
	err = secrets.InstallAudience(ctx, &cfg, secrets.NewClient)
	var serve func()
	if err == nil {
		serve, err = setup(ctx, &cfg, logger, tel)
	}
	cancel()
	if err != nil {
		logger.Error(name+": start", "error", err)
		os.Exit(1)
	}
	serve()
}

// Streaming serves h behind a function URL in RESPONSE_STREAM mode
// (lambdaurl.Start: each Write reaches the client as it is made), the
// spans of each invocation flushed before it ends (tel.FlushAfter).
func Streaming(h http.Handler, tel *telemetrysetup.Set) func() {
	return func() { lambdaurl.Start(tel.FlushAfter(h)) }
}

// Buffered serves h behind a function URL in BUFFERED mode: lambda.Start
// with the function URL adapter (sessionapi.NewFunctionURLHandler), which
// decodes isBase64Encoded bodies before h reads them; the spans of each
// invocation are flushed before it ends (tel.FlushAfter).
func Buffered(h http.Handler, tel *telemetrysetup.Set) func() {
	return func() { lambda.Start(sessionapi.NewFunctionURLHandler(tel.FlushAfter(h))) }
}

// Store returns the DynamoDB store on cfg.TableName, with page cursors
// signed by cfg.CursorSecret and the usage ledger of cfg (LedgerOptions).
// Its client has cfg's attempt timeout and region, placeholder credentials
// when cfg.DynamoDBEndpoint names a local server, and tel's tracer
// provider (a client span per operation when tracing is on; tel may be
// nil).
func Store(ctx context.Context, cfg config.Config, tel *telemetrysetup.Set) (chat.Store, error) {
	client, err := dynamo.NewClient(ctx, dynamo.ClientOptions{
		Endpoint:          cfg.DynamoDBEndpoint,
		AttemptTimeout:    cfg.DynamoDBAttemptTimeout,
		Region:            cfg.Region,
		StaticCredentials: cfg.DynamoDBEndpoint != "",
		TracerProvider:    tel.SDKTracerProvider(),
	})
	if err != nil {
		return nil, fmt.Errorf("dynamodb client: %w", err)
	}
	return dynamo.New(client, dynamo.Options{Table: cfg.TableName, CursorKey: cfg.CursorSecret, Ledger: LedgerOptions(cfg)}), nil
}

// AttachmentReader returns the turn function's reader of the attachments
// bucket (ATTACHMENTS_BUCKET; docs/attachments.md): signed HEAD and GET
// requests (pkg/attach/s3read) with the environment's region and
// credentials (pkg/awsenv), path-style to AWS_ENDPOINT_URL_S3, else
// AWS_ENDPOINT_URL, when one names another S3 API server. Nil when no
// bucket is set; the error is the environment's (pkg/awsenv.Config).
func AttachmentReader(cfg config.Config) (attach.Reader, error) {
	if cfg.AttachmentsBucket == "" {
		return nil, nil
	}
	awsCfg, err := awsenv.Config(cfg.Region)
	if err != nil {
		return nil, fmt.Errorf("attachments: %w", err)
	}
	return s3read.New(awsCfg, cfg.AttachmentsBucket, S3Endpoint()), nil
}

// S3Endpoint is the S3 API server the environment names in place of
// Amazon S3: AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL; "" for S3 itself.
// Such a server is addressed path-style.
func S3Endpoint() string {
	if u := os.Getenv("AWS_ENDPOINT_URL_S3"); u != "" {
		return u
	}
	return os.Getenv("AWS_ENDPOINT_URL")
}

// LedgerOptions returns the store's usage ledger options of cfg
// (USAGE_LEDGER, LEDGER_RETENTION): every function's store decides
// turns, so every one counts the turns it decides when the ledger is on.
func LedgerOptions(cfg config.Config) chat.LedgerOptions {
	return chat.LedgerOptions{Enabled: cfg.Usage.Ledger, Retention: cfg.Usage.LedgerRetention}
}

// Authenticator returns the authenticator of cfg.Auth (auth.New; in jwt
// mode its first JWKS fetch is bounded by ctx).
func Authenticator(ctx context.Context, cfg config.Config) (auth.Authenticator, error) {
	a, err := auth.New(ctx, cfg.Auth)
	if err != nil {
		return nil, fmt.Errorf("authenticator: %w", err)
	}
	return a, nil
}

// SessionHandler builds the history or artifacts handler (newHandler is
// sessionapi.NewHistoryHandler or sessionapi.NewArtifactsHandler; function
// names it, "history" or "artifacts") on the DynamoDB store (Store) with
// the authenticator (Authenticator), logger, cfg's body cap and tel's
// metrics and spans (tel may be nil); with usage, GET /usage too
// (UsageOptions); attachments (nil: none) serves the attachment routes
// (functions/internal/attachstore builds it, so that the turn function,
// which links this package, does not link the S3 client).
func SessionHandler(ctx context.Context, cfg config.Config, logger *slog.Logger, tel *telemetrysetup.Set, function string, newHandler func(sessionapi.Options) (http.Handler, error), usage bool, attachments attach.Store) (http.Handler, error) {
	store, err := Store(ctx, cfg, tel)
	if err != nil {
		return nil, err
	}
	authn, err := Authenticator(ctx, cfg)
	if err != nil {
		return nil, err
	}
	opts := sessionapi.Options{
		Store: store, Authenticator: authn, Logger: logger, MaxBodyBytes: cfg.MaxBodyBytes,
		Metrics: tel.Metrics(function), Tracing: tel.Tracer(), Attachments: attachments,
	}
	if usage {
		if opts.Usage, err = UsageOptions(cfg, os.ReadFile); err != nil {
			return nil, err
		}
	}
	return newHandler(opts)
}

// UsageOptions returns the GET /usage options of cfg: nil when the usage
// ledger is off, else the quotas of the default definition (the
// definitions file's, read with readFile, over QUOTAS).
func UsageOptions(cfg config.Config, readFile func(string) ([]byte, error)) (*sessionapi.UsageOptions, error) {
	if !cfg.Usage.Ledger {
		return nil, nil
	}
	q, err := definition.DefaultQuotas(cfg.Definitions(), readFile)
	if err != nil {
		return nil, fmt.Errorf("quotas: %w", err)
	}
	return &sessionapi.UsageOptions{Quotas: q}, nil
}
