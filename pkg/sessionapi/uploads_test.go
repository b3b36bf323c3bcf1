package sessionapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/attach"
	"github.com/turnstream/turnstream/pkg/attach/attachtest"
	"github.com/turnstream/turnstream/pkg/attach/s3attach"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/sessionapi"
	"github.com/turnstream/turnstream/pkg/store/memory"
	"github.com/turnstream/turnstream/pkg/store/storetest"
)

// uploadFixture is the history and artifacts handlers with attachments
// in store, or in an s3attach.Local served by an httptest server when
// store is nil, on the fixture's clock.
func uploadFixture(t *testing.T, store attach.Store) (*fixture, attach.Store) {
	t.Helper()
	f := newFixture(t, storeFactories["memory"])
	if store == nil {
		mux := http.NewServeMux()
		srv := httptest.NewServer(mux)
		t.Cleanup(srv.Close)
		local := s3attach.NewLocal(srv.URL+"/uploads", f.clock.Now)
		mux.Handle("/uploads/", http.StripPrefix("/uploads", local.Handler()))
		store = local
	}
	f.history, f.artifacts = newHandlers(t, sessionapi.Options{
		Store: f.store, Authenticator: devAuthenticator(t), MaxBodyBytes: 4096, Now: f.clock.Now, Attachments: store,
	})
	return f, store
}

// upload declares and uploads a small text file as as in session sid and
// returns its key.
func (f *fixture) upload(as chat.Principal, sid string) string {
	f.t.Helper()
	resp := f.do(f.artifacts, request{method: http.MethodPost, target: "/sessions/" + sid + "/uploads", as: &as,
		contentType: "application/json", body: `{"filename":"a.txt","mediaType":"text/plain","size":5}`})
	if resp.status != http.StatusCreated {
		f.t.Fatalf("declare: %d %s", resp.status, resp.body)
	}
	var ticket api.UploadTicket
	if err := json.Unmarshal(resp.body, &ticket); err != nil {
		f.t.Fatal(err)
	}
	if got := sendForm(f.t, ticket, []byte("hello")); got != http.StatusNoContent {
		f.t.Fatalf("upload: %d", got)
	}
	return ticket.Upload.Fields["key"]
}

func uploadPost(target string, as any, body string) request {
	r := request{method: http.MethodPost, target: target, contentType: "application/json", body: body}
	switch as := as.(type) {
	case string:
		r.auth = as
	default:
		r.as = &alice
	}
	return r
}

// sendForm posts data with the ticket's form, as a browser does.
func sendForm(t *testing.T, ticket api.UploadTicket, data []byte) int {
	t.Helper()
	return attachtest.Post(t, attach.Upload{URL: ticket.Upload.URL, Method: ticket.Upload.Method, Fields: ticket.Upload.Fields}, nil, data)
}

func TestUploadAndDownload(t *testing.T) {
	t.Parallel()
	f, local := uploadFixture(t, nil)
	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{1}, 56)...)
	resp := f.do(f.artifacts, uploadPost("/sessions/s1/uploads", nil, `{"filename":"cat photo.png","mediaType":"image/png","size":64}`))
	if resp.status != http.StatusCreated {
		t.Fatalf("upload: %d %s", resp.status, resp.body)
	}
	wantJSONHeaders(t, "upload", resp)
	var ticket api.UploadTicket
	if err := json.Unmarshal(resp.body, &ticket); err != nil {
		t.Fatal(err)
	}
	if !attach.ValidID(ticket.AttachmentID) || ticket.Upload.Method != "POST" || ticket.ExpiresAt != protocol.FormatTime(start.Add(attach.UploadExpiry)) {
		t.Fatalf("ticket %+v", ticket)
	}
	key := attach.Key(attach.Owner(alice.Tenant, alice.Subject), "s1", ticket.AttachmentID)
	if ticket.Upload.Fields["key"] != key {
		t.Errorf("form key %q, want %q", ticket.Upload.Fields["key"], key)
	}
	path := "/sessions/s1/attachments/" + ticket.AttachmentID
	wantError(t, "download before the upload", f.do(f.artifacts, get(path, alice)), 404, protocol.CodeAttachmentNotFound)
	if got := sendForm(t, ticket, png); got != http.StatusNoContent {
		t.Fatalf("form: %d", got)
	}
	d := decode[api.AttachmentDownload](t, "download", f.do(f.artifacts, get(path, alice)))
	if d.AttachmentID != ticket.AttachmentID || d.MediaType != "image/png" || d.Filename != "cat photo.png" || d.Size != 64 {
		t.Errorf("download %+v", d)
	}
	r, err := http.Get(d.URL)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(r.Body)
	_ = r.Body.Close()
	if !bytes.Equal(got, png) {
		t.Errorf("downloaded %d bytes, want the upload's", len(got))
	}
	// Tenancy: another principal, another session, another id: 404 alike.
	wantError(t, "mallory", f.do(f.artifacts, get(path, mallory)), 404, protocol.CodeAttachmentNotFound)
	wantError(t, "another session", f.do(f.artifacts, get("/sessions/s2/attachments/"+ticket.AttachmentID, alice)), 404, protocol.CodeAttachmentNotFound)
	wantError(t, "an id of another shape", f.do(f.artifacts, get("/sessions/s1/attachments/att_x", alice)), 404, protocol.CodeAttachmentNotFound)
	if _, err := local.Head(f.ctx, key); err != nil {
		t.Fatal(err)
	}
}

// TestUploadRefusals: every bad declaration is a typed error before any
// form is signed, and the body never echoes the input.
func TestUploadRefusals(t *testing.T) {
	t.Parallel()
	f, _ := uploadFixture(t, nil)
	for _, tc := range []struct {
		name, body string
		status     int
		code       string
	}{
		{"svg", `{"filename":"a.svg","mediaType":"image/svg+xml","size":10}`, 415, protocol.CodeAttachmentTypeUnsupported},
		{"no media type", `{"filename":"a","mediaType":"","size":10}`, 415, protocol.CodeAttachmentTypeUnsupported},
		{"image too large", `{"filename":"a.png","mediaType":"image/png","size":3932161}`, 413, protocol.CodeAttachmentTooLarge},
		{"document too large", `{"filename":"a.pdf","mediaType":"application/pdf","size":4718593}`, 413, protocol.CodeAttachmentTooLarge},
		{"empty", `{"filename":"a.txt","mediaType":"text/plain","size":0}`, 400, protocol.CodeAttachmentInvalid},
		{"path", `{"filename":"../../etc/passwd","mediaType":"text/plain","size":10}`, 400, protocol.CodeAttachmentInvalid},
		{"control", `{"filename":"a\u0007.txt","mediaType":"text/plain","size":10}`, 400, protocol.CodeAttachmentInvalid},
		{"bidi override", `{"filename":"a\u202etxt.exe","mediaType":"text/plain","size":10}`, 400, protocol.CodeAttachmentInvalid},
		{"missing size", `{"filename":"a.txt","mediaType":"text/plain"}`, 400, protocol.CodeRequestInvalidBody},
		{"fractional size", `{"filename":"a.txt","mediaType":"text/plain","size":1.5}`, 400, protocol.CodeRequestInvalidBody},
		{"string size", `{"filename":"a.txt","mediaType":"text/plain","size":"10"}`, 400, protocol.CodeRequestInvalidBody},
		{"unknown member", `{"filename":"a.txt","mediaType":"text/plain","size":10,"key":"x"}`, 400, protocol.CodeRequestInvalidBody},
		{"duplicate member", `{"filename":"a.txt","filename":"b.txt","mediaType":"text/plain","size":10}`, 400, protocol.CodeRequestInvalidBody},
		{"not JSON", `filename=a.txt`, 400, protocol.CodeRequestInvalidBody},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := f.do(f.artifacts, uploadPost("/sessions/s1/uploads", nil, tc.body))
			wantError(t, tc.name, resp, tc.status, tc.code)
			if strings.Contains(string(resp.body), "passwd") || strings.Contains(string(resp.body), "svg") {
				t.Errorf("the body echoes the input: %s", resp.body)
			}
		})
	}
	wantError(t, "no credentials", f.do(f.artifacts, uploadPost("/sessions/s1/uploads", "Bearer nope", `{"filename":"a.txt","mediaType":"text/plain","size":1}`)), 401, protocol.CodeRequestUnauthenticated)
	wantError(t, "a session id that is not a SafeId", f.do(f.artifacts, uploadPost("/sessions/-x/uploads", nil, `{"filename":"a.txt","mediaType":"text/plain","size":1}`)), 404, protocol.CodeSessionNotFound)
	resp := f.do(f.artifacts, request{method: http.MethodPost, target: "/sessions/s1/uploads", as: &alice, contentType: "text/plain", body: "{}"})
	wantError(t, "text/plain body", resp, 415, protocol.CodeRequestUnsupportedMediaType)
	resp = f.do(f.artifacts, get("/sessions/s1/uploads", alice))
	if resp.status != http.StatusMethodNotAllowed {
		t.Errorf("GET uploads: %d", resp.status)
	}
}

// TestNoAttachmentsNoRoutes: without Options.Attachments the routes do
// not exist.
func TestNoAttachmentsNoRoutes(t *testing.T) {
	t.Parallel()
	clock := storetest.NewClock(start)
	h, err := sessionapi.NewArtifactsHandler(sessionapi.Options{
		Store: memory.New(memory.Options{Now: clock.Now}), Authenticator: devAuthenticator(t), Now: clock.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, ctx: t.Context()}
	wantError(t, "uploads", f.do(h, uploadPost("/sessions/s1/uploads", nil, `{"filename":"a.txt","mediaType":"text/plain","size":1}`)), 404, protocol.CodeRequestNotFound)
}

// failingDeletes is an attachment store whose DeletePrefix fails while
// fail is set.
type failingDeletes struct {
	attach.Store
	fail atomic.Bool
}

func (s *failingDeletes) DeletePrefix(ctx context.Context, prefix string) (int, error) {
	if s.fail.Load() {
		return 0, errors.New("s3: connection reset")
	}
	return s.Store.DeletePrefix(ctx, prefix)
}

// TestDeleteRemovesAttachments: a session's delete removes the caller's
// attachments of that session only, an erase all of the principal's; a
// removal that fails is a 500 the client's retry completes.
func TestDeleteRemovesAttachments(t *testing.T) {
	t.Parallel()
	_, local := uploadFixture(t, nil) // a local store and the server of its forms
	fd := &failingDeletes{Store: local}
	f, _ := uploadFixture(t, fd)
	gone := func(key string) bool {
		_, err := fd.Head(f.ctx, key)
		return errors.Is(err, attach.ErrNotFound)
	}
	f.runTurn("s1", alice, turnSpec{id: "t1"})
	f.runTurn("s2", alice, turnSpec{id: "t2"})
	f.runTurn("m1", mallory, turnSpec{id: "tm"})
	a1, a2, m1 := f.upload(alice, "s1"), f.upload(alice, "s2"), f.upload(mallory, "m1")
	early := f.upload(alice, "s3") // a session with no turn yet

	fd.fail.Store(true)
	resp := f.do(f.history, del("/sessions/s1", alice))
	wantError(t, "delete with a failing removal", resp, http.StatusInternalServerError, protocol.CodeServerInternal)
	if gone(a1) {
		t.Fatal("removed although the store failed")
	}
	fd.fail.Store(false)
	wantError(t, "the retry", f.do(f.history, del("/sessions/s1", alice)), http.StatusNotFound, protocol.CodeSessionNotFound)
	if !gone(a1) || gone(a2) || gone(m1) {
		t.Fatalf("after deleting s1: s1's gone %v, s2's gone %v, mallory's gone %v", gone(a1), gone(a2), gone(m1))
	}
	if resp := f.do(f.history, del("/sessions/s2", alice)); resp.status != http.StatusNoContent {
		t.Fatalf("delete s2: %d %s", resp.status, resp.body)
	}
	if !gone(a2) || gone(early) || gone(m1) {
		t.Fatalf("after deleting s2: s2's gone %v, s3's gone %v, mallory's gone %v", gone(a2), gone(early), gone(m1))
	}
	erased := decode[api.DeleteProgress](t, "erase", f.do(f.history, del("/principals/alice/sessions", host)))
	if erased.Status != api.DeleteStatusDeleted || !gone(early) || gone(m1) {
		t.Fatalf("erase %+v: s3's gone %v, mallory's gone %v", erased, gone(early), gone(m1))
	}
}
