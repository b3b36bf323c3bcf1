// Code generated from pkg/api by TestTypeScriptContract; DO NOT EDIT.
// go test ./pkg/api -run TestTypeScriptContract -update rewrites it.
//
// turnstream's HTTP contract beside the turn protocol: headers, capability
// names, routes, and the JSON bodies of the routes that are not turn events.

import type { JSONValue } from "./json.js";
import type { TurnDiagnostic } from "./protocol.js";

// The statuses of DeleteProgress.
export const DELETE_STATUS_DELETING = "deleting";
export const DELETE_STATUS_DELETED = "deleted";

// Request headers of turnstream's extensions to the turn routes. A
// server matches their values case-insensitively, surrounding spaces
// ignored; another value, or the header repeated, is 400
// REQUEST_INVALID_HEADER before the body is read.
/**
 * SnapshotScopeHeader selects what a snapshot carries
 * (docs/design.md#snapshots): ScopeSession (absent means it: the
 * whole session's visible messages) or ScopeTurn (the current turn's
 * messages only). POST / and the resume route read it; the AG-UI
 * routes ignore it.
 */
export const SNAPSHOT_SCOPE_HEADER = "X-Turnstream-Snapshot-Scope";
/**
 * StreamModeHeader negotiates the compact stream (docs/compact.md):
 * StreamModeCompact asks for it, StreamModeSnapshots (absent means it)
 * for complete snapshots only. A compact answer carries the header
 * back with StreamModeCompact.
 */
export const STREAM_MODE_HEADER = "X-Turnstream-Stream-Mode";
/**
 * MultitaskHeader names the policy of a submit that finds its session
 * busy (docs/multitask.md): one of MultitaskPolicies. Absent, the
 * session's definition's default applies (reject unless configured);
 * a policy the definition does not allow, or the deployment cannot
 * serve, is 422 MULTITASK_NOT_ALLOWED. A decision ignores it.
 */
export const MULTITASK_HEADER = "X-Turnstream-Multitask";

// Snapshot scopes (SnapshotScopeHeader values).
export const SCOPE_SESSION = "session";
export const SCOPE_TURN = "turn";

// Stream modes (StreamModeHeader values).
export const STREAM_MODE_SNAPSHOTS = "snapshots";
export const STREAM_MODE_COMPACT = "compact";

// Multitask policies (MultitaskHeader values; docs/multitask.md).
/**
 * MultitaskReject: a busy session answers 409 SESSION_BUSY (the
 * protocol's behaviour, and the default).
 */
export const MULTITASK_REJECT = "reject";
/**
 * MultitaskEnqueue: a busy session stores the turn as queued and
 * answers 202 with a Queued body; the turn runs after the turns
 * before it.
 */
export const MULTITASK_ENQUEUE = "enqueue";
/**
 * MultitaskInterrupt: the running turn is stopped (its answer so far
 * kept, TURN_INTERRUPTED) and this one streams in its place.
 */
export const MULTITASK_INTERRUPT = "interrupt";
/**
 * MultitaskRollback: as interrupt, and the stopped turn is superseded
 * (gone from history and from the model's context).
 */
export const MULTITASK_ROLLBACK = "rollback";

// Extension names: the "extensions" list of GET /capabilities. A
// deployment lists the ones it serves; each has an object of the same
// name in Capabilities (resume and durableTurns say "available": false
// rather than being omitted).
export const EXTENSION_SNAPSHOT_SCOPE = "snapshotScope";
export const EXTENSION_STOP = "stop";
export const EXTENSION_LINEAGE = "lineage";
export const EXTENSION_ARTIFACTS = "artifacts";
export const EXTENSION_HISTORY = "history";
/**
 * ExtensionApprovals: tool calls may wait for the owner's decision
 * (docs/approvals.md).
 */
export const EXTENSION_APPROVALS = "approvals";
/**
 * ExtensionCompact: the compact stream (StreamModeHeader).
 */
export const EXTENSION_COMPACT = "compact";
/**
 * ExtensionAGUI: the AG-UI endpoint (docs/agui.md).
 */
export const EXTENSION_AGUI = "agui";
/**
 * ExtensionResume and ExtensionDurableTurns are listed when running
 * turns are checkpointed.
 */
export const EXTENSION_RESUME = "resume";
export const EXTENSION_DURABLE_TURNS = "durableTurns";
/**
 * ExtensionMultitask: a policy other than reject is available
 * (MultitaskHeader).
 */
export const EXTENSION_MULTITASK = "multitask";
/**
 * ExtensionQuotas: the usage ledger is kept and quotas may refuse a
 * submit (429 QUOTA_EXCEEDED) or end a turn (LIMIT_EXCEEDED).
 * ExtensionBudgets: the definitions' per-turn budgets, always listed.
 */
export const EXTENSION_QUOTAS = "quotas";
export const EXTENSION_BUDGETS = "budgets";

// Routes of the turn function, relative to its base URL. The patterns
// are net/http.ServeMux wildcards: each {name} is one path segment, a
// SafeId.
/**
 * SubmitPath takes POST client.turn.submit: 200 NDJSON stream, or 202
 * Queued (MultitaskEnqueue).
 */
export const SUBMIT_PATH = "/";
/**
 * StopPath takes POST StopRequest: 202 StopAnswer.
 */
export const STOP_PATH = "/stop";
/**
 * CapabilitiesPath answers GET (and HEAD) with Capabilities, without
 * authentication.
 */
export const CAPABILITIES_PATH = "/capabilities";
/**
 * ResumePath answers GET with the turn's NDJSON stream from
 * ResumeAfterParameter on (docs/durable-turns.md).
 */
export const RESUME_PATH = "/sessions/{sessionId}/turns/{turnId}/stream";
/**
 * ResumeAfterParameter carries the last sequence the reader holds
 * (an integer >= 0); absent, the stream starts with the turn's newest
 * state.
 */
export const RESUME_AFTER_PARAMETER = "after";

// Members turnstream sets in an assistant message's metadata (turnstream
// extensions, docs/approvals.md, docs/reasoning.md). AgentsKit keeps
// metadata verbatim, so they travel in snapshots, history and resumes
// alike.
/**
 * MetadataPendingConfirmations is set on the assistant message of a
 * turn that ended waiting for approval: one PendingConfirmation per
 * call whose toolCalls entry has status requires_confirmation.
 */
export const METADATA_PENDING_CONFIRMATIONS = "pendingConfirmations";
/**
 * MetadataConfirmation is set on the assistant message of a
 * continuation turn (a decision): ConfirmationMetadata. The decided
 * call is the first entry of the message's toolCalls, with its result.
 */
export const METADATA_CONFIRMATION = "confirmation";
/**
 * MetadataReasoning holds the model's reasoning as a string: the
 * reasoning of the turn's model calls joined with a blank line, at
 * most 64 KiB, where AgentsKit's controller keeps a streamed
 * reasoning. Absent when the model did not reason or its definition
 * keeps reasoning from clients.
 */
export const METADATA_REASONING = "reasoning";
/**
 * MetadataWarnings lists what the turn went without (Warning values,
 * in the order they arose): for example an MCP server that could not
 * be listed, whose tools were not offered (docs/mcp.md). Absent when
 * there is none.
 */
export const METADATA_WARNINGS = "warnings";

// Usage periods (the period parameter; UTC days and months).
export const PERIOD_DAY = "day";
export const PERIOD_MONTH = "month";

/**
 * InputPreviewRunes bounds QueuedTurn.InputPreview.
 */
export const INPUT_PREVIEW_RUNES = 120;

/**
 * QueuedStatus is Queued.Status.
 */
export const QUEUED_STATUS = "queued";

/**
 * Response headers.
 */
export const QUOTA_HEADER = "X-Turnstream-Quota";

/**
 * UsagePath is the history function's usage route (docs/quotas.md): GET
 * with the query parameters period ("day", the default, or "month"),
 * scope ("principal", the default, or "tenant"), and for the tenant scope
 * limit (principals a page) and cursor (the previous page's nextCursor).
 * It answers UsageReport, or TenantUsageReport for the tenant scope.
 */
export const USAGE_PATH = "/usage";

/**
 * Warning codes (Warning.Code).
 */
export const WARNING_TOOL_SERVER_UNAVAILABLE = "TOOL_SERVER_UNAVAILABLE";

/**
 * Extensions lists every extension name, in the order a deployment that
 * serves them all lists them.
 */
export const EXTENSIONS = ["snapshotScope", "stop", "lineage", "artifacts", "history", "approvals", "compact", "agui", "resume", "durableTurns", "multitask", "quotas", "budgets"] as const;

/**
 * MultitaskPolicies lists the policies in the order the capabilities list
 * them.
 */
export const MULTITASK_POLICIES = ["reject", "enqueue", "interrupt", "rollback"] as const;

/**
 * SnapshotScopes lists the scopes, the default first.
 */
export const SNAPSHOT_SCOPES = ["session", "turn"] as const;

/**
 * StreamModes lists the stream modes, the default first.
 */
export const STREAM_MODES = ["snapshots", "compact"] as const;

/** MultitaskPolicy is one of MULTITASK_POLICIES. */
export type MultitaskPolicy = (typeof MULTITASK_POLICIES)[number];

/** Extension is one of EXTENSIONS. */
export type Extension = (typeof EXTENSIONS)[number];

/** WireCode is every diagnostic code a turnstream server sends (pkg/protocol's table). */
export type WireCode =
  | "ADAPTER_FAILED"
  | "ARTIFACTS_INVALID"
  | "ASSISTANT_CONTENT_INVALID_RECORD"
  | "ASSISTANT_CONTENT_LIMIT_EXCEEDED"
  | "ASSISTANT_CONTENT_UNSUPPORTED_VERSION"
  | "ATTACHMENT_EXPIRED"
  | "ATTACHMENT_INVALID"
  | "ATTACHMENT_NOT_FOUND"
  | "ATTACHMENT_TOO_LARGE"
  | "ATTACHMENT_TYPE_UNSUPPORTED"
  | "CHAT_TURN_FAILED"
  | "COMPONENT_INVALID_FRAME"
  | "COMPONENT_INVALID_PROPS"
  | "COMPONENT_UNKNOWN"
  | "COMPONENT_UNKNOWN_TYPE"
  | "COMPONENT_UNSUPPORTED_VERSION"
  | "CONFIRMATION_DECIDED"
  | "CONFIRMATION_EXPIRED"
  | "CONFIRMATION_NOT_FOUND"
  | "LIMIT_EXCEEDED"
  | "LINEAGE_INVALID"
  | "MODEL_FAILED"
  | "MULTITASK_NOT_ALLOWED"
  | "PROTOCOL_INVALID_PAYLOAD"
  | "PROTOCOL_UNKNOWN_EVENT"
  | "PROTOCOL_UNSUPPORTED_VERSION"
  | "QUOTA_EXCEEDED"
  | "QUOTA_UNAVAILABLE"
  | "REQUEST_CANCELLED"
  | "REQUEST_FORBIDDEN"
  | "REQUEST_INVALID_BODY"
  | "REQUEST_INVALID_CURSOR"
  | "REQUEST_INVALID_EVENT"
  | "REQUEST_INVALID_HEADER"
  | "REQUEST_INVALID_JSON"
  | "REQUEST_INVALID_QUERY"
  | "REQUEST_METHOD_NOT_ALLOWED"
  | "REQUEST_NOT_FOUND"
  | "REQUEST_TOO_LARGE"
  | "REQUEST_UNAUTHENTICATED"
  | "REQUEST_UNSUPPORTED_MEDIA_TYPE"
  | "SERVER_INTERNAL"
  | "SERVER_INVALID_CONFIG"
  | "SERVER_TIMEOUT"
  | "SESSION_BUSY"
  | "SESSION_CONFLICT"
  | "SESSION_INVALID_SNAPSHOT"
  | "SESSION_NOT_FOUND"
  | "SESSION_QUEUE_FULL"
  | "SESSION_UNSUPPORTED_VERSION"
  | "TURN_ALREADY_COMPLETED"
  | "TURN_CANCELLED"
  | "TURN_ID_REUSED"
  | "TURN_INTERRUPTED"
  | "TURN_LOST"
  | "TURN_NOT_ACTIVE"
  | "TURN_NOT_FOUND"
  | "TURN_NOT_SELECTABLE"
  | "TURN_OUTCOME_INDETERMINATE"
  | "TURN_QUEUE_EXPIRED";

/**
 * SessionSummary is the body of GET /sessions/{id} on the history
 * function (docs/design.md#history-and-artifacts-api). Times are ISO 8601
 * UTC with milliseconds (protocol.FormatTime).
 *
 * 	{"sessionId","definitionId","definitionRevision","cursor","createdAt","updatedAt","currentTurn":CurrentTurn|null,
 * 	 "pendingInteractions":[PendingInteraction...],"queuedTurns":[QueuedTurn...],"session":<agentskit.chat.session v1 envelope>|null}
 */
export interface SessionSummary {
  sessionId: string;
  definitionId: string;
  definitionRevision: number;
  /**
   * Sequence is the last snapshot sequence the session issued (the
   * session envelope's "cursor": a session sequence, not a page cursor).
   */
  cursor: number;
  createdAt: string;
  updatedAt: string;
  /**
   * CurrentTurn is the turn holding the session's lease, nil (null) when
   * the session is idle. The read decides a lease that has expired
   * (docs/durable-turns.md), so an expired one shows only when that
   * could not be done: the turn is then still running, its fate not
   * yet recorded, and ExpiresAt says since when it may be lost.
   */
  currentTurn: CurrentTurn | null;
  /**
   * PendingInteractions are the tool calls waiting for the owner's
   * decision, oldest first, [] when none (docs/approvals.md).
   */
  pendingInteractions: PendingInteraction[];
  /**
   * QueuedTurns are the turns submitted with MultitaskEnqueue that have
   * not started, in the order they will run, [] when none
   * (docs/multitask.md). Only the summary lists them: a queued turn
   * gets its ordinal, which orders /turns and its page cursors, when it
   * starts.
   */
  queuedTurns: QueuedTurn[];
  /**
   * Session is the session as the AgentsKit session envelope
   * agentskit.chat.session v1 (protocol.SessionEnvelope;
   * protocol.DecodeSession reads it), with its confirmations; null only
   * for a session that has no definition id.
   */
  session: JSONValue;
}

/**
 * CurrentTurn is a session's running turn (SessionSummary.CurrentTurn).
 * Status is always "running": a turn being stopped is still running until
 * it ends.
 *
 * 	{"turnId","status":"running","expiresAt":<epoch ms>,"sequence":<n>,"pendingInteractions":[]}
 */
export interface CurrentTurn {
  turnId: string;
  status: "running";
  /**
   * ExpiresAt is the lease expiry in milliseconds since the Unix epoch.
   */
  expiresAt: number;
  /**
   * Sequence is the sequence of the turn's latest checkpoint (the
   * session's last sequence before the turn when none landed yet): a
   * reloaded page renders the turn as /turns shows it and resumes it
   * with GET ResumePath?after=<Sequence>.
   */
  sequence: number;
  /**
   * PendingInteractions is always empty: a running turn never waits; a
   * call that waits for approval ends its turn, and the summary lists it
   * (SessionSummary.PendingInteractions).
   */
  pendingInteractions: PendingInteraction[];
}

/**
 * PendingInteraction is an interaction a session waits for ({interactionId,
 * data}): a tool call awaiting approval. InteractionID is the confirmation
 * token a decision names (the submit payload's confirmation.token).
 */
export interface PendingInteraction {
  interactionId: string;
  data: PendingApproval;
}

/**
 * PendingApproval is the Data of a PendingInteraction: a tool call that
 * waits for its owner's approval (docs/approvals.md).
 *
 * 	{"toolName","args":{...},"toolCallId","turnId","expiresAt":<epoch ms>}
 */
export interface PendingApproval {
  toolName: string;
  /**
   * Args are the call's arguments exactly as the model gave them (a JSON
   * object).
   */
  args: JSONValue;
  toolCallId: string;
  /**
   * TurnID is the turn whose call waits.
   */
  turnId: string;
  /**
   * ExpiresAt is when the call can no longer be decided, in
   * milliseconds since the Unix epoch.
   */
  expiresAt: number;
}

/**
 * QueuedTurn is one turn of SessionSummary.QueuedTurns, waiting to start.
 *
 * 	{"turnId","position":<from 1>,"inputPreview","queuedAt":"<ISO time>","expiresAt":<epoch ms>}
 */
export interface QueuedTurn {
  turnId: string;
  /**
   * Position is its place among the waiting turns, from 1.
   */
  position: number;
  /**
   * InputPreview is the start of the turn's input: at most
   * InputPreviewRunes characters (Unicode code points), "…" appended
   * when cut.
   */
  inputPreview: string;
  queuedAt: string;
  /**
   * ExpiresAt is when the turn, not started by then, is recorded as
   * never run (TURN_QUEUE_EXPIRED), in milliseconds since the Unix epoch.
   */
  expiresAt: number;
}

/**
 * Queued is the 202 answer to a submit the turn function queued
 * (MultitaskEnqueue on a busy session, docs/multitask.md).
 *
 * 	{"sessionId","turnId","status":"queued","position":<from 1>,"streamUrl":"sessions/{sessionId}/turns/{turnId}/stream"}
 */
export interface Queued {
  sessionId: string;
  turnId: string;
  /**
   * Status is always QueuedStatus.
   */
  status: "queued";
  /**
   * Position is the turn's place among the session's waiting turns,
   * from 1, when it was queued.
   */
  position: number;
  /**
   * StreamURL is the turn's resume route (ResumePath) relative to the
   * turn function's base URL, without a leading slash. It sends nothing
   * until the turn starts.
   */
  streamUrl: string;
}

/**
 * StopRequest is the body of POST StopPath: two SafeIds. Keys are matched
 * case-sensitively; a duplicated key, or a key equal to a field's name but
 * for case, is 400 REQUEST_INVALID_BODY; other keys are ignored.
 *
 * 	{"sessionId","turnId"}
 */
export interface StopRequest {
  sessionId: string;
  turnId: string;
}

/**
 * StopAnswer is the 202 answer of POST StopPath.
 *
 * 	{"stopRequested":true} or {"stopRequested":true,"cancelled":true}
 */
export interface StopAnswer {
  /**
   * StopRequested is always true: the running turn's stop flag is set
   * (its stream ends with TURN_INTERRUPTED within about a checkpoint
   * interval), or the queued turn was cancelled.
   */
  stopRequested: true;
  /**
   * Cancelled is true when the turn was queued and had not started: it
   * never runs, and is recorded with TURN_CANCELLED (docs/multitask.md).
   * Omitted when false.
   */
  cancelled?: boolean;
}

/**
 * ErrorBody is every function's JSON error answer
 * (docs/protocol.md#server-handler-behaviour), written by
 * protocol.EncodeErrorBody; the HTTP status is protocol.HTTPStatus of its
 * code and the code's message is fixed (protocol.NewDiagnostic).
 *
 * 	{"error":{"version":1,"code","message","retryable"}}
 */
export interface ErrorBody {
  error: TurnDiagnostic | null;
}

/**
 * UsageCounters are one principal's (or a tenant's) counters of a
 * period, all totals since the period's start: turns, tokens as the
 * models reported them, calls, DynamoDB requests and capacity units.
 *
 * 	{"turns","inputTokens","outputTokens","modelCalls","toolCalls","storeRequests","readUnits","writeUnits","cacheReadTokens","cacheWriteTokens","reasoningTokens"}
 *
 * The ledger's own counters (the server's chat.Counters) encode to
 * exactly these members in this order; pkg/sessionapi's tests check it.
 */
export interface UsageCounters {
  turns: number;
  inputTokens: number;
  outputTokens: number;
  modelCalls: number;
  toolCalls: number;
  storeRequests: number;
  readUnits: number;
  writeUnits: number;
  /**
   * CacheReadTokens and CacheWriteTokens came after the fields above
   * (additive: zero means none reported).
   */
  cacheReadTokens: number;
  cacheWriteTokens: number;
  /**
   * ReasoningTokens are the part of OutputTokens spent reasoning, where
   * the provider reports it apart (docs/reasoning.md); added after them.
   */
  reasoningTokens: number;
}

/**
 * UsageReport is the body of GET UsagePath for the caller's own usage:
 * its counters for the current UTC period and each quota that applies to
 * it, with what is left and when it resets. Times are ISO 8601 UTC with
 * milliseconds. C is the counters' Go type: UsageCounters on the wire,
 * the ledger's counters in the server (they encode alike).
 *
 * 	{"period":"day","start","resetsAt","principal":{"subject","tenant"},"usage":UsageCounters,"limits":[LimitStatus...]}
 */
export interface UsageReport {
  period: "day" | "month";
  /**
   * Start and ResetsAt bound the period: it resets at ResetsAt.
   */
  start: string;
  resetsAt: string;
  principal: UsagePrincipal;
  /**
   * Usage is the caller's counters of the period.
   */
  usage: UsageCounters;
  limits: LimitStatus[];
}

/**
 * UsagePrincipal is a principal in a usage report.
 */
export interface UsagePrincipal {
  subject: string;
  tenant: string;
}

/**
 * LimitStatus is one quota that applies (docs/quotas.md): its scope
 * (principal or tenant) and name (turnsPerMinute, tokensPerDay,
 * tokensPerMonth, concurrentSessions), the limit, what is used and left
 * (in turns, tokens or sessions), and when it resets (turnsPerMinute:
 * when the oldest turn of the window leaves it; tokens: the end of the
 * day or month; concurrentSessions: none). A tenant quota shows used,
 * remaining and resetsAt only to the tenant's trusted principal; absent
 * members are omitted, never null.
 */
export interface LimitStatus {
  scope: string;
  name: string;
  limit: number;
  used?: number;
  remaining?: number;
  resetsAt?: string;
}

/**
 * TenantUsageReport is the body of GET UsagePath?scope=tenant for the
 * tenant's trusted principal: the tenant's totals, activity and quotas
 * (first page only: null after), and one page of its principals'
 * counters of the period, in a stable order. C is as in UsageReport.
 *
 * 	{"period","start","resetsAt","tenant","totals":UsageCounters|null,"activity":TenantActivity|null,
 * 	 "limits":[LimitStatus...],"principals":[PrincipalRow...],"nextCursor":string|null,"hasMore":bool}
 */
export interface TenantUsageReport {
  period: "day" | "month";
  start: string;
  resetsAt: string;
  tenant: string;
  totals: UsageCounters | null;
  activity: TenantActivity | null;
  limits: LimitStatus[];
  principals: PrincipalRow[];
  /**
   * NextCursor is set (and HasMore true) when more principals follow.
   */
  nextCursor: string | null;
  hasMore: boolean;
}

/**
 * TenantActivity is a tenant's turns of the last minute and sessions
 * running a turn now, as admitted under rate and concurrency quotas (zero
 * when none is set).
 */
export interface TenantActivity {
  recentTurns: number;
  runningSessions: number;
}

/**
 * PrincipalRow is one principal of a tenant report.
 */
export interface PrincipalRow {
  principal: UsagePrincipal;
  usage: UsageCounters;
}

/**
 * Capabilities is the body of GET CapabilitiesPath on the turn function
 * (docs/design.md#storage-one-dynamodb-table): the turn protocol versions
 * the deployment speaks and the extensions it serves, so that clients
 * discover them instead of guessing. Durations are in milliseconds (the
 * Ms suffix), sizes in bytes.
 *
 * 	{"protocols":[{"protocol":"agentskit.chat.turn","versions":[1]}],
 * 	 "extensions":["snapshotScope","stop","lineage","artifacts","history","approvals","compact","agui",...,"budgets"],
 * 	 "snapshotScope":{...},"lineage":{...},"stop":{...},"approvals":{...},"compact":{...},"agui":{...},
 * 	 "resume":{...},"durableTurns":{...},"multitask":{...},"quotas":{...},"budgets":{...},"limits":{...}}
 */
export interface Capabilities {
  protocols: ProtocolVersions[];
  /**
   * Extensions are the extension names served (Extensions lists them
   * all).
   */
  extensions: string[];
  snapshotScope: SnapshotScopeCapability;
  lineage: LineageCapability;
  stop: StopCapability;
  approvals: ApprovalsCapability;
  compact: CompactCapability;
  agui: AGUICapability;
  resume: ResumeCapability;
  durableTurns: DurableTurnsCapability;
  /**
   * Multitask is "available": false without checkpoints.
   */
  multitask: MultitaskCapability;
  /**
   * Quotas and Budgets say which limits apply (never anyone's usage).
   */
  quotas: QuotasCapability;
  budgets: BudgetsCapability;
  limits: LimitsCapability;
}

/**
 * ProtocolVersions names a protocol and the versions served of it.
 */
export interface ProtocolVersions {
  protocol: string;
  versions: number[];
}

/**
 * SnapshotScopeCapability describes SnapshotScopeHeader.
 *
 * 	{"header":"X-Turnstream-Snapshot-Scope","values":["session","turn"],"default":"session"}
 */
export interface SnapshotScopeCapability {
  header: string;
  values: string[];
  default: string;
}

/**
 * LineageCapability lists the lineage operations a submit may carry
 * (retry, edit, regenerate).
 */
export interface LineageCapability {
  operations: string[];
}

/**
 * StopCapability is the stop route: {"method":"POST","path":"/stop"}.
 */
export interface StopCapability {
  method: string;
  path: string;
}

/**
 * ApprovalsCapability describes the decision extension of the submit
 * payload (docs/approvals.md): payload.<Field> {token, decision}, a
 * decision one of Decisions, decidable for ConfirmationTTLMs.
 */
export interface ApprovalsCapability {
  field: string;
  decisions: string[];
  confirmationTtlMs: number;
}

/**
 * CompactCapability describes the compact stream (StreamModeHeader,
 * docs/compact.md).
 */
export interface CompactCapability {
  header: string;
  values: string[];
  default: string;
  /**
   * Event is the append lines' event kind (protocol.EventAppend).
   */
  event: string;
  /**
   * IntervalMs is the least time between two writes of text;
   * LineSpanMs the longest an append line stays open.
   */
  intervalMs: number;
  lineSpanMs: number;
  /**
   * Doc names the document that specifies the extension.
   */
  doc: string;
}

/**
 * AGUICapability describes the AG-UI endpoint (docs/agui.md).
 */
export interface AGUICapability {
  available: boolean;
  protocol: string;
  version: string;
  method: string;
  path: string;
  /**
   * Resume is the run's resume route, available with checkpoints on.
   */
  resume: AGUIResumeCapability;
  textGapMs: number;
  doc: string;
}

/**
 * AGUIResumeCapability is an AG-UI run's resume route: Method Path, the
 * position in Header (Last-Event-ID) or the query parameter Parameter.
 * Only Available is sent when it is false.
 */
export interface AGUIResumeCapability {
  available: boolean;
  method?: string;
  path?: string;
  header?: string;
  parameter?: string;
}

/**
 * ResumeCapability is the resume route (ResumePath): Method Path with
 * {sessionId} and {turnId} placeholders, and the query parameter
 * Parameter carrying the last sequence the reader holds. Only Available
 * is sent when it is false (checkpoints off).
 */
export interface ResumeCapability {
  available: boolean;
  method?: string;
  path?: string;
  parameter?: string;
  /**
   * PollIntervalMs is how often a resume reads the turn, and Cost what
   * one read costs.
   */
  pollIntervalMs?: number;
  cost?: string;
}

/**
 * DurableTurnsCapability says whether running turns are checkpointed.
 */
export interface DurableTurnsCapability {
  available: boolean;
  /**
   * CheckpointIntervalMs is how often a running turn looks at its
   * state: it bounds how long a stop takes to be seen.
   */
  checkpointIntervalMs?: number;
  /**
   * CheckpointMinChangeBytes is the least growth a checkpoint waits for
   * (at most 4 intervals; 0: every interval). With CheckpointIntervalMs
   * it bounds what a crash, a resume or a reloaded page loses.
   */
  checkpointMinChangeBytes?: number;
  /**
   * DisconnectStops says whether a client disconnect ends the turn
   * (false with checkpoints: the turn runs on for a resume).
   */
  disconnectStops: boolean;
}

/**
 * MultitaskCapability describes the policies of a submit that finds its
 * session busy (MultitaskHeader, docs/multitask.md#asking-for-a-policy).
 */
export interface MultitaskCapability {
  /**
   * Available is whether a submit may name a policy other than reject.
   */
  available: boolean;
  header: string;
  /**
   * Policies are the policies some definition allows; Default is the
   * default definition's default.
   */
  policies: string[];
  default: string;
  /**
   * Definitions are each definition's own default and policies, by
   * definition id (a session runs its definition's); omitted with one
   * definition.
   */
  definitions?: Record<string, DefinitionPolicies>;
  /**
   * MaxQueuedTurns is how many turns may wait per session;
   * QueuedTurnTTLMs how long one may wait; InterruptWaitMs how long an
   * interrupt waits for the running turn to end.
   */
  maxQueuedTurns: number;
  queuedTurnTtlMs: number;
  interruptWaitMs: number;
  doc: string;
}

/**
 * DefinitionPolicies are one definition's multitask policies.
 */
export interface DefinitionPolicies {
  default: string;
  policies: string[];
}

/**
 * QuotasCapability says which quotas apply (docs/quotas.md), never
 * anyone's usage.
 */
export interface QuotasCapability {
  /**
   * Available is whether the usage ledger is kept: quotas need it.
   */
  available: boolean;
  /**
   * Default are the quotas of the sessions of the default definition,
   * Definitions those of every definition (its own over the
   * deployment-wide default), by id; omitted with one definition.
   */
  default: Quotas;
  definitions?: Record<string, Quotas>;
  /**
   * FailMode is what a check that cannot read the ledger does: "closed"
   * (503 QUOTA_UNAVAILABLE) or "open" (the turn runs unchecked).
   */
  failMode: "closed" | "open";
  /**
   * Usage is where a client reads its usage and what is left.
   */
  usage: UsageRoute;
  codes: QuotaCodes;
  doc: string;
}

/**
 * Quotas are a principal's and its tenant's quotas as the capabilities
 * show them (the server's chat.Quotas encode alike).
 */
export interface Quotas {
  principal: QuotaLimits;
  tenant: QuotaLimits;
}

/**
 * QuotaLimits are the quotas of one scope; an absent one is unlimited.
 */
export interface QuotaLimits {
  turnsPerMinute?: number;
  tokensPerDay?: number;
  tokensPerMonth?: number;
  concurrentSessions?: number;
}

/**
 * UsageRoute names the usage route: {"function":"history","method":"GET","path":"/usage","periods":["day","month"]}.
 */
export interface UsageRoute {
  function: string;
  method: string;
  path: string;
  periods: string[];
}

/**
 * QuotaCodes are the diagnostic codes of the quota extension.
 */
export interface QuotaCodes {
  exceeded: string;
  unavailable: string;
  limit: string;
}

/**
 * BudgetsCapability lists each definition's per-turn budgets.
 */
export interface BudgetsCapability {
  default: TurnBudgets;
  definitions?: Record<string, TurnBudgets>;
  doc: string;
}

/**
 * TurnBudgets are one definition's per-turn budgets; an absent one is
 * unlimited (maxTokens absent: the provider's default per model call).
 */
export interface TurnBudgets {
  maxSteps: number;
  maxTokens?: number;
  maxOutputTokens?: number;
  maxToolCalls?: number;
  maxWallTimeMs?: number;
}

/**
 * LimitsCapability are the deployment's request limits.
 */
export interface LimitsCapability {
  maxBodyBytes: number;
  turnTimeoutMs: number;
  snapshotIntervalMs: number;
  /**
   * SnapshotBytesPerSecond and MaxSnapshotGapMs pace streaming
   * snapshots by size.
   */
  snapshotBytesPerSecond: number;
  maxSnapshotGapMs: number;
}

/**
 * ApprovalMetadata is the part of an assistant message's metadata the
 * approvals extension sets: MetadataPendingConfirmations and
 * MetadataConfirmation, each absent when it does not apply.
 */
export interface ApprovalMetadata {
  pendingConfirmations?: PendingConfirmation[];
  confirmation?: ConfirmationMetadata;
}

/**
 * PendingConfirmation is a tool call a turn left waiting for its owner's
 * decision.
 *
 * 	{"token","toolCallId","action","expiresAt":<epoch ms>}
 */
export interface PendingConfirmation {
  /**
   * Token is what a decision names (the submit payload's
   * confirmation.token; PendingInteraction.InteractionID).
   */
  token: string;
  toolCallId: string;
  /**
   * Action is the tool's name.
   */
  action: string;
  /**
   * ExpiresAt is when the call can no longer be decided, in
   * milliseconds since the Unix epoch.
   */
  expiresAt: number;
}

/**
 * ConfirmationMetadata records a continuation's decision.
 *
 * 	{"token","decision":"approve"|"deny","parentTurnId","toolCallId"}
 */
export interface ConfirmationMetadata {
  token: string;
  /**
   * Decision is protocol.DecisionApprove or protocol.DecisionDeny.
   */
  decision: "approve" | "deny";
  /**
   * ParentTurnID is the turn that asked.
   */
  parentTurnId: string;
  toolCallId: string;
}

/**
 * Warning is one entry of MetadataWarnings.
 *
 * 	{"code","message","server"?}
 */
export interface Warning {
  /**
   * Code is one of the Warning codes.
   */
  code: string;
  /**
   * Message says it in plain words, naming nothing secret.
   */
  message: string;
  /**
   * Server names the tool server, for WarningToolServerUnavailable.
   */
  server?: string;
}

/**
 * SessionList is the body of GET /sessions on the history function: one
 * page of the caller's sessions, most recently active first
 * (docs/conversations.md). NextCursor is null on the last page; with a
 * search (q) a page may hold fewer sessions than its limit, none
 * included, while NextCursor is set.
 *
 * 	{"sessions":[SessionListItem...],"nextCursor":string|null}
 */
export interface SessionList {
  sessions: SessionListItem[];
  nextCursor: string | null;
}

/**
 * SessionListItem is one session of a SessionList, and the body of a
 * PATCH /sessions/{id} answer. Times are ISO 8601 UTC with milliseconds;
 * UpdatedAt is when its last turn ended, or when its first turn started
 * while that one runs (the list's order). A session is listed from its
 * first turn's start; LastTurn is null until a turn of it ended.
 *
 * 	{"sessionId","title":string|null,"createdAt","updatedAt":string|null,"lastTurn":ListedTurn|null}
 */
export interface SessionListItem {
  sessionId: string;
  /**
   * Title is null until the session's first turn ended with a user
   * message to derive it from (cut at a word boundary, at most 60
   * characters) and no one named it.
   */
  title: string | null;
  createdAt: string;
  /**
   * UpdatedAt is null only for a session whose first turn started
   * before sessions were listed from their start.
   */
  updatedAt: string | null;
  lastTurn: ListedTurn | null;
}

/**
 * ListedTurn is the last turn of a listed session: how it ended and the
 * start of its answer as plain text (at most 60 characters, "" when it
 * has none).
 *
 * 	{"status":"complete"|"interrupted"|"error","preview"}
 */
export interface ListedTurn {
  status: "complete" | "interrupted" | "error";
  preview: string;
}

/**
 * RenameRequest is the body of PATCH /sessions/{id}: the session's new
 * title, 1 to 120 characters after trimming spaces, without control,
 * format or other invisible characters (400 REQUEST_INVALID_BODY
 * otherwise).
 *
 * 	{"title"}
 */
export interface RenameRequest {
  title: string;
}

/**
 * Feedback is the owner's rating of a turn's answer: the body of PUT
 * /sessions/{id}/turns/{turnId}/feedback (rating and comment) and its
 * answer, a turn's "feedback" on /turns (null when none), and its
 * assistant message's metadata.feedback on /messages. Comment is at most
 * 1,000 characters (line breaks and tabs kept, no other control or
 * invisible character); CreatedAt is set by the server.
 *
 * 	{"rating":"up"|"down","comment"?,"createdAt"?}
 */
export interface Feedback {
  rating: "up" | "down";
  comment?: string;
  createdAt?: string;
}

/**
 * DeleteProgress is the body of a 202 answer to DELETE /sessions/{id}
 * and of DELETE /principals/{subject}/sessions (docs/conversations.md).
 * Status "deleting" means more remains: send the same request again
 * (each call resumes where the last stopped); "deleted" that nothing is
 * left. Deleted and Busy count sessions in an erase's answer (Busy: those
 * left alone because a turn of theirs is running); both are 0 in a
 * session delete's.
 *
 * 	{"status":"deleting"|"deleted","deleted":n,"busy":n}
 */
export interface DeleteProgress {
  status: "deleting" | "deleted";
  deleted: number;
  busy: number;
}

/**
 * UploadRequest is the body of POST /sessions/{id}/uploads on the
 * artifacts function (docs/attachments.md): the file a person is about to
 * attach, declared before any byte is sent. MediaType is one of the
 * accepted types (attach.MediaTypes), Size the exact size in bytes (1 to
 * the type's limit: 3,932,160 for an image, 4,718,592 for a document),
 * Filename 1-255 bytes of UTF-8 without a path separator, a control or an
 * invisible character.
 *
 * 	{"filename","mediaType","size"}
 */
export interface UploadRequest {
  filename: string;
  mediaType: string;
  size: number;
}

/**
 * UploadTicket is the 201 answer to an UploadRequest: the attachment's id
 * (send it in a submit's "attachments") and the signed form to upload it
 * with. POST to Upload.URL a multipart/form-data body holding every one
 * of Upload.Fields and then the file as the last field, "file"; the
 * storage answers 204. The form expires at ExpiresAt (15 minutes); the
 * attachment must be sent with a turn within a day of it.
 *
 * 	{"attachmentId","upload":{"url","method":"POST","fields":{...}},"expiresAt"}
 */
export interface UploadTicket {
  attachmentId: string;
  upload: UploadForm;
  expiresAt: string;
}

/**
 * UploadForm is a signed browser-based upload form (an S3 presigned
 * POST, or the dev server's equivalent).
 */
export interface UploadForm {
  url: string;
  method: "POST";
  fields: Record<string, string>;
}

/**
 * AttachmentDownload is the body of GET
 * /sessions/{id}/attachments/{attachmentId} on the artifacts function:
 * a signed URL that reads the attachment's bytes until ExpiresAt (5
 * minutes), and what the upload declared. Only the session's owner gets
 * it; for anyone else the attachment does not exist (404).
 *
 * 	{"attachmentId","url","expiresAt","mediaType","filename","size"}
 */
export interface AttachmentDownload {
  attachmentId: string;
  url: string;
  expiresAt: string;
  mediaType: string;
  filename: string;
  size: number;
}

/**
 * Siblings is a turn's sibling group on the wire (docs/branches.md): the
 * turns answered at its place of the conversation, in the order they
 * were created, and the turn's own position among them. It is a turn's
 * "siblings" on /turns and /turns/{turnId}, and its assistant message's
 * metadata.siblings on /messages; absent on a turn without siblings.
 *
 * 	{"index","count","turnIds":[string...]}
 */
export interface Siblings {
  /**
   * Index is the turn's position in TurnIDs, from 0.
   */
  index: number;
  /**
   * Count is len(TurnIDs): 2 to 100.
   */
  count: number;
  turnIds: string[];
}

/**
 * ForkRequest is the body of POST /sessions/{id}/fork: the turn of the
 * session's active branch the new session's history ends with, and
 * optionally the new session's id (a SafeId; the server makes one when it
 * is absent) and title (1 to 120 characters; "Fork of <the source's
 * title>" when absent). The answer is 201 with the new session's
 * SessionListItem.
 *
 * 	{"atTurnId","sessionId"?,"title"?}
 */
export interface ForkRequest {
  atTurnId: string;
  sessionId?: string;
  title?: string;
}
