package s3attach_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/turnstream/turnstream/internal/motoserver"
	"github.com/turnstream/turnstream/pkg/attach"
	"github.com/turnstream/turnstream/pkg/attach/s3attach"
)

// newS3 is a bucket of moto's S3 (internal/motoserver), which stores
// posted forms but, like s3rver, checks no POST policy: the policy
// checks are TestS3PolicyPins's.
func newS3(t *testing.T) *s3attach.S3 {
	t.Helper()
	endpoint := motoserver.Start(t)
	client := s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider("testing", "testing-secret", ""),
	})
	bucket := "turnstream-attachments-test"
	if _, err := client.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: &bucket}); err != nil {
		t.Fatal(err)
	}
	return s3attach.NewS3(client, bucket)
}

func TestS3RoundTrip(t *testing.T) {
	t.Parallel()
	roundTrip(t, newS3(t))
}

// TestS3PolicyPins checks the form S3.PresignUpload signs with VerifyPost,
// S3's own rules: it holds as signed, and every change a client could try
// (another key, type, size, metadata, an added field) breaks it.
func TestS3PolicyPins(t *testing.T) {
	t.Parallel()
	client := s3.New(s3.Options{
		Region:       "eu-west-1",
		BaseEndpoint: aws.String("http://127.0.0.1:1"), // presigning makes no request
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDTEST", "secret-test", "session-token"),
	})
	store := s3attach.NewS3(client, "bucket-a")
	obj := sampleObject(4096)
	up, err := store.PresignUpload(context.Background(), obj, attach.UploadExpiry)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(up.URL, "/bucket-a") {
		t.Errorf("URL %q", up.URL)
	}
	secrets := func(id string) (string, bool) { return "secret-test", id == "AKIDTEST" }
	now := time.Now()
	if err := attach.VerifyPost(up.Fields, "bucket-a", 4096, secrets, now); err != nil {
		t.Fatalf("the form as signed: %v", err)
	}
	for name, edit := range map[string]map[string]string{
		"key":          {"key": strings.Replace(obj.Key, "s1", "s2", 1)},
		"content type": {"Content-Type": "text/html"},
		"filename":     {"x-amz-meta-filename": "x.png"},
		"use-by":       {"x-amz-meta-use-by": "1"},
		"added field":  {"acl": "public-read"},
		"token":        {"X-Amz-Security-Token": "another"},
	} {
		f := map[string]string{}
		for k, v := range up.Fields {
			f[k] = v
		}
		for k, v := range edit {
			f[k] = v
		}
		if err := attach.VerifyPost(f, "bucket-a", 4096, secrets, now); !errors.Is(err, attach.ErrPolicy) {
			t.Errorf("%s changed: %v, want ErrPolicy", name, err)
		}
	}
	for _, size := range []int64{0, 4095, 4097} {
		if err := attach.VerifyPost(up.Fields, "bucket-a", size, secrets, now); !errors.Is(err, attach.ErrPolicy) {
			t.Errorf("a %d-byte file: %v, want ErrPolicy", size, err)
		}
	}
	if err := attach.VerifyPost(up.Fields, "bucket-b", 4096, secrets, now); !errors.Is(err, attach.ErrPolicy) {
		t.Errorf("another bucket: %v", err)
	}
	if err := attach.VerifyPost(up.Fields, "bucket-a", 4096, secrets, now.Add(attach.UploadExpiry+time.Minute)); !errors.Is(err, attach.ErrPolicy) {
		t.Errorf("after expiry: %v", err)
	}
	wrong := func(string) (string, bool) { return "another-secret", true }
	if err := attach.VerifyPost(up.Fields, "bucket-a", 4096, wrong, now); !errors.Is(err, attach.ErrPolicy) {
		t.Errorf("another secret: %v", err)
	}
}
