package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/turnstream/turnstream/pkg/attach"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/clock"
	"github.com/turnstream/turnstream/pkg/definition"
	"github.com/turnstream/turnstream/pkg/httpedge"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/quota"
	"github.com/turnstream/turnstream/pkg/tool"
)

// Defaults applied by New to zero Config fields
// (docs/design.md#configuration). A zero MaxBodyBytes is
// httpedge.DefaultMaxBodyBytes, the one body cap default of every handler
// (docs/protocol.md#server-handler-behaviour).
const (
	DefaultTurnTimeout      = 5 * time.Minute
	DefaultCleanupReserve   = 5 * time.Second
	DefaultLeaseDuration    = 30 * time.Second
	DefaultSnapshotInterval = 50 * time.Millisecond
	// DefaultSnapshotBytesPerSecond and DefaultMaxSnapshotGap pace
	// streaming snapshots by size (Config.SnapshotBytesPerSecond).
	DefaultSnapshotBytesPerSecond = 4096
	DefaultMaxSnapshotGap         = 2 * time.Second
	// DefaultResumePollInterval is how often a resume stream reads the
	// turn's checkpoints (one consistent Query each).
	DefaultResumePollInterval = 250 * time.Millisecond
)

// Definition is the single definition of the simple configuration path
// (Config.Model and Config.Definition, no resolver): every session runs
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
	// TitleModelID is definition.Definition.TitleModelID: the model that
	// writes a session's title when its first turn completes; empty: the
	// first user message gives it.
	TitleModelID string
	// Limits are the per-turn budgets (definition.Limits: MaxOutputTokens,
	// MaxToolCalls, MaxWallTime; MaxTokens per model call). MaxSteps zero
	// means definition.DefaultMaxSteps; the context budget fields are not
	// used.
	Limits definition.Limits
	// Quotas are the quotas of every session (docs/quotas.md); they need
	// Config.Ledger.
	Quotas chat.Quotas
}

// Config configures New: what the engine needs to run turns. Store is
// required, and either Definitions with Models (the configured path,
// docs/design.md#models-tools-definitions) or Model with Definition (the
// simple path, one definition without tools). Zero durations and sizes
// take the Default* values. The hooks (Authenticate, Accepted, Trace) are
// how the HTTP edge (pkg/turn) takes part without the engine knowing it.
type Config struct {
	Store chat.Store
	// Authenticate establishes the caller of r from its headers only,
	// before any body byte is read (docs/design.md#authentication-and-tenancy),
	// under ctx, the request's deadline; required. The engine calls it
	// after the method and media type checks, in the reference handler's
	// order. Its errors are answered as httpedge.Diagnose maps them (an
	// auth.ErrUnauthenticated 401, auth.ErrForbidden 403, anything else
	// 500).
	Authenticate func(ctx context.Context, r *http.Request) (chat.Principal, error)
	// Accepted, when not nil, is called once a submit names its session
	// and turn (POST / or POST /agui decoded, before its lineage check),
	// with the request's context: the edge's metrics name them.
	Accepted func(ctx context.Context, sessionID, turnID string)
	// Trace, when not nil, starts the hooks of each claimed turn (a
	// submit's, a resumed approval's, a queued turn's): it returns the
	// hooks and a function that puts what they carry (a span) into a
	// context, applied to the turn's contexts. See Trace.
	Trace func(s TurnStart) (wrap func(context.Context) context.Context, tr *Trace)
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
	// ToolSources are the remote tools of each definition, by definition
	// id (a definition's MCP servers, pkg/tool/mcp; docs/mcp.md): listed
	// at each turn's start, before its first model call, and offered after
	// the definition's own tools. A source that fails leaves its tools
	// out of that turn, with a warning in the assistant message's
	// metadata (api.MetadataWarnings). Only with Definitions.
	ToolSources map[string][]tool.Source

	// Attachments holds the files submits name (docs/attachments.md):
	// the engine checks and reads them (Head, Read) before the claim, and
	// gives their bytes, and those of the earlier turns in the context, to
	// the model. Nil: a submit naming attachments is 404
	// ATTACHMENT_NOT_FOUND.
	Attachments attach.Reader

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
	// CheckpointMinChange is the least growth, in bytes of the encoded
	// messages, that a checkpoint between those moments carries: a
	// CheckpointInterval tick whose change since the last checkpoint that
	// landed is smaller writes nothing (it reads the stop flag instead),
	// until the change reaches it or checkpointMaxTicks intervals passed
	// since that checkpoint. A change of the messages' number or of a tool
	// call is written at once. So a crash or a resume loses at most this
	// much text or that many intervals, and a checkpoint carries a write
	// unit's worth. Zero writes every interval, a tick without a change
	// as a heartbeat write, and makes the first text a moment that must
	// not be lost (config CHECKPOINT_MIN_CHANGE, 1,024 by default).
	CheckpointMinChange int
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
	// Dispatch starts a drain of a session's queued turns (Engine.Drain)
	// in another invocation: on Lambda, an asynchronous invocation of the
	// turn function itself (docs/multitask.md). Nil drains in this
	// process, in a goroutine: right only where the process outlives its
	// requests (the dev server, a container), never on Lambda, which
	// freezes the process between invocations. Called in a goroutine of
	// its own with a 10 s context; an error is logged (a later submit,
	// resume or turn end dispatches again).
	Dispatch func(ctx context.Context, d DrainRequest) error

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
	// random UUID v4. New calls it once to check it.
	NewID func() string
}

// Engine runs turns: from a request's checks and its claim to the
// turn's release, its stream and the drain of the queued turns behind it
// (New). The HTTP edge (pkg/turn) routes requests to its Serve methods
// and serves Capabilities; everything a request says about its caller
// comes through Config.Authenticate.
type Engine struct{ *handler }

// handler is the engine's state; see New.
type handler struct {
	opts         Config
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
	// quotas checks and admits submits against their quotas (quota.go).
	quotas quotaGate
}

// New validates cfg, applies defaults and returns the engine.
//
// New returns an error naming the first invalid field: a nil Store or
// Authenticate; with Definitions, a definition whose provider has no
// entry in Models or whose tools are not all in Tools; without it, a nil
// Model, a Definition ID that is not a SafeId or a Revision < 1; a
// negative duration or size, a CleanupReserve not below TurnTimeout, a
// MaxQueuedTurns above chat.MaxQueuedTurnsLimit, or a NewID that does
// not return a SafeId.
func New(opts Config) (*Engine, error) {
	switch {
	case opts.Store == nil:
		return nil, errors.New("turn: Options.Store is nil")
	case opts.Authenticate == nil:
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
	if opts.CheckpointMinChange < 0 {
		return nil, errors.New("turn: Options.CheckpointMinChange is negative")
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
	h.quotas.gate = quota.New(quota.Options{Store: opts.Store, FailOpen: opts.QuotaFailOpen, Cache: opts.QuotaCache,
		GiveBackTimeout: opts.CleanupReserve, Clock: h.clock})
	h.capabilities = capabilitiesBody(opts, h.queue.multitaskCapability(), agents, h.agents.defaultDefinition().ID)
	return &Engine{h}, nil
}

// ServeSubmit serves POST / (client.turn.submit -> 200 NDJSON snapshot
// stream; see pkg/turn's NewHandler for the routes).
func (e *Engine) ServeSubmit(w http.ResponseWriter, r *http.Request) { e.serveSubmit(w, r) }

// ServeStop serves POST /stop.
func (e *Engine) ServeStop(w http.ResponseWriter, r *http.Request) { e.serveStop(w, r) }

// ServeCapabilities serves GET and HEAD /capabilities (no
// authentication).
func (e *Engine) ServeCapabilities(w http.ResponseWriter, r *http.Request) { e.serveCapabilities(w, r) }

// ServeAGUI serves POST /agui (AG-UI RunAgentInput -> 200 event stream).
func (e *Engine) ServeAGUI(w http.ResponseWriter, r *http.Request) { e.serveAGUI(w, r) }

// ServeResume serves GET /sessions/{sessionId}/turns/{turnId}/stream
// for the turn the path names (SafeIds, checked by the router).
func (e *Engine) ServeResume(w http.ResponseWriter, r *http.Request, sessionID, turnID string) {
	e.resumes.serveResume(w, r, sessionID, turnID)
}

// ServeAGUIResume serves GET /agui/threads/{threadId}/runs/{runId} for
// the run the path names (SafeIds, checked by the router).
func (e *Engine) ServeAGUIResume(w http.ResponseWriter, r *http.Request, threadID, runID string) {
	e.resumes.serveAGUIResume(w, r, threadID, runID)
}

// Reject answers r with the diagnostic of err (httpedge.Diagnose), logged
// with the step of the request that refused it, as every refusal of the
// engine is: for the router's own refusals (a method a route does not
// serve).
func (e *Engine) Reject(w http.ResponseWriter, r *http.Request, step string, err error) {
	reject(r.Context(), w, e.requestLogger(r.Context()), step, err)
}

// Clock is the engine's time source (Config.Clock, or clock.Real).
func (e *Engine) Clock() clock.Clock { return e.clock }

func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
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
