package fate

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"
)

// The rules beyond each invariant's first reading (Violation.Rule), each
// aimed at one promise a kind of schedule exercises (kinds.go). A
// violation of a first reading has the invariant as its rule.
const (
	// RuleKept (I1): a turn any client saw terminal (a terminal line of
	// any stream, a /turns entry), and that was acknowledged (its stream
	// delivered a line) or listed, stays in every /turns read begun after
	// that, unless it ended interrupted or lost after a rollback was sent
	// while it ran (the turn that rollback stopped and superseded; lost
	// when its process was dead).
	RuleKept = "kept"
	// RuleQuota: a quota schedule's principal is admitted (a 200 stream)
	// at most turnsPerMinute times within any 60 s.
	RuleQuota = "quota-exact"
	// RuleStopHonest (I7): a stop answered 2xx is followed by the turn's
	// interrupted end (or by an end within the stop bound plus slack
	// after the answer: the turn was saving already); a stop answered a
	// retryable 5xx did not have its flag written (DynamoDB applied no
	// stop write of the session from its process while it was in
	// flight); a turn none of whose stops was answered 2xx, one of them
	// retryable, does not end interrupted (unless a rollback or an
	// interrupt was sent while it ran, or a stop went unanswered).
	RuleStopHonest = "stop-honest"
	// RuleStopBound (I5, "Stop within a second"): a turn whose stop was
	// first sent while only checkpoint writes failed (its process
	// undisturbed) shows a terminal state within the stop bound (a
	// checkpoint interval plus 250 ms) plus slack (an attempt timeout
	// plus the larger of 1 s and a checkpoint interval: the machine's
	// share) of that first stop, unless the process that took the stop
	// was paused or killed while it did.
	RuleStopBound = "stop-bound"
	// RuleReplay (I7): a submit of a turn id begun after any route showed
	// the turn terminal, or after its client got
	// TURN_OUTCOME_INDETERMINATE, is never answered 409 SESSION_BUSY, nor
	// a retryable 5xx while no fault window of its session is open.
	RuleReplay = "replay-decided"
	// RuleAck (I7): a submit answered with a retryable 5xx leaves its
	// turn id unspent (unless an earlier submit of the id had spent it:
	// its claim applied, and it was not answered a retryable 5xx):
	// unless a later submit of the id ran the turn (a
	// 200 stream) or claimed it (DynamoDB applied its lease) and was told
	// TURN_OUTCOME_INDETERMINATE or nothing, the id is never in history
	// and no later submit or replay of it is told TURN_ALREADY_COMPLETED
	// or TURN_OUTCOME_INDETERMINATE.
	RuleAck = "ack-unspent"
	// RuleDeleteRunning (I8): once a delete of the session was answered
	// 204 or 202 (its mark applied), no line of a turn that streamed
	// before the delete was sent is emitted after that answer: a session
	// is never deleted under a running turn.
	RuleDeleteRunning = "delete-running"
	// RuleDeleteGone (I4): a turn that streamed before a delete of its
	// session answered 204 or 202 was sent, and no submit of which began
	// after that, is in no /turns read begun after the answer nor in the
	// final history; the session's routes answer 404 until a new turn
	// starts a new session under its id.
	RuleDeleteGone = "delete-gone"
	// RulePause (I2): a turn whose process was paused for 0.8-0.95 of
	// the lease (a nearlease schedule) and whose lease renewal DynamoDB
	// applied and answered after the pause, before its previous expiry,
	// is not lost (nor ended TURN_OUTCOME_INDETERMINATE): its lease
	// was proven. A later renewal left unanswered (DynamoDB did not
	// answer within the attempt time) excuses it: that renewal, not
	// the pause, left the lease unproven.
	RulePause = "pause-renewed"
	// RuleRenewLate is reported, not a violation (Violation.Reported): a
	// nearlease turn that had at least two attempt timeouts of its lease
	// left when its process continued, renewed none of it before its
	// expiry, and was lost. The documents promise renewals every third
	// of the lease, not a renewal at once after a pause, so this is a
	// finding on how much of a lease a pause may take, not a broken
	// promise.
	RuleRenewLate = "pause-renewal-late"
	// RuleVersions (I1, I4; a branch schedule's, in place of RuleKept):
	// at quiescence every turn that was acknowledged is readable by id,
	// terminal; /turns lists one version of the first answer (its first
	// turn, or the regeneration of it) and never two; and a select
	// answered 204 leaves its version listed (docs/branches.md).
	RuleVersions = "versions"
)

// rules are the checks of the rules named above, each a promise of the
// documents made precise, run on a session's checker after the
// invariants (checkSession).
type rules struct{ *checker }

// stopBound is the documented stop bound and the slack the harness
// allows on top of it (docs/durable-turns.md "Stop within a second").
func (t Timings) stopBound() (bound, slack time.Duration) {
	return t.CheckpointInterval + 250*time.Millisecond, t.AttemptTimeout + max(time.Second, t.CheckpointInterval)
}

// firstSubmit is the start of the first submit of t (zero when none).
func (c rules) firstSubmit(t string) time.Time {
	for _, s := range c.in.Streams {
		if s.Kind == "submit" && s.Turn == t {
			return s.Start
		}
	}
	return time.Time{}
}

// supersededBy returns the rollback that may have stopped and superseded
// t: t was only ever shown interrupted or lost (a rollback sets the stop
// flag of a turn whose process may be dead; that turn ends lost), or
// never shown terminal, and a rollback submit of another turn was in
// flight between t's first submit and t's first terminal state
// (inFlightDuring). Nil when none.
func (c rules) supersededBy(t string) *Stream {
	terms := c.terms[t]
	end := time.Now()
	if len(terms) > 0 {
		end = terms[0].At
	}
	for _, o := range terms {
		if o.State.Kind != historyInterrupted && o.State.Kind != codeTurnLost {
			return nil
		}
	}
	from := c.firstSubmit(t)
	for _, s := range c.in.Streams {
		if s.Kind == "submit" && s.Multitask == "rollback" && s.Turn != t && inFlightDuring(s, from, end) {
			return s
		}
	}
	return nil
}

// multitaskWhileRunning reports whether an interrupt or a rollback of
// another turn was sent while t ran (after its first submit, before it
// was first shown terminal).
func (c rules) multitaskWhileRunning(t string) bool {
	terms := c.terms[t]
	end := time.Now()
	if len(terms) > 0 {
		end = terms[0].At
	}
	from := c.firstSubmit(t)
	for _, s := range c.in.Streams {
		if s.Kind == "submit" && s.Multitask != "" && s.Turn != t && inFlightDuring(s, from, end) {
			return true
		}
	}
	return false
}

// inFlightDuring reports whether the request s was in flight at some
// instant between from and end: a server reads the session whenever its
// request is being served, so an interrupt or rollback sent before a turn
// started may still find that turn running and stop it.
func inFlightDuring(s *Stream, from, end time.Time) bool {
	return s.Start.Before(end) && (s.End.IsZero() || s.End.After(from))
}

// versions checks RuleVersions.
func (c rules) versions() {
	f := c.in.Final
	if f.turns == nil {
		return // reported by oneTruth
	}
	for _, t := range c.turns() {
		if live := c.live[t]; live == nil || len(live.Lines) == 0 {
			continue
		}
		ft := f.turn(t)
		switch {
		case ft == nil:
			c.addRule("I4", RuleVersions, t, "acknowledged, yet not readable by id at quiescence", c.liveDesc(t))
		case ft.Status == historyRunning:
			c.addRule("I4", RuleVersions, t, "still running at quiescence", c.liveDesc(t))
		}
	}
	listed := map[string]bool{}
	for _, t := range f.turns.Turns {
		listed[t.TurnID] = true
	}
	for _, t := range f.turns.Turns {
		if t.Siblings == nil {
			continue
		}
		for _, id := range t.Siblings.TurnIDs {
			if id != t.TurnID && listed[id] {
				c.addRule("I1", RuleVersions, t.TurnID, fmt.Sprintf("at quiescence /turns lists two versions of one answer, %s and %s", t.TurnID, id), f.turns.String())
			}
		}
	}
	if a := c.live["a"]; a != nil && len(a.Lines) > 0 && !listed["a"] && !listed["b"] {
		c.addRule("I4", RuleVersions, "a", "at quiescence /turns lists no version of the first answer (neither a nor its regeneration b)", f.turns.String())
	}
	for _, s := range c.in.Selects {
		if s.Status == 204 && !listed[s.Turn] {
			c.addRule("I1", RuleVersions, s.Turn, "a select answered 204, yet /turns does not list the version at quiescence", s.String(), f.turns.String())
		}
	}
}

// kept checks RuleKept.
func (c rules) kept() {
	for _, t := range c.turns() {
		terms := c.terms[t]
		if len(terms) == 0 || c.supersededBy(t) != nil {
			continue
		}
		if live := c.live[t]; (live == nil || len(live.Lines) == 0) && !c.listed(t) {
			continue // never acknowledged nor listed: a hidden fence record, no list shows it
		}
		first := terms[0]
		for _, r := range c.in.Reads {
			if r.Route == "turns" && r.Status == 200 && r.Err == "" && r.Start.After(first.At) && !lists(r, t) {
				what := fmt.Sprintf("shown %s, then gone from /turns", first.State)
				if rb := c.rollbackAround(t); rb != nil {
					what += fmt.Sprintf(" (a rollback, %s, was sent while it ran or just before: it was not the turn the rollback stopped)", rb)
				}
				c.addRule("I1", RuleKept, t, what, first.Desc, r.String()+": the turn is not listed", c.turnsOf(r))
				break
			}
		}
	}
}

// rollbackAround returns a rollback submit of another turn sent before t
// was first shown terminal, nil when none.
func (c rules) rollbackAround(t string) *Stream {
	terms := c.terms[t]
	if len(terms) == 0 {
		return nil
	}
	for _, s := range c.in.Streams {
		if s.Kind == "submit" && s.Multitask == "rollback" && s.Turn != t && s.Start.Before(terms[0].At) {
			return s
		}
	}
	return nil
}

// turnsOf describes a /turns read's turns.
func (c rules) turnsOf(r *Read) string {
	var parts []string
	for i := range r.Turns {
		parts = append(parts, r.Turns[i].TurnID+" "+r.Turns[i].Status)
	}
	return fmt.Sprintf("%s lists [%s]", r, strings.Join(parts, ", "))
}

// quota checks RuleQuota over a quota schedule's bursts.
func (c rules) quota() {
	n := c.in.QuotaN
	var admitted []*Stream
	for _, s := range c.in.Quota {
		if s.Status == 200 {
			admitted = append(admitted, s)
		}
	}
	sort.SliceStable(admitted, func(i, j int) bool { return admitted[i].Start.Before(admitted[j].Start) })
	for i := 0; i+n < len(admitted); i++ {
		if admitted[i+n].Start.Sub(admitted[i].Start) < time.Minute {
			k := i + n
			for k+1 < len(admitted) && admitted[k+1].Start.Sub(admitted[i].Start) < time.Minute {
				k++
			}
			ev := []string{c.quotaCounts()}
			for _, s := range admitted[i : k+1] {
				ev = append(ev, fmt.Sprintf("%s (session %s)", s, s.Session))
			}
			c.addRule("Q", RuleQuota, "", fmt.Sprintf("%d admissions of one principal within a minute, turnsPerMinute %d", k+1-i, n), ev...)
			return
		}
	}
}

// quotaCounts counts a quota schedule's answers by status and code.
func (c rules) quotaCounts() string {
	m := map[string]int{}
	for _, s := range c.in.Quota {
		m[fmt.Sprintf("%d %s", s.Status, s.ErrCode)]++
	}
	return fmt.Sprintf("%d submits: %s", len(c.in.Quota), counts(m))
}

// stopRules checks RuleStopHonest and RuleStopBound.
func (c rules) stopRules() {
	bound, slack := c.in.Timings.stopBound()
	byTurn := map[string][]*Stop{}
	for _, s := range c.in.Stops {
		byTurn[s.Turn] = append(byTurn[s.Turn], s)
	}
	for _, t := range slices.Sorted(maps.Keys(byTurn)) {
		stops := byTurn[t]
		sort.SliceStable(stops, func(i, j int) bool { return stops[i].Start.Before(stops[j].Start) })
		live := c.live[t]
		terms := c.terms[t]
		ft := c.in.Final.turn(t)
		if live == nil || len(terms) == 0 || ft == nil {
			continue
		}
		hist, ok := ft.fate()
		if !ok {
			continue
		}
		term := terms[0]
		interrupted := hist.Kind == historyInterrupted
		var ok2xx *Stop
		retryable, unanswered := false, false
		var answers []string
		for _, s := range stops {
			answers = append(answers, s.String())
			switch {
			case s.Status == 200 || s.Status == 202:
				if ok2xx == nil {
					ok2xx = s
				}
			case s.Status == 0:
				unanswered = true
			case s.Retryable:
				retryable = true
			}
		}
		// A holder that stopped but could not confirm its save (its own
		// stream ended TURN_OUTCOME_INDETERMINATE, the table then decided
		// the turn lost) honoured the stop when that stream ended: the
		// decision's time is the lease's, not the stop's.
		ended := term.At
		if hist.Kind == codeTurnLost {
			if last := lastLine(live); last != nil && last.Event == eventDiagnostic && last.Code == codeIndeterminate && last.Recv.Before(ended) {
				ended = last.Recv
			}
		}
		// A holder killed before the stop cannot honour it: its turn is
		// decided lost once the lease expires, whatever the flag says.
		if ok2xx != nil && !interrupted && ended.After(ok2xx.End.Add(bound+slack)) && !c.disturbed(live.Proc, ok2xx.Start, ended) &&
			!c.killed(live.Proc, live.Start, ok2xx.Start) {
			c.addRule("I7", RuleStopHonest, t, fmt.Sprintf("a stop answered %d, yet the turn ended %s %s after that answer (stop bound %s, slack %s)",
				ok2xx.Status, hist, term.At.Sub(ok2xx.End).Round(time.Millisecond), bound, slack), append(answers, term.Desc)...)
		}
		for _, s := range stops {
			if s.Status < 500 || !s.Retryable {
				continue
			}
			if w := c.appliedStop(s); w != nil {
				c.addRule("I7", RuleStopHonest, t, fmt.Sprintf("a stop was answered a retryable %d %s although DynamoDB applied its flag on the session", s.Status, s.ErrCode),
					s.String(), fmt.Sprintf("DynamoDB applied a stop write of the session from p%d at %s", w.Slot, clock(w.At)))
				break
			}
		}
		if ok2xx == nil && interrupted && retryable && !unanswered && !c.multitaskWhileRunning(t) {
			c.addRule("I7", RuleStopHonest, t, "no stop was answered 2xx (one was answered retryable), yet the turn ended interrupted: a retryable answer hid a stop that took effect",
				append(answers, term.Desc)...)
		}
		// The stop bound runs from the first stop sent after the turn's
		// submit opened: one sent before (its schedule running late, a
		// restart delaying the submit) could not name the turn, and was
		// answered as such.
		var first *Stop
		for _, s := range stops {
			if !s.Start.Before(live.Start) {
				first = s
				break
			}
		}
		// The turn's process must have been undisturbed from the submit
		// on: one killed before the stop (fate seed 22 schedule 1 beside
		// a delete schedule's kill) leaves its turn to the table, which
		// decides it once its lease expired, whatever the stop.
		if first != nil && first.DuringCheckpointFaults && term.At.After(first.Start) && !c.disturbed(live.Proc, live.Start, term.At) &&
			!c.disturbed(first.Proc, first.Start, first.End) && c.onlyCheckpointFaults() &&
			term.At.After(first.Start.Add(bound+slack)) {
			c.addRule("I5", RuleStopBound, t, fmt.Sprintf("a stop first sent while checkpoint writes failed took %s to show the turn terminal (%s; stop bound %s, slack %s)",
				term.At.Sub(first.Start).Round(time.Millisecond), hist, bound, slack), append(answers, term.Desc)...)
		}
	}
}

// lastLine returns s's last line, nil when it has none.
func lastLine(s *Stream) *Line {
	if len(s.Lines) == 0 {
		return nil
	}
	return &s.Lines[len(s.Lines)-1]
}

// appliedStop returns a write of the session's stop flag (on the session
// item) that DynamoDB applied from s's process while s was in flight,
// nil when none.
func (c rules) appliedStop(s *Stop) *writeMark {
	for i, w := range c.in.Writes {
		if w.Kind == kindStop && w.Applied && w.Slot == s.Proc && w.Item == "SESSION" && !w.At.Before(s.Start) && !w.At.After(s.End) {
			return &c.in.Writes[i]
		}
	}
	return nil
}

// onlyCheckpointFaults reports whether every fault window of the session
// is on checkpoint writes (so that a stop's own writes pass).
func (c rules) onlyCheckpointFaults() bool {
	for _, w := range c.in.Windows {
		if !isCheckpoint(w.Kind) {
			return false
		}
	}
	return true
}

// faultsOpen reports whether a fault window of the session was open at
// any time within [from, to].
func (c rules) faultsOpen(from, to time.Time) bool {
	for _, w := range c.in.Windows {
		if w.To.IsZero() {
			continue // never opened
		}
		if w.From.Before(to) && w.To.After(from) {
			return true
		}
		if w.Late > 0 && w.To.Add(w.Late).After(from) && w.From.Before(to) {
			return true // its writes land up to Late after it closes
		}
	}
	return false
}

// submitsOf returns every submit of t that got an answer other than 200,
// as replays, with the replays of t.
func (c rules) answersOf(t string) []*Replay {
	var out []*Replay
	for _, s := range c.in.Streams {
		if s.Kind == "submit" && s.Turn == t && s.Status != 200 && s.Status != 0 {
			out = append(out, &Replay{Proc: s.Proc, Turn: t, Start: s.Start, End: s.End, Status: s.Status, ErrCode: s.ErrCode, Retryable: s.Retryable})
		}
	}
	for _, r := range c.in.Replays {
		if r.Turn == t {
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
	return out
}

func (r *Replay) String() string {
	return fmt.Sprintf("replay of %s on p%d [%s..%s]: HTTP %d %s retryable=%v", r.Turn, r.Proc, clock(r.Start), clock(r.End), r.Status, r.ErrCode, r.Retryable)
}

func (s *Stop) String() string {
	return fmt.Sprintf("stop of %s on p%d [%s..%s]: HTTP %d %s retryable=%v", s.Turn, s.Proc, clock(s.Start), clock(s.End), s.Status, s.ErrCode, s.Retryable)
}

// replays checks RuleReplay.
func (c rules) replays() {
	for _, t := range c.turns() {
		// Decided from its first terminal observation, or from the
		// TURN_OUTCOME_INDETERMINATE its client got (the code a replay
		// then gets, I7), whichever came first.
		var from time.Time
		var shown, desc string
		if terms := c.terms[t]; len(terms) > 0 {
			from, shown, desc = terms[0].At, terms[0].State.String(), terms[0].Desc
		}
		for _, s := range c.in.Streams {
			if s.Turn != t || s.Status != 200 {
				continue
			}
			for i := range s.Lines {
				if l := &s.Lines[i]; l.Event == eventDiagnostic && l.Code == codeIndeterminate && (from.IsZero() || l.Recv.Before(from)) {
					from, shown, desc = l.Recv, "TURN_OUTCOME_INDETERMINATE to its client", streamLine(s, l)
				}
			}
		}
		if from.IsZero() {
			continue
		}
		for _, r := range c.answersOf(t) {
			if !r.Start.After(from) {
				continue
			}
			switch {
			case r.Status == 409 && r.ErrCode == codeSessionBusy:
				c.addRule("I7", RuleReplay, t, fmt.Sprintf("a submit of the turn id, after it was shown %s, was told SESSION_BUSY (retryable)", shown), desc, r.String())
			case r.Status >= 500 && r.Retryable && !c.faultsOpen(r.Start, r.End):
				c.addRule("I7", RuleReplay, t, fmt.Sprintf("a submit of the turn id, after it was shown %s, was told a retryable %d %s with no fault open", shown, r.Status, r.ErrCode), desc, r.String())
			default:
				continue
			}
			break
		}
	}
}

// acks checks RuleAck.
func (c rules) acks() {
	f := c.in.Final
	for _, t := range c.turns() {
		var subs []*Stream
		for _, s := range c.in.Streams {
			if s.Kind == "submit" && s.Turn == t {
				subs = append(subs, s)
			}
		}
		for i, s := range subs {
			if s.Status < 500 || !s.Retryable || spentBefore(c, t, subs[:i]) {
				continue
			}
			// A later submit spent the id itself if it ran the turn, or if
			// its own claim applied (or may have: it reached DynamoDB and
			// its answer was lost below the store, which resolved it by a
			// read the tap does not see) and it was told the outcome is
			// unknown (its withdrawal unconfirmed: that answer is about
			// its claim), or got no answer at all (its process killed,
			// its connection cut): a claim that dies before its
			// acknowledgment leaves the id taken (docs/durable-turns.md),
			// and the retry the 5xx promised did claim it.
			ran := false
			for _, u := range subs[i+1:] {
				claimed := c.leaseAppliedDuring(t, u.Start, u.End) || c.claimMaybeDuring(t, u.Start, u.End)
				ran = ran || u.Status == 200 || claimed && (u.Status == 0 || u.Status == 409 && u.ErrCode == codeIndeterminate)
			}
			if ran {
				continue
			}
			var spent []string
			if ft := f.turn(t); ft != nil {
				spent = append(spent, fmt.Sprintf("%s lists %s %s", f.turns, t, ft.Status))
			}
			for _, r := range c.answersOf(t) {
				if r.Start.After(s.Start) && r.Status == 409 && (r.ErrCode == codeAlreadyCompleted || r.ErrCode == codeIndeterminate) {
					spent = append(spent, r.String())
					break
				}
			}
			if len(spent) > 0 {
				c.addRule("I7", RuleAck, t, fmt.Sprintf("a submit was answered a retryable %d %s, no later submit ran the turn, yet its id is spent", s.Status, s.ErrCode),
					append([]string{s.String()}, spent...)...)
				break
			}
		}
	}
}

// spentBefore reports whether one of the earlier submits of turn t
// spent its id: its claim applied (DynamoDB applied its lease, or its
// claim reached DynamoDB unanswered) and it was not answered a retryable 5xx (whose claim was withdrawn). A retryable
// 5xx after that is not what spent the id, whatever a later submit is
// told.
func spentBefore(c rules, t string, earlier []*Stream) bool {
	for _, u := range earlier {
		// A claim that reached DynamoDB unanswered (its process killed
		// mid-request, beside a delete schedule's kill) may have applied.
		claimed := c.leaseAppliedDuring(t, u.Start, u.End) || c.claimMaybeDuring(t, u.Start, u.End)
		if claimed && (u.Status < 500 || !u.Retryable) {
			return true
		}
	}
	return false
}

// leaseAppliedDuring reports whether DynamoDB applied (and answered) a
// lease of turn t between from and to: a claim or a renewal of it.
func (c rules) leaseAppliedDuring(t string, from, to time.Time) bool {
	for _, m := range c.in.Leases[t] {
		if !m.Maybe && !m.Applied.Before(from) && !m.Applied.After(to) {
			return true
		}
	}
	return false
}

// claimMaybeDuring reports whether a claim of turn t reached DynamoDB
// between from and to without an answer the tap could read (it may have
// applied).
func (c rules) claimMaybeDuring(t string, from, to time.Time) bool {
	for _, m := range c.in.Leases[t] {
		if m.Maybe && m.Claim && !m.Applied.Before(from) && !m.Applied.After(to) {
			return true
		}
	}
	return false
}

// pauses checks RulePause on a nearlease schedule's turn.
func (c rules) pauses() {
	in := c.in
	if in.Plan == nil || in.Plan.Kind != KindNearLease {
		return
	}
	const t = "a"
	live := c.live[t]
	if live == nil {
		return
	}
	var pausedAt, contAt time.Time
	for _, e := range in.Events {
		if e.Slot != live.Proc || e.At.Before(live.Start) {
			continue
		}
		if e.What == "pause" && pausedAt.IsZero() {
			pausedAt = e.At
		} else if e.What == "cont" && !pausedAt.IsZero() {
			contAt = e.At
			break
		} else if e.What == "kill" || e.What == "exit" {
			return
		}
	}
	if contAt.IsZero() {
		return
	}
	var prev time.Time
	var renewal *leaseMark
	for i, m := range in.Leases[t] {
		if m.Maybe {
			continue // not seen applied, nor answered
		}
		if m.Applied.Before(pausedAt) && m.Expiry.After(prev) {
			prev = m.Expiry
		}
		if m.Applied.After(contAt) && renewal == nil {
			renewal = &in.Leases[t][i]
		}
	}
	if prev.IsZero() {
		return
	}
	if renewal == nil || !renewal.Applied.Before(prev) {
		c.renewLate(live, pausedAt, contAt, prev)
		return
	}
	end := time.Now()
	if l := live.last(); l != nil {
		end = l.Recv
	}
	if c.disturbed(live.Proc, contAt.Add(time.Millisecond), end) {
		return
	}
	for _, m := range in.Leases[t] {
		// A later renewal DynamoDB left unanswered is a cause of its own:
		// from then on the turn could not prove its lease, whatever the
		// pause did, and giving up is right.
		if m.Maybe && !m.Claim && m.Applied.After(renewal.Applied) && m.Applied.Before(end) {
			return
		}
	}
	var lost []string
	if ft := in.Final.turn(t); ft != nil {
		if st, ok := ft.fate(); ok && st.Kind == codeTurnLost {
			lost = append(lost, fmt.Sprintf("%s: %s", in.Final.turns, st))
		}
	}
	if l := answer(live); l != nil && (l.Code == codeTurnLost || l.Code == codeIndeterminate) {
		lost = append(lost, streamLine(live, l))
	}
	if len(lost) == 0 {
		return
	}
	c.addRule("I2", RulePause, t, fmt.Sprintf("paused %s (p%d), its renewal applied %s after it continued and %s before its previous expiry, yet it gave up",
		contAt.Sub(pausedAt).Round(time.Millisecond), live.Proc, renewal.Applied.Sub(contAt).Round(time.Millisecond), prev.Sub(renewal.Applied).Round(time.Millisecond)),
		append([]string{fmt.Sprintf("DynamoDB applied lease expiry %s at %s", clock(renewal.Expiry), clock(renewal.Applied))}, lost...)...)
}

// renewLate reports RuleRenewLate: the nearlease turn's lease expired at
// prev with no renewal after its pause (at contAt), although it had two
// attempt timeouts left, and the turn was lost.
func (c rules) renewLate(live *Stream, pausedAt, contAt, prev time.Time) {
	in := c.in
	if prev.Sub(contAt) < 2*in.Timings.AttemptTimeout || c.disturbed(live.Proc, contAt.Add(time.Millisecond), prev) {
		return
	}
	ft := in.Final.turn("a")
	if ft == nil {
		return
	}
	if st, ok := ft.fate(); !ok || st.Kind != codeTurnLost {
		return
	}
	c.out = append(c.out, Violation{Invariant: "I2", Rule: RuleRenewLate, Reported: true, Seed: in.Seed, Schedule: in.Schedule, Session: in.Session, Turn: "a",
		What: fmt.Sprintf("paused %s (p%d), it had %s of its lease left when it continued, renewed none of it and was lost",
			contAt.Sub(pausedAt).Round(time.Millisecond), live.Proc, prev.Sub(contAt).Round(time.Millisecond)),
		Evidence: []string{fmt.Sprintf("lease expiry %s, continued %s", clock(prev), clock(contAt)), fmt.Sprintf("%s: %s", in.Final.turns, "a lost")}})
}

// killed reports whether the process in slot was killed between from and
// to.
func (c rules) killed(slot int, from, to time.Time) bool {
	for _, e := range c.in.Events {
		if e.Slot == slot && e.What == "kill" && !e.At.Before(from) && !e.At.After(to) {
			return true
		}
	}
	return false
}

// firstDelete returns the session's first delete answered 204 or 202,
// nil when none was.
func firstDelete(in *sessionInput) *Delete {
	var first *Delete
	for _, d := range in.Deletes {
		if (d.Status == 204 || d.Status == 202) && (first == nil || d.End.Before(first.End)) {
			first = d
		}
	}
	return first
}

// maybeDelete returns the session's first delete whose outcome its
// client did not learn (no answer, or a retryable 5xx) when the final
// reads found no session, nil otherwise.
func maybeDelete(in *sessionInput) *Delete {
	if in.Final.summary != nil || in.Final.turns != nil || in.Final.messages != nil {
		return nil
	}
	for _, d := range in.Deletes {
		if d.Status == 0 || d.Status >= 500 {
			return d
		}
	}
	return nil
}

// goneWith returns the turns delete d may have removed: a submit of
// theirs began before d ended.
func goneWith(in *sessionInput, d *Delete) map[string]bool {
	gone := map[string]bool{}
	for _, s := range in.Streams {
		if s.Kind == "submit" && s.Start.Before(d.End) {
			gone[s.Turn] = true
		}
	}
	return gone
}

// deleted returns the turns delete d certainly removed: their stream
// delivered a line before d was sent, and no submit of them began after
// that.
func deletedBy(in *sessionInput, d *Delete) map[string]*Stream {
	out := map[string]*Stream{}
	for _, s := range in.Streams {
		if s.Kind == "submit" && len(s.Lines) > 0 && s.Lines[0].Recv.Before(d.Start) {
			out[s.Turn] = s
		}
	}
	for _, s := range in.Streams {
		if s.Kind == "submit" && s.Start.After(d.Start) {
			delete(out, s.Turn)
		}
	}
	for _, r := range in.Replays {
		if r.Start.After(d.Start) {
			delete(out, r.Turn)
		}
	}
	return out
}

// deleteRules checks RuleDeleteRunning and RuleDeleteGone against delete
// d, the first answered 204 or 202.
func (c rules) deleteRules(d *Delete) {
	in := c.in
	removed := deletedBy(in, d)
	for _, t := range slices.Sorted(maps.Keys(removed)) {
		s := removed[t]
		for i := range s.Lines {
			// A diagnostic at sequence 0 carries no state of the turn: the
			// last word of a process that was paused across the delete
			// (TURN_OUTCOME_INDETERMINATE: its fate is unreadable now).
			if l := &s.Lines[i]; l.Emitted.After(d.End) && (l.Event != eventDiagnostic || l.Sequence != 0) {
				c.addRule("I8", RuleDeleteRunning, t, "a line of the turn was emitted after a delete of its session was answered", d.String(), streamLine(s, l))
				break
			}
		}
		for _, r := range in.Reads {
			if r.Route == "turns" && r.Status == 200 && r.Start.After(d.End) && lists(r, t) {
				c.addRule("I4", RuleDeleteGone, t, "a /turns read begun after the delete of its session lists it", d.String(), r.String())
				break
			}
		}
		if in.Final.turn(t) != nil {
			c.addRule("I4", RuleDeleteGone, t, "the final history holds it after the delete of its session", d.String(), in.Final.turns.String())
		}
	}
	// Until a turn starts a new session, every route answers 404: a
	// submit that began after the delete was sent, one whose first line
	// came after that, or one whose claim DynamoDB applied (or may have)
	// after that (its claim landed after the session was gone: a slow
	// attempt, on a loaded machine), may have started one.
	var renewed time.Time
	for _, s := range in.Streams {
		if s.Kind != "submit" {
			continue
		}
		late := s.Start.After(d.Start) || len(s.Lines) > 0 && s.Lines[0].Recv.After(d.Start)
		for _, m := range in.Leases[s.Turn] {
			late = late || m.Claim && m.Applied.After(d.Start) && !m.Applied.Before(s.Start)
		}
		if late && (renewed.IsZero() || s.Start.Before(renewed)) {
			renewed = s.Start
		}
	}
	for _, r := range in.Replays {
		if r.Start.After(d.Start) && (renewed.IsZero() || r.Start.Before(renewed)) {
			renewed = r.Start
		}
	}
	for _, r := range in.Reads {
		if r.Start.After(d.End) && (renewed.IsZero() || r.End.Before(renewed)) && r.Status != 404 && r.Err == "" {
			c.addRule("I4", RuleDeleteGone, "", "a read of the deleted session, before any new turn, did not answer 404", d.String(), r.String())
			break
		}
	}
}
