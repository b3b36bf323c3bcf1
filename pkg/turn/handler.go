package turn

import (
	"context"
	"errors"
	"net/http"
	"path"
	"strings"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/httpedge"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/telemetry"
	"github.com/turnstream/turnstream/pkg/turn/engine"
)

// Config is what the turn engine needs (engine.Config: the store, the
// definitions and models, the durations, the queue, the ledger, the
// clock); Options adds what the HTTP edge needs.
type Config = engine.Config

// Options configure NewHandler: the engine's Config (Store is required,
// and either Definitions with Models or Model with Definition; zero
// durations and sizes take the Default* values) and the edge's
// Authenticator (required), Metrics and Tracing. Config's own hooks
// (Authenticate, Accepted, Trace) are the edge's: NewHandler sets them.
type Options struct {
	Config
	// Authenticator establishes the caller from the request's headers only,
	// before any body byte is read
	// (docs/design.md#authentication-and-tenancy). Its errors wrapping
	// auth.ErrUnauthenticated are 401 REQUEST_UNAUTHENTICATED,
	// auth.ErrForbidden 403 REQUEST_FORBIDDEN, anything else 500
	// SERVER_INTERNAL.
	Authenticator auth.Authenticator
	// Metrics receives one CloudWatch EMF document per finished turn and
	// one per other request (telemetry.Recorder, docs/operations.md); nil
	// writes none.
	Metrics *telemetry.Recorder
	// Tracing starts the request's server span, one invoke_agent span per
	// turn, a chat span per model call and an execute_tool span per tool
	// call (telemetry.Tracing); nil starts none.
	Tracing *telemetry.Tracing
}

// Handler serves the turn function's routes (NewHandler) and drains
// sessions' queued turns (Drain). It is the HTTP edge of the turn engine
// (pkg/turn/engine): it routes each request, authenticates its caller
// through Options.Authenticator when the engine asks, and measures it
// (telemetry.Measure and the engine's hooks); the engine runs the turn.
type Handler struct {
	eng   *engine.Engine
	opts  Options
	mux   *http.ServeMux
	serve http.Handler // route, measured (telemetry.Measure)
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
// same pipeline, encoded as AG-UI events.
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
	if opts.Authenticator == nil {
		if opts.Store == nil {
			return nil, errors.New("turn: Options.Store is nil")
		}
		return nil, errors.New("turn: Options.Authenticator is nil")
	}
	h := &Handler{opts: opts}
	cfg := opts.Config
	cfg.Authenticate = func(ctx context.Context, r *http.Request) (chat.Principal, error) {
		p, err := opts.Authenticator.Authenticate(r.WithContext(ctx))
		if err == nil {
			telemetry.ScopeFrom(ctx).SetPrincipal(p)
		}
		return p, err
	}
	cfg.Accepted = func(ctx context.Context, sessionID, turnID string) {
		telemetry.ScopeFrom(ctx).SetSession(sessionID, turnID)
	}
	cfg.Trace = h.telemetryTrace
	eng, err := engine.New(cfg)
	if err != nil {
		return nil, err
	}
	h.eng = eng
	h.mux = h.newMux()
	h.serve = telemetry.Measure(opts.Metrics, opts.Tracing, http.HandlerFunc(h.route))
	return h, nil
}

// ServeHTTP serves the request, measured (Options.Metrics,
// Options.Tracing); see NewHandler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.serve.ServeHTTP(w, r)
}

// Drain runs a session's queued turns (engine.Engine.Drain): the turn
// function calls it for the drain invocations Options.Dispatch starts.
func (h *Handler) Drain(ctx context.Context, d DrainRequest) { h.eng.Drain(ctx, d) }

// A route of the turn function: its name in the request's metrics, its
// path pattern (http.ServeMux syntax; api.SubmitPath "/" is "/{$}", the
// root alone), the methods it serves, the names of the wildcards that
// hold the session and turn ids (SafeIds), and its handler.
type route struct {
	name    string
	pattern string
	methods []string
	ids     [2]string // wildcard names of the session and turn ids; "" when none
	serve   func(e *engine.Engine, w http.ResponseWriter, r *http.Request, sessionID, turnID string)
}

// routes are the turn function's routes (see NewHandler).
var routes = []route{
	{name: "submit", pattern: "/{$}", methods: []string{http.MethodPost},
		serve: func(e *engine.Engine, w http.ResponseWriter, r *http.Request, _, _ string) { e.ServeSubmit(w, r) }},
	{name: "stop", pattern: api.StopPath, methods: []string{http.MethodPost},
		serve: func(e *engine.Engine, w http.ResponseWriter, r *http.Request, _, _ string) { e.ServeStop(w, r) }},
	{name: "capabilities", pattern: api.CapabilitiesPath, methods: []string{http.MethodGet, http.MethodHead},
		serve: func(e *engine.Engine, w http.ResponseWriter, r *http.Request, _, _ string) { e.ServeCapabilities(w, r) }},
	{name: "agui", pattern: AGUIPath, methods: []string{http.MethodPost},
		serve: func(e *engine.Engine, w http.ResponseWriter, r *http.Request, _, _ string) { e.ServeAGUI(w, r) }},
	{name: "resume", pattern: api.ResumePath, methods: []string{http.MethodGet}, ids: [2]string{"sessionId", "turnId"},
		serve: func(e *engine.Engine, w http.ResponseWriter, r *http.Request, sid, tid string) {
			e.ServeResume(w, r, sid, tid)
		}},
	{name: "agui-resume", pattern: AGUIRunPath, methods: []string{http.MethodGet}, ids: [2]string{"threadId", "runId"},
		serve: func(e *engine.Engine, w http.ResponseWriter, r *http.Request, sid, tid string) {
			e.ServeAGUIResume(w, r, sid, tid)
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
func (h *Handler) newMux() *http.ServeMux {
	mux := http.NewServeMux()
	for _, rt := range routes {
		for _, m := range rt.methods {
			mux.HandleFunc(m+" "+rt.pattern, func(w http.ResponseWriter, r *http.Request) {
				if sessionID, turnID, ok := h.routeIDs(rt, w, r); ok {
					rt.serve(h.eng, w, r, sessionID, turnID)
				}
			})
		}
		mux.HandleFunc(rt.pattern, func(w http.ResponseWriter, r *http.Request) {
			if _, _, ok := h.routeIDs(rt, w, r); ok {
				w.Header().Set("Allow", strings.Join(rt.methods, ", "))
				h.eng.Reject(w, r, "method", httpedge.ErrMethodNotAllowed)
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
func (h *Handler) routeIDs(rt route, w http.ResponseWriter, r *http.Request) (sessionID, turnID string, ok bool) {
	sc := telemetry.ScopeFrom(r.Context())
	if rt.ids[0] == "" {
		sc.SetRoute(rt.name)
		sc.SetHTTPRoute(r.Pattern)
		return "", "", true
	}
	sessionID, turnID = r.PathValue(rt.ids[0]), r.PathValue(rt.ids[1])
	if !protocol.IsSafeID(sessionID) || !protocol.IsSafeID(turnID) {
		sc.SetRoute("none")
		httpedge.NotFound(w, r)
		return "", "", false
	}
	sc.SetRoute(rt.name)
	sc.SetHTTPRoute(r.Pattern)
	sc.SetResume()
	sc.SetSession(sessionID, turnID)
	return sessionID, turnID, true
}

// route serves r by h.mux. A path that is not in canonical form (empty,
// relative, with a "." or ".." segment, an empty segment or a trailing
// slash, after percent-decoding) is 404 REQUEST_NOT_FOUND: no route has
// such a path, and ServeMux would otherwise redirect it to its cleaned
// form.
func (h *Handler) route(w http.ResponseWriter, r *http.Request) {
	if p := r.URL.Path; p == "" || p[0] != '/' || path.Clean(p) != p {
		telemetry.ScopeFrom(r.Context()).SetRoute("none")
		httpedge.NotFound(w, r)
		return
	}
	h.mux.ServeHTTP(w, r)
}
