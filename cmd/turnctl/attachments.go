package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/turnstream/turnstream/pkg/attach"
	"github.com/turnstream/turnstream/pkg/client"
)

// localFile is a file -attach names, checked (checkFiles).
type localFile struct {
	path      string
	name      string // the base name, declared as the filename
	mediaType string
	size      int64
}

// checkFiles checks the files of -attach before anything is sent: each
// must be a readable regular file whose name and size the upload
// declaration accepts (attach.Declared.Check), its media type known by
// its extension (attach.MediaTypeOf).
func checkFiles(paths []string) ([]localFile, error) {
	var files []localFile
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("-attach %s: %w", p, err)
		}
		if !st.Mode().IsRegular() {
			return nil, fmt.Errorf("-attach %s: not a regular file", p)
		}
		name := filepath.Base(p)
		mt, ok := attach.MediaTypeOf(name)
		if !ok {
			return nil, fmt.Errorf("-attach %s: not an image (.png .jpg .gif .webp) or document (.pdf .txt .md .csv .html .docx .xlsx)", p)
		}
		if _, err := (attach.Declared{Filename: name, MediaType: mt, Size: st.Size()}).Check(); err != nil {
			return nil, fmt.Errorf("-attach %s: %w (limits: docs/attachments.md)", p, err)
		}
		files = append(files, localFile{path: p, name: name, mediaType: mt, size: st.Size()})
	}
	return files, nil
}

// uploadFiles uploads c.files to the session (client.Upload) and returns
// their attachment ids, in order; a failure is reported on stderr and
// false returned.
func (c *chatClient) uploadFiles(ctx context.Context) ([]string, bool) {
	ids := make([]string, 0, len(c.files))
	for _, f := range c.files {
		id, err := c.uploadFile(ctx, f)
		if c.tty {
			_, _ = fmt.Fprint(c.stderr, "\r\x1b[K") // clear the progress line
		}
		if err != nil {
			reportError(c.stderr, "chat", err)
			return nil, false
		}
		_, _ = fmt.Fprintf(c.stderr, "attached %s (%s, %d bytes)\n", escapeText(f.name, false), f.mediaType, f.size)
		ids = append(ids, id)
	}
	return ids, true
}

// uploadFile uploads one file, showing its progress on a terminal.
func (c *chatClient) uploadFile(ctx context.Context, f localFile) (string, error) {
	r, err := os.Open(f.path)
	if err != nil {
		return "", err
	}
	defer func() { _ = r.Close() }()
	name := escapeText(f.name, false)
	progress := func(sent, total int64) {
		if c.tty && total > 0 {
			_, _ = fmt.Fprintf(c.stderr, "\ruploading %s: %d%%", name, sent*100/total)
		}
	}
	return client.Upload(ctx, c.client, c.opts.sessionID, client.UploadFile{Filename: f.name, MediaType: f.mediaType, Size: f.size, Body: r}, progress)
}
