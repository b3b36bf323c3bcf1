package client_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/turnstream/turnstream/pkg/attach/s3attach"
	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/sessionapi"
	"github.com/turnstream/turnstream/pkg/store/memory"
)

// TestUpload: client.Upload declares, posts the form with progress and
// returns an id client.Attachment reads back; refusals come back typed.
func TestUpload(t *testing.T) {
	t.Parallel()
	authn, err := auth.New(context.Background(), config.AuthConfig{Mode: config.AuthDev}, auth.WithLookupEnv(func(string) (string, bool) { return "", false }))
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	local := s3attach.NewLocal(srv.URL+"/uploads", nil)
	h, err := sessionapi.NewArtifactsHandler(sessionapi.Options{Store: memory.New(memory.Options{}), Authenticator: authn, Attachments: local})
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle("/uploads/", http.StripPrefix("/uploads", local.Handler()))
	mux.Handle("/artifacts/", http.StripPrefix("/artifacts", h))
	c, err := client.New(client.Options{TurnURL: srv.URL + "/", ArtifactsURL: srv.URL + "/artifacts/", Auth: client.Bearer("dev.ana")})
	if err != nil {
		t.Fatal(err)
	}
	data := append([]byte("%PDF-1.7\n"), bytes.Repeat([]byte("x"), 200_000)...)
	var calls int
	var last int64
	id, err := client.Upload(t.Context(), c, "s1", client.UploadFile{Filename: "report.pdf", MediaType: "application/pdf", Size: int64(len(data)), Body: bytes.NewReader(data)},
		func(sent, total int64) {
			calls++
			if sent < last || total != int64(len(data)) {
				t.Errorf("progress %d/%d after %d", sent, total, last)
			}
			last = sent
		})
	if err != nil {
		t.Fatal(err)
	}
	if last != int64(len(data)) || calls < 2 {
		t.Errorf("progress ended at %d after %d calls, want %d in several", last, calls, len(data))
	}
	d, err := client.Attachment(t.Context(), c, "s1", id)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(d.URL)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if !bytes.Equal(got, data) || d.Filename != "report.pdf" {
		t.Fatalf("read back %d bytes, %+v", len(got), d)
	}

	var e *client.Error
	_, err = client.Upload(t.Context(), c, "s1", client.UploadFile{Filename: "a.svg", MediaType: "image/svg+xml", Size: 10, Body: bytes.NewReader(make([]byte, 10))}, nil)
	if !errors.As(err, &e) || e.Status != 415 || e.Diagnostic.Code != protocol.CodeAttachmentTypeUnsupported {
		t.Errorf("an svg: %v", err)
	}
	_, err = client.Upload(t.Context(), c, "s1", client.UploadFile{Filename: "a.txt", MediaType: "text/plain", Size: 10, Body: bytes.NewReader([]byte("short"))}, nil)
	if !errors.As(err, &e) || e.Status != http.StatusForbidden {
		t.Errorf("fewer bytes than declared: %v", err)
	}
	other, _ := client.New(client.Options{TurnURL: srv.URL + "/", ArtifactsURL: srv.URL + "/artifacts/", Auth: client.Bearer("dev.bo")})
	if _, err := client.Attachment(t.Context(), other, "s1", id); !errors.As(err, &e) || e.Diagnostic.Code != protocol.CodeAttachmentNotFound {
		t.Errorf("another person's read: %v", err)
	}
	none, _ := client.New(client.Options{TurnURL: srv.URL + "/"})
	if _, err := client.Upload(t.Context(), none, "s1", client.UploadFile{}, nil); !errors.Is(err, client.ErrNoURL) {
		t.Errorf("no artifacts URL: %v", err)
	}
}
