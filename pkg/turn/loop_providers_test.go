package turn_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/definition"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/model/modeltest"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/sessionapi"
	"github.com/turnstream/turnstream/pkg/tool"
	"github.com/turnstream/turnstream/pkg/turn"
)

// fakeProvider is a real provider client pointed at a local fake server
// that enforces its API's validation rules (pkg/model/modeltest).
type fakeProvider struct {
	name    string // the definition's provider
	modelID string
	model   model.Model
	server  interface {
		Add(...modeltest.Reply)
		Transcripts() [][]string
	}
}

// forEachFakeProvider runs f as a subtest per fake provider, each
// answering with replies.
func forEachFakeProvider(t *testing.T, replies []modeltest.Reply, f func(t *testing.T, p fakeProvider)) {
	t.Helper()
	t.Run("bedrock", func(t *testing.T) {
		s := modeltest.NewBedrock(t, replies...)
		f(t, fakeProvider{name: config.ProviderBedrock, modelID: modeltest.BedrockModelID, model: s.Model(), server: s})
	})
	t.Run("openai", func(t *testing.T) {
		s := modeltest.NewOpenAI(t, replies...)
		f(t, fakeProvider{name: config.ProviderOpenAI, modelID: modeltest.OpenAIModelID, model: s.Model(), server: s})
	})
}

// providerEnv serves a handler whose one definition "agent", at
// revision, runs p with the tools named (of toolRegistry) and maxSteps.
func providerEnv(t *testing.T, store chat.Store, p fakeProvider, revision int64, tools []string, maxSteps int) *env {
	t.Helper()
	return registryEnv(t, store, p, toolRegistry(t), definition.Definition{
		Revision: revision, Tools: tools, Limits: definition.Limits{MaxSteps: maxSteps},
	})
}

// registryEnv serves a handler whose one definition "agent" is d (its id,
// provider, model and system prompt set here) on p, with the tools of reg.
func registryEnv(t *testing.T, store chat.Store, p fakeProvider, reg *tool.Registry, d definition.Definition) *env {
	t.Helper()
	d.ID, d.Provider, d.ModelID, d.SystemPrompt = "agent", p.name, p.modelID, "Use tools."
	res, err := definition.New([]definition.Definition{d}, "agent", reg.Has)
	if err != nil {
		t.Fatal(err)
	}
	return newEnv(t, store, &scriptModel{}, func(o *turn.Options) {
		o.Model, o.Definition = nil, turn.Definition{}
		o.Definitions, o.Tools = res, reg
		o.Models = map[string]model.Model{p.name: p.model}
	})
}

// historyMessages returns the session's messages as the history function
// serves them, oldest first.
func historyMessages(t *testing.T, e *env, sessionID string) []protocol.Message {
	t.Helper()
	h, err := sessionapi.NewHistoryHandler(sessionapi.Options{Store: e.store, Authenticator: e.auth, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/sessions/"+sessionID+"/messages?order=asc&limit=100", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("history: %d %s", rec.Code, rec.Body)
	}
	var page struct {
		Messages []protocol.Message `json:"messages"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil {
		t.Fatal(err)
	}
	return page.Messages
}

// withoutArtifacts returns m without the "artifacts" metadata member the
// history function adds to assistant messages.
func withoutArtifacts(t *testing.T, m protocol.Message) protocol.Message {
	t.Helper()
	if len(m.Metadata) == 0 {
		return m
	}
	var meta map[string]json.RawMessage
	if err := json.Unmarshal(m.Metadata, &meta); err != nil {
		t.Fatal(err)
	}
	delete(meta, "artifacts")
	m.Metadata = nil
	if len(meta) > 0 {
		b, err := json.Marshal(meta)
		if err != nil {
			t.Fatal(err)
		}
		m.Metadata = b
	}
	return m
}

// agree checks that the terminal snapshot, the stored turn and the
// history function hold the same messages for turn turnID, and that every
// snapshot of the stream that shows one of its calls failed shows the
// terminal snapshot's error text for it.
func agree(t *testing.T, e *env, r result, sessionID, turnID string) *protocol.SnapshotPayload {
	t.Helper()
	term := r.terminal(t)
	stored, err := e.store.FindTurn(context.Background(), sessionID, turnID, alice)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := messagesJSON(t, stored.Messages), messagesJSON(t, term.Messages[len(term.Messages)-2:]); got != want {
		t.Fatalf("stored turn %s\nterminal snapshot %s", got, want)
	}
	var inHistory []protocol.Message
	for _, m := range historyMessages(t, e, sessionID) {
		if strings.HasPrefix(m.ID, turnID+".") {
			inHistory = append(inHistory, withoutArtifacts(t, m))
		}
	}
	if got, want := messagesJSON(t, inHistory), messagesJSON(t, stored.Messages); got != want {
		t.Fatalf("history %s\nstored turn %s", got, want)
	}
	final := term.Messages[len(term.Messages)-1].ToolCalls
	for _, ev := range r.events {
		if ev.Kind != protocol.EventSnapshot {
			continue
		}
		msgs := ev.Snapshot.Messages
		for i, tc := range msgs[len(msgs)-1].ToolCalls {
			if tc.Status != protocol.ToolCallError {
				continue
			}
			if i >= len(final) || final[i].ID != tc.ID || final[i].Status != protocol.ToolCallError || *final[i].Error != *tc.Error {
				t.Fatalf("snapshot %d shows call %d as %+v; the terminal snapshot has %+v", ev.Sequence, i, tc, final)
			}
		}
	}
	return term
}

// callTexts returns "id status text" per tool call.
func callTexts(calls []protocol.ToolCall) []string {
	var out []string
	for _, tc := range calls {
		text := ""
		switch {
		case tc.Error != nil:
			text = *tc.Error
		case tc.Result != nil:
			text = *tc.Result
		}
		out = append(out, tc.ID+" "+tc.Status+" "+string(tc.Args)+" "+text)
	}
	return out
}

func wantLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n got  %q\n want %q", what, got, want)
	}
}

// TestLoopArgumentsNotObject: calls whose arguments are not a JSON object
// (an array, a string, a number, text that is not JSON) or break the
// tool's schema are recorded as failed with a text that says why, the
// model reads each failure as that call's result, and the turn goes on;
// the step limit still ends a model that keeps sending them.
func TestLoopArgumentsNotObject(t *testing.T) {
	note := modeltest.Call{Name: tool.WorkspaceNoteName}
	bad := func(id, args string) modeltest.Call { c := note; c.ID, c.Args = id, args; return c }
	replies := []modeltest.Reply{
		{Text: "Saving.", Calls: []modeltest.Call{bad("c1", `[1,2]`), bad("c2", `"title=Trip"`), bad("c3", `42`),
			bad("c4", `{"title":`), bad("c5", `{"title":""}`), bad("c6", `{"title":"Trip","body":"Pack."}`)}},
		{Text: "Saved one."},
		// The second turn: a model that never stops sending bad arguments.
		{Calls: []modeltest.Call{bad("d1", `[1]`)}},
		{Calls: []modeltest.Call{bad("d2", `[2]`)}},
	}
	forEachStore(t, func(t *testing.T, newStore func(testing.TB) chat.Store) {
		forEachFakeProvider(t, replies, func(t *testing.T, p fakeProvider) {
			argumentsNotObject(t, providerEnv(t, newStore(t), p, 1, []string{tool.WorkspaceNoteName}, 2), p)
		})
	})
}

// argumentsNotObject is TestLoopArgumentsNotObject on one store and provider.
func argumentsNotObject(t *testing.T, e *env, p fakeProvider) {
	r := e.submit(t, "s", "t1", "Save my trip", nil, nil)
	r.want(t, http.StatusOK, "")
	term := agree(t, e, r, "s", "t1")
	if term.Status != protocol.StatusComplete {
		t.Fatalf("terminal %+v", term)
	}
	asst := term.Messages[1]
	if asst.Content != "Saving.\n\nSaved one." {
		t.Errorf("content %q", asst.Content)
	}
	wantLines(t, "stored calls", callTexts(asst.ToolCalls), []string{
		"c1 error {} Arguments are invalid: a JSON array, not a JSON object.",
		"c2 error {} Arguments are invalid: a JSON string, not a JSON object.",
		"c3 error {} Arguments are invalid: a JSON number, not a JSON object.",
		"c4 error {} Arguments are invalid: not valid JSON; send one JSON object.",
		`c5 error {"title":""} Arguments are invalid: /: required (missing body); /title: minLength.`,
		`c6 complete {"title":"Trip","body":"Pack."} Saved note "notes/trip.md" (5 characters).`,
	})
	wantLines(t, "second model request", p.server.Transcripts()[1], []string{
		"user: Save my trip",
		"assistant: Saving.",
		"call c1 workspace_note {}", "call c2 workspace_note {}", "call c3 workspace_note {}", "call c4 workspace_note {}",
		`call c5 workspace_note {"title":""}`, `call c6 workspace_note {"body":"Pack.","title":"Trip"}`,
		"result c1: Error: Arguments are invalid: a JSON array, not a JSON object.",
		"result c2: Error: Arguments are invalid: a JSON string, not a JSON object.",
		"result c3: Error: Arguments are invalid: a JSON number, not a JSON object.",
		"result c4: Error: Arguments are invalid: not valid JSON; send one JSON object.",
		"result c5: Error: Arguments are invalid: /: required (missing body); /title: minLength.",
		`result c6: Saved note "notes/trip.md" (5 characters).`,
	})

	r = e.submit(t, "s", "t2", "Again", nil, nil)
	r.want(t, http.StatusOK, "")
	term = agree(t, e, r, "s", "t2")
	if term.Status != protocol.StatusComplete {
		t.Fatalf("terminal %+v", term)
	}
	wantLines(t, "step-limited calls", callTexts(term.Messages[len(term.Messages)-1].ToolCalls), []string{
		"d1 error {} Arguments are invalid: a JSON array, not a JSON object.",
		"d2 error {} " + turn.TextStepLimit,
	})
	if n := len(p.server.Transcripts()); n != 4 {
		t.Fatalf("%d model calls, want 4 (two per turn)", n)
	}
}

// TestLoopDuplicateCallIDs: a call whose id repeats an earlier call's of
// the same model call is recorded as failed under a new id and does not
// run (no notes/b.md); an id that comes back in a later model call, or
// none, only gets a new id. Every request pairs each result with its own
// call.
func TestLoopDuplicateCallIDs(t *testing.T) {
	call := func(id, title string) modeltest.Call {
		return modeltest.Call{ID: id, Name: tool.WorkspaceNoteName, Args: `{"title":"` + title + `","body":"b"}`}
	}
	replies := []modeltest.Reply{
		{Text: "Two notes.", Calls: []modeltest.Call{call("dup", "A"), call("dup", "B")}},
		{Calls: []modeltest.Call{call("dup", "C"), call("", "D")}},
		{Text: "Done."},
		{Text: "Still here."},
	}
	forEachFakeProvider(t, replies, func(t *testing.T, p fakeProvider) {
		e := providerEnv(t, newStoreMemory(), p, 1, []string{tool.WorkspaceNoteName}, 4)
		r := e.submit(t, "s", "t1", "Notes please", nil, nil)
		r.want(t, http.StatusOK, "")
		term := agree(t, e, r, "s", "t1")
		wantLines(t, "recorded calls", callTexts(term.Messages[1].ToolCalls), []string{
			`dup complete {"title":"A","body":"b"} Saved note "notes/a.md" (1 characters).`,
			`call-1-2 error {"title":"B","body":"b"} ` + turn.TextRepeatedCallID,
			`call-2-1 complete {"title":"C","body":"b"} Saved note "notes/c.md" (1 characters).`,
			`call-2-2 complete {"title":"D","body":"b"} Saved note "notes/d.md" (1 characters).`,
		})
		stored, err := e.store.FindTurn(context.Background(), "s", "t1", alice)
		if err != nil {
			t.Fatal(err)
		}
		var saved []string
		for _, a := range stored.Artifacts {
			saved = append(saved, a.EntryPath)
		}
		wantLines(t, "artifacts", saved, []string{"notes/a.md", "notes/c.md", "notes/d.md"})
		tr := p.server.Transcripts()
		wantLines(t, "third model request", tr[2], []string{
			"user: Notes please",
			"assistant: Two notes.",
			`call dup workspace_note {"body":"b","title":"A"}`, `call call-1-2 workspace_note {"body":"b","title":"B"}`,
			`result dup: Saved note "notes/a.md" (1 characters).`, `result call-1-2: Error: ` + turn.TextRepeatedCallID,
			`call call-2-1 workspace_note {"body":"b","title":"C"}`, `call call-2-2 workspace_note {"body":"b","title":"D"}`,
			`result call-2-1: Saved note "notes/c.md" (1 characters).`, `result call-2-2: Saved note "notes/d.md" (1 characters).`,
		})
		e.submit(t, "s", "t2", "Thanks", nil, nil).want(t, http.StatusOK, "")
		wantLines(t, "next turn's request", p.server.Transcripts()[3], append(append([]string(nil), tr[2]...), "assistant: Done.", "user: Thanks"))
	})
}

// TestLoopRepeatedCallIDRunsOnce: a model response that sends one call
// twice (the same id) runs the tool once, whether the call would run at
// once or wait for approval; the repeat is a failed call, also at the
// step limit, and a call without id still runs.
func TestLoopRepeatedCallIDRunsOnce(t *testing.T) {
	call := func(id, name string) modeltest.Call { return modeltest.Call{ID: id, Name: name, Args: `{}`} }
	replies := []modeltest.Reply{
		{Calls: []modeltest.Call{call("x", "tally"), call("x", "tally"), call("", "tally"), call("x", "tally")}},
		{Text: "Counted."},
		{Calls: []modeltest.Call{call("y", "guarded"), call("y", "guarded")}},
		{Calls: []modeltest.Call{call("z", "tally"), call("z", "tally")}},
		{Calls: []modeltest.Call{call("w", "tally"), call("w", "tally")}},
	}
	forEachFakeProvider(t, replies, func(t *testing.T, p fakeProvider) {
		var tallies, guarded atomic.Int32
		reg := toolRegistry(t)
		for _, tl := range []tool.Tool{
			{Name: "tally", Description: "Counts its runs.", InputSchema: json.RawMessage(`{"type":"object"}`),
				Call: func(context.Context, json.RawMessage) (tool.Result, error) {
					return tool.Result{Text: fmt.Sprintf("Run %d.", tallies.Add(1))}, nil
				}},
			{Name: "guarded", Description: "Counts its runs, once approved.", InputSchema: json.RawMessage(`{"type":"object"}`),
				Call: func(context.Context, json.RawMessage) (tool.Result, error) {
					guarded.Add(1)
					return tool.Result{Text: "Ran."}, nil
				}},
		} {
			if err := reg.Register(tl); err != nil {
				t.Fatal(err)
			}
		}
		e := registryEnv(t, newStoreMemory(), p, reg, definition.Definition{
			Revision: 1, Tools: []string{"tally", "guarded"}, ApprovalTools: []string{"guarded"},
			Limits: definition.Limits{MaxSteps: 2},
		})
		r := e.submit(t, "s", "t1", "Count", nil, nil)
		r.want(t, http.StatusOK, "")
		term := agree(t, e, r, "s", "t1")
		wantLines(t, "t1 calls", callTexts(term.Messages[1].ToolCalls), []string{
			"x complete {} Run 1.",
			"call-1-2 error {} " + turn.TextRepeatedCallID,
			"call-1-3 complete {} Run 2.",
			"call-1-4 error {} " + turn.TextRepeatedCallID,
		})
		if n := tallies.Load(); n != 2 {
			t.Fatalf("tally ran %d times, want 2", n)
		}

		r = e.submit(t, "s", "t2", "Guarded", nil, nil)
		r.want(t, http.StatusOK, "")
		term = agree(t, e, r, "s", "t2")
		last := term.Messages[len(term.Messages)-1].ToolCalls
		wantLines(t, "t2 statuses", []string{last[0].ID + " " + last[0].Status, last[1].ID + " " + last[1].Status},
			[]string{"y " + protocol.ToolCallRequiresConfirmation, "call-1-2 " + protocol.ToolCallError})
		if last[1].Error == nil || *last[1].Error != turn.TextRepeatedCallID {
			t.Fatalf("repeated guarded call %+v", last[1])
		}
		if n := guarded.Load(); n != 0 {
			t.Fatalf("guarded ran %d times before any approval", n)
		}

		r = e.submit(t, "s", "t3", "Count to the limit", nil, nil)
		r.want(t, http.StatusOK, "")
		term = agree(t, e, r, "s", "t3")
		wantLines(t, "t3 calls", callTexts(term.Messages[len(term.Messages)-1].ToolCalls), []string{
			"z complete {} Run 3.",
			"call-1-2 error {} " + turn.TextRepeatedCallID,
			"w error {} " + turn.TextStepLimit,
			"call-2-2 error {} " + turn.TextRepeatedCallID,
		})
		if n := tallies.Load(); n != 3 {
			t.Fatalf("tally ran %d times, want 3", n)
		}
	})
}

// TestLoopDefinitionLosesTools: a session whose history has tool
// exchanges goes through definition revisions from tools to none and
// back. Without tools the request carries no tool blocks, tool messages
// or tool specs (Bedrock rejects tool blocks without a toolConfig), the
// earlier exchanges written into the assistant text instead; with tools
// again they are structured again. Text the model wrote after the tool
// results comes after them every time.
func TestLoopDefinitionLosesTools(t *testing.T) {
	replies := []modeltest.Reply{
		{Text: "Saving.", Calls: []modeltest.Call{{ID: "c1", Name: tool.WorkspaceNoteName, Args: `{"title":"Trip","body":"Pack."}`}}},
		{Text: "Saved it."},
		{Text: "No tools now."},
		{Text: "Tools again."},
	}
	forEachStore(t, func(t *testing.T, newStore func(testing.TB) chat.Store) {
		forEachFakeProvider(t, replies, func(t *testing.T, p fakeProvider) { definitionLosesTools(t, newStore(t), p) })
	})
}

// definitionLosesTools is TestLoopDefinitionLosesTools on one store and provider.
func definitionLosesTools(t *testing.T, store chat.Store, p fakeProvider) {
	withTools := providerEnv(t, store, p, 1, []string{tool.WorkspaceNoteName}, 4)
	r := withTools.submit(t, "s", "t1", "Save my trip", nil, nil)
	r.want(t, http.StatusOK, "")
	agree(t, withTools, r, "s", "t1")

	none := providerEnv(t, store, p, 2, nil, 4)
	r = none.submit(t, "s", "t2", "Anything else?", nil, nil)
	r.want(t, http.StatusOK, "")
	if term := agree(t, none, r, "s", "t2"); term.Status != protocol.StatusComplete || term.Messages[len(term.Messages)-1].Content != "No tools now." {
		t.Fatalf("terminal %+v", term)
	}
	wantLines(t, "request without tools", p.server.Transcripts()[2], []string{
		"user: Save my trip",
		`assistant: Saving.\n\n[Tool call workspace_note {"title":"Trip","body":"Pack."}]\n[Tool result: Saved note "notes/trip.md" (5 characters).]\n\nSaved it.`,
		"user: Anything else?",
	})

	again := providerEnv(t, store, p, 3, []string{tool.WorkspaceNoteName}, 4)
	r = again.submit(t, "s", "t3", "Once more", nil, nil)
	r.want(t, http.StatusOK, "")
	agree(t, again, r, "s", "t3")
	wantLines(t, "request with tools again", p.server.Transcripts()[3], []string{
		"user: Save my trip",
		"assistant: Saving.",
		`call c1 workspace_note {"body":"Pack.","title":"Trip"}`,
		`result c1: Saved note "notes/trip.md" (5 characters).`,
		"assistant: Saved it.",
		"user: Anything else?",
		"assistant: No tools now.",
		"user: Once more",
	})
}

// TestLoopCallWithoutTools: a model that asks for a tool although its
// definition offers none gets "Tool is not available." as the result,
// and the next model call, still offering no tools, carries the exchange
// as text.
func TestLoopCallWithoutTools(t *testing.T) {
	replies := []modeltest.Reply{
		{Text: "Let me look.", Calls: []modeltest.Call{{ID: "x1", Name: "lookup", Args: `{"q":"weather"}`}}},
		{Text: "I cannot look that up."},
	}
	forEachFakeProvider(t, replies, func(t *testing.T, p fakeProvider) {
		e := providerEnv(t, newStoreMemory(), p, 1, nil, 4)
		r := e.submit(t, "s", "t1", "Weather?", nil, nil)
		r.want(t, http.StatusOK, "")
		term := agree(t, e, r, "s", "t1")
		wantLines(t, "stored calls", callTexts(term.Messages[1].ToolCalls), []string{`x1 error {"q":"weather"} Tool is not available.`})
		wantLines(t, "second model request", p.server.Transcripts()[1], []string{
			"user: Weather?",
			`assistant: Let me look.\n\n[Tool call lookup {"q":"weather"}]\n[Tool error: Tool is not available.]`,
		})
	})
}

// TestLoopTextAfterResults: over several tool rounds, the next turn's
// request replays each round's text, calls and results in the order the
// model saw them within the turn.
func TestLoopTextAfterResults(t *testing.T) {
	note := func(id, title string) modeltest.Call {
		return modeltest.Call{ID: id, Name: tool.WorkspaceNoteName, Args: `{"title":"` + title + `","body":"b"}`}
	}
	replies := []modeltest.Reply{
		{Text: "First.", Calls: []modeltest.Call{note("c1", "A")}},
		{Calls: []modeltest.Call{note("c2", "B")}},
		{Text: "Third.", Calls: []modeltest.Call{note("c3", "C")}},
		{Text: "All done."},
		{Text: "Bye."},
	}
	forEachFakeProvider(t, replies, func(t *testing.T, p fakeProvider) {
		e := providerEnv(t, newStoreMemory(), p, 1, []string{tool.WorkspaceNoteName}, 4)
		r := e.submit(t, "s", "t1", "Three notes", nil, nil)
		r.want(t, http.StatusOK, "")
		term := agree(t, e, r, "s", "t1")
		if got := term.Messages[1].Content; got != "First.\n\nThird.\n\nAll done." {
			t.Fatalf("content %q", got)
		}
		e.submit(t, "s", "t2", "Thanks", nil, nil).want(t, http.StatusOK, "")
		tr := p.server.Transcripts()
		turn := []string{
			"user: Three notes",
			"assistant: First.", `call c1 workspace_note {"body":"b","title":"A"}`, `result c1: Saved note "notes/a.md" (1 characters).`,
			`call c2 workspace_note {"body":"b","title":"B"}`, `result c2: Saved note "notes/b.md" (1 characters).`,
			"assistant: Third.", `call c3 workspace_note {"body":"b","title":"C"}`, `result c3: Saved note "notes/c.md" (1 characters).`,
		}
		wantLines(t, "last model call of the turn", tr[3], turn)
		wantLines(t, "next turn", tr[4], append(append([]string(nil), turn...), "assistant: All done.", "user: Thanks"))
	})
}
