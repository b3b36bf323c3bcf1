package main

import (
	"context"
	"log/slog"

	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/definition"
	"github.com/turnstream/turnstream/pkg/tool"
)

// mcpSources builds the definitions' remote tools (turnsetup.Deps.ToolSources)
// when the MCP client is built in, with the build tag tools.mcp
// (tools_mcp.go; `make build TURN_TOOLS=mcp`): nil otherwise, and a
// definition naming MCP servers then stops the function at start with
// turnsetup.ErrNoMCP, which says how to build it in. The MCP SDK is left
// out of the default bootstrap for its size and start-up cost, as the
// openai provider is (providers.go).
var mcpSources func(ctx context.Context, cfg config.Config, logger *slog.Logger) func(*definition.Resolver) (map[string][]tool.Source, error)
