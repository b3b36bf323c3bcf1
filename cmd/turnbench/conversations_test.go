package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/dynalite"
)

// TestConversationsSection runs the conversations section in quick mode
// on dynalite: every page of every list is full, newest first, and one
// DynamoDB request, at 10 and at 200 sessions of one principal. Timings
// are reported, never asserted.
func TestConversationsSection(t *testing.T) {
	t.Setenv("DYNAMODB_ENDPOINT", dynalite.Endpoint(t))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out bytes.Buffer
	rep, err := run(ctx, []string{"-quick", "-only", "conversations"}, &out)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	t.Logf("\n%s", out.String())
	for _, n := range listSizes(true) {
		r := rep.Lists[n]
		if r == nil || r.MaxQueries != 1 || r.DeepAt < n/2 {
			t.Errorf("list of %d: %+v; want one request a page and the deep page past half of it", n, r)
		}
	}
	// Every stored turn's item is deleted.
	if len(rep.Deletes) != len(deleteSizes(true)) {
		t.Fatalf("deletes measured: %d", len(rep.Deletes))
	}
	for _, d := range rep.Deletes {
		if d.Deletes < d.Turns || d.WriteUnits < d.Turns {
			t.Errorf("delete of %d turns: %+v", d.Turns, d)
		}
	}
}
