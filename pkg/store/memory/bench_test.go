package memory_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/store/memory"
)

// BenchmarkLifecycle measures one turn's store calls on the memory store:
// claim, load context, save, release. The claim-release sub-benchmark is the
// baseline of the same run (lease bookkeeping only); 16-turn-sessions runs
// each session for 16 turns, so the context load copies 0-15 earlier turns.
func BenchmarkLifecycle(b *testing.B) {
	principal := chat.Principal{Subject: "bench", Tenant: "bench"}
	messages := []protocol.Message{
		{ID: "u", Role: protocol.RoleUser, Content: "What is the weather like today?", Status: protocol.MessageComplete, CreatedAt: "2026-11-29T12:00:00.000Z"},
		{ID: "a", Role: protocol.RoleAssistant, Content: "I cannot look outside, but I can help you find a forecast.", Status: protocol.MessageComplete, CreatedAt: "2026-11-29T12:00:01.000Z"},
	}
	cases := []struct {
		name        string
		turnsPerSes int  // a new session every turnsPerSes turns
		loadAndSave bool // false: claim and release only
	}{
		{"claim-release", 1, false},
		{"claim-load-save-release", 1, true},
		{"16-turn-sessions", 16, true},
	}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			s := memory.New(memory.Options{})
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				sessionID := fmt.Sprintf("s%d", i/bc.turnsPerSes)
				turnID := fmt.Sprintf("t%d", i)
				i++
				c, err := s.ClaimTurn(ctx, chat.ClaimRequest{
					SessionID: sessionID, TurnID: turnID, Principal: principal,
					InputHash: "h", LeaseDuration: 30 * time.Second,
				})
				if err != nil {
					b.Fatal(err)
				}
				if bc.loadAndSave {
					if _, _, err := s.LoadContext(ctx, sessionID, c.Lease.Ordinal, 1000); err != nil {
						b.Fatal(err)
					}
					err := s.SaveTurn(ctx, c, &chat.Turn{
						SessionID: sessionID, TurnID: turnID, Ordinal: c.Lease.Ordinal, Status: chat.TurnComplete,
						Messages: messages, LastSequence: c.BaseSequence + 2, FirstSequence: c.BaseSequence + 1,
					})
					if err != nil {
						b.Fatal(err)
					}
				}
				_, err = s.ReleaseTurn(ctx, chat.ReleaseRequest{Claim: c, Outcome: chat.OutcomeCompleted, Sequence: c.BaseSequence + 2})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
