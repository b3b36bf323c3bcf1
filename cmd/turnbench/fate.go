package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/turnstream/turnstream/internal/fate"
	"github.com/turnstream/turnstream/internal/lambdabin"
)

// The fate section (-only fate) runs the fate harness (internal/fate,
// docs/durable-turns.md): -fate-schedules seeded schedules of
// -fate-seed at each lease -fate-lease names (short: 2 s, default: the
// product's 30 s; both by default), on three dev servers sharing one
// table behind a DynamoDB fault proxy (and two with a turnsPerMinute
// quota for the quota schedules), with pauses, kills, faults, resumes,
// stops, rollbacks, quota bursts and reads, and its checker of the
// turn's invariants. The dev server is built here, without the race
// detector (the Go test form runs a race-enabled one); the harness
// starts its own dynalite for each lease. Not in the default run: on 2
// cores 40 schedules take 52 s at the short lease (8 at once) and 100
// take 2m35s at the default lease (16 at once), so 500 take about 11 and
// 13 minutes (plus quiescence: under a minute).

// fateResult is what the fate section found, one report per lease.
type fateResult struct {
	Reports []*fate.Report
}

// fateLeases are -fate-lease's values and the leases each runs.
var fateLeases = map[string][]string{
	fate.LeaseShort:   {fate.LeaseShort},
	fate.LeaseDefault: {fate.LeaseDefault},
	"both":            {fate.LeaseShort, fate.LeaseDefault},
}

// fateConcurrency is how many schedules run at once at each lease: a
// default-lease schedule mostly waits (for a lease, a late save, a pause
// of 24-28 s), so twice as many overlap there.
var fateConcurrency = map[string]int{fate.LeaseShort: 8, fate.LeaseDefault: 16}

// fateRun is the fate section.
func fateRun(ctx context.Context, b *bench, rep *report, _ map[string]bool) error {
	leases, ok := fateLeases[b.fateLease]
	if !ok {
		return fmt.Errorf("fate: -fate-lease %q: want short, default or both", b.fateLease)
	}
	dir, err := os.MkdirTemp("", "turnbench-fate-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	bin := filepath.Join(dir, "devserver")
	b.progress("fate: building the dev server")
	build := exec.CommandContext(ctx, lambdabin.GoTool(), "build", "-o", bin, "./cmd/devserver")
	build.Dir = b.root
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("fate: build the dev server: %w: %s", err, out)
	}
	schedules := b.fateSchedules
	if rep.Quick {
		schedules = min(schedules, 8)
	}
	rep.Fate = &fateResult{}
	for _, lease := range leases {
		t, err := fate.TimingsFor(lease)
		if err != nil {
			return err
		}
		r, err := fate.Run(ctx, fate.Config{Seed: b.fateSeed, Schedules: schedules, Concurrency: fateConcurrency[lease], Processes: 3,
			Timings: t, DevServer: bin, Root: b.root, Logf: func(format string, a ...any) { b.progress("fate ("+lease+" lease): "+format, a...) }})
		if err != nil {
			return fmt.Errorf("fate (%s lease): %w", lease, err)
		}
		rep.Fate.Reports = append(rep.Fate.Reports, r)
	}
	return nil
}

// errFateFound is what turnbench exits with (status 1) after writing its
// table when the fate harness found violations or dev server failures.
var errFateFound = errors.New("fate: the harness found violations or dev server failures (the report follows the table)")

// fateFailed reports whether rep's fate section found violations or dev
// server failures at any lease.
func fateFailed(rep *report) bool {
	if rep.Fate == nil {
		return false
	}
	for _, r := range rep.Fate.Reports {
		if len(r.Violations) > 0 || len(r.ProcessErrors) > 0 {
			return true
		}
	}
	return false
}

// fateRows renders the section: one row per lease.
func fateRows(rep *report, _ bool) [][4]string {
	if rep.Fate == nil {
		return nil
	}
	var rows [][4]string
	for _, r := range rep.Fate.Reports {
		rows = append(rows, [4]string{
			fmt.Sprintf("fate harness, %s lease (%s): %d schedules of seed %d, %d dev servers, %d at once (internal/fate)", r.Timings.Name, r.Timings.Lease, r.Schedules, r.Seed, r.Processes, r.Concurrency),
			fmt.Sprintf("%d violations, %d dev server failures; %d turns (%d acknowledged), %d kills, %d pauses; wall %s",
				len(r.Violations), len(r.ProcessErrors), r.Turns, r.Acknowledged, r.Kills, r.Pauses, r.Wall.Round(time.Second)),
			"goal: 0 violations over >= 500 schedules",
			map[bool]string{true: "met", false: "not met"}[len(r.Violations) == 0 && len(r.ProcessErrors) == 0 && r.Schedules >= 500],
		})
	}
	return rows
}

// fateNotes is the harness's own report at each lease (its figures, and
// each violation with its evidence).
func fateNotes(rep *report) []string {
	if rep.Fate == nil {
		return nil
	}
	var out []string
	for _, r := range rep.Fate.Reports {
		out = append(out, strings.Split(strings.TrimRight(r.Markdown(), "\n"), "\n")...)
	}
	return out
}
