package protocol

import (
	"errors"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// This file holds the strict JSON reader every decoder of this package uses
// and the writer that emits JSON the way JavaScript's JSON.stringify does.
//
// The reader accepts exactly RFC 8259 JSON text (what JavaScript's
// JSON.parse accepts) minus the inputs where Go and JavaScript would read
// one body two ways (DESIGN §2): a duplicated object key at any depth, a
// lone UTF-16 surrogate escape, and invalid raw UTF-8 are errors. Keys are
// kept exactly as written, so lookups are case-sensitive.

// maxParseDepth bounds nesting while reading, so hostile input cannot grow
// the stack without limit. It is far above every depth the protocol allows
// (32 in message records, 20 in bounded JSON), so no valid value is lost;
// deeper input is reported as invalid JSON.
const maxParseDepth = 10_000

// kind is the JSON type of a node.
type kind uint8

const (
	kindNull kind = iota
	kindFalse
	kindTrue
	kindNumber
	kindString
	kindArray
	kindObject
)

// node is one parsed JSON value. Object members keep their input order;
// each member's key is in the member node's key field.
type node struct {
	kind kind
	key  string  // member name when the node is an object member
	str  string  // kindString: the decoded value
	num  float64 // kindNumber: the value as JavaScript reads it (±Inf on overflow)
	kids []node  // kindArray: elements; kindObject: members
}

// errSyntax is the single error of the reader: callers map it to their own
// fixed diagnostic and never show it.
var errSyntax = errors.New("protocol: invalid JSON text")

// get returns the member named key of an object node, case-sensitively.
func (n *node) get(key string) (*node, bool) {
	if n.kind != kindObject {
		return nil, false
	}
	for i := range n.kids {
		if n.kids[i].key == key {
			return &n.kids[i], true
		}
	}
	return nil, false
}

type parser struct {
	data []byte
	pos  int
}

// parseJSON reads one JSON text (surrounding whitespace allowed).
func parseJSON(data []byte) (node, error) {
	p := parser{data: data}
	p.skipSpace()
	v, err := p.value(0)
	if err != nil {
		return node{}, err
	}
	p.skipSpace()
	if p.pos != len(p.data) {
		return node{}, errSyntax
	}
	return v, nil
}

func (p *parser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) literal(lit string, k kind) (node, error) {
	if len(p.data)-p.pos < len(lit) || string(p.data[p.pos:p.pos+len(lit)]) != lit {
		return node{}, errSyntax
	}
	p.pos += len(lit)
	return node{kind: k}, nil
}

func (p *parser) value(depth int) (node, error) {
	if p.pos >= len(p.data) {
		return node{}, errSyntax
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		s, err := p.string()
		return node{kind: kindString, str: s}, err
	case c == 't':
		return p.literal("true", kindTrue)
	case c == 'f':
		return p.literal("false", kindFalse)
	case c == 'n':
		return p.literal("null", kindNull)
	case c == '-' || (c >= '0' && c <= '9'):
		f, err := p.number()
		return node{kind: kindNumber, num: f}, err
	default:
		return node{}, errSyntax
	}
}

func (p *parser) object(depth int) (node, error) {
	if depth >= maxParseDepth {
		return node{}, errSyntax
	}
	p.pos++ // '{'
	n := node{kind: kindObject}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return n, nil
	}
	for {
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return node{}, errSyntax
		}
		key, err := p.string()
		if err != nil {
			return node{}, err
		}
		for i := range n.kids {
			if n.kids[i].key == key {
				return node{}, errSyntax // duplicate name (DESIGN §2)
			}
		}
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return node{}, errSyntax
		}
		p.pos++
		p.skipSpace()
		v, err := p.value(depth + 1)
		if err != nil {
			return node{}, err
		}
		v.key = key
		n.kids = append(n.kids, v)
		p.skipSpace()
		if p.pos >= len(p.data) {
			return node{}, errSyntax
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
			p.skipSpace()
		case '}':
			p.pos++
			return n, nil
		default:
			return node{}, errSyntax
		}
	}
}

func (p *parser) array(depth int) (node, error) {
	if depth >= maxParseDepth {
		return node{}, errSyntax
	}
	p.pos++ // '['
	n := node{kind: kindArray}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return n, nil
	}
	for {
		v, err := p.value(depth + 1)
		if err != nil {
			return node{}, err
		}
		n.kids = append(n.kids, v)
		p.skipSpace()
		if p.pos >= len(p.data) {
			return node{}, errSyntax
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
			p.skipSpace()
		case ']':
			p.pos++
			return n, nil
		default:
			return node{}, errSyntax
		}
	}
}

// string reads a JSON string starting at the opening quote. Raw bytes must
// be valid UTF-8; \u escapes must form valid UTF-16 (a high surrogate
// followed by a low one), so the result is always valid UTF-8.
func (p *parser) string() (string, error) {
	p.pos++ // opening quote
	start := p.pos
	// Fast path: no escapes.
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case c == '"':
			s := string(p.data[start:p.pos])
			p.pos++
			return s, nil
		case c == '\\':
			return p.escapedString(start)
		case c < 0x20:
			return "", errSyntax
		case c < utf8.RuneSelf:
			p.pos++
		default:
			r, size := utf8.DecodeRune(p.data[p.pos:])
			if r == utf8.RuneError && size == 1 {
				return "", errSyntax
			}
			p.pos += size
		}
	}
	return "", errSyntax
}

func (p *parser) escapedString(start int) (string, error) {
	buf := make([]byte, p.pos-start, p.pos-start+16)
	copy(buf, p.data[start:p.pos])
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			return string(buf), nil
		case c == '\\':
			if p.pos+1 >= len(p.data) {
				return "", errSyntax
			}
			e := p.data[p.pos+1]
			p.pos += 2
			switch e {
			case '"', '\\', '/':
				buf = append(buf, e)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				r, ok := p.hex4()
				if !ok {
					return "", errSyntax
				}
				if utf16.IsSurrogate(r) {
					// Only a high surrogate escape followed by a low one is a
					// character; anything else is a lone surrogate (DESIGN §2).
					if r >= 0xDC00 || len(p.data)-p.pos < 2 || p.data[p.pos] != '\\' || p.data[p.pos+1] != 'u' {
						return "", errSyntax
					}
					p.pos += 2
					lo, ok := p.hex4()
					if !ok {
						return "", errSyntax
					}
					r = utf16.DecodeRune(r, lo)
					if r == utf8.RuneError {
						return "", errSyntax
					}
				}
				buf = utf8.AppendRune(buf, r)
			default:
				return "", errSyntax
			}
		case c < 0x20:
			return "", errSyntax
		case c < utf8.RuneSelf:
			buf = append(buf, c)
			p.pos++
		default:
			r, size := utf8.DecodeRune(p.data[p.pos:])
			if r == utf8.RuneError && size == 1 {
				return "", errSyntax
			}
			buf = append(buf, p.data[p.pos:p.pos+size]...)
			p.pos += size
		}
	}
	return "", errSyntax
}

func (p *parser) hex4() (rune, bool) {
	if len(p.data)-p.pos < 4 {
		return 0, false
	}
	var r rune
	for _, c := range p.data[p.pos : p.pos+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	p.pos += 4
	return r, true
}

// number reads a JSON number and returns it as JavaScript's JSON.parse
// would: the nearest float64, ±Inf when the magnitude overflows.
func (p *parser) number() (float64, error) {
	start := p.pos
	d := p.data
	i := p.pos
	if d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	default:
		return 0, errSyntax
	}
	simple := true
	if i < len(d) && d[i] == '.' {
		simple = false
		i++
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			return 0, errSyntax
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		simple = false
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			return 0, errSyntax
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	}
	p.pos = i
	text := d[start:i]
	if simple && len(text) <= 15 {
		// Up to 15 digits an integer is exact in float64.
		var v int64
		neg := text[0] == '-'
		digits := text
		if neg {
			digits = text[1:]
		}
		for _, c := range digits {
			v = v*10 + int64(c-'0')
		}
		f := float64(v)
		if neg {
			f = -f
		}
		return f, nil
	}
	f, err := strconv.ParseFloat(string(text), 64)
	if err != nil && !math.IsInf(f, 0) {
		return 0, errSyntax
	}
	return f, nil
}

// Writer: JSON.stringify-compatible output.

// appendJSONString appends s as a JSON string escaped as JavaScript's
// JSON.stringify escapes it: `"` and `\` and the C0 controls only (\b \f
// \n \r \t short forms, others \u00xx); U+2028, U+2029, '<', '>', '&' and
// all other characters are written raw. It returns false, leaving dst in an
// unspecified state, if s is not valid UTF-8.
func appendJSONString(dst []byte, s string) ([]byte, bool) {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				return dst, false
			}
			i += size
			continue
		}
		if c >= 0x20 && c != '"' && c != '\\' {
			i++
			continue
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
		i++
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"'), true
}

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
		for i := range n.kids {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst, _ = appendJSONString(dst, n.kids[i].key)
			dst = append(dst, ':')
			dst = appendNode(dst, &n.kids[i])
		}
		return append(dst, '}')
	}
}
