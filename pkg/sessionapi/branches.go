package sessionapi

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/httpedge"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// branchRoutes are the history function's routes of versions and forks
// (docs/branches.md).
type branchRoutes struct{ *server }

// getTurn serves GET /sessions/{id}/turns/{turnId}: 200 the turn as
// /turns lists it, found by id whether or not it is on the active branch
// (a sibling that is not active says "superseded": true). A session the
// caller does not own is 404 SESSION_NOT_FOUND; a turn it does not have
// 404 TURN_NOT_FOUND.
func (s branchRoutes) getTurn(w http.ResponseWriter, r *http.Request, rc *requestContext) error {
	p, err := s.principal(r)
	if err != nil {
		return err
	}
	sid, tid, err := turnPath(r, rc)
	if err != nil {
		return err
	}
	t, err := s.store.FindTurn(r.Context(), sid, tid, p)
	if err != nil {
		return fmt.Errorf("find turn: %w", err)
	}
	return writeJSON(w, turnSummary(t))
}

// selectTurn serves POST /sessions/{id}/turns/{turnId}/select (no body
// is read): 204 once the turn, a sibling whose place is on the active
// branch, and the turns that followed it are the active branch
// (chat.BranchStore.SelectTurn); selecting the active one is 204 too.
// 409 TURN_NOT_SELECTABLE for a turn that is no such sibling, 409
// SESSION_BUSY (retryable) while a turn runs or waits in the queue, 404
// as getTurn.
func (s branchRoutes) selectTurn(w http.ResponseWriter, r *http.Request, rc *requestContext) error {
	p, err := s.principal(r)
	if err != nil {
		return err
	}
	sid, tid, err := turnPath(r, rc)
	if err != nil {
		return err
	}
	if err := s.store.SelectTurn(r.Context(), sid, tid, p); err != nil {
		return fmt.Errorf("select turn: %w", err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// fork serves POST /sessions/{id}/fork with an api.ForkRequest: 201 with
// the new session as listed (api.SessionListItem). The body is read by
// the strict reader: one object with the string member "atTurnId" and
// the optional string members "sessionId" (a SafeId) and "title"
// (chat.CheckTitle), nothing else (400 REQUEST_INVALID_BODY otherwise).
// A session the caller does not own is 404 SESSION_NOT_FOUND; a turn that
// is not a terminal turn of its active branch 404 TURN_NOT_FOUND; a
// sessionId that names another session 409 SESSION_CONFLICT. The same
// request again answers the same fork.
func (s branchRoutes) fork(w http.ResponseWriter, r *http.Request, rc *requestContext) error {
	if err := httpedge.RequireJSON(r); err != nil {
		return err
	}
	p, sid, err := s.sessionCaller(r, rc)
	if err != nil {
		return err
	}
	var in struct {
		AtTurnID  *string `json:"atTurnId"`
		SessionID *string `json:"sessionId"`
		Title     *string `json:"title"`
	}
	if err := s.readStrict(w, r, &in); err != nil {
		return err
	}
	if in.AtTurnID == nil || !protocol.IsSafeID(*in.AtTurnID) || in.SessionID != nil && !protocol.IsSafeID(*in.SessionID) {
		return httpedge.ErrInvalidBody
	}
	req := chat.ForkRequest{SessionID: sid, AtTurnID: *in.AtTurnID, NewSessionID: newSessionID(), Principal: p}
	if in.SessionID != nil {
		req.NewSessionID = *in.SessionID
	}
	if in.Title != nil {
		if _, err := chat.CheckTitle(*in.Title); err != nil {
			return fmt.Errorf("%w: title", httpedge.ErrInvalidBody)
		}
		req.Title = *in.Title
	}
	l, err := s.store.ForkSession(r.Context(), req)
	switch {
	case errors.Is(err, chat.ErrInvalidRequest):
		return fmt.Errorf("%w: fork", httpedge.ErrInvalidBody)
	case err != nil:
		return fmt.Errorf("fork session: %w", err)
	}
	w.WriteHeader(http.StatusCreated)
	return writeJSON(w, listItem(l))
}

// newSessionID returns a fresh random session id: 32 hexadecimal digits.
func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// siblingsOf is a turn's sibling group on the wire, nil when it has none.
func siblingsOf(t *chat.Turn) *api.Siblings {
	g := t.Siblings
	i := g.Index(t.Ordinal)
	if i < 0 {
		return nil
	}
	out := &api.Siblings{Index: i, Count: len(g.Members), TurnIDs: make([]string, len(g.Members))}
	for j, m := range g.Members {
		out.TurnIDs[j] = m.TurnID
	}
	return out
}

// withSiblings returns msgs with t's siblings, when it has any, in the
// metadata.siblings of the last assistant message (as withArtifacts
// places artifacts), other metadata kept. msgs is not modified.
func withSiblings(msgs []protocol.Message, t *chat.Turn) ([]protocol.Message, error) {
	g := siblingsOf(t)
	if g == nil {
		return msgs, nil
	}
	return withAnswerMember(msgs, "siblings", g)
}
