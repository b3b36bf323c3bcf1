package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// WorkspaceNoteDeleteName is the name of the built-in demo tool
// WorkspaceNoteDelete.
const WorkspaceNoteDeleteName = "workspace_note_delete"

const workspaceNoteDeleteSchema = `{
  "type": "object",
  "properties": {
    "title": {"type": "string", "minLength": 1, "maxLength": 200, "description": "Title of the note to delete."}
  },
  "required": ["title"],
  "additionalProperties": false
}`

// Notes tells WorkspaceNoteDelete whether a note exists.
type Notes interface {
	// NoteExists reports whether the note at path ("notes/<slug>.md") is
	// in the workspace of the call's session. An error means the answer
	// is unknown.
	NoteExists(ctx context.Context, call CallInfo, path string) (bool, error)
}

// WorkspaceNoteDelete returns the built-in demo tool
// "workspace_note_delete", the destructive counterpart of WorkspaceNote
// that local runs (make dev) mark as requiring approval. For {"title": t}
// it looks the note "notes/<slug>.md" up in notes (slug is Slug(t)) for
// the session the call runs in (CallInfoFrom):
//   - the note exists: the text `Deleted note "notes/<slug>.md".`;
//   - it does not: the call fails with the message
//     `There is no note "notes/<slug>.md" in this conversation; nothing was deleted.`
//     (a *Error, so the model and the client read it), never a claim
//     that something was deleted;
//   - notes cannot tell (no session in the context, a failed read): the
//     call fails with `Could not check whether note "notes/<slug>.md" exists; nothing was deleted.`
//
// Like WorkspaceNote it touches no file (the host's workspace owns files).
// With a nil notes every call fails as unable to check.
func WorkspaceNoteDelete(notes Notes) Tool {
	return Tool{
		Name:        WorkspaceNoteDeleteName,
		Description: "Delete a note from the user's workspace by its title. Asks the user for approval first.",
		InputSchema: json.RawMessage(workspaceNoteDeleteSchema),
		Call: func(ctx context.Context, args json.RawMessage) (Result, error) {
			var in struct {
				Title string `json:"title"`
			}
			if err := DecodeArgs(args, &in); err != nil {
				return Result{}, fmt.Errorf("workspace_note_delete: decode arguments: %w", err)
			}
			path := "notes/" + Slug(in.Title) + ".md"
			call, ok := CallInfoFrom(ctx)
			if notes == nil || !ok {
				return Result{}, &Error{Message: fmt.Sprintf("Could not check whether note %q exists; nothing was deleted.", path),
					Err: errors.New("workspace_note_delete: no notes index or no session in the context")}
			}
			exists, err := notes.NoteExists(ctx, call, path)
			switch {
			case err != nil:
				return Result{}, &Error{Message: fmt.Sprintf("Could not check whether note %q exists; nothing was deleted.", path),
					Err: fmt.Errorf("workspace_note_delete: look up %s: %w", path, err)}
			case !exists:
				return Result{}, &Error{Message: fmt.Sprintf("There is no note %q in this conversation; nothing was deleted.", path)}
			}
			return Result{Text: fmt.Sprintf("Deleted note %q.", path)}, nil
		},
	}
}

// TurnLister is the part of chat.Store that SessionNotes reads.
type TurnLister interface {
	ListTurns(ctx context.Context, req chat.ListRequest) (*chat.Page, error)
}

// maxNotePages bounds how many history pages (of chat.MaxPageLimit turns)
// SessionNotes reads for one lookup.
const maxNotePages = 10

// ErrNotesTooDeep is returned by SessionNotes.NoteExists when the answer
// is older than the turns it reads (maxNotePages pages of chat.MaxPageLimit
// turns, newest first).
var ErrNotesTooDeep = errors.New("tool: the session is too long to look the note up")

// SessionNotes returns the Notes of the demo tools: a note exists in a
// session when, reading its visible turns newest first (superseded turns
// are not listed), the last thing that happened to its path was a
// completed workspace_note call saving it, or the path among a turn's
// artifact references (a host may record notes itself), rather than a
// completed workspace_note_delete of it. Calls of the turn being run are
// not seen (it is not saved yet). A lookup reads at most 10 pages of 100
// turns (1 DynamoDB Query each), then gives up with ErrNotesTooDeep.
func SessionNotes(store TurnLister) Notes { return sessionNotes{store} }

type sessionNotes struct{ store TurnLister }

func (n sessionNotes) NoteExists(ctx context.Context, call CallInfo, path string) (bool, error) {
	cursor := ""
	for range maxNotePages {
		page, err := n.store.ListTurns(ctx, chat.ListRequest{SessionID: call.SessionID, Principal: call.Principal,
			Order: chat.OrderDesc, Limit: chat.MaxPageLimit, Cursor: cursor})
		if err != nil {
			return false, fmt.Errorf("list turns of session %s: %w", call.SessionID, err)
		}
		for _, t := range page.Turns {
			if exists, decided := lastNoteEvent(t, path); decided {
				return exists, nil
			}
		}
		if !page.HasMore {
			return false, nil
		}
		cursor = page.NextCursor
	}
	return false, ErrNotesTooDeep
}

// lastNoteEvent reports what turn t last did to the note at path: saved it
// (exists), deleted it (not), or nothing (decided false).
func lastNoteEvent(t chat.Turn, path string) (exists, decided bool) {
	for i := len(t.Messages) - 1; i >= 0; i-- {
		calls := t.Messages[i].ToolCalls
		for j := len(calls) - 1; j >= 0; j-- {
			c := calls[j]
			if c.Status != protocol.ToolCallComplete || (c.Name != WorkspaceNoteName && c.Name != WorkspaceNoteDeleteName) {
				continue
			}
			var in struct {
				Title string `json:"title"`
			}
			if DecodeArgs(c.Args, &in) != nil || "notes/"+Slug(in.Title)+".md" != path {
				continue
			}
			return c.Name == WorkspaceNoteName, true
		}
	}
	for _, a := range t.Artifacts {
		if a.EntryPath == path {
			return true, true
		}
	}
	return false, false
}
