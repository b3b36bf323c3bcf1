package dynamobench

import (
	"context"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

// Meter is a dynamo.Client between a Store and its SDK client that
// accounts each session's DynamoDB requests and billed write units. It
// asks the server for ReturnConsumedCapacity TOTAL on every write (the
// base table's units, which is all dynalite counts) and adds the writes of
// the two local secondary indexes as AWS bills them: a write of a turn
// item (the only items carrying an index key, visibleKey or turnId) is
// bracketed by two consistent reads on a separate, uncounted client, and
// each index whose key the item holds before or after the write costs
// ceil(index entry size / 1 KB) per entry written (one when the key is
// kept, one when it appears or disappears, two when it changes: the old
// entry deleted, the new one put). The entry size is the size of the
// attributes the index projects, keys included, as AWS computes it
// (itemSize), plus AWS's 100 bytes of index overhead (IndexLayout).
// The size reads add latency to turn item writes, so only the cost
// section's store runs through a meter with them.
//
// It also notes, per session, when each write of the turn's live item
// (a checkpoint, or a heartbeat) was answered and with which sequence:
// the moment a resumer can first see that checkpoint.
type Meter struct {
	inner dynamo.Client
	raw   dynamo.Client // uncounted client for the size reads; nil: no LSI accounting

	mu       sync.Mutex
	sessions map[string]*Account
	// noCapacity counts successful writes answered without
	// ConsumedCapacity (the server ignored the request for it).
	noCapacity atomic.Int64
}

// Account is one session's requests and write units.
type Account struct {
	Requests   int     // DynamoDB API calls
	Writes     int     // successful writes
	TableUnits float64 // billed write units of the base table, as the server reported them
	IndexUnits int     // billed write units of the LSIs, computed
	LiveWrites int     // successful writes of the live item: one per checkpoint or heartbeat
	// TurnItemBytes is the size of the turn item after its latest write
	// (itemSize); the final save's once the turn has ended.
	TurnItemBytes int
	// FirstItemUnits is the write units (table and indexes) of the write
	// that created the turn item: the first checkpoint's, or the save's
	// when checkpoints are off.
	FirstItemUnits float64
	// Landed is when the first live-item write carrying each sequence was
	// answered.
	Landed map[int64]time.Time
}

// NewMeter returns a Meter passing calls on to inner. raw, when not nil,
// is a client outside the meter for the size reads that account the
// indexes' units; nil leaves IndexUnits, TurnItemBytes and FirstItemUnits
// zero and adds no reads.
func NewMeter(inner, raw dynamo.Client) *Meter {
	return &Meter{inner: inner, raw: raw, sessions: map[string]*Account{}}
}

// Session returns the account of sessionID (a copy; zero when the meter
// saw none of its calls).
func (m *Meter) Session(sessionID string) Account {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessions[sessionID]
	if s == nil {
		return Account{}
	}
	c := *s
	c.Landed = make(map[int64]time.Time, len(s.Landed))
	for k, v := range s.Landed {
		c.Landed[k] = v
	}
	return c
}

// NoCapacity counts the successful writes answered without
// ConsumedCapacity (the server ignored the request for it).
func (m *Meter) NoCapacity() int64 { return m.noCapacity.Load() }

func (m *Meter) account(pk string, fn func(s *Account)) {
	id, _ := dynamo.SessionIDOf(pk)
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessions[id]
	if s == nil {
		s = &Account{Landed: map[int64]time.Time{}}
		m.sessions[id] = s
	}
	fn(s)
}

// write runs one write on key, accounting it under its session.
func (m *Meter) write(ctx context.Context, key map[string]types.AttributeValue, do func() (*types.ConsumedCapacity, map[string]types.AttributeValue, error)) error {
	pk, sk := strAttr(key, dynamo.AttrPK), strAttr(key, dynamo.AttrSK)
	sized := m.raw != nil && dynamo.ItemKindOf(sk) == dynamo.ItemTurn
	var before map[string]types.AttributeValue
	if sized {
		before = m.read(ctx, key)
	}
	cc, attrs, err := do()
	answered := time.Now()
	var after map[string]types.AttributeValue
	if sized && err == nil {
		after = m.read(ctx, key)
	}
	m.account(pk, func(s *Account) {
		s.Requests++
		if err != nil {
			return
		}
		s.Writes++
		if cc != nil && cc.CapacityUnits != nil {
			s.TableUnits += *cc.CapacityUnits
		} else {
			m.noCapacity.Add(1)
		}
		if sized {
			iu := indexUnits(before, after)
			s.IndexUnits += iu
			if before == nil && after != nil && s.FirstItemUnits == 0 && cc != nil && cc.CapacityUnits != nil {
				s.FirstItemUnits = *cc.CapacityUnits + float64(iu)
			}
			if after != nil {
				s.TurnItemBytes = itemSize(after)
			}
		}
		if dynamo.ItemKindOf(sk) == dynamo.ItemLive {
			s.LiveWrites++
			if n, ok := attrs["sequence"].(*types.AttributeValueMemberN); ok {
				if seq, perr := strconv.ParseInt(n.Value, 10, 64); perr == nil {
					if _, seen := s.Landed[seq]; !seen {
						s.Landed[seq] = answered
					}
				}
			}
		}
	})
	return err
}

// read is a consistent GetItem on the uncounted client; nil when absent
// or when the read fails (the accounting then undercounts, never fails
// the write).
func (m *Meter) read(ctx context.Context, key map[string]types.AttributeValue) map[string]types.AttributeValue {
	out, err := m.raw.GetItem(context.WithoutCancel(ctx), &dynamodb.GetItemInput{TableName: tableOf(ctx), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil || out.Item == nil {
		return nil
	}
	return out.Item
}

type tableKey struct{}

// tableOf is the table name the meter's write carried (set by the
// wrapping methods on the context they pass to read).
func tableOf(ctx context.Context) *string {
	t, _ := ctx.Value(tableKey{}).(*string)
	return t
}

// indexUnits is the LSI write units of a write that turned item before
// into after (nil: absent), for the indexes and projections of
// dynamo.CreateTableInput (TableIndexes).
func indexUnits(before, after map[string]types.AttributeValue) int {
	units := 0
	for _, l := range TableIndexes() {
		units += l.writeUnits(before, after)
	}
	return units
}

// KBUnits is the write units of n bytes: ceil(n / 1024), at least 1.
func KBUnits(n int) int { return max(1, int(math.Ceil(float64(n)/1024))) }

// itemSize is an item's size as DynamoDB bills it: per attribute the
// UTF-8 length of its name plus its value's size (avSize).
func itemSize(item map[string]types.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name) + avSize(v)
	}
	return n
}

// avSize approximates DynamoDB's size of a value: strings and binaries by
// length, a number by (significant digits + 1) / 2 + 1 bytes, a boolean
// or null 1 byte, a list or map 3 bytes plus 1 byte and the size of each
// element (a map's keys included), sets the sum of their members.
func avSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return numSize(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + avSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += 1 + len(k) + avSize(e)
		}
		return n
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range v.Value {
			n += len(s)
		}
		return n
	case *types.AttributeValueMemberNS:
		n := 0
		for _, s := range v.Value {
			n += numSize(s)
		}
		return n
	case *types.AttributeValueMemberBS:
		n := 0
		for _, b := range v.Value {
			n += len(b)
		}
		return n
	}
	return 0
}

func numSize(s string) int {
	digits := 0
	for _, r := range strings.TrimLeft(strings.TrimLeft(s, "-"), "0.") {
		if r >= '0' && r <= '9' {
			digits++
		}
	}
	return (digits+1)/2 + 1
}

// GetItem implements dynamo.Client, counting a request.
func (m *Meter) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	m.account(strAttr(in.Key, dynamo.AttrPK), func(s *Account) { s.Requests++ })
	return m.inner.GetItem(ctx, in, optFns...)
}

// BatchGetItem implements dynamo.Client, counting a request (for the
// session of its first key).
func (m *Meter) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	pk := ""
	for _, ka := range in.RequestItems {
		if len(ka.Keys) > 0 {
			pk = strAttr(ka.Keys[0], dynamo.AttrPK)
		}
	}
	m.account(pk, func(s *Account) { s.Requests++ })
	return m.inner.BatchGetItem(ctx, in, optFns...)
}

// Query implements dynamo.Client, counting a request.
func (m *Meter) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	m.account(sessionOfQuery(in), func(s *Account) { s.Requests++ })
	return m.inner.Query(ctx, in, optFns...)
}

// PutItem implements dynamo.Client, asking for the consumed capacity and
// accounting the write.
func (m *Meter) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c := *in
	c.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	key := map[string]types.AttributeValue{dynamo.AttrPK: in.Item[dynamo.AttrPK], dynamo.AttrSK: in.Item[dynamo.AttrSK]}
	var out *dynamodb.PutItemOutput
	err := m.write(context.WithValue(ctx, tableKey{}, in.TableName), key, func() (*types.ConsumedCapacity, map[string]types.AttributeValue, error) {
		var err error
		out, err = m.inner.PutItem(ctx, &c, optFns...)
		if err != nil {
			return nil, nil, err
		}
		return out.ConsumedCapacity, out.Attributes, nil
	})
	return out, err
}

// UpdateItem implements dynamo.Client, asking for the consumed capacity and
// accounting the write.
func (m *Meter) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c := *in
	c.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	var out *dynamodb.UpdateItemOutput
	err := m.write(context.WithValue(ctx, tableKey{}, in.TableName), in.Key, func() (*types.ConsumedCapacity, map[string]types.AttributeValue, error) {
		var err error
		out, err = m.inner.UpdateItem(ctx, &c, optFns...)
		if err != nil {
			return nil, nil, err
		}
		return out.ConsumedCapacity, out.Attributes, nil
	})
	return out, err
}

// DeleteItem implements dynamo.Client, asking for the consumed capacity and
// accounting the write.
func (m *Meter) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	c := *in
	c.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	var out *dynamodb.DeleteItemOutput
	err := m.write(context.WithValue(ctx, tableKey{}, in.TableName), in.Key, func() (*types.ConsumedCapacity, map[string]types.AttributeValue, error) {
		var err error
		out, err = m.inner.DeleteItem(ctx, &c, optFns...)
		if err != nil {
			return nil, nil, err
		}
		return out.ConsumedCapacity, out.Attributes, nil
	})
	return out, err
}

var _ dynamo.Client = (*Meter)(nil)
