package sessionapi_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/sessionapi"
)

// regenerations runs t-000 and t-001 in s1, then r1 and r2, each a
// regeneration of t-001: the active branch t-000 r2, the group t-001 r1
// r2.
func (f *fixture) regenerations() {
	f.t.Helper()
	f.runTurns("s1", alice, "t", 2)
	for _, id := range []string{"r1", "r2"} {
		f.runTurn("s1", alice, turnSpec{id: id, supersedeFrom: 2,
			lineage: protocol.Lineage{Operation: protocol.OperationRegenerate, ParentTurnID: "t-001", SourceMessageID: "t-001-user"}})
	}
}

// activeTurns returns the ids and the decoded turns of /turns, oldest
// first.
func (f *fixture) activeTurns(sessionID string) ([]string, []sessionapi.TurnSummary) {
	f.t.Helper()
	page := decode[sessionapi.TurnPage](f.t, "turns", f.do(f.history, get("/sessions/"+sessionID+"/turns?order=asc", alice)))
	ids := make([]string, len(page.Turns))
	for i, t := range page.Turns {
		ids[i] = t.TurnID
	}
	return ids, page.Turns
}

func wantSiblings(t *testing.T, what string, got *api.Siblings, index int, ids ...string) {
	t.Helper()
	if got == nil || got.Index != index || got.Count != len(ids) || !slices.Equal(got.TurnIDs, ids) {
		t.Errorf("%s: siblings %+v, want index %d of %v", what, got, index, ids)
	}
}

// TestSiblingsListed: the active member of a sibling group carries the
// group on /turns and in its answer's metadata on /messages; a turn
// without siblings has no siblings member (what a client that never sends
// lineage sees is unchanged); a sibling off the active branch is read by
// its id.
func TestSiblingsListed(t *testing.T) {
	forEachStore(t, func(t *testing.T, f *fixture) {
		f.regenerations()
		ids, turns := f.activeTurns("s1")
		if !slices.Equal(ids, []string{"t-000", "r2"}) {
			t.Fatalf("active branch %v, want t-000 r2", ids)
		}
		wantSiblings(t, "r2", turns[1].Siblings, 2, "t-001", "r1", "r2")
		raw := f.do(f.history, get("/sessions/s1/turns?order=asc", alice)).body
		if n := strings.Count(string(raw), `"siblings"`); n != 1 {
			t.Errorf("/turns names siblings %d times, want once (t-000 has none): %s", n, raw)
		}
		msgs := decode[sessionapi.MessagePage](t, "messages", f.do(f.history, get("/sessions/s1/messages?order=asc", alice)))
		var md struct {
			Siblings *api.Siblings `json:"siblings"`
		}
		last := msgs.Messages[len(msgs.Messages)-1]
		if err := json.Unmarshal(last.Metadata, &md); err != nil {
			t.Fatalf("metadata %s: %v", last.Metadata, err)
		}
		wantSiblings(t, "r2's answer metadata", md.Siblings, 2, "t-001", "r1", "r2")
		if first := msgs.Messages[1]; strings.Contains(string(first.Metadata), "siblings") {
			t.Errorf("t-000's answer metadata names siblings: %s", first.Metadata)
		}

		off := decode[sessionapi.TurnSummary](t, "turn by id", f.do(f.history, get("/sessions/s1/turns/t-001", alice)))
		if !off.Superseded || off.TurnID != "t-001" {
			t.Errorf("t-001 by id: superseded %v, id %s; want true, t-001", off.Superseded, off.TurnID)
		}
		// A member off the active branch keeps the group as it was when it
		// left (docs/branches.md).
		wantSiblings(t, "t-001 by id", off.Siblings, 0, "t-001", "r1")
		on := f.do(f.history, get("/sessions/s1/turns/t-000", alice))
		if strings.Contains(string(on.body), "superseded") || strings.Contains(string(on.body), "siblings") {
			t.Errorf("an active turn without siblings by id: %s", on.body)
		}
		wantError(t, "a turn by id of another principal", f.do(f.history, get("/sessions/s1/turns/t-001", mallory)), http.StatusNotFound, protocol.CodeSessionNotFound)
		wantError(t, "an unknown turn by id", f.do(f.history, get("/sessions/s1/turns/nope", alice)), http.StatusNotFound, protocol.CodeTurnNotFound)
	})
}

// TestSelectRoute: select makes a sibling's branch the active one; its
// refusals are typed and change nothing.
func TestSelectRoute(t *testing.T) {
	forEachStore(t, func(t *testing.T, f *fixture) {
		f.regenerations()
		resp := f.do(f.history, post("/sessions/s1/turns/t-001/select", alice, ""))
		if resp.status != http.StatusNoContent || len(resp.body) != 0 {
			t.Fatalf("select: status %d, body %s; want 204", resp.status, resp.body)
		}
		ids, turns := f.activeTurns("s1")
		if !slices.Equal(ids, []string{"t-000", "t-001"}) {
			t.Fatalf("active branch after the select %v, want t-000 t-001", ids)
		}
		wantSiblings(t, "the selected turn", turns[1].Siblings, 0, "t-001", "r1", "r2")
		if resp := f.do(f.history, post("/sessions/s1/turns/t-000/select", alice, "")); resp.status != http.StatusNoContent {
			t.Errorf("a select of an active turn: %d, want 204", resp.status)
		}
		for name, tc := range map[string]struct {
			req    request
			status int
			code   string
		}{
			"another principal": {post("/sessions/s1/turns/r1/select", mallory, ""), http.StatusNotFound, protocol.CodeSessionNotFound},
			"an unknown turn":   {post("/sessions/s1/turns/nope/select", alice, ""), http.StatusNotFound, protocol.CodeTurnNotFound},
			"a bad turn id":     {post("/sessions/s1/turns/no%20pe/select", alice, ""), http.StatusNotFound, protocol.CodeTurnNotFound},
			"GET":               {get("/sessions/s1/turns/r1/select", alice), http.StatusMethodNotAllowed, protocol.CodeRequestMethodNotAllowed},
		} {
			wantError(t, name, f.do(f.history, tc.req), tc.status, tc.code)
		}
		c := f.claim("s1", alice, turnSpec{id: "running"})
		wantError(t, "a select while a turn runs", f.do(f.history, post("/sessions/s1/turns/r1/select", alice, "")), http.StatusConflict, protocol.CodeSessionBusy)
		f.complete("s1", c, turnSpec{id: "running"})
		// r1 is a member; its group's place is active: selectable. A
		// follower is not a member.
		if resp := f.do(f.history, post("/sessions/s1/turns/r1/select", alice, "")); resp.status != http.StatusNoContent {
			t.Fatalf("select r1: %d %s", resp.status, resp.body)
		}
		wantError(t, "a turn that is no sibling", f.do(f.history, post("/sessions/s1/turns/running/select", alice, "")), http.StatusConflict, protocol.CodeTurnNotSelectable)
		if ids, _ := f.activeTurns("s1"); !slices.Equal(ids, []string{"t-000", "r1"}) {
			t.Errorf("active branch %v, want t-000 r1", ids)
		}
	})
}

// TestForkRoute: a fork is a new session of the caller holding the active
// branch up to a turn; the same request again is the same fork; bad
// bodies and foreign sessions are refused, creating nothing.
func TestForkRoute(t *testing.T) {
	forEachStore(t, func(t *testing.T, f *fixture) {
		f.regenerations()
		resp := f.do(f.history, post("/sessions/s1/fork", alice, `{"atTurnId":"r2"}`))
		if resp.status != http.StatusCreated {
			t.Fatalf("fork: status %d, body %s", resp.status, resp.body)
		}
		var item api.SessionListItem
		if err := json.Unmarshal(resp.body, &item); err != nil {
			t.Fatal(err)
		}
		if !protocol.IsSafeID(item.SessionID) || item.SessionID == "s1" || item.Title == nil || *item.Title != "Fork of question t-000" || item.LastTurn == nil {
			t.Fatalf("the fork as listed: %s", resp.body)
		}
		if ids, turns := f.activeTurns(item.SessionID); !slices.Equal(ids, []string{"t-000", "r2"}) || turns[1].Siblings != nil {
			t.Errorf("the fork's turns %v (siblings %+v), want t-000 r2 without siblings", ids, turns[1].Siblings)
		}
		named := `{"atTurnId":"t-000","sessionId":"f1","title":"Mine"}`
		for range 2 {
			resp := f.do(f.history, post("/sessions/s1/fork", alice, named))
			if resp.status != http.StatusCreated || !strings.Contains(string(resp.body), `"title":"Mine"`) {
				t.Fatalf("a named fork: %d %s", resp.status, resp.body)
			}
		}
		if ids, _ := f.activeTurns("f1"); !slices.Equal(ids, []string{"t-000"}) {
			t.Errorf("f1's turns %v, want t-000", ids)
		}
		for name, tc := range map[string]struct {
			req    request
			status int
			code   string
		}{
			"into an existing session": {post("/sessions/s1/fork", alice, `{"atTurnId":"r2","sessionId":"f1"}`), http.StatusConflict, protocol.CodeSessionConflict},
			"into itself":              {post("/sessions/s1/fork", alice, `{"atTurnId":"r2","sessionId":"s1"}`), http.StatusBadRequest, protocol.CodeRequestInvalidBody},
			"another principal":        {post("/sessions/s1/fork", mallory, `{"atTurnId":"r2","sessionId":"m1"}`), http.StatusNotFound, protocol.CodeSessionNotFound},
			"a superseded turn":        {post("/sessions/s1/fork", alice, `{"atTurnId":"r1","sessionId":"x1"}`), http.StatusNotFound, protocol.CodeTurnNotFound},
			"no turn":                  {post("/sessions/s1/fork", alice, `{"sessionId":"x2"}`), http.StatusBadRequest, protocol.CodeRequestInvalidBody},
			"an unknown member":        {post("/sessions/s1/fork", alice, `{"atTurnId":"r2","sessionId":"x3","x":1}`), http.StatusBadRequest, protocol.CodeRequestInvalidBody},
			"a bad session id":         {post("/sessions/s1/fork", alice, `{"atTurnId":"r2","sessionId":"a b"}`), http.StatusBadRequest, protocol.CodeRequestInvalidBody},
			"an empty title":           {post("/sessions/s1/fork", alice, `{"atTurnId":"r2","sessionId":"x4","title":" "}`), http.StatusBadRequest, protocol.CodeRequestInvalidBody},
			"not JSON":                 {post("/sessions/s1/fork", alice, `atTurnId=r2`), http.StatusBadRequest, protocol.CodeRequestInvalidBody},
			"no content type":          {request{method: http.MethodPost, target: "/sessions/s1/fork", as: &alice, body: `{"atTurnId":"r2"}`}, http.StatusUnsupportedMediaType, protocol.CodeRequestUnsupportedMediaType},
			"GET":                      {get("/sessions/s1/fork", alice), http.StatusMethodNotAllowed, protocol.CodeRequestMethodNotAllowed},
		} {
			wantError(t, name, f.do(f.history, tc.req), tc.status, tc.code)
		}
		for _, id := range []string{"m1", "x1", "x2", "x3", "x4"} {
			wantError(t, "a refused fork's session "+id, f.do(f.history, get("/sessions/"+id, alice)), http.StatusNotFound, protocol.CodeSessionNotFound)
		}
		if ids, _ := f.activeTurns("s1"); !slices.Equal(ids, []string{"t-000", "r2"}) {
			t.Errorf("the source after forks %v, want t-000 r2", ids)
		}
	})
}
