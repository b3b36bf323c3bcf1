package client

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"net/url"
	"strconv"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// The session summary, GET {HistoryURL}sessions/{id}
// (docs/design.md#history-and-artifacts-api), as pkg/api declares it.
type (
	// SessionSummary is the summary: SessionSummary.Session is the
	// AgentsKit session envelope (protocol.DecodeSession reads it).
	SessionSummary = api.SessionSummary
	// CurrentTurn is a session's running turn: Sequence is its latest
	// checkpoint's sequence, where a resume continues after
	// (Resume.After).
	CurrentTurn = api.CurrentTurn
	// PendingInteraction is one tool call waiting for the owner's
	// decision; InteractionID is the confirmation's token
	// (Decision.Token).
	PendingInteraction = api.PendingInteraction
)

// TurnSummary is one saved turn of a history page.
type TurnSummary struct {
	TurnID  string `json:"turnId"`
	Ordinal int64  `json:"ordinal"`
	// Status is complete, error or interrupted, or running for a turn
	// still being written, as of its last checkpoint.
	Status  string           `json:"status"`
	Lineage protocol.Lineage `json:"lineage"`
	// Messages are canonical message records, the user message first.
	Messages  []protocol.Message   `json:"-"`
	Artifacts []ArtifactReference  `json:"artifacts"`
	Error     *protocol.Diagnostic `json:"error"`
	Usage     protocol.Usage       `json:"usage"`
	StartedAt string               `json:"startedAt"`
	// CompletedAt is "" when the turn has no completion time.
	CompletedAt string `json:"completedAt"`
	// Feedback is the owner's rating of the answer, nil when none
	// (docs/conversations.md).
	Feedback *api.Feedback `json:"feedback"`
	// Siblings is the turn's sibling group (the answers given at its
	// place, docs/branches.md), nil when it has none.
	Siblings *api.Siblings `json:"siblings"`
	// Superseded is true on a turn read by id (Conversations.Turn) that is not
	// on the session's active branch.
	Superseded bool `json:"superseded"`
}

// TurnPage is one page of GET {HistoryURL}sessions/{id}/turns. The
// server sends NextCursor exactly when HasMore is true; "" when it sent
// none.
type TurnPage struct {
	Turns      []TurnSummary
	NextCursor string
	HasMore    bool
}

// MessagePage is one page of GET {HistoryURL}sessions/{id}/messages: the
// turns of the same page as /turns flattened to their messages, always
// chronological within the page.
type MessagePage struct {
	Messages []protocol.Message
	// Raw are the same messages as received, one JSON object each.
	Raw        []json.RawMessage
	NextCursor string
	HasMore    bool
}

// PageOptions choose a history page.
type PageOptions struct {
	// Limit is the number of turns, 1-100 (0: the server's default, 20).
	Limit int
	// Cursor is the page cursor of the previous page ("" for the first).
	Cursor string
	// Order is "desc" (newest first, the default) or "asc".
	Order string
}

// Page orders.
const (
	OrderAsc  = "asc"
	OrderDesc = "desc"
)

// MaxPageLimit is the largest PageOptions.Limit.
const MaxPageLimit = 100

// historyURL returns {HistoryURL}sessions/{id}{tail}?query.
func (c *Client) historyURL(sessionID, tail string, o PageOptions) (string, error) {
	if c.opts.HistoryURL == "" {
		return "", ErrNoURL
	}
	if !protocol.IsSafeID(sessionID) {
		return "", ErrInvalidID
	}
	u := joinURL(c.opts.HistoryURL, "/sessions/"+sessionID+tail)
	q := url.Values{}
	if o.Limit != 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.Cursor != "" {
		q.Set("cursor", o.Cursor)
	}
	if o.Order != "" {
		q.Set("order", o.Order)
	}
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u, nil
}

// Session returns GET {HistoryURL}sessions/{id}: 404 SESSION_NOT_FOUND
// (a KindHTTP *Error) for a session that does not exist or is another
// caller's.
func (c *Client) Session(ctx context.Context, sessionID string) (*SessionSummary, error) {
	u, err := c.historyURL(sessionID, "", PageOptions{})
	if err != nil {
		return nil, err
	}
	var s SessionSummary
	if err := c.getJSON(ctx, u, "session", &s); err != nil {
		return nil, err
	}
	if s.SessionID != sessionID || s.CurrentTurn != nil && !protocol.IsSafeID(s.CurrentTurn.TurnID) {
		return nil, invalidResponse("session", http.StatusOK)
	}
	return &s, nil
}

// wirePage is a history page as the wire has it.
type wirePage struct {
	Turns      []json.RawMessage `json:"turns"`
	Messages   json.RawMessage   `json:"messages"`
	NextCursor *string           `json:"nextCursor"`
	HasMore    bool              `json:"hasMore"`
}

// Turns returns one page of GET {HistoryURL}sessions/{id}/turns. Messages
// are decoded strictly (protocol.DecodeMessages): a page whose messages
// are not canonical records is a KindInvalidResponse *Error.
func (c *Client) Turns(ctx context.Context, sessionID string, o PageOptions) (*TurnPage, error) {
	u, err := c.historyURL(sessionID, "/turns", o)
	if err != nil {
		return nil, err
	}
	var w wirePage
	if err := c.getJSON(ctx, u, "turns", &w); err != nil {
		return nil, err
	}
	p := &TurnPage{HasMore: w.HasMore, NextCursor: nextCursor(w), Turns: make([]TurnSummary, 0, len(w.Turns))}
	if w.Turns == nil {
		return nil, invalidResponse("turns", http.StatusOK)
	}
	for _, raw := range w.Turns {
		t, ok := decodeTurn(raw)
		if !ok {
			return nil, invalidResponse("turns", http.StatusOK)
		}
		p.Turns = append(p.Turns, *t)
	}
	return p, nil
}

// decodeTurn decodes one turn of a history answer, its messages strictly
// (protocol.DecodeMessages); false when it is not a valid turn.
func decodeTurn(raw json.RawMessage) (*TurnSummary, bool) {
	var t struct {
		TurnSummary
		Messages    json.RawMessage `json:"messages"`
		CompletedAt *string         `json:"completedAt"`
	}
	if json.Unmarshal(raw, &t) != nil || !protocol.IsSafeID(t.TurnID) {
		return nil, false
	}
	msgs, err := protocol.DecodeMessages(t.Messages)
	if err != nil {
		return nil, false
	}
	t.TurnSummary.Messages = msgs
	if t.CompletedAt != nil {
		t.TurnSummary.CompletedAt = *t.CompletedAt
	}
	if g := t.Siblings; g != nil && (g.Count != len(g.TurnIDs) || g.Index < 0 || g.Index >= g.Count) {
		return nil, false
	}
	return &t.TurnSummary, true
}

// Messages returns one page of GET {HistoryURL}sessions/{id}/messages,
// decoded strictly as Turns decodes them. A turn's artifact references are
// in the metadata.artifacts of its last assistant message.
func (c *Client) Messages(ctx context.Context, sessionID string, o PageOptions) (*MessagePage, error) {
	u, err := c.historyURL(sessionID, "/messages", o)
	if err != nil {
		return nil, err
	}
	var w wirePage
	if err := c.getJSON(ctx, u, "messages", &w); err != nil {
		return nil, err
	}
	p := &MessagePage{HasMore: w.HasMore, NextCursor: nextCursor(w)}
	msgs, err := protocol.DecodeMessages(w.Messages)
	if err != nil || json.Unmarshal(w.Messages, &p.Raw) != nil {
		return nil, invalidResponse("messages", http.StatusOK)
	}
	p.Messages = msgs
	return p, nil
}

// nextCursor is a wire page's next page cursor, "" when null.
func nextCursor(w wirePage) string {
	if w.NextCursor == nil {
		return ""
	}
	return *w.NextCursor
}

// TurnPages walks the pages of GET {HistoryURL}sessions/{id}/turns from
// o, following the page cursors until a page says no more follow (HasMore
// false, or no cursor); the walk ends after the first error, which it
// yields.
func (c *Client) TurnPages(ctx context.Context, sessionID string, o PageOptions) iter.Seq2[*TurnPage, error] {
	return pages(o, func(o PageOptions) (*TurnPage, string, error) {
		p, err := c.Turns(ctx, sessionID, o)
		if err != nil {
			return nil, "", err
		}
		return p, more(p.HasMore, p.NextCursor), nil
	})
}

// MessagePages walks the pages of GET {HistoryURL}sessions/{id}/messages
// as TurnPages walks /turns.
func (c *Client) MessagePages(ctx context.Context, sessionID string, o PageOptions) iter.Seq2[*MessagePage, error] {
	return pages(o, func(o PageOptions) (*MessagePage, string, error) {
		p, err := c.Messages(ctx, sessionID, o)
		if err != nil {
			return nil, "", err
		}
		return p, more(p.HasMore, p.NextCursor), nil
	})
}

// more is the cursor of the page after one that says hasMore with
// cursor next: "" when none follows.
func more(hasMore bool, next string) string {
	if !hasMore {
		return ""
	}
	return next
}

// pages yields get's pages from o, each next one at the cursor the last
// returned, until it returns "".
func pages[P any](o PageOptions, get func(PageOptions) (*P, string, error)) iter.Seq2[*P, error] {
	return func(yield func(*P, error) bool) {
		for {
			p, next, err := get(o)
			if !yield(p, err) || err != nil || next == "" {
				return
			}
			o.Cursor = next
		}
	}
}

// AllTurns returns every turn of a session, oldest first, read
// MaxPageLimit to a page.
func (c *Client) AllTurns(ctx context.Context, sessionID string) ([]TurnSummary, error) {
	var all []TurnSummary
	for p, err := range c.TurnPages(ctx, sessionID, PageOptions{Limit: MaxPageLimit, Order: OrderAsc}) {
		if err != nil {
			return nil, err
		}
		all = append(all, p.Turns...)
	}
	return all, nil
}
