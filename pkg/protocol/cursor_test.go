package protocol_test

import (
	"errors"
	"strconv"
	"testing"

	"github.com/turnstream/turnstream/pkg/protocol"
)

// snapshotAt returns wire fixture 3 with another eventId, session and sequence.
func snapshotAt(tb testing.TB, eventID, session string, seq int) []byte {
	tb.Helper()
	s := replace(tb, snapshotEvent, `"event-streaming"`, `"`+eventID+`"`)
	s = replace(tb, s, `"session-conformance"`, `"`+session+`"`)
	return []byte(replace(tb, s, `"sequence":2`, `"sequence":`+strconv.Itoa(seq)))
}

func TestSnapshotCursor(t *testing.T) {
	if _, err := protocol.NewSnapshotCursor("not safe"); !errors.Is(err, protocol.ErrInvalidSessionID) {
		t.Fatalf("NewSnapshotCursor(unsafe) = %v; want ErrInvalidSessionID", err)
	}
	c, err := protocol.NewSnapshotCursor("s1")
	if err != nil {
		t.Fatal(err)
	}
	if c.Snapshot() != nil {
		t.Fatal("new cursor holds a snapshot")
	}
	steps := []struct {
		name  string
		input []byte
		want  bool
		held  string // eventId held afterwards
	}{
		{"foreign session first", snapshotAt(t, "foreign-first", "other", 5), false, ""},
		{"submit event", []byte(replace(t, submitEvent, `"session-conformance"`, `"s1"`)), false, ""},
		{"malformed", []byte(`{`), false, ""},
		{"first snapshot at sequence 0", snapshotAt(t, "first", "s1", 0), true, "first"},
		{"equal sequence, new event id", snapshotAt(t, "again", "s1", 0), false, "first"},
		{"newer", snapshotAt(t, "newer", "s1", 3), true, "newer"},
		{"duplicate delivery", snapshotAt(t, "newer", "s1", 3), false, "newer"},
		{"stale", snapshotAt(t, "stale", "s1", 2), false, "newer"},
		{"foreign newer", snapshotAt(t, "foreign", "other", 9), false, "newer"},
		{"invalid newer", []byte(replace(t, string(snapshotAt(t, "bad", "s1", 9)), `"streaming"`, `"paused"`)), false, "newer"},
		{"next", snapshotAt(t, "next", "s1", 4), true, "next"},
	}
	for _, s := range steps {
		if got := c.Apply(s.input); got != s.want {
			t.Fatalf("%s: Apply = %v; want %v", s.name, got, s.want)
		}
		held := c.Snapshot()
		if (held == nil) != (s.held == "") || (held != nil && held.EventID != s.held) {
			t.Fatalf("%s: holds %+v; want eventId %q", s.name, held, s.held)
		}
	}
	t.Run("held state cannot be mutated through Snapshot", func(t *testing.T) {
		got := c.Snapshot()
		got.Sequence = 0
		got.Snapshot.Messages[0].Content = "changed"
		got.Snapshot.Messages = append(got.Snapshot.Messages, protocol.Message{})
		again := c.Snapshot()
		if again.Sequence != 4 || again.Snapshot.Messages[0].Content != "AgentsKit" || len(again.Snapshot.Messages) != 1 {
			t.Fatalf("cursor state changed: %+v", again)
		}
		if c.Apply(snapshotAt(t, "stale-after-mutation", "s1", 3)) {
			t.Fatal("a stale snapshot was accepted after mutating a copy")
		}
	})
}
