package turn

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

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/clock"
	"github.com/turnstream/turnstream/pkg/definition"
	"github.com/turnstream/turnstream/pkg/httpedge"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/telemetry"
	"github.com/turnstream/turnstream/pkg/tool"
)

// Defaults applied by NewHandler to zero Options fields
// (docs/design.md#configuration). A zero MaxBodyBytes is
// httpedge.DefaultMaxBodyBytes, the one body cap default of every handler
// (docs/protocol.md#server-handler-behaviour).
const (
	DefaultTurnTimeout      = 5 * time.Minute
	DefaultCleanupReserve   = 5 * time.Second
	DefaultLeaseDuration    = 30 * time.Second
	DefaultSnapshotInterval = 50 * time.Millisecond
	// DefaultSnapshotBytesPerSecond and DefaultMaxSnapshotGap pace
	// streaming snapshots by size (Options.SnapshotBytesPerSecond).
	DefaultSnapshotBytesPerSecond = 4096
	DefaultMaxSnapshotGap         = 2 * time.Second
	// DefaultResumePollInterval is how often a resume stream reads the
	// turn's checkpoints (one consistent Query each).
	DefaultResumePollInterval = 250 * time.Millisecond
)

// Definition is the single definition of the simple configuration path
// (Options.Model and Options.Definition, no resolver): every session runs
// it, with no tools and definition.DefaultMaxSteps model calls per turn.
type Definition struct {
	// ID is a SafeId recorded on the session.
	ID string
	// Revision is >= 1, recorded on the session; a bumped revision applies
	// to new turns.
	Revision int64
	// SystemPrompt is sent as the model request's system prompt; may be
	// empty.
	SystemPrompt string
	// ModelID is the provider's model id; empty for providers that need
	// none (echo).
	ModelID string
	// Limits are the per-turn budgets (definition.Limits: MaxOutputTokens,
	// MaxToolCalls, MaxWallTime; MaxTokens per model call). MaxSteps zero
	// means definition.DefaultMaxSteps; the context budget fields are not
	// used.
	Limits definition.Limits
	// Quotas are the quotas of every session (docs/quotas.md); they need
	// Options.Ledger.
	Quotas chat.Quotas
}

// Options configure NewHandler. Store and Authenticator are required, and
// either Definitions with Models (the configured path,
// docs/design.md#models-tools-definitions) or Model with Definition (the
// simple path, one definition without tools). Zero durations and sizes take
// the Default* values.
type Options struct {
	Store chat.Store
	// Authenticator establishes the caller from the request's headers only,
	// before any body byte is read
	// (docs/design.md#authentication-and-tenancy). Its errors wrapping
	// auth.ErrUnauthenticated are 401 REQUEST_UNAUTHENTICATED,
	// auth.ErrForbidden 403 REQUEST_FORBIDDEN, anything else 500
	// SERVER_INTERNAL.
	Authenticator auth.Authenticator

	// Definitions resolves a session's definition (pkg/definition): a new
	// session gets the default one, an existing session keeps its stored
	// definition id and runs that definition's current revision. The
	// definition is resolved from the session the claim returns (no extra
	// store request, docs/design.md#storage-one-dynamodb-table) and the
	// revision the turn ran with is recorded at release. A session whose id is
	// no longer configured is saved as a failed turn and refused with 500
	// SERVER_INTERNAL (logged), never switched to another definition.
	Definitions *definition.Resolver
	// Models are the model providers by name (definition.Definition.Provider:
	// definition.ProviderEcho, ProviderBedrock, ProviderOpenAI); every
	// definition's provider must be present. Used with Definitions.
	Models map[string]model.Model
	// Tools is the registry the definitions' tool names are selected from
	// (tool.Registry.Select); nil means no tools, and then a definition
	// naming a tool is an error.
	Tools *tool.Registry

	// Model and Definition are the simple path, used when Definitions is
	// nil: every session runs Definition on Model.
	Model      model.Model
	Definition Definition

	// TurnTimeout bounds one request (docs/design.md#the-turn-pipeline); the
	// deadline is min(now+TurnTimeout, Lambda deadline - CleanupReserve).
	TurnTimeout time.Duration
	// CleanupReserve is kept from the Lambda deadline for cleanup; each of
	// the three cleanup phases (stop the model, save, release) gets a third
	// of it.
	CleanupReserve time.Duration
	// LeaseDuration is the lease length; the lease never extends past the
	// request deadline plus CleanupReserve.
	LeaseDuration time.Duration
	// RenewInterval is how often the lease is renewed (and the stop flag
	// checked); zero means LeaseDuration/3 (docs/design.md#the-turn-pipeline).
	// Tests shorten it.
	RenewInterval time.Duration
	// SnapshotInterval is the minimum time between two streaming snapshots
	// (docs/design.md#snapshots). The first and the terminal snapshot are
	// never delayed by it.
	SnapshotInterval time.Duration
	// SnapshotBytesPerSecond paces streaming snapshots by size as well as
	// time: after a snapshot of n bytes the next waits n/SnapshotBytesPerSecond
	// seconds, at least SnapshotInterval and at most MaxSnapshotGap. Every
	// snapshot is complete, so without it a long answer would cost wire
	// bytes in the square of its length; with it they grow linearly (about
	// SnapshotBytesPerSecond times the turn's duration) until the gap
	// reaches MaxSnapshotGap. Zero means DefaultSnapshotBytesPerSecond.
	SnapshotBytesPerSecond int64
	// MaxSnapshotGap is the longest wait between two streaming snapshots
	// while the state changes (visible progress); zero means
	// DefaultMaxSnapshotGap. At least SnapshotInterval.
	MaxSnapshotGap time.Duration
	// CompactLineSpan is the longest an append line of a compact stream
	// (api.StreamModeHeader, docs/compact.md) stays open; zero means
	// DefaultCompactLineSpan. Readers that wait for whole lines see text
	// at least this often; a checkpoint can carry only closed lines.
	CompactLineSpan time.Duration
	// MaxBodyBytes caps a request body in bytes (413 above it); zero
	// means httpedge.DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// ConfirmationTTL is how long a tool call that requires approval can
	// be decided (docs/approvals.md); zero means
	// chat.DefaultConfirmationTTL.
	ConfirmationTTL time.Duration
	// CheckpointInterval is how often a running turn persists its state
	// at most (chat.Store.Checkpoint), besides the moments that must not
	// be lost (its first snapshot, each tool call state change): what a
	// resume, a reloaded page and crash recovery read. It also bounds how
	// long a stop takes to be seen. Zero turns checkpoints off: a turn
	// then costs 4 requests, and a client that disconnects cancels it (no
	// one could resume it). With checkpoints on, a disconnect is not a
	// stop: the turn runs to its end (config CHECKPOINT_INTERVAL, 1 s by
	// default).
	CheckpointInterval time.Duration
	// ResumePollInterval is how often a resume stream
	// (GET /sessions/{id}/turns/{turnId}/stream) reads the turn; zero
	// means DefaultResumePollInterval.
	ResumePollInterval time.Duration

	// MaxQueuedTurns is how many turns a session may hold queued (the
	// enqueue policy, docs/multitask.md): 1..chat.MaxQueuedTurnsLimit;
	// zero means chat.DefaultMaxQueuedTurns. An enqueue beyond it is 409
	// SESSION_QUEUE_FULL (retryable).
	MaxQueuedTurns int
	// QueuedTurnTTL is how long a queued turn may wait to start; past it,
	// it is recorded as never run (TURN_QUEUE_EXPIRED). Zero means
	// chat.DefaultQueuedTurnTTL.
	QueuedTurnTTL time.Duration
	// InterruptWait bounds how long an interrupt or rollback waits for
	// the turn it stops to end before it answers 409 SESSION_BUSY; zero
	// means DefaultInterruptWait.
	InterruptWait time.Duration
	// Dispatch starts a drain of a session's queued turns (Handler.Drain)
	// in another invocation: on Lambda, an asynchronous invocation of the
	// turn function itself (docs/multitask.md). Nil drains in this
	// process, in a goroutine: right only where the process outlives its
	// requests (the dev server, a container), never on Lambda, which
	// freezes the process between invocations. Called in a goroutine of
	// its own with a 10 s context; an error is logged (a later submit,
	// resume or turn end dispatches again).
	Dispatch func(ctx context.Context, d DrainRequest) error

	// Metrics receives one CloudWatch EMF document per finished turn and
	// one per other request (telemetry.Recorder, docs/operations.md); nil
	// writes none.
	Metrics *telemetry.Recorder
	// Tracing starts the request's server span, one invoke_agent span per
	// turn, a chat span per model call and an execute_tool span per tool
	// call (telemetry.Tracing); nil starts none.
	Tracing *telemetry.Tracing
	// Ledger makes every turn count its usage in the store's usage ledger
	// when it ends (chat.Store.RecordUsage), after its save and before its
	// release: one write per turn (docs/quotas.md). The store must count
	// the turns it decides itself (chat.LedgerOptions.Enabled). Quotas
	// need it.
	Ledger bool
	// QuotaFailOpen is what a quota check that cannot read the ledger
	// does: false (the default) refuses the submit with 503
	// QUOTA_UNAVAILABLE, true lets the turn run unchecked, logged (config
	// QUOTA_FAIL_MODE).
	QuotaFailOpen bool
	// QuotaCache is how long a tenant's usage sum (a sum over its
	// principals: chat.Store.ListUsage) is reused by this handler's quota
	// checks, and how old a principal's figures may be before a check
	// before a model call reads them again; zero reads them every time
	// (config QUOTA_CACHE).
	QuotaCache time.Duration

	// Logger receives JSON logs; nil discards them (httpedge.Logger, as
	// every handler's Logger). Lines carry the Lambda
	// request id, session id and turn id, never message text or request
	// input.
	Logger *slog.Logger
	// Clock is the turn path's one time source: emittedAt and createdAt,
	// the claim's and renewals' lease expiries and the lease proof, and
	// every timer and ticker (snapshot pacing, renewals, checkpoint and
	// save retries, resume polls, the queue's waits, the quota caches);
	// nil means clock.Real. A request's deadline is a context deadline,
	// set as a duration from Clock's now (TurnTimeout), so it runs on the
	// runtime's clock, which a testing/synctest bubble fakes with every
	// other timer. Clock and NewID are called from several goroutines of
	// one request and must be safe for concurrent use.
	Clock clock.Clock
	// NewID returns a fresh random SafeId for event ids; nil means a
	// random UUID v4. NewHandler calls it once to check it.
	NewID func() string
}

// Handler serves the turn function's routes (NewHandler) and drains
// sessions' queued turns (Drain).
type Handler struct{ *handler }

// handler serves the turn function's routes; see NewHandler.
type handler struct {
	opts         Options
	clock        clock.Clock // opts.Clock, or clock.Real
	log          *slog.Logger
	capabilities []byte
	// agents resolves a session's definition to what it runs with.
	agents agentSet
	// resumes serves the resume routes (resume.go, aguiresume.go).
	resumes resumes
	// queue enqueues and interrupts for busy sessions and drains their
	// queued turns (multitask.go).
	queue queue
	// mux routes the requests (newMux); serve is route measured
	// (telemetry.Measure).
	mux   *http.ServeMux
	serve http.Handler
	// quotas checks and admits submits against their quotas (quota.go).
	quotas quotaGate
}

// NewHandler validates opts, applies defaults and returns the turn
// function's handler. Routes (docs/design.md#the-three-functions):
//
//	POST /              client.turn.submit -> 200 NDJSON snapshot stream
//	POST /stop          {"sessionId","turnId"} -> 202 {"stopRequested":true} (a queued turn: also "cancelled":true)
//	GET  /sessions/{sessionId}/turns/{turnId}/stream?after=N  resume -> 200 NDJSON
//	GET  /capabilities  protocol versions and extensions (no authentication)
//	POST /agui          AG-UI RunAgentInput -> 200 text/event-stream of AG-UI events
//	GET  /agui/threads/{threadId}/runs/{runId}  (Last-Event-ID) the run resumed
//
// The two AG-UI routes (docs/agui.md) serve the same turns through the
// same pipeline, encoded as AG-UI events (agui.go).
//
// Routes are http.ServeMux method and path patterns (routes, newMux); each
// id is one path segment, percent-decoded, and must be a SafeId. Any other
// path, a path not in canonical form included (a trailing slash, "//",
// a "." or ".." segment), is 404 REQUEST_NOT_FOUND; a method other than
// the route's is 405 REQUEST_METHOD_NOT_ALLOWED naming the route's
// methods. Every error response is JSON
// {"error":{"version":1,"code","message","retryable"}}
// (docs/protocol.md#server-handler-behaviour).
//
// NewHandler returns an error naming the first invalid option: a nil
// Store or Authenticator; with Definitions, a definition whose provider
// has no entry in Models or whose tools are not all in Tools; without it,
// a nil Model, a Definition ID that is not a SafeId or a Revision < 1; a
// negative duration or size, a CleanupReserve not below TurnTimeout, a
// MaxQueuedTurns above chat.MaxQueuedTurnsLimit, or a NewID that does not
// return a SafeId.
func NewHandler(opts Options) (*Handler, error) {
	switch {
	case opts.Store == nil:
		return nil, errors.New("turn: Options.Store is nil")
	case opts.Authenticator == nil:
		return nil, errors.New("turn: Options.Authenticator is nil")
	}
	agents, err := newAgents(opts)
	if err != nil {
		return nil, err
	}
	if !opts.Ledger {
		for _, ag := range agents {
			if !ag.def.Quotas.IsZero() {
				return nil, fmt.Errorf("turn: definition %s sets quotas: they need Options.Ledger", ag.def.ID)
			}
		}
	}
	for name, d := range map[string]time.Duration{
		"QuotaCache":  opts.QuotaCache,
		"TurnTimeout": opts.TurnTimeout, "CleanupReserve": opts.CleanupReserve,
		"LeaseDuration": opts.LeaseDuration, "RenewInterval": opts.RenewInterval,
		"SnapshotInterval": opts.SnapshotInterval, "CheckpointInterval": opts.CheckpointInterval,
		"ResumePollInterval": opts.ResumePollInterval, "MaxSnapshotGap": opts.MaxSnapshotGap,
		"CompactLineSpan": opts.CompactLineSpan, "QueuedTurnTTL": opts.QueuedTurnTTL, "InterruptWait": opts.InterruptWait,
	} {
		if d < 0 {
			return nil, fmt.Errorf("turn: Options.%s is negative", name)
		}
	}
	if opts.MaxQueuedTurns < 0 || opts.MaxQueuedTurns > chat.MaxQueuedTurnsLimit {
		return nil, fmt.Errorf("turn: Options.MaxQueuedTurns must be within 0..%d", chat.MaxQueuedTurnsLimit)
	}
	if opts.SnapshotBytesPerSecond < 0 {
		return nil, errors.New("turn: Options.SnapshotBytesPerSecond is negative")
	}
	if opts.MaxBodyBytes, err = httpedge.BodyLimit("Options.MaxBodyBytes", opts.MaxBodyBytes); err != nil {
		return nil, fmt.Errorf("turn: %w", err)
	}
	setDefault(&opts.TurnTimeout, DefaultTurnTimeout)
	setDefault(&opts.CleanupReserve, DefaultCleanupReserve)
	setDefault(&opts.LeaseDuration, DefaultLeaseDuration)
	setDefault(&opts.SnapshotInterval, DefaultSnapshotInterval)
	setDefault(&opts.RenewInterval, opts.LeaseDuration/3)
	setDefault(&opts.ConfirmationTTL, chat.DefaultConfirmationTTL)
	setDefault(&opts.ResumePollInterval, DefaultResumePollInterval)
	setDefault(&opts.SnapshotBytesPerSecond, DefaultSnapshotBytesPerSecond)
	setDefault(&opts.MaxSnapshotGap, DefaultMaxSnapshotGap)
	setDefault(&opts.CompactLineSpan, DefaultCompactLineSpan)
	setDefault(&opts.MaxQueuedTurns, chat.DefaultMaxQueuedTurns)
	setDefault(&opts.QueuedTurnTTL, chat.DefaultQueuedTurnTTL)
	setDefault(&opts.InterruptWait, DefaultInterruptWait)
	if opts.MaxSnapshotGap < opts.SnapshotInterval {
		return nil, errors.New("turn: Options.MaxSnapshotGap must be at least SnapshotInterval")
	}
	if opts.CleanupReserve >= opts.TurnTimeout {
		return nil, errors.New("turn: Options.CleanupReserve must be below TurnTimeout")
	}
	if opts.NewID == nil {
		opts.NewID = newUUID
	} else if !protocol.IsSafeID(opts.NewID()) {
		return nil, errors.New("turn: Options.NewID does not return SafeIds")
	}
	h := &handler{opts: opts, clock: clock.Or(opts.Clock), log: httpedge.Logger(opts.Logger),
		agents: agentSet{byID: agents, resolver: opts.Definitions}}
	for _, ag := range agents {
		if def, _ := ag.def.Multitask.Policies(); def != definition.MultitaskReject {
			h.queue.defaults = true
		}
	}
	h.resumes.init(h)
	h.quotas.h, h.queue.h = h, h
	h.mux = h.newMux()
	h.serve = telemetry.Measure(opts.Metrics, opts.Tracing, http.HandlerFunc(h.route))
	h.capabilities = capabilitiesBody(opts, h.queue.multitaskCapability(), agents, h.agents.defaultDefinition().ID)
	return &Handler{h}, nil
}

func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// ServeHTTP serves the request, measured (Options.Metrics,
// Options.Tracing); see Handler.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.serve.ServeHTTP(w, r)
}

// A route of the turn function: its name in the request's metrics, its
// path pattern (http.ServeMux syntax; api.SubmitPath "/" is "/{$}", the
// root alone), the methods it serves, the names of the wildcards that
// hold the session and turn ids (SafeIds), and its handler.
type route struct {
	name    string
	pattern string
	methods []string
	ids     [2]string // wildcard names of the session and turn ids; "" when none
	serve   func(h *handler, w http.ResponseWriter, r *http.Request, sessionID, turnID string)
}

// routes are the turn function's routes (see NewHandler).
var routes = []route{
	{name: "submit", pattern: "/{$}", methods: []string{http.MethodPost},
		serve: func(h *handler, w http.ResponseWriter, r *http.Request, _, _ string) { h.serveSubmit(w, r) }},
	{name: "stop", pattern: api.StopPath, methods: []string{http.MethodPost},
		serve: func(h *handler, w http.ResponseWriter, r *http.Request, _, _ string) { h.serveStop(w, r) }},
	{name: "capabilities", pattern: api.CapabilitiesPath, methods: []string{http.MethodGet, http.MethodHead},
		serve: func(h *handler, w http.ResponseWriter, r *http.Request, _, _ string) { h.serveCapabilities(w, r) }},
	{name: "agui", pattern: AGUIPath, methods: []string{http.MethodPost},
		serve: func(h *handler, w http.ResponseWriter, r *http.Request, _, _ string) { h.serveAGUI(w, r) }},
	{name: "resume", pattern: api.ResumePath, methods: []string{http.MethodGet}, ids: [2]string{"sessionId", "turnId"},
		serve: func(h *handler, w http.ResponseWriter, r *http.Request, sid, tid string) {
			h.resumes.serveResume(w, r, sid, tid)
		}},
	{name: "agui-resume", pattern: AGUIRunPath, methods: []string{http.MethodGet}, ids: [2]string{"threadId", "runId"},
		serve: func(h *handler, w http.ResponseWriter, r *http.Request, sid, tid string) {
			h.resumes.serveAGUIResume(w, r, sid, tid)
		}},
}

// newMux returns the router of h: for each route, its methods with its
// pattern ("POST /stop"), then the bare pattern, which answers any other
// method with 405 REQUEST_METHOD_NOT_ALLOWED naming the route's methods
// (its Allow header and message), and "/" for every other path, 404
// REQUEST_NOT_FOUND, so that neither of ServeMux's own plain-text answers
// (404, 405) is ever sent. A method pattern is more specific than the bare
// one, so ServeMux picks it when the method matches (GET also matches
// HEAD, as ServeMux has it; the route's handler then answers as its
// methods say).
func (h *handler) newMux() *http.ServeMux {
	mux := http.NewServeMux()
	for _, rt := range routes {
		for _, m := range rt.methods {
			mux.HandleFunc(m+" "+rt.pattern, func(w http.ResponseWriter, r *http.Request) {
				if sessionID, turnID, ok := h.routeIDs(rt, w, r); ok {
					rt.serve(h, w, r, sessionID, turnID)
				}
			})
		}
		mux.HandleFunc(rt.pattern, func(w http.ResponseWriter, r *http.Request) {
			if _, _, ok := h.routeIDs(rt, w, r); ok {
				w.Header().Set("Allow", strings.Join(rt.methods, ", "))
				reject(r.Context(), w, h.requestLogger(r.Context()), "method", httpedge.ErrMethodNotAllowed)
			}
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		telemetry.ScopeFrom(r.Context()).SetRoute("none")
		httpedge.NotFound(w, r)
	})
	return mux
}

// routeIDs names rt for the request's metrics and returns the session and
// turn ids of its path; a path whose ids are not SafeIds is no route: it
// is answered 404 REQUEST_NOT_FOUND and ok is false.
func (h *handler) routeIDs(rt route, w http.ResponseWriter, r *http.Request) (sessionID, turnID string, ok bool) {
	sc := telemetry.ScopeFrom(r.Context())
	if rt.ids[0] == "" {
		sc.SetRoute(rt.name)
		return "", "", true
	}
	sessionID, turnID = r.PathValue(rt.ids[0]), r.PathValue(rt.ids[1])
	if !protocol.IsSafeID(sessionID) || !protocol.IsSafeID(turnID) {
		sc.SetRoute("none")
		httpedge.NotFound(w, r)
		return "", "", false
	}
	sc.SetRoute(rt.name)
	sc.SetResume()
	sc.SetSession(sessionID, turnID)
	return sessionID, turnID, true
}

// route serves r by h.mux. A path that is not in canonical form (empty,
// relative, with a "." or ".." segment, an empty segment or a trailing
// slash, after percent-decoding) is 404 REQUEST_NOT_FOUND: no route has
// such a path, and ServeMux would otherwise redirect it to its cleaned
// form.
func (h *handler) route(w http.ResponseWriter, r *http.Request) {
	if p := r.URL.Path; p == "" || p[0] != '/' || path.Clean(p) != p {
		telemetry.ScopeFrom(r.Context()).SetRoute("none")
		httpedge.NotFound(w, r)
		return
	}
	h.mux.ServeHTTP(w, r)
}

// deadline starts the request's one deadline
// (docs/design.md#the-turn-pipeline): the earlier of now+TurnTimeout and the
// invocation's own deadline (the Lambda deadline under lambdaurl) minus
// CleanupReserve. Its cause is errTurnDeadline, so a timeout is told from a
// client cancellation.
func (h *handler) deadline(r *http.Request) (context.Context, context.CancelFunc, time.Time) {
	d := h.deadlineOf(r.Context())
	ctx, cancel := untilContext(r.Context(), h.clock, d, errTurnDeadline)
	return ctx, cancel, d
}

// deadlineOf is the deadline of a turn started now under ctx: the earlier
// of now+TurnTimeout and ctx's deadline minus CleanupReserve.
//
// ctx's deadline is on the runtime's clock: it enters Clock's time as the
// duration left until it.
func (h *handler) deadlineOf(ctx context.Context) time.Time {
	now := h.clock.Now()
	d := now.Add(h.opts.TurnTimeout)
	if left, ok := contextLeft(ctx); ok {
		if l := now.Add(left - h.opts.CleanupReserve); l.Before(d) {
			d = l
		}
	}
	return d
}

// untilContext returns a context of parent that ends at at, an instant on
// c, with cause: contexts run on the runtime's clock, so at enters as the
// duration left until it on c.
func untilContext(parent context.Context, c clock.Clock, at time.Time, cause error) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(parent, clock.Until(c, at), cause)
}

// contextLeft is the time left until ctx's deadline, on the runtime's
// clock (where context deadlines are); ok is false without a deadline.
func contextLeft(ctx context.Context) (left time.Duration, ok bool) {
	d, ok := ctx.Deadline()
	if !ok {
		return 0, false
	}
	return time.Until(d), true
}

// errTurnDeadline is the cause of the request deadline's expiry.
var errTurnDeadline = errors.New("turn: request deadline exceeded")

// requestLogger returns the logger carrying the Lambda request id when
// the request came through the Lambda runtime.
func (h *handler) requestLogger(ctx context.Context) *slog.Logger {
	if lc, ok := lambdacontext.FromContext(ctx); ok && lc.AwsRequestID != "" {
		return h.log.With("requestId", lc.AwsRequestID)
	}
	return h.log
}

// newUUID returns a random RFC 9562 version 4 UUID, a SafeId.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:], b[10:])
	return string(s[:])
}
