package memory

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
)

// attachmentUse is the record of one attachment: the turn ids that used
// it and when the record may go.
type attachmentUse struct {
	turnIDs []string
	until   time.Time
}

// UseAttachments implements chat.Store, all at once under the store's
// lock.
func (s *Store) UseAttachments(ctx context.Context, req chat.UseAttachmentsRequest) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if req.SessionID == "" || req.TurnID == "" {
		return fmt.Errorf("use attachments: %w: session and turn ids are required", chat.ErrInvalidRequest)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock()
	uses := s.attachments[req.SessionID]
	for _, id := range req.AttachmentIDs {
		u := uses[id]
		if u == nil || !now.Before(u.until) {
			continue
		}
		if !slices.Contains(u.turnIDs, req.TurnID) && (req.ParentTurnID == "" || !slices.Contains(u.turnIDs, req.ParentTurnID)) {
			return fmt.Errorf("use attachment %s: %w", id, chat.ErrAttachmentUsed)
		}
	}
	if s.attachments == nil {
		s.attachments = map[string]map[string]*attachmentUse{}
	}
	if uses == nil {
		uses = map[string]*attachmentUse{}
		s.attachments[req.SessionID] = uses
	}
	for _, id := range req.AttachmentIDs {
		u := uses[id]
		if u == nil || !now.Before(u.until) {
			u = &attachmentUse{}
			uses[id] = u
		}
		if !slices.Contains(u.turnIDs, req.TurnID) {
			u.turnIDs = append(u.turnIDs, req.TurnID)
		}
		if req.Until.After(u.until) {
			u.until = req.Until
		}
	}
	return nil
}
