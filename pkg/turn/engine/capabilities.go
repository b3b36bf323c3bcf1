package engine

import (
	"encoding/json"
	"net/http"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/definition"
	"github.com/turnstream/turnstream/pkg/httpedge"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// The objects of GET /capabilities (api.Capabilities), by the names the
// files that build them use.
type (
	compactCapability      = api.CompactCapability
	aguiCapability         = api.AGUICapability
	resumeCapability       = api.ResumeCapability
	durableTurnsCapability = api.DurableTurnsCapability
	multitaskCapability    = api.MultitaskCapability
	definitionPolicies     = api.DefinitionPolicies
)

// capabilitiesBody encodes the Capabilities of a handler configured with
// opts, once at construction.
func capabilitiesBody(opts Config, multitask multitaskCapability, agents map[string]*agent, defaultID string) []byte {
	var c api.Capabilities
	c.Protocols = []api.ProtocolVersions{{Protocol: protocol.TurnProtocol, Versions: []int{protocol.TurnVersion}}}
	c.Extensions = []string{api.ExtensionSnapshotScope, api.ExtensionStop, api.ExtensionLineage, api.ExtensionArtifacts, api.ExtensionHistory, api.ExtensionApprovals, api.ExtensionCompact, api.ExtensionAGUI}
	c.Compact = compactCapabilities(opts)
	c.AGUI = aguiCapabilities(opts)
	c.SnapshotScope.Header = api.SnapshotScopeHeader
	c.SnapshotScope.Values = api.SnapshotScopes
	c.SnapshotScope.Default = api.ScopeSession
	c.Lineage.Operations = []string{protocol.OperationRetry, protocol.OperationEdit, protocol.OperationRegenerate}
	c.Stop.Method = http.MethodPost
	c.Stop.Path = api.StopPath
	c.Approvals.Field = "confirmation"
	c.Approvals.Decisions = []string{protocol.DecisionApprove, protocol.DecisionDeny}
	c.Approvals.ConfirmationTTLMs = opts.ConfirmationTTL.Milliseconds()
	c.Resume, c.DurableTurns = resumeCapabilities(opts)
	if c.Resume.Available {
		c.Extensions = append(c.Extensions, api.ExtensionResume, api.ExtensionDurableTurns)
	}
	c.Multitask = multitask
	if multitask.Available {
		c.Extensions = append(c.Extensions, api.ExtensionMultitask)
	}
	c.Quotas, c.Budgets = quotaCapabilities(opts, agents, defaultID)
	if c.Quotas.Available {
		c.Extensions = append(c.Extensions, api.ExtensionQuotas)
	}
	c.Extensions = append(c.Extensions, api.ExtensionBudgets)
	c.Limits.MaxBodyBytes = opts.MaxBodyBytes
	c.Limits.TurnTimeoutMs = opts.TurnTimeout.Milliseconds()
	c.Limits.SnapshotIntervalMs = opts.SnapshotInterval.Milliseconds()
	c.Limits.SnapshotBytesPerSecond = opts.SnapshotBytesPerSecond
	c.Limits.MaxSnapshotGapMs = opts.MaxSnapshotGap.Milliseconds()
	b, err := json.Marshal(c)
	if err != nil {
		panic("turn: encode capabilities: " + err.Error()) // static shape: cannot fail
	}
	return append(b, '\n')
}

// serveCapabilities answers GET /capabilities without authentication: it
// reveals no session data, only what any client of this URL needs before
// signing in. Other methods are 405.
func (h *handler) serveCapabilities(w http.ResponseWriter, r *http.Request) {
	if err := httpedge.RequireMethod(w, r, http.MethodGet, http.MethodHead); err != nil {
		httpedge.Error(w, r, err)
		return
	}
	httpedge.WriteJSON(w, http.StatusOK, h.capabilities)
}

// quotaCapabilities returns the quotas and budgets objects of a handler
// whose agents are agents, defaultID the default definition's.
func quotaCapabilities(opts Config, agents map[string]*agent, defaultID string) (api.QuotasCapability, api.BudgetsCapability) {
	var q api.QuotasCapability
	var b api.BudgetsCapability
	q.Available = opts.Ledger
	q.FailMode = "closed"
	if opts.QuotaFailOpen {
		q.FailMode = "open"
	}
	q.Usage.Function, q.Usage.Method, q.Usage.Path = "history", http.MethodGet, api.UsagePath
	q.Usage.Periods = []string{api.PeriodDay, api.PeriodMonth}
	q.Codes.Exceeded, q.Codes.Unavailable, q.Codes.Limit = protocol.CodeQuotaExceeded, protocol.CodeQuotaUnavailable, protocol.CodeLimitExceeded
	q.Doc, b.Doc = "docs/quotas.md", "docs/quotas.md"
	budgets := func(l definition.Limits) api.TurnBudgets {
		return api.TurnBudgets{MaxSteps: l.MaxSteps, MaxTokens: l.MaxTokens, MaxOutputTokens: l.MaxOutputTokens,
			MaxToolCalls: l.MaxToolCalls, MaxWallTimeMs: l.MaxWallTime.Milliseconds()}
	}
	if len(agents) > 1 {
		q.Definitions, b.Definitions = map[string]api.Quotas{}, map[string]api.TurnBudgets{}
	}
	for _, ag := range agents {
		if ag.def.ID == defaultID {
			q.Default, b.Default = wireQuotas(ag.def.Quotas), budgets(ag.def.Limits)
		}
		if q.Definitions != nil {
			q.Definitions[ag.def.ID], b.Definitions[ag.def.ID] = wireQuotas(ag.def.Quotas), budgets(ag.def.Limits)
		}
	}
	return q, b
}

// wireQuotas is q as the capabilities show it.
func wireQuotas(q chat.Quotas) api.Quotas {
	limits := func(l chat.QuotaLimits) api.QuotaLimits {
		return api.QuotaLimits{TurnsPerMinute: l.TurnsPerMinute, TokensPerDay: l.TokensPerDay,
			TokensPerMonth: l.TokensPerMonth, ConcurrentSessions: l.ConcurrentSessions}
	}
	return api.Quotas{Principal: limits(q.Principal), Tenant: limits(q.Tenant)}
}
