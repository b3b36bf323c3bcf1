package turn_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/definition"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/turn"
)

// countingStore counts the Store calls a handler makes.
type countingStore struct {
	chat.Store
	mu    sync.Mutex
	calls map[string]int
}

func (s *countingStore) count(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[name]++
}

func (s *countingStore) reset() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.calls
	s.calls = map[string]int{}
	return c
}

func (s *countingStore) ClaimTurn(ctx context.Context, req chat.ClaimRequest) (*chat.Claim, error) {
	s.count("ClaimTurn")
	return s.Store.ClaimTurn(ctx, req)
}

func (s *countingStore) LoadContext(ctx context.Context, id string, before int64, maxTurns int) ([]chat.Turn, bool, error) {
	s.count("LoadContext")
	return s.Store.LoadContext(ctx, id, before, maxTurns)
}

func (s *countingStore) SaveTurn(ctx context.Context, c *chat.Claim, t *chat.Turn) error {
	s.count("SaveTurn")
	return s.Store.SaveTurn(ctx, c, t)
}

func (s *countingStore) ReleaseTurn(ctx context.Context, req chat.ReleaseRequest) (*chat.Session, error) {
	s.count("ReleaseTurn")
	return s.Store.ReleaseTurn(ctx, req)
}

func (s *countingStore) GetSession(ctx context.Context, id string, p chat.Principal) (*chat.Session, error) {
	s.count("GetSession")
	return s.Store.GetSession(ctx, id, p)
}

func (s *countingStore) FindTurn(ctx context.Context, sessionID, turnID string, p chat.Principal) (*chat.Turn, error) {
	s.count("FindTurn")
	return s.Store.FindTurn(ctx, sessionID, turnID, p)
}

// TestStoreCallsPerTurn pins docs/design.md#storage-one-dynamodb-table's
// request budget at the handler: a completed turn on the configured path
// (definitions resolved per session) makes exactly one claim, one context
// load, one save and one release — the definition comes from the session the
// claim returns, not from an extra read.
func TestStoreCallsPerTurn(t *testing.T) {
	store := &countingStore{Store: newStoreMemory(), calls: map[string]int{}}
	res, err := definition.New([]definition.Definition{
		{ID: "a", Revision: 3, Provider: config.ProviderEcho, Limits: definition.Limits{MaxSteps: 2}},
	}, "a", nil)
	if err != nil {
		t.Fatal(err)
	}
	m := &scriptModel{Chunks: []string{"fine"}}
	e := newEnv(t, store, m, func(o *turn.Options) {
		o.Model, o.Definitions, o.Models = nil, res, map[string]model.Model{config.ProviderEcho: m}
	})
	e.submit(t, "s1", "t1", "first", nil, nil).want(t, http.StatusOK, "")
	store.reset()
	e.submit(t, "s1", "t2", "second", nil, nil).want(t, http.StatusOK, "")
	got := store.reset()
	want := map[string]int{"ClaimTurn": 1, "LoadContext": 1, "SaveTurn": 1, "ReleaseTurn": 1}
	if len(got) != len(want) {
		t.Fatalf("store calls for one turn = %v, want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Fatalf("store calls for one turn = %v, want %v", got, want)
		}
	}
	s, err := store.Store.GetSession(context.Background(), "s1", alice)
	if err != nil {
		t.Fatal(err)
	}
	if s.DefinitionID != "a" || s.DefinitionRevision != 3 {
		t.Fatalf("session definition %s@%d, want a@3", s.DefinitionID, s.DefinitionRevision)
	}
}

// TestContextBudget: a definition's context budget bounds what a turn
// loads and sends: the newest ContextTurns earlier turns (then the oldest
// beyond ContextTokens left out), the new input always; the assistant
// message says older turns were left out, and the turn never fails
// because the session is long.
func TestContextBudget(t *testing.T) {
	for name, limits := range map[string]definition.Limits{
		"turns":  {MaxSteps: 2, ContextTurns: 2},
		"tokens": {MaxSteps: 2, ContextTokens: 4}, // each earlier turn ("q tN", "ok") estimates 2 tokens
	} {
		t.Run(name, func(t *testing.T) {
			res, err := definition.New([]definition.Definition{{ID: "a", Revision: 1, Provider: config.ProviderEcho, Limits: limits}}, "a", nil)
			if err != nil {
				t.Fatal(err)
			}
			m := &scriptModel{Chunks: []string{"ok"}}
			e := newEnv(t, newStoreMemory(), m, func(o *turn.Options) {
				o.Model, o.Definitions, o.Models = nil, res, map[string]model.Model{config.ProviderEcho: m}
			})
			for _, id := range []string{"t1", "t2", "t3", "t4"} {
				e.submit(t, "s", id, "q "+id, nil, nil).want(t, http.StatusOK, "")
			}
			r := e.submit(t, "s", "t5", "q t5", nil, nil)
			r.want(t, http.StatusOK, "")
			var users []string
			for _, msg := range m.LastRequest().Messages {
				if msg.Role == protocol.RoleUser {
					users = append(users, msg.Content)
				}
			}
			if strings.Join(users, ",") != "q t3,q t4,q t5" {
				t.Errorf("the model received the user messages %q, want the newest two earlier turns and the input", users)
			}
			term := r.terminal(t)
			a := term.Messages[len(term.Messages)-1]
			if !strings.Contains(string(a.Metadata), `"context":{"turns":2,"omittedOlder":true}`) {
				t.Errorf("assistant metadata %s does not say older turns were left out", a.Metadata)
			}
			if len(term.Messages) != 2*2+2 {
				t.Errorf("session-scope snapshot carries %d messages, want the two earlier turns and this one", len(term.Messages))
			}
		})
	}
}

// TestPromptCacheRequest: each model call asks the provider for its
// prompt cache unless the definition turns it off ("promptCache": false).
func TestPromptCacheRequest(t *testing.T) {
	for name, off := range map[string]bool{"by default": false, "turned off": true} {
		t.Run(name, func(t *testing.T) {
			res, err := definition.New([]definition.Definition{{ID: "a", Revision: 1, Provider: config.ProviderEcho, NoPromptCache: off,
				Limits: definition.Limits{MaxSteps: 2}}}, "a", nil)
			if err != nil {
				t.Fatal(err)
			}
			m := &scriptModel{Chunks: []string{"ok"}}
			e := newEnv(t, newStoreMemory(), m, func(o *turn.Options) {
				o.Model, o.Definitions, o.Models = nil, res, map[string]model.Model{config.ProviderEcho: m}
			})
			e.submit(t, "s", "t1", "q", nil, nil).want(t, http.StatusOK, "")
			if got := m.LastRequest().PromptCache; got != !off {
				t.Errorf("PromptCache %v, want %v", got, !off)
			}
		})
	}
}
