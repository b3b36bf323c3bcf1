package api

// UploadRequest is the body of POST /sessions/{id}/uploads on the
// artifacts function (docs/attachments.md): the file a person is about to
// attach, declared before any byte is sent. MediaType is one of the
// accepted types (attach.MediaTypes), Size the exact size in bytes (1 to
// the type's limit: 3,932,160 for an image, 4,718,592 for a document),
// Filename 1-255 bytes of UTF-8 without a path separator, a control or an
// invisible character.
//
//	{"filename","mediaType","size"}
type UploadRequest struct {
	Filename  string `json:"filename"`
	MediaType string `json:"mediaType"`
	Size      int64  `json:"size"`
}

// UploadTicket is the 201 answer to an UploadRequest: the attachment's id
// (send it in a submit's "attachments") and the signed form to upload it
// with. POST to Upload.URL a multipart/form-data body holding every one
// of Upload.Fields and then the file as the last field, "file"; the
// storage answers 204. The form expires at ExpiresAt (15 minutes); the
// attachment must be sent with a turn within a day of it.
//
//	{"attachmentId","upload":{"url","method":"POST","fields":{...}},"expiresAt"}
type UploadTicket struct {
	AttachmentID string     `json:"attachmentId"`
	Upload       UploadForm `json:"upload"`
	ExpiresAt    string     `json:"expiresAt"`
}

// UploadForm is a signed browser-based upload form (an S3 presigned
// POST, or the dev server's equivalent).
type UploadForm struct {
	URL    string            `json:"url"`
	Method string            `json:"method" ts:"\"POST\""`
	Fields map[string]string `json:"fields"`
}

// AttachmentDownload is the body of GET
// /sessions/{id}/attachments/{attachmentId} on the artifacts function:
// a signed URL that reads the attachment's bytes until ExpiresAt (5
// minutes), and what the upload declared. Only the session's owner gets
// it; for anyone else the attachment does not exist (404).
//
//	{"attachmentId","url","expiresAt","mediaType","filename","size"}
type AttachmentDownload struct {
	AttachmentID string `json:"attachmentId"`
	URL          string `json:"url"`
	ExpiresAt    string `json:"expiresAt"`
	MediaType    string `json:"mediaType"`
	Filename     string `json:"filename"`
	Size         int64  `json:"size"`
}
