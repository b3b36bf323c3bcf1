// Command history is the history function (docs/design.md §1, §6): GET
// /sessions/{id}, /sessions/{id}/turns and /sessions/{id}/messages behind
// a Lambda function URL in BUFFERED mode. It is wiring only:
// config.FromEnv -> the page cursor key (read once at start from the
// Secrets Manager secret CURSOR_SECRET_ARN, so that it is not in the
// function's environment; CURSOR_SECRET in local runs) -> DynamoDB store
// -> authenticator -> sessionapi.NewHistoryHandler -> lambda.Start through
// the function URL adapter. Build with -tags lambda.norpc for
// provided.al2023.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/sessionapi"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

// initTimeout bounds start-up work (AWS config, the cursor secret, a JWKS
// fetch in jwt mode).
const initTimeout = 10 * time.Second

func main() {
	cfg, err := config.FromEnv()
	if err != nil {
		slog.Error("history: configuration", "error", err)
		os.Exit(1)
	}
	logger := slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: cfg.LogLevel}))
	ctx, cancel := context.WithTimeout(context.Background(), initTimeout)
	err = installCursorSecret(ctx, &cfg, func(ctx context.Context) (secretsGetter, error) {
		return newSecretsClient(ctx, cfg.Region)
	})
	if err == nil {
		err = cfg.RequireCursorSecret() // cursors must verify on every instance
	}
	if err != nil {
		cancel()
		logger.Error("history: cursor secret", "error", err)
		os.Exit(1)
	}
	h, err := newHandler(ctx, cfg, logger)
	cancel()
	if err != nil {
		logger.Error("history: start", "error", err)
		os.Exit(1)
	}
	if cfg.CursorSecretGenerated {
		logger.Warn("history: CURSOR_SECRET unset; page cursors are valid only in this process")
	}
	lambda.Start(sessionapi.NewFunctionURLHandler(h))
}

// newHandler builds the history handler of cfg: a DynamoDB store on
// cfg.TableName (placeholder credentials when cfg.DynamoDBEndpoint names a
// local server) and the authenticator of cfg.Auth.
func newHandler(ctx context.Context, cfg config.Config, logger *slog.Logger) (http.Handler, error) {
	client, err := dynamo.NewClient(ctx, dynamo.ClientOptions{
		Endpoint:          cfg.DynamoDBEndpoint,
		AttemptTimeout:    cfg.DynamoDBAttemptTimeout,
		Region:            cfg.Region,
		StaticCredentials: cfg.DynamoDBEndpoint != "",
	})
	if err != nil {
		return nil, fmt.Errorf("dynamodb client: %w", err)
	}
	authn, err := auth.New(ctx, cfg.Auth)
	if err != nil {
		return nil, fmt.Errorf("authenticator: %w", err)
	}
	return sessionapi.NewHistoryHandler(sessionapi.Options{
		Store:         dynamo.New(client, dynamo.Options{Table: cfg.TableName, CursorKey: cfg.CursorSecret}),
		Authenticator: authn,
		Logger:        logger,
		MaxBodyBytes:  cfg.MaxBodyBytes,
	})
}
