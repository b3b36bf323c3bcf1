package chat

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// A principal's conversations (docs/conversations.md): every session its
// principal owns is listed, most recently active first, once its first
// turn has ended; a session has a title (derived from its first user
// message when that turn ends, or set by its owner) and shows its last
// turn's status and the start of its last answer.

// Limits of the conversation list.
const (
	// MaxTitleRunes bounds a session title, in characters (runes).
	MaxTitleRunes = 120
	// AutoTitleRunes bounds a title derived from a session's first user
	// message (AutoTitle), in characters.
	AutoTitleRunes = 60
	// PreviewRunes bounds a listed session's preview of its last answer
	// (Preview), in characters.
	PreviewRunes = 60
	// DefaultSessionPageLimit and MaxSessionPageLimit bound a page of
	// the list (SessionListRequest.Limit).
	DefaultSessionPageLimit = 20
	MaxSessionPageLimit     = 100
	// MaxSessionQueryRunes and MaxSessionQueryWords bound a search of
	// the list by words of the titles (SessionListRequest.Query).
	MaxSessionQueryRunes = 100
	MaxSessionQueryWords = 5
)

// ErrInvalidTitle: a title is empty (after trimming spaces), longer than
// MaxTitleRunes, not valid UTF-8, or holds a character IsUnsafePathRune
// refuses (controls, format and other invisible characters, line and
// paragraph separators).
var ErrInvalidTitle = fmt.Errorf("%w: invalid title", ErrInvalidRequest)

// Listing is what a turn's release records of it in its principal's list
// (ReleaseRequest.Listing): how it ended, the start of its answer, and the
// title the session gets if it has none yet. It is written into the
// session item, whose every write is billed by its size: the fields are
// kept short.
type Listing struct {
	// Status is the turn's terminal status (complete, interrupted or
	// error).
	Status TurnStatus
	// Preview is the start of the turn's answer as plain text (Preview),
	// at most PreviewRunes characters; "" when it has none.
	Preview string
	// Title is the title a session without one gets (AutoTitle of its
	// first user message); an existing title, a renamed one included, is
	// kept. "" sets none.
	Title string
}

// SessionListing is one session of a principal's list.
type SessionListing struct {
	SessionID string
	// Title is the session's title; "" until its first turn ended with a
	// user message to derive it from, and it was not renamed.
	Title     string
	CreatedAt time.Time
	// ActiveAt is when the session's last listed turn ended (millisecond
	// precision): the list's order, newest first.
	ActiveAt time.Time
	// LastStatus and Preview describe that turn; LastStatus is "" until
	// one ended.
	LastStatus TurnStatus
	Preview    string
}

// SessionListRequest asks for one page of a principal's sessions.
type SessionListRequest struct {
	Principal Principal
	// Limit is 1..MaxSessionPageLimit; 0 means DefaultSessionPageLimit.
	Limit int
	// Cursor is the opaque cursor of the previous page (bound to the
	// principal); "" for the first page.
	Cursor string
	// Query, when not empty, keeps the sessions whose title contains
	// each of its words (case-insensitive substrings): at most
	// MaxSessionQueryRunes characters and MaxSessionQueryWords words.
	Query string
}

// Normalized returns r with its default limit, or ErrInvalidRequest for
// a limit outside 1..MaxSessionPageLimit or a query over its bounds or
// holding a character IsUnsafePathRune refuses (never echoed).
func (r SessionListRequest) Normalized() (SessionListRequest, error) {
	if r.Limit == 0 {
		r.Limit = DefaultSessionPageLimit
	}
	if r.Limit < 1 || r.Limit > MaxSessionPageLimit {
		return r, fmt.Errorf("%w: limit must be in 1..%d", ErrInvalidRequest, MaxSessionPageLimit)
	}
	if !utf8.ValidString(r.Query) || utf8.RuneCountInString(r.Query) > MaxSessionQueryRunes ||
		strings.ContainsFunc(r.Query, func(c rune) bool { return c != ' ' && IsUnsafePathRune(c) }) {
		return r, fmt.Errorf("%w: q must be at most %d characters of text", ErrInvalidRequest, MaxSessionQueryRunes)
	}
	if len(QueryWords(r.Query)) > MaxSessionQueryWords {
		return r, fmt.Errorf("%w: q must have at most %d words", ErrInvalidRequest, MaxSessionQueryWords)
	}
	return r, nil
}

// SessionPage is one page of a principal's sessions, newest activity
// first. NextCursor is "" on the last page. With a Query a page may hold
// fewer sessions than its limit (none at all) while NextCursor is set: the
// store read that many and kept those that matched.
type SessionPage struct {
	Sessions   []SessionListing
	NextCursor string
}

// Deleting sessions (docs/conversations.md#delete-export-and-erase).
const (
	// DefaultDeleteItems bounds the items one DeleteSession or
	// EraseSessions call removes when its request says 0: a session with
	// more is deleted over several calls, each resuming where the last
	// stopped.
	DefaultDeleteItems = 500
	// MaxDeleteItems bounds DeleteRequest.MaxItems.
	MaxDeleteItems = 5000
	// MaxEraseSessions bounds the sessions one EraseSessions call looks
	// at.
	MaxEraseSessions = 100
)

// DeleteRequest asks to delete one session of Principal (DeleteSession),
// or every session of Principal (EraseSessions: SessionID "").
type DeleteRequest struct {
	Principal Principal
	SessionID string
	// MaxItems bounds the items this call removes: 1..MaxDeleteItems, 0
	// means DefaultDeleteItems.
	MaxItems int
}

// Normalized returns r with its default MaxItems, or ErrInvalidRequest
// for a MaxItems outside 0..MaxDeleteItems.
func (r DeleteRequest) Normalized() (DeleteRequest, error) {
	if r.MaxItems == 0 {
		r.MaxItems = DefaultDeleteItems
	}
	if r.MaxItems < 1 || r.MaxItems > MaxDeleteItems {
		return r, fmt.Errorf("%w: maxItems must be in 1..%d", ErrInvalidRequest, MaxDeleteItems)
	}
	return r, nil
}

// Erased is what one EraseSessions call did.
type Erased struct {
	// Deleted counts the sessions this call deleted to the end.
	Deleted int
	// Busy counts the sessions left alone because a turn of theirs is
	// running (ErrSessionBusy): a later call deletes them once it ended
	// (a crashed turn's lease expires within its duration).
	Busy int
	// Done is true when the principal has no session left at all.
	Done bool
}

// ConversationStore lists a principal's sessions and names them.
type ConversationStore interface {
	// ListSessions returns one page of req.Principal's sessions whose
	// first turn has ended, most recently active first (ActiveAt, then
	// session id), never another principal's. ErrInvalidRequest for a
	// bad limit or query; ErrInvalidCursor for a cursor that is tampered,
	// malformed or another principal's. 1 request per page.
	ListSessions(ctx context.Context, req SessionListRequest) (*SessionPage, error)

	// SetFeedback sets the owner's feedback on a terminal turn (f nil
	// removes it), replacing any earlier one, and returns it as stored
	// (nil after a removal): CheckFeedback first (ErrInvalidFeedback,
	// nothing written). ErrSessionNotFound as RenameSession;
	// ErrTurnNotFound if the session has no such turn, or it is still
	// running. At most 4 requests (the turn's look-up, the write, and a
	// read and a resend when its outcome is unknown).
	SetFeedback(ctx context.Context, sessionID, turnID string, p Principal, f *Feedback) (*Feedback, error)

	// RenameSession sets the title of a session p owns to title
	// (CheckTitle first: ErrInvalidTitle, nothing written) and returns
	// the session as listed. ErrSessionNotFound if it does not exist or p
	// does not own it. The session's list order does not change. At most
	// 2 requests (a write, and a read when its outcome is unknown).
	RenameSession(ctx context.Context, sessionID string, p Principal, title string) (*SessionListing, error)

	// DeleteSession deletes req.SessionID of req.Principal: the session,
	// its turns, checkpoints, queued turns and artifact references (the
	// usage ledger's counts stay). It returns done true once nothing of
	// the session is left, false when req.MaxItems items were removed and
	// more remain: the next call resumes (so does a call after a crash).
	// From its first call the session answers ErrSessionNotFound
	// everywhere, as one that never existed, and leaves its owner's list;
	// once done, its id is free for a new session. ErrSessionNotFound if
	// it does not exist (a repeat of a finished delete) or p does not own
	// it; ErrSessionBusy if a turn of it is running (its lease unexpired),
	// nothing changed. A crashed turn's expired lease is decided first, as
	// a claim decides it. At most 3 + about 1.01 requests per item removed.
	DeleteSession(ctx context.Context, req DeleteRequest) (done bool, err error)

	// EraseSessions deletes every session req.Principal owns, as
	// DeleteSession does, within req.MaxItems items and MaxEraseSessions
	// sessions a call; a session with a running turn is skipped and
	// counted Busy. Repeat until Done: each call resumes where the last
	// stopped. 1 Query of SessionsIndex per 25 sessions, plus the
	// deletes.
	EraseSessions(ctx context.Context, req DeleteRequest) (*Erased, error)
}

// CheckTitle returns title with surrounding spaces trimmed, or
// ErrInvalidTitle (see there).
func CheckTitle(title string) (string, error) {
	t := strings.TrimSpace(title)
	switch {
	case t == "", !utf8.ValidString(t), utf8.RuneCountInString(t) > MaxTitleRunes,
		strings.ContainsFunc(t, IsUnsafePathRune):
		return "", ErrInvalidTitle
	}
	return t, nil
}

// AutoTitle derives a session title from its first user message: the
// text with every run of spaces, controls and other characters
// CheckTitle refuses made one space, cut at the last word boundary within
// AutoTitleRunes characters (at a character when one word is longer, never
// before a combining mark), with "…" when cut. "" when nothing is left.
func AutoTitle(text string) string {
	return cutText(text, AutoTitleRunes)
}

// Preview is the start of an answer as a listed session shows it: the
// text cut as AutoTitle cuts it, at PreviewRunes characters.
func Preview(text string) string {
	return cutText(text, PreviewRunes)
}

// cutText flattens text to one line and cuts it at max characters.
func cutText(text string, max int) string {
	var b strings.Builder
	space := false
	for _, r := range strings.ToValidUTF8(text, " ") {
		if unicode.IsSpace(r) || IsUnsafePathRune(r) {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	runes := []rune(b.String())
	if len(runes) <= max {
		return string(runes)
	}
	cut := max - 1 // room for the ellipsis
	for i := cut; i > cut/2; i-- {
		if runes[i] == ' ' {
			return strings.TrimRight(string(runes[:i]), " ") + "…"
		}
	}
	for cut > 0 && unicode.In(runes[cut], unicode.Mn, unicode.Me) {
		cut--
	}
	return string(runes[:cut]) + "…"
}

// QueryWords returns the words of a list query, lowercased (as titles are
// matched).
func QueryWords(q string) []string {
	return strings.Fields(strings.ToLower(q))
}

// TitleMatches reports whether title contains every word of words (from
// QueryWords), case-insensitively.
func TitleMatches(title string, words []string) bool {
	t := strings.ToLower(title)
	for _, w := range words {
		if !strings.Contains(t, w) {
			return false
		}
	}
	return true
}

// Rating is a thumbs-up or thumbs-down on an answer.
type Rating string

// The ratings of Feedback.
const (
	RatingUp   Rating = "up"
	RatingDown Rating = "down"
)

// MaxFeedbackCommentRunes bounds Feedback.Comment, in characters.
const MaxFeedbackCommentRunes = 1000

// Feedback is the owner's rating of a turn's answer.
type Feedback struct {
	Rating Rating
	// Comment is optional text, at most MaxFeedbackCommentRunes
	// characters; line breaks and tabs are kept.
	Comment string
	// At is when it was given (millisecond precision, the store's clock).
	At time.Time
}

// ErrInvalidFeedback: a rating other than up or down, or a comment that
// is not valid UTF-8, is longer than MaxFeedbackCommentRunes, or holds a
// character IsUnsafePathRune refuses other than a line break or a tab.
var ErrInvalidFeedback = fmt.Errorf("%w: invalid feedback", ErrInvalidRequest)

// CheckFeedback returns ErrInvalidFeedback for f (see there), nil when it
// may be stored.
func CheckFeedback(f Feedback) error {
	switch {
	case f.Rating != RatingUp && f.Rating != RatingDown,
		!utf8.ValidString(f.Comment), utf8.RuneCountInString(f.Comment) > MaxFeedbackCommentRunes,
		strings.ContainsFunc(f.Comment, func(r rune) bool { return r != '\n' && r != '\t' && IsUnsafePathRune(r) }):
		return ErrInvalidFeedback
	}
	return nil
}
