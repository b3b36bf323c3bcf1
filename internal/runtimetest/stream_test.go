package runtimetest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/dynalite"
	"github.com/turnstream/turnstream/internal/lambdabin"
	"github.com/turnstream/turnstream/pkg/protocol"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		runHelper(mode) // a Lambda runtime for TestErrorTrailers; never returns
	}
	code := m.Run()
	dynalite.Stop()
	if bootstrapDir != "" {
		_ = os.RemoveAll(bootstrapDir)
	}
	os.Exit(code)
}

// The figures the issue sets for the runtime path. They are asserted
// times timingSlack: the test shares a small machine with the race
// detector and other packages' tests, and what they guard against, a
// buffering layer, shows as a whole stream (over 8 s here) arriving at
// once, far past even the scaled bounds. The measured figures are logged.
const (
	firstLineBound   = 1500 * time.Millisecond // first snapshot after the invocation
	earlyAnswerBound = time.Second             // an answer that does not stream, terminator included
	timingSlack      = 3
	// Lines count as arriving at distinct moments when at least this far
	// apart: a Write that left as several chunks is one moment.
	distinctGap = 100 * time.Millisecond
	// A streamed turn must show lines at this many distinct moments over
	// at least minSpan.
	minMoments = 5
	minSpan    = 4 * time.Second
)

// echoDelay and the 80-character input make the echo model stream for
// about 8.4 s: "Echo: " plus 80 runes in chunks of 4 runes, 400 ms apart.
const echoDelay = "400ms"

// cleanupReserve is the turn function's CLEANUP_RESERVE (its default).
const cleanupReserve = 5 * time.Second

var input80 = strings.Repeat("turnstream streams.. ", 4)[:80]

// TestTurnStreamsThroughRuntimeAPI runs the real turn bootstrap in three
// execution environments (A, B and C: Lambda runs one invocation at a time
// per environment) on one dynalite table, and proves with the arrival
// time of every chunk:
//
//   - a turn streams: its first snapshot arrives right after the
//     invocation, then lines at distinct moments over seconds, posted in
//     streaming mode (HTTP/1.1 chunked) with the documented error trailers
//     declared and left empty;
//   - every answer that does not stream (400 bad JSON, 401, 405, 409
//     SESSION_BUSY, an OPTIONS preflight, GET /capabilities, POST /stop
//     202 and 409) is complete, terminator included, at once;
//   - a failure in the middle of a stream (the Lambda deadline) reaches
//     the Runtime API as the stream's last NDJSON line (a
//     server.turn.diagnostic) with the response complete and no error
//     trailers: the turn handler never fails a response after its body
//     started, since function URL clients never see trailers.
func TestTurnStreamsThroughRuntimeAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the turn bootstrap for about 10 s; skipped with -short")
	}
	root := repoRoot(t)
	endpoint := dynalite.Endpoint(t)
	table := dynalite.Table(t)
	bootstrap := turnBootstrap(t, root)
	env := []string{
		"TABLE_NAME=" + table,
		"DYNAMODB_ENDPOINT=" + endpoint,
		"AWS_REGION=us-east-1",
		"AUTH_MODE=iam", // callers from requestContext.authorizer.iam, as behind an AWS_IAM function URL
		"ECHO_DELAY=" + echoDelay,
		"CLEANUP_RESERVE=" + cleanupReserve.String(),
		"LOG_LEVEL=warn",
	}
	a, b, c := newRuntimeAPI(t), newRuntimeAPI(t), newRuntimeAPI(t)
	for _, api := range []*runtimeAPI{a, b, c} {
		startBootstrap(t, bootstrap, api, env)
	}
	events := newEventFactory(t, root)

	var report []string
	logf := func(format string, args ...any) {
		report = append(report, fmt.Sprintf(format, args...))
	}
	t.Cleanup(func() { t.Log("measured:\n  " + strings.Join(report, "\n  ")) })

	// A streams a turn, C a turn that B stops; B answers everything else
	// meanwhile.
	stream := a.invoke(events.submit("rt-stream", "t1", input80), time.Minute)
	stopped := c.invoke(events.submit("rt-stop", "t1", input80), time.Minute)
	stream.waitLines(t, 1, time.Minute) // the lease is held from here on

	early := []struct {
		name   string
		event  []byte
		status int
		code   string // the error code of the body, "" for a success
	}{
		{"409 SESSION_BUSY", events.submit("rt-stream", "t2", "me too"), http.StatusConflict, protocol.CodeSessionBusy},
		{"400 bad JSON", events.request(http.MethodPost, "/", true, `{"protocol":`), http.StatusBadRequest, protocol.CodeRequestInvalidJSON},
		{"401 unauthenticated", events.request(http.MethodPost, "/", false, string(events.submitBody("rt-401", "t1", "hi"))), http.StatusUnauthorized, protocol.CodeRequestUnauthenticated},
		{"405 PUT /", events.request(http.MethodPut, "/", true, "{}"), http.StatusMethodNotAllowed, protocol.CodeRequestMethodNotAllowed},
		{"OPTIONS preflight", events.preflight(), http.StatusMethodNotAllowed, protocol.CodeRequestMethodNotAllowed},
		{"GET /capabilities", events.request(http.MethodGet, "/capabilities", false, ""), http.StatusOK, ""},
	}
	for _, e := range early {
		inv := b.invoke(e.event, time.Minute)
		ans := inv.answered(t)
		checkEarly(t, e.name, ans, e.status, e.code)
		logf("%-20s HTTP %d complete %v after the invocation", e.name, ans.StatusCode, ans.complete.Round(time.Millisecond))
	}

	t.Run("stop", func(t *testing.T) {
		stopped.waitLines(t, 2, time.Minute)
		stop := b.invoke(events.request(http.MethodPost, "/stop", true, `{"sessionId":"rt-stop","turnId":"t1"}`), time.Minute)
		ans := stop.answered(t)
		checkEarly(t, "POST /stop", ans, http.StatusAccepted, "")
		logf("%-20s HTTP %d complete %v after the invocation", "POST /stop (running)", ans.StatusCode, ans.complete.Round(time.Millisecond))

		// The stop takes effect at the turn's next checkpoint.
		stopped.answered(t)
		_, lines, _ := stopped.streamed()
		evs := decodeLines(t, lines)
		if end := evs[len(evs)-1]; end.Kind != protocol.EventSnapshot || end.Snapshot.Error == nil || end.Snapshot.Error.Code != protocol.CodeTurnInterrupted {
			t.Errorf("stopped turn's last line %s, want TURN_INTERRUPTED", lines[len(lines)-1].text)
		}

		again := b.invoke(events.request(http.MethodPost, "/stop", true, `{"sessionId":"rt-stop","turnId":"t1"}`), time.Minute)
		ans = again.answered(t)
		checkEarly(t, "POST /stop again", ans, http.StatusConflict, protocol.CodeTurnNotActive)
		logf("%-20s HTTP %d complete %v after the invocation", "POST /stop (ended)", ans.StatusCode, ans.complete.Round(time.Millisecond))
	})

	// B: a turn whose invocation has 8 s left. With the 5 s cleanup
	// reserve it must stop streaming after about 3 s, mid-way.
	failing := b.invoke(events.submit("rt-deadline", "t1", input80), cleanupReserve+3*time.Second)

	t.Run("mid-stream failure", func(t *testing.T) {
		ans := failing.answered(t) // no error POST, no cut body, no error trailers
		failing.mu.Lock()
		trailer := failing.trailer
		failing.mu.Unlock()
		if len(trailer) != 2 || trailer.Get(trailerErrorType) != "" || trailer.Get(trailerErrorBody) != "" {
			t.Errorf("trailers %v, want the two declared and empty", trailer)
		}
		_, lines, _ := failing.streamed()
		evs := decodeLines(t, lines)
		last := evs[len(evs)-1]
		if ans.StatusCode != http.StatusOK || last.Kind != protocol.EventDiagnostic || last.Diagnostic.Code != protocol.CodeServerTimeout {
			t.Fatalf("HTTP %d, last line %s; want 200 and a SERVER_TIMEOUT diagnostic", ans.StatusCode, lines[len(lines)-1].text)
		}
		term := evs[len(evs)-2]
		if term.Kind != protocol.EventSnapshot || term.Snapshot.Status != protocol.StatusError {
			t.Errorf("line before the diagnostic %s, want a terminal error snapshot", lines[len(lines)-2].text)
		}
		if streamedBefore := len(lines) - 2; streamedBefore < 1 {
			t.Errorf("%d streaming snapshots before the failure, want the first at least", streamedBefore)
		}
		logf("mid-stream failure:  %d lines, the last a %s diagnostic at %v; response complete at %v, trailers empty",
			len(lines), last.Diagnostic.Code, lines[len(lines)-1].after.Round(time.Millisecond), ans.complete.Round(time.Millisecond))
	})

	t.Run("stream", func(t *testing.T) {
		ans := stream.answered(t)
		stream.mu.Lock()
		contentType, mode, te, declared := stream.contentType, stream.responseMode, stream.transferEncoding, slices.Sorted(slices.Values(stream.declaredTrailers))
		stream.mu.Unlock()
		// aws-lambda-go posts a streamed response chunked, as the
		// function URL integration response, declaring the error
		// trailers. It does not send Lambda-Runtime-Function-Response-Mode:
		// Lambda's Runtime API takes the header as optional (the function
		// URL's InvokeMode decides how the answer reaches the client).
		if contentType != streamingContentType || !slices.Equal(te, []string{"chunked"}) ||
			!slices.Equal(declared, []string{trailerErrorBody, trailerErrorType}) || (mode != "" && mode != "streaming") {
			t.Errorf("response POST: Content-Type %q, Transfer-Encoding %v, trailers %v, %s %q; want %s, chunked, both error trailers, streaming or absent",
				contentType, te, declared, headerResponseMode, mode, streamingContentType)
		}
		if ans.StatusCode != http.StatusOK || !strings.HasPrefix(ans.Headers["Content-Type"], "application/x-ndjson") {
			t.Errorf("HTTP %d %v, want 200 application/x-ndjson", ans.StatusCode, ans.Headers)
		}
		_, lines, _ := stream.streamed()
		evs := decodeLines(t, lines)
		end := evs[len(evs)-1]
		if end.Kind != protocol.EventSnapshot || end.Snapshot.Status != protocol.StatusComplete ||
			end.Snapshot.Messages[len(end.Snapshot.Messages)-1].Content != "Echo: "+input80 {
			t.Fatalf("last line %s, want the complete echo", lines[len(lines)-1].text)
		}

		first := lines[0].after
		moments := distinctMoments(lines)
		span := moments[len(moments)-1] - moments[0]
		logf("stream: first line %v after the invocation; %d lines at %d distinct moments over %v; complete at %v (%s %q)",
			first.Round(time.Millisecond), len(lines), len(moments), span.Round(time.Millisecond), ans.complete.Round(time.Millisecond),
			headerResponseMode, mode)
		if first > firstLineBound*timingSlack {
			t.Errorf("first line %v after the invocation, want within %v (%v with slack)", first, firstLineBound, firstLineBound*timingSlack)
		}
		if len(moments) < minMoments || span < minSpan {
			t.Errorf("lines arrived at %d distinct moments over %v, want >= %d over >= %v: %v", len(moments), span, minMoments, minSpan, moments)
		}
		// Whatever the machine's speed: the first snapshot is not held
		// back with the rest of the stream.
		if last := lines[len(lines)-1].after; last-first < minSpan {
			t.Errorf("first line at %v, last at %v: the stream arrived at once", first, last)
		}
	})

}

// TestStartupFailure pins how the turn bootstrap fails to start: with the
// configuration error logged, naming the variable (never its value), and
// exit status 1, before it asks for an invocation. It does not post to
// /runtime/init/error; Lambda reports the exit as Runtime.ExitError, with
// the log line in the function's logs.
func TestStartupFailure(t *testing.T) {
	t.Parallel()
	bootstrap := turnBootstrap(t, repoRoot(t))
	api := newRuntimeAPI(t)
	cmd := exec.Command(bootstrap)
	cmd.Env = append(baseEnv(), "AWS_LAMBDA_RUNTIME_API="+api.Addr(), "AWS_LAMBDA_FUNCTION_NAME=turnstream-TurnFunction-runtimetest",
		"AWS_REGION=us-east-1", "TABLE_NAME=t", "AUTH_MODE=bogus-secret-mode")
	setProcAttr(cmd)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("exit %v, want status 1; output %s", err, out)
	}
	if !bytes.Contains(out, []byte("turn: configuration")) || !bytes.Contains(out, []byte("AUTH_MODE")) || bytes.Contains(out, []byte("bogus-secret-mode")) {
		t.Errorf("output %s, want the configuration error naming AUTH_MODE without its value", out)
	}
	api.mu.Lock()
	defer api.mu.Unlock()
	if len(api.initErrors) != 0 || api.polls != 0 {
		t.Errorf("init errors %v, %d polls of /next; want none", api.initErrors, api.polls)
	}
}

var (
	bootstrapOnce sync.Once
	bootstrapDir  string // removed by TestMain
	bootstrapPath string
	bootstrapErr  error
)

// turnBootstrap returns the turn bootstrap: from $TURNSTREAM_BOOTSTRAPS
// (make test-bootstraps), or built once for this test binary.
func turnBootstrap(t *testing.T, root string) string {
	t.Helper()
	bootstrapOnce.Do(func() {
		bootstrapDir, bootstrapErr = os.MkdirTemp("", "runtimetest-bootstrap-")
		if bootstrapErr != nil {
			return
		}
		bins, err := lambdabin.Bootstraps(context.Background(), root, bootstrapDir, "turn")
		bootstrapPath, bootstrapErr = bins["turn"], err
	})
	if bootstrapErr != nil {
		t.Fatalf("the turn bootstrap: %v", bootstrapErr)
	}
	return bootstrapPath
}

// checkEarly checks an answer that does not stream: its status, its error
// code (code "" for a success) and that it was complete, terminator
// included, within earlyAnswerBound (times timingSlack).
func checkEarly(t *testing.T, name string, ans answer, status int, code string) {
	t.Helper()
	if ans.StatusCode != status {
		t.Errorf("%s: HTTP %d, want %d; body %s", name, ans.StatusCode, status, ans.body)
	}
	if code != "" {
		var e struct {
			Error protocol.Diagnostic `json:"error"`
		}
		if err := json.Unmarshal(ans.body, &e); err != nil || e.Error.Code != code {
			t.Errorf("%s: body %s, want error %s", name, ans.body, code)
		}
	} else if !json.Valid(ans.body) {
		t.Errorf("%s: body %s, want JSON", name, ans.body)
	}
	if ans.complete > earlyAnswerBound*timingSlack {
		t.Errorf("%s: complete %v after the invocation, want within %v (%v with slack)", name, ans.complete, earlyAnswerBound, earlyAnswerBound*timingSlack)
	}
}

// distinctMoments returns the arrival times of lines, those less than
// distinctGap after the previous moment folded into it.
func distinctMoments(lines []arrivedLine) []time.Duration {
	var out []time.Duration
	for _, l := range lines {
		if len(out) == 0 || l.after-out[len(out)-1] >= distinctGap {
			out = append(out, l.after)
		}
	}
	return out
}

// decodeLines decodes each line as a turn event.
func decodeLines(t *testing.T, lines []arrivedLine) []*protocol.Event {
	t.Helper()
	if len(lines) == 0 {
		t.Fatal("no lines")
	}
	evs := make([]*protocol.Event, len(lines))
	for i, l := range lines {
		ev, d := protocol.DecodeTurnEvent(l.text)
		if d != nil {
			t.Fatalf("line %d does not decode (%s): %s", i+1, d.Code, l.text)
		}
		evs[i] = ev
	}
	return evs
}

// eventFactory makes function URL events (payload format 2.0) from
// events/turn-submit.json, whose caller is an IAM principal.
type eventFactory struct {
	t    *testing.T
	base map[string]any
}

func newEventFactory(t *testing.T, root string) *eventFactory {
	raw, err := os.ReadFile(filepath.Join(root, "events", "turn-submit.json"))
	if err != nil {
		t.Fatal(err)
	}
	f := &eventFactory{t: t}
	if err := json.Unmarshal(raw, &f.base); err != nil {
		t.Fatal(err)
	}
	return f
}

// submitBody is a client.turn.submit of turnID in sessionID with input.
func (f *eventFactory) submitBody(sessionID, turnID, input string) []byte {
	b, err := json.Marshal(map[string]any{
		"protocol": protocol.TurnProtocol, "version": protocol.TurnVersion, "eventId": "ev-" + sessionID + "-" + turnID,
		"sessionId": sessionID, "turnId": turnID, "sequence": 0, "emittedAt": "2026-12-01T12:00:00.000Z",
		"event": protocol.EventSubmit, "payload": map[string]any{"input": input},
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return b
}

// submit is the event of a signed POST / submitting input.
func (f *eventFactory) submit(sessionID, turnID, input string) []byte {
	return f.request(http.MethodPost, "/", true, string(f.submitBody(sessionID, turnID, input)))
}

// request is the event of method path with body; signed says whether the
// caller is authenticated (requestContext.authorizer.iam).
func (f *eventFactory) request(method, path string, signed bool, body string) []byte {
	return f.event(method, path, signed, nil, body)
}

// preflight is a browser's CORS preflight for POST /, which reaches the
// function when its URL has no CORS configuration (the template's
// default): it carries no credentials.
func (f *eventFactory) preflight() []byte {
	return f.event(http.MethodOptions, "/", false, map[string]string{
		"origin": "https://chat.example.com", "access-control-request-method": "POST",
		"access-control-request-headers": "authorization,content-type",
	}, "")
}

func (f *eventFactory) event(method, path string, signed bool, extra map[string]string, body string) []byte {
	var ev map[string]any
	raw, _ := json.Marshal(f.base)
	_ = json.Unmarshal(raw, &ev) // a deep copy
	ev["rawPath"] = path
	ev["body"] = body
	headers := ev["headers"].(map[string]any)
	delete(headers, "content-length")
	if body == "" {
		delete(headers, "content-type")
	}
	for k, v := range extra {
		headers[k] = v
	}
	rc := ev["requestContext"].(map[string]any)
	rc["http"].(map[string]any)["method"] = method
	rc["http"].(map[string]any)["path"] = path
	if !signed {
		delete(rc, "authorizer")
	}
	out, err := json.Marshal(ev)
	if err != nil {
		f.t.Fatal(err)
	}
	return out
}

// startBootstrap runs bin as the runtime of one execution environment
// whose Runtime API is api, with env added to a minimal environment; it is
// killed when t ends, and its output logged if t failed.
func startBootstrap(t *testing.T, bin string, api *runtimeAPI, env []string) {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Dir = t.TempDir()
	cmd.Env = append(baseEnv(),
		"AWS_LAMBDA_RUNTIME_API="+api.Addr(),
		"AWS_LAMBDA_FUNCTION_NAME=turnstream-TurnFunction-runtimetest",
		"AWS_LAMBDA_FUNCTION_VERSION=$LATEST",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE=512",
	)
	cmd.Env = append(cmd.Env, env...)
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	setProcAttr(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // already gone is fine
		<-exited
		if t.Failed() {
			t.Logf("%s output:\n%s", filepath.Base(bin), out.String())
		}
	})
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

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the working directory")
		}
		dir = parent
	}
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
