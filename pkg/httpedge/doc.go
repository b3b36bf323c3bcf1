// Package httpedge is the HTTP edge that the turn handler (pkg/turn), the
// history and artifacts handlers (pkg/sessionapi) and the dev server share:
// the request checks that come before any domain work, the one table from
// errors to protocol diagnostics, and the one way an error response is
// written.
//
// Every handler checks a request in the same order
// (docs/protocol.md#server-handler-behaviour): the method (405
// REQUEST_METHOD_NOT_ALLOWED, see RequireMethod), the media type of a request
// with a body (415, see RequireJSON), the caller from the headers alone,
// before any body byte is read (401/403, pkg/auth), then the body under a hard
// cap (413, see ReadBody), then the route's own decoding (400). The media-type
// rule is strict: the Content-Type must parse with mime.ParseMediaType and
// name exactly application/json, in any case, with any valid parameters
// except a charset other than utf-8 (the body is read as UTF-8); a missing
// header, a malformed one, another charset and look-alikes such as
// application/json-patch+json are 415.
//
// Errors become diagnostics in one place, Diagnose: a table of the domain
// sentinels (pkg/chat, pkg/auth) and of this package's request errors
// (ErrNotFound, ErrBodyTooLarge, ...), then the state of the request's
// context. An error matching nothing is 500 SERVER_INTERNAL. WriteError
// writes a diagnostic as the protocol's JSON error body with its fixed
// message: neither request input nor an internal error's text ever
// reaches a client.
//
// Function URL bodies flagged isBase64Encoded reach the handlers decoded:
// lambdaurl (streaming) wraps the body in a base64 decoder, and
// pkg/sessionapi's buffered adapter decodes it before the handler runs, so
// the cap of ReadBody applies to decoded bytes and a body whose base64
// does not decode is an unreadable, hence invalid, body.
//
// Options shared by the handlers mean the same everywhere: a nil Logger
// discards logs (see Logger), a zero body cap is DefaultMaxBodyBytes and a
// negative one is a constructor error (see BodyLimit).
package httpedge
