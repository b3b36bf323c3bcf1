package telemetry

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// Scope is the telemetry of one request, carried by its context
// (Measure): when it arrived, the chat.Meter its store requests are
// added to, and the ids the handler learns as it goes. A request that
// runs a turn takes the scope's turn (TakeTurn): the turn then reports
// itself (Recorder.Turn) and the request writes no document of its own.
// Safe for concurrent use.
type Scope struct {
	// Start is when the request reached the handler.
	Start time.Time
	// Meter accumulates the request's usage; the store's client adds its
	// requests and units to it (chat.WithMeter).
	Meter *chat.Meter

	mu       sync.Mutex
	props    Properties
	turn     bool
	resume   bool
	closed   bool
	feedback string
	pattern  string // the matched route's path template (SetHTTPRoute)
}

type scopeKey struct{}

// ScopeFrom returns the Scope ctx carries, or nil.
func ScopeFrom(ctx context.Context) *Scope {
	s, _ := ctx.Value(scopeKey{}).(*Scope)
	return s
}

// WithScope returns ctx carrying s and s.Meter.
func WithScope(ctx context.Context, s *Scope) context.Context {
	return chat.WithMeter(context.WithValue(ctx, scopeKey{}, s), s.Meter)
}

// TakeTurn reports whether the caller is the first to run a turn in this
// request, while the request is being served (true once per scope; false
// on a nil scope, and once the handler has returned: a turn that runs
// later with a context derived from the request's, a queued turn drained
// in the process, is not the request's). The taker reports the turn; the
// request then writes no document.
func (s *Scope) TakeTurn() bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.turn || s.closed {
		return false
	}
	s.turn = true
	return true
}

// close ends the request's scope and reports whether a turn took it.
func (s *Scope) close() (turned bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return s.turn
}

// SetRoute names the request's route (a fixed name, never a path).
func (s *Scope) SetRoute(route string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.props.Route = route
	s.mu.Unlock()
}

// SetHTTPRoute records the path template of the route that matched, as
// net/http's ServeMux gives it in Request.Pattern ("/sessions/{id}/turns",
// or "GET /sessions/{id}" with its method, which is dropped, as is the
// "{$}" of an exact path). Measure
// names the request's server span "<method> <template>" after it and sets
// http.route (OpenTelemetry's HTTP conventions: a template, never a path
// with ids). An empty pattern records nothing.
func (s *Scope) SetHTTPRoute(pattern string) {
	if s == nil || pattern == "" {
		return
	}
	if _, path, ok := strings.Cut(pattern, " "); ok {
		pattern = path
	}
	if i := strings.IndexByte(pattern, '/'); i > 0 {
		pattern = pattern[i:] // a host in the pattern
	}
	pattern = strings.TrimSuffix(pattern, "{$}") // "/{$}", ServeMux's "exactly /"
	s.mu.Lock()
	s.pattern = pattern
	s.mu.Unlock()
}

// SetResume marks the request as a resume (MetricResumeCount).
func (s *Scope) SetResume() {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.resume = true
	s.mu.Unlock()
}

// SetSession records the request's session and turn ids, validated
// SafeIds (others are ignored: a property never holds raw input).
func (s *Scope) SetSession(sessionID, turnID string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if protocol.IsSafeID(sessionID) {
		s.props.SessionID = sessionID
	}
	if protocol.IsSafeID(turnID) {
		s.props.TurnID = turnID
	}
}

// SetFeedback records the rating of an answer the request stored ("up"
// or "down"; anything else is ignored): the request's document then
// counts it (MetricFeedback).
func (s *Scope) SetFeedback(rating string) {
	if s == nil || rating != "up" && rating != "down" {
		return
	}
	s.mu.Lock()
	s.feedback = rating
	s.mu.Unlock()
}

// SetPrincipal records the authenticated caller.
func (s *Scope) SetPrincipal(p chat.Principal) {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.props.Tenant, s.props.Principal = p.Tenant, p.Subject
	s.mu.Unlock()
}

// Properties returns the ids recorded so far.
func (s *Scope) Properties() Properties {
	if s == nil {
		return Properties{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.props
}

// Measure returns h measured: each request gets a Scope (and the server
// span of t.Handler), and, unless it ran a turn, one Recorder.Request
// document when h returns: its outcome (OutcomeOK, or the code of its
// error answer), its time, its store usage, whether it was a resume and
// whether it was a submit refused for a busy session. With neither
// metrics (rec nil) nor tracing, h is returned as it is.
func Measure(rec *Recorder, t *Tracing, h http.Handler) http.Handler {
	if rec == nil && !t.Enabled() {
		return h
	}
	measured := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := &Scope{Start: time.Now(), Meter: &chat.Meter{}}
		ctx := WithScope(r.Context(), s)
		hw := &outcomeWriter{ResponseWriter: w}
		h.ServeHTTP(hw, r.WithContext(ctx))
		s.mu.Lock()
		route := s.pattern
		s.mu.Unlock()
		if span := trace.SpanFromContext(ctx); route != "" && span.IsRecording() {
			span.SetName(r.Method + " " + route)
			span.SetAttributes(attribute.String("http.route", route))
		}
		if s.close() || rec == nil {
			return
		}
		rep := RequestReport{
			Outcome:  OutcomeOK,
			Duration: time.Since(s.Start),
			Usage:    s.Meter.Usage(),
		}
		if hw.code != "" {
			rep.Outcome = hw.code
		}
		s.mu.Lock()
		rep.Resume, rep.Feedback = s.resume, s.feedback
		s.mu.Unlock()
		rep.LeaseConflict = hw.code == protocol.CodeSessionBusy || hw.code == protocol.CodeSessionConflict
		rep.Properties = s.Properties()
		rep.Properties.RequestID = RequestID(ctx)
		rep.Properties.TraceID = TraceID(ctx)
		rec.Request(rep)
	})
	return t.Handler(measured)
}

// outcomeWriter is the response writer Measure hands its handler: it
// passes every call on to the writer it wraps and keeps the code of the
// first error body written through it (NoteCode: pkg/httpedge's
// WriteError tells it to every writer of the chain that has the method),
// the request's outcome. It flushes when the wrapped writer can (the turn
// stream flushes each line) and unwraps for http.ResponseController.
type outcomeWriter struct {
	http.ResponseWriter
	code string
}

// NoteCode keeps the first error code written.
func (w *outcomeWriter) NoteCode(code string) {
	if w.code == "" {
		w.code = code
	}
}

// Flush passes a flush on when the wrapped writer is an http.Flusher.
func (w *outcomeWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the wrapped writer.
func (w *outcomeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// RequestID returns the Lambda request id of the invocation ctx belongs
// to, or "" outside Lambda.
func RequestID(ctx context.Context) string {
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		return lc.AwsRequestID
	}
	return ""
}

// TraceID returns the trace id of the span ctx carries, or "" when none
// is recorded.
func TraceID(ctx context.Context) string {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		return sc.TraceID().String()
	}
	return ""
}
