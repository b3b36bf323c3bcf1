package protocol

import (
	"cmp"
	"iter"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// appendJSONString appends s as a JSON string escaped as JavaScript's
// JSON.stringify escapes it: `"` and `\` and the C0 controls only (\b \f
// \n \r \t short forms, others \u00xx); U+2028, U+2029, '<', '>', '&' and
// all other characters are written raw. It returns false, leaving dst in an
// unspecified state, if s is not valid UTF-8.
func appendJSONString(dst []byte, s string) ([]byte, bool) {
	if !utf8.ValidString(s) {
		return dst, false
	}
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !needsEscape[c] {
			continue // includes every byte of a multi-byte character
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			const hex = "0123456789abcdef"
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"'), true
}

// needsEscape marks the bytes JSON.stringify escapes: C0 controls, '"' and
// '\\'.
var needsEscape = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// appendJSONNumber appends f as JSON.stringify writes a number: -0 as 0,
// plain notation for 1e-6 <= |f| < 1e21, otherwise exponent notation such
// as 1e+21 or 1.5e-7, and null for NaN and ±Inf (which the validators
// reject before anything is written).
func appendJSONNumber(dst []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, "null"...)
	}
	if f == 0 {
		return append(dst, '0')
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e21 {
		if math.Abs(f) <= 1<<53 {
			return strconv.AppendInt(dst, int64(f), 10)
		}
		return strconv.AppendFloat(dst, f, 'f', -1, 64)
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs < 1e-6 || abs >= 1e21 {
		format = 'e'
	}
	n := len(dst)
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// Go writes e-07 / e+21; JavaScript writes e-7 / e+21.
		m := len(dst)
		if m-n >= 4 && dst[m-4] == 'e' && dst[m-2] == '0' {
			dst[m-2] = dst[m-1]
			dst = dst[:m-1]
		}
	}
	return dst
}

// appendNode writes n compactly in JSON.stringify form.
func appendNode(dst []byte, n *node) []byte {
	switch n.kind {
	case kindNull:
		return append(dst, "null"...)
	case kindFalse:
		return append(dst, "false"...)
	case kindTrue:
		return append(dst, "true"...)
	case kindNumber:
		return appendJSONNumber(dst, n.num)
	case kindString:
		dst, _ = appendJSONString(dst, n.str) // parsed strings are valid UTF-8
		return dst
	case kindArray:
		dst = append(dst, '[')
		for i := range n.kids {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendNode(dst, &n.kids[i])
		}
		return append(dst, ']')
	default:
		dst = append(dst, '{')
		for i, k := range objectOrder(n.kids) {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst, _ = appendJSONString(dst, n.kids[k].key)
			dst = append(dst, ':')
			dst = appendNode(dst, &n.kids[k])
		}
		return append(dst, '}')
	}
}

// objectOrder returns the order in which JavaScript enumerates members
// with these keys (and so JSON.stringify writes them): array-index keys
// ("0" to "4294967294" in canonical form) first in ascending numeric
// order, then the others in insertion order.
func objectOrder(members []node) iter.Seq2[int, int] {
	return func(yield func(int, int) bool) {
		var index []int
		for i := range members {
			if _, ok := arrayIndex(members[i].key); ok {
				index = append(index, i)
			}
		}
		if len(index) > 1 {
			slices.SortFunc(index, func(a, b int) int {
				x, _ := arrayIndex(members[a].key)
				y, _ := arrayIndex(members[b].key)
				return cmp.Compare(x, y)
			})
		}
		n := 0
		for _, i := range index {
			if !yield(n, i) {
				return
			}
			n++
		}
		for i := range members {
			if _, ok := arrayIndex(members[i].key); ok {
				continue
			}
			if !yield(n, i) {
				return
			}
			n++
		}
	}
}

// arrayIndex reports whether key is an ECMAScript array index: the
// canonical decimal form of an integer in [0, 2^32-2].
func arrayIndex(key string) (uint64, bool) {
	if key == "" || len(key) > 10 || (key[0] == '0' && len(key) > 1) {
		return 0, false
	}
	var v uint64
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	return v, v < 1<<32-1
}
