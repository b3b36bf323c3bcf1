package smoketest_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/dynalite"
	"github.com/turnstream/turnstream/internal/lambdabin"
	"github.com/turnstream/turnstream/pkg/protocol"
)

func TestMain(m *testing.M) { dynalite.Main(m) }

// Principals of the sample events (events/*.json requestContext.authorizer.iam).
const (
	hostARN = "arn:aws:sts::123456789012:assumed-role/workspace-host/workspace"
)

// streamingSeparator ends the JSON prelude of a streamed function URL
// response (Lambda response streaming, as lambdaurl writes it).
var streamingSeparator = make([]byte, 8)

func TestBootstrapsUnderRuntimeEmulator(t *testing.T) {
	if testing.Short() {
		t.Skip("builds three binaries and runs them under the emulator; skipped with -short")
	}
	root := repoRoot(t)
	endpoint := dynalite.Endpoint(t)
	table := dynalite.Table(t)

	var (
		wg           sync.WaitGroup
		rie          string
		bins         map[string]string
		rieErr, bErr error
	)
	// Both are done before the tests under `make test` (make rie, make
	// test-bootstraps); otherwise here, once per run.
	wg.Add(2)
	go func() { defer wg.Done(); rie, rieErr = lambdabin.InstallRIE(t.Context()) }()
	go func() {
		defer wg.Done()
		bins, bErr = lambdabin.Bootstraps(t.Context(), root, t.TempDir(), "turn", "history", "artifacts")
	}()
	wg.Wait()
	if rieErr != nil {
		t.Fatalf("install the runtime interface emulator: %v", rieErr)
	}
	if bErr != nil {
		t.Fatalf("build the bootstraps: %v", bErr)
	}

	env := []string{
		"TABLE_NAME=" + table,
		"DYNAMODB_ENDPOINT=" + endpoint,
		"AWS_REGION=us-east-1",
		// The emulator sets AWS_LAMBDA_FUNCTION_NAME, so dev auth refuses to
		// start (as on Lambda): the functions run in iam mode and take the
		// caller from each event's requestContext.authorizer.iam.
		"AUTH_MODE=iam",
		"ARTIFACTS_TRUSTED_SUBJECT=" + hostARN,
		"CURSOR_SECRET=smoke-test-cursor-secret-0123456789",
		"ECHO_DELAY=0",
		"LOG_LEVEL=warn",
		"AWS_LAMBDA_FUNCTION_TIMEOUT=40",
		"MODEL_TOOLS=workspace_note,workspace_note_delete:approval",
	}
	turnURL := startFunction(t, rie, bins["turn"], env)
	historyURL := startFunction(t, rie, bins["history"], env)
	artifactsURL := startFunction(t, rie, bins["artifacts"], env)
	events := filepath.Join(root, "events")

	t.Run("turn", func(t *testing.T) {
		steps := []struct {
			name, event string
			status      int
			check       func(t *testing.T, body []byte)
		}{
			{"capabilities", "turn-capabilities.json", http.StatusOK, func(t *testing.T, body []byte) {
				var caps struct {
					Protocols []struct {
						Protocol string `json:"protocol"`
						Versions []int  `json:"versions"`
					} `json:"protocols"`
				}
				mustJSON(t, body, &caps)
				if len(caps.Protocols) == 0 || caps.Protocols[0].Protocol != protocol.TurnProtocol {
					t.Errorf("capabilities = %s", body)
				}
			}},
			{"submit", "turn-submit.json", http.StatusOK, func(t *testing.T, body []byte) {
				end := checkStream(t, body, "turn-demo-1")
				if got := end.Messages[len(end.Messages)-1].Content; got != "Echo: Hello, turnstream!" {
					t.Errorf("assistant content = %q", got)
				}
			}},
			{"resume the ended turn", "turn-resume.json", http.StatusOK, func(t *testing.T, body []byte) {
				// after=0: the ended turn answers its terminal snapshot at once.
				end := checkStream(t, body, "turn-demo-1")
				if got := end.Messages[len(end.Messages)-1].Content; got != "Echo: Hello, turnstream!" {
					t.Errorf("resumed assistant content = %q", got)
				}
			}},
			{"submit base64", "turn-submit-base64.json", http.StatusOK, func(t *testing.T, body []byte) {
				end := checkStream(t, body, "turn-demo-2")
				if len(end.Messages) != 4 {
					t.Errorf("session-scope snapshot has %d messages, want both turns' 4", len(end.Messages))
				}
			}},
			{"replay", "turn-submit.json", http.StatusConflict, func(t *testing.T, body []byte) {
				checkError(t, body, protocol.CodeTurnAlreadyCompleted)
			}},
			{"stop an ended turn", "turn-stop.json", http.StatusConflict, func(t *testing.T, body []byte) {
				checkError(t, body, protocol.CodeTurnNotActive)
			}},
		}
		for _, s := range steps {
			// Sequential: each step depends on the stored state of the last.
			status, headers, body := invokeStreaming(t, turnURL, filepath.Join(events, s.event))
			if status != s.status {
				t.Fatalf("%s: status %d, want %d; body %s", s.name, status, s.status, body)
			}
			wantType := "application/json"
			if s.status == http.StatusOK && (strings.HasPrefix(s.event, "turn-submit") || s.event == "turn-resume.json") {
				wantType = "application/x-ndjson"
			}
			if ct := headers["Content-Type"] + headers["content-type"]; !strings.HasPrefix(ct, wantType) {
				t.Errorf("%s: content type %q, want %s", s.name, ct, wantType)
			}
			s.check(t, body)
		}
	})

	// Approvals: "/delete <title>" waits for approval; a decision turn
	// approves (the tool runs) or denies it.
	t.Run("approvals", func(t *testing.T) {
		template := filepath.Join(events, "turn-submit.json")
		for _, decision := range []string{protocol.DecisionApprove, protocol.DecisionDeny} {
			sid := "sess-approval-" + decision
			// The note to delete (the tool says so when there is none).
			status, _, body := invokeStreaming(t, turnURL, submitEvent(t, template, sid, "note-1", map[string]any{"input": "/note Trip plan: pack"}))
			if status != http.StatusOK {
				t.Fatalf("%s note: status %d, body %s", decision, status, body)
			}
			checkStream(t, body, "note-1")
			ask := submitEvent(t, template, sid, "ask-1", map[string]any{"input": "/delete Trip plan"})
			status, _, body = invokeStreaming(t, turnURL, ask)
			if status != http.StatusOK {
				t.Fatalf("%s ask: status %d, body %s", decision, status, body)
			}
			end := checkStream(t, body, "ask-1")
			asst := end.Messages[len(end.Messages)-1]
			var meta struct {
				Pending []struct {
					Token string `json:"token"`
				} `json:"pendingConfirmations"`
			}
			if len(asst.ToolCalls) != 1 || asst.ToolCalls[0].Status != protocol.ToolCallRequiresConfirmation ||
				json.Unmarshal(asst.Metadata, &meta) != nil || len(meta.Pending) != 1 {
				t.Fatalf("%s ask: assistant %+v", decision, asst)
			}
			dec := submitEvent(t, template, sid, "decide-1", map[string]any{"input": decision,
				"confirmation": map[string]string{"token": meta.Pending[0].Token, "decision": decision}})
			status, _, body = invokeStreaming(t, turnURL, dec)
			if status != http.StatusOK {
				t.Fatalf("%s: status %d, body %s", decision, status, body)
			}
			end = checkStream(t, body, "decide-1")
			call := end.Messages[len(end.Messages)-1].ToolCalls[0]
			want := map[string]string{protocol.DecisionApprove: protocol.ToolCallComplete, protocol.DecisionDeny: protocol.ToolCallError}[decision]
			if call.Status != want {
				text := ""
				if call.Error != nil {
					text = *call.Error
				}
				t.Errorf("%s: decided call %+v (error %q), want %s", decision, call, text, want)
			}
			status, _, body = invokeStreaming(t, turnURL, submitEvent(t, template, sid, "decide-2", map[string]any{"input": decision,
				"confirmation": map[string]string{"token": meta.Pending[0].Token, "decision": decision}}))
			if status != http.StatusConflict {
				t.Fatalf("%s again: status %d, body %s", decision, status, body)
			}
			checkError(t, body, protocol.CodeConfirmationDecided)
		}
	})

	buffered := []struct {
		name, url, event string
		status           int
		check            func(t *testing.T, body []byte)
	}{
		{"history session", historyURL, "history-session.json", http.StatusOK, func(t *testing.T, body []byte) {
			var s struct {
				SessionID   string          `json:"sessionId"`
				CurrentTurn json.RawMessage `json:"currentTurn"`
			}
			mustJSON(t, body, &s)
			if s.SessionID != "sess-demo" || string(s.CurrentTurn) != "null" {
				t.Errorf("session = %s, want sess-demo and no current turn", body)
			}
		}},
		{"history turns", historyURL, "history-turns.json", http.StatusOK, func(t *testing.T, body []byte) {
			var p struct {
				Turns []struct {
					TurnID string `json:"turnId"`
					Status string `json:"status"`
				} `json:"turns"`
				HasMore bool `json:"hasMore"`
			}
			mustJSON(t, body, &p)
			if len(p.Turns) != 2 || p.Turns[0].TurnID != "turn-demo-1" || p.Turns[1].TurnID != "turn-demo-2" || p.HasMore {
				t.Errorf("turns page = %s, want turn-demo-1 and turn-demo-2 ascending", body)
			}
		}},
		{"history messages", historyURL, "history-messages.json", http.StatusOK, func(t *testing.T, body []byte) {
			var p struct {
				Messages []protocol.Message `json:"messages"`
			}
			mustJSON(t, body, &p)
			if len(p.Messages) != 4 || p.Messages[1].Content != "Echo: Hello, turnstream!" {
				t.Errorf("messages page = %s", body)
			}
		}},
		{"artifacts put", artifactsURL, "artifacts-put.json", http.StatusOK, func(t *testing.T, body []byte) {
			checkArtifacts(t, body, "reports/summary.md", "site/index.html")
		}},
		{"artifacts get", artifactsURL, "artifacts-get.json", http.StatusOK, func(t *testing.T, body []byte) {
			checkArtifacts(t, body, "reports/summary.md", "site/index.html")
		}},
	}
	for _, s := range buffered {
		t.Run(s.name, func(t *testing.T) {
			resp := invokeBuffered(t, s.url, filepath.Join(events, s.event))
			if resp.StatusCode != s.status {
				t.Fatalf("status %d, want %d; body %s", resp.StatusCode, s.status, resp.Body)
			}
			if ct := resp.Headers["Content-Type"]; !strings.HasPrefix(ct, "application/json") {
				t.Errorf("content type %q, want application/json", ct)
			}
			s.check(t, []byte(resp.Body))
		})
	}
}

// checkStream decodes an NDJSON turn body: every line a turn event of the
// turn, sequences strictly increasing, the last a complete snapshot, which
// it returns.
func checkStream(t *testing.T, body []byte, turnID string) *protocol.SnapshotPayload {
	t.Helper()
	lines := bytes.Split(bytes.TrimSuffix(body, []byte("\n")), []byte("\n"))
	var last *protocol.Event
	for i, line := range lines {
		ev, diag := protocol.DecodeTurnEvent(line)
		if diag != nil {
			t.Fatalf("line %d does not decode (%s): %s", i+1, diag.Code, line)
		}
		if ev.TurnID != turnID || ev.Kind != protocol.EventSnapshot {
			t.Fatalf("line %d: %s of turn %s, want a snapshot of %s", i+1, ev.Kind, ev.TurnID, turnID)
		}
		if last != nil && ev.Sequence <= last.Sequence {
			t.Fatalf("line %d: sequence %d after %d", i+1, ev.Sequence, last.Sequence)
		}
		last = ev
	}
	if last == nil || last.Snapshot.Status != protocol.StatusComplete {
		t.Fatalf("stream does not end with a complete snapshot: %s", body)
	}
	return last.Snapshot
}

func checkError(t *testing.T, body []byte, code string) {
	t.Helper()
	var e struct {
		Error protocol.Diagnostic `json:"error"`
	}
	mustJSON(t, body, &e)
	if e.Error.Code != code || e.Error.Version != 1 || e.Error.Message == "" {
		t.Errorf("error body = %s, want code %s", body, code)
	}
}

func checkArtifacts(t *testing.T, body []byte, paths ...string) {
	t.Helper()
	var a struct {
		Artifacts []struct {
			EntryPath string `json:"entryPath"`
		} `json:"artifacts"`
	}
	mustJSON(t, body, &a)
	var got []string
	for _, r := range a.Artifacts {
		got = append(got, r.EntryPath)
	}
	if strings.Join(got, ",") != strings.Join(paths, ",") {
		t.Errorf("artifacts = %v, want %v", got, paths)
	}
}

func mustJSON(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("decode %s: %v", data, err)
	}
}

// invoke posts the event file to the emulator's invoke endpoint and
// returns the raw response body.
func invoke(t *testing.T, url, eventFile string) []byte {
	t.Helper()
	event, err := os.ReadFile(eventFile)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: time.Minute}
	resp, err := client.Post(url, "application/json", bytes.NewReader(event))
	if err != nil {
		t.Fatalf("invoke with %s: %v", filepath.Base(eventFile), err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("invoke with %s: read: %v", filepath.Base(eventFile), err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("invoke with %s: emulator status %d: %s", filepath.Base(eventFile), resp.StatusCode, body)
	}
	return body
}

// invokeStreaming invokes a RESPONSE_STREAM function: the emulator returns
// the JSON prelude, 8 NUL bytes and the body.
func invokeStreaming(t *testing.T, url, eventFile string) (status int, headers map[string]string, body []byte) {
	t.Helper()
	raw := invoke(t, url, eventFile)
	prelude, body, found := bytes.Cut(raw, streamingSeparator)
	if !found {
		t.Fatalf("%s: no 8-NUL separator after the prelude: %q", filepath.Base(eventFile), raw)
	}
	var p struct {
		StatusCode int               `json:"statusCode"`
		Headers    map[string]string `json:"headers"`
	}
	if err := json.Unmarshal(prelude, &p); err != nil {
		t.Fatalf("%s: prelude %q: %v", filepath.Base(eventFile), prelude, err)
	}
	return p.StatusCode, p.Headers, body
}

// bufferedResponse is a function URL response of a BUFFERED function.
type bufferedResponse struct {
	StatusCode      int               `json:"statusCode"`
	Headers         map[string]string `json:"headers"`
	Body            string            `json:"body"`
	IsBase64Encoded bool              `json:"isBase64Encoded"`
}

func invokeBuffered(t *testing.T, url, eventFile string) bufferedResponse {
	t.Helper()
	var r bufferedResponse
	mustJSON(t, invoke(t, url, eventFile), &r)
	if r.IsBase64Encoded {
		t.Fatalf("%s: base64 body for a JSON response", filepath.Base(eventFile))
	}
	return r
}

// startFunction runs bootstrap under the emulator on free loopback ports
// and returns its invoke URL. The process group is killed when t ends.
func startFunction(t *testing.T, rie, bootstrap string, env []string) string {
	t.Helper()
	invokeAddr, apiAddr := freeAddr(t), freeAddr(t)
	cmd := exec.Command(rie,
		"--runtime-interface-emulator-address", invokeAddr,
		"--runtime-api-address", apiAddr,
		bootstrap)
	cmd.Dir = filepath.Dir(bootstrap)
	cmd.Env = append(baseEnv(), env...)
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	setProcAttr(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", rie, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		killGroup(cmd)
		<-exited
		if t.Failed() {
			t.Logf("%s under the emulator:\n%s", filepath.Base(bootstrap), out.String())
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", invokeAddr, time.Second)
		if err == nil {
			_ = conn.Close()
			break
		}
		select {
		case <-exited:
			t.Fatalf("emulator for %s exited: %s", filepath.Base(bootstrap), out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("emulator for %s does not listen on %s", filepath.Base(bootstrap), invokeAddr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return "http://" + invokeAddr + "/2015-03-31/functions/function/invocations"
}

// baseEnv is the part of the test's environment a process needs to run;
// nothing else (no DYNAMODB_ENDPOINT or AUTH_MODE of the caller) leaks in.
func baseEnv() []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "SYSTEMROOT"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for !fileExists(filepath.Join(dir, "go.mod")) {
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the working directory")
		}
		dir = parent
	}
	return dir
}

func freeAddr(t *testing.T) string {
	t.Helper()
	port, err := dynalite.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return "127.0.0.1:" + port
}

// lockedBuffer collects a process's output for failure reports.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() > 1<<20 {
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// submitEvent writes a copy of the function URL event in template whose
// body is a client.turn.submit of turnID in sessionID with payload, and
// returns its path.
func submitEvent(t *testing.T, template, sessionID, turnID string, payload map[string]any) string {
	t.Helper()
	raw, err := os.ReadFile(template)
	if err != nil {
		t.Fatal(err)
	}
	var event map[string]any
	mustJSON(t, raw, &event)
	body, err := json.Marshal(map[string]any{
		"protocol": protocol.TurnProtocol, "version": protocol.TurnVersion, "eventId": "ev-" + turnID,
		"sessionId": sessionID, "turnId": turnID, "sequence": 0, "emittedAt": "2026-11-29T12:00:00.000Z",
		"event": protocol.EventSubmit, "payload": payload,
	})
	if err != nil {
		t.Fatal(err)
	}
	event["body"] = string(body)
	if h, ok := event["headers"].(map[string]any); ok {
		delete(h, "content-length")
	}
	out, err := json.Marshal(event)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), turnID+".json")
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
