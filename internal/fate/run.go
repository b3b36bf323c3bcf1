package fate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/turnstream/turnstream/internal/dynalite"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

// runner is one Run: its processes, proxy, client and logs.
type runner struct {
	cfg   Config
	t     Timings
	proxy *proxy
	ps    *procs
	c     *client
	plans []*Plan
	logs  map[string]*sessionLog
	// finalReads are the reads of the last quiescent round, by session;
	// quietAt is when quiescence began.
	finalReads map[string][]*Read
	quietAt    time.Time
	// pauseSlots are the free pause slots.
	pauseSlots chan int
}

// Run runs cfg.Schedules schedules (cfg.Concurrency at a time) against
// cfg.Processes dev servers on one fresh table, then reads every route at
// quiescence and checks I1-I8 over everything seen (Check). It returns
// an error only when the harness itself cannot run (no dev server, no
// DynamoDB, a process that does not start); violations are in the
// Report.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if !supported {
		return nil, errUnsupported
	}
	began := time.Now()
	dir, tmp := cfg.Dir, false
	if dir == "" {
		d, err := os.MkdirTemp("", "fate-")
		if err != nil {
			return nil, fmt.Errorf("fate: %w", err)
		}
		dir, tmp = d, true
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("fate: %w", err)
	}

	endpoint := cfg.Endpoint
	if endpoint == "" {
		srv, err := dynalite.Start(cfg.Root)
		if err != nil {
			return nil, fmt.Errorf("fate: %w", err)
		}
		defer srv.Stop()
		endpoint = srv.Endpoint()
	}
	admin, err := dynamo.NewClient(ctx, dynamo.ClientOptions{Endpoint: endpoint, Region: "us-east-1", StaticCredentials: true, AttemptTimeout: 20 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("fate: %w", err)
	}
	var suffix [4]byte
	_, _ = rand.Read(suffix[:])
	table := fmt.Sprintf("fate_%d_%s", cfg.Seed, hex.EncodeToString(suffix[:]))
	if err := dynamo.CreateTable(ctx, admin, table); err != nil {
		return nil, fmt.Errorf("fate: %w", err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		_ = dynamo.DeleteTable(dctx, admin, table)
	}()

	r := &runner{cfg: cfg, t: cfg.Timings, logs: map[string]*sessionLog{}, finalReads: map[string][]*Read{}, pauseSlots: make(chan int, 2)}
	// The slots: the processes, the quota processes, and the pause slots
	// (the nearlease schedules' turns, one schedule at a time on each).
	const pauses = 2
	slots := cfg.Processes + cfg.QuotaProcesses + pauses
	pause := slots - pauses
	if r.proxy, err = newProxy(endpoint, slots); err != nil {
		return nil, err
	}
	defer r.proxy.close()
	env := append(cfg.Timings.env(), "TABLE_NAME="+table, "AWS_REGION=us-east-1", "LOG_LEVEL=warn", "AUTH_MODE=dev",
		"CURSOR_SECRET=fate-harness-cursor-secret")
	r.ps = newProcs(cfg.DevServer, dir, env, slots)
	var quota []int
	for i := pause; i < slots; i++ {
		r.pauseSlots <- i
	}
	for i := cfg.Processes; i < pause; i++ {
		// The quota processes: a principal turnsPerMinute quota, reached
		// only by the quota schedules' principals.
		r.ps.slots[i].env = []string{fmt.Sprintf(`QUOTAS={"principal":{"turnsPerMinute":%d}}`, cfg.QuotaTurnsPerMinute)}
		quota = append(quota, i)
	}
	defer r.ps.stopAll()
	r.proxy.onHook = func(h *hook, slot int) {
		s := r.ps.slots[slot]
		if h.Action == "kill" {
			s.kill(h.For, r.proxy.endpoint(slot), "hook")
		} else {
			s.pause(h.For, "hook")
		}
	}
	if err := r.ps.settle(ctx, r.proxy.endpoint); err != nil {
		return nil, err
	}
	t := cfg.Timings
	// A stream lasts its deadline plus cleanup at most, and pauses of its
	// process: the harness waits twice that and more before it gives up.
	r.c = newClient(r.ps, 2*t.TurnTimeout+t.CleanupReserve+30*time.Second)

	indexes := cfg.Only
	if len(indexes) == 0 {
		for i := range cfg.Schedules {
			indexes = append(indexes, i)
		}
	}
	for _, i := range indexes {
		sid := fmt.Sprintf("s%d-%d", cfg.Seed, i)
		p := newPlan(cfg.Seed, i, planEnv{procs: cfg.Processes, quota: quota, quotaN: cfg.QuotaTurnsPerMinute, t: t, kinds: cfg.Kinds}, sid)
		r.plans = append(r.plans, p)
		r.logs[sid] = &sessionLog{plan: p, principal: p.Principal, inputs: map[string]string{}, uploaded: map[string]string{}, files: map[string][]string{}}
	}
	cfg.Logf("fate: %d schedules, %d at once, %d dev servers, %d with quotas and 2 for the nearlease pauses (%s), %s lease (%s), table %s, logs in %s",
		len(r.plans), cfg.Concurrency, cfg.Processes, cfg.QuotaProcesses, cfg.DevServer, t.Name, t.Lease, table, dir)

	// A run whose DynamoDB API server died is void: stop it at once.
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	dead := func() error {
		if u := r.proxy.unreachable.Load(); u != nil {
			return fmt.Errorf("fate: the DynamoDB API server stopped answering at %s (%v): the run is void", clock(u.At), u.Err)
		}
		return nil
	}
	sem := make(chan struct{}, cfg.Concurrency)
	var wg sync.WaitGroup
	var done sync.Mutex
	finished := 0
	for _, p := range r.plans {
		select {
		case sem <- struct{}{}:
		case <-runCtx.Done():
		}
		if runCtx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			(&schedRun{r: r, plan: p, lg: r.logs[p.Session], live: map[string]*Stream{}}).run(runCtx)
			if dead() != nil {
				stopRun()
			}
			done.Lock()
			finished++
			if finished%25 == 0 || finished == len(r.plans) {
				cfg.Logf("fate: %d of %d schedules done (%s)", finished, len(r.plans), time.Since(began).Round(time.Second))
			}
			done.Unlock()
		})
	}
	wg.Wait()
	if err := dead(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := r.quiesce(ctx); err != nil {
		return nil, err
	}
	if err := dead(); err != nil {
		return nil, err
	}
	rep := r.report(began)
	for _, v := range r.check() {
		if v.Reported {
			rep.Findings = append(rep.Findings, v)
		} else {
			rep.Violations = append(rep.Violations, v)
		}
	}
	r.ps.stopAll()
	rep.ProcessErrors = processErrors(dir)
	events := r.ps.eventsCopy()
	if cfg.Timelines {
		for _, p := range r.plans {
			rep.Plans[p.Index] = p.String()
			rep.Timelines[p.Index] = r.timeline(p, events)
		}
	}
	for _, v := range rep.Violations {
		for _, p := range r.plans {
			if p.Index == v.Schedule && rep.Plans[p.Index] == "" {
				rep.Plans[p.Index] = p.String()
				rep.Timelines[p.Index] = r.timeline(p, events)
			}
		}
	}
	rep.Wall = time.Since(began)
	rep.LogDir = dir
	if tmp && !cfg.KeepLogs && len(rep.Violations) == 0 && len(rep.ProcessErrors) == 0 {
		_ = os.RemoveAll(dir)
		rep.LogDir = ""
	}
	return rep, nil
}

// quiesce turns the faults off, continues and restarts every process,
// waits until every lease applied so far has expired plus one poll, and
// then reads every route of every session twice (the first round decides
// expired leases; the second is the final state), resumes every turn and
// replays every turn id history holds.
func (r *runner) quiesce(ctx context.Context) error {
	r.quietAt = time.Now()
	r.proxy.clear()
	r.proxy.pending.Wait() // writes delivered late land before the final reads
	if err := r.ps.settle(ctx, r.proxy.endpoint); err != nil {
		return err
	}
	sleepUntil(ctx, r.proxy.lastExpiry().Add(r.t.ResumePoll+100*time.Millisecond))
	sessions := make([]string, 0, len(r.logs))
	for sid, lg := range r.logs {
		if lg.plan.Kind != KindQuota { // a quota schedule's sessions are its bursts'
			sessions = append(sessions, sid)
		}
	}
	sort.Strings(sessions)
	forEach := func(f func(i int, sid string)) {
		sem := make(chan struct{}, 16)
		var wg sync.WaitGroup
		for i, sid := range sessions {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				f(i, sid)
			})
		}
		wg.Wait()
	}
	procs := r.cfg.Processes // not the quota processes: their quota would refuse the replays
	// A read that fails (a busy machine can make DynamoDB slower than the
	// dev servers' attempt timeout) is made again, as a client would.
	read := func(lg *sessionLog, proc int, sid, route string) *Read {
		var rd *Read
		for try := 0; try < 5 && ctx.Err() == nil; try++ {
			if rd = r.c.read(ctx, lg, (proc+try)%procs, sid, route); rd.Status == 200 && rd.Err == "" {
				break
			}
			sleepUntil(ctx, time.Now().Add(200*time.Millisecond))
		}
		return rd
	}
	forEach(func(i int, sid string) {
		for k, route := range []string{"sessions", "turns", "messages"} {
			read(r.logs[sid], (i+k)%procs, sid, route)
		}
	})
	var finalMu sync.Mutex
	forEach(func(i int, sid string) {
		lg := r.logs[sid]
		routes := []string{"sessions", "turns", "messages"}
		if lg.plan.Kind == KindBranch {
			// Every turn by id: the versions off the active branch are in
			// no page.
			lg.mu.Lock()
			for t := range lg.inputs {
				routes = append(routes, "turns/"+t)
			}
			lg.mu.Unlock()
		}
		for k, route := range routes {
			rd := read(lg, (i+k+1)%procs, sid, route)
			finalMu.Lock()
			r.finalReads[sid] = append(r.finalReads[sid], rd)
			finalMu.Unlock()
		}
	})
	forEach(func(i int, sid string) {
		lg := r.logs[sid]
		var turns []string
		lg.mu.Lock()
		for t := range lg.inputs {
			turns = append(turns, t)
		}
		lg.mu.Unlock()
		slices.Sort(turns)
		final := r.final(sid)
		for k, t := range turns {
			st := r.c.resume(ctx, lg, (i+k)%procs, sid, t, -1, 0)
			st.Final = true
			if final.turn(t) == nil {
				continue
			}
			for try := 0; try < 5; try++ {
				proc := (i + k + 1 + try) % procs
				if len(lg.filesOf(t)) > 0 {
					proc = lg.uploadProc // the only process that holds its files (attach.go)
				}
				if rp := r.c.replay(ctx, lg, proc, sid, t, lg.inputs[t], true); rp.Status != 0 && rp.Status < 500 {
					break
				}
				sleepUntil(ctx, time.Now().Add(200*time.Millisecond))
			}
		}
	})
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, s := range r.ps.slots {
		if !s.isUp() {
			return errors.New("fate: a dev server died during the final reads")
		}
	}
	return nil
}

// finalState is the last quiescent read of each route of a session,
// and, in a branch schedule, of each of its turns by id (byID: those
// off the active branch are in no page).
type finalState struct {
	summary  *Read
	turns    *Read
	messages *Read
	byID     map[string]*wireTurn
}

// turn returns t as the final /turns read lists it, or as read by id.
func (f finalState) turn(id string) *wireTurn {
	if t := f.listed(id); t != nil {
		return t
	}
	return f.byID[id]
}

// listed returns t as the final /turns read lists it (nil when it does
// not: off the active branch, or absent).
func (f finalState) listed(id string) *wireTurn {
	if f.turns == nil {
		return nil
	}
	for i := range f.turns.Turns {
		if f.turns.Turns[i].TurnID == id {
			return &f.turns.Turns[i]
		}
	}
	return nil
}

func (r *runner) final(sid string) finalState {
	var f finalState
	for _, rd := range r.finalReads[sid] {
		if rd.Status != 200 || rd.Err != "" {
			continue
		}
		switch rd.Route {
		case "sessions":
			f.summary = rd
		case "turns":
			f.turns = rd
		case "messages":
			f.messages = rd
		default: // turns/<id>
			if f.byID == nil {
				f.byID = map[string]*wireTurn{}
			}
			if len(rd.Turns) == 1 {
				f.byID[rd.Turns[0].TurnID] = &rd.Turns[0]
			}
		}
	}
	return f
}

// processErrors returns what the dev servers' logs in dir hold of data
// races, panics and fatal errors (a race-enabled dev server reports a
// race and goes on), each with the lines that follow it.
func processErrors(dir string) []string {
	files, _ := filepath.Glob(filepath.Join(dir, "devserver-*.log"))
	sort.Strings(files)
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		lines := strings.Split(string(b), "\n")
		for i, l := range lines {
			if strings.HasPrefix(l, "WARNING: DATA RACE") || strings.HasPrefix(l, "panic:") || strings.HasPrefix(l, "fatal error:") {
				end := min(len(lines), i+40)
				out = append(out, fmt.Sprintf("%s:%d:\n%s", filepath.Base(f), i+1, strings.Join(lines[i:end], "\n")))
			}
		}
	}
	return out
}
