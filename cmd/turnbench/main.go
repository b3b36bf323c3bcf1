// Command turnbench measures turnstream against its budgets and prints
// one markdown table, each figure beside a baseline measured in the same
// run:
//
//	go run ./cmd/turnbench            # full run, a few minutes on 2 cores
//	go run ./cmd/turnbench -quick     # seconds; what the Go test runs
//	go run ./cmd/turnbench -only coldstart,throughput
//
// It serves the real handlers mounted as cmd/devserver mounts them
// (/turn/, /history/, /artifacts/, prefix stripped) over loopback HTTP, on
// the DynamoDB store over a dynalite it starts from node_modules (or the
// server named by DYNAMODB_ENDPOINT), with the echo model and dev auth,
// and talks to them with pkg/client. SDK middleware on the DynamoDB
// clients (internal/loadcheck's Tap) counts every call and files it under
// the HTTP request that caused it. The run is made of sections (the
// sections table below; -only runs some of them):
//
//   - handler: DynamoDB requests per completed turn (budget 4; 3 for a
//     new session; the usage ledger off, as in every section but the
//     load run and ledger) and per history page (budget 1); turns/s at 1, 8 and
//     64 concurrent sessions against conditional UpdateItem/s of the same
//     server and that ceiling / 4; time to first snapshot p50/p99 against
//     ClaimTurn called directly on the store; bytes on the wire per turn
//     against the final snapshot, in session and turn snapshot scope; a
//     history page at depth 10 against depth 10,000;
//   - load: a fault-injecting load run (default 200 sessions x 10 turns)
//     and its verification, internal/loadcheck, the usage ledger's
//     counters included;
//   - durable, wire: checkpoint cost, resume and stop latency, characters
//     lost in a crash; paced and compact snapshots (not in -quick);
//   - coldstart: each bootstrap's size, cold start under aws-lambda-rie,
//     start-up account and peak memory against a minimal bootstrap, and
//     the turn bootstrap against the one built with upstream jsonschema,
//     internal/coldstart;
//   - throughput (-only): turns/s against the ceiling with an account of
//     a turn's time and CPU, and request shapes;
//   - capacity (-only, or -capacity): billed read and write units of one
//     turn at depths 1, 100 and 1,000 of a session (internal/capacitybench);
//   - telemetry: CPU per turn and time to first snapshot with EMF
//     metrics and tracing on against telemetry off (not in -quick);
//   - cost: billed units, requests and Lambda GB-seconds of a 1 KB and a
//     16 KB answer with and without checkpoints, and of a history page,
//     priced with AWS's on-demand prices (README "What a turn costs"; not
//     in -quick).
//   - multitask: queued turns against plain ones (internal/queuebench);
//   - ledger: the usage ledger's requests and units per turn against the
//     ledger off (one write: budgets 4 + 1 and 3 + 1), the quota check
//     before the claim against the ledger alone, time to the first line,
//     a ledger item's growth with the sessions it counted (internal/ledgerbench);
//   - attachments: a turn with one 1 MiB image against one without (time
//     to first snapshot, requests, units, store calls, bytes allocated),
//     the upload's two phases, the body bytes the store and the
//     functions received, and the turn function's peak memory under
//     aws-lambda-rie with moto_server's S3 (internal/attachbench; not in
//     -quick);
//   - cpushare (-only): the bootstraps under aws-lambda-rie in cgroups of
//     Lambda's CPU share at 128, 256, 512 and 1,024 MB (internal/cpushare);
//   - fate (-only): the fate harness's long form (internal/fate) at the
//     short and the default lease (-fate-lease short|default|both,
//     -fate-schedules, -fate-seed), exit status 1 when it finds a
//     violation.
//
// Flags: -quick (small sizes, seconds), -only SECTIONS, -coldstart=false
// (leave the cold-start section out of the default run), -rie PATH
// (default: the Makefile's RIE_DIR install, `make rie`), -repo DIR (module
// root; default: found from the working directory). Progress goes to
// stderr, the table to stdout. It exits with status 1 when a section
// fails or the load run's verification finds a problem.
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
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/turnstream/turnstream/internal/attachbench"
	"github.com/turnstream/turnstream/internal/benchwire"
	"github.com/turnstream/turnstream/internal/capacitybench"
	"github.com/turnstream/turnstream/internal/coldstart"
	"github.com/turnstream/turnstream/internal/cpushare"
	"github.com/turnstream/turnstream/internal/dynalite"
	"github.com/turnstream/turnstream/internal/lambdabin"
	"github.com/turnstream/turnstream/internal/ledgerbench"
	"github.com/turnstream/turnstream/internal/loadcheck"
	"github.com/turnstream/turnstream/internal/queuebench"
	"github.com/turnstream/turnstream/internal/telemetrybench"
	"github.com/turnstream/turnstream/internal/throughput"
	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

func main() {
	coldstart.MaybeExec()
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
	if fateFailed(rep) {
		fmt.Fprintln(os.Stderr, "turnbench:", errFateFound)
		os.Exit(1)
	}
	if rep.Load != nil && !rep.Load.OK() {
		fmt.Fprintln(os.Stderr, "turnbench: the load run's verification failed")
		os.Exit(1)
	}
	if c := rep.Cold; c != nil && c.Err != nil && !errors.Is(c.Err, coldstart.ErrSkipped) {
		fmt.Fprintln(os.Stderr, "turnbench: cold starts:", c.Err)
		os.Exit(1)
	}
}

// A section is one part of the run. -only selects sections by name; the
// default run is the sections marked inRun (inQuick: also with -quick),
// in this order. run measures into rep (names: those of the section's
// names the run asked for), rows renders what it measured (only: the
// section runs without the rest, in a table of its own), notes adds lines
// under the table. To add a section, add an entry.
type section struct {
	names          []string
	about          string
	inRun, inQuick bool
	run            func(ctx context.Context, b *bench, rep *report, names map[string]bool) error
	rows           func(rep *report, only bool) [][4]string
	notes          func(rep *report) []string
}

// sections are turnbench's sections.
var sections = []section{
	{names: []string{"handler"}, about: "request budgets, time to first snapshot, bytes on the wire, history pages at depth, turns/s",
		inRun: true, inQuick: true, run: handlerSections, rows: handlerRows},
	{names: []string{"load"}, about: "the fault-injecting load run and its verification (internal/loadcheck)",
		inRun: true, inQuick: true, run: loadSection, rows: loadRows, notes: loadNotes},
	{names: []string{"durable", "wire"}, about: "durable: checkpoint cost, resume, stop, crash; wire: paced and compact snapshots",
		inRun: true, run: durableSection, rows: func(rep *report, _ bool) [][4]string { return durableRows(rep.Durable) }, notes: durableNotes},
	{names: []string{"coldstart"}, about: "bootstrap sizes, cold starts under aws-lambda-rie, start-up accounts (internal/coldstart)",
		inRun: true, inQuick: true, run: coldSection, rows: coldRows, notes: coldNotes},
	{names: []string{"throughput"}, about: "turns/s against the conditional-write ceiling, with a time and CPU account and request shapes",
		run: throughputRun, rows: func(rep *report, _ bool) [][4]string { return rep.Throughput }},
	{names: []string{"capacity"}, about: "billed read and write units and requests of one turn at depths 1, 100 and 1,000 of a session",
		run: capacityRun, rows: capacityRows},
	{names: []string{"telemetry"}, about: "CPU per turn and time to first snapshot with EMF metrics and tracing on vs off (docs/operations.md)",
		inRun: true, run: telemetrySection, rows: telemetryRows},
	{names: []string{"cost"}, about: "what a turn costs: billed units and Lambda GB-seconds of 1 KB and 16 KB answers with and without checkpoints, a history page, priced",
		inRun: true, run: costSection, rows: costRows, notes: costNotes},
	{names: []string{"multitask"}, about: "queued turns: requests and units against a plain turn, the delay from the previous turn's end to the queued turn's first line",
		inRun: true, inQuick: true, run: multitaskRun, rows: multitaskRows},
	{names: []string{"fate"}, about: "the fate harness at the short and the default lease (-fate-lease): seeded schedules of pauses, kills, faults, resumes, stops, rollbacks, quota bursts and reads on three dev servers, checked against the turn's invariants (internal/fate)",
		run: fateRun, rows: fateRows, notes: fateNotes},
	{names: []string{"cpushare"}, about: "Lambda's CPU share: the bootstraps under aws-lambda-rie in cgroups of 128-1,024 MB's CPU, cold start, time to first snapshot, CPU per turn and per line, Lambda cost (internal/cpushare; root and cgroup v1)",
		run: cpuShareRun, rows: cpuShareRows},
	{names: []string{"conversations"}, about: "GET /sessions: a page of a principal's sessions at 10 and 10,000 sessions (requests, p50 and p99); the cost of deleting a session of 10 and of 1,000 turns",
		inRun: true, run: conversationsRun, rows: conversationsRows},
	{names: []string{"branches"}, about: "versions of answers: the newest history page at 100 places x 10 versions against 100 plain turns (p50, requests); the write units of a regeneration against a plain turn",
		inRun: true, run: branchesRun, rows: branchesRows},
	{names: []string{"attachments"}, about: "a turn with one 1 MiB image against one without: time to first snapshot, DynamoDB requests and units, store calls, bytes allocated; the upload's two phases and the body bytes the store and the functions received; the turn function's peak memory under aws-lambda-rie reading from moto_server's S3 (internal/attachbench)",
		inRun: true, run: attachmentsRun, rows: func(rep *report, _ bool) [][4]string { return rep.Attachments.Rows() }},
	{names: []string{"ledger"}, about: "the usage ledger and the quota check before the claim: requests, units and time to the first line against the ledger off; a ledger item's growth",
		inRun: true, inQuick: true, run: ledgerRun, rows: ledgerRows, notes: ledgerNotes},
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
	Load           loadcheck.Config
	Cold           coldstart.Settings
}

func fullSettings() settings {
	return settings{
		BudgetSessions: 20, TTFSRequests: 200, WireSessions: 5,
		Depths: [2]int{10, 10_000}, Pages: 200,
		Concurrency: []int{1, 8, 64}, TurnsFor: 5 * time.Second, WritesFor: 3 * time.Second,
		Load: loadcheck.Config{Sessions: 200, Turns: 10, Workers: 50, Faults: loadcheck.FaultPlan{FailRate: 0.05, Persistent: 0.25},
			DisconnectRate: 0.05, Lease: 2 * time.Second, AttemptTimeout: loadAttemptTimeout, Seed: 1},
		Cold: coldstart.Settings{Runs: 5, Invokes: 50, Functions: []string{"turn", "history", "artifacts"},
			ReleaseBuilds: true, Arm64Sizes: true, Upstream: true, Telemetry: true, MCP: true},
	}
}

func quickSettings() settings {
	return settings{
		BudgetSessions: 3, TTFSRequests: 10, WireSessions: 1,
		Depths: [2]int{10, 200}, Pages: 10,
		Concurrency: []int{1, 8}, TurnsFor: 300 * time.Millisecond, WritesFor: 300 * time.Millisecond,
		Load: loadcheck.Config{Sessions: 20, Turns: 5, Workers: 10, Faults: loadcheck.FaultPlan{FailRate: 0.05, Persistent: 0.25},
			DisconnectRate: 0.05, Lease: time.Second, AttemptTimeout: 2 * loadAttemptTimeout, Seed: 1},
		// The turn bootstrap only, of the test build the smoke test shares
		// (prebuilt by make test, so the Go test compiles nothing).
		Cold: coldstart.Settings{Runs: 1, Invokes: 3, Functions: []string{"turn"}},
	}
}

// report is everything a run measured; run renders it as the table.
type report struct {
	Quick    bool
	Set      settings
	Budgets  *budgetResult
	TTFS     latencies
	Claim    latencies
	Wire     map[string]*wireResult // by scope: "session", "turn"
	Depth    map[int]*pageResult
	Turns    map[int]*throughputResult // by concurrency
	Writes   map[int]float64           // conditional UpdateItem/s by concurrency
	Cold     *coldstart.Report         // nil when not run
	SelfHWM  int64                     // turnbench's own VmHWM, KiB
	DynHWM   int64                     // dynalite's VmHWM, KiB (0 when not started here)
	Load     *loadcheck.Report         // nil when not run
	Calls    int64                     // DynamoDB API calls, all sections
	Attempts int64                     // HTTP attempts to DynamoDB, all sections
	Retries  int64                     // attempts beyond the first of a call (the SDK's retries)
	// AttemptErrors counts failed HTTP attempts to DynamoDB by error text
	// (conditional check failures excluded).
	AttemptErrors map[string]int
	// Durable is the durable-turn and paced-wire sections.
	Durable *durableReport
	// Throughput is the throughput section's rows.
	Throughput [][4]string
	// Capacity is the capacity section's turns.
	Capacity []*capacitybench.Result
	// Telemetry is the telemetry section's measurements.
	Telemetry *telemetrybench.Result
	// Cost is the cost section's measurements.
	Cost *capacitybench.CostResult
	// Ledger is the ledger section's figures.
	Ledger *ledgerbench.Result
	// Attachments is the attachments section's figures.
	Attachments *attachbench.Result
	// Multitask is the multitask section's figures.
	Multitask *queuebench.Result
	// Fate is the fate section's report.
	Fate *fateResult
	// CPUShare is the CPU-share section's figures.
	CPUShare *cpushare.Result
	// Lists is the conversations section's session lists, by size.
	Lists map[int]*listResult
	// Deletes is the conversations section's session deletes, by length.
	Deletes []*deleteResult
	// Branches is the branches section's figures.
	Branches *branchResult
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
	chosen, err := choose(o)
	if err != nil {
		return nil, err
	}
	rep := &report{Quick: o.quick, Set: set}
	began := time.Now()
	progress := func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "turnbench: %6.1fs "+format+"\n", append([]any{time.Since(began).Seconds()}, a...)...)
	}
	b, err := startBench(ctx, o)
	if err != nil {
		return nil, err
	}
	defer b.close(ctx)
	b.progress = progress
	for _, c := range chosen {
		if err := c.section.run(ctx, b, rep, c.names); err != nil {
			return nil, err
		}
	}
	progress("done")

	rep.SelfHWM, _ = coldstart.VmHWM(os.Getpid()) // 0 where /proc is missing; the table says so
	if b.dyn != nil {
		rep.DynHWM, _ = coldstart.VmHWM(b.dyn.Pid())
	}
	rep.Calls, rep.Attempts, rep.Retries = b.tap.Counts()
	rep.AttemptErrors = b.tap.AttemptErrors()
	if err := writeTable(stdout, rep, chosen, o.only != ""); err != nil {
		return nil, fmt.Errorf("write the table: %w", err)
	}
	return rep, nil
}

// chosenSection is a section the run runs and the names it was asked by.
type chosenSection struct {
	section *section
	names   map[string]bool
}

// choose returns the sections the run runs: -only's, or the default run's.
func choose(o args) ([]chosenSection, error) {
	asked := map[string]bool{}
	if o.only != "" {
		for _, n := range strings.Split(o.only, ",") {
			n = strings.TrimSpace(n)
			if !slices.ContainsFunc(sections, func(s section) bool { return slices.Contains(s.names, n) }) {
				return nil, fmt.Errorf("-only: unknown section %q (%s)", n, sectionNames())
			}
			asked[n] = true
		}
	}
	var out []chosenSection
	for i := range sections {
		s := &sections[i]
		names := map[string]bool{}
		for _, n := range s.names {
			if o.only == "" && s.inRun && (s.inQuick || !o.quick) && (n != "coldstart" || o.cold) || asked[n] {
				names[n] = true
			}
		}
		if len(names) > 0 {
			out = append(out, chosenSection{section: s, names: names})
		}
	}
	return out, nil
}

// sectionNames lists every section's names.
func sectionNames() string {
	var names []string
	for _, s := range sections {
		names = append(names, s.names...)
	}
	return strings.Join(names, ", ")
}

// args are turnbench's flags.
type args struct {
	quick, cold      bool
	root, rie        string
	only, cpuProfile string
	// fateSchedules and fateSeed are the fate section's schedules, at
	// each lease fateLease names (short, default or both).
	fateSchedules int
	fateSeed      uint64
	fateLease     string
}

// parseArgs parses the command line; root is the module root (-repo, or
// found from the working directory).
func parseArgs(argv []string, stdout io.Writer) (args, error) {
	fs := flag.NewFlagSet("turnbench", flag.ContinueOnError)
	fs.SetOutput(stdout)
	var a args
	var capacity bool
	fs.BoolVar(&a.quick, "quick", false, "short run with small sizes (the Go test's mode); figures are not comparable")
	fs.StringVar(&a.root, "repo", "", "module root (node_modules/.bin/dynalite, functions/); default: found from the working directory")
	fs.StringVar(&a.rie, "rie", defaultRIE(), "aws-lambda-rie binary for the cold-start section (`make rie` installs it)")
	fs.BoolVar(&a.cold, "coldstart", true, "include the cold-start section in the default run (builds the bootstraps, runs them under aws-lambda-rie)")
	fs.BoolVar(&capacity, "capacity", false, "the same as -only capacity")
	var help strings.Builder
	for _, s := range sections {
		fmt.Fprintf(&help, "; %s: %s", strings.Join(s.names, ", "), s.about)
	}
	fs.StringVar(&a.only, "only", "", "run only these sections, comma-separated"+help.String())
	fs.IntVar(&a.fateSchedules, "fate-schedules", 500, "the fate section's schedule count")
	fs.Uint64Var(&a.fateSeed, "fate-seed", 1, "the fate section's seed (schedule i of a seed is always the same plan)")
	fs.StringVar(&a.fateLease, "fate-lease", "both", "the fate section's leases: short (2 s), default (the product's 30 s) or both, each with -fate-schedules schedules")
	fs.StringVar(&a.cpuProfile, "cpuprofile", "", "with -only throughput: CPU-profile each turn slice into `PREFIX`-c<sessions>-r<rep>-s<slice>.pprof")
	if err := fs.Parse(argv); err != nil {
		return a, err
	}
	if fs.NArg() != 0 {
		return a, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if _, ok := fateLeases[a.fateLease]; !ok {
		return a, fmt.Errorf("-fate-lease %q: want short, default or both", a.fateLease)
	}
	if capacity {
		a.only = strings.Trim(a.only+",capacity", ",")
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
	args
	endpoint  string
	dyn       *dynalite.Server // nil when DYNAMODB_ENDPOINT named the server
	tap       *loadcheck.Tap
	client    benchClient
	table     string
	cursorKey []byte
	store     chat.Store
	prefix    string
	progress  func(format string, a ...any)
}

// benchClient is a DynamoDB client for the store and for the table's
// creation and deletion (dynamo.NewClient's).
type benchClient interface {
	dynamo.Client
	dynamo.TableClient
}

// startBench starts dynalite from o.root's node_modules (unless
// DYNAMODB_ENDPOINT names a server) and creates the run's table.
func startBench(ctx context.Context, o args) (*bench, error) {
	b := &bench{args: o, endpoint: os.Getenv("DYNAMODB_ENDPOINT"), tap: loadcheck.NewTap(),
		cursorKey: []byte("turnbench-cursor-key-0123456789ab"), prefix: randomName("b")}
	if b.endpoint == "" {
		var err error
		if b.dyn, err = dynalite.Start(o.root); err != nil {
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
		StaticCredentials: os.Getenv("AWS_ACCESS_KEY_ID") == "", AttemptTimeout: attemptTimeout, Transport: transport}, b.tap.Option())
}

// rawClient returns an uncounted client of the run's server (for the
// meters' size reads).
func (b *bench) rawClient(ctx context.Context) (dynamo.Client, error) {
	return dynamo.NewClient(ctx, dynamo.ClientOptions{Endpoint: b.endpoint, Region: "us-east-1",
		StaticCredentials: os.Getenv("AWS_ACCESS_KEY_ID") == ""})
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

// loadSection runs the load run on its own DynamoDB client, whose
// transport injects the faults below the SDK's retryer, with a short
// attempt timeout that cuts hung attempts.
func loadSection(ctx context.Context, b *bench, rep *report, _ map[string]bool) error {
	lc := rep.Set.Load
	b.progress("load run: %d sessions x %d turns, %.0f%% of DynamoDB calls faulty (%.0f%% of those on every attempt) and aimed faults, %.0f%% disconnects",
		lc.Sessions, lc.Turns, 100*lc.Faults.FailRate, 100*lc.Faults.Persistent, 100*lc.DisconnectRate)
	lt, inj := loadcheck.NewTransport(lc.Workers, lc.Seed)
	lclient, err := b.newClient(ctx, lc.AttemptTimeout, lt)
	if err != nil {
		return err
	}
	// The ledger on, in the handler and in the store (whose decisions
	// count the turns they decide): the run checks it.
	lstore := dynamo.New(lclient, dynamo.Options{Table: b.table, CursorKey: b.cursorKey, Ledger: chat.LedgerOptions{Enabled: true}})
	lw, err := benchwire.New(lstore, benchwire.HandlerConfig{EchoDelay: loadcheck.EchoDelay, EchoChunk: loadcheck.EchoChunk, LeaseDuration: lc.Lease, Ledger: true})
	if err != nil {
		return err
	}
	defer lw.Close()
	owner := chat.Principal{Subject: benchwire.Subject, Tenant: auth.DevTenant}
	// A session's turns are its claimed ordinals but those a withdrawn
	// claim left unspent (a retryable failure before the stream): read
	// with faults off, on the bench's own client.
	turns := func(ctx context.Context, sid string) (int64, error) {
		s, err := b.store.GetSession(ctx, sid, owner)
		if err != nil {
			return 0, err
		}
		n := s.NextOrdinal - 1
		pk := dynamo.SessionPartitionKey(sid)
		for o := int64(1); o < s.NextOrdinal; o++ {
			out, err := b.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: &b.table, ConsistentRead: aws.Bool(true),
				Key: map[string]types.AttributeValue{dynamo.AttrPK: &types.AttributeValueMemberS{Value: pk},
					dynamo.AttrSK: &types.AttributeValueMemberS{Value: dynamo.TurnSortKey(o)}}})
			if err != nil {
				return 0, err
			}
			if dynamo.IsWithdrawnClaim(out.Item) {
				n--
			}
		}
		return n, nil
	}
	rep.Load = loadcheck.Run(ctx, loadcheck.Server{Client: lw.Client, Traces: lw.Traces(), Turns: turns}, inj, b.prefix, lc)
	return nil
}

func loadRows(rep *report, _ bool) [][4]string { return loadcheck.Rows(rep.Load, rep.Set.Load) }

func loadNotes(rep *report) []string {
	var notes []string
	for _, p := range rep.Load.Problems {
		notes = append(notes, "load problem: "+p)
	}
	for _, n := range rep.Load.Notes {
		notes = append(notes, "load note: "+n)
	}
	return notes
}

// coldSection builds the bootstraps and measures them under the emulator
// (internal/coldstart).
func coldSection(ctx context.Context, b *bench, rep *report, _ map[string]bool) error {
	b.progress("bootstraps: build and cold starts under %s", b.rie)
	rep.Cold = coldstart.Measure(ctx, coldstart.Config{Root: b.root, RIE: b.rie, Endpoint: b.endpoint, Table: b.table,
		SessionID: b.prefix + "-rie"}, rep.Set.Cold)
	return nil
}

// coldRows are the cold-start rows (in detail when the section runs
// alone) and turnbench's own peak memory.
func coldRows(rep *report, only bool) [][4]string {
	if only {
		return rep.Cold.DetailRows()
	}
	dyn := "not started here"
	if rep.DynHWM > 0 {
		dyn = fmt.Sprintf("%.1f MiB", float64(rep.DynHWM)/1024)
	}
	return append(rep.Cold.Rows(rep.Set.Cold), [4]string{"turnbench process peak RSS (VmHWM): all three handlers in process, clients, load run",
		fmt.Sprintf("%.1f MiB", float64(rep.SelfHWM)/1024), "dynalite process: " + dyn, "-"})
}

func coldNotes(rep *report) []string {
	if err := rep.Cold.Err; err != nil && !errors.Is(err, coldstart.ErrSkipped) {
		return []string{fmt.Sprintf("cold start error: %v", err)}
	}
	return nil
}

// throughputRun is the throughput section (internal/throughput): the
// levels and request shapes, rendered as rows.
func throughputRun(ctx context.Context, b *bench, rep *report, _ map[string]bool) error {
	ts := throughput.Full()
	if rep.Quick {
		ts = throughput.Quick()
	}
	pid := 0
	if b.dyn != nil {
		pid = b.dyn.Pid()
	}
	levels, shapes, err := throughput.Measure(ctx, throughput.Config{Endpoint: b.endpoint, Table: b.table, CursorKey: b.cursorKey,
		Prefix: b.prefix, DynamoPID: pid, Profile: b.cpuProfile, Progress: b.progress}, ts)
	rep.Throughput = throughput.Rows(levels, shapes)
	return err
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
