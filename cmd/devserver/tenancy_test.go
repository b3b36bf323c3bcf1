package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/dynalite"
	"github.com/turnstream/turnstream/internal/testidp"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

// TestTenancyJWT runs the dev server in jwt mode with JWT_TENANT_CLAIM=tid
// and the trusted artifacts writer {tid: A, sub: host}, on the memory
// store and on DynamoDB (dynalite), and checks through all three functions
// that a principal of another tenant, with the same subject, sees 404
// SESSION_NOT_FOUND on every route of a session (submit, stop, history,
// artifacts), that the trusted subject in another tenant is not trusted
// (the report: {sub: host, tid: B} could PUT on tenant A's session), and
// that the trusted writer cannot write another tenant's session.
func TestTenancyJWT(t *testing.T) {
	t.Parallel()
	idp := testidp.New(t)
	token := func(sub, tid string) string {
		return "Bearer " + idp.Token(t, sub, map[string]any{"tid": tid})
	}
	ownerA, sameSubjectB := token("owner", "A"), token("owner", "B")
	hostA, hostB, ownerC := token("host", "A"), token("host", "B"), token("owner-c", "C")

	stores := map[string]func(t *testing.T) map[string]string{
		"memory": func(*testing.T) map[string]string { return nil },
		"dynamodb": func(t *testing.T) map[string]string {
			table := "devserver_" + randomHex(t)
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if err := dynamo.DeleteTable(ctx, dynalite.Client(t), table); err != nil {
					t.Errorf("delete table: %v", err)
				}
			})
			return map[string]string{"DYNAMODB_ENDPOINT": dynalite.Endpoint(t), "TABLE_NAME": table}
		},
	}
	for name, storeEnv := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{
				"AUTH_MODE": "jwt", "JWT_JWKS_URL": idp.JWKSURL, "JWT_ISSUER": testidp.Issuer, "JWT_AUDIENCE": testidp.Audience,
				"JWT_TENANT_CLAIM": "tid", "ARTIFACTS_TRUSTED_SUBJECT": "host", "ARTIFACTS_TRUSTED_TENANT": "A",
			}
			for k, v := range devEnv {
				env[k] = v
			}
			for k, v := range storeEnv(t) {
				env[k] = v
			}
			srv := startServer(t, env)

			// Tenant A's owner starts a long turn; while it runs, the same
			// subject in tenant B probes every route.
			stream := openTurnAs(t, srv.url+"/turn/", ownerA, "sa", "t1", longInput)
			if first := stream.next(t); first == nil || first.Snapshot == nil {
				t.Fatalf("first line %+v, want a snapshot", first)
			}
			stop := `{"sessionId":"sa","turnId":"t1"}`
			for what, req := range map[string]struct{ method, path, body string }{
				"stop":      {http.MethodPost, "/turn/stop", stop},
				"submit":    {http.MethodPost, "/turn/", submitBody("sa", "t2", "hello")},
				"session":   {http.MethodGet, "/history/sessions/sa", ""},
				"turns":     {http.MethodGet, "/history/sessions/sa/turns", ""},
				"messages":  {http.MethodGet, "/history/sessions/sa/messages", ""},
				"artifacts": {http.MethodGet, "/artifacts/sessions/sa/turns/t1/artifacts", ""},
			} {
				wantCode(t, "same subject, tenant B: "+what, srv.url, req.method, req.path, sameSubjectB, req.body, http.StatusNotFound, protocol.CodeSessionNotFound)
			}
			wantCode(t, "trusted writer stops nothing", srv.url, http.MethodPost, "/turn/stop", hostA, stop, http.StatusNotFound, protocol.CodeSessionNotFound)
			if status, _ := call(t, srv.url, http.MethodPost, "/turn/stop", ownerA, stop); status != http.StatusAccepted {
				t.Fatalf("owner's stop: status %d", status)
			}
			lines := stream.rest(t)
			if last := lines[len(lines)-1]; last.Snapshot == nil || last.Snapshot.Error == nil || last.Snapshot.Error.Code != protocol.CodeTurnInterrupted {
				t.Fatalf("last line %+v, want the interrupted snapshot", last)
			}

			// Artifact writes: trust is tenant and subject together, and
			// never crosses tenants.
			refs := `{"artifacts":[{"entryPath":"out/report.md","artifactType":"document"}]}`
			put := func(auth, sessionID string) (int, []byte) {
				return call(t, srv.url, http.MethodPut, "/artifacts/sessions/"+sessionID+"/turns/t1/artifacts", auth, refs)
			}
			wantCode(t, "trusted subject of tenant B", srv.url, http.MethodPut, "/artifacts/sessions/sa/turns/t1/artifacts", hostB, refs, http.StatusForbidden, protocol.CodeRequestForbidden)
			wantCode(t, "owner writes", srv.url, http.MethodPut, "/artifacts/sessions/sa/turns/t1/artifacts", ownerA, refs, http.StatusForbidden, protocol.CodeRequestForbidden)
			if status, body := put(hostA, "sa"); status != http.StatusOK || string(body) != refs {
				t.Fatalf("trusted writer on its tenant's session: %d %s", status, body)
			}
			_ = openTurnAs(t, srv.url+"/turn/", ownerC, "sc", "t1", "hi").rest(t)
			wantCode(t, "trusted writer, tenant C's session", srv.url, http.MethodPut, "/artifacts/sessions/sc/turns/t1/artifacts", hostA, refs, http.StatusNotFound, protocol.CodeSessionNotFound)
			if status, body := call(t, srv.url, http.MethodGet, "/artifacts/sessions/sc/turns/t1/artifacts", ownerC, ""); status != http.StatusOK || string(body) != `{"artifacts":[]}` {
				t.Fatalf("tenant C's artifacts after the rejected write: %d %s", status, body)
			}
		})
	}
}

// openTurnAs submits a turn with the Authorization header authz and
// returns its 200 stream.
func openTurnAs(t *testing.T, url, authz, sessionID, turnID, input string) *turnStream {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(submitBody(sessionID, turnID, input)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", authz)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("submit: status %d: %s", resp.StatusCode, body)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	return &turnStream{resp: resp, sc: sc}
}

// call sends one request with the Authorization header authz (and body as
// JSON when not empty) and returns the status and the trimmed body.
func call(t *testing.T, base, method, path, authz, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", authz)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read: %v", method, path, err)
	}
	return resp.StatusCode, []byte(strings.TrimSpace(string(data)))
}

// wantCode checks that a request is answered with status and the error
// body of code.
func wantCode(t *testing.T, what, base, method, path, authz, body string, status int, code string) {
	t.Helper()
	got, data := call(t, base, method, path, authz, body)
	var e struct {
		Error protocol.Diagnostic `json:"error"`
	}
	if err := json.Unmarshal(data, &e); err != nil || got != status || e.Error.Code != code {
		t.Errorf("%s: %d %s, want %d %s", what, got, data, status, code)
	}
}
