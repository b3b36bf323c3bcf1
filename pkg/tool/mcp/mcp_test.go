package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/mcptest"
	"github.com/turnstream/turnstream/pkg/clock"
	"github.com/turnstream/turnstream/pkg/definition"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/tool"
	"github.com/turnstream/turnstream/pkg/tool/mcp"
)

// quietLog discards the sources' warnings (the tests check what they do).
var quietLog = slog.New(slog.DiscardHandler)

var t0 = time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)

func server(url string) definition.MCPServer {
	return definition.MCPServer{Name: "calc", URL: url, Timeout: definition.DefaultMCPTimeout}
}

func list(t *testing.T, src *mcp.Source) *tool.Registry {
	t.Helper()
	reg, err := src.Tools(context.Background())
	if err != nil {
		t.Fatalf("Tools: %v", err)
	}
	return reg
}

func call(reg *tool.Registry, name, args string) tool.Outcome {
	return reg.Run(context.Background(), model.ToolCall{ID: "c1", Name: name, Args: json.RawMessage(args)})
}

func TestListAndCall(t *testing.T) {
	for _, stateless := range []bool{false, true} {
		name := map[bool]string{false: "sessions", true: "stateless"}[stateless]
		t.Run(name, func(t *testing.T) {
			srv := mcptest.Start(t, mcptest.Options{Stateless: stateless})
			s := server(srv.URL)
			s.Approval = definition.MCPApproval{Tools: []string{"fail"}}
			reg := list(t, mcp.New(s, mcp.Options{Logger: quietLog}))
			want := []string{"calc__add", "calc__big", "calc__fail", "calc__hang", "calc__picture", "calc__shape"}
			if got := reg.Names(); strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("names %v, want %v", got, want)
			}
			specs, _ := reg.Specs([]string{"calc__add"})
			if specs[0].Description != "Adds two numbers." || !strings.Contains(string(specs[0].InputSchema), `"required":["a","b"]`) {
				t.Errorf("spec %+v", specs[0])
			}
			ts, _ := tool.NewRegistry(nil).Select(nil)
			ts, _ = ts.With(reg)
			if !ts.Approval("calc__fail") || ts.Approval("calc__add") {
				t.Error("approval: want calc__fail only")
			}
			for _, tc := range []struct {
				name, args, status, code, text string
			}{
				{"calc__add", `{"a": 1, "b": 2.5}`, protocol.ToolCallComplete, "", "3.5"},
				{"calc__fail", `{}`, protocol.ToolCallError, tool.CodeFailed, "the fail tool always fails"},
				{"calc__picture", `{}`, protocol.ToolCallComplete, "", "a dot\n[an image (image/png, 4 bytes) the tool returned is not shown to the model]"},
				{"calc__shape", `{}`, protocol.ToolCallComplete, "", `{"sides":3}`},
				// Checked here against the server's schema: never sent.
				{"calc__add", `{"a": "one", "b": 2}`, protocol.ToolCallError, tool.CodeInvalidArgs, ""},
				{"calc__add", `{"a": 1}`, protocol.ToolCallError, tool.CodeInvalidArgs, ""},
			} {
				o := call(reg, tc.name, tc.args)
				if o.Status != tc.status || o.Code != tc.code || tc.text != "" && o.Text != tc.text {
					t.Errorf("%s %s: %s %s %q", tc.name, tc.args, o.Status, o.Code, o.Text)
				}
			}
			if got := srv.Calls("add"); got != 1 {
				t.Errorf("add ran %d times, want 1 (invalid arguments are not sent)", got)
			}
		})
	}
}

// TestAllowedTools: only the allowed tools are offered.
func TestAllowedTools(t *testing.T) {
	srv := mcptest.Start(t, mcptest.Options{})
	s := server(srv.URL)
	s.AllowedTools = []string{"add", "shape", "absent"}
	s.Approval = definition.MCPApproval{Always: true}
	reg := list(t, mcp.New(s, mcp.Options{Logger: quietLog}))
	if got := strings.Join(reg.Names(), " "); got != "calc__add calc__shape" {
		t.Fatalf("names %s", got)
	}
	ts, _ := tool.NewRegistry(nil).Select(nil)
	ts, _ = ts.With(reg)
	if !ts.Approval("calc__add") || !ts.Approval("calc__shape") {
		t.Error(`requireApproval "always": every tool waits`)
	}
	if o := call(reg, "calc__big", `{"bytes": 1}`); o.Code != tool.CodeUnknownTool {
		t.Errorf("a tool left out ran: %+v", o)
	}
}

// TestBigResultIsCut: a result over tool.MaxResultTextBytes is cut at a
// character boundary, with a note, and still valid UTF-8.
func TestBigResultIsCut(t *testing.T) {
	srv := mcptest.Start(t, mcptest.Options{})
	reg := list(t, mcp.New(server(srv.URL), mcp.Options{Logger: quietLog}))
	o := call(reg, "calc__big", `{"bytes": 200000}`)
	if !o.OK() || len(o.Text) > tool.MaxResultTextBytes || !strings.Contains(o.Text, "[cut: the tool returned 200000 bytes; the first ") {
		t.Fatalf("%s %s: %d bytes, ends %q", o.Status, o.Code, len(o.Text), o.Text[max(0, len(o.Text)-80):])
	}
	if o := call(reg, "calc__big", `{"bytes": 1000}`); o.Text != strings.Repeat("x", 1000) {
		t.Errorf("a result that fits was changed: %d bytes", len(o.Text))
	}
}

// TestTimeoutAndStop: a call that outlives the server's timeout ends as
// a tool timeout; one whose turn is stopped as cancelled. Neither is
// sent again, and the session still serves.
func TestTimeoutAndStop(t *testing.T) {
	srv := mcptest.Start(t, mcptest.Options{})
	s := server(srv.URL)
	s.Timeout = 50 * time.Millisecond
	reg := list(t, mcp.New(s, mcp.Options{Logger: quietLog}))
	if o := call(reg, "calc__hang", `{}`); o.Code != tool.CodeTimeout {
		t.Errorf("timeout: %s %s %q", o.Status, o.Code, o.Text)
	}
	s.Timeout = definition.DefaultMCPTimeout
	reg = list(t, mcp.New(s, mcp.Options{Logger: quietLog}))
	for len(srv.Hanging()) > 0 {
		<-srv.Hanging()
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan tool.Outcome)
	go func() {
		done <- reg.Run(ctx, model.ToolCall{ID: "c2", Name: "calc__hang", Args: json.RawMessage(`{}`)})
	}()
	<-srv.Hanging() // this call's, or the first one's arriving late: either way a stop
	cancel()
	if o := <-done; o.Code != tool.CodeCancelled {
		t.Errorf("stop: %s %s %q", o.Status, o.Code, o.Text)
	}
	if got := srv.Calls("hang"); got > 2 {
		t.Errorf("hang called %d times, want at most 2", got)
	}
	if o := call(reg, "calc__add", `{"a": 1, "b": 1}`); o.Text != "2" {
		t.Errorf("after the timeout and the stop: %s %q", o.Code, o.Text)
	}
}

// TestServerDown: a server that cannot be listed leaves its tools out
// (ErrDown) and is not asked again for DownTTL; a call whose request the
// server answered 500 is reported with an unknown outcome, never sent
// again.
func TestServerDown(t *testing.T) {
	srv := mcptest.Start(t, mcptest.Options{})
	clk := clock.NewFake(t0)
	src := mcp.New(server(srv.URL), mcp.Options{Logger: quietLog, Clock: clk})
	srv.FailNext(1000) // every request: the handshake falls back to an older version on a failure
	if _, err := src.Tools(context.Background()); !errors.Is(err, mcp.ErrDown) {
		t.Fatalf("Tools with the server down: %v, want ErrDown", err)
	}
	n := srv.Requests()
	clk.Advance(mcp.DownTTL - time.Second)
	if _, err := src.Tools(context.Background()); !errors.Is(err, mcp.ErrDown) || srv.Requests() != n {
		t.Fatalf("within DownTTL: %v, %d requests (want none more)", err, srv.Requests()-n)
	}
	clk.Advance(time.Second)
	srv.FailNext(0)
	reg := list(t, src)
	srv.FailNext(1)
	o := call(reg, "calc__add", `{"a": 1, "b": 2}`)
	if o.Code != tool.CodeFailed || o.Text != mcp.TextUnknown {
		t.Errorf("500 on the call: %s %q (%v)", o.Code, o.Text, o.Err)
	}
	if got := srv.Calls("add"); got != 0 {
		t.Errorf("add ran %d times", got)
	}
	if o := call(reg, "calc__add", `{"a": 1, "b": 2}`); o.Text != "3" || srv.Calls("add") != 1 {
		t.Errorf("the next call: %s %q, %d calls", o.Code, o.Text, srv.Calls("add"))
	}
	srv.Close()
	if o := call(reg, "calc__add", `{"a": 1, "b": 2}`); o.Code != tool.CodeFailed || (o.Text != mcp.TextUnknown && o.Text != mcp.TextUnreachable) {
		t.Errorf("server gone: %s %q", o.Code, o.Text)
	}
}

// TestSessionGone: a server that forgot the session (404) gets a new
// one, and the call runs once.
func TestSessionGone(t *testing.T) {
	srv := mcptest.Start(t, mcptest.Options{})
	reg := list(t, mcp.New(server(srv.URL), mcp.Options{Logger: quietLog}))
	srv.ForgetSessions()
	if o := call(reg, "calc__add", `{"a": 2, "b": 2}`); o.Text != "4" {
		t.Fatalf("after the server forgot the session: %s %s %q", o.Status, o.Code, o.Text)
	}
	if got := srv.Calls("add"); got != 1 {
		t.Errorf("add ran %d times, want 1", got)
	}
}

// TestListingTTL: the listing is kept for the TTL; a changed list is
// seen after it.
func TestListingTTL(t *testing.T) {
	srv := mcptest.Start(t, mcptest.Options{})
	clk := clock.NewFake(t0)
	src := mcp.New(server(srv.URL), mcp.Options{Logger: quietLog, Clock: clk, TTL: time.Minute})
	first := list(t, src)
	srv.AddTool("late", "late")
	srv.RemoveTools("fail")
	n := srv.Requests()
	clk.Advance(time.Minute - time.Millisecond)
	if again := list(t, src); again != first || srv.Requests() != n {
		t.Fatalf("within the TTL: listed again (%d requests)", srv.Requests()-n)
	}
	// A tool the server no longer has: its answer is an error the model
	// reads, and the session is kept.
	if o := call(first, "calc__fail", `{}`); o.Code != tool.CodeFailed || o.Text != mcp.TextRefused {
		t.Errorf("a removed tool: %s %q", o.Code, o.Text)
	}
	clk.Advance(time.Millisecond)
	reg := list(t, src)
	if !reg.Has("calc__late") || reg.Has("calc__fail") {
		t.Fatalf("after the TTL: %v", reg.Names())
	}
	if o := call(reg, "calc__late", `{}`); o.Text != "late" {
		t.Errorf("late: %s %q", o.Code, o.Text)
	}
}

// TestHeaders: the server's headers are sent (a secret's value after its
// prefix); a server that refuses without them is down.
func TestHeaders(t *testing.T) {
	opts := mcptest.Options{}
	opts.Header.Name, opts.Header.Value = "Authorization", "Bearer s3cret"
	srv := mcptest.Start(t, opts)
	s := server(srv.URL)
	s.Headers = []definition.MCPHeader{{Name: "Authorization", SecretID: "mcp/calc", Prefix: "Bearer "}, {Name: "X-Tenant", Value: "acme"}}
	secrets := func(_ context.Context, id string) (string, error) {
		if id != "mcp/calc" {
			return "", errors.New("no such secret")
		}
		return "s3cret", nil
	}
	h, err := mcp.ResolveHeaders(context.Background(), s, secrets)
	if err != nil || h.Get("Authorization") != "Bearer s3cret" || h.Get("X-Tenant") != "acme" {
		t.Fatalf("headers %v, %v", h, err)
	}
	if o := call(list(t, mcp.New(s, mcp.Options{Logger: quietLog, Header: h})), "calc__add", `{"a": 1, "b": 1}`); o.Text != "2" {
		t.Errorf("with the header: %s %q", o.Code, o.Text)
	}
	if _, err := mcp.New(s, mcp.Options{Logger: quietLog}).Tools(context.Background()); !errors.Is(err, mcp.ErrDown) {
		t.Errorf("without the header: %v, want ErrDown", err)
	}
	for name, secret := range map[string]func(context.Context, string) (string, error){
		"unreadable": func(context.Context, string) (string, error) { return "", errors.New("AccessDenied") },
		"two lines":  func(context.Context, string) (string, error) { return "s3cret\nX-Evil: 1", nil },
	} {
		_, err := mcp.ResolveHeaders(context.Background(), s, secret)
		if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "Authorization") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestNamesTheModelCannotTake: a tool whose offered name would break a
// model's tool-name rules ([A-Za-z0-9_-], 64 bytes) is left out; the
// others are offered.
func TestNamesTheModelCannotTake(t *testing.T) {
	srv := mcptest.Start(t, mcptest.Options{})
	srv.AddTool("open.ticket", "dotted")
	srv.AddTool(strings.Repeat("t", 64-len("calc__")), "longest")
	srv.AddTool(strings.Repeat("t", 64-len("calc__")+1), "too long")
	reg := list(t, mcp.New(server(srv.URL), mcp.Options{Logger: quietLog}))
	if reg.Has("calc__open.ticket") || reg.Has("calc__"+strings.Repeat("t", 59)) || !reg.Has("calc__"+strings.Repeat("t", 58)) || !reg.Has("calc__add") {
		t.Fatalf("names %v", reg.Names())
	}
}

// TestListingCutShortByTheTurn: a listing whose turn ended (its context
// cancelled) is not remembered as the server down: the next turn lists.
func TestListingCutShortByTheTurn(t *testing.T) {
	srv := mcptest.Start(t, mcptest.Options{})
	src := mcp.New(server(srv.URL), mcp.Options{Logger: quietLog})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := src.Tools(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Tools with its turn ended: %v", err)
	}
	if reg := list(t, src); !reg.Has("calc__add") {
		t.Fatalf("the next listing: %v", reg.Names())
	}
}
