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
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/turnstream/turnstream/internal/dynalite"
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
		ColdRuns: 5, ColdInvokes: 50, ColdFunctions: functions, Arm64Sizes: true,
	}
}

func quickSettings() settings {
	return settings{
		BudgetSessions: 3, TTFSRequests: 10, WireSessions: 1,
		Depths: [2]int{10, 200}, Pages: 10,
		Concurrency: []int{1, 8}, TurnsFor: 300 * time.Millisecond, WritesFor: 300 * time.Millisecond,
		Load: loadConfig{Sessions: 20, Turns: 5, Workers: 10, Faults: faultPlan{FailRate: 0.05, Persistent: 0.25},
			DisconnectRate: 0.05, Lease: time.Second, AttemptTimeout: 2 * loadAttemptTimeout, Seed: 1},
		// The turn bootstrap only: each build links the AWS SDK, which
		// dominates the quick run's time on a cold build cache.
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
	fs := flag.NewFlagSet("turnbench", flag.ContinueOnError)
	fs.SetOutput(stdout)
	quick := fs.Bool("quick", false, "short run with small sizes (the Go test's mode); figures are not comparable")
	repo := fs.String("repo", "", "module root (node_modules/.bin/dynalite, functions/); default: found from the working directory")
	rie := fs.String("rie", defaultRIE(), "aws-lambda-rie binary for the cold-start section (`make rie` installs it)")
	cold := fs.Bool("coldstart", true, "build the bootstraps and measure them under aws-lambda-rie")
	only := fs.String("only", "", "run only these sections, comma-separated: durable (checkpoints, resume, stop, crash), wire (paced snapshots)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() != 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	set := fullSettings()
	if *quick {
		set = quickSettings()
	}
	root := *repo
	if root == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		if root, err = repoRoot(wd); err != nil {
			return nil, err
		}
	}
	rep := &report{Quick: *quick, Command: "go run ./cmd/turnbench " + strings.Join(args, " "), NativeArc: runtime.GOARCH}
	began := time.Now()
	progress := func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "turnbench: %6.1fs "+format+"\n", append([]any{time.Since(began).Seconds()}, a...)...)
	}

	endpoint := os.Getenv("DYNAMODB_ENDPOINT")
	var dyn *dynalite.Server
	if endpoint == "" {
		var err error
		if dyn, err = dynalite.Start(root); err != nil {
			return nil, err
		}
		defer dyn.Stop()
		endpoint = dyn.Endpoint()
	}
	t := newTap()
	client, err := dynamo.NewClient(ctx, dynamo.ClientOptions{Endpoint: endpoint, Region: "us-east-1",
		StaticCredentials: os.Getenv("AWS_ACCESS_KEY_ID") == ""}, t.option)
	if err != nil {
		return nil, err
	}
	table := randomName("turnbench_")
	if err := dynamo.CreateTable(ctx, client, table); err != nil {
		return nil, err
	}
	defer func() {
		// ctx may be cancelled: the table is deleted with its own bound.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		_ = dynamo.DeleteTable(dctx, client, table) // best effort; a local server forgets it anyway
	}()
	cursorKey := []byte("turnbench-cursor-key-0123456789ab")
	store := dynamo.New(client, dynamo.Options{Table: table, CursorKey: cursorKey})
	prefix := randomName("b")
	if *only != "" {
		return runOnly(ctx, rep, *only, endpoint, client, table, cursorKey, prefix, progress, stdout)
	}

	fast, err := newWiring(store, handlerConfig{})
	if err != nil {
		return nil, err
	}
	defer fast.close()
	hc := newHTTPClient(8, nil)
	defer hc.CloseIdleConnections()

	progress("request budgets")
	if rep.Budgets, err = measureBudgets(ctx, fast, hc, prefix, set.BudgetSessions); err != nil {
		return nil, err
	}
	progress("time to first snapshot")
	if rep.TTFS, rep.Claim, err = firstSnapshot(ctx, fast, store, prefix, set.TTFSRequests); err != nil {
		return nil, err
	}
	progress("bytes on the wire")
	// 8 runes every 2 ms: a 1,206-character answer streams in about 300 ms.
	slow, err := newWiring(store, handlerConfig{EchoDelay: 2 * time.Millisecond, EchoChunk: 8})
	if err != nil {
		return nil, err
	}
	defer slow.close()
	rep.Wire = map[string]*wireResult{}
	for _, scope := range []string{"session", "turn"} {
		if rep.Wire[scope], err = wireBytes(ctx, slow, store, prefix, set.WireSessions, scope == "turn"); err != nil {
			return nil, err
		}
	}
	progress("history pages at depth %d and %d", set.Depths[0], set.Depths[1])
	rep.Depth = map[int]*pageResult{}
	for _, d := range set.Depths {
		if rep.Depth[d], err = historyDepth(ctx, fast, store, prefix, d, set.Pages); err != nil {
			return nil, err
		}
	}
	rep.Turns, rep.Writes = map[int]*throughputResult{}, map[int]float64{}
	for _, conc := range set.Concurrency {
		progress("throughput at %d concurrent sessions", conc)
		if rep.Writes[conc], err = conditionalWrites(ctx, client, table, prefix, conc, set.WritesFor); err != nil {
			return nil, err
		}
		rep.Turns[conc] = turnsPerSecond(ctx, fast, prefix, conc, set.TurnsFor)
	}

	progress("load run: %d sessions x %d turns, %.0f%% of DynamoDB calls faulty (%.0f%% of those on every attempt) and aimed faults, %.0f%% disconnects",
		set.Load.Sessions, set.Load.Turns, 100*set.Load.Faults.FailRate, 100*set.Load.Faults.Persistent, 100*set.Load.DisconnectRate)
	// The load run's own client: its transport injects the faults, below
	// the SDK's retryer, and a short attempt timeout cuts hung attempts.
	lt, inj := newLoadTransport(set.Load.Workers, set.Load.Seed)
	lclient, err := dynamo.NewClient(ctx, dynamo.ClientOptions{Endpoint: endpoint, Region: "us-east-1",
		StaticCredentials: os.Getenv("AWS_ACCESS_KEY_ID") == "", AttemptTimeout: set.Load.AttemptTimeout, Transport: lt}, t.option)
	if err != nil {
		return nil, err
	}
	lstore := dynamo.New(lclient, dynamo.Options{Table: table, CursorKey: cursorKey})
	lw, err := newWiring(lstore, handlerConfig{EchoDelay: time.Millisecond, EchoChunk: 4, LeaseDuration: set.Load.Lease})
	if err != nil {
		return nil, err
	}
	defer lw.close()
	rep.Load = runLoad(ctx, lw, inj, prefix, set.Load)

	if !*quick { // -quick leaves them to TestDurableSections (-quick -only durable,wire)
		if rep.Durable, err = durableAll(ctx, endpoint, client, table, cursorKey, prefix, false, nil, progress); err != nil {
			return nil, err
		}
	}
	if *cold {
		progress("bootstraps: build and cold starts under %s", *rie)
		rep.Sizes, rep.Cold, rep.ColdErr = coldSection(ctx, root, *rie, endpoint, table, prefix, set)
	} else {
		rep.ColdErr = fmt.Errorf("%w: -coldstart=false", errSkipped)
	}

	progress("done")
	rep.SelfHWM, _ = vmHWM(os.Getpid()) // 0 where /proc is missing; the table says so
	if dyn != nil {
		rep.DynHWM, _ = vmHWM(dyn.Pid())
	}
	rep.Calls, rep.Attempts = t.calls.Load(), t.attempts.Load()
	rep.AttemptErrors, rep.Retries = t.attemptErrors(), t.retries.Load()
	if err := writeTable(stdout, rep, set); err != nil {
		return nil, fmt.Errorf("write the table: %w", err)
	}
	return rep, nil
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
	sizes := map[string]map[string]int64{}
	var native map[string]string
	archs := []string{runtime.GOARCH}
	if set.Arm64Sizes {
		archs = append(archs, "arm64")
	}
	for _, arch := range archs {
		if sizes[arch] != nil {
			continue
		}
		paths, sz, err := buildBootstraps(ctx, root, dir, "linux", arch, set.ColdFunctions)
		if err != nil {
			return nil, nil, err
		}
		sizes[arch] = sz
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

// defaultRIE is the Makefile's RIE_DIR install path of aws-lambda-rie.
func defaultRIE() string {
	dir := os.Getenv("TURNSTREAM_RIE_DIR")
	if dir == "" {
		cache := os.Getenv("XDG_CACHE_HOME")
		if cache == "" {
			home, _ := os.UserHomeDir()
			cache = filepath.Join(home, ".cache")
		}
		dir = filepath.Join(cache, "turnstream", "aws-lambda-rie-v0.0.0-20261030222936-bef5c4ba774d")
	}
	return filepath.Join(dir, "aws-lambda-rie")
}
