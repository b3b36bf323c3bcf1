package sessionapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/sessionapi"
	"github.com/turnstream/turnstream/pkg/store/storetest"
)

// usageQuotas are the quotas GET /usage shows in these tests.
var usageQuotas = chat.Quotas{
	Principal: chat.QuotaLimits{TurnsPerMinute: 3, TokensPerDay: 100, ConcurrentSessions: 2},
	Tenant:    chat.QuotaLimits{TokensPerMonth: 1000},
}

// forEachUsageStore runs test per store on a fixture whose history
// handler h serves GET /usage with usageQuotas.
func forEachUsageStore(t *testing.T, test func(t *testing.T, f *fixture, h http.Handler)) {
	t.Helper()
	t.Parallel()
	for name, factory := range storeFactories {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f, h := usageFixture(t, factory)
			test(t, f, h)
		})
	}
}

// usageFixture is a history handler serving GET /usage with usageQuotas.
func usageFixture(t *testing.T, factory storetest.Factory) (*fixture, http.Handler) {
	t.Helper()
	f := newFixture(t, factory)
	h, err := sessionapi.NewHistoryHandler(sessionapi.Options{Store: f.store, Authenticator: devAuthenticator(t),
		Logger: slog.New(slog.NewJSONHandler(f.logs, nil)), Now: f.clock.Now, Usage: &sessionapi.UsageOptions{Quotas: usageQuotas}})
	if err != nil {
		t.Fatal(err)
	}
	return f, h
}

// count records a turn of p in the ledger, started now.
func (f *fixture) count(p chat.Principal, sessionID string, ordinal int64, u chat.Usage) {
	f.t.Helper()
	if err := f.store.RecordUsage(f.ctx, chat.LedgerEntry{SessionID: sessionID, Ordinal: ordinal, Owner: p, StartedAt: f.clock.Now(), Usage: u}); err != nil {
		f.t.Fatal(err)
	}
}

// TestUsageOwnReport: GET /usage shows the caller's counters of the day
// (or month) and every quota that applies: its own with what is used, left
// and when it resets, its tenant's without the tenant's figures.
func TestUsageOwnReport(t *testing.T) {
	forEachUsageStore(t, func(t *testing.T, f *fixture, h http.Handler) {
		f.count(alice, "s1", 1, chat.Usage{InputTokens: 10, OutputTokens: 20, ModelCalls: 1})
		f.count(alice, "s1", 2, chat.Usage{InputTokens: 5, OutputTokens: 5, ModelCalls: 2, ToolCalls: 1})
		f.count(mallory, "s9", 1, chat.Usage{InputTokens: 500})
		a := chat.Admission{ID: "a1", StartedAt: f.clock.Now(), ExpiresAt: f.clock.Now().Add(time.Minute), Session: chat.SessionMarker("s2")}
		if _, err := f.store.Admit(f.ctx, chat.AdmitRequest{Principal: alice, Admission: a}); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(10 * time.Second)
		for _, period := range []string{"", "day", "month"} {
			target := "/usage"
			if period != "" {
				target += "?period=" + period
			}
			res := f.do(h, get(target, alice))
			if res.status != http.StatusOK {
				t.Fatalf("%s: %d %s", target, res.status, res.body)
			}
			var got sessionapi.UsageReport
			if err := json.Unmarshal(res.body, &got); err != nil {
				t.Fatal(err)
			}
			wantPeriod := chat.Period(period)
			if period == "" {
				wantPeriod = chat.PeriodDay
			}
			st, end := wantPeriod.Bounds(f.clock.Now())
			want := chat.Counters{Turns: 2, Usage: chat.Usage{InputTokens: 15, OutputTokens: 25, ModelCalls: 3, ToolCalls: 1}}
			if got.Period != string(wantPeriod) || got.Start != protocol.FormatTime(st) || got.ResetsAt != protocol.FormatTime(end) ||
				got.Principal != (sessionapi.UsagePrincipal{Subject: "alice", Tenant: alice.Tenant}) || got.Usage != want {
				t.Errorf("%s: %+v, want %s counters %+v", target, got, wantPeriod, want)
			}
			limits := map[string]sessionapi.LimitStatus{}
			for _, l := range got.Limits {
				limits[l.Scope+"."+l.Name] = l
			}
			wantUsed := map[string][2]int64{"principal.turnsPerMinute": {1, 2}, "principal.tokensPerDay": {40, 60}, "principal.concurrentSessions": {1, 1}}
			for name, w := range wantUsed {
				l, ok := limits[name]
				if !ok || l.Used == nil || *l.Used != w[0] || *l.Remaining != w[1] {
					t.Errorf("%s: limit %s %+v, want used %d, left %d", target, name, l, w[0], w[1])
				}
			}
			if l := limits["principal.turnsPerMinute"]; l.ResetsAt == nil || *l.ResetsAt != protocol.FormatTime(a.StartedAt.Add(time.Minute)) {
				t.Errorf("turnsPerMinute resets %v", l.ResetsAt)
			}
			if l, ok := limits["tenant.tokensPerMonth"]; !ok || l.Limit != 1000 || l.Used != nil || l.Remaining != nil {
				t.Errorf("tenant quota %+v, want its limit only", l)
			}
			if len(got.Limits) != 4 {
				t.Errorf("%d limits, want 4", len(got.Limits))
			}
		}
	})
}

// TestUsageTenantReport: the tenant's trusted principal reads the tenant's
// totals over all its principals, its activity and quotas, and its
// principals' counters in pages; anyone else is 403.
func TestUsageTenantReport(t *testing.T) {
	forEachUsageStore(t, func(t *testing.T, f *fixture, h http.Handler) {
		want := chat.Counters{}
		for i := range 5 {
			p := chat.Principal{Subject: fmt.Sprintf("user%d", i), Tenant: alice.Tenant}
			u := chat.Usage{InputTokens: int64(i + 1), OutputTokens: 1, ModelCalls: 1}
			f.count(p, "s1", 1, u)
			want.Add(chat.Counters{Turns: 1, Usage: u})
		}
		f.count(chat.Principal{Subject: "user0", Tenant: "other"}, "s1", 1, chat.Usage{InputTokens: 1000})
		for _, as := range []chat.Principal{alice, mallory} {
			if res := f.do(h, get("/usage?scope=tenant", as)); res.status != http.StatusForbidden || !strings.Contains(string(res.body), protocol.CodeRequestForbidden) {
				t.Errorf("%s's tenant report: %d %s, want 403", as.Subject, res.status, res.body)
			}
		}
		seen := map[string]bool{}
		cursor := ""
		for page := 0; ; page++ {
			target := "/usage?scope=tenant&period=month&limit=2"
			if cursor != "" {
				target += "&cursor=" + url.QueryEscape(cursor)
			}
			res := f.do(h, get(target, host))
			if res.status != http.StatusOK {
				t.Fatalf("page %d: %d %s", page, res.status, res.body)
			}
			var got sessionapi.TenantUsageReport
			if err := json.Unmarshal(res.body, &got); err != nil {
				t.Fatal(err)
			}
			if page == 0 {
				if got.Totals == nil || *got.Totals != want || got.Activity == nil || len(got.Limits) != 1 || *got.Limits[0].Used != want.Tokens() {
					t.Errorf("first page: totals %+v activity %+v limits %+v, want %+v", got.Totals, got.Activity, got.Limits, want)
				}
			} else if got.Totals != nil {
				t.Errorf("page %d repeats the totals", page)
			}
			for _, r := range got.Principals {
				if r.Principal.Tenant != alice.Tenant || seen[r.Principal.Subject] {
					t.Errorf("page %d lists %+v", page, r.Principal)
				}
				seen[r.Principal.Subject] = true
			}
			if !got.HasMore {
				if got.NextCursor != nil {
					t.Error("last page with a cursor")
				}
				break
			}
			cursor = *got.NextCursor
		}
		if len(seen) != 5 {
			t.Errorf("listed %d principals, want 5", len(seen))
		}
	})
}

// TestUsageBadRequests: bad queries are 400 naming nothing of the input;
// without the ledger /usage is no route; other methods are 405.
func TestUsageBadRequests(t *testing.T) {
	forEachUsageStore(t, func(t *testing.T, f *fixture, h http.Handler) {
		for target, code := range map[string]string{
			"/usage?period=week-secret":            protocol.CodeRequestInvalidQuery,
			"/usage?period=day&period=month":       protocol.CodeRequestInvalidQuery,
			"/usage?scope=everyone-secret":         protocol.CodeRequestInvalidQuery,
			"/usage?limit=5":                       protocol.CodeRequestInvalidQuery,
			"/usage?scope=tenant&limit=0":          protocol.CodeRequestInvalidQuery,
			"/usage?scope=tenant&cursor=secretxyz": protocol.CodeRequestInvalidCursor,
			"/usage?%zz":                           protocol.CodeRequestInvalidQuery,
		} {
			res := f.do(h, get(target, host))
			if res.status != protocol.HTTPStatus(code) || !strings.Contains(string(res.body), code) || bytes.Contains(res.body, []byte("secret")) {
				t.Errorf("%s: %d %s, want %s without the input", target, res.status, res.body, code)
			}
		}
		if res := f.do(h, request{method: http.MethodPost, target: "/usage", as: &alice}); res.status != http.StatusMethodNotAllowed {
			t.Errorf("POST /usage: %d", res.status)
		}
		if res := f.do(h, request{method: http.MethodGet, target: "/usage", auth: "Bearer nonsense"}); res.status != http.StatusUnauthorized {
			t.Errorf("unauthenticated: %d %s", res.status, res.body)
		}
		if res := f.do(f.history, get("/usage", alice)); res.status != http.StatusNotFound || !strings.Contains(string(res.body), protocol.CodeRequestNotFound) {
			t.Errorf("without the ledger: %d %s, want 404", res.status, res.body)
		}
	})
}
