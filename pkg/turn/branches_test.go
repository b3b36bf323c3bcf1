package turn_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// TestBranchesThroughTheEngine: an edit and a regeneration keep what they
// replace as siblings, recorded on the turn by the engine and never on
// the wire's snapshots; after a select the next turn's context is the
// selected branch.
func TestBranchesThroughTheEngine(t *testing.T) {
	forEachStore(t, func(t *testing.T, newStore func(testing.TB) chat.Store) {
		m := &scriptModel{Chunks: []string{"answer"}}
		e := newEnv(t, newStore(t), m, nil)
		ctx := context.Background()
		e.submit(t, "s", "t1", "q1", nil, nil).want(t, http.StatusOK, "")
		e.submit(t, "s", "t2", "q2", nil, nil).want(t, http.StatusOK, "")
		edit := protocol.Lineage{Operation: protocol.OperationEdit, ParentTurnID: "t2", SourceMessageID: "t2.u"}
		r := e.submit(t, "s", "e1", "q2 edited", &edit, nil)
		r.want(t, http.StatusOK, "")
		regen := protocol.Lineage{Operation: protocol.OperationRegenerate, ParentTurnID: "e1", SourceMessageID: "e1.a"}
		r2 := e.submit(t, "s", "e2", "q2 edited", &regen, nil)
		r2.want(t, http.StatusOK, "")
		for _, raw := range [][]byte{r.raw, r2.raw} {
			if strings.Contains(string(raw), "siblings") {
				t.Fatalf("a snapshot names siblings: %s", raw)
			}
		}
		stored, err := e.store.FindTurn(ctx, "s", "e2", alice)
		if err != nil {
			t.Fatal(err)
		}
		if g := stored.Siblings; g == nil || g.Group != 2 || len(g.Members) != 3 || g.Members[0].TurnID != "t2" || g.Members[1].TurnID != "e1" || g.Members[2].TurnID != "e2" {
			t.Fatalf("the regeneration's siblings %+v, want group 2 of t2 e1 e2", g)
		}

		if err := e.store.SelectTurn(ctx, "s", "t2", alice); err != nil {
			t.Fatal(err)
		}
		e.submit(t, "s", "t3", "q3", nil, nil).want(t, http.StatusOK, "")
		var users []string
		for _, msg := range m.LastRequest().Messages {
			if msg.Role == protocol.RoleUser {
				users = append(users, msg.Content)
			}
		}
		if got := strings.Join(users, "|"); got != "q1|q2|q3" {
			t.Errorf("the context after selecting t2: users %s, want q1|q2|q3", got)
		}
	})
}

// staleSupersede answers every supersession with err, marking nothing.
type staleSupersede struct {
	chat.Store
	err error
}

func (s staleSupersede) Supersede(context.Context, *chat.Claim, int64, int64) (*chat.Siblings, error) {
	return nil, s.err
}

// TestSupersessionRefusedUnderTheLease: a supersession the store refuses
// under the claim's lease (the parent left the active branch since the
// lineage was checked, or its group is full) is 422 LINEAGE_INVALID, and
// the turn id stays unspent: the claim is withdrawn, nothing recorded.
func TestSupersessionRefusedUnderTheLease(t *testing.T) {
	for _, refusal := range []error{chat.ErrLineageStale, chat.ErrSiblingsFull} {
		t.Run(refusal.Error(), func(t *testing.T) {
			store := newStoreMemory()
			m := &scriptModel{Chunks: []string{"answer"}}
			e := newEnv(t, staleSupersede{Store: store, err: refusal}, m, nil)
			e.submit(t, "s", "t1", "q1", nil, nil).want(t, http.StatusOK, "")
			calls := m.Calls()
			regen := protocol.Lineage{Operation: protocol.OperationRegenerate, ParentTurnID: "t1", SourceMessageID: "t1.a"}
			e.submit(t, "s", "r1", "q1", &regen, nil).want(t, http.StatusUnprocessableEntity, protocol.CodeLineageInvalid)
			if m.Calls() != calls {
				t.Error("a refused supersession reached the model")
			}
			if _, err := store.FindTurn(context.Background(), "s", "r1", alice); err == nil {
				t.Error("a refused supersession recorded its turn")
			}
			e.submit(t, "s", "r1", "q1 again", nil, nil).want(t, http.StatusOK, "")
		})
	}
}
