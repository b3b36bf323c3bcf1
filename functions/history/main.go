// Command history is the history function (docs/design.md#the-three-functions,
// docs/design.md#history-and-artifacts-api): GET /sessions/{id},
// /sessions/{id}/turns and /sessions/{id}/messages behind a Lambda function
// URL in BUFFERED mode. It is wiring only: config.FromEnv -> the page cursor
// key (read once at start from the Secrets Manager secret CURSOR_SECRET_ARN,
// so that it is not in the function's environment; CURSOR_SECRET in local
// runs) -> DynamoDB store -> authenticator -> sessionapi.NewHistoryHandler ->
// lambda.Start through the function URL adapter (functions/internal/startup).
// Build with -tags lambda.norpc for provided.al2023.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/turnstream/turnstream/functions/internal/attachstore"
	"github.com/turnstream/turnstream/functions/internal/startup"
	"github.com/turnstream/turnstream/internal/demo"
	"github.com/turnstream/turnstream/internal/telemetrysetup"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/sessionapi"
)

func main() {
	startup.Main("history", setup)
}

// setup installs the cursor key, which must be the same on every instance
// on Lambda (config.RequireCursorSecret), then builds the handler.
func setup(ctx context.Context, cfg *config.Config, logger *slog.Logger, tel *telemetrysetup.Set) (func(), error) {
	err := installCursorSecret(ctx, cfg, func(ctx context.Context) (secretsGetter, error) {
		return newSecretsClient(ctx, cfg.Region)
	})
	if err == nil {
		err = cfg.RequireCursorSecret() // cursors must verify on every instance
	}
	if err != nil {
		return nil, fmt.Errorf("cursor secret: %w", err)
	}
	h, err := newHandler(ctx, *cfg, logger, tel)
	if err != nil {
		return nil, err
	}
	if cfg.CursorSecretGenerated {
		logger.Warn("history: CURSOR_SECRET unset; page cursors are valid only in this process")
	}
	return startup.Buffered(h, tel), nil
}

// newHandler builds the history handler of cfg: a DynamoDB store on
// cfg.TableName (placeholder credentials when cfg.DynamoDBEndpoint names a
// local server), the authenticator of cfg.Auth and tel's metrics and
// spans (tel may be nil: off).
func newHandler(ctx context.Context, cfg config.Config, logger *slog.Logger, tel *telemetrysetup.Set) (http.Handler, error) {
	attachments, err := attachstore.FromConfig(cfg)
	if err != nil {
		return nil, err
	}
	h, err := startup.SessionHandler(ctx, cfg, logger, tel, "history", sessionapi.NewHistoryHandler, true, attachments)
	if err != nil || !cfg.Page.Serve {
		return h, err
	}
	// CHAT_PAGE=on: the chat page too, behind the stack's CloudFront
	// distribution, which sends the other paths to their functions
	// (docs/chat-page.md).
	return demo.NewHandler(cfg.Page, h), nil
}
