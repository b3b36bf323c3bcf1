package dynamo_test

import (
	"testing"

	"github.com/turnstream/turnstream/internal/dynalite"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
	"github.com/turnstream/turnstream/pkg/store/storetest"
)

// TestContract runs the chat.Store contract suite against the DynamoDB
// store on dynalite (or $DYNAMODB_ENDPOINT), one fresh table per case.
// Cases run in parallel (each has its own table and clock): the time of
// a case is mostly waiting for the server.
func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T, clock *storetest.Clock, cursorKey []byte) chat.Store {
		t.Parallel()
		e := newEnv(t)
		return dynamo.New(e.client, dynamo.Options{Table: e.table, Now: clock.Now, CursorKey: cursorKey, ResolveShare: dynalite.ResolveShare,
			Ledger: chat.LedgerOptions{Enabled: true}})
	})
}
