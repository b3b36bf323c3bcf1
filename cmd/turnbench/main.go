// Command turnbench measures turnstream against its budgets and prints
// one markdown table, each figure beside a baseline measured in the same
// run:
//
//	go run ./cmd/turnbench            # full run, a few minutes on 2 cores
//	go run ./cmd/turnbench -quick     # seconds; what the Go test runs
//
// It serves the real handlers mounted as cmd/devserver mounts them
// (/turn/, /history/, /artifacts/, prefix stripped) over loopback HTTP, on
// the DynamoDB store over a dynalite it starts from node_modules (or the
// server named by DYNAMODB_ENDPOINT), with the echo model and dev auth.
// SDK middleware on the DynamoDB clients counts every call and files it
// under the HTTP request that caused it. Figures:
//
//   - DynamoDB requests per completed turn (budget 4; 3 for a new
//     session) and per history page (budget 1);
//   - turns/s at 1, 8 and 64 concurrent sessions (echo, no delay) against
//     conditional UpdateItem/s of the same server at the same concurrency,
//     and that ceiling / 4 (four writes a turn);
//   - time to first snapshot p50/p99 (client: request sent -> first NDJSON
//     line) against ClaimTurn p50/p99 called directly on the store;
//   - bytes on the wire per turn against the final snapshot, in session
//     and turn snapshot scope, for a session of 10 prior turns and a
//     1,200-character answer streamed with a small echo delay;
//   - a history page at depth 10 against depth 10,000;
//   - cold start of each bootstrap under aws-lambda-rie (exec -> first
//     Runtime API request, through a recording proxy), binary sizes
//     (linux/arm64 release and the native build run), and each bootstrap's
//     peak RSS (VmHWM) after driving requests, against turnbench's own;
//   - a load run (default 200 sessions x 10 turns) on its own DynamoDB
//     client, whose HTTP transport injects faults below the SDK's
//     retryer (internal/ddbfault), so the SDK really retries: 5% of calls
//     meet a lost answer (applied, then the connection reset), a 500 after
//     the write applied, a 500 before it, or a hung connection (cut by a
//     250 ms attempt timeout, 500 ms with -quick), on the first attempt
//     or, for a quarter of them, on every one; beside those random faults, each case that
//     matters is aimed at some turns (faults.go, aims), and 5% of streams
//     are cut by the client. The transport records DynamoDB's real answer
//     to every attempt, so the verification knows which writes applied
//     whatever the store was told, and checks every outcome against it,
//     and the sessions through the history handler with faults off: no
//     acknowledged turn lost or duplicated, no turn reported unsaved that
//     was saved (unless the read that would tell also failed), every claim
//     whose write applied with its answer lost run exactly once, no
//     SESSION_BUSY for a request's own claim, no snapshot line built after
//     its lease expired or after another turn claimed the session, no
//     lease held past its expiry (load.go, checkLines, says what the line
//     check can and cannot prove).
//
// Flags: -quick (small sizes, seconds), -coldstart=false (skip the
// builds and the emulator), -rie PATH (default: the Makefile's RIE_DIR
// install, `make rie`), -repo DIR (module root; default: found from the
// working directory). Progress goes to stderr, the table to stdout. It
// exits with status 1 when a section fails or the load run's verification
// finds a problem.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/turnstream/turnstream/internal/dynalite"
	"github.com/turnstream/turnstream/internal/lambdabin"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

func main() {
	maybeExecBootstrap()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := run(ctx, os.Args[1:], os.Stdout)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "turnbench:", err)
		os.Exit(1)
	}
	if !rep.Load.ok() {
		fmt.Fprintln(os.Stderr, "turnbench: the load run's verification failed")
		os.Exit(1)
	}
	if rep.ColdErr != nil && !errors.Is(rep.ColdErr, errSkipped) {
		fmt.Fprintln(os.Stderr, "turnbench: cold starts:", rep.ColdErr)
		os.Exit(1)
	}
}

// loadAttemptTimeout is the load client's per-attempt timeout: short, so
// that a hung attempt costs little, and far above a loopback answer. The
// quick run (the Go test) uses twice as much: an attempt that reaches
// dynalite and times out on its own may apply after the store's resolving
// read (the full run reports it), which a test must not turn into a
// failure on a slow machine.
const loadAttemptTimeout = 250 * time.Millisecond

// settings are a run's sizes: full (default) or -quick.
type settings struct {
	BudgetSessions int
	TTFSRequests   int
	WireSessions   int
	Depths         [2]int
	Pages          int
	Concurrency    []int
	TurnsFor       time.Duration // each throughput level
	WritesFor      time.Duration // each baseline level
	Load           loadConfig
	ColdRuns       int
	ColdInvokes    int
	// ColdFunctions are the functions built and run under the emulator
	// (beside the minimal baseline).
	ColdFunctions []string
	// ReleaseBuilds builds the bootstraps with the release flags (for
	// their sizes; also what runs under the emulator); otherwise the run
	// uses the test build (internal/lambdabin.Bootstraps).
	ReleaseBuilds bool
	// Arm64Sizes also builds the linux/arm64 release bootstraps for their
	// sizes (the native build is what runs under the emulator).
	Arm64Sizes bool
}

func fullSettings() settings {
	return settings{
		BudgetSessions: 20, TTFSRequests: 200, WireSessions: 5,
		Depths: [2]int{10, 10_000}, Pages: 200,
		Concurrency: []int{1, 8, 64}, TurnsFor: 5 * time.Second, WritesFor: 3 * time.Second,
		Load: loadConfig{Sessions: 200, Turns: 10, Workers: 50, Faults: faultPlan{FailRate: 0.05, Persistent: 0.25},
			DisconnectRate: 0.05, Lease: 2 * time.Second, AttemptTimeout: loadAttemptTimeout, Seed: 1},
		ColdRuns: 5, ColdInvokes: 50, ColdFunctions: functions, ReleaseBuilds: true, Arm64Sizes: true,
	}
}

func quickSettings() settings {
	return settings{
		BudgetSessions: 3, TTFSRequests: 10, WireSessions: 1,
		Depths: [2]int{10, 200}, Pages: 10,
		Concurrency: []int{1, 8}, TurnsFor: 300 * time.Millisecond, WritesFor: 300 * time.Millisecond,
		Load: loadConfig{Sessions: 20, Turns: 5, Workers: 10, Faults: faultPlan{FailRate: 0.05, Persistent: 0.25},
			DisconnectRate: 0.05, Lease: time.Second, AttemptTimeout: 2 * loadAttemptTimeout, Seed: 1},
		// The turn bootstrap only, of the test build the smoke test shares
		// (prebuilt by make test, so the Go test compiles nothing).
		ColdRuns: 1, ColdInvokes: 3, ColdFunctions: []string{"turn"},
	}
}

// report is everything a run measured; run renders it as the table.
type report struct {
	Quick     bool
	Command   string
	Budgets   *budgetResult
	TTFS      latencies
	Claim     latencies
	Wire      map[string]*wireResult // by scope: "session", "turn"
	Depth     map[int]*pageResult
	Turns     map[int]*throughputResult // by concurrency
	Writes    map[int]float64           // conditional UpdateItem/s by concurrency
	Cold      map[string]*coldResult
	ColdErr   error
	NativeArc string
	Sizes     map[string]map[string]int64 // by goarch, then function
	SelfHWM   int64                       // turnbench's own VmHWM, KiB
	DynHWM    int64                       // dynalite's VmHWM, KiB (0 when not started here)
	Load      *loadReport
	Calls     int64 // DynamoDB API calls, all sections
	Attempts  int64 // HTTP attempts to DynamoDB, all sections
	Retries   int64 // attempts beyond the first of a call (the SDK's retries)
	// AttemptErrors counts failed HTTP attempts to DynamoDB by error text
	// (conditional check failures excluded).
	AttemptErrors map[string]int
	// Durable is the durable-turn and paced-wire sections (nil in -quick).
	Durable *durableReport
}

// run parses args, measures and writes the table to stdout.
func run(ctx context.Context, args []string, stdout io.Writer) (*report, error) {
	o, err := parseArgs(args, stdout)
	if err != nil {
		return nil, err
	}
	set := fullSettings()
	if o.quick {
		set = quickSettings()
	}
	rep := &report{Quick: o.quick, Command: "go run ./cmd/turnbench " + strings.Join(args, " "), NativeArc: runtime.GOARCH}
	began := time.Now()
	progress := func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "turnbench: %6.1fs "+format+"\n", append([]any{time.Since(began).Seconds()}, a...)...)
	}
	b, err := startBench(ctx, o.root)
	if err != nil {
		return nil, err
	}
	defer b.close(ctx)
	if o.capacity {
		raw, err := dynamo.NewClient(ctx, dynamo.ClientOptions{Endpoint: b.endpoint, Region: "us-east-1",
			StaticCredentials: os.Getenv("AWS_ACCESS_KEY_ID") == ""})
		if err != nil {
			return nil, err
		}
		return runCapacity(ctx, rep, b.client, raw, b.table, b.cursorKey, progress, stdout)
	}
	if tp, cs, ok := ownSections(o.only); ok {
		return runOwn(ctx, rep, set, o.root, o.rie, b.endpoint, b.table, b.cursorKey, b.prefix, b.dyn, o.cpuProfile, tp, cs, progress, stdout)
	}
	if o.only != "" {
		return runOnly(ctx, rep, o.only, b.endpoint, b.client, b.table, b.cursorKey, b.prefix, progress, stdout)
	}

	// The sections, in order.
	if err := handlerSections(ctx, b, rep, set, progress); err != nil {
		return nil, err
	}
	if rep.Load, err = loadSection(ctx, b, set.Load, progress); err != nil {
		return nil, err
	}
	if !o.quick { // -quick leaves them to TestDurableSections (-quick -only durable,wire)
		if rep.Durable, err = durableAll(ctx, b.endpoint, b.client, b.table, b.cursorKey, b.prefix, false, nil, progress); err != nil {
			return nil, err
		}
	}
	if o.cold {
		progress("bootstraps: build and cold starts under %s", o.rie)
		rep.Sizes, rep.Cold, rep.ColdErr = coldSection(ctx, o.root, o.rie, b.endpoint, b.table, b.prefix, set)
	} else {
		rep.ColdErr = fmt.Errorf("%w: -coldstart=false", errSkipped)
	}
	progress("done")

	rep.SelfHWM, _ = vmHWM(os.Getpid()) // 0 where /proc is missing; the table says so
	if b.dyn != nil {
		rep.DynHWM, _ = vmHWM(b.dyn.Pid())
	}
	rep.Calls, rep.Attempts = b.tap.calls.Load(), b.tap.attempts.Load()
	rep.AttemptErrors, rep.Retries = b.tap.attemptErrors(), b.tap.retries.Load()
	if err := writeTable(stdout, rep, set); err != nil {
		return nil, fmt.Errorf("write the table: %w", err)
	}
	return rep, nil
}

// args are turnbench's flags.
type args struct {
	quick, cold, capacity bool
	root, rie             string
	only, cpuProfile      string
}

// parseArgs parses the command line; root is the module root (-repo, or
// found from the working directory).
func parseArgs(argv []string, stdout io.Writer) (args, error) {
	fs := flag.NewFlagSet("turnbench", flag.ContinueOnError)
	fs.SetOutput(stdout)
	var a args
	fs.BoolVar(&a.quick, "quick", false, "short run with small sizes (the Go test's mode); figures are not comparable")
	fs.StringVar(&a.root, "repo", "", "module root (node_modules/.bin/dynalite, functions/); default: found from the working directory")
	fs.StringVar(&a.rie, "rie", defaultRIE(), "aws-lambda-rie binary for the cold-start section (`make rie` installs it)")
	fs.BoolVar(&a.cold, "coldstart", true, "build the bootstraps and measure them under aws-lambda-rie")
	fs.BoolVar(&a.capacity, "capacity", false, "run only the capacity section: billed read and write units and requests of one turn at depths 1, 100 and 1,000 of a session")
	fs.StringVar(&a.only, "only", "", "run only these sections, comma-separated: durable (checkpoints, resume, stop, crash), wire (paced snapshots); or throughput, coldstart")
	fs.StringVar(&a.cpuProfile, "cpuprofile", "", "with -only throughput: CPU-profile each turn slice into `PREFIX`-c<sessions>-r<rep>-s<slice>.pprof")
	if err := fs.Parse(argv); err != nil {
		return a, err
	}
	if fs.NArg() != 0 {
		return a, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if a.root == "" {
		wd, err := os.Getwd()
		if err != nil {
			return a, err
		}
		if a.root, err = repoRoot(wd); err != nil {
			return a, err
		}
	}
	return a, nil
}

// bench is what every section runs on: a DynamoDB API server, a table on
// it, the tapped client and a store on it, and the run's session id
// prefix.
type bench struct {
	endpoint  string
	dyn       *dynalite.Server // nil when DYNAMODB_ENDPOINT named the server
	tap       *tap
	client    benchClient
	table     string
	cursorKey []byte
	store     chat.Store
	prefix    string
}

// benchClient is a DynamoDB client for the store and for the table's
// creation and deletion (dynamo.NewClient's).
type benchClient interface {
	dynamo.Client
	dynamo.TableClient
}

// startBench starts dynalite from root's node_modules (unless
// DYNAMODB_ENDPOINT names a server) and creates the run's table.
func startBench(ctx context.Context, root string) (*bench, error) {
	b := &bench{endpoint: os.Getenv("DYNAMODB_ENDPOINT"), tap: newTap(),
		cursorKey: []byte("turnbench-cursor-key-0123456789ab"), prefix: randomName("b")}
	if b.endpoint == "" {
		var err error
		if b.dyn, err = dynalite.Start(root); err != nil {
			return nil, err
		}
		b.endpoint = b.dyn.Endpoint()
	}
	client, err := b.newClient(ctx, 0, nil)
	if err != nil {
		b.close(ctx)
		return nil, err
	}
	b.client = client
	table := randomName("turnbench_")
	if err := dynamo.CreateTable(ctx, client, table); err != nil {
		b.close(ctx)
		return nil, err
	}
	b.table = table
	b.store = dynamo.New(client, dynamo.Options{Table: table, CursorKey: b.cursorKey})
	return b, nil
}

// newClient returns a tapped client of the run's server, with its own
// attempt timeout and transport when they are set.
func (b *bench) newClient(ctx context.Context, attemptTimeout time.Duration, transport http.RoundTripper) (benchClient, error) {
	return dynamo.NewClient(ctx, dynamo.ClientOptions{Endpoint: b.endpoint, Region: "us-east-1",
		StaticCredentials: os.Getenv("AWS_ACCESS_KEY_ID") == "", AttemptTimeout: attemptTimeout, Transport: transport}, b.tap.option)
}

// close deletes the table (best effort: a local server forgets it
// anyway) and stops dynalite.
func (b *bench) close(ctx context.Context) {
	if b.table != "" {
		// ctx may be cancelled: the table is deleted with its own bound.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		_ = dynamo.DeleteTable(dctx, b.client, b.table)
		cancel()
	}
	if b.dyn != nil {
		b.dyn.Stop()
	}
}

// handlerSections measures the dev server's handler: request budgets,
// time to first snapshot, bytes on the wire, history pages at depth and
// throughput against the server's conditional writes.
func handlerSections(ctx context.Context, b *bench, rep *report, set settings, progress func(string, ...any)) error {
	fast, err := newWiring(b.store, handlerConfig{})
	if err != nil {
		return err
	}
	defer fast.close()
	hc := newHTTPClient(8, nil)
	defer hc.CloseIdleConnections()

	progress("request budgets")
	if rep.Budgets, err = measureBudgets(ctx, fast, hc, b.prefix, set.BudgetSessions); err != nil {
		return err
	}
	progress("time to first snapshot")
	if rep.TTFS, rep.Claim, err = firstSnapshot(ctx, fast, b.store, b.prefix, set.TTFSRequests); err != nil {
		return err
	}
	progress("bytes on the wire")
	// 8 runes every 2 ms: a 1,206-character answer streams in about 300 ms.
	slow, err := newWiring(b.store, handlerConfig{EchoDelay: 2 * time.Millisecond, EchoChunk: 8})
	if err != nil {
		return err
	}
	defer slow.close()
	rep.Wire = map[string]*wireResult{}
	for _, scope := range []string{"session", "turn"} {
		if rep.Wire[scope], err = wireBytes(ctx, slow, b.store, b.prefix, set.WireSessions, scope == "turn"); err != nil {
			return err
		}
	}
	progress("history pages at depth %d and %d", set.Depths[0], set.Depths[1])
	rep.Depth = map[int]*pageResult{}
	for _, d := range set.Depths {
		if rep.Depth[d], err = historyDepth(ctx, fast, b.store, b.prefix, d, set.Pages); err != nil {
			return err
		}
	}
	rep.Turns, rep.Writes = map[int]*throughputResult{}, map[int]float64{}
	for _, conc := range set.Concurrency {
		progress("throughput at %d concurrent sessions", conc)
		if rep.Writes[conc], err = conditionalWrites(ctx, b.client, b.table, b.prefix, conc, set.WritesFor); err != nil {
			return err
		}
		rep.Turns[conc] = turnsPerSecond(ctx, fast, b.prefix, conc, set.TurnsFor)
	}
	return nil
}

// loadSection runs the load run on its own DynamoDB client, whose
// transport injects the faults below the SDK's retryer, with a short
// attempt timeout that cuts hung attempts.
func loadSection(ctx context.Context, b *bench, lc loadConfig, progress func(string, ...any)) (*loadReport, error) {
	progress("load run: %d sessions x %d turns, %.0f%% of DynamoDB calls faulty (%.0f%% of those on every attempt) and aimed faults, %.0f%% disconnects",
		lc.Sessions, lc.Turns, 100*lc.Faults.FailRate, 100*lc.Faults.Persistent, 100*lc.DisconnectRate)
	lt, inj := newLoadTransport(lc.Workers, lc.Seed)
	lclient, err := b.newClient(ctx, lc.AttemptTimeout, lt)
	if err != nil {
		return nil, err
	}
	lstore := dynamo.New(lclient, dynamo.Options{Table: b.table, CursorKey: b.cursorKey})
	lw, err := newWiring(lstore, handlerConfig{EchoDelay: time.Millisecond, EchoChunk: 4, LeaseDuration: lc.Lease})
	if err != nil {
		return nil, err
	}
	defer lw.close()
	return runLoad(ctx, lw, inj, b.prefix, lc), nil
}

// coldSection builds the bootstraps (linux/arm64 for the release sizes,
// the native architecture for the emulator runs) and measures them under
// rie. A missing emulator skips the runs, not the sizes.
func coldSection(ctx context.Context, root, rie, endpoint, table, prefix string, set settings) (map[string]map[string]int64, map[string]*coldResult, error) {
	dir, err := os.MkdirTemp("", "turnbench-bin-")
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	names := append([]string{baseline}, set.ColdFunctions...)
	sizes := map[string]map[string]int64{}
	var native map[string]string
	if !set.ReleaseBuilds {
		// The test build the smoke test shares (prebuilt by make test).
		if native, err = lambdabin.Bootstraps(ctx, root, dir, names...); err != nil {
			return nil, nil, err
		}
		if sizes[runtime.GOARCH], err = sizesOf(native); err != nil {
			return nil, nil, err
		}
	}
	archs := []string{runtime.GOARCH}
	if set.Arm64Sizes {
		archs = append(archs, "arm64")
	}
	for _, arch := range archs {
		if !set.ReleaseBuilds || sizes[arch] != nil {
			continue
		}
		paths, err := lambdabin.Build(ctx, root, filepath.Join(dir, arch), lambdabin.Options{Release: true, GOOS: "linux", GOARCH: arch}, names...)
		if err != nil {
			return nil, nil, err
		}
		if sizes[arch], err = sizesOf(paths); err != nil {
			return nil, nil, err
		}
		if arch == runtime.GOARCH {
			native = paths
		}
	}
	if runtime.GOOS != "linux" {
		return sizes, nil, fmt.Errorf("%w: the emulator runs need linux", errSkipped)
	}
	if _, err := os.Stat(rie); err != nil {
		return sizes, nil, fmt.Errorf("%w: %s not found (make rie)", errSkipped, rie)
	}
	self, err := os.Executable()
	if err != nil {
		return sizes, nil, err
	}
	env := []string{
		"DYNAMODB_ENDPOINT=" + endpoint, "TABLE_NAME=" + table, "AWS_REGION=us-east-1",
		"AUTH_MODE=iam", "ARTIFACTS_TRUSTED_SUBJECT=" + iamHost, "MODEL_PROVIDER=echo", "ECHO_DELAY=0s",
		"CURSOR_SECRET=turnbench-cursor-secret-0123456789", "LOG_LEVEL=error",
	}
	cold, err := measureColdStarts(ctx, rie, self, native, env, prefix+"-rie", set.ColdRuns, set.ColdInvokes)
	return sizes, cold, err
}

// sizesOf returns the size of each file of paths, by name.
func sizesOf(paths map[string]string) (map[string]int64, error) {
	sizes := map[string]int64{}
	for name, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		sizes[name] = st.Size()
	}
	return sizes, nil
}

// defaultRIE is the Makefile's RIE_DIR install path of aws-lambda-rie
// (lambdabin.RIEPath).
func defaultRIE() string {
	p, err := lambdabin.RIEPath()
	if err != nil {
		return "aws-lambda-rie" // no home directory: the flag must say
	}
	return p
}
