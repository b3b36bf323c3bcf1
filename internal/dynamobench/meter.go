package dynamobench

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

// Meter is the one meter of the benchmarks and checks: a dynamo.Client
// between a Store and its SDK client that bills every call of the store
// as AWS bills it, into the account of the call's session and into a
// running total (Take). It asks the server for ReturnConsumedCapacity
// TOTAL on every write (the base table's units, which is all dynalite
// reports) and, given an uncounted client for size reads (raw), computes
// the rest from item sizes:
//
//   - a write costs ceil(max(old, new) / 1 KB), from a consistent read of
//     the item before and after it on raw; a write that failed its
//     condition costs the old item's units;
//   - each local secondary index whose key the item holds before or
//     after costs ceil(entry / 1 KB) per entry written (one when the key
//     is kept, one when it appears or disappears, two when it changes:
//     the old entry deleted, the new one put); an entry is the attributes
//     the index projects, keys included, plus AWS's 100 bytes (IndexLayout);
//   - a read costs ceil(size / 4 KB), at least 1, halved unless
//     consistent; a Query sums the items it evaluated (it is sent again
//     on raw without a filter or projection to see them whole), and a
//     Query of an index that fetches unprojected attributes adds the base
//     items' units.
//
// Each write's units are also kept under the store's label of it
// (dynamo.PurposeOf): where each unit goes. Without raw the meter adds no
// reads and counts requests, operations and the server's base-table
// units only: the durable section's latency figures use it so.
//
// It also notes, per session, when each write of the turn's live item
// (a checkpoint, or a heartbeat) was answered and with which sequence:
// the moment a resumer can first see that checkpoint.
type Meter struct {
	inner   dynamo.Client
	raw     dynamo.Client // uncounted client for the size reads; nil: none
	indexes []IndexLayout

	mu       sync.Mutex
	total    *Account
	sessions map[string]*Account
	// noCapacity counts successful writes answered without
	// ConsumedCapacity (the server ignored the request for it).
	noCapacity atomic.Int64
}

// Account is what a session's calls, or all calls since a Take, cost.
type Account struct {
	Requests int            // DynamoDB API calls
	Ops      map[string]int // requests by operation
	Writes   int            // successful writes
	// WCU is the billed write units by item kind (SessionItem,
	// TurnItem, CheckpointItems, LedgerItem) and index ("index " + its
	// name), computed from sizes (zero without raw).
	WCU map[string]int
	// Purposes is the billed write units (table and indexes, computed)
	// by the store's label of each write (zero without raw).
	Purposes map[dynamo.Purpose]int
	// RCU is the billed read units by operation (zero without raw).
	RCU map[string]float64
	// TableUnits is the base table's write units as the server reported
	// them (dynalite: ceil(max(old, new) / 1 KB), as computed here).
	TableUnits float64
	// IndexUnits is the indexes' computed write units (zero without raw).
	IndexUnits int
	// SessionBytes, TurnBytes and LedgerBytes are the largest session,
	// turn and usage ledger item sizes a write left or found (zero
	// without raw).
	SessionBytes, TurnBytes, LedgerBytes int
	// CheckpointWrites counts the writes of checkpoint items (live and
	// delta items, and the first checkpoint's running turn item);
	// LiveWrites those of the live item alone: one per checkpoint or
	// heartbeat.
	CheckpointWrites, LiveWrites int
	// Renewals counts the lease renewals written: one per
	// LeaseDuration/3 a turn outlives, a cost of its duration.
	Renewals int
	// TurnItemBytes is the size of the turn item after its latest write:
	// the final save's once the turn has ended (zero without raw).
	TurnItemBytes int
	// FirstItemUnits is the write units (table and indexes) of the write
	// that created the turn item: the first checkpoint's, or the save's
	// when checkpoints are off (zero without raw).
	FirstItemUnits float64
	// Landed is when the first live-item write carrying each sequence was
	// answered.
	Landed map[int64]time.Time
}

// Item kinds of Account.WCU.
const (
	SessionItem     = "session item"
	TurnItem        = "turn item"
	CheckpointItems = "checkpoint items"
	// LedgerItem is a usage ledger item: a principal's month item or a
	// session's counted item.
	LedgerItem = "ledger item"
)

// NewAccount returns an empty account.
func NewAccount() *Account {
	return &Account{Ops: map[string]int{}, WCU: map[string]int{}, Purposes: map[dynamo.Purpose]int{},
		RCU: map[string]float64{}, Landed: map[int64]time.Time{}}
}

// WriteUnits is the account's billed write units, all kinds and indexes.
func (a *Account) WriteUnits() int {
	n := 0
	for _, u := range a.WCU {
		n += u
	}
	return n
}

// ReadUnits is the account's billed read units.
func (a *Account) ReadUnits() float64 {
	n := 0.0
	for _, u := range a.RCU {
		n += u
	}
	return n
}

// clone returns a deep copy of a.
func (a *Account) clone() Account {
	c := *a
	c.Ops, c.WCU, c.RCU = maps(a.Ops), maps(a.WCU), maps(a.RCU)
	c.Purposes, c.Landed = maps(a.Purposes), maps(a.Landed)
	return c
}

func maps[K comparable, V any](m map[K]V) map[K]V {
	c := make(map[K]V, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// NewMeter returns a Meter passing calls on to inner, for the table the
// store names in its calls; raw, when not nil, is a client outside the
// meter for the size reads (see Meter).
func NewMeter(inner, raw dynamo.Client) *Meter {
	return &Meter{inner: inner, raw: raw, indexes: TableIndexes(), total: NewAccount(), sessions: map[string]*Account{}}
}

// Session returns the account of sessionID's calls so far (a copy; zero
// when the meter saw none). The usage ledger's calls belong to no
// session: Take has them.
func (m *Meter) Session(sessionID string) Account {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessions[sessionID]
	if s == nil {
		return *NewAccount()
	}
	return s.clone()
}

// Take returns the account of every call since the last Take and starts
// a new one.
func (m *Meter) Take() *Account {
	m.mu.Lock()
	defer m.mu.Unlock()
	a := m.total
	m.total = NewAccount()
	return a
}

// NoCapacity counts the successful writes answered without
// ConsumedCapacity (the server ignored the request for it).
func (m *Meter) NoCapacity() int64 { return m.noCapacity.Load() }

// add applies fn to the total and to the account of pk's session.
func (m *Meter) add(pk string, fn func(a *Account)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	fn(m.total)
	if id, ok := dynamo.SessionIDOf(pk); ok {
		s := m.sessions[id]
		if s == nil {
			s = NewAccount()
			m.sessions[id] = s
		}
		fn(s)
	}
}

// itemKind names the kind of the item with sort key sk.
func itemKind(sk string) string {
	switch dynamo.ItemKindOf(sk) {
	case dynamo.ItemSession:
		return SessionItem
	case dynamo.ItemLive, dynamo.ItemDelta:
		return CheckpointItems
	case dynamo.ItemLedger:
		return LedgerItem
	default:
		return TurnItem // turn, fence and chunk items
	}
}

// get reads key consistently on the uncounted client (nil without raw,
// when absent or when the read fails: the account then undercounts,
// never fails the call).
func (m *Meter) get(ctx context.Context, table *string, key map[string]types.AttributeValue) map[string]types.AttributeValue {
	if m.raw == nil {
		return nil
	}
	out, err := m.raw.GetItem(context.WithoutCancel(ctx), &dynamodb.GetItemInput{TableName: table, Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil || len(out.Item) == 0 {
		return nil
	}
	return out.Item
}

// write runs one write of key and accounts it; do returns the capacity
// the server reported and the attributes it returned.
func (m *Meter) write(ctx context.Context, op string, table *string, key map[string]types.AttributeValue, do func() (*types.ConsumedCapacity, map[string]types.AttributeValue, error)) error {
	before := m.get(ctx, table, key)
	cc, attrs, err := do()
	answered := time.Now()
	var after map[string]types.AttributeValue
	if err == nil {
		after = m.get(ctx, table, key)
	}
	pk, sk := strAttr(key, dynamo.AttrPK), strAttr(key, dynamo.AttrSK)
	purpose := dynamo.PurposeOf(ctx)
	failed := isConditionFailure(err)
	kind := itemKind(sk)
	if _, live := after["live"]; live && kind == TurnItem {
		kind = CheckpointItems // the first checkpoint's running turn item
	}
	if err == nil && (cc == nil || cc.CapacityUnits == nil) {
		m.noCapacity.Add(1)
	}
	m.add(pk, func(a *Account) {
		a.Requests++
		a.Ops[op]++
		if m.raw != nil {
			size := max(itemSize(before), itemSize(after))
			switch kind {
			case SessionItem:
				a.SessionBytes = max(a.SessionBytes, size)
			case TurnItem:
				a.TurnBytes = max(a.TurnBytes, size)
			case LedgerItem:
				a.LedgerBytes = max(a.LedgerBytes, size)
			}
		}
		switch {
		case err == nil:
			a.Writes++
			if purpose == dynamo.PurposeRenew {
				a.Renewals++
			}
			if cc != nil && cc.CapacityUnits != nil {
				a.TableUnits += *cc.CapacityUnits
			}
			if kind == CheckpointItems {
				a.CheckpointWrites++
			}
			if dynamo.ItemKindOf(sk) == dynamo.ItemLive {
				a.LiveWrites++
				if n, ok := attrs["sequence"].(*types.AttributeValueMemberN); ok {
					if seq, perr := strconv.ParseInt(n.Value, 10, 64); perr == nil {
						if _, seen := a.Landed[seq]; !seen {
							a.Landed[seq] = answered
						}
					}
				}
			}
			if m.raw == nil {
				return
			}
			units := KBUnits(max(itemSize(before), itemSize(after)))
			a.WCU[kind] += units
			indexes := 0
			for _, l := range m.indexes {
				u := l.writeUnits(before, after)
				indexes += u
				if u > 0 && kind == CheckpointItems {
					a.WCU[CheckpointItems] += u
				} else if u > 0 {
					a.WCU["index "+l.Name] += u
				}
			}
			a.IndexUnits += indexes
			a.Purposes[purpose] += units + indexes
			if dynamo.ItemKindOf(sk) == dynamo.ItemTurn && after != nil {
				if before == nil && a.FirstItemUnits == 0 {
					a.FirstItemUnits = float64(units + indexes)
				}
				a.TurnItemBytes = itemSize(after)
			}
		case failed && m.raw != nil:
			units := KBUnits(itemSize(before))
			a.WCU[kind] += units
			a.Purposes[purpose] += units
		}
	})
	return err
}

// isConditionFailure reports whether err is a failed condition.
func isConditionFailure(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}

// GetItem implements dynamo.Client: one request, the whole item's read
// units (whatever was projected).
func (m *Meter) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	out, err := m.inner.GetItem(ctx, in, optFns...)
	var full map[string]types.AttributeValue
	if err == nil {
		full = m.get(ctx, in.TableName, in.Key)
	}
	m.add(strAttr(in.Key, dynamo.AttrPK), func(a *Account) {
		a.Requests++
		a.Ops["GetItem"]++
		if err == nil && m.raw != nil {
			a.RCU["GetItem"] += readUnits4K(itemSize(full), aws.ToBool(in.ConsistentRead))
		}
	})
	return out, err
}

// BatchGetItem implements dynamo.Client: one request (for the session of
// its first key), each item read billed as a GetItem of it.
func (m *Meter) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	out, err := m.inner.BatchGetItem(ctx, in, optFns...)
	units, pk := 0.0, ""
	for table, ka := range in.RequestItems {
		for _, key := range ka.Keys {
			if pk == "" {
				pk = strAttr(key, dynamo.AttrPK)
			}
			if err != nil {
				continue
			}
			if full := m.get(ctx, aws.String(table), key); full != nil {
				units += readUnits4K(itemSize(full), aws.ToBool(ka.ConsistentRead))
			}
		}
	}
	m.add(pk, func(a *Account) {
		a.Requests++
		a.Ops["BatchGetItem"]++
		if m.raw != nil {
			a.RCU["BatchGetItem"] += units
		}
	})
	return out, err
}

// placeholder matches the name and value placeholders of an expression.
var placeholder = regexp.MustCompile(`[#:][A-Za-z0-9_]+`)

// Query implements dynamo.Client: one request, the units of the items it
// evaluated (queryUnits).
func (m *Meter) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	out, err := m.inner.Query(ctx, in, optFns...)
	units := 0.0
	if err == nil && m.raw != nil {
		units = m.queryUnits(ctx, in)
	}
	m.add(sessionOfQuery(in), func(a *Account) {
		a.Requests++
		a.Ops["Query"]++
		if m.raw != nil {
			a.RCU["Query"] += units
		}
	})
	return out, err
}

// queryUnits is the read units of a Query: the same key condition, start
// key and limit sent again on the uncounted client without a filter or a
// projection, so that it returns every item the Query evaluated, whole.
func (m *Meter) queryUnits(ctx context.Context, in *dynamodb.QueryInput) float64 {
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
	var ix *IndexLayout
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
func (m *Meter) fetches(ix IndexLayout, in *dynamodb.QueryInput) bool {
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

// PutItem implements dynamo.Client, asking for the consumed capacity and
// accounting the write.
func (m *Meter) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c := *in
	c.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	key := map[string]types.AttributeValue{dynamo.AttrPK: in.Item[dynamo.AttrPK], dynamo.AttrSK: in.Item[dynamo.AttrSK]}
	var out *dynamodb.PutItemOutput
	err := m.write(ctx, "PutItem", in.TableName, key, func() (*types.ConsumedCapacity, map[string]types.AttributeValue, error) {
		var err error
		if out, err = m.inner.PutItem(ctx, &c, optFns...); err != nil {
			return nil, nil, err
		}
		return out.ConsumedCapacity, out.Attributes, nil
	})
	return out, err
}

// UpdateItem implements dynamo.Client, asking for the consumed capacity
// and accounting the write.
func (m *Meter) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c := *in
	c.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	var out *dynamodb.UpdateItemOutput
	err := m.write(ctx, "UpdateItem", in.TableName, in.Key, func() (*types.ConsumedCapacity, map[string]types.AttributeValue, error) {
		var err error
		if out, err = m.inner.UpdateItem(ctx, &c, optFns...); err != nil {
			return nil, nil, err
		}
		return out.ConsumedCapacity, out.Attributes, nil
	})
	return out, err
}

// DeleteItem implements dynamo.Client, asking for the consumed capacity
// and accounting the write.
func (m *Meter) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	c := *in
	c.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	var out *dynamodb.DeleteItemOutput
	err := m.write(ctx, "DeleteItem", in.TableName, in.Key, func() (*types.ConsumedCapacity, map[string]types.AttributeValue, error) {
		var err error
		if out, err = m.inner.DeleteItem(ctx, &c, optFns...); err != nil {
			return nil, nil, err
		}
		return out.ConsumedCapacity, out.Attributes, nil
	})
	return out, err
}

var _ dynamo.Client = (*Meter)(nil)

// MedianAccount returns the account of as with the median write units
// (the upper one of an even count); as must not be empty.
func MedianAccount(as []*Account) *Account {
	s := slices.Clone(as)
	slices.SortFunc(s, func(a, b *Account) int { return a.WriteUnits() - b.WriteUnits() })
	return s[len(s)/2]
}
