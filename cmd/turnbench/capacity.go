package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

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

// capAccount is what the measured turn cost.
type capAccount struct {
	Requests int
	Ops      map[string]int     // requests by operation
	WCU      map[string]int     // write units by item kind (capacityKinds) and index name
	RCU      map[string]float64 // read units by operation
	// ReportedWCU is the base table's write units as the server reported
	// them (dynalite: ceil(max(old, new) / 1 KB), as computed here).
	ReportedWCU float64
	// SessionBytes and TurnBytes are the largest session and turn item
	// sizes a write of the turn left or found.
	SessionBytes, TurnBytes int
	// CheckpointWrites counts the writes of checkpoint items (live and
	// delta items, and the first checkpoint's running turn item).
	CheckpointWrites int
}

// Item kinds of capAccount.WCU.
const (
	capSessionItem = "session item"
	capTurnItem    = "turn item"
	capCheckpoint  = "checkpoint items"
)

func newCapAccount() *capAccount {
	return &capAccount{Ops: map[string]int{}, WCU: map[string]int{}, RCU: map[string]float64{}}
}

// writeUnits is the turn's billed write units, all kinds and indexes.
func (a *capAccount) writeUnits() int {
	n := 0
	for _, u := range a.WCU {
		n += u
	}
	return n
}

// readUnits is the turn's billed read units.
func (a *capAccount) readUnits() float64 {
	n := 0.0
	for _, u := range a.RCU {
		n += u
	}
	return n
}

// lsiLayout is one local secondary index as the table defines it.
type lsiLayout struct {
	Name, SortKey string
	All           bool
	Include       map[string]bool
}

// tableIndexes returns the local secondary indexes of dynamo's table
// layout.
func tableIndexes() []lsiLayout {
	var out []lsiLayout
	for _, ix := range dynamo.CreateTableInput("layout").LocalSecondaryIndexes {
		l := lsiLayout{Name: aws.ToString(ix.IndexName), Include: map[string]bool{}}
		for _, k := range ix.KeySchema {
			if k.KeyType == types.KeyTypeRange {
				l.SortKey = aws.ToString(k.AttributeName)
			}
		}
		if p := ix.Projection; p != nil {
			l.All = p.ProjectionType == types.ProjectionTypeAll
			for _, a := range p.NonKeyAttributes {
				l.Include[a] = true
			}
		}
		out = append(out, l)
	}
	return out
}

// projects reports whether the index entry carries attribute name.
func (l lsiLayout) projects(name string) bool {
	return l.All || l.Include[name] || name == dynamo.AttrPK || name == dynamo.AttrSK || name == l.SortKey
}

// entrySize is the size of item's entry in the index (0 when the item
// lacks the index's sort key, so is not in it).
func (l lsiLayout) entrySize(item map[string]types.AttributeValue) int {
	if strAttr(item, l.SortKey) == "" {
		return 0
	}
	n := 100
	for name, v := range item {
		if l.projects(name) {
			n += len(name) + avSize(v)
		}
	}
	return n
}

// writeUnits is the index's write units of a write turning before into
// after (nil: absent).
func (l lsiLayout) writeUnits(before, after map[string]types.AttributeValue) int {
	old, nw := l.entrySize(before), l.entrySize(after)
	switch {
	case old > 0 && nw > 0 && strAttr(before, l.SortKey) == strAttr(after, l.SortKey):
		return kbUnits(nw)
	default:
		u := 0
		if old > 0 {
			u += kbUnits(old)
		}
		if nw > 0 {
			u += kbUnits(nw)
		}
		return u
	}
}

// readUnits4K is ceil(n / 4 KB), at least 1, halved unless consistent.
func readUnits4K(n int, consistent bool) float64 {
	u := max(1, math.Ceil(float64(n)/4096))
	if !consistent {
		u /= 2
	}
	return u
}

// capMeter is a dynamo.Client that accounts every request of the store
// into the current account (one measured turn at a time).
type capMeter struct {
	inner   dynamo.Client
	raw     dynamo.Client // uncounted: the size reads
	table   *string
	indexes []lsiLayout

	mu   sync.Mutex
	acct *capAccount
}

// take returns the account so far and starts a new one.
func (m *capMeter) take() *capAccount {
	m.mu.Lock()
	defer m.mu.Unlock()
	a := m.acct
	m.acct = newCapAccount()
	return a
}

func (m *capMeter) add(fn func(a *capAccount)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	fn(m.acct)
}

// get reads key consistently on the uncounted client (nil when absent or
// when the read fails).
func (m *capMeter) get(ctx context.Context, key map[string]types.AttributeValue) map[string]types.AttributeValue {
	out, err := m.raw.GetItem(context.WithoutCancel(ctx), &dynamodb.GetItemInput{TableName: m.table, Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil || len(out.Item) == 0 {
		return nil
	}
	return out.Item
}

// itemKind names the kind of the item with sort key sk.
func itemKind(sk string) string {
	switch {
	case sk == "SESSION":
		return capSessionItem
	case strings.Contains(sk, "#LIVE"):
		return capCheckpoint
	default:
		return capTurnItem // turn, fence and chunk items
	}
}

// write runs one write of key and accounts it.
func (m *capMeter) write(ctx context.Context, op string, key map[string]types.AttributeValue, do func() (*types.ConsumedCapacity, error)) error {
	before := m.get(ctx, key)
	cc, err := do()
	after := m.get(ctx, key)
	sk := strAttr(key, dynamo.AttrSK)
	failed := isConditionFailure(err)
	m.add(func(a *capAccount) {
		a.Requests++
		a.Ops[op]++
		kind := itemKind(sk)
		if _, live := after["live"]; live && kind == capTurnItem {
			kind = capCheckpoint // the first checkpoint's running turn item
		}
		size := max(itemSize(before), itemSize(after))
		switch kind {
		case capSessionItem:
			a.SessionBytes = max(a.SessionBytes, size)
		case capTurnItem:
			a.TurnBytes = max(a.TurnBytes, size)
		}
		switch {
		case err == nil:
			a.WCU[kind] += kbUnits(size)
			if kind == capCheckpoint {
				a.CheckpointWrites++
			}
			for _, l := range m.indexes {
				if u := l.writeUnits(before, after); u > 0 && kind == capCheckpoint {
					a.WCU[capCheckpoint] += u
				} else if u > 0 {
					a.WCU["index "+l.Name] += u
				}
			}
			if cc != nil && cc.CapacityUnits != nil {
				a.ReportedWCU += *cc.CapacityUnits
			}
		case failed:
			a.WCU[kind] += kbUnits(itemSize(before))
		}
	})
	return err
}

// isConditionFailure reports whether err is a failed condition.
func isConditionFailure(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}

func (m *capMeter) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	out, err := m.inner.GetItem(ctx, in, optFns...)
	full := m.get(ctx, in.Key) // the size billed: the whole item, whatever was projected
	m.add(func(a *capAccount) {
		a.Requests++
		a.Ops["GetItem"]++
		if err == nil {
			a.RCU["GetItem"] += readUnits4K(itemSize(full), aws.ToBool(in.ConsistentRead))
		}
	})
	return out, err
}

// placeholder matches the name and value placeholders of an expression.
var placeholder = regexp.MustCompile(`[#:][A-Za-z0-9_]+`)

func (m *capMeter) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	out, err := m.inner.Query(ctx, in, optFns...)
	units := 0.0
	if err == nil {
		units = m.queryUnits(ctx, in)
	}
	m.add(func(a *capAccount) {
		a.Requests++
		a.Ops["Query"]++
		a.RCU["Query"] += units
	})
	return out, err
}

// queryUnits is the read units of a Query: the same key condition, start
// key and limit sent again on the uncounted client without a filter or a
// projection, so that it returns every item the Query evaluated, whole.
func (m *capMeter) queryUnits(ctx context.Context, in *dynamodb.QueryInput) float64 {
	used := map[string]bool{}
	for _, p := range placeholder.FindAllString(aws.ToString(in.KeyConditionExpression), -1) {
		used[p] = true
	}
	again := &dynamodb.QueryInput{
		TableName: in.TableName, IndexName: in.IndexName, KeyConditionExpression: in.KeyConditionExpression,
		ExclusiveStartKey: in.ExclusiveStartKey, Limit: in.Limit, ScanIndexForward: in.ScanIndexForward,
		ConsistentRead: aws.Bool(true), ExpressionAttributeNames: map[string]string{},
		ExpressionAttributeValues: map[string]types.AttributeValue{},
	}
	for k, v := range in.ExpressionAttributeNames {
		if used[k] {
			again.ExpressionAttributeNames[k] = v
		}
	}
	for k, v := range in.ExpressionAttributeValues {
		if used[k] {
			again.ExpressionAttributeValues[k] = v
		}
	}
	var ix *lsiLayout
	for i := range m.indexes {
		if m.indexes[i].Name == aws.ToString(in.IndexName) {
			ix = &m.indexes[i]
		}
	}
	if ix != nil {
		again.Select = types.SelectAllAttributes // whole base items, for their sizes
	}
	out, err := m.raw.Query(context.WithoutCancel(ctx), again)
	if err != nil {
		return 0
	}
	consistent := aws.ToBool(in.ConsistentRead)
	if ix == nil {
		n := 0
		for _, item := range out.Items {
			n += itemSize(item)
		}
		return readUnits4K(n, consistent)
	}
	entries, fetched := 0, 0
	fetch := m.fetches(*ix, in)
	for _, item := range out.Items {
		entries += ix.entrySize(item)
		if fetch {
			fetched += itemSize(item)
		}
	}
	units := readUnits4K(entries, consistent)
	if fetch && fetched > 0 {
		units += readUnits4K(fetched, consistent)
	}
	return units
}

// fetches reports whether a Query of index ix reads attributes the index
// does not project, which DynamoDB then fetches from the base table.
func (m *capMeter) fetches(ix lsiLayout, in *dynamodb.QueryInput) bool {
	if ix.All {
		return false
	}
	if in.Select == types.SelectAllAttributes {
		return true
	}
	for _, p := range placeholder.FindAllString(aws.ToString(in.ProjectionExpression), -1) {
		if name, ok := in.ExpressionAttributeNames[p]; ok && !ix.projects(name) {
			return true
		}
	}
	return false
}

func (m *capMeter) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c := *in
	c.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	key := map[string]types.AttributeValue{dynamo.AttrPK: in.Item[dynamo.AttrPK], dynamo.AttrSK: in.Item[dynamo.AttrSK]}
	var out *dynamodb.PutItemOutput
	err := m.write(ctx, "PutItem", key, func() (cc *types.ConsumedCapacity, err error) {
		if out, err = m.inner.PutItem(ctx, &c, optFns...); err == nil {
			cc = out.ConsumedCapacity
		}
		return cc, err
	})
	return out, err
}

func (m *capMeter) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c := *in
	c.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	var out *dynamodb.UpdateItemOutput
	err := m.write(ctx, "UpdateItem", in.Key, func() (cc *types.ConsumedCapacity, err error) {
		if out, err = m.inner.UpdateItem(ctx, &c, optFns...); err == nil {
			cc = out.ConsumedCapacity
		}
		return cc, err
	})
	return out, err
}

func (m *capMeter) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	c := *in
	c.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	var out *dynamodb.DeleteItemOutput
	err := m.write(ctx, "DeleteItem", in.Key, func() (cc *types.ConsumedCapacity, err error) {
		if out, err = m.inner.DeleteItem(ctx, &c, optFns...); err == nil {
			cc = out.ConsumedCapacity
		}
		return cc, err
	})
	return out, err
}

// capacityResult is one measured turn.
type capacityResult struct {
	Step capacityStep
	Acct *capAccount
	Took time.Duration
}

// capacitySection runs the measured turns of one session (ids shaped like
// UUIDs, as clients send), seeding the turns between them through the
// store's own claim, save and release outside the meter.
func capacitySection(ctx context.Context, client, raw dynamo.Client, table string, cursorKey []byte, quick bool, progress func(string, ...any)) ([]*capacityResult, error) {
	m := &capMeter{inner: client, raw: raw, table: aws.String(table), indexes: tableIndexes(), acct: newCapAccount()}
	metered := dynamo.New(m, dynamo.Options{Table: table, CursorKey: cursorKey})
	plain := dynamo.New(client, dynamo.Options{Table: table, CursorKey: cursorKey})
	wirings := map[bool]*wiring{}
	for _, cp := range []bool{false, true} {
		every := time.Duration(0)
		if cp {
			every = checkEvery
		}
		w, err := capacityWiring(metered, every)
		if err != nil {
			return nil, err
		}
		defer w.close()
		wirings[cp] = w
	}
	hc := newHTTPClient(1, nil)
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
		m.take()
		req, err := submitRequest(w.base, sid, uuidLike(), ask(capacityAnswer), false)
		if err != nil {
			return nil, err
		}
		log := follow(ctx, hc, req, false, false, nil)
		if last := log.last(); log.Err != nil || last == nil || last.Status != protocol.StatusComplete {
			return nil, fmt.Errorf("capacity turn %d: %v, last line %+v", st.Ordinal, log.Err, last)
		}
		w.waitIdle(30 * time.Second) // the release follows the terminal line
		out = append(out, &capacityResult{Step: st, Acct: m.take(), Took: time.Since(log.Sent)})
		next = st.Ordinal + 1
	}
	return out, nil
}

// capacityWiring is the turn handler on store with the capacity
// definition, the durable sections' echo pace and checkpoints every
// `every` (0: off).
func capacityWiring(store chat.Store, every time.Duration) (*wiring, error) {
	defs, err := definition.New([]definition.Definition{{
		ID: "assistant", Revision: 1, Provider: "echo",
		Limits: definition.Limits{MaxSteps: 1, ContextTurns: capacityContextTurns},
	}}, "assistant", nil)
	if err != nil {
		return nil, err
	}
	return newTurnWiring(store, func(o *turn.Options) {
		o.Definitions = defs
		o.Models = map[string]model.Model{"echo": longAnswer{echo.New(echoDelay, echoChunk)}}
		o.TurnTimeout = longTurn
		o.CheckpointInterval = every
	})
}

// seedCapacity appends n completed turns of priorTurnText (about 1.2 KB of
// messages each) to the session, with UUID-shaped turn ids.
func seedCapacity(ctx context.Context, store chat.Store, sessionID string, n int) error {
	for range n {
		id := uuidLike()
		c, err := store.ClaimTurn(ctx, chat.ClaimRequest{
			SessionID: sessionID, TurnID: id, Principal: benchPrincipal, InputHash: chat.HashInput(priorTurnText),
			Lineage: protocol.Lineage{Operation: protocol.OperationSubmit}, DefinitionID: "assistant",
			DefinitionRevision: 1, LeaseDuration: time.Minute,
		})
		if err != nil {
			return fmt.Errorf("seed %s: %w", sessionID, err)
		}
		if err := store.SaveTurn(ctx, c, seedTurn(sessionID, id, c.Lease.Ordinal, c.BaseSequence)); err != nil {
			return fmt.Errorf("seed %s: %w", sessionID, err)
		}
		if err := store.ReleaseTurn(ctx, chat.ReleaseRequest{Claim: c, Outcome: chat.OutcomeCompleted, Sequence: c.BaseSequence + 1}); err != nil {
			return fmt.Errorf("seed %s: %w", sessionID, err)
		}
	}
	return nil
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
	first, atBudget := res[0].Acct, (*capAccount)(nil)
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
		writes := a.writeUnits() - a.WCU[capCheckpoint]
		base := fmt.Sprintf("goal <= 8 WCU; turn 1: %d WCU, %d requests", first.writeUnits(), first.Requests)
		vs := fmt.Sprintf("%d/8 WCU without checkpoints, %.2fx turn 1", writes, float64(writes)/float64(first.writeUnits()))
		if atBudget != nil && r.Step.Ordinal > capacityContextTurns {
			base += fmt.Sprintf("; turn %d: %.1f RCU, %d requests", capacityContextTurns+1, atBudget.readUnits(), atBudget.Requests)
			vs += fmt.Sprintf("; RCU %.2fx, requests %+d vs turn %d", a.readUnits()/atBudget.readUnits(), a.Requests-atBudget.Requests, capacityContextTurns+1)
		}
		rows = append(rows, [4]string{
			fmt.Sprintf("capacity of turn %d of one session (%d-byte answer at %.0f chars/s, %s, context budget %d turns)", r.Step.Ordinal, capacityAnswer, textRate, mode, capacityContextTurns),
			fmt.Sprintf("%d WCU (%s; server-reported base %.0f), %.1f RCU (Query %.1f, GetItem %.1f), %d requests (%s); session item up to %d B, turn item %d B",
				a.writeUnits(), strings.Join(kinds, ", "), a.ReportedWCU, a.readUnits(), a.RCU["Query"], a.RCU["GetItem"], a.Requests, strings.Join(ops, ", "), a.SessionBytes, a.TurnBytes),
			base, vs,
		})
	}
	return rows
}

// runCapacity is run with -capacity: the capacity section alone, in its
// own table.
func runCapacity(ctx context.Context, rep *report, client, raw dynamo.Client, table string, cursorKey []byte, progress func(string, ...any), stdout io.Writer) (*report, error) {
	res, err := capacitySection(ctx, client, raw, table, cursorKey, rep.Quick, progress)
	if err != nil {
		return nil, err
	}
	rep.Load = &loadReport{} // not run: nothing to verify
	progress("done")
	ew := &errWriter{w: stdout}
	ew.printf("| figure | measured | baseline (same run) | measured vs baseline |\n| --- | --- | --- | --- |\n")
	for _, r := range capacityRows(res) {
		ew.printf("| %s | %s | %s | %s |\n", cell(r[0]), cell(r[1]), cell(r[2]), cell(r[3]))
	}
	return rep, ew.err
}
