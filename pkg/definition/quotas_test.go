package definition_test

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/definition"
)

const quotasFile = `[
  {"id": "default", "revision": 1, "provider": "echo",
   "quotas": {"principal": {"turnsPerMinute": 3, "tokensPerDay": 1000}, "tenant": {"tokensPerMonth": 50000}}},
  {"id": "metered", "revision": 1, "provider": "echo",
   "limits": {"maxOutputTokens": 400, "maxToolCalls": 2, "maxWallTimeMs": 90000},
   "quotas": {"principal": {"concurrentSessions": 1}}},
  {"id": "plain", "revision": 1, "provider": "echo"}
]`

// TestQuotasAndBudgets: a definition's quotas (the file's names exactly)
// apply over the deployment-wide default, member by member, and its
// per-turn budgets are read in their units.
func TestQuotasAndBudgets(t *testing.T) {
	defaults := chat.Quotas{Principal: chat.QuotaLimits{TurnsPerMinute: 10, ConcurrentSessions: 4}, Tenant: chat.QuotaLimits{TurnsPerMinute: 100}}
	r, err := definition.Load(definition.Config{File: "defs.json", DefaultID: "default", DefaultQuotas: defaults},
		func(string) ([]byte, error) { return []byte(quotasFile), nil }, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]chat.Quotas{
		"":        {Principal: chat.QuotaLimits{TurnsPerMinute: 3, TokensPerDay: 1000, ConcurrentSessions: 4}, Tenant: chat.QuotaLimits{TurnsPerMinute: 100, TokensPerMonth: 50000}},
		"default": {Principal: chat.QuotaLimits{TurnsPerMinute: 3, TokensPerDay: 1000, ConcurrentSessions: 4}, Tenant: chat.QuotaLimits{TurnsPerMinute: 100, TokensPerMonth: 50000}},
		"metered": {Principal: chat.QuotaLimits{TurnsPerMinute: 10, ConcurrentSessions: 1}, Tenant: chat.QuotaLimits{TurnsPerMinute: 100}},
		"plain":   defaults,
	}
	for id, q := range want {
		if got := r.Quotas(id); got != q {
			t.Errorf("Quotas(%q) = %+v, want %+v", id, got, q)
		}
	}
	if _, uniform := r.UniformQuotas(); uniform {
		t.Error("definitions with different quotas reported uniform")
	}
	d, err := r.Resolve("metered")
	if err != nil {
		t.Fatal(err)
	}
	if l := d.Limits; l.MaxOutputTokens != 400 || l.MaxToolCalls != 2 || l.MaxWallTime != 90*time.Second || !l.Budgets() {
		t.Errorf("limits %+v", l)
	}
	if got, err := definition.DefaultQuotas(definition.Config{File: "defs.json", DefaultID: "default", DefaultQuotas: defaults},
		func(string) ([]byte, error) { return []byte(quotasFile), nil }); err != nil || got != want[""] {
		t.Errorf("DefaultQuotas = %+v, %v; want %+v", got, err, want[""])
	}
	single, err := definition.Load(definition.Config{DefaultID: "a", DefaultQuotas: defaults,
		Single: definition.Definition{Revision: 1, Provider: "echo", Limits: definition.Limits{MaxSteps: 2}}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if q, uniform := single.UniformQuotas(); !uniform || q != defaults {
		t.Errorf("the single definition's quotas %+v (uniform %v), want the default", q, uniform)
	}
}

// TestQuotasInvalid: bad quotas and budgets are errors naming the member,
// never quoting it; QUOTAS decodes as strictly as the file.
func TestQuotasInvalid(t *testing.T) {
	file := func(member string) string {
		return `[{"id":"a","revision":1,"provider":"echo",` + member + `}]`
	}
	for name, tc := range map[string]struct{ file, want string }{
		"unknown quota":        {file(`"quotas":{"principal":{"turnsPerHour":1}}`), "/0/quotas/principal/turnsPerHour: unknown member"},
		"unknown scope":        {file(`"quotas":{"user":{"turnsPerMinute":1}}`), "/0/quotas/user: unknown member"},
		"zero quota":           {file(`"quotas":{"tenant":{"tokensPerDay":0}}`), "definitions[0].quotas.tenant.tokensPerDay: want 1..2^53-1"},
		"negative quota":       {file(`"quotas":{"principal":{"concurrentSessions":-1}}`), "definitions[0].quotas.principal.concurrentSessions"},
		"huge quota":           {file(`"quotas":{"principal":{"tokensPerMonth":9007199254740992}}`), "definitions[0].quotas.principal.tokensPerMonth"},
		"fraction":             {file(`"quotas":{"principal":{"turnsPerMinute":1.5}}`), "/0/quotas/principal/turnsPerMinute: wrong type or value"},
		"case-folded":          {file(`"quotas":{"Principal":{"turnsPerMinute":1}}`), "/0/quotas/Principal: unknown member"},
		"duplicate":            {file(`"quotas":{"principal":{"turnsPerMinute":1,"turnsPerMinute":2}}`), "duplicate member"},
		"output tokens zero":   {file(`"limits":{"maxOutputTokens":0}`), "definitions[0].limits.maxOutputTokens: want 1.."},
		"tool calls too many":  {file(`"limits":{"maxToolCalls":10001}`), "definitions[0].limits.maxToolCalls: want 1..10000"},
		"wall time too long":   {file(`"limits":{"maxWallTimeMs":900001}`), "definitions[0].limits.maxWallTimeMs: want 1..900000"},
		"wall time in seconds": {file(`"limits":{"maxWallTime":60}`), "/0/limits/maxWallTime: unknown member"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := definition.Parse([]byte(tc.file))
			if !errors.Is(err, definition.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse = %v, want ErrInvalid containing %q", err, tc.want)
			}
		})
	}
	for name, tc := range map[string]struct{ doc, want string }{
		"not an object": {`[1]`, "wrong type or value"},
		"null":          {`null`, "want a JSON object"},
		"unknown":       {`{"principal":{"rpm":1}}`, "/principal/rpm: unknown member"},
		"zero":          {`{"principal":{"turnsPerMinute":0}}`, "quotas.principal.turnsPerMinute: want 1..2^53-1"},
		"string value":  {`{"tenant":{"tokensPerDay":"secret-100"}}`, "/tenant/tokensPerDay: wrong type or value"},
	} {
		t.Run("QUOTAS "+name, func(t *testing.T) {
			_, err := definition.ParseQuotas([]byte(tc.doc))
			if !errors.Is(err, definition.ErrInvalid) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "secret") {
				t.Fatalf("ParseQuotas = %v, want ErrInvalid containing %q and no input", err, tc.want)
			}
		})
	}
	q, err := definition.ParseQuotas([]byte(`{"principal":{"turnsPerMinute":3,"tokensPerDay":1000,"tokensPerMonth":20000,"concurrentSessions":2},"tenant":{"turnsPerMinute":30}}`))
	want := chat.Quotas{Principal: chat.QuotaLimits{TurnsPerMinute: 3, TokensPerDay: 1000, TokensPerMonth: 20000, ConcurrentSessions: 2}, Tenant: chat.QuotaLimits{TurnsPerMinute: 30}}
	if err != nil || q != want {
		t.Errorf("ParseQuotas = %+v, %v; want %+v", q, err, want)
	}
	if _, err := definition.DefaultQuotas(definition.Config{File: "x", DefaultID: "a"}, func(string) ([]byte, error) { return nil, fs.ErrNotExist }); !errors.Is(err, definition.ErrInvalid) {
		t.Errorf("DefaultQuotas of a missing file: %v", err)
	}
}
