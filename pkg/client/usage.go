package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/turnstream/turnstream/pkg/api"
)

// The usage reports of GET {HistoryURL}usage (docs/quotas.md), as
// pkg/api declares them.
type (
	// UsageCounters are a period's counters in the usage ledger: turns
	// ended and what they used.
	UsageCounters = api.UsageCounters
	// UsagePrincipal names a principal of a report.
	UsagePrincipal = api.UsagePrincipal
	// LimitStatus is one quota that applies, what is used and left.
	LimitStatus = api.LimitStatus
	// UsageReport is the caller's own usage and limits.
	UsageReport = api.UsageReport[UsageCounters]
	// TenantUsageReport is one page of a tenant's usage; NextCursor is
	// nil on the last page.
	TenantUsageReport = api.TenantUsageReport[UsageCounters]
)

// UsageOptions select a usage report: Period api.PeriodDay ("" too) or
// api.PeriodMonth; for TenantUsage, Limit (1..MaxPageLimit, 0: the server's
// default) principals from Cursor.
type UsageOptions struct {
	Period string
	Limit  int
	Cursor string
}

// usageURL returns {HistoryURL}usage?query.
func (c *Client) usageURL(q url.Values) (string, error) {
	if c.opts.HistoryURL == "" {
		return "", ErrNoURL
	}
	u := joinURL(c.opts.HistoryURL, api.UsagePath)
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u, nil
}

// Usage returns GET {HistoryURL}usage?period=: the caller's usage and
// limits (docs/quotas.md). A deployment without the usage ledger answers
// 404 REQUEST_NOT_FOUND (a KindHTTP *Error).
func (c *Client) Usage(ctx context.Context, o UsageOptions) (*UsageReport, error) {
	q := url.Values{}
	if o.Period != "" {
		q.Set("period", o.Period)
	}
	u, err := c.usageURL(q)
	if err != nil {
		return nil, err
	}
	var r UsageReport
	if err := c.getJSON(ctx, u, "usage", &r); err != nil {
		return nil, err
	}
	if r.Period == "" || r.Limits == nil {
		return nil, invalidResponse("usage", http.StatusOK)
	}
	return &r, nil
}

// TenantUsage returns one page of GET {HistoryURL}usage?scope=tenant: for
// the tenant's trusted principal (anyone else: 403 REQUEST_FORBIDDEN, a
// KindHTTP *Error).
func (c *Client) TenantUsage(ctx context.Context, o UsageOptions) (*TenantUsageReport, error) {
	q := url.Values{"scope": {"tenant"}}
	if o.Period != "" {
		q.Set("period", o.Period)
	}
	if o.Limit != 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.Cursor != "" {
		q.Set("cursor", o.Cursor)
	}
	u, err := c.usageURL(q)
	if err != nil {
		return nil, err
	}
	var r TenantUsageReport
	if err := c.getJSON(ctx, u, "usage", &r); err != nil {
		return nil, err
	}
	if r.Period == "" || r.HasMore != (r.NextCursor != nil && *r.NextCursor != "") {
		return nil, invalidResponse("usage", http.StatusOK)
	}
	return &r, nil
}

// RetryAfter returns the wait an HTTP error answer asked for in its
// Retry-After header, in delay-seconds (429 QUOTA_EXCEEDED, 503
// QUOTA_UNAVAILABLE); false when it named none or is not a number.
func (e *Error) RetryAfter() (time.Duration, bool) {
	if e == nil || e.Header == nil {
		return 0, false
	}
	n, err := strconv.Atoi(e.Header.Get("Retry-After"))
	if err != nil || n < 0 {
		return 0, false
	}
	return time.Duration(n) * time.Second, true
}
