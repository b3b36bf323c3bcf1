package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
)

// entry is alice's ledger entry of turn ordinal of sessionID, started at
// at, with usage u.
func entry(sessionID string, ordinal int64, at time.Time, u chat.Usage) chat.LedgerEntry {
	return chat.LedgerEntry{SessionID: sessionID, Ordinal: ordinal, Owner: alice, StartedAt: at, Usage: u}
}

// usageOf is a turn's usage in the suite: n tokens in, 2n out, one model
// call, store figures.
func usageOf(n int64) chat.Usage {
	return chat.Usage{InputTokens: n, OutputTokens: 2 * n, CacheReadTokens: 1, ReasoningTokens: n, ModelCalls: 1, ToolCalls: n % 2,
		StoreRequests: 5, ReadUnits: 1.5, WriteUnits: 4}
}

// record records e and fails the test on error.
func (e *env) record(le chat.LedgerEntry) {
	e.t.Helper()
	if err := e.store.RecordUsage(e.ctx, le); err != nil {
		e.t.Fatalf("RecordUsage(%s, %d): %v", le.SessionID, le.Ordinal, err)
	}
}

// usage reads p's ledger at at and fails the test on error.
func (e *env) usage(p chat.Principal, at time.Time) *chat.PrincipalUsage {
	e.t.Helper()
	u, err := e.store.ReadUsage(e.ctx, p, at)
	if err != nil {
		e.t.Fatalf("ReadUsage(%s) at %v: %v", p.Subject, at, err)
	}
	return u
}

// counters sums n turns' usage.
func counters(turns int64, us ...chat.Usage) chat.Counters {
	c := chat.Counters{Turns: turns}
	for _, u := range us {
		c.Usage.Add(u)
	}
	return c
}

// wantCounters fails the test unless got equals want.
func wantCounters(t *testing.T, what string, got, want chat.Counters) {
	t.Helper()
	if got != want {
		t.Errorf("%s: %+v, want %+v", what, got, want)
	}
}

// ledgerCases prove RecordUsage, ReadUsage and ListUsage, and that the
// turns a store decides are counted once (docs/quotas.md).
func ledgerCases() map[string]func(*testing.T, *env) {
	return map[string]func(*testing.T, *env){
		"RecordedOncePerTurn": func(t *testing.T, e *env) {
			// A retried or re-sent entry, and a second entry of the same
			// turn (its process and a decider), count once.
			u := usageOf(10)
			e.record(entry("s1", 1, start, u))
			e.record(entry("s1", 1, start, u))
			other := u
			other.OutputTokens = 999
			e.record(entry("s1", 1, start, other))
			got := e.usage(alice, start)
			wantCounters(t, "day", got.Day, counters(1, u))
			wantCounters(t, "month", got.Month, counters(1, u))
		},

		"SessionsCountInOrdinalOrder": func(t *testing.T, e *env) {
			// A session's turns are counted in ordinal order: an entry
			// below the last counted one was counted before; another
			// session's ordinals are its own.
			e.record(entry("s1", 2, start, usageOf(2)))
			e.record(entry("s1", 1, start, usageOf(1)))
			e.record(entry("s2", 1, start, usageOf(3)))
			e.record(entry("s1", 3, start, usageOf(4)))
			wantCounters(t, "month", e.usage(alice, start).Month, counters(3, usageOf(2), usageOf(3), usageOf(4)))
		},

		"ConcurrentCountsOfOnePrincipal": func(t *testing.T, e *env) {
			// 30 sessions of one principal end at once, each counted twice
			// (its process and a decider): 30 turns, no error.
			const n = 30
			errs := make(chan error, 2*n)
			var wg sync.WaitGroup
			for i := range 2 * n {
				wg.Go(func() { errs <- e.store.RecordUsage(e.ctx, entry(fmt.Sprint("s", i%n), 1, start, usageOf(1))) })
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Errorf("a count: %v", err)
				}
			}
			us := make([]chat.Usage, n)
			for i := range us {
				us[i] = usageOf(1)
			}
			wantCounters(t, "month", e.usage(alice, start).Month, counters(n, us...))
		},

		"DayAndMonthOfTheStart": func(t *testing.T, e *env) {
			// A turn counts in the UTC day and month it started in,
			// whenever it is counted.
			lastDay := time.Date(2026, 11, 30, 23, 59, 59, 0, time.UTC)
			nextMonth := lastDay.Add(2 * time.Second)
			e.record(entry("s1", 1, start, usageOf(1)))
			e.record(entry("s1", 2, lastDay, usageOf(2)))
			e.record(entry("s2", 1, nextMonth, usageOf(3)))
			nov := e.usage(alice, lastDay)
			wantCounters(t, "Nov 30", nov.Day, counters(1, usageOf(2)))
			wantCounters(t, "November", nov.Month, counters(2, usageOf(1), usageOf(2)))
			wantCounters(t, "Nov 29", e.usage(alice, start.Add(time.Hour)).Day, counters(1, usageOf(1)))
			dec := e.usage(alice, nextMonth)
			wantCounters(t, "Dec 1", dec.Day, counters(1, usageOf(3)))
			wantCounters(t, "December", dec.Month, counters(1, usageOf(3)))
			wantCounters(t, "Dec 2", e.usage(alice, nextMonth.Add(24*time.Hour)).Day, chat.Counters{})
		},

		"PrincipalsAndTenantsApart": func(t *testing.T, e *env) {
			e.record(entry("s1", 1, start, usageOf(1)))
			other := entry("s1", 1, start, usageOf(5)) // another owner's session of the same id
			other.Owner = aliceGlobex
			e.record(other)
			wantCounters(t, "alice", e.usage(alice, start).Month, counters(1, usageOf(1)))
			wantCounters(t, "alice of globex", e.usage(aliceGlobex, start).Month, counters(1, usageOf(5)))
			wantCounters(t, "mallory", e.usage(mallory, start).Month, chat.Counters{})
			page, err := e.store.ListUsage(e.ctx, chat.UsageListRequest{Tenant: "acme", At: start})
			if err != nil || len(page.Principals) != 1 || page.Principals[0].Principal != alice || page.HasMore {
				t.Fatalf("acme's principals: %+v, %v; want alice only", page, err)
			}
		},

		"TenantPagesListEachPrincipalOnce": func(t *testing.T, e *env) {
			var want []string
			for i := range 5 {
				p := chat.Principal{Subject: fmt.Sprintf("user%d", i), Tenant: "acme"}
				le := entry("s1", 1, start, usageOf(int64(i+1)))
				le.Owner = p
				e.record(le)
				want = append(want, chat.PrincipalKey(p))
			}
			nov := entry("s9", 1, start.AddDate(0, -1, 0), usageOf(9)) // October: another month
			e.record(nov)
			slices.Sort(want)
			var got []string
			cursor := ""
			var total chat.Counters
			for pages := 0; ; pages++ {
				page, err := e.store.ListUsage(e.ctx, chat.UsageListRequest{Tenant: "acme", At: start, Limit: 2, Cursor: cursor})
				if err != nil {
					t.Fatalf("page %d: %v", pages, err)
				}
				if len(page.Principals) == 0 || pages > 5 {
					t.Fatalf("page %d: %d principals, hasMore %v", pages, len(page.Principals), page.HasMore)
				}
				for _, u := range page.Principals {
					got = append(got, chat.PrincipalKey(u.Principal))
					total.Add(u.Month)
				}
				if !page.HasMore {
					if page.NextCursor != "" {
						t.Errorf("last page has a cursor")
					}
					break
				}
				cursor = page.NextCursor
			}
			if !slices.Equal(got, want) {
				t.Errorf("listed %v, want %v in key order", got, want)
			}
			wantCounters(t, "tenant total", total, counters(5, usageOf(1), usageOf(2), usageOf(3), usageOf(4), usageOf(5)))
		},

		"TenantPageCursorsAreBound": func(t *testing.T, e *env) {
			for i := range 3 {
				le := entry("s1", 1, start, usageOf(1))
				le.Owner = chat.Principal{Subject: fmt.Sprintf("user%d", i), Tenant: "acme"}
				e.record(le)
			}
			page, err := e.store.ListUsage(e.ctx, chat.UsageListRequest{Tenant: "acme", At: start, Limit: 1})
			if err != nil || !page.HasMore {
				t.Fatalf("first page: %+v, %v", page, err)
			}
			for name, req := range map[string]chat.UsageListRequest{
				"another tenant": {Tenant: "globex", At: start, Cursor: page.NextCursor},
				"another month":  {Tenant: "acme", At: start.AddDate(0, 1, 0), Cursor: page.NextCursor},
				"tampered":       {Tenant: "acme", At: start, Cursor: page.NextCursor[:len(page.NextCursor)-2] + "AA"},
				"garbage":        {Tenant: "acme", At: start, Cursor: "not a cursor"},
			} {
				_, err := e.store.ListUsage(e.ctx, req)
				wantErr(t, name, err, chat.ErrInvalidCursor)
			}
			for _, limit := range []int{-1, chat.MaxPageLimit + 1} {
				_, err := e.store.ListUsage(e.ctx, chat.UsageListRequest{Tenant: "acme", At: start, Limit: limit})
				wantErr(t, fmt.Sprintf("limit %d", limit), err, chat.ErrInvalidRequest)
			}
		},

		"RecordsExpireAfterTheRetention": func(t *testing.T, e *env) {
			// Records are kept for the retention after the end of their
			// month (chat.LedgerOptions), then read as absent whatever TTL
			// has or has not deleted yet.
			e.record(entry("s1", 1, start, usageOf(1)))
			purge := chat.LedgerOptions{}.PurgeAt(start)
			e.clock.Advance(purge.Sub(start) - time.Second)
			wantCounters(t, "a second before the retention ends", e.usage(alice, start).Month, counters(1, usageOf(1)))
			e.clock.Advance(time.Second)
			wantCounters(t, "once the retention ended", e.usage(alice, start).Month, chat.Counters{})
			page, err := e.store.ListUsage(e.ctx, chat.UsageListRequest{Tenant: "acme", At: start})
			if err != nil || len(page.Principals) != 0 {
				t.Fatalf("listed after the retention: %+v, %v", page, err)
			}
		},

		"InvalidEntries": func(t *testing.T, e *env) {
			for name, le := range map[string]chat.LedgerEntry{
				"no session":    {Ordinal: 1, Owner: alice, StartedAt: start},
				"no ordinal":    {SessionID: "s1", Owner: alice, StartedAt: start},
				"no owner":      {SessionID: "s1", Ordinal: 1, StartedAt: start},
				"no start time": {SessionID: "s1", Ordinal: 1, Owner: alice},
			} {
				err := e.store.RecordUsage(e.ctx, le)
				wantErr(t, name, err, chat.ErrInvalidRequest)
			}
			wantCounters(t, "after invalid entries", e.usage(alice, start).Month, chat.Counters{})
		},

		"ClaimKeepsStartAndAdmission": func(t *testing.T, e *env) {
			req := claimRequest("s1", "t1")
			req.StartedAt = start.Add(1500 * time.Microsecond) // kept at millisecond precision
			req.Admission = "adm-1"
			c := e.claimWith(req)
			if !c.Lease.StartedAt.Equal(start.Add(time.Millisecond)) || c.Lease.Admission != "adm-1" {
				t.Errorf("lease start %v, admission %q; want %v, adm-1", c.Lease.StartedAt, c.Lease.Admission, start.Add(time.Millisecond))
			}
			if l := e.session("s1").ActiveTurn; l == nil || !l.StartedAt.Equal(c.Lease.StartedAt) || l.Admission != "adm-1" {
				t.Errorf("session lease %+v", l)
			}
			e.clock.Advance(time.Minute)
			d := e.claim("s2", "t1") // no start given: the store's now
			if !d.Lease.StartedAt.Equal(e.clock.Now()) {
				t.Errorf("lease start %v, want the store's now %v", d.Lease.StartedAt, e.clock.Now())
			}
		},

		"LostTurnCountedOnceByItsDecider": func(t *testing.T, e *env) {
			req := claimRequest("s1", "crash")
			req.StartedAt = start
			c := e.claimWith(req)
			cp := e.checkpointOf(c, nil, "partial", c.BaseSequence+1)
			e.checkpoint(c, cp)
			e.clock.Advance(leaseDuration)
			e.session("s1") // decides the turn lost: counted from its record
			want := counters(1, cp.Metered)
			wantCounters(t, "after the decision", e.usage(alice, start).Month, want)
			// The turn's own process, come back, and more readers: no
			// second count.
			late := entry("s1", c.Lease.Ordinal, start, usageOf(50))
			e.record(late)
			e.find("s1", "crash")
			e.session("s1")
			wantCounters(t, "after its process's late entry", e.usage(alice, start).Month, want)
			// The next turn counts on its own.
			next := e.completeTurn("s1", "next")
			e.record(entry("s1", c.Lease.Ordinal+1, start, next.Metered))
			wantCounters(t, "after the next turn", e.usage(alice, start).Month, counters(2, cp.Metered, next.Metered))
		},

		"SavedButUnreleasedTurnCountedOnceByItsDecider": func(t *testing.T, e *env) {
			req := claimRequest("s1", "t1")
			req.StartedAt = start
			c := e.claimWith(req)
			final := e.turnFor(c, "s1")
			e.save(c, final) // saved; the process dies before counting and releasing
			e.clock.Advance(leaseDuration)
			next := e.claim("s1", "t2") // takes over: decides t1, counted from its save
			want := counters(1, final.Metered)
			wantCounters(t, "after the takeover", e.usage(alice, start).Month, want)
			e.record(entry("s1", c.Lease.Ordinal, start, final.Metered))
			wantCounters(t, "after the late entry of t1", e.usage(alice, start).Month, want)
			if next.Lease.Ordinal != c.Lease.Ordinal+1 {
				t.Fatalf("the next turn's ordinal %d", next.Lease.Ordinal)
			}
		},

		"TurnLostBeforeItsAcknowledgmentCountsAsATurn": func(t *testing.T, e *env) {
			req := claimRequest("s1", "early")
			req.StartedAt = start
			c := e.claimWith(req)
			e.clock.Advance(leaseDuration)
			e.poll(c, nil)
			wantCounters(t, "after the decision", e.usage(alice, start).Month, counters(1))
		},

		"QueuedTurnWaitingAgainIsNotCounted": func(t *testing.T, e *env) {
			running := e.claim("s1", "t1")
			e.enqueue("s1", "q1")
			e.save(running, e.turnFor(running, "s1"))
			e.release("s1", running, chat.OutcomeCompleted, running.BaseSequence+2)
			e.record(entry("s1", running.Lease.Ordinal, running.Lease.StartedAt, usageOf(1)))
			dead, _ := e.claimQueued("s1") // its claim dies before the acknowledgment
			e.clock.Advance(leaseDuration)
			e.session("s1") // decided: q1 waits again, nothing counted
			wantCounters(t, "after the requeue", e.usage(alice, running.Lease.StartedAt).Month, counters(1, usageOf(1)))
			c, _ := e.claimQueued("s1")
			if c.Lease.Ordinal <= dead.Lease.Ordinal {
				t.Fatalf("the queued turn's second claim has ordinal %d, its first %d", c.Lease.Ordinal, dead.Lease.Ordinal)
			}
			e.runQueued(c)
			e.record(entry("s1", c.Lease.Ordinal, c.Lease.StartedAt, usageOf(2)))
			wantCounters(t, "after it ran", e.usage(alice, running.Lease.StartedAt).Month, counters(2, usageOf(1), usageOf(2)))
		},
	}
}

// admit asks for admission a of alice under the limits and returns the
// store's answer.
func (e *env) admit(a chat.Admission, perMinute, concurrent int64) error {
	_, err := e.store.Admit(e.ctx, chat.AdmitRequest{Principal: alice, Admission: a, TurnsPerMinute: perMinute, ConcurrentSessions: concurrent})
	return err
}

// admission is an admission started at at, running for a minute, in a
// session of its own.
func admission(id string, at time.Time) chat.Admission {
	return chat.Admission{ID: id, StartedAt: at, ExpiresAt: at.Add(time.Minute), Session: chat.SessionMarker("session of " + id)}
}

// wantQuota fails the test unless err is the QuotaError of name with the
// retry after want.
func wantQuota(t *testing.T, what string, err error, name string, retryAfter time.Duration) {
	t.Helper()
	var qe *chat.QuotaError
	if !errors.As(err, &qe) || !errors.Is(err, chat.ErrQuotaExceeded) || qe.Name != name || qe.Scope != chat.ScopePrincipal || qe.RetryAfter != retryAfter {
		t.Fatalf("%s: %v (%+v), want %s with retry after %v", what, err, qe, name, retryAfter)
	}
}

// admissionCases prove Admit and CancelAdmission: the rate and
// concurrency quotas of a principal are checked and recorded in one step.
func admissionCases() map[string]func(*testing.T, *env) {
	return map[string]func(*testing.T, *env){
		"TurnsPerMinuteWindow": func(t *testing.T, e *env) {
			for i, at := range []time.Time{start, start.Add(10 * time.Second), start.Add(20 * time.Second)} {
				if err := e.admit(admission(fmt.Sprint("a", i), at), 3, 0); err != nil {
					t.Fatalf("admission %d: %v", i, err)
				}
			}
			err := e.admit(admission("a3", start.Add(30*time.Second)), 3, 0)
			wantQuota(t, "a 4th turn within the minute", err, chat.QuotaTurnsPerMinute, 30*time.Second)
			if got := chat.ActivityAt(e.usage(alice, start.Add(30*time.Second)).Admissions, start.Add(30*time.Second)); got.Recent != 3 {
				t.Errorf("recent admissions %d after a refusal, want 3", got.Recent)
			}
			if err := e.admit(admission("a4", start.Add(time.Minute)), 3, 0); err != nil {
				t.Fatalf("after the first left the window: %v", err)
			}
		},

		"RateExactWhateverTheOrderOfStarts": func(t *testing.T, e *env) {
			// Admissions are written in an order other than their
			// starts' (concurrent submits): the later-started first.
			// Every admission within the minute counts, before or after
			// the asking one's own start.
			admitted := 0
			for i := 29; i >= 0; i-- {
				switch err := e.admit(admission(fmt.Sprint("a", i), start.Add(time.Duration(i)*time.Millisecond)), 5, 0); {
				case err == nil:
					admitted++
				case !errors.Is(err, chat.ErrQuotaExceeded):
					t.Fatalf("admission %d: %v", i, err)
				}
			}
			if admitted != 5 {
				t.Errorf("%d of 30 admitted with turnsPerMinute 5, want 5", admitted)
			}
			at := start.Add(time.Second)
			if got := chat.ActivityAt(e.usage(alice, at).Admissions, at); got.Recent != 5 {
				t.Errorf("recent admissions %d, want 5", got.Recent)
			}
		},

		"RateExactUnderConcurrency": func(t *testing.T, e *env) {
			// 30 submits of one principal on 30 sessions at once, their
			// starts a millisecond apart: exactly the limit is admitted,
			// every other one refused by the rate (never unavailable).
			const n, limit = 30, 5
			errs := make(chan error, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					errs <- e.admit(admission(fmt.Sprint("a", i), start.Add(time.Duration(i%7)*time.Millisecond)), limit, 0)
				})
			}
			wg.Wait()
			close(errs)
			admitted := 0
			for err := range errs {
				var qe *chat.QuotaError
				switch {
				case err == nil:
					admitted++
				case !errors.As(err, &qe) || qe.Name != chat.QuotaTurnsPerMinute:
					t.Errorf("a refusal: %v, want the rate quota", err)
				}
			}
			if admitted != limit {
				t.Errorf("%d of %d admitted with turnsPerMinute %d", admitted, n, limit)
			}
			// The window moves on: the next minute admits again.
			if err := e.admit(admission("later", start.Add(time.Minute+10*time.Millisecond)), limit, 0); err != nil {
				t.Errorf("a minute later: %v", err)
			}
		},

		"RateAcrossTheMonthBoundary": func(t *testing.T, e *env) {
			// The previous month's admissions count in the next month's
			// first minute, and a place they left free is free.
			if err := e.admit(admission("a1", time.Date(2026, 11, 30, 23, 59, 0, 0, time.UTC)), 2, 0); err != nil {
				t.Fatal(err)
			}
			if err := e.admit(admission("a2", time.Date(2026, 11, 30, 23, 59, 40, 0, time.UTC)), 2, 0); err != nil {
				t.Fatal(err)
			}
			dec := time.Date(2026, 12, 1, 0, 0, 10, 0, time.UTC)
			if err := e.admit(admission("a3", dec), 2, 0); err != nil {
				t.Fatalf("in December, beside one November turn of the minute: %v", err)
			}
			wantQuota(t, "a third within the minute", e.admit(admission("a4", dec.Add(time.Second)), 2, 0),
				chat.QuotaTurnsPerMinute, 29*time.Second)
		},

		"GiveBackFreesItsPlaceOnce": func(t *testing.T, e *env) {
			// A give-back sent twice (a retry), the second after another
			// admission took the place it freed, frees one place.
			a := admission("a1", start)
			if err := e.admit(a, 1, 0); err != nil {
				t.Fatal(err)
			}
			if err := e.store.CancelAdmission(e.ctx, alice, a); err != nil {
				t.Fatal(err)
			}
			if err := e.admit(admission("a2", start.Add(time.Second)), 1, 0); err != nil {
				t.Fatalf("after the give-back: %v", err)
			}
			if err := e.store.CancelAdmission(e.ctx, alice, a); err != nil {
				t.Fatalf("given back twice: %v", err)
			}
			wantQuota(t, "after a second give-back of the first", e.admit(admission("a3", start.Add(2*time.Second)), 1, 0),
				chat.QuotaTurnsPerMinute, time.Minute-time.Second)
		},

		"ConcurrentSessionsReleasedWhenTheTurnIsCounted": func(t *testing.T, e *env) {
			first := admission("a1", start)
			first.Session = chat.SessionMarker("s1")
			if err := e.admit(first, 0, 1); err != nil {
				t.Fatal(err)
			}
			wantQuota(t, "a second running turn", e.admit(admission("a2", start.Add(time.Second)), 0, 1),
				chat.QuotaConcurrentSessions, chat.ConcurrencyRetryAfter)
			le := entry("s1", 1, start, usageOf(1))
			le.Admission = first.ID
			e.record(le)
			if err := e.admit(admission("a2", start.Add(2*time.Second)), 0, 1); err != nil {
				t.Fatalf("after the first turn was counted: %v", err)
			}
			// The counted turn still counts towards the rate.
			err := e.admit(admission("a3", start.Add(3*time.Second)), 2, 0)
			wantQuota(t, "the rate after a counted turn", err, chat.QuotaTurnsPerMinute, time.Minute-3*time.Second)
		},

		"SlotExpiresWithItsTurn": func(t *testing.T, e *env) {
			// A turn whose process died frees its slot when its expiry
			// passes, even if nobody counted it yet.
			a := chat.Admission{ID: "a1", StartedAt: start, ExpiresAt: start.Add(3 * time.Second)}
			if err := e.admit(a, 0, 1); err != nil {
				t.Fatal(err)
			}
			wantQuota(t, "while it runs", e.admit(admission("a2", start.Add(time.Second)), 0, 1),
				chat.QuotaConcurrentSessions, 2*time.Second)
			if err := e.admit(admission("a2", start.Add(3*time.Second)), 0, 1); err != nil {
				t.Fatalf("after the expiry: %v", err)
			}
		},

		"OneSessionHoldsOneSlot": func(t *testing.T, e *env) {
			// A second turn of a session that runs one (a submit that will
			// find it busy, an interrupt) adds no session.
			a := admission("a1", start)
			if err := e.admit(a, 0, 1); err != nil {
				t.Fatal(err)
			}
			same := admission("a2", start.Add(time.Second))
			same.Session = a.Session
			if err := e.admit(same, 0, 1); err != nil {
				t.Fatalf("a second turn of the same session: %v", err)
			}
			at := start.Add(2 * time.Second)
			if got := chat.ActivityAt(e.usage(alice, at).Admissions, at); got.Running != 1 || got.Recent != 2 {
				t.Errorf("activity %+v, want 1 running session, 2 recent turns", got)
			}
			wantQuota(t, "another session", e.admit(admission("a3", at), 0, 1), chat.QuotaConcurrentSessions, chat.ConcurrencyRetryAfter)
		},

		"CancelledAdmissionCountsNoMore": func(t *testing.T, e *env) {
			a := admission("a1", start)
			if err := e.admit(a, 1, 1); err != nil {
				t.Fatal(err)
			}
			if err := e.store.CancelAdmission(e.ctx, alice, a); err != nil {
				t.Fatal(err)
			}
			if err := e.store.CancelAdmission(e.ctx, alice, a); err != nil {
				t.Fatalf("cancelled twice: %v", err)
			}
			if err := e.admit(admission("a2", start.Add(time.Second)), 1, 1); err != nil {
				t.Fatalf("after the cancellation: %v", err)
			}
		},

		"AdmittedOnceByID": func(t *testing.T, e *env) {
			a := admission("a1", start)
			for range 2 {
				if err := e.admit(a, 2, 0); err != nil {
					t.Fatal(err)
				}
			}
			if got := chat.ActivityAt(e.usage(alice, start).Admissions, start); got.Recent != 1 || got.Running != 1 {
				t.Errorf("activity %+v after the same admission twice, want 1 recent, 1 running", got)
			}
		},

		"AdmissionsAcrossTheMonthBoundary": func(t *testing.T, e *env) {
			late := time.Date(2026, 11, 30, 23, 59, 50, 0, time.UTC)
			if err := e.admit(admission("a1", late), 0, 1); err != nil {
				t.Fatal(err)
			}
			at := late.Add(20 * time.Second) // December
			wantQuota(t, "in the next month", e.admit(admission("a2", at), 0, 1), chat.QuotaConcurrentSessions, chat.ConcurrencyRetryAfter)
			if got := chat.ActivityAt(e.usage(alice, at).Admissions, at); got.Running != 1 {
				t.Errorf("running %d read in December, want the November turn", got.Running)
			}
		},

		"OtherPrincipalsApart": func(t *testing.T, e *env) {
			if err := e.admit(admission("a1", start), 1, 1); err != nil {
				t.Fatal(err)
			}
			_, err := e.store.Admit(e.ctx, chat.AdmitRequest{Principal: mallory, Admission: admission("b1", start), TurnsPerMinute: 1, ConcurrentSessions: 1})
			if err != nil {
				t.Fatalf("mallory after alice: %v", err)
			}
		},

		"InvalidAdmissions": func(t *testing.T, e *env) {
			for name, a := range map[string]chat.Admission{
				"no id":            {StartedAt: start, ExpiresAt: start.Add(time.Second)},
				"no start":         {ID: "a", ExpiresAt: start},
				"expiry before it": {ID: "a", StartedAt: start, ExpiresAt: start},
			} {
				wantErr(t, name, e.admit(a, 1, 1), chat.ErrInvalidRequest)
			}
		},
	}
}
