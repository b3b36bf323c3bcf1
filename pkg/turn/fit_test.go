package turn_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/definition"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/tool"
	"github.com/turnstream/turnstream/pkg/turn"
)

// seedTurns saves n complete turns in session sessionID of store, each
// with an assistant message whose metadata holds keysPerTurn members (so
// every turn counts over keysPerTurn JSON values in a snapshot).
func seedTurns(tb testing.TB, store chat.Store, sessionID string, n, keysPerTurn int) {
	tb.Helper()
	ctx := context.Background()
	meta := map[string]int{}
	for k := range keysPerTurn {
		meta[fmt.Sprintf("k%d", k)] = k
	}
	rawMeta, err := json.Marshal(meta)
	if err != nil {
		tb.Fatal(err)
	}
	now := time.Date(2026, 7, 11, 3, 0, 0, 0, time.UTC)
	for i := 1; i <= n; i++ {
		turnID := fmt.Sprintf("old-%d", i)
		input := fmt.Sprintf("question %d", i)
		c, err := store.ClaimTurn(ctx, chat.ClaimRequest{
			SessionID: sessionID, TurnID: turnID, Principal: alice, InputHash: chat.HashInput(input),
			Lineage: protocol.Lineage{Operation: protocol.OperationSubmit}, DefinitionID: "default", DefinitionRevision: 1,
			LeaseDuration: time.Minute,
		})
		if err != nil {
			tb.Fatal(err)
		}
		at := protocol.FormatTime(now)
		err = store.SaveTurn(ctx, c, &chat.Turn{
			SessionID: sessionID, TurnID: turnID, Ordinal: c.Lease.Ordinal, Status: chat.TurnComplete,
			Lineage: protocol.Lineage{Operation: protocol.OperationSubmit}, InputHash: chat.HashInput(input),
			Messages: []protocol.Message{
				{ID: turn.MessageID(turnID, "u"), Role: protocol.RoleUser, Content: input, Status: protocol.MessageComplete, CreatedAt: at},
				{ID: turn.MessageID(turnID, "a"), Role: protocol.RoleAssistant, Content: "answer", Status: protocol.MessageComplete, CreatedAt: at, Metadata: rawMeta},
			},
			FirstSequence: c.BaseSequence + 1, LastSequence: c.BaseSequence + 1, StartedAt: now, CompletedAt: now,
		})
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := store.ReleaseTurn(ctx, chat.ReleaseRequest{Claim: c, Outcome: chat.OutcomeCompleted, Sequence: c.BaseSequence + 1}); err != nil {
			tb.Fatal(err)
		}
	}
}

// TestSessionSnapshotFits: a session whose history passes the record's 10,000
// JSON values (docs/protocol.md#the-canonical-message-record) still streams:
// session-scope snapshots leave out the oldest whole turns, keep the newest
// ones, and every snapshot of the turn carries the same context; the model
// still gets the whole context and the turn is stored.
func TestSessionSnapshotFits(t *testing.T) {
	const turns, keys = 30, 500 // about 15,000 values of history
	tests := map[string]struct {
		header      map[string]string
		wantContext func(n int) bool // context messages in each snapshot
	}{
		"session scope drops the oldest turns": {nil, func(n int) bool { return n > 0 && n < 2*turns && n%2 == 0 }},
		"turn scope":                           {map[string]string{api.SnapshotScopeHeader: "turn"}, func(n int) bool { return n == 0 }},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			store := newStoreMemory()
			seedTurns(t, store, "s", turns, keys)
			m := &scriptModel{Chunks: []string{"a", "b", "c"}}
			e := newEnv(t, store, m, nil)
			r := e.submit(t, "s", "new", "hello", nil, tc.header)
			r.want(t, http.StatusOK, "")
			term := r.terminal(t)
			if term.Status != protocol.StatusComplete {
				t.Fatalf("terminal %+v", term)
			}
			if err := protocol.ValidateMessages(term.Messages); err != nil {
				t.Fatalf("terminal messages: %v", err)
			}
			var first []protocol.Message
			for i, ev := range r.events {
				if ev.Kind != protocol.EventSnapshot {
					t.Fatalf("line %d is %s", i+1, ev.Kind)
				}
				msgs := ev.Snapshot.Messages
				ctxMsgs := msgs[:len(msgs)-2]
				if !tc.wantContext(len(ctxMsgs)) {
					t.Fatalf("snapshot %d has %d context messages", i+1, len(ctxMsgs))
				}
				if i == 0 {
					first = ctxMsgs
				} else if len(ctxMsgs) != len(first) {
					t.Fatalf("snapshot %d has %d context messages, the first had %d", i+1, len(ctxMsgs), len(first))
				}
			}
			if len(first) > 0 {
				// Whole turns, the newest kept: it starts with a user
				// message and ends with the last seeded turn.
				if first[0].Role != protocol.RoleUser || first[len(first)-1].ID != turn.MessageID(fmt.Sprintf("old-%d", turns), "a") {
					t.Fatalf("context runs %s .. %s", first[0].ID, first[len(first)-1].ID)
				}
			}
			whole := m.LastRequest().Messages
			if len(whole) != 2*turns+1 {
				t.Fatalf("model got %d messages, want the whole context and the input", len(whole))
			}
			if err := protocol.ValidateMessages(whole); err == nil {
				t.Fatal("the seeded history fits one record: the test proves nothing")
			}
			stored, err := e.store.FindTurn(context.Background(), "s", "new", alice)
			if err != nil || stored.Status != chat.TurnComplete {
				t.Fatalf("stored %+v, %v", stored, err)
			}
			if strings.Contains(e.logs.String(), "snapshot encoding failed") {
				t.Fatal("a snapshot failed to encode")
			}
		})
	}
}

// TestDefinitionPerSession: a new session gets the default definition; an
// existing one keeps its definition id and runs its current revision
// (recorded at the claim); a session whose definition is gone is refused.
func TestDefinitionPerSession(t *testing.T) {
	store := newStoreMemory()
	echoModel, openaiModel := &scriptModel{Chunks: []string{"e"}}, &scriptModel{Chunks: []string{"o"}}
	models := map[string]model.Model{config.ProviderEcho: echoModel, config.ProviderOpenAI: openaiModel}
	envWith := func(defaultID string, defs ...definition.Definition) *env {
		res, err := definition.New(defs, defaultID, nil)
		if err != nil {
			t.Fatal(err)
		}
		return newEnv(t, store, &scriptModel{}, func(o *turn.Options) {
			o.Model, o.Definitions, o.Models = nil, res, models
		})
	}
	limits := definition.Limits{MaxSteps: 1}
	a1 := definition.Definition{ID: "a", Revision: 1, Provider: config.ProviderEcho, SystemPrompt: "A1", Limits: limits}
	a2 := definition.Definition{ID: "a", Revision: 2, Provider: config.ProviderEcho, SystemPrompt: "A2", Limits: limits}
	b := definition.Definition{ID: "b", Revision: 7, Provider: config.ProviderOpenAI, ModelID: "gpt-x", SystemPrompt: "B", Limits: limits}

	envWith("a", a1, b).submit(t, "s1", "t1", "hi", nil, nil).want(t, http.StatusOK, "")
	e := envWith("b", a2, b)
	e.submit(t, "s1", "t2", "hi", nil, nil).want(t, http.StatusOK, "")
	e.submit(t, "s2", "t1", "hi", nil, nil).want(t, http.StatusOK, "")

	tests := map[string]struct {
		session, defID string
		rev            int64
		model          *scriptModel
		system         string
	}{
		"existing session keeps its id at the new revision": {"s1", "a", 2, echoModel, "A2"},
		"new session gets the default":                      {"s2", "b", 7, openaiModel, "B"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			sess, err := store.GetSession(context.Background(), tc.session, alice)
			if err != nil {
				t.Fatal(err)
			}
			if sess.DefinitionID != tc.defID || sess.DefinitionRevision != tc.rev {
				t.Fatalf("session definition %s@%d, want %s@%d", sess.DefinitionID, sess.DefinitionRevision, tc.defID, tc.rev)
			}
			if got := tc.model.LastRequest().System; got != tc.system {
				t.Fatalf("system prompt %q, want %q", got, tc.system)
			}
		})
	}
	if openaiModel.LastRequest().ModelID != "gpt-x" || echoModel.Calls() != 2 || openaiModel.Calls() != 1 {
		t.Fatalf("calls: echo %d, openai %d", echoModel.Calls(), openaiModel.Calls())
	}
	t.Run("removed definition", func(t *testing.T) {
		r := envWith("b", b).submit(t, "s1", "t3", "hi", nil, nil)
		r.want(t, http.StatusInternalServerError, protocol.CodeServerInternal)
		if echoModel.Calls() != 2 {
			t.Fatal("a model ran for a session whose definition is gone")
		}
	})
}

// TestNewHandlerDefinitions: a definition whose provider or tools are not
// wired is a construction error naming what is missing.
func TestNewHandlerDefinitions(t *testing.T) {
	known := func(string) bool { return true }
	tests := map[string]struct {
		def   definition.Definition
		tools *tool.Registry
		want  string
	}{
		"provider missing":  {definition.Definition{ID: "a", Revision: 1, Provider: config.ProviderBedrock, ModelID: "m", Limits: definition.Limits{MaxSteps: 1}}, nil, `"bedrock"`},
		"tool not in Tools": {definition.Definition{ID: "a", Revision: 1, Provider: config.ProviderEcho, Tools: []string{"search"}, Limits: definition.Limits{MaxSteps: 1}}, tool.NewRegistry(nil), "search"},
		"no Tools":          {definition.Definition{ID: "a", Revision: 1, Provider: config.ProviderEcho, Tools: []string{"search"}, Limits: definition.Limits{MaxSteps: 1}}, nil, "search"},
		"wired":             {definition.Definition{ID: "a", Revision: 1, Provider: config.ProviderEcho, Limits: definition.Limits{MaxSteps: 1}}, nil, ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			res, err := definition.New([]definition.Definition{tc.def}, "a", known)
			if err != nil {
				t.Fatal(err)
			}
			_, err = turn.NewHandler(turn.Options{
				Config: turn.Config{
					Store:       newStoreMemory(),
					Definitions: res,
					Tools:       tc.tools,
					Models:      map[string]model.Model{config.ProviderEcho: &scriptModel{}},
				},
				Authenticator: &testAuth{},
			})
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one naming %s", err, tc.want)
			}
		})
	}
}
