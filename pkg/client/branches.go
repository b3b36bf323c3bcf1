package client

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// Siblings is a turn's sibling group, as pkg/api declares it: the turns
// answered at its place of the conversation in the order they were
// created (TurnIDs), and the turn's position among them (Index, from 0).
type Siblings = api.Siblings

// Turn returns one turn of one of the caller's sessions by id (GET
// {HistoryURL}sessions/{id}/turns/{turnId}), on the active branch or not
// (TurnSummary.Superseded): a version of an answer a page does not list
// is read so. A
// turn the session does not have is a KindHTTP *Error 404 TURN_NOT_FOUND.
func (cv Conversations) Turn(ctx context.Context, sessionID, turnID string) (*TurnSummary, error) {
	c := cv.c
	if c.opts.HistoryURL == "" {
		return nil, ErrNoURL
	}
	if !protocol.IsSafeID(sessionID) || !protocol.IsSafeID(turnID) {
		return nil, ErrInvalidID
	}
	var raw json.RawMessage
	if err := c.getJSON(ctx, joinURL(c.opts.HistoryURL, "/sessions/"+sessionID+"/turns/"+turnID), "turn", &raw); err != nil {
		return nil, err
	}
	t, ok := decodeTurn(raw)
	if !ok || t.TurnID != turnID {
		return nil, invalidResponse("turn", http.StatusOK)
	}
	return t, nil
}

// Select makes a sibling and the turns that followed it on its branch
// the session's active branch (POST
// {HistoryURL}sessions/{id}/turns/{turnId}/select, docs/branches.md): the
// next turn's context and the history pages follow it. Selecting the
// active sibling does nothing. A turn that is not a sibling on the active
// branch is a KindHTTP *Error 409 TURN_NOT_SELECTABLE; a session whose
// turn runs 409 SESSION_BUSY (retryable).
func (cv Conversations) Select(ctx context.Context, sessionID, turnID string) error {
	c := cv.c
	if c.opts.HistoryURL == "" {
		return ErrNoURL
	}
	if !protocol.IsSafeID(sessionID) || !protocol.IsSafeID(turnID) {
		return ErrInvalidID
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, joinURL(c.opts.HistoryURL, "/sessions/"+sessionID+"/turns/"+turnID+"/select"), nil)
	if err != nil {
		return err
	}
	resp, err := c.send(req, "select")
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return invalidResponse("select", resp.StatusCode)
	}
	return nil
}

// ForkOptions choose a fork: the turn of the source's active branch its
// history ends with, and optionally the new session's id (a SafeId; ""
// lets the server choose one) and title ("" gives "Fork of <the
// source's title>").
type ForkOptions struct {
	AtTurnID  string
	SessionID string
	Title     string
}

// Fork creates a new session of the caller whose history is a copy of a
// session's active branch up to and including o.AtTurnID (POST
// {HistoryURL}sessions/{id}/fork) and returns it as listed. The source
// is not changed. The same call again answers the same fork. A turn that
// is not a terminal turn of the active branch is a KindHTTP *Error 404
// TURN_NOT_FOUND; an o.SessionID that names another session 409
// SESSION_CONFLICT; a bad title 400 REQUEST_INVALID_BODY.
func (cv Conversations) Fork(ctx context.Context, sessionID string, o ForkOptions) (*SessionListItem, error) {
	c := cv.c
	if c.opts.HistoryURL == "" {
		return nil, ErrNoURL
	}
	if !protocol.IsSafeID(sessionID) || !protocol.IsSafeID(o.AtTurnID) || o.SessionID != "" && !protocol.IsSafeID(o.SessionID) {
		return nil, ErrInvalidID
	}
	body, err := json.Marshal(api.ForkRequest{AtTurnID: o.AtTurnID, SessionID: o.SessionID, Title: o.Title})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, joinURL(c.opts.HistoryURL, "/sessions/"+sessionID+"/fork"), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := c.send(req, "fork")
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	var item SessionListItem
	if resp.StatusCode != http.StatusCreated || json.NewDecoder(resp.Body).Decode(&item) != nil || !protocol.IsSafeID(item.SessionID) ||
		o.SessionID != "" && item.SessionID != o.SessionID {
		return nil, invalidResponse("fork", resp.StatusCode)
	}
	return &item, nil
}
