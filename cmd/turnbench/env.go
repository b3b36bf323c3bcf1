package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/turnstream/turnstream/internal/ddbfault"
	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/model/echo"
	"github.com/turnstream/turnstream/pkg/sessionapi"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
	"github.com/turnstream/turnstream/pkg/turn"
)

// ---- dynalite -----------------------------------------------------------

// dynaliteProc is a dynalite process started by startDynalite.
type dynaliteProc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// startDynalite starts root/node_modules/.bin/dynalite on a free loopback
// port in its own process group (never through npx: killing npx leaves
// node running) and waits until it answers. It returns the
// endpoint URL. stop kills the process group and waits for it.
func startDynalite(root string) (endpoint string, p *dynaliteProc, err error) {
	bin := filepath.Join(root, "node_modules", ".bin", "dynalite")
	if _, err := os.Stat(bin); err != nil {
		return "", nil, fmt.Errorf("%s not found: run `npm ci` in %s or set DYNAMODB_ENDPOINT", bin, root)
	}
	if _, err := exec.LookPath("node"); err != nil {
		return "", nil, errors.New("node not found in PATH: install Node 20+ or set DYNAMODB_ENDPOINT")
	}
	port, err := freePort()
	if err != nil {
		return "", nil, err
	}
	cmd := exec.Command(bin, "--host", "127.0.0.1", "--port", port,
		"--createTableMs", "0", "--deleteTableMs", "0", "--updateTableMs", "0")
	cmd.Dir = root
	setProcAttr(cmd)
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("start %s: %w", bin, err)
	}
	p = &dynaliteProc{cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait() // the status after a kill says nothing
		close(p.done)
	}()
	endpoint = "http://127.0.0.1:" + port
	if err := waitHTTP(endpoint, p.done, 15*time.Second); err != nil {
		p.stop()
		return "", nil, fmt.Errorf("dynalite: %w", err)
	}
	return endpoint, p, nil
}

// stop kills dynalite's process group and waits for the process.
func (p *dynaliteProc) stop() {
	if p == nil {
		return
	}
	killGroup(p.cmd)
	<-p.done
}

// pid is dynalite's process id (its group leader).
func (p *dynaliteProc) pid() int { return p.cmd.Process.Pid }

// waitHTTP polls url until it answers, exited closes or timeout passes.
func waitHTTP(url string, exited <-chan struct{}, timeout time.Duration) error {
	c := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return errors.New("process exited before answering")
		default:
		}
		if resp, err := c.Get(url); err == nil {
			_ = resp.Body.Close()
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("no answer on %s within %s", url, timeout)
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer func() { _ = l.Close() }()
	_, port, err := net.SplitHostPort(l.Addr().String())
	return port, err
}

// repoRoot walks up from dir to the directory holding go.mod.
func repoRoot(dir string) (string, error) {
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory (use -repo)")
		}
		dir = parent
	}
}

// randomName returns prefix followed by 8 random hex digits (table names,
// the run's session id prefix).
func randomName(prefix string) string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return prefix + hex.EncodeToString(b[:])
}

// ---- the DynamoDB tap: counting and tracing ------------------------------

// opRecord is one DynamoDB API call seen by the tap.
type opRecord struct {
	Op   string // operation name, e.g. "UpdateItem"
	SK   string // the sort key of a keyed call ("SESSION", "TURN#..."), "" for Query
	Kind string // what the call was for (kindOf)
	// Write tells the claim's writes apart (claimWrite, takeoverWrite,
	// fenceWrite); "" for other calls.
	Write string
	// Expiry is the lease expiry a claim or a renewal writes (zero for
	// other calls, or when it cannot be read from the request).
	Expiry time.Time
	// Start and End bound the call, retries included; Took is End-Start.
	Start, End time.Time
	Took       time.Duration
	// Err is the error the caller got ("" on success); CondFailed means
	// it was a failed condition.
	Err        string
	CondFailed bool
	// Attempts are the call's HTTP attempts, recorded by the load client's
	// transport (nil on the other clients, whose attempts are only counted).
	Attempts []*attemptRecord
}

// failed reports whether the call returned an error other than a failed
// condition.
func (o *opRecord) failed() bool { return o.Err != "" && !o.CondFailed }

// callState is an API call in flight; its attempts fill rec.
type callState struct {
	mu  sync.Mutex
	rec opRecord
	// The fault drawn for the call at its first attempt (faultInjector).
	drawn      bool
	fault      ddbfault.Fault
	persistent bool
}

type callKey struct{}

// trace is every DynamoDB call made on behalf of one HTTP request.
type trace struct {
	aim *aim // the faults the request asked for (benchFaultHeader), or nil

	mu  sync.Mutex
	ops []opRecord
}

func (t *trace) add(r opRecord) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.ops = append(t.ops, r)
}

// snapshot returns a copy of the calls recorded so far, in the order they
// started.
func (t *trace) snapshot() []opRecord {
	t.mu.Lock()
	defer t.mu.Unlock()
	ops := append([]opRecord(nil), t.ops...)
	slices.SortStableFunc(ops, func(a, b opRecord) int { return a.Start.Compare(b.Start) })
	return ops
}

type traceKey struct{}

// withTrace returns ctx carrying t; the tap records calls made with it.
func withTrace(ctx context.Context, t *trace) context.Context {
	return context.WithValue(ctx, traceKey{}, t)
}

func traceFrom(ctx context.Context) *trace {
	t, _ := ctx.Value(traceKey{}).(*trace)
	return t
}

// tap is SDK middleware on the DynamoDB clients (Initialize step, so once
// per API call, before the retryer): it counts every call and records it
// in the request's trace with its duration and result, and puts the
// call's state in the context, where the load client's transport files
// the call's HTTP attempts (the SDK passes the context down to the
// transport). It also counts HTTP attempts in the Finalize step (after
// the retryer), so retries show.
type tap struct {
	calls    atomic.Int64
	attempts atomic.Int64
	retries  atomic.Int64 // HTTP attempts beyond the first of a call

	mu         sync.Mutex
	attemptErr map[string]int // failed HTTP attempts by error text, digits masked
}

func newTap() *tap { return &tap{attemptErr: map[string]int{}} }

// option installs the tap on a client (dynamo.NewClient's optFns).
func (t *tap) option(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
		if err := stack.Initialize.Add(middleware.InitializeMiddlewareFunc("turnbenchTap",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				t.calls.Add(1)
				call := &callState{rec: opRecord{Op: awsmiddleware.GetOperationName(ctx), Start: time.Now()}}
				call.rec.SK, call.rec.Kind, call.rec.Write, call.rec.Expiry = kindOf(in.Parameters)
				var attempts attemptCount
				ctx = context.WithValue(context.WithValue(ctx, callKey{}, call), attemptCountKey{}, &attempts)
				out, md, err := next.HandleInitialize(ctx, in)
				if n := attempts.n.Load(); n > 1 {
					t.retries.Add(n - 1)
				}
				call.mu.Lock()
				rec := call.rec
				call.mu.Unlock()
				rec.End = time.Now()
				rec.Took = rec.End.Sub(rec.Start)
				if err != nil {
					var ccf *types.ConditionalCheckFailedException
					rec.Err, rec.CondFailed = err.Error(), errors.As(err, &ccf)
				}
				if tr := traceFrom(ctx); tr != nil {
					tr.add(rec)
				}
				return out, md, err
			}), middleware.After); err != nil {
			return err
		}
		return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("turnbenchAttempts",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				t.attempts.Add(1)
				if a, ok := ctx.Value(attemptCountKey{}).(*attemptCount); ok {
					a.n.Add(1)
				}
				out, md, err := next.HandleFinalize(ctx, in)
				var ccf *types.ConditionalCheckFailedException
				if err != nil && !errors.As(err, &ccf) {
					msg := digits.ReplaceAllString(requestID.ReplaceAllString(err.Error(), "RequestID: *"), "#")
					t.mu.Lock()
					t.attemptErr[msg[:min(len(msg), 200)]]++
					t.mu.Unlock()
				}
				return out, md, err
			}), middleware.After)
	})
}

// digits and requestID mask what differs between two failures of one kind.
var (
	digits    = regexp.MustCompile(`[0-9]+`)
	requestID = regexp.MustCompile(`RequestID: [^,]*`)
)

// attemptErrors returns the failed HTTP attempts by error text.
func (t *tap) attemptErrors() map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.attemptErr)
}

// attemptCount counts the HTTP attempts of one API call.
type attemptCount struct{ n atomic.Int64 }

type attemptCountKey struct{}

// What a DynamoDB call of a turn request was for, from its request: the
// claim's phase (kindClaim: the claim's UpdateItem, a takeover's fence of
// the crashed turn and its compare-and-set, a give-back, the turn id
// lookup of a full window), the context load, renewals, the save, the
// release; kindRead is a consistent GetItem (the read that classifies a
// failed condition or resolves an unknown outcome), attributed to the
// write it follows by readsOf.
const (
	kindClaim   = "claim"
	kindContext = "context"
	kindRenew   = "renew"
	kindSave    = "save"
	kindRelease = "release"
	// kindCheckpoint is a checkpoint of a running turn (its live item,
	// deltas, running turn item), where the store has them.
	kindCheckpoint = "checkpoint"
	kindRead       = "read"
	kindOther      = "other"
)

// Sub-kinds of kindClaim writes, told apart where it matters.
const (
	claimWrite    = "claim write"    // the claim's own UpdateItem
	takeoverWrite = "takeover write" // a takeover's compare-and-set that claims
	// takeoverRecord is a takeover's compare-and-set that records the
	// crashed turn and claims nothing (the turn id was rejected).
	takeoverRecord = "takeover record"
	fenceWrite     = "fence" // a takeover's fence of the crashed turn
)

// kindOf classifies a call by its input: the sort key, what it is for
// (and which of the claim's writes), and the lease expiry it writes. It reads the store's condition
// expressions, whose attribute names are written out by hand (#name);
// the update expression's names come from the SDK's builder (#0, #1).
func kindOf(params any) (sk, kind, write string, expiry time.Time) {
	switch in := params.(type) {
	case *dynamodb.UpdateItemInput:
		sk = sortKey(in.Key)
		cond := aws.ToString(in.ConditionExpression)
		names := slices.Collect(maps.Values(in.ExpressionAttributeNames))
		switch {
		case sk == "SESSION" && strings.Contains(cond, "attribute_not_exists(#leaseToken)"):
			kind, write = kindClaim, claimWrite
		case sk == "SESSION" && strings.Contains(cond, ":revision"):
			kind, write = kindClaim, takeoverWrite
		case sk == "SESSION" && slices.Contains(names, "releasedToken"):
			kind = kindRelease
		case sk == "SESSION" && strings.Contains(cond, ":now") && strings.Contains(cond, "#leaseToken = :token"):
			kind = kindRenew
		case sk == "SESSION" && strings.Contains(cond, "#leaseToken = :token"):
			kind = kindClaim // a give-back of a claim that must not run
		case strings.Contains(sk, "#LIVE") || strings.Contains(cond, ":running") && !strings.Contains(cond, ":crashed"):
			kind = kindCheckpoint // the live item, or the running turn item a checkpoint writes
		case strings.HasPrefix(sk, "TURN#") && slices.Contains(names, "saveId"):
			kind = kindSave
		case strings.HasPrefix(sk, "TURN#") && strings.Contains(cond, ":crashed"):
			kind, write = kindClaim, fenceWrite
		default:
			kind = kindOther
		}
		if write == claimWrite || write == takeoverWrite || kind == kindRenew {
			expiry = leaseExpiryOf(in)
		}
		if write == takeoverWrite && expiry.IsZero() {
			write = takeoverRecord // it writes no lease
		}
	case *dynamodb.GetItemInput:
		sk, kind = sortKey(in.Key), kindRead
		if strings.Contains(sk, "#LIVE") {
			kind = kindCheckpoint
		}
	case *dynamodb.PutItemInput:
		sk, kind = sortKey(in.Item), kindOther
		switch {
		case strings.Contains(sk, "#LIVE"):
			kind = kindCheckpoint // a checkpoint's delta
		case strings.Contains(sk, "#CHUNK#"):
			kind = kindSave
		}
	case *dynamodb.DeleteItemInput:
		sk, kind = sortKey(in.Key), kindOther
	case *dynamodb.QueryInput:
		switch aws.ToString(in.IndexName) {
		case dynamo.VisibleIndex:
			kind = kindContext // the context load (history pages are other requests)
		case dynamo.TurnIDIndex:
			kind = kindClaim // the turn id lookup of a full window
		default:
			kind = kindOther // a chunked turn's chunks, a crashed turn's checkpoints
		}
	default:
		kind = kindOther
	}
	return sk, kind, write, expiry
}

// setClause matches one "#name = :value" assignment of an update
// expression built by the SDK's expression builder.
var setClause = regexp.MustCompile(`(#[0-9A-Za-z]+) = (:[0-9A-Za-z]+)`)

// leaseExpiryOf returns the leaseExpiresAt (epoch ms) an update writes,
// or the zero time.
func leaseExpiryOf(in *dynamodb.UpdateItemInput) time.Time {
	for _, m := range setClause.FindAllStringSubmatch(aws.ToString(in.UpdateExpression), -1) {
		if in.ExpressionAttributeNames[m[1]] != "leaseExpiresAt" {
			continue
		}
		n, ok := in.ExpressionAttributeValues[m[2]].(*types.AttributeValueMemberN)
		if !ok {
			return time.Time{}
		}
		ms, err := strconv.ParseInt(n.Value, 10, 64)
		if err != nil {
			return time.Time{}
		}
		return time.UnixMilli(ms)
	}
	return time.Time{}
}

// sortKey returns the "sk" of a key or item, or "".
func sortKey(key map[string]types.AttributeValue) string {
	if s, ok := key[dynamo.AttrSK].(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

// ---- the dev-server wiring ------------------------------------------------

// Header a turnbench client sends so the server can file the request's
// DynamoDB trace under it (bench-only; the handlers never see it used).
const benchIDHeader = "X-Turnbench-Id"

// benchFaultHeader carries the aim of a load submission (aim.String).
const benchFaultHeader = "X-Turnbench-Fault"

// wiring is the three handlers mounted as cmd/devserver mounts them
// (/turn/, /history/, /artifacts/ with the prefix stripped),
// served over real loopback HTTP, on one DynamoDB store whose client
// carries the tap.
type wiring struct {
	srv      *http.Server
	base     string // http://127.0.0.1:port
	traces   sync.Map
	inflight atomic.Int64
	idle     chan struct{} // signalled when inflight drops to 0
}

// handlerConfig is what differs between the wirings a run starts.
type handlerConfig struct {
	EchoDelay     time.Duration
	EchoChunk     int
	LeaseDuration time.Duration
}

// newWiring starts a loopback server of the three handlers on store.
func newWiring(store chat.Store, hc handlerConfig) (*wiring, error) {
	authn, err := auth.New(context.Background(), config.AuthConfig{Mode: config.AuthDev, TrustedSubject: "host"},
		auth.WithLookupEnv(func(string) (string, bool) { return "", false }))
	if err != nil {
		return nil, fmt.Errorf("authenticator: %w", err)
	}
	quiet := slog.New(slog.DiscardHandler)
	th, err := turn.NewHandler(turn.Options{
		Store:         store,
		Model:         echo.New(hc.EchoDelay, hc.EchoChunk),
		Authenticator: authn,
		Definition:    turn.Definition{ID: "assistant", Revision: 1},
		LeaseDuration: hc.LeaseDuration,
		Logger:        quiet,
	})
	if err != nil {
		return nil, fmt.Errorf("turn handler: %w", err)
	}
	so := sessionapi.Options{Store: store, Authenticator: authn, Logger: quiet}
	hh, err := sessionapi.NewHistoryHandler(so)
	if err != nil {
		return nil, fmt.Errorf("history handler: %w", err)
	}
	ah, err := sessionapi.NewArtifactsHandler(so)
	if err != nil {
		return nil, fmt.Errorf("artifacts handler: %w", err)
	}
	w := &wiring{idle: make(chan struct{}, 1)}
	mux := http.NewServeMux()
	mount(mux, "/turn/", th)
	mount(mux, "/history/", hh)
	mount(mux, "/artifacts/", ah)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	w.base = "http://" + ln.Addr().String()
	w.srv = &http.Server{Handler: w.traced(mux), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = w.srv.Serve(ln) }() // ends with Close
	return w, nil
}

// traced gives each request a trace (filed under its benchIDHeader) and
// counts requests in flight.
func (w *wiring) traced(h http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.inflight.Add(1)
		defer func() {
			if w.inflight.Add(-1) == 0 {
				select {
				case w.idle <- struct{}{}:
				default:
				}
			}
		}()
		tr := &trace{aim: parseAim(r.Header.Get(benchFaultHeader))}
		if id := r.Header.Get(benchIDHeader); id != "" {
			w.traces.Store(id, tr)
		}
		h.ServeHTTP(rw, r.WithContext(withTrace(r.Context(), tr)))
	})
}

// trace returns the trace of the request sent with id, or nil.
func (w *wiring) trace(id string) *trace {
	v, ok := w.traces.Load(id)
	if !ok {
		return nil
	}
	return v.(*trace)
}

// waitIdle waits until no request is being served (handlers keep running
// after a client disconnect) or timeout passes.
func (w *wiring) waitIdle(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for w.inflight.Load() != 0 {
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-w.idle:
		case <-time.After(10 * time.Millisecond):
		}
	}
	return true
}

func (w *wiring) close() { _ = w.srv.Close() }

// mount serves h under prefix (ending in "/") with the prefix stripped, as
// cmd/devserver does, so h sees "/..." as behind its own function URL.
func mount(mux *http.ServeMux, prefix string, h http.Handler) {
	bare := strings.TrimSuffix(prefix, "/")
	mux.Handle(prefix, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r2 := new(http.Request)
		*r2 = *r
		u := *r.URL
		u.Path = "/" + strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, bare), "/")
		u.RawPath = ""
		r2.URL = &u
		r2.RequestURI = u.RequestURI()
		h.ServeHTTP(w, r2)
	}))
}

// ---- HTTP client ----------------------------------------------------------

// countingConn counts the bytes read from a connection.
type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// newHTTPClient returns a keep-alive client for up to conns parallel
// connections. With wire set, every connection counts the bytes it reads
// into wire and keep-alive is off, so one request is one connection.
func newHTTPClient(conns int, wire *atomic.Int64) *http.Client {
	d := &net.Dialer{Timeout: 5 * time.Second}
	tr := &http.Transport{
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
	}
	if wire != nil {
		tr.DisableKeepAlives = true
		tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return countingConn{Conn: c, n: wire}, nil
		}
	} else {
		tr.DialContext = d.DialContext
	}
	return &http.Client{Transport: tr}
}

// drain reads and closes a response body.
func drain(r io.ReadCloser) {
	_, _ = io.Copy(io.Discard, r)
	_ = r.Close()
}

// readLines reads NDJSON lines from r, calling fn with each (without its
// newline; the slice is reused). It stops when fn returns false.
func readLines(r io.Reader, fn func(line []byte) bool) error {
	br := newLineReader(r)
	for {
		line, err := br.next()
		if len(line) > 0 && !fn(line) {
			return nil
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

type lineReader struct {
	r   io.Reader
	buf []byte
	pos int
	end int
	out []byte
}

func newLineReader(r io.Reader) *lineReader { return &lineReader{r: r, buf: make([]byte, 64<<10)} }

// next returns the next line (without "\n"); at EOF a trailing fragment is
// returned with io.EOF.
func (l *lineReader) next() ([]byte, error) {
	l.out = l.out[:0]
	for {
		if l.pos < l.end {
			if i := bytes.IndexByte(l.buf[l.pos:l.end], '\n'); i >= 0 {
				l.out = append(l.out, l.buf[l.pos:l.pos+i]...)
				l.pos += i + 1
				return l.out, nil
			}
			l.out = append(l.out, l.buf[l.pos:l.end]...)
		}
		l.pos, l.end = 0, 0
		n, err := l.r.Read(l.buf)
		l.end = n
		if err != nil && n == 0 {
			return l.out, err
		}
	}
}
