package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/clock"
	"github.com/turnstream/turnstream/pkg/definition"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// The usage ledger, quotas and budgets in the turn pipeline
// (docs/quotas.md). Before its claim a submit's quotas are checked: its
// principal's ledger read, its tenant's usage summed (cached), the token
// quotas compared, and, with a rate or concurrency quota, the turn
// admitted (chat.Store.Admit). Before each model call the turn compares
// its token figures again, with its own tokens added; a limit reached
// ends it with LIMIT_EXCEEDED, the limit named in the assistant message's
// metadata (MetadataLimit). When the turn ends its usage is counted in
// the ledger before its release (countUsage).

// MetadataLimit is the assistant message metadata member of a turn that
// ended with LIMIT_EXCEEDED, or that completed at its step limit: which
// limit it reached.
//
//	"limit": {"scope": "turn"|"principal"|"tenant", "name": "<limit>", "limit": <n>, "used": <n>}
//
// name is a budget of the turn's definition, spelled as in the
// definitions file's limits (maxOutputTokens, maxToolCalls,
// maxWallTimeMs, maxSteps; limit and used in tokens, tool calls,
// milliseconds or model calls) or a token quota (tokensPerDay,
// tokensPerMonth; in tokens, used counting the turn's own). A turn at
// its step limit completes (its last calls recorded as failed,
// TextStepLimit); the others end with LIMIT_EXCEEDED.
const MetadataLimit = "limit"

// ScopeTurn is the scope of a per-turn budget in MetadataLimit.
const ScopeTurn = "turn"

// Budget names in MetadataLimit: the definitions file's limits.
const (
	BudgetOutputTokens = "maxOutputTokens"
	BudgetToolCalls    = "maxToolCalls"
	BudgetWallTime     = "maxWallTimeMs"
	BudgetSteps        = "maxSteps"
)

// TextLimitReached is the error of the tool calls a turn asked for in
// the model call that reached a limit: recorded as failed, never run.
const TextLimitReached = "Not run: a usage limit was reached."

// limitDetail is the limit a turn reached (MetadataLimit).
type limitDetail struct {
	Scope string `json:"scope"`
	Name  string `json:"name"`
	Limit int64  `json:"limit"`
	Used  int64  `json:"used"`
}

// budget is the turn's limits and quotas at its steps: before and after
// each model call, its wall time, the ending a reached limit gives it, and
// its count in the usage ledger.
type budget struct {
	t *run
	// quota is what the turn knows of its quotas; nil when none.
	quota *quotaState
	// limit is the limit the turn reached, if it ended with
	// LIMIT_EXCEEDED.
	limit atomic.Pointer[limitDetail]
}

// limitError ends the model-tool loop when a limit is reached.
type limitError struct{ detail limitDetail }

func (e *limitError) Error() string {
	return fmt.Sprintf("turn: limit %s.%s reached", e.detail.Scope, e.detail.Name)
}

// quotaLimit is the limitDetail of a token quota error.
func quotaLimit(qe *chat.QuotaError) *limitError {
	return &limitError{limitDetail{Scope: qe.Scope, Name: qe.Name, Limit: qe.Limit, Used: qe.Used}}
}

// errWallTime is the cause of the model context's end at the turn's
// maxWallTime budget.
var errWallTime = errors.New("turn: the turn's wall time budget is spent")

// quotaGate is the handler's quota checks (docs/quotas.md): a submit's
// quotas found, checked and admitted before its claim, and given back when
// its turn does not start; it owns the tenants' cached usage sums.
type quotaGate struct {
	h       *handler
	tenants tenantCache
}

// of returns the quotas of a submit: its session's definition's
// (definition.Resolver.Quotas). When definitions differ in their quotas
// the session's definition is needed: sess as policyFor read it, or one
// GetSession (a new session gets the default definition).
func (g *quotaGate) of(ctx context.Context, sub *submission, sess *chat.Session) (chat.Quotas, error) {
	h := g.h
	if h.opts.Definitions == nil {
		return h.agents.byID[simpleID].def.Quotas, nil
	}
	if q, ok := h.opts.Definitions.UniformQuotas(); ok {
		return q, nil
	}
	if sess == nil {
		s, err := h.opts.Store.GetSession(ctx, sub.sessionID, sub.principal)
		switch {
		case errors.Is(err, chat.ErrSessionNotFound):
			return h.opts.Definitions.Quotas(""), nil
		case err != nil:
			return chat.Quotas{}, err
		}
		sess = s
	}
	return h.opts.Definitions.Quotas(sess.DefinitionID), nil
}

// quotaState is what a turn knows of its quotas: the quotas and the
// figures they were last compared with.
type quotaState struct {
	quotas    chat.Quotas
	principal *chat.PrincipalUsage // nil: not read (failed open)
	tenant    *chat.TenantUsage    // nil: no tenant quota, or not read
	readAt    time.Time            // when the figures were read (real time)
	// admission is the turn's admission (nil without a rate or
	// concurrency quota): given back when its claim fails.
	admission *chat.Admission
}

// admitMode is how a submit is admitted under rate and concurrency
// quotas.
type admitMode int

const (
	admitRunning  admitMode = iota // a turn that starts now: rate and concurrency
	admitRateOnly                  // a queued turn: counted towards the rate only
)

// check checks sub's quotas q before its claim at start
// (docs/quotas.md): the principal's ledger read (and the tenant's sum when
// a tenant quota is set), the token quotas compared, then with a rate or
// concurrency quota the turn admitted until expires. It returns the
// state (nil when q limits nothing); a *chat.QuotaError when a quota
// refuses the submit; chat.ErrQuotaUnavailable, wrapped, when the ledger
// cannot be read and QuotaFailOpen is not set (with it, the turn runs
// unchecked and the failure is logged).
func (g *quotaGate) check(ctx context.Context, log *slog.Logger, sub *submission, q chat.Quotas, start, expires time.Time, mode admitMode) (*quotaState, error) {
	h := g.h
	if q.IsZero() {
		return nil, nil
	}
	st := &quotaState{quotas: q}
	unavailable := func(what string, err error) (*quotaState, error) {
		if errors.Is(err, chat.ErrInvalidRequest) {
			return nil, err // a bug, not the table: 500
		}
		if h.opts.QuotaFailOpen {
			log.Warn("quota check failed open: the turn runs unchecked", "step", what, "err", err)
			return &quotaState{quotas: q}, nil
		}
		return nil, fmt.Errorf("%w: %s: %w", chat.ErrQuotaUnavailable, what, err)
	}
	if err := st.read(ctx, h, sub.principal, start, true); err != nil {
		return unavailable("read usage", err)
	}
	if err := st.checkTokens(0); err != nil {
		return nil, err
	}
	if st.tenant != nil {
		if qe := chat.CheckTenantActivity(q.Tenant, st.tenant.Activity); qe != nil {
			return nil, qe
		}
	}
	if !q.NeedsAdmission() {
		return st, nil
	}
	a := chat.Admission{ID: chat.NewAdmissionID(), StartedAt: start, ExpiresAt: expires, Session: chat.SessionMarker(sub.sessionID)}
	req := chat.AdmitRequest{Principal: sub.principal, Admission: a, TurnsPerMinute: q.Principal.TurnsPerMinute,
		ConcurrentSessions: q.Principal.ConcurrentSessions, Basis: st.principal}
	if mode == admitRateOnly {
		req.Admission.ExpiresAt = start.Add(time.Millisecond)
		req.ConcurrentSessions = 0
	}
	if _, err := h.opts.Store.Admit(ctx, req); err != nil {
		var qe *chat.QuotaError
		if errors.As(err, &qe) {
			return nil, err
		}
		return unavailable("admit", err)
	}
	g.tenants.admitted(sub.principal.Tenant, mode == admitRunning)
	if mode == admitRunning {
		st.admission = &req.Admission
	}
	return st, nil
}

// read reads the figures of st's quotas at at: the principal's ledger
// (when fresh is set or st has none, or it is older than QuotaCache) and
// the tenant's sum (through the handler's cache).
func (st *quotaState) read(ctx context.Context, h *handler, p chat.Principal, at time.Time, fresh bool) error {
	if fresh || st.principal == nil || clock.Since(h.clock, st.readAt) >= h.opts.QuotaCache {
		u, err := h.opts.Store.ReadUsage(ctx, p, at)
		if err != nil {
			return err
		}
		st.principal, st.readAt = u, h.clock.Now()
	}
	if st.quotas.NeedsTenant() {
		t, err := h.quotas.tenants.usage(ctx, h, p.Tenant, at)
		if err != nil {
			return err
		}
		st.tenant = t
	}
	return nil
}

// checkTokens compares the token figures read with the token quotas, the
// turn's own tokens (not counted in the ledger yet) added: the
// QuotaError of the first quota reached, nil when none.
func (st *quotaState) checkTokens(own int64) error {
	if st.principal != nil {
		if qe := chat.CheckTokens(st.quotas.Principal, chat.ScopePrincipal, st.principal.Tokens(), own); qe != nil {
			return qe
		}
	}
	if st.tenant != nil {
		if qe := chat.CheckTokens(st.quotas.Tenant, chat.ScopeTenant, st.tenant.Tokens(), own); qe != nil {
			return qe
		}
	}
	return nil
}

// giveBack gives a submit's admission back when its turn did not start
// (its claim refused, or it was not queued): a bounded cleanup, detached
// from the request's cancellation. A failure is logged: the admission
// then counts until it expires.
func (g *quotaGate) giveBack(ctx context.Context, log *slog.Logger, p chat.Principal, st *quotaState) {
	h := g.h
	if st == nil || st.admission == nil {
		return
	}
	// A detached, bounded cleanup: the request may have ended.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.opts.CleanupReserve)
	defer cancel()
	if err := h.opts.Store.CancelAdmission(cctx, p, *st.admission); err != nil {
		log.Warn("give back an admission", "err", err)
	}
}

// tenantCache keeps tenants' usage sums for Config.QuotaCache, so that a
// tenant quota costs one sum of its principals per tenant and window in
// each process, not one per submit.
type tenantCache struct {
	mu sync.Mutex
	m  map[string]*tenantEntry
}

type tenantEntry struct {
	u    *chat.TenantUsage
	read time.Time // on the handler's clock
}

// maxCachedTenants bounds the cache: past it, entries older than the
// window are dropped first, then all.
const maxCachedTenants = 1024

// usage returns tenant's sum at at: the cached one when read less than
// QuotaCache ago for the same UTC day, else the sum of every page of
// ListUsage (one Query per page of 100 principals).
func (c *tenantCache) usage(ctx context.Context, h *handler, tenant string, at time.Time) (*chat.TenantUsage, error) {
	window := h.opts.QuotaCache
	c.mu.Lock()
	if e := c.m[tenant]; e != nil && clock.Since(h.clock, e.read) < window && chat.MonthKey(e.u.At) == chat.MonthKey(at) && e.u.At.YearDay() == at.YearDay() {
		u := *e.u
		c.mu.Unlock()
		return &u, nil
	}
	c.mu.Unlock()
	sum := &chat.TenantUsage{Tenant: tenant, At: at}
	for cursor := ""; ; {
		page, err := h.opts.Store.ListUsage(ctx, chat.UsageListRequest{Tenant: tenant, At: at, Limit: chat.MaxPageLimit, Cursor: cursor})
		if err != nil {
			return nil, fmt.Errorf("sum tenant usage: %w", err)
		}
		for i := range page.Principals {
			sum.Add(&page.Principals[i])
		}
		if !page.HasMore {
			break
		}
		cursor = page.NextCursor
	}
	if window > 0 {
		c.mu.Lock()
		if c.m == nil || len(c.m) >= maxCachedTenants {
			c.m = map[string]*tenantEntry{}
		}
		c.m[tenant] = &tenantEntry{u: sum, read: h.clock.Now()}
		c.mu.Unlock()
	}
	u := *sum
	return &u, nil
}

// admitted adds an admission made in this process to tenant's cached sum,
// so that its next checks within the window see it.
func (c *tenantCache) admitted(tenant string, running bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.m[tenant]; e != nil {
		e.u.Activity.Recent++
		if running {
			e.u.Activity.Running++
		}
	}
}

// ---- in the turn ----

// usage returns what the turn used so far (its meter).
func (bg *budget) usage() chat.Usage { return bg.t.meter.Usage() }

// beforeModelCall checks the turn's budgets and token quotas before model
// call step and returns the call's completion cap (0: the provider's
// default): the definition's limits.maxTokens, at most the output tokens
// left of limits.maxOutputTokens. A limit already reached is a
// *limitError.
func (bg *budget) beforeModelCall(ctx context.Context, step int) (int, error) {
	t := bg.t
	lim := t.agent.def.Limits
	used := bg.usage()
	maxTokens := lim.MaxTokens
	if b := lim.MaxOutputTokens; b > 0 {
		if used.OutputTokens >= b {
			return 0, &limitError{limitDetail{Scope: ScopeTurn, Name: BudgetOutputTokens, Limit: b, Used: used.OutputTokens}}
		}
		if left := b - used.OutputTokens; maxTokens == 0 || left < int64(maxTokens) {
			maxTokens = int(min(left, definition.MaxTokens))
		}
	}
	// The first call was checked before the claim, unless the figures
	// were never read then (a queued turn, or a check failed open).
	if step > 1 || bg.quota != nil && bg.quota.principal == nil {
		if err := bg.checkQuotaTokens(ctx); err != nil {
			return 0, err
		}
	}
	return maxTokens, nil
}

// afterModelCall checks the turn's budgets and token quotas after a model
// call that asked for calls (the turn would go on) or that stopped at its
// completion cap (finish): a *limitError when one is reached, the turn
// then ending after this call.
func (bg *budget) afterModelCall(ctx context.Context, calls int, capped bool) error {
	t := bg.t
	lim := t.agent.def.Limits
	used := bg.usage()
	if b := lim.MaxOutputTokens; b > 0 && used.OutputTokens >= b && (calls > 0 || capped) {
		return &limitError{limitDetail{Scope: ScopeTurn, Name: BudgetOutputTokens, Limit: b, Used: used.OutputTokens}}
	}
	if b := int64(lim.MaxToolCalls); b > 0 && used.ToolCalls > b {
		return &limitError{limitDetail{Scope: ScopeTurn, Name: BudgetToolCalls, Limit: b, Used: used.ToolCalls}}
	}
	if calls > 0 {
		return bg.checkQuotaTokens(ctx)
	}
	return nil
}

// checkQuotaTokens compares the turn's token quotas with its figures
// (read again when older than QuotaCache; a failed read keeps the older
// ones, logged) plus its own tokens.
func (bg *budget) checkQuotaTokens(ctx context.Context) error {
	t := bg.t
	st := bg.quota
	if st == nil {
		return nil
	}
	if st.quotas.Principal.TokensPerDay == 0 && st.quotas.Principal.TokensPerMonth == 0 &&
		st.quotas.Tenant.TokensPerDay == 0 && st.quotas.Tenant.TokensPerMonth == 0 {
		return nil
	}
	if err := st.read(ctx, t.h, t.claim.Session.Owner, t.h.clock.Now(), false); err != nil {
		t.log.Warn("quota figures not read again: the check uses the older ones", "err", err)
	}
	u := bg.usage()
	var qe *chat.QuotaError
	if errors.As(st.checkTokens(u.InputTokens+u.OutputTokens), &qe) {
		return quotaLimit(qe)
	}
	return nil
}

// wallTimeEnding is the ending of a turn stopped at its wall time budget
// (the model context's cause errWallTime).
func (bg *budget) wallTimeEnding() ending {
	t := bg.t
	b := t.agent.def.Limits.MaxWallTime
	return bg.limitEnding(limitDetail{Scope: ScopeTurn, Name: BudgetWallTime, Limit: b.Milliseconds(),
		Used: t.h.clock.Now().Sub(t.startedAt).Milliseconds()})
}

// limitEnding records d as the limit the turn reached and returns its
// ending: status error, LIMIT_EXCEEDED.
func (bg *budget) limitEnding(d limitDetail) ending {
	t := bg.t
	bg.limit.Store(&d)
	t.log.Info("turn reached a limit", "scope", d.Scope, "limit", d.Name)
	diag := protocol.NewDiagnostic(protocol.CodeLimitExceeded)
	return ending{status: chat.TurnError, diag: &diag}
}

// limitMetadata returns meta with MetadataLimit set when the turn reached
// a limit.
func (bg *budget) limitMetadata(meta json.RawMessage) json.RawMessage {
	d := bg.limit.Load()
	if d == nil {
		return meta
	}
	b, err := json.Marshal(d)
	if err != nil {
		return meta
	}
	return withMember(meta, MetadataLimit, b)
}

// countUsage counts the saved turn item in the ledger (Config.Ledger):
// its Metered usage, under the claim's session, ordinal, owner, start and
// admission, within the cleanup reserve. It reports whether the turn is
// counted: when not (the ledger write's outcome stayed unknown), the
// caller leaves the lease to expire, and the store that decides the turn
// counts it, once.
func (bg *budget) countUsage(item *chat.Turn) bool {
	t := bg.t
	if !t.h.opts.Ledger {
		return true
	}
	ctx, cancel := t.cleanup.settleContext(t.h.clock.Now())
	defer cancel()
	l := t.claim.Lease
	err := t.h.opts.Store.RecordUsage(ctx, chat.LedgerEntry{SessionID: t.sessionID, Ordinal: l.Ordinal, Owner: t.claim.Session.Owner,
		StartedAt: l.StartedAt, Usage: item.Metered, Admission: l.Admission})
	if err != nil {
		t.log.Error("usage not counted: the lease is left to expire, and the turn is counted when it is decided", "err", err)
		return false
	}
	return true
}
