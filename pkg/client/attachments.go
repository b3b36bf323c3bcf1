package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"sort"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// UploadFile is a file to attach (docs/attachments.md): its name as the
// person sees it, its media type (one the server accepts: images png,
// jpeg, gif, webp; documents pdf, txt, md, csv, html, docx, xlsx), its
// exact size in bytes and its bytes, exactly Size of them.
type UploadFile struct {
	Filename  string
	MediaType string
	Size      int64
	Body      io.Reader
}

// Upload attaches f to session sessionID in the two phases of
// docs/attachments.md: it declares the file (POST
// {ArtifactsURL}sessions/{id}/uploads), then posts the signed form and
// the bytes straight to the storage, never through a function. progress,
// when not nil, is called as the bytes go out with the bytes sent so far
// and f.Size. It returns the attachment's id. A refusal of the
// declaration is a KindHTTP *Error with the server's diagnostic
// (ATTACHMENT_TYPE_UNSUPPORTED, ATTACHMENT_TOO_LARGE, ATTACHMENT_INVALID);
// a refusal by the storage (a form it does not accept, a body of another
// size than declared) a KindHTTP *Error with CodeResponseInvalid and the
// storage's status. Upload is a function rather than a method so that
// Client keeps its small method set.
func Upload(ctx context.Context, c *Client, sessionID string, f UploadFile, progress func(sent, total int64)) (string, error) {
	if c.opts.ArtifactsURL == "" {
		return "", ErrNoURL
	}
	if !protocol.IsSafeID(sessionID) {
		return "", fmt.Errorf("client: session id %q is not a SafeId", sessionID)
	}
	body, err := json.Marshal(api.UploadRequest{Filename: f.Filename, MediaType: f.MediaType, Size: f.Size})
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, joinURL(c.opts.ArtifactsURL, "/sessions/"+sessionID+"/uploads"), bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.send(req, "upload")
	if err != nil {
		return "", err
	}
	var ticket api.UploadTicket
	err = json.NewDecoder(io.LimitReader(resp.Body, maxJSONBody)).Decode(&ticket)
	_ = resp.Body.Close()
	if err != nil || ticket.AttachmentID == "" || ticket.Upload.URL == "" {
		return "", invalidResponse("upload", resp.StatusCode)
	}
	if err := postForm(ctx, c.http, ticket.Upload, f, progress); err != nil {
		return "", err
	}
	return ticket.AttachmentID, nil
}

// postForm sends the form's fields and then the file, streamed through a
// pipe so that a large file is never held whole.
func postForm(ctx context.Context, hc *http.Client, form api.UploadForm, f UploadFile, progress func(sent, total int64)) error {
	if _, err := url.Parse(form.URL); err != nil {
		return invalidResponse("upload", 0)
	}
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		names := make([]string, 0, len(form.Fields))
		for k := range form.Fields {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			if err := mw.WriteField(k, form.Fields[k]); err != nil {
				pw.CloseWithError(err)
				return
			}
		}
		fw, err := mw.CreateFormFile("file", f.Filename)
		if err == nil {
			_, err = io.Copy(fw, &counting{r: io.LimitReader(f.Body, f.Size), total: f.Size, progress: progress})
		}
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err)
	}()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, form.URL, pr)
	if err != nil {
		_ = pr.CloseWithError(err)
		return err
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := hc.Do(req)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		return networkError("upload", err)
	}
	defer func() { _ = resp.Body.Close() }()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
	if resp.StatusCode/100 != 2 {
		return httpError("upload", resp.StatusCode, resp.Header, nil)
	}
	return nil
}

// counting reports the bytes read through it.
type counting struct {
	r        io.Reader
	sent     int64
	total    int64
	progress func(sent, total int64)
}

func (c *counting) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.sent += int64(n)
	if n > 0 && c.progress != nil {
		c.progress(c.sent, c.total)
	}
	return n, err
}

// Attachment returns a signed download of one of the caller's
// attachments, GET {ArtifactsURL}sessions/{id}/attachments/{attachmentId}:
// its URL reads the bytes for 5 minutes. Another principal's attachment,
// or none, is a KindHTTP *Error 404 ATTACHMENT_NOT_FOUND.
func Attachment(ctx context.Context, c *Client, sessionID, attachmentID string) (*api.AttachmentDownload, error) {
	if c.opts.ArtifactsURL == "" {
		return nil, ErrNoURL
	}
	if !protocol.IsSafeID(sessionID) || !protocol.IsSafeID(attachmentID) {
		return nil, fmt.Errorf("client: session or attachment id is not a SafeId")
	}
	var d api.AttachmentDownload
	if err := c.getJSON(ctx, joinURL(c.opts.ArtifactsURL, "/sessions/"+sessionID+"/attachments/"+attachmentID), "attachment", &d); err != nil {
		return nil, err
	}
	return &d, nil
}
