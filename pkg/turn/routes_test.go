package turn_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/pkg/protocol"
)

// TestRoutePaths pins how the turn function's router (http.ServeMux
// method and path patterns) answers the edges of path matching: a method a
// route does not serve is the protocol's JSON 405 naming the route's
// methods, and a path no route serves (a trailing slash, an empty or dot
// segment, "//", an id that is not a SafeId, an encoded slash inside an
// id) is the JSON 404, never one of ServeMux's plain-text answers or its
// redirect to a cleaned path. Percent-encoded characters of a path are
// decoded before matching.
func TestRoutePaths(t *testing.T) {
	e := newEnv(t, newStoreMemory(), &scriptModel{}, nil)
	for name, tc := range map[string]struct {
		method, target string
		status         int
		code, allow    string
	}{
		"GET /":                       {http.MethodGet, "/", 405, protocol.CodeRequestMethodNotAllowed, "POST"},
		"PUT /stop":                   {http.MethodPut, "/stop", 405, protocol.CodeRequestMethodNotAllowed, "POST"},
		"POST /capabilities":          {http.MethodPost, "/capabilities", 405, protocol.CodeRequestMethodNotAllowed, "GET, HEAD"},
		"GET /agui":                   {http.MethodGet, "/agui", 405, protocol.CodeRequestMethodNotAllowed, "POST"},
		"POST resume":                 {http.MethodPost, "/sessions/s1/turns/t1/stream", 405, protocol.CodeRequestMethodNotAllowed, "GET"},
		"HEAD resume":                 {http.MethodHead, "/sessions/s1/turns/t1/stream", 405, protocol.CodeRequestMethodNotAllowed, "GET"},
		"DELETE agui run":             {http.MethodDelete, "/agui/threads/a1/runs/r1", 405, protocol.CodeRequestMethodNotAllowed, "GET"},
		"unknown path":                {http.MethodGet, "/nope", 404, protocol.CodeRequestNotFound, ""},
		"unknown path, POST":          {http.MethodPost, "/nope", 404, protocol.CodeRequestNotFound, ""},
		"trailing slash":              {http.MethodPost, "/stop/", 404, protocol.CodeRequestNotFound, ""},
		"double slash":                {http.MethodPost, "//stop", 404, protocol.CodeRequestNotFound, ""},
		"dot segment":                 {http.MethodGet, "/./capabilities", 404, protocol.CodeRequestNotFound, ""},
		"dot-dot segment":             {http.MethodGet, "/capabilities/..", 404, protocol.CodeRequestNotFound, ""},
		"resume, trailing slash":      {http.MethodGet, "/sessions/s1/turns/t1/stream/", 404, protocol.CodeRequestNotFound, ""},
		"resume, empty id":            {http.MethodGet, "/sessions//turns/t1/stream", 404, protocol.CodeRequestNotFound, ""},
		"resume, id not a SafeId":     {http.MethodGet, "/sessions/-s1/turns/t1/stream", 404, protocol.CodeRequestNotFound, ""},
		"resume, encoded slash":       {http.MethodGet, "/sessions/s%2F1/turns/t1/stream", 404, protocol.CodeRequestNotFound, ""},
		"resume, encoded slash, POST": {http.MethodPost, "/sessions/s%2F1/turns/t1/stream", 404, protocol.CodeRequestNotFound, ""},
		"agui run, encoded slash":     {http.MethodGet, "/agui/threads/a%2F1/runs/r1", 404, protocol.CodeRequestNotFound, ""},
		"resume, too short":           {http.MethodGet, "/sessions/s1/turns/t1", 404, protocol.CodeRequestNotFound, ""},
		// The stop route, reached through an encoded "o": its content
		// type check answers.
		"encoded letter": {http.MethodPost, "/st%6Fp", 415, protocol.CodeRequestUnsupportedMediaType, ""},
	} {
		t.Run(name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			e.h.ServeHTTP(rec, httptest.NewRequest(tc.method, "http://turn.example"+tc.target, nil))
			d := protocol.NewDiagnostic(tc.code)
			if tc.allow != "" {
				d = protocol.MethodNotAllowed(strings.Split(tc.allow, ", ")...)
			}
			want := string(protocol.EncodeErrorBody(d))
			if rec.Code != tc.status || rec.Body.String() != want || rec.Header().Get("Allow") != tc.allow ||
				rec.Header().Get("Content-Type") != "application/json; charset=utf-8" || rec.Header().Get("Location") != "" {
				t.Errorf("%s %s: %d %v %q; want %d %q, Allow %q", tc.method, tc.target, rec.Code, rec.Header(), rec.Body, tc.status, want, tc.allow)
			}
		})
	}
}
