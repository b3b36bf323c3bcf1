package definition_test

import (
	"errors"
	"io/fs"
	"reflect"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/definition"
)

func known(names ...string) func(string) bool {
	return func(n string) bool {
		for _, k := range names {
			if k == n {
				return true
			}
		}
		return false
	}
}

const goodFile = `[
  {"id": "default", "revision": 3, "systemPrompt": "Be brief.", "provider": "echo"},
  {"id": "support.v2", "revision": 12, "provider": "bedrock", "modelId": "anthropic.claude-test", "titleModel": "anthropic.haiku-test",
   "tools": ["workspace_note"], "limits": {"maxSteps": 4, "maxTokens": 2048}},
  {"id": "local", "revision": 1, "provider": "openai", "modelId": "llama3", "limits": {"maxTokens": 512}, "promptCache": false},
  {"id": "thinker", "revision": 1, "provider": "bedrock", "modelId": "us.anthropic.claude-sonnet-4", "reasoning": {"budgetTokens": 2048}, "limits": {"maxTokens": 4096}},
  {"id": "quiet", "revision": 1, "provider": "openai", "modelId": "deepseek-reasoner", "reasoning": {"visible": false}}
]`

func TestParseAndResolve(t *testing.T) {
	defs, err := definition.Parse([]byte(goodFile))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	r, err := definition.New(defs, "default", known("workspace_note"))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	tests := map[string]struct {
		id   string
		want definition.Definition
	}{
		"new session gets the default": {"", definition.Definition{ID: "default", Revision: 3, SystemPrompt: "Be brief.", Provider: "echo", Limits: definition.Limits{MaxSteps: 8}}},
		"session keeps its id": {"support.v2", definition.Definition{ID: "support.v2", Revision: 12, Provider: "bedrock", ModelID: "anthropic.claude-test", TitleModelID: "anthropic.haiku-test",
			Tools: []string{"workspace_note"}, Limits: definition.Limits{MaxSteps: 4, MaxTokens: 2048}}},
		"default limits, no prompt cache": {"local", definition.Definition{ID: "local", Revision: 1, Provider: "openai", ModelID: "llama3", NoPromptCache: true, Limits: definition.Limits{MaxSteps: 8, MaxTokens: 512}}},
		"a reasoning budget": {"thinker", definition.Definition{ID: "thinker", Revision: 1, Provider: "bedrock", ModelID: "us.anthropic.claude-sonnet-4",
			Reasoning: &definition.Reasoning{BudgetTokens: 2048}, Limits: definition.Limits{MaxSteps: 8, MaxTokens: 4096}}},
		"hidden reasoning, no budget": {"quiet", definition.Definition{ID: "quiet", Revision: 1, Provider: "openai", ModelID: "deepseek-reasoner",
			Reasoning: &definition.Reasoning{Hidden: true}, Limits: definition.Limits{MaxSteps: 8}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := r.Resolve(tc.id)
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Resolve(%q) = %+v, want %+v", tc.id, got, tc.want)
			}
		})
	}
	t.Run("unknown id", func(t *testing.T) {
		if _, err := r.Resolve("gone"); !errors.Is(err, definition.ErrUnknownDefinition) {
			t.Fatalf("Resolve(gone) = %v, want ErrUnknownDefinition", err)
		}
	})
	t.Run("result is a copy", func(t *testing.T) {
		d, _ := r.Resolve("support.v2")
		d.Tools[0] = "changed"
		if again, _ := r.Resolve("support.v2"); again.Tools[0] != "workspace_note" {
			t.Errorf("Resolve shares its Tools slice")
		}
	})
	t.Run("All keeps file order", func(t *testing.T) {
		var ids []string
		for _, d := range r.All() {
			ids = append(ids, d.ID)
		}
		if strings.Join(ids, ",") != "default,support.v2,local,thinker,quiet" {
			t.Errorf("All ids = %v", ids)
		}
		if r.Default().ID != "default" {
			t.Errorf("Default = %+v", r.Default())
		}
	})
}

// TestRevisionBump shows that a new configuration with a bumped revision
// applies to an existing session's next resolution.
func TestRevisionBump(t *testing.T) {
	load := func(rev string) *definition.Resolver {
		t.Helper()
		defs, err := definition.Parse([]byte(`[{"id":"a","revision":` + rev + `,"provider":"echo","systemPrompt":"v` + rev + `"}]`))
		if err != nil {
			t.Fatal(err)
		}
		r, err := definition.New(defs, "a", nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	sessionDefinitionID := load("1").Default().ID
	d, err := load("2").Resolve(sessionDefinitionID)
	if err != nil || d.Revision != 2 || d.SystemPrompt != "v2" {
		t.Fatalf("after bump Resolve = %+v, %v", d, err)
	}
}

func TestParseInvalid(t *testing.T) {
	tests := map[string]struct {
		file string
		want string // substring naming the field
	}{
		"not JSON":                 {`[{`, "invalid JSON"},
		"not an array":             {`{"id":"a"}`, "(root): wrong type or value"},
		"null":                     {`null`, "want a JSON array"},
		"unknown member":           {`[{"id":"a","revision":1,"provider":"echo","model":"x"}]`, "/0/model: unknown member"},
		"case-folded name":         {`[{"ID":"a","revision":1,"provider":"echo"}]`, "/0/ID: unknown member"},
		"duplicate member":         {`[{"id":"a","id":"b","revision":1,"provider":"echo"}]`, "/0/id: duplicate member"},
		"revision string":          {`[{"id":"a","revision":"1","provider":"echo"}]`, "/0/revision: wrong type or value"},
		"revision fraction":        {`[{"id":"a","revision":1.5,"provider":"echo"}]`, "/0/revision: wrong type or value"},
		"tools not list":           {`[{"id":"a","revision":1,"provider":"echo","tools":"x"}]`, "/0/tools: wrong type or value"},
		"limits unknown":           {`[{"id":"a","revision":1,"provider":"echo","limits":{"steps":2}}]`, "/0/limits/steps: unknown member"},
		"missing id":               {`[{"revision":1,"provider":"echo"}]`, "definitions[0].id: required"},
		"missing revision":         {`[{"id":"a","provider":"echo"}]`, "definitions[0].revision: required"},
		"missing provider":         {`[{"id":"a","revision":1}]`, "definitions[0].provider: required"},
		"null id":                  {`[{"id":null,"revision":1,"provider":"echo"}]`, "definitions[0].id: required"},
		"invalid UTF-8":            {"[{\"id\":\"a\",\"revision\":1,\"provider\":\"echo\",\"systemPrompt\":\"\xff\"}]", "invalid JSON"},
		"multitask unknown member": {`[{"id":"a","revision":1,"provider":"echo","multitask":{"policy":"enqueue"}}]`, "/0/multitask/policy: unknown member"},
		"multitask allowed empty":  {`[{"id":"a","revision":1,"provider":"echo","multitask":{"allowed":[]}}]`, "definitions[0].multitask.allowed: want at least one"},
		"multitask default number": {`[{"id":"a","revision":1,"provider":"echo","multitask":{"default":1}}]`, "/0/multitask/default: wrong type or value"},
		"prompt cache a string":    {`[{"id":"a","revision":1,"provider":"echo","promptCache":"off"}]`, "/0/promptCache: wrong type or value"},
		"reasoning a boolean":      {`[{"id":"a","revision":1,"provider":"echo","reasoning":true}]`, "/0/reasoning: wrong type or value"},
		"reasoning unknown member": {`[{"id":"a","revision":1,"provider":"echo","reasoning":{"budget":2048}}]`, "/0/reasoning/budget: unknown member"},
		"reasoning budget zero":    {`[{"id":"a","revision":1,"provider":"echo","reasoning":{"budgetTokens":0}}]`, "definitions[0].reasoning.budgetTokens: want 1024.."},
		"reasoning budget string":  {`[{"id":"a","revision":1,"provider":"echo","reasoning":{"budgetTokens":"2048"}}]`, "/0/reasoning/budgetTokens: wrong type or value"},
		"reasoning visible string": {`[{"id":"a","revision":1,"provider":"echo","reasoning":{"visible":"no"}}]`, "/0/reasoning/visible: wrong type or value"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := definition.Parse([]byte(tc.file))
			if !errors.Is(err, definition.ErrInvalid) {
				t.Fatalf("Parse = %v, want ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "\xff") || strings.Contains(tc.file, "secret") {
				t.Errorf("error quotes input: %q", err)
			}
		})
	}
}

func TestNewInvalid(t *testing.T) {
	ok := definition.Definition{ID: "a", Revision: 1, Provider: "echo", Limits: definition.Limits{MaxSteps: 8}}
	with := func(f func(*definition.Definition)) []definition.Definition {
		d := ok
		f(&d)
		return []definition.Definition{d}
	}
	tests := map[string]struct {
		defs      []definition.Definition
		defaultID string
		want      string
	}{
		"none":               {nil, "a", "no definitions"},
		"id not SafeId":      {with(func(d *definition.Definition) { d.ID = "-a" }), "-a", "definitions[0].id: not a SafeId"},
		"id repeated":        {append(with(func(*definition.Definition) {}), ok), "a", "definitions[1].id: repeats"},
		"revision zero":      {with(func(d *definition.Definition) { d.Revision = 0 }), "a", "definitions[0].revision"},
		"revision large":     {with(func(d *definition.Definition) { d.Revision = 1 << 53 }), "a", "definitions[0].revision"},
		"provider unknown":   {with(func(d *definition.Definition) { d.Provider = "gpt" }), "a", "definitions[0].provider: want echo, bedrock or openai"},
		"bedrock no model":   {with(func(d *definition.Definition) { d.Provider = "bedrock" }), "a", "definitions[0].modelId: required when provider is bedrock"},
		"openai no model":    {with(func(d *definition.Definition) { d.Provider = "openai"; d.ModelID = " " }), "a", "definitions[0].modelId: required when provider is openai"},
		"tool unknown":       {with(func(d *definition.Definition) { d.Tools = []string{"workspace_note", "nope"} }), "a", "definitions[0].tools[1]: not a registered tool"},
		"title model spaced": {with(func(d *definition.Definition) { d.TitleModelID = " haiku" }), "a", "definitions[0].titleModel"},
		"title model long":   {with(func(d *definition.Definition) { d.TitleModelID = strings.Repeat("m", 257) }), "a", "definitions[0].titleModel"},
		"tool repeated":      {with(func(d *definition.Definition) { d.Tools = []string{"workspace_note", "workspace_note"} }), "a", "definitions[0].tools[1]: repeats"},
		"approval not a tool": {with(func(d *definition.Definition) {
			d.Tools = []string{"workspace_note"}
			d.ApprovalTools = []string{"other"}
		}), "a", "definitions[0].approvalTools[0]: not one of tools"},
		"approval repeated": {with(func(d *definition.Definition) {
			d.Tools = []string{"workspace_note"}
			d.ApprovalTools = []string{"workspace_note", "workspace_note"}
		}), "a", "definitions[0].approvalTools[1]: repeats"},
		"steps zero":      {with(func(d *definition.Definition) { d.Limits.MaxSteps = 0 }), "a", "definitions[0].limits.maxSteps: want 1..64"},
		"steps large":     {with(func(d *definition.Definition) { d.Limits.MaxSteps = 65 }), "a", "definitions[0].limits.maxSteps: want 1..64"},
		"tokens negative": {with(func(d *definition.Definition) { d.Limits.MaxTokens = -1 }), "a", "definitions[0].limits.maxTokens"},
		"tokens large":    {with(func(d *definition.Definition) { d.Limits.MaxTokens = 1_000_001 }), "a", "definitions[0].limits.maxTokens"},
		"reasoning budget small": {with(func(d *definition.Definition) {
			d.Reasoning, d.Limits.MaxTokens = &definition.Reasoning{BudgetTokens: 1023}, 4096
		}), "a", "definitions[0].reasoning.budgetTokens: want 1024..999999"},
		"reasoning budget negative": {with(func(d *definition.Definition) {
			d.Reasoning, d.Limits.MaxTokens = &definition.Reasoning{BudgetTokens: -1}, 4096
		}), "a", "definitions[0].reasoning.budgetTokens: want 1024.."},
		"reasoning budget at max tokens": {with(func(d *definition.Definition) {
			d.Reasoning, d.Limits.MaxTokens = &definition.Reasoning{BudgetTokens: 4096}, 4096
		}), "a", "definitions[0].reasoning.budgetTokens: set limits.maxTokens above"},
		"reasoning budget without max tokens": {with(func(d *definition.Definition) {
			d.Reasoning = &definition.Reasoning{BudgetTokens: 2048}
		}), "a", "definitions[0].reasoning.budgetTokens: set limits.maxTokens above"},
		"default missing":          {with(func(*definition.Definition) {}), "b", "DEFINITION_ID: names no definition"},
		"multitask unknown policy": {with(func(d *definition.Definition) { d.Multitask.Allowed = []string{"reject", "latest"} }), "a", "definitions[0].multitask.allowed[1]: want one of"},
		"multitask repeated":       {with(func(d *definition.Definition) { d.Multitask.Allowed = []string{"reject", "reject"} }), "a", "definitions[0].multitask.allowed[1]"},
		"multitask without reject": {with(func(d *definition.Definition) { d.Multitask.Allowed = []string{"enqueue"} }), "a", "definitions[0].multitask.allowed: must include reject"},
		"multitask default not allowed": {with(func(d *definition.Definition) {
			d.Multitask = definition.Multitask{Default: "enqueue", Allowed: []string{"reject", "interrupt"}}
		}), "a", "definitions[0].multitask.default"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := definition.New(tc.defs, tc.defaultID, known("workspace_note"))
			if !errors.Is(err, definition.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %v, want ErrInvalid containing %q", err, tc.want)
			}
		})
	}
}

func TestMultitask(t *testing.T) {
	defs, err := definition.Parse([]byte(`[{"id":"a","revision":1,"provider":"echo","multitask":{"default":"enqueue","allowed":["reject","enqueue"]}},
		{"id":"b","revision":1,"provider":"echo"}]`))
	if err != nil {
		t.Fatal(err)
	}
	r, err := definition.New(defs, "a", known())
	if err != nil {
		t.Fatal(err)
	}
	a, _ := r.Resolve("a")
	if def, allowed := a.Multitask.Policies(); def != "enqueue" || strings.Join(allowed, ",") != "reject,enqueue" {
		t.Errorf("a: %s %v", def, allowed)
	}
	b, _ := r.Resolve("b")
	if def, allowed := b.Multitask.Policies(); def != "reject" || strings.Join(allowed, ",") != "reject,enqueue,interrupt,rollback" {
		t.Errorf("b (none given): %s %v, want reject and all four", def, allowed)
	}
}

func TestLoad(t *testing.T) {
	files := map[string][]byte{"/defs.json": []byte(goodFile), "/bad.json": []byte(`[{"id":"a"}]`)}
	readFile := func(p string) ([]byte, error) {
		if b, ok := files[p]; ok {
			return b, nil
		}
		return nil, fs.ErrNotExist
	}
	env := config.ModelConfig{Provider: "bedrock", ModelID: "anthropic.x", SystemPrompt: "Hi.", DefinitionID: "default", DefinitionRevision: 5,
		Tools: []string{"workspace_note"}, MaxSteps: 3, MaxTokens: 100}
	withEnv := func(f func(*config.ModelConfig)) config.ModelConfig { m := env; f(&m); return m }
	t.Run("single definition from the environment", func(t *testing.T) {
		r, err := definition.Load(env.Definitions(), readFile, known("workspace_note"))
		if err != nil {
			t.Fatalf("Load: %v", err)
		}
		want := definition.Definition{ID: "default", Revision: 5, SystemPrompt: "Hi.", Provider: "bedrock", ModelID: "anthropic.x",
			Tools: []string{"workspace_note"}, Limits: definition.Limits{MaxSteps: 3, MaxTokens: 100}}
		if got := r.Default(); !reflect.DeepEqual(got, want) {
			t.Errorf("Default = %+v, want %+v", got, want)
		}
	})
	t.Run("file", func(t *testing.T) {
		r, err := definition.Load(withEnv(func(m *config.ModelConfig) { m.DefinitionsFile = "/defs.json"; m.DefinitionID = "support.v2" }).Definitions(), readFile, known("workspace_note"))
		if err != nil {
			t.Fatalf("Load: %v", err)
		}
		if d := r.Default(); d.ID != "support.v2" || d.Revision != 12 {
			t.Errorf("Default = %+v", d)
		}
		if len(r.All()) != 5 {
			t.Errorf("All = %d definitions", len(r.All()))
		}
	})
	errs := map[string]struct {
		m    config.ModelConfig
		want string
	}{
		"unregistered env tool": {withEnv(func(m *config.ModelConfig) { m.Tools = []string{"nope"} }), "MODEL_TOOLS"},
		"file missing":          {withEnv(func(m *config.ModelConfig) { m.DefinitionsFile = "/missing.json" }), "DEFINITIONS_FILE: cannot read the file"},
		"file invalid":          {withEnv(func(m *config.ModelConfig) { m.DefinitionsFile = "/bad.json" }), "DEFINITIONS_FILE: definition: invalid definitions: definitions[0].revision: required"},
		"file lacks default id": {withEnv(func(m *config.ModelConfig) { m.DefinitionsFile = "/defs.json"; m.DefinitionID = "other" }), "DEFINITIONS_FILE: definition: invalid definitions: DEFINITION_ID: names no definition"},
	}
	for name, tc := range errs {
		t.Run(name, func(t *testing.T) {
			_, err := definition.Load(tc.m.Definitions(), readFile, known("workspace_note"))
			if !errors.Is(err, definition.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load = %v, want ErrInvalid containing %q", err, tc.want)
			}
		})
	}
}

// TestApprovalTools: a definitions file's approvalTools and MODEL_TOOLS'
// ":approval" marks reach the definition.
func TestApprovalTools(t *testing.T) {
	defs, err := definition.Parse([]byte(`[{"id":"a","revision":1,"provider":"echo","tools":["workspace_note","note_delete"],"approvalTools":["note_delete"]}]`))
	if err != nil {
		t.Fatal(err)
	}
	r, err := definition.New(defs, "a", known("workspace_note", "note_delete"))
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Default().ApprovalTools; len(got) != 1 || got[0] != "note_delete" {
		t.Errorf("file approval tools = %v", got)
	}
	m := config.ModelConfig{Provider: "echo", DefinitionID: "default", DefinitionRevision: 1, MaxSteps: 2,
		Tools: []string{"note_delete"}, ApprovalTools: []string{"note_delete"}}
	r, err = definition.Load(m.Definitions(), nil, known("note_delete"))
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Default().ApprovalTools; len(got) != 1 || got[0] != "note_delete" {
		t.Errorf("environment approval tools = %v", got)
	}
}
