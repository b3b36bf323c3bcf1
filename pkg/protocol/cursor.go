package protocol

import (
	"errors"
	"sync"
)

// ErrInvalidSessionID is returned by NewSnapshotCursor for a session id that
// is not a SafeId.
var ErrInvalidSessionID = errors.New("protocol: session id is not a SafeId")

// SnapshotCursor holds the newest snapshot of one session, AgentsKit's
// createTurnSnapshotCursor (docs/protocol.md#the-snapshot-cursor;
// docs/decisions.md D-0010): reconnects, duplicate and stale deliveries and
// other sessions' snapshots are inert. It is safe for concurrent use.
type SnapshotCursor struct {
	sessionID string

	mu       sync.Mutex
	snapshot *Event
}

// NewSnapshotCursor returns a cursor for sessionID, which must be a SafeId
// (ErrInvalidSessionID otherwise).
func NewSnapshotCursor(sessionID string) (*SnapshotCursor, error) {
	if !IsSafeID(sessionID) {
		return nil, ErrInvalidSessionID
	}
	return &SnapshotCursor{sessionID: sessionID}, nil
}

// Apply decodes data with DecodeTurnEvent and keeps it when it is a valid
// server.turn.snapshot of the cursor's session whose sequence is strictly
// greater than the held one's (any sequence, 0 included, when none is held
// yet). It reports whether the snapshot was kept; on false nothing changes.
// Snapshots replace each other whole: messages are never merged.
func (c *SnapshotCursor) Apply(data []byte) bool {
	ev, diag := DecodeTurnEvent(data)
	if diag != nil || ev.Kind != EventSnapshot || ev.SessionID != c.sessionID {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.snapshot != nil && ev.Sequence <= c.snapshot.Sequence {
		return false
	}
	c.snapshot = ev
	return true
}

// Snapshot returns a deep copy of the held snapshot event, or nil when none
// was accepted yet. Callers may modify the copy; the cursor's state, like
// AgentsKit's deep-frozen one, cannot be changed through it.
func (c *SnapshotCursor) Snapshot() *Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.snapshot == nil {
		return nil
	}
	return cloneEvent(c.snapshot)
}

// cloneEvent deep-copies a decoded snapshot event.
func cloneEvent(e *Event) *Event {
	out := *e
	if e.Snapshot != nil {
		s := *e.Snapshot
		s.Messages = cloneMessages(e.Snapshot.Messages)
		if s.Error != nil {
			d := *s.Error
			s.Error = &d
		}
		if s.Lineage != nil {
			l := *s.Lineage
			s.Lineage = &l
		}
		out.Snapshot = &s
	}
	return &out
}

func cloneString(p *string) *string {
	if p == nil {
		return nil
	}
	s := *p
	return &s
}

func cloneMessages(in []Message) []Message {
	if in == nil {
		return nil
	}
	out := make([]Message, len(in))
	for i, m := range in {
		m.ToolCallID = cloneString(m.ToolCallID)
		m.Metadata = append([]byte(nil), m.Metadata...)
		if in[i].Metadata == nil {
			m.Metadata = nil
		}
		if m.Parts != nil {
			parts := make([]Part, len(m.Parts))
			for j, p := range m.Parts {
				p.Text, p.Source, p.MimeType = cloneString(p.Text), cloneString(p.Source), cloneString(p.MimeType)
				p.Detail, p.Filename = cloneString(p.Detail), cloneString(p.Filename)
				if p.DurationSec != nil {
					d := *p.DurationSec
					p.DurationSec = &d
				}
				parts[j] = p
			}
			m.Parts = parts
		}
		if m.ToolCalls != nil {
			calls := make([]ToolCall, len(m.ToolCalls))
			for j, c := range m.ToolCalls {
				c.Args = append([]byte(nil), c.Args...)
				c.Result, c.Error = cloneString(c.Result), cloneString(c.Error)
				calls[j] = c
			}
			m.ToolCalls = calls
		}
		out[i] = m
	}
	return out
}
