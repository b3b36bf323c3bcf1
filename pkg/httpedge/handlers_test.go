package httpedge_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/model/echo"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/sessionapi"
	"github.com/turnstream/turnstream/pkg/store/memory"
	"github.com/turnstream/turnstream/pkg/turn"
)

// secretInput marks request input that must never be echoed.
const secretInput = "SECRET-INPUT-51c2"

// route is one body-taking route of a handler: the turn function's submit
// and the artifacts function's PUT, which share the edge's checks.
type route struct {
	h       http.Handler
	method  string
	path    string
	subject string // a dev-mode subject the route accepts
	valid   func(turnID string) string
	// invalidJSON is the code of a body that is not the JSON the route
	// takes (empty, unreadable, malformed).
	invalidJSON string
	ok          int
}

// edgeRoutes builds the turn and artifacts handlers on one in-memory store,
// both with a 512-byte body cap, and runs turn t0 of session s1 for alice
// so that the artifacts route has a turn to write to.
func edgeRoutes(t *testing.T) map[string]route {
	t.Helper()
	store := memory.New(memory.Options{})
	authn, err := auth.New(context.Background(), config.AuthConfig{Mode: config.AuthDev, TrustedSubject: "host"},
		auth.WithLookupEnv(func(string) (string, bool) { return "", false }))
	if err != nil {
		t.Fatal(err)
	}
	th, err := turn.NewHandler(turn.Options{
		Config: turn.Config{
			Store:        store,
			Model:        echo.New(0, 64),
			Definition:   turn.Definition{ID: "default", Revision: 1},
			MaxBodyBytes: 512,
		},
		Authenticator: authn,
	})
	if err != nil {
		t.Fatal(err)
	}
	ah, err := sessionapi.NewArtifactsHandler(sessionapi.Options{Store: store, Authenticator: authn, MaxBodyBytes: 512})
	if err != nil {
		t.Fatal(err)
	}
	submit := func(turnID string) string {
		b, err := protocol.EncodeEvent(&protocol.Event{
			EventID: "ev-" + turnID, SessionID: "s1", TurnID: turnID,
			EmittedAt: "2026-07-11T03:00:00.000Z", Kind: protocol.EventSubmit,
			Submit: &protocol.SubmitPayload{Input: secretInput},
		})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if w := serve(th, http.MethodPost, "/", "application/json", "alice", strings.NewReader(submit("t0"))); w.Code != http.StatusOK {
		t.Fatalf("seed turn: %d %s", w.Code, w.Body)
	}
	return map[string]route{
		"turn": {h: th, method: http.MethodPost, path: "/", subject: "alice", valid: submit,
			invalidJSON: protocol.CodeRequestInvalidJSON, ok: http.StatusOK},
		"artifacts": {h: ah, method: http.MethodPut, path: "/sessions/s1/turns/t0/artifacts", subject: "host",
			valid:       func(string) string { return `{"artifacts":[{"entryPath":"out/report.md","artifactType":"document"}]}` },
			invalidJSON: protocol.CodeRequestInvalidBody, ok: http.StatusOK},
	}
}

// serve sends one request to h; an empty contentType sends none, an empty
// subject no Authorization header, "!" a malformed one.
func serve(h http.Handler, method, path, contentType, subject string, body io.Reader) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, body)
	if body == nil {
		r.Body = http.NoBody
	}
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	switch subject {
	case "":
	case "!":
		r.Header.Set("Authorization", "Bearer not-a-dev-token")
	default:
		r.Header.Set("Authorization", auth.DevAuthorization(subject))
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestMediaTypeRule checks that both routes apply the one media-type rule
// (httpedge.IsJSONMediaType) before authentication.
func TestMediaTypeRule(t *testing.T) {
	t.Parallel()
	routes := edgeRoutes(t)
	cases := map[string]bool{
		"application/json":                true,
		"application/json; charset=utf-8": true,
		"Application/JSON; charset=UTF-8": true,
		"APPLICATION/JSON":                true,
		"":                                false, // missing
		"application/json-patch+json":     false,
		"application/jsonl":               false,
		"text/json":                       false,
		"text/plain":                      false,
		"application/json; charset":       false,
	}
	n := 0
	for name, rt := range routes {
		for ct, accepted := range cases {
			t.Run(name+"/"+ct, func(t *testing.T) {
				n++
				turnID := fmt.Sprintf("t%d", n)
				w := serve(rt.h, rt.method, rt.path, ct, "!", strings.NewReader(rt.valid(turnID)))
				// A malformed credential: an accepted media type reaches
				// authentication (401), a refused one stops before it.
				if accepted {
					wantError(t, w, http.StatusUnauthorized, protocol.CodeRequestUnauthenticated)
					w = serve(rt.h, rt.method, rt.path, ct, rt.subject, strings.NewReader(rt.valid(turnID)))
					if w.Code != rt.ok {
						t.Fatalf("accepted type: %d %s", w.Code, w.Body)
					}
					return
				}
				wantError(t, w, http.StatusUnsupportedMediaType, protocol.CodeRequestUnsupportedMediaType)
			})
		}
	}
}

// TestBadInputBothRoutes sends every kind of bad input through both routes
// and checks the status, the code, the headers of the edge's writer and
// that nothing of the input is echoed.
func TestBadInputBothRoutes(t *testing.T) {
	t.Parallel()
	routes := edgeRoutes(t)
	big := `{"x":"` + strings.Repeat(secretInput, 40) + `"}`
	cases := map[string]struct {
		method      string // "" is the route's
		contentType string // "-" none; "" application/json
		subject     string // "" the route's subject; "-" none; "!" malformed
		body        func(rt route) io.Reader
		status      int
		code        func(rt route) string
	}{
		"wrong method": {method: http.MethodDelete, status: 405, code: fixed(protocol.CodeRequestMethodNotAllowed)},
		"no content type, unauthenticated": {contentType: "-", subject: "!", status: 415,
			code: fixed(protocol.CodeRequestUnsupportedMediaType)},
		"malformed credential": {subject: "!", status: 401, code: fixed(protocol.CodeRequestUnauthenticated)},
		"unauthenticated before the cap": {subject: "!", body: func(route) io.Reader { return strings.NewReader(big) },
			status: 401, code: fixed(protocol.CodeRequestUnauthenticated)},
		"declared too large": {body: func(route) io.Reader { return strings.NewReader(big) },
			status: 413, code: fixed(protocol.CodeRequestTooLarge)},
		// Not a strings.Reader: httptest leaves the length unknown, so the
		// cap is met while reading.
		"chunked too large": {body: func(route) io.Reader { return io.MultiReader(strings.NewReader(big[:10]), strings.NewReader(big[10:])) },
			status: 413, code: fixed(protocol.CodeRequestTooLarge)},
		"empty body": {body: func(route) io.Reader { return bytes.NewReader(nil) },
			status: 400, code: func(rt route) string { return rt.invalidJSON }},
		"not JSON": {body: func(route) io.Reader { return strings.NewReader(`{"input":"` + secretInput) },
			status: 400, code: func(rt route) string { return rt.invalidJSON }},
		"unreadable body": {body: func(route) io.Reader {
			return io.MultiReader(strings.NewReader(`{"`), iotest.ErrReader(io.ErrUnexpectedEOF))
		}, status: 400, code: func(rt route) string { return rt.invalidJSON }},
	}
	for name, rt := range routes {
		for cname, tc := range cases {
			t.Run(name+"/"+cname, func(t *testing.T) {
				method := tc.method
				if method == "" {
					method = rt.method
				}
				ct := tc.contentType
				switch ct {
				case "":
					ct = "application/json"
				case "-":
					ct = ""
				}
				subject := tc.subject
				switch subject {
				case "":
					subject = rt.subject
				case "-":
					subject = ""
				}
				var body io.Reader = strings.NewReader(rt.valid("t9"))
				if tc.body != nil {
					body = tc.body(rt)
				}
				w := serve(rt.h, method, rt.path, ct, subject, body)
				wantError(t, w, tc.status, tc.code(rt))
			})
		}
	}
}

func fixed(code string) func(route) string { return func(route) string { return code } }

// wantError checks an error response of the edge's writer.
func wantError(t *testing.T, w *httptest.ResponseRecorder, status int, code string) {
	t.Helper()
	if w.Code != status {
		t.Fatalf("status %d, want %d: %s", w.Code, status, w.Body)
	}
	want := protocol.NewDiagnostic(code)
	if code == protocol.CodeRequestMethodNotAllowed {
		want = protocol.MethodNotAllowed(strings.Split(w.Header().Get("Allow"), ", ")...)
	}
	if got := w.Body.String(); got != string(protocol.EncodeErrorBody(want)) {
		t.Errorf("body %s, want %s", got, protocol.EncodeErrorBody(want))
	}
	if got := w.Header().Get("Content-Type"); got != "application/json; charset=utf-8" {
		t.Errorf("content type %q", got)
	}
	if got := w.Header().Get("Cache-Control"); got != "no-store" {
		t.Errorf("cache control %q", got)
	}
	if strings.Contains(w.Body.String(), secretInput) {
		t.Errorf("input echoed: %s", w.Body)
	}
	if status == http.StatusMethodNotAllowed && w.Header().Get("Allow") == "" {
		t.Error("405 without Allow")
	}
}

// TestCharsetRule checks that every route that reads a JSON body (turn
// submit, stop, AG-UI run, artifacts PUT) refuses a charset other than
// utf-8 with 415 before authentication, and lets utf-8 (any case) or no
// charset through to authentication.
func TestCharsetRule(t *testing.T) {
	t.Parallel()
	routes := edgeRoutes(t)
	turnHandler := routes["turn"].h
	targets := map[string]struct {
		h            http.Handler
		method, path string
	}{
		"submit":    {turnHandler, http.MethodPost, "/"},
		"stop":      {turnHandler, http.MethodPost, "/stop"},
		"agui":      {turnHandler, http.MethodPost, turn.AGUIPath},
		"artifacts": {routes["artifacts"].h, http.MethodPut, "/sessions/s1/turns/t0/artifacts"},
	}
	cases := map[string]bool{
		"application/json":                        true,
		"application/json; charset=utf-8":         true,
		"application/json; charset=UTF-8":         true,
		"application/json; charset=\"utf-8\"":     true,
		"application/json; charset=utf-16":        false,
		"application/json; charset=UTF-16BE":      false,
		"application/json; charset=iso-8859-1":    false,
		"application/json; charset=windows-1252":  false,
		"application/json; charset=utf-8; q=x":    true,
		"Application/JSON; Charset=\"UTF-32\"":    false,
		"application/json; charset=utf8":          false,
		"application/json; charset=\"\"":          false,
		"application/json; charset=ascii; x=utf8": false,
	}
	for name, tg := range targets {
		for ct, accepted := range cases {
			t.Run(name+"/"+ct, func(t *testing.T) {
				// A malformed credential: an accepted media type reaches
				// authentication (401), a refused one stops before it.
				w := serve(tg.h, tg.method, tg.path, ct, "!", strings.NewReader(`{}`))
				if accepted {
					wantError(t, w, http.StatusUnauthorized, protocol.CodeRequestUnauthenticated)
					return
				}
				wantError(t, w, http.StatusUnsupportedMediaType, protocol.CodeRequestUnsupportedMediaType)
			})
		}
	}
}
