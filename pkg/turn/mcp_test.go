package turn_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/emfcheck"
	"github.com/turnstream/turnstream/internal/mcptest"
	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/definition"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/telemetry"
	"github.com/turnstream/turnstream/pkg/tool"
	"github.com/turnstream/turnstream/pkg/tool/mcp"
	"github.com/turnstream/turnstream/pkg/turn"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// quietLog discards the MCP sources' warnings (the tests check the turn).
var quietLog = slog.New(slog.DiscardHandler)

// mcpEnv serves a definition offering workspace_note and the tools of an
// MCP server "calc" (internal/mcptest) at url, whose requireApproval is
// approval. Its model calls the tool named by the input "call <tool>
// <json>" and answers "Done." once a tool result follows.
func mcpEnv(t *testing.T, store chat.Store, url string, approval definition.MCPApproval, opts ...func(*turn.Options)) (*env, *toolCallingModel) {
	t.Helper()
	reg := tool.NewRegistry(nil)
	if err := reg.Register(tool.WorkspaceNote()); err != nil {
		t.Fatal(err)
	}
	server := definition.MCPServer{Name: "calc", URL: url, Approval: approval, Timeout: definition.DefaultMCPTimeout}
	res, err := definition.New([]definition.Definition{{
		ID: "agent", Revision: 1, Provider: config.ProviderEcho,
		Tools: []string{tool.WorkspaceNoteName}, MCPServers: []definition.MCPServer{server},
		Limits: definition.Limits{MaxSteps: 4},
	}}, "agent", reg.Has)
	if err != nil {
		t.Fatal(err)
	}
	m := &toolCallingModel{}
	e := newEnv(t, store, &scriptModel{}, func(o *turn.Options) {
		o.Model, o.Definition = nil, turn.Definition{}
		o.Definitions, o.Tools = res, reg
		o.Models = map[string]model.Model{config.ProviderEcho: m}
		o.ToolSources = map[string][]tool.Source{"agent": {mcp.New(server, mcp.Options{Logger: quietLog})}}
		for _, opt := range opts {
			opt(o)
		}
	})
	return e, m
}

// toolCallingModel calls the tool the last user message names ("call
// <tool> <json>", call id c1) and otherwise answers "Done."; it records
// the tools each request offered.
type toolCallingModel struct {
	mu      sync.Mutex
	offered [][]string
}

func (m *toolCallingModel) Stream(ctx context.Context, req model.Request) (model.Stream, error) {
	var names []string
	for _, s := range req.Tools {
		names = append(names, s.Name)
	}
	m.mu.Lock()
	m.offered = append(m.offered, names)
	m.mu.Unlock()
	last := req.Messages[len(req.Messages)-1]
	if name, args, ok := strings.Cut(strings.TrimPrefix(last.Content, "call "), " "); last.Role == protocol.RoleUser && strings.HasPrefix(last.Content, "call ") && ok {
		return &eventStream{ctx: ctx, evs: []model.Event{callEvent("c1", name, args)}}, nil
	}
	return &eventStream{ctx: ctx, evs: []model.Event{{TextDelta: "Done."}, usageEvent(2, 1)}}, nil
}

func (m *toolCallingModel) lastOffered() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.offered[len(m.offered)-1]
}

// TestMCPToolCall: a turn offers the server's tools after the
// definition's own, runs the model's call on the server, and keeps its
// result like a local tool's; a failing call is a tool error the model
// reads, never a failed turn.
func TestMCPToolCall(t *testing.T) {
	forEachStore(t, func(t *testing.T, newStore func(testing.TB) chat.Store) {
		srv := mcptest.Start(t, mcptest.Options{})
		e, m := mcpEnv(t, newStore(t), srv.URL, definition.MCPApproval{})
		r := e.submit(t, "s", "t1", `call calc__add {"a":2,"b":3}`, nil, nil)
		r.want(t, http.StatusOK, "")
		term := r.terminal(t)
		asst := term.Messages[len(term.Messages)-1]
		if term.Status != protocol.StatusComplete || asst.Content != "Done." || len(asst.ToolCalls) != 1 {
			t.Fatalf("terminal %+v", term)
		}
		if tc := asst.ToolCalls[0]; tc.Name != "calc__add" || tc.Status != protocol.ToolCallComplete || tc.Result == nil || *tc.Result != "5" {
			t.Fatalf("call %+v", tc)
		}
		if got := strings.Join(m.lastOffered(), " "); got != "workspace_note calc__add calc__big calc__fail calc__hang calc__picture calc__shape" {
			t.Errorf("offered %s", got)
		}
		if srv.Calls("add") != 1 {
			t.Errorf("add ran %d times", srv.Calls("add"))
		}
		r = e.submit(t, "s", "t2", `call calc__fail {}`, nil, nil)
		r.want(t, http.StatusOK, "")
		term = r.terminal(t)
		asst = term.Messages[len(term.Messages)-1]
		if tc := asst.ToolCalls[0]; term.Status != protocol.StatusComplete || tc.Status != protocol.ToolCallError || tc.Error == nil || *tc.Error != "the fail tool always fails" {
			t.Fatalf("failing call: %+v %+v", term.Status, tc)
		}
	})
}

// TestMCPServerDown: a server that cannot be listed leaves its tools out
// of the turn, which completes with a warning in its assistant message's
// metadata; history keeps it.
func TestMCPServerDown(t *testing.T) {
	forEachStore(t, func(t *testing.T, newStore func(testing.TB) chat.Store) {
		srv := mcptest.Start(t, mcptest.Options{})
		srv.FailNext(1 << 20)
		store := newStore(t)
		e, m := mcpEnv(t, store, srv.URL, definition.MCPApproval{})
		r := e.submit(t, "s", "t1", "hello", nil, nil)
		r.want(t, http.StatusOK, "")
		term := r.terminal(t)
		asst := term.Messages[len(term.Messages)-1]
		if term.Status != protocol.StatusComplete || asst.Content != "Done." {
			t.Fatalf("terminal %+v", term)
		}
		if got := strings.Join(m.lastOffered(), " "); got != "workspace_note" {
			t.Errorf("offered %s", got)
		}
		var meta struct {
			Warnings []api.Warning `json:"warnings"`
		}
		if err := json.Unmarshal(asst.Metadata, &meta); err != nil || len(meta.Warnings) != 1 ||
			meta.Warnings[0].Code != api.WarningToolServerUnavailable || meta.Warnings[0].Server != "calc" {
			t.Fatalf("metadata %s", asst.Metadata)
		}
		stored, err := store.FindTurn(context.Background(), "s", "t1", alice)
		if err != nil || string(stored.Messages[1].Metadata) != string(asst.Metadata) {
			t.Fatalf("stored %+v, %v", stored, err)
		}
	})
}

// TestMCPApproval: a tool the server's requireApproval names waits for
// the owner's decision like a local approval tool; the approval runs it
// on the server exactly once, and a replayed or repeated decision runs
// nothing; a denial never runs it.
func TestMCPApproval(t *testing.T) {
	forEachStore(t, func(t *testing.T, newStore func(testing.TB) chat.Store) {
		srv := mcptest.Start(t, mcptest.Options{})
		e, _ := mcpEnv(t, newStore(t), srv.URL, definition.MCPApproval{Tools: []string{"add"}})
		token := func(turnID, input string) string {
			r := e.submit(t, "s", turnID, input, nil, nil)
			r.want(t, http.StatusOK, "")
			asst := lastMessage(r.terminal(t))
			var meta struct {
				Pending []api.PendingConfirmation `json:"pendingConfirmations"`
			}
			if err := json.Unmarshal(asst.Metadata, &meta); err != nil || len(meta.Pending) != 1 || meta.Pending[0].Action != "calc__add" ||
				asst.ToolCalls[0].Status != protocol.ToolCallRequiresConfirmation {
				t.Fatalf("waiting turn: %s %+v", asst.Metadata, asst.ToolCalls)
			}
			return meta.Pending[0].Token
		}
		tok := token("t1", `call calc__add {"a":1,"b":1}`)
		if srv.Calls("add") != 0 {
			t.Fatal("the tool ran before approval")
		}
		r := e.decide(t, "s", "t2", tok, protocol.DecisionApprove, nil)
		r.want(t, http.StatusOK, "")
		if tc := lastMessage(r.terminal(t)).ToolCalls[0]; tc.Status != protocol.ToolCallComplete || tc.Result == nil || *tc.Result != "2" {
			t.Fatalf("decided call %+v", tc)
		}
		e.decide(t, "s", "t2", tok, protocol.DecisionApprove, nil) // replayed
		e.decide(t, "s", "t3", tok, protocol.DecisionApprove, nil) // repeated
		if got := srv.Calls("add"); got != 1 {
			t.Fatalf("add ran %d times, want 1", got)
		}
		// A tool the list does not name runs at once.
		r = e.submit(t, "s", "t4", `call calc__shape {}`, nil, nil)
		if tc := lastMessage(r.terminal(t)).ToolCalls[0]; tc.Status != protocol.ToolCallComplete {
			t.Fatalf("shape: %+v", tc)
		}
		tok = token("t5", `call calc__add {"a":5,"b":5}`)
		r = e.decide(t, "s", "t6", tok, protocol.DecisionDeny, nil)
		r.want(t, http.StatusOK, "")
		if got := srv.Calls("add"); got != 1 {
			t.Fatalf("a denial ran add (%d calls)", got)
		}
	})
}

// lastMessage is the newest message of a snapshot.
func lastMessage(p *protocol.SnapshotPayload) protocol.Message {
	return p.Messages[len(p.Messages)-1]
}

// TestMCPToolTelemetry: a remote tool's call is an execute_tool span
// naming the tool, its server and the type "extension", and its EMF
// document carries the server as a dimension.
func TestMCPToolTelemetry(t *testing.T) {
	srv := mcptest.Start(t, mcptest.Options{})
	exp := newSpanSink()
	docs := &syncBuffer{}
	rec, err := telemetry.NewRecorder(docs, telemetry.RecorderOptions{Namespace: "Turnstream", Service: "test", Function: "turn"})
	if err != nil {
		t.Fatal(err)
	}
	e, _ := mcpEnv(t, newStoreMemory(), srv.URL, definition.MCPApproval{}, func(o *turn.Options) {
		o.Tracing = telemetry.NewTracing(exp.provider(), false)
		o.Metrics = rec
	})
	e.submit(t, "s", "t1", `call calc__add {"a":2,"b":3}`, nil, nil).want(t, http.StatusOK, "")
	var span sdktrace.ReadOnlySpan
	for _, s := range endedSpans(t, exp) {
		if s.Name() == "execute_tool calc__add" {
			span = s
		}
	}
	if span == nil {
		t.Fatal("no execute_tool calc__add span")
	}
	if a := attrs(span); a[telemetry.AttrToolServer] != "calc" || a[telemetry.AttrToolType] != telemetry.ToolTypeExtension || a[telemetry.AttrToolName] != "calc__add" {
		t.Errorf("execute_tool attributes %v", a)
	}
	var found bool
	for _, l := range strings.Split(strings.TrimSpace(docs.String()), "\n") {
		d, err := emfcheck.Check([]byte(l))
		if err != nil {
			t.Fatalf("document: %v\n%s", err, l)
		}
		if d.DimensionValue("Tool") == "calc__add" {
			found = d.DimensionValue(telemetry.DimToolServer) == "calc" && d.DimensionValue("Status") == "complete" &&
				slices.ContainsFunc(d.DimensionSets, func(set []string) bool { return slices.Equal(set, []string{"Service", "ToolServer", "Status"}) })
		}
	}
	if !found {
		t.Errorf("no tool document with the server dimension:\n%s", docs.String())
	}
}

// TestMCPSecretHeaderNeverLogged: a server's header value (a credential)
// appears in no log line of the turn or of the MCP client, whether the
// server refuses it (the tools left out) or takes it.
func TestMCPSecretHeaderNeverLogged(t *testing.T) {
	const secret = "s3cret-header-value-0123"
	for name, required := range map[string]string{"refused": "Bearer another", "accepted": "Bearer " + secret} {
		t.Run(name, func(t *testing.T) {
			opts := mcptest.Options{}
			opts.Header.Name, opts.Header.Value = "Authorization", required
			srv := mcptest.Start(t, opts)
			clientLog := &syncBuffer{}
			server := definition.MCPServer{Name: "calc", URL: srv.URL, Timeout: definition.DefaultMCPTimeout,
				Headers: []definition.MCPHeader{{Name: "Authorization", SecretID: "mcp/calc", Prefix: "Bearer "}}}
			h, err := mcp.ResolveHeaders(context.Background(), server, func(context.Context, string) (string, error) { return secret, nil })
			if err != nil {
				t.Fatal(err)
			}
			src := mcp.New(server, mcp.Options{Header: h, Logger: slog.New(slog.NewJSONHandler(clientLog, &slog.HandlerOptions{Level: slog.LevelDebug}))})
			turnLog := &syncBuffer{}
			e, _ := mcpEnv(t, newStoreMemory(), srv.URL, definition.MCPApproval{}, func(o *turn.Options) {
				o.ToolSources = map[string][]tool.Source{"agent": {src}}
				o.Logger = slog.New(slog.NewJSONHandler(turnLog, &slog.HandlerOptions{Level: slog.LevelDebug}))
			})
			r := e.submit(t, "s", "t1", `call calc__add {"a":1,"b":1}`, nil, nil)
			r.want(t, http.StatusOK, "")
			for what, text := range map[string]string{"client log": clientLog.String(), "turn log": turnLog.String(), "stream": string(r.raw)} {
				if strings.Contains(text, secret) {
					t.Errorf("the %s holds the secret:\n%s", what, text)
				}
			}
			if name == "refused" && !strings.Contains(clientLog.String(), "could not be listed") {
				t.Errorf("the refusal was not logged:\n%s", clientLog.String())
			}
		})
	}
}

// TestMCPCallPastTheDeadline: a remote call still running at the turn's
// deadline is cancelled there; the turn ends SERVER_TIMEOUT with the call
// failed, and its record is saved.
func TestMCPCallPastTheDeadline(t *testing.T) {
	srv := mcptest.Start(t, mcptest.Options{})
	store := newStoreMemory()
	e, _ := mcpEnv(t, store, srv.URL, definition.MCPApproval{}, func(o *turn.Options) {
		// Generous for a loaded machine: the listing, the model call and
		// the call's start take milliseconds; each cleanup phase gets a
		// third of the reserve.
		o.TurnTimeout = 3 * time.Second
		o.CleanupReserve = 1500 * time.Millisecond
	})
	r := e.submit(t, "s", "t1", `call calc__hang {}`, nil, nil)
	r.want(t, http.StatusOK, "")
	term := r.terminal(t)
	if term.Status != protocol.StatusError || term.Error == nil || term.Error.Code != protocol.CodeServerTimeout {
		t.Fatalf("terminal %+v", term)
	}
	if tc := lastMessage(term).ToolCalls[0]; tc.Name != "calc__hang" || tc.Status != protocol.ToolCallError {
		t.Fatalf("call %+v", tc)
	}
	stored, err := store.FindTurn(context.Background(), "s", "t1", alice)
	if err != nil || stored.Status != chat.TurnError {
		t.Fatalf("stored %+v, %v", stored, err)
	}
	if got := srv.Calls("hang"); got != 1 {
		t.Errorf("hang called %d times, want 1", got)
	}
}
