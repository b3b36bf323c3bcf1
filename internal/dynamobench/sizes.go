package dynamobench

import (
	"math"
	"reflect"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

// The size arithmetic of AWS's bill: item sizes, index entries and the
// units they cost (Meter).

// IndexLayout is one secondary index as the table defines it: a local
// one (PartitionKey empty: the table's) or a global one.
type IndexLayout struct {
	Name, PartitionKey, SortKey string
	All                         bool
	Include                     map[string]bool
}

// TableIndexes returns the secondary indexes of dynamo's table layout,
// local and global.
func TableIndexes() []IndexLayout {
	in := dynamo.CreateTableInput("layout")
	var out []IndexLayout
	add := func(name *string, keys []types.KeySchemaElement, p *types.Projection, global bool) {
		l := IndexLayout{Name: aws.ToString(name), Include: map[string]bool{}}
		for _, k := range keys {
			switch {
			case k.KeyType == types.KeyTypeRange:
				l.SortKey = aws.ToString(k.AttributeName)
			case global:
				l.PartitionKey = aws.ToString(k.AttributeName)
			}
		}
		if p != nil {
			l.All = p.ProjectionType == types.ProjectionTypeAll
			for _, a := range p.NonKeyAttributes {
				l.Include[a] = true
			}
		}
		out = append(out, l)
	}
	for _, ix := range in.LocalSecondaryIndexes {
		add(ix.IndexName, ix.KeySchema, ix.Projection, false)
	}
	for _, ix := range in.GlobalSecondaryIndexes {
		add(ix.IndexName, ix.KeySchema, ix.Projection, true)
	}
	return out
}

// projects reports whether the index entry carries attribute name.
func (l IndexLayout) projects(name string) bool {
	return l.All || l.Include[name] || name == dynamo.AttrPK || name == dynamo.AttrSK || name == l.SortKey ||
		l.PartitionKey != "" && name == l.PartitionKey
}

// keyOf is item's key in the index ("" when it lacks one of the index's
// key attributes, so is not in it).
func (l IndexLayout) keyOf(item map[string]types.AttributeValue) string {
	sk := attrKey(item, l.SortKey)
	if sk == "" {
		return ""
	}
	if l.PartitionKey == "" {
		return sk
	}
	pk := attrKey(item, l.PartitionKey)
	if pk == "" {
		return ""
	}
	return pk + "\x00" + sk
}

// attrKey is a key attribute's value as a string (S or N), "" when
// absent.
func attrKey(item map[string]types.AttributeValue, name string) string {
	switch v := item[name].(type) {
	case *types.AttributeValueMemberS:
		return v.Value
	case *types.AttributeValueMemberN:
		return v.Value
	}
	return ""
}

// sameEntry reports whether before and after have the same projected
// attributes: an update that changes none leaves the index unwritten.
func (l IndexLayout) sameEntry(before, after map[string]types.AttributeValue) bool {
	for _, m := range []map[string]types.AttributeValue{before, after} {
		for name := range m {
			if l.projects(name) && !reflect.DeepEqual(before[name], after[name]) {
				return false
			}
		}
	}
	return true
}

// entrySize is the size of item's entry in the index (0 when the item
// is not in it).
func (l IndexLayout) entrySize(item map[string]types.AttributeValue) int {
	if l.keyOf(item) == "" {
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
	case old > 0 && nw > 0 && l.keyOf(before) == l.keyOf(after) && l.Name != "" && l.PartitionKey != "" && l.sameEntry(before, after):
		return 0 // a global index entry no projected attribute of which changed
	case old > 0 && nw > 0 && l.keyOf(before) == l.keyOf(after):
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

// indexUnits is the index write units of a write that turned item before
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
