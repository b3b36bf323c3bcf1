package deploytest_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/awslabs/goformation/v7/cloudformation/dynamodb"

	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

// layoutsFile records every table layout turnstream has shipped since the
// rule of docs/design.md#storage-one-dynamodb-table ("Stack upgrades keep data"): the last entry
// is the current one, and each later entry names the migration that
// copies a table of the layout before it into a table of its own.
const layoutsFile = "testdata/table-layouts.json"

// tableLayout is what CloudFormation cannot change on an existing
// DynamoDB table without replacing it: the key schema, the attribute
// definitions of the keys, and the indexes (name, key schema and
// projection). A change replaces the table with a new, empty one.
type tableLayout struct {
	Attributes             []string      `json:"attributes"` // "name:type", sorted
	KeySchema              []string      `json:"keySchema"`  // "name:HASH|RANGE", in order
	LocalSecondaryIndexes  []indexLayout `json:"localSecondaryIndexes"`
	GlobalSecondaryIndexes []indexLayout `json:"globalSecondaryIndexes"`
}

type indexLayout struct {
	Name             string   `json:"name"`
	KeySchema        []string `json:"keySchema"`
	Projection       string   `json:"projection"`
	NonKeyAttributes []string `json:"nonKeyAttributes,omitempty"` // sorted
}

// fingerprint names a layout: the first 16 hex digits of the SHA-256 of
// its JSON.
func (l tableLayout) fingerprint() string {
	b, err := json.Marshal(l)
	if err != nil {
		panic(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// layoutRecord is testdata/table-layouts.json.
type layoutRecord struct {
	About   string          `json:"about"`
	Layouts []layoutVersion `json:"layouts"`
}

type layoutVersion struct {
	Fingerprint string      `json:"fingerprint"`
	Layout      tableLayout `json:"layout"`
	// Migration copies a retained table of the previous layout into the
	// stack's new table; nil for the first entry and for an in-place
	// change.
	Migration *migration `json:"migration"`
	// InPlace says why the change from the previous layout keeps the
	// table: CloudFormation adds or removes one global secondary index
	// (and the attribute definitions of its keys) on the existing table,
	// and DynamoDB backfills an added one. inPlaceChange checks that this
	// is all that changed.
	InPlace string `json:"inPlace,omitempty"`
}

type migration struct {
	// Command is what a user runs: "make <target> ..." (a Makefile
	// target) or "turnctl <subcommand> ..." (cmd/turnctl).
	Command string `json:"command"`
	// Doc is where the steps are written, e.g. "docs/deploy.md#updating-a-stack".
	Doc string `json:"doc"`
}

// TestTableLayoutRecorded fails when the table's key schema or indexes, in
// template.yaml or in dynamo.CreateTableInput, differ from the last layout
// recorded in testdata/table-layouts.json, or when a recorded layout
// after the first has no migration a user can run (docs/design.md#storage-one-dynamodb-table).
func TestTableLayoutRecorded(t *testing.T) {
	t.Parallel()
	code := codeLayout()
	tbl, err := load(t, nil).tpl.GetDynamoDBTableWithName("Table")
	if err != nil {
		t.Fatal(err)
	}
	if tpl := templateLayout(tbl); tpl.fingerprint() != code.fingerprint() {
		t.Errorf("template.yaml's table layout %s differs from dynamo.CreateTableInput's %s (TestTemplate says where)",
			tpl.fingerprint(), code.fingerprint())
	}

	raw, err := os.ReadFile(layoutsFile)
	if err != nil {
		t.Fatal(err)
	}
	var rec layoutRecord
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rec); err != nil {
		t.Fatalf("%s: %v", layoutsFile, err)
	}
	if len(rec.Layouts) == 0 {
		t.Fatalf("%s records no layout", layoutsFile)
	}
	root := repoRoot(t)
	for i, v := range rec.Layouts {
		if got := v.Layout.fingerprint(); v.Fingerprint != got {
			t.Errorf("%s: layouts[%d] has fingerprint %s, its layout %s", layoutsFile, i, v.Fingerprint, got)
		}
		switch {
		case i == 0 && (v.Migration != nil || v.InPlace != ""):
			t.Errorf("%s: layouts[0] is the first recorded layout: no migration leads to it", layoutsFile)
		case i > 0 && v.InPlace != "":
			if v.Migration != nil {
				t.Errorf("%s: layouts[%d] is in place and has a migration: one or the other", layoutsFile, i)
			}
			if err := inPlaceChange(rec.Layouts[i-1].Layout, v.Layout); err != nil {
				t.Errorf("%s: layouts[%d] is marked in place, but %v: CloudFormation would replace the table", layoutsFile, i, err)
			}
		case i > 0:
			checkMigration(t, root, i, v.Migration)
		}
	}
	last := rec.Layouts[len(rec.Layouts)-1]
	if last.Fingerprint != code.fingerprint() {
		var entry bytes.Buffer
		enc := json.NewEncoder(&entry)
		enc.SetEscapeHTML(false)
		enc.SetIndent("    ", "  ")
		_ = enc.Encode(layoutVersion{Fingerprint: code.fingerprint(), Layout: code,
			Migration: &migration{Command: "make <target> ... (or turnctl <subcommand> ...)", Doc: "docs/deploy.md#<section>"}})
		t.Errorf("the table's key schema or indexes changed (layout %s, last recorded %s).\n"+
			"Updating a stack then replaces its table with a new, EMPTY one (the old one is retained, its data not copied).\n"+
			"Keep the layout, or ship a migration that copies a retained table into the new one (idempotent, resumable)\n"+
			"and record it: append to %s\n    %s\n(docs/design.md#storage-one-dynamodb-table, \"Stack upgrades keep data\")",
			code.fingerprint(), last.Fingerprint, layoutsFile, bytes.TrimSpace(entry.Bytes()))
	}
}

// inPlaceChange reports why the change from prev to cur is not one that
// CloudFormation applies to the existing table (nil when it is): the key
// schema and the local secondary indexes unchanged, exactly one global
// secondary index added or removed (CloudFormation's limit per update),
// no other index changed, and the attribute definitions changed only by
// the keys of the global indexes.
func inPlaceChange(prev, cur tableLayout) error {
	switch {
	case !slices.Equal(prev.KeySchema, cur.KeySchema):
		return fmt.Errorf("the key schema changed")
	case !reflect.DeepEqual(prev.LocalSecondaryIndexes, cur.LocalSecondaryIndexes):
		return fmt.Errorf("a local secondary index changed")
	}
	byName := func(ix []indexLayout) map[string]indexLayout {
		m := map[string]indexLayout{}
		for _, i := range ix {
			m[i.Name] = i
		}
		return m
	}
	p, c := byName(prev.GlobalSecondaryIndexes), byName(cur.GlobalSecondaryIndexes)
	changed := 0
	for name, i := range p {
		if j, ok := c[name]; !ok {
			changed++
		} else if !reflect.DeepEqual(i, j) {
			return fmt.Errorf("global secondary index %s changed (remove it in one update, add it in the next)", name)
		}
	}
	for name := range c {
		if _, ok := p[name]; !ok {
			changed++
		}
	}
	if changed != 1 {
		return fmt.Errorf("%d global secondary indexes were added or removed, not 1", changed)
	}
	keys := func(l tableLayout) []string {
		var out []string
		for _, a := range l.Attributes {
			name, _, _ := strings.Cut(a, ":")
			used := false
			for _, ix := range l.GlobalSecondaryIndexes {
				for _, k := range ix.KeySchema {
					kn, _, _ := strings.Cut(k, ":")
					used = used || kn == name
				}
			}
			if !used || slices.ContainsFunc(l.KeySchema, func(k string) bool { return strings.HasPrefix(k, name+":") }) {
				out = append(out, a)
			}
		}
		return out
	}
	if !slices.Equal(keys(prev), keys(cur)) {
		return fmt.Errorf("attribute definitions other than the global indexes' keys changed")
	}
	return nil
}

// checkMigration: a recorded migration names a command that exists and
// the document that explains it.
func checkMigration(t *testing.T, root string, i int, m *migration) {
	t.Helper()
	if m == nil || m.Command == "" || m.Doc == "" {
		t.Errorf("%s: layouts[%d] has no migration (command and doc): a layout change must ship with one", layoutsFile, i)
		return
	}
	fields := strings.Fields(m.Command)
	if len(fields) < 2 {
		t.Errorf("%s: layouts[%d]: migration command %q, want \"make <target> ...\" or \"turnctl <subcommand> ...\"", layoutsFile, i, m.Command)
		return
	}
	switch fields[0] {
	case "make":
		mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
		if err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(fields[1]) + `:`).Match(mk) {
			t.Errorf("%s: layouts[%d]: the Makefile has no target %q", layoutsFile, i, fields[1])
		}
	case "turnctl":
		src, _ := filepath.Glob(filepath.Join(root, "cmd", "turnctl", "*.go"))
		found := false
		for _, f := range src {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			found = found || bytes.Contains(b, []byte(`"`+fields[1]+`"`))
		}
		if !found {
			t.Errorf("%s: layouts[%d]: cmd/turnctl has no subcommand %q", layoutsFile, i, fields[1])
		}
	default:
		t.Errorf("%s: layouts[%d]: migration command %q, want \"make <target> ...\" or \"turnctl <subcommand> ...\"", layoutsFile, i, m.Command)
	}
	doc, _, _ := strings.Cut(m.Doc, "#")
	if _, err := os.Stat(filepath.Join(root, doc)); err != nil {
		t.Errorf("%s: layouts[%d]: migration doc %s: %v", layoutsFile, i, m.Doc, err)
	}
}

// codeLayout is the layout dynamo.CreateTableInput creates.
func codeLayout() tableLayout {
	in := dynamo.CreateTableInput("x")
	var l tableLayout
	for _, a := range in.AttributeDefinitions {
		l.Attributes = append(l.Attributes, deref(a.AttributeName)+":"+string(a.AttributeType))
	}
	for _, k := range in.KeySchema {
		l.KeySchema = append(l.KeySchema, deref(k.AttributeName)+":"+string(k.KeyType))
	}
	for _, i := range in.LocalSecondaryIndexes {
		x := indexLayout{Name: deref(i.IndexName), Projection: string(i.Projection.ProjectionType), NonKeyAttributes: slices.Clone(i.Projection.NonKeyAttributes)}
		for _, k := range i.KeySchema {
			x.KeySchema = append(x.KeySchema, deref(k.AttributeName)+":"+string(k.KeyType))
		}
		l.LocalSecondaryIndexes = append(l.LocalSecondaryIndexes, x)
	}
	for _, i := range in.GlobalSecondaryIndexes {
		x := indexLayout{Name: deref(i.IndexName), Projection: string(i.Projection.ProjectionType), NonKeyAttributes: slices.Clone(i.Projection.NonKeyAttributes)}
		for _, k := range i.KeySchema {
			x.KeySchema = append(x.KeySchema, deref(k.AttributeName)+":"+string(k.KeyType))
		}
		l.GlobalSecondaryIndexes = append(l.GlobalSecondaryIndexes, x)
	}
	return l.canonical()
}

// templateLayout is the layout of template.yaml's table.
func templateLayout(tbl *dynamodb.Table) tableLayout {
	var l tableLayout
	for _, a := range tbl.AttributeDefinitions {
		l.Attributes = append(l.Attributes, a.AttributeName+":"+a.AttributeType)
	}
	for _, k := range tbl.KeySchema {
		l.KeySchema = append(l.KeySchema, k.AttributeName+":"+k.KeyType)
	}
	for _, i := range tbl.LocalSecondaryIndexes {
		x := indexLayout{Name: i.IndexName, Projection: deref(i.Projection.ProjectionType), NonKeyAttributes: slices.Clone(i.Projection.NonKeyAttributes)}
		for _, k := range i.KeySchema {
			x.KeySchema = append(x.KeySchema, k.AttributeName+":"+k.KeyType)
		}
		l.LocalSecondaryIndexes = append(l.LocalSecondaryIndexes, x)
	}
	for _, i := range tbl.GlobalSecondaryIndexes {
		x := indexLayout{Name: i.IndexName, Projection: deref(i.Projection.ProjectionType), NonKeyAttributes: slices.Clone(i.Projection.NonKeyAttributes)}
		for _, k := range i.KeySchema {
			x.KeySchema = append(x.KeySchema, k.AttributeName+":"+k.KeyType)
		}
		l.GlobalSecondaryIndexes = append(l.GlobalSecondaryIndexes, x)
	}
	return l.canonical()
}

// canonical sorts what has no order: attributes, indexes by name, their
// non-key attributes. Key schemas keep theirs (HASH before RANGE).
func (l tableLayout) canonical() tableLayout {
	slices.Sort(l.Attributes)
	for _, idx := range [][]indexLayout{l.LocalSecondaryIndexes, l.GlobalSecondaryIndexes} {
		for i := range idx {
			slices.Sort(idx[i].NonKeyAttributes)
		}
		slices.SortFunc(idx, func(a, b indexLayout) int { return strings.Compare(a.Name, b.Name) })
	}
	if l.LocalSecondaryIndexes == nil {
		l.LocalSecondaryIndexes = []indexLayout{}
	}
	if l.GlobalSecondaryIndexes == nil {
		l.GlobalSecondaryIndexes = []indexLayout{}
	}
	return l
}

// TestLayoutFingerprintSeesEveryChange pins that the fingerprint moves with
// each part of the layout that forces a table replacement.
func TestLayoutFingerprintSeesEveryChange(t *testing.T) {
	t.Parallel()
	base := codeLayout()
	changes := map[string]func(l *tableLayout){
		"sort key":         func(l *tableLayout) { l.KeySchema[1] = "sk2:RANGE" },
		"attribute type":   func(l *tableLayout) { l.Attributes[0] += "N" },
		"index projection": func(l *tableLayout) { l.LocalSecondaryIndexes[0].Projection = "KEYS_ONLY" },
		"projected attribute": func(l *tableLayout) {
			l.LocalSecondaryIndexes[1].NonKeyAttributes = append(l.LocalSecondaryIndexes[1].NonKeyAttributes, "x")
		},
		"index renamed": func(l *tableLayout) { l.LocalSecondaryIndexes[0].Name += "2" },
		"global index added": func(l *tableLayout) {
			l.GlobalSecondaryIndexes = append(l.GlobalSecondaryIndexes, indexLayout{Name: "g"})
		},
		"local index dropped":   func(l *tableLayout) { l.LocalSecondaryIndexes = l.LocalSecondaryIndexes[:1] },
		"index sort key":        func(l *tableLayout) { l.LocalSecondaryIndexes[0].KeySchema[1] = "other:RANGE" },
		"key schema type order": func(l *tableLayout) { slices.Reverse(l.KeySchema) },
	}
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			l := codeLayout()
			change(&l)
			if l.fingerprint() == base.fingerprint() {
				t.Errorf("fingerprint unchanged by %s: %s", name, fmt.Sprint(l))
			}
		})
	}
}

// TestInPlaceChange: only one global secondary index added or removed
// (with its keys' attribute definitions) counts as in place.
func TestInPlaceChange(t *testing.T) {
	base := tableLayout{
		Attributes: []string{"pk:S", "sk:S"}, KeySchema: []string{"pk:HASH", "sk:RANGE"},
		LocalSecondaryIndexes: []indexLayout{{Name: "l", KeySchema: []string{"pk:HASH", "x:RANGE"}, Projection: "ALL"}},
	}
	gsi := func(name string) indexLayout {
		return indexLayout{Name: name, KeySchema: []string{"o:HASH", "a:RANGE"}, Projection: "KEYS_ONLY"}
	}
	with := func(edit func(*tableLayout)) tableLayout {
		l := base
		l.Attributes = slices.Clone(base.Attributes)
		l.LocalSecondaryIndexes = slices.Clone(base.LocalSecondaryIndexes)
		edit(&l)
		return l
	}
	added := with(func(l *tableLayout) {
		l.Attributes = append(l.Attributes, "a:N", "o:S")
		l.GlobalSecondaryIndexes = []indexLayout{gsi("g")}
	})
	for name, tc := range map[string]struct {
		prev, cur tableLayout
		ok        bool
	}{
		"one index added":   {base, added, true},
		"one index removed": {added, base, true},
		"two indexes added": {base, with(func(l *tableLayout) {
			l.Attributes = append(l.Attributes, "a:N", "o:S")
			l.GlobalSecondaryIndexes = []indexLayout{gsi("g"), gsi("h")}
		}), false},
		"an index changed": {added, with(func(l *tableLayout) {
			l.Attributes = append(l.Attributes, "a:N", "o:S")
			g := gsi("g")
			g.Projection = "ALL"
			l.GlobalSecondaryIndexes = []indexLayout{g}
		}), false},
		"the key schema changed": {base, with(func(l *tableLayout) {
			l.KeySchema = []string{"pk:HASH"}
			l.GlobalSecondaryIndexes = []indexLayout{gsi("g")}
		}), false},
		"a local index changed": {base, with(func(l *tableLayout) {
			l.LocalSecondaryIndexes[0].Projection = "KEYS_ONLY"
			l.GlobalSecondaryIndexes = []indexLayout{gsi("g")}
		}), false},
		"another attribute": {base, with(func(l *tableLayout) {
			l.Attributes = append(l.Attributes, "a:N", "o:S", "z:S")
			l.GlobalSecondaryIndexes = []indexLayout{gsi("g")}
		}), false},
		"nothing changed": {base, base, false},
	} {
		if err := inPlaceChange(tc.prev, tc.cur); (err == nil) != tc.ok {
			t.Errorf("%s: inPlaceChange = %v, want ok %v", name, err, tc.ok)
		}
	}
}
