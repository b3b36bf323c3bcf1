package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/dynalite"
)

// TestBranchesSection runs the branches section in quick mode on
// dynalite: every page of the branched session shows each turn as the
// last of its versions, one DynamoDB request a page, and a regeneration
// writes what a turn writes and more. Timings are reported, never
// asserted.
func TestBranchesSection(t *testing.T) {
	t.Setenv("DYNAMODB_ENDPOINT", dynalite.Endpoint(t))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out bytes.Buffer
	rep, err := run(ctx, []string{"-quick", "-only", "branches"}, &out)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	t.Logf("\n%s", out.String())
	r := rep.Branches
	if r == nil || r.MaxQueries != 1 || r.PlainUnits < 1 || r.RegenUnits < r.PlainUnits || r.RegenRequests <= r.PlainReqs {
		t.Errorf("branches: %+v; want one request a page, a regeneration writing more than a plain turn", r)
	}
}
