package sessionapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/sessionapi"
)

func del(target string, as chat.Principal) request {
	return request{method: http.MethodDelete, target: target, as: &as}
}

// exportDoc is the export document as a reader decodes it.
type exportDoc struct {
	Format    string          `json:"format"`
	Version   int             `json:"version"`
	SessionID string          `json:"sessionId"`
	Session   json.RawMessage `json:"session"`
	Turns     []struct {
		TurnID    string             `json:"turnId"`
		Messages  []protocol.Message `json:"messages"`
		Artifacts []json.RawMessage  `json:"artifacts"`
		Feedback  *api.Feedback      `json:"feedback"`
	} `json:"turns"`
	Complete bool `json:"complete"`
}

// TestDeleteSession: DELETE /sessions/{id} removes the session, after
// which every route answers as for a session nobody has; another
// principal's session is 404 and kept; a running turn is 409 SESSION_BUSY.
func TestDeleteSession(t *testing.T) {
	forEachStore(t, func(t *testing.T, f *fixture) {
		f.runTurn("s1", alice, turnSpec{id: "t1", artifacts: []chat.ArtifactReference{{EntryPath: "out/a.md", ArtifactType: chat.ArtifactDocument}}})
		f.runTurn("s1", alice, turnSpec{id: "t2"})
		f.runTurn("m1", mallory, turnSpec{id: "tm"})
		nobody := f.do(f.history, get("/sessions/nobody", alice))

		wantError(t, "mallory deletes alice's", f.do(f.history, del("/sessions/s1", mallory)), 404, protocol.CodeSessionNotFound)
		wantError(t, "a bad id", f.do(f.history, del("/sessions/a%20b", alice)), 404, protocol.CodeSessionNotFound)
		if resp := f.do(f.history, del("/sessions/s1", alice)); resp.status != http.StatusNoContent || len(resp.body) != 0 {
			t.Fatalf("delete: %d %s", resp.status, resp.body)
		}
		for _, target := range []string{"/sessions/s1", "/sessions/s1/turns", "/sessions/s1/messages", "/sessions/s1/export"} {
			resp := f.do(f.history, get(target, alice))
			if resp.status != nobody.status || string(resp.body) != string(nobody.body) {
				t.Errorf("GET %s after the delete: %d %s; a session nobody has: %d %s", target, resp.status, resp.body, nobody.status, nobody.body)
			}
		}
		wantError(t, "artifacts after the delete", f.do(f.artifacts, get("/sessions/s1/turns/t1/artifacts", alice)), 404, protocol.CodeSessionNotFound)
		wantError(t, "a repeated delete", f.do(f.history, del("/sessions/s1", alice)), 404, protocol.CodeSessionNotFound)
		if got := listedIDs(decode[api.SessionList](t, "alice's list", f.do(f.history, get("/sessions", alice)))); len(got) != 0 {
			t.Errorf("alice's list after the delete: %v", got)
		}
		decode[sessionapi.SessionSummary](t, "mallory's session", f.do(f.history, get("/sessions/m1", mallory)))

		f.claim("s2", alice, turnSpec{id: "u1"})
		wantError(t, "a running turn", f.do(f.history, del("/sessions/s2", alice)), 409, protocol.CodeSessionBusy)
		decode[sessionapi.SessionSummary](t, "the busy session", f.do(f.history, get("/sessions/s2", alice)))
	})
}

// TestExportSession: GET /sessions/{id}/export is the whole conversation,
// every turn oldest first across pages, with artifacts and feedback; a
// session the caller does not own is 404.
func TestExportSession(t *testing.T) {
	forEachStore(t, func(t *testing.T, f *fixture) {
		f.runTurn("s1", alice, turnSpec{id: "t000", artifacts: []chat.ArtifactReference{{EntryPath: "out/a.md", ArtifactType: chat.ArtifactDocument}}})
		f.runTurns("s1", alice, "t", 130)
		if resp := f.do(f.history, put("/sessions/s1/turns/t000/feedback", alice, `{"rating":"up"}`)); resp.status != 200 {
			t.Fatalf("feedback: %d %s", resp.status, resp.body)
		}
		resp := f.do(f.history, get("/sessions/s1/export", alice))
		doc := decode[exportDoc](t, "export", resp)
		if doc.Format != "turnstream.export" || doc.Version != 1 || doc.SessionID != "s1" || !doc.Complete || len(doc.Session) == 0 {
			t.Fatalf("export head: %+v", doc)
		}
		if len(doc.Turns) != 131 || doc.Turns[0].TurnID != "t000" || doc.Turns[130].TurnID != "t-129" {
			t.Fatalf("export holds %d turns", len(doc.Turns))
		}
		if first := doc.Turns[0]; len(first.Artifacts) != 1 || first.Feedback == nil || first.Feedback.Rating != "up" || len(first.Messages) == 0 {
			t.Errorf("the first turn exported as %+v", first)
		}
		if err := protocol.ValidateMessages(doc.Turns[1].Messages); err != nil {
			t.Errorf("exported messages are no memory record: %v", err)
		}
		if !strings.Contains(resp.header.Get("Content-Disposition"), `filename="s1.json"`) {
			t.Errorf("Content-Disposition %q", resp.header.Get("Content-Disposition"))
		}
		wantError(t, "mallory exports alice's", f.do(f.history, get("/sessions/s1/export", mallory)), 404, protocol.CodeSessionNotFound)
		wantMethodNotAllowed(t, "export by POST", f.do(f.history, request{method: http.MethodPost, target: "/sessions/s1/export", as: &alice}), "GET")
	})
}

// TestEraseSessions: DELETE /principals/{subject}/sessions is the trusted
// principal's: it deletes every session of that subject in its tenant,
// and reports how many; anyone else is 403.
func TestEraseSessions(t *testing.T) {
	forEachStore(t, func(t *testing.T, f *fixture) {
		f.runTurn("s1", alice, turnSpec{id: "t1"})
		f.runTurn("s2", alice, turnSpec{id: "t2"})
		f.runTurn("m1", mallory, turnSpec{id: "tm"})
		wantError(t, "alice erases herself", f.do(f.history, del("/principals/alice/sessions", alice)), 403, protocol.CodeRequestForbidden)
		wantError(t, "alice erases mallory", f.do(f.history, del("/principals/mallory/sessions", alice)), 403, protocol.CodeRequestForbidden)
		wantError(t, "a control in the subject", f.do(f.history, del("/principals/a%00b/sessions", host)), 404, protocol.CodeRequestNotFound)
		wantMethodNotAllowed(t, "erase by GET", f.do(f.history, get("/principals/alice/sessions", host)), "DELETE")
		got := decode[sessionapi.DeleteProgress](t, "erase", f.do(f.history, del("/principals/alice/sessions", host)))
		if got.Status != sessionapi.StatusDeleted || got.Deleted != 2 || got.Busy != 0 {
			t.Fatalf("erase: %+v", got)
		}
		wantError(t, "s1 after the erase", f.do(f.history, get("/sessions/s1", alice)), 404, protocol.CodeSessionNotFound)
		decode[sessionapi.SessionSummary](t, "mallory's session", f.do(f.history, get("/sessions/m1", mallory)))
		if again := decode[sessionapi.DeleteProgress](t, "erase again", f.do(f.history, del("/principals/alice/sessions", host))); again.Status != sessionapi.StatusDeleted || again.Deleted != 0 {
			t.Errorf("a repeated erase: %+v", again)
		}
		f.claim("s3", alice, turnSpec{id: "t3"})
		if busy := decode[sessionapi.DeleteProgress](t, "erase with a running turn", f.do(f.history, del("/principals/alice/sessions", host))); busy.Status != sessionapi.StatusDeleting || busy.Busy != 1 {
			t.Errorf("an erase with a running turn: %+v", busy)
		}
	})
}

// wantMethodNotAllowed checks a 405 and its Allow header.
func wantMethodNotAllowed(t *testing.T, what string, resp response, allow string) {
	t.Helper()
	var body struct {
		Error struct{ Code string } `json:"error"`
	}
	if resp.status != http.StatusMethodNotAllowed || json.Unmarshal(resp.body, &body) != nil || body.Error.Code != protocol.CodeRequestMethodNotAllowed {
		t.Errorf("%s: %d %s", what, resp.status, resp.body)
	}
	if got := resp.header.Get("Allow"); got != allow {
		t.Errorf("%s: Allow %q, want %q", what, got, allow)
	}
}

// failingPages is a store whose ListTurns fails from its second call.
type failingPages struct {
	chat.Store
	calls int
}

func (s *failingPages) ListTurns(ctx context.Context, req chat.ListRequest) (*chat.Page, error) {
	if s.calls++; s.calls > 1 {
		return nil, errors.New("injected: the secret table is on fire")
	}
	return s.Store.ListTurns(ctx, req)
}

// TestExportCutShort: a page that fails after the document started ends
// it with "complete":false and a diagnostic that names no internal error.
func TestExportCutShort(t *testing.T) {
	f := newFixture(t, storeFactories["memory"])
	f.runTurns("s1", alice, "t", 120)
	history, _ := newHandlers(t, sessionapi.Options{Store: &failingPages{Store: f.store}, Authenticator: devAuthenticator(t), Now: f.clock.Now})
	resp := f.do(history, get("/sessions/s1/export", alice))
	var doc struct {
		exportDoc
		Error *protocol.Diagnostic `json:"error"`
	}
	if resp.status != 200 || json.Unmarshal(resp.body, &doc) != nil {
		t.Fatalf("export: %d %s", resp.status, resp.body)
	}
	if doc.Complete || doc.Error == nil || doc.Error.Code != protocol.CodeServerInternal || len(doc.Turns) != 100 {
		t.Errorf("a cut export: complete %v, error %+v, %d turns", doc.Complete, doc.Error, len(doc.Turns))
	}
	if strings.Contains(string(resp.body), "secret") {
		t.Error("the export leaked the internal error")
	}
}
