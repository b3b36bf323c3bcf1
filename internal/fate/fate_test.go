package fate_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/dynalite"
	"github.com/turnstream/turnstream/internal/fate"
	"github.com/turnstream/turnstream/internal/lambdabin"
)

func TestMain(m *testing.M) { dynalite.Main(m) }

// devServerEnv names a dev server binary to run the harness against
// instead of the prebuilt one (an older build, to see what it breaks).
const devServerEnv = "FATE_DEVSERVER"

// devServer returns the dev server binary: $FATE_DEVSERVER, or the one
// `make test-bootstraps` prebuilt into $TURNSTREAM_BOOTSTRAPS (no timed
// test compiles anything). Without it the test skips, loudly, or fails
// when CI=true.
func devServer(t *testing.T) string {
	t.Helper()
	if p := os.Getenv(devServerEnv); p != "" {
		return p
	}
	missing := func(why string) {
		msg := "fate: " + why + ": run `make test-bootstraps` and set " + lambdabin.DirEnv + "=$PWD/bin/test-bootstraps (make test does both), or set " + devServerEnv
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip("SKIPPED, NOTHING CHECKED: " + msg)
	}
	dir := os.Getenv(lambdabin.DirEnv)
	if dir == "" {
		missing(lambdabin.DirEnv + " is unset")
	}
	name := "devserver"
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	p := filepath.Join(dir, name)
	if _, err := os.Stat(p); err != nil {
		missing("no prebuilt dev server: " + err.Error())
	}
	return p
}

// TestFate is the short deterministic form of the harness, at both
// leases: a handful of fixed schedules on two dev servers (and the two
// quota processes), checked against I1-I8 and the rules of the schedule
// kinds only (no timing is asserted but the stop bound's, with slack).
// The short lease draws its usual mix (classic, race, stopfault, ack,
// nearlease, delete and attach schedules); the default (30 s) lease runs one
// schedule of each kind but classic, so that every rule is met at the
// lease it was written for.
func TestFate(t *testing.T) {
	if testing.Short() {
		t.Skip("the fate harness runs dev servers for about two minutes")
	}
	bin := devServer(t)
	for _, tc := range []struct {
		name string
		cfg  fate.Config
	}{
		// Schedules 0-9 of seed 22; 47, an attach schedule whose second
		// turn races the first; 60 and 67, delete schedules (one kills its
		// turn's process, both race a second turn against the delete).
		{fate.LeaseShort, fate.Config{Seed: 22, Only: []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 47, 60, 67}, Concurrency: 13, Timings: fate.DefaultTimings}},
		// Schedules 0, 1, 3, 4, 6, 23, 29 and 40 of seed 22 limited to
		// these kinds are stopfault, ack, latesave, race, delete, quota,
		// nearlease and attach (its second turn after the first).
		{fate.LeaseDefault, fate.Config{Seed: 22, Only: []int{0, 1, 3, 4, 6, 23, 29, 40}, Concurrency: 8, Timings: fate.ProductTimings,
			Kinds: []string{fate.KindRace, fate.KindQuota, fate.KindStopFault, fate.KindLateSave, fate.KindAck, fate.KindNearLease, fate.KindDelete, fate.KindAttach}}},
		// Branch schedules (docs/branches.md) at both leases: a
		// regeneration (its process killed before its acknowledgment in
		// some, which the decision of its lease must undo: without that,
		// schedules 3, 11 and 14 of the short lease fail RuleVersions),
		// faults on the supersession's and the select's writes, selects
		// raced by a turn, forks.
		{fate.LeaseShort + " branch", fate.Config{Seed: 22, Schedules: 16, Concurrency: 8, Timings: fate.DefaultTimings, Kinds: []string{fate.KindBranch}}},
		{fate.LeaseDefault + " branch", fate.Config{Seed: 22, Schedules: 3, Concurrency: 3, Timings: fate.ProductTimings, Kinds: []string{fate.KindBranch}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			cfg := tc.cfg
			cfg.Processes, cfg.DevServer, cfg.Endpoint, cfg.Logf = 2, bin, dynalite.Endpoint(t), t.Logf
			rep, err := fate.Run(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Log("\n" + rep.Markdown())
			for _, v := range rep.Violations {
				t.Errorf("%s", v)
			}
			for _, e := range rep.ProcessErrors {
				t.Errorf("dev server: %s", e)
			}
			if rep.Acknowledged == 0 {
				t.Errorf("no turn was acknowledged: the harness checked nothing")
			}
		})
	}
}

// TestFateLong runs the long form when FATE_SCHEDULES is set (it is not
// part of make test):
//
//	FATE_SCHEDULES=500 FATE_SEED=1 FATE_PROCESSES=3 FATE_CONCURRENCY=8 FATE_LEASE=short \
//	  TURNSTREAM_BOOTSTRAPS=$PWD/bin/test-bootstraps \
//	  go test ./internal/fate -run TestFateLong -v -timeout 3h
//
// FATE_LEASE is short (the default) or default (the product's 30 s
// lease, where FATE_CONCURRENCY=24 suits); FATE_KINDS limits the schedule
// kinds (comma-separated); FATE_DEVSERVER runs it against another dev
// server binary,
// FATE_LOGS keeps the dev servers' logs there, FATE_TIMELINES writes
// every schedule's timeline there.
func TestFateLong(t *testing.T) {
	n := envInt(t, "FATE_SCHEDULES", 0)
	if n == 0 {
		t.Skip("set FATE_SCHEDULES to run the long form")
	}
	bin := devServer(t)
	timings, err := fate.TimingsFor(envString("FATE_LEASE", fate.LeaseShort))
	if err != nil {
		t.Fatal(err)
	}
	cfg := fate.Config{
		Timings:     timings,
		Seed:        uint64(envInt(t, "FATE_SEED", 1)),
		Schedules:   n,
		Concurrency: envInt(t, "FATE_CONCURRENCY", 8),
		Processes:   envInt(t, "FATE_PROCESSES", 3),
		DevServer:   bin,
		Endpoint:    dynalite.Endpoint(t),
		Dir:         os.Getenv("FATE_LOGS"),
		KeepLogs:    os.Getenv("FATE_LOGS") != "",
		Timelines:   os.Getenv("FATE_TIMELINES") != "",
		Logf:        t.Logf,
	}
	if kinds := os.Getenv("FATE_KINDS"); kinds != "" {
		for _, k := range strings.Split(kinds, ",") {
			cfg.Kinds = append(cfg.Kinds, strings.TrimSpace(k))
		}
	}
	if only := os.Getenv("FATE_ONLY"); only != "" {
		for _, f := range strings.Split(only, ",") {
			i, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				t.Fatalf("FATE_ONLY: %v", err)
			}
			cfg.Only = append(cfg.Only, i)
		}
	}
	rep, err := fate.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + rep.Markdown())
	if dir := os.Getenv("FATE_TIMELINES"); dir != "" {
		for i, tl := range rep.Timelines {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("schedule-%d.txt", i)), []byte(rep.Plans[i]+tl), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(rep.Violations) > 0 || len(rep.ProcessErrors) > 0 {
		t.Errorf("%d violations, %d dev server errors", len(rep.Violations), len(rep.ProcessErrors))
	}
}

func envString(name, def string) string {
	if s := os.Getenv(name); s != "" {
		return s
	}
	return def
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return n
}
