package s3attach

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/turnstream/turnstream/pkg/attach"
)

// localBucket is the bucket name of Local's uploads: the form posts to
// baseURL + "/" + localBucket, as a path-style S3 URL.
const localBucket = "local"

// maxFormFields bounds the bytes of an upload form's fields other than
// the file (S3 allows 20 KB of policy; the fields are a few hundred bytes).
const maxFormFields = 64 << 10

// Local is an attach.Store in memory for the dev server: the same two phases as
// S3 without AWS. PresignUpload signs with the S3 SDK's own presigner
// (random local credentials), Handler accepts a form exactly when
// VerifyPost does, and downloads are URLs signed with an HMAC. Objects
// live as long as the process.
type Local struct {
	base    string // baseURL, no trailing slash
	presign *s3.PresignClient
	akid    string
	secret  string
	now     func() time.Time

	mu      sync.Mutex
	objects map[string]localObject
}

type localObject struct {
	attach.Object
	data []byte
}

// NewLocal returns a Local whose upload and download URLs start with
// baseURL (e.g. "http://127.0.0.1:8787/uploads"), where Handler must be
// served with that prefix stripped. now is the clock of policy
// expirations; nil means time.Now.
func NewLocal(baseURL string, now func() time.Time) *Local {
	if now == nil {
		now = time.Now
	}
	l := &Local{
		base:    strings.TrimSuffix(baseURL, "/"),
		akid:    "LOCAL" + strings.ToUpper(hex.EncodeToString(randomBytes(8))),
		secret:  hex.EncodeToString(randomBytes(20)),
		now:     now,
		objects: map[string]localObject{},
	}
	client := s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(l.base),
		UsePathStyle: true,
		Credentials:  aws.CredentialsProviderFunc(l.credentials),
	})
	l.presign = s3.NewPresignClient(client)
	return l
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return b
}

func (l *Local) credentials(context.Context) (aws.Credentials, error) {
	return aws.Credentials{AccessKeyID: l.akid, SecretAccessKey: l.secret, Source: "attach.Local"}, nil
}

func (l *Local) secrets(id string) (string, bool) {
	return l.secret, id == l.akid
}

// PresignUpload implements Store, as S3.PresignUpload.
func (l *Local) PresignUpload(ctx context.Context, obj attach.Object, ttl time.Duration) (attach.Upload, error) {
	return presignPost(ctx, l.presign, localBucket, obj, ttl)
}

// Head implements Store.
func (l *Local) Head(_ context.Context, key string) (attach.Object, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	o, ok := l.objects[key]
	if !ok {
		return attach.Object{}, attach.ErrNotFound
	}
	return o.Object, nil
}

// Put implements attach.Writer.
func (l *Local) Put(_ context.Context, obj attach.Object, data []byte) error {
	obj.Size = int64(len(data))
	l.mu.Lock()
	l.objects[obj.Key] = localObject{Object: obj, data: bytes.Clone(data)}
	l.mu.Unlock()
	return nil
}

// Read implements Store.
func (l *Local) Read(_ context.Context, key string, max int64) ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	o, ok := l.objects[key]
	switch {
	case !ok:
		return nil, attach.ErrNotFound
	case int64(len(o.data)) > max:
		return nil, attach.ErrSize
	}
	return append([]byte(nil), o.data...), nil
}

// PresignDownload implements Store: base/local/<key>?expires=<unix>&signature=<hmac>.
func (l *Local) PresignDownload(_ context.Context, key string, ttl time.Duration) (string, error) {
	exp := strconv.FormatInt(l.now().Add(ttl).Unix(), 10)
	q := url.Values{"expires": {exp}, "signature": {l.sign(key, exp)}}
	return l.base + "/" + localBucket + "/" + key + "?" + q.Encode(), nil
}

func (l *Local) sign(key, exp string) string {
	return hex.EncodeToString(attach.HMACSHA256([]byte(l.secret), "GET\n"+key+"\n"+exp))
}

// DeletePrefix implements Store.
func (l *Local) DeletePrefix(_ context.Context, prefix string) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for k := range l.objects {
		if strings.HasPrefix(k, prefix) {
			delete(l.objects, k)
			n++
		}
	}
	return n, nil
}

// Handler serves, below the base URL's path:
//
//	POST /local                 a browser-based upload form: 204, or 403 AccessDenied when
//	                            VerifyPost refuses it, 400 for a malformed form
//	GET  /local/<key>?expires=&signature=  the object, with its Content-Type; 403 when the
//	                            signature is wrong or expired, 404 when no object is there
//
// Error bodies are S3's XML error shape, with the code only.
func (l *Local) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/"+localBucket:
			l.upload(w, r)
		case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/"+localBucket+"/"):
			l.download(w, r, strings.TrimPrefix(r.URL.Path, "/"+localBucket+"/"))
		default:
			s3Error(w, http.StatusMethodNotAllowed, "MethodNotAllowed")
		}
	})
}

func s3Error(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?>`+"\n<Error><Code>"+code+"</Code></Error>")
}

// errForm is a form Handler cannot read: not multipart, fields too large,
// no file, or a field after the file.
var errForm = errors.New("attach: malformed upload form")

func (l *Local) upload(w http.ResponseWriter, r *http.Request) {
	fields, data, err := readForm(r)
	switch {
	case errors.Is(err, attach.ErrSize):
		s3Error(w, http.StatusBadRequest, "EntityTooLarge")
		return
	case err != nil:
		s3Error(w, http.StatusBadRequest, "MalformedPOSTRequest")
		return
	}
	if err := attach.VerifyPost(fields, localBucket, int64(len(data)), l.secrets, l.now()); err != nil {
		s3Error(w, http.StatusForbidden, "AccessDenied")
		return
	}
	f := lowerKeys(fields)
	meta := map[string]string{}
	for k, v := range f {
		if name, ok := strings.CutPrefix(k, "x-amz-meta-"); ok {
			meta[name] = v
		}
	}
	o := attach.ObjectOf(f["key"], f["content-type"], int64(len(data)), meta)
	l.mu.Lock()
	l.objects[o.Key] = localObject{Object: o, data: data}
	l.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func lowerKeys(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[strings.ToLower(k)] = v
	}
	return out
}

// readForm reads a multipart upload form: its fields up to the "file"
// part (names in lower case; a name twice is malformed), then the file, at most attach.MaxDocumentBytes (attach.ErrSize past it), the
// largest any policy allows. Parts after the file are ignored, as S3
// does.
func readForm(r *http.Request) (map[string]string, []byte, error) {
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return nil, nil, errForm
	}
	mr := multipart.NewReader(r.Body, params["boundary"])
	fields := map[string]string{}
	budget := int64(maxFormFields)
	for {
		p, err := mr.NextPart()
		if err != nil {
			return nil, nil, errForm // io.EOF too: no file
		}
		name := p.FormName()
		if name == "file" {
			data, err := io.ReadAll(io.LimitReader(p, attach.MaxDocumentBytes+1))
			if err != nil {
				return nil, nil, errForm
			}
			if len(data) > attach.MaxDocumentBytes {
				return nil, nil, attach.ErrSize
			}
			return fields, data, nil
		}
		v, err := io.ReadAll(io.LimitReader(p, budget+1))
		budget -= int64(len(v))
		if err != nil || budget < 0 || name == "" {
			return nil, nil, errForm
		}
		if _, dup := fields[strings.ToLower(name)]; dup {
			return nil, nil, errForm
		}
		fields[strings.ToLower(name)] = string(v)
	}
}

func (l *Local) download(w http.ResponseWriter, r *http.Request, key string) {
	q := r.URL.Query()
	exp := q.Get("expires")
	sec, err := strconv.ParseInt(exp, 10, 64)
	if err != nil || !hmac.Equal([]byte(q.Get("signature")), []byte(l.sign(key, exp))) || !l.now().Before(time.Unix(sec, 0)) {
		s3Error(w, http.StatusForbidden, "AccessDenied")
		return
	}
	l.mu.Lock()
	o, ok := l.objects[key]
	l.mu.Unlock()
	if !ok {
		s3Error(w, http.StatusNotFound, "NoSuchKey")
		return
	}
	w.Header().Set("Content-Type", o.MediaType)
	w.Header().Set("Content-Length", strconv.Itoa(len(o.data)))
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": o.Filename}))
	_, _ = w.Write(o.data)
}
