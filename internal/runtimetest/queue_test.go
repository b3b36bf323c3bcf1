package runtimetest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/dynalite"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// lambdaInvokeAPI plays Lambda's Invoke API for the turn bootstraps
// (AWS_ENDPOINT_URL_LAMBDA): an asynchronous invocation (Event) of the
// function becomes an invocation of the drain environment's Runtime API,
// as Lambda would start one in some free environment, and is answered
// 202; anything else is recorded and refused.
type lambdaInvokeAPI struct {
	drain *runtimeAPI
	mu    sync.Mutex
	seen  []string // "<invocation type> <path>"
	queue []*invocation
}

func (a *lambdaInvokeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	typ := r.Header.Get("X-Amz-Invocation-Type")
	a.mu.Lock()
	a.seen = append(a.seen, typ+" "+r.URL.Path)
	a.mu.Unlock()
	if r.Method != http.MethodPost || typ != "Event" || !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
		http.Error(w, `{"message":"unexpected"}`, http.StatusBadRequest)
		return
	}
	inv := a.drain.invoke(body, time.Minute)
	a.mu.Lock()
	a.queue = append(a.queue, inv)
	a.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
}

// TestQueuedTurnThroughRuntimeAPI runs the queue's Lambda path with the
// real turn bootstrap in three execution environments on one table: A
// streams a turn; B answers the enqueue of a second turn (202) and then
// a resume of it, which stays silent while it waits; when A's turn ends,
// A's invocation invokes the function asynchronously (a signed Invoke,
// InvocationType Event, its payload a drain event), which the drain
// environment D serves: it runs the queued turn with no client, and B's
// resume streams it to its terminal line. The delay from A's last line to
// the queued turn's first line at B is logged, not asserted.
func TestQueuedTurnThroughRuntimeAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the turn bootstrap in three environments; skipped with -short")
	}
	root := repoRoot(t)
	table := dynalite.Table(t)
	a, b, d := newRuntimeAPI(t), newRuntimeAPI(t), newRuntimeAPI(t)
	invokeAPI := &lambdaInvokeAPI{drain: d}
	lambdaSrv := httptest.NewServer(invokeAPI)
	t.Cleanup(lambdaSrv.Close)
	env := []string{
		"TABLE_NAME=" + table,
		"DYNAMODB_ENDPOINT=" + dynalite.Endpoint(t),
		"AWS_REGION=us-east-1",
		"AUTH_MODE=iam",
		"ECHO_DELAY=200ms",
		"RESUME_POLL_INTERVAL=50ms",
		"LOG_LEVEL=warn",
		// The Lambda client of the drain dispatch: signed with these, sent
		// to the test's Invoke API.
		"AWS_ENDPOINT_URL_LAMBDA=" + lambdaSrv.URL,
		"AWS_ACCESS_KEY_ID=AKIDEXAMPLE",
		"AWS_SECRET_ACCESS_KEY=secret",
	}
	bootstrap := turnBootstrap(t, root)
	for _, api := range []*runtimeAPI{a, b, d} {
		startBootstrap(t, bootstrap, api, env)
	}
	events := newEventFactory(t, root)

	running := a.invoke(events.submit("rt-queue", "A", "a queued turn waits for me"), time.Minute)
	running.waitLines(t, 1, time.Minute) // A holds the session

	enqueue := b.invoke(events.event(http.MethodPost, "/", true, map[string]string{"x-turnstream-multitask": "enqueue"},
		string(events.submitBody("rt-queue", "B", "and then me"))), time.Minute)
	ans := enqueue.answered(t)
	var queued struct {
		Status    string `json:"status"`
		Position  int    `json:"position"`
		StreamURL string `json:"streamUrl"`
	}
	if err := json.Unmarshal(ans.body, &queued); ans.StatusCode != http.StatusAccepted || err != nil || queued.Status != "queued" ||
		queued.Position != 1 || queued.StreamURL != "sessions/rt-queue/turns/B/stream" {
		t.Fatalf("enqueue: HTTP %d %s", ans.StatusCode, ans.body)
	}
	follow := b.invoke(events.request(http.MethodGet, "/"+queued.StreamURL, true, ""), time.Minute)

	aAns := running.answered(t)
	_, aLines, _ := running.streamed()
	if aAns.StatusCode != http.StatusOK || !strings.Contains(string(aLines[len(aLines)-1].text), `"status":"complete"`) {
		t.Fatalf("A: HTTP %d, last line %s", aAns.StatusCode, aLines[len(aLines)-1].text)
	}

	fAns := follow.answered(t)
	_, fLines, _ := follow.streamed()
	evs := decodeLines(t, fLines)
	end := evs[len(evs)-1]
	if fAns.StatusCode != http.StatusOK || end.Kind != protocol.EventSnapshot || end.TurnID != "B" || end.Snapshot.Status != protocol.StatusComplete ||
		end.Snapshot.Messages[len(end.Snapshot.Messages)-1].Content != "Echo: and then me" {
		t.Fatalf("B's stream: HTTP %d, last line %s", fAns.StatusCode, fLines[len(fLines)-1].text)
	}

	invokeAPI.mu.Lock()
	seen, drains := append([]string(nil), invokeAPI.seen...), append([]*invocation(nil), invokeAPI.queue...)
	invokeAPI.mu.Unlock()
	if len(drains) != 1 || len(seen) != 1 || !strings.HasPrefix(seen[0], "Event /2015-03-31/functions/turnstream-TurnFunction-runtimetest/invocations") {
		t.Fatalf("Invoke requests %v, want one asynchronous self-invocation", seen)
	}
	drain := drains[0]
	drain.wait(t, time.Minute)
	if err := drain.failure(); err != nil {
		t.Fatalf("drain invocation: %v", err)
	}
	var payload map[string]map[string]string
	if err := json.Unmarshal(drain.event, &payload); err != nil || payload["turnstreamDrain"]["sessionId"] != "rt-queue" {
		t.Errorf("drain payload %s", drain.event)
	}

	running.mu.Lock()
	aEnd := running.handedOut.Add(aLines[len(aLines)-1].after)
	running.mu.Unlock()
	follow.mu.Lock()
	bFirst := follow.handedOut.Add(fLines[0].after)
	follow.mu.Unlock()
	t.Logf("A's last line -> B's first line at its follower: %v (resumes poll every 50 ms); B's stream: %d lines",
		bFirst.Sub(aEnd).Round(time.Millisecond), len(fLines))
}
