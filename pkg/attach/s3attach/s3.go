// Package s3attach holds the attachment stores (attach.Store): S3, in an
// Amazon S3 bucket, and Local, in memory for the dev server. Both sign
// uploads with the S3 SDK's presigned POST (docs/attachments.md).
package s3attach

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/turnstream/turnstream/pkg/attach"
)

// DefaultCallTimeout bounds one S3 call (with the SDK's retries) when the
// caller's context allows longer: enough to read the largest attachment
// from S3 in the same region many times over.
const DefaultCallTimeout = 10 * time.Second

// The IAM actions the S3 store's methods need on its bucket, for a
// template's grants (internal/deploytest compares template.yaml's with
// them): object actions on the attachments/ keys, and s3:ListBucket on
// the bucket, without which S3 answers a missing key with 403, not 404.
var (
	// SignActions are what the artifacts function calls: PresignUpload
	// (S3 authorizes the form's POST as the signer's s3:PutObject), Head
	// and PresignDownload (s3:GetObject).
	SignActions = []string{"s3:GetObject", "s3:ListBucket", "s3:PutObject"}
	// DeleteActions are what the history function calls: DeletePrefix
	// (ListObjectsV2, then DeleteObjects, authorized as s3:DeleteObject
	// on each key).
	DeleteActions = []string{"s3:DeleteObject", "s3:ListBucket"}
)

// S3 is an attach.Store in one Amazon S3 bucket (or a server speaking its API).
type S3 struct {
	client  *s3.Client
	presign *s3.PresignClient
	bucket  string
	timeout time.Duration
}

// NewS3 returns the Store of bucket through client. Every call is bounded
// by DefaultCallTimeout inside its context.
func NewS3(client *s3.Client, bucket string) *S3 {
	return &S3{client: client, presign: s3.NewPresignClient(client), bucket: bucket, timeout: DefaultCallTimeout}
}

// Bucket is the bucket's name.
func (s *S3) Bucket() string { return s.bucket }

// PresignUpload implements Store: an S3 presigned POST whose policy pins
// the key, Content-Type, the exact size (content-length-range) and the
// filename and use-by metadata (x-amz-meta-filename, x-amz-meta-use-by).
func (s *S3) PresignUpload(ctx context.Context, obj attach.Object, ttl time.Duration) (attach.Upload, error) {
	return presignPost(ctx, s.presign, s.bucket, obj, ttl)
}

func presignPost(ctx context.Context, p *s3.PresignClient, bucket string, obj attach.Object, ttl time.Duration) (attach.Upload, error) {
	pinned := map[string]string{"Content-Type": obj.MediaType, "success_action_status": "204"}
	for k, v := range obj.Metadata() {
		pinned["x-amz-meta-"+k] = v
	}
	conds := []any{[]any{"content-length-range", obj.Size, obj.Size}, map[string]string{"key": obj.Key}}
	for k, v := range pinned {
		conds = append(conds, map[string]string{k: v})
	}
	req, err := p.PresignPostObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &obj.Key}, func(o *s3.PresignPostOptions) {
		o.Expires = ttl
		o.Conditions = conds
	})
	if err != nil {
		return attach.Upload{}, fmt.Errorf("attach: presign upload: %w", err)
	}
	fields := make(map[string]string, len(req.Values)+len(pinned))
	for k, v := range req.Values {
		fields[k] = v
	}
	for k, v := range pinned {
		fields[k] = v
	}
	return attach.Upload{URL: req.URL, Method: http.MethodPost, Fields: fields}, nil
}

// Head implements Store.
func (s *S3) Head(ctx context.Context, key string) (attach.Object, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: &key})
	if err != nil {
		return attach.Object{}, notFound(err, "head")
	}
	return attach.ObjectOf(key, aws.ToString(out.ContentType), aws.ToInt64(out.ContentLength), out.Metadata), nil
}

// Read implements Store.
func (s *S3) Read(ctx context.Context, key string, max int64) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: &key})
	if err != nil {
		return nil, notFound(err, "read")
	}
	defer func() { _ = out.Body.Close() }()
	if aws.ToInt64(out.ContentLength) > max {
		return nil, attach.ErrSize
	}
	b, err := io.ReadAll(io.LimitReader(out.Body, max+1))
	if err != nil {
		return nil, fmt.Errorf("attach: read: %w", err)
	}
	if int64(len(b)) > max {
		return nil, attach.ErrSize
	}
	return b, nil
}

// PresignDownload implements Store: an S3 presigned GET.
func (s *S3) PresignDownload(ctx context.Context, key string, ttl time.Duration) (string, error) {
	req, err := s.presign.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: &key}, s3.WithPresignExpires(ttl))
	if err != nil {
		return "", fmt.Errorf("attach: presign download: %w", err)
	}
	return req.URL, nil
}

// DeletePrefix implements Store: ListObjectsV2 pages of up to 1,000 keys,
// each removed by one DeleteObjects.
func (s *S3) DeletePrefix(ctx context.Context, prefix string) (int, error) {
	n := 0
	pages := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: &prefix})
	for pages.HasMorePages() {
		page, err := s.call(ctx, func(ctx context.Context) (*s3.ListObjectsV2Output, error) { return pages.NextPage(ctx) })
		if err != nil {
			return n, fmt.Errorf("attach: list: %w", err)
		}
		if len(page.Contents) == 0 {
			continue
		}
		ids := make([]types.ObjectIdentifier, 0, len(page.Contents))
		for _, o := range page.Contents {
			ids = append(ids, types.ObjectIdentifier{Key: o.Key})
		}
		cctx, cancel := context.WithTimeout(ctx, s.timeout)
		out, err := s.client.DeleteObjects(cctx, &s3.DeleteObjectsInput{Bucket: &s.bucket, Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)}})
		cancel()
		if err != nil {
			return n, fmt.Errorf("attach: delete: %w", err)
		}
		if len(out.Errors) > 0 {
			return n + len(ids) - len(out.Errors), fmt.Errorf("attach: delete: %d objects not deleted (%s)", len(out.Errors), aws.ToString(out.Errors[0].Code))
		}
		n += len(ids)
	}
	return n, nil
}

func (s *S3) call(ctx context.Context, f func(context.Context) (*s3.ListObjectsV2Output, error)) (*s3.ListObjectsV2Output, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	return f(ctx)
}

// notFound maps S3's 404 answers (NotFound, NoSuchKey) to attach.ErrNotFound.
func notFound(err error, op string) error {
	var nf *types.NotFound
	var nk *types.NoSuchKey
	var re *awshttp.ResponseError
	if errors.As(err, &nf) || errors.As(err, &nk) || errors.As(err, &re) && re.HTTPStatusCode() == http.StatusNotFound {
		return attach.ErrNotFound
	}
	return fmt.Errorf("attach: %s: %w", op, err)
}
