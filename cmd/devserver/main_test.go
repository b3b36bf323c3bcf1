package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/dynalite"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

func TestMain(m *testing.M) { dynalite.Main(m) }

// devEnv is the environment of every test server: a slow echo model so
// that a long reply is still streaming when the test acts on it, and a
// short lease so that a stop is seen within a second (renewal every
// LEASE_DURATION/3).
var devEnv = map[string]string{
	"ECHO_DELAY":       "500ms",
	"ECHO_CHUNK_RUNES": "4",
	"LEASE_DURATION":   "3s",
}

// longInput makes an echo reply of 12 chunks: about 6 s unless stopped.
const longInput = "please keep streaming for a good while now"

func TestDevServer(t *testing.T) {
	stores := map[string]func(t *testing.T) map[string]string{
		"memory": func(t *testing.T) map[string]string { return nil },
		"dynamodb": func(t *testing.T) map[string]string {
			endpoint := dynalite.Endpoint(t)
			table := "devserver_" + randomHex(t)
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if err := dynamo.DeleteTable(ctx, dynalite.Client(t), table); err != nil {
					t.Errorf("delete table: %v", err)
				}
			})
			return map[string]string{"DYNAMODB_ENDPOINT": endpoint, "TABLE_NAME": table}
		},
	}
	for name, storeEnv := range stores {
		t.Run(name, func(t *testing.T) {
			env := map[string]string{}
			for k, v := range devEnv {
				env[k] = v
			}
			for k, v := range storeEnv(t) {
				env[k] = v
			}
			srv := startServer(t, env)
			requests := 0

			// A full turn, submitted to the mount path without its slash.
			lines := submit(t, srv.url+"/turn", "alice", "s1", "t1", "hi")
			requests++
			last := lines[len(lines)-1]
			if last.Kind != protocol.EventSnapshot || last.Snapshot.Status != protocol.StatusComplete {
				t.Fatalf("last line: %s %+v, want a complete snapshot", last.Kind, last.Snapshot)
			}
			msgs := last.Snapshot.Messages
			if len(msgs) != 2 || msgs[1].Content != "Echo: hi" {
				t.Fatalf("final messages = %+v, want the user message and \"Echo: hi\"", msgs)
			}

			// The history function sees the same messages, for the owner only.
			var page struct {
				Messages []protocol.Message `json:"messages"`
				HasMore  bool               `json:"hasMore"`
			}
			status := getJSON(t, srv.url+"/history/sessions/s1/messages?order=asc", "alice", &page)
			requests++
			if status != http.StatusOK || len(page.Messages) != 2 || page.Messages[1].ID != msgs[1].ID || page.Messages[1].Content != msgs[1].Content {
				t.Fatalf("history: %d %+v, want the streamed messages", status, page.Messages)
			}
			if status := getJSON(t, srv.url+"/history/sessions/s1", "mallory", nil); status != http.StatusNotFound {
				t.Errorf("history of another principal: status %d, want 404", status)
			}
			requests++

			// Artifacts: the dev host writes, the owner reads.
			status = do(t, http.MethodPut, srv.url+"/artifacts/sessions/s1/turns/t1/artifacts", "host",
				`{"artifacts":[{"entryPath":"out/report.md","artifactType":"document"}]}`, nil)
			requests++
			if status != http.StatusOK {
				t.Fatalf("artifacts PUT as host: status %d, want 200", status)
			}
			var arts struct {
				Artifacts []struct{ EntryPath, ArtifactType string } `json:"artifacts"`
			}
			status = getJSON(t, srv.url+"/artifacts/sessions/s1/turns/t1/artifacts", "alice", &arts)
			requests++
			if status != http.StatusOK || len(arts.Artifacts) != 1 || arts.Artifacts[0].EntryPath != "out/report.md" {
				t.Fatalf("artifacts GET: %d %+v", status, arts)
			}

			// Streaming: the first snapshot arrives while the turn still runs,
			// so a stop sent after it finds the turn active (202) and the
			// stream ends with the interrupted turn.
			stream := openTurn(t, srv.url+"/turn/", "alice", "s2", "t2", longInput)
			requests++
			first := stream.next(t)
			if first == nil || first.Snapshot == nil || first.Snapshot.Status != protocol.StatusStreaming {
				t.Fatalf("first line = %+v, want a streaming snapshot", first)
			}
			status = do(t, http.MethodPost, srv.url+"/turn/stop", "alice", `{"sessionId":"s2","turnId":"t2"}`, nil)
			requests++
			if status != http.StatusAccepted {
				t.Fatalf("stop after the first snapshot: status %d, want 202 (the turn was not streaming?)", status)
			}
			rest := stream.rest(t)
			end := rest[len(rest)-1]
			if end.Snapshot == nil || end.Snapshot.Status != protocol.StatusError || end.Snapshot.Error == nil ||
				end.Snapshot.Error.Code != protocol.CodeTurnInterrupted {
				t.Fatalf("last line after stop = %+v, want an error snapshot TURN_INTERRUPTED", end)
			}
			if got := end.Snapshot.Messages[len(end.Snapshot.Messages)-1].Content; got == "Echo: "+longInput {
				t.Errorf("stopped turn has the whole reply %q: it was not stopped", got)
			}

			// Outside the mounts: a JSON 404.
			if status := getJSON(t, srv.url+"/nope", "alice", nil); status != http.StatusNotFound {
				t.Errorf("GET /nope: status %d, want 404", status)
			}
			requests++

			logs := srv.stop(t)
			if n := strings.Count(logs, `"msg":"request"`); n != requests {
				t.Errorf("%d request log lines for %d requests:\n%s", n, requests, logs)
			}
			for _, secret := range []string{"hi\"", longInput, "report.md"} {
				if strings.Contains(logs, secret) {
					t.Errorf("logs contain request input %q", secret)
				}
			}
		})
	}
}

func TestRunRejects(t *testing.T) {
	tests := map[string]struct {
		args []string
		env  map[string]string
		want string
	}{
		"dev auth on a public address":     {args: []string{"-addr", "0.0.0.0:0"}, want: "loopback"},
		"ADDR read from the environment":   {env: map[string]string{"ADDR": "0.0.0.0:0"}, want: "-addr 0.0.0.0:0"},
		"bad configuration":                {env: map[string]string{"TURN_TIMEOUT": "soon"}, want: "TURN_TIMEOUT"},
		"stray argument":                   {args: []string{"extra"}, want: "unexpected arguments"},
		"zero read timeout":                {args: []string{"-read-timeout", "0s"}, want: "-read-timeout"},
		"unknown sign-in":                  {args: []string{"-signin", "cognito"}, want: `-signin "cognito": want local`},
		"sign-in token too short":          {args: []string{"-signin", "local", "-signin-token-ttl", "60s"}, want: "want 70s..24h"},
		"local issuer on a public address": {args: []string{"-signin", "local", "-addr", "0.0.0.0:0"}, want: "the local issuer signs in anyone"},
		"local issuer with IAM":            {args: []string{"-signin", "local", "-addr", "127.0.0.1:0"}, env: map[string]string{"AUTH_MODE": "iam"}, want: "AUTH_MODE iam"},
		"dev auth on Lambda":               {args: []string{"-addr", "127.0.0.1:0"}, env: map[string]string{"AWS_LAMBDA_FUNCTION_NAME": "f"}, want: "refused on Lambda"},
		"trusted subject without its tenant": {env: map[string]string{"AUTH_MODE": "jwt", "JWT_JWKS_URL": "https://idp.example/jwks", "JWT_ISSUER": "i",
			"JWT_AUDIENCE": "a", "JWT_TENANT_CLAIM": "tid", "ARTIFACTS_TRUSTED_SUBJECT": "host"}, want: "ARTIFACTS_TRUSTED_TENANT: required"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // a run that gets past its checks returns at once
			err := run(ctx, tc.args, lookup(tc.env), io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("run error = %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

// testServer is a dev server started by startServer.
type testServer struct {
	url    string
	cancel context.CancelFunc
	done   chan error
	mu     sync.Mutex
	out    bytes.Buffer
	copied chan struct{}
}

// startServer runs the dev server on a free loopback port with env and
// any extra flags.
func startServer(t *testing.T, env map[string]string, args ...string) *testServer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	s := &testServer{cancel: cancel, done: make(chan error, 1), copied: make(chan struct{})}
	go func() {
		err := run(ctx, append([]string{"-addr", "127.0.0.1:0"}, args...), lookup(env), pw)
		_ = pw.CloseWithError(err)
		s.done <- err
	}()
	urls := make(chan string, 1)
	go func() {
		defer close(s.copied)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if u, ok := strings.CutPrefix(strings.TrimSpace(line), "turn:"); ok {
				urls <- strings.TrimSuffix(strings.TrimSpace(u), "/turn/")
			}
			s.mu.Lock()
			s.out.WriteString(line + "\n")
			s.mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	t.Cleanup(func() {
		cancel()
		<-s.copied
	})
	select {
	case s.url = <-urls:
	case err := <-s.done:
		t.Fatalf("dev server exited at start: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("dev server printed no turn URL within a minute")
	}
	return s
}

// stop shuts the server down, checks run returned nil and returns its
// output (banner and logs).
func (s *testServer) stop(t *testing.T) string {
	t.Helper()
	s.cancel()
	if err := <-s.done; err != nil {
		t.Errorf("run returned %v after shutdown, want nil", err)
	}
	<-s.copied
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()
}

func lookup(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}
}

func submitBody(sessionID, turnID, input string) string {
	ev := map[string]any{
		"protocol": protocol.TurnProtocol, "version": protocol.TurnVersion,
		"eventId": "ev-" + turnID, "sessionId": sessionID, "turnId": turnID,
		"sequence": 0, "emittedAt": "2026-11-29T12:00:00.000Z",
		"event": protocol.EventSubmit, "payload": map[string]string{"input": input},
	}
	b, err := json.Marshal(ev)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// turnStream reads a turn's NDJSON response line by line.
type turnStream struct {
	resp *http.Response
	sc   *bufio.Scanner
}

func openTurn(t *testing.T, url, subject, sessionID, turnID, input string) *turnStream {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(submitBody(sessionID, turnID, input)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer dev."+subject)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("submit: status %d: %s", resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/x-ndjson") {
		t.Fatalf("submit: content type %q", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	return &turnStream{resp: resp, sc: sc}
}

// next returns the next decoded line, nil at the end of the stream.
func (s *turnStream) next(t *testing.T) *protocol.Event {
	t.Helper()
	if !s.sc.Scan() {
		if err := s.sc.Err(); err != nil {
			t.Fatalf("read stream: %v", err)
		}
		return nil
	}
	ev, diag := protocol.DecodeTurnEvent(s.sc.Bytes())
	if diag != nil {
		t.Fatalf("stream line does not decode (%s): %s", diag.Code, s.sc.Bytes())
	}
	return ev
}

// rest returns the remaining lines; it fails when there are none or when
// sequences do not strictly increase.
func (s *turnStream) rest(t *testing.T) []*protocol.Event {
	t.Helper()
	var out []*protocol.Event
	for ev := s.next(t); ev != nil; ev = s.next(t) {
		if n := len(out); n > 0 && ev.Sequence <= out[n-1].Sequence {
			t.Fatalf("sequence %d after %d", ev.Sequence, out[n-1].Sequence)
		}
		out = append(out, ev)
	}
	if len(out) == 0 {
		t.Fatal("stream ended without a line")
	}
	return out
}

func submit(t *testing.T, url, subject, sessionID, turnID, input string) []*protocol.Event {
	t.Helper()
	return openTurn(t, url, subject, sessionID, turnID, input).rest(t)
}

// do sends body (JSON when not empty) as subject and decodes a 2xx JSON
// response into out when out is not nil. It returns the status.
func do(t *testing.T, method, url, subject, body string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer dev."+subject)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read: %v", method, url, err)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("%s %s: content type %q, want JSON", method, url, ct)
	}
	if out != nil && resp.StatusCode/100 == 2 {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: decode %s: %v", method, url, data, err)
		}
	}
	return resp.StatusCode
}

func getJSON(t *testing.T, url, subject string, out any) int {
	t.Helper()
	return do(t, http.MethodGet, url, subject, "", out)
}

func randomHex(t *testing.T) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// TestNoteTool: the dev server offers the demo tool by default, so
// "/note <title>: <body>" runs a tool round trip with the echo model; the
// note's artifact reference is recorded on the turn.
func TestNoteTool(t *testing.T) {
	srv := startServer(t, map[string]string{"ECHO_DELAY": "0s"})
	lines := submit(t, srv.url+"/turn/", "alice", "s1", "t1", "/note Trip plan: Pack light.")
	last := lines[len(lines)-1]
	if last.Snapshot == nil || last.Snapshot.Status != protocol.StatusComplete {
		t.Fatalf("last line %+v", last)
	}
	asst := last.Snapshot.Messages[1]
	if asst.Content != "Echo: /note Trip plan: Pack light." || len(asst.ToolCalls) != 1 {
		t.Fatalf("assistant %+v", asst)
	}
	if c := asst.ToolCalls[0]; c.Name != "workspace_note" || c.Status != protocol.ToolCallComplete || c.Result == nil ||
		*c.Result != `Saved note "notes/trip-plan.md" (11 characters).` {
		t.Fatalf("tool call %+v", c)
	}
	var arts struct {
		Artifacts []struct{ EntryPath, ArtifactType string } `json:"artifacts"`
	}
	status := getJSON(t, srv.url+"/artifacts/sessions/s1/turns/t1/artifacts", "alice", &arts)
	if status != http.StatusOK || len(arts.Artifacts) != 1 || arts.Artifacts[0].EntryPath != "notes/trip-plan.md" || arts.Artifacts[0].ArtifactType != "document" {
		t.Fatalf("artifacts: %d %+v", status, arts)
	}
	srv.stop(t)
}

// TestLocalSignIn: with -signin local the functions take the local
// issuer's access tokens and nothing else, and the page's settings name
// the issuer.
func TestLocalSignIn(t *testing.T) {
	s := startServer(t, nil, "-signin", "local")
	res, err := http.Get(s.url + "/config.json")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	var settings struct{ Authority string }
	if err := json.Unmarshal(body, &settings); err != nil || !strings.HasPrefix(settings.Authority, "http://127.0.0.1:") {
		t.Fatalf("settings %s: %v", body, err)
	}
	issuer := settings.Authority
	want := `{"signIn":"oidc","authority":"` + issuer + `","clientId":"` + LocalClientID + `","scope":"openid email"}`
	if string(body) != want {
		t.Fatalf("settings %s, want %s", body, want)
	}

	sessions := func(authz string) int {
		req, _ := http.NewRequest(http.MethodGet, s.url+"/history/sessions", nil)
		req.Header.Set("Authorization", authz)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = res.Body.Close()
		return res.StatusCode
	}
	if got := sessions("Bearer dev.ann"); got != http.StatusUnauthorized {
		t.Errorf("a dev token: %d, want 401", got)
	}
	if got := sessions("Bearer " + localToken(t, issuer, s.url)); got != http.StatusOK {
		t.Errorf("the issuer's access token: %d, want 200", got)
	}
	if out := s.stop(t); !strings.Contains(out, "sign-in:   "+issuer+" ") {
		t.Errorf("the banner names no issuer:\n%s", out)
	}
}

// localToken signs in at the local issuer as "ann" the way the page does
// (authorization code with PKCE) and returns the access token.
func localToken(t *testing.T, issuer, page string) string {
	t.Helper()
	verifier := strings.Repeat("v", 43)
	sum := sha256.Sum256([]byte(verifier))
	form := url.Values{
		"response_type": {"code"}, "client_id": {LocalClientID}, "redirect_uri": {page + "/"}, "scope": {"openid"},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}, "username": {"ann"},
	}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := noFollow.PostForm(issuer+"/authorize", form)
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	loc, err := url.Parse(res.Header.Get("Location"))
	if err != nil || loc.Query().Get("code") == "" {
		t.Fatalf("sign-in answered %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
	res, err = http.PostForm(issuer+"/token", url.Values{
		"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")}, "redirect_uri": {page + "/"},
		"client_id": {LocalClientID}, "code_verifier": {verifier},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = res.Body.Close() }()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(res.Body).Decode(&tok); err != nil || tok.AccessToken == "" {
		t.Fatalf("token answer %d: %v", res.StatusCode, err)
	}
	return tok.AccessToken
}
