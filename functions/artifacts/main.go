// Command artifacts is the artifacts function
// (docs/design.md#the-three-functions,
// docs/design.md#history-and-artifacts-api): PUT and GET
// /sessions/{id}/turns/{turnId}/artifacts behind a Lambda function URL in
// BUFFERED mode. It is wiring only: config.FromEnv -> DynamoDB store ->
// authenticator -> sessionapi.NewArtifactsHandler -> lambda.Start through the
// function URL adapter (functions/internal/startup). Build with -tags
// lambda.norpc for provided.al2023.
package main

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/turnstream/turnstream/functions/internal/attachstore"
	"github.com/turnstream/turnstream/functions/internal/startup"
	"github.com/turnstream/turnstream/internal/telemetrysetup"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/sessionapi"
)

func main() {
	startup.Main("artifacts", func(ctx context.Context, cfg *config.Config, logger *slog.Logger, tel *telemetrysetup.Set) (func(), error) {
		h, err := newHandler(ctx, *cfg, logger, tel)
		if err != nil {
			return nil, err
		}
		return startup.Buffered(h, tel), nil
	})
}

// newHandler builds the artifacts handler of cfg: a DynamoDB store on
// cfg.TableName (placeholder credentials when cfg.DynamoDBEndpoint names a
// local server) and the authenticator of cfg.Auth. The artifacts routes
// issue no page cursors, so a generated CURSOR_SECRET is harmless here.
// tel (nil: off) gives its metrics and spans.
func newHandler(ctx context.Context, cfg config.Config, logger *slog.Logger, tel *telemetrysetup.Set) (http.Handler, error) {
	attachments, err := attachstore.FromConfig(cfg)
	if err != nil {
		return nil, err
	}
	return startup.SessionHandler(ctx, cfg, logger, tel, "artifacts", sessionapi.NewArtifactsHandler, false, attachments)
}
