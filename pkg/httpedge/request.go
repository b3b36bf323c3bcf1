package httpedge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"os"
	"strings"
)

// DefaultMaxBodyBytes is the request body cap of every handler whose
// options leave it zero: 65,536 bytes, the protocol's reference limit and
// MAX_BODY_BYTES's default (docs/protocol.md#server-handler-behaviour).
const DefaultMaxBodyBytes = 64 << 10

// RequireMethod returns nil when r's method is one of allowed; otherwise
// it sets the Allow header of w to the allowed methods ("GET, PUT") and
// returns ErrMethodNotAllowed, which WriteError answers with 405 naming
// them.
func RequireMethod(w http.ResponseWriter, r *http.Request, allowed ...string) error {
	for _, m := range allowed {
		if r.Method == m {
			return nil
		}
	}
	w.Header().Set("Allow", strings.Join(allowed, ", "))
	return ErrMethodNotAllowed
}

// RequireJSON returns ErrUnsupportedMediaType unless r's Content-Type is
// application/json with no charset or charset utf-8 (IsJSONMediaType). It
// reads the header only.
func RequireJSON(r *http.Request) error {
	if !IsJSONMediaType(r.Header.Get("Content-Type")) {
		return ErrUnsupportedMediaType
	}
	return nil
}

// IsJSONMediaType reports whether the Content-Type value v is the media
// type application/json in UTF-8: v must parse with mime.ParseMediaType
// (RFC 2045 syntax; type and subtype match in any case; valid parameters
// are allowed) and name exactly application/json, and a charset
// parameter, when present, must be utf-8 in any case (RFC 8259 §8.1: JSON
// exchanged between systems is UTF-8, and the body is read as UTF-8
// whatever the header says, so a body declared utf-16 or latin1 would be
// misread). An empty or malformed value, another charset, and other types
// whose name merely starts the same (application/json-patch+json,
// application/jsonl), are not.
func IsJSONMediaType(v string) bool {
	mt, params, err := mime.ParseMediaType(v)
	if err != nil || mt != "application/json" {
		return false
	}
	cs, ok := params["charset"]
	return !ok || strings.EqualFold(cs, "utf-8")
}

// ReadBody reads r's whole body, at most limit bytes, and returns it; an
// absent body reads as empty. A Content-Length over limit is
// ErrBodyTooLarge before any byte is read, and so is a body that passes
// limit while it is read (http.MaxBytesReader, which also tells a server
// to close the connection). A body that cannot be read (a broken
// connection, a function URL body whose base64 does not decode) is
// returned as invalid, the route's error for a body it cannot decode
// (ErrInvalidJSON or ErrInvalidBody), wrapping the read error for the log;
// a read that failed because the connection's read deadline passed is
// ErrBodyTimeout (408), whatever ctx says; otherwise, when ctx has ended
// meanwhile, the error wraps ctx's error instead, so Diagnose reports the
// timeout or cancellation.
func ReadBody(ctx context.Context, w http.ResponseWriter, r *http.Request, limit int64, invalid error) ([]byte, error) {
	if r.ContentLength > limit {
		return nil, ErrBodyTooLarge
	}
	if r.Body == nil {
		return nil, nil
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err == nil {
		return body, nil
	}
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return nil, ErrBodyTooLarge
	case errors.Is(err, os.ErrDeadlineExceeded): // a net.Conn's read deadline
		return nil, fmt.Errorf("%w: %w", ErrBodyTimeout, err)
	case ctx.Err() != nil:
		return nil, fmt.Errorf("read body: %w", ctx.Err())
	}
	return nil, fmt.Errorf("%w: read body: %w", invalid, err)
}

// BodyLimit returns the body cap of a handler option: DefaultMaxBodyBytes
// for 0, n for a positive n, and an error naming field for a negative n.
func BodyLimit(field string, n int64) (int64, error) {
	switch {
	case n < 0:
		return 0, fmt.Errorf("%s is negative", field)
	case n == 0:
		return DefaultMaxBodyBytes, nil
	}
	return n, nil
}

// Logger returns the logger of a handler option: l, or a logger that
// discards every record when l is nil. It is the one meaning of a nil
// Logger across turnstream's handlers.
func Logger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}
