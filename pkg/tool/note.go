package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/turnstream/turnstream/pkg/chat"
)

// WorkspaceNoteName is the name of the built-in demo tool WorkspaceNote.
const WorkspaceNoteName = "workspace_note"

// maxSlugLen bounds the slug of a note's path, in bytes.
const maxSlugLen = 64

const workspaceNoteSchema = `{
  "type": "object",
  "properties": {
    "title": {"type": "string", "minLength": 1, "maxLength": 200, "description": "Short title of the note; it names the file."},
    "body": {"type": "string", "maxLength": 20000, "description": "Markdown body of the note."}
  },
  "required": ["title", "body"],
  "additionalProperties": false
}`

// WorkspaceNote returns the built-in demo tool "workspace_note", used by local
// runs (make dev) and examples. It is deterministic and offline: for {"title":
// t, "body": b} it returns the artifact reference {entryPath:
// "notes/<slug>.md", artifactType: "document"}, where slug is Slug(t), and the
// text `Saved note "notes/<slug>.md" (<n> characters).` with n the runes of b.
// It does not write a file: turnstream records artifact references, and the
// host's workspace owns the files (docs/design.md#history-and-artifacts-api).
func WorkspaceNote() Tool {
	return Tool{
		Name:        WorkspaceNoteName,
		Description: "Save a Markdown note in the user's workspace. Returns the note's path.",
		InputSchema: json.RawMessage(workspaceNoteSchema),
		Call: func(ctx context.Context, args json.RawMessage) (Result, error) {
			var in struct {
				Title string `json:"title"`
				Body  string `json:"body"`
			}
			if err := DecodeArgs(args, &in); err != nil {
				return Result{}, fmt.Errorf("workspace_note: decode arguments: %w", err)
			}
			path := "notes/" + Slug(in.Title) + ".md"
			return Result{
				Text:      fmt.Sprintf("Saved note %q (%d characters).", path, utf8.RuneCountInString(in.Body)),
				Artifacts: []chat.ArtifactReference{{EntryPath: path, ArtifactType: chat.ArtifactDocument}},
			}, nil
		},
	}
}

// Slug turns a title into a file name stem: ASCII letters and digits
// lower-cased, every other run of characters one "-", no leading or
// trailing "-", at most 64 bytes; "note" when nothing is left.
func Slug(title string) string {
	var b strings.Builder
	dash := false
	for _, r := range title {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
		case r >= 'A' && r <= 'Z':
			r += 'a' - 'A'
		default:
			dash = b.Len() > 0
			continue
		}
		if dash {
			if b.Len()+1 >= maxSlugLen {
				break
			}
			b.WriteByte('-')
			dash = false
		}
		if b.Len() >= maxSlugLen {
			break
		}
		b.WriteRune(r)
	}
	if b.Len() == 0 {
		return "note"
	}
	return b.String()
}
