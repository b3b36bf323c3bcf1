package protocol

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
)

// Errors of UnmarshalStrict. Callers map them to their own fixed
// diagnostic (REQUEST_INVALID_JSON or REQUEST_INVALID_BODY) and never show
// them.
var (
	// ErrNotStrictJSON is a body the strict reader refuses: empty, not
	// JSON text, a duplicated key at any depth, a lone UTF-16 surrogate
	// escape, invalid UTF-8 or nesting deeper than the reader's bound.
	ErrNotStrictJSON = errors.New("protocol: body is not strict JSON")
	// ErrJSONShape is strict JSON that does not have the shape of the
	// value it is read into: a member of the wrong type, null where a
	// value is expected, a number that is not an integer up to 2^53-1
	// where an integer is expected, a key equal to a field's name but for
	// case, an unknown member where RejectUnknownMembers applies, or a
	// body that is not an object (a double-encoded body included).
	ErrJSONShape = errors.New("protocol: JSON does not have the expected shape")
)

// StrictOption changes what UnmarshalStrict accepts.
type StrictOption int

// RejectUnknownMembers makes a member that names no field of its struct
// ErrJSONShape, at any depth (by default such members are ignored, as
// the protocol's decoders ignore unknown keys).
const RejectUnknownMembers StrictOption = 1

// UnmarshalStrict reads body, untrusted JSON, into v, a non-nil pointer
// to a struct, with the package's one strict reader: the reader every
// decoder of this package uses (docs/design.md#wire-protocol-v1). It
// closes each hazard where Go and JavaScript could read one body two
// ways, so every untrusted request body of turnstream is read the same
// way:
//
//   - keys match case-sensitively, and an object holding a key equal to one
//     of its struct's field names but for case ("SessionId", "TURNID") is
//     ErrJSONShape (IsCaseVariant), at every depth;
//   - a duplicated key at any depth, a lone surrogate escape and invalid
//     UTF-8 are ErrNotStrictJSON;
//   - the body must be an object: a JSON string holding an object (a
//     double-encoded body) is ErrJSONShape, never decoded twice;
//   - integer fields take integral numbers up to 2^53-1 in magnitude
//     (1.0 is 1) that fit the field's type;
//   - null is never a value: a null member is ErrJSONShape, also for an
//     optional (pointer) field, which stays nil only when absent. A
//     json.RawMessage field takes any JSON value, null included, kept
//     verbatim for a later strict read.
//
// Fields are matched by their json tag name (or their Go name without
// one; "-" is skipped); embedded fields and fields of types other than
// strings, booleans, numbers, pointers, slices, string-keyed maps,
// structs and json.RawMessage are not supported (ErrJSONShape). Unknown
// members are ignored unless RejectUnknownMembers is given. The reader
// assigns the values itself, from the tree it checked: no second JSON
// reader ever sees the body. A json.RawMessage holds its value as
// JSON.stringify would write it (compact). On error *v is left zero.
func UnmarshalStrict(body []byte, v any, opts ...StrictOption) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		return errors.New("protocol: UnmarshalStrict needs a non-nil pointer to a struct")
	}
	root, err := parseJSON(body)
	if err != nil {
		return ErrNotStrictJSON
	}
	closed := false
	for _, o := range opts {
		closed = closed || o == RejectUnknownMembers
	}
	if !read(&root, rv.Elem(), closed) {
		rv.Elem().SetZero()
		return ErrJSONShape
	}
	return nil
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// read checks that n can be read into v under the rules of
// UnmarshalStrict and stores it there; false when it cannot.
func read(n *node, v reflect.Value, closed bool) bool {
	t := v.Type()
	if t == rawMessageType {
		v.SetBytes(appendNode(nil, n))
		return true
	}
	if n.kind == kindNull {
		return false
	}
	switch t.Kind() {
	case reflect.Pointer:
		p := reflect.New(t.Elem())
		if !read(n, p.Elem(), closed) {
			return false
		}
		v.Set(p)
		return true
	case reflect.String:
		if n.kind != kindString {
			return false
		}
		v.SetString(n.str)
		return true
	case reflect.Bool:
		if n.kind != kindTrue && n.kind != kindFalse {
			return false
		}
		v.SetBool(n.kind == kindTrue)
		return true
	case reflect.Float32, reflect.Float64:
		if n.kind != kindNumber || math.IsInf(n.num, 0) || v.OverflowFloat(n.num) {
			return false
		}
		v.SetFloat(n.num)
		return true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if n.kind != kindNumber || !isSafeInteger(n.num) || v.OverflowInt(int64(n.num)) {
			return false
		}
		v.SetInt(int64(n.num))
		return true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if n.kind != kindNumber || !isSafeInteger(n.num) || n.num < 0 || v.OverflowUint(uint64(n.num)) {
			return false
		}
		v.SetUint(uint64(n.num))
		return true
	case reflect.Slice:
		if n.kind != kindArray {
			return false
		}
		s := reflect.MakeSlice(t, len(n.kids), len(n.kids))
		for i := range n.kids {
			if !read(&n.kids[i], s.Index(i), closed) {
				return false
			}
		}
		v.Set(s)
		return true
	case reflect.Map:
		if n.kind != kindObject || t.Key().Kind() != reflect.String {
			return false
		}
		m := reflect.MakeMapWithSize(t, len(n.kids))
		for i := range n.kids {
			e := reflect.New(t.Elem()).Elem()
			if !read(&n.kids[i], e, closed) {
				return false
			}
			m.SetMapIndex(reflect.ValueOf(n.kids[i].key).Convert(t.Key()), e)
		}
		v.Set(m)
		return true
	case reflect.Struct:
		return n.kind == kindObject && readStruct(n, v, closed)
	}
	return false
}

// readStruct reads the members of the object n into the fields of the
// struct v.
func readStruct(n *node, v reflect.Value, closed bool) bool {
	t := v.Type()
	names := make([]string, 0, t.NumField())
	fields := make(map[string]int, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			return false // promoted fields are not supported
		}
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		names = append(names, name)
		fields[name] = i
	}
	for i := range n.kids {
		m := &n.kids[i]
		fi, ok := fields[m.key]
		switch {
		case ok:
			if !read(m, v.Field(fi), closed) {
				return false
			}
		case closed || IsCaseVariant(m.key, names...):
			return false
		}
	}
	return true
}

// isSafeInteger reports whether f is an integer of magnitude at most
// 2^53-1, as JavaScript's Number.isSafeInteger.
func isSafeInteger(f float64) bool {
	return f == math.Trunc(f) && math.Abs(f) <= MaxSafeInteger
}
