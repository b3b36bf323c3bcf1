package sessionapi

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/httpedge"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/telemetry"
)

// pageQuery is the validated query of /turns and /messages.
type pageQuery struct {
	limit  int
	order  chat.Order
	cursor string
}

// parsePageQuery validates the query string of a page request
// (docs/design.md#history-and-artifacts-api):
//
//	limit   decimal digits only, 1..chat.MaxPageLimit; default chat.DefaultPageLimit
//	order   "asc" or "desc" (case-sensitive); default "desc"
//	cursor  opaque, passed to the store; absent or empty means the first page
//
// A repeated limit, order or cursor, an empty limit or order, or a query
// that is not valid URL encoding is httpedge.ErrInvalidQuery. Other parameters are
// ignored.
func parsePageQuery(raw string) (pageQuery, error) {
	q := pageQuery{limit: chat.DefaultPageLimit, order: chat.OrderDesc}
	values, err := url.ParseQuery(raw)
	if err != nil {
		return q, fmt.Errorf("%w: undecodable query", httpedge.ErrInvalidQuery)
	}
	for _, name := range []string{"limit", "order", "cursor"} {
		if len(values[name]) > 1 {
			return q, fmt.Errorf("%w: %s repeated", httpedge.ErrInvalidQuery, name)
		}
	}
	if vs, ok := values["limit"]; ok {
		n, ok := parseLimit(vs[0])
		if !ok {
			return q, fmt.Errorf("%w: limit", httpedge.ErrInvalidQuery)
		}
		q.limit = n
	}
	if vs, ok := values["order"]; ok {
		switch o := chat.Order(vs[0]); o {
		case chat.OrderAsc, chat.OrderDesc:
			q.order = o
		default:
			return q, fmt.Errorf("%w: order", httpedge.ErrInvalidQuery)
		}
	}
	if vs, ok := values["cursor"]; ok {
		q.cursor = vs[0]
	}
	return q, nil
}

// parseLimit accepts 1..chat.MaxPageLimit written as ASCII digits only (no
// sign, no exponent, no fraction, at most 3 digits).
func parseLimit(s string) (int, bool) {
	if s == "" || len(s) > 3 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > chat.MaxPageLimit {
		return 0, false
	}
	return n, true
}

// principal authenticates r (headers only, before any body byte is
// read) and records the principal for the request's telemetry.
func (s *server) principal(r *http.Request) (chat.Principal, error) {
	p, err := s.auth.Authenticate(r)
	telemetry.ScopeFrom(r.Context()).SetPrincipal(p)
	return p, err
}

// sessionCaller authenticates r and validates its {id} (sessionID): the
// caller and the session it names.
func (s *server) sessionCaller(r *http.Request, rc *requestContext) (chat.Principal, string, error) {
	p, err := s.principal(r)
	if err != nil {
		return p, "", err
	}
	id, err := sessionID(r, rc)
	return p, id, err
}

// sessionID returns the {id} path value when it is a SafeId and records it
// for the log; any other value is chat.ErrSessionNotFound (404), never echoed.
func sessionID(r *http.Request, rc *requestContext) (string, error) {
	id := r.PathValue("id")
	if !protocol.IsSafeID(id) {
		return "", chat.ErrSessionNotFound
	}
	rc.sessionID = id
	return id, nil
}

// turnID returns the {turnId} path value when it is a SafeId and records it
// for the log; any other value is chat.ErrTurnNotFound (404).
func turnID(r *http.Request, rc *requestContext) (string, error) {
	id := r.PathValue("turnId")
	if !protocol.IsSafeID(id) {
		return "", chat.ErrTurnNotFound
	}
	rc.turnID = id
	return id, nil
}
