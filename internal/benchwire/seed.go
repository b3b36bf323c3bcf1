package benchwire

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// Principal is the dev-mode principal of Subject.
var Principal = chat.Principal{Subject: Subject, Tenant: auth.DevTenant}

// PriorTurnText is the length of each seeded prior turn's messages.
var PriorTurnText = strings.Repeat("Earlier question and answer of the same session. ", 12)

// SeedTurns writes n completed turns of PriorTurnText into a new session
// through the store's own claim, save and release, with turn ids
// prior-0, prior-1, ...
func SeedTurns(ctx context.Context, store chat.Store, sessionID string, n int) error {
	return SeedTurnsNamed(ctx, store, sessionID, n, func(i int) string { return fmt.Sprintf("prior-%d", i) })
}

// SeedTurnsNamed is SeedTurns with the i-th turn's id from name(i).
func SeedTurnsNamed(ctx context.Context, store chat.Store, sessionID string, n int, name func(int) string) error {
	for i := range n {
		id := name(i)
		c, err := store.ClaimTurn(ctx, chat.ClaimRequest{
			SessionID: sessionID, TurnID: id, Principal: Principal, InputHash: chat.HashInput(PriorTurnText),
			Lineage: protocol.Lineage{Operation: protocol.OperationSubmit}, DefinitionID: "assistant",
			DefinitionRevision: 1, LeaseDuration: time.Minute,
		})
		if err != nil {
			return fmt.Errorf("seed %s: %w", sessionID, err)
		}
		if err := store.SaveTurn(ctx, c, seedTurn(sessionID, id, c.Lease.Ordinal, c.BaseSequence)); err != nil {
			return fmt.Errorf("seed %s: %w", sessionID, err)
		}
		if _, err := store.ReleaseTurn(ctx, chat.ReleaseRequest{Claim: c, Outcome: chat.OutcomeCompleted, Sequence: c.BaseSequence + 1}); err != nil {
			return fmt.Errorf("seed %s: %w", sessionID, err)
		}
	}
	return nil
}

// seedTurn is a completed turn of PriorTurnText's user and assistant
// messages.
func seedTurn(sessionID, turnID string, ordinal, base int64) *chat.Turn {
	now := time.Now()
	at := protocol.FormatTime(now)
	return &chat.Turn{
		SessionID: sessionID, TurnID: turnID, Ordinal: ordinal, Status: chat.TurnComplete,
		Lineage:   protocol.Lineage{Operation: protocol.OperationSubmit},
		InputHash: chat.HashInput(PriorTurnText),
		Messages: []protocol.Message{
			{ID: turnID + "-user", Role: protocol.RoleUser, Content: PriorTurnText, Status: protocol.MessageComplete, CreatedAt: at},
			{ID: turnID + "-assistant", Role: protocol.RoleAssistant, Content: "Echo: " + PriorTurnText, Status: protocol.MessageComplete, CreatedAt: at},
		},
		Usage:         protocol.Usage{PromptTokens: 150, CompletionTokens: 152, TotalTokens: 302},
		FirstSequence: base + 1, LastSequence: base + 1,
		StartedAt: now, CompletedAt: now,
	}
}
