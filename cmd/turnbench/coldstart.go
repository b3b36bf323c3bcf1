package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/turnstream/turnstream/internal/dynalite"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// The self-exec wrapper: aws-lambda-rie runs turnbench itself as the
// function's command with these variables set; turnbench writes the time
// (Unix ns) and its pid to the stamp file, points AWS_LAMBDA_RUNTIME_API
// at the recording proxy (RIE sets it to its own address, overriding the
// caller's environment) and execs the bootstrap in the same process. The
// cold start is then exec -> the bootstrap's first Runtime API request,
// as the proxy saw it.
const (
	envExecBootstrap = "TURNBENCH_EXEC_BOOTSTRAP"
	envStampFile     = "TURNBENCH_STAMP_FILE"
	envRuntimeProxy  = "TURNBENCH_RUNTIME_PROXY"
)

// maybeExecBootstrap turns this process into the bootstrap named by
// envExecBootstrap, if set; it returns only when it is unset or the exec
// failed (then the process exits with status 1).
func maybeExecBootstrap() {
	bin := os.Getenv(envExecBootstrap)
	if bin == "" {
		return
	}
	env := make([]string, 0, len(os.Environ()))
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case envExecBootstrap, envStampFile, envRuntimeProxy, "AWS_LAMBDA_RUNTIME_API":
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "AWS_LAMBDA_RUNTIME_API="+os.Getenv(envRuntimeProxy))
	stamp := fmt.Sprintf("%d %d\n", time.Now().UnixNano(), os.Getpid())
	if err := os.WriteFile(os.Getenv(envStampFile), []byte(stamp), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, "turnbench: stamp:", err)
		os.Exit(1)
	}
	err := execProcess(bin, env)
	fmt.Fprintln(os.Stderr, "turnbench: exec bootstrap:", err)
	os.Exit(1)
}

// functions are the three Lambda functions (functions/<name>).
var functions = []string{"turn", "history", "artifacts"}

// baseline names the minimal bootstrap (cmd/turnbench/internal/minimal)
// whose cold start, size and peak memory are the bootstraps' baselines
// (a name of lambdabin.Packages).
const baseline = "minimal"

// coldResult is one function's runs under the emulator.
type coldResult struct {
	ColdStarts  []time.Duration // exec -> first Runtime API request, one per run
	FirstInvoke []time.Duration // invoke sent -> response, the invoke that started the bootstrap
	PeakRSSKiB  int64           // max VmHWM of the bootstrap over the runs, after driving requests
	Invocations int             // invocations driven per run
}

// rieRun is one emulator started with one bootstrap behind the
// recording proxy.
type rieRun struct {
	cmd      *exec.Cmd
	done     chan struct{}
	invoke   string // the emulator's invoke URL
	proxy    *http.Server
	mu       sync.Mutex
	firstReq time.Time
	stamp    string
	output   *limitedBuffer
}

// startRIE starts rie with bootstrap (through the self-exec wrapper) and
// the recording proxy in front of its Runtime API.
func startRIE(rie, self, bootstrap string, env []string) (*rieRun, error) {
	apiPort, err := dynalite.FreePort()
	if err != nil {
		return nil, err
	}
	invokePort, err := dynalite.FreePort()
	if err != nil {
		return nil, err
	}
	target, _ := url.Parse("http://127.0.0.1:" + apiPort)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.FlushInterval = -1
	// A bootstrap's long poll that outlives the emulator at stop is not news.
	rp.ErrorLog = log.New(io.Discard, "", 0)
	r := &rieRun{done: make(chan struct{}), output: &limitedBuffer{b: &bytes.Buffer{}, n: 8192}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r.proxy = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		if r.firstReq.IsZero() {
			r.firstReq = time.Now()
		}
		r.mu.Unlock()
		rp.ServeHTTP(w, req)
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.proxy.Serve(ln) }() // ends with Close

	stampDir, err := os.MkdirTemp("", "turnbench-stamp-")
	if err != nil {
		_ = r.proxy.Close()
		return nil, err
	}
	r.stamp = filepath.Join(stampDir, "stamp")
	r.cmd = exec.Command(rie, "--runtime-api-address", "127.0.0.1:"+apiPort,
		"--runtime-interface-emulator-address", "127.0.0.1:"+invokePort, self)
	r.cmd.Env = append(append(os.Environ(), env...),
		envExecBootstrap+"="+bootstrap, envStampFile+"="+r.stamp, envRuntimeProxy+"="+ln.Addr().String())
	r.cmd.Stdout = r.output
	r.cmd.Stderr = r.output
	setProcAttr(r.cmd)
	if err := r.cmd.Start(); err != nil {
		_ = r.proxy.Close()
		return nil, fmt.Errorf("start %s: %w", rie, err)
	}
	go func() {
		_ = r.cmd.Wait() // killed at stop
		close(r.done)
	}()
	r.invoke = "http://127.0.0.1:" + invokePort + "/2015-03-31/functions/function/invocations"
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+invokePort, time.Second)
		if err == nil {
			_ = c.Close()
			return r, nil
		}
		select {
		case <-r.done:
			r.stop()
			return nil, fmt.Errorf("aws-lambda-rie exited: %s", r.output)
		default:
		}
		if time.Now().After(deadline) {
			r.stop()
			return nil, errors.New("aws-lambda-rie did not listen within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// stop kills the emulator's process group (the bootstrap included).
func (r *rieRun) stop() {
	killGroup(r.cmd)
	<-r.done
	_ = r.proxy.Close()
	_ = os.RemoveAll(filepath.Dir(r.stamp))
}

// coldStart returns exec -> first Runtime API request and the bootstrap's
// pid, from the wrapper's stamp and the proxy's first request.
func (r *rieRun) coldStart() (time.Duration, int, error) {
	raw, err := os.ReadFile(r.stamp)
	if err != nil {
		return 0, 0, fmt.Errorf("no exec stamp (the bootstrap never started): %w; emulator output: %s", err, r.output)
	}
	f := strings.Fields(string(raw))
	if len(f) != 2 {
		return 0, 0, fmt.Errorf("malformed exec stamp %q", raw)
	}
	ns, err1 := strconv.ParseInt(f[0], 10, 64)
	pid, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("malformed exec stamp %q", raw)
	}
	r.mu.Lock()
	first := r.firstReq
	r.mu.Unlock()
	if first.IsZero() {
		return 0, 0, errors.New("the bootstrap made no Runtime API request")
	}
	return first.Sub(time.Unix(0, ns)), pid, nil
}

// invokeURL sends one function URL event through the emulator and returns
// the decoded status code of the function's response. A streamed response
// (turn) is the prelude JSON, 8 NUL bytes and the body; a buffered one is
// the response event JSON.
func (r *rieRun) invokeURL(ctx context.Context, c *http.Client, ev *events.LambdaFunctionURLRequest) (int, []byte, error) {
	payload, err := json.Marshal(ev)
	if err != nil {
		return 0, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.invoke, bytes.NewReader(payload))
	if err != nil {
		return 0, nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer drain(resp.Body)
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, err
	}
	head, body := raw, []byte(nil)
	if i := bytes.Index(raw, make([]byte, 8)); i >= 0 {
		head, body = raw[:i], raw[i+8:]
	}
	var out struct {
		StatusCode int    `json:"statusCode"`
		Body       string `json:"body"`
	}
	if err := json.Unmarshal(head, &out); err != nil {
		return 0, nil, fmt.Errorf("emulator response %.200q: %w", raw, err)
	}
	if body == nil {
		body = []byte(out.Body)
	}
	return out.StatusCode, body, nil
}

// vmHWM returns the peak resident set (VmHWM, KiB) of pid from /proc.
func vmHWM(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return 0, errors.New("VmHWM not in /proc status")
}

// iamCaller and iamHost are the function URL IAM identities of the
// emulator runs: the session owner and the trusted artifacts writer.
const (
	iamAccount = "123456789012"
	iamCaller  = "arn:aws:iam::123456789012:user/turnbench"
	iamHost    = "arn:aws:iam::123456789012:role/turnbench-host"
)

// urlEvent is a function URL event (payload 2.0) with an AWS_IAM caller.
func urlEvent(method, path, query, body, arn string) *events.LambdaFunctionURLRequest {
	hdr := map[string]string{"user-agent": "turnbench"}
	if body != "" {
		hdr["content-type"] = "application/json"
	}
	return &events.LambdaFunctionURLRequest{
		Version: "2.0", RawPath: path, RawQueryString: query, Headers: hdr, Body: body,
		RequestContext: events.LambdaFunctionURLRequestContext{
			AccountID: iamAccount, RequestID: "turnbench", DomainName: "localhost", TimeEpoch: time.Now().UnixMilli(),
			HTTP: events.LambdaFunctionURLRequestContextHTTPDescription{
				Method: method, Path: path, Protocol: "HTTP/1.1", SourceIP: "127.0.0.1", UserAgent: "turnbench",
			},
			Authorizer: &events.LambdaFunctionURLRequestContextAuthorizerDescription{
				IAM: &events.LambdaFunctionURLRequestContextAuthorizerIAMDescription{
					AccessKey: "AKIATURNBENCH", AccountID: iamAccount, CallerID: "AIDATURNBENCH", UserARN: arn, UserID: "AIDATURNBENCH",
				},
			},
		},
	}
}

// submitBody is a client.turn.submit body for the emulator runs.
func submitBody(sessionID, turnID string) string {
	b, _ := protocol.EncodeEvent(&protocol.Event{ // a valid event never fails to encode
		EventID: "e-" + turnID, SessionID: sessionID, TurnID: turnID, EmittedAt: protocol.FormatTime(time.Now()),
		Kind: protocol.EventSubmit, Submit: &protocol.SubmitPayload{Input: "cold start"},
	})
	return string(b)
}

// driveEvent returns the i-th event of a function's memory run: turn
// submits new turns into session sid; history pages it; artifacts
// alternates a trusted PUT and an owner GET on its first turn.
func driveEvent(fn, sid string, i int) (*events.LambdaFunctionURLRequest, int) {
	switch fn {
	case baseline:
		return urlEvent("GET", "/", "", "", iamCaller), http.StatusOK
	case "turn":
		return urlEvent("POST", "/", "", submitBody(sid, fmt.Sprintf("t%d", i)), iamCaller), http.StatusOK
	case "history":
		return urlEvent("GET", "/sessions/"+sid+"/turns", "limit=20", "", iamCaller), http.StatusOK
	default:
		p := "/sessions/" + sid + "/turns/t0/artifacts"
		if i%2 == 0 {
			body := fmt.Sprintf(`{"artifacts":[{"entryPath":"out/report-%d.md","artifactType":"document"}]}`, i)
			return urlEvent("PUT", p, "", body, iamHost), http.StatusOK
		}
		return urlEvent("GET", p, "", "", iamCaller), http.StatusOK
	}
}

// measureColdStarts runs the baseline and each bootstrap of bins runs
// times under
// rie (in the order of functions): each run starts a fresh emulator,
// sends the invoke that starts the
// bootstrap, then drives invocations more requests and reads the
// bootstrap's VmHWM. The turn function runs before history and artifacts:
// its turns create the session they read and write.
func measureColdStarts(ctx context.Context, rie, self string, bins map[string]string, env []string, sid string, runs, invocations int) (map[string]*coldResult, error) {
	c := &http.Client{Timeout: time.Minute}
	out := map[string]*coldResult{}
	turnSeq := 0
	for _, fn := range append([]string{baseline}, functions...) {
		if bins[fn] == "" {
			continue
		}
		cr := &coldResult{Invocations: invocations}
		out[fn] = cr
		for range runs {
			r, err := startRIE(rie, self, bins[fn], env)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", fn, err)
			}
			err = func() error {
				defer r.stop()
				for i := 0; i <= invocations; i++ {
					n := i
					if fn == "turn" {
						n = turnSeq
						turnSeq++
					}
					ev, want := driveEvent(fn, sid, n)
					start := time.Now()
					status, body, err := r.invokeURL(ctx, c, ev)
					if i == 0 {
						cr.FirstInvoke = append(cr.FirstInvoke, time.Since(start))
					}
					if err != nil {
						return fmt.Errorf("%s invoke %d: %w; emulator output: %s", fn, i, err, r.output)
					}
					if status != want || (fn == "turn" && !bytes.Contains(body, []byte(`"status":"complete"`))) {
						return fmt.Errorf("%s invoke %d: status %d, body %.300q", fn, i, status, body)
					}
				}
				d, pid, err := r.coldStart()
				if err != nil {
					return fmt.Errorf("%s: %w", fn, err)
				}
				cr.ColdStarts = append(cr.ColdStarts, d)
				kib, err := vmHWM(pid)
				if err != nil {
					return fmt.Errorf("%s: read peak memory: %w", fn, err)
				}
				cr.PeakRSSKiB = max(cr.PeakRSSKiB, kib)
				return nil
			}()
			if err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// limitedBuffer keeps the first n bytes written to it.
type limitedBuffer struct {
	mu sync.Mutex
	b  *bytes.Buffer
	n  int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if room := l.n - l.b.Len(); room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// String returns what was kept.
func (l *limitedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
