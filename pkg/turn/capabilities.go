package turn

import (
	"encoding/json"
	"net/http"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/definition"
	"github.com/turnstream/turnstream/pkg/httpedge"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// Extension names listed by GET /capabilities
// (docs/design.md#storage-one-dynamodb-table).
const (
	ExtensionSnapshotScope = "snapshotScope"
	ExtensionStop          = "stop"
	ExtensionLineage       = "lineage"
	ExtensionArtifacts     = "artifacts"
	ExtensionHistory       = "history"
	// ExtensionApprovals: tool calls may wait for the owner's decision
	// (docs/approvals.md).
	ExtensionApprovals = "approvals"
	// ExtensionResume and ExtensionDurableTurns are listed when
	// checkpoints are on (Options.CheckpointInterval > 0); their objects
	// say "available": false otherwise, never omitted.
	ExtensionResume       = "resume"
	ExtensionDurableTurns = "durableTurns"
	// ExtensionMultitask: a submit that finds its session busy may be
	// queued, or interrupt the running turn (docs/multitask.md); listed
	// when a policy other than reject is available.
	ExtensionMultitask = "multitask"
	// ExtensionQuotas: the usage ledger is kept and quotas may refuse a
	// submit (429 QUOTA_EXCEEDED) or end a turn (LIMIT_EXCEEDED); listed
	// when the ledger is on (docs/quotas.md). ExtensionBudgets: the
	// definitions' per-turn budgets, always listed.
	ExtensionQuotas  = "quotas"
	ExtensionBudgets = "budgets"
)

// Capabilities is the body of GET /capabilities (turnstream extension,
// docs/design.md#storage-one-dynamodb-table): the turn protocol versions this
// deployment speaks and the extensions it supports, so clients discover them
// instead of guessing.
//
//	{"protocols":[{"protocol":"agentskit.chat.turn","versions":[1]}],
//	 "extensions":["snapshotScope","stop","lineage","artifacts","history","approvals","compact","agui","quotas","budgets"],
//	 "snapshotScope":{"header":"X-Turnstream-Snapshot-Scope","values":["session","turn"],"default":"session"},
//	 "lineage":{"operations":["retry","edit","regenerate"]},
//	 "stop":{"method":"POST","path":"/stop"},
//	 "approvals":{"field":"confirmation","decisions":["approve","deny"],"confirmationTtlMs":900000},
//	 "resume":{"available":true,"method":"GET","path":"/sessions/{sessionId}/turns/{turnId}/stream",
//	           "parameter":"after","pollIntervalMs":250,"cost":"..."},
//	 "durableTurns":{"available":true,"checkpointIntervalMs":1000,"disconnectStops":false},
//	 "multitask":{"available":true,"header":"X-Turnstream-Multitask","policies":["reject","enqueue","interrupt","rollback"],
//	              "default":"reject","definitions":{"<id>":{"default","policies"}},"maxQueuedTurns":4,
//	              "queuedTurnTtlMs":600000,"interruptWaitMs":1500,"doc":"docs/multitask.md"},
//	 "compact":{"header":"X-Turnstream-Stream-Mode","values":["snapshots","compact"],"default":"snapshots",
//	            "event":"turnstream.turn.append","intervalMs":50,"lineSpanMs":1000,"doc":"docs/compact.md"},
//	 "agui":{"available":true,"protocol":"ag-ui","version":"1.0","method":"POST","path":"/agui",
//	         "resume":{"available":true,"method":"GET","path":"/agui/threads/{threadId}/runs/{runId}",
//	                   "header":"Last-Event-ID","parameter":"lastEventId"},"textGapMs":400,"doc":"docs/agui.md"},
//	 "quotas":{"available":true,"default":{"principal":{"turnsPerMinute":3},"tenant":{}},"definitions":{"<id>":{...}},
//	           "failMode":"closed","usage":{"function":"history","method":"GET","path":"/usage","periods":["day","month"]},
//	           "codes":{"exceeded":"QUOTA_EXCEEDED","unavailable":"QUOTA_UNAVAILABLE","limit":"LIMIT_EXCEEDED"},"doc":"docs/quotas.md"},
//	 "budgets":{"default":{"maxSteps":8,"maxOutputTokens":4000},"definitions":{"<id>":{...}},"doc":"docs/quotas.md"},
//	 "limits":{"maxBodyBytes":65536,"turnTimeoutMs":300000,"snapshotIntervalMs":50,"snapshotBytesPerSecond":4096,"maxSnapshotGapMs":2000}}
type Capabilities struct {
	Protocols     []ProtocolVersions `json:"protocols"`
	Extensions    []string           `json:"extensions"`
	SnapshotScope struct {
		Header  string   `json:"header"`
		Values  []string `json:"values"`
		Default string   `json:"default"`
	} `json:"snapshotScope"`
	Lineage struct {
		Operations []string `json:"operations"`
	} `json:"lineage"`
	Stop struct {
		Method string `json:"method"`
		Path   string `json:"path"`
	} `json:"stop"`
	// Approvals describes the decision extension of the submit payload:
	// payload.confirmation {token, decision}.
	Approvals struct {
		Field             string   `json:"field"`
		Decisions         []string `json:"decisions"`
		ConfirmationTTLMs int64    `json:"confirmationTtlMs"`
	} `json:"approvals"`
	// Compact describes the compact stream (docs/compact.md).
	Compact compactCapability `json:"compact"`
	// AGUI describes the AG-UI endpoint (docs/agui.md).
	AGUI         aguiCapability         `json:"agui"`
	Resume       resumeCapability       `json:"resume"`
	DurableTurns durableTurnsCapability `json:"durableTurns"`
	// Multitask describes the policies of a submit that finds its
	// session busy (MultitaskHeader); "available": false without
	// checkpoints.
	Multitask multitaskCapability `json:"multitask"`
	// Quotas and Budgets say which limits apply (never anyone's usage,
	// docs/quotas.md).
	Quotas  quotasCapability  `json:"quotas"`
	Budgets budgetsCapability `json:"budgets"`
	Limits  struct {
		MaxBodyBytes       int64 `json:"maxBodyBytes"`
		TurnTimeoutMs      int64 `json:"turnTimeoutMs"`
		SnapshotIntervalMs int64 `json:"snapshotIntervalMs"`
		// SnapshotBytesPerSecond and MaxSnapshotGapMs pace streaming
		// snapshots by size (Options.SnapshotBytesPerSecond).
		SnapshotBytesPerSecond int64 `json:"snapshotBytesPerSecond"`
		MaxSnapshotGapMs       int64 `json:"maxSnapshotGapMs"`
	} `json:"limits"`
}

// ProtocolVersions names a protocol and the versions spoken.
type ProtocolVersions struct {
	Protocol string `json:"protocol"`
	Versions []int  `json:"versions"`
}

// capabilitiesBody encodes the Capabilities of a handler configured with
// opts, once at construction.
func capabilitiesBody(opts Options, multitask multitaskCapability, agents map[string]*agent, defaultID string) []byte {
	var c Capabilities
	c.Protocols = []ProtocolVersions{{Protocol: protocol.TurnProtocol, Versions: []int{protocol.TurnVersion}}}
	c.Extensions = []string{ExtensionSnapshotScope, ExtensionStop, ExtensionLineage, ExtensionArtifacts, ExtensionHistory, ExtensionApprovals, ExtensionCompact, ExtensionAGUI}
	c.Compact = compactCapabilities(opts)
	c.AGUI = aguiCapabilities(opts)
	c.SnapshotScope.Header = SnapshotScopeHeader
	c.SnapshotScope.Values = []string{"session", "turn"}
	c.SnapshotScope.Default = "session"
	c.Lineage.Operations = []string{protocol.OperationRetry, protocol.OperationEdit, protocol.OperationRegenerate}
	c.Stop.Method = http.MethodPost
	c.Stop.Path = "/stop"
	c.Approvals.Field = "confirmation"
	c.Approvals.Decisions = []string{protocol.DecisionApprove, protocol.DecisionDeny}
	c.Approvals.ConfirmationTTLMs = opts.ConfirmationTTL.Milliseconds()
	c.Resume, c.DurableTurns = resumeCapabilities(opts)
	if c.Resume.Available {
		c.Extensions = append(c.Extensions, ExtensionResume, ExtensionDurableTurns)
	}
	c.Multitask = multitask
	if multitask.Available {
		c.Extensions = append(c.Extensions, ExtensionMultitask)
	}
	c.Quotas, c.Budgets = quotaCapabilities(opts, agents, defaultID)
	if c.Quotas.Available {
		c.Extensions = append(c.Extensions, ExtensionQuotas)
	}
	c.Extensions = append(c.Extensions, ExtensionBudgets)
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

// quotasCapability is the "quotas" object of GET /capabilities: which
// quotas apply, never anyone's usage.
type quotasCapability struct {
	// Available is whether the usage ledger is kept (Options.Ledger):
	// quotas need it.
	Available bool `json:"available"`
	// Default are the quotas of the sessions of the default definition,
	// Definitions those of every definition (its own over the
	// deployment-wide default), by id.
	Default     chat.Quotas            `json:"default"`
	Definitions map[string]chat.Quotas `json:"definitions,omitempty"`
	// FailMode is what a check that cannot read the ledger does: closed
	// (503 QUOTA_UNAVAILABLE) or open (the turn runs unchecked).
	FailMode string `json:"failMode"`
	// Usage is where a client reads its usage and what is left.
	Usage struct {
		Function string   `json:"function"`
		Method   string   `json:"method"`
		Path     string   `json:"path"`
		Periods  []string `json:"periods"`
	} `json:"usage"`
	Codes struct {
		Exceeded    string `json:"exceeded"`
		Unavailable string `json:"unavailable"`
		Limit       string `json:"limit"`
	} `json:"codes"`
	Doc string `json:"doc"`
}

// budgetsCapability is the "budgets" object of GET /capabilities: each
// definition's per-turn budgets (definition.Limits).
type budgetsCapability struct {
	Default     turnBudgets            `json:"default"`
	Definitions map[string]turnBudgets `json:"definitions,omitempty"`
	Doc         string                 `json:"doc"`
}

// turnBudgets are one definition's budgets; an absent one is unlimited
// (maxTokens absent: the provider's default per call).
type turnBudgets struct {
	MaxSteps        int   `json:"maxSteps"`
	MaxTokens       int   `json:"maxTokens,omitempty"`
	MaxOutputTokens int64 `json:"maxOutputTokens,omitempty"`
	MaxToolCalls    int   `json:"maxToolCalls,omitempty"`
	MaxWallTimeMs   int64 `json:"maxWallTimeMs,omitempty"`
}

// quotaCapabilities returns the quotas and budgets objects of a handler
// whose agents are agents, defaultID the default definition's.
func quotaCapabilities(opts Options, agents map[string]*agent, defaultID string) (quotasCapability, budgetsCapability) {
	var q quotasCapability
	var b budgetsCapability
	q.Available = opts.Ledger
	q.FailMode = "closed"
	if opts.QuotaFailOpen {
		q.FailMode = "open"
	}
	q.Usage.Function, q.Usage.Method, q.Usage.Path = "history", http.MethodGet, "/usage"
	q.Usage.Periods = []string{string(chat.PeriodDay), string(chat.PeriodMonth)}
	q.Codes.Exceeded, q.Codes.Unavailable, q.Codes.Limit = protocol.CodeQuotaExceeded, protocol.CodeQuotaUnavailable, protocol.CodeLimitExceeded
	q.Doc, b.Doc = "docs/quotas.md", "docs/quotas.md"
	budgets := func(l definition.Limits) turnBudgets {
		return turnBudgets{MaxSteps: l.MaxSteps, MaxTokens: l.MaxTokens, MaxOutputTokens: l.MaxOutputTokens,
			MaxToolCalls: l.MaxToolCalls, MaxWallTimeMs: l.MaxWallTime.Milliseconds()}
	}
	if len(agents) > 1 {
		q.Definitions, b.Definitions = map[string]chat.Quotas{}, map[string]turnBudgets{}
	}
	for _, ag := range agents {
		if ag.def.ID == defaultID {
			q.Default, b.Default = ag.def.Quotas, budgets(ag.def.Limits)
		}
		if q.Definitions != nil {
			q.Definitions[ag.def.ID], b.Definitions[ag.def.ID] = ag.def.Quotas, budgets(ag.def.Limits)
		}
	}
	return q, b
}
