package dynamobench

import (
	"math"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

// The size arithmetic of AWS's bill: item sizes, index entries and the
// units they cost (Meter).

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
