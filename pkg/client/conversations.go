package client

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// The list of sessions as pkg/api declares it.
type (
	// SessionList is one page of the caller's sessions; NextCursor is nil
	// on the last page.
	SessionList = api.SessionList
	// SessionListItem is one session of it: its title (nil until it has
	// one), when its last turn ended, and that turn's status and preview.
	SessionListItem = api.SessionListItem
)

// Conversations are the calls of the caller's list of sessions on the
// history function (docs/conversations.md): GET {HistoryURL}sessions and
// PATCH {HistoryURL}sessions/{id}, and of the versions of their answers
// (docs/branches.md): Turn, Select and Fork.
type Conversations struct{ c *Client }

// Conversations returns the calls of the caller's list of sessions.
func (c *Client) Conversations() Conversations { return Conversations{c} }

// ListOptions choose a page of the list.
type ListOptions struct {
	// Limit is the number of sessions, 1-100 (0: the server's default, 20).
	Limit int
	// Cursor is the previous page's NextCursor ("" for the first page).
	Cursor string
	// Query keeps the sessions whose title contains each of its words
	// (case-insensitive; at most 100 characters and 5 words).
	Query string
}

// List returns one page of the caller's sessions, most recently active
// first. A bad limit or query is a KindHTTP *Error 400
// REQUEST_INVALID_QUERY, a cursor that is not this caller's 400
// REQUEST_INVALID_CURSOR.
func (cv Conversations) List(ctx context.Context, o ListOptions) (*SessionList, error) {
	c := cv.c
	if c.opts.HistoryURL == "" {
		return nil, ErrNoURL
	}
	u := joinURL(c.opts.HistoryURL, "/sessions")
	q := url.Values{}
	if o.Limit != 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.Cursor != "" {
		q.Set("cursor", o.Cursor)
	}
	if o.Query != "" {
		q.Set("q", o.Query)
	}
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	var l SessionList
	if err := c.getJSON(ctx, u, "sessions", &l); err != nil {
		return nil, err
	}
	for _, s := range l.Sessions {
		if !protocol.IsSafeID(s.SessionID) {
			return nil, invalidResponse("sessions", http.StatusOK)
		}
	}
	return &l, nil
}

// Rename sets a session's title and returns the session as listed. A
// title the server refuses (empty, over 120 characters, a control or
// invisible character) is a KindHTTP *Error 400 REQUEST_INVALID_BODY;
// another caller's session 404 SESSION_NOT_FOUND.
func (cv Conversations) Rename(ctx context.Context, sessionID, title string) (*SessionListItem, error) {
	c := cv.c
	if c.opts.HistoryURL == "" {
		return nil, ErrNoURL
	}
	if !protocol.IsSafeID(sessionID) {
		return nil, ErrInvalidID
	}
	body, err := json.Marshal(api.RenameRequest{Title: title})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPatch, joinURL(c.opts.HistoryURL, "/sessions/"+sessionID), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := c.send(req, "rename")
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	var item SessionListItem
	if json.NewDecoder(resp.Body).Decode(&item) != nil || item.SessionID != sessionID {
		return nil, invalidResponse("rename", resp.StatusCode)
	}
	return &item, nil
}

// Feedback is the owner's rating of a turn's answer, as pkg/api declares
// it: Rating "up" or "down", an optional Comment (at most 1,000
// characters), and CreatedAt as the server stored it.
type Feedback = api.Feedback

// SetFeedback rates a turn's answer (PUT
// {HistoryURL}sessions/{id}/turns/{turnId}/feedback), replacing an earlier
// rating, and returns it as stored; nil removes it (DELETE) and returns
// nil. A rating other than up or down, or a comment the server refuses,
// is a KindHTTP *Error 400 REQUEST_INVALID_BODY; a turn that is running or
// unknown 404 TURN_NOT_FOUND.
func (cv Conversations) SetFeedback(ctx context.Context, sessionID, turnID string, f *Feedback) (*Feedback, error) {
	c := cv.c
	if c.opts.HistoryURL == "" {
		return nil, ErrNoURL
	}
	if !protocol.IsSafeID(sessionID) || !protocol.IsSafeID(turnID) {
		return nil, ErrInvalidID
	}
	u := joinURL(c.opts.HistoryURL, "/sessions/"+sessionID+"/turns/"+turnID+"/feedback")
	method, body := http.MethodDelete, []byte(nil)
	if f != nil {
		var err error
		if body, err = json.Marshal(Feedback{Rating: f.Rating, Comment: f.Comment}); err != nil {
			return nil, err
		}
		method = http.MethodPut
	}
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if f != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.send(req, "feedback")
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if f == nil {
		return nil, nil
	}
	var stored Feedback
	if json.NewDecoder(resp.Body).Decode(&stored) != nil || stored.Rating != f.Rating {
		return nil, invalidResponse("feedback", resp.StatusCode)
	}
	return &stored, nil
}

// DeleteProgress is how far a delete or an erase went, as pkg/api
// declares it.
type DeleteProgress = api.DeleteProgress

// The statuses of DeleteProgress.
const (
	DeleteStatusDeleting = api.DeleteStatusDeleting
	DeleteStatusDeleted  = api.DeleteStatusDeleted
)

// maxDeleteCalls bounds the requests Delete and Erase send for one call.
const maxDeleteCalls = 1000

// Delete deletes one of the caller's sessions (DELETE
// {HistoryURL}sessions/{id}): its turns, checkpoints, queued turns and
// artifact references; the usage ledger keeps its counts. It sends the
// request again while the server answers 202 (a long session is deleted
// a share of its items a call) and returns once nothing is left. A
// session that is not the caller's, or no longer exists (a repeat of a
// finished delete), is a KindHTTP *Error 404 SESSION_NOT_FOUND; one with
// a running turn 409 SESSION_BUSY (retryable: stop the turn or wait for
// it), with nothing deleted.
func (cv Conversations) Delete(ctx context.Context, sessionID string) error {
	c := cv.c
	if c.opts.HistoryURL == "" {
		return ErrNoURL
	}
	if !protocol.IsSafeID(sessionID) {
		return ErrInvalidID
	}
	u := joinURL(c.opts.HistoryURL, "/sessions/"+sessionID)
	for range maxDeleteCalls {
		p, err := cv.deleteCall(ctx, u, "delete")
		if err != nil || p == nil {
			return err
		}
	}
	return invalidResponse("delete", http.StatusAccepted)
}

// Erase deletes every session of the principal subject in the caller's
// tenant (DELETE {HistoryURL}principals/{subject}/sessions): only the
// tenant's trusted principal may (others get a KindHTTP *Error 403
// REQUEST_FORBIDDEN). It repeats the request until the server reports
// nothing left, or until a call deleted nothing while sessions stay busy
// (their turns running): it then returns the progress so far, Status
// "deleting", for the caller to try again later. Deleted sums every
// call's.
func (cv Conversations) Erase(ctx context.Context, subject string) (*DeleteProgress, error) {
	c := cv.c
	if c.opts.HistoryURL == "" {
		return nil, ErrNoURL
	}
	if subject == "" {
		return nil, ErrInvalidID
	}
	u := joinURL(c.opts.HistoryURL, "/principals/"+url.PathEscape(subject)+"/sessions")
	total := &DeleteProgress{Status: api.DeleteStatusDeleting}
	for range maxDeleteCalls {
		p, err := cv.deleteCall(ctx, u, "erase")
		if err != nil {
			return nil, err
		}
		if p == nil {
			return nil, invalidResponse("erase", http.StatusNoContent)
		}
		total.Deleted += p.Deleted
		total.Busy = p.Busy
		total.Status = p.Status
		if p.Status == api.DeleteStatusDeleted || p.Deleted == 0 && p.Busy > 0 {
			return total, nil
		}
	}
	return total, nil
}

// deleteCall sends one DELETE to u and returns its progress, or nil for
// a 204 (nothing left).
func (cv Conversations) deleteCall(ctx context.Context, u, op string) (*DeleteProgress, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := cv.c.send(req, op)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode == http.StatusNoContent {
		return nil, nil
	}
	var p DeleteProgress
	if json.NewDecoder(resp.Body).Decode(&p) != nil || p.Status != api.DeleteStatusDeleting && p.Status != api.DeleteStatusDeleted {
		return nil, invalidResponse(op, resp.StatusCode)
	}
	return &p, nil
}

// Export writes the whole conversation of one of the caller's sessions
// to w as one JSON document (GET {HistoryURL}sessions/{id}/export,
// docs/conversations.md), as the server writes it, and returns the bytes
// written. A document the server had to cut short (it ends with
// "complete":false) is an error after its bytes were written: w then
// holds an incomplete document. A session that is not the caller's is a
// KindHTTP *Error 404 SESSION_NOT_FOUND.
func (cv Conversations) Export(ctx context.Context, sessionID string, w io.Writer) (int64, error) {
	c := cv.c
	if c.opts.HistoryURL == "" {
		return 0, ErrNoURL
	}
	if !protocol.IsSafeID(sessionID) {
		return 0, ErrInvalidID
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, joinURL(c.opts.HistoryURL, "/sessions/"+sessionID+"/export"), nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.send(req, "export")
	if err != nil {
		return 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	tail := &tailWriter{}
	n, err := io.Copy(io.MultiWriter(w, tail), resp.Body)
	if err != nil {
		return n, err
	}
	if !bytes.HasSuffix(bytes.TrimSpace(tail.b), []byte(`"complete":true}`)) {
		return n, invalidResponse("export", resp.StatusCode)
	}
	return n, nil
}

// tailWriter keeps the last bytes written to it.
type tailWriter struct{ b []byte }

func (t *tailWriter) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 64 {
		t.b = t.b[len(t.b)-64:]
	}
	return len(p), nil
}
