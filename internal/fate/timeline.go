package fate

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// timeline renders everything one schedule saw and did, in time order:
// the evidence behind a violation, to read beside the plan.
func (r *runner) timeline(p *Plan, events []procEvent) string {
	lg := r.logs[p.Session]
	type entry struct {
		at   time.Time
		text string
	}
	var es []entry
	add := func(at time.Time, format string, args ...any) {
		es = append(es, entry{at, fmt.Sprintf(format, args...)})
	}
	end := lg.firstRun
	for _, s := range lg.streams {
		if s.End.After(end) {
			end = s.End
		}
	}
	for _, e := range events {
		if !e.At.Before(lg.firstRun) && !e.At.After(end) {
			add(e.At, "p%d %s %s", e.Slot, e.What, e.By)
		}
	}
	r.proxy.mu.Lock() // a window's From and To move when it opens
	for _, w := range lg.windows {
		what := w.Fault.String()
		if w.Late > 0 {
			what = fmt.Sprintf("applied %s late", w.Late)
		}
		if w.To.IsZero() {
			add(w.From, "faults armed, never opened: %s attempts %s", w.Kind, what)
			continue
		}
		add(w.From, "faults on: %s attempts %s (%d attempts met them)", w.Kind, what, w.Hits)
		add(w.To, "faults off: %s attempts %s", w.Kind, what)
	}
	r.proxy.mu.Unlock()
	for _, h := range lg.hooks {
		if !h.Fired.IsZero() {
			add(h.Fired, "hook fired: %s p%d at its %s attempt (%s)", h.Action, h.Slot, h.Kind, h.Phase)
		}
	}
	for _, s := range lg.streams {
		add(s.Start, "%s#%d %s opens on p%d (after %d): HTTP %d %s", s.Kind, s.ID, s.Turn, s.Proc, s.After, s.Status, s.ErrCode)
		for i := range s.Lines {
			l := &s.Lines[i]
			add(l.Recv, "%s#%d line %s", s.Kind, s.ID, shortLine(l))
		}
		add(s.End, "%s#%d ends: %s %s", s.Kind, s.ID, s.Ending, s.Err)
	}
	for _, rd := range lg.reads {
		add(rd.End, "%s (began %s): %s", rd, clock(rd.Start), readSummary(rd))
	}
	for _, st := range lg.stops {
		add(st.End, "stop of %s on p%d (sent %s): HTTP %d %s", st.Turn, st.Proc, clock(st.Start), st.Status, st.ErrCode)
	}
	for _, rp := range lg.replays {
		add(rp.End, "replay of %s on p%d (sent %s): HTTP %d %s", rp.Turn, rp.Proc, clock(rp.Start), rp.Status, rp.ErrCode)
	}
	for t := range r.turnsOf(lg) {
		for _, m := range r.proxy.leaseMarks(p.Session, t) {
			if m.Maybe {
				what := "renewal"
				if m.Claim {
					what = "claim"
				}
				add(m.Applied, "a %s of %s until %s reached DynamoDB unanswered (it may have applied)", what, t, clock(m.Expiry))
				continue
			}
			add(m.Applied, "DynamoDB applied a lease of %s until %s", t, clock(m.Expiry))
		}
		if d, ok := r.proxy.decidedAt(p.Session, t); ok {
			add(d, "DynamoDB applied the decision's fence of %s", t)
		}
	}
	sort.SliceStable(es, func(i, j int) bool { return es[i].at.Before(es[j].at) })
	var b strings.Builder
	for _, e := range es {
		fmt.Fprintf(&b, "%s %s\n", clock(e.at), e.text)
	}
	return b.String()
}

func shortLine(l *Line) string {
	s := fmt.Sprintf("seq %d", l.Sequence)
	switch l.Event {
	case eventSnapshot:
		s += " " + l.Status
	case eventDiagnostic:
		s += fmt.Sprintf(" diagnostic retryable=%v", l.Retryable)
	default:
		s += " " + l.Event
	}
	if l.Code != "" {
		s += " " + l.Code
	}
	return s + " emitted " + clock(l.Emitted)
}

func readSummary(r *Read) string {
	switch {
	case r.Err != "":
		return r.Err
	case r.Status != 200:
		return ""
	case r.Summary != nil:
		if ct := r.Summary.CurrentTurn; ct != nil {
			return fmt.Sprintf("currentTurn %s seq %d expiresAt %s", ct.TurnID, ct.Sequence, clock(time.UnixMilli(ct.ExpiresAt)))
		}
		return "currentTurn null"
	case r.Route == "turns":
		var parts []string
		for i := range r.Turns {
			t := &r.Turns[i]
			p := t.TurnID + " " + t.Status
			if t.Error != nil {
				p += " " + t.Error.Code
			}
			if t.ExpiresAt != nil {
				p += " expiresAt " + clock(time.UnixMilli(*t.ExpiresAt))
			}
			parts = append(parts, p)
		}
		return "[" + strings.Join(parts, "; ") + "]"
	case r.Route == "messages":
		return fmt.Sprintf("%d messages", len(r.Messages))
	}
	return ""
}
