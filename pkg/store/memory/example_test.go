package memory_test

import (
	"context"
	"fmt"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/store/memory"
)

// A turn's life on the memory store: claim the session's lease, save the
// turn, release the lease. A replay of the same turn id is then rejected.
func ExampleNew() {
	ctx := context.Background()
	store := memory.New(memory.Options{})
	alice := chat.Principal{Subject: "alice", Tenant: "acme"}

	claim, err := store.ClaimTurn(ctx, chat.ClaimRequest{
		SessionID: "s1", TurnID: "t1", Principal: alice,
		InputHash: chat.HashInput("hello"), LeaseDuration: 30 * time.Second,
	})
	if err != nil {
		fmt.Println("claim:", err)
		return
	}
	err = store.SaveTurn(ctx, claim, &chat.Turn{
		SessionID: "s1", TurnID: "t1", Ordinal: claim.Lease.Ordinal, Status: chat.TurnComplete,
		FirstSequence: claim.BaseSequence + 1, LastSequence: claim.BaseSequence + 1,
	})
	if err != nil {
		fmt.Println("save:", err)
		return
	}
	_, err = store.ReleaseTurn(ctx, chat.ReleaseRequest{Claim: claim, Outcome: chat.OutcomeCompleted, Sequence: claim.BaseSequence + 1})
	if err != nil {
		fmt.Println("release:", err)
		return
	}

	_, err = store.ClaimTurn(ctx, chat.ClaimRequest{
		SessionID: "s1", TurnID: "t1", Principal: alice,
		InputHash: chat.HashInput("hello"), LeaseDuration: 30 * time.Second,
	})
	fmt.Println("created:", claim.Created, "ordinal:", claim.Lease.Ordinal)
	fmt.Println("replay:", err)
	// Output:
	// created: true ordinal: 1
	// replay: chat: turn already completed
}
