// Command turn is the turn function (DESIGN §1, §4): POST / (submit a
// turn, streamed NDJSON snapshots), POST /stop and GET /capabilities behind
// a Lambda function URL in RESPONSE_STREAM mode. It is wiring only:
// config.FromEnv -> DynamoDB store -> model provider -> authenticator ->
// turn.NewHandler -> lambdaurl.Start. Build with -tags lambda.norpc for
// provided.al2023.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambdaurl"

	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/model/echo"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
	"github.com/turnstream/turnstream/pkg/turn"
)

// initTimeout bounds start-up work (AWS config, a JWKS fetch in jwt mode).
const initTimeout = 10 * time.Second

func main() {
	cfg, err := config.FromEnv()
	if err != nil {
		slog.Error("turn: configuration", "error", err)
		os.Exit(1)
	}
	logger := slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: cfg.LogLevel}))
	ctx, cancel := context.WithTimeout(context.Background(), initTimeout)
	h, err := newHandler(ctx, cfg, logger)
	cancel()
	if err != nil {
		logger.Error("turn: start", "error", err)
		os.Exit(1)
	}
	lambdaurl.Start(h)
}

// newHandler builds the turn handler of cfg: a DynamoDB store on
// cfg.TableName (placeholder credentials when cfg.DynamoDBEndpoint names a
// local server), the model provider of cfg.Model and the authenticator of
// cfg.Auth.
func newHandler(ctx context.Context, cfg config.Config, logger *slog.Logger) (http.Handler, error) {
	client, err := dynamo.NewClient(ctx, dynamo.ClientOptions{
		Endpoint:          cfg.DynamoDBEndpoint,
		Region:            cfg.Region,
		StaticCredentials: cfg.DynamoDBEndpoint != "",
	})
	if err != nil {
		return nil, fmt.Errorf("dynamodb client: %w", err)
	}
	m, err := newModel(cfg.Model)
	if err != nil {
		return nil, err
	}
	authn, err := auth.New(ctx, cfg.Auth)
	if err != nil {
		return nil, fmt.Errorf("authenticator: %w", err)
	}
	return turn.NewHandler(turn.Options{
		Store:         dynamo.New(client, dynamo.Options{Table: cfg.TableName, CursorKey: cfg.CursorSecret}),
		Model:         m,
		Authenticator: authn,
		Definition: turn.Definition{
			ID:           cfg.Model.DefinitionID,
			Revision:     cfg.Model.DefinitionRevision,
			SystemPrompt: cfg.Model.SystemPrompt,
			ModelID:      cfg.Model.ModelID,
		},
		TurnTimeout:      cfg.TurnTimeout,
		CleanupReserve:   cfg.CleanupReserve,
		LeaseDuration:    cfg.LeaseDuration,
		SnapshotInterval: cfg.SnapshotInterval,
		MaxBodyBytes:     cfg.MaxBodyBytes,
		Logger:           logger,
	})
}

// newModel returns the model provider of mc.
func newModel(mc config.ModelConfig) (model.Model, error) {
	switch mc.Provider {
	case config.ProviderEcho:
		return echo.New(mc.EchoDelay, mc.EchoChunk), nil
	default:
		return nil, fmt.Errorf("MODEL_PROVIDER: %q is not wired into the turn function", mc.Provider)
	}
}
