package main

import (
	"bytes"
	"io"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/internal/coldstart"
	"github.com/turnstream/turnstream/internal/dynalite"
	"github.com/turnstream/turnstream/internal/dynamobench"
	"github.com/turnstream/turnstream/internal/lambdabin"
	"github.com/turnstream/turnstream/internal/ledgerbench"
	"github.com/turnstream/turnstream/internal/queuebench"
)

// TestMain lets the test binary play the self-exec wrapper that
// aws-lambda-rie runs in the cold-start section (coldstart.MaybeExec),
// and stops the dynalite the tests started.
func TestMain(m *testing.M) {
	coldstart.MaybeExec()
	dynalite.Main(m)
}

// TestQuickRun runs the quick mode end to end on dynalite and checks the
// structural results, never timings: the request budgets hold, a history
// page is one Query at any depth, turn scope snapshots are smaller than
// session scope ones, and the load run lost, duplicated or misreported
// nothing while failures were really injected. The cold-start section is
// TestQuickColdStart's.
func TestQuickRun(t *testing.T) {
	t.Setenv("DYNAMODB_ENDPOINT", dynalite.Endpoint(t)) // run uses it instead of starting its own
	// No deadline of its own: a slow machine must not fail the test; go
	// test's -timeout bounds it.
	var out bytes.Buffer
	rep, err := run(t.Context(), []string{"-quick", "-coldstart=false"}, &out)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	t.Logf("\n%s", out.String())

	set := quickSettings()
	b := rep.Budgets
	// The handler section runs with the usage ledger off: the turn's own
	// requests. The ledger adds exactly one (below): budgets 4 and 5.
	if b.NewTurnMax > 3 || b.ContTurnMax > 4 || b.NewTurns == 0 || b.ContTurns == 0 {
		t.Errorf("requests per completed turn, ledger off: new session max %d (budget 3), continued max %d (budget 4)", b.NewTurnMax, b.ContTurnMax)
	}
	checkLedgerSection(t, rep.Ledger)
	if b.PageMax != 1 || b.Pages == 0 {
		t.Errorf("requests per history page: max %d over %d pages; budget 1", b.PageMax, b.Pages)
	}
	for _, d := range set.Depths {
		if q := rep.Depth[d].MaxQueries; q != 1 {
			t.Errorf("history page at depth %d sent %d requests, want 1", d, q)
		}
	}
	ws, wt := rep.Wire["session"], rep.Wire["turn"]
	if wt.FinalBytes >= ws.FinalBytes {
		t.Errorf("final snapshot: turn scope %d B, session scope %d B; want turn scope smaller", wt.FinalBytes, ws.FinalBytes)
	}
	for scope, w := range rep.Wire {
		if w.Snapshots < 2 || w.TCPBytes < w.BodyBytes || w.BodyBytes < w.FinalBytes {
			t.Errorf("%s scope: %+v; want several lines and TCP >= body >= final", scope, *w)
		}
	}
	// At most 4 calls a turn, plus the claim's turn-id lookup once the
	// session's terminal window is full (sessions here run 10 turns).
	for _, c := range set.Concurrency {
		if tr := rep.Turns[c]; tr.TurnsPerSec <= 0 || rep.Writes[c] <= 0 || tr.CallsMean > 5 {
			t.Errorf("concurrency %d: %+v, %f writes/s; want both measured and <= 5 calls a turn", c, *tr, rep.Writes[c])
		}
	}

	// A queued turn costs a plain turn's writes plus its enqueue's (the
	// queue item and the session's entry); each delay mode measured. The
	// checkpoint items are left out: how many a turn writes depends on
	// how long it runs, which a loaded machine stretches.
	if mt := rep.Multitask; mt == nil || mt.Plain == nil {
		t.Error("multitask: not measured")
	} else {
		units := func(a *dynamobench.Account) int { return a.WriteUnits() - a.WCU[dynamobench.CheckpointItems] }
		queued, plain := units(mt.Both)-units(mt.First), units(mt.Plain)
		if queued < plain || queued > plain+3 {
			t.Errorf("multitask: a queued turn costs %d WCU, a plain one %d (checkpoint items left out); want at most 3 more", queued, plain)
		}
		for _, mode := range queuebench.Modes {
			if len(mt.Delays[mode]) == 0 || slices.Min(mt.Delays[mode]) <= 0 {
				t.Errorf("multitask: delays %s: %v", mode, mt.Delays[mode])
			}
		}
	}

	l := rep.Load
	switch {
	case !l.OK():
		t.Errorf("load run verification failed: %+v\nproblems: %s", *l, strings.Join(l.Problems, "\n"))
	case l.Acknowledged == 0 || l.Verified != l.Acknowledged:
		t.Errorf("load run: %d acknowledged, %d verified", l.Acknowledged, l.Verified)
	}
	if err := l.Coverage(set.Load); err != nil {
		t.Errorf("load run: %v", err)
	}
	if rep.Cold != nil {
		t.Errorf("-coldstart=false ran the cold-start section")
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if !slices.Contains(lines, "| figure | measured | baseline (same run) | measured vs baseline |") {
		t.Errorf("no table header in the output")
	}
}

// TestQuickColdStart runs the quick cold-start section (-quick -only
// coldstart): the turn bootstrap and the minimal baseline start under the
// emulator (the test build of internal/lambdabin: prebuilt by make test,
// else built here once), installed first when missing. It never passes
// without measuring: -short and a machine that cannot run the emulator
// (not Linux) skip it with their reason, and a section that reports
// itself not measured fails it.
func TestQuickColdStart(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the cold-start section starts bootstraps under aws-lambda-rie")
	}
	if runtime.GOOS != "linux" {
		t.Skipf("the emulator runs need linux, not %s", runtime.GOOS)
	}
	rie, err := lambdabin.InstallRIE(t.Context())
	if err != nil {
		t.Fatalf("install aws-lambda-rie: %v", err)
	}
	t.Setenv("DYNAMODB_ENDPOINT", dynalite.Endpoint(t))
	var out bytes.Buffer
	rep, err := run(t.Context(), []string{"-quick", "-only", "coldstart", "-rie", rie}, &out)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	t.Logf("\n%s", out.String())
	set := quickSettings().Cold
	c := rep.Cold
	if c == nil || c.Err != nil {
		t.Fatalf("cold starts not measured: %+v", c) // ErrSkipped included: never silent
	}
	for _, name := range append([]string{coldstart.Baseline, coldstart.HostEnvTurn}, set.Functions...) {
		r := c.Runs[name]
		if r == nil || len(r.ColdStarts) != set.Runs || r.ColdStarts[0] <= 0 || r.PeakRSSKiB <= 0 {
			t.Errorf("%s under the emulator: %+v", name, r)
		}
	}
	for _, fn := range set.Functions {
		if c.Sizes[runtime.GOARCH][fn] == 0 {
			t.Errorf("no linux/%s size for %s", runtime.GOARCH, fn)
		}
		if r := c.Runs[fn]; r != nil && r.Init == nil {
			t.Errorf("%s: no start-up account", fn)
		}
	}
}

// TestChoose: -only picks sections by any of their names, in the
// sections' order; the default run is the inRun sections (inQuick ones
// with -quick), the cold-start section left out with -coldstart=false.
func TestChoose(t *testing.T) {
	tests := map[string]struct {
		o    args
		want string // names of the chosen sections, in order
		err  bool
	}{
		"default":          {args{cold: true}, "handler load durable wire coldstart telemetry cost multitask conversations branches attachments ledger", false},
		"quick":            {args{quick: true, cold: true}, "handler load coldstart multitask ledger", false},
		"no cold starts":   {args{quick: true}, "handler load multitask ledger", false},
		"only":             {args{only: "coldstart, throughput"}, "coldstart throughput", false},
		"one of a section": {args{only: "wire"}, "wire", false},
		"unknown section":  {args{only: "thruput"}, "", true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			chosen, err := choose(tc.o)
			if (err != nil) != tc.err {
				t.Fatalf("choose: %v", err)
			}
			var got []string
			for _, c := range chosen {
				for _, n := range c.section.names {
					if c.names[n] {
						got = append(got, n)
					}
				}
			}
			if strings.Join(got, " ") != tc.want {
				t.Errorf("chose %q, want %q", strings.Join(got, " "), tc.want)
			}
		})
	}
}

// checkLedgerSection checks the ledger section's structural results: the
// ledger adds exactly four requests a turn (the count's read, add, settle
// and clear: request budgets 3 + 4 for a new session, 4 + 4 after) and
// write units; a principal's token quota one read before the claim; a
// rate quota the read and the admission's write; a tenant quota without
// its cache the principal's read and the tenant's Query. A count costs
// the same units whatever the sessions the month counted; a burst of
// admissions admits exactly the rate.
func checkLedgerSection(t *testing.T, r *ledgerbench.Result) {
	t.Helper()
	if r == nil || len(r.First) != len(ledgerbench.Modes) {
		t.Error("ledger: not measured")
		return
	}
	extra := []int{0, 4, 5, 6, 6, -1} // requests over the ledger off; -1: not fixed (the cache)
	for i, mode := range ledgerbench.Modes {
		for _, k := range []struct {
			name string
			at   []*dynamobench.Account
		}{{"new session", r.First}, {"second turn", r.Second}} {
			got := k.at[i].Requests - k.at[0].Requests
			if extra[i] >= 0 && got != extra[i] {
				t.Errorf("ledger: %s, %s: %d requests, %d more than the ledger off; want %d more", mode.Name, k.name, k.at[i].Requests, got, extra[i])
			}
		}
	}
	if on, off := r.Second[1], r.Second[0]; on.Requests != 8 || on.WriteUnits() <= off.WriteUnits() {
		t.Errorf("ledger: a second turn with the ledger: %d requests (budget 4 + 4), %d WCU against %d without", on.Requests, on.WriteUnits(), off.WriteUnits())
	}
	if r.GrowthLastWCU != r.GrowthFirstWCU || r.GrowthFirstWCU == 0 {
		t.Errorf("ledger growth: first count %d WCU (%d B), after %d sessions %d WCU (%d B); want equal", r.GrowthFirstWCU, r.GrowthFirstB, r.GrowthSessions, r.GrowthLastWCU, r.GrowthLastB)
	}
	if len(r.Admission) != 2 || r.Admission[1].Admitted != ledgerbench.BurstLimit || r.Admission[1].Unavailable != 0 {
		t.Errorf("ledger: a burst of %d admissions with turnsPerMinute %d: %+v, want exactly %d admitted", ledgerbench.BurstSize, ledgerbench.BurstLimit, r.Admission, ledgerbench.BurstLimit)
	}
}

// TestFateLeaseFlag: -fate-lease names the leases the fate section runs,
// both by default; another value is refused before anything runs.
func TestFateLeaseFlag(t *testing.T) {
	for flag, want := range map[string][]string{"": {"short", "default"}, "short": {"short"}, "default": {"default"}, "both": {"short", "default"}} {
		argv := []string{"-repo", t.TempDir()}
		if flag != "" {
			argv = append(argv, "-fate-lease", flag)
		}
		a, err := parseArgs(argv, io.Discard)
		if err != nil {
			t.Fatalf("%q: %v", flag, err)
		}
		if got := fateLeases[a.fateLease]; !slices.Equal(got, want) {
			t.Errorf("-fate-lease %q runs %v, want %v", flag, got, want)
		}
	}
	if _, err := parseArgs([]string{"-repo", t.TempDir(), "-fate-lease", "long"}, io.Discard); err == nil {
		t.Errorf("-fate-lease long: no error")
	}
}
