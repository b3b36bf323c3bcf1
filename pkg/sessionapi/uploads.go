package sessionapi

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/attach"
	"github.com/turnstream/turnstream/pkg/httpedge"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// attachmentRoutes serve the attachment routes of the artifacts handler
// (Options.Attachments).
type attachmentRoutes struct {
	*server
	store attach.Store
}

// create serves POST /sessions/{id}/uploads: it checks the
// declaration (attach.Declared.Check: media type 415, size 413, an empty
// file or a bad filename 400) and answers 201 api.UploadTicket with a
// form signed for the caller's own key of that session. It reads no
// store: the key holds the caller's owner hash, so an upload can reach no
// one else's session, and a session's first turn may carry attachments
// uploaded before it existed.
func (u attachmentRoutes) create(w http.ResponseWriter, r *http.Request, rc *requestContext) error {
	s := u.server
	if err := httpedge.RequireJSON(r); err != nil {
		return err
	}
	p, sid, err := s.sessionCaller(r, rc)
	if err != nil {
		return err
	}
	var in struct {
		Filename  *string `json:"filename"`
		MediaType *string `json:"mediaType"`
		Size      *int64  `json:"size"`
	}
	if err := s.readStrict(w, r, &in); err != nil {
		return err
	}
	if in.Filename == nil || in.MediaType == nil || in.Size == nil {
		return httpedge.ErrInvalidBody
	}
	d := attach.Declared{Filename: *in.Filename, MediaType: *in.MediaType, Size: *in.Size}
	if _, err := d.Check(); err != nil {
		return err
	}
	now := s.now()
	id := attach.NewID()
	obj := attach.Object{
		Key:       attach.Key(attach.Owner(p.Tenant, p.Subject), sid, id),
		MediaType: d.MediaType,
		Size:      d.Size,
		Filename:  d.Filename,
		UseBy:     now.Add(attach.UseWithin),
	}
	up, err := u.store.PresignUpload(r.Context(), obj, attach.UploadExpiry)
	if err != nil {
		return fmt.Errorf("presign upload: %w", err)
	}
	b, err := marshal(api.UploadTicket{
		AttachmentID: id,
		Upload:       api.UploadForm{URL: up.URL, Method: up.Method, Fields: up.Fields},
		ExpiresAt:    protocol.FormatTime(now.Add(attach.UploadExpiry)),
	})
	if err != nil {
		return fmt.Errorf("encode response: %w", err)
	}
	writeBody(w, http.StatusCreated, b)
	return nil
}

// get serves GET /sessions/{id}/attachments/{attachmentId}: 200
// api.AttachmentDownload for the caller's own upload; an id of another
// shape, never uploaded, deleted or another principal's is 404
// ATTACHMENT_NOT_FOUND alike.
func (u attachmentRoutes) get(w http.ResponseWriter, r *http.Request, rc *requestContext) error {
	s := u.server
	p, sid, err := s.sessionCaller(r, rc)
	if err != nil {
		return err
	}
	id := r.PathValue("attachmentId")
	if !attach.ValidID(id) {
		return attach.ErrNotFound
	}
	key := attach.Key(attach.Owner(p.Tenant, p.Subject), sid, id)
	obj, err := u.store.Head(r.Context(), key)
	if err != nil {
		if errors.Is(err, attach.ErrNotFound) {
			return err
		}
		return fmt.Errorf("head attachment: %w", err)
	}
	url, err := u.store.PresignDownload(r.Context(), key, attach.DownloadExpiry)
	if err != nil {
		return fmt.Errorf("presign download: %w", err)
	}
	return writeJSON(w, api.AttachmentDownload{
		AttachmentID: id,
		URL:          url,
		ExpiresAt:    protocol.FormatTime(s.now().Add(attach.DownloadExpiry)),
		MediaType:    obj.MediaType,
		Filename:     obj.Filename,
		Size:         obj.Size,
	})
}
