// Command artifacts is the artifacts function (docs/design.md §1, §6): PUT and GET
// /sessions/{id}/turns/{turnId}/artifacts behind a Lambda function URL in
// BUFFERED mode. It is wiring only: config.FromEnv -> DynamoDB store ->
// authenticator -> sessionapi.NewArtifactsHandler -> lambda.Start through
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

// initTimeout bounds start-up work (AWS config, a JWKS fetch in jwt mode).
const initTimeout = 10 * time.Second

func main() {
	cfg, err := config.FromEnv()
	if err != nil {
		slog.Error("artifacts: configuration", "error", err)
		os.Exit(1)
	}
	logger := slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: cfg.LogLevel}))
	ctx, cancel := context.WithTimeout(context.Background(), initTimeout)
	h, err := newHandler(ctx, cfg, logger)
	cancel()
	if err != nil {
		logger.Error("artifacts: start", "error", err)
		os.Exit(1)
	}
	lambda.Start(sessionapi.NewFunctionURLHandler(h))
}

// newHandler builds the artifacts handler of cfg: a DynamoDB store on
// cfg.TableName (placeholder credentials when cfg.DynamoDBEndpoint names a
// local server) and the authenticator of cfg.Auth. The artifacts routes
// issue no page cursors, so a generated CURSOR_SECRET is harmless here.
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
	return sessionapi.NewArtifactsHandler(sessionapi.Options{
		Store:         dynamo.New(client, dynamo.Options{Table: cfg.TableName, CursorKey: cfg.CursorSecret}),
		Authenticator: authn,
		Logger:        logger,
		MaxBodyBytes:  cfg.MaxBodyBytes,
	})
}
