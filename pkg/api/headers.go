package api

// Request headers of turnstream's extensions to the turn routes. A
// server matches their values case-insensitively, surrounding spaces
// ignored; another value, or the header repeated, is 400
// REQUEST_INVALID_HEADER before the body is read.
const (
	// SnapshotScopeHeader selects what a snapshot carries
	// (docs/design.md#snapshots): ScopeSession (absent means it: the
	// whole session's visible messages) or ScopeTurn (the current turn's
	// messages only). POST / and the resume route read it; the AG-UI
	// routes ignore it.
	SnapshotScopeHeader = "X-Turnstream-Snapshot-Scope"
	// StreamModeHeader negotiates the compact stream (docs/compact.md):
	// StreamModeCompact asks for it, StreamModeSnapshots (absent means it)
	// for complete snapshots only. A compact answer carries the header
	// back with StreamModeCompact.
	StreamModeHeader = "X-Turnstream-Stream-Mode"
	// MultitaskHeader names the policy of a submit that finds its session
	// busy (docs/multitask.md): one of MultitaskPolicies. Absent, the
	// session's definition's default applies (reject unless configured);
	// a policy the definition does not allow, or the deployment cannot
	// serve, is 422 MULTITASK_NOT_ALLOWED. A decision ignores it.
	MultitaskHeader = "X-Turnstream-Multitask"
)

// Response headers.
const (
	// QuotaHeader names the quota that refused a request (429
	// QUOTA_EXCEEDED, docs/quotas.md) as "<scope>.<name>", e.g.
	// "principal.turnsPerMinute"; it accompanies Retry-After (whole
	// seconds). Never request input.
	QuotaHeader = "X-Turnstream-Quota"
)

// Snapshot scopes (SnapshotScopeHeader values).
const (
	ScopeSession = "session"
	ScopeTurn    = "turn"
)

// SnapshotScopes lists the scopes, the default first.
var SnapshotScopes = []string{ScopeSession, ScopeTurn}

// Stream modes (StreamModeHeader values).
const (
	StreamModeSnapshots = "snapshots"
	StreamModeCompact   = "compact"
)

// StreamModes lists the stream modes, the default first.
var StreamModes = []string{StreamModeSnapshots, StreamModeCompact}

// Multitask policies (MultitaskHeader values; docs/multitask.md).
const (
	// MultitaskReject: a busy session answers 409 SESSION_BUSY (the
	// protocol's behaviour, and the default).
	MultitaskReject = "reject"
	// MultitaskEnqueue: a busy session stores the turn as queued and
	// answers 202 with a Queued body; the turn runs after the turns
	// before it.
	MultitaskEnqueue = "enqueue"
	// MultitaskInterrupt: the running turn is stopped (its answer so far
	// kept, TURN_INTERRUPTED) and this one streams in its place.
	MultitaskInterrupt = "interrupt"
	// MultitaskRollback: as interrupt, and the stopped turn is superseded
	// (gone from history and from the model's context).
	MultitaskRollback = "rollback"
)

// MultitaskPolicies lists the policies in the order the capabilities list
// them.
var MultitaskPolicies = []string{MultitaskReject, MultitaskEnqueue, MultitaskInterrupt, MultitaskRollback}

// Extension names: the "extensions" list of GET /capabilities. A
// deployment lists the ones it serves; each has an object of the same
// name in Capabilities (resume and durableTurns say "available": false
// rather than being omitted).
const (
	ExtensionSnapshotScope = "snapshotScope"
	ExtensionStop          = "stop"
	ExtensionLineage       = "lineage"
	ExtensionArtifacts     = "artifacts"
	ExtensionHistory       = "history"
	// ExtensionApprovals: tool calls may wait for the owner's decision
	// (docs/approvals.md).
	ExtensionApprovals = "approvals"
	// ExtensionCompact: the compact stream (StreamModeHeader).
	ExtensionCompact = "compact"
	// ExtensionAGUI: the AG-UI endpoint (docs/agui.md).
	ExtensionAGUI = "agui"
	// ExtensionResume and ExtensionDurableTurns are listed when running
	// turns are checkpointed.
	ExtensionResume       = "resume"
	ExtensionDurableTurns = "durableTurns"
	// ExtensionMultitask: a policy other than reject is available
	// (MultitaskHeader).
	ExtensionMultitask = "multitask"
	// ExtensionQuotas: the usage ledger is kept and quotas may refuse a
	// submit (429 QUOTA_EXCEEDED) or end a turn (LIMIT_EXCEEDED).
	// ExtensionBudgets: the definitions' per-turn budgets, always listed.
	ExtensionQuotas  = "quotas"
	ExtensionBudgets = "budgets"
)

// Extensions lists every extension name, in the order a deployment that
// serves them all lists them.
var Extensions = []string{ExtensionSnapshotScope, ExtensionStop, ExtensionLineage, ExtensionArtifacts,
	ExtensionHistory, ExtensionApprovals, ExtensionCompact, ExtensionAGUI, ExtensionResume,
	ExtensionDurableTurns, ExtensionMultitask, ExtensionQuotas, ExtensionBudgets}

// Routes of the turn function, relative to its base URL. The patterns
// are net/http.ServeMux wildcards: each {name} is one path segment, a
// SafeId.
const (
	// SubmitPath takes POST client.turn.submit: 200 NDJSON stream, or 202
	// Queued (MultitaskEnqueue).
	SubmitPath = "/"
	// StopPath takes POST StopRequest: 202 StopAnswer.
	StopPath = "/stop"
	// CapabilitiesPath answers GET (and HEAD) with Capabilities, without
	// authentication.
	CapabilitiesPath = "/capabilities"
	// ResumePath answers GET with the turn's NDJSON stream from
	// ResumeAfterParameter on (docs/durable-turns.md).
	ResumePath = "/sessions/{sessionId}/turns/{turnId}/stream"
	// ResumeAfterParameter carries the last sequence the reader holds
	// (an integer >= 0); absent, the stream starts with the turn's newest
	// state.
	ResumeAfterParameter = "after"
)
