package telemetry_test

import (
	"os"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/telemetry"
)

// A history request's EMF document, as the history function writes it to
// standard output (CloudWatch Logs extracts the metrics).
func ExampleRecorder_Request() {
	rec, err := telemetry.NewRecorder(os.Stdout, telemetry.RecorderOptions{
		Namespace: telemetry.DefaultNamespace, Service: "my-stack", Function: "history",
		Now: func() time.Time { return time.UnixMilli(1_800_000_000_000) },
	})
	if err != nil {
		panic(err)
	}
	rec.Request(telemetry.RequestReport{
		Outcome:    telemetry.OutcomeOK,
		Duration:   12 * time.Millisecond,
		Usage:      chat.Usage{StoreRequests: 1, ReadUnits: 6},
		Properties: telemetry.Properties{SessionID: "s-42", Tenant: "acme", Principal: "alice", Route: "turns"},
	})
	// Output:
	// {"Function":"history","Outcome":"ok","Service":"my-stack","_aws":{"CloudWatchMetrics":[{"Namespace":"Turnstream","Dimensions":[["Service","Function"]],"Metrics":[{"Name":"turnstream.dynamodb.read_units","Unit":"Count"},{"Name":"turnstream.dynamodb.requests","Unit":"Count"},{"Name":"turnstream.dynamodb.write_units","Unit":"Count"},{"Name":"turnstream.request.count","Unit":"Count"},{"Name":"turnstream.request.duration","Unit":"Milliseconds"}]},{"Namespace":"Turnstream","Dimensions":[["Service","Outcome"]],"Metrics":[{"Name":"turnstream.request.count","Unit":"Count"}]}],"Timestamp":1800000000000},"principal":"alice","route":"turns","sessionId":"s-42","tenant":"acme","turnstream.dynamodb.read_units":6,"turnstream.dynamodb.requests":1,"turnstream.dynamodb.write_units":0,"turnstream.request.count":1,"turnstream.request.duration":12}
}
