package fate

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"
)

// Report is what a Run did, found and measured.
type Report struct {
	Seed        uint64
	Schedules   int
	Processes   int
	Concurrency int
	Timings     Timings
	DevServer   string
	// Turns counts the turns submitted; Acknowledged those whose stream
	// delivered a line; Outcomes the final history state of each turn
	// (complete, interrupted, error, TURN_LOST, or absent).
	Turns, Acknowledged int
	Outcomes            map[string]int
	// Endings counts how the accepted live streams ended: by the code or
	// status of their last line, "cut" when their process was killed.
	Endings map[string]int
	// Streams, Resumes, Reads, Stops and Replays count the requests.
	Streams, Resumes, Reads, Stops, Replays int
	// Kills and Pauses count SIGKILLs and SIGSTOPs; Hooks the hooks that
	// fired (action, phase, attempt kind); Attempts the DynamoDB attempts
	// by operation and kind (as the proxy classified them); Faulted the
	// faulted ones by kind and fault.
	Kills, Pauses            int
	Hooks, Attempts, Faulted map[string]int
	// Kinds counts the schedules by kind; ScheduleTime is how long each
	// schedule ran (its start to the end of its last request, before
	// quiescence), by kind and "all".
	Kinds        map[string]int
	ScheduleTime map[string]Dist
	// QuotaAdmitted and QuotaRefused count the quota schedules' submits
	// answered 200 and 429; QuotaBursts the bursts' sizes.
	QuotaAdmitted, QuotaRefused, QuotaSubmits int
	// Violations are the breaches found, by schedule; Findings what is
	// reported without failing the run (Violation.Reported).
	Violations, Findings []Violation
	// ProcessErrors are the data races, panics and fatal errors the dev
	// servers logged (a race-enabled dev server reports a race and goes
	// on), each with the lines after it.
	ProcessErrors []string
	// Plans are the plans of the schedules with violations, by index,
	// and Timelines everything each of them saw and did, in time order.
	Plans, Timelines map[int]string
	// StopLatency is POST /stop to the TURN_INTERRUPTED terminal line of
	// the live stream (its process neither paused nor killed meanwhile);
	// StopLatencyFaulted the same for stops sent during a checkpoint
	// fault window.
	StopLatency, StopLatencyFaulted Dist
	// FateDecided is the time from a turn's last lease expiry (the latest
	// DynamoDB applied) to the first write of its decision, FateShown to
	// the lost record's receipt by a resumer: for the turns a resumer
	// followed at that expiry (others are decided by whoever reads them
	// first, however late), the resumer's process neither paused nor
	// killed meanwhile.
	FateDecided, FateShown Dist
	// ResumeReads are the read requests (Query, BatchGetItem, GetItem)
	// per second that one process made for one running turn while only
	// resumes of it were open there (ResumeReads for one resumer,
	// ResumeReadsCrowd for five or more at once).
	ResumeReads, ResumeReadsCrowd FloatDist
	// Wall is the run's whole time; SchedulesWall its start to the end
	// of the last schedule (before quiescence: the wait for every lease
	// to expire and the final reads).
	Wall, SchedulesWall time.Duration
	// LogDir holds the dev servers' logs when kept ("" when removed).
	LogDir string
}

// Dist summarises durations.
type Dist struct {
	N                   int
	P50, P99, Max, Mean time.Duration
}

func newDist(ds []time.Duration) Dist {
	if len(ds) == 0 {
		return Dist{}
	}
	slices.Sort(ds)
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return Dist{N: len(ds), P50: ds[(len(ds)-1)/2], P99: ds[(len(ds)*99-1)/100], Max: ds[len(ds)-1], Mean: sum / time.Duration(len(ds))}
}

func (d Dist) String() string {
	if d.N == 0 {
		return "none measured"
	}
	r := func(x time.Duration) string { return x.Round(time.Millisecond).String() }
	return fmt.Sprintf("p50 %s, p99 %s, max %s, mean %s (n=%d)", r(d.P50), r(d.P99), r(d.Max), r(d.Mean), d.N)
}

// FloatDist summarises rates.
type FloatDist struct {
	N             int
	P50, P99, Max float64
}

func newFloatDist(xs []float64) FloatDist {
	if len(xs) == 0 {
		return FloatDist{}
	}
	slices.Sort(xs)
	return FloatDist{N: len(xs), P50: xs[(len(xs)-1)/2], P99: xs[(len(xs)*99-1)/100], Max: xs[len(xs)-1]}
}

func (d FloatDist) String() string {
	if d.N == 0 {
		return "none measured"
	}
	return fmt.Sprintf("p50 %.1f/s, p99 %.1f/s, max %.1f/s (n=%d)", d.P50, d.P99, d.Max, d.N)
}

// ByInvariant counts the violations of each invariant.
func (r *Report) ByInvariant() map[string]int {
	m := map[string]int{}
	for _, v := range r.Violations {
		m[v.Invariant]++
	}
	return m
}

// ByRule counts the violations of each rule (Violation.Rule).
func (r *Report) ByRule() map[string]int {
	m := map[string]int{}
	for _, v := range r.Violations {
		m[v.Invariant+" "+v.Rule]++
	}
	return m
}

// report gathers the counts and figures of the run.
func (r *runner) report(began time.Time) *Report {
	rep := &Report{
		Seed: r.cfg.Seed, Schedules: len(r.plans), Processes: r.cfg.Processes, Concurrency: r.cfg.Concurrency,
		Timings: r.t, DevServer: r.cfg.DevServer, Outcomes: map[string]int{}, Endings: map[string]int{},
		Hooks: map[string]int{}, Plans: map[int]string{}, Timelines: map[int]string{}, Kinds: map[string]int{},
		ScheduleTime: map[string]Dist{},
	}
	times := map[string][]time.Duration{}
	rep.Faulted, rep.Attempts = r.proxy.faultCounts()
	events := r.ps.eventsCopy()
	for _, e := range events {
		switch e.What {
		case "kill":
			rep.Kills++
		case "pause":
			rep.Pauses++
		}
	}
	ev := &checker{in: &sessionInput{Events: events}}
	var stops, stopsFaulted, decided, shown []time.Duration
	var rates, crowd []float64
	for _, p := range r.plans {
		lg := r.logs[p.Session]
		final := r.final(p.Session)
		live := map[string]*Stream{}
		rep.Kinds[p.Kind]++
		if !lg.firstRun.IsZero() {
			end := lg.firstRun
			for _, s := range append(slices.Clone(lg.streams), lg.quota...) {
				if !s.Final {
					end = later(end, s.End)
				}
			}
			for _, rd := range lg.reads {
				if rd.Start.Before(r.quietAt) {
					end = later(end, rd.End)
				}
			}
			for _, st := range lg.stops {
				end = later(end, st.End)
			}
			for _, rp := range lg.replays {
				if !rp.Final {
					end = later(end, rp.End)
				}
			}
			times[p.Kind] = append(times[p.Kind], end.Sub(lg.firstRun))
			times["all"] = append(times["all"], end.Sub(lg.firstRun))
		}
		for _, s := range lg.quota {
			rep.QuotaSubmits++
			switch s.Status {
			case 200:
				rep.QuotaAdmitted++
			case 429:
				rep.QuotaRefused++
			}
		}
		for _, s := range lg.streams {
			switch s.Kind {
			case "submit":
				rep.Streams++
				if s.Status == 200 && live[s.Turn] == nil {
					live[s.Turn] = s
				}
			case "resume":
				rep.Resumes++
			}
		}
		rep.Reads += len(lg.reads)
		for _, h := range lg.hooks {
			if !h.Fired.IsZero() {
				rep.Hooks[fmt.Sprintf("%s %s %s", h.Action, h.Phase, h.Kind)]++
			}
		}
		rep.Stops += len(lg.stops)
		rep.Replays += len(lg.replays)
		for t := range lg.inputs {
			rep.Turns++
			if s := live[t]; s != nil && len(s.Lines) > 0 {
				rep.Acknowledged++
				switch l := answer(s); {
				case s.Ending != "eof":
					rep.Endings[s.Ending]++
				case l.Event == eventSnapshot:
					rep.Endings[l.Status+" "+l.Code]++
				default:
					rep.Endings["diagnostic "+l.Code]++
				}
			}
			if ft := final.turn(t); ft == nil {
				rep.Outcomes["absent"]++
			} else if st, ok := ft.fate(); ok {
				rep.Outcomes[st.Kind]++
			} else {
				rep.Outcomes["running"]++
			}
		}
		// Stop latency.
		for _, st := range lg.stops {
			s := live[st.Turn]
			if st.Status != 202 || s == nil {
				continue
			}
			for i := range s.Lines {
				l := &s.Lines[i]
				if l.Recv.After(st.Start) && l.terminal() {
					if l.Code == codeInterrupted && !ev.disturbed(s.Proc, st.Start, l.Recv) {
						if st.DuringCheckpointFaults {
							stopsFaulted = append(stopsFaulted, l.Recv.Sub(st.Start))
						} else {
							stops = append(stops, l.Recv.Sub(st.Start))
						}
					}
					break
				}
			}
		}
		// Fate latency.
		for t := range r.turnsOf(lg) {
			var expiry time.Time
			for _, m := range r.proxy.leaseMarks(p.Session, t) {
				if !m.Maybe && m.Expiry.After(expiry) {
					expiry = m.Expiry
				}
			}
			if expiry.IsZero() {
				continue
			}
			// Turns whose verdict someone needed at their expiry: a
			// resume of them was open then and stayed open, its process
			// neither paused nor killed, until the decision (the first
			// fence write DynamoDB applied) and until it showed the turn
			// lost.
			d, decidedOK := r.proxy.decidedAt(p.Session, t)
			countedDecision := false
			for _, s := range lg.streams {
				if s.Kind != "resume" || s.Turn != t || s.Status != 200 || !s.Start.Before(expiry) || !s.End.After(expiry) {
					continue
				}
				if decidedOK && !countedDecision && d.After(expiry) && !s.End.Before(d) && !ev.disturbed(s.Proc, expiry, d) {
					decided = append(decided, d.Sub(expiry))
					countedDecision = true
				}
				for i := range s.Lines {
					if f, ok := s.Lines[i].fate(); ok && f.Kind == codeTurnLost && !ev.disturbed(s.Proc, expiry, s.Lines[i].Recv) {
						shown = append(shown, s.Lines[i].Recv.Sub(expiry))
						break
					}
				}
			}
		}
		// Resume reads.
		for slot := range r.ps.slots {
			for _, seg := range resumeSegments(lg, slot) {
				n := 0
				for _, m := range r.proxy.readMarks(p.Session) {
					if m.Slot == slot && !m.At.Before(seg.from) && m.At.Before(seg.to) {
						n++
					}
				}
				rate := float64(n) / seg.to.Sub(seg.from).Seconds()
				switch {
				case seg.k == 1:
					rates = append(rates, rate)
				case seg.k >= 5:
					crowd = append(crowd, rate)
				}
			}
		}
	}
	for k, ds := range times {
		rep.ScheduleTime[k] = newDist(ds)
	}
	rep.SchedulesWall = r.quietAt.Sub(began)
	rep.StopLatency, rep.StopLatencyFaulted = newDist(stops), newDist(stopsFaulted)
	rep.FateDecided, rep.FateShown = newDist(decided), newDist(shown)
	rep.ResumeReads, rep.ResumeReadsCrowd = newFloatDist(rates), newFloatDist(crowd)
	return rep
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// segment is a span in which k resumes of a running turn, and nothing
// else of its session, were open on one process.
type segment struct {
	from, to time.Time
	k        int
}

// resumeSegments returns the spans of at least half a second in which
// only resumes of lg's session were open on slot (each from 300 ms after
// it opened, past its first reads, until it ended).
func resumeSegments(lg *sessionLog, slot int) []segment {
	type mark struct {
		at     time.Time
		resume int // +1/-1: a resume opens or closes
		block  int // +1/-1: another request opens or closes
	}
	var marks []mark
	for _, s := range lg.streams {
		if s.Proc != slot || s.End.IsZero() {
			continue
		}
		if s.Kind == "resume" && s.Status == 200 && !s.Final {
			from := s.Start.Add(300 * time.Millisecond)
			to := s.End
			if l := s.last(); l != nil && l.terminal() {
				to = l.Recv // the turn ended: the poll that found it
			}
			if to.After(from) {
				marks = append(marks, mark{at: from, resume: 1}, mark{at: to, resume: -1})
			}
			marks = append(marks, mark{at: s.Start, block: 1}, mark{at: s.Start.Add(300 * time.Millisecond), block: -1})
			continue
		}
		marks = append(marks, mark{at: s.Start, block: 1}, mark{at: s.End, block: -1})
	}
	for _, r := range lg.reads {
		if r.Proc == slot {
			marks = append(marks, mark{at: r.Start, block: 1}, mark{at: r.End, block: -1})
		}
	}
	for _, st := range lg.stops {
		if st.Proc == slot {
			marks = append(marks, mark{at: st.Start, block: 1}, mark{at: st.End, block: -1})
		}
	}
	for _, rp := range lg.replays {
		if rp.Proc == slot {
			marks = append(marks, mark{at: rp.Start, block: 1}, mark{at: rp.End, block: -1})
		}
	}
	sort.SliceStable(marks, func(i, j int) bool { return marks[i].at.Before(marks[j].at) })
	var out []segment
	k, blocked := 0, 0
	var since time.Time
	for _, m := range marks {
		if k > 0 && blocked == 0 && m.at.Sub(since) >= 500*time.Millisecond {
			out = append(out, segment{from: since, to: m.at, k: k})
		}
		k += m.resume
		blocked += m.block
		since = m.at
	}
	return out
}

// Markdown renders the report: the figures, the violations by invariant
// with their evidence, and the plans of the schedules that broke one.
func (r *Report) Markdown() string {
	var b strings.Builder
	t := r.Timings
	fmt.Fprintf(&b, "## Fate harness: seed %d, %d schedules, %s lease\n\n", r.Seed, r.Schedules, t.Name)
	fmt.Fprintf(&b, "%d dev servers (%s), %d schedules at once; LEASE_DURATION %s, CHECKPOINT_INTERVAL %s, RESUME_POLL_INTERVAL %s, DYNAMODB_ATTEMPT_TIMEOUT %s, ECHO_DELAY %s, TURN_TIMEOUT %s; wall time %s (the schedules %s).\n\n",
		r.Processes, r.DevServer, r.Concurrency, t.Lease, t.CheckpointInterval, t.ResumePoll, t.AttemptTimeout, t.EchoDelay, t.TurnTimeout, r.Wall.Round(time.Second), r.SchedulesWall.Round(time.Second))
	fmt.Fprintf(&b, "| what | figure |\n| --- | --- |\n")
	row := func(k, v string) { fmt.Fprintf(&b, "| %s | %s |\n", k, v) }
	row("violations", violationCounts(r.ByInvariant()))
	row("violations by rule", violationCounts(r.ByRule()))
	row("findings (reported, not violations)", fmt.Sprint(len(r.Findings)))
	row("schedules by kind", counts(r.Kinds))
	for _, k := range slices.Sorted(maps.Keys(r.ScheduleTime)) {
		row("time per schedule, "+k, r.ScheduleTime[k].String())
	}
	if r.QuotaSubmits > 0 {
		row("quota bursts (one principal, turnsPerMinute per run)", fmt.Sprintf("%d submits: %d admitted, %d refused 429", r.QuotaSubmits, r.QuotaAdmitted, r.QuotaRefused))
	}
	row("dev server data races, panics, fatal errors", fmt.Sprint(len(r.ProcessErrors)))
	row("turns submitted / acknowledged (a line received)", fmt.Sprintf("%d / %d", r.Turns, r.Acknowledged))
	row("final history of the turns", counts(r.Outcomes))
	row("live streams ended with", counts(r.Endings))
	row("requests", fmt.Sprintf("%d submits, %d resumes, %d history reads, %d stops, %d replays", r.Streams, r.Resumes, r.Reads, r.Stops, r.Replays))
	row("process faults", fmt.Sprintf("%d SIGKILL (restarted), %d SIGSTOP (then SIGCONT)", r.Kills, r.Pauses))
	row("hooks fired (action, phase, attempt)", counts(r.Hooks))
	row("DynamoDB attempts", counts(r.Attempts))
	row("DynamoDB attempts faulted", counts(r.Faulted))
	row("stop latency (POST /stop to TURN_INTERRUPTED)", r.StopLatency.String())
	row("stop latency during checkpoint write faults", r.StopLatencyFaulted.String())
	row("lease expiry to the decision's first write", r.FateDecided.String())
	row("lease expiry to TURN_LOST at an open resumer", r.FateShown.String())
	perPoll := func(d FloatDist) string {
		if d.N == 0 {
			return d.String()
		}
		return fmt.Sprintf("%s; %.2f reads per poll at p50", d, d.P50*t.ResumePoll.Seconds())
	}
	row("resume reads per second, one resumer on a process", perPoll(r.ResumeReads))
	row("resume reads per second, 5+ resumers on one process", perPoll(r.ResumeReadsCrowd))
	if r.LogDir != "" {
		row("dev server logs", r.LogDir)
	}
	b.WriteString("\n")
	for i, e := range r.ProcessErrors {
		if i == 3 {
			fmt.Fprintf(&b, "... and %d more process errors\n\n", len(r.ProcessErrors)-3)
			break
		}
		fmt.Fprintf(&b, "### Dev server error\n\n```\n%s\n```\n\n", e)
	}
	for i, v := range r.Findings {
		if i == 0 {
			fmt.Fprintf(&b, "### Findings (reported, not violations): %d\n\n", len(r.Findings))
		}
		if i == 5 {
			fmt.Fprintf(&b, "... and %d more\n\n", len(r.Findings)-5)
			break
		}
		fmt.Fprintf(&b, "- %s schedule %d (seed %d), session %s, turn %s: %s\n", v.Rule, v.Schedule, v.Seed, v.Session, v.Turn, v.What)
		if i == len(r.Findings)-1 {
			b.WriteString("\n")
		}
	}
	if len(r.Violations) == 0 {
		b.WriteString("No violations.\n")
		return b.String()
	}
	by := map[string][]Violation{}
	for _, v := range r.Violations {
		by[v.Invariant+" "+v.Rule] = append(by[v.Invariant+" "+v.Rule], v)
	}
	for _, inv := range slices.Sorted(maps.Keys(by)) {
		vs := by[inv]
		fmt.Fprintf(&b, "### %s: %d violations\n\n", inv, len(vs))
		for i, v := range vs {
			if i == 5 {
				fmt.Fprintf(&b, "... and %d more\n\n", len(vs)-5)
				break
			}
			fmt.Fprintf(&b, "- schedule %d (seed %d), session %s, turn %s: %s\n", v.Schedule, v.Seed, v.Session, v.Turn, v.What)
			for _, e := range v.Evidence {
				fmt.Fprintf(&b, "  - `%s`\n", strings.ReplaceAll(e, "`", "'"))
			}
		}
		b.WriteString("\n")
	}
	b.WriteString("### Plans of the schedules with violations\n\n```\n")
	for _, i := range slices.Sorted(maps.Keys(r.Plans)) {
		b.WriteString(r.Plans[i])
	}
	b.WriteString("```\n")
	for n, i := range slices.Sorted(maps.Keys(r.Timelines)) {
		if n == 2 {
			b.WriteString("\n(Report.Timelines holds the timelines of the other schedules.)\n")
			break
		}
		fmt.Fprintf(&b, "\n### Timeline of schedule %d\n\n```\n%s```\n", i, r.Timelines[i])
	}
	return b.String()
}

func violationCounts(m map[string]int) string {
	total := 0
	for _, n := range m {
		total += n
	}
	if total == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (%s)", total, counts(m))
}

func counts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", strings.TrimSpace(k), m[k]))
	}
	return strings.Join(parts, ", ")
}
