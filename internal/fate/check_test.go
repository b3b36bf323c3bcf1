package fate

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/ddbfault"
)

// The checker against hand-made observations: a clean session passes,
// and each invariant's breach is found (the dev servers of a run cannot
// be made to break them on purpose).

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

const question = "the question"

// messages returns a turn's canonical messages with the assistant's
// content and status.
func messages(content, status string) string {
	m := []map[string]any{
		{"id": "a.u", "role": "user", "content": question, "status": "complete", "createdAt": "2026-12-01T12:00:00.000Z"},
		{"id": "a.a", "role": "assistant", "content": content, "status": status, "createdAt": "2026-12-01T12:00:00.000Z"},
	}
	b, _ := json.Marshal(m)
	return canonical(b)
}

// snapshot is a snapshot line of turn a received at recv ms (emitted 1 ms
// earlier).
func snapshot(seq int64, recv int, status, code, content string) Line {
	msgStatus := statusStreaming
	switch status {
	case statusComplete:
		msgStatus = statusComplete
	case statusError:
		msgStatus = statusError
	}
	l := Line{Recv: at(recv), Emitted: at(recv - 1), Event: eventSnapshot, TurnID: "a", Sequence: seq, Status: status, Code: code,
		Messages: messages(content, msgStatus)}
	l.Key = fmt.Sprintf("%s %s %s %s", l.Event, l.Status, l.Code, l.Messages)
	return l
}

func diagnostic(seq int64, recv int, code string, retryable bool) Line {
	l := Line{Recv: at(recv), Emitted: at(recv - 1), Event: eventDiagnostic, TurnID: "a", Sequence: seq, Code: code, Retryable: retryable}
	l.Key = fmt.Sprintf("%s %s %v", l.Event, l.Code, l.Retryable)
	return l
}

func stream(kind string, proc int, start int, ending string, lines ...Line) *Stream {
	s := &Stream{Kind: kind, Proc: proc, Session: "s", Turn: "a", After: -1, Start: at(start), Status: 200, Ending: ending, Lines: lines}
	s.End = s.Start
	if len(lines) > 0 {
		s.End = lines[len(lines)-1].Recv
	}
	return s
}

func turn(id, status, code, msgs string, expires int) wireTurn {
	t := wireTurn{TurnID: id, Status: status, Messages: json.RawMessage(msgs)}
	if code != "" {
		t.Error = &wireDiagnostic{Code: code}
	}
	if expires > 0 {
		e := at(expires).UnixMilli()
		t.ExpiresAt = &e
	}
	return t
}

func turnsRead(start, end int, turns ...wireTurn) *Read {
	return &Read{Route: "turns", Status: 200, Start: at(start), End: at(end), Turns: turns}
}

func sessionsRead(start, end int, current string, seq int64, expires int) *Read {
	r := &Read{Route: "sessions", Status: 200, Start: at(start), End: at(end), Summary: &wireSession{}}
	if current != "" {
		r.Summary.CurrentTurn = &struct {
			TurnID    string `json:"turnId"`
			Status    string `json:"status"`
			ExpiresAt int64  `json:"expiresAt"`
			Sequence  int64  `json:"sequence"`
		}{TurnID: current, Status: historyRunning, ExpiresAt: at(expires).UnixMilli(), Sequence: seq}
	}
	return r
}

// final is a consistent quiescent state holding turns.
func final(turns ...wireTurn) finalState {
	f := finalState{summary: sessionsRead(20000, 20010, "", 0, 0), turns: turnsRead(20010, 20020, turns...),
		messages: &Read{Route: "messages", Status: 200, Start: at(20020), End: at(20030)}}
	for _, t := range turns {
		var msgs []json.RawMessage
		_ = json.Unmarshal(t.Messages, &msgs)
		f.messages.Messages = append(f.messages.Messages, msgs...)
	}
	return f
}

// clean is a session whose turn a streamed, completed and was saved,
// read and resumed consistently.
func clean() *sessionInput {
	done := messages("Echo: the question", statusComplete)
	return &sessionInput{
		Seed: 1, Schedule: 0, Session: "s", Start: at(0), Inputs: map[string]string{"a": question}, Timings: DefaultTimings,
		Streams: []*Stream{
			stream("submit", 0, 0, "eof",
				snapshot(1, 100, statusStreaming, "", ""),
				snapshot(2, 300, statusStreaming, "", "Echo: the"),
				snapshot(3, 500, statusComplete, "", "Echo: the question")),
			stream("resume", 1, 200, "eof",
				snapshot(2, 250, statusStreaming, "", "Echo: the"),
				snapshot(3, 550, statusComplete, "", "Echo: the question")),
		},
		Reads: []*Read{
			sessionsRead(150, 160, "a", 1, 2100),
			turnsRead(200, 210, turn("a", historyRunning, "", messages("", statusStreaming), 2100)),
			turnsRead(600, 610, turn("a", statusComplete, "", done, 0)),
			sessionsRead(620, 630, "", 0, 0),
		},
		Final:  final(turn("a", statusComplete, "", done, 0)),
		Leases: map[string][]leaseMark{"a": {{Applied: at(90), Expiry: at(2090)}}},
	}
}

func TestCheckClean(t *testing.T) {
	if vs := checkSession(clean()); len(vs) > 0 {
		for _, v := range vs {
			t.Errorf("%s", v)
		}
	}
}

func TestCheckFindsEachInvariant(t *testing.T) {
	lost := messages("Echo: the", statusError)
	done := messages("Echo: the question", statusComplete)
	for name, tc := range map[string]struct {
		inv, what string
		breakIt   func(in *sessionInput)
	}{
		"I1 a terminal state that changes": {"I1", "shown complete with other messages", func(in *sessionInput) {
			in.Reads = append(in.Reads, turnsRead(700, 710, turn("a", statusComplete, "", messages("Echo: other", statusComplete), 0)))
		}},
		"I1 running after terminal": {"I1", "shown running after it was shown complete", func(in *sessionInput) {
			in.Reads = append(in.Reads, turnsRead(700, 710, turn("a", historyRunning, "", messages("Echo: the", statusStreaming), 2100)))
		}},
		"I2 lost beside complete": {"I2", "first shown complete, later TURN_LOST", func(in *sessionInput) {
			in.Streams = append(in.Streams, stream("resume", 1, 600, "eof", snapshot(1000003, 900, statusError, codeTurnLost, "Echo: the")))
		}},
		"I2 lost before the lease expired": {"I2", "shown lost before its lease expired", func(in *sessionInput) {
			in.Streams = []*Stream{
				stream("submit", 0, 0, "cut", snapshot(1, 100, statusStreaming, "", "")),
				stream("resume", 1, 200, "eof", snapshot(1000001, 1500, statusError, codeTurnLost, "Echo: the")),
			}
			in.Streams[0].Ending = "cut"
			in.Events = []procEvent{{At: at(150), Slot: 0, What: "kill"}}
			in.Reads = nil
			in.Final = final(turn("a", statusError, codeTurnLost, lost, 0))
		}},
		"I2 lost then running": {"I2", "shown running after it was shown lost", func(in *sessionInput) {
			in.Streams = []*Stream{
				stream("submit", 0, 0, "cut", snapshot(1, 100, statusStreaming, "", "")),
				stream("resume", 1, 200, "eof", snapshot(1000001, 2500, statusError, codeTurnLost, "Echo: the")),
			}
			in.Events = []procEvent{{At: at(150), Slot: 0, What: "kill"}}
			in.Reads = []*Read{sessionsRead(2600, 2610, "a", 1, 4000)}
			in.Final = final(turn("a", statusError, codeTurnLost, lost, 0))
		}},
		"I3 current after terminal": {"I3", "/sessions names the turn current after /turns showed it terminal", func(in *sessionInput) {
			in.Reads = append(in.Reads, sessionsRead(700, 710, "a", 3, 2100))
		}},
		"I3 running after none current": {"I3", "/turns shows the turn running after /sessions named none current", func(in *sessionInput) {
			in.Reads = []*Read{
				sessionsRead(150, 160, "", 0, 0),
				turnsRead(200, 210, turn("a", historyRunning, "", messages("", statusStreaming), 2100)),
			}
		}},
		"I3 quiescent contradiction": {"I3", "at quiescence /sessions names a current turn and /turns shows none running", func(in *sessionInput) {
			in.Final.summary = sessionsRead(20000, 20010, "a", 3, 2100)
		}},
		"I3 messages differ": {"I3", "at quiescence /messages", func(in *sessionInput) {
			in.Final.messages.Messages = in.Final.messages.Messages[:1]
		}},
		"I4 missing": {"I4", "missing from history at quiescence", func(in *sessionInput) {
			in.Final = final()
			in.Reads = nil
		}},
		"I4 not listed after the first line": {"I4", "a /turns read begun after the turn's first line does not list it", func(in *sessionInput) {
			in.Reads = append(in.Reads, turnsRead(150, 160))
		}},
		"I4 stuck running": {"I4", "still running at quiescence", func(in *sessionInput) {
			in.Final = final(turn("a", historyRunning, "", messages("Echo: the", statusStreaming), 2100))
			in.Final.summary = sessionsRead(20000, 20010, "a", 2, 2100)
		}},
		"I5 checkpoints stop, by the table": {"I5", "no checkpoint write applied after", func(in *sessionInput) {
			in.Plan = &Plan{Steps: []Step{{At: time.Second, Do: "fault", Kind: kindLive, Fault: ddbfault.ServerErrorBefore, For: time.Second}}}
			var lines []Line
			for i := 1; i <= 60; i++ {
				lines = append(lines, snapshot(int64(i), 100*i, statusStreaming, "", strings.Repeat("x", i)))
			}
			in.Streams = []*Stream{stream("submit", 0, 0, "cut", lines...)}
			in.Events = []procEvent{{At: at(6050), Slot: 0, What: "kill"}}
			in.Reads = nil
			for ms := 700; ms < 6000; ms += 667 {
				in.Writes = append(in.Writes, writeMark{At: at(ms), Slot: 0, Kind: kindRenew, Applied: true})
			}
			for ms := 200; ms < 1000; ms += 200 {
				in.Writes = append(in.Writes, writeMark{At: at(ms), Slot: 0, Kind: kindLive, Applied: true})
			}
			in.Final = final(turn("a", statusError, codeTurnLost, lost, 0))
		}},
		"I5 checkpoints stop, by /sessions": {"I5", "currentTurn.sequence stayed 5", func(in *sessionInput) {
			in.Plan = &Plan{Steps: []Step{{At: time.Second, Do: "fault", Kind: kindCheckpoint, Fault: ddbfault.Hang, For: time.Second}}}
			var lines []Line
			for i := 1; i <= 40; i++ {
				lines = append(lines, snapshot(int64(i), 100*i, statusStreaming, "", strings.Repeat("x", i)))
			}
			lines = append(lines, snapshot(41, 4200, statusComplete, "", "Echo: the question"))
			in.Streams = []*Stream{stream("submit", 0, 0, "eof", lines...)}
			in.Reads = []*Read{sessionsRead(3600, 3610, "a", 5, 6000), sessionsRead(3900, 3910, "a", 5, 6000), sessionsRead(4700, 4710, "a", 5, 6000)}
			in.Writes = []writeMark{{At: at(3700), Slot: 0, Kind: kindRenew, Applied: true}, {At: at(4150), Slot: 0, Kind: kindRenew, Applied: true},
				{At: at(4600), Slot: 0, Kind: kindRenew, Applied: true}, {At: at(3650), Slot: 0, Kind: kindLive, Applied: true}}
		}},
		"I6 empty resume": {"I6", "the stream answered 200 and ended without a line", func(in *sessionInput) {
			in.Streams = append(in.Streams, stream("resume", 1, 900, "eof"))
		}},
		"I6 one sequence, two lines": {"I6", "sequence 2 carries two different lines", func(in *sessionInput) {
			in.Streams[1].Lines[0] = diagnostic(2, 250, codeTurnLost, true)
		}},
		"I6 broke off without a kill": {"I6", "broke off without a terminal line", func(in *sessionInput) {
			in.Streams[1].Lines = in.Streams[1].Lines[:1]
			in.Streams[1].Ending = "cut"
		}},
		"I6 lost record below the turn's lines": {"I6", "the lost record's sequence 2 is not above", func(in *sessionInput) {
			in.Streams = []*Stream{stream("submit", 0, 0, "cut", snapshot(1, 100, statusStreaming, "", ""), snapshot(2, 200, statusStreaming, "", "Echo:")),
				stream("resume", 1, 300, "eof", diagnostic(2, 2500, codeTurnLost, true))}
			in.Events = []procEvent{{At: at(200), Slot: 0, What: "kill"}}
			in.Reads = nil
			in.Final = final(turn("a", statusError, codeTurnLost, lost, 0))
		}},
		"I7 indeterminate retryable": {"I7", "TURN_OUTCOME_INDETERMINATE is retryable", func(in *sessionInput) {
			in.Streams[0].Lines[2] = diagnostic(0, 500, codeIndeterminate, true)
			in.Streams = in.Streams[:1]
		}},
		"I7 retryable but saved": {"I7", "ended with retryable SERVER_INTERNAL, history keeps the turn saved", func(in *sessionInput) {
			in.Streams[0].Lines[2] = diagnostic(3, 500, codeServerInternal, true)
			in.Streams = in.Streams[:1]
			in.Reads = nil
		}},
		"I7 replay": {"I7", "a replay was told the turn completed, history keeps it lost", func(in *sessionInput) {
			in.Streams = []*Stream{stream("submit", 0, 0, "eof", snapshot(1, 100, statusStreaming, "", ""), snapshot(1000001, 2500, statusError, codeTurnLost, "Echo: the"))}
			in.Reads = nil
			in.Final = final(turn("a", statusError, codeTurnLost, lost, 0))
			in.Replays = []*Replay{{Turn: "a", Status: 409, ErrCode: codeAlreadyCompleted, Start: at(3000), End: at(3010)}}
		}},
		"I8 after the lease": {"I8", "after the latest lease expiry", func(in *sessionInput) {
			in.Leases["a"] = []leaseMark{{Applied: at(90), Expiry: at(250)}}
		}},
		"I8 after the lease, a renewal may have applied later": {"I8", "after the latest lease expiry", func(in *sessionInput) {
			// A renewal that reached DynamoDB unanswered before the
			// line's lease ran out (it may have applied, and the store
			// resolves it by a read the tap does not see) covers lines up
			// to its own expiry, not beyond.
			in.Leases["a"] = []leaseMark{{Applied: at(90), Expiry: at(250)}, {Applied: at(240), Expiry: at(260), Maybe: true}}
		}},
		"I8 after a later turn": {"I8", "after the first line of the later turn b", func(in *sessionInput) {
			b := stream("submit", 1, 150, "eof", snapshot(1000001, 200, statusStreaming, "", ""), snapshot(1000002, 400, statusComplete, "", "Echo: b"))
			b.Turn = "b"
			in.Streams = append(in.Streams, b)
			in.Inputs["b"] = question
			in.Final = final(turn("a", statusComplete, "", done, 0), turn("b", statusComplete, "", b.Lines[1].Messages, 0))
		}},
	} {
		t.Run(name, func(t *testing.T) {
			in := clean()
			tc.breakIt(in)
			vs := checkSession(in)
			for _, v := range vs {
				if v.Invariant == tc.inv && strings.Contains(v.What, tc.what) {
					return
				}
			}
			t.Errorf("no %s violation %q among %d:", tc.inv, tc.what, len(vs))
			for _, v := range vs {
				t.Logf("%s", v)
			}
		})
	}
}

// TestMaybeRenewalCoversItsLines: a line within the expiry of a renewal
// that reached DynamoDB unanswered is no I8 violation.
func TestMaybeRenewalCoversItsLines(t *testing.T) {
	in := clean()
	in.Leases["a"] = []leaseMark{{Applied: at(90), Expiry: at(250)}, {Applied: at(240), Expiry: at(5000), Maybe: true}}
	for _, v := range checkSession(in) {
		if v.Invariant == "I8" {
			t.Errorf("I8 despite a renewal that may have applied: %s", v)
		}
	}
	in.Leases["a"][1].Maybe = false // the same, seen applied: clean too
	for _, v := range checkSession(in) {
		if v.Invariant == "I8" {
			t.Errorf("I8 despite an applied renewal: %s", v)
		}
	}
}

// TestClassify: an attempt's kind is its purpose label's, its session and
// sort key are read from its key; an unlabelled write is other.
func TestClassify(t *testing.T) {
	const (
		update = "DynamoDB_20120810.UpdateItem"
		put    = "DynamoDB_20120810.PutItem"
	)
	session := `{"Key":{"pk":{"S":"SESSION#s1"},"sk":{"S":"SESSION"}}}`
	turn := `{"Key":{"pk":{"S":"SESSION#s1"},"sk":{"S":"TURN#000000000001"}}}`
	live := `{"Key":{"pk":{"S":"SESSION#s1"},"sk":{"S":"TURN#000000000001#LIVE"}}}`
	for name, tc := range map[string]struct {
		target, purpose, body, kind, session string
	}{
		"claim":              {update, "claim", session, kindClaim, "s1"},
		"takeover":           {update, "takeover", session, kindClaim, "s1"},
		"renew":              {update, "renew", session, kindRenew, "s1"},
		"session fence":      {update, "fence", session, kindDecide, "s1"},
		"decided, freed":     {update, "free", session, kindDecide, "s1"},
		"live item":          {update, "live", live, kindLive, "s1"},
		"delta":              {put, "delta", `{"Item":{"pk":{"S":"SESSION#s1"},"sk":{"S":"TURN#000000000001#D#0000000000000004"}}}`, kindDelta, "s1"},
		"ack":                {update, "ack", turn, kindAck, "s1"},
		"save":               {update, "save", turn, kindSave, "s1"},
		"release":            {update, "release", session, kindRelease, "s1"},
		"turn fence":         {update, "fence", turn, kindDecide, "s1"},
		"give back":          {update, "give-back", session, kindOther, "s1"},
		"ledger":             {update, "ledger-add", `{"Key":{"pk":{"S":"USAGE#t#2026-12"},"sk":{"S":"P#alice"}}}`, kindOther, ""},
		"unlabelled write":   {update, "", session, kindOther, "s1"},
		"query":              {"DynamoDB_20120810.Query", "context", `{"ExpressionAttributeValues":{":0":{"S":"SESSION#s1-10"}}}`, kindRead, "s1-10"},
		"unlabelled GetItem": {"DynamoDB_20120810.GetItem", "", session, kindRead, "s1"},
	} {
		t.Run(name, func(t *testing.T) {
			a := classify(tc.target, tc.purpose, []byte(tc.body))
			if a.Kind != tc.kind || a.Session != tc.session {
				t.Errorf("classify = %s of session %q, want %s of %q", a.Kind, a.Session, tc.kind, tc.session)
			}
			if isCheckpoint(tc.kind) && !a.is(kindCheckpoint) {
				t.Errorf("a %s write is not a checkpoint", a.Kind)
			}
		})
	}
}

// TestClassifyLiveItem: a liveitem window meets every write of the live
// item, a stop's flag included, and no write of another item.
func TestClassifyLiveItem(t *testing.T) {
	stop := classify("DynamoDB_20120810.UpdateItem", "stop", []byte(`{"Key":{"pk":{"S":"SESSION#s1"},"sk":{"S":"TURN#000000000001#LIVE"}}}`))
	if stop.Kind != kindStop || !stop.is(kindLiveItem) || stop.is(kindCheckpoint) || stop.is(kindLive) {
		t.Errorf("a stop's flag on the live item: kind %s, liveitem %v, checkpoint %v", stop.Kind, stop.is(kindLiveItem), stop.is(kindCheckpoint))
	}
	delta := classify("DynamoDB_20120810.PutItem", "delta", []byte(`{"Item":{"pk":{"S":"SESSION#s1"},"sk":{"S":"TURN#000000000001#D#0000000000000004"}}}`))
	if delta.is(kindLiveItem) {
		t.Errorf("a delta write met a liveitem window")
	}
}

// TestCheckCheckpointsRecover: checkpoints that land again after the
// fault window, however late on the clock, are no violation, also when
// two renewals came first (a paced checkpoint waits up to four
// intervals, more than one renewal's).
func TestCheckCheckpointsRecover(t *testing.T) {
	for _, liveAt := range []int{4000, 4800} {
		checkCheckpointsRecover(t, liveAt)
	}
}

func checkCheckpointsRecover(t *testing.T, liveAt int) {
	in := clean()
	in.Plan = &Plan{Steps: []Step{{At: time.Second, Do: "fault", Kind: kindLive, Fault: ddbfault.Hang, For: time.Second}}}
	var lines []Line
	for i := 1; i <= 60; i++ {
		lines = append(lines, snapshot(int64(i), 100*i, statusStreaming, "", strings.Repeat("x", i)))
	}
	lines = append(lines, snapshot(61, 6100, statusComplete, "", "Echo: the question"))
	in.Streams = []*Stream{stream("submit", 0, 0, "eof", lines...)}
	in.Final = final(turn("a", statusComplete, "", lines[60].Messages, 0))
	in.Reads = []*Read{sessionsRead(3600, 3610, "a", 5, 6000), sessionsRead(3900, 3910, "a", 5, 6000), sessionsRead(4700, 4710, "a", 40, 6000)}
	for ms := 700; ms < 6000; ms += 667 {
		in.Writes = append(in.Writes, writeMark{At: at(ms), Slot: 0, Kind: kindRenew, Applied: true})
	}
	in.Writes = append(in.Writes, writeMark{At: at(liveAt), Slot: 0, Kind: kindLive, Applied: true})
	in.Leases["a"] = []leaseMark{{Applied: at(5400), Expiry: at(7400)}}
	for _, v := range checkSession(in) {
		t.Errorf("live write at %d ms: %s", liveAt, v)
	}
}

// TestCheckFindsEachRule: each rule of the schedule kinds (rules.go)
// finds its breach in hand-made observations, and passes the same
// session without it.
func TestCheckFindsEachRule(t *testing.T) {
	done := messages("Echo: the question", statusComplete)
	stopped := messages("Echo: the", statusError)
	slow := func(in *sessionInput, status string) { // turn a ends at 3 s
		code, msgs := "", done
		if status == statusError {
			code, msgs = codeInterrupted, stopped
		}
		in.Streams = []*Stream{stream("submit", 0, 0, "eof", snapshot(1, 100, statusStreaming, "", ""), snapshot(2, 300, statusStreaming, "", "Echo: the"),
			snapshot(3, 3000, status, code, map[string]string{statusComplete: "Echo: the question", statusError: "Echo: the"}[status]))}
		in.Reads = nil
		hist := statusComplete
		if status == statusError {
			hist = historyInterrupted
		}
		in.Final = final(turn("a", hist, code, msgs, 0))
	}
	for name, tc := range map[string]struct {
		rule, what string
		breakIt    func(in *sessionInput)
		fixIt      func(in *sessionInput) // the same session, within the rule
	}{
		"kept": {RuleKept, "shown complete, then gone from /turns", func(in *sessionInput) {
			in.Reads = append(in.Reads, turnsRead(700, 710))
		}, nil},
		"quota": {RuleQuota, "3 admissions of one principal within a minute, turnsPerMinute 2", func(in *sessionInput) {
			in.Plan, in.QuotaN = &Plan{Kind: KindQuota}, 2
			for k := range 3 {
				in.Quota = append(in.Quota, &Stream{Kind: "submit", Status: 200, Start: at(k), Session: fmt.Sprint("q", k)})
			}
		}, func(in *sessionInput) { in.Quota[2].Status, in.Quota[2].ErrCode = 429, "QUOTA_EXCEEDED" }},
		"stop answered 2xx, turn completes late": {RuleStopHonest, "a stop answered 202, yet the turn ended complete", func(in *sessionInput) {
			slow(in, statusComplete)
			in.Stops = []*Stop{{Turn: "a", Start: at(400), End: at(410), Status: 202}}
		}, func(in *sessionInput) { slow(in, statusError) }},
		"stop answered 2xx, turn decided lost long after": {RuleStopHonest, "a stop answered 202, yet the turn ended TURN_LOST", func(in *sessionInput) {
			// The holder's stream ran on past the stop; the table decided
			// the turn lost at 3 s.
			in.Streams = []*Stream{stream("submit", 0, 0, "eof", snapshot(1, 100, statusStreaming, "", ""), snapshot(2, 300, statusStreaming, "", "Echo: the"),
				snapshot(3, 2500, statusStreaming, "", "Echo: the question"), diagnostic(0, 2600, codeIndeterminate, false)),
				stream("resume", 1, 2900, "eof", snapshot(1000001, 3000, statusError, codeTurnLost, "Echo: the"))}
			in.Reads = nil
			in.Final = final(turn("a", statusError, codeTurnLost, messages("Echo: the", statusError), 0))
			in.Stops = []*Stop{{Turn: "a", Start: at(400), End: at(410), Status: 202}}
		}, func(in *sessionInput) {
			// The holder stopped at once and could not confirm its save:
			// its stream ended TURN_OUTCOME_INDETERMINATE within the stop
			// bound; the lease's expiry decided the turn lost later.
			in.Streams[0].Lines = append(in.Streams[0].Lines[:2], diagnostic(0, 600, codeIndeterminate, false))
			in.Streams[0].End = at(600)
		}},
		"stop answered 2xx after its holder was killed": {RuleStopHonest, "a stop answered 202, yet the turn ended complete", func(in *sessionInput) {
			slow(in, statusComplete)
			in.Stops = []*Stop{{Turn: "a", Proc: 1, Start: at(400), End: at(410), Status: 202}}
		}, func(in *sessionInput) {
			// The holder died before the stop: it cannot honour the flag,
			// and the table decides its turn.
			in.Events = []procEvent{{At: at(200), Slot: 0, What: "kill"}}
		}},
		"stop answered retryable, took effect": {RuleStopHonest, "a retryable answer hid a stop that took effect", func(in *sessionInput) {
			slow(in, statusError)
			in.Stops = []*Stop{{Turn: "a", Start: at(2000), End: at(2010), Status: 500, ErrCode: codeServerInternal, Retryable: true}}
		}, func(in *sessionInput) {
			in.Stops = append(in.Stops, &Stop{Turn: "a", Start: at(2300), End: at(2310), Status: 202})
		}},
		"stop answered retryable, its flag written": {RuleStopHonest, "although DynamoDB applied its flag on the session", func(in *sessionInput) {
			slow(in, statusComplete)
			in.Stops = []*Stop{{Turn: "a", Proc: 1, Start: at(400), End: at(900), Status: 500, ErrCode: codeServerInternal, Retryable: true}}
			in.Writes = []writeMark{{At: at(420), Slot: 1, Kind: kindStop, Applied: true, Item: "SESSION"}}
		}, func(in *sessionInput) { in.Writes[0].Applied = false }},
		"stop lost under checkpoint faults": {RuleStopBound, "a stop first sent while checkpoint writes failed took 2.6s", func(in *sessionInput) {
			slow(in, statusComplete)
			in.Windows = []window{{Kind: kindLive, Fault: ddbfault.ServerErrorBefore, From: at(200), To: at(2500)}}
			in.Stops = []*Stop{{Turn: "a", Start: at(400), End: at(410), Status: 500, ErrCode: codeServerInternal, Retryable: true, DuringCheckpointFaults: true}}
		}, func(in *sessionInput) {
			slow(in, statusError)
			in.Streams[0].Lines[2].Recv = at(800)
			in.Stops = append(in.Stops, &Stop{Turn: "a", Start: at(650), End: at(660), Status: 202, DuringCheckpointFaults: true})
		}},
		"stop lost under checkpoint faults, its turn's process killed before": {RuleStopBound, "a stop first sent while checkpoint writes failed took 2.6s", func(in *sessionInput) {
			slow(in, statusComplete)
			in.Windows = []window{{Kind: kindLive, Fault: ddbfault.ServerErrorBefore, From: at(200), To: at(2500)}}
			in.Stops = []*Stop{{Turn: "a", Proc: 1, Start: at(400), End: at(410), Status: 500, ErrCode: codeServerInternal, Retryable: true, DuringCheckpointFaults: true}}
		}, func(in *sessionInput) {
			// The turn's process was killed before the stop was sent (fate
			// seed 22 schedule 1, beside a delete schedule's kill): the
			// table decides the turn at its lease's expiry.
			in.Events = []procEvent{{At: at(150), Slot: 0, What: "kill"}}
		}},
		"stop lost under checkpoint faults, sent before the submit": {RuleStopBound, "a stop first sent while checkpoint writes failed took 2.6s", func(in *sessionInput) {
			slow(in, statusComplete)
			in.Windows = []window{{Kind: kindLive, Fault: ddbfault.ServerErrorBefore, From: at(-600), To: at(2500)}}
			in.Stops = []*Stop{{Turn: "a", Start: at(400), End: at(410), Status: 500, ErrCode: codeServerInternal, Retryable: true, DuringCheckpointFaults: true}}
		}, func(in *sessionInput) {
			// Sent before the turn's submit opened (fate schedule 221 of
			// seed 1 ran late behind a restart): it named no turn.
			in.Stops[0].Start, in.Stops[0].End = in.Streams[0].Start.Add(-300*time.Millisecond), in.Streams[0].Start.Add(-290*time.Millisecond)
			in.Stops[0].Status, in.Stops[0].ErrCode, in.Stops[0].Retryable = 404, "SESSION_NOT_FOUND", false
		}},
		"replay told busy after the turn was shown terminal": {RuleReplay, "was told SESSION_BUSY", func(in *sessionInput) {
			in.Replays = []*Replay{{Turn: "a", Start: at(700), End: at(710), Status: 409, ErrCode: codeSessionBusy, Retryable: true}}
		}, func(in *sessionInput) { in.Replays[0].ErrCode, in.Replays[0].Retryable = codeAlreadyCompleted, false }},
		"replay told busy after TURN_OUTCOME_INDETERMINATE": {RuleReplay, "after it was shown TURN_OUTCOME_INDETERMINATE to its client, was told SESSION_BUSY", func(in *sessionInput) {
			in.Streams = []*Stream{stream("submit", 0, 0, "eof", snapshot(1, 100, statusStreaming, "", ""), diagnostic(0, 3000, codeIndeterminate, false))}
			in.Reads = nil
			in.Replays = []*Replay{{Turn: "a", Start: at(3100), End: at(3110), Status: 409, ErrCode: codeSessionBusy, Retryable: true}}
		}, func(in *sessionInput) { in.Replays[0].ErrCode, in.Replays[0].Retryable = codeIndeterminate, false }},
		"replay at quiescence told TURN_OUTCOME_INDETERMINATE": {"I7", "at quiescence a replay of a saved turn (complete) answered 409 TURN_OUTCOME_INDETERMINATE", func(in *sessionInput) {
			in.Replays = []*Replay{{Turn: "a", Start: at(3000), End: at(7000), Status: 409, ErrCode: codeIndeterminate, Final: true}}
			in.Leases["a"] = append(in.Leases["a"], leaseMark{Applied: at(3400), Expiry: at(5000), Maybe: true}) // a renewal's: not its claim
		}, func(in *sessionInput) {
			// Its own claim went unanswered: the store could not tell.
			in.Leases["a"] = append(in.Leases["a"], leaseMark{Applied: at(3300), Expiry: at(5300), Maybe: true, Claim: true})
		}},
		"retryable acknowledgment spends the id": {RuleAck, "yet its id is spent", func(in *sessionInput) {
			failed := &Stream{Kind: "submit", Proc: 0, Session: "s", Turn: "a", Start: at(-500), End: at(-400), Status: 500, ErrCode: codeServerInternal, Retryable: true, Ending: "status"}
			in.Streams = []*Stream{failed}
			in.Reads = nil
			in.Replays = []*Replay{{Turn: "a", Start: at(-300), End: at(-290), Status: 409, ErrCode: codeAlreadyCompleted}}
			in.Final = final(turn("a", statusError, codeServerInternal, messages("", statusError), 0))
		}, func(in *sessionInput) {
			in.Replays = nil
			in.Final = final()
		}},
		"retryable 500, a later submit told TURN_OUTCOME_INDETERMINATE": {RuleAck, "yet its id is spent", func(in *sessionInput) {
			failed := &Stream{Kind: "submit", Proc: 0, Session: "s", Turn: "a", Start: at(-900), End: at(-800), Status: 500, ErrCode: codeServerInternal, Retryable: true, Ending: "status"}
			later := &Stream{Kind: "submit", Proc: 0, Session: "s", Turn: "a", Start: at(-700), End: at(-600), Status: 409, ErrCode: codeIndeterminate, Ending: "status"}
			in.Streams = []*Stream{failed, later}
			in.Reads = nil
			in.Leases["a"] = []leaseMark{{Applied: at(-880), Expiry: at(1100)}}
			in.Final = final(turn("a", statusError, codeTurnLost, messages("", statusError), 0))
		}, func(in *sessionInput) {
			// The later submit's own claim applied (its withdrawal then
			// unconfirmed): that submit spent the id, and was told so.
			in.Leases["a"] = append(in.Leases["a"], leaseMark{Applied: at(-680), Expiry: at(1300)})
		}},
		"retryable 500, a later submit's claim unanswered, told TURN_OUTCOME_INDETERMINATE": {RuleAck, "yet its id is spent", func(in *sessionInput) {
			failed := &Stream{Kind: "submit", Proc: 0, Session: "s", Turn: "a", Start: at(-900), End: at(-800), Status: 500, ErrCode: codeServerInternal, Retryable: true, Ending: "status"}
			later := &Stream{Kind: "submit", Proc: 0, Session: "s", Turn: "a", Start: at(-700), End: at(1800), Status: 409, ErrCode: codeIndeterminate, Ending: "status"}
			in.Streams = []*Stream{failed, later}
			in.Reads = nil
			in.Leases["a"] = []leaseMark{{Applied: at(-880), Expiry: at(1100)}, {Applied: at(-500), Expiry: at(1500), Maybe: true}}
			in.Final = final()
			in.Replays = []*Replay{{Turn: "a", Start: at(3000), End: at(3010), Status: 409, ErrCode: codeIndeterminate}}
		}, func(in *sessionInput) {
			// The later submit's claim reached DynamoDB and its answer
			// was lost below the store (fate seed 22 schedule 6, short
			// lease, under two CPU hogs): it may have claimed the id, and
			// its own answer says the outcome is unknown. A renewal's
			// unanswered write (above) is not a claim.
			in.Leases["a"] = append(in.Leases["a"], leaseMark{Applied: at(-650), Expiry: at(1300), Maybe: true, Claim: true})
		}},
		"retryable 500 after an earlier claim that went unanswered": {RuleAck, "yet its id is spent", func(in *sessionInput) {
			failed := &Stream{Kind: "submit", Proc: 0, Session: "s", Turn: "a", Start: at(-700), End: at(-600), Status: 500, ErrCode: codeServerInternal, Retryable: true, Ending: "status"}
			in.Streams = []*Stream{failed}
			in.Reads = nil
			in.Replays = []*Replay{{Turn: "a", Start: at(3000), End: at(3010), Status: 409, ErrCode: codeIndeterminate}}
			in.Final = final()
		}, func(in *sessionInput) {
			// An earlier submit's claim reached DynamoDB unanswered and its
			// process was killed (fate seed 22 schedule 1, beside a delete
			// schedule's kill, under two CPU hogs): it may have spent the id.
			killed := &Stream{Kind: "submit", Proc: 0, Session: "s", Turn: "a", Start: at(-900), End: at(-850), Ending: "failed"}
			in.Streams = append([]*Stream{killed}, in.Streams...)
			in.Leases["a"] = []leaseMark{{Applied: at(-880), Expiry: at(1100), Maybe: true, Claim: true}}
		}},
		"retryable 500, a later submit's process killed": {RuleAck, "yet its id is spent", func(in *sessionInput) {
			failed := &Stream{Kind: "submit", Proc: 0, Session: "s", Turn: "a", Start: at(-900), End: at(-800), Status: 500, ErrCode: codeServerInternal, Retryable: true, Ending: "status"}
			killed := &Stream{Kind: "submit", Proc: 0, Session: "s", Turn: "a", Start: at(-700), End: at(-600), Ending: "failed"}
			in.Streams = []*Stream{failed, killed}
			in.Reads = nil
			in.Leases["a"] = []leaseMark{{Applied: at(-880), Expiry: at(1100)}}
			in.Replays = []*Replay{{Turn: "a", Start: at(3000), End: at(3010), Status: 409, ErrCode: codeIndeterminate}}
			in.Final = final()
		}, func(in *sessionInput) {
			// The killed submit's claim applied: a claim that dies before
			// its acknowledgment leaves the id taken, and the retry the 500
			// promised did claim it (fate seed 1 schedule 482, short lease).
			in.Leases["a"] = append(in.Leases["a"], leaseMark{Applied: at(-680), Expiry: at(1300)})
		}},
		"retryable 500 after an earlier claim was killed": {RuleAck, "yet its id is spent", func(in *sessionInput) {
			failed := &Stream{Kind: "submit", Proc: 0, Session: "s", Turn: "a", Start: at(-700), End: at(-600), Status: 500, ErrCode: codeServerInternal, Retryable: true, Ending: "status"}
			in.Streams = []*Stream{failed}
			in.Reads = nil
			in.Replays = []*Replay{{Turn: "a", Start: at(3000), End: at(3010), Status: 409, ErrCode: codeIndeterminate}}
			in.Final = final()
		}, func(in *sessionInput) {
			// An earlier submit claimed the id and its process was killed
			// before the acknowledgment: the id was spent before the 500
			// (fate seed 1 schedule 67, default lease).
			killed := &Stream{Kind: "submit", Proc: 0, Session: "s", Turn: "a", Start: at(-900), End: at(-850), Ending: "failed"}
			in.Streams = append([]*Stream{killed}, in.Streams...)
			in.Leases["a"] = []leaseMark{{Applied: at(-880), Expiry: at(1100)}}
		}},
		"deleted, then in the final history": {RuleDeleteGone, "the final history holds it", func(in *sessionInput) {
			in.Deletes = []*Delete{{Start: at(700), End: at(720), Status: 204}}
		}, func(in *sessionInput) {
			in.Final = finalState{} // every final read answered 404
		}},
		"deleted, then a read shows the session": {RuleDeleteGone, "did not answer 404", func(in *sessionInput) {
			in.Deletes = []*Delete{{Start: at(700), End: at(720), Status: 204}}
			in.Final = finalState{}
			in.Reads = append(in.Reads, sessionsRead(800, 810, "", 0, 0))
		}, func(in *sessionInput) {
			in.Reads[len(in.Reads)-1].Status, in.Reads[len(in.Reads)-1].ErrCode = 404, "SESSION_NOT_FOUND"
		}},
		"deleted, then a read shows a session a slow claim made": {RuleDeleteGone, "did not answer 404", func(in *sessionInput) {
			in.Deletes = []*Delete{{Start: at(700), End: at(720), Status: 204}}
			in.Final = finalState{}
			b := &Stream{Kind: "submit", Proc: 1, Session: "s", Turn: "b", Start: at(690), End: at(900), Status: 409, ErrCode: codeIndeterminate, Ending: "status"}
			in.Streams = append(in.Streams, b)
			in.Reads = append(in.Reads, sessionsRead(950, 960, "", 0, 0))
		}, func(in *sessionInput) {
			// b's claim, sent before the delete, applied after it (a slow
			// attempt on a loaded machine: fate seed 22 schedule 67): b
			// started a new session.
			in.Leases["b"] = []leaseMark{{Applied: at(850), Expiry: at(800), Claim: true}}
		}},
		"deleted, then a /turns read lists it": {RuleDeleteGone, "lists it", func(in *sessionInput) {
			in.Deletes = []*Delete{{Start: at(700), End: at(720), Status: 204}}
			in.Final = finalState{}
			in.Reads = append(in.Reads, turnsRead(800, 810, turn("a", statusComplete, "", messages("Echo: the question", statusComplete), 0)))
		}, func(in *sessionInput) {
			// A replay of the id after the delete ran it in a new session.
			in.Replays = []*Replay{{Turn: "a", Start: at(730), End: at(790), Status: 200}}
		}},
		"deleted under a running turn": {RuleDeleteRunning, "emitted after a delete of its session was answered", func(in *sessionInput) {
			in.Deletes = []*Delete{{Start: at(150), End: at(250), Status: 204}}
			in.Final = finalState{}
		}, func(in *sessionInput) {
			in.Deletes[0].Status, in.Deletes[0].ErrCode, in.Deletes[0].Retryable = 409, codeSessionBusy, true
			in.Final = final(turn("a", statusComplete, "", messages("Echo: the question", statusComplete), 0))
		}},
		"renewed after a pause, then lost": {RulePause, "yet it gave up", func(in *sessionInput) {
			in.Plan = &Plan{Kind: KindNearLease}
			in.Streams = []*Stream{stream("submit", 0, 0, "eof", snapshot(1, 100, statusStreaming, "", ""), diagnostic(1000002, 2000, codeTurnLost, false))}
			in.Reads = nil
			in.Events = []procEvent{{At: at(150), Slot: 0, What: "pause"}, {At: at(1800), Slot: 0, What: "cont"}}
			in.Leases["a"] = []leaseMark{{Applied: at(90), Expiry: at(2090)}, {Applied: at(1850), Expiry: at(3850)}}
			in.Final = final(turn("a", statusError, codeTurnLost, messages("", statusError), 0))
		}, func(in *sessionInput) {
			in.Leases["a"] = in.Leases["a"][:1] // the renewal did not apply: giving up is right
		}},
		"renewed after a pause, then lost with no renewal unanswered": {RulePause, "yet it gave up", func(in *sessionInput) {
			in.Plan = &Plan{Kind: KindNearLease}
			in.Streams = []*Stream{stream("submit", 0, 0, "eof", snapshot(1, 100, statusStreaming, "", ""), diagnostic(0, 5000, codeIndeterminate, false))}
			in.Reads = nil
			in.Events = []procEvent{{At: at(150), Slot: 0, What: "pause"}, {At: at(1800), Slot: 0, What: "cont"}}
			in.Leases["a"] = []leaseMark{{Applied: at(90), Expiry: at(2090)}, {Applied: at(1850), Expiry: at(3850)}, {Applied: at(2500), Expiry: at(4500)}}
			in.Final = final(turn("a", statusError, codeTurnLost, messages("", statusError), 0))
		}, func(in *sessionInput) {
			// Its renewals after the proven one reached DynamoDB unanswered
			// (a DynamoDB too slow to answer within the attempt time): those,
			// not the pause, left the lease unproven.
			in.Leases["a"][2].Maybe = true
			in.Leases["a"] = append(in.Leases["a"], leaseMark{Applied: at(3000), Expiry: at(4500), Maybe: true})
		}},
		"lost after a pause with time left, no renewal": {RuleRenewLate, "renewed none of it and was lost", func(in *sessionInput) {
			in.Plan = &Plan{Kind: KindNearLease}
			in.Streams = []*Stream{stream("submit", 0, 0, "eof", snapshot(1, 100, statusStreaming, "", ""), diagnostic(1000002, 5000, codeTurnLost, false))}
			in.Reads = nil
			in.Events = []procEvent{{At: at(150), Slot: 0, What: "pause"}, {At: at(1000), Slot: 0, What: "cont"}}
			in.Leases["a"] = []leaseMark{{Applied: at(90), Expiry: at(3090)}}
			in.Final = final(turn("a", statusError, codeTurnLost, messages("", statusError), 0))
		}, func(in *sessionInput) {
			in.Events[1].At = at(2900) // continued with less than two attempt timeouts left
		}},
	} {
		t.Run(name, func(t *testing.T) {
			in := clean()
			tc.breakIt(in)
			found := false
			for _, v := range checkSession(in) {
				found = found || v.Rule == tc.rule && strings.Contains(v.What, tc.what)
			}
			if !found {
				t.Errorf("no %s violation %q among:", tc.rule, tc.what)
				for _, v := range checkSession(in) {
					t.Logf("%s", v)
				}
			}
			if tc.fixIt == nil {
				return
			}
			// Afresh: checkSession may trim what it was given (a delete's
			// later reads).
			in = clean()
			tc.breakIt(in)
			tc.fixIt(in)
			for _, v := range checkSession(in) {
				if v.Rule == tc.rule {
					t.Errorf("the session within the rule: %s", v)
				}
			}
		})
	}
}

// TestCheckDeletedSessionIsClean: a session deleted after its turn ended,
// every read after the delete answered 404 and no final history, breaks
// no rule: the turn is gone by design.
func TestCheckDeletedSessionIsClean(t *testing.T) {
	in := clean()
	in.Deletes = []*Delete{{Start: at(640), End: at(650), Status: 409, ErrCode: codeSessionBusy, Retryable: true}, {Start: at(700), End: at(720), Status: 204}}
	in.Final = finalState{}
	in.Reads = append(in.Reads, &Read{Route: "turns", Status: 404, ErrCode: "SESSION_NOT_FOUND", Start: at(800), End: at(805)})
	for _, v := range checkSession(in) {
		t.Errorf("%s", v)
	}
}

// TestCheckMaybeDeletedSession: a delete whose answer was lost, and a
// final state with no session, exempts the session's turns from the
// history checks: the delete applied.
func TestCheckMaybeDeletedSession(t *testing.T) {
	in := clean()
	in.Deletes = []*Delete{{Start: at(700), End: at(720), Status: 0, ErrCode: "error: EOF"}}
	in.Final = finalState{}
	for _, v := range checkSession(in) {
		t.Errorf("%s", v)
	}
	in.Deletes = nil // no delete: a session gone is a failed read
	found := false
	for _, v := range checkSession(in) {
		found = found || v.Invariant == "I3"
	}
	if !found {
		t.Error("a session missing at quiescence with no delete sent is no I3 violation")
	}
}

// TestCheckRollbackSupersedes: the turn a rollback stopped is gone from
// history by design, which no rule holds against it.
func TestCheckRollbackSupersedes(t *testing.T) {
	in := clean()
	rb := &Stream{Kind: "submit", Proc: 1, Session: "s", Turn: "r", After: -1, Start: at(300), End: at(900), Status: 200, Ending: "eof", Multitask: "rollback",
		Lines: []Line{snapshot(1000001, 600, statusStreaming, "", ""), snapshot(1000002, 900, statusComplete, "", "Echo: r")}}
	for i := range rb.Lines {
		rb.Lines[i].TurnID = "r"
	}
	in.Streams = []*Stream{stream("submit", 0, 0, "eof", snapshot(1, 100, statusStreaming, "", ""), snapshot(2, 500, statusError, codeInterrupted, "Echo: the")), rb}
	in.Inputs["r"] = question
	in.Reads = []*Read{turnsRead(1000, 1010, turn("r", statusComplete, "", rb.Lines[1].Messages, 0))}
	in.Final = final(turn("r", statusComplete, "", rb.Lines[1].Messages, 0))
	in.Leases["r"] = []leaseMark{{Applied: at(550), Expiry: at(2550)}}
	for _, v := range checkSession(in) {
		t.Errorf("%s", v)
	}
	// A rollback sent before a's first submit, still in flight while a
	// ran, may have read the session then and stopped a: exempt too.
	rb.Start = at(-50)
	for _, v := range checkSession(in) {
		if v.Rule == RuleKept {
			t.Errorf("a rollback in flight while a ran: %s", v)
		}
	}
	// One that ended before a's first submit could not have stopped it.
	rb.End = at(-10)
	found := false
	for _, v := range checkSession(in) {
		found = found || v.Rule == RuleKept
	}
	if !found {
		t.Errorf("a rollback that ended before a started: no %s violation", RuleKept)
	}
	rb.Start, rb.End = at(300), at(900)
	// Without the rollback, a is a turn that disappeared.
	rb.Multitask = ""
	found = false
	for _, v := range checkSession(in) {
		found = found || v.Rule == RuleKept
	}
	if !found {
		t.Errorf("a turn shown interrupted and gone from history with no rollback: no %s violation", RuleKept)
	}
}

// TestPlanKinds: each kind is drawn at each lease, and a plan limited to
// one kind is of that kind, with the steps its rule needs.
func TestPlanKinds(t *testing.T) {
	for _, timings := range []Timings{DefaultTimings, ProductTimings} {
		seen := map[string]int{}
		for i := range 2000 {
			p := newPlan(1, i, planEnv{procs: 3, quota: []int{3, 4}, quotaN: 5, t: timings}, "s")
			seen[p.Kind]++
		}
		for i, k := range Kinds {
			if seen[k] == 0 && KindWeights[timings.Name][i] > 0 {
				t.Errorf("%s lease: no %s schedule among 2000 (%v)", timings.Name, k, seen)
			}
			if seen[k] > 0 && KindWeights[timings.Name][i] == 0 {
				t.Errorf("%s lease: %d %s schedules among 2000, a kind of weight 0", timings.Name, seen[k], k)
			}
		}
		needs := map[string]string{KindClassic: "submit", KindRace: "submit", KindQuota: "quota", KindStopFault: "stop",
			KindLateSave: "replay", KindAck: "fault", KindNearLease: "hook", KindDelete: "delete", KindAttach: "upload", KindBranch: "submit"}
		for _, k := range Kinds {
			p := newPlan(1, 7, planEnv{procs: 3, quota: []int{3, 4}, quotaN: 5, t: timings, kinds: []string{k}}, "s")
			has := false
			for _, st := range p.Steps {
				has = has || st.Do == needs[k]
			}
			if p.Kind != k || !has {
				t.Errorf("%s lease, kind %s: drew %s without a %s step:\n%s", timings.Name, k, p.Kind, needs[k], p)
			}
		}
	}
}

// TestClassifyRenewalExpiry: a renewal's turn id and requested expiry are
// read from its request, for the renewals that get no answer.
func TestClassifyRenewalExpiry(t *testing.T) {
	a := classify("DynamoDB_20120810.UpdateItem", "renew", []byte(`{"Key":{"pk":{"S":"SESSION#s1"},"sk":{"S":"SESSION"}},"ConditionExpression":"#leaseToken = :token AND #leaseTurnId = :turnId AND #leaseExpiresAt > :now AND #leaseExpiresAt <= :expires","ExpressionAttributeValues":{":turnId":{"S":"a"},":expires":{"N":"1764750000123"},":token":{"S":"x"},":now":{"N":"1"}}}`))
	if a.Kind != kindRenew || a.LeaseTurn != "a" || a.Expires != 1764750000123 {
		t.Errorf("classified %+v, want a renewal of a until 1764750000123", a)
	}
}

// TestClassifyClaimLease: a claim's turn id and lease expiry are read
// from the expression builder's placeholders, for the claims that get no
// answer; a name set from another attribute or inside a function is not
// taken for them.
func TestClassifyClaimLease(t *testing.T) {
	body := `{"Key":{"pk":{"S":"SESSION#s1"},"sk":{"S":"SESSION"}},` +
		`"UpdateExpression":"REMOVE #0\nSET #1 = :0, #2 = if_not_exists(#2, :1) + :2, #10 = :9, #11 = :10\n",` +
		`"ExpressionAttributeNames":{"#0":"x","#1":"leaseTurnId","#2":"revision","#10":"ownerKey","#11":"leaseExpiresAt"},` +
		`"ExpressionAttributeValues":{":0":{"S":"a"},":1":{"N":"0"},":2":{"N":"1"},":9":{"S":"o"},":10":{"N":"1764750000123"}}}`
	for _, purpose := range []string{"claim", "takeover-record"} {
		a := classify("DynamoDB_20120810.UpdateItem", purpose, []byte(body))
		if a.Kind != kindClaim || a.LeaseTurn != "a" || a.Expires != 1764750000123 {
			t.Errorf("%s classified %+v, want a claim of a until 1764750000123", purpose, a)
		}
	}
	a := classify("DynamoDB_20120810.UpdateItem", "claim", []byte(strings.Replace(body, `"#1":"leaseTurnId"`, `"#1":"title"`, 1)))
	if a.LeaseTurn != "" {
		t.Errorf("a claim that sets no lease turn classified %+v", a)
	}
}

// TestCheckDeleteAcrossAPause: a process paused across the delete of its
// session ends its turn's stream, after the delete's answer, with
// TURN_OUTCOME_INDETERMINATE at sequence 0, which carries no state of the
// turn: no violation. A snapshot there would be one.
func TestCheckDeleteAcrossAPause(t *testing.T) {
	input := func(last Line) *sessionInput {
		in := clean()
		in.Streams = []*Stream{stream("submit", 0, 0, "eof", snapshot(1, 100, statusStreaming, "", "Echo:"), last)}
		in.Events = []procEvent{{At: at(120), Slot: 0, What: "pause"}, {At: at(2300), Slot: 0, What: "cont"}}
		in.Deletes = []*Delete{{Start: at(2150), End: at(2200), Status: 204}}
		in.Reads = nil
		in.Final = finalState{}
		return in
	}
	for _, v := range checkSession(input(diagnostic(0, 2400, codeIndeterminate, false))) {
		t.Errorf("%s", v)
	}
	found := false
	for _, v := range checkSession(input(snapshot(2, 2400, statusStreaming, "", "Echo: the"))) {
		found = found || strings.Contains(v.String(), "emitted after a delete of its session was answered")
	}
	if !found {
		t.Errorf("a snapshot after the delete's answer is not reported")
	}
}
