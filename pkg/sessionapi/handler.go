package sessionapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/turnstream/turnstream/pkg/attach"
	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/httpedge"
	"github.com/turnstream/turnstream/pkg/telemetry"
)

// Store is what the history and artifacts functions ask of a store (a
// chat.Store is one): the records they read and the artifact references
// they write (Records), and a principal's list of sessions
// (chat.ConversationStore).
type Store interface {
	Records
	chat.ConversationStore
	chat.BranchStore
}

// Records are the reads of sessions, turns, queued turns and usage, and
// the artifact references (their contracts are chat.Store's).
type Records interface {
	GetSession(ctx context.Context, sessionID string, p chat.Principal) (*chat.Session, error)
	ListTurns(ctx context.Context, req chat.ListRequest) (*chat.Page, error)
	PollTurn(ctx context.Context, sessionID string, ordinal int64, p chat.Principal, since *chat.Turn) (*chat.Turn, error)
	FindTurn(ctx context.Context, sessionID, turnID string, p chat.Principal) (*chat.Turn, error)
	QueuedTurns(ctx context.Context, sessionID string, p chat.Principal) ([]chat.QueuedTurn, error)
	PutArtifacts(ctx context.Context, sessionID, turnID string, p chat.Principal, refs []chat.ArtifactReference) ([]chat.ArtifactReference, error)
	GetArtifacts(ctx context.Context, sessionID, turnID string, p chat.Principal) ([]chat.ArtifactReference, error)
	ReadUsage(ctx context.Context, p chat.Principal, at time.Time) (*chat.PrincipalUsage, error)
	ListUsage(ctx context.Context, req chat.UsageListRequest) (*chat.UsagePage, error)
}

var _ Store = chat.Store(nil)

// Options configure NewHistoryHandler and NewArtifactsHandler.
type Options struct {
	// Store holds sessions, turns and artifact references (a chat.Store
	// is one). Required.
	Store Store
	// Authenticator establishes the principal of every request from its
	// headers only, before any body byte is read
	// (docs/design.md#authentication-and-tenancy). Errors wrapping
	// auth.ErrUnauthenticated are 401, auth.ErrForbidden 403, anything else
	// 500. Required.
	Authenticator auth.Authenticator
	// Logger receives one JSON line per request; nil discards them
	// (httpedge.Logger, as every handler's Logger).
	Logger *slog.Logger
	// MaxBodyBytes caps a request body in bytes (413 REQUEST_TOO_LARGE
	// above it); 0 means httpedge.DefaultMaxBodyBytes, a negative value is
	// an error.
	MaxBodyBytes int64
	// Now is the clock that decides whether a session's lease has expired
	// (GET /sessions/{id} currentTurn) and which day and month GET /usage
	// reports; nil means time.Now.
	Now func() time.Time
	// Metrics receives one CloudWatch EMF document per request
	// (telemetry.Recorder, docs/operations.md); nil writes none.
	Metrics *telemetry.Recorder
	// Tracing starts each request's server span (telemetry.Tracing), to
	// which the store's DynamoDB client spans attach; nil starts none.
	Tracing *telemetry.Tracing
	// Attachments, when set, makes the artifacts handler serve the
	// upload and download routes of attachments (docs/attachments.md),
	// and the history handler's delete and erase remove them: an
	// s3attach.S3 in a function, an s3attach.Local in the dev server.
	// Nil: the routes are 404 REQUEST_NOT_FOUND.
	Attachments attach.Store
	// Usage, when set, makes the history handler serve GET /usage
	// (docs/quotas.md): the deployment keeps the usage ledger. Nil: /usage
	// is 404 REQUEST_NOT_FOUND, as any path no route serves.
	Usage *UsageOptions
}

// server is the state shared by both handlers.
type server struct {
	store   Store
	auth    auth.Authenticator
	log     *slog.Logger
	maxBody int64
	now     func() time.Time
	usage   *UsageOptions
	// attachments is Options.Attachments: a session's delete and a
	// principal's erase remove their attachments too.
	attachments attach.Store
}

// newServer validates opts and applies their defaults. It returns an
// error for a nil Store or Authenticator or a negative MaxBodyBytes.
func newServer(opts Options) (*server, error) {
	switch {
	case opts.Store == nil:
		return nil, errors.New("sessionapi: Options.Store is nil")
	case opts.Authenticator == nil:
		return nil, errors.New("sessionapi: Options.Authenticator is nil")
	}
	maxBody, err := httpedge.BodyLimit("Options.MaxBodyBytes", opts.MaxBodyBytes)
	if err != nil {
		return nil, fmt.Errorf("sessionapi: %w", err)
	}
	s := &server{
		store:   opts.Store,
		auth:    opts.Authenticator,
		log:     httpedge.Logger(opts.Logger),
		maxBody: maxBody,
		now:     opts.Now,
		usage:   opts.Usage,

		attachments: opts.Attachments,
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s, nil
}

// NewHistoryHandler returns the history function's handler
// (docs/design.md#history-and-artifacts-api):
//
//	GET /sessions                200 api.SessionList  ?limit=1..100 (20) &cursor= &q= (docs/conversations.md)
//	GET /sessions/{id}           200 SessionSummary
//	PATCH /sessions/{id}         {"title"} -> 200 api.SessionListItem
//	DELETE /sessions/{id}        204, or 202 DeleteProgress while more remains (send it again)
//	GET /sessions/{id}/export    200 the whole conversation as one JSON document, written as read
//	DELETE /principals/{subject}/sessions  the tenant's trusted principal only: 200 DeleteProgress
//	PUT /sessions/{id}/turns/{turnId}/feedback  {"rating","comment"?} -> 200 api.Feedback; DELETE -> 204
//	GET /sessions/{id}/turns     200 TurnPage     ?limit=1..100 (20) &order=desc|asc (desc) &cursor=
//	GET /sessions/{id}/messages  200 MessagePage  same query as /turns
//	GET /sessions/{id}/turns/{turnId}          200 TurnSummary, on the active branch or not (docs/branches.md)
//	POST /sessions/{id}/turns/{turnId}/select  204: that sibling's branch becomes the active one
//	POST /sessions/{id}/fork     api.ForkRequest -> 201 api.SessionListItem of the new session
//	GET /usage                   200 UsageReport  ?period=day|month (day); with scope=tenant, for the
//	                             tenant's trusted principal, 200 TenantUsageReport ?limit=&cursor= (Options.Usage)
//
// Another method on these paths is 405 REQUEST_METHOD_NOT_ALLOWED (with
// Allow: GET, or GET, PATCH), any other path 404 REQUEST_NOT_FOUND. A session id that is
// not a SafeId, a missing session and another principal's session are all
// 404 SESSION_NOT_FOUND. See the package documentation for errors. It
// returns an error naming the first invalid option: a nil Store or
// Authenticator, or a negative MaxBodyBytes.
func NewHistoryHandler(opts Options) (http.Handler, error) {
	s, err := newServer(opts)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/sessions", s.route("sessions", http.MethodGet, s.listSessions))
	mux.Handle("/sessions/{id}", s.route("session", "", s.session))
	mux.Handle("/sessions/{id}/turns", s.route("turns", http.MethodGet, s.listTurns))
	mux.Handle("/sessions/{id}/messages", s.route("messages", http.MethodGet, s.listMessages))
	mux.Handle("/sessions/{id}/turns/{turnId}/feedback", s.route("feedback", "", s.feedback))
	b := branchRoutes{s}
	mux.Handle("/sessions/{id}/turns/{turnId}", s.route("turn", http.MethodGet, b.getTurn))
	mux.Handle("/sessions/{id}/turns/{turnId}/select", s.route("select", http.MethodPost, b.selectTurn))
	mux.Handle("/sessions/{id}/fork", s.route("fork", http.MethodPost, b.fork))
	mux.Handle("/sessions/{id}/export", s.route("export", http.MethodGet, s.exportSession))
	mux.Handle("/principals/{subject}/sessions", s.route("erase", "", s.erase))
	if s.usage != nil {
		mux.Handle("/usage", s.route("usage", http.MethodGet, s.getUsage))
	}
	mux.Handle("/", s.route("none", "", nil))
	return telemetry.Measure(opts.Metrics, opts.Tracing, s.guard(mux)), nil
}

// NewExportHandler returns a handler of GET /sessions/{id}/export alone
// (as NewHistoryHandler serves it; any other path is 404
// REQUEST_NOT_FOUND), for the turn function to serve in front of its turn
// handler: behind a RESPONSE_STREAM function URL the document goes out as
// it is written, with no 6 MB cap (docs/conversations.md). It returns an
// error for invalid options, as NewHistoryHandler.
func NewExportHandler(opts Options) (http.Handler, error) {
	s, err := newServer(opts)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/sessions/{id}/export", s.route("export", http.MethodGet, s.exportSession))
	mux.Handle("/", s.route("none", "", nil))
	return telemetry.Measure(opts.Metrics, opts.Tracing, s.guard(mux)), nil
}

// WithExport serves GET /sessions/{id}/export with export and every
// other request with next: the turn function's routes plus the export.
func WithExport(export, next http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/sessions/{id}/export", export)
	mux.Handle("/", next)
	return mux
}

// NewArtifactsHandler returns the artifacts function's handler
// (docs/design.md#history-and-artifacts-api):
//
//	PUT /sessions/{id}/turns/{turnId}/artifacts  {"artifacts":[ArtifactReference...]} -> 200 ArtifactList
//	GET /sessions/{id}/turns/{turnId}/artifacts  200 ArtifactList
//	POST /sessions/{id}/uploads  api.UploadRequest -> 201 api.UploadTicket (Options.Attachments)
//	GET /sessions/{id}/attachments/{attachmentId}  200 api.AttachmentDownload (Options.Attachments)
//
// PUT replaces the turn's references (deduplicated by entryPath, the last
// one winning; [] clears) and is allowed only to the trusted principal (403
// REQUEST_FORBIDDEN otherwise, before any lookup), on sessions of its own
// tenant (404 SESSION_NOT_FOUND for another tenant's); GET follows chat.Store.GetArtifacts access
// (the session's owner; another principal gets 404). Another method is 405
// (Allow: GET, PUT), any other path 404 REQUEST_NOT_FOUND. It returns an
// error for invalid options, as NewHistoryHandler.
func NewArtifactsHandler(opts Options) (http.Handler, error) {
	s, err := newServer(opts)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/sessions/{id}/turns/{turnId}/artifacts", s.route("artifacts", "", s.artifacts))
	if opts.Attachments != nil {
		a := attachmentRoutes{server: s, store: opts.Attachments}
		mux.Handle("/sessions/{id}/uploads", s.route("upload", http.MethodPost, a.create))
		mux.Handle("/sessions/{id}/attachments/{attachmentId}", s.route("attachment", http.MethodGet, a.get))
	}
	mux.Handle("/", s.route("none", "", nil))
	return telemetry.Measure(opts.Metrics, opts.Tracing, s.guard(mux)), nil
}

// handlerFunc is a route's handler: it writes a success response itself or
// returns an error that httpedge.Error answers through the edge's one
// error table.
type handlerFunc func(w http.ResponseWriter, r *http.Request, rc *requestContext) error

// requestContext carries what one request's log line reports.
type requestContext struct {
	requestID string
	route     string
	sessionID string // set only once validated as a SafeId
	turnID    string // set only once validated as a SafeId
	err       error  // the error behind an error response, for the log only
}

// route adapts h to http.Handler: it enforces method (when not empty),
// writes the response or the mapped error, and logs the request once. A nil
// h answers 404 REQUEST_NOT_FOUND.
func (s *server) route(name, method string, h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rc := &requestContext{requestID: requestID(r), route: name}
		rec := &httpedge.Recorder{ResponseWriter: w}
		var err error
		switch {
		case h == nil:
			err = httpedge.ErrNotFound
		case method != "":
			err = httpedge.RequireMethod(rec, r, method)
		}
		if err == nil {
			err = h(rec, r, rc)
		}
		if err != nil {
			rc.err = err
			httpedge.Error(rec, r, err)
		}
		s.logRequest(r, rc, rec.Status, time.Since(start))
		sc := telemetry.ScopeFrom(r.Context())
		sc.SetRoute(name)
		sc.SetHTTPRoute(r.Pattern) // "" for the not-found route
		sc.SetSession(rc.sessionID, rc.turnID)
	})
}

// guard answers 404 REQUEST_NOT_FOUND for a path that is not in canonical
// form (a "." or ".." segment, an empty segment, a trailing slash) instead
// of letting http.ServeMux redirect it.
func (s *server) guard(next http.Handler) http.Handler {
	notFound := s.route("none", "", nil)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; !strings.HasPrefix(p, "/") || path.Clean(p) != p {
			notFound.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// logRequest writes the request's one log line: never a path, query, header
// or body byte that was not validated first.
func (s *server) logRequest(r *http.Request, rc *requestContext, status int, elapsed time.Duration) {
	attrs := []slog.Attr{
		slog.String("requestId", rc.requestID),
		slog.String("method", httpedge.SafeMethod(r.Method)),
		slog.String("route", rc.route),
		slog.Int("status", status),
		slog.Int64("durationMs", elapsed.Milliseconds()),
	}
	if rc.sessionID != "" {
		attrs = append(attrs, slog.String("sessionId", rc.sessionID))
	}
	if rc.turnID != "" {
		attrs = append(attrs, slog.String("turnId", rc.turnID))
	}
	level := slog.LevelInfo
	if status >= http.StatusInternalServerError {
		level = slog.LevelError
		if rc.err != nil {
			attrs = append(attrs, slog.String("error", rc.err.Error()))
		}
	}
	s.log.LogAttrs(r.Context(), level, "request", attrs...)
}

// requestID returns the Lambda request id of the invocation serving r, or a
// random id when r is not served by Lambda (local runs, tests).
func requestID(r *http.Request) string {
	if lc, ok := lambdacontext.FromContext(r.Context()); ok && lc.AwsRequestID != "" {
		return lc.AwsRequestID
	}
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return "local-" + hex.EncodeToString(b[:])
}
