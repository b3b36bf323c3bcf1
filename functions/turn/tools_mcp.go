//go:build tools.mcp

package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/turnstream/turnstream/functions/internal/secrets"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/definition"
	"github.com/turnstream/turnstream/pkg/tool"
	"github.com/turnstream/turnstream/pkg/tool/mcp"
)

// The MCP client, built in with the build tag tools.mcp (tools.go): the
// definitions' MCP servers, each header secret read from Secrets Manager
// once, here at start, with a client made only when a header names one.
func init() {
	mcpSources = func(ctx context.Context, cfg config.Config, logger *slog.Logger) func(*definition.Resolver) (map[string][]tool.Source, error) {
		return func(defs *definition.Resolver) (map[string][]tool.Source, error) {
			var client secrets.Getter
			read := func(ctx context.Context, id string) (string, error) {
				if client == nil {
					c, err := secrets.NewClient(ctx, cfg.Region)
					if err != nil {
						return "", fmt.Errorf("secrets manager client: %w", err)
					}
					client = c
				}
				return secrets.String(ctx, client, id)
			}
			return mcp.ForDefinitions(ctx, defs.All(), read, mcp.Options{Logger: logger})
		}
	}
}
