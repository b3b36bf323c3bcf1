package quota_test

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/clock"
	"github.com/turnstream/turnstream/pkg/quota"
	"github.com/turnstream/turnstream/pkg/store/memory"
)

var (
	start = time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	alice = chat.Principal{Subject: "alice", Tenant: "acme"}
	bob   = chat.Principal{Subject: "bob", Tenant: "acme"}
	log   = slog.New(slog.DiscardHandler)
)

// store is the memory store with its ledger on, counting the ledger reads
// and failing them while fail is set.
type store struct {
	*memory.Store
	reads, lists atomic.Int32
	fail         atomic.Bool
}

var errDown = errors.New("the table is unreachable")

func (s *store) ReadUsage(ctx context.Context, p chat.Principal, at time.Time) (*chat.PrincipalUsage, error) {
	s.reads.Add(1)
	if s.fail.Load() {
		return nil, errDown
	}
	return s.Store.ReadUsage(ctx, p, at)
}

func (s *store) ListUsage(ctx context.Context, req chat.UsageListRequest) (*chat.UsagePage, error) {
	s.lists.Add(1)
	if s.fail.Load() {
		return nil, errDown
	}
	return s.Store.ListUsage(ctx, req)
}

func newStore(now func() time.Time) *store {
	return &store{Store: memory.New(memory.Options{Now: now, Ledger: chat.LedgerOptions{Enabled: true}})}
}

// count adds a turn of tokens to p's ledger.
func count(t *testing.T, s *store, p chat.Principal, session string, tokens int64) {
	t.Helper()
	if err := s.RecordUsage(t.Context(), chat.LedgerEntry{SessionID: session, Ordinal: 1, Owner: p, StartedAt: start,
		Usage: chat.Usage{InputTokens: tokens / 2, OutputTokens: tokens - tokens/2, ModelCalls: 1}}); err != nil {
		t.Fatal(err)
	}
}

func request(p chat.Principal, session string, q chat.Quotas, mode quota.Mode) quota.Request {
	return quota.Request{Principal: p, SessionID: session, Quotas: q, Start: start, Expires: start.Add(time.Minute), Mode: mode}
}

// TestAdmitTokens: no quotas cost nothing; a token quota reached refuses
// the turn with the quota named, before any admission; a principal under
// it is admitted without one (no rate or concurrency quota).
func TestAdmitTokens(t *testing.T) {
	s := newStore(func() time.Time { return start })
	g := quota.New(quota.Options{Store: s, Clock: clock.NewFake(start)})
	if c, err := g.Admit(t.Context(), log, request(alice, "s1", chat.Quotas{}, quota.Running)); c != nil || err != nil || s.reads.Load() != 0 {
		t.Fatalf("no quotas: %v, %v, %d reads", c, err, s.reads.Load())
	}
	count(t, s, alice, "s0", 100)
	q := chat.Quotas{Principal: chat.QuotaLimits{TokensPerDay: 100}}
	_, err := g.Admit(t.Context(), log, request(alice, "s1", q, quota.Running))
	var qe *chat.QuotaError
	if !errors.As(err, &qe) || qe.Scope != chat.ScopePrincipal || qe.Name != chat.QuotaTokensPerDay || qe.Used != 100 {
		t.Fatalf("alice at her quota: %v", err)
	}
	c, err := g.Admit(t.Context(), log, request(bob, "s2", q, quota.Running))
	if err != nil || c == nil || !c.Read() || c.Admission() != nil {
		t.Fatalf("bob: %+v, %v", c, err)
	}
	// Bob's own tokens count before the ledger has them.
	if qe := g.CheckTokens(t.Context(), log, c, bob, 99); qe != nil {
		t.Errorf("99 of 100 tokens: %v", qe)
	}
	if qe := g.CheckTokens(t.Context(), log, c, bob, 100); qe == nil || qe.Used != 100 {
		t.Errorf("100 of 100 tokens: %v", qe)
	}
	if qe := g.CheckTokens(t.Context(), log, nil, bob, 1000); qe != nil {
		t.Errorf("a nil Check limits nothing: %v", qe)
	}
}

// TestAdmitRate: turnsPerMinute admits that many running turns in a
// minute; a turn given back frees its place; a rate-only admission (a
// queued turn) counts but holds no admission to give back.
func TestAdmitRate(t *testing.T) {
	s := newStore(func() time.Time { return start })
	g := quota.New(quota.Options{Store: s, Clock: clock.NewFake(start)})
	q := chat.Quotas{Principal: chat.QuotaLimits{TurnsPerMinute: 2}}
	first, err := g.Admit(t.Context(), log, request(alice, "s1", q, quota.Running))
	if err != nil || first.Admission() == nil {
		t.Fatalf("first: %+v, %v", first, err)
	}
	queued, err := g.Admit(t.Context(), log, request(alice, "s2", q, quota.RateOnly))
	if err != nil || queued.Admission() != nil {
		t.Fatalf("queued: %+v, %v", queued, err)
	}
	var qe *chat.QuotaError
	if _, err := g.Admit(t.Context(), log, request(alice, "s3", q, quota.Running)); !errors.As(err, &qe) || qe.Name != chat.QuotaTurnsPerMinute {
		t.Fatalf("a third turn in the minute: %v", err)
	}
	g.GiveBack(t.Context(), log, alice, first)
	g.GiveBack(t.Context(), log, alice, queued) // nothing to give back: a no-op
	if _, err := g.Admit(t.Context(), log, request(alice, "s3", q, quota.Running)); err != nil {
		t.Fatalf("after a give-back: %v", err)
	}
}

// TestAdmitUnavailable: a ledger that cannot be read refuses the turn
// with chat.ErrQuotaUnavailable, or with FailOpen lets it run unchecked
// (its first CheckTokens reads the figures); a failed read again keeps
// the older figures.
func TestAdmitUnavailable(t *testing.T) {
	s := newStore(func() time.Time { return start })
	q := chat.Quotas{Principal: chat.QuotaLimits{TokensPerDay: 100}}
	s.fail.Store(true)
	if _, err := quota.New(quota.Options{Store: s, Clock: clock.NewFake(start)}).Admit(t.Context(), log, request(alice, "s1", q, quota.Running)); !errors.Is(err, chat.ErrQuotaUnavailable) {
		t.Fatalf("fail closed: %v", err)
	}
	// The gate reads the figures of its clock's day: start's, where count
	// records them (with the real clock this test failed from the day
	// after start).
	g := quota.New(quota.Options{Store: s, FailOpen: true, Clock: clock.NewFake(start)})
	c, err := g.Admit(t.Context(), log, request(alice, "s1", q, quota.Running))
	if err != nil || c == nil || c.Read() {
		t.Fatalf("fail open: %+v, %v", c, err)
	}
	if qe := g.CheckTokens(t.Context(), log, c, alice, 500); qe != nil {
		t.Errorf("no figures yet, the store still down: %v", qe)
	}
	s.fail.Store(false)
	count(t, s, alice, "s0", 60)
	if qe := g.CheckTokens(t.Context(), log, c, alice, 40); qe == nil {
		t.Error("60 counted and 40 of its own: the quota of 100 is reached")
	}
	if !c.Read() {
		t.Error("the figures were read")
	}
}

// TestFiguresCached: within Cache a turn's figures and a tenant's sum are
// read once; after it, again (the Gate's clock).
func TestFiguresCached(t *testing.T) {
	fake := clock.NewFake(start)
	s := newStore(fake.Now)
	g := quota.New(quota.Options{Store: s, Cache: time.Minute, Clock: fake})
	q := chat.Quotas{Principal: chat.QuotaLimits{TokensPerDay: 1000}, Tenant: chat.QuotaLimits{TokensPerDay: 1000}}
	c, err := g.Admit(t.Context(), log, request(alice, "s1", q, quota.Running))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Admit(t.Context(), log, request(bob, "s2", q, quota.Running)); err != nil {
		t.Fatal(err)
	}
	if r, l := s.reads.Load(), s.lists.Load(); r != 2 || l != 1 {
		t.Fatalf("two admissions: %d principal reads (want 2, each fresh), %d tenant sums (want 1, cached)", r, l)
	}
	if qe := g.CheckTokens(t.Context(), log, c, alice, 10); qe != nil {
		t.Errorf("10 of 1,000 tokens: %v", qe)
	}
	if r := s.reads.Load(); r != 2 {
		t.Errorf("a check within the window read the principal again (%d reads)", r)
	}
	fake.Advance(time.Minute)
	if qe := g.CheckTokens(t.Context(), log, c, alice, 10); qe != nil {
		t.Errorf("10 of 1,000 tokens, a minute later: %v", qe)
	}
	if r, l := s.reads.Load(), s.lists.Load(); r != 3 || l != 2 {
		t.Errorf("a check after the window: %d principal reads (want 3), %d tenant sums (want 2)", r, l)
	}
}

// TestUnchecked: a queued turn's Check has its quotas and no figures;
// none for no quotas.
func TestUnchecked(t *testing.T) {
	if quota.Unchecked(chat.Quotas{}) != nil {
		t.Error("no quotas: want nil")
	}
	c := quota.Unchecked(chat.Quotas{Principal: chat.QuotaLimits{TokensPerMonth: 5}})
	if c == nil || c.Read() || c.Admission() != nil {
		t.Errorf("%+v", c)
	}
}
