package sessionapi

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/httpedge"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/telemetry"
)

// listSessions serves GET /sessions: one page of the caller's sessions
// (chat.ConversationStore.ListSessions), most recently active first.
//
//	limit   decimal digits only, 1..chat.MaxSessionPageLimit; default chat.DefaultSessionPageLimit
//	cursor  opaque, bound to the caller; absent or empty means the first page
//	q       words the titles must contain (case-insensitive), at most
//	        chat.MaxSessionQueryRunes characters and chat.MaxSessionQueryWords words
//
// A repeated parameter, an invalid limit or q, or a query that is not
// valid URL encoding is 400 REQUEST_INVALID_QUERY; a cursor that is
// malformed, tampered or another principal's 400 REQUEST_INVALID_CURSOR.
// Other parameters are ignored.
func (s *server) listSessions(w http.ResponseWriter, r *http.Request, _ *requestContext) error {
	p, err := s.principal(r)
	if err != nil {
		return err
	}
	req, err := parseSessionQuery(r.URL.RawQuery)
	if err != nil {
		return err
	}
	req.Principal = p
	page, err := s.store.ListSessions(r.Context(), req)
	if err != nil {
		return fmt.Errorf("list sessions: %w", err)
	}
	out := api.SessionList{Sessions: make([]api.SessionListItem, 0, len(page.Sessions))}
	for i := range page.Sessions {
		out.Sessions = append(out.Sessions, listItem(&page.Sessions[i]))
	}
	if page.NextCursor != "" {
		out.NextCursor = &page.NextCursor
	}
	return writeJSON(w, out)
}

// parseSessionQuery validates the query of GET /sessions (see
// listSessions).
func parseSessionQuery(raw string) (chat.SessionListRequest, error) {
	var req chat.SessionListRequest
	values, err := url.ParseQuery(raw)
	if err != nil {
		return req, fmt.Errorf("%w: undecodable query", httpedge.ErrInvalidQuery)
	}
	for _, name := range []string{"limit", "cursor", "q"} {
		if len(values[name]) > 1 {
			return req, fmt.Errorf("%w: %s repeated", httpedge.ErrInvalidQuery, name)
		}
	}
	if vs, ok := values["limit"]; ok {
		n, ok := parseLimit(vs[0])
		if !ok || n > chat.MaxSessionPageLimit {
			return req, fmt.Errorf("%w: limit", httpedge.ErrInvalidQuery)
		}
		req.Limit = n
	}
	if vs, ok := values["cursor"]; ok {
		req.Cursor = vs[0]
	}
	if vs, ok := values["q"]; ok {
		req.Query = vs[0]
	}
	if _, err := req.Normalized(); err != nil {
		return req, fmt.Errorf("%w: q", httpedge.ErrInvalidQuery)
	}
	return req, nil
}

// session serves /sessions/{id}: GET reads the session (getSession),
// PATCH renames it (renameSession). Another method is 405 with Allow:
// GET, PATCH.
func (s *server) session(w http.ResponseWriter, r *http.Request, rc *requestContext) error {
	if err := httpedge.RequireMethod(w, r, http.MethodGet, http.MethodPatch, http.MethodDelete); err != nil {
		return err
	}
	switch r.Method {
	case http.MethodPatch:
		return s.renameSession(w, r, rc)
	case http.MethodDelete:
		return s.deleteSession(w, r, rc)
	}
	return s.getSession(w, r, rc)
}

// renameSession serves PATCH /sessions/{id} with an api.RenameRequest:
// 200 with the session as listed (api.SessionListItem). The body is read
// by the strict reader: exactly one object with the one string member
// "title" (any other member, a duplicate, null or trailing data is 400
// REQUEST_INVALID_BODY); a title chat.CheckTitle refuses is 400
// REQUEST_INVALID_BODY too, and nothing is written. A session the caller
// does not own is 404 SESSION_NOT_FOUND, as one nobody has.
func (s *server) renameSession(w http.ResponseWriter, r *http.Request, rc *requestContext) error {
	if err := httpedge.RequireJSON(r); err != nil {
		return err
	}
	p, id, err := s.sessionCaller(r, rc)
	if err != nil {
		return err
	}
	var in struct {
		Title *string `json:"title"`
	}
	if err := s.readStrict(w, r, &in); err != nil {
		return err
	}
	if in.Title == nil {
		return httpedge.ErrInvalidBody
	}
	l, err := s.store.RenameSession(r.Context(), id, p, *in.Title)
	switch {
	case errors.Is(err, chat.ErrInvalidTitle):
		return fmt.Errorf("%w: title", httpedge.ErrInvalidBody)
	case err != nil:
		return fmt.Errorf("rename session: %w", err)
	}
	return writeJSON(w, listItem(l))
}

// listItem is a listed session on the wire.
func listItem(l *chat.SessionListing) api.SessionListItem {
	item := api.SessionListItem{SessionID: l.SessionID, CreatedAt: protocol.FormatTime(l.CreatedAt)}
	if l.Title != "" {
		title := l.Title
		item.Title = &title
	}
	if !l.ActiveAt.IsZero() {
		at := protocol.FormatTime(l.ActiveAt)
		item.UpdatedAt = &at
	}
	if l.LastStatus != "" {
		item.LastTurn = &api.ListedTurn{Status: string(l.LastStatus), Preview: l.Preview}
	}
	return item
}

// feedback serves /sessions/{id}/turns/{turnId}/feedback: PUT sets the
// owner's feedback on a terminal turn (200 api.Feedback as stored),
// replacing any earlier one; DELETE removes it (204). The PUT body is
// read by the strict reader: one object with "rating" ("up" or "down")
// and an optional string "comment", nothing else (400
// REQUEST_INVALID_BODY otherwise, as for a comment chat.CheckFeedback
// refuses). A session the caller does not own is 404 SESSION_NOT_FOUND;
// a turn it does not have, or one still running, 404 TURN_NOT_FOUND.
func (s *server) feedback(w http.ResponseWriter, r *http.Request, rc *requestContext) error {
	if err := httpedge.RequireMethod(w, r, http.MethodPut, http.MethodDelete); err != nil {
		return err
	}
	if r.Method == http.MethodPut {
		if err := httpedge.RequireJSON(r); err != nil {
			return err
		}
	}
	p, err := s.principal(r)
	if err != nil {
		return err
	}
	sid, tid, err := turnPath(r, rc)
	if err != nil {
		return err
	}
	if r.Method == http.MethodDelete {
		if _, err := s.store.SetFeedback(r.Context(), sid, tid, p, nil); err != nil {
			return fmt.Errorf("remove feedback: %w", err)
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	var in struct {
		Rating  *string `json:"rating"`
		Comment *string `json:"comment"`
	}
	if err := s.readStrict(w, r, &in); err != nil {
		return err
	}
	if in.Rating == nil {
		return httpedge.ErrInvalidBody
	}
	f := &chat.Feedback{Rating: chat.Rating(*in.Rating)}
	if in.Comment != nil {
		f.Comment = *in.Comment
	}
	stored, err := s.store.SetFeedback(r.Context(), sid, tid, p, f)
	switch {
	case errors.Is(err, chat.ErrInvalidFeedback):
		return fmt.Errorf("%w: feedback", httpedge.ErrInvalidBody)
	case err != nil:
		return fmt.Errorf("set feedback: %w", err)
	}
	telemetry.ScopeFrom(r.Context()).SetFeedback(string(stored.Rating))
	return writeJSON(w, feedbackOf(stored))
}

// feedbackOf is a turn's feedback on the wire, nil when none.
func feedbackOf(f *chat.Feedback) *api.Feedback {
	if f == nil {
		return nil
	}
	return &api.Feedback{Rating: string(f.Rating), Comment: f.Comment, CreatedAt: protocol.FormatTime(f.At)}
}

// withFeedback returns msgs with f, when set, in the metadata.feedback of
// the last assistant message (as withArtifacts places artifacts), other
// metadata kept. msgs is not modified.
func withFeedback(msgs []protocol.Message, f *chat.Feedback) ([]protocol.Message, error) {
	if f == nil {
		return msgs, nil
	}
	return withAnswerMember(msgs, "feedback", feedbackOf(f))
}

// readStrict reads r's body under the cap (413 REQUEST_TOO_LARGE above
// it) and decodes it into v with the strict reader, unknown members
// refused: any other failure is httpedge.ErrInvalidBody.
func (s *server) readStrict(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := httpedge.ReadBody(r.Context(), w, r, s.maxBody, httpedge.ErrInvalidBody)
	if err != nil {
		return err
	}
	if protocol.UnmarshalStrict(body, v, protocol.RejectUnknownMembers) != nil {
		return httpedge.ErrInvalidBody
	}
	return nil
}
