package chat

import (
	"errors"
	"time"
)

// Quotas (docs/quotas.md) bound what a principal, and all principals of
// a tenant together, may use: turns started per minute, tokens per UTC
// day and month (Counters.Tokens), and sessions running a turn at once.
// They are checked before a turn's claim and before each of its model
// calls; a definition may set them, over a deployment-wide default.

// Quota scopes and names, as the definitions file spells them
// ("quotas": {"principal": {...}, "tenant": {...}}) and as diagnostics
// and GET /usage name them.
const (
	ScopePrincipal = "principal"
	ScopeTenant    = "tenant"

	QuotaTurnsPerMinute     = "turnsPerMinute"
	QuotaTokensPerDay       = "tokensPerDay"
	QuotaTokensPerMonth     = "tokensPerMonth"
	QuotaConcurrentSessions = "concurrentSessions"
)

// MaxQuota bounds every quota value: 2^53-1, the largest integer the
// protocol's JSON carries exactly.
const MaxQuota = 1<<53 - 1

// ConcurrencyRetryAfter is the Retry-After of a concurrentSessions refusal
// (a running turn ends when it ends: the client is told to try again
// soon), or less when a running turn's slot expires sooner.
const ConcurrencyRetryAfter = 5 * time.Second

// QuotaLimits are the quotas of one scope. Zero means unlimited.
type QuotaLimits struct {
	TurnsPerMinute     int64 `json:"turnsPerMinute,omitempty"`
	TokensPerDay       int64 `json:"tokensPerDay,omitempty"`
	TokensPerMonth     int64 `json:"tokensPerMonth,omitempty"`
	ConcurrentSessions int64 `json:"concurrentSessions,omitempty"`
}

// IsZero reports whether l limits nothing.
func (l QuotaLimits) IsZero() bool { return l == QuotaLimits{} }

// Over returns l with each of its unset (zero) limits taken from base.
func (l QuotaLimits) Over(base QuotaLimits) QuotaLimits {
	pick := func(v, b int64) int64 {
		if v != 0 {
			return v
		}
		return b
	}
	return QuotaLimits{
		TurnsPerMinute:     pick(l.TurnsPerMinute, base.TurnsPerMinute),
		TokensPerDay:       pick(l.TokensPerDay, base.TokensPerDay),
		TokensPerMonth:     pick(l.TokensPerMonth, base.TokensPerMonth),
		ConcurrentSessions: pick(l.ConcurrentSessions, base.ConcurrentSessions),
	}
}

// Quotas are a principal's and its tenant's quotas.
type Quotas struct {
	Principal QuotaLimits `json:"principal"`
	Tenant    QuotaLimits `json:"tenant"`
}

// IsZero reports whether q limits nothing.
func (q Quotas) IsZero() bool { return q.Principal.IsZero() && q.Tenant.IsZero() }

// Over returns q with each unset limit taken from base (a definition's
// quotas over the deployment-wide default).
func (q Quotas) Over(base Quotas) Quotas {
	return Quotas{Principal: q.Principal.Over(base.Principal), Tenant: q.Tenant.Over(base.Tenant)}
}

// NeedsAdmission reports whether q sets a rate or concurrency limit:
// those are enforced by recording each turn's admission (Store.Admit).
func (q Quotas) NeedsAdmission() bool {
	return q.Principal.TurnsPerMinute > 0 || q.Principal.ConcurrentSessions > 0 ||
		q.Tenant.TurnsPerMinute > 0 || q.Tenant.ConcurrentSessions > 0
}

// NeedsTenant reports whether q sets a tenant limit (tenant figures are a
// sum over its principals: Store.ListUsage).
func (q Quotas) NeedsTenant() bool { return !q.Tenant.IsZero() }

// Errors of quotas. httpedge maps them: ErrQuotaExceeded is 429
// QUOTA_EXCEEDED with Retry-After (retryable), ErrQuotaUnavailable 503
// QUOTA_UNAVAILABLE (retryable).
var (
	// ErrQuotaExceeded: a quota refuses the request now (a *QuotaError
	// says which, and when to retry).
	ErrQuotaExceeded = errors.New("chat: quota exceeded")
	// ErrQuotaUnavailable: the quotas could not be read, and the
	// deployment fails closed (docs/quotas.md).
	ErrQuotaUnavailable = errors.New("chat: quota check unavailable")
)

// QuotaError is a quota that refuses a request: its scope, name, limit,
// what was used when it was checked, and how long until it may pass. It
// wraps ErrQuotaExceeded.
type QuotaError struct {
	Scope      string // ScopePrincipal or ScopeTenant
	Name       string // QuotaTurnsPerMinute, QuotaTokensPerDay, ...
	Limit      int64
	Used       int64
	RetryAfter time.Duration
}

func (e *QuotaError) Error() string { return "chat: quota exceeded: " + e.Scope + "." + e.Name }

// Unwrap returns ErrQuotaExceeded.
func (e *QuotaError) Unwrap() error { return ErrQuotaExceeded }

// RetryAfterDuration is how long the client should wait (at least one
// second); httpedge writes it as Retry-After.
func (e *QuotaError) RetryAfterDuration() time.Duration { return max(e.RetryAfter, time.Second) }

// TokenUsage is what token quotas compare: a scope's tokens of the UTC day
// and month containing At.
type TokenUsage struct {
	At         time.Time
	Day, Month int64
}

// CheckTokens returns the QuotaError of the first of l's token limits
// that u (plus extra tokens not counted in it yet: the running turn's
// own) has reached, nil when none. RetryAfter is the end of the period.
func CheckTokens(l QuotaLimits, scope string, u TokenUsage, extra int64) *QuotaError {
	if l.TokensPerDay > 0 && u.Day+extra >= l.TokensPerDay {
		_, end := PeriodDay.Bounds(u.At)
		return &QuotaError{Scope: scope, Name: QuotaTokensPerDay, Limit: l.TokensPerDay, Used: u.Day + extra, RetryAfter: end.Sub(u.At)}
	}
	if l.TokensPerMonth > 0 && u.Month+extra >= l.TokensPerMonth {
		_, end := PeriodMonth.Bounds(u.At)
		return &QuotaError{Scope: scope, Name: QuotaTokensPerMonth, Limit: l.TokensPerMonth, Used: u.Month + extra, RetryAfter: end.Sub(u.At)}
	}
	return nil
}

// Tokens returns u's token figures (TokenUsage).
func (u *PrincipalUsage) Tokens() TokenUsage {
	return TokenUsage{At: u.At, Day: u.Day.Tokens(), Month: u.Month.Tokens()}
}

// TenantUsage is a tenant's figures, the sum over its principals at At:
// counters of the day and month, and activity (admissions).
type TenantUsage struct {
	Tenant     string
	At         time.Time
	Day, Month Counters
	Activity   Activity
	// Principals counts the principals summed.
	Principals int
}

// Tokens returns t's token figures.
func (t *TenantUsage) Tokens() TokenUsage {
	return TokenUsage{At: t.At, Day: t.Day.Tokens(), Month: t.Month.Tokens()}
}

// Add adds a principal's usage to t's sums.
func (t *TenantUsage) Add(u *PrincipalUsage) {
	t.Day.Add(u.Day)
	t.Month.Add(u.Month)
	a := ActivityAt(u.Admissions, t.At)
	t.Activity.Recent += a.Recent
	t.Activity.Running += a.Running
	t.Principals++
}

// CheckTenantActivity returns the QuotaError of a tenant whose activity
// has reached l's concurrency or rate limit, nil otherwise. RetryAfter is
// ConcurrencyRetryAfter, or for the rate a second: the tenant's figures
// are a sum, the admissions behind it are not kept.
func CheckTenantActivity(l QuotaLimits, a Activity) *QuotaError {
	if l.ConcurrentSessions > 0 && a.Running >= l.ConcurrentSessions {
		return &QuotaError{Scope: ScopeTenant, Name: QuotaConcurrentSessions, Limit: l.ConcurrentSessions, Used: a.Running, RetryAfter: ConcurrencyRetryAfter}
	}
	if l.TurnsPerMinute > 0 && a.Recent >= l.TurnsPerMinute {
		return &QuotaError{Scope: ScopeTenant, Name: QuotaTurnsPerMinute, Limit: l.TurnsPerMinute, Used: a.Recent, RetryAfter: time.Second}
	}
	return nil
}
