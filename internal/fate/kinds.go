package fate

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/turnstream/turnstream/internal/ddbfault"
)

// The kinds of schedule. A classic schedule is the harness's first mix
// (pauses, kills and faults at random on one or two turns, resumers,
// stops, reads); each other kind aims at one promise that a classic
// schedule reaches rarely or never (docs/durable-turns.md, multitask.md,
// quotas.md).
const (
	KindClassic = "classic"
	// KindRace races a rollback or an interrupt (X-Turnstream-Multitask)
	// against a plain submit or a second rollback or interrupt while a
	// turn runs: no turn shown terminal may disappear but the one the
	// rollback stopped.
	KindRace = "race"
	// KindQuota bursts 3-6 times turnsPerMinute concurrent submits of one
	// principal on as many new sessions, across the quota processes: at
	// most turnsPerMinute are admitted.
	KindQuota = "quota"
	// KindStopFault stops a turn (a client that sends the stop again
	// after a retryable answer) while its checkpoint writes fail: the
	// stop's answers are honest and it takes effect within its bound.
	KindStopFault = "stopfault"
	// KindLateSave makes the final save apply seconds late (past 3/4 of
	// the cleanup reserve, so its turn answers
	// TURN_OUTCOME_INDETERMINATE) while the turn id is replayed and
	// /turns read: once any route shows the turn terminal, no replay is
	// told SESSION_BUSY or anything retryable.
	KindLateSave = "latesave"
	// KindAck fails the acknowledgment (the first checkpoint's write) for
	// 0.6-2 s; the client submits again after a retryable answer: a
	// retryable answer leaves the id unspent.
	KindAck = "ack"
	// KindNearLease pauses the turn's process for 0.8-0.95 of the lease,
	// right after its claim or right after a renewal: once a renewal of
	// it applied and was answered after the pause, it is not lost.
	KindNearLease = "nearlease"
	// KindDelete deletes the session (DELETE /sessions/{id}, sent again
	// after each SESSION_BUSY) while its turn runs or after, its process
	// killed mid-turn in a third of the schedules (the delete then
	// decides the crashed turn), a second turn racing the delete in half:
	// no turn streams after its session was deleted, and nothing of a
	// deleted turn shows again.
	KindDelete = "delete"
	// KindAttach sends two turns that share one of their attachments,
	// racing or one after the other, while the writes that record an
	// attachment's use fail: at most one of them uses it, a turn refused
	// for it shows nowhere, and the one accepted records every file it
	// named (RuleAttachOnce).
	KindAttach = "attach"
	// KindBranch regenerates the session's first turn once it answered
	// (its process killed right after the claim in a third of the
	// schedules, so that the decision of its lease must bring the first
	// version back), then, in half the schedules, selects the first
	// version again (sent again after each SESSION_BUSY) while a plain
	// turn races it in half of those, and forks the session in a
	// quarter: every turn stays readable by id, one version of the
	// first answer is on the active branch and no two, and a select
	// answered 204 keeps its version there (RuleVersions).
	KindBranch = "branch"
)

// Kinds are the schedule kinds, in the order of KindWeights' columns.
var Kinds = []string{KindClassic, KindRace, KindQuota, KindStopFault, KindLateSave, KindAck, KindNearLease, KindDelete, KindAttach, KindBranch}

// KindWeights are the weights a schedule's kind is drawn with, per lease
// (percent, in the order of Kinds). The short lease keeps a majority of
// classic schedules (leases expire within seconds there, so kills and
// pauses are cheap); the default lease draws mostly what a 30 s lease
// changes (a stop, a save, an acknowledgment seen by a turn whose lease
// is far from expiry; pauses just under it), since every lease that
// expires there costs 30 s of a schedule's time. A kind of weight 0 is
// drawn only when Config.Kinds names it (branch, until the weights are
// drawn again with it: the schedules TestFate picks by index keep their
// kinds meanwhile).
var KindWeights = map[string][]int{
	LeaseShort:   {45, 13, 4, 8, 7, 8, 6, 6, 3, 0},
	LeaseDefault: {17, 15, 4, 18, 15, 16, 5, 6, 4, 0},
}

// pauseSlot is a plan's placeholder for the pause slot its schedule holds
// while it runs (a nearlease schedule's turn).
const pauseSlot = -1

// kindSalt seeds the generator of a schedule's kind apart from its plan.
const kindSalt = 0x6b696e64

// drawKind draws one kind with the weights of lease, among only when
// it is not empty.
func drawKind(rng *rand.Rand, lease string, only []string) string {
	w := KindWeights[lease]
	if w == nil {
		w = KindWeights[LeaseShort]
	}
	drawn := func(i int, k string) bool {
		if len(only) == 0 {
			return w[i] > 0
		}
		return slices.Contains(only, k)
	}
	total := 0
	for i, k := range Kinds {
		if drawn(i, k) {
			total += max(w[i], 1)
		}
	}
	x := rng.IntN(total)
	for i, k := range Kinds {
		if !drawn(i, k) {
			continue
		}
		if x -= max(w[i], 1); x < 0 {
			return k
		}
	}
	return KindClassic
}

// draw is one plan's generator and its helpers.
type draw struct {
	rng    *rand.Rand
	procs  int
	quota  []int
	quotaN int
	t      Timings
	p      *Plan
}

func (d *draw) between(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(d.rng.Int64N(int64(hi-lo)))
}

func (d *draw) chance(x float64) bool { return d.rng.Float64() < x }
func (d *draw) other(not int) int     { return (not + 1 + d.rng.IntN(d.procs-1)) % d.procs }
func (d *draw) anyProc() int          { return d.rng.IntN(d.procs) }
func (d *draw) add(s Step)            { d.p.Steps = append(d.p.Steps, s) }

// turn sets a turn's input to last lo..hi of the echo model's streaming
// and returns how long it streams.
func (d *draw) turn(id string, lo, hi time.Duration) time.Duration {
	rps := d.t.runesPerSecond()
	n := int(lo.Seconds()*rps) + d.rng.IntN(int((hi-lo).Seconds()*rps)+1)
	n = max(n, len(d.p.Session)+len(id)+4)
	d.p.Runes[id] = n
	return time.Duration(float64(n) / rps * float64(time.Second))
}

// reads adds n history reads of random routes between from and to.
func (d *draw) reads(n int, from, to time.Duration, routes ...string) {
	if len(routes) == 0 {
		routes = []string{"sessions", "turns", "messages"}
	}
	for range n {
		d.add(Step{At: d.between(from, to), Do: "read", Route: routes[d.rng.IntN(len(routes))], Proc: d.anyProc()})
	}
}

// plan draws the steps of a schedule of kind.
func (d *draw) plan(kind string) {
	switch kind {
	case KindRace:
		d.race()
	case KindQuota:
		d.quotaBurst()
	case KindStopFault:
		d.stopFault()
	case KindLateSave:
		d.lateSave()
	case KindAck:
		d.ack()
	case KindNearLease:
		d.nearLease()
	case KindDelete:
		d.deleteSession()
	case KindAttach:
		d.attach()
	case KindBranch:
		d.branch()
	default:
		panic(fmt.Sprintf("fate: no plan for kind %q", kind))
	}
}

func (d *draw) multitask() string {
	if d.chance(0.7) {
		return "rollback"
	}
	return "interrupt"
}

// race: turn a streams 3-5 s; 1 s in or later, r (rollback or interrupt)
// stops it, and a plain submit p (another tab: it retries while the
// session is busy) or a second rollback or interrupt r2 races r for the
// session. The racing turns are short (0.3-0.9 s), so that one can
// start and end within r's wait for the stopped turn; the racer sends
// its submit again 50 ms after each SESSION_BUSY (as r's wait tries its
// claim every 50 ms), so that either may claim first.
func (d *draw) race() {
	ms := time.Millisecond
	durA := d.turn("a", 3*time.Second, 5*time.Second)
	procA := d.anyProc()
	d.add(Step{Do: "submit", Turn: "a", Proc: procA})
	rAt := d.between(time.Second, durA-500*ms)
	procR := d.anyProc()
	d.turn("r", 300*ms, 900*ms)
	d.add(Step{At: rAt, Do: "submit", Turn: "r", Proc: procR, Multitask: d.multitask()})
	racer := "p"
	if d.chance(0.6) {
		d.turn("p", 300*ms, 900*ms)
		d.add(Step{At: max(0, rAt+d.between(-100*ms, 400*ms)), Do: "submit", Turn: "p", Proc: d.other(procR), Every: 50 * ms})
	} else {
		racer = "r2"
		d.turn("r2", 300*ms, 900*ms)
		d.add(Step{At: rAt + d.between(0, 300*ms), Do: "submit", Turn: "r2", Proc: d.other(procR), Multitask: d.multitask(), Every: 50 * ms})
	}
	d.reads(3+d.rng.IntN(3), rAt, rAt+5*time.Second, "turns", "messages", "turns", "sessions")
	if d.chance(0.5) {
		d.add(Step{At: rAt + d.between(500*ms, 3*time.Second), Do: "resume", Turn: racer, Proc: d.anyProc(), AfterMode: "none"})
	}
	if d.chance(0.3) {
		d.add(Step{At: rAt + d.between(3*time.Second, 6*time.Second), Do: "replay", Turn: racer, Proc: d.anyProc()})
	}
}

// quotaBurst: one principal of its own submits 3-6 times the quota on as
// many new sessions at once, alternating between two quota processes;
// half the schedules send a second, smaller burst 1-4 s later (within
// the same minute).
func (d *draw) quotaBurst() {
	d.p.Principal = fmt.Sprintf("q%d-%d", d.p.Seed, d.p.Index)
	q := d.quotaN
	d.turn("q", 200*time.Millisecond, 500*time.Millisecond)
	p1, p2 := d.quota[0], d.quota[len(d.quota)-1]
	if d.chance(0.5) {
		p1, p2 = p2, p1
	}
	n := 3*q + d.rng.IntN(3*q+1)
	d.add(Step{Do: "quota", N: n, Proc: p1, Proc2: p2})
	if d.chance(0.5) {
		d.add(Step{At: d.between(time.Second, 4*time.Second), Do: "quota", N: max(2, n/2), Proc: p2, Proc2: p1})
	}
}

// stopFault: turn a streams 7-10 s; 1-2 s in, its checkpoint writes fail
// for 1-4 s (all of them, the deltas only, the live item's only, or the
// deltas and every write of the live item, a stop's flag included, as a
// throttled item would); a stop is sent while they fail, and (two
// clients in three) again after each retryable answer.
func (d *draw) stopFault() {
	ms := time.Millisecond
	durA := d.turn("a", 7*time.Second, 10*time.Second)
	procA := d.anyProc()
	d.add(Step{Do: "submit", Turn: "a", Proc: procA})
	at, span := d.between(time.Second, 2*time.Second), d.between(time.Second, 4*time.Second)
	fault := checkpointFaults[d.rng.IntN(len(checkpointFaults))]
	switch d.rng.IntN(5) {
	case 0, 1: // the delta writes and every write of the live item (a hot item: the stop's flag too)
		d.add(Step{At: at, Do: "fault", Kind: kindDelta, Fault: fault, For: span})
		d.add(Step{At: at, Do: "fault", Kind: kindLiveItem, Fault: fault, For: span})
	default: // every checkpoint write, the deltas only, or the live item's checkpoints only
		kind := []string{kindCheckpoint, kindDelta, kindLive}[d.rng.IntN(3)]
		d.add(Step{At: at, Do: "fault", Kind: kind, Fault: fault, For: span})
	}
	// Most clients send the stop again after a retryable answer; a third
	// give up after the first (the turn then runs on unless that stop
	// took effect: the stop bound tells).
	d.add(Step{At: at + d.between(200*ms, span-200*ms), Do: "stop", Turn: "a", Proc: d.anyProc(), Retry: d.chance(0.67), For: 5 * time.Second})
	if d.chance(0.5) {
		d.add(Step{At: at, Do: "watch", For: span + 2*time.Second})
	}
	d.reads(2+d.rng.IntN(3), 0, durA+2*time.Second)
}

// lateSave: turn a streams 2-4 s; each attempt of its final save within
// the cleanup reserve applies 1-4 s past 3/4 of the cleanup reserve after
// it was sent (the turn has given up on it by then: its client gets
// TURN_OUTCOME_INDETERMINATE, and its lease is left to expire); from the
// turn's end until 4 s after the first save landed, its id is replayed
// every 0.7 s and /turns read every second.
func (d *draw) lateSave() {
	durA := d.turn("a", 2*time.Second, 4*time.Second)
	procA := d.anyProc()
	d.add(Step{Do: "submit", Turn: "a", Proc: procA})
	late := d.t.CleanupReserve*3/4 + d.between(time.Second, 4*time.Second)
	// Every save attempt within the cleanup reserve is held and lands
	// late, so that the turn cannot confirm its save in time.
	d.add(Step{At: durA / 2, Do: "fault", Kind: kindSave, Fault: ddbfault.ApplyLate, Late: late,
		For: d.t.CleanupReserve + time.Second, OnFirst: true})
	span := late + 4*time.Second
	d.add(Step{At: durA, Do: "replay", Turn: "a", Proc: d.anyProc(), N: int(span / (700 * time.Millisecond)), For: span})
	for k := time.Duration(0); k < span; k += time.Second {
		d.add(Step{At: durA + k, Do: "read", Route: "turns", Proc: d.anyProc()})
	}
}

// ack: turn a's acknowledgment writes fail (500 before or after they
// apply, answers lost, hung) for 0.6-2 s from its submit; the client
// submits again after each retryable answer. Half the schedules submit a
// second turn b afterwards.
func (d *draw) ack() {
	ms := time.Millisecond
	durA := d.turn("a", 2*time.Second, 4*time.Second)
	procA := d.anyProc()
	faults := []ddbfault.Fault{ddbfault.ServerErrorBefore, ddbfault.ServerErrorAfter, ddbfault.LoseAnswer, ddbfault.Hang}
	d.add(Step{Do: "fault", Kind: kindAck, Fault: faults[d.rng.IntN(len(faults))], For: d.between(600*ms, 2*time.Second)})
	d.add(Step{Do: "submit", Turn: "a", Proc: procA})
	if d.chance(0.5) {
		d.turn("b", time.Second, 2*time.Second)
		d.add(Step{At: durA + d.between(time.Second, 3*time.Second), Do: "submit", Turn: "b", Proc: d.other(procA)})
	}
	d.reads(2+d.rng.IntN(3), 0, durA+3*time.Second)
	if d.chance(0.5) {
		d.add(Step{At: durA + 4*time.Second, Do: "replay", Turn: "a", Proc: d.anyProc()})
	}
}

// nearLease: turn a's process is paused for 0.8-0.95 of the lease right
// after its claim (before its first checkpoint) or right after its first
// renewal; the turn streams 3-5 s past the pause.
func (d *draw) nearLease() {
	l := d.t.Lease
	pause := time.Duration(float64(l) * (0.8 + 0.15*d.rng.Float64()))
	kind, before := kindClaim, time.Duration(0)
	if d.chance(0.5) {
		kind, before = kindRenew, l/3+time.Second
	}
	d.turn("a", before+pause+3*time.Second, before+pause+5*time.Second)
	procA := pauseSlot
	d.add(Step{Do: "submit", Turn: "a", Proc: procA})
	d.add(Step{Do: "hook", Kind: kind, Phase: "after", Action: "pause", For: pause})
	d.reads(2+d.rng.IntN(3), 0, before+pause+5*time.Second)
	if d.chance(0.5) {
		d.add(Step{At: before + pause + d.between(0, 2*time.Second), Do: "resume", Turn: "a", Proc: d.other(procA), AfterMode: "live"})
	}
}

// branch: turn a streams 0.6-1.5 s; b regenerates a once a's submit
// returned, on another process, killed right before b's acknowledgment
// in half the schedules (restarted 0.2-1 s later: b's supersession then
// stands until the decision of its lease, a lease later, brings a back);
// in 40% the first supersession or select writes meet a fault window
// (answer lost, 500 after or before applying, hung) of 0.3-1.5 s; two
// thirds select a once b's submit returned, sent again every 300 ms after
// SESSION_BUSY for up to the lease plus 4 s, and half of those race it
// with a plain turn c; a quarter fork the session at a.
func (d *draw) branch() {
	ms := time.Millisecond
	durA := d.turn("a", 600*ms, 1500*ms)
	procA := d.anyProc()
	d.add(Step{Do: "submit", Turn: "a", Proc: procA})
	d.p.Runes["b"] = d.p.Runes["a"] // a regeneration repeats its parent's input
	procB := d.other(procA)
	d.add(Step{Do: "submit", Turn: "b", Proc: procB, Lineage: "regenerate", Parent: "a", Waits: "a"})
	if d.chance(0.5) {
		// b's claim and supersession come after a's end; a's claim came
		// before: the hook meets b's acknowledgment.
		d.add(Step{At: durA, Do: "hook", Kind: kindAck, Phase: "before", Action: "kill", For: d.between(200*ms, time.Second)})
	}
	if d.chance(0.4) {
		// The supersession's or the select's writes, from the first of
		// them on.
		faults := []ddbfault.Fault{ddbfault.LoseAnswer, ddbfault.ServerErrorAfter, ddbfault.ServerErrorBefore, ddbfault.Hang}
		d.add(Step{At: durA, Do: "fault", Kind: kindBranch, Fault: faults[d.rng.IntN(len(faults))], For: d.between(300*ms, 1500*ms), OnFirst: true})
	}
	if d.chance(0.67) {
		d.add(Step{Do: "select", Turn: "a", Proc: d.anyProc(), Retry: true, For: d.t.Lease + 4*time.Second, Waits: "b"})
		if d.chance(0.5) {
			d.turn("c", 300*ms, 900*ms)
			d.add(Step{Do: "submit", Turn: "c", Proc: d.anyProc(), Waits: "b"})
		}
	}
	if d.chance(0.25) {
		d.add(Step{Do: "fork", Turn: "a", Proc: d.anyProc(), Waits: "a"})
	}
	d.reads(3+d.rng.IntN(3), 0, 4*time.Second, "turns", "messages", "sessions")
}

// deleteSession: turn a streams 1.5-3 s; a third of the schedules kill
// its process mid-turn (restarted 0.2-2 s later), so that the delete
// meets an expired lease and decides the crashed turn; a client deletes
// the session from 0.3 s to 1 s past a's end, sending it again every
// 300 ms after SESSION_BUSY (or a retryable answer) for up to the lease
// plus 4 s; half the schedules submit a second turn b within 0.3 s of
// the delete (it may claim before the mark, be refused while the
// session is marked, or start a new session after it is gone).
func (d *draw) deleteSession() {
	ms := time.Millisecond
	durA := d.turn("a", 1500*ms, 3*time.Second)
	procA := d.anyProc()
	d.add(Step{Do: "submit", Turn: "a", Proc: procA})
	if d.chance(0.33) {
		d.add(Step{At: d.between(300*ms, durA-200*ms), Do: "kill", Proc: procA, For: d.between(200*ms, 2*time.Second)})
	}
	at := d.between(300*ms, durA+time.Second)
	procD := d.other(procA)
	d.add(Step{At: at, Do: "delete", Proc: procD, Retry: true, For: d.t.Lease + 4*time.Second})
	if d.chance(0.5) {
		d.turn("b", 300*ms, 900*ms)
		d.add(Step{At: max(0, at+d.between(-300*ms, 300*ms)), Do: "submit", Turn: "b", Proc: d.anyProc()})
	}
	d.reads(2+d.rng.IntN(3), 0, durA+2*time.Second)
}
