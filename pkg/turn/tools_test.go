package turn_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/definition"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/model/echo"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/tool"
	"github.com/turnstream/turnstream/pkg/turn"
)

// stepModel is a scripted model.Model for tool loops: call i (from 0)
// streams Steps[i]; calls past the script stream Final. It records every
// request and honours cancellation between events.
type stepModel struct {
	Steps [][]model.Event
	Final []model.Event

	mu   sync.Mutex
	reqs []model.Request
}

func (m *stepModel) Stream(ctx context.Context, req model.Request) (model.Stream, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	evs := m.Final
	if n := len(m.reqs); n < len(m.Steps) {
		evs = m.Steps[n]
	}
	m.reqs = append(m.reqs, req)
	return &eventStream{ctx: ctx, evs: evs}, nil
}

// requests returns the requests made so far.
func (m *stepModel) requests() []model.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]model.Request(nil), m.reqs...)
}

type eventStream struct {
	ctx context.Context
	evs []model.Event
}

func (s *eventStream) Recv() (model.Event, error) {
	if err := s.ctx.Err(); err != nil {
		return model.Event{}, err
	}
	if len(s.evs) == 0 {
		return model.Event{}, io.EOF
	}
	ev := s.evs[0]
	s.evs = s.evs[1:]
	return ev, nil
}

func (s *eventStream) Close() error { return nil }

// callEvent is a model event asking for tool name with args.
func callEvent(id, name, args string) model.Event {
	return model.Event{ToolCall: &model.ToolCall{ID: id, Name: name, Args: json.RawMessage(args)}, FinishReason: model.FinishToolUse}
}

func usageEvent(p, c int64) model.Event {
	return model.Event{Usage: &protocol.Usage{PromptTokens: p, CompletionTokens: c, TotalTokens: p + c}, FinishReason: model.FinishStop}
}

// chartSchema is the test manifest's "chart" props schema.
const chartSchema = `{"type":"object","properties":{"points":{"type":"array","items":{"type":"number"}}},"required":["points"],"additionalProperties":false}`

// toolRegistry is the registry of the tool tests: workspace_note, "slow"
// (blocks until its 20 ms timeout), and "chart" (returns a render frame).
func toolRegistry(tb testing.TB) *tool.Registry {
	tb.Helper()
	manifest, err := tool.NewManifest(map[string][]byte{"chart": []byte(chartSchema)})
	if err != nil {
		tb.Fatal(err)
	}
	reg := tool.NewRegistry(manifest)
	tools := []tool.Tool{
		tool.WorkspaceNote(),
		{
			Name: "slow", Description: "Never finishes in time.", Timeout: 20 * time.Millisecond,
			InputSchema: json.RawMessage(`{"type":"object"}`),
			Call: func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
				<-ctx.Done()
				return tool.Result{}, ctx.Err()
			},
		},
		{
			Name: "chart", Description: "Draws a chart.", InputSchema: json.RawMessage(`{"type":"object"}`),
			Call: func(context.Context, json.RawMessage) (tool.Result, error) {
				return tool.Result{Text: "Chart drawn.", Component: &protocol.RenderFrame{
					ComponentKey: "chart", InstanceID: "chart-1", Props: json.RawMessage(`{"points":[1,2,3]}`),
					Fallback: protocol.Fallback{Kind: "chart", Summary: "A chart of three points."},
				}}, nil
			},
		},
	}
	for _, tl := range tools {
		if err := reg.Register(tl); err != nil {
			tb.Fatal(err)
		}
	}
	return reg
}

// toolEnv serves a handler whose default definition "agent" offers the
// tools of toolRegistry with maxSteps steps, on model m (provider echo).
func toolEnv(t *testing.T, store chat.Store, m model.Model, maxSteps int, opt func(*turn.Options)) *env {
	t.Helper()
	reg := toolRegistry(t)
	res, err := definition.New([]definition.Definition{{
		ID: "agent", Revision: 1, Provider: config.ProviderEcho, SystemPrompt: "Use tools.",
		Tools: []string{tool.WorkspaceNoteName, "slow", "chart"}, Limits: definition.Limits{MaxSteps: maxSteps, MaxTokens: 100},
	}}, "agent", reg.Has)
	if err != nil {
		t.Fatal(err)
	}
	return newEnv(t, store, &scriptModel{}, func(o *turn.Options) {
		o.Model, o.Definition = nil, turn.Definition{}
		o.Definitions, o.Tools = res, reg
		o.Models = map[string]model.Model{config.ProviderEcho: m}
		if opt != nil {
			opt(o)
		}
	})
}

// callStatuses returns, per snapshot, the status of each tool call of the
// assistant message (the last message), joined by ",".
func callStatuses(evs []*protocol.Event) []string {
	var out []string
	for _, ev := range evs {
		if ev.Kind != protocol.EventSnapshot {
			continue
		}
		msgs := ev.Snapshot.Messages
		var st []string
		for _, tc := range msgs[len(msgs)-1].ToolCalls {
			st = append(st, tc.Status)
		}
		out = append(out, strings.Join(st, ","))
	}
	return out
}

func TestToolLoop(t *testing.T) {
	note := `{"title":"Trip plan","body":"Pack light."}`
	tests := map[string]struct {
		steps     [][]model.Event
		maxSteps  int
		calls     int // model calls
		content   string
		statuses  []string // final status of each tool call
		texts     []string // final result or error of each tool call
		usage     protocol.Usage
		artifacts []chat.ArtifactReference
	}{
		"note with artifact": {
			steps: [][]model.Event{
				{{TextDelta: "Saving."}, callEvent("c1", tool.WorkspaceNoteName, note), usageEvent(10, 2)},
				{{TextDelta: "Done."}, usageEvent(20, 3)},
			},
			maxSteps: 4, calls: 2, content: "Saving.\n\nDone.",
			statuses:  []string{protocol.ToolCallComplete},
			texts:     []string{`Saved note "notes/trip-plan.md" (11 characters).`},
			usage:     protocol.Usage{PromptTokens: 30, CompletionTokens: 5, TotalTokens: 35},
			artifacts: []chat.ArtifactReference{{EntryPath: "notes/trip-plan.md", ArtifactType: chat.ArtifactDocument}},
		},
		"invalid args": {
			steps: [][]model.Event{
				{callEvent("c1", tool.WorkspaceNoteName, `{"title":""}`), usageEvent(1, 1)},
				{{TextDelta: "Sorry."}, usageEvent(1, 1)},
			},
			maxSteps: 4, calls: 2, content: "Sorry.",
			statuses: []string{protocol.ToolCallError},
			texts:    []string{"Arguments are invalid: /: required (missing body); /title: minLength."},
			usage:    protocol.Usage{PromptTokens: 2, CompletionTokens: 2, TotalTokens: 4},
		},
		"unknown tool": {
			steps: [][]model.Event{
				{{TextDelta: "Trying."}, callEvent("c1", "launch", `{}`), usageEvent(1, 1)},
				{{TextDelta: "Cannot."}, usageEvent(1, 1)},
			},
			maxSteps: 4, calls: 2, content: "Trying.\n\nCannot.",
			statuses: []string{protocol.ToolCallError},
			texts:    []string{"Tool is not available."},
			usage:    protocol.Usage{PromptTokens: 2, CompletionTokens: 2, TotalTokens: 4},
		},
		"tool timeout": {
			steps: [][]model.Event{
				{callEvent("c1", "slow", `{}`), usageEvent(1, 1)},
				{{TextDelta: "Too slow."}, usageEvent(1, 1)},
			},
			maxSteps: 4, calls: 2, content: "Too slow.",
			statuses: []string{protocol.ToolCallError},
			texts:    []string{"Tool timed out."},
			usage:    protocol.Usage{PromptTokens: 2, CompletionTokens: 2, TotalTokens: 4},
		},
		"step limit": {
			steps: [][]model.Event{
				{callEvent("c1", tool.WorkspaceNoteName, note), usageEvent(1, 1)},
				{{TextDelta: "Again."}, callEvent("c2", tool.WorkspaceNoteName, note), usageEvent(1, 1)},
				{{TextDelta: "never asked"}},
			},
			maxSteps: 2, calls: 2, content: "Again.",
			statuses:  []string{protocol.ToolCallComplete, protocol.ToolCallError},
			texts:     []string{`Saved note "notes/trip-plan.md" (11 characters).`, turn.TextStepLimit},
			usage:     protocol.Usage{PromptTokens: 2, CompletionTokens: 2, TotalTokens: 4},
			artifacts: []chat.ArtifactReference{{EntryPath: "notes/trip-plan.md", ArtifactType: chat.ArtifactDocument}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m := &stepModel{Steps: tc.steps}
			e := toolEnv(t, newStoreMemory(), m, tc.maxSteps, nil)
			r := e.submit(t, "s", "t1", "Plan my trip", nil, nil)
			r.want(t, http.StatusOK, "")
			term := r.terminal(t)
			if term.Status != protocol.StatusComplete {
				t.Fatalf("terminal status %q, error %+v", term.Status, term.Error)
			}
			asst := term.Messages[len(term.Messages)-1]
			if asst.Content != tc.content {
				t.Errorf("content %q, want %q", asst.Content, tc.content)
			}
			if len(asst.ToolCalls) != len(tc.statuses) {
				t.Fatalf("tool calls %+v", asst.ToolCalls)
			}
			for i, call := range asst.ToolCalls {
				got := call.Result
				if call.Status == protocol.ToolCallError {
					got = call.Error
				}
				if call.Status != tc.statuses[i] || got == nil || *got != tc.texts[i] {
					t.Errorf("call %d: status %s, text %v; want %s %q", i, call.Status, got, tc.statuses[i], tc.texts[i])
				}
			}
			if term.Usage != tc.usage {
				t.Errorf("usage %+v, want the sum %+v", term.Usage, tc.usage)
			}
			reqs := m.requests()
			if len(reqs) != tc.calls {
				t.Fatalf("%d model calls, want %d", len(reqs), tc.calls)
			}
			if len(reqs[0].Tools) != 3 || reqs[0].Tools[0].Name != tool.WorkspaceNoteName || reqs[0].MaxTokens != 100 || reqs[0].System != "Use tools." {
				t.Errorf("first request %+v", reqs[0])
			}
			// The second call sees the round trip: assistant with the
			// call, then its tool message.
			second := reqs[1].Messages
			if n := len(second); n != 3 || second[1].Role != protocol.RoleAssistant || len(second[1].ToolCalls) != 1 ||
				second[2].Role != protocol.RoleTool || second[2].ToolCallID == nil || *second[2].ToolCallID != "c1" {
				t.Fatalf("second request messages %s", messagesJSON(t, second))
			}
			first := asst.ToolCalls[0]
			if want := *firstText(first); second[2].Content != want {
				t.Errorf("tool message %q, want %q", second[2].Content, want)
			}
			stored, err := e.store.FindTurn(context.Background(), "s", "t1", alice)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := messagesJSON(t, stored.Messages), messagesJSON(t, term.Messages); got != want {
				t.Errorf("stored messages differ from the terminal snapshot:\n%s\n%s", got, want)
			}
			if stored.Usage != tc.usage {
				t.Errorf("stored usage %+v", stored.Usage)
			}
			if len(stored.Artifacts) != len(tc.artifacts) || len(tc.artifacts) > 0 && stored.Artifacts[0] != tc.artifacts[0] {
				t.Errorf("stored artifacts %+v, want %+v", stored.Artifacts, tc.artifacts)
			}
		})
	}
}

func firstText(tc protocol.ToolCall) *string {
	if tc.Result != nil {
		return tc.Result
	}
	return tc.Error
}

// TestToolCallSnapshots: the stream shows a call running (the tool waits
// until the test has seen that snapshot), then complete; statuses never
// go back; the terminal snapshot and the stored record agree and the
// artifact is recorded, on both stores.
func TestToolCallSnapshots(t *testing.T) {
	forEachStore(t, func(t *testing.T, newStore func(testing.TB) chat.Store) {
		gate := make(chan struct{})
		note := tool.WorkspaceNote()
		gated := note
		gated.Name = "gated_note"
		gated.Call = func(ctx context.Context, args json.RawMessage) (tool.Result, error) {
			select {
			case <-gate:
			case <-ctx.Done():
				return tool.Result{}, ctx.Err()
			}
			return note.Call(ctx, args)
		}
		reg := tool.NewRegistry(nil)
		if err := reg.Register(gated); err != nil {
			t.Fatal(err)
		}
		res, err := definition.New([]definition.Definition{{ID: "agent", Revision: 1, Provider: config.ProviderEcho, Tools: []string{"gated_note"}, Limits: definition.Limits{MaxSteps: 4}}}, "agent", reg.Has)
		if err != nil {
			t.Fatal(err)
		}
		m := &stepModel{Steps: [][]model.Event{
			{{TextDelta: "Saving."}, callEvent("c1", "gated_note", `{"title":"A","body":"b"}`), usageEvent(1, 1)},
			{{TextDelta: "Saved."}, usageEvent(2, 2)},
		}}
		e := newEnv(t, newStore(t), &scriptModel{}, func(o *turn.Options) {
			o.Model, o.Definitions, o.Tools = nil, res, reg
			o.Models = map[string]model.Model{config.ProviderEcho: m}
		})
		resp := e.post(t, context.Background(), "/", submitBody(t, "s", "t1", "note", nil), nil)
		defer func() { _ = resp.Body.Close() }()
		var raw []byte
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		released := false
		for sc.Scan() {
			raw = append(append(raw, sc.Bytes()...), '\n')
			ev, d := protocol.DecodeTurnEvent(sc.Bytes())
			if d != nil {
				t.Fatalf("line %s: %+v", sc.Bytes(), d)
			}
			if !released && ev.Kind == protocol.EventSnapshot {
				msgs := ev.Snapshot.Messages
				if calls := msgs[len(msgs)-1].ToolCalls; len(calls) == 1 && calls[0].Status == protocol.ToolCallRunning {
					released = true
					close(gate)
				}
			}
		}
		if !released {
			t.Fatalf("no snapshot showed the call running:\n%s", raw)
		}
		evs := decodeStream(t, raw)
		statuses := callStatuses(evs)
		last := -1
		order := map[string]int{"": 0, protocol.ToolCallPending: 1, protocol.ToolCallRunning: 2, protocol.ToolCallComplete: 3}
		for _, s := range statuses {
			if order[s] < last {
				t.Fatalf("tool call status went back: %v", statuses)
			}
			last = order[s]
		}
		r := result{status: resp.StatusCode, events: evs, raw: raw}
		term := r.terminal(t)
		if term.Status != protocol.StatusComplete || statuses[len(statuses)-1] != protocol.ToolCallComplete {
			t.Fatalf("terminal %+v, statuses %v", term, statuses)
		}
		stored, err := e.store.FindTurn(context.Background(), "s", "t1", alice)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := messagesJSON(t, stored.Messages), messagesJSON(t, term.Messages); got != want {
			t.Fatalf("stored %s\nterminal %s", got, want)
		}
		if len(stored.Artifacts) != 1 || stored.Artifacts[0].EntryPath != "notes/a.md" {
			t.Fatalf("artifacts %+v", stored.Artifacts)
		}
	})
}

func TestToolComponent(t *testing.T) {
	m := &stepModel{Steps: [][]model.Event{
		{{TextDelta: "Here."}, callEvent("c1", "chart", `{}`), usageEvent(1, 1)},
		{{TextDelta: "Done."}, usageEvent(1, 1)},
		{{TextDelta: "Again."}, usageEvent(1, 1)},
	}}
	e := toolEnv(t, newStoreMemory(), m, 4, nil)
	r := e.submit(t, "s", "t1", "chart it", nil, nil)
	r.want(t, http.StatusOK, "")
	term := r.terminal(t)
	content := term.Messages[1].Content
	dc, d := protocol.DecodeContent(content)
	if d != nil || !dc.Complete {
		t.Fatalf("content %q: %+v", content, d)
	}
	if len(dc.Parts) != 3 || dc.Parts[0].Text != "Here." || dc.Parts[1].Kind != protocol.ContentComponent ||
		dc.Parts[1].Frame.ComponentKey != "chart" || string(dc.Parts[1].Frame.Props) != `{"points":[1,2,3]}` || dc.Parts[2].Text != "\n\nDone." {
		t.Fatalf("parts %+v", dc.Parts)
	}
	if got := turn.PlainText(content); got != "Here.\n\nDone." {
		t.Fatalf("PlainText %q", got)
	}
	// The model never sees the envelope: the next turn's context carries
	// the plain text and the expanded tool round trip, in the order the
	// model wrote it: text, call, result, then the later text.
	e.submit(t, "s", "t2", "again", nil, nil).want(t, http.StatusOK, "")
	reqs := m.requests()
	ctx := reqs[len(reqs)-1].Messages
	if len(ctx) != 5 || ctx[1].Content != "Here." || len(ctx[1].ToolCalls) != 1 || ctx[2].Role != protocol.RoleTool || ctx[2].Content != "Chart drawn." ||
		ctx[3].Role != protocol.RoleAssistant || ctx[3].Content != "Done." || len(ctx[3].ToolCalls) != 0 || ctx[4].Content != "again" {
		t.Fatalf("next turn's model messages %s", messagesJSON(t, ctx))
	}
	for _, msg := range ctx {
		if strings.Contains(msg.Content, "\x1e") {
			t.Fatalf("model saw the content envelope: %q", msg.Content)
		}
	}
}

// TestToolCancelled: the turn deadline and the stop route cancel a
// running tool through its context; the call is stored as failed with the
// cancelled text, and the stream ends as the deadline or the stop says.
func TestToolCancelled(t *testing.T) {
	tests := map[string]struct {
		opt  func(*turn.Options)
		stop bool // POST /stop once the tool runs
		last func(r result) bool
	}{
		"deadline": {
			opt: func(o *turn.Options) { o.TurnTimeout, o.CleanupReserve = 400*time.Millisecond, 300*time.Millisecond },
			last: func(r result) bool {
				return r.last().Kind == protocol.EventDiagnostic && r.last().Diagnostic.Code == protocol.CodeServerTimeout
			},
		},
		"stop": {
			opt:  func(o *turn.Options) { o.RenewInterval = 100 * time.Millisecond },
			stop: true,
			last: func(r result) bool {
				s := r.last().Snapshot
				return s != nil && s.Status == protocol.StatusError && s.Error.Code == protocol.CodeTurnInterrupted
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			started, cancelled := make(chan struct{}, 1), make(chan struct{}, 1)
			reg := tool.NewRegistry(nil)
			// Without a Timeout of its own: only the turn ends it.
			if err := reg.Register(tool.Tool{
				Name: "slow", Description: "Blocks.", InputSchema: json.RawMessage(`{"type":"object"}`),
				Call: func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
					started <- struct{}{}
					<-ctx.Done()
					cancelled <- struct{}{}
					return tool.Result{}, ctx.Err()
				},
			}); err != nil {
				t.Fatal(err)
			}
			res, err := definition.New([]definition.Definition{{ID: "agent", Revision: 1, Provider: config.ProviderEcho, Tools: []string{"slow"}, Limits: definition.Limits{MaxSteps: 2}}}, "agent", reg.Has)
			if err != nil {
				t.Fatal(err)
			}
			m := &stepModel{Steps: [][]model.Event{{callEvent("c1", "slow", `{}`)}}}
			e := newEnv(t, newStoreMemory(), &scriptModel{}, func(o *turn.Options) {
				o.Model, o.Definitions, o.Tools = nil, res, reg
				o.Models = map[string]model.Model{config.ProviderEcho: m}
				tc.opt(o)
			})
			resp := e.post(t, context.Background(), "/", submitBody(t, "s", "t1", "wait", nil), nil)
			<-started
			if tc.stop {
				readResult(t, e.post(t, context.Background(), "/stop", []byte(`{"sessionId":"s","turnId":"t1"}`), nil)).want(t, http.StatusAccepted, "")
			}
			r := readResult(t, resp)
			r.want(t, http.StatusOK, "")
			if !tc.last(r) {
				t.Fatalf("stream %s", r.raw)
			}
			select {
			case <-cancelled:
			default:
				t.Fatal("the tool's context was not cancelled")
			}
			stored, err := e.store.FindTurn(context.Background(), "s", "t1", alice)
			if err != nil {
				t.Fatal(err)
			}
			calls := stored.Messages[1].ToolCalls
			if len(calls) != 1 || calls[0].Status != protocol.ToolCallError || calls[0].Error == nil || *calls[0].Error != "Tool call was cancelled." {
				t.Fatalf("stored calls %+v", calls)
			}
		})
	}
}

// TestEchoNote runs the echo model's /note command through the handler
// with the real demo tool: statuses only move forward and end complete,
// the usage is the sum of both echo calls, the artifact reference is on
// the stored turn and the stored messages are the terminal snapshot's.
func TestEchoNote(t *testing.T) {
	forEachStore(t, func(t *testing.T, newStore func(testing.TB) chat.Store) {
		reg := tool.NewRegistry(nil)
		if err := reg.Register(tool.WorkspaceNote()); err != nil {
			t.Fatal(err)
		}
		res, err := definition.New([]definition.Definition{{ID: "agent", Revision: 1, Provider: config.ProviderEcho,
			Tools: []string{echo.NoteToolName}, Limits: definition.Limits{MaxSteps: 2}}}, "agent", reg.Has)
		if err != nil {
			t.Fatal(err)
		}
		e := newEnv(t, newStore(t), &scriptModel{}, func(o *turn.Options) {
			o.Model, o.Definitions, o.Tools = nil, res, reg
			o.Models = map[string]model.Model{config.ProviderEcho: echo.New(0, 4)}
		})
		const input = "/note Trip plan: Pack light."
		r := e.submit(t, "s", "t1", input, nil, nil)
		r.want(t, http.StatusOK, "")
		term := r.terminal(t)
		asst := term.Messages[1]
		if term.Status != protocol.StatusComplete || asst.Content != echo.Prefix+input || len(asst.ToolCalls) != 1 ||
			asst.ToolCalls[0].ID != echo.NoteCallID || asst.ToolCalls[0].Status != protocol.ToolCallComplete {
			t.Fatalf("terminal %+v", term)
		}
		statuses := callStatuses(r.events)
		order := map[string]int{"": 0, protocol.ToolCallPending: 1, protocol.ToolCallRunning: 2, protocol.ToolCallComplete: 3}
		for i := 1; i < len(statuses); i++ {
			if order[statuses[i]] < order[statuses[i-1]] {
				t.Fatalf("tool call status went back: %v", statuses)
			}
		}
		user := protocol.Message{Role: protocol.RoleUser, Content: input}
		args := `{"title":"Trip plan","body":"Pack light."}`
		callID := echo.NoteCallID
		second := []protocol.Message{user, {Role: protocol.RoleAssistant}, {Role: protocol.RoleTool, Content: *asst.ToolCalls[0].Result, ToolCallID: &callID}}
		u1 := echo.Usage(model.Request{Messages: []protocol.Message{user}}, args)
		u2 := echo.Usage(model.Request{Messages: second}, echo.Prefix+input)
		want := protocol.Usage{PromptTokens: u1.PromptTokens + u2.PromptTokens, CompletionTokens: u1.CompletionTokens + u2.CompletionTokens, TotalTokens: u1.TotalTokens + u2.TotalTokens}
		if term.Usage != want {
			t.Errorf("usage %+v, want the sum of both calls %+v", term.Usage, want)
		}
		stored, err := e.store.FindTurn(context.Background(), "s", "t1", alice)
		if err != nil {
			t.Fatal(err)
		}
		if len(stored.Artifacts) != 1 || stored.Artifacts[0] != (chat.ArtifactReference{EntryPath: "notes/trip-plan.md", ArtifactType: chat.ArtifactDocument}) {
			t.Fatalf("stored artifacts %+v", stored.Artifacts)
		}
		if got, want := messagesJSON(t, stored.Messages), messagesJSON(t, term.Messages); got != want {
			t.Fatalf("stored %s\nterminal %s", got, want)
		}
	})
}

// TestUnencodableToolCall: a tool call from the model that cannot be part of a
// canonical record (docs/protocol.md#the-canonical-message-record: args nested
// past MaxRecordDepth, a non-finite number, an over-long key, an empty name)
// ends the turn as MODEL_FAILED with a terminal snapshot, and the stored turn
// is a valid record. Without the check every snapshot of the turn failed to
// encode: the stream ended in SERVER_INTERNAL while the turn was saved,
// unencodable, as complete.
func TestUnencodableToolCall(t *testing.T) {
	thousand := `{"a":[0` + strings.Repeat(`,0`, 999) + `]}`
	tests := map[string]struct {
		name, args string
		calls      int // the model asks for the call this many times; 0 means 1
	}{
		"args too deep":   {name: "x", args: `{"a":` + strings.Repeat(`[`, 40) + strings.Repeat(`]`, 40) + `}`},
		"infinite number": {name: "x", args: `{"a":1e400}`},
		"key too long":    {name: "x", args: `{"` + strings.Repeat("k", 300) + `":1}`},
		"empty tool name": {name: "", args: `{}`},
		"calls together past the record's values": {name: "x", args: thousand, calls: 11},
		"valid call stays":                        {name: "x", args: `{"a":[1,2]}`},
		"valid calls stay":                        {name: "x", args: thousand, calls: 9},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			reg := tool.NewRegistry(nil)
			res, err := definition.New([]definition.Definition{{ID: "agent", Revision: 1, Provider: config.ProviderEcho, Limits: definition.Limits{MaxSteps: 1}}}, "agent", reg.Has)
			if err != nil {
				t.Fatal(err)
			}
			step := []model.Event{{TextDelta: "calling"}}
			for i := range max(tc.calls, 1) {
				step = append(step, callEvent(fmt.Sprintf("c%d", i+1), tc.name, tc.args))
			}
			m := &stepModel{Steps: [][]model.Event{step}}
			e := newEnv(t, newStoreMemory(), &scriptModel{}, func(o *turn.Options) {
				o.Model, o.Definitions, o.Tools = nil, res, reg
				o.Models = map[string]model.Model{config.ProviderEcho: m}
			})
			r := e.submit(t, "s", "t1", "go", nil, nil)
			r.want(t, http.StatusOK, "")
			if r.last().Kind != protocol.EventSnapshot {
				t.Fatalf("the stream does not end with a terminal snapshot: %s", r.raw)
			}
			term := r.terminal(t)
			valid := strings.HasPrefix(name, "valid")
			if valid != (term.Error == nil) || !valid && term.Error.Code != protocol.CodeModelFailed {
				t.Fatalf("terminal %+v", term)
			}
			stored, err := e.store.FindTurn(context.Background(), "s", "t1", alice)
			if err != nil {
				t.Fatal(err)
			}
			if err := protocol.ValidateMessages(stored.Messages); err != nil {
				t.Fatalf("stored messages are not a valid record: %v", err)
			}
			if messagesJSON(t, stored.Messages) != messagesJSON(t, term.Messages) {
				t.Fatalf("stored %s, terminal %s", messagesJSON(t, stored.Messages), messagesJSON(t, term.Messages))
			}
		})
	}
}
