package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/turnstream/turnstream/internal/benchwire"
	"github.com/turnstream/turnstream/internal/dynamobench"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/definition"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/model/echo"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
	"github.com/turnstream/turnstream/pkg/turn"
)

// The capacity section (-capacity) measures what one ~1 KB turn costs in
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

// capacityDefinition is the definition the measured turns run: the echo
// model with a context budget of capacityContextTurns turns, so that the
// context load of every turn past that depth reads the same.
const capacityContextTurns = 10

// capacityAnswer is the measured turns' answer size in bytes.
const capacityAnswer = 1024

// capacityStep is one measured turn: its ordinal in the session and
// whether its checkpoints are on (CHECKPOINT_INTERVAL 1 s).
type capacityStep struct {
	Ordinal     int64
	Checkpoints bool
}

// capacitySteps are the measured turns of a full and a quick run; the
// turns between them are seeded through the store.
func capacitySteps(quick bool) []capacityStep {
	if quick {
		return []capacityStep{{1, false}, {2, true}, {11, false}, {30, false}, {31, true}}
	}
	return []capacityStep{{1, false}, {2, true}, {11, false}, {100, false}, {101, true}, {1000, false}, {1001, false}, {1002, true}}
}

// capacityResult is one measured turn.
type capacityResult struct {
	Step capacityStep
	Acct *dynamobench.CapacityAccount
	Took time.Duration
}

// capacitySection runs the measured turns of one session (ids shaped like
// UUIDs, as clients send), seeding the turns between them through the
// store's own claim, save and release outside the meter.
func capacitySection(ctx context.Context, client, raw dynamo.Client, table string, cursorKey []byte, quick bool, progress func(string, ...any)) ([]*capacityResult, error) {
	m := dynamobench.NewCapacityMeter(client, raw, table)
	metered := dynamo.New(m, dynamo.Options{Table: table, CursorKey: cursorKey})
	plain := dynamo.New(client, dynamo.Options{Table: table, CursorKey: cursorKey})
	wirings := map[bool]*benchwire.Wiring{}
	for _, cp := range []bool{false, true} {
		every := time.Duration(0)
		if cp {
			every = checkEvery
		}
		w, err := capacityWiring(metered, every)
		if err != nil {
			return nil, err
		}
		defer w.Close()
		wirings[cp] = w
	}
	hc := benchwire.NewHTTPClient(1, nil)
	defer hc.CloseIdleConnections()
	sid := uuidLike()
	var out []*capacityResult
	next := int64(1)
	for _, st := range capacitySteps(quick) {
		if n := int(st.Ordinal - next); n > 0 {
			progress("capacity: seeding turns %d..%d", next, st.Ordinal-1)
			if err := seedCapacity(ctx, plain, sid, n); err != nil {
				return nil, err
			}
		}
		w := wirings[st.Checkpoints]
		m.Take()
		log := benchwire.Follow(benchwire.Submitting(ctx, w.Client(hc), sid, uuidLike(), benchwire.Ask(capacityAnswer), false), false, false, nil)
		if last := log.Last(); log.Err != nil || last == nil || last.Status != protocol.StatusComplete {
			return nil, fmt.Errorf("capacity turn %d: %v, last line %+v", st.Ordinal, log.Err, last)
		}
		w.WaitIdle(30 * time.Second) // the release follows the terminal line
		out = append(out, &capacityResult{Step: st, Acct: m.Take(), Took: time.Since(log.Sent)})
		next = st.Ordinal + 1
	}
	return out, nil
}

// capacityWiring is the turn handler on store with the capacity
// definition, the durable sections' echo pace and checkpoints every
// `every` (0: off).
func capacityWiring(store chat.Store, every time.Duration) (*benchwire.Wiring, error) {
	defs, err := definition.New([]definition.Definition{{
		ID: "assistant", Revision: 1, Provider: "echo",
		Limits: definition.Limits{MaxSteps: 1, ContextTurns: capacityContextTurns},
	}}, "assistant", nil)
	if err != nil {
		return nil, err
	}
	return benchwire.NewTurn(store, func(o *turn.Options) {
		o.Definitions = defs
		o.Models = map[string]model.Model{"echo": benchwire.LongAnswer{Echo: echo.New(echoDelay, echoChunk)}}
		o.TurnTimeout = longTurn
		o.CheckpointInterval = every
	})
}

// seedCapacity adds n completed turns of benchwire.PriorTurnText to the session,
// with UUID-shaped turn ids, as clients send (benchwire.SeedTurnsNamed).
func seedCapacity(ctx context.Context, store chat.Store, sessionID string, n int) error {
	return benchwire.SeedTurnsNamed(ctx, store, sessionID, n, func(int) string { return uuidLike() })
}

// uuidLike returns a random id shaped like a UUID (36 characters).
func uuidLike() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (Go 1.24+)
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// capacityRows renders the section: one row per measured turn beside
// turn 1 of the same run and the goal of 8 write units (writes), and
// beside turn 11, the first whose context load reads a whole budget
// (reads and requests).
func capacityRows(res []*capacityResult) [][4]string {
	var rows [][4]string
	if len(res) == 0 {
		return rows
	}
	first, atBudget := res[0].Acct, (*dynamobench.CapacityAccount)(nil)
	for _, r := range res {
		if r.Step.Ordinal == capacityContextTurns+1 {
			atBudget = r.Acct
		}
	}
	for _, r := range res {
		a := r.Acct
		mode := "checkpoints off"
		if r.Step.Checkpoints {
			mode = fmt.Sprintf("checkpoints every 1 s: %d checkpoint writes", a.CheckpointWrites)
		}
		kinds := []string{}
		for _, k := range slices.Sorted(maps.Keys(a.WCU)) {
			kinds = append(kinds, fmt.Sprintf("%s %d", k, a.WCU[k]))
		}
		ops := []string{}
		for _, k := range slices.Sorted(maps.Keys(a.Ops)) {
			ops = append(ops, fmt.Sprintf("%d %s", a.Ops[k], k))
		}
		writes := a.WriteUnits() - a.WCU[dynamobench.CapacityCheckpoint]
		base := fmt.Sprintf("goal <= 8 WCU; turn 1: %d WCU, %d requests", first.WriteUnits(), first.Requests)
		vs := fmt.Sprintf("%d/8 WCU without checkpoints, %.2fx turn 1", writes, float64(writes)/float64(first.WriteUnits()))
		if atBudget != nil && r.Step.Ordinal > capacityContextTurns {
			base += fmt.Sprintf("; turn %d: %.1f RCU, %d requests", capacityContextTurns+1, atBudget.ReadUnits(), atBudget.Requests)
			vs += fmt.Sprintf("; RCU %.2fx, requests %+d vs turn %d", a.ReadUnits()/atBudget.ReadUnits(), a.Requests-atBudget.Requests, capacityContextTurns+1)
		}
		rows = append(rows, [4]string{
			fmt.Sprintf("capacity of turn %d of one session (%d-byte answer at %.0f chars/s, %s, context budget %d turns)", r.Step.Ordinal, capacityAnswer, textRate, mode, capacityContextTurns),
			fmt.Sprintf("%d WCU (%s; server-reported base %.0f), %.1f RCU (Query %.1f, GetItem %.1f), %d requests (%s); session item up to %d B, turn item %d B",
				a.WriteUnits(), strings.Join(kinds, ", "), a.ReportedWCU, a.ReadUnits(), a.RCU["Query"], a.RCU["GetItem"], a.Requests, strings.Join(ops, ", "), a.SessionBytes, a.TurnBytes),
			base, vs,
		})
	}
	return rows
}

// capacityRun is the capacity section (-only capacity, -capacity).
func capacityRun(ctx context.Context, b *bench, rep *report, _ map[string]bool) error {
	raw, err := b.rawClient(ctx)
	if err != nil {
		return err
	}
	rep.Capacity, err = capacitySection(ctx, b.client, raw, b.table, b.cursorKey, rep.Quick, b.progress)
	return err
}
