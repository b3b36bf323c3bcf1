// Package s3read reads attachments from an Amazon S3 bucket for the turn
// function, and writes the inline files of an AG-UI run (Put): HEAD, GET
// and PUT requests signed with the AWS SDK's Signature Version 4 signer
// and sent with net/http, so that the turn function does not link the S3
// client (its operations,
// endpoint rules and presigners add to every cold start:
// docs/benchmarks.md, "A lean turn bootstrap"). The stores that sign
// uploads and delete objects are pkg/attach/s3attach.
package s3read

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/turnstream/turnstream/pkg/attach"
)

// Defaults of a Reader.
const (
	// DefaultAttemptTimeout bounds one request, its body read included:
	// the largest attachment (attach.MaxDocumentBytes) from S3 in the
	// function's region takes well under a second.
	DefaultAttemptTimeout = 5 * time.Second
	// DefaultAttempts is how many times a request that failed in a way
	// worth retrying (a transport error, an attempt timeout, 500, 503 or
	// 429) is sent, the first time included.
	DefaultAttempts = 3
	// baseBackoff is the pause before the second attempt; it doubles for
	// each one after.
	baseBackoff = 50 * time.Millisecond
)

// ErrStatus is what a Reader returns, wrapped with the status, for an
// answer it cannot use: 403 (a missing grant: without s3:ListBucket S3
// answers 403 for a missing key too), 400, or 5xx after the last attempt.
var ErrStatus = errors.New("s3read: unexpected status")

// Actions are the IAM actions a Reader needs on its bucket, for a
// template's grants (internal/deploytest compares template.yaml's with
// them): s3:GetObject on the objects (HEAD and GET), s3:PutObject on them
// (Put), and s3:ListBucket on the bucket, without which S3 answers a
// missing key with 403, not 404.
var Actions = []string{"s3:GetObject", "s3:ListBucket", "s3:PutObject"}

// emptyPayloadHash is the SHA-256 of an empty body, which HEAD and GET send.
var emptyPayloadHash = func() string { h := sha256.Sum256(nil); return hex.EncodeToString(h[:]) }()

// Reader reads objects of one bucket; it implements attach.Reader and is
// safe for concurrent use.
type Reader struct {
	// Bucket is the bucket's name.
	Bucket string
	// Region is the bucket's region, which signs every request.
	Region string
	// Credentials sign every request.
	Credentials aws.CredentialsProvider
	// Endpoint, when set, is an S3 API server's base URL (such as
	// http://127.0.0.1:5000) addressed path-style: <Endpoint>/<bucket>/<key>.
	// Empty: https://<bucket>.s3.<region>.amazonaws.com (path-style on
	// https://s3.<region>.amazonaws.com for a bucket name with a dot,
	// which no wildcard certificate covers; amazonaws.com.cn in China's
	// regions).
	Endpoint string
	// HTTPClient sends the requests; nil: http.DefaultClient.
	HTTPClient *http.Client
	// AttemptTimeout bounds each attempt (0: DefaultAttemptTimeout); the
	// caller's context bounds them all.
	AttemptTimeout time.Duration
	// Attempts is the most attempts of one call (0: DefaultAttempts).
	Attempts int
	// Now is the signing clock; nil: time.Now.
	Now func() time.Time
	// After waits between attempts; nil: time.After.
	After func(time.Duration) <-chan time.Time
}

var (
	_ attach.Reader = (*Reader)(nil)
	_ attach.Writer = (*Reader)(nil)
)

// New returns the Reader of bucket with cfg's region and credentials;
// endpoint as Reader.Endpoint.
func New(cfg aws.Config, bucket, endpoint string) *Reader {
	return &Reader{Bucket: bucket, Region: cfg.Region, Credentials: cfg.Credentials, Endpoint: endpoint}
}

// Head implements attach.Reader: the object's media type, size and the
// metadata its upload's policy pinned; attach.ErrNotFound for a missing
// key.
func (r *Reader) Head(ctx context.Context, key string) (attach.Object, error) {
	var obj attach.Object
	err := r.do(ctx, http.MethodHead, key, nil, func(resp *http.Response) error {
		size, err := strconv.ParseInt(resp.Header.Get("Content-Length"), 10, 64)
		if err != nil {
			return fmt.Errorf("s3read: head %s: no content length", key)
		}
		meta := map[string]string{}
		for name, values := range resp.Header {
			if k, ok := strings.CutPrefix(strings.ToLower(name), "x-amz-meta-"); ok && len(values) > 0 {
				meta[k] = values[0]
			}
		}
		obj = attach.ObjectOf(key, resp.Header.Get("Content-Type"), size, meta)
		return nil
	})
	return obj, err
}

// Read implements attach.Reader: the object's bytes; attach.ErrNotFound
// for a missing key, attach.ErrSize when it holds more than max bytes
// (nothing past max+1 bytes is read).
func (r *Reader) Read(ctx context.Context, key string, max int64) ([]byte, error) {
	var data []byte
	err := r.do(ctx, http.MethodGet, key, nil, func(resp *http.Response) error {
		if resp.ContentLength > max {
			return attach.ErrSize
		}
		b, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
		if err != nil {
			return fmt.Errorf("s3read: read %s: %w", key, err)
		}
		if int64(len(b)) > max {
			return attach.ErrSize
		}
		data = b
		return nil
	})
	return data, err
}

// Put implements attach.Writer: it stores data under obj.Key with obj's
// media type and metadata (attach.Object.Metadata), as an upload's form
// would, replacing any object there. A PUT is idempotent, so it is sent
// again like a read.
func (r *Reader) Put(ctx context.Context, obj attach.Object, data []byte) error {
	p := &payload{data: data, headers: map[string]string{"Content-Type": obj.MediaType}}
	for k, v := range obj.Metadata() {
		p.headers["X-Amz-Meta-"+k] = v
	}
	return r.do(ctx, http.MethodPut, obj.Key, p, func(*http.Response) error { return nil })
}

// payload is a PUT's body and the headers it is stored with.
type payload struct {
	data    []byte
	headers map[string]string
}

// do sends method on key until an attempt answers 200 (then use reads the
// answer within the attempt's time), 404 (attach.ErrNotFound), another
// status it does not retry, or the attempts run out.
func (r *Reader) do(ctx context.Context, method, key string, body *payload, use func(*http.Response) error) error {
	attempts := r.Attempts
	if attempts <= 0 {
		attempts = DefaultAttempts
	}
	var err error
	for i := range attempts {
		if i > 0 {
			if werr := r.wait(ctx, baseBackoff<<(i-1)); werr != nil {
				return fmt.Errorf("s3read: %s %s: %w (after %w)", strings.ToLower(method), key, werr, err)
			}
		}
		var retry bool
		if retry, err = r.attempt(ctx, method, key, body, use); !retry {
			return err
		}
	}
	return err
}

// attempt sends one request, and reports whether its failure is worth
// another attempt.
func (r *Reader) attempt(ctx context.Context, method, key string, body *payload, use func(*http.Response) error) (retry bool, err error) {
	timeout := r.AttemptTimeout
	if timeout <= 0 {
		timeout = DefaultAttemptTimeout
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := r.request(actx, method, key, body)
	if err != nil {
		return false, err
	}
	client := r.HTTPClient
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		// A transport error or this attempt's timeout: worth another
		// attempt while the caller's context lasts.
		return ctx.Err() == nil, fmt.Errorf("s3read: %s %s: %w", strings.ToLower(method), key, err)
	}
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		_ = resp.Body.Close()
	}()
	switch {
	case resp.StatusCode == http.StatusOK:
		if err := use(resp); err != nil {
			// A body cut short by the attempt's timeout is retried.
			return ctx.Err() == nil && actx.Err() != nil, err
		}
		return false, nil
	case resp.StatusCode == http.StatusNotFound:
		return false, attach.ErrNotFound
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests:
		return true, fmt.Errorf("%w %d on %s %s", ErrStatus, resp.StatusCode, strings.ToLower(method), key)
	default:
		return false, fmt.Errorf("%w %d on %s %s", ErrStatus, resp.StatusCode, strings.ToLower(method), key)
	}
}

// request builds the signed request of method on key, with body's bytes
// and headers when body is not nil.
func (r *Reader) request(ctx context.Context, method, key string, body *payload) (*http.Request, error) {
	u, err := r.objectURL(key)
	if err != nil {
		return nil, err
	}
	var rd io.Reader
	hash := emptyPayloadHash
	if body != nil {
		rd = bytes.NewReader(body.data)
		h := sha256.Sum256(body.data)
		hash = hex.EncodeToString(h[:])
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, fmt.Errorf("s3read: %w", err)
	}
	req.URL = u // keep RawPath exactly as signed
	if body != nil {
		for k, v := range body.headers {
			req.Header.Set(k, v)
		}
	}
	req.Header.Set("X-Amz-Content-Sha256", hash)
	if r.Credentials == nil {
		return nil, errors.New("s3read: no credentials")
	}
	creds, err := r.Credentials.Retrieve(ctx)
	if err != nil {
		return nil, fmt.Errorf("s3read: credentials: %w", err)
	}
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	signer := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
	if err := signer.SignHTTP(ctx, creds, req, hash, "s3", r.Region, now().UTC()); err != nil {
		return nil, fmt.Errorf("s3read: sign: %w", err)
	}
	return req, nil
}

// objectURL is key's URL: path-style at Endpoint, else S3's own host.
func (r *Reader) objectURL(key string) (*url.URL, error) {
	escaped := uriEncodePath(key)
	if r.Endpoint != "" {
		base, err := url.Parse(strings.TrimRight(r.Endpoint, "/"))
		if err != nil || base.Scheme == "" || base.Host == "" {
			return nil, errors.New("s3read: endpoint is not an absolute URL")
		}
		prefix := base.EscapedPath() + "/" + uriEncodePath(r.Bucket) + "/"
		return &url.URL{Scheme: base.Scheme, Host: base.Host, Path: mustUnescape(prefix + escaped), RawPath: prefix + escaped}, nil
	}
	domain := "amazonaws.com"
	if strings.HasPrefix(r.Region, "cn-") {
		domain = "amazonaws.com.cn"
	}
	if strings.Contains(r.Bucket, ".") {
		raw := "/" + uriEncodePath(r.Bucket) + "/" + escaped
		return &url.URL{Scheme: "https", Host: "s3." + r.Region + "." + domain, Path: mustUnescape(raw), RawPath: raw}, nil
	}
	return &url.URL{Scheme: "https", Host: r.Bucket + ".s3." + r.Region + "." + domain, Path: "/" + key, RawPath: "/" + escaped}, nil
}

// uriEncodePath encodes s as Signature Version 4 encodes an S3 object
// key in a path: every byte but the unreserved ones (A-Z a-z 0-9 - . _ ~)
// and "/" as %XY.
func uriEncodePath(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' || c == '/' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

func mustUnescape(s string) string {
	p, err := url.PathUnescape(s)
	if err != nil {
		return s
	}
	return p
}

// wait pauses d, or until ctx ends.
func (r *Reader) wait(ctx context.Context, d time.Duration) error {
	after := time.After
	if r.After != nil {
		after = r.After
	}
	select {
	case <-after(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
