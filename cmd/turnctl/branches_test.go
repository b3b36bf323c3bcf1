package main

import (
	"strings"
	"testing"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// TestBranchCommands: turnctl history says which version of a
// regenerated answer it shows and -all-branches prints the others;
// turnctl select switches to another; turnctl fork copies the
// conversation into a new session; bad usage is exit 2, an HTTP error
// exit 1 with its code.
func TestBranchCommands(t *testing.T) {
	turnURL, historyURL := ledgerServers(t, chat.Quotas{})
	for _, tc := range []struct {
		id, input string
		lineage   *protocol.Lineage
	}{
		{"t1", "first question", nil},
		{"t2", "second question", nil},
		{"r1", "second question", &protocol.Lineage{Operation: protocol.OperationRegenerate, ParentTurnID: "t2", SourceMessageID: "t2.a"}},
	} {
		if code, errOut := submitWith(t, turnURL, tc.id, tc.input, tc.lineage); code != 0 {
			t.Fatalf("turn %s: %d %s", tc.id, code, errOut)
		}
	}
	history := func(args ...string) string {
		t.Helper()
		code, out, errOut := runTurnctl(append([]string{"history", "-url", historyURL, "-session", "s", "-token", "dev.alice"}, args...), "")
		if code != 0 {
			t.Fatalf("history %v: exit %d, %s", args, code, errOut)
		}
		return out
	}
	out := history()
	if !strings.Contains(out, "(answer 2 of 2 at this place)") || strings.Contains(out, "not shown in the conversation") {
		t.Errorf("history: %s", out)
	}
	out = history("-all-branches")
	if !strings.Contains(out, "  answer 1 of 2 (turn t2, not shown in the conversation):\n    user (complete") {
		t.Errorf("history -all-branches: %s", out)
	}
	if code, out, errOut := runTurnctl([]string{"select", "-url", historyURL, "-token", "dev.alice", "s", "t2"}, ""); code != 0 || out != "selected t2 in s\n" {
		t.Fatalf("select: exit %d, %q %q", code, out, errOut)
	}
	if out := history(); !strings.Contains(out, "(answer 1 of 2 at this place)") {
		t.Errorf("history after the select: %s", out)
	}
	code, out, errOut := runTurnctl([]string{"fork", "-url", historyURL, "-token", "dev.alice", "-new", "f1", "-title", "Mine", "s", "t1"}, "")
	if code != 0 || !strings.Contains(out, "f1") || !strings.Contains(out, "Mine") {
		t.Fatalf("fork: exit %d, %q %q", code, out, errOut)
	}
	if code, out, _ := runTurnctl([]string{"history", "-url", historyURL, "-session", "f1", "-token", "dev.alice"}, ""); code != 0 || !strings.Contains(out, "first question") || strings.Contains(out, "second question") {
		t.Errorf("the fork's history: exit %d, %s", code, out)
	}
	for name, tc := range map[string]struct {
		args []string
		code int
		err  string
	}{
		"select, one operand":          {[]string{"select", "-url", historyURL, "s"}, 2, "SESSION and TURN"},
		"select, a bad id":             {[]string{"select", "-url", historyURL, "s", "a/b"}, 2, "SESSION and TURN"},
		"select, an unknown turn":      {[]string{"select", "-url", historyURL, "-token", "dev.alice", "s", "nope"}, 1, "TURN_NOT_FOUND"},
		"select, the active turn":      {[]string{"select", "-url", historyURL, "-token", "dev.alice", "s", "t1"}, 0, ""},
		"select, bob":                  {[]string{"select", "-url", historyURL, "-token", "dev.bob", "s", "t2"}, 1, "SESSION_NOT_FOUND"},
		"fork, a bad new id":           {[]string{"fork", "-url", historyURL, "-new", "a b", "s", "t1"}, 2, "-new"},
		"fork, a superseded turn":      {[]string{"fork", "-url", historyURL, "-token", "dev.alice", "s", "r1"}, 1, "TURN_NOT_FOUND"},
		"fork, into an existing":       {[]string{"fork", "-url", historyURL, "-token", "dev.alice", "-new", "f1", "s", "t2"}, 1, "SESSION_CONFLICT"},
		"fork, three operands":         {[]string{"fork", "-url", historyURL, "s", "t1", "x"}, 2, "SESSION and TURN"},
		"fork, a title with an escape": {[]string{"fork", "-url", historyURL, "-token", "dev.alice", "-title", "a\x1bb", "s", "t1"}, 1, "REQUEST_INVALID_BODY"},
	} {
		code, _, errOut := runTurnctl(tc.args, "")
		if code != tc.code || !strings.Contains(errOut, tc.err) {
			t.Errorf("%s: exit %d, stderr %q; want %d and %q", name, code, errOut, tc.code, tc.err)
		}
	}
}

// submitWith submits one turn of alice in session s, with its own id and
// lineage, through pkg/client (turnctl chat makes up its ids and sends no
// lineage) and reads it to its end.
func submitWith(t *testing.T, turnURL, turnID, input string, lineage *protocol.Lineage) (int, string) {
	t.Helper()
	cl, err := client.New(client.Options{TurnURL: turnURL, Auth: client.Bearer("dev.alice")})
	if err != nil {
		t.Fatal(err)
	}
	s, err := cl.Submit(t.Context(), client.Submit{SessionID: "s", TurnID: turnID, Input: input, Lineage: lineage})
	if err != nil {
		return 1, err.Error()
	}
	defer func() { _ = s.Close() }()
	for {
		ev, err := s.Next()
		if err != nil {
			return 1, err.Error()
		}
		if ev.Snapshot != nil && ev.Snapshot.Status != protocol.StatusStreaming {
			return 0, ""
		}
	}
}
