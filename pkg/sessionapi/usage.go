package sessionapi

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/httpedge"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// UsageOptions configure GET /usage on the history handler
// (docs/quotas.md): served when the deployment keeps the usage ledger.
type UsageOptions struct {
	// Quotas are the limits shown: those of the sessions of the default
	// definition (definition.DefaultQuotas), the deployment-wide default
	// under each definition's own.
	Quotas chat.Quotas
}

// Query parameters of GET /usage.
const (
	// ScopeTenant is the scope parameter's value of a tenant's report.
	ScopeTenant = chat.ScopeTenant
)

// The bodies of GET /usage (docs/quotas.md), declared once in pkg/api;
// the ledger's counters (chat.Counters) encode as api.UsageCounters.
type (
	// UsageReport is the body of GET /usage?period=day|month.
	UsageReport = api.UsageReport[chat.Counters]
	// UsagePrincipal is a principal in a usage report.
	UsagePrincipal = api.UsagePrincipal
	// LimitStatus is one quota that applies.
	LimitStatus = api.LimitStatus
	// TenantUsageReport is the body of GET /usage?scope=tenant.
	TenantUsageReport = api.TenantUsageReport[chat.Counters]
	// TenantActivity is a tenant's recent turns and running sessions.
	TenantActivity = api.TenantActivity
	// PrincipalRow is one principal of a tenant report.
	PrincipalRow = api.PrincipalRow[chat.Counters]
)

// usageQuery is the validated query of GET /usage.
type usageQuery struct {
	period chat.Period
	tenant bool
	limit  int
	cursor string
}

// parseUsageQuery validates the query of GET /usage:
//
//	period  "day" (default) or "month"
//	scope   "principal" (default) or "tenant"
//	limit   tenant scope: 1..chat.MaxPageLimit principals a page (default chat.DefaultPageLimit)
//	cursor  tenant scope: the previous page's nextCursor
//
// A repeated or bad value, or a limit or cursor without scope=tenant, is
// httpedge.ErrInvalidQuery. Other parameters are ignored.
func parseUsageQuery(raw string) (usageQuery, error) {
	q := usageQuery{period: chat.PeriodDay, limit: chat.DefaultPageLimit}
	values, err := url.ParseQuery(raw)
	if err != nil {
		return q, fmt.Errorf("%w: undecodable query", httpedge.ErrInvalidQuery)
	}
	for _, name := range []string{"period", "scope", "limit", "cursor"} {
		if len(values[name]) > 1 {
			return q, fmt.Errorf("%w: %s repeated", httpedge.ErrInvalidQuery, name)
		}
	}
	if vs, ok := values["period"]; ok {
		if q.period, err = chat.ParsePeriod(vs[0]); err != nil {
			return q, fmt.Errorf("%w: period", httpedge.ErrInvalidQuery)
		}
	}
	if vs, ok := values["scope"]; ok {
		switch vs[0] {
		case chat.ScopePrincipal:
		case chat.ScopeTenant:
			q.tenant = true
		default:
			return q, fmt.Errorf("%w: scope", httpedge.ErrInvalidQuery)
		}
	}
	_, hasLimit := values["limit"]
	_, hasCursor := values["cursor"]
	if !q.tenant && (hasLimit || hasCursor) {
		return q, fmt.Errorf("%w: limit or cursor without scope=tenant", httpedge.ErrInvalidQuery)
	}
	if hasLimit {
		n, ok := parseLimit(values["limit"][0])
		if !ok {
			return q, fmt.Errorf("%w: limit", httpedge.ErrInvalidQuery)
		}
		q.limit = n
	}
	if hasCursor {
		q.cursor = values["cursor"][0]
	}
	return q, nil
}

// getUsage serves GET /usage (docs/quotas.md): the caller's own report,
// or with scope=tenant, for the tenant's trusted principal only (403
// REQUEST_FORBIDDEN for anyone else), the tenant's. One read of the
// caller's ledger; the tenant's report one Query per page, and on its
// first page one per page of all its principals for the totals.
func (s *server) getUsage(w http.ResponseWriter, r *http.Request, _ *requestContext) error {
	p, err := s.auth.Authenticate(r)
	if err != nil {
		return err
	}
	q, err := parseUsageQuery(r.URL.RawQuery)
	if err != nil {
		return err
	}
	now := s.now().UTC()
	if q.tenant {
		if !p.Trusted {
			return errNotTrustedUsage
		}
		return s.tenantUsage(w, r, p, q, now)
	}
	u, err := s.store.ReadUsage(r.Context(), p, now)
	if err != nil {
		return fmt.Errorf("read usage: %w", err)
	}
	start, end := q.period.Bounds(now)
	return writeJSON(w, UsageReport{
		Period: string(q.period), Start: protocol.FormatTime(start), ResetsAt: protocol.FormatTime(end),
		Principal: UsagePrincipal{Subject: p.Subject, Tenant: p.Tenant},
		Usage:     u.Counters(q.period),
		Limits:    s.limits(u, nil, now),
	})
}

// tenantUsage writes the tenant report of q.
func (s *server) tenantUsage(w http.ResponseWriter, r *http.Request, p chat.Principal, q usageQuery, now time.Time) error {
	page, err := s.store.ListUsage(r.Context(), chat.UsageListRequest{Tenant: p.Tenant, At: now, Limit: q.limit, Cursor: q.cursor})
	if err != nil {
		return fmt.Errorf("list usage: %w", err)
	}
	start, end := q.period.Bounds(now)
	out := TenantUsageReport{Period: string(q.period), Start: protocol.FormatTime(start), ResetsAt: protocol.FormatTime(end),
		Tenant: p.Tenant, Limits: []LimitStatus{}, Principals: []PrincipalRow{}, HasMore: page.HasMore}
	for i := range page.Principals {
		u := &page.Principals[i]
		out.Principals = append(out.Principals, PrincipalRow{
			Principal: UsagePrincipal{Subject: u.Principal.Subject, Tenant: u.Principal.Tenant}, Usage: u.Counters(q.period)})
	}
	if page.HasMore {
		out.NextCursor = &page.NextCursor
	}
	if q.cursor == "" {
		sum := &chat.TenantUsage{Tenant: p.Tenant, At: now}
		for pg := page; ; {
			for i := range pg.Principals {
				sum.Add(&pg.Principals[i])
			}
			if !pg.HasMore {
				break
			}
			if pg, err = s.store.ListUsage(r.Context(), chat.UsageListRequest{Tenant: p.Tenant, At: now, Limit: chat.MaxPageLimit, Cursor: pg.NextCursor}); err != nil {
				return fmt.Errorf("sum tenant usage: %w", err)
			}
		}
		totals := sum.Day
		if q.period == chat.PeriodMonth {
			totals = sum.Month
		}
		out.Totals = &totals
		out.Activity = &TenantActivity{RecentTurns: sum.Activity.Recent, RunningSessions: sum.Activity.Running}
		out.Limits = s.limits(nil, sum, now)
	}
	return writeJSON(w, out)
}

// limits returns the status of every quota of the usage options: the
// principal's, from u, when u is set, and the tenant's, with what is used
// when t (the tenant's sum) is set.
func (s *server) limits(u *chat.PrincipalUsage, t *chat.TenantUsage, now time.Time) []LimitStatus {
	out := []LimitStatus{}
	q := s.usage.Quotas
	if u != nil {
		act := chat.ActivityAt(u.Admissions, now)
		oldest := time.Time{}
		for _, a := range u.Admissions {
			if a.Recent(now) && (oldest.IsZero() || a.StartedAt.Before(oldest)) {
				oldest = a.StartedAt
			}
		}
		out = append(out, limitStatuses(chat.ScopePrincipal, q.Principal, act, u.Day.Tokens(), u.Month.Tokens(), oldest, now)...)
	}
	if t != nil {
		out = append(out, limitStatuses(chat.ScopeTenant, q.Tenant, t.Activity, t.Day.Tokens(), t.Month.Tokens(), time.Time{}, now)...)
	} else {
		for _, l := range limitStatuses(chat.ScopeTenant, q.Tenant, chat.Activity{}, 0, 0, time.Time{}, now) {
			l.Used, l.Remaining, l.ResetsAt = nil, nil, nil // the tenant's figures are its trusted principal's to see
			out = append(out, l)
		}
	}
	return out
}

// limitStatuses returns the status of each quota of l set, in the order
// the definitions file lists them, from the figures of its scope: act
// (admissions), the day's and month's tokens, and the oldest admission of
// the rate window (zero when none).
func limitStatuses(scope string, l chat.QuotaLimits, act chat.Activity, day, month int64, oldest, now time.Time) []LimitStatus {
	var out []LimitStatus
	add := func(name string, limit, used int64, resets time.Time) {
		if limit == 0 {
			return
		}
		left := max(limit-used, 0)
		st := LimitStatus{Scope: scope, Name: name, Limit: limit, Used: &used, Remaining: &left}
		if !resets.IsZero() {
			r := protocol.FormatTime(resets)
			st.ResetsAt = &r
		}
		out = append(out, st)
	}
	var rate time.Time
	if !oldest.IsZero() {
		rate = oldest.Add(chat.RateWindow)
	}
	_, dayEnd := chat.PeriodDay.Bounds(now)
	_, monthEnd := chat.PeriodMonth.Bounds(now)
	add(chat.QuotaTurnsPerMinute, l.TurnsPerMinute, act.Recent, rate)
	add(chat.QuotaTokensPerDay, l.TokensPerDay, day, dayEnd)
	add(chat.QuotaTokensPerMonth, l.TokensPerMonth, month, monthEnd)
	add(chat.QuotaConcurrentSessions, l.ConcurrentSessions, act.Running, time.Time{})
	return slices.Clip(out)
}
