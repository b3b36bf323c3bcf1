package coldstart

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
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/turnstream/turnstream/internal/dynalite"
	"github.com/turnstream/turnstream/pkg/client"
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
	// envCgroupProcs names a cgroup's cgroup.procs file the wrapper
	// moves itself into before it stamps the time and execs (Emulator's
	// Procs): the bootstrap runs in that cgroup from its first
	// instruction.
	envCgroupProcs = "TURNBENCH_CGROUP_PROCS"
)

// MaybeExec turns this process into the bootstrap named by
// envExecBootstrap, if set; it returns only when it is unset or the exec
// failed (then the process exits with status 1). The binary that runs
// Measure calls it first thing in main (and its tests in TestMain): the
// emulator runs that binary itself as each function's command.
func MaybeExec() {
	bin := os.Getenv(envExecBootstrap)
	if bin == "" {
		return
	}
	env := make([]string, 0, len(os.Environ()))
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case envExecBootstrap, envStampFile, envRuntimeProxy, envCgroupProcs, "AWS_LAMBDA_RUNTIME_API":
			continue
		}
		env = append(env, kv)
	}
	if procs := os.Getenv(envCgroupProcs); procs != "" {
		if err := os.WriteFile(procs, []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "turnbench: join cgroup:", err)
			os.Exit(1)
		}
	}
	env = append(env, "AWS_LAMBDA_RUNTIME_API="+os.Getenv(envRuntimeProxy))
	// The thread that execs is the one that lives on as the bootstrap's
	// main thread, its scheduler statistics carried over: the stamp
	// records its CPU time so far (-1 when unreadable), which the
	// bootstrap's start-up CPU time is then counted from.
	runtime.LockOSThread()
	before := time.Duration(-1)
	if raw, err := os.ReadFile("/proc/thread-self/schedstat"); err == nil {
		if run, _, ok := parseSchedStat(string(raw)); ok {
			before = run
		}
	}
	stamp := fmt.Sprintf("%d %d %d\n", time.Now().UnixNano(), os.Getpid(), before)
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

// Baseline names the minimal bootstrap (cmd/turnbench/internal/minimal)
// whose cold start, size and peak memory are the bootstraps' baselines
// (a name of lambdabin.Packages).
const Baseline = "minimal"

// Result is one bootstrap's runs under the emulator.
type Result struct {
	ColdStarts  []time.Duration // exec -> first Runtime API request, one per run
	FirstInvoke []time.Duration // invoke sent -> response, the invoke that started the bootstrap
	// CPU is the bootstrap's CPU time at its first Runtime API request,
	// one per run (-1 when unknown), which the machine's other load
	// changes far less than the elapsed time.
	CPU         []time.Duration
	PeakRSSKiB  int64 // max VmHWM of the bootstrap over the runs, after driving requests
	Invocations int   // invocations driven per run
	// Init is the bootstrap's start-up account from direct runs
	// (initRun); nil for the run under turnbench's environment.
	Init *initAccount
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
	cpu      time.Duration // the bootstrap's CPU time at firstReq, -1 when unknown
	// firstLine is when the latest streamed response's first body line
	// (after the prelude and its 8 NUL bytes) reached the Runtime API.
	firstLine time.Time
	stamp     string
	output    *limitedBuffer
}

// startRIE starts rie with bootstrap (through the self-exec wrapper) and
// the recording proxy in front of its Runtime API. env is the emulator's
// whole environment, which it passes on to the bootstrap.
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
			// The bootstrap (the pid in the stamp) waits for this
			// request's answer: its CPU time so far is its start-up's.
			r.cpu = -1
			if pid, before, ok := stampCPU(r.stamp); ok {
				if run, _, ok := schedStat(pid); ok {
					r.cpu = run - before
				}
			}
		}
		r.mu.Unlock()
		if req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/response") {
			req.Body = &lineWatch{ReadCloser: req.Body, seen: func(at time.Time) {
				r.mu.Lock()
				r.firstLine = at
				r.mu.Unlock()
			}}
		}
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
	r.cmd.Env = append(slices.Clip(env),
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

// stampCPU returns the pid in the exec stamp at path and the exec'ing
// thread's CPU time before the exec.
func stampCPU(path string) (pid int, before time.Duration, ok bool) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, false
	}
	f := strings.Fields(string(raw))
	if len(f) != 3 {
		return 0, 0, false
	}
	pid, err1 := strconv.Atoi(f[1])
	ns, err2 := strconv.ParseInt(f[2], 10, 64)
	return pid, time.Duration(ns), err1 == nil && err2 == nil && ns >= 0
}

// coldStart returns exec -> first Runtime API request and the bootstrap's
// pid, from the wrapper's stamp and the proxy's first request.
func (r *rieRun) coldStart() (time.Duration, int, error) {
	raw, err := os.ReadFile(r.stamp)
	if err != nil {
		return 0, 0, fmt.Errorf("no exec stamp (the bootstrap never started): %w; emulator output: %s", err, r.output)
	}
	f := strings.Fields(string(raw))
	if len(f) != 3 {
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
	defer func() { _ = resp.Body.Close() }()
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

// VmHWM returns the peak resident set (VmHWM, KiB) of pid from /proc.
func VmHWM(pid int) (int64, error) {
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
	b, _ := client.SubmitBody(client.Submit{SessionID: sessionID, TurnID: turnID, EventID: "e-" + turnID, Input: "cold start"}) // SafeIds: cannot fail
	return string(b)
}

// driveEvent returns the i-th event of a function's memory run: turn
// submits new turns into session sid; history pages it; artifacts
// alternates a trusted PUT and an owner GET on its first turn.
func driveEvent(fn, sid string, i int) (*events.LambdaFunctionURLRequest, int) {
	switch fn {
	case Baseline:
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

// initRunsPerRound is how many direct runs (initRun) of each bootstrap a
// round of measureColdStarts makes beside its emulator run.
const initRunsPerRound = 3

// bootstrap is one bootstrap measureColdStarts runs: name is its key in
// the results, fn the function whose events it is sent, bin its binary;
// hostEnv runs it under turnbench's whole environment (and makes no init
// account).
type bootstrap struct {
	name, fn, bin string
	hostEnv       bool
	// env is added to the function's configuration (a variant of it).
	env []string
}

// measureColdStarts runs each of boots runs times under rie, in rounds
// that run each once (in order, so that load on the machine that changes
// during the section falls on all of them alike): each run starts a fresh
// emulator, sends the invoke that starts the bootstrap, then drives
// invocations more requests and reads the bootstrap's VmHWM. The turn
// function runs before history and artifacts: its turns create the
// session they read and write. The emulator and the bootstrap get a
// Lambda-like environment (lambdaEnv) with env, the function's
// configuration, or turnbench's whole environment with it (hostEnv), to
// show what the host's variables cost. Each round also runs each other
// bootstrap initRunsPerRound times directly for its init account
// (initRun).
func measureColdStarts(ctx context.Context, rie, self string, boots []bootstrap, env []string, sid string, runs, invocations int) (map[string]*Result, error) {
	c := &http.Client{Timeout: time.Minute}
	out := map[string]*Result{}
	inits := map[string][]*initSample{}
	for _, b := range boots {
		out[b.name] = &Result{Invocations: invocations}
	}
	turnSeq := 0
	for range runs {
		for _, b := range boots {
			runEnv := lambdaEnv(append(slices.Clip(env), b.env...))
			if b.hostEnv {
				runEnv = append(os.Environ(), env...)
			} else {
				for range initRunsPerRound {
					s, err := initRun(b.bin, runEnv)
					if err != nil {
						return nil, fmt.Errorf("%s: init account: %w", b.name, err)
					}
					inits[b.name] = append(inits[b.name], s)
				}
			}
			if err := coldRun(ctx, c, rie, self, b.fn, b.bin, runEnv, sid, invocations, &turnSeq, out[b.name]); err != nil {
				return nil, err
			}
		}
	}
	for name, s := range inits {
		out[name].Init = accountOf(s)
	}
	return out, nil
}

// coldRun is one emulator run of bootstrap bin (function fn) with env,
// its figures added to cr; turnSeq numbers the turn function's turns.
func coldRun(ctx context.Context, c *http.Client, rie, self, fn, bin string, env []string, sid string, invocations int, turnSeq *int, cr *Result) error {
	r, err := startRIE(rie, self, bin, env)
	if err != nil {
		return fmt.Errorf("%s: %w", fn, err)
	}
	defer r.stop()
	for i := 0; i <= invocations; i++ {
		n := i
		if fn == "turn" {
			n = *turnSeq
			*turnSeq++
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
	r.mu.Lock()
	cr.CPU = append(cr.CPU, r.cpu)
	r.mu.Unlock()
	kib, err := VmHWM(pid)
	if err != nil {
		return fmt.Errorf("%s: read peak memory: %w", fn, err)
	}
	cr.PeakRSSKiB = max(cr.PeakRSSKiB, kib)
	return nil
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

// lambdaEnv returns the environment of a bootstrap on Lambda's provided
// runtimes (the variables AWS documents for them, placeholder credentials
// and names) followed by fnEnv, the function's own configuration.
// Nothing of turnbench's environment is passed on: variables that Lambda
// would not set change what a bootstrap does at start (AWS_CA_BUNDLE makes
// every AWS SDK configuration load parse that bundle; HOME makes it look
// for shared configuration files).
func lambdaEnv(fnEnv []string) []string {
	env := []string{
		"PATH=/usr/local/bin:/usr/bin/:/bin:/opt/bin",
		"LD_LIBRARY_PATH=/lib64:/usr/lib64:/var/runtime:/var/runtime/lib:/var/task:/var/task/lib:/opt/lib",
		"LANG=en_US.UTF-8",
		"TZ=:UTC",
		"LAMBDA_TASK_ROOT=/var/task",
		"LAMBDA_RUNTIME_DIR=/var/runtime",
		"_HANDLER=bootstrap",
		"AWS_LAMBDA_FUNCTION_NAME=turnbench",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE=1024",
		"AWS_LAMBDA_FUNCTION_VERSION=$LATEST",
		"AWS_LAMBDA_INITIALIZATION_TYPE=on-demand",
		"AWS_LAMBDA_LOG_GROUP_NAME=/aws/lambda/turnbench",
		"AWS_LAMBDA_LOG_STREAM_NAME=turnbench",
		"AWS_ACCESS_KEY_ID=AKIATURNBENCH",
		"AWS_SECRET_ACCESS_KEY=turnbench",
		"AWS_SESSION_TOKEN=turnbench",
	}
	return append(env, fnEnv...)
}

// initAccount is what one bootstrap's start-up spends, from the Go
// runtime's init trace (GODEBUG=inittrace=1) of direct runs against a
// stand-in Runtime API (initRun; medians over the runs).
type initAccount struct {
	Runs int
	// ToFirstRequest is exec -> the first Runtime API request.
	ToFirstRequest time.Duration
	// InitDone is when the last package init ended, from the runtime's
	// start (the trace's @ plus that init's clock time).
	InitDone time.Duration
	// InitClock is the sum of the package inits' own clock times; ByGroup
	// splits it by module (initGroup).
	InitClock time.Duration
	ByGroup   map[string]time.Duration
	// InitAllocs is the bytes the package inits allocated.
	InitAllocs int64
	// CPU is the bootstrap's CPU time (all threads, from the scheduler)
	// until its first Runtime API request, which the machine's other load
	// changes far less than the elapsed time; Wait is the time it was
	// runnable but waiting for a CPU. Both -1 where unknown.
	CPU, Wait time.Duration
}

// initLine matches one line of the Go runtime's init trace.
var initLine = regexp.MustCompile(`^init (\S+) @([0-9.]+) ms, ([0-9.]+) ms clock, ([0-9]+) bytes`)

// initGroup names the module group of a package for the init account.
func initGroup(pkg string) string {
	for _, g := range [][2]string{
		{"github.com/santhosh-tekuri/jsonschema", "jsonschema"},
		{"github.com/aws/aws-sdk-go-v2", "aws-sdk-go-v2"},
		{"github.com/aws/smithy-go", "aws-sdk-go-v2"},
		{"github.com/aws/aws-lambda-go", "aws-lambda-go"},
		{"github.com/openai/openai-go", "openai-go"},
		{"github.com/lestrrat-go", "jwx"},
		{"github.com/turnstream/turnstream", "turnstream"},
		{"go.opentelemetry.io", "opentelemetry"},
	} {
		if strings.HasPrefix(pkg, g[0]) {
			return g[1]
		}
	}
	if first, _, _ := strings.Cut(pkg, "/"); !strings.Contains(first, ".") {
		return "Go standard library"
	}
	return "other"
}

// schedStat sums the scheduler statistics of pid's threads
// (/proc/<pid>/task/*/schedstat): time run on a CPU and time spent
// runnable, waiting for one. ok is false where they cannot be read.
func schedStat(pid int) (run, wait time.Duration, ok bool) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil || len(tasks) == 0 {
		return 0, 0, false
	}
	for _, t := range tasks {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name()))
		if err != nil {
			return 0, 0, false
		}
		r, w, good := parseSchedStat(string(raw))
		if !good {
			return 0, 0, false
		}
		run, wait = run+r, wait+w
	}
	return run, wait, true
}

// parseSchedStat reads a schedstat line: run ns, wait ns, timeslices.
func parseSchedStat(raw string) (run, wait time.Duration, ok bool) {
	f := strings.Fields(raw)
	if len(f) < 2 {
		return 0, 0, false
	}
	r, err1 := strconv.ParseInt(f[0], 10, 64)
	w, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return time.Duration(r), time.Duration(w), true
}

// initSample is one direct run's start-up figures (initAccount's).
type initSample struct {
	// cpu and wait are the bootstrap's CPU time until its first Runtime
	// API request and its time waiting for a CPU meanwhile (-1: unknown).
	cpu, wait          time.Duration
	first, done, clock time.Duration
	allocs             int64
	byGroup            map[string]time.Duration
}

// initRun runs bin once with env (lambdaEnv of the function's
// configuration), GODEBUG=inittrace=1 and AWS_LAMBDA_RUNTIME_API at a
// local listener that notes the first request and then holds it, and
// returns what the trace and the listener saw.
func initRun(bin string, env []string) (*initSample, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	got := make(chan time.Time, 1)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case got <- time.Now():
		default:
		}
		<-r.Context().Done() // the long poll: held until the bootstrap is killed
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }() // ends with Close
	defer func() { _ = srv.Close() }()
	var stderr bytes.Buffer
	cmd := exec.Command(bin)
	cmd.Env = append(slices.Clip(env), "GODEBUG=inittrace=1", "AWS_LAMBDA_RUNTIME_API="+ln.Addr().String())
	cmd.Stderr = &stderr
	setProcAttr(cmd)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	var at time.Time
	select {
	case at = <-got:
	case <-time.After(10 * time.Second):
	}
	// The bootstrap now waits for its first request's answer: its
	// threads' scheduler statistics are what reaching it took.
	run, wait, schedOK := schedStat(cmd.Process.Pid)
	killGroup(cmd)
	_ = cmd.Wait() // killed
	if at.IsZero() {
		return nil, fmt.Errorf("%s made no Runtime API request within 10s: %.500s", bin, stderr.String())
	}
	s := parseInitTrace(stderr.String())
	s.first = at.Sub(start)
	s.cpu, s.wait = -1, -1
	if schedOK {
		s.cpu, s.wait = run, wait
	}
	return s, nil
}

// parseInitTrace reads the lines of a Go runtime init trace
// (GODEBUG=inittrace=1) in stderr; other lines are ignored.
func parseInitTrace(stderr string) *initSample {
	s := &initSample{byGroup: map[string]time.Duration{}}
	for line := range strings.Lines(stderr) {
		m := initLine.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		atMS, _ := strconv.ParseFloat(m[2], 64)
		clockMS, _ := strconv.ParseFloat(m[3], 64)
		n, _ := strconv.ParseInt(m[4], 10, 64)
		c := time.Duration(clockMS * float64(time.Millisecond))
		s.done = max(s.done, time.Duration(atMS*float64(time.Millisecond))+c)
		s.clock += c
		s.byGroup[initGroup(m[1])] += c
		s.allocs += n
	}
	return s
}

// accountOf returns the medians of samples.
func accountOf(samples []*initSample) *initAccount {
	var first, done, clock, cpu, wait []time.Duration
	var allocs []int64
	groups := map[string][]time.Duration{}
	for _, s := range samples {
		first, done, clock, allocs = append(first, s.first), append(done, s.done), append(clock, s.clock), append(allocs, s.allocs)
		if s.cpu >= 0 {
			cpu, wait = append(cpu, s.cpu), append(wait, s.wait)
		}
		for g, d := range s.byGroup {
			groups[g] = append(groups[g], d)
		}
	}
	a := &initAccount{Runs: len(samples), ToFirstRequest: median(first), InitDone: median(done), InitClock: median(clock), ByGroup: map[string]time.Duration{},
		CPU: -1, Wait: -1}
	if len(cpu) == len(samples) {
		a.CPU, a.Wait = median(cpu), median(wait)
	}
	slices.Sort(allocs)
	a.InitAllocs = allocs[len(allocs)/2]
	for g, d := range groups {
		for len(d) < len(samples) {
			d = append(d, 0) // a group absent from a run's trace spent nothing
		}
		a.ByGroup[g] = median(d)
	}
	return a
}
