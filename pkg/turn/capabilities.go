package turn

import (
	"encoding/json"
	"net/http"

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
)

// Capabilities is the body of GET /capabilities (turnstream extension,
// docs/design.md#storage-one-dynamodb-table): the turn protocol versions this
// deployment speaks and the extensions it supports, so clients discover them
// instead of guessing.
//
//	{"protocols":[{"protocol":"agentskit.chat.turn","versions":[1]}],
//	 "extensions":["snapshotScope","stop","lineage","artifacts","history","approvals","compact","agui"],
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
	Limits    struct {
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
func capabilitiesBody(opts Options, multitask multitaskCapability) []byte {
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
