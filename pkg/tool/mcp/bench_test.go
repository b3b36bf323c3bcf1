package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/turnstream/turnstream/internal/mcptest"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/tool"
	"github.com/turnstream/turnstream/pkg/tool/mcp"
)

// BenchmarkCall is one call of an add tool: in process (the baseline), and
// on an MCP server over loopback HTTP, with a session and stateless; each
// through tool.Registry.Run (the argument check included). docs/mcp.md
// reports the ratios.
func BenchmarkCall(b *testing.B) {
	local := tool.NewRegistry(nil)
	if err := local.Register(tool.Tool{Name: "calc__add", Description: "Adds.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`),
		Call: func(_ context.Context, args json.RawMessage) (tool.Result, error) {
			var in struct{ A, B float64 }
			if err := json.Unmarshal(args, &in); err != nil {
				return tool.Result{}, err
			}
			return tool.Result{Text: fmt.Sprint(in.A + in.B)}, nil
		}}); err != nil {
		b.Fatal(err)
	}
	regs := map[string]*tool.Registry{"local": local}
	for name, stateless := range map[string]bool{"mcp-session": false, "mcp-stateless": true} {
		srv := mcptest.Start(b, mcptest.Options{Stateless: stateless})
		reg, err := mcp.New(server(srv.URL), mcp.Options{Logger: quietLog}).Tools(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		regs[name] = reg
	}
	call := model.ToolCall{ID: "c1", Name: "calc__add", Args: json.RawMessage(`{"a":1,"b":2}`)}
	for _, name := range []string{"local", "mcp-session", "mcp-stateless"} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if o := regs[name].Run(context.Background(), call); o.Text != "3" {
					b.Fatalf("%s: %s %q", name, o.Code, o.Text)
				}
			}
		})
	}
}

// BenchmarkTools is a turn's listing: kept (within the TTL, what most
// turns do) against fresh (a new process's first turn: the MCP handshake
// and tools/list, six tools' schemas compiled).
func BenchmarkTools(b *testing.B) {
	srv := mcptest.Start(b, mcptest.Options{})
	kept := mcp.New(server(srv.URL), mcp.Options{Logger: quietLog})
	if _, err := kept.Tools(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Run("kept", func(b *testing.B) {
		for b.Loop() {
			if _, err := kept.Tools(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("fresh", func(b *testing.B) {
		for b.Loop() {
			if _, err := mcp.New(server(srv.URL), mcp.Options{Logger: quietLog}).Tools(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
	})
}
