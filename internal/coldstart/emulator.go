package coldstart

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// Emulator is one bootstrap running under aws-lambda-rie behind the
// recording proxy (StartEmulator), for sections that drive it themselves
// (internal/cpushare): its cold start, each invocation's time to the
// first line of a streamed response, and its CPU time.
type Emulator struct {
	r *rieRun
}

// EmulatorOptions say how StartEmulator runs a bootstrap.
type EmulatorOptions struct {
	RIE       string   // the aws-lambda-rie binary
	Bootstrap string   // the bootstrap binary
	Env       []string // the function's configuration (added to LambdaEnv)
	// Procs, when set, is a cgroup's cgroup.procs file: the self-exec
	// wrapper moves itself there before it execs the bootstrap, so that
	// the bootstrap (and only it, not the emulator) runs in the cgroup
	// from its first instruction.
	Procs string
}

// StartEmulator starts o.Bootstrap under o.RIE through the self-exec
// wrapper (the binary that calls it must call MaybeExec first thing in
// main) in a Lambda-like environment (lambdaEnv) with o.Env. The
// bootstrap starts at the first Invoke. Stop ends both.
func StartEmulator(o EmulatorOptions) (*Emulator, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	env := lambdaEnv(o.Env)
	if o.Procs != "" {
		env = append(env, envCgroupProcs+"="+o.Procs)
	}
	r, err := startRIE(o.RIE, self, o.Bootstrap, env)
	if err != nil {
		return nil, err
	}
	return &Emulator{r: r}, nil
}

// Invocation is what one Invoke saw.
type Invocation struct {
	Status int    // the function's HTTP status
	Body   []byte // the response body (a streamed one whole: the emulator buffers it)
	// Took is invoke sent -> the emulator's whole answer.
	Took time.Duration
	// FirstLine is invoke sent -> the streamed response's first line
	// reaching the Runtime API (the bootstrap's time to first snapshot);
	// 0 when the response was not streamed or had no line.
	FirstLine time.Duration
}

// Invoke sends ev (a function URL event) through the emulator.
func (e *Emulator) Invoke(ctx context.Context, c *http.Client, ev *events.LambdaFunctionURLRequest) (*Invocation, error) {
	e.r.mu.Lock()
	e.r.firstLine = time.Time{}
	e.r.mu.Unlock()
	start := time.Now()
	status, body, err := e.r.invokeURL(ctx, c, ev)
	if err != nil {
		return nil, errors.Join(err, errors.New("emulator output: "+e.r.output.String()))
	}
	inv := &Invocation{Status: status, Body: body, Took: time.Since(start)}
	e.r.mu.Lock()
	if !e.r.firstLine.IsZero() {
		inv.FirstLine = e.r.firstLine.Sub(start)
	}
	e.r.mu.Unlock()
	return inv, nil
}

// ColdStart returns exec -> the bootstrap's first Runtime API request,
// its CPU time until then (-1 when unknown) and its pid; an error before
// the first Invoke.
func (e *Emulator) ColdStart() (d, cpu time.Duration, pid int, err error) {
	d, pid, err = e.r.coldStart()
	e.r.mu.Lock()
	cpu = e.r.cpu
	e.r.mu.Unlock()
	return d, cpu, pid, err
}

// CPU returns the bootstrap's CPU time so far (all its threads, from the
// scheduler); ok is false where it cannot be read.
func (e *Emulator) CPU() (time.Duration, bool) {
	_, _, pid, err := e.ColdStart()
	if err != nil {
		return 0, false
	}
	run, _, ok := schedStat(pid)
	return run, ok
}

// Stop kills the emulator and the bootstrap and waits for the emulator.
func (e *Emulator) Stop() { e.r.stop() }

// URLEvent is a function URL event (payload 2.0) of the function URL's
// IAM caller, as the cold-start runs send it.
func URLEvent(method, path, query, body string) *events.LambdaFunctionURLRequest {
	return urlEvent(method, path, query, body, iamCaller)
}

// lineWatch passes a streamed response body through and calls seen with
// the time its first line ended: the first '\n' after the prelude's 8
// NUL bytes.
type lineWatch struct {
	io.ReadCloser
	nuls int  // consecutive NUL bytes seen before the body
	body bool // the prelude has ended
	done bool
	seen func(time.Time)
}

func (l *lineWatch) Read(p []byte) (int, error) {
	n, err := l.ReadCloser.Read(p)
	if !l.done {
		l.scan(p[:n], time.Now())
	}
	return n, err
}

// scan looks for the end of the first body line in b, read at at.
func (l *lineWatch) scan(b []byte, at time.Time) {
	for _, c := range b {
		switch {
		case l.body && c == '\n':
			l.done = true
			l.seen(at)
			return
		case l.body:
		case c == 0:
			l.nuls++
			l.body = l.nuls == 8
		default:
			l.nuls = 0
		}
	}
}

// CallerTenant and CallerSubject are the principal URLEvent's caller is
// under AUTH_MODE=iam (FunctionEnv): its account id and its ARN.
const (
	CallerTenant  = iamAccount
	CallerSubject = iamCaller
)
