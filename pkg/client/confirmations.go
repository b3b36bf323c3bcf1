package client

import (
	"encoding/json"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// PendingConfirmation is a tool call an assistant message left waiting for
// the owner's decision (docs/approvals.md#the-waiting-turn): its
// toolCalls entry has status requires_confirmation.
type PendingConfirmation struct {
	// PendingConfirmation is the metadata entry: Token (what
	// Decision.Token names), ToolCallID, Action (the tool's name) and
	// ExpiresAt (epoch milliseconds).
	api.PendingConfirmation
	// Args are the call's arguments, from its toolCalls entry.
	Args json.RawMessage `json:"-"`
}

// PendingConfirmations returns the calls a terminal snapshot's last
// message leaves waiting: the entries of its metadata.pendingConfirmations
// with a SafeId token whose tool call is requires_confirmation, in order;
// none for a message without them. It is a record of what the turn asked;
// the session summary's PendingInteractions says which still wait.
func PendingConfirmations(snapshot *protocol.SnapshotPayload) []PendingConfirmation {
	if snapshot == nil || len(snapshot.Messages) == 0 {
		return nil
	}
	m := snapshot.Messages[len(snapshot.Messages)-1]
	if m.Role != protocol.RoleAssistant || len(m.Metadata) == 0 {
		return nil
	}
	var meta api.ApprovalMetadata
	if json.Unmarshal(m.Metadata, &meta) != nil {
		return nil
	}
	var out []PendingConfirmation
	for _, p := range meta.PendingConfirmations {
		if !protocol.IsSafeID(p.Token) {
			continue
		}
		for _, tc := range m.ToolCalls {
			if tc.ID == p.ToolCallID && tc.Status == protocol.ToolCallRequiresConfirmation {
				out = append(out, PendingConfirmation{PendingConfirmation: p, Args: tc.Args})
			}
		}
	}
	return out
}
