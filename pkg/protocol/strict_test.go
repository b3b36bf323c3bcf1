package protocol_test

import (
	"encoding/json"
	"errors"
	"strconv"
	"testing"

	"github.com/turnstream/turnstream/pkg/protocol"
)

type strictInner struct {
	Name string `json:"name"`
}

type strictBody struct {
	ID       string           `json:"id"`
	Count    int64            `json:"count"`
	Small    int8             `json:"small"`
	Ratio    float64          `json:"ratio"`
	Flag     *bool            `json:"flag"`
	Inner    *strictInner     `json:"inner"`
	List     []strictInner    `json:"list"`
	ByName   map[string]int   `json:"byName"`
	Raw      json.RawMessage  `json:"raw"`
	Untagged string           // matched by its Go name
	Skipped  string           `json:"-"`
	Opt      *string          `json:"opt,omitempty"`
	Nested   map[string][]int `json:"nested"`
}

// TestUnmarshalStrict: the one strict reader for untrusted JSON refuses
// each hazard the wire reference lists (case variants of keys at any
// depth, duplicated keys, lone surrogates, invalid UTF-8, double-encoded
// bodies, integers beyond 2^53-1, null for optional members) and reads
// the rest as encoding/json would.
func TestUnmarshalStrict(t *testing.T) {
	for name, tc := range map[string]struct {
		body string
		want error
	}{
		"valid":                      {`{"id":"a","count":9007199254740991,"small":-128,"ratio":0.5,"flag":true,"inner":{"name":"n"},"list":[{"name":"x"}],"byName":{"A":1,"a":2},"raw":null,"Untagged":"u","extra":{"ID":1}}`, nil},
		"integral float":             {`{"count":1.0}`, nil},
		"unknown members ignored":    {`{"other":[1,null,{"x":"\u00e9"}]}`, nil},
		"empty":                      {``, protocol.ErrNotStrictJSON},
		"not JSON":                   {`{"id":`, protocol.ErrNotStrictJSON},
		"trailing data":              {`{"id":"a"} {}`, protocol.ErrNotStrictJSON},
		"duplicated key":             {`{"id":"a","id":"b"}`, protocol.ErrNotStrictJSON},
		"duplicated nested key":      {`{"inner":{"name":"a","name":"b"}}`, protocol.ErrNotStrictJSON},
		"duplicated key, unknown":    {`{"x":{"y":1,"y":2}}`, protocol.ErrNotStrictJSON},
		"lone high surrogate":        {`{"id":"a\ud800"}`, protocol.ErrNotStrictJSON},
		"lone low surrogate in key":  {`{"x\udc00":1}`, protocol.ErrNotStrictJSON},
		"invalid UTF-8":              {"{\"id\":\"a\xff\"}", protocol.ErrNotStrictJSON},
		"case variant":               {`{"ID":"a"}`, protocol.ErrJSONShape},
		"case variant beside":        {`{"id":"a","Id":"b"}`, protocol.ErrJSONShape},
		"case variant nested":        {`{"inner":{"Name":"a"}}`, protocol.ErrJSONShape},
		"case variant in list":       {`{"list":[{"name":"a","NAME":"b"}]}`, protocol.ErrJSONShape},
		"case variant, kelvin sign":  {`{"inner":{"name":"a"},"li\u017ft":[]}`, protocol.ErrJSONShape},
		"case variant, untagged":     {`{"untagged":"u"}`, protocol.ErrJSONShape},
		"double-encoded":             {strconv.Quote(`{"id":"a"}`), protocol.ErrJSONShape},
		"array body":                 {`[{"id":"a"}]`, protocol.ErrJSONShape},
		"null body":                  {`null`, protocol.ErrJSONShape},
		"null string":                {`{"id":null}`, protocol.ErrJSONShape},
		"null optional pointer":      {`{"flag":null}`, protocol.ErrJSONShape},
		"null omitempty":             {`{"opt":null}`, protocol.ErrJSONShape},
		"null list":                  {`{"list":null}`, protocol.ErrJSONShape},
		"null element":               {`{"list":[null]}`, protocol.ErrJSONShape},
		"null map value":             {`{"byName":{"a":null}}`, protocol.ErrJSONShape},
		"integer above 2^53-1":       {`{"count":9007199254740992}`, protocol.ErrJSONShape},
		"integer below -(2^53-1)":    {`{"count":-9007199254740992}`, protocol.ErrJSONShape},
		"fraction for integer":       {`{"count":1.5}`, protocol.ErrJSONShape},
		"integer overflowing int8":   {`{"small":128}`, protocol.ErrJSONShape},
		"string for integer":         {`{"count":"1"}`, protocol.ErrJSONShape},
		"number for string":          {`{"id":1}`, protocol.ErrJSONShape},
		"object for list":            {`{"list":{"name":"x"}}`, protocol.ErrJSONShape},
		"number overflowing float64": {`{"ratio":1e400}`, protocol.ErrJSONShape},
		"skipped field is unknown":   {`{"Skipped":"x","-":"y"}`, nil},
	} {
		t.Run(name, func(t *testing.T) {
			var v strictBody
			err := protocol.UnmarshalStrict([]byte(tc.body), &v)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("UnmarshalStrict(%s) = %v, want %v", tc.body, err, tc.want)
			}
		})
	}

	var v strictBody
	if err := protocol.UnmarshalStrict([]byte(`{"id":"a","count":3,"inner":{"name":"n"},"Untagged":"u","raw":{"k":[1]},"Skipped":"s"}`), &v); err != nil {
		t.Fatal(err)
	}
	if v.ID != "a" || v.Count != 3 || v.Inner == nil || v.Inner.Name != "n" || v.Untagged != "u" || string(v.Raw) != `{"k":[1]}` || v.Skipped != "" || v.Flag != nil {
		t.Errorf("read %+v", v)
	}
}

// TestUnmarshalStrictRejectUnknownMembers: with the option, a member that
// names no field is refused at any depth.
func TestUnmarshalStrictRejectUnknownMembers(t *testing.T) {
	for body, want := range map[string]error{
		`{"id":"a","inner":{"name":"n"}}`: nil,
		`{"id":"a","x":1}`:                protocol.ErrJSONShape,
		`{"inner":{"name":"n","x":1}}`:    protocol.ErrJSONShape,
		`{"raw":{"anything":[1]}}`:        nil,
	} {
		var v strictBody
		if err := protocol.UnmarshalStrict([]byte(body), &v, protocol.RejectUnknownMembers); !errors.Is(err, want) || (want == nil) != (err == nil) {
			t.Errorf("UnmarshalStrict(%s) = %v, want %v", body, err, want)
		}
	}
	var notStruct map[string]int
	if err := protocol.UnmarshalStrict([]byte(`{}`), &notStruct); err == nil || errors.Is(err, protocol.ErrJSONShape) {
		t.Errorf("a map target: %v, want a usage error", err)
	}
}
