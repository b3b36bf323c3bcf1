package modeltest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"testing"

	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// Harness is a provider under the conformance suite.
type Harness struct {
	// New returns the provider, answering its calls with replies in order
	// when Scripted. The request's ModelID is ModelID.
	New func(t *testing.T, replies ...Reply) model.Model
	// ModelID is the model id the provider is called with.
	ModelID string
	// Scripted reports whether the provider answers with the replies given
	// to New (the fakes); the cases about model output run only then.
	Scripted bool
	// Expect returns what the provider answers req with when its script
	// says r; nil means r itself (a scripted provider).
	Expect func(req model.Request, r Reply) Reply
}

// noteSpec is the tool the suite offers.
var noteSpec = model.ToolSpec{
	Name:        "workspace_note",
	Description: "Save a note.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"}},"required":["title"]}`),
}

func str(s string) *string { return &s }

const createdAt = "2026-01-02T03:04:05.006Z"

func user(text string) protocol.Message {
	return protocol.Message{Role: protocol.RoleUser, Content: text, Status: protocol.MessageComplete, CreatedAt: createdAt}
}

func assistant(text string, calls ...protocol.ToolCall) protocol.Message {
	return protocol.Message{Role: protocol.RoleAssistant, Content: text, Status: protocol.MessageComplete, CreatedAt: createdAt, ToolCalls: calls}
}

func result(id, text string, failed bool) protocol.Message {
	st := protocol.MessageComplete
	if failed {
		st = protocol.MessageError
	}
	return protocol.Message{Role: protocol.RoleTool, Content: text, Status: st, CreatedAt: createdAt, ToolCallID: str(id)}
}

func done(id, args, res string) protocol.ToolCall {
	return protocol.ToolCall{ID: id, Name: noteSpec.Name, Args: json.RawMessage(args), Status: protocol.ToolCallComplete, Result: str(res)}
}

func failed(id, args, msg string) protocol.ToolCall {
	return protocol.ToolCall{ID: id, Name: noteSpec.Name, Args: json.RawMessage(args), Status: protocol.ToolCallError, Error: str(msg)}
}

// Histories are the stored conversations the suite sends, each followed
// by a new user message, with and without tools offered. Each is a shape
// a turnstream session can hold (or, for the last few, one that an older
// version or another provider could have written).
func Histories() map[string][]protocol.Message {
	note := `{"title":"Trip"}`
	return map[string][]protocol.Message{
		"no tools": {user("Hello"), assistant("Hi.")},
		"answered exchange": {user("Save it"), assistant("Saving.", done("c1", note, "Saved.")), result("c1", "Saved.", false),
			assistant("Done.")},
		"stored calls without tool messages": {user("Save it"),
			assistant("Saving.", done("c1", note, "Saved."), failed("c2", `{}`, "Arguments are invalid: /: required (missing title)."),
				protocol.ToolCall{ID: "c3", Name: noteSpec.Name, Args: json.RawMessage(note), Status: protocol.ToolCallRunning})},
		"two rounds then text": {user("Save twice"), assistant("First.", done("c1", note, "Saved.")), result("c1", "Saved.", false),
			assistant("Second.", done("c2", note, "Saved again.")), result("c2", "Saved again.", false), assistant("Both saved.")},
		"calls without text":    {user("Save it"), assistant("", done("c1", note, "Saved.")), result("c1", "Saved.", false), assistant("Done.")},
		"blank text with calls": {user("Save it"), assistant(" \n ", done("c1", note, "Saved.")), result("c1", "Saved.", false), assistant("Done.")},
		"empty result":          {user("Save it"), assistant("Saving.", done("c1", note, "")), result("c1", "", false), assistant("Done.")},
		"failed calls": {user("Save it"), assistant("Saving.", failed("c1", `{}`, "Arguments are invalid: a JSON array, not a JSON object."),
			failed("c2", `{}`, "Tool is not available.")), result("c1", "Arguments are invalid: a JSON array, not a JSON object.", true),
			result("c2", "Tool is not available.", true), assistant("Sorry.")},
		"duplicate ids in one message": {user("Save two"), assistant("Saving.", done("dup", note, "One."), done("dup", note, "Two.")),
			result("dup", "One.", false), result("dup", "Two.", false), assistant("Done.")},
		"same id in two turns": {user("Save it"), assistant("Saving.", done("echo-note-1", note, "Saved.")), result("echo-note-1", "Saved.", false),
			user("Again"), assistant("Saving.", done("echo-note-1", note, "Saved.")), result("echo-note-1", "Saved.", false)},
		"empty and foreign ids": {user("Save it"), assistant("Saving.", done("", note, "One."), done("functions.workspace_note:0", note, "Two."),
			done("call_1", note, "Three.")), result("", "One.", false), result("functions.workspace_note:0", "Two.", false), result("call_1", "Three.", false)},
		"arguments not an object": {user("Save it"), assistant("Saving.", failed("c1", `[1,2]`, "Arguments are invalid."),
			failed("c2", `not json`, "Arguments are invalid.")), result("c1", "Arguments are invalid.", true), result("c2", "Arguments are invalid.", true)},
		"orphan tool message": {user("Hello"), result("ghost", "Nobody asked.", false), assistant("Hi.")},
		"results out of order": {user("Save two"), assistant("Saving.", done("a", note, "A."), done("b", note, "B.")),
			result("b", "B.", false), result("a", "A.", false)},
	}
}

// Run runs the conformance suite against h.
func Run(t *testing.T, h Harness) {
	expect := h.Expect
	if expect == nil {
		expect = func(_ model.Request, r Reply) Reply { return r }
	}
	for name, hist := range Histories() {
		for _, offered := range []bool{true, false} {
			label := name + "/tools offered"
			if !offered {
				label = name + "/no tools"
			}
			t.Run("history/"+label, func(t *testing.T) {
				req := model.Request{ModelID: h.ModelID, System: "Be brief.", Messages: append(append([]protocol.Message(nil), hist...), user("What now?"))}
				if offered {
					req.Tools = []model.ToolSpec{noteSpec}
				}
				r := Reply{Text: "All good."}
				m := h.New(t, r)
				check(t, m, req, expect(req, r))
			})
		}
	}
	if !h.Scripted {
		return
	}
	outputs := map[string]Reply{
		"text then calls": {Text: "Saving.", Calls: []Call{{ID: "c1", Name: noteSpec.Name, Args: `{"title":"Trip"}`}}},
		"arguments not an object": {Calls: []Call{
			{ID: "c1", Name: noteSpec.Name, Args: `[1,2]`},
			{ID: "c2", Name: noteSpec.Name, Args: `"title=Trip"`},
			{ID: "c3", Name: noteSpec.Name, Args: `3`},
			{ID: "c4", Name: noteSpec.Name, Args: `{"title":`},
			{ID: "c5", Name: noteSpec.Name, Args: ``},
		}},
		"duplicate ids": {Calls: []Call{{ID: "dup", Name: noteSpec.Name, Args: `{"title":"A"}`}, {ID: "dup", Name: noteSpec.Name, Args: `{"title":"B"}`}}},
	}
	for name, r := range outputs {
		t.Run("output/"+name, func(t *testing.T) {
			req := model.Request{ModelID: h.ModelID, Messages: []protocol.Message{user("Save it")}, Tools: []model.ToolSpec{noteSpec}}
			check(t, h.New(t, r), req, expect(req, r))
		})
	}
}

// check streams req and compares the events with want: the text joined,
// each call (ID, Name and Args; empty Args read as "{}"), and the finish
// reason.
func check(t *testing.T, m model.Model, req model.Request, want Reply) {
	t.Helper()
	st, err := m.Stream(context.Background(), req)
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	defer func() { _ = st.Close() }()
	var (
		text   string
		calls  []Call
		finish model.FinishReason
	)
	for {
		ev, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("Recv: %v", err)
		}
		text += ev.TextDelta
		if tc := ev.ToolCall; tc != nil {
			calls = append(calls, Call{ID: tc.ID, Name: tc.Name, Args: string(tc.Args)})
		}
		if ev.FinishReason != "" {
			finish = ev.FinishReason
		}
	}
	wantCalls := append([]Call(nil), want.Calls...)
	for i := range wantCalls {
		if wantCalls[i].Args == "" {
			wantCalls[i].Args = "{}"
		}
	}
	wantFinish := model.FinishStop
	if len(want.Calls) > 0 {
		wantFinish = model.FinishToolUse
	}
	if text != want.Text || !reflect.DeepEqual(calls, wantCalls) || finish != wantFinish {
		t.Fatalf("got text %q, calls %+v, finish %q; want %q, %+v, %q", text, calls, finish, want.Text, wantCalls, wantFinish)
	}
}
