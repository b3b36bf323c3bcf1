package engine

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/turnstream/turnstream/pkg/agui"
	"github.com/turnstream/turnstream/pkg/attach"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/httpedge"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// Attachments (docs/attachments.md): a submit names uploaded files by id;
// the engine checks and reads them before the claim, records them as the
// user message's parts, and gives their bytes to the model, with those
// of the earlier turns in the context.

// AttachmentSource is the prefix of an attachment part's source: the part
// {"type":"image"|"file","source":"attachment:<id>",...} names the
// caller's attachment <id> of the session, a stable reference that never
// expires (unlike a signed URL): GET
// /sessions/{id}/attachments/{attachmentId} on the artifacts function
// gives a URL of its bytes.
const AttachmentSource = "attachment:"

// attachmentReads bounds the attachments read at once.
const attachmentReads = 4

// attachedFile is one checked attachment of a submission.
type attachedFile struct {
	id   string
	obj  attach.Object
	mt   attach.MediaType
	data []byte
}

// resolveAttachments checks and reads the attachments sub names, in the
// order given, before anything is stored: each must be the caller's
// upload to this session (attach.ErrNotFound otherwise, as for an id
// never uploaded), not past its use-by time (attach.ErrExpired), of an
// accepted media type within its size limit and with bytes of that type
// (attach.ErrContent, attach.ErrSize), and the turn at most
// attach.MaxImagesPerTurn images and attach.MaxDocsPerTurn documents
// (attach.ErrTooMany). Reads run attachmentReads at a time under ctx, the
// request's deadline. Without Config.Attachments any id is
// attach.ErrNotFound.
func (h *handler) resolveAttachments(ctx context.Context, sub *submission) error {
	if len(sub.attachmentIDs) == 0 {
		return nil
	}
	store := h.opts.Attachments
	if store == nil {
		return attach.ErrNotFound
	}
	owner := attach.Owner(sub.principal.Tenant, sub.principal.Subject)
	now := h.clock.Now()
	files := make([]attachedFile, len(sub.attachmentIDs))
	errs := make([]error, len(sub.attachmentIDs))
	sem := make(chan struct{}, attachmentReads)
	var wg sync.WaitGroup
	for i, id := range sub.attachmentIDs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			files[i], errs[i] = readAttachment(ctx, store, attach.Key(owner, sub.sessionID, id), id, now)
		})
	}
	wg.Wait()
	for _, err := range errs { // the first failing attachment, in the order given
		if err != nil {
			return err
		}
	}
	images, docs := 0, 0
	for _, f := range files {
		if f.mt.Kind == attach.KindImage {
			images++
		} else {
			docs++
		}
	}
	if images > attach.MaxImagesPerTurn || docs > attach.MaxDocsPerTurn {
		return attach.ErrTooMany
	}
	sub.files = files
	return nil
}

// inlineFile is a file an AG-UI run carries as bytes.
type inlineFile struct {
	id        string
	kind      attach.Kind
	mediaType string
	data      []byte
}

// addMedia names an AG-UI run's image and document parts as the
// submission's attachments, in their order: a reference by its
// attachment id, inline bytes by attach.InlineID (stored by stageInline
// before the checks, which then treat them as uploads). Like a submit's
// attachments they are part of the input, the inline bytes by their
// SHA-256: the same run id sent again with other files is
// TURN_ID_REUSED. An attachment named twice is httpedge.ErrInvalidBody.
func (sub *submission) addMedia(media []agui.MediaPart) error {
	var inline strings.Builder
	for i, m := range media {
		id := m.AttachmentID
		if id == "" {
			id = attach.InlineID(sub.sessionID, sub.turnID, i)
			sub.inline = append(sub.inline, inlineFile{id: id, kind: attach.Kind(m.Kind), mediaType: m.MediaType, data: m.Data})
			fmt.Fprintf(&inline, "\x00%s %s %x", id, m.MediaType, sha256.Sum256(m.Data))
		}
		if slices.Contains(sub.attachmentIDs, id) {
			return fmt.Errorf("%w: an attachment is named twice", httpedge.ErrInvalidBody)
		}
		sub.attachmentIDs = append(sub.attachmentIDs, id)
	}
	sub.inputHash = chat.HashInput(sub.input + "\x00attachments:" + strings.Join(sub.attachmentIDs, ",") + inline.String())
	return nil
}

// stageInline stores the inline files of sub (an AG-UI run's data
// sources) as attachments of its session, before anything else is
// stored: each must be of an accepted media type (attach.ErrMediaType)
// of its part's kind, with bytes of that type (attach.ErrContent) within
// the type's limit (attach.ErrSize; the request body cap is smaller).
// Each is named kind-n.format ("image-1.png") and usable for
// attach.UseWithin. Without a store that writes (attach.Writer) an
// inline file is attach.ErrNotFound, as any attachment without a store.
func (h *handler) stageInline(ctx context.Context, sub *submission) error {
	if len(sub.inline) == 0 {
		return nil
	}
	w, ok := h.opts.Attachments.(attach.Writer)
	if !ok {
		return attach.ErrNotFound
	}
	owner := attach.Owner(sub.principal.Tenant, sub.principal.Subject)
	useBy := h.clock.Now().Add(attach.UseWithin).Truncate(time.Second)
	count := map[attach.Kind]int{}
	for _, f := range sub.inline {
		mt, ok := attach.MediaTypes[f.mediaType]
		switch {
		case !ok:
			return attach.ErrMediaType
		case mt.Kind != f.kind:
			return fmt.Errorf("%w: a %s part of media type %s", attach.ErrContent, f.kind, mt.Kind)
		case int64(len(f.data)) > mt.MaxBytes:
			return attach.ErrSize
		}
		if err := attach.CheckContent(mt.Name, f.data); err != nil {
			return err
		}
		count[mt.Kind]++
		obj := attach.Object{
			Key: attach.Key(owner, sub.sessionID, f.id), MediaType: mt.Name, Size: int64(len(f.data)),
			Filename: fmt.Sprintf("%s-%d.%s", mt.Kind, count[mt.Kind], mt.Format), UseBy: useBy,
		}
		if err := w.Put(ctx, obj, f.data); err != nil {
			return fmt.Errorf("store inline file %s: %w", f.id, err)
		}
	}
	return nil
}

// useAttachments records that this turn uses its attachments
// (chat.Store.UseAttachments), after the lineage check and before the
// claim or the queue: an attachment another turn of the session used is
// attach.ErrUsed, unless that turn is the one this turn's lineage
// replaces (a retry, edit or regenerate keeps its parent's files). The
// same turn id sent again (a replay, or a retry after a busy session)
// passes. The records last until the attachments' latest use-by time.
func (h *handler) useAttachments(ctx context.Context, sub *submission) error {
	if len(sub.files) == 0 {
		return nil
	}
	req := chat.UseAttachmentsRequest{SessionID: sub.sessionID, TurnID: sub.turnID, ParentTurnID: sub.lineage.ParentTurnID}
	for _, f := range sub.files {
		req.AttachmentIDs = append(req.AttachmentIDs, f.id)
		if f.obj.UseBy.After(req.Until) {
			req.Until = f.obj.UseBy
		}
	}
	err := h.opts.Store.UseAttachments(ctx, req)
	if errors.Is(err, chat.ErrAttachmentUsed) {
		return attach.ErrUsed
	}
	return err
}

// readAttachment checks and reads the attachment id under key.
func readAttachment(ctx context.Context, store attach.Reader, key, id string, now time.Time) (attachedFile, error) {
	if !attach.ValidID(id) {
		return attachedFile{}, attach.ErrNotFound
	}
	obj, err := store.Head(ctx, key)
	if err != nil {
		return attachedFile{}, err
	}
	if obj.UseBy.IsZero() {
		return attachedFile{}, attach.ErrNotFound // not uploaded through a signed form
	}
	if !now.Before(obj.UseBy) {
		return attachedFile{}, attach.ErrExpired
	}
	mt, ok := attach.MediaTypes[obj.MediaType]
	switch {
	case !ok:
		return attachedFile{}, attach.ErrContent
	case obj.Size > mt.MaxBytes:
		return attachedFile{}, attach.ErrSize
	}
	data, err := store.Read(ctx, key, mt.MaxBytes)
	if err != nil {
		return attachedFile{}, err
	}
	if int64(len(data)) != obj.Size {
		return attachedFile{}, attach.ErrContent
	}
	if err := attach.CheckContent(mt.Name, data); err != nil {
		return attachedFile{}, err
	}
	return attachedFile{id: id, obj: obj, mt: mt, data: data}, nil
}

// attachmentParts returns the message parts of files: an image part
// {type "image", source, mimeType}, a document a file part with its
// filename too.
func attachmentParts(files []attachedFile) []protocol.Part {
	if len(files) == 0 {
		return nil
	}
	parts := make([]protocol.Part, 0, len(files))
	for _, f := range files {
		source, mimeType := AttachmentSource+f.id, f.mt.Name
		p := protocol.Part{Type: f.mt.Kind.PartType(), Source: &source, MimeType: &mimeType}
		if f.mt.Kind != attach.KindImage {
			name := f.obj.Filename
			p.Filename = &name
		}
		parts = append(parts, p)
	}
	return parts
}

// modelAttachment is f as the model receives it.
func modelAttachment(f attachedFile) model.Attachment {
	kind := model.AttachmentKindDocument
	if f.mt.Kind == attach.KindImage {
		kind = model.AttachmentKindImage
	}
	return model.Attachment{Kind: kind, MediaType: f.mt.Name, Format: f.mt.Format, Filename: f.obj.Filename, Data: f.data}
}

// loadAttachments returns the attachments the user messages of msgs
// name, by source: files (this turn's, already read) first, then the
// others read from store under owner's keys of sessionID. One that cannot
// be read (deleted since, or a failing store) is left out and logged: the
// turn goes on with the rest, its text intact. Nil when msgs name none.
func loadAttachments(ctx context.Context, store attach.Reader, owner chat.Principal, sessionID string, msgs []protocol.Message, files []attachedFile, log *slog.Logger) map[string]model.Attachment {
	var out map[string]model.Attachment
	for _, f := range files {
		if out == nil {
			out = map[string]model.Attachment{}
		}
		out[AttachmentSource+f.id] = modelAttachment(f)
	}
	if store == nil {
		return out
	}
	key := attach.Owner(owner.Tenant, owner.Subject)
	for p, id := range userAttachments(msgs) {
		if _, ok := out[*p.Source]; ok {
			continue
		}
		f, err := readStored(ctx, store, attach.Key(key, sessionID, id), id)
		if err != nil {
			log.Warn("attachment left out of the model request", "attachmentId", id, "err", err)
			continue
		}
		if out == nil {
			out = map[string]model.Attachment{}
		}
		out[*p.Source] = modelAttachment(f)
	}
	return out
}

// userAttachments yields the attachment parts of the user messages of
// msgs (a source of AttachmentSource and an id), with their ids.
func userAttachments(msgs []protocol.Message) iter.Seq2[protocol.Part, string] {
	return func(yield func(protocol.Part, string) bool) {
		for _, m := range msgs {
			if m.Role != protocol.RoleUser {
				continue
			}
			for _, p := range m.Parts {
				if p.Source == nil || !strings.HasPrefix(*p.Source, AttachmentSource) {
					continue
				}
				if !yield(p, strings.TrimPrefix(*p.Source, AttachmentSource)) {
					return
				}
			}
		}
	}
}

// ImageTokens is what one image counts for in the context budget,
// whatever its size: Claude scales an image down to about 1.15
// megapixels, some 1,600 tokens, and OpenAI's high-detail tiles of a
// large image cost about as much.
const ImageTokens = 1_600

// attachmentTokens estimates the tokens the attachments of the user
// messages of msgs add to a model request, for the context budget: an
// image ImageTokens (no request), a document its size over
// model.BytesPerToken (its text; a PDF's pages may cost the model more or
// less), read with one Head each. A document that cannot be read is left
// out of the request (loadAttachments) and counts nothing, as do all
// attachments without a store.
func attachmentTokens(ctx context.Context, store attach.Reader, owner chat.Principal, sessionID string, msgs []protocol.Message) int {
	if store == nil {
		return 0
	}
	key := attach.Owner(owner.Tenant, owner.Subject)
	n := 0
	for p, id := range userAttachments(msgs) {
		switch {
		case p.Type == attach.KindImage.PartType():
			n += ImageTokens
		case attach.ValidID(id):
			if obj, err := store.Head(ctx, attach.Key(key, sessionID, id)); err == nil {
				n += int(model.EstimateTokens(int(obj.Size)))
			}
		}
	}
	return n
}

// readStored reads an attachment a stored turn recorded: checked when
// it was sent, so only its media type and size are checked again.
func readStored(ctx context.Context, store attach.Reader, key, id string) (attachedFile, error) {
	if !attach.ValidID(id) {
		return attachedFile{}, attach.ErrNotFound
	}
	obj, err := store.Head(ctx, key)
	if err != nil {
		return attachedFile{}, err
	}
	mt, ok := attach.MediaTypes[obj.MediaType]
	if !ok {
		return attachedFile{}, fmt.Errorf("%w: stored media type", attach.ErrContent)
	}
	data, err := store.Read(ctx, key, mt.MaxBytes)
	if err != nil {
		return attachedFile{}, err
	}
	return attachedFile{id: id, obj: obj, mt: mt, data: data}, nil
}
