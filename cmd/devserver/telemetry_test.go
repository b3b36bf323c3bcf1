package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/internal/emfcheck"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/telemetry"
)

// TestDevServerEMF: with TELEMETRY_METRICS=emf the dev server writes, in
// its log, one EMF document per finished turn (with the turn's metrics)
// and one per history request, each valid; without it, none.
func TestDevServerEMF(t *testing.T) {
	env := map[string]string{"TELEMETRY_METRICS": "emf", "TELEMETRY_NAMESPACE": "DevTest", "OTEL_SERVICE_NAME": "dev-stack", "MODEL_TOOLS": ""}
	srv := startServer(t, env)
	lines := submit(t, srv.url+"/turn/", "alice", "emf1", "t1", "hello metrics")
	if last := lines[len(lines)-1]; last.Snapshot == nil || last.Snapshot.Status != protocol.StatusComplete {
		t.Fatalf("last line %+v", last)
	}
	if status := getJSON(t, srv.url+"/history/sessions/emf1/turns", "alice", nil); status != http.StatusOK {
		t.Fatalf("history: %d", status)
	}
	out := srv.stop(t)

	var turns, history []*emfcheck.Document
	for _, l := range strings.Split(out, "\n") {
		if !strings.Contains(l, `"_aws"`) {
			continue
		}
		doc, err := emfcheck.Check([]byte(l))
		if err != nil {
			t.Fatalf("%v\n%s", err, l)
		}
		if doc.Namespaces[0] != "DevTest" || doc.DimensionValue("Service") != "dev-stack" {
			t.Errorf("namespace %v service %q", doc.Namespaces, doc.DimensionValue("Service"))
		}
		switch doc.DimensionValue("Function") {
		case "turn":
			turns = append(turns, doc)
		case "history":
			history = append(history, doc)
		}
	}
	if len(turns) != 1 || len(history) != 1 {
		t.Fatalf("%d turn and %d history documents, want one each; log:\n%s", len(turns), len(history), out)
	}
	d := turns[0]
	for _, name := range []string{
		telemetry.MetricTurnCount, telemetry.MetricTurnDuration, telemetry.MetricTimeToFirstSnapshot,
		telemetry.MetricInputTokens, telemetry.MetricOutputTokens, telemetry.MetricOperationDuration, telemetry.MetricTimeToFirstChunk,
		telemetry.MetricModelCalls, telemetry.MetricToolCalls, telemetry.MetricDynamoDBRequests, telemetry.MetricDynamoDBReadUnits,
		telemetry.MetricDynamoDBWriteUnits, telemetry.MetricLeaseConflicts, telemetry.MetricCheckpoints,
	} {
		if len(d.Metrics[name]) == 0 {
			t.Errorf("the turn document has no %s", name)
		}
	}
	if d.DimensionValue("Outcome") != "complete" || d.Root["sessionId"] != "emf1" || d.Root["turnId"] != "t1" || d.Root["principal"] != "alice" {
		t.Errorf("turn document %v", d.Root)
	}
	if d.Metrics[telemetry.MetricTurnCount][0] != 1 || d.Metrics[telemetry.MetricModelCalls][0] != 1 {
		t.Errorf("counts %v", d.Metrics)
	}
	if history[0].Root["route"] != "turns" || history[0].DimensionValue("Outcome") != "ok" {
		t.Errorf("history document %v", history[0].Root)
	}

	// Off (the default outside Lambda): no document.
	quiet := startServer(t, map[string]string{"MODEL_TOOLS": ""})
	submit(t, quiet.url+"/turn/", "alice", "emf2", "t1", "hi")
	if out := quiet.stop(t); strings.Contains(out, `"_aws"`) {
		t.Errorf("EMF documents with metrics off:\n%s", out)
	}
}
