package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/turnstream/turnstream/internal/fate"
	"github.com/turnstream/turnstream/internal/lambdabin"
)

// The fate section (-only fate) runs the fate harness (internal/fate,
// docs/durable-turns.md): -fate-schedules seeded schedules of
// -fate-seed on three dev servers sharing one table behind a DynamoDB
// fault proxy, with pauses, kills, faults, resumes, stops and reads, and
// its checker of the turn's invariants. The dev server is built here,
// without the race detector (the Go test form runs a race-enabled one);
// the harness starts its own dynalite. Not in the default run: 500
// schedules take about 11 minutes on 2 cores.

// fateResult is what the fate section found.
type fateResult struct {
	Report *fate.Report
}

// fateRun is the fate section.
func fateRun(ctx context.Context, b *bench, rep *report, _ map[string]bool) error {
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
	r, err := fate.Run(ctx, fate.Config{Seed: b.fateSeed, Schedules: schedules, Concurrency: 8, Processes: 3,
		DevServer: bin, Root: b.root, Logf: func(format string, a ...any) { b.progress("fate: "+format, a...) }})
	if err != nil {
		return fmt.Errorf("fate: %w", err)
	}
	rep.Fate = &fateResult{Report: r}
	return nil
}

// errFateFound is what turnbench exits with (status 1) after writing its
// table when the fate harness found violations or dev server failures.
var errFateFound = errors.New("fate: the harness found violations or dev server failures (the report follows the table)")

// fateFailed reports whether rep's fate section found violations or dev
// server failures.
func fateFailed(rep *report) bool {
	return rep.Fate != nil && (len(rep.Fate.Report.Violations) > 0 || len(rep.Fate.Report.ProcessErrors) > 0)
}

// fateRows renders the section.
func fateRows(rep *report, _ bool) [][4]string {
	if rep.Fate == nil {
		return nil
	}
	r := rep.Fate.Report
	return [][4]string{{
		fmt.Sprintf("fate harness: %d schedules of seed %d, %d dev servers, %d at once (internal/fate)", r.Schedules, r.Seed, r.Processes, r.Concurrency),
		fmt.Sprintf("%d violations, %d dev server failures; %d turns (%d acknowledged), %d kills, %d pauses",
			len(r.Violations), len(r.ProcessErrors), r.Turns, r.Acknowledged, r.Kills, r.Pauses),
		"goal: 0 violations over >= 500 schedules",
		map[bool]string{true: "met", false: "not met"}[len(r.Violations) == 0 && len(r.ProcessErrors) == 0 && r.Schedules >= 500],
	}}
}

// fateNotes is the harness's own report (its figures, and each
// violation with its evidence).
func fateNotes(rep *report) []string {
	if rep.Fate == nil {
		return nil
	}
	return strings.Split(strings.TrimRight(rep.Fate.Report.Markdown(), "\n"), "\n")
}
