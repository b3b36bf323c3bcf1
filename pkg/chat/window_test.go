package chat_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/turnstream/turnstream/pkg/chat"
)

// The terminal window rules, including those that chat.Store callers
// cannot reach (a turn id is never appended while it is already in the
// window through the public API).
func TestAppendTerminal(t *testing.T) {
	ids := func(w []chat.TerminalEntry) []string {
		out := make([]string, len(w))
		for i, e := range w {
			out[i] = e.TurnID
		}
		return out
	}
	entry := func(id string) chat.TerminalEntry {
		return chat.TerminalEntry{TurnID: id, Outcome: chat.OutcomeCompleted}
	}
	full := make([]chat.TerminalEntry, 0, chat.TerminalWindowSize)
	for i := range chat.TerminalWindowSize {
		full = append(full, entry(fmt.Sprintf("t%02d", i)))
	}

	cases := map[string]struct {
		window []chat.TerminalEntry
		add    chat.TerminalEntry
		want   []string
	}{
		"empty":             {nil, entry("a"), []string{"a"}},
		"append newest":     {[]chat.TerminalEntry{entry("a"), entry("b")}, entry("c"), []string{"a", "b", "c"}},
		"re-added id moves": {[]chat.TerminalEntry{entry("a"), entry("b"), entry("c")}, entry("a"), []string{"b", "c", "a"}},
		"full drops oldest": {slices.Clone(full), entry("new"), append(ids(full[1:]), "new")},
		"full re-add keeps size": {slices.Clone(full), entry("t10"),
			append(append(ids(full[:10]), ids(full[11:])...), "t10")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := chat.AppendTerminal(tc.window, tc.add, chat.TerminalWindowSize)
			if !slices.Equal(ids(got), tc.want) {
				t.Errorf("window %v, want %v", ids(got), tc.want)
			}
			if len(got) > chat.TerminalWindowSize {
				t.Errorf("window has %d entries, more than %d", len(got), chat.TerminalWindowSize)
			}
		})
	}

	t.Run("re-added entry takes the new outcome", func(t *testing.T) {
		w := chat.AppendTerminal([]chat.TerminalEntry{entry("a")}, chat.TerminalEntry{TurnID: "a", Outcome: chat.OutcomeIndeterminate}, 0)
		if len(w) != 1 || w[0].Outcome != chat.OutcomeIndeterminate {
			t.Errorf("window %+v, want one indeterminate entry", w)
		}
	})
}

// A store's window size: the newest size entries are kept, and a full
// window of that size is what sends a claim to the turn-id lookup.
func TestWindowSize(t *testing.T) {
	sizes := map[int]int{0: chat.DefaultTerminalWindow, -3: 1, 1: 1, 8: 8, 64: 64, 65: chat.TerminalWindowSize}
	for n, want := range sizes {
		if got := chat.WindowSize(n); got != want {
			t.Errorf("WindowSize(%d) = %d, want %d", n, got, want)
		}
	}
	var w []chat.TerminalEntry
	for i := range 5 {
		w = chat.AppendTerminal(w, chat.TerminalEntry{TurnID: fmt.Sprintf("t%d", i)}, 3)
		if full := chat.WindowFull(w, 3); full != (i >= 2) {
			t.Errorf("after %d appends WindowFull = %v", i+1, full)
		}
	}
	if got := []string{w[0].TurnID, w[1].TurnID, w[2].TurnID}; len(w) != 3 || !slices.Equal(got, []string{"t2", "t3", "t4"}) {
		t.Errorf("window of 3 after 5 appends: %+v, want t2 t3 t4", w)
	}
}

func TestAppendTerminalKeepsItsInput(t *testing.T) {
	in := []chat.TerminalEntry{{TurnID: "a"}, {TurnID: "b"}, {TurnID: "c"}}
	want := slices.Clone(in)
	chat.AppendTerminal(in[:2:3], chat.TerminalEntry{TurnID: "a"}, 0)
	chat.AppendTerminal(in[:2:3], chat.TerminalEntry{TurnID: "x"}, 0)
	if !slices.Equal(in, want) {
		t.Errorf("input changed to %v, want %v", in, want)
	}
}

func TestRejection(t *testing.T) {
	window := []chat.TerminalEntry{
		{TurnID: "done", Outcome: chat.OutcomeCompleted, InputHash: "h1"},
		{TurnID: "lost", Outcome: chat.OutcomeIndeterminate, InputHash: "h2"},
	}
	cases := map[string]struct {
		turnID, hash string
		want         error
	}{
		"not in window":          {"new", "h1", nil},
		"completed, same input":  {"done", "h1", chat.ErrTurnCompleted},
		"completed, other input": {"done", "hx", chat.ErrTurnIDReused},
		"indeterminate":          {"lost", "h2", chat.ErrTurnIndeterminate},
		"indeterminate, other":   {"lost", "h1", chat.ErrTurnIDReused},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := chat.Rejection(window, tc.turnID, tc.hash); got != tc.want {
				t.Errorf("Rejection = %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("stored turn", func(t *testing.T) {
		running := &chat.Turn{TurnID: "r", Status: chat.TurnRunning, InputHash: "h"}
		done := &chat.Turn{TurnID: "d", Status: chat.TurnError, InputHash: "h"}
		if got := chat.TurnRejection(running, "h"); got != chat.ErrTurnIndeterminate {
			t.Errorf("running turn: %v", got)
		}
		if got := chat.TurnRejection(done, "h"); got != chat.ErrTurnCompleted {
			t.Errorf("terminal turn: %v", got)
		}
		if got := chat.TurnRejection(done, "other"); got != chat.ErrTurnIDReused {
			t.Errorf("other input: %v", got)
		}
	})
}
