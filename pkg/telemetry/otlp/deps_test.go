package otlp_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestFunctionsLinkNoGRPC: the functions link the OpenTelemetry SDK but
// neither gRPC nor the protobuf runtime, whose package initialisation
// every cold start would pay (the reason for this package's JSON
// exporter). A test file may import otlptracehttp (export_test.go
// compares against it); a function's code may not.
func TestFunctionsLinkNoGRPC(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list the functions' packages")
	}
	out, err := exec.Command(goTool, "list", "-deps", "github.com/turnstream/turnstream/functions/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	sdk := false
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "google.golang.org/grpc") || strings.HasPrefix(p, "google.golang.org/protobuf") {
			t.Errorf("a function links %s", p)
		}
		sdk = sdk || p == "go.opentelemetry.io/otel/sdk/trace"
	}
	if !sdk {
		t.Error("the functions do not link the OpenTelemetry SDK: this test lists the wrong packages")
	}
}
