package turn_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/httpedge"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/turn"
)

// secret marks request input that must never be echoed.
const secret = "SECRET-INPUT-7f3a"

// envelope builds a turn event JSON text with the given overrides of the
// base submit fields; a nil value deletes the key.
func envelope(tb testing.TB, over map[string]any) string {
	tb.Helper()
	base := map[string]any{
		"protocol": protocol.TurnProtocol, "version": 1, "eventId": "ev-1", "sessionId": "s", "turnId": "t1",
		"sequence": 0, "emittedAt": "2026-07-11T03:00:00.000Z", "event": protocol.EventSubmit,
		"payload": map[string]any{"input": secret},
	}
	for k, v := range over {
		if v == nil {
			delete(base, k)
		} else {
			base[k] = v
		}
	}
	b, err := json.Marshal(base)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

func TestRequestRejections(t *testing.T) {
	valid := envelope(t, nil)
	quoted, _ := json.Marshal(valid)
	for name, tc := range map[string]struct {
		method, path, contentType string
		body                      io.Reader // nil: strings.NewReader(bodyText)
		bodyText                  string
		header                    map[string]string
		status                    int
		code                      string
	}{
		"GET on submit":              {method: http.MethodGet, path: "/", status: 405, code: protocol.CodeRequestMethodNotAllowed},
		"PUT on submit":              {method: http.MethodPut, path: "/", contentType: "application/json", bodyText: valid, status: 405, code: protocol.CodeRequestMethodNotAllowed},
		"GET on stop":                {method: http.MethodGet, path: "/stop", status: 405, code: protocol.CodeRequestMethodNotAllowed},
		"POST on capabilities":       {method: http.MethodPost, path: "/capabilities", contentType: "application/json", bodyText: "{}", status: 405, code: protocol.CodeRequestMethodNotAllowed},
		"unknown route":              {method: http.MethodPost, path: "/nope", contentType: "application/json", bodyText: valid, status: 404, code: protocol.CodeRequestNotFound},
		"text/plain":                 {contentType: "text/plain", bodyText: valid, status: 415, code: protocol.CodeRequestUnsupportedMediaType},
		"no content type":            {bodyText: valid, status: 415, code: protocol.CodeRequestUnsupportedMediaType},
		"json lookalike":             {contentType: "text/json", bodyText: valid, status: 415, code: protocol.CodeRequestUnsupportedMediaType},
		"unauthenticated":            {contentType: "application/json", bodyText: valid, header: map[string]string{"X-Test-Subject": "nobody"}, status: 401, code: protocol.CodeRequestUnauthenticated},
		"forbidden":                  {contentType: "application/json", bodyText: valid, header: map[string]string{"X-Test-Subject": "banned"}, status: 403, code: protocol.CodeRequestForbidden},
		"declared too large":         {contentType: "application/json", bodyText: envelope(t, map[string]any{"payload": map[string]any{"input": strings.Repeat(secret, 40)}}), status: 413, code: protocol.CodeRequestTooLarge},
		"chunked too large":          {contentType: "application/json", body: io.MultiReader(strings.NewReader(`{"x":"`), strings.NewReader(strings.Repeat(secret, 40)), strings.NewReader(`"}`)), status: 413, code: protocol.CodeRequestTooLarge},
		"empty body":                 {contentType: "application/json", status: 400, code: protocol.CodeRequestInvalidJSON},
		"blank body":                 {contentType: "application/json", bodyText: " \n\t", status: 400, code: protocol.CodeRequestInvalidJSON},
		"invalid json":               {contentType: "application/json", bodyText: `{"input":"` + secret, status: 400, code: protocol.CodeRequestInvalidJSON},
		"trailing garbage":           {contentType: "application/json", bodyText: valid + "x", status: 400, code: protocol.CodeRequestInvalidJSON},
		"double-encoded string":      {contentType: "application/json", bodyText: string(quoted), status: 400, code: protocol.CodeRequestInvalidEvent},
		"null":                       {contentType: "application/json", bodyText: "null", status: 400, code: protocol.CodeRequestInvalidEvent},
		"array":                      {contentType: "application/json", bodyText: "[" + valid + "]", status: 400, code: protocol.CodeRequestInvalidEvent},
		"unsupported version":        {contentType: "application/json", bodyText: envelope(t, map[string]any{"version": 2}), status: 400, code: protocol.CodeRequestInvalidEvent},
		"unknown event":              {contentType: "application/json", bodyText: envelope(t, map[string]any{"event": "server.turn.future"}), status: 400, code: protocol.CodeRequestInvalidEvent},
		"invalid payload":            {contentType: "application/json", bodyText: envelope(t, map[string]any{"payload": map[string]any{"input": 7}}), status: 400, code: protocol.CodeRequestInvalidEvent},
		"blank input":                {contentType: "application/json", bodyText: envelope(t, map[string]any{"payload": map[string]any{"input": " \u00a0\u2028\t"}}), status: 400, code: protocol.CodeRequestInvalidEvent},
		"missing session":            {contentType: "application/json", bodyText: envelope(t, map[string]any{"sessionId": nil}), status: 400, code: protocol.CodeRequestInvalidEvent},
		"unsafe turn id":             {contentType: "application/json", bodyText: envelope(t, map[string]any{"turnId": "../t"}), status: 400, code: protocol.CodeRequestInvalidEvent},
		"key case":                   {contentType: "application/json", bodyText: strings.Replace(valid, `"version"`, `"Version"`, 1), status: 400, code: protocol.CodeRequestInvalidEvent},
		"duplicate key":              {contentType: "application/json", bodyText: strings.Replace(valid, `"input":`, `"input":"a","input":`, 1), status: 400, code: protocol.CodeRequestInvalidEvent},
		"lone surrogate":             {contentType: "application/json", bodyText: strings.Replace(valid, secret, `\ud800`+secret, 1), status: 400, code: protocol.CodeRequestInvalidEvent},
		"snapshot event":             {contentType: "application/json", bodyText: `{"protocol":"agentskit.chat.turn","version":1,"eventId":"e","sessionId":"s","turnId":"t","sequence":1,"emittedAt":"2026-07-11T03:00:00.000Z","event":"server.turn.snapshot","payload":{"status":"idle","usage":{"promptTokens":0,"completionTokens":0,"totalTokens":0},"messages":[]}}`, status: 400, code: protocol.CodeRequestInvalidEvent},
		"diagnostic event":           {contentType: "application/json", bodyText: `{"protocol":"agentskit.chat.turn","version":1,"eventId":"e","sessionId":"s","turnId":"t","sequence":1,"emittedAt":"2026-07-11T03:00:00.000Z","event":"server.turn.diagnostic","payload":{"version":1,"code":"X","message":"m","retryable":false}}`, status: 400, code: protocol.CodeRequestInvalidEvent},
		"submit lineage with ids":    {contentType: "application/json", bodyText: envelope(t, map[string]any{"payload": map[string]any{"input": secret, "lineage": map[string]any{"operation": "edit"}}}), status: 400, code: protocol.CodeRequestInvalidEvent},
		"Event beside event":         {contentType: "application/json", bodyText: envelope(t, map[string]any{"Event": protocol.EventSnapshot}), status: 400, code: protocol.CodeRequestInvalidEvent},
		"SESSIONID beside key":       {contentType: "application/json", bodyText: envelope(t, map[string]any{"SESSIONID": "other"}), status: 400, code: protocol.CodeRequestInvalidEvent},
		"INPUT beside input":         {contentType: "application/json", bodyText: envelope(t, map[string]any{"payload": map[string]any{"input": secret, "INPUT": " "}}), status: 400, code: protocol.CodeRequestInvalidEvent},
		"Input only":                 {contentType: "application/json", bodyText: envelope(t, map[string]any{"payload": map[string]any{"Input": secret}}), status: 400, code: protocol.CodeRequestInvalidEvent},
		"lineage key variant":        {contentType: "application/json", bodyText: envelope(t, map[string]any{"payload": map[string]any{"input": secret, "lineage": map[string]any{"operation": "retry", "parentTurnId": "t0", "sourceMessageId": "m0", "ParentTurnId": "t9"}}}), status: 400, code: protocol.CodeRequestInvalidEvent},
		"invalid scope header":       {contentType: "application/json", bodyText: valid, header: map[string]string{api.SnapshotScopeHeader: "everything"}, status: 400, code: protocol.CodeRequestInvalidHeader},
		"unauthenticated before 413": {contentType: "application/json", bodyText: strings.Repeat("x", 600), header: map[string]string{"X-Test-Subject": "nobody"}, status: 401, code: protocol.CodeRequestUnauthenticated},
	} {
		t.Run(name, func(t *testing.T) {
			m := &scriptModel{Chunks: []string{"x"}}
			e := newEnv(t, newStoreMemory(), m, func(o *turn.Options) { o.MaxBodyBytes = 512 })
			method, path := tc.method, tc.path
			if method == "" {
				method = http.MethodPost
			}
			if path == "" {
				path = "/"
			}
			body := tc.body
			if body == nil {
				body = strings.NewReader(tc.bodyText)
			}
			req, err := http.NewRequest(method, e.srv.URL+path, body)
			if err != nil {
				t.Fatal(err)
			}
			if tc.contentType != "" {
				req.Header.Set("Content-Type", tc.contentType)
			}
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			resp, err := e.srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			r := readResult(t, resp)
			r.want(t, tc.status, tc.code)
			if got := r.header.Get("Content-Type"); got != "application/json; charset=utf-8" {
				t.Errorf("content type %q", got)
			}
			if got := r.header.Get("Cache-Control"); got != "no-store" {
				t.Errorf("cache control %q", got)
			}
			if got, wantAuth := r.header.Get("WWW-Authenticate"), map[bool]string{true: "Bearer"}[tc.status == 401]; got != wantAuth {
				t.Errorf("WWW-Authenticate %q, want %q", got, wantAuth)
			}
			want := protocol.NewDiagnostic(tc.code)
			if r.errD.Message != want.Message && tc.path != "/capabilities" {
				t.Errorf("message %q, want the fixed %q", r.errD.Message, want.Message)
			}
			if r.errD.Version != 1 || r.errD.Retryable {
				t.Errorf("diagnostic %+v", r.errD)
			}
			if strings.Contains(string(r.raw), secret) || strings.Contains(e.logs.String(), secret) {
				t.Error("request input echoed")
			}
			if m.Calls() != 0 {
				t.Error("the model was called")
			}
			if _, err := e.store.GetSession(context.Background(), "s", alice); !errors.Is(err, chat.ErrSessionNotFound) {
				t.Errorf("GetSession after a rejected request = %v; want nothing written", err)
			}
		})
	}
}

// tripwireBody fails the test when read.
type tripwireBody struct{ t *testing.T }

func (b tripwireBody) Read([]byte) (int, error) {
	b.t.Error("the body was read before authentication succeeded")
	return 0, io.EOF
}

func (b tripwireBody) Close() error { return nil }

func TestAuthenticationPrecedesBody(t *testing.T) {
	for _, path := range []string{"/", "/stop"} {
		for subject, status := range map[string]int{"nobody": 401, "banned": 403} {
			t.Run(path+" "+subject, func(t *testing.T) {
				e := newEnv(t, newStoreMemory(), &scriptModel{}, nil)
				req := httptest.NewRequest(http.MethodPost, path, nil)
				req.Body = tripwireBody{t}
				req.ContentLength = -1
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("X-Test-Subject", subject)
				rec := httptest.NewRecorder()
				e.h.ServeHTTP(rec, req)
				if rec.Code != status {
					t.Fatalf("status %d, want %d", rec.Code, status)
				}
				if e.auth.calls.Load() != 1 {
					t.Fatalf("authenticator called %d times", e.auth.calls.Load())
				}
			})
		}
	}
}

func TestContentTypeVariantsAccepted(t *testing.T) {
	for _, ct := range []string{"application/json", "Application/JSON; charset=UTF-8", "application/json;charset=utf-8"} {
		t.Run(ct, func(t *testing.T) {
			e := newEnv(t, newStoreMemory(), &scriptModel{Chunks: []string{"ok"}}, nil)
			resp := e.post(t, context.Background(), "/", submitBody(t, "s", "t1", "hi", nil), map[string]string{"Content-Type": ct})
			readResult(t, resp).want(t, http.StatusOK, "")
		})
	}
}

func TestCapabilities(t *testing.T) {
	e := newEnv(t, newStoreMemory(), &scriptModel{}, nil)
	req := httptest.NewRequest(http.MethodGet, "/capabilities", nil)
	req.Header.Set("X-Test-Subject", "nobody") // no authentication needed
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json; charset=utf-8" {
		t.Fatalf("%d %v", rec.Code, rec.Header())
	}
	var c api.Capabilities
	if err := json.Unmarshal(rec.Body.Bytes(), &c); err != nil {
		t.Fatal(err)
	}
	if len(c.Protocols) != 1 || c.Protocols[0].Protocol != protocol.TurnProtocol || len(c.Protocols[0].Versions) != 1 || c.Protocols[0].Versions[0] != 1 {
		t.Errorf("protocols %+v", c.Protocols)
	}
	if got := strings.Join(c.Extensions, ","); got != "snapshotScope,stop,lineage,artifacts,history,approvals,compact,agui,budgets" {
		t.Errorf("extensions %s", got)
	}
	if c.Approvals.Field != "confirmation" || strings.Join(c.Approvals.Decisions, ",") != "approve,deny" ||
		c.Approvals.ConfirmationTTLMs != chat.DefaultConfirmationTTL.Milliseconds() {
		t.Errorf("approvals %+v", c.Approvals)
	}
	if c.SnapshotScope.Header != api.SnapshotScopeHeader || c.Limits.MaxBodyBytes != httpedge.DefaultMaxBodyBytes || c.Limits.SnapshotIntervalMs != 1 {
		t.Errorf("capabilities %+v", c)
	}
	if c.Compact.Header != api.StreamModeHeader || c.Compact.Event != protocol.EventAppend || c.Compact.Default != api.StreamModeSnapshots ||
		c.Compact.LineSpanMs != turn.DefaultCompactLineSpan.Milliseconds() {
		t.Errorf("compact %+v", c.Compact)
	}
	if !c.AGUI.Available || c.AGUI.Path != turn.AGUIPath || c.AGUI.Version != "1.0" || c.AGUI.Resume.Available {
		t.Errorf("agui %+v (no checkpoints: no resume)", c.AGUI)
	}
	if e.auth.calls.Load() != 0 {
		t.Error("capabilities authenticated")
	}
}

func TestNewHandlerOptions(t *testing.T) {
	good := func() turn.Options {
		return turn.Options{
			Config: turn.Config{
				Store:      newStoreMemory(),
				Model:      &scriptModel{},
				Definition: turn.Definition{ID: "d", Revision: 1},
			},
			Authenticator: &testAuth{},
		}
	}
	for name, tc := range map[string]struct {
		mutate func(*turn.Options)
		ok     bool
	}{
		"defaults":                 {func(*turn.Options) {}, true},
		"no store":                 {func(o *turn.Options) { o.Store = nil }, false},
		"no model":                 {func(o *turn.Options) { o.Model = nil }, false},
		"no authenticator":         {func(o *turn.Options) { o.Authenticator = nil }, false},
		"unsafe definition id":     {func(o *turn.Options) { o.Definition.ID = "a b" }, false},
		"zero revision":            {func(o *turn.Options) { o.Definition.Revision = 0 }, false},
		"negative interval":        {func(o *turn.Options) { o.SnapshotInterval = -1 }, false},
		"negative body cap":        {func(o *turn.Options) { o.MaxBodyBytes = -1 }, false},
		"reserve above timeout":    {func(o *turn.Options) { o.TurnTimeout = time.Second; o.CleanupReserve = 2 * time.Second }, false},
		"unsafe ids":               {func(o *turn.Options) { o.NewID = func() string { return "not safe" } }, false},
		"reserve equal to timeout": {func(o *turn.Options) { o.TurnTimeout = time.Second; o.CleanupReserve = time.Second }, false},
	} {
		t.Run(name, func(t *testing.T) {
			o := good()
			tc.mutate(&o)
			h, err := turn.NewHandler(o)
			if (err == nil) != tc.ok || (h != nil) != tc.ok {
				t.Fatalf("handler %v, err %v, want ok %v", h != nil, err, tc.ok)
			}
		})
	}
}

func TestLogsCarryIDsAndNoInput(t *testing.T) {
	e := newEnv(t, newStoreMemory(), &scriptModel{Chunks: []string{"reply " + secret}}, nil)
	r := e.submit(t, "s", "t1", "question "+secret, nil, nil)
	r.want(t, http.StatusOK, "")
	e.submit(t, "s", "t1", "other "+secret, nil, nil).want(t, http.StatusUnprocessableEntity, protocol.CodeTurnIDReused)
	logs := e.logs.String()
	if strings.Contains(logs, secret) {
		t.Fatalf("logs contain message text:\n%s", logs)
	}
	sc := bufio.NewScanner(strings.NewReader(logs))
	n := 0
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("log line is not JSON: %s", sc.Bytes())
		}
		if line["sessionId"] != "s" || line["turnId"] != "t1" {
			t.Errorf("log line without ids: %s", sc.Bytes())
		}
		n++
	}
	if n < 3 {
		t.Fatalf("%d log lines", n)
	}
	if !bytes.Contains(r.raw, []byte("question "+secret)) {
		t.Fatal("the stream lost the input") // the stream carries the conversation, logs never do
	}
}
