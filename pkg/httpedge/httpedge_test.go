package httpedge_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/httpedge"
	"github.com/turnstream/turnstream/pkg/protocol"
)

func TestIsJSONMediaType(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]bool{
		"application/json":                     true,
		"application/json; charset=utf-8":      true,
		"application/json;charset=UTF-8":       true,
		"APPLICATION/JSON":                     true,
		"Application/Json; Charset=utf-8":      true,
		"application/json ; charset=utf-8":     true,
		"":                                     false,
		"application/json-patch+json":          false,
		"application/jsonl":                    false,
		"application/json5":                    false,
		"application/problem+json":             false,
		"text/json":                            false,
		"text/plain":                           false,
		"application/json; charset":            false, // a parameter without a value
		"application/json, text/plain":         false,
		"application/":                         false,
		"json":                                 false,
		"application/json; charset=\"utf-8":    false, // unterminated quoted value
		"application/json; charset=\"utf-8\"":  true,  // quoted, RFC 2045
		"application/json; charset=Utf-8":      true,
		"application/json; foo=bar":            true, // no charset: UTF-8
		"application/json; charset=utf-16":     false,
		"application/json; charset=UTF-16LE":   false,
		"application/json; charset=iso-8859-1": false,
		"application/json; charset=utf8":       false, // not the registered name
		"application/json; charset=\"\"":       false,
		"application/json; charset=us-ascii":   false,
	} {
		if got := httpedge.IsJSONMediaType(v); got != want {
			t.Errorf("IsJSONMediaType(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestRequireMethod(t *testing.T) {
	t.Parallel()
	w := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodDelete, "/", nil)
	err := httpedge.RequireMethod(w, r, http.MethodGet, http.MethodPut)
	if !errors.Is(err, httpedge.ErrMethodNotAllowed) {
		t.Fatalf("err %v", err)
	}
	httpedge.Error(w, r, err)
	if got := w.Header().Get("Allow"); got != "GET, PUT" {
		t.Errorf("Allow %q", got)
	}
	if w.Code != 405 || !strings.Contains(w.Body.String(), `"message":"Only GET and PUT are supported."`) {
		t.Errorf("%d %s", w.Code, w.Body)
	}
	if err := httpedge.RequireMethod(httptest.NewRecorder(), httptest.NewRequest(http.MethodPut, "/", nil), http.MethodGet, http.MethodPut); err != nil {
		t.Errorf("PUT refused: %v", err)
	}
	w = httptest.NewRecorder()
	httpedge.MethodNotAllowed(w, r, http.MethodPost)
	if w.Code != 405 || w.Header().Get("Allow") != "POST" || !strings.Contains(w.Body.String(), `"message":"Only POST is supported."`) {
		t.Errorf("MethodNotAllowed: %d %v %s", w.Code, w.Header(), w.Body)
	}
}

// readTimeout is the error a net.Conn read returns once its read deadline
// has passed.
var readTimeout = &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}

// TestReadBody covers each way a body is refused, with a cap of 8 bytes.
func TestReadBody(t *testing.T) {
	t.Parallel()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	errInvalid := errors.New("the route's invalid body")
	cases := map[string]struct {
		body    io.Reader
		length  int64 // Content-Length; -1 unknown
		ctx     context.Context
		want    string
		wantErr error
	}{
		"within the cap":        {body: strings.NewReader("12345678"), length: 8, want: "12345678"},
		"empty":                 {body: http.NoBody, length: 0, want: ""},
		"absent":                {body: nil, length: 0, want: ""},
		"declared too large":    {body: strings.NewReader("123456789"), length: 9, wantErr: httpedge.ErrBodyTooLarge},
		"chunked too large":     {body: strings.NewReader("123456789"), length: -1, wantErr: httpedge.ErrBodyTooLarge},
		"unreadable":            {body: iotest.ErrReader(errors.New("illegal base64 data")), length: -1, wantErr: errInvalid},
		"unreadable, ctx ended": {body: iotest.ErrReader(errors.New("connection reset")), length: -1, ctx: cancelled, wantErr: context.Canceled},
		// A server's read deadline passed mid-body: net/http cancels the
		// request's context as it reports the read error, and the
		// timeout, not the cancellation, is what happened.
		"read deadline passed": {body: iotest.ErrReader(readTimeout), length: 4, ctx: cancelled, wantErr: httpedge.ErrBodyTimeout},
		"read deadline, live":  {body: io.MultiReader(strings.NewReader("{"), iotest.ErrReader(readTimeout)), length: -1, wantErr: httpedge.ErrBodyTimeout},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := tc.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			r := httptest.NewRequest(http.MethodPost, "/", nil)
			r.Body, r.ContentLength = nil, tc.length
			if tc.body != nil {
				r.Body = io.NopCloser(tc.body)
			}
			got, err := httpedge.ReadBody(ctx, httptest.NewRecorder(), r, 8, errInvalid)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("got %q, %v", got, err)
			}
		})
	}
}

// TestDiagnose checks the error table's order of rules and that no
// error's text reaches the diagnostic.
func TestDiagnose(t *testing.T) {
	t.Parallel()
	const secret = "table turnstream-prod in 123456789012"
	live := context.Background()
	timedOut, cancel := context.WithTimeout(context.Background(), 0)
	defer cancel()
	gone, cancelGone := context.WithCancel(context.Background())
	cancelGone()
	causeDeadline, cancelCause := context.WithCancelCause(context.Background())
	cancelCause(fmt.Errorf("the request deadline: %w", context.DeadlineExceeded))

	cases := map[string]struct {
		ctx  context.Context
		err  error
		code string
	}{
		"domain sentinel":          {live, fmt.Errorf("claim %s: %w", secret, chat.ErrSessionBusy), protocol.CodeSessionBusy},
		"auth sentinel":            {live, fmt.Errorf("%w: bad token", auth.ErrUnauthenticated), protocol.CodeRequestUnauthenticated},
		"request error":            {live, httpedge.ErrBodyTooLarge, protocol.CodeRequestTooLarge},
		"lease lost is a conflict": {live, chat.ErrLeaseLost, protocol.CodeSessionConflict},
		"table before context":     {gone, chat.ErrTurnNotFound, protocol.CodeTurnNotFound},
		"deadline passed":          {timedOut, errors.New(secret), protocol.CodeServerTimeout},
		"deadline as cause":        {causeDeadline, errors.New(secret), protocol.CodeServerTimeout},
		"client gone":              {gone, errors.New(secret), protocol.CodeRequestCancelled},
		"body read timed out":      {gone, fmt.Errorf("%w: %w", httpedge.ErrBodyTimeout, readTimeout), protocol.CodeServerTimeout},
		// Attempt timeouts of a hung dependency while the request has time
		// left: not the request's deadline.
		"wrapped deadline, live":   {live, fmt.Errorf("query: %w", context.DeadlineExceeded), protocol.CodeServerInternal},
		"wrapped cancel, live":     {live, fmt.Errorf("query: %w", context.Canceled), protocol.CodeServerInternal},
		"wrapped deadline, passed": {timedOut, fmt.Errorf("query: %w", context.DeadlineExceeded), protocol.CodeServerTimeout},
		"internal":                 {live, errors.New(secret), protocol.CodeServerInternal},
		"invalid request is a bug": {live, chat.ErrInvalidRequest, protocol.CodeServerInternal},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := httpedge.Diagnose(tc.ctx, tc.err)
			if d.Code != tc.code {
				t.Errorf("code %s, want %s", d.Code, tc.code)
			}
			if d != protocol.NewDiagnostic(tc.code) {
				t.Errorf("diagnostic %+v is not the code's fixed one", d)
			}
		})
	}
}

func TestWriteError(t *testing.T) {
	t.Parallel()
	for code, wantAuth := range map[string]string{
		protocol.CodeRequestUnauthenticated: "Bearer",
		protocol.CodeRequestForbidden:       "",
		protocol.CodeServerInternal:         "",
	} {
		w := httptest.NewRecorder()
		httpedge.WriteError(w, protocol.NewDiagnostic(code))
		if w.Code != protocol.HTTPStatus(code) {
			t.Errorf("%s: status %d", code, w.Code)
		}
		if got := w.Header().Get("WWW-Authenticate"); got != wantAuth {
			t.Errorf("%s: WWW-Authenticate %q", code, got)
		}
		for k, v := range map[string]string{"Content-Type": "application/json; charset=utf-8", "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"} {
			if got := w.Header().Get(k); got != v {
				t.Errorf("%s: %s %q", code, k, got)
			}
		}
		if want := string(protocol.EncodeErrorBody(protocol.NewDiagnostic(code))); w.Body.String() != want {
			t.Errorf("%s: body %s, want %s", code, w.Body, want)
		}
	}
}

func TestNotFound(t *testing.T) {
	t.Parallel()
	w := httptest.NewRecorder()
	httpedge.NotFound(w, httptest.NewRequest(http.MethodGet, "/nope?secret=1", nil))
	if w.Code != 404 || w.Body.String() != string(protocol.EncodeErrorBody(protocol.NewDiagnostic(protocol.CodeRequestNotFound))) {
		t.Errorf("%d %s", w.Code, w.Body)
	}
	if strings.Contains(w.Body.String(), "secret") || strings.Contains(w.Body.String(), "nope") {
		t.Error("the path is echoed")
	}
}

func TestBodyLimit(t *testing.T) {
	t.Parallel()
	if n, err := httpedge.BodyLimit("MaxBodyBytes", 0); err != nil || n != httpedge.DefaultMaxBodyBytes {
		t.Errorf("0: %d, %v", n, err)
	}
	if n, err := httpedge.BodyLimit("MaxBodyBytes", 7); err != nil || n != 7 {
		t.Errorf("7: %d, %v", n, err)
	}
	if _, err := httpedge.BodyLimit("MaxBodyBytes", -1); err == nil || !strings.Contains(err.Error(), "MaxBodyBytes") {
		t.Errorf("-1: %v", err)
	}
}

func TestLoggerNilDiscards(t *testing.T) {
	t.Parallel()
	if l := httpedge.Logger(nil); l == nil || l.Handler().Enabled(context.Background(), 12) {
		t.Error("a nil Logger does not discard")
	}
}

// flushRecorder is an http.ResponseWriter that is also an http.Flusher.
type flushRecorder struct {
	*httptest.ResponseRecorder
	flushes int
}

func (f *flushRecorder) Flush() { f.flushes++ }

func TestRecorder(t *testing.T) {
	t.Parallel()
	under := &flushRecorder{ResponseRecorder: httptest.NewRecorder()}
	rec := &httpedge.Recorder{ResponseWriter: under}
	_, _ = rec.Write([]byte("abc"))
	rec.WriteHeader(http.StatusTeapot) // too late: the first status stays
	_, _ = rec.Write([]byte("de"))
	rec.Flush()
	if rec.Status != http.StatusOK || rec.Bytes != 5 || under.flushes != 1 {
		t.Errorf("status %d, bytes %d, flushes %d", rec.Status, rec.Bytes, under.flushes)
	}
	if http.NewResponseController(rec).Flush() != nil {
		t.Error("ResponseController cannot reach the writer")
	}
	(&httpedge.Recorder{ResponseWriter: httptest.NewRecorder()}).Flush() // no Flusher: a no-op
}

func TestSafeMethod(t *testing.T) {
	for m, want := range map[string]string{"GET": "GET", "POST": "POST", "BREW": "other", "get": "other", "": "other"} {
		if got := httpedge.SafeMethod(m); got != want {
			t.Errorf("SafeMethod(%q) = %q, want %q", m, got, want)
		}
	}
}

// TestQuotaErrors: a quota refusal is 429 QUOTA_EXCEEDED (retryable) with
// Retry-After in whole seconds, rounded up, at least 1, and the quota's
// name; an unavailable check 503 QUOTA_UNAVAILABLE with Retry-After 1;
// the body is the protocol's, nothing of the error's text.
func TestQuotaErrors(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		err                      error
		status                   int
		code, retryAfter, naming string
	}{
		"rate":        {&chat.QuotaError{Scope: chat.ScopePrincipal, Name: chat.QuotaTurnsPerMinute, Limit: 3, RetryAfter: 41200 * time.Millisecond}, 429, protocol.CodeQuotaExceeded, "42", "principal.turnsPerMinute"},
		"under 1 s":   {&chat.QuotaError{Scope: chat.ScopeTenant, Name: chat.QuotaConcurrentSessions, RetryAfter: time.Millisecond}, 429, protocol.CodeQuotaExceeded, "1", "tenant.concurrentSessions"},
		"wrapped":     {fmt.Errorf("check: %w", &chat.QuotaError{Scope: chat.ScopePrincipal, Name: chat.QuotaTokensPerDay, RetryAfter: 2 * time.Hour}), 429, protocol.CodeQuotaExceeded, "7200", "principal.tokensPerDay"},
		"unavailable": {fmt.Errorf("read: %w", chat.ErrQuotaUnavailable), 503, protocol.CodeQuotaUnavailable, "1", ""},
		"another":     {chat.ErrSessionBusy, 409, protocol.CodeSessionBusy, "", ""},
	} {
		t.Run(name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			httpedge.Error(rec, httptest.NewRequest(http.MethodPost, "/", nil), tc.err)
			d := protocol.NewDiagnostic(tc.code)
			if rec.Code != tc.status || rec.Body.String() != string(protocol.EncodeErrorBody(d)) {
				t.Errorf("%d %s, want %d %s", rec.Code, rec.Body, tc.status, protocol.EncodeErrorBody(d))
			}
			if got := rec.Header().Get("Retry-After"); got != tc.retryAfter {
				t.Errorf("Retry-After %q, want %q", got, tc.retryAfter)
			}
			if got := rec.Header().Get(api.QuotaHeader); got != tc.naming {
				t.Errorf("%s %q, want %q", api.QuotaHeader, got, tc.naming)
			}
			if tc.code != protocol.CodeSessionBusy && !d.Retryable {
				t.Errorf("%s not retryable", tc.code)
			}
		})
	}
}
