package sessionapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/httpedge"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// The bodies of GET /sessions/{id} (docs/design.md#history-and-artifacts-api),
// declared once in pkg/api.
type (
	// SessionSummary is the body of GET /sessions/{id}.
	SessionSummary = api.SessionSummary
	// CurrentTurn is a session's running turn.
	CurrentTurn = api.CurrentTurn
	// QueuedTurn is a queued turn of the session summary.
	QueuedTurn = api.QueuedTurn
	// PendingInteraction is a tool call the session waits for a decision on.
	PendingInteraction = api.PendingInteraction
	// PendingApproval is the data of a PendingInteraction.
	PendingApproval = api.PendingApproval
)

// InputPreviewRunes bounds QueuedTurn.InputPreview.
const InputPreviewRunes = api.InputPreviewRunes

// inputPreview returns the first InputPreviewRunes characters of input,
// with "…" when it is longer.
func inputPreview(input string) string {
	n := 0
	for i := range input {
		if n == InputPreviewRunes {
			return input[:i] + "…"
		}
		n++
	}
	return input
}

// queuedTurns lists the session's waiting queued turns (one more read of
// the session and one Query, only when sess says some wait).
func (s *server) queuedTurns(ctx context.Context, sess *chat.Session, p chat.Principal) ([]QueuedTurn, error) {
	out := []QueuedTurn{}
	if len(chat.Waiting(sess.Queue)) == 0 {
		return out, nil
	}
	qs, err := s.store.QueuedTurns(ctx, sess.ID, p)
	if err != nil {
		return nil, fmt.Errorf("queued turns: %w", err)
	}
	for i, q := range qs {
		out = append(out, QueuedTurn{TurnID: q.TurnID, Position: i + 1, InputPreview: inputPreview(q.Message.Content),
			QueuedAt: protocol.FormatTime(q.QueuedAt), ExpiresAt: q.ExpiresAt.UnixMilli()})
	}
	return out, nil
}

// TurnSummary is one turn of GET /sessions/{id}/turns (docs/design.md#history-and-artifacts-api).
//
//	{"turnId","ordinal","status","lineage","messages":[...],"artifacts":[...],"error":Diagnostic|null,"usage","startedAt","completedAt":string|null,"expiresAt":number|null,"feedback":Feedback|null,"siblings"?:Siblings,"superseded"?:true}
type TurnSummary struct {
	TurnID  string `json:"turnId"`
	Ordinal int64  `json:"ordinal"`
	// Status is complete, error or interrupted (history lists saved turns).
	Status  chat.TurnStatus  `json:"status"`
	Lineage protocol.Lineage `json:"lineage"`
	// Messages are the turn's canonical message records exactly as stored,
	// the user message first.
	Messages []protocol.Message `json:"messages"`
	// Artifacts are the turn's artifact references, [] when none.
	Artifacts []chat.ArtifactReference `json:"artifacts"`
	Error     *protocol.Diagnostic     `json:"error"`
	Usage     protocol.Usage           `json:"usage"`
	StartedAt string                   `json:"startedAt"`
	// CompletedAt is null when the turn has no completion time.
	CompletedAt *string `json:"completedAt"`
	// ExpiresAt is, on a running turn, the expiry of the session lease it
	// holds in milliseconds since the Unix epoch (as CurrentTurn's); null
	// on a terminal turn. A running turn past it is still running until
	// its fate is recorded (docs/durable-turns.md).
	ExpiresAt *int64 `json:"expiresAt"`
	// Feedback is the owner's rating of the answer, null when none
	// (docs/conversations.md).
	Feedback *api.Feedback `json:"feedback"`
	// Siblings is the turn's sibling group, absent when it has none
	// (docs/branches.md).
	Siblings *api.Siblings `json:"siblings,omitempty"`
	// Superseded is true, and present, only on a turn read by id that is
	// not on the active branch.
	Superseded bool `json:"superseded,omitempty"`
}

// TurnPage is the body of GET /sessions/{id}/turns. Turns are in the
// requested order (desc: newest first). NextCursor is null exactly when
// HasMore is false.
//
//	{"turns":[TurnSummary...],"nextCursor":string|null,"hasMore":bool}
type TurnPage struct {
	Turns      []TurnSummary `json:"turns"`
	NextCursor *string       `json:"nextCursor"`
	HasMore    bool          `json:"hasMore"`
}

// MessagePage is the body of GET /sessions/{id}/messages: the turns of the
// same page as /turns, flattened to their canonical message records.
//
// Messages within a page are always chronological (oldest turn first, each
// turn's messages in stored order), whatever the order: order only chooses
// which end of the conversation the first page holds and which way the
// cursor moves. So asc pages concatenate to the conversation, and desc
// pages concatenate to it in reverse page order (last page first). Limit
// counts turns, not messages. A turn's artifact references are placed in
// the metadata.artifacts of its last assistant message (other metadata
// keys kept); a turn without artifacts is returned exactly as stored, and
// a turn without any assistant message lists its artifacts only in /turns.
//
//	{"messages":[Message...],"nextCursor":string|null,"hasMore":bool}
type MessagePage struct {
	Messages   []protocol.Message `json:"messages"`
	NextCursor *string            `json:"nextCursor"`
	HasMore    bool               `json:"hasMore"`
}

// getSession serves GET /sessions/{id}.
func (s *server) getSession(w http.ResponseWriter, r *http.Request, rc *requestContext) error {
	p, id, err := s.sessionCaller(r, rc)
	if err != nil {
		return err
	}
	sess, err := s.store.GetSession(r.Context(), id, p)
	if err != nil {
		return fmt.Errorf("get session: %w", err)
	}
	out := sessionSummary(sess, s.now())
	if cur := out.CurrentTurn; cur != nil {
		cur.Sequence = sess.Sequence
		t, err := s.store.PollTurn(r.Context(), id, sess.ActiveTurn.Ordinal, p, nil)
		switch {
		case err == nil && t.Status == chat.TurnRunning:
			cur.Sequence = t.LastSequence
		case err == nil:
			// The turn has ended: saved (its release still to come, or
			// failed: the lease then expires on its own) or decided
			// between the two reads. It is no current turn, as /turns
			// shows it; the session as it is now otherwise.
			ended := t.Ordinal
			if sess, err = s.store.GetSession(r.Context(), id, p); err != nil {
				return fmt.Errorf("get session: %w", err)
			}
			if l := sess.ActiveTurn; l != nil && l.Ordinal == ended {
				sess.ActiveTurn = nil
			}
			out = sessionSummary(sess, s.now())
		case !errors.Is(err, chat.ErrTurnNotFound):
			return fmt.Errorf("read the running turn: %w", err)
		}
	}
	if out.QueuedTurns, err = s.queuedTurns(r.Context(), sess, p); err != nil {
		return err
	}
	return writeJSON(w, out)
}

func sessionSummary(sess *chat.Session, now time.Time) SessionSummary {
	out := SessionSummary{
		SessionID:           sess.ID,
		DefinitionID:        sess.DefinitionID,
		DefinitionRevision:  sess.DefinitionRevision,
		Sequence:            sess.Sequence,
		CreatedAt:           protocol.FormatTime(sess.CreatedAt),
		UpdatedAt:           protocol.FormatTime(sess.UpdatedAt),
		PendingInteractions: pendingInteractions(sess, now),
		QueuedTurns:         []QueuedTurn{},
		Session:             sessionEnvelope(sess, now),
	}
	if l := sess.ActiveTurn; l != nil {
		out.CurrentTurn = &CurrentTurn{
			TurnID:              l.TurnID,
			Status:              string(chat.TurnRunning),
			ExpiresAt:           l.ExpiresAt.UnixMilli(),
			PendingInteractions: []PendingInteraction{},
		}
	}
	return out
}

// listTurns serves GET /sessions/{id}/turns.
func (s *server) listTurns(w http.ResponseWriter, r *http.Request, rc *requestContext) error {
	page, _, err := s.page(r, rc)
	if err != nil {
		return err
	}
	out := TurnPage{
		Turns:      make([]TurnSummary, 0, len(page.Turns)),
		NextCursor: nextCursor(page),
		HasMore:    page.HasMore,
	}
	for i := range page.Turns {
		out.Turns = append(out.Turns, turnSummary(&page.Turns[i]))
	}
	return writeJSON(w, out)
}

// listMessages serves GET /sessions/{id}/messages (see MessagePage).
func (s *server) listMessages(w http.ResponseWriter, r *http.Request, rc *requestContext) error {
	page, order, err := s.page(r, rc)
	if err != nil {
		return err
	}
	turns := page.Turns
	if order == chat.OrderDesc {
		turns = slices.Clone(turns)
		slices.Reverse(turns) // chronological within the page
	}
	n := 0
	for i := range turns {
		n += len(turns[i].Messages)
	}
	out := MessagePage{
		Messages:   make([]protocol.Message, 0, n),
		NextCursor: nextCursor(page),
		HasMore:    page.HasMore,
	}
	for i := range turns {
		msgs, err := withArtifacts(turns[i].Messages, turns[i].Artifacts)
		if err == nil {
			msgs, err = withFeedback(msgs, turns[i].Feedback)
		}
		if err == nil {
			msgs, err = withSiblings(msgs, &turns[i])
		}
		if err != nil {
			return fmt.Errorf("turn %s: %w", turns[i].TurnID, err)
		}
		out.Messages = append(out.Messages, msgs...)
	}
	return writeJSON(w, out)
}

// page authenticates, validates the path and query and reads one page of
// turns: one store request (docs/design.md#storage-one-dynamodb-table).
func (s *server) page(r *http.Request, rc *requestContext) (*chat.Page, chat.Order, error) {
	p, err := s.principal(r)
	if err != nil {
		return nil, "", err
	}
	id, err := sessionID(r, rc)
	if err != nil {
		return nil, "", err
	}
	q, err := parsePageQuery(r.URL.RawQuery)
	if err != nil {
		return nil, "", err
	}
	page, err := s.store.ListTurns(r.Context(), chat.ListRequest{
		SessionID: id,
		Principal: p,
		Order:     q.order,
		Limit:     q.limit,
		Cursor:    q.cursor,
	})
	if errors.Is(err, chat.ErrInvalidRequest) {
		// The store refused the page request: a query this package
		// accepted but the store does not.
		return nil, "", fmt.Errorf("list turns: %w: %w", httpedge.ErrInvalidQuery, err)
	}
	if err != nil {
		return nil, "", fmt.Errorf("list turns: %w", err)
	}
	return page, q.order, nil
}

func nextCursor(page *chat.Page) *string {
	if !page.HasMore || page.NextCursor == "" {
		return nil
	}
	c := page.NextCursor
	return &c
}

func turnSummary(t *chat.Turn) TurnSummary {
	out := TurnSummary{
		TurnID:    t.TurnID,
		Ordinal:   t.Ordinal,
		Status:    t.Status,
		Lineage:   t.Lineage,
		Messages:  t.Messages,
		Artifacts: t.Artifacts,
		Error:     t.Error,
		Usage:     t.Usage,
		StartedAt: protocol.FormatTime(t.StartedAt),
	}
	if out.Lineage.Operation == "" {
		out.Lineage.Operation = protocol.OperationSubmit
	}
	if out.Messages == nil {
		out.Messages = []protocol.Message{}
	}
	if out.Artifacts == nil {
		out.Artifacts = []chat.ArtifactReference{}
	}
	if !t.CompletedAt.IsZero() {
		c := protocol.FormatTime(t.CompletedAt)
		out.CompletedAt = &c
	}
	if t.Status == chat.TurnRunning && !t.LeaseExpiresAt.IsZero() {
		ms := t.LeaseExpiresAt.UnixMilli()
		out.ExpiresAt = &ms
	}
	out.Feedback = feedbackOf(t.Feedback)
	out.Siblings, out.Superseded = siblingsOf(t), t.Superseded
	return out
}
