package chat

import (
	"context"
	"errors"
	"fmt"
)

// MaxSiblings is the most members a sibling group holds
// (docs/branches.md): an edit, retry or regeneration that would add one
// more is refused (ErrSiblingsFull). A member costs about 40 bytes of the
// visible member's turn item.
const MaxSiblings = 100

// Errors of branches (docs/branches.md).
var (
	// ErrSiblingsFull: the sibling group the turn would join has
	// MaxSiblings members.
	ErrSiblingsFull = errors.New("chat: sibling group full")
	// ErrLineageStale: the turn a supersession replaces is no longer on
	// the active branch (another edit or selection moved the branch since
	// the caller read it).
	ErrLineageStale = errors.New("chat: lineage parent left the active branch")
	// ErrNotSelectable: the turn is not a member of a sibling group whose
	// place is on the session's active branch.
	ErrNotSelectable = errors.New("chat: turn is not a selectable sibling")
)

// Sibling is one member of a sibling group.
type Sibling struct {
	Ordinal int64
	TurnID  string
}

// Siblings is a turn's sibling group (docs/branches.md): the turns that
// answered at one place of the session's turn tree, the first one and
// those that replaced it or one another by an edit, a retry or a
// regeneration.
type Siblings struct {
	// Group is the ordinal of the group's first member.
	Group int64
	// Members are the group's turns in the order they were created, at
	// least two and at most MaxSiblings, as the turn holding them last
	// saw the group: the member on the active branch holds them all.
	Members []Sibling
}

// Index returns the position of the member with ordinal in s.Members, -1
// when none has it (and on a nil s).
func (s *Siblings) Index(ordinal int64) int {
	if s == nil {
		return -1
	}
	for i, m := range s.Members {
		if m.Ordinal == ordinal {
			return i
		}
	}
	return -1
}

// Clone returns a deep copy of s (nil for nil).
func (s *Siblings) Clone() *Siblings {
	if s == nil {
		return nil
	}
	return &Siblings{Group: s.Group, Members: append([]Sibling(nil), s.Members...)}
}

// Joined returns the group that replaced's group becomes once t joins it:
// replaced's members (replaced alone when it has none) and t last. It
// returns ErrSiblingsFull when the group has MaxSiblings members already.
func Joined(replaced *Turn, t Sibling) (*Siblings, error) {
	g := replaced.Siblings.Clone()
	if g == nil {
		g = &Siblings{Group: replaced.Ordinal, Members: []Sibling{{Ordinal: replaced.Ordinal, TurnID: replaced.TurnID}}}
	}
	if g.Index(t.Ordinal) >= 0 {
		return g, nil // a retried supersession
	}
	if len(g.Members) >= MaxSiblings {
		return nil, ErrSiblingsFull
	}
	g.Members = append(g.Members, t)
	return g, nil
}

// ForkRequest asks for a new session whose history is a copy of a
// session's active branch up to and including one of its turns.
type ForkRequest struct {
	// SessionID and AtTurnID name the source session and the last turn
	// copied; AtTurnID must be a saved, terminal turn on the source's
	// active branch (ErrTurnNotFound otherwise).
	SessionID string
	AtTurnID  string
	// NewSessionID is the new session's id; it must not exist, or be a
	// fork of the same turn by the same principal (the call is then
	// idempotent and finishes a fork a crash cut short).
	NewSessionID string
	Principal    Principal
	// Title is the new session's title (CheckTitle); empty means
	// ForkTitle of the source's title.
	Title string
}

// ForkTitle is the title of a fork of a session titled source: "Fork of
// <source>" cut to MaxTitleRunes characters, or "Fork" when source is
// empty.
func ForkTitle(source string) string {
	if source == "" {
		return "Fork"
	}
	return cutText("Fork of "+source, MaxTitleRunes)
}

// Validate returns r's title as stored (CheckTitle; "" for ForkTitle's), or
// ErrInvalidRequest when a session or turn id is missing, the new session
// is the source, or the title is not one CheckTitle accepts.
func (r ForkRequest) Validate() (string, error) {
	if r.SessionID == "" || r.AtTurnID == "" || r.NewSessionID == "" || r.NewSessionID == r.SessionID {
		return "", fmt.Errorf("%w: a fork needs a source session, a turn and another new session", ErrInvalidRequest)
	}
	if r.Title == "" {
		return "", nil
	}
	title, err := CheckTitle(r.Title)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	return title, nil
}

// BranchStore keeps sibling groups and the active branch
// (docs/branches.md). Supersession (TurnStore.Supersede) makes groups;
// these calls move between their members and copy a branch out.
type BranchStore interface {
	// SelectTurn makes the turn with turnID, a member of a sibling group
	// whose place is on the active branch, and the turns that followed it
	// on its branch, the session's active branch; the group's member that
	// was active and its followers leave it, kept for a later selection.
	// Selecting the active member does nothing. It returns
	// ErrSessionNotFound (another principal's session included),
	// ErrTurnNotFound, ErrNotSelectable, and ErrSessionBusy while a turn
	// holds the session's lease (a queued turn waiting included).
	SelectTurn(ctx context.Context, sessionID, turnID string, p Principal) error
	// ForkSession creates req.NewSessionID (see ForkRequest) and returns
	// it as its owner's list shows it. It returns ErrInvalidRequest
	// (ForkRequest.Validate), ErrSessionNotFound for a source the
	// principal does not own, ErrTurnNotFound, and ErrConflict when
	// NewSessionID exists and is not such a fork.
	ForkSession(ctx context.Context, req ForkRequest) (*SessionListing, error)
}
