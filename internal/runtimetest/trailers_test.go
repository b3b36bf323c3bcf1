package runtimetest_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
)

// helperEnv makes the test binary a Lambda runtime (runHelper) instead of
// running tests.
const helperEnv = "RUNTIMETEST_HELPER"

// helperStreamThenFail is the runtime whose handler streams one line, then
// fails while reading the rest of its body.
const helperStreamThenFail = "stream-then-fail"

// errMidStream is the failure of helperStreamThenFail's body.
var errMidStream = errors.New("runtimetest: the body failed mid-stream")

// runHelper runs aws-lambda-go's runtime client (lambda.Start) against
// AWS_LAMBDA_RUNTIME_API with the handler that mode names, and exits.
func runHelper(mode string) {
	if mode != helperStreamThenFail {
		os.Exit(2)
	}
	lambda.Start(func(context.Context, json.RawMessage) (*events.LambdaFunctionURLStreamingResponse, error) {
		return &events.LambdaFunctionURLStreamingResponse{
			StatusCode: http.StatusOK,
			Headers:    map[string]string{"Content-Type": "application/x-ndjson"},
			Body:       &failingBody{line: "{\"n\":1}\n"},
		}, nil
	})
	os.Exit(1) // lambda.Start returns only on failure
}

// failingBody yields its line, then errMidStream after a pause.
type failingBody struct {
	line string
	sent bool
}

func (b *failingBody) Read(p []byte) (int, error) {
	if !b.sent {
		b.sent = true
		return copy(p, b.line), nil
	}
	time.Sleep(200 * time.Millisecond)
	return 0, errMidStream
}

// TestErrorTrailers pins how a failure after a streamed response started
// reaches the Runtime API from aws-lambda-go's runtime client (the one in
// every bootstrap): the body already sent stays sent, and the failure
// comes as the documented trailers, Lambda-Runtime-Function-Error-Type and
// Lambda-Runtime-Function-Error-Body (base64 of the error's JSON), after
// the chunked body's terminator. It also proves that the test Runtime API
// reads trailers, so the empty trailers of the turn bootstrap in
// TestTurnStreamsThroughRuntimeAPI mean that none were sent: lambdaurl's
// writer always ends its body cleanly, and the turn handler reports a
// failure in the stream itself.
func TestErrorTrailers(t *testing.T) {
	t.Parallel()
	api := newRuntimeAPI(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(baseEnv(), helperEnv+"="+helperStreamThenFail, "AWS_LAMBDA_RUNTIME_API="+api.Addr())
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	setProcAttr(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("helper runtime output:\n%s", out.String())
		}
	})

	inv := api.invoke([]byte(`{}`), time.Minute)
	inv.wait(t, time.Minute)
	p, lines, _ := inv.streamed()
	if p == nil || p.StatusCode != http.StatusOK || len(lines) != 1 || string(lines[0].text) != `{"n":1}` {
		t.Fatalf("prelude %+v, lines %d, want 200 and the one line sent before the failure", p, len(lines))
	}
	var te *trailerError
	if err := inv.failure(); !errors.As(err, &te) {
		t.Fatalf("failure %v, want error trailers", err)
	}
	body, err := base64.StdEncoding.DecodeString(te.Body)
	if err != nil {
		t.Fatalf("%s %q: not base64: %v", trailerErrorBody, te.Body, err)
	}
	var e struct {
		Message string `json:"errorMessage"`
		Type    string `json:"errorType"`
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Message != errMidStream.Error() || e.Type != te.Type || te.Type == "" {
		t.Errorf("%s %q, %s %s; want the error's type and JSON", trailerErrorType, te.Type, trailerErrorBody, body)
	}
	t.Logf("aws-lambda-go ended the stream with %s: %s and %s: %s (decoded)", trailerErrorType, te.Type, trailerErrorBody, strings.TrimSpace(string(body)))
}
