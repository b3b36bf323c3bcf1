package fate

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/turnstream/turnstream/internal/ddbfault"
)

// Plan is one schedule: a session, its turns and everything done to
// them, each step at an offset from the schedule's start. Every choice
// is made when the plan is drawn (newPlan), none while it runs, so a
// seed and an index name the same plan on any machine.
type Plan struct {
	Index   int
	Seed    uint64
	Session string
	// Kind is what the schedule is about (Kinds); Principal the dev
	// subject its requests carry ("fate", or its own for a quota
	// schedule, whose admissions must not mix with any other's).
	Kind      string
	Principal string
	// Delay staggers the schedules that start together.
	Delay time.Duration
	Steps []Step
	// Runes are the input lengths of the turns by id.
	Runes map[string]int
}

// Step is one thing a schedule does.
type Step struct {
	At time.Duration
	// Do is submit, resume, crowd, read, watch, stop, delete, pause,
	// kill, fault, hook, replay, quota or upload.
	Do   string
	Turn string
	// Multitask is a submit's X-Turnstream-Multitask ("" for none:
	// reject, the default).
	Multitask string
	// Lineage is a submit's lineage operation (retry, edit or
	// regenerate; "" for none) on the turn Parent, whose input it
	// repeats (docs/branches.md).
	Lineage, Parent string
	// Waits holds the step until the submit of that turn returned.
	Waits string
	// Retry makes a stop or a delete a client's: sent again 250 ms (a
	// delete: 300 ms) after each retryable answer (or none), for up to
	// For.
	Retry bool
	// Every is how soon a submit is sent again after a SESSION_BUSY
	// (default 200 ms, or 1/60 of a longer lease; a racing tab or script
	// in a race schedule: 50 ms).
	Every time.Duration
	Proc  int // the process it is sent to or done to
	Proc2 int // a resume's reconnect process
	For   time.Duration
	// A resume's after: "none", "zero", "live" (the last sequence the
	// live stream of its turn delivered so far) or "fixed" (After).
	AfterMode string
	After     int64
	Drop      time.Duration // a resume closes after this long (0: never)
	Reconnect bool          // a dropped resume reconnects with after=<last seen>
	N         int           // a crowd's resumers, a replay's repeats (every For/N), a quota burst's submits
	Route     string        // a read's route
	Kind      string        // a fault window's or a hook's attempt kind
	Fault     ddbfault.Fault
	Late      time.Duration // a fault window's delivery delay (ApplyLate's, 0: ddbfault.LateBy)
	// OnFirst opens a fault window at the first attempt of its kind at
	// or after At, for For (a turn's save comes whenever the turn ends).
	OnFirst bool
	Phase   string // a hook's phase
	Action  string // a hook's action: kill or pause
	// Files are an upload's files, uploaded before the schedule starts,
	// or the files a submit names as its attachments (by label: "x").
	Files []string
}

func (s Step) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "+%5.2fs %s", s.At.Seconds(), s.Do)
	switch s.Do {
	case "delete":
		fmt.Fprintf(&b, " the session on p%d", s.Proc)
		if s.Retry {
			fmt.Fprintf(&b, ", again after each retryable answer for %s", s.For)
		}
	case "select", "fork":
		fmt.Fprintf(&b, " %s on p%d", s.Turn, s.Proc)
		if s.Retry {
			fmt.Fprintf(&b, ", again after each SESSION_BUSY for %s", s.For)
		}
	case "submit", "stop", "replay":
		fmt.Fprintf(&b, " %s on p%d", s.Turn, s.Proc)
		if s.Multitask != "" {
			fmt.Fprintf(&b, " (X-Turnstream-Multitask: %s)", s.Multitask)
		}
		if s.Lineage != "" {
			fmt.Fprintf(&b, " (%s of %s)", s.Lineage, s.Parent)
		}
		if s.Retry {
			fmt.Fprintf(&b, ", again after each retryable answer for %s", s.For)
		}
		if s.N > 1 {
			fmt.Fprintf(&b, ", %d times over %s", s.N, s.For)
		}
		if len(s.Files) > 0 {
			fmt.Fprintf(&b, " with attachments %s", strings.Join(s.Files, ", "))
		}
	case "upload":
		fmt.Fprintf(&b, " %s on p%d, before the start", strings.Join(s.Files, ", "), s.Proc)
	case "quota":
		fmt.Fprintf(&b, " burst of %d submits of one principal on %d new sessions, p%d and p%d alternately", s.N, s.N, s.Proc, s.Proc2)
	case "resume":
		fmt.Fprintf(&b, " %s on p%d after=%s", s.Turn, s.Proc, s.AfterMode)
		if s.AfterMode == "fixed" {
			fmt.Fprintf(&b, "(%d)", s.After)
		}
		if s.Drop > 0 {
			fmt.Fprintf(&b, " dropped after %s", s.Drop)
			if s.Reconnect {
				fmt.Fprintf(&b, ", reconnecting on p%d", s.Proc2)
			}
		}
	case "crowd":
		fmt.Fprintf(&b, " of %d resumers of %s on p%d for %s", s.N, s.Turn, s.Proc, s.For)
	case "read":
		fmt.Fprintf(&b, " /%s on p%d", s.Route, s.Proc)
	case "watch":
		fmt.Fprintf(&b, " /sessions every 250ms for %s", s.For)
	case "pause":
		fmt.Fprintf(&b, " p%d for %s", s.Proc, s.For)
	case "kill":
		fmt.Fprintf(&b, " p%d, restart after %s", s.Proc, s.For)
	case "fault":
		if s.Late > 0 {
			fmt.Fprintf(&b, " %s attempts: applied %s late for %s", s.Kind, s.Late, s.For)
		} else {
			fmt.Fprintf(&b, " %s attempts: %s for %s", s.Kind, s.Fault, s.For)
		}
		if s.OnFirst {
			b.WriteString(" from the first one")
		}
	case "hook":
		fmt.Fprintf(&b, " %s the process at the next %s attempt (%s)", s.Action, s.Kind, s.Phase)
		if s.Action == "pause" {
			fmt.Fprintf(&b, " for %s", s.For)
		} else {
			fmt.Fprintf(&b, ", restart after %s", s.For)
		}
	}
	return b.String()
}

func (p *Plan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "schedule %d (seed %d), %s, session %s, starting %s late:\n", p.Index, p.Seed, p.Kind, p.Session, p.Delay.Round(time.Millisecond))
	for _, s := range p.Steps {
		fmt.Fprintf(&b, "  %s\n", s)
	}
	return b.String()
}

// The fault windows a plan draws from: an attempt kind and its faults.
var windowKinds = []struct {
	kind   string
	faults []ddbfault.Fault
}{
	{kindCheckpoint, []ddbfault.Fault{ddbfault.Hang, ddbfault.ServerErrorBefore, ddbfault.ServerErrorAfter, ddbfault.LoseAnswer}},
	{kindLive, []ddbfault.Fault{ddbfault.Hang, ddbfault.ServerErrorBefore, ddbfault.ServerErrorAfter, ddbfault.LoseAnswer}},
	{kindRenew, []ddbfault.Fault{ddbfault.LoseAnswer, ddbfault.Hang, ddbfault.ServerErrorAfter, ddbfault.ServerErrorBefore}},
	{kindSave, []ddbfault.Fault{ddbfault.ServerErrorAfter, ddbfault.LoseAnswer, ddbfault.ApplyLate, ddbfault.Hang, ddbfault.ServerErrorBefore}},
	{kindDecide, []ddbfault.Fault{ddbfault.ServerErrorBefore, ddbfault.Hang, ddbfault.LoseAnswer, ddbfault.ServerErrorAfter}},
	{kindClaim, []ddbfault.Fault{ddbfault.LoseAnswer, ddbfault.ServerErrorAfter, ddbfault.Hang}},
	{kindRelease, []ddbfault.Fault{ddbfault.ServerErrorBefore, ddbfault.ServerErrorAfter}},
	{kindRead, []ddbfault.Fault{ddbfault.ServerErrorBefore, ddbfault.Hang}},
	{kindStop, []ddbfault.Fault{ddbfault.LoseAnswer, ddbfault.ServerErrorAfter}},
	{"all", []ddbfault.Fault{ddbfault.Hang, ddbfault.LoseAnswer}},
}

var checkpointFaults = []ddbfault.Fault{ddbfault.Hang, ddbfault.ServerErrorBefore, ddbfault.ServerErrorAfter, ddbfault.LoseAnswer}

// planEnv is what a plan is drawn for: the processes (slots 0 to
// procs-1), the quota processes' slots and their turnsPerMinute, the
// timings, and the kinds to draw from (all when empty).
type planEnv struct {
	procs  int
	quota  []int
	quotaN int
	t      Timings
	kinds  []string
}

// newPlan draws schedule index of seed.
func newPlan(seed uint64, index int, env planEnv, session string) *Plan {
	procs, t := env.procs, env.t
	rng := rand.New(rand.NewPCG(seed, uint64(index)))
	p := &Plan{Index: index, Seed: seed, Session: session, Runes: map[string]int{}, Principal: "fate"}
	d := &draw{rng: rng, procs: procs, quota: env.quota, quotaN: env.quotaN, t: t, p: p}
	between, chance, other, anyProc, add := d.between, d.chance, d.other, d.anyProc, d.add
	rps := t.runesPerSecond()
	ms := time.Millisecond
	p.Delay = between(0, 2*time.Second)
	// The kind comes from a generator of its own, so that a classic
	// schedule draws the same plan as before kinds existed.
	p.Kind = drawKind(rand.New(rand.NewPCG(seed^kindSalt, uint64(index))), t.Name, env.kinds)
	if p.Kind != KindClassic {
		d.plan(p.Kind)
		return p
	}

	// A schedule that watches its checkpoints through a fault window runs
	// a longer first turn (6-8 s), so that the window, the grace after it
	// and a second of watching fit in it.
	watched := chance(0.2)
	runesA := int(3*rps) + rng.IntN(int(3*rps)+1) // 3-6 s
	if watched {
		runesA = int(6*rps) + rng.IntN(int(2*rps)+1)
	}
	p.Runes["a"] = runesA
	durA := time.Duration(float64(runesA) / rps * float64(time.Second))
	procA := anyProc()
	lease := t.Lease
	add(Step{Do: "submit", Turn: "a", Proc: procA})

	// The process of turn a: paused, killed, at random or at its writes
	// (not in a schedule that watches its checkpoints: that one needs its
	// turn to live; the others' process faults still reach it).
	procFaults := !watched
	if chance(0.12) && procFaults {
		add(Step{At: between(200*ms, durA), Do: "pause", Proc: procA, For: between(500*ms, 3*time.Second)})
	}
	if chance(0.12) && procFaults { // right after a renewal: the lease has most of its time left
		add(Step{At: between(0, durA/2), Do: "hook", Kind: kindRenew, Phase: "after", Action: "pause", For: between(500*ms, 3*time.Second)})
	}
	if chance(0.06) && procFaults { // claimed, before its first checkpoint
		action := "kill"
		if chance(0.4) {
			action = "pause"
		}
		add(Step{Do: "hook", Kind: kindClaim, Phase: "after", Action: action, For: between(200*ms, 3*time.Second)})
	}
	if chance(0.04) && procFaults { // at its first checkpoint: never written, or written unknown to it
		phase := "before"
		if chance(0.5) {
			phase = "applied"
		}
		add(Step{Do: "hook", Kind: kindAck, Phase: phase, Action: "kill", For: between(200*ms, 2*time.Second)})
	}
	if chance(0.03) && procFaults { // checkpoints hung, then a kill: the turn must not stay running
		add(Step{Do: "fault", Kind: kindCheckpoint, Fault: ddbfault.Hang, For: 3 * time.Second})
		add(Step{At: between(200*ms, 1500*ms), Do: "kill", Proc: procA, For: between(200*ms, 2*time.Second)})
	}
	if chance(0.07) && procFaults {
		add(Step{At: between(300*ms, durA), Do: "kill", Proc: procA, For: between(200*ms, 2*time.Second)})
	}
	if chance(0.06) && procFaults { // during the final save
		phase := "before"
		if chance(0.5) {
			phase = "applied"
		}
		add(Step{At: durA / 2, Do: "hook", Kind: kindSave, Phase: phase, Action: "kill", For: between(200*ms, 2*time.Second)})
	}

	// DynamoDB faults on the session's attempts.
	if chance(0.4) {
		wk := windowKinds[rng.IntN(len(windowKinds))]
		f := wk.faults[rng.IntN(len(wk.faults))]
		at, span := between(0, durA), between(300*ms, 2*time.Second)
		var late time.Duration
		onFirst := wk.kind == kindSave
		if onFirst {
			at, span = durA/2, between(500*ms, 2500*ms)
			if f == ddbfault.ApplyLate && chance(0.5) {
				late = between(time.Second, 6*time.Second) // past its cleanup reserve
			}
		}
		add(Step{At: at, Do: "fault", Kind: wk.kind, Fault: f, For: span, Late: late, OnFirst: onFirst})
	}
	if chance(0.15) { // the final save: applied unknown to it, lost, or landing long after
		faults := []ddbfault.Fault{ddbfault.ServerErrorAfter, ddbfault.LoseAnswer, ddbfault.ApplyLate, ddbfault.ApplyLate, ddbfault.Hang, ddbfault.ServerErrorBefore}
		f := faults[rng.IntN(len(faults))]
		var late time.Duration
		if f == ddbfault.ApplyLate {
			late = between(500*ms, 6*time.Second)
		}
		add(Step{At: durA / 2, Do: "fault", Kind: kindSave, Fault: f, For: between(time.Second, 3*time.Second), Late: late, OnFirst: true})
	}
	if watched { // checkpoints failing, their progress watched, maybe a stop meanwhile
		at, span := between(300*ms, 1500*ms), between(500*ms, 1500*ms)
		kind := kindCheckpoint // every checkpoint write, or only the live item's
		if chance(0.5) {
			kind = kindLive
		}
		add(Step{At: at, Do: "fault", Kind: kind, Fault: checkpointFaults[rng.IntN(len(checkpointFaults))], For: span})
		add(Step{At: max(0, at-500*ms), Do: "watch", For: durA + time.Second - max(0, at-500*ms)})
		// A stop during the window measures the stop bound; without one
		// the turn streams on and shows whether its checkpoints recover.
		if chance(0.4) {
			add(Step{At: at + between(0, span), Do: "stop", Turn: "a", Proc: anyProc()})
		}
	}

	// A second turn on another process: sequential, or a takeover of a
	// dead first one.
	var atB time.Duration
	procB := other(procA)
	if chance(0.6) {
		runesB := int(rps) + rng.IntN(int(2*rps)+1) // 1-3 s
		p.Runes["b"] = runesB
		atB = between(time.Second, durA+2*time.Second)
		add(Step{At: atB, Do: "submit", Turn: "b", Proc: procB})
		if chance(0.06) {
			add(Step{At: atB + between(300*ms, 2*time.Second), Do: "kill", Proc: procB, For: between(200*ms, 2*time.Second)})
		}
		if chance(0.06) {
			add(Step{At: atB + between(300*ms, 2*time.Second), Do: "pause", Proc: procB, For: between(500*ms, 3*time.Second)})
		}
		if chance(0.2) {
			add(Step{At: atB + between(500*ms, 3*time.Second), Do: "resume", Turn: "b", Proc: other(procB), AfterMode: "live"})
		}
	}

	// Resumers of turn a on other processes, early and late, some
	// dropping and reconnecting.
	for range rng.IntN(4) {
		s := Step{At: between(0, durA+lease), Do: "resume", Turn: "a", Proc: other(procA), Proc2: anyProc()}
		switch rng.IntN(4) {
		case 0:
			s.AfterMode = "none"
		case 1:
			s.AfterMode = "zero"
		case 2:
			s.AfterMode = "live"
		default:
			s.AfterMode, s.After = "fixed", int64(rng.IntN(40))
		}
		if chance(0.35) {
			s.Drop, s.Reconnect = between(300*ms, 2*time.Second), chance(0.8)
		}
		add(s)
	}
	if chance(0.35) { // after the end, after its last line
		add(Step{At: durA + 2*lease + between(0, 2*time.Second), Do: "resume", Turn: "a", Proc: anyProc(), AfterMode: "live"})
	}
	if chance(0.08) {
		add(Step{At: between(300*ms, durA), Do: "crowd", Turn: "a", Proc: other(procA), N: 10, For: 1500 * ms})
	}
	if chance(0.3) && !watched {
		add(Step{At: between(500*ms, durA), Do: "stop", Turn: "a", Proc: anyProc()})
	}
	routes := []string{"sessions", "turns", "messages"}
	for range 2 + rng.IntN(4) {
		add(Step{At: between(0, durA+2*lease), Do: "read", Route: routes[rng.IntN(len(routes))], Proc: anyProc()})
	}
	if chance(0.25) {
		add(Step{At: durA + 2*lease + between(time.Second, 3*time.Second), Do: "replay", Turn: "a", Proc: anyProc()})
	}
	return p
}

// input returns a turn's input of n runes: words that name the
// session and turn, so that each answer is its own.
func input(session, turn string, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s:", session, turn)
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, " w%d", i)
	}
	return b.String()[:n]
}

// schedRun is one schedule being run.
type schedRun struct {
	r     *runner
	plan  *Plan
	lg    *sessionLog
	start time.Time

	mu   sync.Mutex
	live map[string]*Stream // each turn's accepted submit stream
	// answered is closed, for each turn of the plan, when its submits
	// have ended (accepted, refused, or given up): a replay waits for it,
	// as a replay is a client's second submit of an id, never its first.
	answered map[string]chan struct{}
}

// run carries the plan out and returns when every step (and every
// stream it opened) has ended.
func (s *schedRun) run(ctx context.Context) {
	if slices.ContainsFunc(s.plan.Steps, func(st Step) bool { return st.Proc == pauseSlot }) {
		// A nearlease schedule holds a pause slot while it runs.
		var slot int
		select {
		case slot = <-s.r.pauseSlots:
		case <-ctx.Done():
			return
		}
		defer func() { s.r.pauseSlots <- slot }()
		for i := range s.plan.Steps {
			if s.plan.Steps[i].Proc == pauseSlot {
				s.plan.Steps[i].Proc = slot
			}
		}
	}
	if !sleepUntil(ctx, time.Now().Add(s.plan.Delay)) {
		return
	}
	for _, st := range s.plan.Steps {
		if st.Do == "upload" {
			s.upload(ctx, st)
		}
	}
	s.start = time.Now()
	s.lg.firstRun = s.start
	sid := s.plan.Session
	s.answered = map[string]chan struct{}{}
	for _, st := range s.plan.Steps {
		if st.Do == "submit" && s.answered[st.Turn] == nil {
			s.answered[st.Turn] = make(chan struct{})
		}
	}
	for _, st := range s.plan.Steps {
		switch st.Do {
		case "fault":
			w := &window{Kind: st.Kind, Fault: st.Fault, Late: st.Late, From: s.start.Add(st.At), To: s.start.Add(st.At + st.For)}
			if st.OnFirst {
				w.To, w.Span = time.Time{}, st.For
			}
			s.lg.windows = append(s.lg.windows, w)
			s.r.proxy.addWindow(sid, w)
		case "hook":
			h := &hook{Kind: st.Kind, After: s.start.Add(st.At), Phase: st.Phase, Action: st.Action, For: st.For}
			s.lg.hooks = append(s.lg.hooks, h)
			s.r.proxy.addHook(sid, h)
		}
	}
	var wg sync.WaitGroup
	for _, st := range s.plan.Steps {
		if st.Do == "fault" || st.Do == "hook" || st.Do == "upload" {
			continue
		}
		wg.Go(func() {
			if !sleepUntil(ctx, s.start.Add(st.At)) {
				return
			}
			s.do(ctx, st)
		})
	}
	wg.Wait()
}

func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

func (s *schedRun) liveStream(turn string) *Stream {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.live[turn]
}

// waitUp waits until proc's process is up (at most 10 s).
func (s *schedRun) waitUp(ctx context.Context, proc int) {
	for range 200 {
		if s.r.ps.slots[proc].isUp() || ctx.Err() != nil {
			return
		}
		sleepUntil(ctx, time.Now().Add(50*time.Millisecond))
	}
}

func (s *schedRun) do(ctx context.Context, st Step) {
	if ch := s.answered[st.Waits]; ch != nil && st.Waits != st.Turn {
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
	r, sid, lg := s.r, s.plan.Session, s.lg
	by := fmt.Sprintf("schedule %d", s.plan.Index)
	switch st.Do {
	case "submit":
		s.submit(ctx, st)
	case "resume":
		s.resume(ctx, st)
	case "crowd":
		var wg sync.WaitGroup
		for range st.N {
			wg.Go(func() { r.c.resume(ctx, lg, st.Proc, sid, st.Turn, -1, st.For) })
		}
		wg.Wait()
	case "read":
		s.waitUp(ctx, st.Proc)
		r.c.read(ctx, lg, st.Proc, sid, st.Route)
	case "watch":
		// Reads in parallel, so that a paused process does not stop the
		// watch.
		var wg sync.WaitGroup
		end := time.Now().Add(st.For)
		for i := 0; time.Now().Before(end) && ctx.Err() == nil; i++ {
			proc := (st.Proc + i) % r.cfg.Processes
			if r.ps.slots[proc].isUp() {
				wg.Go(func() { r.c.read(ctx, lg, proc, sid, "sessions") })
			}
			sleepUntil(ctx, time.Now().Add(250*time.Millisecond))
		}
		wg.Wait()
	case "stop":
		s.stop(ctx, st)
	case "delete":
		s.deleteSession(ctx, st)
	case "select":
		s.selectTurn(ctx, st)
	case "fork":
		s.r.c.fork(ctx, s.lg, st.Proc, sid, st.Turn)
	case "pause":
		s.waitUp(ctx, st.Proc) // a process restarting after a kill is paused once up
		r.ps.slots[st.Proc].pause(st.For, by)
	case "kill":
		r.ps.slots[st.Proc].kill(st.For, r.proxy.endpoint(st.Proc), by)
	case "replay":
		if ch := s.answered[st.Turn]; ch != nil {
			select {
			case <-ch:
			case <-ctx.Done():
				return
			}
		}
		n, began := max(st.N, 1), time.Now()
		for i := range n {
			if i > 0 && !sleepUntil(ctx, began.Add(st.For*time.Duration(i)/time.Duration(n))) {
				return
			}
			s.waitUp(ctx, st.Proc)
			r.c.replay(ctx, lg, st.Proc, sid, st.Turn, s.inputOf(st.Turn), false)
		}
	case "quota":
		s.quota(ctx, st)
	}
}

// selectTurn selects a version of an answer as a client does: with
// Retry, again 300 ms after each SESSION_BUSY or retryable answer (or
// none) for up to For.
func (s *schedRun) selectTurn(ctx context.Context, st Step) {
	until := time.Now().Add(st.For)
	for ctx.Err() == nil {
		s.waitUp(ctx, st.Proc)
		sel := s.r.c.selectTurn(ctx, s.lg, st.Proc, s.plan.Session, st.Turn)
		if !st.Retry || sel.Status != 0 && !sel.Retryable || time.Now().After(until) {
			return
		}
		sleepUntil(ctx, time.Now().Add(300*time.Millisecond))
	}
}

// stop sends POST /stop for a turn; with Retry, as a client that sends
// it again 250 ms after each retryable answer (or none) for up to For.
func (s *schedRun) stop(ctx context.Context, st Step) {
	r, sid, lg := s.r, s.plan.Session, s.lg
	var series time.Time
	until := time.Now().Add(st.For)
	for ctx.Err() == nil {
		s.waitUp(ctx, st.Proc)
		during := r.proxy.checkpointFaultsOpen(sid, time.Now())
		stop := r.c.stop(ctx, lg, st.Proc, sid, st.Turn)
		if series.IsZero() {
			series = stop.Start
		}
		lg.mu.Lock()
		stop.DuringCheckpointFaults, stop.Series = during, series
		lg.mu.Unlock()
		again := stop.Status == 0 || stop.Retryable
		if !st.Retry || !again || time.Now().After(until) {
			return
		}
		sleepUntil(ctx, time.Now().Add(250*time.Millisecond))
	}
}

// deleteSession deletes the schedule's session as a client does: at
// once again after a 202 (more remains), and, with Retry, 300 ms after
// each SESSION_BUSY or retryable answer (or none) for up to For.
func (s *schedRun) deleteSession(ctx context.Context, st Step) {
	until := time.Now().Add(st.For)
	for ctx.Err() == nil {
		s.waitUp(ctx, st.Proc)
		d := s.r.c.deleteSession(ctx, s.lg, st.Proc, s.plan.Session)
		switch {
		case d.Status == http.StatusAccepted:
			continue
		case d.Status == 0 || d.Retryable:
			if st.Retry && time.Now().Before(until) {
				sleepUntil(ctx, time.Now().Add(300*time.Millisecond))
				continue
			}
		}
		return
	}
}

// quota sends a burst of st.N submits of the schedule's principal at
// once, each on a new session of its own, alternating between st.Proc
// and st.Proc2 (the quota processes), and files them in the log's quota
// list.
func (s *schedRun) quota(ctx context.Context, st Step) {
	qlg := &sessionLog{principal: s.lg.principal, inputs: map[string]string{}}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for k := range st.N {
		proc := st.Proc
		if k%2 == 1 {
			proc = st.Proc2
		}
		sid := fmt.Sprintf("%s-q%d-%d", s.plan.Session, st.At.Milliseconds(), k)
		wg.Go(func() {
			<-start
			s.r.c.submit(ctx, qlg, proc, sid, "q", input(sid, "q", s.plan.Runes["q"]), "")
		})
	}
	close(start)
	wg.Wait()
	s.lg.mu.Lock()
	s.lg.quota = append(s.lg.quota, qlg.streams...)
	s.lg.mu.Unlock()
}

func (s *schedRun) inputOf(turn string) string {
	return input(s.plan.Session, turn, s.plan.Runes[turn])
}

// submit submits a turn, and again with the same turn id, as a client
// would, while the session is busy (another turn runs), the request
// failed without an answer (its process was down, or died with it: the
// turn may have been claimed, and the table then answers the retry), or
// the answer was a retryable failure (which promises that the id is not
// spent), for up to busyWait.
func (s *schedRun) submit(ctx context.Context, st Step) {
	if ch := s.answered[st.Turn]; ch != nil {
		defer close(ch)
	}
	busyWait := max(15*time.Second, s.r.t.Lease+10*time.Second)
	in := s.inputOf(st.Turn)
	if st.Lineage != "" && st.Lineage != "edit" {
		in = s.inputOf(st.Parent) // a retry or regeneration repeats its parent's input
	}
	s.lg.mu.Lock()
	s.lg.inputs[st.Turn] = in
	for _, f := range st.Files {
		id, ok := s.lg.uploaded[f]
		if !ok {
			s.lg.mu.Unlock()
			return // its upload failed (RuleAttachOnce reports it): nothing to send
		}
		s.lg.files[st.Turn] = append(s.lg.files[st.Turn], id)
	}
	s.lg.mu.Unlock()
	deadline := time.Now().Add(busyWait)
	for ctx.Err() == nil {
		s.waitUp(ctx, st.Proc)
		res := s.r.c.submitAs(ctx, s.lg, st.Proc, s.plan.Session, st.Turn, in, st.Multitask, st.Lineage, st.Parent)
		retry := res.Status == 409 && res.ErrCode == codeSessionBusy || res.Ending == "failed" ||
			res.Status >= 500 && res.Retryable
		if res.Status == 200 || !retry || time.Now().After(deadline) {
			if res.Status == 200 {
				s.mu.Lock()
				s.live[st.Turn] = res
				s.mu.Unlock()
			}
			return
		}
		every := st.Every
		if every == 0 { // 200 ms, 500 ms at the default lease (a busy wait of up to 40 s there)
			every = max(200*time.Millisecond, s.r.t.Lease/60)
		}
		sleepUntil(ctx, time.Now().Add(every))
	}
}

// resume resumes a turn; a dropped resume may reconnect (up to three
// times) after its last seen sequence; an early resume that finds no
// turn yet (404) tries again for up to two seconds.
func (s *schedRun) resume(ctx context.Context, st Step) {
	after := int64(-1)
	switch st.AfterMode {
	case "zero":
		after = 0
	case "live":
		if l := s.liveStream(st.Turn); l != nil {
			after = l.lastSequence()
		}
	case "fixed":
		after = st.After
	}
	proc, drop := st.Proc, st.Drop
	notFoundUntil := time.Now().Add(2 * time.Second)
	for attempt := 0; attempt < 8 && ctx.Err() == nil; attempt++ {
		s.waitUp(ctx, proc)
		res := s.r.c.resume(ctx, s.lg, proc, s.plan.Session, st.Turn, after, drop)
		switch {
		case res.Ending == "dropped" && st.Reconnect:
			if seq := res.lastSequence(); seq > after {
				after = seq
			}
			proc, drop = st.Proc2, 0
			sleepUntil(ctx, time.Now().Add(100*time.Millisecond))
		case res.Status == 404 && time.Now().Before(notFoundUntil):
			sleepUntil(ctx, time.Now().Add(200*time.Millisecond))
		default:
			return
		}
	}
}
