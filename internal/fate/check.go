package fate

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"
)

// Violation is one breach of an invariant, with what shows it.
type Violation struct {
	// Invariant is "I1" to "I8" (the package documentation), or "Q" for
	// the quota rule.
	Invariant string
	// Rule is the check that found it: the invariant itself for its
	// first reading, or one of the Rule constants.
	Rule string
	// Reported marks a finding that is reported, not a violation
	// (Report.Findings; RuleRenewLate).
	Reported bool
	Seed     uint64
	Schedule int
	Session  string
	Turn     string
	// What says what was broken, Evidence the observations (each with
	// its times) that show it.
	What     string
	Evidence []string
}

func (v Violation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s [%s] seed %d schedule %d session %s turn %s: %s", v.Invariant, v.Rule, v.Seed, v.Schedule, v.Session, v.Turn, v.What)
	for _, e := range v.Evidence {
		fmt.Fprintf(&b, "\n    %s", e)
	}
	return b.String()
}

// sessionInput is everything the checker reads of one session: what its
// clients saw, what the proxy saw applied, and what was done to the
// processes.
type sessionInput struct {
	Seed     uint64
	Schedule int
	Session  string
	Plan     *Plan
	Start    time.Time // the schedule's start
	Streams  []*Stream
	Reads    []*Read
	Stops    []*Stop
	Replays  []*Replay
	Deletes  []*Delete
	Selects  []*Select
	Inputs   map[string]string
	Final    finalState
	// Leases are the lease expiries DynamoDB applied, by turn id;
	// Writes the write attempts of the session it answered.
	Leases  map[string][]leaseMark
	Writes  []writeMark
	Events  []procEvent
	Timings Timings
	// Windows are the session's fault windows (as they opened); Quota a
	// quota schedule's submits, QuotaN the quota's turnsPerMinute.
	Windows []window
	Quota   []*Stream
	QuotaN  int
	// Files are the attachment ids each turn's submits named (an attach
	// schedule's), UploadErrors its uploads that failed.
	Files        map[string][]string
	UploadErrors []string
}

func (r *runner) check() []Violation {
	events := r.ps.eventsCopy()
	var out []Violation
	for _, p := range r.plans {
		lg := r.logs[p.Session]
		in := &sessionInput{
			Seed: p.Seed, Schedule: p.Index, Session: p.Session, Plan: p, Start: lg.firstRun,
			Streams: lg.streams, Reads: lg.reads, Stops: lg.stops, Replays: lg.replays, Deletes: lg.deletes, Selects: lg.selects, Inputs: lg.inputs,
			Final: r.final(p.Session), Leases: map[string][]leaseMark{}, Events: events, Timings: r.t,
			Quota: lg.quota, QuotaN: r.cfg.QuotaTurnsPerMinute, Files: lg.files, UploadErrors: lg.uploadErrs,
		}
		r.proxy.mu.Lock() // a window's From and To move when it opens
		for _, w := range lg.windows {
			in.Windows = append(in.Windows, *w)
		}
		r.proxy.mu.Unlock()
		for t := range r.turnsOf(lg) {
			in.Leases[t] = r.proxy.leaseMarks(p.Session, t)
		}
		in.Writes = r.proxy.writeMarks(p.Session)
		out = append(out, checkSession(in)...)
	}
	return out
}

// turnsOf returns every turn id a session's log names.
func (r *runner) turnsOf(lg *sessionLog) map[string]bool {
	ids := map[string]bool{}
	for t := range lg.inputs {
		ids[t] = true
	}
	for _, s := range lg.streams {
		ids[s.Turn] = true
	}
	return ids
}

// checker checks one session.
type checker struct {
	in  *sessionInput
	out []Violation
	// terms are the terminal states shown of each turn, in the order
	// received; runs the observations that showed it running.
	terms map[string][]termObs
	runs  map[string][]runObs
	// live is each turn's accepted submit stream.
	live map[string]*Stream
	// gone are the turns a delete of the session (answered 204 or 202)
	// may have removed: a submit of theirs began before it ended. Their
	// absence from history is no violation; RuleDeleteGone judges them.
	gone map[string]bool
}

type termObs struct {
	At    time.Time
	State fateState
	Desc  string
}

type runObs struct {
	Start, End time.Time
	Route      string // "turns" or "sessions"
	Sequence   int64  // a /sessions currentTurn's
	ExpiresAt  int64
	Desc       string
}

func (c *checker) add(inv, turn, what string, evidence ...string) {
	c.addRule(inv, inv, turn, what, evidence...)
}

func (c *checker) addRule(inv, rule, turn, what string, evidence ...string) {
	c.out = append(c.out, Violation{Invariant: inv, Rule: rule, Seed: c.in.Seed, Schedule: c.in.Schedule, Session: c.in.Session,
		Turn: turn, What: what, Evidence: evidence})
}

// checkSession checks the invariants over one session's observations.
func checkSession(in *sessionInput) []Violation {
	c := &checker{in: in, terms: map[string][]termObs{}, runs: map[string][]runObs{}, live: map[string]*Stream{}}
	if in.Plan != nil && in.Plan.Kind == KindQuota {
		rules{c}.quota() // its bursts' sessions are new and hold one short turn each
		return c.out
	}
	if d := firstDelete(in); d != nil {
		// The rules below judge the session as it was until the delete;
		// deleteRules judges what the delete left, and the reads begun
		// after it began are its evidence only.
		rules{c}.deleteRules(d)
		c.gone = goneWith(in, d)
		in.Reads = slices.DeleteFunc(slices.Clone(in.Reads), func(r *Read) bool { return !r.Start.Before(d.Start) })
	} else if d := maybeDelete(in); d != nil {
		// A delete whose answer was lost (its process killed, a 5xx) and
		// a final state with no session: it applied, when is unknown.
		// Every turn may have gone with it; nothing else is judged of it.
		c.gone = goneWith(in, &Delete{End: time.Now()})
		in.Reads = slices.DeleteFunc(slices.Clone(in.Reads), func(r *Read) bool { return !r.Start.Before(d.Start) })
	}
	c.index()
	c.irrevocable()      // I1, I2
	c.oneTruth()         // I3
	c.acknowledged()     // I4
	c.checkpoints()      // I5
	c.resumes()          // I6
	c.lostAbove()        // I6
	c.honest()           // I7
	c.noLineAfterLease() // I8
	r := rules{c}
	if c.branched() {
		r.versions() // RuleVersions, in place of RuleKept
	} else {
		r.kept() // I1, RuleKept
	}
	r.stopRules()  // I7 RuleStopHonest, I5 RuleStopBound
	r.replays()    // I7 RuleReplay
	r.acks()       // I7 RuleAck
	r.pauses()     // I2 RulePause
	r.attachOnce() // A RuleAttachOnce
	return c.out
}

func streamLine(s *Stream, l *Line) string { return fmt.Sprintf("%s: %s", s, l.describe()) }

// branched reports whether the session is a branch schedule's, whose
// turns leave and rejoin the active branch by design (RuleVersions
// judges them there).
func (c *checker) branched() bool { return c.in.Plan != nil && c.in.Plan.Kind == KindBranch }

// withoutSiblings returns a /messages record without the
// metadata.siblings /messages adds to an answer with versions (its /turns
// entry carries them beside its messages), metadata dropped when nothing
// else is left in it.
func withoutSiblings(raw json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || m["metadata"] == nil {
		return raw
	}
	var md map[string]json.RawMessage
	if json.Unmarshal(m["metadata"], &md) != nil || md["siblings"] == nil {
		return raw
	}
	delete(md, "siblings")
	if len(md) == 0 {
		delete(m, "metadata")
	} else {
		m["metadata"], _ = json.Marshal(md)
	}
	out, err := json.Marshal(m)
	if err != nil {
		return raw
	}
	return out
}

// index files every terminal and running observation by turn.
func (c *checker) index() {
	in := c.in
	sort.SliceStable(in.Streams, func(i, j int) bool { return in.Streams[i].Start.Before(in.Streams[j].Start) })
	sort.SliceStable(in.Reads, func(i, j int) bool { return in.Reads[i].Start.Before(in.Reads[j].Start) })
	for _, s := range in.Streams {
		if s.Status != 200 {
			continue
		}
		if s.Kind == "submit" && c.live[s.Turn] == nil {
			c.live[s.Turn] = s
		}
		for i := range s.Lines {
			l := &s.Lines[i]
			if f, ok := l.fate(); ok {
				c.terms[s.Turn] = append(c.terms[s.Turn], termObs{At: l.Recv, State: f, Desc: streamLine(s, l)})
			}
		}
	}
	for _, r := range in.Reads {
		if r.Status != 200 {
			continue
		}
		switch r.Route {
		case "turns":
			for i := range r.Turns {
				t := &r.Turns[i]
				if f, ok := t.fate(); ok {
					c.terms[t.TurnID] = append(c.terms[t.TurnID], termObs{At: r.End, State: f,
						Desc: fmt.Sprintf("%s shows %s %s messages %s", r, t.TurnID, f, brief(f.Messages))})
				} else {
					var exp int64
					expires := "no expiresAt"
					if t.ExpiresAt != nil {
						exp = *t.ExpiresAt
						expires = "expiresAt " + clock(time.UnixMilli(exp))
					}
					c.runs[t.TurnID] = append(c.runs[t.TurnID], runObs{Start: r.Start, End: r.End, Route: "turns", ExpiresAt: exp,
						Desc: fmt.Sprintf("%s shows %s running (%s)", r, t.TurnID, expires)})
				}
			}
		case "sessions":
			if ct := r.Summary.CurrentTurn; ct != nil {
				c.runs[ct.TurnID] = append(c.runs[ct.TurnID], runObs{Start: r.Start, End: r.End, Route: "sessions", Sequence: ct.Sequence,
					ExpiresAt: ct.ExpiresAt, Desc: fmt.Sprintf("%s: currentTurn %s sequence %d expiresAt %s", r, ct.TurnID, ct.Sequence, clock(time.UnixMilli(ct.ExpiresAt)))})
			}
		}
	}
	for t := range c.terms {
		sort.SliceStable(c.terms[t], func(i, j int) bool { return c.terms[t][i].At.Before(c.terms[t][j].At) })
	}
}

func (c *checker) turns() []string {
	ids := map[string]bool{}
	for t := range c.in.Inputs {
		ids[t] = true
	}
	for t := range c.terms {
		ids[t] = true
	}
	for t := range c.runs {
		ids[t] = true
	}
	out := make([]string, 0, len(ids))
	for t := range ids {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// irrevocable checks I1 (the first terminal state shown never changes:
// every terminal observation agrees with it, and no /turns read begun
// after it shows the turn running) and I2 (TURN_LOST only by a fence:
// never beside another terminal state, never followed by a running or
// complete observation, never shown before the turn's lease expired by
// the expiries DynamoDB applied, and no lease applied for the turn after
// it was shown lost).
func (c *checker) irrevocable() {
	for _, t := range c.turns() {
		terms := c.terms[t]
		if len(terms) == 0 {
			continue
		}
		first := terms[0]
		for _, o := range terms[1:] {
			if first.State.same(o.State) {
				continue
			}
			inv := "I1"
			if (first.State.Kind == codeTurnLost) != (o.State.Kind == codeTurnLost) {
				inv = "I2"
			}
			what := fmt.Sprintf("first shown %s, later %s", first.State, o.State)
			if first.State.Kind == o.State.Kind && first.State.Code == o.State.Code {
				what = fmt.Sprintf("shown %s with other messages", o.State)
			}
			c.add(inv, t, what, first.Desc, o.Desc)
			break
		}
		for _, r := range c.runs[t] {
			if r.Route == "turns" && r.Start.After(first.At) {
				c.add("I1", t, fmt.Sprintf("shown running after it was shown %s", first.State), first.Desc, r.Desc)
				break
			}
		}
		for _, o := range terms {
			if o.State.Kind != codeTurnLost {
				continue
			}
			for _, r := range c.runs[t] {
				if r.Start.After(o.At) {
					c.add("I2", t, "shown running after it was shown lost", o.Desc, r.Desc)
					break
				}
			}
			for _, m := range c.in.Leases[t] {
				if !m.Maybe && m.Expiry.After(o.At.Add(time.Millisecond)) {
					what := "shown lost before its lease expired"
					if m.Applied.After(o.At) {
						what = "a lease of the turn applied after it was shown lost"
					}
					c.add("I2", t, what, o.Desc, fmt.Sprintf("DynamoDB applied lease expiry %s at %s", clock(m.Expiry), clock(m.Applied)))
					break
				}
			}
			break // the first lost observation is the one that matters
		}
	}
}

// oneTruth checks I3: once /turns showed a turn terminal, no later
// /sessions names it current; once /sessions (after the turn's first
// line) named another turn or none, no later /turns shows it running;
// at quiescence /sessions names a current turn iff /turns shows one
// running, /messages holds exactly /turns' messages, and the session
// envelope's outcome of each turn is completed iff the turn was saved.
func (c *checker) oneTruth() {
	in := c.in
	for _, t := range c.turns() {
		var firstTermTurns *termObs
		for i, o := range c.terms[t] {
			if strings.HasPrefix(o.Desc, "read#") {
				firstTermTurns = &c.terms[t][i]
				break
			}
		}
		if firstTermTurns != nil {
			for _, r := range c.runs[t] {
				if r.Route == "sessions" && r.Start.After(firstTermTurns.At) {
					c.add("I3", t, "/sessions names the turn current after /turns showed it terminal", firstTermTurns.Desc, r.Desc)
					break
				}
			}
		}
		live := c.live[t]
		if live == nil || len(live.Lines) == 0 {
			continue
		}
		acked := live.Lines[0].Recv
	reads:
		for _, r := range in.Reads {
			if r.Route != "sessions" || r.Status != 200 || !r.Start.After(acked) {
				continue
			}
			if ct := r.Summary.CurrentTurn; ct != nil && ct.TurnID == t {
				continue
			}
			for _, ru := range c.runs[t] {
				if ru.Route == "turns" && ru.Start.After(r.End) {
					cur := "none"
					if ct := r.Summary.CurrentTurn; ct != nil {
						cur = ct.TurnID
					}
					c.add("I3", t, fmt.Sprintf("/turns shows the turn running after /sessions named %s current", cur),
						fmt.Sprintf("%s: currentTurn %s", r, cur), ru.Desc)
					break reads
				}
			}
		}
	}

	f := in.Final
	if f.summary == nil && f.turns == nil && f.messages == nil && len(c.gone) > 0 {
		return // deleted, and no turn started a new session: RuleDeleteGone read the 404s
	}
	if f.summary == nil || f.turns == nil || f.messages == nil {
		c.add("I3", "", "a quiescent read failed", c.finalReadErrors()...)
		return
	}
	var running []string
	for i := range f.turns.Turns {
		if f.turns.Turns[i].Status == historyRunning {
			running = append(running, f.turns.Turns[i].TurnID)
		}
	}
	ct := f.summary.Summary.CurrentTurn
	switch {
	case ct != nil && len(running) == 0:
		c.add("I3", ct.TurnID, "at quiescence /sessions names a current turn and /turns shows none running",
			fmt.Sprintf("%s: currentTurn %s expiresAt %s", f.summary, ct.TurnID, clock(time.UnixMilli(ct.ExpiresAt))), f.turns.String())
	case ct == nil && len(running) > 0:
		c.add("I3", running[0], "at quiescence /turns shows a turn running and /sessions names none current",
			fmt.Sprintf("%s: currentTurn null", f.summary), fmt.Sprintf("%s: running %v", f.turns, running))
	case ct != nil:
		c.add("I3", ct.TurnID, "at quiescence (every lease expired, read twice) /sessions still names a current turn",
			fmt.Sprintf("%s: currentTurn %s expiresAt %s", f.summary, ct.TurnID, clock(time.UnixMilli(ct.ExpiresAt))))
	}
	var fromTurns []string
	for i := range f.turns.Turns {
		var msgs []any
		_ = jsonUnmarshal(f.turns.Turns[i].Messages, &msgs)
		for _, m := range msgs {
			fromTurns = append(fromTurns, canonicalValue(m))
		}
	}
	var fromMessages []string
	for _, m := range f.messages.Messages {
		fromMessages = append(fromMessages, canonical(withoutSiblings(m)))
	}
	if !slices.Equal(fromTurns, fromMessages) {
		c.add("I3", "", fmt.Sprintf("at quiescence /messages (%d messages) differs from the messages of /turns (%d)", len(fromMessages), len(fromTurns)),
			f.turns.String(), f.messages.String(), firstDifference(fromTurns, fromMessages))
	}
	if env := f.summary.Summary.Session; env != nil {
		for _, e := range env.TerminalTurns {
			t := f.turn(e.TurnID)
			if t == nil {
				continue
			}
			st, ok := t.fate()
			if !ok {
				continue
			}
			want := outcomeCompleted
			if st.Kind == codeTurnLost {
				want = outcomeIndeterminate
			}
			if e.Outcome != want {
				c.add("I3", e.TurnID, fmt.Sprintf("the session envelope records outcome %s for a turn /turns shows %s", e.Outcome, st),
					f.summary.String(), f.turns.String())
			}
		}
	}
}

func (c *checker) finalReadErrors() []string {
	var out []string
	for _, r := range c.in.Reads {
		if !r.Start.Before(c.quietStart()) && (r.Status != 200 || r.Err != "") {
			out = append(out, fmt.Sprintf("%s %s", r, r.Err))
		}
	}
	return out
}

// quietStart is when the final round began (the first final read).
func (c *checker) quietStart() time.Time {
	f := c.in.Final
	for _, r := range []*Read{f.summary, f.turns, f.messages} {
		if r != nil {
			return r.Start
		}
	}
	return time.Now()
}

func firstDifference(a, b []string) string {
	for i := range max(len(a), len(b)) {
		x, y := "(none)", "(none)"
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			return fmt.Sprintf("message %d: /turns %s, /messages %s", i, brief(x), brief(y))
		}
	}
	return ""
}

// acknowledged checks I4: every /turns read begun after a turn's first
// line lists it; every turn whose stream delivered a line, and every
// turn any /turns read listed, is in the final /turns with its user
// message, in a terminal state.
func (c *checker) acknowledged() {
	f := c.in.Final
	if f.turns == nil {
		return // reported by oneTruth
	}
	for _, t := range c.turns() {
		if (rules{c}).supersededBy(t) != nil {
			continue // a rollback stopped and superseded it: gone from history by design
		}
		if c.gone[t] && f.turn(t) == nil {
			continue // deleted with its session: RuleDeleteGone
		}
		var why string
		live := c.live[t]
		switch {
		case live != nil && len(live.Lines) > 0:
			why = fmt.Sprintf("its stream delivered %d lines (the first at %s)", len(live.Lines), clock(live.Lines[0].Recv))
		case c.listed(t):
			why = "a /turns read listed it"
		default:
			continue
		}
		if live != nil && len(live.Lines) > 0 && !c.branched() {
			first := live.Lines[0].Recv
			for _, r := range c.in.Reads {
				if r.Route == "turns" && r.Status == 200 && r.Start.After(first) && !lists(r, t) {
					c.add("I4", t, "a /turns read begun after the turn's first line does not list it", streamLine(live, &live.Lines[0]), r.String())
					break
				}
			}
		}
		ft := f.turn(t)
		switch {
		case ft == nil:
			c.add("I4", t, "missing from history at quiescence, although "+why, c.liveDesc(t), f.turns.String())
		case ft.Status == historyRunning:
			c.add("I4", t, "still running at quiescence (every lease expired, read twice), although "+why, c.liveDesc(t),
				fmt.Sprintf("%s shows %s running", f.turns, t))
		default:
			if content, ok := ft.userContent(); !ok || content != c.in.Inputs[t] {
				c.add("I4", t, "history at quiescence lacks the turn's user message", c.liveDesc(t), fmt.Sprintf("%s: %s", f.turns, brief(string(ft.Messages))))
			}
		}
	}
}

// lists reports whether the /turns read r lists turn t.
func lists(r *Read, t string) bool {
	for i := range r.Turns {
		if r.Turns[i].TurnID == t {
			return true
		}
	}
	return false
}

func (c *checker) listed(t string) bool {
	if len(c.runs[t]) > 0 {
		for _, r := range c.runs[t] {
			if r.Route == "turns" {
				return true
			}
		}
	}
	for _, o := range c.terms[t] {
		if strings.HasPrefix(o.Desc, "read#") {
			return true
		}
	}
	return false
}

func (c *checker) liveDesc(t string) string {
	if s := c.live[t]; s != nil {
		if l := s.last(); l != nil {
			return streamLine(s, l)
		}
		return s.String()
	}
	return "no accepted submit stream"
}

// recoverRenewals is how many renewals of a turn's lease I5 lets apply
// before a checkpoint write must have: renewals come every third of the
// lease, and a change waits at most four checkpoint intervals
// (CHECKPOINT_MIN_CHANGE), which at the short lease (2 s, 200 ms) is
// more than one renewal's interval and less than two.
const recoverRenewals = 3

// checkpoints checks I5: after a checkpoint fault window closes, the
// turn's checkpoints land again. It reads the order of what DynamoDB
// applied, not a clock, so a slow machine cannot fail it: a violation is
// recoverRenewals renewals of the turn's lease applied (from its process,
// more than ProgressGrace after the window, while its stream went on)
// with no checkpoint write of it applied since the window closed; or
// /sessions naming the turn current at one sequence in every read begun
// after the window plus the grace (two or more, a second apart), with
// recoverRenewals renewals applied between the first and the last of
// them, while the live stream had passed that sequence before the first.
func (c *checker) checkpoints() {
	in := c.in
	if in.Plan == nil {
		return
	}
	grace := in.Timings.ProgressGrace
	for _, st := range in.Plan.Steps {
		if st.Do != "fault" || !isCheckpoint(st.Kind) {
			continue
		}
		from, to := in.Start.Add(st.At), in.Start.Add(st.At+st.For)
		window := fmt.Sprintf("a %s window on %s writes (%s..%s)", st.Fault, st.Kind, clock(from), clock(to))
		for _, t := range slices.Sorted(maps.Keys(c.live)) {
			live := c.live[t]
			last := live.last()
			if last == nil || !last.Recv.After(to) || c.disturbed(live.Proc, from, last.Recv) {
				continue
			}
			var renewals []writeMark
			var landed *writeMark
			for i, w := range in.Writes {
				if w.Slot != live.Proc || !w.Applied || !w.At.After(to) || w.At.After(last.Recv) {
					continue
				}
				switch {
				case w.Kind == kindRenew && w.At.After(to.Add(grace)):
					renewals = append(renewals, w)
				case (w.Kind == kindDelta || w.Kind == kindLive) && landed == nil:
					landed = &in.Writes[i]
				}
			}
			if k := recoverRenewals - 1; len(renewals) > k && (landed == nil || landed.At.After(renewals[k].At)) {
				c.add("I5", t, fmt.Sprintf("no checkpoint write applied after %s until %d renewals had, %s to %s", window, recoverRenewals, clock(renewals[0].At), clock(renewals[k].At)),
					streamLine(live, last), fmt.Sprintf("DynamoDB applied renewals from %s to %s and no delta or live item write from p%d in between since %s", clock(renewals[0].At), clock(renewals[k].At), live.Proc, clock(to)))
				continue
			}
			var after []runObs
			for _, r := range c.runs[t] {
				if r.Route == "sessions" && !r.Start.Before(to.Add(grace)) {
					after = append(after, r)
				}
			}
			if len(after) < 2 {
				continue
			}
			first, lastRead := after[0], after[len(after)-1]
			if lastRead.Start.Sub(first.Start) < time.Second || c.disturbed(live.Proc, from, lastRead.End) {
				continue
			}
			stuck := true
			for _, r := range after {
				stuck = stuck && r.Sequence == first.Sequence
			}
			n := 0
			for _, w := range in.Writes {
				if w.Slot == live.Proc && w.Applied && w.Kind == kindRenew && w.At.After(first.Start) && w.At.Before(lastRead.End) {
					n++
				}
			}
			var passed *Line
			for i := range live.Lines {
				if l := &live.Lines[i]; l.Sequence > first.Sequence && l.Recv.Before(first.Start) {
					passed = l
				}
			}
			if !stuck || n < recoverRenewals || passed == nil {
				continue
			}
			c.add("I5", t, fmt.Sprintf("checkpoints stopped after %s: currentTurn.sequence stayed %d from %s to %s while %d renewals applied and the stream had reached %d",
				window, first.Sequence, clock(first.Start), clock(lastRead.End), n, passed.Sequence),
				first.Desc, lastRead.Desc, streamLine(live, passed))
		}
	}
}

// pauses returns slot's paused spans and kill times.
func (c *checker) disturbed(slot int, from, to time.Time) bool {
	var pausedAt time.Time
	paused := false
	for _, e := range c.in.Events {
		if e.Slot != slot {
			continue
		}
		switch e.What {
		case "pause":
			paused, pausedAt = true, e.At
		case "cont", "kill", "exit":
			if paused && e.At.After(from) && pausedAt.Before(to) {
				return true
			}
			paused = false
			if e.What == "kill" && !e.At.Before(from) && !e.At.After(to) {
				return true
			}
		}
	}
	return paused && pausedAt.Before(to)
}

// killedDuring reports whether slot's process was killed within
// [from, to].
func (c *checker) killedDuring(slot int, from, to time.Time) bool {
	for _, e := range c.in.Events {
		if e.Slot == slot && e.What == "kill" && !e.At.Before(from) && !e.At.After(to) {
			return true
		}
	}
	return false
}

// resumes checks I6: every stream (resumes, and live streams too) ends
// with a terminal line unless the harness dropped it or its process was
// killed, sends nothing after its terminal line but the trailing
// diagnostic at terminal+1, carries strictly increasing sequences, and
// across every stream of the session one sequence (above 0) never
// carries two different lines.
func (c *checker) resumes() {
	type seen struct {
		s *Stream
		l *Line
	}
	bySeq := map[int64]seen{}
	reported := map[int64]bool{}
	for _, s := range c.in.Streams {
		if s.Status != 200 {
			continue
		}
		var prev int64 = -1
		var terminalAt = -1
		for i := range s.Lines {
			l := &s.Lines[i]
			if l.Bad != "" {
				c.add("I6", s.Turn, "a line that does not decode: "+l.Bad, streamLine(s, l))
				continue
			}
			if terminalAt >= 0 && !trailer(&s.Lines[terminalAt], l, i == terminalAt+1) {
				c.add("I6", s.Turn, "a line after the stream's terminal line", streamLine(s, &s.Lines[terminalAt]), streamLine(s, l))
			}
			if l.terminal() && terminalAt < 0 {
				terminalAt = i
			}
			if l.Sequence == 0 && l.Event == eventDiagnostic {
				continue
			}
			if l.Sequence <= prev {
				c.add("I6", s.Turn, fmt.Sprintf("sequence %d after %d in one stream", l.Sequence, prev), streamLine(s, l))
			}
			prev = l.Sequence
			if o, ok := bySeq[l.Sequence]; !ok {
				bySeq[l.Sequence] = seen{s, l}
			} else if o.l.Key != l.Key && !reported[l.Sequence] {
				reported[l.Sequence] = true
				c.add("I6", s.Turn, fmt.Sprintf("sequence %d carries two different lines", l.Sequence), streamLine(o.s, o.l), streamLine(s, l))
			}
		}
		for i := range s.Lines {
			if l := &s.Lines[i]; l.Event == eventDiagnostic && l.Code == codeIndeterminate && (l.Retryable || l.Sequence != 0) {
				c.add("I7", s.Turn, "TURN_OUTCOME_INDETERMINATE is retryable or carries a sequence (a replay gets it, not retryable; it is no state of the turn)", streamLine(s, l))
			}
		}
		last := s.last()
		switch s.Ending {
		case "eof":
			if last == nil || !last.terminal() {
				what := "the stream ended without a terminal line"
				if last == nil {
					what = "the stream answered 200 and ended without a line"
				}
				c.add("I6", s.Turn, what, s.String())
			}
		case "cut":
			if (last == nil || !last.terminal()) && !c.killedDuring(s.Proc, s.Start, s.End) {
				c.add("I6", s.Turn, "the stream broke off without a terminal line, its process not killed: "+s.Err, s.String())
			}
		case "timeout":
			c.add("I6", s.Turn, "the stream had not ended when the harness gave up on it", s.String())
		}
	}
}

// lostAbove checks I6 for lost records: a turn's lost record (its
// terminal TURN_LOST snapshot or diagnostic) carries a sequence above
// every other line of the turn in any stream.
func (c *checker) lostAbove() {
	type line struct {
		s *Stream
		l *Line
	}
	top := map[string]line{}
	lost := map[string]line{}
	for _, s := range c.in.Streams {
		for i := range s.Lines {
			l := &s.Lines[i]
			if l.Sequence == 0 {
				continue
			}
			if f, ok := l.fate(); ok && f.Kind == codeTurnLost {
				if _, seen := lost[s.Turn]; !seen {
					lost[s.Turn] = line{s, l}
				}
			} else if t, ok := top[s.Turn]; !ok || l.Sequence > t.l.Sequence {
				top[s.Turn] = line{s, l}
			}
		}
	}
	for t, lr := range lost {
		if tp, ok := top[t]; ok && tp.l.Sequence >= lr.l.Sequence {
			c.add("I6", t, fmt.Sprintf("the lost record's sequence %d is not above the turn's line at %d", lr.l.Sequence, tp.l.Sequence),
				streamLine(lr.s, lr.l), streamLine(tp.s, tp.l))
		}
	}
}

// trailer reports whether l, right after the terminal line term when
// next, is its trailing diagnostic: SERVER_TIMEOUT or REQUEST_CANCELLED
// at term's sequence plus one.
func trailer(term, l *Line, next bool) bool {
	return next && l.Event == eventDiagnostic && l.Sequence == term.Sequence+1 &&
		(l.Code == codeServerTimeout || l.Code == codeRequestCancelled)
}

// answer is the line a live stream ended with as its outcome: its last
// line, or the terminal snapshot before a trailing SERVER_TIMEOUT or
// REQUEST_CANCELLED diagnostic.
func answer(s *Stream) *Line {
	n := len(s.Lines)
	if n == 0 {
		return nil
	}
	l := &s.Lines[n-1]
	if n >= 2 && l.Event == eventDiagnostic && (l.Code == codeServerTimeout || l.Code == codeRequestCancelled) {
		if p := &s.Lines[n-2]; p.Event == eventSnapshot && p.terminal() && p.Sequence == l.Sequence-1 {
			return p
		}
	}
	return l
}

// honest checks I7: a live client's last line and the final history
// never contradict (a terminal state is the one history keeps; a
// retryable failure is never a saved turn; TURN_OUTCOME_INDETERMINATE
// allows anything), and a replay of a turn id never runs it again and
// answers by its fate: TURN_ALREADY_COMPLETED for a saved turn,
// TURN_OUTCOME_INDETERMINATE for a lost one (at quiescence both ways).
func (c *checker) honest() {
	f := c.in.Final
	if f.turns == nil {
		return
	}
	for _, t := range c.turns() {
		live := c.live[t]
		ft := f.turn(t)
		var hist fateState
		saved := false
		if ft != nil {
			var ok bool
			if hist, ok = ft.fate(); !ok {
				continue // still running: I4
			}
			saved = hist.Kind != codeTurnLost
		}
		if live != nil && live.Ending == "eof" {
			if l := answer(live); l != nil {
				st, ok := l.fate()
				switch {
				case ok && ft == nil && st.Messages != "none" && (rules{c}).supersededBy(t) == nil && !c.gone[t]:
					c.add("I7", t, fmt.Sprintf("the live stream ended %s, history has no such turn", st), streamLine(live, l), f.turns.String())
				case ok && ft != nil && !st.same(hist):
					c.add("I7", t, fmt.Sprintf("the live stream ended %s, history keeps %s", st, hist), streamLine(live, l),
						fmt.Sprintf("%s: %s messages %s", f.turns, hist, brief(hist.Messages)))
				case !ok && l.Event == eventDiagnostic && l.Retryable && saved:
					c.add("I7", t, fmt.Sprintf("the live stream ended with retryable %s, history keeps the turn saved (%s)", l.Code, hist),
						streamLine(live, l), fmt.Sprintf("%s: %s", f.turns, hist))
				}
			}
		}
		replays := c.in.Replays
		for _, s := range c.in.Streams {
			if s.Kind == "submit" && s.Turn == t && s.Status != 200 && s.Status != 0 {
				replays = append(replays, &Replay{Proc: s.Proc, Turn: t, Start: s.Start, End: s.End, Status: s.Status, ErrCode: s.ErrCode})
			}
		}
		for _, r := range replays {
			if r.Turn != t {
				continue
			}
			desc := fmt.Sprintf("replay of %s on p%d [%s..%s]: HTTP %d %s", t, r.Proc, clock(r.Start), clock(r.End), r.Status, r.ErrCode)
			switch {
			case r.Status == 200:
				c.add("I7", t, "a replay of the turn id ran the turn again", desc)
			case r.Status == 409 && r.ErrCode == codeAlreadyCompleted && ft != nil && !saved:
				c.add("I7", t, "a replay was told the turn completed, history keeps it lost", desc, fmt.Sprintf("%s: %s", f.turns, hist))
			case r.Status == 0 || r.Status >= 500:
				// No answer, or a failure: says nothing of the turn.
			case r.ErrCode == codeIndeterminate && (rules{c}).claimMaybeDuring(t, r.Start, r.End):
				// Its own claim reached DynamoDB and its answer was lost,
				// and the read that would resolve it failed too (a
				// machine too loaded for the attempt timeout): the store
				// cannot tell a replay from a claim that applied, and says
				// so (make test loop run 2 at f6085f6, under two CPU hogs).
			case r.Final && ft != nil && saved && r.ErrCode != codeAlreadyCompleted:
				c.add("I7", t, fmt.Sprintf("at quiescence a replay of a saved turn (%s) answered %d %s", hist, r.Status, r.ErrCode), desc)
			case r.Final && ft != nil && !saved && r.ErrCode != codeIndeterminate:
				c.add("I7", t, fmt.Sprintf("at quiescence a replay of a lost turn answered %d %s", r.Status, r.ErrCode), desc)
			}
		}
	}
}

// noLineAfterLease checks I8 on every live stream: no streaming snapshot
// of a turn is emitted after the latest lease expiry DynamoDB applied for
// it, nor after the first line of a later turn of the session.
func (c *checker) noLineAfterLease() {
	type first struct {
		turn string
		s    *Stream
		l    *Line
	}
	var firsts []first
	for t, s := range c.live {
		if len(s.Lines) > 0 {
			firsts = append(firsts, first{t, s, &s.Lines[0]})
		}
	}
	for t, s := range c.live {
		var expiry time.Time
		for _, m := range c.in.Leases[t] {
			if m.Expiry.After(expiry) {
				expiry = m.Expiry
			}
		}
		if len(s.Lines) == 0 {
			continue
		}
		start := s.Lines[0].Emitted
		reportedLease, reportedLater := false, false
		for i := range s.Lines {
			l := &s.Lines[i]
			if l.Event != eventSnapshot || l.Status != statusStreaming {
				continue
			}
			if !reportedLease && !expiry.IsZero() && l.Emitted.After(expiry) {
				reportedLease = true
				c.add("I8", t, fmt.Sprintf("a streaming snapshot emitted %s after the latest lease expiry DynamoDB applied for the turn (%s)",
					l.Emitted.Sub(expiry), clock(expiry)), streamLine(s, l))
			}
			for _, u := range firsts {
				if reportedLater || u.turn == t || !u.l.Emitted.After(start) {
					continue
				}
				if l.Emitted.After(u.l.Emitted) {
					reportedLater = true
					c.add("I8", t, fmt.Sprintf("a streaming snapshot emitted after the first line of the later turn %s", u.turn),
						streamLine(s, l), streamLine(u.s, u.l))
				}
			}
		}
	}
}
