package protocol

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// This file holds the strict JSON reader every decoder of this package uses
// and the writer that emits JSON the way JavaScript's JSON.stringify does.
//
// The reader accepts exactly RFC 8259 JSON text (what JavaScript's JSON.parse
// accepts) minus the inputs where Go and JavaScript would read one body two
// ways (docs/design.md#wire-protocol-v1): a duplicated object key at any
// depth, a lone UTF-16 surrogate escape, and invalid raw UTF-8 are errors.
// Keys are kept exactly as written, so lookups are case-sensitive.

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

// IsCaseVariant reports whether key names one of the known fields of an
// object case-insensitively without being exactly that name: "Event" or
// "EVENT" for "event". Case-insensitive means Unicode simple case folding
// as strings.EqualFold applies it, the rule Go's encoding/json uses to
// match object keys to struct fields, so "ſtatus" (U+017F LATIN SMALL
// LETTER LONG S) is a variant of "status" and "promptToKens" with U+212A
// KELVIN SIGN one of "promptTokens"; full case folding ("ß" as "ss") is not
// applied, as no JSON reader in use matches keys that way.
//
// JavaScript reads such a key as an unknown one and ignores it, while a Go
// reader that folds case reads it as the field (and, with both keys
// present, lets the later one win): one body, two readings. Every decoder
// of this package rejects an object holding a variant of one of its own
// fields, and pkg/turn and pkg/sessionapi apply the same rule to their
// request bodies. Keys that are no variant of a known field stay ignored.
func IsCaseVariant(key string, known ...string) bool {
	if slices.Contains(known, key) {
		return false
	}
	for _, k := range known {
		if strings.EqualFold(key, k) {
			return true
		}
	}
	return false
}

// hasCaseVariant reports whether the object n has a member whose key is a
// case variant (IsCaseVariant) of one of known; false for other kinds.
func (n *node) hasCaseVariant(known []string) bool {
	if n.kind != kindObject {
		return false
	}
	for i := range n.kids {
		if IsCaseVariant(n.kids[i].key, known...) {
			return true
		}
	}
	return false
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
	// stack holds the members or items of the containers being read;
	// a finished container moves its own into slab, so each container
	// costs no allocation of its own.
	stack []node
	slab  []node
	// borrow makes unescaped strings alias data instead of copying it
	// (see borrowParser).
	borrow bool
}

// parseJSON reads one JSON text (surrounding whitespace allowed). The tree
// shares no memory with data.
func parseJSON(data []byte) (node, error) {
	p := parser{data: data}
	return p.parse()
}

// borrowedParsers recycles the parsers of borrowParser.
var borrowedParsers = sync.Pool{New: func() any { return new(parser) }}

// borrowParser returns a pooled parser for data whose tree borrows both
// data (unescaped strings alias it) and the parser's memory: the caller
// reads the tree, writes what it needs, and calls release, after which no
// node or string of the tree may be used. Encoders use it to validate and
// rewrite caller-owned JSON (metadata, args, props) without allocating.
func borrowParser(data []byte) *parser {
	p := borrowedParsers.Get().(*parser)
	p.data, p.pos, p.borrow = data, 0, true
	return p
}

// release returns a borrowParser parser to the pool.
func (p *parser) release() {
	clear(p.slab) // drop strings aliasing the caller's data
	p.slab, p.data = p.slab[:0], nil
	if cap(p.slab) > 4096 || cap(p.stack) > 4096 {
		p.slab, p.stack = nil, nil // do not pin memory of an outsized input
	}
	borrowedParsers.Put(p)
}

func (p *parser) parse() (node, error) {
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
	base := len(p.stack)
	for {
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return node{}, errSyntax
		}
		key, err := p.string()
		if err != nil {
			return node{}, err
		}
		for i := base; i < len(p.stack); i++ {
			if p.stack[i].key == key {
				return node{}, errSyntax // duplicate name (docs/design.md#wire-protocol-v1)
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
		p.stack = append(p.stack, v)
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
			n.kids = p.take(base)
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
	base := len(p.stack)
	for {
		v, err := p.value(depth + 1)
		if err != nil {
			return node{}, err
		}
		p.stack = append(p.stack, v)
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
			n.kids = p.take(base)
			return n, nil
		default:
			return node{}, errSyntax
		}
	}
}

// take moves the nodes stack[base:] of a finished container into the slab
// and returns them.
func (p *parser) take(base int) []node {
	n := len(p.stack) - base
	if cap(p.slab)-len(p.slab) < n {
		size := max(n, 2*cap(p.slab), 16)
		size = max(n, min(size, 4096))
		p.slab = make([]node, 0, size)
	}
	start := len(p.slab)
	p.slab = append(p.slab, p.stack[base:]...)
	clear(p.stack[base:]) // drop references held by the reused stack
	p.stack = p.stack[:base]
	return p.slab[start:len(p.slab):len(p.slab)]
}

// string reads a JSON string starting at the opening quote. Raw bytes must
// be valid UTF-8; \u escapes must form valid UTF-16 (a high surrogate
// followed by a low one), so the result is always valid UTF-8.
func (p *parser) string() (string, error) {
	p.pos++ // opening quote
	start := p.pos
	i := start
	for i < len(p.data) && !needsEscape[p.data[i]] {
		i++
	}
	if i >= len(p.data) || p.data[i] < 0x20 {
		return "", errSyntax
	}
	if p.data[i] == '\\' {
		return p.escapedString(start)
	}
	raw := p.data[start:i]
	if !utf8.Valid(raw) {
		return "", errSyntax
	}
	p.pos = i + 1
	switch {
	case len(raw) == 0:
		return "", nil
	case p.borrow:
		return unsafe.String(&raw[0], len(raw)), nil
	}
	return string(raw), nil
}

// escapedString reads the rest of a string holding escapes; start is the
// index after the opening quote.
func (p *parser) escapedString(start int) (string, error) {
	// Find the closing quote. Escapes are ASCII, so the raw span is valid
	// UTF-8 exactly when its unescaped characters are; and the decoded text
	// is never longer than the span.
	end := start
	for end < len(p.data) && p.data[end] != '"' {
		if p.data[end] == '\\' {
			end++
		}
		end++
	}
	if end >= len(p.data) || !utf8.Valid(p.data[start:end]) {
		return "", errSyntax
	}
	var buf strings.Builder
	buf.Grow(end - start)
	p.pos = start
	for {
		run := p.pos
		for p.pos < end && !needsEscape[p.data[p.pos]] {
			p.pos++
		}
		buf.Write(p.data[run:p.pos])
		if p.pos == end {
			p.pos++ // closing quote
			return buf.String(), nil
		}
		if p.data[p.pos] != '\\' {
			return "", errSyntax // a raw control character (a '"' cannot occur before end)
		}
		if p.pos+1 >= end {
			return "", errSyntax
		}
		e := p.data[p.pos+1]
		p.pos += 2
		switch e {
		case '"', '\\', '/':
			buf.WriteByte(e)
		case 'b':
			buf.WriteByte('\b')
		case 'f':
			buf.WriteByte('\f')
		case 'n':
			buf.WriteByte('\n')
		case 'r':
			buf.WriteByte('\r')
		case 't':
			buf.WriteByte('\t')
		case 'u':
			r, ok := p.hex4()
			if !ok {
				return "", errSyntax
			}
			if utf16.IsSurrogate(r) {
				// Only a high surrogate escape followed by a low one is a
				// character; anything else is a lone surrogate
				// (docs/design.md#wire-protocol-v1).
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
			buf.WriteRune(r)
		default:
			return "", errSyntax
		}
		if p.pos > end {
			return "", errSyntax // an escape ran past the closing quote
		}
	}
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
