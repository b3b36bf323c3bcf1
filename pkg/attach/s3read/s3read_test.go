package s3read_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/turnstream/turnstream/internal/motoserver"
	"github.com/turnstream/turnstream/pkg/attach"
	"github.com/turnstream/turnstream/pkg/attach/attachtest"
	"github.com/turnstream/turnstream/pkg/attach/s3attach"
	"github.com/turnstream/turnstream/pkg/attach/s3read"
)

const (
	region = "us-east-1"
	bucket = "turnstream-read-test"
)

// pngBytes is a small PNG: its signature and then padding.
var pngBytes = append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{7}, 1000)...)

// TestReaderAgainstS3Auth reads, with the turn's reader, an object the
// artifacts function's store (the S3 SDK client) signed the upload of,
// from moto's S3 with its IAM authentication on: moto recomputes every
// request's Signature Version 4 signature with the secret of the access
// key it issued, so the reader's signing is checked by a server, not by
// the code that wrote it. (moto 5.2.1 miscomputes the signature of a key
// holding an escaped character such as ":" for the S3 SDK's own requests
// too, so the key here has none: TestObjectPathMatchesSDK checks the
// escaping against the SDK's.)
func TestReaderAgainstS3Auth(t *testing.T) {
	t.Parallel()
	endpoint := motoserver.Start(t)
	ctx := t.Context()
	admin := s3.New(s3.Options{
		Region: region, BaseEndpoint: aws.String(endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("testing", "testing-secret", ""),
	})
	if _, err := admin.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	store := s3attach.NewS3(admin, bucket)
	obj := attach.Object{
		Key:       attach.Key(attach.Owner("tenant-a", "user-1"), "session-1.a", attach.NewID()),
		MediaType: "image/png", Size: int64(len(pngBytes)), Filename: "cat picture.png",
		UseBy: time.Now().Add(attach.UseWithin).Truncate(time.Second).UTC(),
	}
	up, err := store.PresignUpload(ctx, obj, attach.UploadExpiry)
	if err != nil {
		t.Fatal(err)
	}
	if status := attachtest.Post(t, up, nil, pngBytes); status != http.StatusNoContent {
		t.Fatalf("upload: %d", status)
	}

	// A user granted what s3read.Actions lists (as template.yaml grants
	// the turn function), then authentication on for every request after.
	keyID, secret := motoserver.BucketUser(t, endpoint, bucket, s3read.Actions)
	motoserver.Authenticate(t, endpoint)

	r := &s3read.Reader{Bucket: bucket, Region: region, Endpoint: endpoint,
		Credentials: credentials.NewStaticCredentialsProvider(keyID, secret, "")}
	got, err := r.Head(ctx, obj.Key)
	if err != nil {
		t.Fatalf("head: %v", err)
	}
	if got != obj {
		t.Errorf("head: %+v, want %+v", got, obj)
	}
	data, err := r.Read(ctx, obj.Key, attach.MaxImageBytes)
	if err != nil || !bytes.Equal(data, pngBytes) {
		t.Fatalf("read: %d bytes, %v", len(data), err)
	}
	if _, err := r.Read(ctx, obj.Key, int64(len(pngBytes)-1)); !errors.Is(err, attach.ErrSize) {
		t.Errorf("read beyond max: %v, want attach.ErrSize", err)
	}
	missing := attach.Key(attach.Owner("tenant-a", "user-1"), "session-1.a", attach.NewID())
	if _, err := r.Head(ctx, missing); !errors.Is(err, attach.ErrNotFound) {
		t.Errorf("head of a missing key: %v, want attach.ErrNotFound", err)
	}
	if _, err := r.Read(ctx, missing, attach.MaxImageBytes); !errors.Is(err, attach.ErrNotFound) {
		t.Errorf("read of a missing key: %v, want attach.ErrNotFound", err)
	}

	// Put stores an object as an upload's form would: Head and Read give
	// back its type, metadata and bytes.
	put := attach.Object{
		Key:       attach.Key(attach.Owner("tenant-a", "user-1"), "session-1.a", attach.NewID()),
		MediaType: "text/plain", Size: int64(len("inline text")), Filename: "document-1.txt",
		UseBy: time.Now().Add(attach.UseWithin).Truncate(time.Second).UTC(),
	}
	if err := r.Put(ctx, put, []byte("inline text")); err != nil {
		t.Fatalf("put: %v", err)
	}
	if got, err := r.Head(ctx, put.Key); err != nil || got != put {
		t.Errorf("head after put: %+v, %v, want %+v", got, err, put)
	}
	if data, err := r.Read(ctx, put.Key, attach.MaxDocumentBytes); err != nil || string(data) != "inline text" {
		t.Errorf("read after put: %q, %v", data, err)
	}

	// Signed with another secret: S3 refuses it (403), which is neither a
	// missing object nor retried.
	forged := *r
	forged.Credentials = credentials.NewStaticCredentialsProvider(keyID, "not-the-secret", "")
	if _, err := forged.Head(ctx, obj.Key); !errors.Is(err, s3read.ErrStatus) || !strings.Contains(err.Error(), "403") {
		t.Errorf("head with a wrong secret: %v, want ErrStatus 403", err)
	}
	if _, err := forged.Read(ctx, obj.Key, attach.MaxImageBytes); !errors.Is(err, s3read.ErrStatus) {
		t.Errorf("read with a wrong secret: %v, want ErrStatus", err)
	}
	if err := forged.Put(ctx, put, []byte("other text")); !errors.Is(err, s3read.ErrStatus) {
		t.Errorf("put with a wrong secret: %v, want ErrStatus", err)
	}
	if data, _ := r.Read(ctx, put.Key, attach.MaxDocumentBytes); string(data) != "inline text" {
		t.Errorf("a refused put changed the object: %q", data)
	}
}

// script is an S3 stand-in below the reader's retries: each request gets
// the next answer of a list (status, or hang until the request's context
// ends); the last answer repeats.
type script struct {
	answers []int // an HTTP status, or hang
	calls   atomic.Int32
	body    []byte
}

const hang = -1

func (s *script) RoundTrip(req *http.Request) (*http.Response, error) {
	n := int(s.calls.Add(1)) - 1
	a := s.answers[min(n, len(s.answers)-1)]
	if a == hang {
		<-req.Context().Done()
		return nil, req.Context().Err()
	}
	if req.Header.Get("Authorization") == "" || req.Header.Get("X-Amz-Content-Sha256") == "" {
		return nil, errors.New("unsigned request")
	}
	h := http.Header{"Content-Type": {"image/png"}, "Content-Length": {fmt.Sprint(len(s.body))},
		"X-Amz-Meta-Filename": {"a.png"}, "X-Amz-Meta-Use-By": {"2000000000"}}
	body := s.body
	if a != http.StatusOK {
		body = []byte("<Error/>")
	}
	return &http.Response{StatusCode: a, Header: h, Body: io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)), Request: req}, nil
}

// TestReaderRetries: the answers worth another attempt (500, 503, 429, a
// hung request past its attempt time) are retried within Attempts, and
// the others (403, 404) are not; the caller's context bounds them all.
func TestReaderRetries(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		answers []int
		calls   int32
		wantErr error
	}{
		"ok":                        {[]int{200}, 1, nil},
		"500 then ok":               {[]int{500, 200}, 2, nil},
		"503 and 429 then ok":       {[]int{503, 429, 200}, 3, nil},
		"hang then ok":              {[]int{hang, 200}, 2, nil},
		"500 every time":            {[]int{500}, 3, s3read.ErrStatus},
		"hang every time":           {[]int{hang}, 3, context.DeadlineExceeded},
		"403 is not retried":        {[]int{403, 200}, 1, s3read.ErrStatus},
		"404 is a missing object":   {[]int{404, 200}, 1, attach.ErrNotFound},
		"500 then a missing object": {[]int{500, 404}, 2, attach.ErrNotFound},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := &script{answers: tc.answers, body: pngBytes}
				r := &s3read.Reader{Bucket: bucket, Region: region, HTTPClient: &http.Client{Transport: s},
					Credentials: credentials.NewStaticCredentialsProvider("AKID", "secret", "")}
				start := time.Now()
				data, err := r.Read(t.Context(), "attachments/o/s/att_X", attach.MaxImageBytes)
				if !errors.Is(err, tc.wantErr) || (err == nil && !bytes.Equal(data, pngBytes)) {
					t.Errorf("read: %d bytes, %v; want %v", len(data), err, tc.wantErr)
				}
				if got := s.calls.Load(); got != tc.calls {
					t.Errorf("%d requests, want %d", got, tc.calls)
				}
				// Each attempt at most its own time, plus the pauses.
				if limit := time.Duration(tc.calls)*s3read.DefaultAttemptTimeout + time.Second; time.Since(start) > limit {
					t.Errorf("took %v, beyond %v", time.Since(start), limit)
				}
			})
		})
	}
}

// TestPutRetries: a PUT is retried as the reads are (it replaces the
// object with the same bytes, so one that applied before its answer was
// lost is harmless), and each attempt sends the whole body, signed.
func TestPutRetries(t *testing.T) {
	t.Parallel()
	data := []byte("inline text of an AG-UI run")
	for name, tc := range map[string]struct {
		answers []int
		calls   int32
		wantErr error
	}{
		"ok":                    {[]int{200}, 1, nil},
		"500 then ok":           {[]int{500, 200}, 2, nil},
		"hang then 503 then ok": {[]int{hang, 503, 200}, 3, nil},
		"500 every time":        {[]int{500}, 3, s3read.ErrStatus},
		"403 is not retried":    {[]int{403, 200}, 1, s3read.ErrStatus},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := &script{answers: tc.answers}
				var bodies [][]byte
				var mu sync.Mutex
				rt := roundTripFunc(func(req *http.Request) (*http.Response, error) {
					b, err := io.ReadAll(req.Body)
					if err != nil {
						return nil, err
					}
					mu.Lock()
					bodies = append(bodies, b)
					mu.Unlock()
					return s.RoundTrip(req)
				})
				r := &s3read.Reader{Bucket: bucket, Region: region, HTTPClient: &http.Client{Transport: rt},
					Credentials: credentials.NewStaticCredentialsProvider("AKID", "secret", "")}
				obj := attach.Object{Key: "attachments/o/s/att_X", MediaType: "text/plain", Size: int64(len(data)), Filename: "a.txt"}
				if err := r.Put(t.Context(), obj, data); !errors.Is(err, tc.wantErr) {
					t.Errorf("put: %v, want %v", err, tc.wantErr)
				}
				if got := s.calls.Load(); got != tc.calls {
					t.Errorf("%d requests, want %d", got, tc.calls)
				}
				mu.Lock()
				defer mu.Unlock()
				for i, b := range bodies {
					if !bytes.Equal(b, data) {
						t.Errorf("attempt %d sent %q, want the whole body", i+1, b)
					}
				}
			})
		})
	}
}

// TestReaderCallerDeadline: the caller's deadline ends the attempts, a
// hang included, and no attempt starts after it.
func TestReaderCallerDeadline(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := &script{answers: []int{hang}}
		r := &s3read.Reader{Bucket: bucket, Region: region, HTTPClient: &http.Client{Transport: s},
			Credentials: credentials.NewStaticCredentialsProvider("AKID", "secret", "")}
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		start := time.Now()
		if _, err := r.Head(ctx, "attachments/o/s/att_X"); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("head: %v, want the deadline", err)
		}
		if got := time.Since(start); got != 2*time.Second {
			t.Errorf("returned after %v, want at the caller's 2 s", got)
		}
		if got := s.calls.Load(); got != 1 {
			t.Errorf("%d requests, want 1", got)
		}
	})
}

// TestObjectURL: the request line S3 receives for a key, at S3's own
// hosts and at another server.
func TestObjectURL(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		r    s3read.Reader
		want string
	}{
		"virtual host":          {s3read.Reader{Bucket: "b1", Region: "eu-west-1"}, "https://b1.s3.eu-west-1.amazonaws.com/attachments/o/s%3A1/att_X"},
		"a bucket with a dot":   {s3read.Reader{Bucket: "b.1", Region: "eu-west-1"}, "https://s3.eu-west-1.amazonaws.com/b.1/attachments/o/s%3A1/att_X"},
		"China":                 {s3read.Reader{Bucket: "b1", Region: "cn-north-1"}, "https://b1.s3.cn-north-1.amazonaws.com.cn/attachments/o/s%3A1/att_X"},
		"a local server":        {s3read.Reader{Bucket: "b1", Region: "us-east-1", Endpoint: "http://127.0.0.1:9000/"}, "http://127.0.0.1:9000/b1/attachments/o/s%3A1/att_X"},
		"a server under a path": {s3read.Reader{Bucket: "b1", Region: "us-east-1", Endpoint: "http://h/s3"}, "http://h/s3/b1/attachments/o/s%3A1/att_X"},
	} {
		t.Run(name, func(t *testing.T) {
			var got string
			tc.r.Credentials = credentials.NewStaticCredentialsProvider("AKID", "secret", "")
			tc.r.HTTPClient = &http.Client{Transport: roundTripFunc(func(req *http.Request) (*http.Response, error) {
				got = req.URL.String()
				return nil, errors.New("stop")
			})}
			tc.r.Attempts = 1
			_, _ = tc.r.Head(context.Background(), "attachments/o/s:1/att_X")
			if got != tc.want {
				t.Errorf("URL %s, want %s", got, tc.want)
			}
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestObjectPathMatchesSDK: for a key with characters S3 escapes in a
// path (the ":" a session id may hold), the reader requests the very path
// the S3 SDK's client requests, virtual-host and path-style.
func TestObjectPathMatchesSDK(t *testing.T) {
	t.Parallel()
	key := "attachments/0f/s:1.a_b-c~/att_X"
	for name, endpoint := range map[string]string{"S3's host": "", "a local server": "http://127.0.0.1:9000"} {
		t.Run(name, func(t *testing.T) {
			var sdkPath, ourPath string
			stop := func(p *string) *http.Client {
				return &http.Client{Transport: roundTripFunc(func(req *http.Request) (*http.Response, error) {
					*p = req.URL.Host + req.URL.EscapedPath()
					return nil, errors.New("stop")
				})}
			}
			opts := s3.Options{Region: "eu-west-1", HTTPClient: stop(&sdkPath), RetryMaxAttempts: 1,
				Credentials: credentials.NewStaticCredentialsProvider("AKID", "secret", "")}
			if endpoint != "" {
				opts.BaseEndpoint, opts.UsePathStyle = aws.String(endpoint), true
			}
			_, _ = s3.New(opts).GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("bucket-1"), Key: aws.String(key)})
			r := &s3read.Reader{Bucket: "bucket-1", Region: "eu-west-1", Endpoint: endpoint, Attempts: 1, HTTPClient: stop(&ourPath),
				Credentials: credentials.NewStaticCredentialsProvider("AKID", "secret", "")}
			_, _ = r.Read(context.Background(), key, 10)
			if sdkPath == "" || ourPath != sdkPath {
				t.Errorf("reader requests %q, the SDK %q", ourPath, sdkPath)
			}
		})
	}
}
