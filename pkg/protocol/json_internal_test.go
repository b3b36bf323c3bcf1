package protocol

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// The strict reader is checked against an independent implementation:
// go-json-experiment's jsontext with duplicate names and invalid UTF-8
// (lone surrogates included) rejected must accept exactly the same texts,
// and for accepted texts encoding/json must read the same value.

var jsonSeeds = []string{
	`null`, `true`, `false`, `0`, `-0`, `1.5e-7`, `1E+21`, `01`, `1.`, `.5`, `-`, `+1`, `1e400`, `-1e400`, `1e-400`,
	`""`, `"a"`, `"\u00e9\ud83d\ude00"`, `"\ud800"`, `"\udc00"`, `"\ud800\u0041"`, `"\x"`, `"\u12"`, "\"\xff\"",
	"\"\xed\xa0\x80\"", "\"\x01\"", "\"\u2028\"", `[]`, `[1,]`, `[,1]`, `{}`, `{"a":1,"a":2}`, `{"a":1,"\u0061":2}`,
	`{"a":{"b":1},"c":{"b":1}}`, `{"a":1,}`, `{a:1}`, `{"a" 1}`, ` [ 1 , { "x" : [ ] } ] `, "\ufeff{}", `[1] [2]`,
	strings.Repeat("[", 100) + strings.Repeat("]", 100), `{"":0}`, `"\/\b\f\n\r\t\"\\"`, `tru`, `nul`, `[true false]`,
}

func FuzzParseJSON(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkParseAgainstReferences(t, data)
	})
}

func TestParseJSONSeeds(t *testing.T) {
	for _, s := range jsonSeeds {
		t.Run(strconv.Quote(s), func(t *testing.T) { checkParseAgainstReferences(t, []byte(s)) })
	}
}

func checkParseAgainstReferences(t *testing.T, data []byte) {
	t.Helper()
	n, err := parseJSON(data)
	valid := jsontext.Value(data).IsValid(jsontext.AllowDuplicateNames(false), jsontext.AllowInvalidUTF8(false))
	if (err == nil) != valid {
		t.Fatalf("parseJSON error %v, jsontext valid %v for %q", err, valid, data)
	}
	if err != nil {
		return
	}
	if hasInf(&n) {
		return // JSON.parse reads such numbers as ±Infinity; no validator accepts them
	}
	// The writer's output is strict JSON again and reads back the same.
	out := appendNode(nil, &n)
	again, err := parseJSON(out)
	if err != nil || !bytes.Equal(appendNode(nil, &again), out) {
		t.Fatalf("re-reading %q gave %v", out, err)
	}
	var want, got any
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatalf("encoding/json rejects %q: %v", data, err)
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("encoding/json rejects output %q: %v", out, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("value differs\n in: %q\nout: %q", data, out)
	}
}

func hasInf(n *node) bool {
	if n.kind == kindNumber {
		return math.IsInf(n.num, 0)
	}
	for i := range n.kids {
		if hasInf(&n.kids[i]) {
			return true
		}
	}
	return false
}

func TestParseJSONDepthLimit(t *testing.T) {
	deep := strings.Repeat("[", maxParseDepth) + strings.Repeat("]", maxParseDepth)
	if _, err := parseJSON([]byte(deep)); err != nil {
		t.Errorf("depth %d: %v; want accepted", maxParseDepth, err)
	}
	deeper := "[" + deep + "]"
	if _, err := parseJSON([]byte(deeper)); err == nil {
		t.Errorf("depth %d accepted; want errSyntax", maxParseDepth+1)
	}
}

// TestAppendJSONNumber compares with encoding/json, whose float encoding
// follows ECMAScript's Number#toString, apart from -0 (JavaScript: "0").
func TestAppendJSONNumber(t *testing.T) {
	fixed := map[float64]string{
		0: "0", math.Copysign(0, -1): "0", 1: "1", -1: "-1", 1.5: "1.5", 1e21: "1e+21", 1e20: "100000000000000000000",
		1e-7: "1e-7", 1e-6: "0.000001", 123456789.125: "123456789.125", 9007199254740993: "9007199254740992",
		5e-324: "5e-324", math.MaxFloat64: "1.7976931348623157e+308", 1.5e300: "1.5e+300", -2.5e-10: "-2.5e-10",
	}
	for f, want := range fixed {
		if got := string(appendJSONNumber(nil, f)); got != want {
			t.Errorf("appendJSONNumber(%v) = %s; want %s", f, got, want)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		f := math.Float64frombits(r.Uint64())
		if math.IsNaN(f) || math.IsInf(f, 0) || f == 0 {
			continue
		}
		want, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendJSONNumber(nil, f); !bytes.Equal(got, want) {
			t.Fatalf("appendJSONNumber(%v) = %s; encoding/json %s", f, got, want)
		}
	}
}

func TestUTF16Len(t *testing.T) {
	for s, want := range map[string]int{"": 0, "a": 1, "é": 1, "€": 1, "😀": 2, "a😀b": 4, "\u2028": 1} {
		if got := utf16Len(s, -1); got != want {
			t.Errorf("utf16Len(%q) = %d; want %d", s, got, want)
		}
	}
	if !lenBetween(strings.Repeat("😀", 128), 1, 256) || lenBetween(strings.Repeat("😀", 129), 1, 256) {
		t.Error("lenBetween does not count surrogate pairs as two units")
	}
}

func TestIsJSSpace(t *testing.T) {
	for r, want := range map[rune]bool{
		'\t': true, '\n': true, '\v': true, '\f': true, '\r': true, ' ': true, 0xA0: true, 0xFEFF: true,
		0x2028: true, 0x2029: true, 0x1680: true, 0x2000: true, 0x200A: true, 0x202F: true, 0x205F: true, 0x3000: true,
		0x85: false, 0x180E: false, 0x200B: false, 'a': false, 0x1C: false,
	} {
		if got := isJSSpace(r); got != want {
			t.Errorf("isJSSpace(%U) = %v; want %v", r, got, want)
		}
	}
}
