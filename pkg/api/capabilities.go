package api

// Capabilities is the body of GET CapabilitiesPath on the turn function
// (docs/design.md#storage-one-dynamodb-table): the turn protocol versions
// the deployment speaks and the extensions it serves, so that clients
// discover them instead of guessing. Durations are in milliseconds (the
// Ms suffix), sizes in bytes.
//
//	{"protocols":[{"protocol":"agentskit.chat.turn","versions":[1]}],
//	 "extensions":["snapshotScope","stop","lineage","artifacts","history","approvals","compact","agui",...,"budgets"],
//	 "snapshotScope":{...},"lineage":{...},"stop":{...},"approvals":{...},"compact":{...},"agui":{...},
//	 "resume":{...},"durableTurns":{...},"multitask":{...},"quotas":{...},"budgets":{...},"limits":{...}}
type Capabilities struct {
	Protocols []ProtocolVersions `json:"protocols"`
	// Extensions are the extension names served (Extensions lists them
	// all).
	Extensions    []string                `json:"extensions"`
	SnapshotScope SnapshotScopeCapability `json:"snapshotScope"`
	Lineage       LineageCapability       `json:"lineage"`
	Stop          StopCapability          `json:"stop"`
	Approvals     ApprovalsCapability     `json:"approvals"`
	Compact       CompactCapability       `json:"compact"`
	AGUI          AGUICapability          `json:"agui"`
	Resume        ResumeCapability        `json:"resume"`
	DurableTurns  DurableTurnsCapability  `json:"durableTurns"`
	// Multitask is "available": false without checkpoints.
	Multitask MultitaskCapability `json:"multitask"`
	// Quotas and Budgets say which limits apply (never anyone's usage).
	Quotas  QuotasCapability  `json:"quotas"`
	Budgets BudgetsCapability `json:"budgets"`
	Limits  LimitsCapability  `json:"limits"`
}

// ProtocolVersions names a protocol and the versions served of it.
type ProtocolVersions struct {
	Protocol string `json:"protocol"`
	Versions []int  `json:"versions"`
}

// SnapshotScopeCapability describes SnapshotScopeHeader.
//
//	{"header":"X-Turnstream-Snapshot-Scope","values":["session","turn"],"default":"session"}
type SnapshotScopeCapability struct {
	Header  string   `json:"header"`
	Values  []string `json:"values"`
	Default string   `json:"default"`
}

// LineageCapability lists the lineage operations a submit may carry
// (retry, edit, regenerate).
type LineageCapability struct {
	Operations []string `json:"operations"`
}

// StopCapability is the stop route: {"method":"POST","path":"/stop"}.
type StopCapability struct {
	Method string `json:"method"`
	Path   string `json:"path"`
}

// ApprovalsCapability describes the decision extension of the submit
// payload (docs/approvals.md): payload.<Field> {token, decision}, a
// decision one of Decisions, decidable for ConfirmationTTLMs.
type ApprovalsCapability struct {
	Field             string   `json:"field"`
	Decisions         []string `json:"decisions"`
	ConfirmationTTLMs int64    `json:"confirmationTtlMs"`
}

// CompactCapability describes the compact stream (StreamModeHeader,
// docs/compact.md).
type CompactCapability struct {
	Header  string   `json:"header"`
	Values  []string `json:"values"`
	Default string   `json:"default"`
	// Event is the append lines' event kind (protocol.EventAppend).
	Event string `json:"event"`
	// IntervalMs is the least time between two writes of text;
	// LineSpanMs the longest an append line stays open.
	IntervalMs int64 `json:"intervalMs"`
	LineSpanMs int64 `json:"lineSpanMs"`
	// Doc names the document that specifies the extension.
	Doc string `json:"doc"`
}

// AGUICapability describes the AG-UI endpoint (docs/agui.md).
type AGUICapability struct {
	Available bool   `json:"available"`
	Protocol  string `json:"protocol"`
	Version   string `json:"version"`
	Method    string `json:"method"`
	Path      string `json:"path"`
	// Resume is the run's resume route, available with checkpoints on.
	Resume    AGUIResumeCapability `json:"resume"`
	TextGapMs int64                `json:"textGapMs"`
	Doc       string               `json:"doc"`
}

// AGUIResumeCapability is an AG-UI run's resume route: Method Path, the
// position in Header (Last-Event-ID) or the query parameter Parameter.
// Only Available is sent when it is false.
type AGUIResumeCapability struct {
	Available bool   `json:"available"`
	Method    string `json:"method,omitempty"`
	Path      string `json:"path,omitempty"`
	Header    string `json:"header,omitempty"`
	Parameter string `json:"parameter,omitempty"`
}

// ResumeCapability is the resume route (ResumePath): Method Path with
// {sessionId} and {turnId} placeholders, and the query parameter
// Parameter carrying the last sequence the reader holds. Only Available
// is sent when it is false (checkpoints off).
type ResumeCapability struct {
	Available bool   `json:"available"`
	Method    string `json:"method,omitempty"`
	Path      string `json:"path,omitempty"`
	Parameter string `json:"parameter,omitempty"`
	// PollIntervalMs is how often a resume reads the turn, and Cost what
	// one read costs.
	PollIntervalMs int64  `json:"pollIntervalMs,omitempty"`
	Cost           string `json:"cost,omitempty"`
}

// DurableTurnsCapability says whether running turns are checkpointed.
type DurableTurnsCapability struct {
	Available bool `json:"available"`
	// CheckpointIntervalMs is how often a running turn looks at its
	// state: it bounds how long a stop takes to be seen.
	CheckpointIntervalMs int64 `json:"checkpointIntervalMs,omitempty"`
	// CheckpointMinChangeBytes is the least growth a checkpoint waits for
	// (at most 4 intervals; 0: every interval). With CheckpointIntervalMs
	// it bounds what a crash, a resume or a reloaded page loses.
	CheckpointMinChangeBytes int `json:"checkpointMinChangeBytes,omitempty"`
	// DisconnectStops says whether a client disconnect ends the turn
	// (false with checkpoints: the turn runs on for a resume).
	DisconnectStops bool `json:"disconnectStops"`
}

// MultitaskCapability describes the policies of a submit that finds its
// session busy (MultitaskHeader, docs/multitask.md#asking-for-a-policy).
type MultitaskCapability struct {
	// Available is whether a submit may name a policy other than reject.
	Available bool   `json:"available"`
	Header    string `json:"header"`
	// Policies are the policies some definition allows; Default is the
	// default definition's default.
	Policies []string `json:"policies"`
	Default  string   `json:"default"`
	// Definitions are each definition's own default and policies, by
	// definition id (a session runs its definition's); omitted with one
	// definition.
	Definitions map[string]DefinitionPolicies `json:"definitions,omitempty"`
	// MaxQueuedTurns is how many turns may wait per session;
	// QueuedTurnTTLMs how long one may wait; InterruptWaitMs how long an
	// interrupt waits for the running turn to end.
	MaxQueuedTurns  int    `json:"maxQueuedTurns"`
	QueuedTurnTTLMs int64  `json:"queuedTurnTtlMs"`
	InterruptWaitMs int64  `json:"interruptWaitMs"`
	Doc             string `json:"doc"`
}

// DefinitionPolicies are one definition's multitask policies.
type DefinitionPolicies struct {
	Default  string   `json:"default"`
	Policies []string `json:"policies"`
}

// QuotasCapability says which quotas apply (docs/quotas.md), never
// anyone's usage.
type QuotasCapability struct {
	// Available is whether the usage ledger is kept: quotas need it.
	Available bool `json:"available"`
	// Default are the quotas of the sessions of the default definition,
	// Definitions those of every definition (its own over the
	// deployment-wide default), by id; omitted with one definition.
	Default     Quotas            `json:"default"`
	Definitions map[string]Quotas `json:"definitions,omitempty"`
	// FailMode is what a check that cannot read the ledger does: "closed"
	// (503 QUOTA_UNAVAILABLE) or "open" (the turn runs unchecked).
	FailMode string `json:"failMode" ts:"\"closed\" | \"open\""`
	// Usage is where a client reads its usage and what is left.
	Usage UsageRoute `json:"usage"`
	Codes QuotaCodes `json:"codes"`
	Doc   string     `json:"doc"`
}

// Quotas are a principal's and its tenant's quotas as the capabilities
// show them (the server's chat.Quotas encode alike).
type Quotas struct {
	Principal QuotaLimits `json:"principal"`
	Tenant    QuotaLimits `json:"tenant"`
}

// QuotaLimits are the quotas of one scope; an absent one is unlimited.
type QuotaLimits struct {
	TurnsPerMinute     int64 `json:"turnsPerMinute,omitempty"`
	TokensPerDay       int64 `json:"tokensPerDay,omitempty"`
	TokensPerMonth     int64 `json:"tokensPerMonth,omitempty"`
	ConcurrentSessions int64 `json:"concurrentSessions,omitempty"`
}

// UsageRoute names the usage route: {"function":"history","method":"GET","path":"/usage","periods":["day","month"]}.
type UsageRoute struct {
	Function string   `json:"function"`
	Method   string   `json:"method"`
	Path     string   `json:"path"`
	Periods  []string `json:"periods"`
}

// QuotaCodes are the diagnostic codes of the quota extension.
type QuotaCodes struct {
	Exceeded    string `json:"exceeded"`
	Unavailable string `json:"unavailable"`
	Limit       string `json:"limit"`
}

// BudgetsCapability lists each definition's per-turn budgets.
type BudgetsCapability struct {
	Default     TurnBudgets            `json:"default"`
	Definitions map[string]TurnBudgets `json:"definitions,omitempty"`
	Doc         string                 `json:"doc"`
}

// TurnBudgets are one definition's per-turn budgets; an absent one is
// unlimited (maxTokens absent: the provider's default per model call).
type TurnBudgets struct {
	MaxSteps        int   `json:"maxSteps"`
	MaxTokens       int   `json:"maxTokens,omitempty"`
	MaxOutputTokens int64 `json:"maxOutputTokens,omitempty"`
	MaxToolCalls    int   `json:"maxToolCalls,omitempty"`
	MaxWallTimeMs   int64 `json:"maxWallTimeMs,omitempty"`
}

// LimitsCapability are the deployment's request limits.
type LimitsCapability struct {
	MaxBodyBytes       int64 `json:"maxBodyBytes"`
	TurnTimeoutMs      int64 `json:"turnTimeoutMs"`
	SnapshotIntervalMs int64 `json:"snapshotIntervalMs"`
	// SnapshotBytesPerSecond and MaxSnapshotGapMs pace streaming
	// snapshots by size.
	SnapshotBytesPerSecond int64 `json:"snapshotBytesPerSecond"`
	MaxSnapshotGapMs       int64 `json:"maxSnapshotGapMs"`
}
