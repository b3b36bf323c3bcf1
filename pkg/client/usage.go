package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Usage periods (UsageOptions.Period).
const (
	PeriodDay   = "day"
	PeriodMonth = "month"
)

// UsageCounters are a period's counters in the usage ledger
// (docs/quotas.md): turns ended and what they used.
type UsageCounters struct {
	Turns            int64   `json:"turns"`
	InputTokens      int64   `json:"inputTokens"`
	OutputTokens     int64   `json:"outputTokens"`
	CacheReadTokens  int64   `json:"cacheReadTokens"`
	CacheWriteTokens int64   `json:"cacheWriteTokens"`
	ModelCalls       int64   `json:"modelCalls"`
	ToolCalls        int64   `json:"toolCalls"`
	StoreRequests    int64   `json:"storeRequests"`
	ReadUnits        float64 `json:"readUnits"`
	WriteUnits       float64 `json:"writeUnits"`
}

// UsagePrincipal is a principal of a usage report.
type UsagePrincipal struct {
	Subject string `json:"subject"`
	Tenant  string `json:"tenant"`
}

// LimitStatus is a quota that applies: Used, Remaining and ResetsAt
// (ISO 8601) are nil where the server does not show them (a tenant quota
// to anyone but the tenant's trusted principal; no reset for
// concurrentSessions).
type LimitStatus struct {
	Scope     string  `json:"scope"`
	Name      string  `json:"name"`
	Limit     int64   `json:"limit"`
	Used      *int64  `json:"used"`
	Remaining *int64  `json:"remaining"`
	ResetsAt  *string `json:"resetsAt"`
}

// UsageReport is GET {HistoryURL}usage: the caller's counters of the
// current UTC day or month and its limits.
type UsageReport struct {
	Period    string         `json:"period"`
	Start     string         `json:"start"`
	ResetsAt  string         `json:"resetsAt"`
	Principal UsagePrincipal `json:"principal"`
	Usage     UsageCounters  `json:"usage"`
	Limits    []LimitStatus  `json:"limits"`
}

// TenantUsageReport is GET {HistoryURL}usage?scope=tenant, for the
// tenant's trusted principal: Totals, Activity and Limits on the first
// page only (nil after), one page of its principals.
type TenantUsageReport struct {
	Period   string         `json:"period"`
	Start    string         `json:"start"`
	ResetsAt string         `json:"resetsAt"`
	Tenant   string         `json:"tenant"`
	Totals   *UsageCounters `json:"totals"`
	Activity *struct {
		RecentTurns     int64 `json:"recentTurns"`
		RunningSessions int64 `json:"runningSessions"`
	} `json:"activity"`
	Limits     []LimitStatus `json:"limits"`
	Principals []struct {
		Principal UsagePrincipal `json:"principal"`
		Usage     UsageCounters  `json:"usage"`
	} `json:"principals"`
	// NextCursor is "" when HasMore is false.
	NextCursor string `json:"nextCursor"`
	HasMore    bool   `json:"hasMore"`
}

// UsageOptions select a usage report: Period PeriodDay ("" too) or
// PeriodMonth; for TenantUsage, Limit (1..MaxPageLimit, 0: the server's
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
	u := joinURL(c.opts.HistoryURL, "/usage")
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
	if r.Period == "" || r.HasMore != (r.NextCursor != "") {
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
