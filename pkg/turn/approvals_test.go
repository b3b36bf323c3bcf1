package turn_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/ddbfault"
	"github.com/turnstream/turnstream/internal/mcptest"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/clock"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/definition"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
	"github.com/turnstream/turnstream/pkg/tool"
	"github.com/turnstream/turnstream/pkg/tool/mcp"
	"github.com/turnstream/turnstream/pkg/turn"
)

// deleteArgs are the arguments the approval tests' model gives note_delete.
const deleteArgs = `{"title":"Trip plan"}`

// approvalEnv serves a definition offering workspace_note and "note_delete"
// (which requires approval and counts its runs in *runs). Its model asks
// for note_delete in its first call and answers "Done." to every later
// call.
func approvalEnv(t *testing.T, store chat.Store, runs *atomic.Int32, opt func(*turn.Options)) (*env, *approvalModel) {
	t.Helper()
	return approvalEnvWith(t, store, runs, false, opt)
}

// approvalEnvWith is approvalEnv, with the tool that requires approval
// served by an MCP server "note" (its tool "delete", offered as
// "note__delete", requireApproval ["delete"]) when remote is set.
func approvalEnvWith(t *testing.T, store chat.Store, runs *atomic.Int32, remote bool, opt func(*turn.Options)) (*env, *approvalModel) {
	t.Helper()
	deleted := func() string {
		runs.Add(1)
		return "Deleted."
	}
	reg := tool.NewRegistry(nil)
	def := definition.Definition{ID: "agent", Revision: 1, Provider: config.ProviderEcho, Limits: definition.Limits{MaxSteps: 4}}
	var sources map[string][]tool.Source
	name := "note_delete"
	if remote {
		srv := mcptest.Start(t, mcptest.Options{})
		srv.AddToolFunc("delete", deleted)
		server := definition.MCPServer{Name: "note", URL: srv.URL, AllowedTools: []string{"delete"},
			Approval: definition.MCPApproval{Tools: []string{"delete"}}, Timeout: definition.DefaultMCPTimeout}
		def.MCPServers = []definition.MCPServer{server}
		sources = map[string][]tool.Source{"agent": {mcp.New(server, mcp.Options{Logger: quietLog})}}
		name = "note__delete"
	} else {
		def.ApprovalTools = []string{"note_delete"}
		if err := reg.Register(tool.Tool{
			Name: "note_delete", Description: "Deletes a note.", InputSchema: json.RawMessage(`{"type":"object"}`),
			Call: func(context.Context, json.RawMessage) (tool.Result, error) { return tool.Result{Text: deleted()}, nil },
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := reg.Register(tool.WorkspaceNote()); err != nil {
		t.Fatal(err)
	}
	def.Tools = []string{tool.WorkspaceNoteName}
	if !remote {
		def.Tools = append(def.Tools, "note_delete")
	}
	res, err := definition.New([]definition.Definition{def}, "agent", reg.Has)
	if err != nil {
		t.Fatal(err)
	}
	m := &approvalModel{tool: name}
	e := newEnv(t, store, &scriptModel{}, func(o *turn.Options) {
		o.Model, o.Definition = nil, turn.Definition{}
		o.Definitions, o.Tools, o.ToolSources = res, reg, sources
		o.Models = map[string]model.Model{config.ProviderEcho: m}
		if opt != nil {
			opt(o)
		}
	})
	e.deleteTool = name
	return e, m
}

// forEachApproval runs f on each store, with the tool that requires
// approval local and served by an MCP server (approvalEnvWith).
func forEachApproval(t *testing.T, f func(t *testing.T, newStore func(testing.TB) chat.Store, remote bool)) {
	t.Helper()
	for _, remote := range []bool{false, true} {
		t.Run(map[bool]string{false: "local", true: "mcp"}[remote], func(t *testing.T) {
			forEachStore(t, func(t *testing.T, newStore func(testing.TB) chat.Store) { f(t, newStore, remote) })
		})
	}
}

// askInput is the input that makes approvalModel ask for note_delete.
const askInput = "Delete my trip plan."

// approvalModel asks for its tool (note_delete or note__delete, call id
// c1) when the last user message is askInput and no tool result follows
// it, and otherwise answers "Done.". It records every request.
type approvalModel struct {
	tool string
	mu   sync.Mutex
	reqs []model.Request
}

func (m *approvalModel) Stream(ctx context.Context, req model.Request) (model.Stream, error) {
	m.mu.Lock()
	m.reqs = append(m.reqs, req)
	m.mu.Unlock()
	msgs := req.Messages
	ask := len(msgs) > 0 && msgs[len(msgs)-1].Role == protocol.RoleUser && msgs[len(msgs)-1].Content == askInput
	if ask {
		return &eventStream{ctx: ctx, evs: []model.Event{callEvent("c1", m.tool, deleteArgs)}}, nil
	}
	return &eventStream{ctx: ctx, evs: []model.Event{{TextDelta: "Done."}, usageEvent(2, 1)}}, nil
}

func (m *approvalModel) requests() []model.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]model.Request(nil), m.reqs...)
}

// decisionBody encodes a decision turn on token.
func decisionBody(tb testing.TB, sessionID, turnID, input, token, decision string) []byte {
	tb.Helper()
	b, err := protocol.EncodeEvent(&protocol.Event{
		EventID: "ev-decide", SessionID: sessionID, TurnID: turnID, EmittedAt: "2026-07-11T03:00:00.000Z", Kind: protocol.EventSubmit,
		Submit: &protocol.SubmitPayload{Input: input, Confirmation: &protocol.SubmitConfirmation{Token: token, Decision: decision}},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// decide posts a decision turn and reads the response.
func (e *env) decide(tb testing.TB, sessionID, turnID, token, decision string, hdr map[string]string) result {
	tb.Helper()
	return readResult(tb, e.post(tb, context.Background(), "/", decisionBody(tb, sessionID, turnID, "label: "+decision, token, decision), hdr))
}

// askDelete runs turn turnID, which ends waiting for approval of
// e's delete tool, checks its terminal snapshot and returns the token.
func askDelete(t *testing.T, e *env, sessionID, turnID string) string {
	t.Helper()
	r := e.submit(t, sessionID, turnID, askInput, nil, nil)
	r.want(t, http.StatusOK, "")
	term := r.terminal(t)
	asst := term.Messages[len(term.Messages)-1]
	if term.Status != protocol.StatusComplete || asst.Status != protocol.MessageComplete || len(asst.ToolCalls) != 1 {
		t.Fatalf("terminal snapshot %+v", term)
	}
	tc := asst.ToolCalls[0]
	if tc.ID != "c1" || tc.Name != e.deleteTool || tc.Status != protocol.ToolCallRequiresConfirmation || tc.Result != nil || tc.Error != nil ||
		string(tc.Args) != deleteArgs {
		t.Fatalf("waiting call %+v", tc)
	}
	var meta struct {
		Pending []struct {
			Token, ToolCallID, Action string
			ExpiresAt                 int64
		} `json:"pendingConfirmations"`
	}
	if err := json.Unmarshal(asst.Metadata, &meta); err != nil || len(meta.Pending) != 1 {
		t.Fatalf("metadata %s: %v", asst.Metadata, err)
	}
	p := meta.Pending[0]
	if !chat.IsConfirmationToken(p.Token) || p.ToolCallID != "c1" || p.Action != e.deleteTool {
		t.Fatalf("pending confirmation %+v", p)
	}
	s, err := e.store.GetSession(context.Background(), sessionID, alice)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Confirmations) == 0 {
		t.Fatal("no confirmation stored")
	}
	cf := s.Confirmations[len(s.Confirmations)-1]
	if cf.Token != p.Token || cf.Status != chat.ConfirmationPending || cf.Action != e.deleteTool || cf.ToolCallID != "c1" ||
		cf.TurnID != turnID || string(cf.Input) != deleteArgs || cf.ExpiresAt.UnixMilli() != p.ExpiresAt {
		t.Fatalf("stored confirmation %+v, metadata %+v", cf, p)
	}
	return p.Token
}

// storedConfirmation returns the stored status of token.
func storedConfirmation(t *testing.T, store chat.Store, sessionID, token string) chat.Confirmation {
	t.Helper()
	s, err := store.GetSession(context.Background(), sessionID, alice)
	if err != nil {
		t.Fatal(err)
	}
	i := chat.FindConfirmation(s.Confirmations, token)
	if i < 0 {
		t.Fatalf("no confirmation %s", token)
	}
	return s.Confirmations[i]
}

// TestApprove: the call waits; an approval runs it exactly once in a
// continuation turn that then continues the model loop; the decision
// replayed (same turn id) or repeated (another turn id) runs nothing; the
// continuation's snapshot and history agree.
func TestApprove(t *testing.T) {
	forEachApproval(t, func(t *testing.T, newStore func(testing.TB) chat.Store, remote bool) {
		var runs atomic.Int32
		store := newStore(t)
		e, m := approvalEnvWith(t, store, &runs, remote, nil)
		token := askDelete(t, e, "s", "t1")
		if runs.Load() != 0 {
			t.Fatal("the tool ran before approval")
		}

		r := e.decide(t, "s", "t2", token, protocol.DecisionApprove, nil)
		r.want(t, http.StatusOK, "")
		term := r.terminal(t)
		asst := term.Messages[len(term.Messages)-1]
		if term.Status != protocol.StatusComplete || asst.Content != "Done." || len(asst.ToolCalls) != 1 {
			t.Fatalf("continuation terminal %+v", term)
		}
		if tc := asst.ToolCalls[0]; tc.ID != "c1" || tc.Status != protocol.ToolCallComplete || tc.Result == nil || *tc.Result != "Deleted." {
			t.Fatalf("decided call %+v", tc)
		}
		var meta struct {
			Confirmation struct{ Token, Decision, ParentTurnID, ToolCallID string } `json:"confirmation"`
		}
		if err := json.Unmarshal(asst.Metadata, &meta); err != nil || meta.Confirmation.Token != token ||
			meta.Confirmation.Decision != "approve" || meta.Confirmation.ParentTurnID != "t1" || meta.Confirmation.ToolCallID != "c1" {
			t.Fatalf("continuation metadata %s", asst.Metadata)
		}
		if n := runs.Load(); n != 1 {
			t.Fatalf("tool ran %d times, want once", n)
		}
		// The model read the call where it asked for it, answered, then
		// the label.
		reqs := m.requests()
		last := reqs[len(reqs)-1].Messages
		if n := len(last); n < 4 || last[n-1].Role != protocol.RoleUser || last[n-1].Content != "label: approve" ||
			last[n-2].Role != protocol.RoleTool || last[n-2].Content != "Deleted." {
			t.Fatalf("continuation model messages %s", messagesJSON(t, last))
		}
		if cf := storedConfirmation(t, store, "s", token); cf.Status != chat.ConfirmationApproved || cf.DecidedBy != "t2" {
			t.Fatalf("stored %+v, want approved by t2", cf)
		}
		stored, err := store.FindTurn(context.Background(), "s", "t2", alice)
		if err != nil || messagesJSON(t, stored.Messages) != messagesJSON(t, term.Messages[len(term.Messages)-2:]) {
			t.Fatalf("history of t2 differs from its terminal snapshot: %v", err)
		}

		e.decide(t, "s", "t2", token, protocol.DecisionApprove, nil).want(t, http.StatusConflict, protocol.CodeTurnAlreadyCompleted)
		e.decide(t, "s", "t2", token, protocol.DecisionDeny, nil).want(t, http.StatusUnprocessableEntity, protocol.CodeTurnIDReused)
		e.decide(t, "s", "t3", token, protocol.DecisionApprove, nil).want(t, http.StatusConflict, protocol.CodeConfirmationDecided)
		if n := runs.Load(); n != 1 {
			t.Fatalf("tool ran %d times after replays, want once", n)
		}
		// A later turn's model context shows the call once, decided.
		e.submit(t, "s", "t4", "Thanks.", nil, nil).want(t, http.StatusOK, "")
		reqs = m.requests()
		results := 0
		for _, msg := range reqs[len(reqs)-1].Messages {
			if msg.Role == protocol.RoleTool {
				results++
				if msg.Content != "Deleted." {
					t.Errorf("later context tool result %q", msg.Content)
				}
			}
		}
		if results != 1 {
			t.Errorf("later context has %d tool results, want 1: %s", results, messagesJSON(t, reqs[len(reqs)-1].Messages))
		}
	})
}

// TestDeny: a denied call never runs; the model reads TextDenied and
// continues.
func TestDeny(t *testing.T) {
	forEachApproval(t, func(t *testing.T, newStore func(testing.TB) chat.Store, remote bool) {
		var runs atomic.Int32
		store := newStore(t)
		e, m := approvalEnvWith(t, store, &runs, remote, nil)
		token := askDelete(t, e, "s", "t1")
		r := e.decide(t, "s", "t2", token, protocol.DecisionDeny, nil)
		r.want(t, http.StatusOK, "")
		term := r.terminal(t)
		asst := term.Messages[len(term.Messages)-1]
		if tc := asst.ToolCalls[0]; tc.Status != protocol.ToolCallError || tc.Error == nil || *tc.Error != turn.TextDenied || asst.Content != "Done." {
			t.Fatalf("denied continuation %+v", asst)
		}
		if runs.Load() != 0 {
			t.Fatal("a denied tool ran")
		}
		reqs := m.requests()
		last := reqs[len(reqs)-1].Messages
		if n := len(last); last[n-2].Role != protocol.RoleTool || last[n-2].Content != turn.TextDenied {
			t.Fatalf("model messages %s", messagesJSON(t, last))
		}
		if cf := storedConfirmation(t, store, "s", token); cf.Status != chat.ConfirmationRejected {
			t.Fatalf("stored %+v, want rejected", cf)
		}
		e.decide(t, "s", "t3", token, protocol.DecisionApprove, nil).want(t, http.StatusConflict, protocol.CodeConfirmationDecided)
		if runs.Load() != 0 {
			t.Fatal("a denied tool ran on a second decision")
		}
	})
}

// TestBadDecisions: every bad decision is a typed error and changes
// nothing; a plain submit supersedes the pending confirmation.
func TestBadDecisions(t *testing.T) {
	forEachApproval(t, func(t *testing.T, newStore func(testing.TB) chat.Store, remote bool) {
		var runs atomic.Int32
		store := newStore(t)
		e, _ := approvalEnvWith(t, store, &runs, remote, func(o *turn.Options) { o.ConfirmationTTL = time.Hour })
		token := askDelete(t, e, "s", "t1")
		other := askDelete(t, e, "s2", "u1")
		e.decide(t, "s", "d1", chat.NewConfirmationToken(), protocol.DecisionApprove, nil).want(t, http.StatusNotFound, protocol.CodeConfirmationNotFound)
		e.decide(t, "s", "d2", "cf.bad", protocol.DecisionApprove, nil).want(t, http.StatusNotFound, protocol.CodeConfirmationNotFound)
		e.decide(t, "s", "d3", other, protocol.DecisionApprove, nil).want(t, http.StatusNotFound, protocol.CodeConfirmationNotFound)
		e.decide(t, "s", "d4", token, protocol.DecisionApprove, map[string]string{"X-Test-Subject": "mallory"}).
			want(t, http.StatusNotFound, protocol.CodeSessionNotFound)
		e.decide(t, "nosuch", "d5", token, protocol.DecisionApprove, nil).want(t, http.StatusNotFound, protocol.CodeConfirmationNotFound)
		bad := decisionBody(t, "s", "d6", "ok", token, protocol.DecisionApprove)
		bad = []byte(string(bad[:len(bad)-len(`"approve"}}}`)]) + `"maybe"}}}`)
		readResult(t, e.post(t, context.Background(), "/", bad, nil)).want(t, http.StatusBadRequest, protocol.CodeRequestInvalidEvent)
		if cf := storedConfirmation(t, store, "s", token); cf.Status != chat.ConfirmationPending || cf.DecidedBy != "" {
			t.Fatalf("after bad decisions %+v, want pending", cf)
		}
		// Policy: a plain submit while a call waits supersedes it.
		e.submit(t, "s", "t2", "Never mind.", nil, nil).want(t, http.StatusOK, "")
		if cf := storedConfirmation(t, store, "s", token); cf.Status != chat.ConfirmationExpired {
			t.Fatalf("after a plain turn %+v, want expired", cf)
		}
		e.decide(t, "s", "d7", token, protocol.DecisionApprove, nil).want(t, http.StatusGone, protocol.CodeConfirmationExpired)
		if runs.Load() != 0 {
			t.Fatal("the tool ran")
		}
	})
}

// TestDecisionExpired: a decision after CONFIRMATION_TTL is 410
// CONFIRMATION_EXPIRED and runs nothing, at the very instant it expires.
// The handler and the store share a fake clock.
func TestDecisionExpired(t *testing.T) {
	for _, remote := range []bool{false, true} {
		t.Run(map[bool]string{false: "local", true: "mcp"}[remote], func(t *testing.T) {
			fake := clock.NewFake(time.Now())
			forEachStoreAt(t, fake.Now, func(t *testing.T, newStore func(testing.TB) chat.Store) {
				var runs atomic.Int32
				store := newStore(t)
				e, _ := approvalEnvWith(t, store, &runs, remote, func(o *turn.Options) {
					o.ConfirmationTTL = time.Minute
					o.Clock = fake
				})
				token := askDelete(t, e, "s", "t1")
				cf := storedConfirmation(t, store, "s", token)
				if left := cf.ExpiresAt.Sub(fake.Now()); left <= 0 || left > time.Minute {
					t.Fatalf("the confirmation expires in %v, want within the TTL (a minute)", left)
				}
				fake.Set(cf.ExpiresAt)
				e.decide(t, "s", "t2", token, protocol.DecisionApprove, nil).want(t, http.StatusGone, protocol.CodeConfirmationExpired)
				if runs.Load() != 0 {
					t.Fatal("an expired confirmation ran its tool")
				}
			})
		})
	}
}

// TestConcurrentPlainAndDecision: a plain submit and a decision racing:
// one claims, the other is SESSION_BUSY; the tool runs at most once and
// only if the decision won.
func TestConcurrentPlainAndDecision(t *testing.T) {
	forEachApproval(t, func(t *testing.T, newStore func(testing.TB) chat.Store, remote bool) {
		var runs atomic.Int32
		store := newStore(t)
		e, _ := approvalEnvWith(t, store, &runs, remote, nil)
		token := askDelete(t, e, "s", "t1")
		var plain, decision result
		var wg sync.WaitGroup
		wg.Go(func() { plain = e.submit(t, "s", "p2", "Something else.", nil, nil) })
		wg.Go(func() { decision = e.decide(t, "s", "d2", token, protocol.DecisionApprove, nil) })
		wg.Wait()
		cf := storedConfirmation(t, store, "s", token)
		switch {
		case decision.status == http.StatusOK && plain.status == http.StatusOK:
			// Serialised: the later one saw the earlier one's release.
			if cf.Status == chat.ConfirmationApproved && runs.Load() != 1 || cf.Status == chat.ConfirmationExpired && runs.Load() != 0 {
				t.Fatalf("confirmation %s, tool ran %d times", cf.Status, runs.Load())
			}
		case decision.status == http.StatusOK:
			plain.want(t, http.StatusConflict, protocol.CodeSessionBusy)
			if cf.Status != chat.ConfirmationApproved || runs.Load() != 1 {
				t.Fatalf("decision won: confirmation %s, tool ran %d times", cf.Status, runs.Load())
			}
		case plain.status == http.StatusOK:
			if decision.errD.Code != protocol.CodeSessionBusy && decision.errD.Code != protocol.CodeConfirmationExpired {
				t.Fatalf("decision lost with %s", decision.raw)
			}
			if cf.Status != chat.ConfirmationExpired || runs.Load() != 0 {
				t.Fatalf("plain won: confirmation %s, tool ran %d times", cf.Status, runs.Load())
			}
		default:
			t.Fatalf("neither won: %s / %s", plain.raw, decision.raw)
		}
	})
}

// TestDecisionClaimAnswerLost: the decision's claim applied but its
// answer was lost (the SDK retries; the retry's condition fails) or was a
// 500: the continuation runs, and the tool runs exactly once.
func TestDecisionClaimAnswerLost(t *testing.T) {
	for _, c := range []struct {
		fault  ddbfault.Fault
		remote bool
	}{{ddbfault.LoseAnswer, false}, {ddbfault.ServerErrorAfter, false}, {ddbfault.LoseAnswer, true}, {ddbfault.ServerErrorAfter, true}} {
		fault := c.fault
		t.Run(fault.String()+map[bool]string{false: "", true: "/mcp"}[c.remote], func(t *testing.T) {
			store, ft := newFaultStore(t)
			var runs atomic.Int32
			e, _ := approvalEnvWith(t, store, &runs, c.remote, nil)
			token := askDelete(t, e, "s", "t1")
			ft.Reset()
			ft.SetRule(ddbfault.Once(fault, ddbfault.For("UpdateItem", dynamo.PurposeClaim)))
			r := e.decide(t, "s", "t2", token, protocol.DecisionApprove, nil)
			r.want(t, http.StatusOK, "")
			if ft.Counts()[fault] != 1 {
				t.Fatal("no fault was injected")
			}
			ft.SetRule(nil)
			if r.terminal(t).Status != protocol.StatusComplete || runs.Load() != 1 {
				t.Fatalf("tool ran %d times; stream %s", runs.Load(), r.raw)
			}
			e.decide(t, "s", "t2", token, protocol.DecisionApprove, nil).want(t, http.StatusConflict, protocol.CodeTurnAlreadyCompleted)
			if runs.Load() != 1 {
				t.Fatalf("tool ran %d times after the client's retry", runs.Load())
			}
		})
	}
}

// loadFailingStore fails LoadContext while fail is set.
type loadFailingStore struct {
	chat.Store
	fail atomic.Bool
}

func (s *loadFailingStore) LoadContext(ctx context.Context, id string, before int64, maxTurns int) ([]chat.Turn, bool, error) {
	if s.fail.Load() {
		return nil, false, errors.New("injected context load failure")
	}
	return s.Store.LoadContext(ctx, id, before, maxTurns)
}

// TestDecisionGivenBackBeforeStream: a decision turn that fails before
// its stream (here its context load) never ran the tool, so its release
// gives the decision back: the confirmation is pending again and a new
// decision runs the tool once. Its claim decided the confirmation, so it
// cannot be withdrawn: the failure is its record, and the answer says its
// id is spent (409 TURN_ALREADY_COMPLETED, not retryable).
func TestDecisionGivenBackBeforeStream(t *testing.T) {
	forEachApproval(t, func(t *testing.T, newStore func(testing.TB) chat.Store, remote bool) {
		var runs atomic.Int32
		store := &loadFailingStore{Store: newStore(t)}
		e, _ := approvalEnvWith(t, store, &runs, remote, nil)
		token := askDelete(t, e, "s", "t1")
		store.fail.Store(true)
		e.decide(t, "s", "t2", token, protocol.DecisionApprove, nil).want(t, http.StatusConflict, protocol.CodeTurnAlreadyCompleted)
		store.fail.Store(false)
		if cf := storedConfirmation(t, store, "s", token); cf.Status != chat.ConfirmationPending || runs.Load() != 0 {
			t.Fatalf("after a failed decision turn: %+v, tool ran %d times", cf, runs.Load())
		}
		e.decide(t, "s", "t3", token, protocol.DecisionApprove, nil).want(t, http.StatusOK, "")
		if cf := storedConfirmation(t, store, "s", token); cf.Status != chat.ConfirmationApproved || cf.DecidedBy != "t3" || runs.Load() != 1 {
			t.Fatalf("after the second decision: %+v, tool ran %d times", cf, runs.Load())
		}
	})
}

// TestContinuationResumeAgrees: with checkpoints on, the continuation's
// terminal snapshot, its history record and a resume of it after it
// ended show the same messages, the decided call included; a resume of
// the waiting turn shows the call waiting.
func TestContinuationResumeAgrees(t *testing.T) {
	forEachApproval(t, func(t *testing.T, newStore func(testing.TB) chat.Store, remote bool) {
		var runs atomic.Int32
		store := newStore(t)
		e, _ := approvalEnvWith(t, store, &runs, remote, func(o *turn.Options) { o.CheckpointInterval = 100 * time.Millisecond })
		token := askDelete(t, e, "s", "t1")
		r := e.decide(t, "s", "t2", token, protocol.DecisionApprove, nil)
		r.want(t, http.StatusOK, "")
		term := r.terminal(t)
		status, evs, raw := e.resume(t, "s", "t2", "?after=0", nil)
		if status != http.StatusOK || len(evs) == 0 {
			t.Fatalf("resume: %d %s", status, raw)
		}
		var resumed *protocol.SnapshotPayload
		for _, ev := range evs {
			if ev.Kind == protocol.EventSnapshot {
				resumed = ev.Snapshot
			}
		}
		if resumed == nil || resumed.Status != protocol.StatusComplete || messagesJSON(t, resumed.Messages) != messagesJSON(t, term.Messages) {
			t.Fatalf("resumed %s\nlive terminal %s", raw, messagesJSON(t, term.Messages))
		}
		stored, err := store.FindTurn(context.Background(), "s", "t2", alice)
		if err != nil || messagesJSON(t, stored.Messages) != messagesJSON(t, term.Messages[len(term.Messages)-2:]) {
			t.Fatalf("history differs: %v", err)
		}
		status, evs, raw = e.resume(t, "s", "t1", "?after=0", nil)
		if status != http.StatusOK || len(evs) == 0 {
			t.Fatalf("resume of the waiting turn: %d %s", status, raw)
		}
		last := evs[len(evs)-1].Snapshot
		if last == nil {
			t.Fatalf("resume of the waiting turn ends %s", raw)
		}
		calls := last.Messages[len(last.Messages)-1].ToolCalls
		if len(calls) != 1 || calls[0].Status != protocol.ToolCallRequiresConfirmation || runs.Load() != 1 {
			t.Fatalf("waiting turn resumed as %s", raw)
		}
	})
}
