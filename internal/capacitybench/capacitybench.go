// Package capacitybench measures, for turnbench's capacity section
// (-only capacity, docs/benchmarks.md), what one ~1 KB turn costs in
// DynamoDB capacity at growing depths of one session: requests, billed
// write units (base table and local secondary indexes) and billed read
// units, each turn served by the real turn handler on the DynamoDB store.
// dynalite reports the base table's write units only, so every figure
// here is computed from item sizes as AWS bills them, from a consistent
// read of each written item before and after its write on an uncounted
// client:
//
//   - a write costs ceil(max(old, new item size) / 1 KB) units (a failed
//     condition: the existing item's size, at least 1);
//   - per local secondary index, an index entry is the index's key
//     attributes (pk, sk, its sort key) and its projected attributes (all
//     of them for ALL) plus 100 bytes; a write costs ceil(entry / 1 KB)
//     for each entry it puts or deletes: one when the item is in the index
//     before and after with the same key (counted even when no projected
//     attribute changed: an upper bound), one when it enters or leaves it,
//     two when the key changes;
//   - a consistent read costs ceil(size / 4 KB), at least 1: a GetItem
//     the item's size, a Query the sum of the items it evaluated (index
//     entries for an index, plus the base items it fetches for attributes
//     the index does not project), half that for eventually consistent
//     reads.
//
// The index layouts are read from dynamo.CreateTableInput, so the same
// formulas price whichever layout the store defines.
package capacitybench

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/turnstream/turnstream/internal/benchwire"
	"github.com/turnstream/turnstream/internal/dynamobench"
	"github.com/turnstream/turnstream/internal/telemetrysetup"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/definition"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/model/echo"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
	"github.com/turnstream/turnstream/pkg/turn"
)

// Env is what Run measures on and with.
type Env struct {
	// Client is the store's DynamoDB client, Raw an unmetered one for
	// the meter's own size reads (dynamobench.NewMeter).
	Client, Raw dynamo.Client
	Table       string
	CursorKey   []byte
	// EchoDelay and EchoChunk are the echo model's pace, Checkpoint the
	// interval of the turns with checkpoints, TurnTimeout the handler's.
	EchoDelay, Checkpoint, TurnTimeout time.Duration
	EchoChunk                          int
	// Quick measures turns up to 31 instead of 1002.
	Quick    bool
	Progress func(format string, a ...any)
}

// capacityDefinition is the definition the measured turns run: the echo
// model with a context budget of ContextTurns turns, so that the
// context load of every turn past that depth reads the same.
const ContextTurns = 10

// Answer is the measured turns' answer size in bytes.
const Answer = 1024

// Step is one measured turn: its ordinal in the session and
// whether its checkpoints are on (CHECKPOINT_INTERVAL 1 s).
type Step struct {
	Ordinal     int64
	Checkpoints bool
}

// Steps are the measured turns of a full and a quick run; the
// turns between them are seeded through the store.
func steps(quick bool) []Step {
	if quick {
		return []Step{{1, false}, {2, true}, {11, false}, {30, false}, {31, true}}
	}
	return []Step{{1, false}, {2, true}, {11, false}, {100, false}, {101, true}, {1000, false}, {1001, false}, {1002, true}}
}

// Result is one measured turn.
type Result struct {
	Step Step
	Acct *dynamobench.Account
	Took time.Duration
}

// Run runs the measured turns of one session (ids shaped like
// UUIDs, as clients send), seeding the turns between them through the
// store's own claim, save and release outside the meter.
func Run(ctx context.Context, e Env) ([]*Result, error) {
	client, raw, table, cursorKey, progress := e.Client, e.Raw, e.Table, e.CursorKey, e.Progress
	m := dynamobench.NewMeter(client, raw)
	metered := dynamo.New(m, dynamo.Options{Table: table, CursorKey: cursorKey})
	plain := dynamo.New(client, dynamo.Options{Table: table, CursorKey: cursorKey})
	wirings, closeAll, err := wiringsOf(e, metered, nil)
	if err != nil {
		return nil, err
	}
	defer closeAll()
	hc := benchwire.NewHTTPClient(1, nil)
	defer hc.CloseIdleConnections()
	sid := benchwire.NewID()
	var out []*Result
	next := int64(1)
	for _, st := range steps(e.Quick) {
		if n := int(st.Ordinal - next); n > 0 {
			progress("capacity: seeding turns %d..%d", next, st.Ordinal-1)
			if err := seed(ctx, plain, sid, n); err != nil {
				return nil, err
			}
		}
		w := wirings[st.Checkpoints]
		m.Take()
		log := benchwire.Follow(benchwire.Submitting(ctx, w.Client(hc), sid, benchwire.NewID(), benchwire.Ask(Answer), false), false, false, nil)
		if last := log.Last(); log.Err != nil || last == nil || last.Status != protocol.StatusComplete {
			return nil, fmt.Errorf("capacity turn %d: %v, last line %+v", st.Ordinal, log.Err, last)
		}
		w.WaitIdle(30 * time.Second) // the release follows the terminal line
		out = append(out, &Result{Step: st, Acct: m.Take(), Took: time.Since(log.Sent)})
		next = st.Ordinal + 1
	}
	return out, nil
}

// wiringsOf returns the turn handler on store with the capacity
// definition, the durable sections' echo pace and tel's telemetry (nil:
// none), with checkpoints off (false) and every e.Checkpoint (true), and
// the function that closes both.
func wiringsOf(e Env, store chat.Store, tel *telemetrysetup.Set) (map[bool]*benchwire.Wiring, func(), error) {
	defs, err := definition.New([]definition.Definition{{
		ID: "assistant", Revision: 1, Provider: "echo",
		Limits: definition.Limits{MaxSteps: 1, ContextTurns: ContextTurns},
	}}, "assistant", nil)
	if err != nil {
		return nil, nil, err
	}
	wirings := map[bool]*benchwire.Wiring{}
	closeAll := func() {
		for _, w := range wirings {
			w.Close()
		}
	}
	for _, cp := range []bool{false, true} {
		every := time.Duration(0)
		if cp {
			every = e.Checkpoint
		}
		w, err := benchwire.NewTurnTelemetry(store, tel, func(o *turn.Options) {
			o.Definitions = defs
			o.Models = map[string]model.Model{"echo": benchwire.LongAnswer{Echo: echo.New(e.EchoDelay, e.EchoChunk)}}
			o.TurnTimeout = e.TurnTimeout
			o.CheckpointInterval = every
			// The turn with checkpoints is the default turn: the usage
			// ledger counts it too.
			o.Ledger = cp
		})
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		wirings[cp] = w
	}
	return wirings, closeAll, nil
}

// seed adds n completed turns of benchwire.PriorTurnText to the session,
// with UUID-shaped turn ids, as clients send (benchwire.SeedTurnsNamed).
func seed(ctx context.Context, store chat.Store, sessionID string, n int) error {
	return benchwire.SeedTurnsNamed(ctx, store, sessionID, n, func(int) string { return benchwire.NewID() })
}

// Rows renders the section (the echo pace of e): one row per measured turn beside
// turn 1 of the same run and the goal of 8 write units (writes), and
// beside turn 11, the first whose context load reads a whole budget
// (reads and requests).
func Rows(res []*Result, e Env) [][4]string {
	textRate := float64(e.EchoChunk) / e.EchoDelay.Seconds()
	var rows [][4]string
	if len(res) == 0 {
		return rows
	}
	first, atBudget := res[0].Acct, (*dynamobench.Account)(nil)
	for _, r := range res {
		if r.Step.Ordinal == ContextTurns+1 {
			atBudget = r.Acct
		}
	}
	for _, r := range res {
		a := r.Acct
		mode := "checkpoints off"
		if r.Step.Checkpoints {
			mode = fmt.Sprintf("the default turn: checkpoints every 1 s (%d checkpoint writes) and the usage ledger", a.CheckpointWrites)
		}
		kinds := []string{}
		for _, k := range slices.Sorted(maps.Keys(a.WCU)) {
			kinds = append(kinds, fmt.Sprintf("%s %d", k, a.WCU[k]))
		}
		purposes := []string{}
		for _, k := range slices.Sorted(maps.Keys(a.Purposes)) {
			purposes = append(purposes, fmt.Sprintf("%s %d", k, a.Purposes[k]))
		}
		ops := []string{}
		for _, k := range slices.Sorted(maps.Keys(a.Ops)) {
			ops = append(ops, fmt.Sprintf("%d %s", a.Ops[k], k))
		}
		writes := a.WriteUnits() - a.WCU[dynamobench.CheckpointItems]
		base := fmt.Sprintf("goal <= 8 WCU; turn 1: %d WCU, %d requests", first.WriteUnits(), first.Requests)
		vs := fmt.Sprintf("%d/8 WCU without checkpoints, %.2fx turn 1", writes, float64(writes)/float64(first.WriteUnits()))
		if r.Step.Checkpoints {
			vs = fmt.Sprintf("base table %.0f/8 WCU, the ledger's %d of them; %.2fx turn 1's WCU", a.TableUnits, a.WCU[dynamobench.LedgerItem], float64(a.WriteUnits())/float64(first.WriteUnits()))
		}
		if atBudget != nil && r.Step.Ordinal > ContextTurns {
			base += fmt.Sprintf("; turn %d: %.1f RCU, %d requests", ContextTurns+1, atBudget.ReadUnits(), atBudget.Requests)
			vs += fmt.Sprintf("; RCU %.2fx, requests %+d vs turn %d", a.ReadUnits()/atBudget.ReadUnits(), a.Requests-atBudget.Requests, ContextTurns+1)
		}
		rows = append(rows, [4]string{
			fmt.Sprintf("capacity of turn %d of one session (%d-byte answer at %.0f chars/s, %s, context budget %d turns)", r.Step.Ordinal, Answer, textRate, mode, ContextTurns),
			fmt.Sprintf("%d WCU (%s; by write: %s; server-reported base %.0f), %.1f RCU (Query %.1f, GetItem %.1f), %d requests (%s); session item up to %d B, turn item %d B",
				a.WriteUnits(), strings.Join(kinds, ", "), strings.Join(purposes, ", "), a.TableUnits, a.ReadUnits(), a.RCU["Query"], a.RCU["GetItem"], a.Requests, strings.Join(ops, ", "), a.SessionBytes, a.TurnBytes),
			base, vs,
		})
	}
	return rows
}
