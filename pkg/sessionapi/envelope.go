package sessionapi

import (
	"encoding/json"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// pendingInteractions lists the session's confirmations still pending and
// unexpired at now, oldest first; [] when none.
func pendingInteractions(sess *chat.Session, now time.Time) []PendingInteraction {
	out := []PendingInteraction{}
	for _, cf := range sess.Confirmations {
		if cf.VisibleStatus(now) != chat.ConfirmationPending {
			continue
		}
		out = append(out, PendingInteraction{InteractionID: cf.Token, Data: PendingApproval{
			ToolName: cf.Action, Args: cf.Input, ToolCallID: cf.ToolCallID, TurnID: cf.TurnID, ExpiresAt: cf.ExpiresAt.UnixMilli(),
		}})
	}
	return out
}

// sessionEnvelope returns the session as the agentskit.chat.session v1
// envelope (protocol.EncodeSession): definition, cursor, the unexpired
// lease as activeTurn, the terminal window and the confirmations with
// their statuses as of now (an expired pending one is "expired"). Of two
// confirmations naming one tool call id, only the newer is kept (the
// envelope requires unique ids). It returns nil when the session cannot
// be encoded (a session created before definitions were recorded).
func sessionEnvelope(sess *chat.Session, now time.Time) json.RawMessage {
	env := protocol.SessionEnvelope{
		SessionID:          sess.ID,
		DefinitionID:       sess.DefinitionID,
		DefinitionRevision: sess.DefinitionRevision,
		UpdatedAt:          protocol.FormatTime(sess.UpdatedAt),
		Sequence:           sess.Sequence,
		TerminalTurns:      make([]protocol.TerminalTurn, 0, len(sess.TerminalTurns)),
		Confirmations:      []protocol.Confirmation{},
	}
	if l := sess.ActiveTurn; l != nil && l.ExpiresAt.After(now) {
		env.ActiveTurn = &protocol.ActiveTurn{TurnID: l.TurnID, ExpiresAt: l.ExpiresAt.UnixMilli()}
	}
	for _, e := range sess.TerminalTurns {
		env.TerminalTurns = append(env.TerminalTurns, protocol.TerminalTurn{TurnID: e.TurnID, Outcome: string(e.Outcome)})
	}
	calls := map[string]bool{}
	for i := len(sess.Confirmations) - 1; i >= 0; i-- { // newest first
		cf := sess.Confirmations[i]
		if calls[cf.ToolCallID] {
			continue
		}
		calls[cf.ToolCallID] = true
		env.Confirmations = append(env.Confirmations, protocol.Confirmation{
			Token: cf.Token, Action: cf.Action, Input: cf.Input, ToolCallID: cf.ToolCallID,
			ExpiresAt: cf.ExpiresAt.UnixMilli(), Status: string(cf.VisibleStatus(now)),
		})
	}
	for i, j := 0, len(env.Confirmations)-1; i < j; i, j = i+1, j-1 { // oldest first again
		env.Confirmations[i], env.Confirmations[j] = env.Confirmations[j], env.Confirmations[i]
	}
	b, err := protocol.EncodeSession(&env)
	if err != nil {
		return nil
	}
	return b
}
