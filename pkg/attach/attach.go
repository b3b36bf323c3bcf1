// Package attach holds the files a person attaches to a turn: images and
// documents uploaded straight to object storage in two phases, so that
// their bytes never pass through a function (docs/attachments.md).
//
// Phase one: the artifacts function checks a declared upload (media type,
// size, filename) against MediaTypes and signs an S3 presigned POST whose
// policy pins the object's key (under the tenant, the principal and the
// session), its Content-Type, its exact size and its metadata (Upload).
// Phase two: the browser posts the form and the file to the URL; the store
// refuses anything the policy does not allow. A turn then names the
// attachment by id, and reads the object back within its deadline.
//
// This package holds the rules and needs no AWS SDK (the turn function
// links it); pkg/attach/s3attach holds the two Stores: S3 (Amazon S3, or
// any server speaking its API) and Local (in memory, for the dev server,
// whose upload handler checks the same policy as S3 does with
// VerifyPost).
package attach

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/turnstream/turnstream/pkg/protocol"
)

// Kind is how a provider receives an attachment, and the part type its
// message records: KindImage ("image") or KindDocument (part type "file").
type Kind string

// The kinds of attachment.
const (
	KindImage    Kind = "image"
	KindDocument Kind = "document"
)

// PartType is the AgentsKit message part type of the kind: "image" or
// "file".
func (k Kind) PartType() string {
	if k == KindImage {
		return "image"
	}
	return "file"
}

// Limits follow Amazon Bedrock's Converse API, the stricter of the two
// provider families turnstream speaks (OpenAI-compatible servers accept
// larger images): an image is at most 3.75 MB and a request carries at
// most 20; a document at most 4.5 MB and a request at most 5.
const (
	MaxImageBytes     = 3_932_160 // 3.75 MiB
	MaxDocumentBytes  = 4_718_592 // 4.5 MiB
	MaxImagesPerTurn  = 20
	MaxDocsPerTurn    = 5
	MaxFilenameBytes  = 255
	UploadExpiry      = 15 * time.Minute
	UseWithin         = 24 * time.Hour
	DownloadExpiry    = 5 * time.Minute
	attachmentIDBytes = 30 // "att_" and 26 base32 characters
)

// MediaType is one accepted media type.
type MediaType struct {
	// Name is the media type, e.g. "image/png".
	Name string
	// Kind is image or document.
	Kind Kind
	// Format is the Bedrock Converse image or document format name
	// ("png", "jpeg", "pdf", "docx", ...).
	Format string
	// MaxBytes is the largest accepted object, in bytes.
	MaxBytes int64
}

// MediaTypes are the accepted media types, by name. Anything else is
// refused before any URL is signed.
var MediaTypes = map[string]MediaType{
	"image/png":       {"image/png", KindImage, "png", MaxImageBytes},
	"image/jpeg":      {"image/jpeg", KindImage, "jpeg", MaxImageBytes},
	"image/gif":       {"image/gif", KindImage, "gif", MaxImageBytes},
	"image/webp":      {"image/webp", KindImage, "webp", MaxImageBytes},
	"application/pdf": {"application/pdf", KindDocument, "pdf", MaxDocumentBytes},
	"text/plain":      {"text/plain", KindDocument, "txt", MaxDocumentBytes},
	"text/markdown":   {"text/markdown", KindDocument, "md", MaxDocumentBytes},
	"text/csv":        {"text/csv", KindDocument, "csv", MaxDocumentBytes},
	"text/html":       {"text/html", KindDocument, "html", MaxDocumentBytes},
	"application/vnd.openxmlformats-officedocument.wordprocessingml.document": {
		"application/vnd.openxmlformats-officedocument.wordprocessingml.document", KindDocument, "docx", MaxDocumentBytes},
	"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": {
		"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", KindDocument, "xlsx", MaxDocumentBytes},
}

// extensions maps a filename's extension, in lower case, to the media
// type a client declares for it (MediaTypeOf).
var extensions = map[string]string{
	".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp",
	".pdf": "application/pdf", ".txt": "text/plain", ".text": "text/plain", ".md": "text/markdown",
	".markdown": "text/markdown", ".csv": "text/csv", ".html": "text/html", ".htm": "text/html",
	".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
	".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
}

// MediaTypeOf returns the accepted media type a file named filename is
// declared as, by its extension (case does not matter: ".PNG" is
// image/png), and false for any other extension. Clients use it to
// declare a local file; the turn checks the bytes themselves
// (CheckContent).
func MediaTypeOf(filename string) (string, bool) {
	i := strings.LastIndexByte(filename, '.')
	if i < 0 {
		return "", false
	}
	mt, ok := extensions[strings.ToLower(filename[i:])]
	return mt, ok
}

// Errors. Each is a refusal a caller maps to a 4xx without echoing the
// input.
var (
	// ErrMediaType: the media type is not one of MediaTypes.
	ErrMediaType = errors.New("attach: media type not accepted")
	// ErrSize: the size is above the media type's limit.
	ErrSize = errors.New("attach: too large")
	// ErrEmpty: the declared size is below 1 byte.
	ErrEmpty = errors.New("attach: empty file")
	// ErrFilename: the filename is empty, too long, not UTF-8, or holds a
	// path separator, a control or an invisible character.
	ErrFilename = errors.New("attach: filename not accepted")
	// ErrNotFound: no object under the key (never uploaded, expired,
	// deleted, or another principal's).
	ErrNotFound = errors.New("attach: attachment not found")
	// ErrContent: the object's bytes are not of its declared media type.
	ErrContent = errors.New("attach: content does not match its media type")
	// ErrExpired: the attachment was not used within UseWithin of its
	// upload's signing.
	ErrExpired = errors.New("attach: attachment expired")
	// ErrTooMany: a turn names more than MaxImagesPerTurn images or
	// MaxDocsPerTurn documents.
	ErrTooMany = errors.New("attach: too many attachments for one turn")
	// ErrUsed: another turn used the attachment already.
	ErrUsed = errors.New("attach: attachment used by another turn")
)

// Declared is what a client declares before uploading.
type Declared struct {
	// Filename is the file's name as the person sees it; see
	// CheckFilename.
	Filename string
	// MediaType is one of MediaTypes.
	MediaType string
	// Size is the exact size in bytes: 1..the media type's MaxBytes.
	Size int64
}

// Check returns the declaration's media type, or ErrMediaType, ErrEmpty,
// ErrSize or ErrFilename.
func (d Declared) Check() (MediaType, error) {
	mt, ok := MediaTypes[d.MediaType]
	switch {
	case !ok:
		return MediaType{}, ErrMediaType
	case d.Size < 1:
		return MediaType{}, ErrEmpty
	case d.Size > mt.MaxBytes:
		return MediaType{}, ErrSize
	}
	if err := CheckFilename(d.Filename); err != nil {
		return MediaType{}, err
	}
	return mt, nil
}

// CheckFilename returns ErrFilename unless name is 1..MaxFilenameBytes of
// valid UTF-8 with no path separator ('/', '\\'), no control character
// (Unicode Cc), no invisible formatting character (Cf: zero-width spaces
// and joiners, bidirectional overrides), no leading or trailing space, and
// is not "." or "..".
func CheckFilename(name string) error {
	if name == "" || len(name) > MaxFilenameBytes || !utf8.ValidString(name) || name == "." || name == ".." {
		return ErrFilename
	}
	if strings.TrimSpace(name) != name {
		return ErrFilename
	}
	for _, r := range name {
		if r == '/' || r == '\\' || unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Cf, r) ||
			r == utf8.RuneError || unicode.Is(unicode.Zl, r) || unicode.Is(unicode.Zp, r) {
			return ErrFilename
		}
	}
	return nil
}

// NewID returns a new attachment id: "att_" and 26 base32 characters of
// crypto/rand, a SafeId.
func NewID() string { return "att_" + rand.Text() }

// ValidID reports whether id has NewID's shape. Other ids are never
// looked up.
func ValidID(id string) bool {
	if len(id) != attachmentIDBytes || !strings.HasPrefix(id, "att_") || !protocol.IsSafeID(id) {
		return false
	}
	for _, c := range id[4:] {
		if (c < 'A' || c > 'Z') && (c < '2' || c > '7') {
			return false
		}
	}
	return true
}

// Owner names the object keys of one principal: 32 hex digits of the
// SHA-256 of its tenant and subject. Keys never hold either in clear.
func Owner(tenant, subject string) string {
	h := sha256.Sum256([]byte(tenant + "\x00" + subject))
	return hex.EncodeToString(h[:16])
}

// OwnerPrefix is the key prefix of all of one principal's attachments:
// "attachments/<owner>/".
func OwnerPrefix(owner string) string { return "attachments/" + owner + "/" }

// SessionPrefix is the key prefix of a principal's attachments in one
// session: "attachments/<owner>/<sessionId>/".
func SessionPrefix(owner, sessionID string) string {
	return OwnerPrefix(owner) + sessionID + "/"
}

// Key is the object key of one attachment: SessionPrefix and its id.
func Key(owner, sessionID, attachmentID string) string {
	return SessionPrefix(owner, sessionID) + attachmentID
}

// Object is one attachment as the store holds it.
type Object struct {
	// Key is its object key (Key).
	Key string
	// MediaType, Size and Filename are as declared and as the upload's
	// policy pinned them.
	MediaType string
	Size      int64
	Filename  string
	// UseBy is when an attachment no turn has used stops being accepted:
	// UseWithin after the upload was signed (second precision).
	UseBy time.Time
}

// Upload is a signed upload form: POST a multipart/form-data body to URL
// with every one of Fields and then the file as the last field, "file".
type Upload struct {
	URL    string            `json:"url"`
	Method string            `json:"method"`
	Fields map[string]string `json:"fields"`
}

// Reader reads attachments: all a turn needs of a Store (the turn
// function's is pkg/attach/s3read). Implementations are safe for
// concurrent use; every call is bounded by ctx.
type Reader interface {
	// Head returns the object under key as uploaded, or ErrNotFound.
	Head(ctx context.Context, key string) (Object, error)
	// Read returns the object's bytes, or ErrNotFound; ErrSize when it
	// holds more than max bytes.
	Read(ctx context.Context, key string, max int64) ([]byte, error)
}

// Writer stores an attachment's bytes directly, without a signed form:
// the turn's way to keep the inline files of an AG-UI run (docs/agui.md)
// as attachments. Put replaces any object under obj.Key; it is safe to
// call again with the same object.
type Writer interface {
	Put(ctx context.Context, obj Object, data []byte) error
}

// InlineID is the attachment id of the n-th inline file of a turn
// (n from 0): the same for the same session, turn and n, so that a turn
// sent again stores its files under the same keys. It has NewID's shape.
func InlineID(sessionID, turnID string, n int) string {
	h := sha256.Sum256([]byte(sessionID + "\x00" + turnID + "\x00" + strconv.Itoa(n)))
	return "att_" + base32.StdEncoding.EncodeToString(h[:])[:attachmentIDBytes-4]
}

// Store holds attachments: it reads them (Reader), signs their uploads
// and downloads and removes them. Implementations are safe for
// concurrent use; every call is bounded by ctx.
type Store interface {
	Reader
	// PresignUpload signs an upload of obj valid for ttl: the store
	// accepts exactly obj's key, media type, size and metadata.
	PresignUpload(ctx context.Context, obj Object, ttl time.Duration) (Upload, error)
	// PresignDownload signs a GET of the object valid for ttl.
	PresignDownload(ctx context.Context, key string, ttl time.Duration) (string, error)
	// DeletePrefix removes every object whose key starts with prefix and
	// returns how many it removed.
	DeletePrefix(ctx context.Context, prefix string) (int, error)
}

// Metadata is the user metadata an upload's policy pins beside the
// object (x-amz-meta-<name>, names in lower case as S3 returns them): the
// filename percent-encoded (S3 metadata is ASCII) and the use-by time in
// Unix seconds.
func (o Object) Metadata() map[string]string {
	return map[string]string{
		metaFilename: url.PathEscape(o.Filename),
		metaUseBy:    strconv.FormatInt(o.UseBy.Unix(), 10),
	}
}

// ObjectOf is the Object stored under key with mediaType, size and the
// user metadata meta (as Object.Metadata writes it); a filename or use-by
// that does not parse is left empty or zero.
func ObjectOf(key, mediaType string, size int64, meta map[string]string) Object {
	o := Object{Key: key, MediaType: mediaType, Size: size}
	if name, err := url.PathUnescape(meta[metaFilename]); err == nil {
		o.Filename = name
	}
	if sec, err := strconv.ParseInt(meta[metaUseBy], 10, 64); err == nil {
		o.UseBy = time.Unix(sec, 0).UTC()
	}
	return o
}

const (
	metaFilename = "filename"
	metaUseBy    = "use-by"
)
