// Command turn is the turn function (docs/design.md#the-three-functions,
// docs/design.md#the-turn-pipeline): POST / (submit a turn, streamed NDJSON
// snapshots), POST /stop and GET /capabilities behind a Lambda function URL in
// RESPONSE_STREAM mode, and GET /sessions/{id}/export (a session's whole
// conversation, streamed; pkg/sessionapi). It is wiring only: config.FromEnv -> DynamoDB store ->
// authenticator -> the turn handler of the configuration (internal/turnsetup:
// the demo tools, the definitions, the model providers they name: echo;
// bedrock with the function's credentials in AWS_REGION (pkg/awsenv); openai at
// OPENAI_BASE_URL with OPENAI_API_KEY, built in with the build tag
// provider.openai, providers.go) -> lambdaurl.Start
// (functions/internal/startup), and the asynchronous invocations that
// drain queued turns (drain.go, docs/multitask.md). Build with -tags
// lambda.norpc for provided.al2023.
package main

import (
	"context"
	"log/slog"
	"net/http"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/turnstream/turnstream/functions/internal/startup"
	"github.com/turnstream/turnstream/internal/telemetrysetup"
	"github.com/turnstream/turnstream/internal/turnsetup"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/definition"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/sessionapi"
	"github.com/turnstream/turnstream/pkg/turn"
)

func main() {
	startup.Main("turn", func(ctx context.Context, cfg *config.Config, logger *slog.Logger, tel *telemetrysetup.Set) (func(), error) {
		h, serve, err := newHandler(ctx, *cfg, logger, os.Getenv("AWS_LAMBDA_FUNCTION_NAME"), tel)
		if err != nil {
			return nil, err
		}
		return func() { lambda.StartHandlerFunc(lambdaHandler(h, serve, logger, tel)) }, nil
	})
}

// newHandler builds the turn handler of cfg (internal/turnsetup): a
// DynamoDB store on cfg.TableName (placeholder credentials when
// cfg.DynamoDBEndpoint names a local server), the model providers the
// definitions name, the reader of the attachments bucket
// (startup.AttachmentReader; none without ATTACHMENTS_BUCKET) and the
// authenticator of cfg.Auth. Queued turns are
// drained by asynchronous invocations of function (drain.go); with
// function empty (not on Lambda) in the process. tel (nil: off) gives
// the metrics and spans. serve is what the function URL serves: the turn
// handler, and GET /sessions/{id}/export in front of it (streamed,
// docs/conversations.md).
func newHandler(ctx context.Context, cfg config.Config, logger *slog.Logger, function string, tel *telemetrysetup.Set) (h *turn.Handler, serve http.Handler, err error) {
	store, err := startup.Store(ctx, cfg, tel)
	if err != nil {
		return nil, nil, err
	}
	authn, err := startup.Authenticator(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	attachments, err := startup.AttachmentReader(cfg)
	if err != nil {
		return nil, nil, err
	}
	deps := turnsetup.Deps{
		Store: store, Authenticator: authn, Logger: logger, Attachments: attachments,
		Metrics: tel.Metrics("turn"), Tracing: tel.Tracer(),
		Models: func(defs *definition.Resolver) (map[string]model.Model, error) { return newModels(ctx, cfg, defs) },
	}
	if mcpSources != nil {
		deps.ToolSources = mcpSources(ctx, cfg, logger)
	}
	if function != "" {
		deps.Dispatch = newDispatcher(function, lambdaClient(cfg.Region))
	}
	if h, err = turnsetup.NewHandler(cfg, deps); err != nil {
		return nil, nil, err
	}
	export, err := sessionapi.NewExportHandler(sessionapi.Options{
		Store: store, Authenticator: authn, Logger: logger, MaxBodyBytes: cfg.MaxBodyBytes,
		Metrics: tel.Metrics("turn"), Tracing: tel.Tracer(),
	})
	if err != nil {
		return nil, nil, err
	}
	return h, sessionapi.WithExport(export, h), nil
}

// newModels builds one provider per provider name that defs use, from
// providers (those built into this bootstrap): echo from ECHO_DELAY and
// ECHO_CHUNK_RUNES; bedrock with the function's credentials from its
// environment (pkg/awsenv) in AWS_REGION; openai at OPENAI_BASE_URL with OPENAI_API_KEY when built in
// (provider_openai.go). Only used providers are built, so an echo
// deployment loads no AWS configuration for Bedrock. A provider that is
// not built in is an error that says how to build it in.
func newModels(ctx context.Context, cfg config.Config, defs *definition.Resolver) (map[string]model.Model, error) {
	models := map[string]model.Model{}
	for _, d := range defs.All() {
		if models[d.Provider] != nil {
			continue
		}
		build, ok := providers[d.Provider]
		if !ok {
			return nil, notBuiltIn(d.Provider)
		}
		m, err := build(ctx, cfg)
		if err != nil {
			return nil, err
		}
		models[d.Provider] = m
	}
	return models, nil
}
