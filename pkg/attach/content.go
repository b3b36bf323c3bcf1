package attach

import (
	"bytes"
	"unicode/utf8"
)

// CheckContent returns ErrContent unless data, an object's whole bytes,
// is of media type mt: an image or a PDF starts with its format's magic
// bytes, a docx or xlsx is a ZIP archive, a text type (plain, Markdown,
// CSV, HTML) is valid UTF-8 (a byte-order mark allowed) without NUL bytes.
// It reads no further than it needs.
func CheckContent(mt string, data []byte) error {
	ok := false
	switch mt {
	case "image/png":
		ok = bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n"))
	case "image/jpeg":
		ok = bytes.HasPrefix(data, []byte{0xFF, 0xD8, 0xFF})
	case "image/gif":
		ok = bytes.HasPrefix(data, []byte("GIF87a")) || bytes.HasPrefix(data, []byte("GIF89a"))
	case "image/webp":
		ok = len(data) >= 12 && bytes.Equal(data[:4], []byte("RIFF")) && bytes.Equal(data[8:12], []byte("WEBP"))
	case "application/pdf":
		ok = bytes.HasPrefix(data, []byte("%PDF-"))
	case "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
		"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet":
		ok = bytes.HasPrefix(data, []byte("PK\x03\x04"))
	case "text/plain", "text/markdown", "text/csv", "text/html":
		ok = utf8.Valid(data) && bytes.IndexByte(data, 0) < 0
	}
	if !ok {
		return ErrContent
	}
	return nil
}
