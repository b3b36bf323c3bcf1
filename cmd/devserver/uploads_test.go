package main

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/attach"
	"github.com/turnstream/turnstream/pkg/attach/attachtest"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// TestUploads: on the dev server as a person runs it, an image declared
// on /artifacts/ is uploaded with its form to /uploads/ and read back
// through its signed URL; the form changed or a foreign reader is refused.
func TestUploads(t *testing.T) {
	t.Parallel()
	s := startServer(t, map[string]string{})
	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{9}, 92)...)
	var ticket api.UploadTicket
	if got := do(t, http.MethodPost, s.url+"/artifacts/sessions/s1/uploads", "ana", `{"filename":"cat.png","mediaType":"image/png","size":100}`, &ticket); got != http.StatusCreated {
		t.Fatalf("declare: %d", got)
	}
	if !strings.HasPrefix(ticket.Upload.URL, s.url+"/uploads/") {
		t.Fatalf("upload URL %q is not the dev server's", ticket.Upload.URL)
	}
	form := attach.Upload{URL: ticket.Upload.URL, Method: ticket.Upload.Method, Fields: ticket.Upload.Fields}
	send := func(contentType string, data []byte) int {
		return attachtest.Post(t, form, map[string]string{"Content-Type": contentType}, data)
	}
	if got := send("text/html", png); got != http.StatusForbidden {
		t.Errorf("a form with another content type: %d, want 403", got)
	}
	if got := send("image/png", png); got != http.StatusNoContent {
		t.Fatalf("upload: %d, want 204", got)
	}
	var d api.AttachmentDownload
	path := s.url + "/artifacts/sessions/s1/attachments/" + ticket.AttachmentID
	if got := getJSON(t, path, "ana", &d); got != http.StatusOK {
		t.Fatalf("read back: %d", got)
	}
	if got := getJSON(t, path, "bo", nil); got != http.StatusNotFound {
		t.Errorf("another person's read: %d, want 404", got)
	}
	resp, err := http.Get(d.URL)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Equal(data, png) || resp.Header.Get("Content-Type") != "image/png" {
		t.Errorf("download: %d, %d bytes, %q", resp.StatusCode, len(data), resp.Header.Get("Content-Type"))
	}

	// A turn with the attachment: the echo model describes what it got,
	// and the user message records it as an image part.
	body := strings.Replace(submitBody("s1", "t1", "what is this?"), `"payload":{"input":"what is this?"}`,
		`"payload":{"input":"what is this?","attachments":["`+ticket.AttachmentID+`"]}`, 1)
	req, _ := http.NewRequest(http.MethodPost, s.url+"/turn/", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer dev.ana")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	stream := (&turnStream{resp: resp, sc: bufio.NewScanner(resp.Body)}).rest(t)
	last := stream[len(stream)-1].Snapshot
	if last == nil || last.Status != protocol.StatusComplete {
		t.Fatalf("last line %+v", stream[len(stream)-1])
	}
	user, answer := last.Messages[0], last.Messages[1]
	if len(user.Parts) != 1 || user.Parts[0].Type != "image" || *user.Parts[0].Source != "attachment:"+ticket.AttachmentID {
		t.Errorf("user message parts %+v", user.Parts)
	}
	if want := "Echo: what is this?\n\nAttached: cat.png (image/png, 100 bytes)"; answer.Content != want {
		t.Errorf("answer %q, want %q", answer.Content, want)
	}
	s.stop(t)
}
