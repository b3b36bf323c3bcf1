package attach_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/pkg/attach"
)

func TestDeclaredCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    attach.Declared
		want error
	}{
		{"png", attach.Declared{"cat.png", "image/png", 1024}, nil},
		{"image at its limit", attach.Declared{"cat.webp", "image/webp", attach.MaxImageBytes}, nil},
		{"image over its limit", attach.Declared{"cat.png", "image/png", attach.MaxImageBytes + 1}, attach.ErrSize},
		{"document at its limit", attach.Declared{"a.pdf", "application/pdf", attach.MaxDocumentBytes}, nil},
		{"document over its limit", attach.Declared{"a.pdf", "application/pdf", attach.MaxDocumentBytes + 1}, attach.ErrSize},
		{"empty file", attach.Declared{"a.txt", "text/plain", 0}, attach.ErrEmpty},
		{"negative size", attach.Declared{"a.txt", "text/plain", -1}, attach.ErrEmpty},
		{"svg", attach.Declared{"a.svg", "image/svg+xml", 10}, attach.ErrMediaType},
		{"executable", attach.Declared{"a.exe", "application/octet-stream", 10}, attach.ErrMediaType},
		{"media type with parameters", attach.Declared{"a.txt", "text/plain; charset=utf-8", 10}, attach.ErrMediaType},
		{"upper-case media type", attach.Declared{"a.png", "IMAGE/PNG", 10}, attach.ErrMediaType},
		{"docx", attach.Declared{"a.docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document", 10}, nil},
		{"bad filename", attach.Declared{"../a.txt", "text/plain", 10}, attach.ErrFilename},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mt, err := tc.d.Check()
			if !errors.Is(err, tc.want) {
				t.Fatalf("Check() = %v, want %v", err, tc.want)
			}
			if err == nil && mt.Name != tc.d.MediaType {
				t.Errorf("media type %q, want %q", mt.Name, tc.d.MediaType)
			}
		})
	}
}

func TestCheckFilename(t *testing.T) {
	good := []string{"cat.png", "Résumé 2026.pdf", "日本語.txt", "a", "notes (1).md", strings.Repeat("é", 127)}
	bad := map[string]string{
		"empty":               "",
		"slash":               "a/b.txt",
		"backslash":           `a\b.txt`,
		"dot":                 ".",
		"dot dot":             "..",
		"NUL":                 "a\x00.txt",
		"newline":             "a\n.txt",
		"DEL":                 "a\x7f.txt",
		"C1 control":          "a\u0085.txt",
		"zero-width space":    "a\u200b.txt",
		"right-to-left mark":  "a\u202egnp.exe",
		"byte-order mark":     "\ufeffa.txt",
		"line separator":      "a\u2028.txt",
		"leading space":       " a.txt",
		"trailing space":      "a.txt ",
		"invalid UTF-8":       "a\xff.txt",
		"too long":            strings.Repeat("a", attach.MaxFilenameBytes+1),
		"too long in bytes":   strings.Repeat("é", 128),
		"soft hyphen (Cf)":    "a\u00ad.txt",
		"replacement in text": "a\ufffd.txt",
	}
	for _, name := range good {
		if err := attach.CheckFilename(name); err != nil {
			t.Errorf("CheckFilename(%q) = %v, want nil", name, err)
		}
	}
	for what, name := range bad {
		if err := attach.CheckFilename(name); !errors.Is(err, attach.ErrFilename) {
			t.Errorf("%s: CheckFilename(%q) = %v, want ErrFilename", what, name, err)
		}
	}
}

func TestIDs(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		id := attach.NewID()
		if !attach.ValidID(id) || seen[id] {
			t.Fatalf("NewID() = %q: valid %v, repeated %v", id, attach.ValidID(id), seen[id])
		}
		seen[id] = true
	}
	for _, id := range []string{"", "att_", "att_ABC", "att_abcdefghijklmnopqrstuvwxyz", "xyz_ABCDEFGHIJKLMNOPQRSTUVWX", "att_ABCDEFGHIJKLMNOPQRSTUVW1", "att_ABCDEFGHIJKLMNOPQRSTUV/Z"} {
		if attach.ValidID(id) {
			t.Errorf("ValidID(%q) = true", id)
		}
	}
	a, b := attach.Owner("t1", "alice"), attach.Owner("t1", "bob")
	if a == b || attach.Owner("t1a", "lice") == a || len(a) != 32 {
		t.Errorf("Owner: %q %q", a, b)
	}
	if got := attach.Key(a, "s1", "att_X"); got != "attachments/"+a+"/s1/att_X" || !strings.HasPrefix(got, attach.SessionPrefix(a, "s1")) {
		t.Errorf("Key = %q", got)
	}
}

func TestCheckContent(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n....")
	for _, tc := range []struct {
		mt   string
		data []byte
		ok   bool
	}{
		{"image/png", png, true},
		{"image/jpeg", png, false},
		{"image/jpeg", []byte{0xFF, 0xD8, 0xFF, 0xE0, 0}, true},
		{"image/gif", []byte("GIF89a...."), true},
		{"image/gif", []byte("GIF90a...."), false},
		{"image/webp", []byte("RIFF\x00\x00\x00\x00WEBPVP8 "), true},
		{"image/webp", []byte("RIFF\x00\x00\x00\x00WAVE"), false},
		{"image/png", []byte("<svg/>"), false},
		{"application/pdf", []byte("%PDF-1.7\n"), true},
		{"application/pdf", []byte("PDF"), false},
		{"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", []byte("PK\x03\x04rest"), true},
		{"application/vnd.openxmlformats-officedocument.wordprocessingml.document", []byte("%PDF-"), false},
		{"text/plain", []byte("hello, world\n"), true},
		{"text/csv", []byte("\ufeffa,b\n1,2\n"), true},
		{"text/markdown", []byte("bad \xff utf-8"), false},
		{"text/html", []byte("<p>a\x00b</p>"), false},
		{"text/plain", png, false},
		{"image/svg+xml", []byte("<svg/>"), false},
	} {
		err := attach.CheckContent(tc.mt, tc.data)
		if (err == nil) != tc.ok || err != nil && !errors.Is(err, attach.ErrContent) {
			t.Errorf("CheckContent(%s, %q) = %v, want ok=%v", tc.mt, tc.data, err, tc.ok)
		}
	}
}

func TestMediaTypeOf(t *testing.T) {
	for name, want := range map[string]string{
		"cat.png": "image/png", "Cat.PNG": "image/png", "a.b.jpeg": "image/jpeg", "x.JPG": "image/jpeg",
		"notes.md": "text/markdown", "report.pdf": "application/pdf", "t.xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
		"page.htm": "text/html", "data.csv": "text/csv",
		"noext": "", "archive.zip": "", "image.svg": "", ".png.exe": "", "trailing.": "",
	} {
		got, ok := attach.MediaTypeOf(name)
		if got != want || ok != (want != "") {
			t.Errorf("MediaTypeOf(%q) = %q, %v; want %q", name, got, ok, want)
		}
		if ok {
			if _, known := attach.MediaTypes[got]; !known {
				t.Errorf("MediaTypeOf(%q) = %q, not an accepted type", name, got)
			}
		}
	}
}

// TestInlineID: an inline file's id has NewID's shape, is the same for
// the same session, turn and place, and differs for any other.
func TestInlineID(t *testing.T) {
	id := attach.InlineID("s", "r1", 0)
	if !attach.ValidID(id) || id != attach.InlineID("s", "r1", 0) {
		t.Fatalf("InlineID = %q: not a stable attachment id", id)
	}
	for _, other := range []string{attach.InlineID("s", "r1", 1), attach.InlineID("s", "r2", 0), attach.InlineID("s2", "r1", 0), attach.InlineID("s", "r", 10)} {
		if other == id || !attach.ValidID(other) {
			t.Errorf("InlineID collides or is invalid: %q beside %q", other, id)
		}
	}
}
