package storetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// Factory returns a fresh, empty store using clock.Now as its clock and
// cursorKey (32 bytes) as the HMAC key of its page cursors
// (chat.CursorCodec), with its usage ledger enabled (chat.LedgerOptions,
// the default retention). Run calls it once per subtest; the factory registers
// any cleanup with t.Cleanup and fails t itself when it cannot build a store.
type Factory func(t *testing.T, clock *Clock, cursorKey []byte) chat.Store

// Run runs the chat.Store contract suite against stores built by newStore.
// Subtests are grouped by area (Claim, Lease, Turns, History, Isolation,
// Artifacts) and named after the rule they prove, so a single rule can be
// run with -run 'Contract/Claim/ConcurrentClaimsOneWinner'. The contract is
// the doc comment of each chat.Store method.
func Run(t *testing.T, newStore Factory) {
	t.Helper()
	groups := []struct {
		name  string
		cases map[string]func(*testing.T, *env)
	}{
		{"Claim", claimCases()},
		{"Lease", leaseCases()},
		{"Turns", turnCases()},
		{"History", historyCases()},
		{"Isolation", isolationCases()},
		{"Artifacts", artifactCases()},
		{"Confirmations", confirmationCases()},
		{"Checkpoints", checkpointCases()},
		{"Fate", fateCases()},
		{"Queue", queueCases()},
		{"Context", contextCases()},
		{"Ledger", ledgerCases()},
		{"Admissions", admissionCases()},
		{"Conversations", conversationCases()},
		{"Delete", deleteCases()},
		{"Attachments", attachmentCases()},
		{"Branches", branchCases()},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			for _, name := range slices.Sorted(maps.Keys(g.cases)) {
				run := g.cases[name]
				t.Run(name, func(t *testing.T) {
					run(t, newEnv(t, newStore))
				})
			}
		})
	}
}

// Fixed inputs of the suite.
var (
	// start is the suite's clock origin, millisecond-aligned as stores keep
	// lease expiry in epoch milliseconds.
	start = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

	alice = chat.Principal{Subject: "alice", Tenant: "acme"}
	// Foreign principals: another subject of the same tenant and the same
	// subject in another tenant are both not alice.
	mallory     = chat.Principal{Subject: "mallory", Tenant: "acme"}
	aliceGlobex = chat.Principal{Subject: "alice", Tenant: "globex"}
	// host is the trusted workspace principal that writes artifact references
	// (docs/design.md#history-and-artifacts-api,
	// docs/design.md#authentication-and-tenancy).
	host = chat.Principal{Subject: "workspace-host", Tenant: "acme", Trusted: true}
)

// leaseDuration is the lease length every suite claim asks for.
const leaseDuration = 30 * time.Second

// env is one subtest's store, clock and cursor key.
type env struct {
	t     *testing.T
	ctx   context.Context
	store chat.Store
	clock *Clock
	key   []byte
}

func newEnv(t *testing.T, newStore Factory) *env {
	t.Helper()
	key := make([]byte, 32)
	for i := range key {
		key[i] = byte(i*7 + 3)
	}
	clock := NewClock(start)
	s := newStore(t, clock, key)
	if s == nil {
		t.Fatal("factory returned a nil store")
	}
	return &env{t: t, ctx: t.Context(), store: s, clock: clock, key: key}
}

// with returns a copy of e that reports to t: env helpers called inside a
// subtest must fail the subtest, not its parent.
func (e *env) with(t *testing.T) *env {
	c := *e
	c.t = t
	return &c
}

// inputOf is the input the suite submits for turnID; claimFor hashes it.
func inputOf(turnID string) string { return "input of " + turnID }

// claimRequest returns alice's claim of turnID in sessionID with the input
// inputOf(turnID).
func claimRequest(sessionID, turnID string) chat.ClaimRequest {
	return chat.ClaimRequest{
		SessionID:          sessionID,
		TurnID:             turnID,
		Principal:          alice,
		InputHash:          chat.HashInput(inputOf(turnID)),
		Lineage:            protocol.Lineage{Operation: protocol.OperationSubmit},
		DefinitionID:       "assistant",
		DefinitionRevision: 1,
		LeaseDuration:      leaseDuration,
	}
}

// claim claims turnID for alice and fails the test on error.
func (e *env) claim(sessionID, turnID string) *chat.Claim {
	e.t.Helper()
	return e.claimWith(claimRequest(sessionID, turnID))
}

// claimWith claims with req and fails the test on error.
func (e *env) claimWith(req chat.ClaimRequest) *chat.Claim {
	e.t.Helper()
	c, err := e.store.ClaimTurn(e.ctx, req)
	if err != nil {
		e.t.Fatalf("ClaimTurn(%s, %s): %v", req.SessionID, req.TurnID, err)
	}
	if c == nil {
		e.t.Fatalf("ClaimTurn(%s, %s) returned a nil claim and no error", req.SessionID, req.TurnID)
	}
	return c
}

// turnFor returns the terminal turn a claim saves: a user message and an
// assistant reply, status complete.
func (e *env) turnFor(c *chat.Claim, sessionID string) *chat.Turn {
	now := e.clock.Now()
	id := c.Lease.TurnID
	return &chat.Turn{
		SessionID: sessionID,
		TurnID:    id,
		Ordinal:   c.Lease.Ordinal,
		Status:    chat.TurnComplete,
		Lineage:   c.Lease.Lineage,
		InputHash: c.Lease.InputHash,
		Messages: []protocol.Message{
			{ID: id + "-user", Role: protocol.RoleUser, Content: inputOf(id), Status: protocol.MessageComplete, CreatedAt: stamp(now)},
			{ID: id + "-assistant", Role: protocol.RoleAssistant, Content: "reply to " + id, Status: protocol.MessageComplete, CreatedAt: stamp(now)},
		},
		Usage: protocol.Usage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7},
		Metered: chat.Usage{InputTokens: 3, OutputTokens: 4, CacheReadTokens: 2, ReasoningTokens: 1, ModelCalls: 1, StoreRequests: 6,
			ReadUnits: 1.5, WriteUnits: 3},
		FirstSequence: c.BaseSequence + 1,
		LastSequence:  c.BaseSequence + 2,
		StartedAt:     now,
		CompletedAt:   now,
	}
}

// save saves t with claim c and fails the test on error.
func (e *env) save(c *chat.Claim, t *chat.Turn) {
	e.t.Helper()
	if err := e.store.SaveTurn(e.ctx, c, t); err != nil {
		e.t.Fatalf("SaveTurn(%s, %s): %v", t.SessionID, t.TurnID, err)
	}
}

// forged returns a copy of c with another lease token: what a caller
// holding a stale or made-up token would pass.
func forged(c *chat.Claim, token string) *chat.Claim {
	f := *c
	f.Lease.Token = token
	return &f
}

// release releases a claim with outcome and sequence, failing the test on error.
func (e *env) release(sessionID string, c *chat.Claim, outcome chat.TerminalOutcome, sequence int64) {
	e.t.Helper()
	_, err := e.store.ReleaseTurn(e.ctx, chat.ReleaseRequest{Claim: c, Outcome: outcome, Sequence: sequence})
	if err != nil {
		e.t.Fatalf("ReleaseTurn(%s, %s): %v", sessionID, c.Lease.TurnID, err)
	}
}

// completeTurn runs a full turn of alice: claim, save (two snapshots:
// cursor base+2), release as completed. It returns the saved turn.
func (e *env) completeTurn(sessionID, turnID string) *chat.Turn {
	e.t.Helper()
	c := e.claim(sessionID, turnID)
	turn := e.turnFor(c, sessionID)
	e.save(c, turn)
	e.release(sessionID, c, chat.OutcomeCompleted, turn.LastSequence)
	return turn
}

// completeTurns runs n full turns named prefix000, prefix001, ... and
// returns them in order.
func (e *env) completeTurns(sessionID, prefix string, n int) []*chat.Turn {
	e.t.Helper()
	out := make([]*chat.Turn, n)
	for i := range n {
		out[i] = e.completeTurn(sessionID, fmt.Sprintf("%s%03d", prefix, i))
	}
	return out
}

// session reads sessionID as alice and fails the test on error.
func (e *env) session(sessionID string) *chat.Session {
	e.t.Helper()
	s, err := e.store.GetSession(e.ctx, sessionID, alice)
	if err != nil {
		e.t.Fatalf("GetSession(%s): %v", sessionID, err)
	}
	return s
}

// find reads turnID as alice and fails the test on error.
func (e *env) find(sessionID, turnID string) *chat.Turn {
	e.t.Helper()
	t, err := e.store.FindTurn(e.ctx, sessionID, turnID, alice)
	if err != nil {
		e.t.Fatalf("FindTurn(%s, %s): %v", sessionID, turnID, err)
	}
	return t
}

// stamp formats t as a canonical message createdAt
// (docs/protocol.md#the-canonical-message-record).
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// wantErr fails the test unless errors.Is(err, want).
func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: got error %v, want %v", what, err, want)
	}
}

// wantTurn fails the test unless got equals want field by field; times are
// compared as instants, and empty and nil slices are the same.
func wantTurn(t *testing.T, what string, got, want *chat.Turn) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s: got nil turn", what)
	}
	g, w := normalizeTurn(*got), normalizeTurn(*want)
	if reflect.DeepEqual(g, w) {
		return
	}
	gv, wv := reflect.ValueOf(g), reflect.ValueOf(w)
	for i := range gv.NumField() {
		if !reflect.DeepEqual(gv.Field(i).Interface(), wv.Field(i).Interface()) {
			t.Errorf("%s: field %s differs:\n got  %s\n want %s", what, gv.Type().Field(i).Name,
				abbrev(gv.Field(i).Interface()), abbrev(wv.Field(i).Interface()))
		}
	}
	t.FailNow()
}

// abbrev formats v for a failure message, cut to 300 characters so that a
// 1 MiB turn does not flood the log.
func abbrev(v any) string {
	s := fmt.Sprintf("%+v", v)
	if len(s) > 300 {
		return fmt.Sprintf("%s... (%d bytes)", s[:300], len(s))
	}
	return s
}

func normalizeTurn(t chat.Turn) chat.Turn {
	// A running turn's lease expiry and checkpoint head are the readers'
	// (checked where they matter), not part of what was saved.
	t.LeaseExpiresAt, t.Head = time.Time{}, 0
	t.StartedAt = t.StartedAt.UTC()
	t.CompletedAt = t.CompletedAt.UTC()
	if len(t.Artifacts) == 0 {
		t.Artifacts = nil
	}
	if len(t.Messages) == 0 {
		t.Messages = nil
	}
	msgs := make([]protocol.Message, len(t.Messages))
	for i, m := range t.Messages {
		if len(m.Parts) == 0 {
			m.Parts = nil
		}
		if len(m.ToolCalls) == 0 {
			m.ToolCalls = nil
		}
		if len(m.Metadata) == 0 {
			m.Metadata = nil
		}
		msgs[i] = m
	}
	if t.Messages != nil {
		t.Messages = msgs
	}
	return t
}

// turnIDs returns the turn ids of turns, in order.
func turnIDs(turns []chat.Turn) []string {
	ids := make([]string, len(turns))
	for i, t := range turns {
		ids[i] = t.TurnID
	}
	return ids
}

// pageTurns returns the turns of page, nil for a nil page.
func pageTurns(page *chat.Page) []chat.Turn {
	if page == nil {
		return nil
	}
	return page.Turns
}
