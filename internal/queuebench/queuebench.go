// Package queuebench measures queued turns (docs/multitask.md) against
// plain ones, in the same run, for turnbench's multitask section (-only
// multitask, docs/benchmarks.md):
//
//   - cost: DynamoDB requests and billed write and read units of one
//     queued turn (its enqueue, the drain's start of it, its run) against
//     a plain turn of the same size submitted after the same first turn;
//     the queued turn's figures are those of the session's two turns less
//     the first turn's, medians over the sessions;
//   - delay: from the running turn's terminal line at its client to the
//     queued turn's first line at a client already following its
//     streamUrl, p50/p99, with the drain in process (the dev server) and
//     through Options.Dispatch to a second handler instance on the same
//     table (the Lambda path, without Lambda's own invocation latency),
//     against a client that submits its next turn itself the moment it
//     sees the terminal line.
//
// Resumes poll every Poll, the delays' resolution.
package queuebench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/turnstream/turnstream/internal/benchwire"
	"github.com/turnstream/turnstream/internal/dynamobench"
	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/model/echo"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
	"github.com/turnstream/turnstream/pkg/turn"
)

// Answer is the answer size of every turn of the section: about
// half a second at textRate, within one checkpoint interval, so that
// every run of a turn writes the same checkpoints.
const Answer = 200

// Poll is the resume poll interval of the section's handlers.
const Poll = 10 * time.Millisecond

// Result is what Run measured.
type Result struct {
	Sessions int
	Plain    *dynamobench.Account       // median plain second turn
	First    *dynamobench.Account       // median first turn
	Both     *dynamobench.Account       // median first turn with a queued turn
	Delays   map[string][]time.Duration // by mode: Modes
}

// The delay modes, in the order the rows show them.
var Modes = []string{"client resubmits on the terminal line", "queued, drained in process", "queued, drained through Dispatch"}

// Env is what Run measures on: the bench's table and its clients.
type Env struct {
	// Client is the store's DynamoDB client, Raw an unmetered one for
	// the meter's own size reads (dynamobench.NewMeter).
	Client, Raw dynamo.Client
	// Store is an unmetered store on Table, for waiting.
	Store     chat.Store
	Table     string
	CursorKey []byte
	// EchoDelay and EchoChunk are the echo model's pace, Checkpoint the
	// handlers' checkpoint interval.
	EchoDelay  time.Duration
	EchoChunk  int
	Checkpoint time.Duration
	// Quick measures 1 session pair and 2 delays a mode instead of 5 and
	// 20.
	Quick    bool
	Progress func(format string, a ...any)
}

// Run measures the cost of a queued turn and the delays of Modes.
func Run(ctx context.Context, e Env) (*Result, error) {
	n, runs := 5, 20
	if e.Quick {
		n, runs = 1, 2
	}
	res := &Result{Sessions: n, Delays: map[string][]time.Duration{}}
	if err := cost(ctx, e, n, res); err != nil {
		return nil, err
	}
	for i, mode := range Modes {
		w, err := wiring(e, e.Store, i == 2)
		if err != nil {
			return nil, err
		}
		e.Progress("multitask: %s, %d runs", mode, runs)
		for range runs {
			d, err := delay(ctx, w, i > 0)
			if err != nil {
				w.Close()
				return nil, fmt.Errorf("multitask (%s): %w", mode, err)
			}
			res.Delays[mode] = append(res.Delays[mode], d)
		}
		w.Close()
	}
	return res, nil
}

// wiring is the dev server's handler on store with checkpoints
// at their default interval, fast resume polls, and the section's echo
// pace; with dispatch, Options.Dispatch runs each drain on a second
// handler built from the same options, in a goroutine (another
// execution environment on the same table).
func wiring(e Env, store chat.Store, dispatch bool) (*benchwire.Wiring, error) {
	return benchwire.NewTurn(store, func(o *turn.Options) {
		o.Model = benchwire.LongAnswer{Echo: echo.New(e.EchoDelay, e.EchoChunk)}
		o.CheckpointInterval = e.Checkpoint
		o.ResumePollInterval = Poll
		if !dispatch {
			return
		}
		other := *o
		other.Models = map[string]model.Model{"echo": o.Model}
		var once sync.Once
		var env *turn.Handler
		o.Dispatch = func(_ context.Context, d turn.DrainRequest) error {
			once.Do(func() { env, _ = turn.NewHandler(other) })
			if env == nil {
				return errors.New("the second handler did not build")
			}
			// The drain event's JSON round trip, as on Lambda.
			body, err := json.Marshal(d)
			if err != nil {
				return err
			}
			var got turn.DrainRequest
			if err := json.Unmarshal(body, &got); err != nil {
				return err
			}
			go env.Drain(context.Background(), got)
			return nil
		}
	})
}

// cost measures n sessions of each kind on a metered store: a
// first turn then a plain second turn submitted after it, and a first
// turn with a second turn enqueued while it runs.
func cost(ctx context.Context, e Env, n int, res *Result) error {
	m := dynamobench.NewMeter(e.Client, e.Raw)
	metered := dynamo.New(m, dynamo.Options{Table: e.Table, CursorKey: e.CursorKey})
	w, err := wiring(e, metered, false)
	if err != nil {
		return err
	}
	defer w.Close()
	hc := benchwire.NewHTTPClient(4, nil)
	defer hc.CloseIdleConnections()
	c := w.Client(hc)
	var firsts, plains, boths []*dynamobench.Account
	for i := range n {
		e.Progress("multitask: cost, session pair %d of %d", i+1, n)
		sid := benchwire.NewID()
		m.Take()
		if err := completeTurn(ctx, c, sid, benchwire.NewID()); err != nil {
			return err
		}
		if err := benchwire.AwaitFree(ctx, e.Store, sid, benchwire.Principal); err != nil {
			return err
		}
		firsts = append(firsts, m.Take())
		if err := completeTurn(ctx, c, sid, benchwire.NewID()); err != nil {
			return err
		}
		if err := benchwire.AwaitFree(ctx, e.Store, sid, benchwire.Principal); err != nil {
			return err
		}
		plains = append(plains, m.Take())

		sid = benchwire.NewID()
		if _, err := firstWithQueued(ctx, w, hc, sid, false); err != nil {
			return err
		}
		if err := benchwire.AwaitFree(ctx, e.Store, sid, benchwire.Principal); err != nil {
			return err
		}
		boths = append(boths, m.Take())
	}
	res.First, res.Plain, res.Both = dynamobench.MedianAccount(firsts), dynamobench.MedianAccount(plains), dynamobench.MedianAccount(boths)
	return nil
}

// completeTurn runs one turn of the section's size to its end.
func completeTurn(ctx context.Context, c *client.Client, sid, tid string) error {
	log := benchwire.Follow(benchwire.Submitting(ctx, c, sid, tid, benchwire.Ask(Answer), false), false, false, nil)
	if last := log.Last(); log.Err != nil || last == nil || last.Status != protocol.StatusComplete {
		return fmt.Errorf("turn %s: %v, last line %+v", tid, log.Err, last)
	}
	return nil
}

// firstWithQueued runs a first turn of sid and, once its first line has
// arrived, enqueues a second one; with follow, it follows the second's
// streamUrl and returns the time from the first turn's terminal line to
// the queued turn's first line (a follower's polls are reads of their
// own, left out of the cost).
func firstWithQueued(ctx context.Context, w *benchwire.Wiring, hc *http.Client, sid string, follow bool) (time.Duration, error) {
	c := w.Client(hc)
	started := make(chan struct{})
	var once sync.Once
	done := make(chan *benchwire.StreamLog, 1)
	go func() {
		done <- benchwire.Follow(benchwire.Submitting(ctx, c, sid, benchwire.NewID(), benchwire.Ask(Answer), false), false, false,
			func(*benchwire.Line) { once.Do(func() { close(started) }) })
	}()
	select {
	case <-started:
	case log := <-done:
		return 0, fmt.Errorf("the first turn ended before its first line: %v", log.Err)
	}
	streamURL, err := enqueueRaw(ctx, hc, w.TurnURL(), sid, benchwire.NewID(), benchwire.Ask(Answer))
	if err != nil {
		return 0, err
	}
	if !follow {
		log := <-done
		if l := log.Last(); log.Err != nil || l == nil || l.Status != protocol.StatusComplete {
			return 0, fmt.Errorf("first turn: %v, last line %+v", log.Err, l)
		}
		return 0, nil
	}
	firstLine, last, err := followRaw(ctx, hc, w.TurnURL()+streamURL)
	if err != nil {
		return 0, err
	}
	log := <-done
	if l := log.Last(); log.Err != nil || l == nil || l.Status != protocol.StatusComplete {
		return 0, fmt.Errorf("first turn: %v, last line %+v", log.Err, l)
	}
	if !strings.Contains(last, `"status":"complete"`) {
		return 0, fmt.Errorf("the queued turn's stream ended with %s", last)
	}
	return firstLine.Sub(log.Last().At), nil
}

// delay measures one delay on a new session: queued (the second
// turn enqueued while the first runs) or the client's own resubmission.
func delay(ctx context.Context, w *benchwire.Wiring, queued bool) (time.Duration, error) {
	hc := benchwire.NewHTTPClient(4, nil)
	defer hc.CloseIdleConnections()
	sid := benchwire.NewID()
	if queued {
		return firstWithQueued(ctx, w, hc, sid, true)
	}
	c := w.Client(hc)
	first := benchwire.Follow(benchwire.Submitting(ctx, c, sid, benchwire.NewID(), benchwire.Ask(Answer), false), false, false, nil)
	if l := first.Last(); first.Err != nil || l == nil || l.Status != protocol.StatusComplete {
		return 0, fmt.Errorf("first turn: %v", first.Err)
	}
	var at time.Time
	second := benchwire.Follow(benchwire.Submitting(ctx, c, sid, benchwire.NewID(), benchwire.Ask(Answer), false), false, false,
		func(l *benchwire.Line) {
			if at.IsZero() {
				at = l.At
			}
		})
	if l := second.Last(); second.Err != nil || l == nil || l.Status != protocol.StatusComplete {
		return 0, fmt.Errorf("second turn: %v", second.Err)
	}
	return at.Sub(first.Last().At), nil
}

// enqueueRaw submits a turn with X-Turnstream-Multitask: enqueue and
// returns the streamUrl of its 202.
func enqueueRaw(ctx context.Context, hc *http.Client, turnURL, sid, tid, input string) (string, error) {
	body, err := protocol.EncodeEvent(&protocol.Event{EventID: "ev-" + tid, SessionID: sid, TurnID: tid,
		EmittedAt: protocol.FormatTime(time.Now()), Kind: protocol.EventSubmit, Submit: &protocol.SubmitPayload{Input: input}})
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, turnURL, bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", auth.DevAuthorization(benchwire.Subject))
	req.Header.Set(api.MultitaskHeader, api.MultitaskEnqueue)
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusAccepted {
		return "", fmt.Errorf("enqueue: %d %s", resp.StatusCode, raw)
	}
	var q api.Queued
	if err := json.Unmarshal(raw, &q); err != nil || q.StreamURL == "" {
		return "", fmt.Errorf("enqueue answer %s", raw)
	}
	return q.StreamURL, nil
}

// followRaw reads a resume stream to its end and returns when its first
// line arrived and the last line.
func followRaw(ctx context.Context, hc *http.Client, url string) (time.Time, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return time.Time{}, "", err
	}
	req.Header.Set("Authorization", auth.DevAuthorization(benchwire.Subject))
	resp, err := hc.Do(req)
	if err != nil {
		return time.Time{}, "", err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(resp.Body)
		return time.Time{}, "", fmt.Errorf("resume: %d %s", resp.StatusCode, raw)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 16<<20)
	var first time.Time
	last := ""
	for sc.Scan() {
		if first.IsZero() {
			first = time.Now()
		}
		last = sc.Text()
	}
	if err := sc.Err(); err != nil {
		return time.Time{}, "", err
	}
	if first.IsZero() {
		return time.Time{}, "", errors.New("the queued turn's stream sent no line")
	}
	return first, last, nil
}

// Rows renders r as turnbench's table rows (figure, measured, baseline,
// measured vs baseline).
func (r *Result) Rows() [][4]string {
	if r == nil || r.Plain == nil {
		return nil
	}
	queuedWCU := r.Both.WriteUnits() - r.First.WriteUnits()
	queuedRCU := r.Both.ReadUnits() - r.First.ReadUnits()
	queuedReq := r.Both.Requests - r.First.Requests
	rows := [][4]string{{
		fmt.Sprintf("cost of a queued turn (%d-byte answer, checkpoints every 1 s; medians of %d sessions)", Answer, r.Sessions),
		fmt.Sprintf("%d requests, %d WCU, %.1f RCU", queuedReq, queuedWCU, queuedRCU),
		fmt.Sprintf("plain second turn: %d requests, %d WCU, %.1f RCU", r.Plain.Requests, r.Plain.WriteUnits(), r.Plain.ReadUnits()),
		fmt.Sprintf("%+d requests, %.2fx WCU, %.2fx RCU", queuedReq-r.Plain.Requests, float64(queuedWCU)/float64(r.Plain.WriteUnits()), queuedRCU/r.Plain.ReadUnits()),
	}}
	base := summarize(r.Delays[Modes[0]])
	for _, mode := range Modes[1:] {
		l := summarize(r.Delays[mode])
		rows = append(rows, [4]string{
			fmt.Sprintf("previous turn's last line -> queued turn's first line, %s (%d runs; resumes poll every %s)", mode, len(r.Delays[mode]), Poll),
			fmt.Sprintf("p50 %s, p99 %s", ms(l.P50), ms(l.P99)),
			fmt.Sprintf("%s: p50 %s, p99 %s", Modes[0], ms(base.P50), ms(base.P99)),
			fmt.Sprintf("p50 %.2fx", float64(l.P50)/float64(base.P50)),
		})
	}
	return rows
}

// latencies are the p50 and p99 of a set of durations (nearest rank).
type latencies struct{ P50, P99 time.Duration }

func summarize(d []time.Duration) latencies {
	s := slices.Clone(d)
	slices.Sort(s)
	q := func(p float64) time.Duration { return s[min(len(s)-1, int(p*float64(len(s))))] }
	return latencies{P50: q(0.50), P99: q(0.99)}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }
