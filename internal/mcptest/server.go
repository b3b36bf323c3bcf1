// Package mcptest serves a Model Context Protocol server over Streamable
// HTTP, built with the official Go SDK, for tests of pkg/tool/mcp and the
// turn path, and for make dev, which serves it at /mcp-demo
// (docs/mcp.md). Its tools:
//
//   - add {a, b: numbers}: their sum, as text and as structured content;
//   - fail {}: an isError result, "the fail tool always fails";
//   - hang {}: waits until its call's context ends (or Release);
//   - big {bytes: integer}: a text of that many bytes ("x" repeated);
//   - picture {}: a 4-byte PNG image and a line of text;
//   - shape {}: structured content only, {"sides": 3};
//
// and AddTool/RemoveTools change the list while it serves.
package mcptest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options choose how the server serves.
type Options struct {
	// Stateless serves without MCP sessions (no Mcp-Session-Id).
	Stateless bool
	// Header, when its Name is set, is required on every request
	// (401 without it).
	Header struct{ Name, Value string }
}

// Server is a running test server.
type Server struct {
	// URL is the endpoint (http://127.0.0.1:port/mcp).
	URL string

	srv  *mcpsdk.Server
	http *httptest.Server
	opts Options
	h    http.Handler // guarded by mu

	mu       sync.Mutex
	calls    map[string]int
	requests int
	release  chan struct{}
	hanging  chan struct{}
	// FailNext, when above 0, answers that many requests 500 before
	// reading them (a server down).
	failNext int
}

// New returns a server that is not listening: serve Handler (the dev
// server mounts it at /mcp-demo). URL is empty.
func New(opts Options) *Server {
	s := &Server{calls: map[string]int{}, release: make(chan struct{}), hanging: make(chan struct{}, 64)}
	s.srv = mcpsdk.NewServer(&mcpsdk.Implementation{Name: "mcptest", Version: "1"}, nil)
	s.addTools()
	s.opts = opts
	s.h = s.handler()
	return s
}

// Handler serves the MCP endpoint (Streamable HTTP, JSON responses).
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests++
		fail := s.failNext > 0
		if fail {
			s.failNext--
		}
		h := s.h
		s.mu.Unlock()
		if fail {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		if s.opts.Header.Name != "" && r.Header.Get(s.opts.Header.Name) != s.opts.Header.Value {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Start starts a server listening on loopback for tb's duration, its
// endpoint at URL.
func Start(tb testing.TB, opts Options) *Server {
	tb.Helper()
	s := New(opts)
	mux := http.NewServeMux()
	mux.Handle("/mcp", s.Handler())
	s.http = httptest.NewServer(mux)
	s.URL = s.http.URL + "/mcp"
	tb.Cleanup(s.Close)
	return s
}

func (s *Server) handler() http.Handler {
	return mcpsdk.NewStreamableHTTPHandler(func(*http.Request) *mcpsdk.Server { return s.srv },
		&mcpsdk.StreamableHTTPOptions{Stateless: s.opts.Stateless, JSONResponse: true})
}

// ForgetSessions drops every MCP session, as a server that restarted:
// a request naming one gets 404.
func (s *Server) ForgetSessions() {
	h := s.handler()
	s.mu.Lock()
	s.h = h
	s.mu.Unlock()
}

// Close stops a started server (its later requests fail to connect);
// Release first, so hanging calls end.
func (s *Server) Close() {
	s.Release()
	if s.http != nil {
		s.http.CloseClientConnections()
		s.http.Close()
	}
}

// Release ends every hanging call (hang) now and later ones at once.
func (s *Server) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.release:
	default:
		close(s.release)
	}
}

// Hanging receives once per call of hang, as it starts waiting.
func (s *Server) Hanging() <-chan struct{} { return s.hanging }

// FailNext makes the next n requests answer 500.
func (s *Server) FailNext(n int) {
	s.mu.Lock()
	s.failNext = n
	s.mu.Unlock()
}

// Calls returns how many times the tool name was called.
func (s *Server) Calls(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[name]
}

// Requests returns how many HTTP requests reached the server.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// AddTool adds a tool named name answering text, with an empty object
// schema: the list changes while the server serves.
func (s *Server) AddTool(name, text string) {
	s.srv.AddTool(&mcpsdk.Tool{Name: name, Description: "Answers " + text + ".", InputSchema: objectSchema(nil, nil)},
		s.counted(name, func(context.Context, *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
			return textResult(text), nil
		}))
}

// AddToolFunc adds a tool named name whose calls answer f() (f runs on
// the server's goroutine, once per call), with an object schema that
// takes any members.
func (s *Server) AddToolFunc(name string, f func() string) {
	s.srv.AddTool(&mcpsdk.Tool{Name: name, Description: "Answers what its function says.", InputSchema: objectSchema(nil, nil)},
		s.counted(name, func(context.Context, *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
			return textResult(f()), nil
		}))
}

// RemoveTools removes the named tools.
func (s *Server) RemoveTools(names ...string) { s.srv.RemoveTools(names...) }

func (s *Server) counted(name string, h mcpsdk.ToolHandler) mcpsdk.ToolHandler {
	return func(ctx context.Context, req *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
		s.mu.Lock()
		s.calls[name]++
		s.mu.Unlock()
		return h(ctx, req)
	}
}

func textResult(text string) *mcpsdk.CallToolResult {
	return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: text}}}
}

// objectSchema is {"type": "object", "properties": props, "required": required}.
func objectSchema(props map[string]any, required []string) map[string]any {
	sch := map[string]any{"type": "object"}
	if props != nil {
		sch["properties"] = props
	}
	if required != nil {
		sch["required"] = required
	}
	return sch
}

func (s *Server) addTools() {
	number := map[string]any{"type": "number"}
	s.srv.AddTool(&mcpsdk.Tool{Name: "add", Description: "Adds two numbers.",
		InputSchema: objectSchema(map[string]any{"a": number, "b": number}, []string{"a", "b"})},
		s.counted("add", func(_ context.Context, req *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
			var in struct{ A, B float64 }
			if err := jsonUnmarshal(req.Params.Arguments, &in); err != nil {
				return nil, err
			}
			sum := in.A + in.B
			res := textResult(fmt.Sprint(sum))
			res.StructuredContent = map[string]any{"sum": sum}
			return res, nil
		}))
	s.srv.AddTool(&mcpsdk.Tool{Name: "fail", Description: "Always fails.", InputSchema: objectSchema(nil, nil)},
		s.counted("fail", func(context.Context, *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
			res := textResult("the fail tool always fails")
			res.IsError = true
			return res, nil
		}))
	s.srv.AddTool(&mcpsdk.Tool{Name: "hang", Description: "Waits until its call is cancelled.", InputSchema: objectSchema(nil, nil)},
		s.counted("hang", func(ctx context.Context, _ *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
			select {
			case s.hanging <- struct{}{}:
			default:
			}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-s.release:
				return textResult("released"), nil
			}
		}))
	s.srv.AddTool(&mcpsdk.Tool{Name: "big", Description: "Returns a text of the given size.",
		InputSchema: objectSchema(map[string]any{"bytes": map[string]any{"type": "integer", "minimum": 0, "maximum": 1 << 20}}, []string{"bytes"})},
		s.counted("big", func(_ context.Context, req *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
			var in struct{ Bytes int }
			if err := jsonUnmarshal(req.Params.Arguments, &in); err != nil {
				return nil, err
			}
			return textResult(strings.Repeat("x", in.Bytes)), nil
		}))
	s.srv.AddTool(&mcpsdk.Tool{Name: "picture", Description: "Returns a picture.", InputSchema: objectSchema(nil, nil)},
		s.counted("picture", func(context.Context, *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
			return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{
				&mcpsdk.TextContent{Text: "a dot"},
				&mcpsdk.ImageContent{MIMEType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}},
			}}, nil
		}))
	s.srv.AddTool(&mcpsdk.Tool{Name: "shape", Description: "Returns structured content only.", InputSchema: objectSchema(nil, nil)},
		s.counted("shape", func(context.Context, *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
			return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{}, StructuredContent: map[string]any{"sides": 3}}, nil
		}))
}
