// Package quota checks the quotas of docs/quotas.md against the usage
// ledger: a principal's and a tenant's tokens per day and month, a
// principal's turns per minute and concurrent sessions. The turn engine
// (pkg/turn/engine) asks its Gate at three points of a turn and knows
// nothing of how the answers are found: before the claim (Gate.Admit:
// the figures read, the token quotas compared, the turn admitted under a
// rate or concurrency quota), around each model call (Gate.CheckTokens:
// the figures again, the turn's own tokens added), and when a turn that
// was admitted does not start (Gate.GiveBack).
package quota

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/clock"
)

// Store is what a Gate needs of the store: the usage ledger's reads and
// the admissions (chat.LedgerStore).
type Store interface {
	ReadUsage(ctx context.Context, p chat.Principal, at time.Time) (*chat.PrincipalUsage, error)
	ListUsage(ctx context.Context, req chat.UsageListRequest) (*chat.UsagePage, error)
	Admit(ctx context.Context, req chat.AdmitRequest) (*chat.PrincipalUsage, error)
	CancelAdmission(ctx context.Context, p chat.Principal, a chat.Admission) error
}

// Options configure New.
type Options struct {
	// Store holds the ledger and the admissions; required.
	Store Store
	// FailOpen is what a check that cannot read the ledger does: false
	// refuses the turn (an error wrapping chat.ErrQuotaUnavailable, 503
	// QUOTA_UNAVAILABLE), true lets it run unchecked, logged.
	FailOpen bool
	// Cache is how long a tenant's usage sum (a sum over its principals:
	// Store.ListUsage) is reused by this Gate's checks, and how old a
	// turn's principal figures may be before CheckTokens reads them again;
	// zero reads them every time.
	Cache time.Duration
	// GiveBackTimeout bounds GiveBack's store request; zero means 5 s.
	GiveBackTimeout time.Duration
	// Clock reads the time of the cache's entries; nil means clock.Real.
	Clock clock.Clock
}

// Gate checks and admits turns against their quotas. It owns the tenants'
// cached usage sums; it is safe for concurrent use.
type Gate struct {
	opts    Options
	clock   clock.Clock
	tenants tenantCache
}

// New returns the Gate of o. It panics when o.Store is nil (a wiring
// error).
func New(o Options) *Gate {
	if o.Store == nil {
		panic("quota: Options.Store is nil")
	}
	if o.GiveBackTimeout <= 0 {
		o.GiveBackTimeout = 5 * time.Second
	}
	return &Gate{opts: o, clock: clock.Or(o.Clock)}
}

// Mode is how a turn is admitted under rate and concurrency quotas.
type Mode int

const (
	// Running admits a turn that starts now: it counts towards the rate
	// and holds a concurrency slot until its admission expires or is
	// given back.
	Running Mode = iota
	// RateOnly admits a queued turn: it counts towards the rate only.
	RateOnly
)

// Request is a turn to check and admit (Gate.Admit).
type Request struct {
	Principal chat.Principal
	SessionID string
	Quotas    chat.Quotas
	// Start is the turn's start; Expires the latest its admission can
	// hold a concurrency slot (the turn's deadline and cleanup).
	Start, Expires time.Time
	Mode           Mode
}

// Check is what a turn knows of its quotas: the quotas, the figures they
// were last compared with, and its admission. A nil *Check limits
// nothing.
type Check struct {
	quotas    chat.Quotas
	principal *chat.PrincipalUsage // nil: not read (failed open, or a queued turn)
	tenant    *chat.TenantUsage    // nil: no tenant quota, or not read
	readAt    time.Time            // when principal was read (the Gate's clock)
	admission *chat.Admission      // nil without a rate or concurrency quota
}

// Unchecked is the Check of a turn whose quotas are q but whose figures
// were never read (a queued turn when it starts): its first CheckTokens
// reads them. Nil when q limits nothing.
func Unchecked(q chat.Quotas) *Check {
	if q.IsZero() {
		return nil
	}
	return &Check{quotas: q}
}

// Admission is the turn's admission; nil without a rate or concurrency
// quota (or for a nil Check).
func (c *Check) Admission() *chat.Admission {
	if c == nil {
		return nil
	}
	return c.admission
}

// Read reports whether the figures were read (false for a nil Check).
func (c *Check) Read() bool { return c != nil && c.principal != nil }

// Admit checks req before its turn's claim (docs/quotas.md): the
// principal's ledger read (and the tenant's sum when a tenant quota is
// set), the token quotas compared, then with a rate or concurrency quota
// the turn admitted until req.Expires (chat.Store.Admit). It returns the
// turn's Check (nil when req.Quotas limits nothing); a *chat.QuotaError
// when a quota refuses the turn; an error wrapping
// chat.ErrQuotaUnavailable when the ledger cannot be read and FailOpen is
// not set (with it, the turn runs unchecked and log says so); an error
// wrapping chat.ErrInvalidRequest as the store returned it.
func (g *Gate) Admit(ctx context.Context, log *slog.Logger, req Request) (*Check, error) {
	q := req.Quotas
	if q.IsZero() {
		return nil, nil
	}
	c := &Check{quotas: q}
	unavailable := func(what string, err error) (*Check, error) {
		if errors.Is(err, chat.ErrInvalidRequest) {
			return nil, err // a bug, not the table: 500
		}
		if g.opts.FailOpen {
			log.Warn("quota check failed open: the turn runs unchecked", "step", what, "err", err)
			return &Check{quotas: q}, nil
		}
		return nil, fmt.Errorf("%w: %s: %w", chat.ErrQuotaUnavailable, what, err)
	}
	if err := g.read(ctx, c, req.Principal, req.Start, true); err != nil {
		return unavailable("read usage", err)
	}
	if err := c.compare(0); err != nil {
		return nil, err
	}
	if c.tenant != nil {
		if qe := chat.CheckTenantActivity(q.Tenant, c.tenant.Activity); qe != nil {
			return nil, qe
		}
	}
	if !q.NeedsAdmission() {
		return c, nil
	}
	a := chat.Admission{ID: chat.NewAdmissionID(), StartedAt: req.Start, ExpiresAt: req.Expires, Session: chat.SessionMarker(req.SessionID)}
	ar := chat.AdmitRequest{Principal: req.Principal, Admission: a, TurnsPerMinute: q.Principal.TurnsPerMinute,
		ConcurrentSessions: q.Principal.ConcurrentSessions, Basis: c.principal}
	if req.Mode == RateOnly {
		ar.Admission.ExpiresAt = req.Start.Add(time.Millisecond)
		ar.ConcurrentSessions = 0
	}
	if _, err := g.opts.Store.Admit(ctx, ar); err != nil {
		var qe *chat.QuotaError
		if errors.As(err, &qe) {
			return nil, err
		}
		return unavailable("admit", err)
	}
	g.tenants.admitted(req.Principal.Tenant, req.Mode == Running)
	if req.Mode == Running {
		c.admission = &ar.Admission
	}
	return c, nil
}

// CheckTokens compares c's token quotas with its figures plus own, the
// turn's own tokens not yet counted in the ledger: the figures are read
// again when older than Cache (a failed read keeps the older ones, and
// log says so). It returns the *chat.QuotaError of the first quota
// reached, nil when none is (or c is nil, or has no token quota).
func (g *Gate) CheckTokens(ctx context.Context, log *slog.Logger, c *Check, p chat.Principal, own int64) *chat.QuotaError {
	if c == nil {
		return nil
	}
	tq, tt := c.quotas.Principal, c.quotas.Tenant
	if tq.TokensPerDay == 0 && tq.TokensPerMonth == 0 && tt.TokensPerDay == 0 && tt.TokensPerMonth == 0 {
		return nil
	}
	if err := g.read(ctx, c, p, g.clock.Now(), false); err != nil {
		log.Warn("quota figures not read again: the check uses the older ones", "err", err)
	}
	var qe *chat.QuotaError
	if errors.As(c.compare(own), &qe) {
		return qe
	}
	return nil
}

// GiveBack gives c's admission back when its turn did not start (its
// claim refused, or it was not queued): a bounded store request
// (GiveBackTimeout), detached from ctx's cancellation, since the request
// may have ended. A failure is logged: the admission then counts until it
// expires.
func (g *Gate) GiveBack(ctx context.Context, log *slog.Logger, p chat.Principal, c *Check) {
	if c == nil || c.admission == nil {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), g.opts.GiveBackTimeout)
	defer cancel()
	if err := g.opts.Store.CancelAdmission(cctx, p, *c.admission); err != nil {
		log.Warn("give back an admission", "err", err)
	}
}

// read reads c's figures at at: the principal's ledger (when fresh is set
// or c has none, or they are older than Cache) and the tenant's sum
// (through the Gate's cache).
func (g *Gate) read(ctx context.Context, c *Check, p chat.Principal, at time.Time, fresh bool) error {
	if fresh || c.principal == nil || clock.Since(g.clock, c.readAt) >= g.opts.Cache {
		u, err := g.opts.Store.ReadUsage(ctx, p, at)
		if err != nil {
			return err
		}
		c.principal, c.readAt = u, g.clock.Now()
	}
	if c.quotas.NeedsTenant() {
		t, err := g.tenantUsage(ctx, p.Tenant, at)
		if err != nil {
			return err
		}
		c.tenant = t
	}
	return nil
}

// compare compares the token figures read with the token quotas, own
// added: the QuotaError of the first quota reached, nil when none.
func (c *Check) compare(own int64) error {
	if c.principal != nil {
		if qe := chat.CheckTokens(c.quotas.Principal, chat.ScopePrincipal, c.principal.Tokens(), own); qe != nil {
			return qe
		}
	}
	if c.tenant != nil {
		if qe := chat.CheckTokens(c.quotas.Tenant, chat.ScopeTenant, c.tenant.Tokens(), own); qe != nil {
			return qe
		}
	}
	return nil
}

// tenantCache keeps tenants' usage sums for Options.Cache, so that a
// tenant quota costs one sum of its principals per tenant and window in
// each process, not one per submit.
type tenantCache struct {
	mu sync.Mutex
	m  map[string]*tenantEntry
}

type tenantEntry struct {
	u    *chat.TenantUsage
	read time.Time // on the Gate's clock
}

// maxCachedTenants bounds the cache: past it, the cache starts anew.
const maxCachedTenants = 1024

// tenantUsage returns tenant's sum at at: the cached one when read less
// than Cache ago for the same UTC day, else the sum of every page of
// ListUsage (one Query per page of chat.MaxPageLimit principals).
func (g *Gate) tenantUsage(ctx context.Context, tenant string, at time.Time) (*chat.TenantUsage, error) {
	c, window := &g.tenants, g.opts.Cache
	c.mu.Lock()
	if e := c.m[tenant]; e != nil && clock.Since(g.clock, e.read) < window && chat.MonthKey(e.u.At) == chat.MonthKey(at) && e.u.At.YearDay() == at.YearDay() {
		u := *e.u
		c.mu.Unlock()
		return &u, nil
	}
	c.mu.Unlock()
	sum := &chat.TenantUsage{Tenant: tenant, At: at}
	for cursor := ""; ; {
		page, err := g.opts.Store.ListUsage(ctx, chat.UsageListRequest{Tenant: tenant, At: at, Limit: chat.MaxPageLimit, Cursor: cursor})
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
		c.m[tenant] = &tenantEntry{u: sum, read: g.clock.Now()}
		c.mu.Unlock()
	}
	u := *sum
	return &u, nil
}

// admitted adds an admission made by this Gate to tenant's cached sum, so
// that its next checks within the window see it.
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
