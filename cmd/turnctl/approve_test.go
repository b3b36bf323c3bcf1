package main

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/definition"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/model/echo"
	"github.com/turnstream/turnstream/pkg/store/memory"
	"github.com/turnstream/turnstream/pkg/tool"
	"github.com/turnstream/turnstream/pkg/turn"
)

// approvalServer serves the turn handler as the dev server configures
// it: the echo model, workspace_note_delete requiring approval.
func approvalServer(t *testing.T) string {
	t.Helper()
	authn, err := auth.New(context.Background(), config.AuthConfig{Mode: config.AuthDev},
		auth.WithLookupEnv(func(string) (string, bool) { return "", false }))
	if err != nil {
		t.Fatal(err)
	}
	store := memory.New(memory.Options{})
	reg := tool.NewRegistry(nil)
	for _, tl := range []tool.Tool{tool.WorkspaceNote(), tool.WorkspaceNoteDelete(tool.SessionNotes(store))} {
		if err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	defs, err := definition.New([]definition.Definition{{ID: "default", Revision: 1, Provider: config.ProviderEcho,
		Tools: []string{tool.WorkspaceNoteName, tool.WorkspaceNoteDeleteName}, ApprovalTools: []string{tool.WorkspaceNoteDeleteName},
		Limits: definition.Limits{MaxSteps: 4}}}, "default", reg.Has)
	if err != nil {
		t.Fatal(err)
	}
	th, err := turn.NewHandler(turn.Options{
		Config: turn.Config{
			Store:       store,
			Definitions: defs,
			Tools:       reg,
			Models:      map[string]model.Model{config.ProviderEcho: echo.New(0, 3)},
		},
		Authenticator: authn,
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(th)
	t.Cleanup(ts.Close)
	return ts.URL + "/"
}

// TestChatAsksForApproval: a call that waits for approval is shown with
// "approve? [y/N]" and what Enter does; "y" approves it (the tool runs,
// its result and the reply follow), anything else, Enter included, denies
// it (the call reads "denied"), the answer taken is printed, and end of
// input leaves it waiting. A note that was never saved is not "deleted".
func TestChatAsksForApproval(t *testing.T) {
	url := approvalServer(t)
	const call = `tool workspace_note_delete {"title":"Trip plan"}`
	for name, tc := range map[string]struct {
		note, answer, said, want, wantErr string
	}{
		"approve": {"/note Trip plan: pack", "y\n", "approved: workspace_note_delete runs now",
			call + `: complete → Deleted note "notes/trip-plan.md".`, ""},
		"approve a note never saved": {"/note Groceries: eggs", "yes\n", "approved: workspace_note_delete runs now",
			call + `: error: There is no note "notes/trip-plan.md" in this conversation; nothing was deleted.`, ""},
		"deny":      {"/note Trip plan: pack", "n\n", "denied: workspace_note_delete does not run", call + ": denied (it did not run)", ""},
		"Enter":     {"/note Trip plan: pack", "\n", "denied (Enter means no): workspace_note_delete does not run", call + ": denied (it did not run)", ""},
		"no answer": {"/note Trip plan: pack", "", "", "", "the call keeps waiting"},
	} {
		t.Run(name, func(t *testing.T) {
			session := "s-" + strings.ReplaceAll(name, " ", "-")
			if code, _, errOut := runTurnctl([]string{"chat", "-url", url, "-session", session, "-token", "dev.alice", tc.note}, ""); code != 0 {
				t.Fatalf("note: exit %d, stderr %q", code, errOut)
			}
			code, out, errOut := runTurnctl([]string{"chat", "-url", url, "-session", session,
				"-token", "dev.alice", "/delete Trip plan"}, tc.answer)
			if code != 0 {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			if !strings.Contains(out, call+" requires approval\napprove? [y/N] (y approves; Enter or anything else denies) ") {
				t.Fatalf("no approval prompt in %q", out)
			}
			if !strings.Contains(out, tc.said) || !strings.Contains(out, tc.want) || !strings.Contains(errOut, tc.wantErr) {
				t.Errorf("output %q, stderr %q; want %q, %q / %q", out, errOut, tc.said, tc.want, tc.wantErr)
			}
		})
	}
}
