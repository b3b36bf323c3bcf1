package main

import (
	"context"
	"errors"
	"os"

	"github.com/turnstream/turnstream/internal/attachbench"
	"github.com/turnstream/turnstream/internal/capacitybench"
	"github.com/turnstream/turnstream/internal/lambdabin"
	"github.com/turnstream/turnstream/internal/ledgerbench"
	"github.com/turnstream/turnstream/internal/motoserver"
	"github.com/turnstream/turnstream/internal/queuebench"
	"github.com/turnstream/turnstream/internal/telemetrybench"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

// The sections below are thin: each runs its package. The capacity
// section (-only capacity) is internal/capacitybench: one turn's billed
// units and requests at depths of one session; so is the cost section
// (-only cost), which prices them. The telemetry section is
// internal/telemetrybench. The
// multitask section (-only multitask) is internal/queuebench: a
// queued turn's cost against a plain turn's, and the delay to its first
// line against a client's own resubmission. The ledger section (-only
// ledger) is internal/ledgerbench: the usage ledger's and the quota
// checks' requests, units and time to the first line against the ledger
// off, and a month item's growth.

// multitaskRun is the multitask section.
func multitaskRun(ctx context.Context, b *bench, rep *report, _ map[string]bool) error {
	raw, err := b.rawClient(ctx)
	if err != nil {
		return err
	}
	rep.Multitask, err = queuebench.Run(ctx, queuebench.Env{Client: b.client, Raw: raw, Store: b.store, Table: b.table, CursorKey: b.cursorKey,
		EchoDelay: echoDelay, EchoChunk: echoChunk, Checkpoint: checkEvery, Quick: rep.Quick, Progress: b.progress})
	return err
}

func multitaskRows(rep *report, _ bool) [][4]string { return rep.Multitask.Rows() }

// ledgerRun is the ledger section.
func ledgerRun(ctx context.Context, b *bench, rep *report, _ map[string]bool) error {
	raw, err := b.rawClient(ctx)
	if err != nil {
		return err
	}
	rep.Ledger, err = ledgerbench.Run(ctx, ledgerbench.Env{Client: b.client, Raw: raw, Store: b.store, Table: b.table, CursorKey: b.cursorKey,
		Prefix: b.prefix, Quick: rep.Quick, Progress: b.progress})
	return err
}

func ledgerRows(rep *report, _ bool) [][4]string { return rep.Ledger.Rows() }

func ledgerNotes(rep *report) []string { return rep.Ledger.Notes() }

// attachmentsRun is the attachments section (internal/attachbench).
func attachmentsRun(ctx context.Context, b *bench, rep *report, _ map[string]bool) error {
	raw, err := b.rawClient(ctx)
	if err != nil {
		return err
	}
	rep.Attachments, err = attachbench.Run(ctx, attachbench.Env{Client: b.client, Raw: raw, Store: b.store, Table: b.table, CursorKey: b.cursorKey,
		Prefix: b.prefix, Quick: rep.Quick, Progress: b.progress})
	if err != nil {
		return err
	}
	return attachmentsPeak(ctx, b, rep.Attachments, rep.Quick)
}

// attachmentsPeak measures the turn function's memory peak with and
// without an image (attachbench.MeasurePeak): the turn bootstrap (a
// release build for the host) under aws-lambda-rie, reading from
// moto_server's S3. Without either of those the section says so in its
// table and carries on.
func attachmentsPeak(ctx context.Context, b *bench, res *attachbench.Result, quick bool) error {
	if _, err := os.Stat(b.rie); err != nil {
		res.PeakSkipped = "no aws-lambda-rie: make rie"
		return nil
	}
	s3, err := motoserver.Run()
	if errors.Is(err, motoserver.ErrMissing) {
		res.PeakSkipped = "no moto_server: pip install 'moto[server]'"
		return nil
	}
	if err != nil {
		return err
	}
	defer s3.Stop()
	dir, err := os.MkdirTemp("", "turnbench-attachments-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	b.progress("attachments: build the turn bootstrap")
	bins, err := lambdabin.Build(ctx, b.root, dir, lambdabin.Options{Release: true, GOOS: "linux"}, "turn")
	if err != nil {
		return err
	}
	res.Peak, err = attachbench.MeasurePeak(ctx, attachbench.PeakEnv{RIE: b.rie, Bootstrap: bins["turn"], Endpoint: b.endpoint, Table: b.table,
		S3: s3.URL, Prefix: b.prefix, Quick: quick, Progress: b.progress})
	return err
}

// capacityEnv is the capacity section's environment (internal/capacitybench):
// the durable sections' echo pace, checkpoints and turn timeout.
func capacityEnv(b *bench, raw dynamo.Client, quick bool) capacitybench.Env {
	return capacitybench.Env{Client: b.client, Raw: raw, Table: b.table, CursorKey: b.cursorKey,
		EchoDelay: echoDelay, EchoChunk: echoChunk, Checkpoint: checkEvery, TurnTimeout: longTurn, Quick: quick, Progress: b.progress}
}

// capacityRun is the capacity section (-only capacity, -capacity).
func capacityRun(ctx context.Context, b *bench, rep *report, _ map[string]bool) error {
	raw, err := b.rawClient(ctx)
	if err != nil {
		return err
	}
	rep.Capacity, err = capacitybench.Run(ctx, capacityEnv(b, raw, rep.Quick))
	return err
}

func capacityRows(rep *report, _ bool) [][4]string {
	return capacitybench.Rows(rep.Capacity, capacityEnv(&bench{}, nil, false))
}

// costSection is the cost section (-only cost): capacitybench.Cost.
func costSection(ctx context.Context, b *bench, rep *report, _ map[string]bool) error {
	raw, err := b.rawClient(ctx)
	if err != nil {
		return err
	}
	rep.Cost, err = capacitybench.Cost(ctx, capacityEnv(b, raw, rep.Quick))
	return err
}

func costRows(rep *report, _ bool) [][4]string { return capacitybench.CostRows(rep.Cost) }

func costNotes(rep *report) []string {
	return capacitybench.CostNotes(rep.Cost, capacityEnv(&bench{}, nil, false))
}

// telemetrySection is the telemetry section (-only telemetry):
// internal/telemetrybench.
func telemetrySection(ctx context.Context, b *bench, rep *report, _ map[string]bool) error {
	var err error
	rep.Telemetry, err = telemetrybench.Run(ctx, telemetrybench.Env{Store: b.store, Prefix: b.prefix, Quick: rep.Quick, Progress: b.progress})
	return err
}

func telemetryRows(rep *report, _ bool) [][4]string { return rep.Telemetry.Rows() }
