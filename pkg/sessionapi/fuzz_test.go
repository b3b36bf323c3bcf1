package sessionapi_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/sessionapi"
)

// FuzzPutArtifacts sends arbitrary PUT bodies as the trusted host and
// checks the handler's invariants: the answer is 200 with exactly the
// validated, deduplicated references (and they are stored), or a 400/413
// JSON error with the collection unchanged; never a 5xx.
func FuzzPutArtifacts(f *testing.F) {
	for _, seed := range []string{
		`{"artifacts":[]}`,
		`{"artifacts":[{"entryPath":"a/b.html","artifactType":"webpage"},{"entryPath":"a/b.html","artifactType":"document"}]}`,
		`{"artifacts":[{"id":"legacy"}]}`,
		`{"artifacts":null}`,
		`{"artifacts":[{"entryPath":"../x","artifactType":"image"}]}`,
		`{"artifacts":[{"entryPath":"x","artifactType":"image","entryPath":"y"}]}`,
		`{"artifacts":[{"entryPath":"\ud800","artifactType":"image"}]}`,
		`[]`, ``, `{`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		fx := newFixture(t, storeFactories["memory"])
		fx.runTurn("s1", alice, turnSpec{id: "t1"})
		const stored = `{"artifacts":[{"entryPath":"keep.html","artifactType":"webpage"}]}`
		if resp := fx.do(fx.artifacts, put(artifactsPath, host, stored)); resp.status != http.StatusOK {
			t.Fatalf("seed: %d %s", resp.status, resp.body)
		}
		resp := fx.do(fx.artifacts, request{method: http.MethodPut, target: artifactsPath, as: &host, contentType: "application/json", body: body})
		after := fx.do(fx.artifacts, get(artifactsPath, alice))
		switch resp.status {
		case http.StatusOK:
			got := decode[sessionapi.ArtifactList](t, "PUT", resp)
			if err := chat.ValidateArtifacts(got.Artifacts); err != nil {
				t.Fatalf("stored invalid references %s: %v", resp.body, err)
			}
			if len(chat.DedupeArtifacts(got.Artifacts)) != len(got.Artifacts) {
				t.Fatalf("stored duplicates: %s", resp.body)
			}
			if string(after.body) != string(resp.body) {
				t.Fatalf("GET %s after PUT answered %s", after.body, resp.body)
			}
		case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
			var e struct {
				Error protocol.Diagnostic `json:"error"`
			}
			if err := json.Unmarshal(resp.body, &e); err != nil || e.Error.Code == "" {
				t.Fatalf("error body %s", resp.body)
			}
			if string(after.body) != stored {
				t.Fatalf("rejected PUT changed the collection to %s", after.body)
			}
		default:
			t.Fatalf("status %d: %s", resp.status, resp.body)
		}
	})
}
