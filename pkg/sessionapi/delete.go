package sessionapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/attach"
	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/httpedge"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// Deleting, exporting and erasing (docs/conversations.md#delete-export-and-erase).

// DeleteProgress is the body of a 202 answer to DELETE /sessions/{id}
// and of DELETE /principals/{subject}/sessions, as pkg/api declares it.
type DeleteProgress = api.DeleteProgress

// The statuses of DeleteProgress.
const (
	StatusDeleting = api.DeleteStatusDeleting
	StatusDeleted  = api.DeleteStatusDeleted
)

// deleteSession serves DELETE /sessions/{id}
// (chat.ConversationStore.DeleteSession): 204 once nothing of the session
// is left; 202 DeleteProgress "deleting" when the call removed its share
// of a long session's items (send it again: each call resumes). From the
// first call the session is 404 SESSION_NOT_FOUND on every route. A
// session the caller does not own, or none (a repeat of a finished
// delete), is 404 SESSION_NOT_FOUND; one with a running turn 409
// SESSION_BUSY (retryable: stop the turn, or wait for it to end), with
// nothing deleted.
func (s *server) deleteSession(w http.ResponseWriter, r *http.Request, rc *requestContext) error {
	p, id, err := s.sessionCaller(r, rc)
	if err != nil {
		return err
	}
	owner := attach.Owner(p.Tenant, p.Subject)
	done, err := s.store.DeleteSession(r.Context(), chat.DeleteRequest{Principal: p, SessionID: id})
	switch {
	case errors.Is(err, chat.ErrSessionNotFound):
		// A repeat of a finished delete: what a failed removal of its
		// attachments left is removed now (the prefix holds only the
		// caller's own uploads, whoever owns the session).
		if rerr := removeAttachments(r.Context(), s.attachments, attach.SessionPrefix(owner, id)); rerr != nil {
			return rerr
		}
		return err
	case err != nil:
		return fmt.Errorf("delete session: %w", err)
	case done:
		// The session's items are gone: its attachments go before the
		// answer says nothing is left (a failure is a 500; the client's
		// retry meets the case above).
		if err := removeAttachments(r.Context(), s.attachments, attach.SessionPrefix(owner, id)); err != nil {
			return err
		}
	}
	if !done {
		b, err := marshal(DeleteProgress{Status: StatusDeleting})
		if err != nil {
			return err
		}
		writeBody(w, http.StatusAccepted, b)
		return nil
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// erase serves DELETE /principals/{subject}/sessions: the tenant's
// trusted principal deletes every session of the principal {subject} of
// its own tenant (chat.ConversationStore.EraseSessions) and gets 200
// DeleteProgress: "deleted" when none is left, "deleting" when more
// remain (long sessions, or Busy ones whose turns still run: send it
// again). Anyone else is 403 REQUEST_FORBIDDEN before any lookup. The
// usage ledger keeps its counts. {subject} is any non-empty subject of at
// most 256 bytes of valid UTF-8 without control characters (404
// REQUEST_NOT_FOUND otherwise).
func (s *server) erase(w http.ResponseWriter, r *http.Request, rc *requestContext) error {
	if err := httpedge.RequireMethod(w, r, http.MethodDelete); err != nil {
		return err
	}
	p, err := s.principal(r)
	if err != nil {
		return err
	}
	if !p.Trusted {
		return auth.ErrForbidden
	}
	subject := r.PathValue("subject")
	if !validSubject(subject) {
		return httpedge.ErrNotFound
	}
	got, err := s.store.EraseSessions(r.Context(), chat.DeleteRequest{Principal: chat.Principal{Subject: subject, Tenant: p.Tenant}})
	if err != nil {
		return fmt.Errorf("erase sessions: %w", err)
	}
	out := DeleteProgress{Status: StatusDeleting, Deleted: got.Deleted, Busy: got.Busy}
	if got.Done {
		// Every session is gone: so go all of the principal's attachments
		// (a failure is a 500, and the retry finds nothing but them).
		if err := removeAttachments(r.Context(), s.attachments, attach.OwnerPrefix(attach.Owner(p.Tenant, subject))); err != nil {
			return err
		}
		out.Status = StatusDeleted
	}
	s.log.InfoContext(r.Context(), "sessions erased", "tenant", p.Tenant, "deleted", got.Deleted, "busy", got.Busy, "done", got.Done)
	return writeJSON(w, out)
}

// removeAttachments removes every attachment under prefix from store
// (nil: attachments are off, nothing to do).
func removeAttachments(ctx context.Context, store attach.Store, prefix string) error {
	if store == nil {
		return nil
	}
	if _, err := store.DeletePrefix(ctx, prefix); err != nil {
		return fmt.Errorf("remove attachments: %w", err)
	}
	return nil
}

// exportPage is how many turns the export reads a page.
const exportPage = 100

// exportSession serves GET /sessions/{id}/export: the whole conversation
// as one JSON document, written a page of turns at a time (one Query per
// exportPage turns) so that its size is not held in memory:
//
//	{"format":"turnstream.export","version":1,"sessionId":...,"exportedAt":ISO,
//	 "session":<the agentskit.chat.session v1 envelope>,
//	 "turns":[<each turn as GET /sessions/{id}/turns shows it, oldest first>...],
//	 "complete":true}
//
// Each turn carries its messages as AgentsKit memory records, its
// artifact references and its feedback. A failure after the document
// started ends it with "complete":false and "error" (the protocol's
// diagnostic): a reader must check "complete". Errors before it started
// are the usual error responses (404 SESSION_NOT_FOUND for a session the
// caller does not own). Behind a BUFFERED function URL the response is
// capped by Lambda (6 MB); the dev server and a streaming URL send it as
// it is written.
func (s *server) exportSession(w http.ResponseWriter, r *http.Request, rc *requestContext) error {
	p, id, err := s.sessionCaller(r, rc)
	if err != nil {
		return err
	}
	sess, err := s.store.GetSession(r.Context(), id, p)
	if err != nil {
		return fmt.Errorf("export session: %w", err)
	}
	req := chat.ListRequest{SessionID: id, Principal: p, Order: chat.OrderAsc, Limit: exportPage}
	page, err := s.store.ListTurns(r.Context(), req)
	if err != nil {
		return fmt.Errorf("export session: %w", err)
	}
	head, err := marshal(struct {
		Format     string `json:"format"`
		Version    int    `json:"version"`
		SessionID  string `json:"sessionId"`
		ExportedAt string `json:"exportedAt"`
		Session    any    `json:"session"`
	}{"turnstream.export", 1, id, protocol.FormatTime(s.now()), sessionEnvelope(sess, s.now())})
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Disposition", `attachment; filename="`+id+`.json"`)
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	write := func(b []byte) bool {
		_, err := w.Write(b)
		return err == nil
	}
	if !write(head[:len(head)-1]) || !write([]byte(`,"turns":[`)) {
		return nil // the client left
	}
	first := true
	for {
		for i := range page.Turns {
			b, err := marshal(turnSummary(&page.Turns[i]))
			if err != nil {
				return s.endExport(w, r, rc, err)
			}
			if !first && !write([]byte(",")) || !write(b) {
				return nil
			}
			first = false
		}
		if fl != nil {
			fl.Flush()
		}
		if !page.HasMore || page.NextCursor == "" {
			break
		}
		req.Cursor = page.NextCursor
		if page, err = s.store.ListTurns(r.Context(), req); err != nil {
			return s.endExport(w, r, rc, fmt.Errorf("export session: %w", err))
		}
	}
	write([]byte(`],"complete":true}`))
	return nil
}

// endExport ends an export document cut short by err with
// "complete":false and the error's diagnostic; the status line went out
// already, so err is logged here rather than answered.
func (s *server) endExport(w http.ResponseWriter, r *http.Request, rc *requestContext, err error) error {
	d := httpedge.Diagnose(r.Context(), err)
	rc.err = err
	b, merr := marshal(d)
	if merr != nil {
		return nil
	}
	_, _ = w.Write(append(append([]byte(`],"complete":false,"error":`), b...), '}'))
	return nil
}

// validSubject reports whether s can be a principal's subject in a path:
// 1..256 bytes of valid UTF-8 without a character chat.IsUnsafePathRune
// refuses.
func validSubject(s string) bool {
	return s != "" && len(s) <= 256 && utf8.ValidString(s) && !strings.ContainsFunc(s, chat.IsUnsafePathRune)
}
