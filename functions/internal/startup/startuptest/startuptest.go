// Package startuptest helps the functions' tests build a function as its
// main does, on a DynamoDB API server (internal/dynalite), and seed it
// with data through the same store.
package startuptest

import (
	"testing"
	"time"

	"github.com/turnstream/turnstream/functions/internal/startup"
	"github.com/turnstream/turnstream/internal/dynalite"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// Config returns the configuration parsed from env (config.FromLookup)
// plus what names a fresh dynalite table: DYNAMODB_ENDPOINT, TABLE_NAME,
// AWS_REGION and AUTH_MODE dev, unless env sets them. It also returns a
// store on that table as the function builds it (startup.Store), for
// seeding. The test binary must run dynalite.Main.
func Config(tb testing.TB, env map[string]string) (config.Config, chat.Store) {
	tb.Helper()
	opts := dynalite.Options(tb)
	vars := map[string]string{
		"AUTH_MODE": "dev", "TABLE_NAME": dynalite.Table(tb),
		"DYNAMODB_ENDPOINT": opts.Endpoint, "AWS_REGION": opts.Region,
	}
	for k, v := range env {
		vars[k] = v
	}
	cfg, err := config.FromLookup(func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	if err != nil {
		tb.Fatal(err)
	}
	store, err := startup.Store(tb.Context(), cfg, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return cfg, store
}

// SeedTurn claims turn turnID of session sessionID for owner (creating
// the session with definition "default" revision 1) and saves it complete
// with msgs, failing tb at once on an error.
func SeedTurn(tb testing.TB, store chat.Store, sessionID, turnID string, owner chat.Principal, msgs ...protocol.Message) {
	tb.Helper()
	c, err := store.ClaimTurn(tb.Context(), chat.ClaimRequest{
		SessionID: sessionID, TurnID: turnID, Principal: owner, InputHash: chat.HashInput("hi"),
		Lineage: protocol.Lineage{Operation: protocol.OperationSubmit}, DefinitionID: "default",
		DefinitionRevision: 1, LeaseDuration: time.Minute,
	})
	if err != nil {
		tb.Fatal(err)
	}
	now := time.Now()
	if err := store.SaveTurn(tb.Context(), c, &chat.Turn{
		SessionID: sessionID, TurnID: turnID, Ordinal: c.Lease.Ordinal, Status: chat.TurnComplete,
		Lineage: c.Lease.Lineage, InputHash: c.Lease.InputHash, StartedAt: now, CompletedAt: now,
		Messages: msgs,
	}); err != nil {
		tb.Fatal(err)
	}
}
