package main

import (
	"bytes"
	"errors"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/internal/dynalite"
)

// TestMain lets the test binary play the self-exec wrapper that
// aws-lambda-rie runs in the cold-start section, and stops the dynalite
// the tests started.
func TestMain(m *testing.M) {
	maybeExecBootstrap()
	dynalite.Main(m)
}

// TestQuickRun runs the quick mode end to end on dynalite and checks the
// structural results, never timings: the request budgets hold, a history
// page is one Query at any depth, turn scope snapshots are smaller than
// session scope ones, and the load run lost, duplicated or misreported
// nothing while failures were really injected; and the turn bootstrap
// and the minimal baseline start under the emulator (the test build of
// internal/lambdabin: prebuilt by make test, else built here once). With
// -short the cold-start section is left out.
func TestQuickRun(t *testing.T) {
	t.Setenv("DYNAMODB_ENDPOINT", dynalite.Endpoint(t)) // run uses it instead of starting its own
	args := []string{"-quick"}
	if testing.Short() {
		args = append(args, "-coldstart=false")
	}
	// No deadline of its own: a slow machine must not fail the test; go
	// test's -timeout bounds it.
	var out bytes.Buffer
	rep, err := run(t.Context(), args, &out)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	t.Logf("\n%s", out.String())

	set := quickSettings()
	b := rep.Budgets
	if b.NewTurnMax > 3 || b.ContTurnMax > 4 || b.NewTurns == 0 || b.ContTurns == 0 {
		t.Errorf("requests per completed turn: new session max %d (budget 3), continued max %d (budget 4)", b.NewTurnMax, b.ContTurnMax)
	}
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

	l := rep.Load
	faults := map[string]bool{}
	for k := range l.Injected {
		faults[k[strings.LastIndex(k, ": ")+2:]] = true
	}
	switch {
	case !l.ok():
		t.Errorf("load run verification failed: %+v\nproblems: %s", *l, strings.Join(l.Problems, "\n"))
	case l.Acknowledged == 0 || l.Verified != l.Acknowledged:
		t.Errorf("load run: %d acknowledged, %d verified", l.Acknowledged, l.Verified)
	case len(faults) != len(faultKinds) || len(l.Aimed) != len(aims) || l.Checked == 0:
		t.Errorf("load run: faults injected %v, aimed cases %v, %d outcomes checked; want all %d kinds and %d cases",
			faults, l.Aimed, l.Checked, len(faultKinds), len(aims))
	case l.ClaimsAnswerLost == 0:
		t.Error("load run: no claim applied with its answer lost; the aimed cases did not happen")
	case l.TurnsAttempted != set.Load.Sessions*set.Load.Turns:
		t.Errorf("load run attempted %d turns, want %d", l.TurnsAttempted, set.Load.Sessions*set.Load.Turns)
	}

	if !testing.Short() {
		switch {
		case errors.Is(rep.ColdErr, errSkipped):
			t.Logf("cold starts: %v", rep.ColdErr)
		case rep.ColdErr != nil:
			t.Errorf("cold starts: %v", rep.ColdErr)
		default:
			for _, fn := range append([]string{baseline}, set.ColdFunctions...) {
				cr := rep.Cold[fn]
				if len(cr.ColdStarts) != set.ColdRuns || cr.ColdStarts[0] <= 0 || cr.PeakRSSKiB <= 0 {
					t.Errorf("%s under the emulator: %+v", fn, *cr)
				}
			}
		}
		for _, fn := range set.ColdFunctions {
			if rep.ColdErr == nil && rep.Sizes[runtime.GOARCH][fn] == 0 {
				t.Errorf("no linux/%s size for %s", runtime.GOARCH, fn)
			}
		}
	}

	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if !slices.Contains(lines, "| figure | measured | baseline (same run) | measured vs baseline |") {
		t.Errorf("no table header in the output")
	}
}
