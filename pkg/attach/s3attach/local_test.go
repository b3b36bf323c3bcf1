package s3attach_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/attach"
	"github.com/turnstream/turnstream/pkg/attach/attachtest"
	"github.com/turnstream/turnstream/pkg/attach/s3attach"
)

// post sends up's form with edit applied and data as the file
// (attachtest.Post).
func post(t *testing.T, up attach.Upload, edit map[string]string, data []byte) int {
	t.Helper()
	return attachtest.Post(t, up, edit, data)
}

// localServer serves a Local under /uploads of an httptest server whose
// clock the test moves.
type localServer struct {
	*s3attach.Local
	mu  sync.Mutex
	now time.Time
}

func (s *localServer) clock() time.Time { s.mu.Lock(); defer s.mu.Unlock(); return s.now }
func (s *localServer) advance(d time.Duration) {
	s.mu.Lock()
	s.now = s.now.Add(d)
	s.mu.Unlock()
}

func newLocal(t *testing.T) *localServer {
	t.Helper()
	s := &localServer{now: time.Now()}
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	s.Local = s3attach.NewLocal(srv.URL+"/uploads", s.clock)
	mux.Handle("/uploads/", http.StripPrefix("/uploads", s.Handler()))
	return s
}

var pngBytes = append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{7}, 120)...)

func sampleObject(size int64) attach.Object {
	return attach.Object{
		Key:       attach.Key(attach.Owner("t1", "alice"), "s1", attach.NewID()),
		MediaType: "image/png",
		Size:      size,
		Filename:  "Résumé photo 1.png",
		UseBy:     time.Now().Add(attach.UseWithin).Truncate(time.Second).UTC(),
	}
}

// roundTrip uploads through store's presigned form and reads the object
// back through every Store method; post sends the form.
func roundTrip(t *testing.T, store attach.Store) {
	t.Helper()
	ctx := context.Background()
	obj := sampleObject(int64(len(pngBytes)))
	up, err := store.PresignUpload(ctx, obj, attach.UploadExpiry)
	if err != nil {
		t.Fatal(err)
	}
	if up.Method != http.MethodPost || up.Fields["key"] != obj.Key || up.Fields["Content-Type"] != "image/png" {
		t.Fatalf("upload form: %+v", up)
	}
	if _, err := store.Head(ctx, obj.Key); !errors.Is(err, attach.ErrNotFound) {
		t.Fatalf("Head before the upload = %v, want ErrNotFound", err)
	}
	if status := post(t, up, nil, pngBytes); status != http.StatusNoContent {
		t.Fatalf("upload: %d, want 204", status)
	}
	got, err := store.Head(ctx, obj.Key)
	if err != nil {
		t.Fatal(err)
	}
	if got != obj {
		t.Errorf("Head = %+v, want %+v", got, obj)
	}
	data, err := store.Read(ctx, obj.Key, attach.MaxImageBytes)
	if err != nil || !bytes.Equal(data, pngBytes) {
		t.Fatalf("Read = %d bytes, %v", len(data), err)
	}
	if _, err := store.Read(ctx, obj.Key, int64(len(pngBytes)-1)); !errors.Is(err, attach.ErrSize) {
		t.Errorf("Read under the size = %v, want ErrSize", err)
	}
	url, err := store.PresignDownload(ctx, obj.Key, attach.DownloadExpiry)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Equal(body, pngBytes) {
		t.Fatalf("download: %d, %d bytes", resp.StatusCode, len(body))
	}
	if _, err := store.Head(ctx, obj.Key+"X"); !errors.Is(err, attach.ErrNotFound) {
		t.Errorf("Head of another key = %v, want ErrNotFound", err)
	}
	other := sampleObject(int64(len(pngBytes)))
	other.Key = attach.Key(attach.Owner("t1", "alice"), "s2", attach.NewID())
	up2, _ := store.PresignUpload(ctx, other, attach.UploadExpiry)
	if status := post(t, up2, nil, pngBytes); status != http.StatusNoContent {
		t.Fatalf("second upload: %d", status)
	}
	n, err := store.DeletePrefix(ctx, attach.SessionPrefix(attach.Owner("t1", "alice"), "s1"))
	if err != nil || n != 1 {
		t.Fatalf("DeletePrefix = %d, %v; want 1", n, err)
	}
	if _, err := store.Head(ctx, obj.Key); !errors.Is(err, attach.ErrNotFound) {
		t.Errorf("Head after delete = %v, want ErrNotFound", err)
	}
	if _, err := store.Head(ctx, other.Key); err != nil {
		t.Errorf("another session's attachment after delete: %v", err)
	}
}

func TestLocalRoundTrip(t *testing.T) {
	roundTrip(t, newLocal(t))
}

// TestLocalRefusesWhatThePolicyForbids: every change to a signed form
// that S3 would refuse, the local store refuses too, and stores nothing.
func TestLocalRefusesWhatThePolicyForbids(t *testing.T) {
	s := newLocal(t)
	ctx := context.Background()
	obj := sampleObject(int64(len(pngBytes)))
	up, err := s.PresignUpload(ctx, obj, attach.UploadExpiry)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit map[string]string
		data []byte
		want int
	}{
		{"another content type", map[string]string{"Content-Type": "text/html"}, pngBytes, 403},
		{"another key", map[string]string{"key": strings.Replace(obj.Key, "s1", "s2", 1)}, pngBytes, 403},
		{"another filename", map[string]string{"x-amz-meta-filename": "evil.png"}, pngBytes, 403},
		{"a later use-by", map[string]string{"x-amz-meta-use-by": "99999999999"}, pngBytes, 403},
		{"a field the policy does not name", map[string]string{"x-amz-meta-owner": "bob"}, pngBytes, 403},
		{"no signature", map[string]string{"X-Amz-Signature": ""}, pngBytes, 403},
		{"a forged signature", map[string]string{"X-Amz-Signature": strings.Repeat("0", 64)}, pngBytes, 403},
		{"another policy", map[string]string{"Policy": "e30="}, pngBytes, 403},
		{"one byte more", nil, append(pngBytes, 0), 403},
		{"one byte less", nil, pngBytes[1:], 403},
		{"an empty file", nil, nil, 403},
		{"far too large", nil, make([]byte, attach.MaxDocumentBytes+1), 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := post(t, up, tc.edit, tc.data); got != tc.want {
				t.Errorf("status %d, want %d", got, tc.want)
			}
			if _, err := s.Head(ctx, obj.Key); !errors.Is(err, attach.ErrNotFound) {
				t.Errorf("stored after a refused upload: %v", err)
			}
		})
	}
	t.Run("not multipart", func(t *testing.T) {
		resp, err := http.Post(up.URL, "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("status %d, want 400", resp.StatusCode)
		}
	})
	t.Run("expired", func(t *testing.T) {
		s.advance(attach.UploadExpiry + time.Second)
		defer s.advance(-attach.UploadExpiry - time.Second)
		if got := post(t, up, nil, pngBytes); got != http.StatusForbidden {
			t.Errorf("status %d, want 403", got)
		}
	})
	if got := post(t, up, nil, pngBytes); got != http.StatusNoContent {
		t.Fatalf("the form as signed: %d, want 204", got)
	}
}

func TestLocalDownloadRefusals(t *testing.T) {
	s := newLocal(t)
	ctx := context.Background()
	obj := sampleObject(int64(len(pngBytes)))
	up, _ := s.PresignUpload(ctx, obj, attach.UploadExpiry)
	if got := post(t, up, nil, pngBytes); got != http.StatusNoContent {
		t.Fatalf("upload: %d", got)
	}
	url, _ := s.PresignDownload(ctx, obj.Key, attach.DownloadExpiry)
	status := func(u string) int {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	if got := status(strings.Replace(url, "signature=", "signature=0", 1)); got != http.StatusForbidden {
		t.Errorf("forged signature: %d", got)
	}
	if got := status(strings.Replace(url, obj.Key, attach.Key(attach.Owner("t1", "bob"), "s1", attach.NewID()), 1)); got != http.StatusForbidden {
		t.Errorf("another key with this signature: %d", got)
	}
	s.advance(attach.DownloadExpiry + time.Second)
	if got := status(url); got != http.StatusForbidden {
		t.Errorf("expired: %d", got)
	}
}
