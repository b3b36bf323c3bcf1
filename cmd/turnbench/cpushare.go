package main

import (
	"context"
	"os"

	"github.com/turnstream/turnstream/internal/cpushare"
	"github.com/turnstream/turnstream/internal/lambdabin"
)

// cpuShareRun is the CPU-share section (-only cpushare): internal/cpushare
// runs the minimal, turn and history bootstraps (release builds for the
// host, as the cold-start section runs them) under the emulator in
// cgroups of Lambda's CPU share at each memory size; -quick runs 2 warm
// turns per size instead of 10.
func cpuShareRun(ctx context.Context, b *bench, rep *report, _ map[string]bool) error {
	set := cpushare.Full()
	if rep.Quick {
		set = cpushare.Quick()
	}
	dir, err := os.MkdirTemp("", "turnbench-cpushare-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	b.progress("cpushare: build the bootstraps")
	bins, err := lambdabin.Build(ctx, b.root, dir, lambdabin.Options{Release: true, GOOS: "linux"}, "minimal", "turn", "history")
	if err != nil {
		return err
	}
	rep.CPUShare = cpushare.Run(ctx, cpushare.Env{RIE: b.rie, Bootstraps: bins, Endpoint: b.endpoint, Table: b.table,
		Prefix: b.prefix + "-cpu", Progress: b.progress}, set)
	return nil
}

func cpuShareRows(rep *report, _ bool) [][4]string { return rep.CPUShare.Rows() }
