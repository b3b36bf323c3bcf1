package main

import (
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/client"
)

// outageTransport cuts each submit's body after the line with partOne
// (cutTransport) and then refuses every request, as a server that cannot
// be reached would (connection refused), for outage; forever when outage
// is negative. It counts the requests it refused, by path.
type outageTransport struct {
	outage time.Duration

	mu      sync.Mutex
	until   time.Time
	down    bool
	refused map[string]int
}

func (o *outageTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	o.mu.Lock()
	if o.down && (o.outage < 0 || time.Now().Before(o.until)) {
		o.refused[req.URL.Path]++
		o.mu.Unlock()
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	}
	o.mu.Unlock()
	resp, err := cutTransport{mode: cutReset}.RoundTrip(req)
	if err == nil && req.Method == http.MethodPost && req.URL.Path == "/" {
		// The outage starts when the cut body breaks off.
		resp.Body = &onCut{cutBody: resp.Body.(*cutBody), cut: func() {
			o.mu.Lock()
			if !o.down {
				o.down, o.until = true, time.Now().Add(o.outage)
			}
			o.mu.Unlock()
		}}
	}
	return resp, err
}

// onCut calls cut when its body breaks off.
type onCut struct {
	*cutBody
	cut func()
}

func (b *onCut) Read(p []byte) (int, error) {
	n, err := b.cutBody.Read(p)
	if err != nil {
		b.cut()
	}
	return n, err
}

// TestChatReattachesWhileTheServerIsUnreachable: the stream drops and the
// server cannot be reached for 1.5 s, its capabilities included (the
// first thing a reattach asks); turnctl keeps trying with its usual
// waits (250 ms doubling: the fifth attempt comes 3.75 s after the drop,
// so the outage ends within the attempts on any machine) and shows the
// whole reply, exit 0.
func TestChatReattachesWhileTheServerIsUnreachable(t *testing.T) {
	e := newDurableEnv(t, 20*time.Millisecond, true)
	resumeBackoff = client.DefaultResumeBackoff // the real waits: the outage is measured against them
	o := &outageTransport{outage: 1500 * time.Millisecond, refused: map[string]int{}}
	useTransport(t, o)
	code, out, errOut := runTurnctl([]string{"chat", "-url", e.turnURL, "-session", "s1", "-token", "dev.alice", "question"}, "")
	if code != 0 {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 2 || lines[0] != partOne+partTwo || !strings.HasPrefix(lines[1], "[complete · seq ") {
		t.Errorf("stdout %q, want the whole reply once, then the complete status line", out)
	}
	if !strings.Contains(errOut, "reconnecting… (attempt 1 of 5)") {
		t.Errorf("stderr %q, want the reconnecting notice", errOut)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.refused["/capabilities"] == 0 {
		t.Errorf("refused %v: the capabilities lookup never met the outage", o.refused)
	}
}

// TestChatGivesUpWithTheAttachCommand: when the server stays unreachable,
// turnctl gives up after its attempts, exit 1, and prints the turn id and
// the turnctl attach command that follows the turn.
func TestChatGivesUpWithTheAttachCommand(t *testing.T) {
	e := newDurableEnv(t, 20*time.Millisecond, false)
	useTransport(t, &outageTransport{outage: -1, refused: map[string]int{}})
	code, _, errOut := runTurnctl([]string{"chat", "-url", e.turnURL, "-session", "s1", "-token", "dev.alice", "question"}, "")
	if code != 1 {
		t.Fatalf("exit %d, stderr %q; want 1", code, errOut)
	}
	want := "may still be running; follow it with: turnctl attach -session s1 -turn turn-"
	if !strings.Contains(errOut, "5 resumes in a row brought nothing new") || !strings.Contains(errOut, want) ||
		!strings.Contains(errOut, " -url "+e.turnURL+" (with the same -token or -sigv4)") {
		t.Errorf("stderr %q, want the give-up and %q", errOut, want)
	}
}

// TestChatQueued: -multitask enqueue while another turn runs shows
// "queued (1)" and the turn id, then follows the queued turn when it
// starts, to its end (exit 0); without a policy the submit is refused
// SESSION_BUSY with a hint; a policy that is none is bad usage.
func TestChatQueued(t *testing.T) {
	busy := newDurableEnv(t, 20*time.Millisecond, false)
	startTurn(t, busy.turnURL, "s1", "t1")
	code, _, errOut := runTurnctl([]string{"chat", "-url", busy.turnURL, "-session", "s1", "-token", "dev.alice", "second"}, "")
	if code != 1 || !strings.Contains(errOut, "HTTP 409: SESSION_BUSY") || !strings.Contains(errOut, "-multitask enqueue queues a message behind it") {
		t.Errorf("reject: exit %d, stderr %q", code, errOut)
	}

	e := newDurableEnv(t, 20*time.Millisecond, true) // the first resume (the queued turn's stream) lets the running turn end
	startTurn(t, e.turnURL, "s1", "t1")
	code, out, errOut := runTurnctl([]string{"chat", "-url", e.turnURL, "-session", "s1", "-token", "dev.alice",
		"-multitask", "enqueue", "second"}, "")
	if code != 0 {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if !strings.HasPrefix(errOut, "queued (1): turn turn-") || !strings.Contains(errOut, " waits for the turn before it to end") {
		t.Errorf("stderr %q, want queued (1) and the turn id", errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 2 || lines[0] != partOne+partTwo || !strings.HasPrefix(lines[1], "[complete · seq ") {
		t.Errorf("stdout %q, want the queued turn's reply, then complete", out)
	}

	if code, _, errOut := runTurnctl([]string{"chat", "-url", e.turnURL, "-session", "s1", "-multitask", "later", "x"}, ""); code != 2 ||
		!strings.Contains(errOut, "-multitask must be one of reject, enqueue, interrupt, rollback") {
		t.Errorf("bad policy: exit %d, stderr %q", code, errOut)
	}
}

// TestDefaultURLsFromTheEnvironment: without -url, chat and history use
// $TURNSTREAM_TURN_URL and $TURNSTREAM_HISTORY_URL when set.
func TestDefaultURLsFromTheEnvironment(t *testing.T) {
	e := newDurableEnv(t, 20*time.Millisecond, true)
	saved := lookupEnv
	t.Cleanup(func() { lookupEnv = saved })
	lookupEnv = func(name string) (string, bool) {
		switch name {
		case turnURLEnv:
			return e.turnURL, true
		case historyURLEnv:
			return e.historyURL, true
		}
		return "", false
	}
	startTurn(t, e.turnURL, "s1", "t0") // the model's gate opens at the first resume: attach
	if code, out, errOut := runTurnctl([]string{"attach", "-session", "s1", "-token", "dev.alice"}, ""); code != 0 || !strings.Contains(out, partOne+partTwo) {
		t.Fatalf("attach: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, out, errOut := runTurnctl([]string{"history", "-session", "s1", "-token", "dev.alice"}, ""); code != 0 || !strings.Contains(out, partOne+partTwo) {
		t.Fatalf("history: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, _, errOut := runTurnctl([]string{"chat", "-session", "s1", "-token", "dev.alice", "again"}, ""); code != 0 {
		t.Fatalf("chat: exit %d, stderr %q", code, errOut)
	}
}
