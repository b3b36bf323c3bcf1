package api_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// update rewrites clients/js/src/wire.ts from this package's declarations.
var update = flag.Bool("update", false, "rewrite clients/js/src/wire.ts from pkg/api")

// wireTS is the generated TypeScript declaration of the contract.
const wireTS = "../../clients/js/src/wire.ts"

// tsVars are the package's exported variables and the TypeScript name
// of each (a readonly tuple). Every exported variable must be here.
var tsVars = map[string]struct {
	ts    string
	value []string
}{
	"SnapshotScopes":    {"SNAPSHOT_SCOPES", api.SnapshotScopes},
	"StreamModes":       {"STREAM_MODES", api.StreamModes},
	"MultitaskPolicies": {"MULTITASK_POLICIES", api.MultitaskPolicies},
	"Extensions":        {"EXTENSIONS", api.Extensions},
}

// tsTypes are the body types, instantiated: generic ones with the wire's
// counters. Every exported type must be here.
var tsTypes = []any{
	api.SessionSummary{}, api.CurrentTurn{}, api.PendingInteraction{}, api.PendingApproval{}, api.QueuedTurn{},
	api.Queued{}, api.StopRequest{}, api.StopAnswer{}, api.ErrorBody{},
	api.UsageCounters{}, api.UsageReport[api.UsageCounters]{}, api.UsagePrincipal{}, api.LimitStatus{},
	api.TenantUsageReport[api.UsageCounters]{}, api.TenantActivity{}, api.PrincipalRow[api.UsageCounters]{},
	api.Capabilities{}, api.ProtocolVersions{}, api.SnapshotScopeCapability{}, api.LineageCapability{},
	api.StopCapability{}, api.ApprovalsCapability{}, api.CompactCapability{}, api.AGUICapability{},
	api.AGUIResumeCapability{}, api.ResumeCapability{}, api.DurableTurnsCapability{}, api.MultitaskCapability{},
	api.DefinitionPolicies{}, api.QuotasCapability{}, api.Quotas{}, api.QuotaLimits{}, api.UsageRoute{},
	api.QuotaCodes{}, api.BudgetsCapability{}, api.TurnBudgets{}, api.LimitsCapability{},
	api.ApprovalMetadata{}, api.PendingConfirmation{}, api.ConfirmationMetadata{}, api.Warning{},
	api.SessionList{}, api.SessionListItem{}, api.ListedTurn{}, api.RenameRequest{}, api.Feedback{}, api.DeleteProgress{},
	api.UploadRequest{}, api.UploadTicket{}, api.UploadForm{}, api.AttachmentDownload{},
	api.Siblings{}, api.ForkRequest{},
}

// TestTypeScriptContract: clients/js/src/wire.ts is exactly what this
// package's declarations generate (constants, the tuples of names, the
// body interfaces, the union of every diagnostic code), so the
// TypeScript client, which imports its headers, names and body types
// from it, cannot drift from the Go contract. Run with -update after
// changing pkg/api or the code table, then rebuild clients/js.
func TestTypeScriptContract(t *testing.T) {
	got := generateTS(t)
	if *update {
		if err := os.WriteFile(wireTS, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(wireTS)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := range max(len(gl), len(wl)) {
			g, w := "", ""
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("clients/js/src/wire.ts is not what pkg/api generates (first difference at line %d):\n  generated: %s\n  committed: %s\nrun: go test ./pkg/api -run TestTypeScriptContract -update, then make js-build", i+1, g, w)
			}
		}
	}
}

// TestNoContractLiteralsInTypeScript: the TypeScript client's sources
// other than wire.ts hold no header name of the contract: they import it.
func TestNoContractLiteralsInTypeScript(t *testing.T) {
	files, err := filepath.Glob("../../clients/js/src/*.ts")
	if err != nil || len(files) == 0 {
		t.Fatalf("no TypeScript sources: %v", err)
	}
	for _, f := range files {
		if filepath.Base(f) == "wire.ts" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, `"X-Turnstream-`) || strings.Contains(line, `'X-Turnstream-`) {
				t.Errorf("%s:%d declares a contract header by hand (import it from wire.ts): %s", f, i+1, strings.TrimSpace(line))
			}
		}
	}
}

// generateTS returns wire.ts.
func generateTS(t *testing.T) []byte {
	t.Helper()
	pkg := parseAPI(t)
	var b bytes.Buffer
	b.WriteString("// Code generated from pkg/api by TestTypeScriptContract; DO NOT EDIT.\n")
	b.WriteString("// go test ./pkg/api -run TestTypeScriptContract -update rewrites it.\n")
	b.WriteString("//\n// turnstream's HTTP contract beside the turn protocol: headers, capability\n")
	b.WriteString("// names, routes, and the JSON bodies of the routes that are not turn events.\n\n")
	b.WriteString("import type { JSONValue } from \"./json.js\";\nimport type { TurnDiagnostic } from \"./protocol.js\";\n")

	// Constants, in declaration order.
	for _, c := range pkg.Consts {
		b.WriteString("\n")
		if len(c.Names) > 1 {
			for _, l := range strings.Split(strings.TrimSpace(c.Doc), "\n") {
				fmt.Fprintf(&b, "// %s\n", l)
			}
		}
		for _, name := range c.Names {
			if !ast.IsExported(name) {
				continue
			}
			val := constValue(t, pkg, name)
			if len(c.Names) == 1 {
				writeDoc(&b, c.Doc, "")
			} else {
				writeDoc(&b, ownDoc(c, name), "")
			}
			fmt.Fprintf(&b, "export const %s = %s;\n", upperSnake(name), val)
		}
	}
	// Variables: readonly tuples.
	for _, v := range pkg.Vars {
		for _, name := range v.Names {
			tv, ok := tsVars[name]
			if !ok {
				t.Fatalf("exported variable %s has no TypeScript name in tsVars", name)
			}
			b.WriteString("\n")
			writeDoc(&b, v.Doc, "")
			quoted := make([]string, len(tv.value))
			for i, s := range tv.value {
				quoted[i] = strconv.Quote(s)
			}
			fmt.Fprintf(&b, "export const %s = [%s] as const;\n", tv.ts, strings.Join(quoted, ", "))
		}
	}
	b.WriteString("\n/** MultitaskPolicy is one of MULTITASK_POLICIES. */\nexport type MultitaskPolicy = (typeof MULTITASK_POLICIES)[number];\n")
	b.WriteString("\n/** Extension is one of EXTENSIONS. */\nexport type Extension = (typeof EXTENSIONS)[number];\n")
	b.WriteString("\n/** WireCode is every diagnostic code a turnstream server sends (pkg/protocol's table). */\nexport type WireCode =\n")
	for i, c := range protocol.Codes() {
		end := ""
		if i == len(protocol.Codes())-1 {
			end = ";"
		}
		fmt.Fprintf(&b, "  | %q%s\n", c, end)
	}

	// Types.
	docs := map[string]*doc.Type{}
	for _, ty := range pkg.Types {
		docs[ty.Name] = ty
	}
	emitted := map[string]bool{}
	for _, v := range tsTypes {
		rt := reflect.TypeOf(v)
		name := tsName(rt)
		dt, ok := docs[name]
		if !ok {
			t.Fatalf("%s is not declared in pkg/api", name)
		}
		emitted[name] = true
		b.WriteString("\n")
		writeDoc(&b, dt.Doc, "")
		fmt.Fprintf(&b, "export interface %s {\n", name)
		fields := fieldDocs(dt)
		for i := range rt.NumField() {
			f := rt.Field(i)
			tag := f.Tag.Get("json")
			jname, opts, _ := strings.Cut(tag, ",")
			if jname == "-" || !f.IsExported() {
				continue
			}
			if jname == "" {
				t.Fatalf("%s.%s has no json name", name, f.Name)
			}
			omitted := strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero")
			ft := f.Type
			if omitted && ft.Kind() == reflect.Pointer {
				ft = ft.Elem() // absent, never null
			}
			typ := f.Tag.Get("ts")
			if typ == "" {
				typ = tsType(t, ft)
			}
			opt := ""
			if omitted {
				opt = "?"
			}
			writeDoc(&b, fields[f.Name], "  ")
			fmt.Fprintf(&b, "  %s%s: %s;\n", jname, opt, typ)
		}
		b.WriteString("}\n")
	}
	for _, ty := range pkg.Types {
		if !emitted[ty.Name] {
			t.Fatalf("exported type %s is not in tsTypes", ty.Name)
		}
	}
	return b.Bytes()
}

// parseAPI reads this package's declarations and their doc comments.
func parseAPI(t *testing.T) *doc.Package {
	t.Helper()
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, name := range names { // sorted by Glob
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	d, err := doc.NewFromFiles(fset, files, "github.com/turnstream/turnstream/pkg/api")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// constValue returns the TypeScript literal of the exported constant name,
// read from its declaration (a string or integer literal).
func constValue(t *testing.T, pkg *doc.Package, name string) string {
	t.Helper()
	for _, c := range pkg.Consts {
		for _, spec := range c.Decl.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if n.Name != name {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok {
					t.Fatalf("constant %s is not a literal", name)
				}
				switch lit.Kind {
				case token.STRING:
					s, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					q, _ := json.Marshal(s)
					return string(q)
				case token.INT:
					return strings.ReplaceAll(lit.Value, "_", "")
				}
				t.Fatalf("constant %s: unsupported literal %s", name, lit.Value)
			}
		}
	}
	t.Fatalf("constant %s not found", name)
	return ""
}

// ownDoc is the doc comment of the constant name itself, "" when it has
// none (its group's is written once before the group).
func ownDoc(c *doc.Value, name string) string {
	for _, spec := range c.Decl.Specs {
		vs := spec.(*ast.ValueSpec)
		for _, n := range vs.Names {
			if n.Name == name && vs.Doc != nil {
				return vs.Doc.Text()
			}
		}
	}
	return ""
}

// fieldDocs returns the doc comments of a struct type's fields by name.
func fieldDocs(dt *doc.Type) map[string]string {
	out := map[string]string{}
	for _, spec := range dt.Decl.Specs {
		ts, ok := spec.(*ast.TypeSpec)
		if !ok {
			continue
		}
		st, ok := ts.Type.(*ast.StructType)
		if !ok {
			continue
		}
		for _, f := range st.Fields.List {
			if f.Doc == nil {
				continue
			}
			for _, n := range f.Names {
				out[n.Name] = f.Doc.Text()
			}
		}
	}
	return out
}

// tsName is a Go type's TypeScript name: its name without type arguments.
func tsName(rt reflect.Type) string {
	name, _, _ := strings.Cut(rt.Name(), "[")
	return name
}

var (
	rawMessage = reflect.TypeFor[json.RawMessage]()
	diagnostic = reflect.TypeFor[protocol.Diagnostic]()
)

// tsType maps a field's Go type to TypeScript.
func tsType(t *testing.T, rt reflect.Type) string {
	switch rt {
	case rawMessage:
		return "JSONValue"
	case diagnostic:
		return "TurnDiagnostic"
	}
	switch rt.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Float64:
		return "number"
	case reflect.Pointer:
		return tsType(t, rt.Elem()) + " | null"
	case reflect.Slice:
		el := tsType(t, rt.Elem())
		if strings.Contains(el, " ") {
			el = "(" + el + ")"
		}
		return el + "[]"
	case reflect.Map:
		return "Record<string, " + tsType(t, rt.Elem()) + ">"
	case reflect.Struct:
		if rt.PkgPath() != reflect.TypeFor[api.Queued]().PkgPath() {
			t.Fatalf("no TypeScript type for %s", rt)
		}
		return tsName(rt)
	}
	t.Fatalf("no TypeScript type for %s", rt)
	return ""
}

// writeDoc writes text as a JSDoc comment, indented by indent.
func writeDoc(b *bytes.Buffer, text, indent string) {
	text = strings.TrimSpace(text)
	if text == "" {
		return
	}
	text = strings.ReplaceAll(text, "*/", "*\\/")
	lines := strings.Split(text, "\n")
	fmt.Fprintf(b, "%s/**\n", indent)
	for _, l := range lines {
		l = strings.TrimRightFunc(l, unicode.IsSpace)
		if l == "" {
			fmt.Fprintf(b, "%s *\n", indent)
			continue
		}
		fmt.Fprintf(b, "%s * %s\n", indent, l)
	}
	fmt.Fprintf(b, "%s */\n", indent)
}

var camelWord = regexp.MustCompile(`[A-Z]+[a-z0-9]*|[a-z0-9]+`)

// upperSnake turns a Go name into a TypeScript constant name:
// SnapshotScopeHeader -> SNAPSHOT_SCOPE_HEADER, ExtensionAGUI ->
// EXTENSION_AGUI.
func upperSnake(name string) string {
	var words []string
	for _, w := range camelWord.FindAllString(name, -1) {
		// An initialism followed by a word ("AGUIResume") splits before
		// the word's capital.
		if n := len(w); n > 2 && unicode.IsUpper(rune(w[0])) && unicode.IsUpper(rune(w[1])) && unicode.IsLower(rune(w[n-1])) {
			i := strings.LastIndexFunc(w, unicode.IsUpper)
			words = append(words, w[:i], w[i:])
			continue
		}
		words = append(words, w)
	}
	return strings.ToUpper(strings.Join(words, "_"))
}
