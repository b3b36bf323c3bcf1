package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"testing"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/tool"
)

// pagedTurns is a session's turns served as the store serves them:
// visible turns newest first, in pages. It counts the pages read.
type pagedTurns struct {
	turns []chat.Turn // newest first
	reads int
	err   error
}

func (p *pagedTurns) ListTurns(_ context.Context, req chat.ListRequest) (*chat.Page, error) {
	p.reads++
	if p.err != nil {
		return nil, p.err
	}
	if req.Order != chat.OrderDesc || req.SessionID != "s1" || req.Principal.Subject != "alice" {
		return nil, fmt.Errorf("unexpected request %+v", req)
	}
	from := 0
	if req.Cursor != "" {
		from, _ = strconv.Atoi(req.Cursor)
	}
	to := min(from+req.Limit, len(p.turns))
	page := &chat.Page{Turns: p.turns[from:to], HasMore: to < len(p.turns)}
	if page.HasMore {
		page.NextCursor = strconv.Itoa(to)
	}
	return page, nil
}

// noteTurn is a saved turn whose assistant message made one call of name
// with the title, ending in status.
func noteTurn(name, title, status string, artifacts ...string) chat.Turn {
	args, _ := json.Marshal(map[string]string{"title": title, "body": "b"})
	if name == tool.WorkspaceNoteDeleteName {
		args, _ = json.Marshal(map[string]string{"title": title})
	}
	t := chat.Turn{Messages: []protocol.Message{
		{Role: protocol.RoleUser, Content: "x"},
		{Role: protocol.RoleAssistant, ToolCalls: []protocol.ToolCall{{ID: "c", Name: name, Args: args, Status: status}}},
	}}
	for _, a := range artifacts {
		t.Artifacts = append(t.Artifacts, chat.ArtifactReference{EntryPath: a, ArtifactType: chat.ArtifactDocument})
	}
	return t
}

func plainTurn() chat.Turn {
	return chat.Turn{Messages: []protocol.Message{{Role: protocol.RoleUser, Content: "hi"}, {Role: protocol.RoleAssistant, Content: "Echo: hi"}}}
}

// TestWorkspaceNoteDelete: the tool says it deleted a note only when the
// session holds that note; a note never saved, already deleted, or saved
// by a call that failed is reported missing, and nothing is claimed when
// the session cannot be read.
func TestWorkspaceNoteDelete(t *testing.T) {
	const del = tool.WorkspaceNoteDeleteName
	const note = tool.WorkspaceNoteName
	many := make([]chat.Turn, 0, 250)
	for range 249 {
		many = append(many, plainTurn())
	}
	many = append(many, noteTurn(note, "Trip plan", protocol.ToolCallComplete, "notes/trip-plan.md"))
	tests := map[string]struct {
		turns   []chat.Turn // newest first
		listErr error
		noCall  bool
		status  string
		text    string
		reads   int
	}{
		"saved earlier": {turns: []chat.Turn{plainTurn(), noteTurn(note, "Trip plan", protocol.ToolCallComplete, "notes/trip-plan.md")},
			status: protocol.ToolCallComplete, text: `Deleted note "notes/trip-plan.md".`, reads: 1},
		"never saved": {turns: []chat.Turn{plainTurn(), noteTurn(note, "Groceries", protocol.ToolCallComplete, "notes/groceries.md")},
			status: protocol.ToolCallError, text: `There is no note "notes/trip-plan.md" in this conversation; nothing was deleted.`, reads: 1},
		"empty session": {status: protocol.ToolCallError, text: `There is no note "notes/trip-plan.md" in this conversation; nothing was deleted.`, reads: 1},
		"deleted already": {turns: []chat.Turn{noteTurn(del, "trip  PLAN", protocol.ToolCallComplete), noteTurn(note, "Trip plan", protocol.ToolCallComplete, "notes/trip-plan.md")},
			status: protocol.ToolCallError, text: `There is no note "notes/trip-plan.md" in this conversation; nothing was deleted.`, reads: 1},
		"saved again after a delete": {turns: []chat.Turn{noteTurn(note, "Trip plan", protocol.ToolCallComplete, "notes/trip-plan.md"), noteTurn(del, "Trip plan", protocol.ToolCallComplete)},
			status: protocol.ToolCallComplete, text: `Deleted note "notes/trip-plan.md".`, reads: 1},
		"a delete that waited or was denied": {turns: []chat.Turn{noteTurn(del, "Trip plan", protocol.ToolCallError), noteTurn(del, "Trip plan", protocol.ToolCallRequiresConfirmation),
			noteTurn(note, "Trip plan", protocol.ToolCallComplete, "notes/trip-plan.md")},
			status: protocol.ToolCallComplete, text: `Deleted note "notes/trip-plan.md".`, reads: 1},
		"a save that failed": {turns: []chat.Turn{noteTurn(note, "Trip plan", protocol.ToolCallError)},
			status: protocol.ToolCallError, text: `There is no note "notes/trip-plan.md" in this conversation; nothing was deleted.`, reads: 1},
		"recorded by the host": {turns: []chat.Turn{{Artifacts: []chat.ArtifactReference{{EntryPath: "notes/trip-plan.md", ArtifactType: chat.ArtifactDocument}}}},
			status: protocol.ToolCallComplete, text: `Deleted note "notes/trip-plan.md".`, reads: 1},
		"on the third page": {turns: many, status: protocol.ToolCallComplete, text: `Deleted note "notes/trip-plan.md".`, reads: 3},
		"the session cannot be read": {listErr: errors.New("boom"),
			status: protocol.ToolCallError, text: `Could not check whether note "notes/trip-plan.md" exists; nothing was deleted.`, reads: 1},
		"no session in the context": {noCall: true,
			status: protocol.ToolCallError, text: `Could not check whether note "notes/trip-plan.md" exists; nothing was deleted.`, reads: 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			store := &pagedTurns{turns: tc.turns, err: tc.listErr}
			r := newRegistry(t, tool.WorkspaceNoteDelete(tool.SessionNotes(store)))
			ctx := context.Background()
			if !tc.noCall {
				ctx = tool.WithCallInfo(ctx, tool.CallInfo{SessionID: "s1", TurnID: "t9", Principal: chat.Principal{Subject: "alice"}})
			}
			o := r.Run(ctx, model.ToolCall{ID: "c1", Name: tool.WorkspaceNoteDeleteName, Args: json.RawMessage(`{"title":"Trip plan"}`)})
			if o.Status != tc.status || o.Text != tc.text {
				t.Errorf("Run = %s %q, want %s %q", o.Status, o.Text, tc.status, tc.text)
			}
			if store.reads != tc.reads {
				t.Errorf("%d pages read, want %d", store.reads, tc.reads)
			}
		})
	}
}

// TestSessionNotesTooDeep: a session longer than the lookup reads is an
// error, never a guess.
func TestSessionNotesTooDeep(t *testing.T) {
	turns := make([]chat.Turn, 1001)
	for i := range turns {
		turns[i] = plainTurn()
	}
	store := &pagedTurns{turns: turns}
	_, err := tool.SessionNotes(store).NoteExists(context.Background(), tool.CallInfo{SessionID: "s1", Principal: chat.Principal{Subject: "alice"}}, "notes/x.md")
	if !errors.Is(err, tool.ErrNotesTooDeep) || store.reads != 10 {
		t.Fatalf("NoteExists = %v after %d pages, want ErrNotesTooDeep after 10", err, store.reads)
	}
}

func TestCallInfo(t *testing.T) {
	if _, ok := tool.CallInfoFrom(context.Background()); ok {
		t.Fatal("a bare context carries a CallInfo")
	}
	want := tool.CallInfo{SessionID: "s", TurnID: "t", Principal: chat.Principal{Subject: "a", Tenant: "x"}}
	if got, ok := tool.CallInfoFrom(tool.WithCallInfo(context.Background(), want)); !ok || got != want {
		t.Fatalf("CallInfoFrom = %+v, %v", got, ok)
	}
}
