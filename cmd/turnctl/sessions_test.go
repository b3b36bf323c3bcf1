package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/client"
)

// TestSessionsCommand: turnctl sessions lists the caller's sessions,
// newest first, with their titles; rename names one; bad usage is exit 2
// and an HTTP error exit 1, its code printed.
func TestSessionsCommand(t *testing.T) {
	turnURL, historyURL := ledgerServers(t, chat.Quotas{})
	for _, s := range []string{"older", "newer"} {
		if code, _, errOut := runTurnctl([]string{"chat", "-url", turnURL, "-session", s, "-token", "dev.alice", "about " + s + " things"}, ""); code != 0 {
			t.Fatalf("chat %s: %d %s", s, code, errOut)
		}
	}
	code, out, errOut := runTurnctl([]string{"sessions", "-url", historyURL, "-token", "dev.alice"}, "")
	// Both turns may end in the same millisecond: the order of the two is
	// then the store's (the contract suite checks the order).
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 2 || !strings.Contains(out, "about newer things") || !strings.Contains(out, "about older things") ||
		!strings.Contains(lines[0], "complete") || !strings.Contains(lines[1], "complete") {
		t.Fatalf("sessions: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, _ = runTurnctl([]string{"sessions", "-url", historyURL, "-token", "dev.alice", "-limit", "1"}, "")
	if code != 0 || !strings.Contains(out, "more: -cursor ") {
		t.Errorf("a page of 1: exit %d, %q", code, out)
	}
	code, out, errOut = runTurnctl([]string{"sessions", "rename", "-url", historyURL, "-token", "dev.alice", "older", "Renamed \x1b[31mred"}, "")
	if code != 1 || !strings.Contains(errOut, "REQUEST_INVALID_BODY") {
		t.Errorf("rename to a title with an escape: exit %d, %q %q", code, out, errOut)
	}
	code, out, errOut = runTurnctl([]string{"sessions", "rename", "-url", historyURL, "-token", "dev.alice", "older", "Renamed"}, "")
	if code != 0 || !strings.Contains(out, "Renamed") {
		t.Errorf("rename: exit %d, %q %q", code, out, errOut)
	}
	if code, out, _ := runTurnctl([]string{"sessions", "-url", historyURL, "-token", "dev.alice", "-q", "renamed"}, ""); code != 0 || !strings.Contains(out, "older") || strings.Contains(out, "newer") {
		t.Errorf("search: exit %d, %q", code, out)
	}
	if code, out, _ := runTurnctl([]string{"sessions", "-url", historyURL, "-token", "dev.bob"}, ""); code != 0 || strings.TrimSpace(out) != "" {
		t.Errorf("bob's sessions: exit %d, %q", code, out)
	}
	// Export, rm, erase.
	file := filepath.Join(t.TempDir(), "older.json")
	if code, out, errOut := runTurnctl([]string{"sessions", "export", "-url", historyURL, "-token", "dev.alice", "-o", file, "older"}, ""); code != 0 || out != "" || !strings.Contains(errOut, "wrote") {
		t.Errorf("export -o: exit %d, %q %q", code, out, errOut)
	}
	if b, err := os.ReadFile(file); err != nil || !strings.Contains(string(b), "about older things") || !strings.HasSuffix(string(b), `"complete":true}`) {
		t.Errorf("the exported file: %v %.200s", err, b)
	}
	if code, out, _ := runTurnctl([]string{"sessions", "export", "-url", historyURL, "-token", "dev.alice", "newer"}, ""); code != 0 || !strings.Contains(out, "about newer things") {
		t.Errorf("export to stdout: exit %d, %.200q", code, out)
	}
	if code, _, errOut := runTurnctl([]string{"sessions", "export", "-url", historyURL, "-token", "dev.bob", "-o", file + ".bob", "older"}, ""); code != 1 || !strings.Contains(errOut, "SESSION_NOT_FOUND") {
		t.Errorf("bob exports alice's: exit %d, %q", code, errOut)
	} else if _, err := os.Stat(file + ".bob"); !os.IsNotExist(err) {
		t.Errorf("a failed export left its file: %v", err)
	}
	if code, _, errOut := runTurnctl([]string{"sessions", "rm", "-url", historyURL, "-token", "dev.bob", "older"}, ""); code != 1 || !strings.Contains(errOut, "SESSION_NOT_FOUND") {
		t.Errorf("bob removes alice's: exit %d, %q", code, errOut)
	}
	if code, out, errOut := runTurnctl([]string{"sessions", "rm", "-url", historyURL, "-token", "dev.alice", "older"}, ""); code != 0 || !strings.Contains(out, "deleted older") {
		t.Errorf("rm: exit %d, %q %q", code, out, errOut)
	}
	if code, out, _ := runTurnctl([]string{"sessions", "-url", historyURL, "-token", "dev.alice"}, ""); code != 0 || strings.Contains(out, "older") || !strings.Contains(out, "newer") {
		t.Errorf("the list after rm: exit %d, %q", code, out)
	}
	if code, _, errOut := runTurnctl([]string{"sessions", "erase", "-url", historyURL, "-token", "dev.alice", "alice"}, ""); code != 1 || !strings.Contains(errOut, "REQUEST_FORBIDDEN") {
		t.Errorf("alice erases: exit %d, %q", code, errOut)
	}
	if code, out, errOut := runTurnctl([]string{"sessions", "erase", "-url", historyURL, "-token", "dev.host", "alice"}, ""); code != 0 || !strings.Contains(out, "deleted: 1 sessions deleted, 0 busy") {
		t.Errorf("erase: exit %d, %q %q", code, out, errOut)
	}
	for _, args := range [][]string{{"sessions", "extra"}, {"sessions", "rename", "only-one"}, {"sessions", "rm"}, {"sessions", "export"}, {"sessions", "export", "a", "b"}, {"sessions", "erase"}} {
		if code, _, _ := runTurnctl(append(args, "-url", historyURL), ""); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

// TestFeedbackCommand: turnctl feedback rates a turn's answer, replaces
// and removes the rating; a bad rating is exit 2, an unknown turn exit 1.
func TestFeedbackCommand(t *testing.T) {
	turnURL, historyURL := ledgerServers(t, chat.Quotas{})
	if code, _, errOut := runTurnctl([]string{"chat", "-url", turnURL, "-session", "rated", "-token", "dev.alice", "rate me"}, ""); code != 0 {
		t.Fatalf("chat: %d %s", code, errOut)
	}
	c, err := client.New(client.Options{TurnURL: turnURL, HistoryURL: historyURL, Auth: client.Bearer("dev.alice")})
	if err != nil {
		t.Fatal(err)
	}
	page, err := c.Turns(t.Context(), "rated", client.PageOptions{})
	if err != nil || len(page.Turns) != 1 {
		t.Fatalf("turns: %+v, %v", page, err)
	}
	turnID := page.Turns[0].TurnID
	feedbackOf := func() *client.Feedback {
		t.Helper()
		p, err := c.Turns(t.Context(), "rated", client.PageOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p.Turns[0].Feedback
	}
	code, out, errOut := runTurnctl([]string{"feedback", "-url", historyURL, "-token", "dev.alice", "-comment", "spot on", "rated", turnID, "up"}, "")
	if code != 0 || !strings.HasPrefix(out, "up ") {
		t.Fatalf("feedback up: exit %d, %q %q", code, out, errOut)
	}
	if f := feedbackOf(); f == nil || f.Rating != "up" || f.Comment != "spot on" {
		t.Errorf("stored: %+v", f)
	}
	if code, _, errOut := runTurnctl([]string{"feedback", "-url", historyURL, "-token", "dev.alice", "rated", turnID, "down"}, ""); code != 0 {
		t.Fatalf("feedback down: %d %s", code, errOut)
	}
	if f := feedbackOf(); f == nil || f.Rating != "down" || f.Comment != "" {
		t.Errorf("replaced: %+v", f)
	}
	if code, out, _ := runTurnctl([]string{"feedback", "-url", historyURL, "-token", "dev.alice", "rated", turnID, "remove"}, ""); code != 0 || strings.TrimSpace(out) != "removed" {
		t.Errorf("remove: exit %d, %q", code, out)
	}
	if f := feedbackOf(); f != nil {
		t.Errorf("after remove: %+v", f)
	}
	if code, _, errOut := runTurnctl([]string{"feedback", "-url", historyURL, "-token", "dev.alice", "rated", "nope", "up"}, ""); code != 1 || !strings.Contains(errOut, "TURN_NOT_FOUND") {
		t.Errorf("an unknown turn: exit %d, %q", code, errOut)
	}
	for _, args := range [][]string{{"rated", turnID, "meh"}, {"rated", turnID}, {"-comment", "x", "rated", turnID, "remove"}} {
		if code, _, _ := runTurnctl(append([]string{"feedback", "-url", historyURL}, args...), ""); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}
