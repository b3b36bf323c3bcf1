package dynamobench

import (
	"context"
	"errors"
	"math"
	"regexp"
	"slices"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

// CapacityAccount is what the measured turn cost.
type CapacityAccount struct {
	Requests int
	Ops      map[string]int     // requests by operation
	WCU      map[string]int     // write units by item kind (capacityKinds) and index name
	RCU      map[string]float64 // read units by operation
	// ReportedWCU is the base table's write units as the server reported
	// them (dynalite: ceil(max(old, new) / 1 KB), as computed here).
	ReportedWCU float64
	// SessionBytes, TurnBytes and LedgerBytes are the largest session,
	// turn and usage ledger item sizes a write of the turn left or found.
	SessionBytes, TurnBytes, LedgerBytes int
	// CheckpointWrites counts the writes of checkpoint items (live and
	// delta items, and the first checkpoint's running turn item).
	CheckpointWrites int
}

// Item kinds of CapacityAccount.WCU.
const (
	CapacitySessionItem = "session item"
	CapacityTurnItem    = "turn item"
	CapacityCheckpoint  = "checkpoint items"
	// CapacityLedgerItem is a principal's usage ledger item of a month.
	CapacityLedgerItem = "ledger item"
)

func NewCapacityAccount() *CapacityAccount {
	return &CapacityAccount{Ops: map[string]int{}, WCU: map[string]int{}, RCU: map[string]float64{}}
}

// WriteUnits is the turn's billed write units, all kinds and indexes.
func (a *CapacityAccount) WriteUnits() int {
	n := 0
	for _, u := range a.WCU {
		n += u
	}
	return n
}

// ReadUnits is the turn's billed read units.
func (a *CapacityAccount) ReadUnits() float64 {
	n := 0.0
	for _, u := range a.RCU {
		n += u
	}
	return n
}

// IndexLayout is one local secondary index as the table defines it.
type IndexLayout struct {
	Name, SortKey string
	All           bool
	Include       map[string]bool
}

// TableIndexes returns the local secondary indexes of dynamo's table
// layout.
func TableIndexes() []IndexLayout {
	var out []IndexLayout
	for _, ix := range dynamo.CreateTableInput("layout").LocalSecondaryIndexes {
		l := IndexLayout{Name: aws.ToString(ix.IndexName), Include: map[string]bool{}}
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
func (l IndexLayout) projects(name string) bool {
	return l.All || l.Include[name] || name == dynamo.AttrPK || name == dynamo.AttrSK || name == l.SortKey
}

// entrySize is the size of item's entry in the index (0 when the item
// lacks the index's sort key, so is not in it).
func (l IndexLayout) entrySize(item map[string]types.AttributeValue) int {
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

// WriteUnits is the index's write units of a write turning before into
// after (nil: absent).
func (l IndexLayout) writeUnits(before, after map[string]types.AttributeValue) int {
	old, nw := l.entrySize(before), l.entrySize(after)
	switch {
	case old > 0 && nw > 0 && strAttr(before, l.SortKey) == strAttr(after, l.SortKey):
		return KBUnits(nw)
	default:
		u := 0
		if old > 0 {
			u += KBUnits(old)
		}
		if nw > 0 {
			u += KBUnits(nw)
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

// CapacityMeter is a dynamo.Client that accounts every request of the store
// into the current account (one measured turn at a time).
type CapacityMeter struct {
	inner   dynamo.Client
	raw     dynamo.Client // uncounted: the size reads
	table   *string
	indexes []IndexLayout

	mu   sync.Mutex
	acct *CapacityAccount
}

// Take returns the account so far and starts a new one.
func (m *CapacityMeter) Take() *CapacityAccount {
	m.mu.Lock()
	defer m.mu.Unlock()
	a := m.acct
	m.acct = NewCapacityAccount()
	return a
}

func (m *CapacityMeter) add(fn func(a *CapacityAccount)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	fn(m.acct)
}

// get reads key consistently on the uncounted client (nil when absent or
// when the read fails).
func (m *CapacityMeter) get(ctx context.Context, key map[string]types.AttributeValue) map[string]types.AttributeValue {
	out, err := m.raw.GetItem(context.WithoutCancel(ctx), &dynamodb.GetItemInput{TableName: m.table, Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil || len(out.Item) == 0 {
		return nil
	}
	return out.Item
}

// itemKind names the kind of the item with sort key sk.
func itemKind(sk string) string {
	switch dynamo.ItemKindOf(sk) {
	case dynamo.ItemSession:
		return CapacitySessionItem
	case dynamo.ItemLive, dynamo.ItemDelta:
		return CapacityCheckpoint
	case dynamo.ItemLedger:
		return CapacityLedgerItem
	default:
		return CapacityTurnItem // turn, fence and chunk items
	}
}

// write runs one write of key and accounts it.
func (m *CapacityMeter) write(ctx context.Context, op string, key map[string]types.AttributeValue, do func() (*types.ConsumedCapacity, error)) error {
	before := m.get(ctx, key)
	cc, err := do()
	after := m.get(ctx, key)
	sk := strAttr(key, dynamo.AttrSK)
	failed := isConditionFailure(err)
	m.add(func(a *CapacityAccount) {
		a.Requests++
		a.Ops[op]++
		kind := itemKind(sk)
		if _, live := after["live"]; live && kind == CapacityTurnItem {
			kind = CapacityCheckpoint // the first checkpoint's running turn item
		}
		size := max(itemSize(before), itemSize(after))
		switch kind {
		case CapacitySessionItem:
			a.SessionBytes = max(a.SessionBytes, size)
		case CapacityTurnItem:
			a.TurnBytes = max(a.TurnBytes, size)
		case CapacityLedgerItem:
			a.LedgerBytes = max(a.LedgerBytes, size)
		}
		switch {
		case err == nil:
			a.WCU[kind] += KBUnits(size)
			if kind == CapacityCheckpoint {
				a.CheckpointWrites++
			}
			for _, l := range m.indexes {
				if u := l.writeUnits(before, after); u > 0 && kind == CapacityCheckpoint {
					a.WCU[CapacityCheckpoint] += u
				} else if u > 0 {
					a.WCU["index "+l.Name] += u
				}
			}
			if cc != nil && cc.CapacityUnits != nil {
				a.ReportedWCU += *cc.CapacityUnits
			}
		case failed:
			a.WCU[kind] += KBUnits(itemSize(before))
		}
	})
	return err
}

// isConditionFailure reports whether err is a failed condition.
func isConditionFailure(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}

func (m *CapacityMeter) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	out, err := m.inner.GetItem(ctx, in, optFns...)
	full := m.get(ctx, in.Key) // the size billed: the whole item, whatever was projected
	m.add(func(a *CapacityAccount) {
		a.Requests++
		a.Ops["GetItem"]++
		if err == nil {
			a.RCU["GetItem"] += readUnits4K(itemSize(full), aws.ToBool(in.ConsistentRead))
		}
	})
	return out, err
}

// BatchGetItem implements dynamo.Client: one request, each item read
// billed as a GetItem of it.
func (m *CapacityMeter) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	out, err := m.inner.BatchGetItem(ctx, in, optFns...)
	units := 0.0
	if err == nil {
		for _, ka := range in.RequestItems {
			for _, key := range ka.Keys {
				if full := m.get(ctx, key); full != nil {
					units += readUnits4K(itemSize(full), aws.ToBool(ka.ConsistentRead))
				}
			}
		}
	}
	m.add(func(a *CapacityAccount) {
		a.Requests++
		a.Ops["BatchGetItem"]++
		a.RCU["BatchGetItem"] += units
	})
	return out, err
}

// placeholder matches the name and value placeholders of an expression.
var placeholder = regexp.MustCompile(`[#:][A-Za-z0-9_]+`)

func (m *CapacityMeter) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	out, err := m.inner.Query(ctx, in, optFns...)
	units := 0.0
	if err == nil {
		units = m.queryUnits(ctx, in)
	}
	m.add(func(a *CapacityAccount) {
		a.Requests++
		a.Ops["Query"]++
		a.RCU["Query"] += units
	})
	return out, err
}

// queryUnits is the read units of a Query: the same key condition, start
// key and limit sent again on the uncounted client without a filter or a
// projection, so that it returns every item the Query evaluated, whole.
func (m *CapacityMeter) queryUnits(ctx context.Context, in *dynamodb.QueryInput) float64 {
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
func (m *CapacityMeter) fetches(ix IndexLayout, in *dynamodb.QueryInput) bool {
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

func (m *CapacityMeter) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
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

func (m *CapacityMeter) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
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

func (m *CapacityMeter) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
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

// NewCapacityMeter returns a CapacityMeter on inner for table; raw is the
// uncounted client of its size reads.
func NewCapacityMeter(inner, raw dynamo.Client, table string) *CapacityMeter {
	return &CapacityMeter{inner: inner, raw: raw, table: aws.String(table), indexes: TableIndexes(), acct: NewCapacityAccount()}
}

// MedianAccount returns the account of as with the median write units
// (the upper one of an even count); as must not be empty.
func MedianAccount(as []*CapacityAccount) *CapacityAccount {
	s := slices.Clone(as)
	slices.SortFunc(s, func(a, b *CapacityAccount) int { return a.WriteUnits() - b.WriteUnits() })
	return s[len(s)/2]
}
