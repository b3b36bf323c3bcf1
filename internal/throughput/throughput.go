// Package throughput is turnbench's throughput account (turnbench -only
// throughput): it measures turns/s against the conditional-write ceiling,
// both on one DynamoDB client of its own, and accounts for where a turn's
// time and CPU go:
//
//   - per DynamoDB call kind (claim, context, save, release; the bare
//     conditional UpdateItem of the ceiling): the call as the store sees
//     it (SDK serialisation, signing, retries, deserialisation included)
//     and the HTTP attempt alone (request sent -> response headers, which
//     on loopback is the server's own time plus scheduling), with the
//     bodies' bytes; at one session, the server's CPU time per call;
//   - per turn and per bare write: CPU seconds of this process (handlers,
//     SDK, HTTP server and client) and of the DynamoDB server process
//     (dynalite, when turnbench started it), from /proc;
//   - connections the DynamoDB client dialled (a pool too small for the
//     concurrency shows up as dials per call).
//
// Each level runs reps times, each rep alternating ceiling and turn
// slices, and Rows gives the median of each figure and of the per-rep
// ratio. Beside them, shapeProbes times request shapes alone
// (dynamobench.Shapes). BackToBack and BareWrites are the two loads,
// which turnbench's handler section runs too.
package throughput

import (
	"context"
	"fmt"
	"net/http/httptrace"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/turnstream/turnstream/internal/benchwire"
	"github.com/turnstream/turnstream/internal/dynamobench"
	"github.com/turnstream/turnstream/internal/loadcheck"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

// Settings are the throughput section's sizes.
type Settings struct {
	Concurrency []int
	TurnsFor    time.Duration
	WritesFor   time.Duration
	Reps        int
	// Slices is how many alternating ceiling and turn slices a rep of a
	// level is measured in (TurnsFor and WritesFor split between them).
	Slices   int
	ShapeFor time.Duration // each request shape of shapeProbes
}

func Full() Settings {
	return Settings{Concurrency: []int{1, 8, 64}, TurnsFor: 5 * time.Second, WritesFor: 3 * time.Second, Reps: 3, Slices: 3, ShapeFor: 2 * time.Second}
}

func Quick() Settings {
	return Settings{Concurrency: []int{1, 8}, TurnsFor: 300 * time.Millisecond, WritesFor: 300 * time.Millisecond, Reps: 1, Slices: 2, ShapeFor: 200 * time.Millisecond}
}

// CallStats sums the calls of one kind in one phase.
type CallStats struct {
	N    int64
	Call time.Duration // the API call as the store sees it
	HTTP time.Duration // its HTTP attempts
	// Sent and Received are the HTTP bodies' bytes (request, response).
	Sent, Received int64
	// DynCPU is the DynamoDB server's CPU time read around each call
	// (callMeter.serverPID; 0 when not read). With one call at a time the
	// server is idle between calls, so its 10 ms ticks that fall inside a
	// call are that call's: per call they are coarse, summed over many
	// calls an unbiased estimate.
	DynCPU time.Duration
}

// Phase is one measured phase (a ceiling or a turn run) at one
// concurrency.
type Phase struct {
	Done    int64 // bare writes or acknowledged turns
	NotDone int64 // turns not acknowledged
	Wall    time.Duration
	// TurnTime is the sum of client-side turn times (sent -> end of
	// stream) of acknowledged turns; 0 for a ceiling.
	TurnTime time.Duration
	Calls    map[string]*CallStats // by kind (kindOf; "bare" for the ceiling)
	SelfCPU  time.Duration         // this process's user+system CPU
	DynCPU   time.Duration         // the DynamoDB server's, -1 when unknown
	Dials    int64
}

// add adds q's counts and times to p (one phase measured in slices).
func (p *Phase) add(q *Phase) {
	p.Done += q.Done
	p.NotDone += q.NotDone
	p.Wall += q.Wall
	p.TurnTime += q.TurnTime
	p.SelfCPU += q.SelfCPU
	p.Dials += q.Dials
	switch {
	case q.DynCPU < 0 || p.DynCPU < 0:
		p.DynCPU = -1
	default:
		p.DynCPU += q.DynCPU
	}
	for k, s := range q.Calls {
		t := p.Calls[k]
		if t == nil {
			t = &CallStats{}
			p.Calls[k] = t
		}
		t.N += s.N
		t.Call += s.Call
		t.HTTP += s.HTTP
		t.Sent += s.Sent
		t.Received += s.Received
		t.DynCPU += s.DynCPU
	}
}

// rate is Done per second.
func (p *Phase) rate() float64 { return float64(p.Done) / p.Wall.Seconds() }

// per returns d per done unit.
func (p *Phase) per(d time.Duration) time.Duration {
	if p.Done == 0 {
		return 0
	}
	return d / time.Duration(p.Done)
}

// callsPer returns the DynamoDB calls per done unit.
func (p *Phase) callsPer() float64 {
	var n int64
	for _, c := range p.Calls {
		n += c.N
	}
	if p.Done == 0 {
		return 0
	}
	return float64(n) / float64(p.Done)
}

// Level is one concurrency level, reps times.
type Level struct {
	Conc    int
	Ceiling []*Phase
	Turns   []*Phase
}

// ratio is turns/s over ceiling/4 of rep i.
func (l *Level) ratio(i int) float64 { return l.Turns[i].rate() / (l.Ceiling[i].rate() / 4) }

// callMeter observes the throughput client (dynamobench.Observer): it
// times every API call and its HTTP attempts and counts the connections
// they dial, filed by kind while a phase records.
type callMeter struct {
	mu    sync.Mutex
	calls map[string]*CallStats // nil while not recording
	dials atomic.Int64
	// serverPID, when > 0, is the DynamoDB server process whose CPU time
	// is read around each call (set only while calls run one at a time).
	serverPID atomic.Int64
}

type attemptsKey struct{}

// attemptTime is the HTTP time and body bytes of one API call's
// attempts.
type attemptTime struct{ d, sent, received atomic.Int64 }

// option installs the meter on a client (dynamo.NewClient's optFns):
// once per API call (retries inside) it times the call and counts the
// connections its attempts dial (net/http/httptrace); once per HTTP
// attempt it adds the attempt's round trip (the request sent -> the
// response's headers; the bodies here are small) and the bodies' bytes.
func (m *callMeter) option() dynamobench.ClientOption {
	return dynamobench.Observer{Call: m.call, Exchange: func(ctx context.Context, e dynamobench.Exchange) {
		if at, ok := ctx.Value(attemptsKey{}).(*attemptTime); ok {
			at.d.Add(int64(e.End.Sub(e.Start)))
			at.sent.Add(e.Sent)
			at.received.Add(e.Received)
		}
	}}.Option()
}

// call starts the account of one API call; the returned function files
// it.
func (m *callMeter) call(ctx context.Context, r dynamobench.Request) (context.Context, func(dynamobench.Outcome)) {
	kind := "bare"
	if _, isBare := ctx.Value(bareKey{}).(bool); !isBare {
		kind = dynamobench.Classify(r).Kind
	}
	at := &attemptTime{}
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(c httptrace.GotConnInfo) {
		if !c.Reused {
			m.dials.Add(1)
		}
	}})
	pid := int(m.serverPID.Load())
	cpu0 := procCPU(pid)
	start := time.Now()
	return context.WithValue(ctx, attemptsKey{}, at), func(dynamobench.Outcome) {
		took := time.Since(start)
		var cpu time.Duration
		if cpu1 := procCPU(pid); cpu0 >= 0 && cpu1 >= 0 {
			cpu = cpu1 - cpu0
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.calls == nil {
			return
		}
		s := m.calls[kind]
		if s == nil {
			s = &CallStats{}
			m.calls[kind] = s
		}
		s.N++
		s.Call += took
		s.HTTP += time.Duration(at.d.Load())
		s.Sent += at.sent.Load()
		s.DynCPU += cpu
		s.Received += at.received.Load()
	}
}

// bareKey marks the ceiling's writes in their context.
type bareKey struct{}

// record starts filing calls; the returned function stops and returns
// them.
func (m *callMeter) record() func() map[string]*CallStats {
	m.mu.Lock()
	m.calls = map[string]*CallStats{}
	m.mu.Unlock()
	return func() map[string]*CallStats {
		m.mu.Lock()
		defer m.mu.Unlock()
		c := m.calls
		m.calls = nil
		return c
	}
}

// cpuClock reads this process's CPU time and, when pid > 0, that
// process's (both from /proc, 10 ms resolution; -1 when unreadable).
type cpuClock struct{ pid int }

func (c cpuClock) read() (self, other time.Duration) {
	return procCPU(os.Getpid()), procCPU(c.pid)
}

// procCPU returns utime+stime of pid from /proc/<pid>/stat, or -1.
func procCPU(pid int) time.Duration {
	if pid <= 0 {
		return -1
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	return parseProcStat(string(raw))
}

// parseProcStat returns utime+stime of a /proc/<pid>/stat line, or -1.
func parseProcStat(raw string) time.Duration {
	// Fields after the command name (which may hold spaces) start at ")".
	i := strings.LastIndexByte(raw, ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(raw[i+1:])
	if len(f) < 13 {
		return -1
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	const clkTck = 100 // USER_HZ on Linux
	return time.Duration(ut+st) * time.Second / clkTck
}

// measurePhase runs fn, recording its calls, wall time and CPU.
func measurePhase(m *callMeter, clk cpuClock, fn func() (done, notDone int64, turnTime time.Duration, err error)) (*Phase, error) {
	stop := m.record()
	dials := m.dials.Load()
	self0, dyn0 := clk.read()
	start := time.Now()
	done, notDone, tt, err := fn()
	wall := time.Since(start)
	self1, dyn1 := clk.read()
	p := &Phase{Done: done, NotDone: notDone, Wall: wall, TurnTime: tt, Calls: stop(),
		SelfCPU: self1 - self0, DynCPU: -1, Dials: m.dials.Load() - dials}
	if dyn0 >= 0 && dyn1 >= 0 {
		p.DynCPU = dyn1 - dyn0
	}
	return p, err
}

// Config is what a measurement runs against.
type Config struct {
	// Endpoint and Table are the DynamoDB API server and table the
	// measurement's own client and store use.
	Endpoint, Table string
	CursorKey       []byte
	// Prefix starts the measurement's session ids and item keys.
	Prefix string
	// DynamoPID is the DynamoDB server's pid (0 when unknown: its CPU
	// time is then not read).
	DynamoPID int
	// Profile, when set, CPU-profiles each turn slice into
	// Profile-c<sessions>-r<rep>-s<slice>.pprof.
	Profile string
	// Progress reports what runs; nil for silence.
	Progress func(format string, a ...any)
}

// Measure measures each level of set reps times on its own client of
// cfg.Endpoint (dynamo.NewClient's, with the meter's middleware) and a
// dev-server wiring on it (benchwire, echo without delay), then the
// request shapes.
func Measure(ctx context.Context, cfg Config, set Settings) ([]*Level, []Shape, error) {
	ts, prefix, table, progress := set, cfg.Prefix, cfg.Table, cfg.Progress
	if progress == nil {
		progress = func(string, ...any) {}
	}
	m := &callMeter{}
	client, err := dynamo.NewClient(ctx, dynamo.ClientOptions{Endpoint: cfg.Endpoint, Region: "us-east-1",
		StaticCredentials: os.Getenv("AWS_ACCESS_KEY_ID") == ""}, m.option())
	if err != nil {
		return nil, nil, err
	}
	store := dynamo.New(client, dynamo.Options{Table: table, CursorKey: cfg.CursorKey})
	w, err := benchwire.New(store, benchwire.HandlerConfig{})
	if err != nil {
		return nil, nil, err
	}
	defer w.Close()
	clk := cpuClock{pid: cfg.DynamoPID}
	levels := make([]*Level, 0, len(ts.Concurrency))
	for _, conc := range ts.Concurrency {
		levels = append(levels, &Level{Conc: conc})
	}
	for rep := range ts.Reps {
		for _, l := range levels {
			progress("throughput rep %d/%d: %d concurrent sessions", rep+1, ts.Reps, l.Conc)
			if l.Conc == 1 {
				m.serverPID.Store(int64(cfg.DynamoPID))
			}
			c, t := &Phase{Calls: map[string]*CallStats{}}, &Phase{Calls: map[string]*CallStats{}}
			// Ceiling and turns alternate in slices, so that load from
			// outside (other processes on the machine) that changes
			// during a rep falls on both alike.
			for sl := range ts.Slices {
				pre := fmt.Sprintf("%s-r%ds%d", prefix, rep, sl)
				bctx := context.WithValue(ctx, bareKey{}, true)
				cs, err := measurePhase(m, clk, func() (int64, int64, time.Duration, error) {
					n, err := BareWrites(bctx, client, table, pre, l.Conc, ts.WritesFor/time.Duration(ts.Slices))
					return n, 0, 0, err
				})
				if err != nil {
					return nil, nil, err
				}
				stopProfile, err := startProfile(cfg.Profile, l.Conc, rep, sl)
				if err != nil {
					return nil, nil, err
				}
				tsl, err := measurePhase(m, clk, func() (int64, int64, time.Duration, error) {
					return turnPhase(ctx, w, pre, l.Conc, ts.TurnsFor/time.Duration(ts.Slices))
				})
				if perr := stopProfile(); err == nil {
					err = perr
				}
				if err != nil {
					return nil, nil, err
				}
				c.add(cs)
				t.add(tsl)
			}
			m.serverPID.Store(0)
			l.Ceiling, l.Turns = append(l.Ceiling, c), append(l.Turns, t)
		}
	}
	progress("throughput: request shapes")
	shapesOut, err := shapeProbes(ctx, m, clk, client, table, prefix, ts.ShapeFor)
	if err != nil {
		return nil, nil, err
	}
	return levels, shapesOut, nil
}

// bareWrites runs conc workers, each issuing conditional UpdateItem calls
// on its own item for d (dynamobench.CompareAndSetOwned: SET with a
// compare-and-set condition on a revision), and returns how many
// succeeded.
func BareWrites(ctx context.Context, client dynamo.Client, table, prefix string, conc int, d time.Duration) (int64, error) {
	var done atomic.Int64
	errs := make(chan error, conc)
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for wk := range conc {
		wg.Go(func() {
			pk := fmt.Sprintf("BENCH#%s-%d-%d", prefix, conc, wk)
			for rev := int64(0); time.Now().Before(deadline); rev++ {
				if err := dynamobench.CompareAndSetOwned(ctx, client, table, pk, rev); err != nil {
					errs <- fmt.Errorf("conditional write: %w", err)
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	close(errs)
	return done.Load(), <-errs
}

// backToBack runs conc workers submitting turns back to back for d (a
// new session every 10 turns, so context loads stay small), calls acked
// with each acknowledged turn, and returns the acknowledged and other
// turns and the error of the first turn that failed.
func BackToBack(ctx context.Context, w *benchwire.Wiring, prefix string, conc int, d time.Duration, acked func(*loadcheck.Result)) (int64, int64, error) {
	hc := benchwire.NewHTTPClient(conc, nil)
	defer hc.CloseIdleConnections()
	c := w.Client(hc)
	var done, notDone atomic.Int64
	var firstErr error
	var once sync.Once
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for wk := range conc {
		wg.Go(func() {
			for k := 0; time.Now().Before(deadline); k++ {
				sid := fmt.Sprintf("%s%d-w%d-s%d", prefix, conc, wk, k/10)
				res := loadcheck.Submit(ctx, c, sid, fmt.Sprintf("t%d", k), "ping", loadcheck.SubmitOptions{})
				if res.Acknowledged() {
					done.Add(1)
					acked(res)
					continue
				}
				notDone.Add(1)
				if res.Err != nil {
					once.Do(func() { firstErr = res.Err })
				}
			}
		})
	}
	wg.Wait()
	return done.Load(), notDone.Load(), firstErr
}

// turnPhase runs backToBack and returns its account for measurePhase.
func turnPhase(ctx context.Context, w *benchwire.Wiring, prefix string, conc int, d time.Duration) (int64, int64, time.Duration, error) {
	var total atomic.Int64
	done, notDone, err := BackToBack(ctx, w, prefix+"-tq", conc, d, func(res *loadcheck.Result) { total.Add(int64(res.Total)) })
	if ctx.Err() != nil {
		return 0, 0, 0, ctx.Err()
	}
	if done == 0 && err != nil {
		return 0, 0, 0, fmt.Errorf("no turn acknowledged: %w", err)
	}
	return done, notDone, time.Duration(total.Load()), nil
}

// medianOf returns the median of f over rs.
func medianOf[T any](rs []T, f func(T) float64) float64 {
	v := make([]float64, 0, len(rs))
	for _, r := range rs {
		v = append(v, f(r))
	}
	slices.Sort(v)
	if len(v) == 0 {
		return 0
	}
	return v[len(v)/2]
}

// msf formats seconds-as-duration in ms.
func msf(d float64) string { return fmt.Sprintf("%.3f ms", d/float64(time.Millisecond)) }

// Rows renders a measurement as rows of turnbench's table: the levels
// (throughputRows) and the request shapes (shapeRows).
func Rows(levels []*Level, shapes []Shape) [][4]string {
	return append(throughputRows(levels), shapeRows(shapes)...)
}

// throughputRows renders the section: per level, the headline row
// (turns/s vs ceiling/4, medians) and the account rows.
func throughputRows(levels []*Level) [][4]string {
	var rows [][4]string
	add := func(figure, measured, baseline, vs string) {
		rows = append(rows, [4]string{figure, measured, baseline, vs})
	}
	kinds := []string{dynamobench.KindClaim, dynamobench.KindContext, dynamobench.KindSave, dynamobench.KindRelease}
	for _, l := range levels {
		n := len(l.Turns)
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		turns := medianOf(l.Turns, (*Phase).rate)
		ceil := medianOf(l.Ceiling, (*Phase).rate)
		ratios := make([]string, 0, n)
		for i := range idx {
			ratios = append(ratios, fmt.Sprintf("%.0f%%", 100*l.ratio(i)))
		}
		ratio := medianOf(idx, func(i int) float64 { return l.ratio(i) })
		add(fmt.Sprintf("turns/s, %d concurrent session(s), echo no delay (median of %d)", l.Conc, n),
			fmt.Sprintf("%.0f turns/s (not acknowledged: %.0f)", turns, medianOf(l.Turns, func(p *Phase) float64 { return float64(p.NotDone) })),
			fmt.Sprintf("%.0f conditional UpdateItem/s, same client; ceiling/4 = %.0f turns/s", ceil, ceil/4),
			fmt.Sprintf("%.0f%% of ceiling/4 (runs: %s)", 100*ratio, strings.Join(ratios, ", ")))
		// Per-call account, medians over reps of per-call means.
		bare := func(p *Phase, http bool) float64 {
			s := p.Calls["bare"]
			if s == nil || s.N == 0 {
				return 0
			}
			if http {
				return float64(s.HTTP) / float64(s.N)
			}
			return float64(s.Call) / float64(s.N)
		}
		var parts []string
		var sumCall, sumHTTP, sumDyn float64
		for _, k := range kinds {
			call := medianOf(l.Turns, func(p *Phase) float64 {
				s := p.Calls[k]
				if s == nil || s.N == 0 {
					return 0
				}
				return float64(s.Call) / float64(s.N)
			})
			http := medianOf(l.Turns, func(p *Phase) float64 {
				s := p.Calls[k]
				if s == nil || s.N == 0 {
					return 0
				}
				return float64(s.HTTP) / float64(s.N)
			})
			sent := medianOf(l.Turns, func(p *Phase) float64 {
				if s := p.Calls[k]; s != nil && s.N > 0 {
					return float64(s.Sent) / float64(s.N)
				}
				return 0
			})
			recv := medianOf(l.Turns, func(p *Phase) float64 {
				if s := p.Calls[k]; s != nil && s.N > 0 {
					return float64(s.Received) / float64(s.N)
				}
				return 0
			})
			dcpu := medianOf(l.Turns, func(p *Phase) float64 {
				if s := p.Calls[k]; s != nil && s.N > 0 {
					return float64(s.DynCPU) / float64(s.N)
				}
				return 0
			})
			server := ""
			if dcpu > 0 {
				server = ", dynalite CPU " + msf(dcpu)
			}
			sumCall, sumHTTP, sumDyn = sumCall+call, sumHTTP+http, sumDyn+dcpu
			parts = append(parts, fmt.Sprintf("%s %s (HTTP %s%s; %.0f B sent, %.0f B received)", k, msf(call), msf(http), server, sent, recv))
		}
		bareBytes := ""
		if s := l.Ceiling[0].Calls["bare"]; s != nil && s.N > 0 {
			bareBytes = fmt.Sprintf("; %d B sent, %d B received", s.Sent/s.N, s.Received/s.N)
		}
		bareDyn := medianOf(l.Ceiling, func(p *Phase) float64 {
			if s := p.Calls["bare"]; s != nil && s.N > 0 {
				return float64(s.DynCPU) / float64(s.N)
			}
			return 0
		})
		dynVsBare := ""
		if sumDyn > 0 && bareDyn > 0 {
			bareBytes += ", dynalite CPU " + msf(bareDyn)
			dynVsBare = fmt.Sprintf("; dynalite CPU of the four %s, %.2fx four bare", msf(sumDyn), sumDyn/(4*bareDyn))
		}
		bc := medianOf(l.Ceiling, func(p *Phase) float64 { return bare(p, false) })
		bh := medianOf(l.Ceiling, func(p *Phase) float64 { return bare(p, true) })
		turnTime := medianOf(l.Turns, func(p *Phase) float64 { return float64(p.per(p.TurnTime)) })
		dbTime := medianOf(l.Turns, func(p *Phase) float64 {
			var d time.Duration
			for _, s := range p.Calls {
				d += s.Call
			}
			return float64(p.per(d))
		})
		add(fmt.Sprintf("turn time account, %d concurrent session(s): DynamoDB calls (as the store sees them; HTTP = the attempts alone)", l.Conc),
			fmt.Sprintf("a turn %s, of it %s in %.1f calls: %s; sum of the four %s (HTTP %s); outside DynamoDB calls %s",
				msf(turnTime), msf(dbTime), medianOf(l.Turns, (*Phase).callsPer), strings.Join(parts, ", "), msf(sumCall), msf(sumHTTP), msf(turnTime-dbTime)),
			fmt.Sprintf("bare conditional UpdateItem %s (HTTP %s%s); 4 of them %s", msf(bc), msf(bh), bareBytes, msf(4*bc)),
			fmt.Sprintf("four calls %.2fx four bare (HTTP %.2fx)%s", sumCall/(4*bc), sumHTTP/(4*bh), dynVsBare))
		selfT := medianOf(l.Turns, func(p *Phase) float64 { return float64(p.per(p.SelfCPU)) })
		selfB := medianOf(l.Ceiling, func(p *Phase) float64 { return float64(p.per(p.SelfCPU)) })
		dynT := medianOf(l.Turns, func(p *Phase) float64 { return float64(p.per(p.DynCPU)) })
		dynB := medianOf(l.Ceiling, func(p *Phase) float64 { return float64(p.per(p.DynCPU)) })
		dialsT := medianOf(l.Turns, func(p *Phase) float64 { return float64(p.Dials) / max(1, float64(p.Done)) })
		dialsB := medianOf(l.Ceiling, func(p *Phase) float64 { return float64(p.Dials) / max(1, float64(p.Done)) })
		dyn := "dynalite CPU unknown (not started by turnbench)"
		dynVs := "-"
		if dynT >= 0 && dynB >= 0 && l.Turns[0].DynCPU >= 0 {
			dyn = fmt.Sprintf("dynalite %s", msf(dynT))
			dynVs = fmt.Sprintf("dynalite per turn %.2fx four bare writes; turns/s vs ceiling/4 that these CPU costs allow: %.0f%% where dynalite's one thread is the limit, %.0f%% where the machine's CPU is (both processes)",
				dynT/(4*dynB), 100*4*dynB/dynT, 100*4*(selfB+dynB)/(selfT+dynT))
		}
		add(fmt.Sprintf("CPU per turn, %d concurrent session(s)", l.Conc),
			fmt.Sprintf("turnbench process (handlers, SDK, HTTP server and client) %s; %s; DynamoDB connections dialled per turn %.2f", msf(selfT), dyn, dialsT),
			fmt.Sprintf("per bare write: turnbench %s, dynalite %s; x4 = %s, %s; connections dialled per write %.2f", msf(selfB), msf(dynB), msf(4*selfB), msf(4*dynB), dialsB),
			dynVs)
	}
	return rows
}

// startProfile starts a CPU profile of one turn slice into
// prefix-c<conc>-r<rep>-s<slice>.pprof (nothing when prefix is empty);
// the returned function stops it and closes the file.
func startProfile(prefix string, conc, rep, slice int) (func() error, error) {
	if prefix == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(fmt.Sprintf("%s-c%d-r%d-s%d.pprof", prefix, conc, rep+1, slice+1))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}

// Shape is one request shape's cost on the DynamoDB server,
// sequential calls: the HTTP attempt and the server's CPU per call.
type Shape struct {
	Name    string
	N       int64
	HTTP    time.Duration // per call
	DynCPU  time.Duration // per call, -1 when unknown
	Sent    int64         // request body bytes per call
	Receivd int64         // response body bytes per call
}

// shapeProbes times each of dynamobench.Shapes for d, one call at a
// time, on client (the throughput client, through the meter), against
// the DynamoDB server whose pid is clk's.
func shapeProbes(ctx context.Context, m *callMeter, clk cpuClock, client dynamo.Client, table, prefix string, d time.Duration) ([]Shape, error) {
	shapes := dynamobench.Shapes()
	out := make([]Shape, 0, len(shapes))
	bctx := context.WithValue(ctx, bareKey{}, true)
	for i, sh := range shapes {
		pk := fmt.Sprintf("BENCH#%s-shape-%d", prefix, i)
		if err := sh.Seed(ctx, client, table, pk); err != nil {
			return nil, err
		}
		// A quarter of d unmeasured first, so that the server's first
		// calls of a shape (its JIT warming up) do not count.
		var rev int64
		calls := func(d time.Duration) (int64, error) {
			var n int64
			for deadline := time.Now().Add(d); time.Now().Before(deadline); rev++ {
				if err := sh.CompareAndSetOwned(bctx, client, table, pk, rev); err != nil {
					return n, fmt.Errorf("%s: %w", sh.Name, err)
				}
				n++
			}
			return n, nil
		}
		if _, err := calls(d / 4); err != nil {
			return nil, err
		}
		p, err := measurePhase(m, clk, func() (int64, int64, time.Duration, error) {
			n, err := calls(d)
			return n, 0, 0, err
		})
		if err != nil {
			return nil, err
		}
		r := Shape{Name: sh.Name, N: p.Done, DynCPU: -1}
		if s := p.Calls["bare"]; s != nil && s.N > 0 {
			r.HTTP, r.Sent, r.Receivd = s.HTTP/time.Duration(s.N), s.Sent/s.N, s.Received/s.N
		}
		if p.DynCPU >= 0 {
			r.DynCPU = p.per(p.DynCPU)
		}
		out = append(out, r)
	}
	return out, nil
}

// shapeRows renders shapeProbes' results beside the first (bare) shape.
func shapeRows(rs []Shape) [][4]string {
	if len(rs) == 0 {
		return nil
	}
	var rows [][4]string
	base := rs[0]
	cpu := func(d time.Duration) string {
		if d < 0 {
			return "dynalite CPU unknown"
		}
		return "dynalite CPU " + msf(float64(d))
	}
	for _, r := range rs[1:] {
		vs := fmt.Sprintf("HTTP %.2fx", float64(r.HTTP)/float64(base.HTTP))
		if r.DynCPU >= 0 && base.DynCPU > 0 {
			vs += fmt.Sprintf(", CPU %.2fx", float64(r.DynCPU)/float64(base.DynCPU))
		}
		rows = append(rows, [4]string{
			"DynamoDB server cost of a request shape, one call at a time: " + r.Name,
			fmt.Sprintf("HTTP %s, %s per call (%d calls; %d B sent, %d B received)", msf(float64(r.HTTP)), cpu(r.DynCPU), r.N, r.Sent, r.Receivd),
			fmt.Sprintf("%s: HTTP %s, %s (%d B sent)", base.Name, msf(float64(base.HTTP)), cpu(base.DynCPU), base.Sent),
			vs,
		})
	}
	return rows
}
