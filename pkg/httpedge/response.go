package httpedge

import (
	"net/http"
	"strings"

	"github.com/turnstream/turnstream/pkg/protocol"
)

// SetJSONHeaders sets on h the headers of every JSON response (error or not):
// Content-Type application/json; charset=utf-8, Cache-Control no-store and
// X-Content-Type-Options nosniff (docs/protocol.md#server-handler-behaviour).
func SetJSONHeaders(h http.Header) {
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
}

// WriteJSON writes body, an encoded JSON document, with status and the
// headers of SetJSONHeaders. A failed write is ignored: the client is gone
// and there is nobody left to tell.
func WriteJSON(w http.ResponseWriter, status int, body []byte) {
	SetJSONHeaders(w.Header())
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// WriteError writes d as the protocol's JSON error body
// {"error":{"version":1,"code","message","retryable"}} with the status of
// d's code (protocol.HTTPStatus). A 401 names the Bearer scheme
// (WWW-Authenticate, RFC 9110 §11.6.1); a 405 whose response already has
// an Allow header (RequireMethod) names those methods in its message, so
// the two never disagree.
func WriteError(w http.ResponseWriter, d protocol.Diagnostic) {
	h := w.Header()
	status := protocol.HTTPStatus(d.Code)
	switch status {
	case http.StatusUnauthorized:
		h.Set("WWW-Authenticate", "Bearer")
	case http.StatusMethodNotAllowed:
		if allow := h.Get("Allow"); allow != "" {
			d = protocol.MethodNotAllowed(strings.Split(allow, ", ")...)
		}
	}
	noteCode(w, d.Code)
	WriteJSON(w, status, protocol.EncodeErrorBody(d))
}

// noteCode tells every writer among w and the writers it wraps (Unwrap)
// that can take it (a NoteCode method: Recorder, and the measuring
// writer of telemetry.Measure) the code of the error body being written,
// so that a request's log line and metrics name its error code.
func noteCode(w http.ResponseWriter, code string) {
	for w != nil {
		if n, ok := w.(interface{ NoteCode(code string) }); ok {
			n.NoteCode(code)
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return
		}
		w = u.Unwrap()
	}
}

// Error answers r with the diagnostic of err (Diagnose with r's context)
// written by WriteError, with the headers RetryHeaders sets for err: the
// one way a handler turns an error into its response. Log err first when it is an internal failure; its text is not
// sent.
func Error(w http.ResponseWriter, r *http.Request, err error) {
	RetryHeaders(w.Header(), err)
	WriteError(w, Diagnose(r.Context(), err))
}

// NotFound answers any request with 404 REQUEST_NOT_FOUND as a JSON error
// body; it is an http.HandlerFunc for paths no route serves (the dev
// server's paths outside its mounts).
func NotFound(w http.ResponseWriter, _ *http.Request) {
	WriteError(w, protocol.NewDiagnostic(protocol.CodeRequestNotFound))
}

// MethodNotAllowed answers r with 405 REQUEST_METHOD_NOT_ALLOWED, its
// Allow header and message naming allowed.
func MethodNotAllowed(w http.ResponseWriter, r *http.Request, allowed ...string) {
	w.Header().Set("Allow", strings.Join(allowed, ", "))
	Error(w, r, ErrMethodNotAllowed)
}

// SafeMethod returns m when it is one of the standard HTTP methods and
// "other" otherwise, so that no arbitrary client token reaches a log.
func SafeMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "other"
}

// Recorder is an http.ResponseWriter that remembers the status written
// through it and counts the body bytes, for a request's log line. It
// passes Flush on when the writer it wraps can flush (the turn stream
// flushes each line) and unwraps for http.ResponseController (write
// deadlines).
type Recorder struct {
	http.ResponseWriter
	// Status is the first status written; 0 until a header or body byte
	// is written (a body write without WriteHeader records 200).
	Status int
	// Bytes counts the body bytes written.
	Bytes int64
	// Code is the code of the first error body WriteError wrote through
	// it (or a writer wrapping it); empty when none was.
	Code string
}

// WriteHeader records the first status and passes status on.
func (w *Recorder) WriteHeader(status int) {
	if w.Status == 0 {
		w.Status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

// Write records 200 when no status was written yet, counts the bytes
// written and passes b on.
func (w *Recorder) Write(b []byte) (int, error) {
	if w.Status == 0 {
		w.Status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.Bytes += int64(n)
	return n, err
}

// Flush sends buffered data to the client now, when the wrapped writer
// is an http.Flusher; otherwise it does nothing.
func (w *Recorder) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the wrapped writer.
func (w *Recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// NoteCode records code as Code unless a code was recorded before
// (WriteError calls it).
func (w *Recorder) NoteCode(code string) {
	if w.Code == "" {
		w.Code = code
	}
}
