package dynamo

import (
	"slices"
	"testing"

	"github.com/turnstream/turnstream/pkg/chat"
)

// The stored terminal window reads back as written, its hashes compact.
func TestWindowEncoding(t *testing.T) {
	window := []chat.TerminalEntry{
		{TurnID: "a", Outcome: chat.OutcomeCompleted, InputHash: chat.HashInput("x")},
		{TurnID: "b.c d", Outcome: chat.OutcomeIndeterminate, InputHash: "not-a-hash"},
		{TurnID: "e", Outcome: chat.OutcomeCompleted},
	}
	for i := 3; i < 12; i++ { // two-digit positions
		window = append(window, chat.TerminalEntry{TurnID: string(rune('f' + i)), Outcome: chat.OutcomeCompleted, InputHash: chat.HashInput("y")})
	}
	av := windowAV(window)
	if v := av["a"]; len(v) != 2+43 {
		t.Errorf("stored entry %q: want position, outcome and a 43-character hash", v)
	}
	got, err := decodeWindow(av)
	if err != nil || !slices.Equal(got, window) {
		t.Errorf("decoded %+v, %v\nwant %+v", got, err, window)
	}
	for name, bad := range map[string]map[string]string{
		"no position":        {"a": "c"},
		"position too large": {"a": "1c"},
		"same position":      {"a": "0c", "b": "0c"},
		"unknown outcome":    {"a": "0x"},
		"no outcome":         {"a": "0"},
	} {
		if _, err := decodeWindow(bad); err == nil {
			t.Errorf("%s: decoded without an error", name)
		}
	}
}

// A hash that compactHash did not write (64 hex digits, as the former
// layout stored them) reads back unchanged.
func TestExpandHashKeepsOtherValues(t *testing.T) {
	h := chat.HashInput("x")
	for _, v := range []string{h, "", "abc"} {
		if got := expandHash(v); got != v {
			t.Errorf("expandHash(%q) = %q, want it unchanged", v, got)
		}
	}
	if got := expandHash(compactHash(h)); got != h {
		t.Errorf("round trip of %s: %s", h, got)
	}
}
