package turn_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/ddbfault"
	"github.com/turnstream/turnstream/internal/dynalite"
	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/clock"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/definition"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
	"github.com/turnstream/turnstream/pkg/store/memory"
	"github.com/turnstream/turnstream/pkg/store/storetest"
	"github.com/turnstream/turnstream/pkg/tool"
	"github.com/turnstream/turnstream/pkg/turn"
)

// ledgerStores are the stores of the ledger tests, their ledger enabled,
// on clock (nil: real time).
func ledgerStores(clock *storetest.Clock) []storeFactory {
	var now func() time.Time
	if clock != nil {
		now = clock.Now
	}
	return []storeFactory{
		{"memory", func(testing.TB) chat.Store {
			return memory.New(memory.Options{Now: now, Ledger: chat.LedgerOptions{Enabled: true}})
		}},
		{"dynalite", func(tb testing.TB) chat.Store {
			tb.Helper()
			client, err := dynamo.NewClient(context.Background(), dynalite.Options(tb))
			if err != nil {
				tb.Fatalf("dynamo client: %v", err)
			}
			return dynamo.New(client, dynamo.Options{Table: dynalite.Table(tb), Now: now,
				CursorKey: []byte("turn-test-cursor-key-0123456789"), Ledger: chat.LedgerOptions{Enabled: true}})
		}},
	}
}

// withQuotas sets the handler's ledger on, quotas q on its definition and
// its clock.
func withQuotas(q chat.Quotas, clock *storetest.Clock) func(*turn.Options) {
	return func(o *turn.Options) {
		o.Ledger = true
		o.Definition.Quotas = q
		if clock != nil {
			o.Clock = clock
		}
	}
}

// usageOf reads p's ledger at at.
func usageOf(tb testing.TB, s chat.Store, p chat.Principal, at time.Time) *chat.PrincipalUsage {
	tb.Helper()
	u, err := s.ReadUsage(context.Background(), p, at)
	if err != nil {
		tb.Fatal(err)
	}
	return u
}

// TestLedgerCountsEveryTurn: each turn, complete or failed, is counted
// once in its owner's ledger when it ends, with the usage its record
// holds (the stream's tokens, its model and tool calls, and on DynamoDB
// its requests and units), before its release.
func TestLedgerCountsEveryTurn(t *testing.T) {
	for _, sf := range ledgerStores(nil) {
		t.Run(sf.name, func(t *testing.T) {
			store := sf.new(t)
			m := &scriptModel{Chunks: []string{"one ", "two"}, Usage: &protocol.Usage{PromptTokens: 5, CompletionTokens: 7, TotalTokens: 12}}
			e := newEnv(t, store, m, func(o *turn.Options) { o.Ledger = true })
			at := time.Now()
			var want chat.Counters
			for i, id := range []string{"t1", "t2", "t3"} {
				sid := "s1"
				if i == 2 {
					sid = "s2"
				}
				r := e.submit(t, sid, id, "hello", nil, nil)
				r.want(t, http.StatusOK, "")
				if u := r.terminal(t).Usage; u.PromptTokens != 5 || u.CompletionTokens != 7 {
					t.Fatalf("usage %+v", u)
				}
				rec, err := store.FindTurn(context.Background(), sid, id, alice)
				if err != nil {
					t.Fatal(err)
				}
				if rec.Metered.InputTokens != 5 || rec.Metered.OutputTokens != 7 || rec.Metered.ModelCalls != 1 ||
					sf.name == "dynalite" && (rec.Metered.StoreRequests < 1 || rec.Metered.WriteUnits <= 0) {
					t.Errorf("turn %s metered %+v", id, rec.Metered)
				}
				want.Add(chat.Counters{Turns: 1, Usage: rec.Metered})
			}
			// A turn that fails counts too.
			m.Err = &model.Error{Code: "boom"}
			e.submit(t, "s1", "t4", "hello", nil, nil).want(t, http.StatusOK, "")
			rec, err := store.FindTurn(context.Background(), "s1", "t4", alice)
			if err != nil || rec.Status != chat.TurnError {
				t.Fatalf("failed turn: %+v, %v", rec, err)
			}
			want.Add(chat.Counters{Turns: 1, Usage: rec.Metered})
			got := usageOf(t, store, alice, at)
			if got.Day != want || got.Month != want {
				t.Errorf("ledger day %+v month %+v, want %+v", got.Day, got.Month, want)
			}
		})
	}
}

// countingLedger counts a store's calls by kind.
type countingLedger struct {
	chat.Store
	calls map[string]int
	// recordErr, when set, fails RecordUsage (after passing it on when
	// applied is set: the write landed, its answer did not).
	recordErr error
	applied   bool
	readErr   error
}

func (s *countingLedger) RecordUsage(ctx context.Context, e chat.LedgerEntry) error {
	s.calls["RecordUsage"]++
	if s.recordErr != nil {
		if s.applied {
			_ = s.Store.RecordUsage(ctx, e)
		}
		return s.recordErr
	}
	return s.Store.RecordUsage(ctx, e)
}

func (s *countingLedger) ReadUsage(ctx context.Context, p chat.Principal, at time.Time) (*chat.PrincipalUsage, error) {
	s.calls["ReadUsage"]++
	if s.readErr != nil {
		return nil, s.readErr
	}
	return s.Store.ReadUsage(ctx, p, at)
}

func (s *countingLedger) Admit(ctx context.Context, req chat.AdmitRequest) (*chat.PrincipalUsage, error) {
	s.calls["Admit"]++
	return s.Store.Admit(ctx, req)
}

func (s *countingLedger) ReleaseTurn(ctx context.Context, req chat.ReleaseRequest) (*chat.Session, error) {
	s.calls["ReleaseTurn"]++
	return s.Store.ReleaseTurn(ctx, req)
}

// TestLedgerRequestBudget: with the ledger on a completed turn makes one
// store call more than without, RecordUsage, and on DynamoDB exactly four
// requests more (the count's read, add, settle and clear): 8 (7 for a new
// session) instead of 4 (3) (docs/quotas.md). A quota check adds one
// read, and with a rate or concurrency quota one write.
func TestLedgerRequestBudget(t *testing.T) {
	const count = "BatchGetItem UpdateItem UpdateItem UpdateItem"
	for name, tc := range map[string]struct {
		ledger   bool
		quotas   chat.Quotas
		new, old []string // DynamoDB operations of a turn of a new and of an existing session
	}{
		"ledger off": {false, chat.Quotas{}, []string{"UpdateItem", "UpdateItem", "UpdateItem"},
			[]string{"UpdateItem", "Query", "UpdateItem", "UpdateItem"}},
		"ledger on": {true, chat.Quotas{}, []string{"UpdateItem", "UpdateItem", count, "UpdateItem"},
			[]string{"UpdateItem", "Query", "UpdateItem", count, "UpdateItem"}},
		"token quota": {true, chat.Quotas{Principal: chat.QuotaLimits{TokensPerDay: 1000}},
			[]string{"GetItem", "UpdateItem", "UpdateItem", count, "UpdateItem"},
			[]string{"GetItem", "UpdateItem", "Query", "UpdateItem", count, "UpdateItem"}},
		"rate quota": {true, chat.Quotas{Principal: chat.QuotaLimits{TurnsPerMinute: 100}},
			[]string{"GetItem", "UpdateItem", "UpdateItem", "UpdateItem", count, "UpdateItem"},
			[]string{"GetItem", "UpdateItem", "UpdateItem", "Query", "UpdateItem", count, "UpdateItem"}},
	} {
		t.Run(name, func(t *testing.T) {
			log := &dynamo.OperationLog{}
			client, err := dynamo.NewClient(context.Background(), dynalite.Options(t), log.Option)
			if err != nil {
				t.Fatal(err)
			}
			store := dynamo.New(client, dynamo.Options{Table: dynalite.Table(t), CursorKey: []byte("turn-test-cursor-key-0123456789"),
				Ledger: chat.LedgerOptions{Enabled: true}})
			e := newEnv(t, store, &scriptModel{Chunks: []string{"ok"}}, func(o *turn.Options) {
				o.Ledger = tc.ledger
				o.Definition.Quotas = tc.quotas
			})
			for i, want := range [][]string{tc.new, tc.old} {
				log.Reset()
				e.submit(t, "s1", []string{"t1", "t2"}[i], "hi", nil, nil).want(t, http.StatusOK, "")
				if got := log.Take(); strings.Join(got, " ") != strings.Join(want, " ") {
					t.Errorf("turn %d: requests %v, want %v", i+1, got, want)
				}
			}
		})
	}
}

// TestTurnsPerMinute is the first of docs/quotas.md's promises with a
// definition's quota of 3 turns per minute per principal: the 4th submit
// within the minute gets 429 QUOTA_EXCEEDED (retryable) with Retry-After
// and the quota's name, claiming nothing (the same submit runs once the
// window moves on); the ledger shows the 3 turns and their tokens; another
// principal is not limited by alice's turns.
func TestTurnsPerMinute(t *testing.T) {
	// Noon UTC today: the test moves the clock a minute or more, and the
	// ledger's day must not turn over under it (run 4 of a make test loop
	// started at 23:59:50 UTC and counted its third turn in the next day).
	clock := storetest.NewClock(time.Now().UTC().Truncate(24 * time.Hour).Add(12 * time.Hour))
	for _, sf := range ledgerStores(clock) {
		t.Run(sf.name, func(t *testing.T) {
			store := sf.new(t)
			q := chat.Quotas{Principal: chat.QuotaLimits{TurnsPerMinute: 3}}
			e := newEnv(t, store, &scriptModel{Chunks: []string{"ok"}}, withQuotas(q, clock))
			start := clock.Now()
			for i, id := range []string{"t1", "t2", "t3"} {
				clock.Advance(10 * time.Second)
				e.submit(t, "s"+id, id, "hello", nil, nil).want(t, http.StatusOK, "")
				_ = i
			}
			clock.Advance(5 * time.Second) // 35 s after the start: the first turn frees a place at 70 s
			r := e.submit(t, "s4", "t4", "hello", nil, nil)
			r.want(t, http.StatusTooManyRequests, protocol.CodeQuotaExceeded)
			if !r.errD.Retryable || r.header.Get("Retry-After") != "35" || r.header.Get(api.QuotaHeader) != "principal.turnsPerMinute" {
				t.Errorf("429: retryable %v, Retry-After %q, %s %q", r.errD.Retryable, r.header.Get("Retry-After"), api.QuotaHeader, r.header.Get(api.QuotaHeader))
			}
			e.submit(t, "sb", "t4", "hello", nil, map[string]string{"X-Test-Subject": "bob"}).want(t, http.StatusOK, "")
			u := usageOf(t, store, alice, clock.Now())
			if u.Day.Turns != 3 || u.Day.InputTokens != 9 || u.Day.OutputTokens != 3 {
				t.Errorf("alice's day: %+v; want 3 turns, 9 tokens in, 3 out", u.Day)
			}
			clock.Advance(35 * time.Second)
			// The same submit, after the wait: its turn id was not spent.
			e.submit(t, "s4", "t4", "hello", nil, nil).want(t, http.StatusOK, "")
			if u := usageOf(t, store, alice, start); u.Month.Turns != 4 {
				t.Errorf("alice's month: %d turns, want 4", u.Month.Turns)
			}
		})
	}
}

// TestTurnsPerMinuteExactUnderConcurrentSubmits: 30 submits of one
// principal at once, on 30 sessions, through two handlers (two servers)
// on one store, with turnsPerMinute 5: exactly 5 run, the other 25 get
// 429 QUOTA_EXCEEDED principal.turnsPerMinute, and the ledger counts 5
// turns; also on DynamoDB with a third of the admission writes losing
// their answer or answered 500 after applying (below the SDK's retryer):
// an admission recognises its own write, never counted twice nor
// refused. The handlers' clock moves a millisecond per reading, so the
// submits' starts differ and their admissions are written in any order of
// their starts, as concurrent submits' are (the whole run spans far less
// than the minute however slow the machine).
// tickingClock reads a millisecond later at each reading; its timers are
// package time's.
type tickingClock struct {
	base  time.Time
	ticks atomic.Int64
}

func (c *tickingClock) Now() time.Time {
	return c.base.Add(time.Duration(c.ticks.Add(1)) * time.Millisecond)
}
func (*tickingClock) NewTimer(d time.Duration) clock.Timer   { return clock.Real.NewTimer(d) }
func (*tickingClock) NewTicker(d time.Duration) clock.Ticker { return clock.Real.NewTicker(d) }

func TestTurnsPerMinuteExactUnderConcurrentSubmits(t *testing.T) {
	tc := &tickingClock{base: time.Now().UTC().Truncate(time.Millisecond)}
	var faults *ddbfault.Transport
	stores := append(ledgerStores(nil), storeFactory{"dynalite, a third of the admission writes faulted", func(tb testing.TB) chat.Store {
		tb.Helper()
		faults = ddbfault.New(nil)
		opts := dynalite.Options(tb)
		opts.Transport = faults
		client, err := dynamo.NewClient(context.Background(), opts)
		if err != nil {
			tb.Fatalf("dynamo client: %v", err)
		}
		var mu sync.Mutex
		rng := mrand.New(mrand.NewPCG(34, 2))
		admission := ddbfault.For("UpdateItem", dynamo.PurposeAdmission)
		faults.SetRule(func(a ddbfault.Attempt) ddbfault.Fault {
			mu.Lock()
			defer mu.Unlock()
			if !admission(a) || rng.IntN(3) != 0 {
				return ddbfault.Pass
			}
			return []ddbfault.Fault{ddbfault.LoseAnswer, ddbfault.ServerErrorAfter}[rng.IntN(2)]
		})
		return dynamo.New(client, dynamo.Options{Table: dynalite.Table(tb),
			CursorKey: []byte("turn-test-cursor-key-0123456789"), Ledger: chat.LedgerOptions{Enabled: true}})
	}})
	for _, sf := range stores {
		t.Run(sf.name, func(t *testing.T) {
			store := sf.new(t)
			q := chat.Quotas{Principal: chat.QuotaLimits{TurnsPerMinute: 5}}
			opts := func(o *turn.Options) {
				o.Ledger = true
				o.Definition.Quotas = q
				o.Clock = tc
			}
			envs := []*env{
				newEnv(t, store, &scriptModel{Chunks: []string{"ok"}}, opts),
				newEnv(t, store, &scriptModel{Chunks: []string{"ok"}}, opts),
			}
			const n = 30
			results := make([]result, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					results[i] = envs[i%2].submit(t, fmt.Sprint("s", i), fmt.Sprint("t", i), "hello", nil, nil)
				})
			}
			wg.Wait()
			ran, refused := 0, 0
			for i, r := range results {
				switch {
				case r.status == http.StatusOK:
					ran++
				case r.status == http.StatusTooManyRequests && r.header.Get(api.QuotaHeader) == "principal.turnsPerMinute":
					refused++
				default:
					t.Errorf("submit %d: %d %s", i, r.status, r.raw)
				}
			}
			if ran != 5 || refused != n-5 {
				t.Errorf("%d ran, %d refused by the rate, of %d submits with turnsPerMinute 5", ran, refused, n)
			}
			if u := usageOf(t, store, alice, tc.base); u.Month.Turns != int64(ran) {
				t.Errorf("ledger: %d turns, want the %d that ran", u.Month.Turns, ran)
			}
			if faults != nil {
				if c := faults.Counts(); c[ddbfault.LoseAnswer]+c[ddbfault.ServerErrorAfter] == 0 {
					t.Error("no admission write was faulted")
				}
			}
		})
	}
}

// TestConcurrentSessions: with a quota of one session running at once, a
// submit to another session while alice's turn runs is 429, one to the
// busy session itself is still 409 SESSION_BUSY (one session: no new
// slot), and once the turn is counted the other session runs.
func TestConcurrentSessions(t *testing.T) {
	forEachStoreWithLedger(t, func(t *testing.T, store chat.Store) {
		hold := make(chan struct{})
		m := &scriptModel{Chunks: []string{"a", "b"}, Hold: hold, Started: make(chan struct{}, 4)}
		e := newEnv(t, store, m, withQuotas(chat.Quotas{Principal: chat.QuotaLimits{ConcurrentSessions: 1}}, nil))
		done := make(chan result, 1)
		go func() { done <- e.submit(t, "s1", "t1", "hello", nil, nil) }()
		<-m.Started
		r := e.submit(t, "s2", "t2", "hello", nil, nil)
		r.want(t, http.StatusTooManyRequests, protocol.CodeQuotaExceeded)
		if r.header.Get(api.QuotaHeader) != "principal.concurrentSessions" || r.header.Get("Retry-After") == "" {
			t.Errorf("headers %v", r.header)
		}
		e.submit(t, "s1", "t3", "hello", nil, nil).want(t, http.StatusConflict, protocol.CodeSessionBusy)
		close(hold)
		(<-done).want(t, http.StatusOK, "")
		e.submit(t, "s2", "t2", "hello", nil, nil).want(t, http.StatusOK, "")
	})
}

// forEachStoreWithLedger runs f on each store, its ledger enabled.
func forEachStoreWithLedger(t *testing.T, f func(t *testing.T, store chat.Store)) {
	t.Helper()
	for _, sf := range ledgerStores(nil) {
		t.Run(sf.name, func(t *testing.T) { f(t, sf.new(t)) })
	}
}

// TestTokensPerDay: a turn's tokens count once it ended; the turn that
// crossed the quota with its last call completes, the next submit is
// refused until the next UTC day.
func TestTokensPerDay(t *testing.T) {
	forEachStoreWithLedger(t, func(t *testing.T, store chat.Store) {
		m := &scriptModel{Chunks: []string{"ok"}, Usage: &protocol.Usage{PromptTokens: 8, CompletionTokens: 4, TotalTokens: 12}}
		e := newEnv(t, store, m, withQuotas(chat.Quotas{Principal: chat.QuotaLimits{TokensPerDay: 10}}, nil))
		e.submit(t, "s1", "t1", "hello", nil, nil).want(t, http.StatusOK, "")
		r := e.submit(t, "s1", "t2", "hello", nil, nil)
		r.want(t, http.StatusTooManyRequests, protocol.CodeQuotaExceeded)
		now := time.Now().UTC()
		_, midnight := chat.PeriodDay.Bounds(now)
		ra, err := strconv.Atoi(r.header.Get("Retry-After"))
		if want := midnight.Sub(now).Seconds(); err != nil || float64(ra) < want-60 || float64(ra) > want+60 ||
			r.header.Get(api.QuotaHeader) != "principal.tokensPerDay" {
			t.Errorf("Retry-After %q, quota %q; want about %.0f s, to the next UTC day", r.header.Get("Retry-After"), r.header.Get(api.QuotaHeader), want)
		}
	})
}

// TestTokenQuotaCrossedMidTurn is the second promise: a token quota crossed
// by a model call ends the turn after that call with LIMIT_EXCEEDED, its
// partial answer kept, the tool calls the call asked for never run, the
// limit named in the assistant message's metadata; the turn is counted.
func TestTokenQuotaCrossedMidTurn(t *testing.T) {
	forEachStoreWithLedger(t, func(t *testing.T, store chat.Store) {
		m := &stepModel{Steps: [][]model.Event{
			{{TextDelta: "Here is a first part."}, callEvent("c1", "workspace_note", `{"title":"A","body":"b"}`), usageEvent(8, 8)},
			{{TextDelta: "Never."}, usageEvent(1, 1)},
		}}
		e := budgetEnv(t, store, m, definition.Limits{MaxSteps: 4}, chat.Quotas{Principal: chat.QuotaLimits{TokensPerDay: 10}})
		r := e.submit(t, "s1", "t1", "hello", nil, nil)
		r.want(t, http.StatusOK, "")
		snap := r.terminal(t)
		if snap.Status != protocol.StatusError || snap.Error == nil || snap.Error.Code != protocol.CodeLimitExceeded || snap.Error.Retryable {
			t.Fatalf("terminal %s %+v, want error LIMIT_EXCEEDED, not retryable", snap.Status, snap.Error)
		}
		a := snap.Messages[len(snap.Messages)-1]
		if !strings.Contains(a.Content, "Here is a first part.") || strings.Contains(a.Content, "Never") {
			t.Errorf("assistant content %q, want the first call's text only", a.Content)
		}
		if len(a.ToolCalls) != 1 || a.ToolCalls[0].Status != protocol.ToolCallError || a.ToolCalls[0].Error == nil || *a.ToolCalls[0].Error != turn.TextLimitReached {
			t.Errorf("tool calls %+v, want the call failed, never run", a.ToolCalls)
		}
		wantLimit(t, a, `{"scope":"principal","name":"tokensPerDay","limit":10,"used":16}`)
		if n := len(m.requests()); n != 1 {
			t.Errorf("%d model calls, want 1", n)
		}
		rec, err := store.FindTurn(context.Background(), "s1", "t1", alice)
		if err != nil || len(rec.Artifacts) != 0 || rec.Error == nil || rec.Error.Code != protocol.CodeLimitExceeded {
			t.Fatalf("record %+v, %v; want LIMIT_EXCEEDED and no artifact (the tool never ran)", rec, err)
		}
		if u := usageOf(t, store, alice, time.Now()); u.Day.Turns != 1 || u.Day.Tokens() != 16 || u.Day.ToolCalls != 1 {
			t.Errorf("ledger %+v, want the turn, 16 tokens, 1 tool call asked", u.Day)
		}
	})
}

// wantLimit fails unless the assistant message's metadata names the
// limit want (JSON).
func wantLimit(t *testing.T, a protocol.Message, want string) {
	t.Helper()
	var meta map[string]json.RawMessage
	if err := json.Unmarshal(a.Metadata, &meta); err != nil {
		t.Fatalf("metadata %s: %v", a.Metadata, err)
	}
	if got := string(meta[turn.MetadataLimit]); got != want {
		t.Errorf("metadata.limit %s, want %s", got, want)
	}
}

// toolEnv is a handler with the workspace_note tool, one definition of
// limits and quotas, the ledger on.
func budgetEnv(t *testing.T, store chat.Store, m model.Model, limits definition.Limits, q chat.Quotas) *env {
	t.Helper()
	reg := tool.NewRegistry(nil)
	if err := reg.Register(tool.WorkspaceNote()); err != nil {
		t.Fatal(err)
	}
	res, err := definition.Load(definition.Config{DefaultID: "agent", DefaultQuotas: q, Single: definition.Definition{Revision: 1,
		Provider: config.ProviderEcho, Tools: []string{"workspace_note"}, Limits: limits}}, nil, reg.Has)
	if err != nil {
		t.Fatal(err)
	}
	return newEnv(t, store, &scriptModel{}, func(o *turn.Options) {
		o.Model, o.Definitions, o.Tools, o.Ledger = nil, res, reg, true
		o.Models = map[string]model.Model{config.ProviderEcho: m}
	})
}

// TestBudgets: each per-turn budget ends the turn with LIMIT_EXCEEDED and
// its own detail, the partial answer kept: output tokens across the turn
// (each call's completion capped at what is left), tool calls (the calls
// within the budget run, the others never), wall time (the turn stopped);
// the step limit, which completes the turn, names itself too.
func TestBudgets(t *testing.T) {
	t.Run("maxOutputTokens", func(t *testing.T) {
		m := &stepModel{Steps: [][]model.Event{
			{{TextDelta: "Step one."}, callEvent("c1", "workspace_note", `{"title":"A","body":"b"}`), usageEvent(2, 6)},
			{{TextDelta: "Step two."}, callEvent("c2", "workspace_note", `{"title":"B","body":"b"}`), usageEvent(2, 5)},
		}}
		e := budgetEnv(t, newLedgerMemory(), m, definition.Limits{MaxSteps: 8, MaxTokens: 100, MaxOutputTokens: 10}, chat.Quotas{})
		snap := e.submit(t, "s1", "t1", "hello", nil, nil).terminal(t)
		if snap.Error == nil || snap.Error.Code != protocol.CodeLimitExceeded {
			t.Fatalf("terminal %+v", snap.Error)
		}
		reqs := m.requests()
		if len(reqs) != 2 || reqs[0].MaxTokens != 10 || reqs[1].MaxTokens != 4 {
			t.Errorf("%d calls, caps %v; want 2 calls capped at 10, then 4 left", len(reqs), maxTokensOf(reqs))
		}
		a := snap.Messages[len(snap.Messages)-1]
		wantLimit(t, a, `{"scope":"turn","name":"maxOutputTokens","limit":10,"used":11}`)
		if !strings.Contains(a.Content, "Step one.") || !strings.Contains(a.Content, "Step two.") ||
			len(a.ToolCalls) != 2 || a.ToolCalls[0].Status != protocol.ToolCallComplete || a.ToolCalls[1].Status != protocol.ToolCallError {
			t.Errorf("assistant %q, calls %+v: want both texts, the first call run, the second not", a.Content, a.ToolCalls)
		}
	})
	t.Run("maxToolCalls", func(t *testing.T) {
		m := &stepModel{Steps: [][]model.Event{
			{callEvent("c1", "workspace_note", `{"title":"A","body":"b"}`), callEvent("c2", "workspace_note", `{"title":"B","body":"b"}`), usageEvent(2, 2)},
		}}
		store := newLedgerMemory()
		e := budgetEnv(t, store, m, definition.Limits{MaxSteps: 8, MaxToolCalls: 1}, chat.Quotas{})
		snap := e.submit(t, "s1", "t1", "hello", nil, nil).terminal(t)
		a := snap.Messages[len(snap.Messages)-1]
		wantLimit(t, a, `{"scope":"turn","name":"maxToolCalls","limit":1,"used":2}`)
		if len(a.ToolCalls) != 2 || a.ToolCalls[0].Status != protocol.ToolCallComplete || a.ToolCalls[1].Status != protocol.ToolCallError ||
			*a.ToolCalls[1].Error != turn.TextLimitReached {
			t.Errorf("calls %+v, want the first run, the second never", a.ToolCalls)
		}
		if rec, err := store.FindTurn(context.Background(), "s1", "t1", alice); err != nil || len(rec.Artifacts) != 1 {
			t.Errorf("record %+v, %v: want the one artifact of the call that ran", rec, err)
		}
		if len(m.requests()) != 1 {
			t.Errorf("%d model calls after the budget, want 1", len(m.requests()))
		}
	})
	t.Run("maxSteps", func(t *testing.T) {
		// The step limit keeps its own ending (the turn completes, the
		// last call's tools never run) and names itself in the metadata.
		m := &stepModel{Steps: [][]model.Event{
			{callEvent("c1", "workspace_note", `{"title":"A","body":"b"}`), usageEvent(1, 1)},
			{{TextDelta: "Again."}, callEvent("c2", "workspace_note", `{"title":"B","body":"b"}`), usageEvent(1, 1)},
		}}
		e := budgetEnv(t, newLedgerMemory(), m, definition.Limits{MaxSteps: 2}, chat.Quotas{})
		snap := e.submit(t, "s1", "t1", "hello", nil, nil).terminal(t)
		if snap.Status != protocol.StatusComplete || snap.Error != nil {
			t.Fatalf("terminal %s %+v, want complete", snap.Status, snap.Error)
		}
		a := snap.Messages[len(snap.Messages)-1]
		wantLimit(t, a, `{"scope":"turn","name":"maxSteps","limit":2,"used":2}`)
		if len(a.ToolCalls) != 2 || *a.ToolCalls[1].Error != turn.TextStepLimit {
			t.Errorf("calls %+v, want the second failed at the step limit", a.ToolCalls)
		}
	})
	t.Run("maxWallTimeMs", func(t *testing.T) {
		hold := make(chan struct{})
		defer close(hold)
		m := &scriptModel{Chunks: []string{"partial ", "never"}, Delay: time.Hour}
		e := newEnv(t, newLedgerMemory(), m, func(o *turn.Options) {
			o.Ledger = true
			o.Definition.Limits = definition.Limits{MaxWallTime: 300 * time.Millisecond}
		})
		snap := e.submit(t, "s1", "t1", "hello", nil, nil).terminal(t)
		if snap.Error == nil || snap.Error.Code != protocol.CodeLimitExceeded {
			t.Fatalf("terminal %+v", snap.Error)
		}
		a := snap.Messages[len(snap.Messages)-1]
		if a.Content != "partial " {
			t.Errorf("content %q, want the partial answer", a.Content)
		}
		var meta struct {
			Limit struct {
				Scope, Name string
				Limit, Used int64
			} `json:"limit"`
		}
		if err := json.Unmarshal(a.Metadata, &meta); err != nil || meta.Limit.Scope != "turn" || meta.Limit.Name != turn.BudgetWallTime ||
			meta.Limit.Limit != 300 || meta.Limit.Used < 300 {
			t.Errorf("metadata %s (%v)", a.Metadata, err)
		}
	})
}

func maxTokensOf(reqs []model.Request) []int {
	var out []int
	for _, r := range reqs {
		out = append(out, r.MaxTokens)
	}
	return out
}

func newLedgerMemory() chat.Store {
	return memory.New(memory.Options{Ledger: chat.LedgerOptions{Enabled: true}})
}

// TestQuotaCheckCannotRead: a quota check whose ledger read fails refuses
// the submit with 503 QUOTA_UNAVAILABLE (retryable, Retry-After 1) when
// failing closed, the default; failing open the turn runs, logged.
func TestQuotaCheckCannotRead(t *testing.T) {
	for _, open := range []bool{false, true} {
		store := &countingLedger{Store: newLedgerMemory(), calls: map[string]int{}, readErr: errors.New("table unreachable")}
		e := newEnv(t, store, &scriptModel{Chunks: []string{"ok"}}, func(o *turn.Options) {
			withQuotas(chat.Quotas{Principal: chat.QuotaLimits{TokensPerDay: 100}}, nil)(o)
			o.QuotaFailOpen = open
		})
		r := e.submit(t, "s1", "t1", "hello", nil, nil)
		if !open {
			r.want(t, http.StatusServiceUnavailable, protocol.CodeQuotaUnavailable)
			if !r.errD.Retryable || r.header.Get("Retry-After") != "1" || strings.Contains(string(r.raw), "unreachable") {
				t.Errorf("503 %s, Retry-After %q", r.raw, r.header.Get("Retry-After"))
			}
			if _, err := store.GetSession(context.Background(), "s1", alice); !errors.Is(err, chat.ErrSessionNotFound) {
				t.Errorf("refused submit claimed its session: %v", err)
			}
			continue
		}
		r.want(t, http.StatusOK, "")
		if !strings.Contains(e.logs.String(), "quota check failed open") || store.calls["RecordUsage"] != 1 {
			t.Errorf("fail open: logs %s, RecordUsage %d", e.logs, store.calls["RecordUsage"])
		}
	}
}

// TestUncountedTurnIsCountedByItsDecider: a turn whose ledger write's
// outcome stays unknown is not released: its terminal snapshot still says
// what the table holds, the session stays busy until the lease expires,
// and the claim that decides it counts it, once, whether or not the
// unanswered write had landed.
func TestUncountedTurnIsCountedByItsDecider(t *testing.T) {
	for _, landed := range []bool{false, true} {
		// The handler and the store share a fake clock: the lease expires
		// when the test moves it, not while a slow machine runs the turn.
		fake := clock.NewFake(time.Now())
		store := &countingLedger{Store: memory.New(memory.Options{Now: fake.Now, Ledger: chat.LedgerOptions{Enabled: true}}), calls: map[string]int{}, recordErr: errors.New("no answer"), applied: landed}
		e := newEnv(t, store, &scriptModel{Chunks: []string{"ok"}}, func(o *turn.Options) {
			o.Ledger = true
			o.LeaseDuration = 300 * time.Millisecond
			o.Clock = fake
		})
		r := e.submit(t, "s1", "t1", "hello", nil, nil)
		r.want(t, http.StatusOK, "")
		if snap := r.terminal(t); snap.Status != protocol.StatusComplete {
			t.Fatalf("terminal %s, want complete: the turn was saved", snap.Status)
		}
		if store.calls["ReleaseTurn"] != 0 {
			t.Fatal("released a turn that was not counted")
		}
		store.recordErr = nil
		e.submit(t, "s1", "t2", "again", nil, nil).want(t, http.StatusConflict, protocol.CodeSessionBusy)
		fake.Advance(300 * time.Millisecond)
		e.submit(t, "s1", "t2", "again", nil, nil).want(t, http.StatusOK, "")
		if u := usageOf(t, store, alice, fake.Now()); u.Day.Turns != 2 {
			t.Errorf("landed %v: %d turns counted, want 2 (each once)", landed, u.Day.Turns)
		}
	}
}

// TestQuotaCapabilities: GET /capabilities lists quotas and budgets and
// says which apply, never anyone's usage.
func TestQuotaCapabilities(t *testing.T) {
	q := chat.Quotas{Principal: chat.QuotaLimits{TurnsPerMinute: 3}, Tenant: chat.QuotaLimits{TokensPerMonth: 1000}}
	e := newEnv(t, newLedgerMemory(), &scriptModel{}, func(o *turn.Options) {
		withQuotas(q, nil)(o)
		o.Definition.Limits = definition.Limits{MaxOutputTokens: 400, MaxWallTime: time.Minute}
	})
	resp, err := e.srv.Client().Get(e.srv.URL + "/capabilities")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var c api.Capabilities
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		t.Fatal(err)
	}
	ext := strings.Join(c.Extensions, ",")
	if !strings.HasSuffix(ext, ",quotas,budgets") || !c.Quotas.Available || c.Quotas.Default != (api.Quotas{Principal: api.QuotaLimits{TurnsPerMinute: 3}, Tenant: api.QuotaLimits{TokensPerMonth: 1000}}) || c.Quotas.FailMode != "closed" ||
		c.Quotas.Usage.Path != "/usage" || c.Quotas.Codes.Exceeded != protocol.CodeQuotaExceeded {
		t.Errorf("extensions %s, quotas %+v", ext, c.Quotas)
	}
	if b := c.Budgets.Default; b.MaxSteps != definition.DefaultMaxSteps || b.MaxOutputTokens != 400 || b.MaxWallTimeMs != 60000 || b.MaxToolCalls != 0 {
		t.Errorf("budgets %+v", c.Budgets)
	}
}

// TestQuotasNeedTheLedger: a definition with quotas and no ledger is a
// configuration error.
func TestQuotasNeedTheLedger(t *testing.T) {
	_, err := turn.NewHandler(turn.Options{
		Config: turn.Config{
			Store:      newLedgerMemory(),
			Model:      &scriptModel{},
			Definition: turn.Definition{ID: "d", Revision: 1, Quotas: chat.Quotas{Tenant: chat.QuotaLimits{TokensPerDay: 1}}},
		},
		Authenticator: &testAuth{},
	})
	if err == nil || !strings.Contains(err.Error(), "Options.Ledger") {
		t.Errorf("NewHandler = %v, want an error naming Options.Ledger", err)
	}
}

// TestAGUITurnCounted: an AG-UI run is a turn like any other: counted in
// the ledger once when it ends.
func TestAGUITurnCounted(t *testing.T) {
	store := newLedgerMemory()
	e := newEnv(t, store, &scriptModel{Chunks: []string{"ok"}}, func(o *turn.Options) { o.Ledger = true })
	body := []byte(`{"threadId":"ag1","runId":"r1","messages":[{"id":"m1","role":"user","content":"hello"}]}`)
	resp := e.post(t, context.Background(), turn.AGUIPath, body, nil)
	raw, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(string(raw), "RUN_FINISHED") {
		t.Fatalf("AG-UI run: %d %v\n%s", resp.StatusCode, err, raw)
	}
	if u := usageOf(t, store, alice, time.Now()); u.Day.Turns != 1 || u.Day.ModelCalls != 1 {
		t.Errorf("ledger %+v, want the run counted once", u.Day)
	}
	if s, err := store.GetSession(context.Background(), "ag1", alice); err != nil || s.ActiveTurn != nil {
		t.Errorf("session %+v, %v; want released", s, err)
	}
}

// TestQueuedTurnChecksTokenQuota: a queued turn's token quota is checked
// when it starts, before its first model call, not only at its enqueue:
// the turn before it reached the quota, so it ends with LIMIT_EXCEEDED
// without calling the model, and is counted (a turn that used nothing).
func TestQueuedTurnChecksTokenQuota(t *testing.T) {
	forEachStoreWithLedger(t, func(t *testing.T, store chat.Store) {
		e, m := multitaskEnv(t, store, func(o *turn.Options) {
			o.Ledger = true
			o.Definition.Quotas = chat.Quotas{Principal: chat.QuotaLimits{TokensPerDay: 3}}
		})
		a := e.startLive(t, context.Background(), "s", "A", "hold A")
		waitFor(t, "A running", runningTurn(e, "s", "A"))
		e.enqueue(t, "s", "B", "question B")
		m.finish()
		<-a.done
		waitFor(t, "B ended", func() bool {
			h := history(t, e, "s")
			return len(h) == 2 && h[1].Status != chat.TurnRunning
		})
		b := history(t, e, "s")[1]
		if b.TurnID != "B" || b.Error == nil || b.Error.Code != protocol.CodeLimitExceeded {
			t.Fatalf("B's record %+v, want LIMIT_EXCEEDED", b)
		}
		if in := m.inputs(); !slices.Equal(in, []string{"hold A"}) {
			t.Errorf("model calls %v, want A's only", in)
		}
		waitFor(t, "both counted", func() bool { return usageOf(t, store, alice, time.Now()).Day.Turns == 2 })
		if u := usageOf(t, store, alice, time.Now()); u.Day.Tokens() != 3 {
			t.Errorf("ledger %+v, want A's 3 tokens", u.Day)
		}
	})
}
