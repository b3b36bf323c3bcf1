package main

import (
	"context"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/turnstream/turnstream/internal/benchwire"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/model/echo"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
	"github.com/turnstream/turnstream/pkg/turn"
)

// The pace of the durable-turn and wire sections: the echo model streams
// echoChunk runes every echoDelay, 400 characters a second, about 100
// tokens a second (a token being about four characters).
const (
	echoChunk  = 4
	echoDelay  = 10 * time.Millisecond
	textRate   = float64(echoChunk) / (float64(echoDelay) / float64(time.Second)) // characters per second
	longTurn   = 300 * time.Second                                                // TurnTimeout: a 64 KB answer at textRate takes about 165 s
	checkEvery = time.Second                                                      // CHECKPOINT_INTERVAL's default
)

// durableSettings are the sizes of the durable-turn and wire sections.
type durableSettings struct {
	CostSizes   []int // answer sizes of the checkpoint cost row, bytes
	ResumeTurns int   // turns followed by a resumer
	ResumeSize  int
	StopTurns   int // turns stopped, per configuration
	StopSize    int
	CrashTurns  int
	CrashSize   int
	WireSizes   []int
	// WireScale speeds the wire section's clock by this factor: text
	// rate, SnapshotBytesPerSecond, SnapshotInterval and MaxSnapshotGap
	// all scaled together, so the byte ratios are the same as at 1.
	WireScale int
}

func fullDurable() durableSettings {
	return durableSettings{
		CostSizes: []int{1 << 10, 64 << 10}, ResumeTurns: 3, ResumeSize: 8 << 10,
		StopTurns: 20, StopSize: 4 << 10, CrashTurns: 10, CrashSize: 4 << 10,
		WireSizes: []int{1 << 10, 16 << 10, 64 << 10}, WireScale: 1,
	}
}

func quickDurable() durableSettings {
	return durableSettings{
		CostSizes: []int{1 << 10, 2 << 10}, ResumeTurns: 1, ResumeSize: 2 << 10,
		StopTurns: 3, StopSize: 2 << 10, CrashTurns: 2, CrashSize: 2 << 10,
		WireSizes: []int{1 << 10, 4 << 10}, WireScale: 10,
	}
}

// durableReport is what the durable-turn and wire sections measured.
type durableReport struct {
	Set    durableSettings
	Cost   []*costResult // by CostSizes
	Resume *resumeResult
	Stop   map[string]*stopResult // "on" (checkpoints at 1 s), "off" (lease renewal)
	Crash  *crashResult
	Wire   []*pacedWire
	// NoCapacity counts writes dynalite answered without ConsumedCapacity.
	NoCapacity int64
}

// durableSections runs the sections named in only ("durable", "wire";
// empty: both) on the table through client (the tapped one, whose
// requests the run counts) and raw (uncounted, for the meter's size
// reads).
func durableSections(ctx context.Context, client, raw dynamo.Client, endpoint, table string, cursorKey []byte, prefix string, ds durableSettings, only map[string]bool, progress func(string, ...any)) (*durableReport, error) {
	rep := &durableReport{Set: ds}
	all := len(only) == 0
	var (
		wg              sync.WaitGroup
		costErr, wirErr error
		costMeter       = newMeter(client, raw)
	)
	if all || only["durable"] {
		progress("checkpoint cost: %v-byte answers at %.0f chars/s, checkpoints on and off", ds.CostSizes, textRate)
		wg.Go(func() {
			plain := dynamo.New(client, dynamo.Options{Table: table, CursorKey: cursorKey})
			rep.Cost, costErr = checkpointCost(ctx, dynamo.New(costMeter, dynamo.Options{Table: table, CursorKey: cursorKey}), plain, costMeter, prefix, ds.CostSizes)
		})
	}
	if all || only["wire"] {
		progress("wire bytes, paced and unpaced: %v-byte answers, time x%d", ds.WireSizes, ds.WireScale)
		wg.Go(func() {
			rep.Wire, wirErr = wireSection(ctx, dynamo.New(client, dynamo.Options{Table: table, CursorKey: cursorKey}), prefix, ds)
		})
	}
	wg.Wait()
	rep.NoCapacity = costMeter.NoCapacity()
	if err := errors.Join(costErr, wirErr); err != nil {
		return nil, err
	}
	if !all && !only["durable"] {
		return rep, nil
	}
	m := newMeter(client, nil)
	store := dynamo.New(m, dynamo.Options{Table: table, CursorKey: cursorKey})
	var err error
	progress("resume latency: %d turns followed by a resumer", ds.ResumeTurns)
	if rep.Resume, err = resumeLatency(ctx, store, m, prefix, ds); err != nil {
		return nil, err
	}
	progress("stop latency: %d turns with checkpoints on, %d with them off", ds.StopTurns, ds.StopTurns)
	if rep.Stop, err = stopLatency(ctx, store, prefix, ds); err != nil {
		return nil, err
	}
	progress("crash: %d turns cut off mid-stream", ds.CrashTurns)
	if rep.Crash, err = crashLoss(ctx, store, endpoint, table, cursorKey, prefix, ds); err != nil {
		return nil, err
	}
	return rep, nil
}

// durableOptions sets the options every turn of these sections shares:
// the echo pace (benchwire.LongAnswer: short prompts, long answers), a deadline a
// 64 KB answer fits in, and the checkpoint interval.
func durableOptions(checkpoints time.Duration) func(*turn.Options) {
	return func(o *turn.Options) {
		o.Model = benchwire.LongAnswer{Echo: echo.New(echoDelay, echoChunk)}
		o.TurnTimeout = longTurn
		o.CheckpointInterval = checkpoints
	}
}

// ---- checkpoint cost --------------------------------------------------------

// costTurn is the account of one turn.
type costTurn struct {
	Requests    int
	Writes      int
	TableUnits  float64 // as dynalite reported them
	IndexUnits  int     // computed (meter)
	Checkpoints int     // live-item writes: checkpoints and heartbeats
	Renewals    int     // lease renewals: one per LeaseDuration/3 the turn outlived
	// FinalItemBytes is the turn item's size after the final save.
	FinalItemBytes int
	// FirstItemUnits is the units of the write that created the turn item
	// (the first checkpoint's with checkpoints on).
	FirstItemUnits float64
	Status         string
	Took           time.Duration
}

// Units is the turn's billed write units, base table and indexes.
func (c costTurn) Units() float64 { return c.TableUnits + float64(c.IndexUnits) }

// costResult is one answer size, checkpoints on and off.
type costResult struct {
	Size    int
	On, Off costTurn
}

// Bound is the bound on the billed write units of the turn with
// checkpoints on: 3 x its final item in KB + 2 x its checkpoints + its
// answer in KB + the units of the same turn with checkpoints off. A
// checkpoint writes the live item (1 unit) and a delta of the text since
// the last one (1 unit, and 1 more per whole KB it carries: with
// CHECKPOINT_MIN_CHANGE's kilobyte a delta is 1-2 KB), so the deltas add
// at most the answer's kilobytes beyond one unit each.
func (c *costResult) Bound() float64 {
	return float64(3*kbUnits(c.On.FinalItemBytes)+2*c.On.Checkpoints+c.Size/1024) + c.Off.Units()
}

// checkpointCost streams one answer of each size on a session of one
// prior turn (seeded through plain, outside the meter, so the measured
// turn loads context as a continued session does) with checkpoints at
// 1 s and on another with them off, all at once, and accounts each
// session's requests and write units.
func checkpointCost(ctx context.Context, store, plain chat.Store, m *meter, prefix string, sizes []int) ([]*costResult, error) {
	on, err := benchwire.NewTurn(store, durableOptions(checkEvery))
	if err != nil {
		return nil, err
	}
	defer on.Close()
	off, err := benchwire.NewTurn(store, durableOptions(0))
	if err != nil {
		return nil, err
	}
	defer off.Close()
	out := make([]*costResult, len(sizes))
	errs := make([]error, 2*len(sizes))
	var wg sync.WaitGroup
	for i, size := range sizes {
		out[i] = &costResult{Size: size}
		for k, w := range []*benchwire.Wiring{on, off} {
			acct := &out[i].On
			if k == 1 {
				acct = &out[i].Off
			}
			wg.Go(func() {
				sid := fmt.Sprintf("%s-cost-%d-%d", prefix, size, k)
				if err := benchwire.SeedTurns(ctx, plain, sid, 1); err != nil {
					errs[2*i+k] = err
					return
				}
				hc := benchwire.NewHTTPClient(1, nil)
				defer hc.CloseIdleConnections()
				log := benchwire.Follow(benchwire.Submitting(ctx, w.Client(hc), sid, "t1", benchwire.Ask(size), true), false, false, nil)
				last := log.Last()
				if log.Err != nil || last == nil || last.Status != protocol.StatusComplete {
					errs[2*i+k] = fmt.Errorf("cost turn %s: %v, last line %+v", sid, log.Err, last)
					return
				}
				s := m.session(sid)
				*acct = costTurn{Requests: s.Requests, Writes: s.Writes, TableUnits: s.TableUnits, IndexUnits: s.IndexUnits,
					Checkpoints: s.LiveWrites, Renewals: s.Renewals, FinalItemBytes: s.TurnItemBytes, Status: last.Status, Took: last.At.Sub(log.Sent)}
			})
		}
	}
	wg.Wait()
	// The release is written after the terminal line: wait for the
	// handlers, then take the accounts again.
	on.WaitIdle(30 * time.Second)
	off.WaitIdle(30 * time.Second)
	for _, r := range out {
		for k, acct := range []*costTurn{&r.On, &r.Off} {
			s := m.session(fmt.Sprintf("%s-cost-%d-%d", prefix, r.Size, k))
			acct.Requests, acct.Writes, acct.TableUnits, acct.IndexUnits = s.Requests, s.Writes, s.TableUnits, s.IndexUnits
			acct.Checkpoints, acct.FinalItemBytes, acct.FirstItemUnits = s.LiveWrites, s.TurnItemBytes, s.FirstItemUnits
			acct.Renewals = s.Renewals
		}
	}
	return out, errors.Join(errs...)
}

// ---- resume latency ---------------------------------------------------------

// resumeResult is the resumers' view of running turns.
type resumeResult struct {
	Latency latencies // checkpoint write answered -> the resumer's line of that sequence
	Samples int
	Poll    time.Duration // RESUME_POLL_INTERVAL of the benchwire.Wiring
	// Lines is the resumed lines, Decoded those that decode, Known those
	// whose sequence the live stream also carried with equal messages,
	// Increasing whether each resumer's sequences only grew, TerminalEqual
	// the resumers whose terminal snapshot's messages equal the live one's.
	Lines, Decoded, Known, TerminalEqual, Turns int
	Increasing                                  bool
}

// resumeLatency runs ds.ResumeTurns turns at once, each followed from its
// first line by a resumer (after=0), and matches each resumed line with
// the checkpoint write of its sequence seen in the meter.
func resumeLatency(ctx context.Context, store chat.Store, m *meter, prefix string, ds durableSettings) (*resumeResult, error) {
	w, err := benchwire.NewTurn(store, durableOptions(checkEvery))
	if err != nil {
		return nil, err
	}
	defer w.Close()
	r := &resumeResult{Poll: turn.DefaultResumePollInterval, Increasing: true, Turns: ds.ResumeTurns}
	var (
		mu   sync.Mutex
		lat  []time.Duration
		errs = make([]error, ds.ResumeTurns)
		wg   sync.WaitGroup
	)
	for i := range ds.ResumeTurns {
		wg.Go(func() {
			sid := fmt.Sprintf("%s-resume-%d", prefix, i)
			hc := benchwire.NewHTTPClient(2, nil)
			defer hc.CloseIdleConnections()
			c := w.Client(hc)
			resumed := make(chan *benchwire.StreamLog, 1)
			started := false
			live := benchwire.Follow(benchwire.Submitting(ctx, c, sid, "t1", benchwire.Ask(ds.ResumeSize), true), true, true, func(*benchwire.Line) {
				if !started {
					started = true
					go func() { resumed <- resumeWhenFound(ctx, c, sid, "t1") }()
				}
			})
			if !started {
				errs[i] = fmt.Errorf("resume turn %s: no live line: %v", sid, live.Err)
				return
			}
			res := <-resumed
			if live.Err != nil || res.Err != nil {
				errs[i] = fmt.Errorf("resume turn %s: live %v, resume %v", sid, live.Err, res.Err)
				return
			}
			bySeq := map[int64][]byte{}
			for _, l := range live.Lines {
				if l.Kind == protocol.EventSnapshot {
					bySeq[l.Sequence] = l.Messages
				}
			}
			landed := m.session(sid).Landed
			mu.Lock()
			defer mu.Unlock()
			prev := int64(-1)
			for k, l := range res.Lines {
				r.Lines++
				if l.Err != "" {
					continue
				}
				r.Decoded++
				if l.Sequence <= prev {
					r.Increasing = false
				}
				prev = l.Sequence
				if msgs, ok := bySeq[l.Sequence]; ok && string(msgs) == string(l.Messages) {
					r.Known++
				}
				// The first line is the state at connect, not a
				// checkpoint as it lands.
				if at, ok := landed[l.Sequence]; ok && k > 0 {
					lat = append(lat, l.At.Sub(at))
				}
			}
			if a, b := live.Last(), res.Last(); a != nil && b != nil && a.Status == protocol.StatusComplete && string(a.Messages) == string(b.Messages) {
				r.TerminalEqual++
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	r.Latency, r.Samples = summarize(lat), len(lat)
	return r, nil
}

// resumeWhenFound follows the resume route (after=0) of a turn that has
// just started: until its first checkpoint lands the route answers 404
// TURN_NOT_FOUND, and the resumer asks again 50 ms later (at most 5 s).
func resumeWhenFound(ctx context.Context, c *client.Client, sid, turnID string) *benchwire.StreamLog {
	deadline := time.Now().Add(5 * time.Second)
	for {
		log := benchwire.Follow(func(o client.StreamOptions) (*client.Stream, error) {
			return c.Resume(ctx, client.Resume{SessionID: sid, TurnID: turnID, After: 0, StreamOptions: o})
		}, true, true, nil)
		if log.Status() != http.StatusNotFound || time.Now().After(deadline) {
			return log
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ---- stop latency -------------------------------------------------------------

// stopResult is one configuration's stops.
type stopResult struct {
	Latency     latencies // POST /stop sent -> the interrupted terminal line
	Turns       int
	Interrupted int // ended with an error snapshot TURN_INTERRUPTED
	Lease       time.Duration
	Checkpoints time.Duration
}

// stopLatency stops ds.StopTurns turns with checkpoints at 1 s (lease
// default) and as many with checkpoints off and a 3 s lease (renewed, and
// the stop flag read, every second), at a random moment after the first
// line, both configurations at once (5 turns of each at a time).
func stopLatency(ctx context.Context, store chat.Store, prefix string, ds durableSettings) (map[string]*stopResult, error) {
	out := map[string]*stopResult{
		"on":  {Checkpoints: checkEvery, Lease: turn.DefaultLeaseDuration},
		"off": {Lease: 3 * time.Second},
	}
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
		lat  = map[string][]time.Duration{}
	)
	for name, sr := range out {
		set := durableOptions(sr.Checkpoints)
		w, err := benchwire.NewTurn(store, func(o *turn.Options) { set(o); o.LeaseDuration = sr.Lease })
		if err != nil {
			return nil, err
		}
		defer w.Close()
		jobs := make(chan int)
		for wk := range 5 {
			wg.Go(func() {
				hc := benchwire.NewHTTPClient(2, nil)
				defer hc.CloseIdleConnections()
				c := w.Client(hc)
				rng := mrand.New(mrand.NewPCG(uint64(wk), 7))
				for i := range jobs {
					sid := fmt.Sprintf("%s-stop-%s-%d", prefix, name, i)
					wait := 300*time.Millisecond + time.Duration(rng.Int64N(int64(1500*time.Millisecond)))
					d, code, err := stopOne(ctx, c, sid, ds.StopSize, wait)
					mu.Lock()
					sr.Turns++
					if err != nil {
						errs = append(errs, err)
					} else if code == protocol.CodeTurnInterrupted {
						sr.Interrupted++
						lat[name] = append(lat[name], d)
					}
					mu.Unlock()
				}
			})
		}
		wg.Go(func() {
			defer close(jobs)
			for i := range ds.StopTurns {
				jobs <- i
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for name, sr := range out {
		sr.Latency = summarize(lat[name])
	}
	return out, nil
}

// stopOne submits a turn, sends POST /stop wait after its first line and
// returns the time from the stop to the terminal line and that line's
// error code.
func stopOne(ctx context.Context, c *client.Client, sid string, size int, wait time.Duration) (time.Duration, string, error) {
	var (
		sent    time.Time
		stopErr = make(chan error, 1)
		once    sync.Once
	)
	var sentMu sync.Mutex
	log := benchwire.Follow(benchwire.Submitting(ctx, c, sid, "t1", benchwire.Ask(size), true), true, false, func(*benchwire.Line) {
		once.Do(func() {
			go func() {
				time.Sleep(wait)
				sentMu.Lock()
				sent = time.Now()
				sentMu.Unlock()
				stopErr <- c.Stop(ctx, sid, "t1")
			}()
		})
	})
	last := log.Last()
	if last == nil {
		return 0, "", fmt.Errorf("stop turn %s: no line: %v", sid, log.Err)
	}
	if err := <-stopErr; err != nil {
		return 0, "", fmt.Errorf("stop turn %s: %w", sid, err)
	}
	sentMu.Lock()
	defer sentMu.Unlock()
	if log.Err != nil || last.Kind != protocol.EventSnapshot || last.Status != protocol.StatusError || last.At.Before(sent) {
		return 0, "", fmt.Errorf("stop turn %s: ended %s/%s %s before or without the stop (%v)", sid, last.Kind, last.Status, last.Code, log.Err)
	}
	return last.At.Sub(sent), last.Code, nil
}

// ---- characters lost in a crash -------------------------------------------------

// crashResult is what history kept of turns whose process died.
type crashResult struct {
	Turns    int
	Lost     []int // characters the client had received and history does not hold, per turn
	Received []int
	// Lost turns are those history shows as error TURN_LOST with their
	// user message: the crash record.
	Recorded int
	Interval time.Duration
	Lease    time.Duration
	// MinChange is CHECKPOINT_MIN_CHANGE, bytes (the default).
	MinChange int
}

// lossBound is the most a crash may lose at textRate characters a
// second: the change a checkpoint waits for (CHECKPOINT_MIN_CHANGE, or
// four intervals of text if fewer) plus the text of the interval in
// which the process died.
func (c *crashResult) lossBound(textRate float64) float64 {
	perInterval := textRate * c.Interval.Seconds()
	return min(float64(c.MinChange), 4*perInterval) + perInterval
}

// crashLoss runs each turn on its own handler whose DynamoDB client goes
// through a cutTransport, cuts it (nothing the process sends afterwards
// lands: no checkpoint, save or release) and drops the client's stream
// at a random moment 1-4 s after the first line, waits for the lease
// (3 s) to expire, and reads the turn's record through another
// benchwire.Wiring's history handler.
func crashLoss(ctx context.Context, store chat.Store, endpoint, table string, cursorKey []byte, prefix string, ds durableSettings) (*crashResult, error) {
	const lease = 3 * time.Second
	reader, err := benchwire.NewTurn(store, durableOptions(checkEvery))
	if err != nil {
		return nil, err
	}
	defer reader.Close()
	r := &crashResult{Turns: ds.CrashTurns, Interval: checkEvery, Lease: lease, MinChange: config.DefaultCheckpointMinChange}
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
		sem  = make(chan struct{}, 5)
	)
	for i := range ds.CrashTurns {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			lost, got, recorded, err := crashOne(ctx, reader, endpoint, table, cursorKey, fmt.Sprintf("%s-crash-%d", prefix, i), ds.CrashSize, lease, uint64(i))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			r.Lost, r.Received = append(r.Lost, lost), append(r.Received, got)
			if recorded {
				r.Recorded++
			}
		})
	}
	wg.Wait()
	return r, errors.Join(errs...)
}

func crashOne(ctx context.Context, reader *benchwire.Wiring, endpoint, table string, cursorKey []byte, sid string, size int, lease time.Duration, seed uint64) (lost, received int, recorded bool, err error) {
	cut := &cutTransport{inner: http.DefaultTransport.(*http.Transport).Clone()}
	client, err := dynamo.NewClient(ctx, dynamo.ClientOptions{Endpoint: endpoint, Region: "us-east-1", StaticCredentials: true, Transport: cut})
	if err != nil {
		return 0, 0, false, err
	}
	set := durableOptions(checkEvery)
	w, err := benchwire.NewTurn(dynamo.New(client, dynamo.Options{Table: table, CursorKey: cursorKey}), func(o *turn.Options) { set(o); o.LeaseDuration = lease })
	if err != nil {
		return 0, 0, false, err
	}
	defer func() {
		// The cut-off turn runs on (its writes failing) to its end; wait
		// for it so it does not load the machine under later sections.
		w.WaitIdle(30 * time.Second)
		w.Close()
	}()
	rng := mrand.New(mrand.NewPCG(seed, 11))
	wait := time.Second + time.Duration(rng.Int64N(int64(3*time.Second)))
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var once sync.Once
	log := benchwire.Follow(benchwire.Submitting(sctx, w.Client(benchwire.NewHTTPClient(1, nil)), sid, "t1", benchwire.Ask(size), true), true, false, func(*benchwire.Line) {
		once.Do(func() {
			time.AfterFunc(wait, func() {
				cut.cut.Store(true) // the process is gone: nothing more lands
				cancel()
			})
		})
	})
	if !cut.cut.Load() {
		return 0, 0, false, fmt.Errorf("crash turn %s ended before the cut (%d lines, %v)", sid, len(log.Lines), log.Err)
	}
	for _, l := range log.Lines {
		if l.Err == "" && l.Kind == protocol.EventSnapshot {
			received = max(received, l.Answer)
		}
	}
	// The lease expires at most one lease after the cut; history shows the
	// crash record from then on.
	hc := benchwire.NewHTTPClient(1, nil)
	defer hc.CloseIdleConnections()
	history := reader.Client(hc)
	deadline := time.Now().Add(lease + 15*time.Second)
	for time.Now().Before(deadline) {
		turns, err := history.AllTurns(ctx, sid)
		if err == nil && len(turns) == 1 && turns[0].Status == string(chat.TurnError) {
			t := turns[0]
			stored := 0
			for _, m := range t.Messages {
				if m.Role == protocol.RoleAssistant {
					stored = runeLen(m.Content)
				}
			}
			recorded = t.Error != nil && t.Error.Code == protocol.CodeTurnLost && len(t.Messages) > 0 && t.Messages[0].Role == protocol.RoleUser
			return max(0, received-stored), received, recorded, nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return 0, 0, false, fmt.Errorf("crash turn %s: no crash record in history within the lease and 15 s", sid)
}

// lostMax is the largest of a crash run's losses.
func (c *crashResult) lostMax() int {
	if len(c.Lost) == 0 {
		return 0
	}
	return slices.Max(c.Lost)
}
