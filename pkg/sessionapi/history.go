package sessionapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/httpedge"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// SessionSummary is the body of GET /sessions/{id} (docs/design.md#history-and-artifacts-api). Times are
// ISO 8601 UTC with milliseconds (protocol.FormatTime).
//
//	{"sessionId","definitionId","definitionRevision","cursor","createdAt","updatedAt","currentTurn":CurrentTurn|null,
//	 "pendingInteractions":[PendingInteraction...],"session":<agentskit.chat.session v1 envelope>|null}
type SessionSummary struct {
	SessionID          string `json:"sessionId"`
	DefinitionID       string `json:"definitionId"`
	DefinitionRevision int64  `json:"definitionRevision"`
	// Sequence is the last snapshot sequence the session issued (the
	// session envelope's "cursor").
	Sequence  int64  `json:"cursor"`
	CreatedAt string `json:"createdAt"`
	UpdatedAt string `json:"updatedAt"`
	// CurrentTurn is the turn holding the session's lease, nil (null) when
	// the session is idle. The read decides a lease that has expired
	// (docs/durable-turns.md), so an expired one shows only when that
	// could not be done: the turn is then still running, its fate not
	// yet recorded, and ExpiresAt says since when it may be lost.
	CurrentTurn *CurrentTurn `json:"currentTurn"`
	// PendingInteractions are the tool calls waiting for the owner's
	// approval ({interactionId: token, data: PendingApproval}), [] when
	// none (docs/approvals.md).
	PendingInteractions []PendingInteraction `json:"pendingInteractions"`
	// QueuedTurns are the turns submitted with the enqueue policy that
	// have not started, in the order they will run, [] when none
	// (docs/multitask.md). Only the summary lists them: a queued turn
	// gets its ordinal, which orders /turns and its page cursors, when it
	// starts.
	QueuedTurns []QueuedTurn `json:"queuedTurns"`
	// Session is the session as the AgentsKit session envelope
	// agentskit.chat.session v1 (protocol.SessionEnvelope), with its
	// confirmations; null only for a session that has no definition id.
	Session json.RawMessage `json:"session"`
}

// CurrentTurn is a session's running turn (agent UI protocol current_turn;
// docs/design.md#history-and-artifacts-api). Status is always "running": a turn being stopped is still
// running until it ends (hosts map stopping to running).
//
//	{"turnId","status":"running","expiresAt":<epoch ms>,"sequence":<n>,"pendingInteractions":[]}
type CurrentTurn struct {
	TurnID string `json:"turnId"`
	Status string `json:"status"`
	// ExpiresAt is the lease expiry in milliseconds since the Unix epoch.
	ExpiresAt int64 `json:"expiresAt"`
	// Sequence is the sequence of the turn's latest checkpoint (the
	// session's last sequence before the turn when none landed yet): a
	// reloaded page renders the turn as /turns shows it and resumes it on
	// the turn function with GET /sessions/{id}/turns/{turnId}/stream?after=<sequence>.
	Sequence int64 `json:"sequence"`
	// PendingInteractions is always empty: a running turn never waits; a
	// call that waits for approval ends its turn, and the session summary
	// lists it (SessionSummary.PendingInteractions).
	PendingInteractions []PendingInteraction `json:"pendingInteractions"`
}

// QueuedTurn is a queued turn of the session summary.
//
//	{"turnId","position":<from 1>,"inputPreview","queuedAt":"<ISO time>","expiresAt":<epoch ms>}
type QueuedTurn struct {
	TurnID   string `json:"turnId"`
	Position int    `json:"position"`
	// InputPreview is the start of the turn's input, at most
	// InputPreviewRunes characters, "…" appended when cut.
	InputPreview string `json:"inputPreview"`
	QueuedAt     string `json:"queuedAt"`
	// ExpiresAt is when the turn, not started by then, is recorded as
	// never run (TURN_QUEUE_EXPIRED), in milliseconds since the Unix epoch.
	ExpiresAt int64 `json:"expiresAt"`
}

// InputPreviewRunes bounds QueuedTurn.InputPreview.
const InputPreviewRunes = 120

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

// PendingInteraction is an interaction the session waits for (agent UI
// protocol {interactionId, data}): a tool call awaiting approval, Data a
// PendingApproval.
type PendingInteraction struct {
	InteractionID string `json:"interactionId"`
	Data          any    `json:"data"`
}

// TurnSummary is one turn of GET /sessions/{id}/turns (docs/design.md#history-and-artifacts-api).
//
//	{"turnId","ordinal","status","lineage","messages":[...],"artifacts":[...],"error":Diagnostic|null,"usage","startedAt","completedAt":string|null,"expiresAt":number|null}
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
	p, err := s.auth.Authenticate(r)
	if err != nil {
		return err
	}
	id, err := sessionID(r, rc)
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
	p, err := s.auth.Authenticate(r)
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
	return out
}
