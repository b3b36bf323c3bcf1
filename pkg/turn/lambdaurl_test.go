package turn_test

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-lambda-go/lambdaurl"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/turn"
)

var (
	//go:embed testdata/function-url-submit.json
	fnURLSubmit []byte
	//go:embed testdata/function-url-submit-base64.json
	fnURLSubmitBase64 []byte
	//go:embed testdata/function-url-capabilities.json
	fnURLCapabilities []byte
)

// invokeURL runs h through lambdaurl.Wrap with a function URL event, in a
// context carrying a Lambda request id and a deadline lambdaTime away.
func invokeURL(tb testing.TB, h http.Handler, event []byte, lambdaTime time.Duration) (*events.LambdaFunctionURLStreamingResponse, context.CancelFunc) {
	tb.Helper()
	var req events.LambdaFunctionURLRequest
	if err := json.Unmarshal(event, &req); err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), lambdaTime)
	ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: "lambda-req-1"})
	resp, err := lambdaurl.Wrap(h)(ctx, &req)
	if err != nil {
		cancel()
		tb.Fatal(err)
	}
	return resp, cancel
}

func TestFunctionURLEvents(t *testing.T) {
	for name, tc := range map[string]struct {
		event []byte
		turn  string
		input string
	}{
		"text body":   {fnURLSubmit, "lambda-t1", "hello from a function URL"},
		"base64 body": {fnURLSubmitBase64, "lambda-t2", "base64 body: \u2028 \u2029 😀 é"},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, newStoreMemory(), &scriptModel{Chunks: []string{"a", "b"}}, nil)
			resp, cancel := invokeURL(t, e.h, tc.event, time.Minute)
			defer cancel()
			raw, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusOK || resp.Headers["Content-Type"] != "application/x-ndjson; charset=utf-8" ||
				resp.Headers["Cache-Control"] != "no-store" || resp.Headers["X-Content-Type-Options"] != "nosniff" {
				t.Fatalf("status %d headers %v body %s", resp.StatusCode, resp.Headers, raw)
			}
			evs := decodeStream(t, raw)
			term := evs[len(evs)-1].Snapshot
			if term == nil || term.Status != protocol.StatusComplete || term.Messages[0].Content != tc.input {
				t.Fatalf("stream %s", raw)
			}
			stored, err := e.store.FindTurn(context.Background(), "lambda-session", tc.turn, alice)
			if err != nil {
				t.Fatal(err)
			}
			if stored.Messages[0].Content != tc.input {
				t.Fatalf("stored input %q", stored.Messages[0].Content)
			}
			if !strings.Contains(e.logs.String(), `"requestId":"lambda-req-1"`) {
				t.Errorf("logs without the Lambda request id:\n%s", e.logs.String())
			}
		})
	}
}

func TestFunctionURLCapabilities(t *testing.T) {
	e := newEnv(t, newStoreMemory(), &scriptModel{}, nil)
	resp, cancel := invokeURL(t, e.h, fnURLCapabilities, time.Minute)
	defer cancel()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var c api.Capabilities
	if resp.StatusCode != http.StatusOK || resp.Headers["Content-Type"] != "application/json; charset=utf-8" || json.Unmarshal(raw, &c) != nil {
		t.Fatalf("%d %v %s", resp.StatusCode, resp.Headers, raw)
	}
}

func TestFunctionURLStreamsIncrementally(t *testing.T) {
	m := &scriptModel{Chunks: []string{"late"}, Hold: make(chan struct{})}
	e := newEnv(t, newStoreMemory(), m, nil)
	resp, cancel := invokeURL(t, e.h, fnURLSubmit, time.Minute)
	defer cancel()
	br := bufio.NewReader(resp.Body)
	first, err := br.ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	// The model has not produced anything yet: the first snapshot arrived
	// on its own, without a Flusher.
	ev, d := protocol.DecodeTurnEvent(first)
	if d != nil || ev.Snapshot == nil || ev.Snapshot.Status != protocol.StatusStreaming || ev.Snapshot.Messages[1].Content != "" {
		t.Fatalf("first line %s", first)
	}
	close(m.Hold)
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatal(err)
	}
	evs := decodeStream(t, append(first, rest...))
	if evs[len(evs)-1].Snapshot.Status != protocol.StatusComplete {
		t.Fatalf("stream %s%s", first, rest)
	}
}

func TestFunctionURLLambdaDeadline(t *testing.T) {
	// The invocation has 1.5 s left; with a 900 ms cleanup reserve the turn
	// must end by itself after about 600 ms, well before TurnTimeout.
	m := &scriptModel{Chunks: []string{"never"}, Hold: make(chan struct{})}
	e := newEnv(t, newStoreMemory(), m, func(o *turn.Options) { o.CleanupReserve = 900 * time.Millisecond })
	resp, cancel := invokeURL(t, e.h, fnURLSubmit, 1500*time.Millisecond)
	defer cancel()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	evs := decodeStream(t, raw)
	last := evs[len(evs)-1]
	if last.Kind != protocol.EventDiagnostic || last.Diagnostic.Code != protocol.CodeServerTimeout {
		t.Fatalf("stream %s", raw)
	}
	stored, err := e.store.FindTurn(context.Background(), "lambda-session", "lambda-t1", alice)
	if err != nil {
		t.Fatal(err)
	}
	if stored.Status != chat.TurnError {
		t.Fatalf("stored %+v", stored)
	}
}

func TestFunctionURLInvalidBase64(t *testing.T) {
	var ev map[string]any
	if err := json.Unmarshal(fnURLSubmitBase64, &ev); err != nil {
		t.Fatal(err)
	}
	ev["body"] = "not*base64!"
	event, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, newStoreMemory(), &scriptModel{}, nil)
	resp, cancel := invokeURL(t, e.h, event, time.Minute)
	defer cancel()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if d := decodeErrorBody(t, raw); resp.StatusCode != http.StatusBadRequest || d.Code != protocol.CodeRequestInvalidJSON {
		t.Fatalf("%d %s", resp.StatusCode, raw)
	}
}
