package api

// UsagePath is the history function's usage route (docs/quotas.md): GET
// with the query parameters period ("day", the default, or "month"),
// scope ("principal", the default, or "tenant"), and for the tenant scope
// limit (principals a page) and cursor (the previous page's nextCursor).
// It answers UsageReport, or TenantUsageReport for the tenant scope.
const UsagePath = "/usage"

// Usage periods (the period parameter; UTC days and months).
const (
	PeriodDay   = "day"
	PeriodMonth = "month"
)

// UsageCounters are one principal's (or a tenant's) counters of a
// period, all totals since the period's start: turns, tokens as the
// models reported them, calls, DynamoDB requests and capacity units.
//
//	{"turns","inputTokens","outputTokens","modelCalls","toolCalls","storeRequests","readUnits","writeUnits","cacheReadTokens","cacheWriteTokens","reasoningTokens"}
//
// The ledger's own counters (the server's chat.Counters) encode to
// exactly these members in this order; pkg/sessionapi's tests check it.
type UsageCounters struct {
	Turns         int64   `json:"turns"`
	InputTokens   int64   `json:"inputTokens"`
	OutputTokens  int64   `json:"outputTokens"`
	ModelCalls    int64   `json:"modelCalls"`
	ToolCalls     int64   `json:"toolCalls"`
	StoreRequests int64   `json:"storeRequests"`
	ReadUnits     float64 `json:"readUnits"`
	WriteUnits    float64 `json:"writeUnits"`
	// CacheReadTokens and CacheWriteTokens came after the fields above
	// (additive: zero means none reported).
	CacheReadTokens  int64 `json:"cacheReadTokens"`
	CacheWriteTokens int64 `json:"cacheWriteTokens"`
	// ReasoningTokens are the part of OutputTokens spent reasoning, where
	// the provider reports it apart (docs/reasoning.md); added after them.
	ReasoningTokens int64 `json:"reasoningTokens"`
}

// UsageReport is the body of GET UsagePath for the caller's own usage:
// its counters for the current UTC period and each quota that applies to
// it, with what is left and when it resets. Times are ISO 8601 UTC with
// milliseconds. C is the counters' Go type: UsageCounters on the wire,
// the ledger's counters in the server (they encode alike).
//
//	{"period":"day","start","resetsAt","principal":{"subject","tenant"},"usage":UsageCounters,"limits":[LimitStatus...]}
type UsageReport[C any] struct {
	Period string `json:"period" ts:"\"day\" | \"month\""`
	// Start and ResetsAt bound the period: it resets at ResetsAt.
	Start     string         `json:"start"`
	ResetsAt  string         `json:"resetsAt"`
	Principal UsagePrincipal `json:"principal"`
	// Usage is the caller's counters of the period.
	Usage  C             `json:"usage"`
	Limits []LimitStatus `json:"limits"`
}

// UsagePrincipal is a principal in a usage report.
type UsagePrincipal struct {
	Subject string `json:"subject"`
	Tenant  string `json:"tenant"`
}

// LimitStatus is one quota that applies (docs/quotas.md): its scope
// (principal or tenant) and name (turnsPerMinute, tokensPerDay,
// tokensPerMonth, concurrentSessions), the limit, what is used and left
// (in turns, tokens or sessions), and when it resets (turnsPerMinute:
// when the oldest turn of the window leaves it; tokens: the end of the
// day or month; concurrentSessions: none). A tenant quota shows used,
// remaining and resetsAt only to the tenant's trusted principal; absent
// members are omitted, never null.
type LimitStatus struct {
	Scope     string  `json:"scope"`
	Name      string  `json:"name"`
	Limit     int64   `json:"limit"`
	Used      *int64  `json:"used,omitempty"`
	Remaining *int64  `json:"remaining,omitempty"`
	ResetsAt  *string `json:"resetsAt,omitempty"`
}

// TenantUsageReport is the body of GET UsagePath?scope=tenant for the
// tenant's trusted principal: the tenant's totals, activity and quotas
// (first page only: null after), and one page of its principals'
// counters of the period, in a stable order. C is as in UsageReport.
//
//	{"period","start","resetsAt","tenant","totals":UsageCounters|null,"activity":TenantActivity|null,
//	 "limits":[LimitStatus...],"principals":[PrincipalRow...],"nextCursor":string|null,"hasMore":bool}
type TenantUsageReport[C any] struct {
	Period     string            `json:"period" ts:"\"day\" | \"month\""`
	Start      string            `json:"start"`
	ResetsAt   string            `json:"resetsAt"`
	Tenant     string            `json:"tenant"`
	Totals     *C                `json:"totals"`
	Activity   *TenantActivity   `json:"activity"`
	Limits     []LimitStatus     `json:"limits"`
	Principals []PrincipalRow[C] `json:"principals"`
	// NextCursor is set (and HasMore true) when more principals follow.
	NextCursor *string `json:"nextCursor"`
	HasMore    bool    `json:"hasMore"`
}

// TenantActivity is a tenant's turns of the last minute and sessions
// running a turn now, as admitted under rate and concurrency quotas (zero
// when none is set).
type TenantActivity struct {
	RecentTurns     int64 `json:"recentTurns"`
	RunningSessions int64 `json:"runningSessions"`
}

// PrincipalRow is one principal of a tenant report.
type PrincipalRow[C any] struct {
	Principal UsagePrincipal `json:"principal"`
	Usage     C              `json:"usage"`
}
