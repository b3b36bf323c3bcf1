// Package ledgerbench measures the usage ledger and the quota check
// before the claim (docs/quotas.md) against turns without them, in the
// same run, for turnbench's ledger section (-only ledger,
// docs/benchmarks.md):
//
//   - cost: DynamoDB requests and billed write and read units of a new
//     session's first turn and of its second turn, with the ledger off
//     (the baseline), on, and on with one kind of quota set: a
//     principal's token quota (its ledger read), a rate quota (the read
//     and the admission's write), a tenant's token quota (the principal's
//     read and the tenant's Query, the latter reused for QUOTA_CACHE:
//     measured at 0, a Query every time, and at the default 5 s); medians
//     over the sessions of each mode, each mode its own principal;
//   - time: request sent -> first line at the client, p50 and p90 of
//     each mode's turns; the modes take turns, so that the machine's
//     noise falls on all of them alike;
//
// The ledger is compared with the ledger off, each quota mode with the
// ledger on (the quota check's own cost).
//   - growth: the write units of counting a turn once the principal's
//     month counted Growth sessions, against the first;
//   - admission: a turnsPerMinute admission's requests and units, and a
//     burst of 30 at once with a limit of 5 (admitted, refused, the
//     burst's requests and units), the store's Admit against the
//     compare-and-set admission it replaced, reproduced (admission.go).
//
// The echo model answers at full speed without tools: no model call
// after the first, so the check before each model call adds nothing
// here.
package ledgerbench

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/turnstream/turnstream/internal/benchwire"
	"github.com/turnstream/turnstream/internal/dynamobench"
	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
	"github.com/turnstream/turnstream/pkg/turn"
)

// Mode is one configuration of the section.
type Mode struct {
	Name string
	Env  map[string]string // over benchwire's environment
}

// Modes are the section's modes; the first is the baseline.
var Modes = []Mode{
	{"ledger off", map[string]string{"USAGE_LEDGER": "off"}},
	{"ledger on", map[string]string{"USAGE_LEDGER": "on"}},
	{"ledger on, principal token quota (tokensPerDay)", map[string]string{"USAGE_LEDGER": "on",
		"QUOTAS": `{"principal":{"tokensPerDay":1000000000000}}`}},
	{"ledger on, principal rate quota (turnsPerMinute)", map[string]string{"USAGE_LEDGER": "on",
		"QUOTAS": `{"principal":{"turnsPerMinute":1000000}}`}},
	{"ledger on, tenant token quota (tokensPerMonth), QUOTA_CACHE=0", map[string]string{"USAGE_LEDGER": "on",
		"QUOTAS": `{"tenant":{"tokensPerMonth":1000000000000}}`, "QUOTA_CACHE": "0s"}},
	{"ledger on, tenant token quota (tokensPerMonth), QUOTA_CACHE=5s", map[string]string{"USAGE_LEDGER": "on",
		"QUOTAS": `{"tenant":{"tokensPerMonth":1000000000000}}`, "QUOTA_CACHE": "5s"}},
}

// Answer is the answer size of the section's turns.
const Answer = 200

// Result is what Run measured.
type Result struct {
	Sessions int
	// First and Second are each mode's median account of a session's
	// first and second turn; FirstLine each mode's times to the first
	// line (both turns).
	First, Second []*dynamobench.Account
	FirstLine     [][]time.Duration
	// TenantPrincipals is the size of the dev tenant's partition of the
	// month when the section ended (what a tenant's Query reads).
	TenantPrincipals int
	// Growth: the write units of counting a turn, and the month item's
	// size, on a fresh principal's month and once it counted
	// GrowthSessions sessions.
	GrowthSessions                int
	GrowthFirstWCU, GrowthLastWCU int
	GrowthFirstB, GrowthLastB     int
	// Admission: the baseline admission, then the store's (admission.go).
	Admission []AdmissionMethod
}

// Growth is the sessions the growth figure fills a month item with
// (quick: a tenth).
const Growth = 1000

// Env is what Run measures on: the bench's table and its clients.
type Env struct {
	// Client is the store's DynamoDB client, Raw an unmetered one for
	// the meter's own size reads (dynamobench.NewMeter).
	Client, Raw dynamo.Client
	// Store is an unmetered store on Table, for waiting and listing.
	Store     chat.Store
	Table     string
	CursorKey []byte
	// Prefix makes the run's principals its own.
	Prefix string
	// Quick measures 2 sessions a mode and a tenth of Growth instead of
	// 10 and Growth.
	Quick    bool
	Progress func(format string, a ...any)
}

// Run measures every mode of Modes, the growth of a month item and the
// dev tenant's partition.
func Run(ctx context.Context, e Env) (*Result, error) {
	n, growth := 10, Growth
	if e.Quick {
		n, growth = 2, Growth/10
	}
	res := &Result{Sessions: n, GrowthSessions: growth}
	type wired struct {
		meter  *dynamobench.Meter
		store  chat.Store
		w      *benchwire.Wiring
		c      *client.Client
		p      chat.Principal
		first  []*dynamobench.Account
		second []*dynamobench.Account
		times  []time.Duration
	}
	hc := benchwire.NewHTTPClient(4, nil)
	defer hc.CloseIdleConnections()
	modes := make([]*wired, len(Modes))
	for i, mode := range Modes {
		m := dynamobench.NewMeter(e.Client, e.Raw)
		store := dynamo.New(m, dynamo.Options{Table: e.Table, CursorKey: e.CursorKey, Ledger: chat.LedgerOptions{Enabled: mode.Env["USAGE_LEDGER"] == "on"}})
		w, err := benchwire.NewTurnEnv(store, nil, mode.Env, func(*turn.Options) {})
		if err != nil {
			return nil, fmt.Errorf("ledger (%s): %w", mode.Name, err)
		}
		defer w.Close()
		subject := fmt.Sprintf("%s-ledger-%d", e.Prefix, i)
		modes[i] = &wired{meter: m, store: store, w: w, c: w.ClientAs(hc, subject), p: chat.Principal{Subject: subject, Tenant: auth.DevTenant}}
	}
	// turn runs one turn of sid in mode x and returns its account.
	turn := func(x *wired, sid string) (*dynamobench.Account, error) {
		x.meter.Take()
		log := benchwire.Follow(benchwire.Submitting(ctx, x.c, sid, benchwire.NewID(), benchwire.Ask(Answer), true), false, false, nil)
		if last := log.Last(); log.Err != nil || last == nil || last.Status != protocol.StatusComplete {
			return nil, fmt.Errorf("turn of %s: %v, last line %+v", sid, log.Err, last)
		}
		x.times = append(x.times, log.Lines[0].At.Sub(log.Sent))
		if err := benchwire.AwaitFree(ctx, e.Store, sid, x.p); err != nil {
			return nil, err
		}
		return x.meter.Take(), nil
	}
	for s := range n {
		e.Progress("ledger: session %d of %d in each of %d modes", s+1, n, len(modes))
		sids := make([]string, len(modes))
		for i, x := range modes {
			sids[i] = benchwire.NewID()
			a, err := turn(x, sids[i])
			if err != nil {
				return nil, fmt.Errorf("ledger (%s): %w", Modes[i].Name, err)
			}
			x.first = append(x.first, a)
		}
		for i, x := range modes {
			a, err := turn(x, sids[i])
			if err != nil {
				return nil, fmt.Errorf("ledger (%s): %w", Modes[i].Name, err)
			}
			x.second = append(x.second, a)
		}
	}
	for _, x := range modes {
		res.First = append(res.First, dynamobench.MedianAccount(x.first))
		res.Second = append(res.Second, dynamobench.MedianAccount(x.second))
		res.FirstLine = append(res.FirstLine, x.times)
	}
	if err := growthRun(ctx, e, res); err != nil {
		return nil, err
	}
	if err := admissionRun(ctx, e, res); err != nil {
		return nil, err
	}
	if err := tenantPartition(ctx, e, res); err != nil {
		return nil, err
	}
	return res, nil
}

// growthRun counts one turn of each of res.GrowthSessions sessions
// in a fresh principal's month, measuring the first count and the last.
func growthRun(ctx context.Context, e Env, res *Result) error {
	m := dynamobench.NewMeter(e.Client, e.Raw)
	store := dynamo.New(m, dynamo.Options{Table: e.Table, CursorKey: e.CursorKey, Ledger: chat.LedgerOptions{Enabled: true}})
	p := chat.Principal{Subject: e.Prefix + "-ledger-growth", Tenant: e.Prefix + "-growth"}
	e.Progress("ledger: one principal's month item, %d sessions", res.GrowthSessions)
	now := time.Now()
	for i := range res.GrowthSessions {
		m.Take()
		e := chat.LedgerEntry{SessionID: benchwire.NewID(), Ordinal: 1, Owner: p, StartedAt: now,
			Usage: chat.Usage{InputTokens: 120, OutputTokens: 60, ModelCalls: 1, StoreRequests: 4, WriteUnits: 8, ReadUnits: 1}}
		if err := store.RecordUsage(ctx, e); err != nil {
			return fmt.Errorf("ledger growth: %w", err)
		}
		a := m.Take()
		switch i {
		case 0:
			res.GrowthFirstWCU, res.GrowthFirstB = a.WriteUnits(), a.LedgerBytes
		case res.GrowthSessions - 1:
			res.GrowthLastWCU, res.GrowthLastB = a.WriteUnits(), a.LedgerBytes
		}
	}
	return nil
}

// tenantPartition reads the dev tenant's principals of the month (what a
// tenant quota's Query reads), unmetered.
func tenantPartition(ctx context.Context, e Env, res *Result) error {
	cursor := ""
	for {
		page, err := e.Store.ListUsage(ctx, chat.UsageListRequest{Tenant: auth.DevTenant, At: time.Now(), Limit: chat.MaxPageLimit, Cursor: cursor})
		if err != nil {
			return fmt.Errorf("ledger: the tenant's partition: %w", err)
		}
		res.TenantPrincipals += len(page.Principals)
		if !page.HasMore {
			return nil
		}
		cursor = page.NextCursor
	}
}

// quantileOf is the q quantile of d (nearest rank).
func quantileOf(d []time.Duration, q float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// Rows renders r as turnbench's table rows (figure, measured, baseline,
// measured vs baseline).
func (r *Result) Rows() [][4]string {
	if r == nil || len(r.First) != len(Modes) {
		return nil
	}
	acct := func(a *dynamobench.Account) string {
		return fmt.Sprintf("%d requests, %d WCU, %.1f RCU", a.Requests, a.WriteUnits(), a.ReadUnits())
	}
	vs := func(a, base *dynamobench.Account) string {
		return fmt.Sprintf("%+d requests, %.2fx WCU, %+.1f RCU", a.Requests-base.Requests,
			float64(a.WriteUnits())/float64(base.WriteUnits()), a.ReadUnits()-base.ReadUnits())
	}
	// The ledger against none; each quota check against the ledger alone.
	baseOf := func(i int) int { return min(i-1, 1) }
	var rows [][4]string
	for i := 1; i < len(Modes); i++ {
		b := baseOf(i)
		for _, k := range []struct {
			name string
			at   []*dynamobench.Account
		}{{"new session", r.First}, {"second turn", r.Second}} {
			rows = append(rows, [4]string{
				fmt.Sprintf("DynamoDB cost of a turn (%s; %d-byte answer), %s (medians of %d)", k.name, Answer, Modes[i].Name, r.Sessions),
				acct(k.at[i]), Modes[b].Name + ": " + acct(k.at[b]), vs(k.at[i], k.at[b]),
			})
		}
	}
	for i := 1; i < len(Modes); i++ {
		d, base := r.FirstLine[i], r.FirstLine[baseOf(i)]
		rows = append(rows, [4]string{
			fmt.Sprintf("request sent -> first line, %s (%d turns)", Modes[i].Name, len(d)),
			fmt.Sprintf("p50 %s, p90 %s", ms(quantileOf(d, 0.5)), ms(quantileOf(d, 0.9))),
			fmt.Sprintf("%s: p50 %s, p90 %s", Modes[baseOf(i)].Name, ms(quantileOf(base, 0.5)), ms(quantileOf(base, 0.9))),
			fmt.Sprintf("p50 %+.2f ms, %.2fx", float64(quantileOf(d, 0.5)-quantileOf(base, 0.5))/float64(time.Millisecond),
				float64(quantileOf(d, 0.5))/float64(quantileOf(base, 0.5))),
		})
	}
	if len(r.Admission) == 2 {
		before, after := r.Admission[0], r.Admission[1]
		rows = append(rows, [4]string{
			"a turnsPerMinute admission on a fresh read (the read and the admission's writes; median)",
			after.Name + ": " + acct(after.Sequential), before.Name + ": " + acct(before.Sequential), vs(after.Sequential, before.Sequential),
		})
		burst := func(m AdmissionMethod) string {
			per := "none admitted"
			if m.Admitted > 0 {
				per = fmt.Sprintf("%.1f requests, %.1f WCU per admitted turn", float64(m.Burst.Requests)/float64(m.Admitted),
					float64(m.Burst.WriteUnits())/float64(m.Admitted))
			}
			return fmt.Sprintf("%d admitted, %d unavailable; %d requests, %d WCU in all (%s)", m.Admitted, m.Unavailable, m.Burst.Requests, m.Burst.WriteUnits(), per)
		}
		rows = append(rows, [4]string{
			fmt.Sprintf("%d admissions at once from two stores, turnsPerMinute %d", BurstSize, BurstLimit),
			burst(after), burst(before), fmt.Sprintf("%d vs %d admitted", after.Admitted, before.Admitted),
		})
	}
	rows = append(rows, [4]string{
		fmt.Sprintf("counting a turn of the principal's %dth session of the month (read, add, settle, clear)", r.GrowthSessions),
		fmt.Sprintf("%d WCU (month item %d B)", r.GrowthLastWCU, r.GrowthLastB),
		fmt.Sprintf("the first session's: %d WCU (month item %d B)", r.GrowthFirstWCU, r.GrowthFirstB),
		fmt.Sprintf("%.2fx", float64(r.GrowthLastWCU)/float64(r.GrowthFirstWCU)),
	})
	return rows
}

// Notes says what a tenant's Query read.
func (r *Result) Notes() []string {
	if r == nil {
		return nil
	}
	return []string{fmt.Sprintf("ledger: a tenant quota's Query read the dev tenant's month partition of %d principals (the run's sessions' owners); it reads %d principals a page", r.TenantPrincipals, chat.MaxPageLimit)}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }
