package sessionapi_test

import (
	"bytes"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/internal/emfcheck"
	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/sessionapi"
	"github.com/turnstream/turnstream/pkg/store/memory"
	"github.com/turnstream/turnstream/pkg/store/storetest"
	"github.com/turnstream/turnstream/pkg/telemetry"
)

func listedIDs(l api.SessionList) []string {
	var out []string
	for _, s := range l.Sessions {
		out = append(out, s.SessionID)
	}
	return out
}

// TestSessionList: GET /sessions pages the caller's sessions, newest
// activity first, with titles and their last turns; never another
// principal's.
func TestSessionList(t *testing.T) {
	forEachStore(t, func(t *testing.T, f *fixture) {
		f.runTurn("s1", alice, turnSpec{id: "t1"})
		f.runTurn("s2", alice, turnSpec{id: "t2"})
		f.runTurn("m1", mallory, turnSpec{id: "tm"})
		f.runTurn("s3", alice, turnSpec{id: "t3", status: "error"})
		f.claim("s4", alice, turnSpec{id: "t4"}) // running its first turn: listed, no title or last turn yet

		first := decode[api.SessionList](t, "page 1", f.do(f.history, get("/sessions?limit=2", alice)))
		if got := listedIDs(first); !slices.Equal(got, []string{"s4", "s3"}) || first.NextCursor == nil {
			t.Fatalf("page 1: %v, cursor %v", got, first.NextCursor)
		}
		if s4 := first.Sessions[0]; s4.Title != nil || s4.LastTurn != nil {
			t.Errorf("s4, running its first turn, listed as %+v (last turn %+v)", s4, s4.LastTurn)
		}
		s3 := first.Sessions[1]
		if s3.Title == nil || *s3.Title != "question t3" || s3.LastTurn == nil ||
			s3.LastTurn.Status != "error" || s3.LastTurn.Preview != "answer t3" || s3.UpdatedAt == nil || s3.CreatedAt == "" {
			t.Errorf("s3 listed as %+v (last turn %+v)", s3, s3.LastTurn)
		}
		second := decode[api.SessionList](t, "page 2", f.do(f.history, get("/sessions?limit=2&cursor="+url.QueryEscape(*first.NextCursor), alice)))
		if got := listedIDs(second); !slices.Equal(got, []string{"s2", "s1"}) || second.NextCursor != nil {
			t.Fatalf("page 2: %v, cursor %v", got, second.NextCursor)
		}
		if got := listedIDs(decode[api.SessionList](t, "mallory", f.do(f.history, get("/sessions", mallory)))); !slices.Equal(got, []string{"m1"}) {
			t.Errorf("mallory's list %v", got)
		}
		if got := decode[api.SessionList](t, "host", f.do(f.history, get("/sessions", host))); len(got.Sessions) != 0 || got.NextCursor != nil {
			t.Errorf("the trusted principal's list %+v: a list is its owner's only", got)
		}
		search := decode[api.SessionList](t, "search", f.do(f.history, get("/sessions?q="+url.QueryEscape("QUESTION t2"), alice)))
		if got := listedIDs(search); !slices.Equal(got, []string{"s2"}) {
			t.Errorf("search: %v", got)
		}
		// Bad input: a 400 that echoes nothing.
		for name, tc := range map[string]struct{ target, code string }{
			"limit 0":          {"/sessions?limit=0", protocol.CodeRequestInvalidQuery},
			"limit 101":        {"/sessions?limit=101", protocol.CodeRequestInvalidQuery},
			"limit word":       {"/sessions?limit=zzz", protocol.CodeRequestInvalidQuery},
			"limit repeated":   {"/sessions?limit=1&limit=2", protocol.CodeRequestInvalidQuery},
			"q repeated":       {"/sessions?q=a&q=b", protocol.CodeRequestInvalidQuery},
			"q too long":       {"/sessions?q=" + strings.Repeat("z", 101), protocol.CodeRequestInvalidQuery},
			"q six words":      {"/sessions?q=zz+zz+zz+zz+zz+zz", protocol.CodeRequestInvalidQuery},
			"q control":        {"/sessions?q=zz%00", protocol.CodeRequestInvalidQuery},
			"bad escape":       {"/sessions?q=%zz", protocol.CodeRequestInvalidQuery},
			"garbage cursor":   {"/sessions?cursor=zzz", protocol.CodeRequestInvalidCursor},
			"mallory's cursor": {"/sessions?limit=1&cursor=" + url.QueryEscape(*first.NextCursor), protocol.CodeRequestInvalidCursor},
			"a trailing slash": {"/sessions/", protocol.CodeRequestNotFound},
		} {
			as := alice
			status := http.StatusBadRequest
			switch name {
			case "mallory's cursor":
				as = mallory
			case "a trailing slash":
				status = http.StatusNotFound
			}
			resp := f.do(f.history, get(tc.target, as))
			wantError(t, name, resp, status, tc.code)
			if strings.Contains(string(resp.body), "zz") {
				t.Errorf("%s: the body echoes the input: %s", name, resp.body)
			}
		}
		resp := f.do(f.history, request{method: http.MethodPost, target: "/sessions", as: &alice})
		if resp.status != http.StatusMethodNotAllowed || resp.header.Get("Allow") != "GET" {
			t.Errorf("POST /sessions: %d, Allow %q", resp.status, resp.header.Get("Allow"))
		}
		resp = f.do(f.history, request{method: http.MethodGet, target: "/sessions", auth: "Bearer nonsense"})
		wantError(t, "no principal", resp, http.StatusUnauthorized, protocol.CodeRequestUnauthenticated)
	})
}

// TestSessionRename: PATCH /sessions/{id} names a session its owner
// holds; bad bodies and titles are 400 and change nothing; another
// principal's session is 404 as one nobody has.
func TestSessionRename(t *testing.T) {
	forEachStore(t, func(t *testing.T, f *fixture) {
		f.runTurn("s1", alice, turnSpec{id: "t1"})
		f.runTurn("s2", alice, turnSpec{id: "t2"})
		item := decode[api.SessionListItem](t, "rename", f.do(f.history, patch("/sessions/s1", alice, `{"title":" Sourdough notes "}`)))
		if item.SessionID != "s1" || item.Title == nil || *item.Title != "Sourdough notes" || item.LastTurn == nil || item.LastTurn.Preview != "answer t1" {
			t.Fatalf("rename answered %+v", item)
		}
		list := decode[api.SessionList](t, "list", f.do(f.history, get("/sessions", alice)))
		if got := listedIDs(list); !slices.Equal(got, []string{"s2", "s1"}) || *list.Sessions[1].Title != "Sourdough notes" {
			t.Fatalf("list after rename: %v %+v", got, list.Sessions)
		}
		for name, tc := range map[string]struct {
			body, code string
			status     int
		}{
			"empty title":    {`{"title":""}`, protocol.CodeRequestInvalidBody, 400},
			"spaces":         {`{"title":"   "}`, protocol.CodeRequestInvalidBody, 400},
			"newline":        {`{"title":"zz\nzz"}`, protocol.CodeRequestInvalidBody, 400},
			"bidi override":  {`{"title":"zz\u202ezz"}`, protocol.CodeRequestInvalidBody, 400},
			"zero width":     {`{"title":"zz\u200bzz"}`, protocol.CodeRequestInvalidBody, 400},
			"too long":       {`{"title":"` + strings.Repeat("z", 121) + `"}`, protocol.CodeRequestInvalidBody, 400},
			"null title":     {`{"title":null}`, protocol.CodeRequestInvalidBody, 400},
			"no title":       {`{}`, protocol.CodeRequestInvalidBody, 400},
			"number":         {`{"title":7}`, protocol.CodeRequestInvalidBody, 400},
			"another member": {`{"title":"zz","color":"red"}`, protocol.CodeRequestInvalidBody, 400},
			"duplicate":      {`{"title":"zz","title":"yy"}`, protocol.CodeRequestInvalidBody, 400},
			"case variant":   {`{"Title":"zz"}`, protocol.CodeRequestInvalidBody, 400},
			"not JSON":       {`zz`, protocol.CodeRequestInvalidBody, 400},
			"trailing data":  {`{"title":"zz"} {}`, protocol.CodeRequestInvalidBody, 400},
			"too large":      {`{"title":"` + strings.Repeat("z", 5000) + `"}`, protocol.CodeRequestTooLarge, 413},
		} {
			resp := f.do(f.history, patch("/sessions/s1", alice, tc.body))
			wantError(t, name, resp, tc.status, tc.code)
			if strings.Contains(string(resp.body), "zz") {
				t.Errorf("%s: the body echoes the input: %s", name, resp.body)
			}
		}
		resp := f.do(f.history, request{method: http.MethodPatch, target: "/sessions/s1", as: &alice, body: `{"title":"x"}`})
		wantError(t, "no content type", resp, http.StatusUnsupportedMediaType, protocol.CodeRequestUnsupportedMediaType)
		for _, target := range []string{"/sessions/s1", "/sessions/nobody"} {
			other := f.do(f.history, patch(target, mallory, `{"title":"mine"}`))
			wantError(t, "mallory renames "+target, other, http.StatusNotFound, protocol.CodeSessionNotFound)
		}
		absent := f.do(f.history, patch("/sessions/nobody", alice, `{"title":"mine"}`))
		if string(absent.body) != string(f.do(f.history, patch("/sessions/s1", mallory, `{"title":"mine"}`)).body) {
			t.Error("another principal's session and one nobody has answer differently")
		}
		resp = f.do(f.history, request{method: http.MethodPut, target: "/sessions/s1", as: &alice})
		if resp.status != http.StatusMethodNotAllowed || !strings.Contains(string(resp.body), protocol.CodeRequestMethodNotAllowed) {
			t.Errorf("PUT: %d %s", resp.status, resp.body)
		}
		if got := resp.header.Get("Allow"); got != "GET, PATCH, DELETE" {
			t.Errorf("Allow %q", got)
		}
		list = decode[api.SessionList](t, "list after refusals", f.do(f.history, get("/sessions", alice)))
		if *list.Sessions[1].Title != "Sourdough notes" {
			t.Errorf("a refused rename changed the title: %+v", list.Sessions[1])
		}
	})
}

// TestFeedback: PUT and DELETE /sessions/{id}/turns/{turnId}/feedback set,
// replace and remove the owner's rating of an answer; /turns shows it and
// /messages carries it in the assistant message's metadata; bad bodies
// are 400 and store nothing; another principal's session is 404.
func TestFeedback(t *testing.T) {
	forEachStore(t, func(t *testing.T, f *fixture) {
		f.runTurn("s1", alice, turnSpec{id: "t1", artifacts: []chat.ArtifactReference{{EntryPath: "a.md", ArtifactType: chat.ArtifactDocument}}})
		got := decode[api.Feedback](t, "put", f.do(f.history, put("/sessions/s1/turns/t1/feedback", alice, `{"rating":"down","comment":"wrong\nyear"}`)))
		if got.Rating != "down" || got.Comment != "wrong\nyear" || got.CreatedAt == "" {
			t.Fatalf("PUT answered %+v", got)
		}
		got = decode[api.Feedback](t, "replace", f.do(f.history, put("/sessions/s1/turns/t1/feedback", alice, `{"rating":"up"}`)))
		if got.Rating != "up" || got.Comment != "" {
			t.Fatalf("a replacement answered %+v", got)
		}
		turns := decode[sessionapi.TurnPage](t, "turns", f.do(f.history, get("/sessions/s1/turns", alice)))
		if fb := turns.Turns[0].Feedback; fb == nil || fb.Rating != "up" {
			t.Errorf("/turns shows %+v", fb)
		}
		msgs := decode[sessionapi.MessagePage](t, "messages", f.do(f.history, get("/sessions/s1/messages", alice)))
		if md := string(msgs.Messages[1].Metadata); !strings.Contains(md, `"feedback":{"rating":"up","createdAt":`) || !strings.Contains(md, `"artifacts":[`) {
			t.Errorf("the assistant message's metadata: %s", md)
		}
		if string(msgs.Messages[0].Metadata) != "" && strings.Contains(string(msgs.Messages[0].Metadata), "feedback") {
			t.Errorf("the user message carries the feedback: %s", msgs.Messages[0].Metadata)
		}
		for name, tc := range map[string]struct {
			body, code string
			status     int
		}{
			"no rating":      {`{}`, protocol.CodeRequestInvalidBody, 400},
			"null rating":    {`{"rating":null}`, protocol.CodeRequestInvalidBody, 400},
			"another rating": {`{"rating":"zz"}`, protocol.CodeRequestInvalidBody, 400},
			"upper case":     {`{"rating":"UP"}`, protocol.CodeRequestInvalidBody, 400},
			"a control":      {`{"rating":"up","comment":"zz\u001bzz"}`, protocol.CodeRequestInvalidBody, 400},
			"too long":       {`{"rating":"up","comment":"` + strings.Repeat("z", 1001) + `"}`, protocol.CodeRequestInvalidBody, 400},
			"createdAt sent": {`{"rating":"up","createdAt":"zz"}`, protocol.CodeRequestInvalidBody, 400},
			"another member": {`{"rating":"up","stars":5}`, protocol.CodeRequestInvalidBody, 400},
			"not JSON":       {`zz`, protocol.CodeRequestInvalidBody, 400},
		} {
			resp := f.do(f.history, put("/sessions/s1/turns/t1/feedback", alice, tc.body))
			wantError(t, name, resp, tc.status, tc.code)
			if strings.Contains(string(resp.body), "zz") {
				t.Errorf("%s: the body echoes the input: %s", name, resp.body)
			}
		}
		wantError(t, "mallory", f.do(f.history, put("/sessions/s1/turns/t1/feedback", mallory, `{"rating":"down"}`)), 404, protocol.CodeSessionNotFound)
		wantError(t, "unknown turn", f.do(f.history, put("/sessions/s1/turns/t9/feedback", alice, `{"rating":"down"}`)), 404, protocol.CodeTurnNotFound)
		f.claim("s1", alice, turnSpec{id: "t2"})
		wantError(t, "a turn not saved", f.do(f.history, put("/sessions/s1/turns/t2/feedback", alice, `{"rating":"down"}`)), 404, protocol.CodeTurnNotFound)
		resp := f.do(f.history, request{method: http.MethodPost, target: "/sessions/s1/turns/t1/feedback", as: &alice})
		if resp.status != http.StatusMethodNotAllowed || resp.header.Get("Allow") != "PUT, DELETE" {
			t.Errorf("POST: %d, Allow %q", resp.status, resp.header.Get("Allow"))
		}
		turns = decode[sessionapi.TurnPage](t, "turns after refusals", f.do(f.history, get("/sessions/s1/turns", alice)))
		if fb := turns.Turns[0].Feedback; fb == nil || fb.Rating != "up" {
			t.Errorf("a refused PUT changed the feedback: %+v", fb)
		}
		del := f.do(f.history, request{method: http.MethodDelete, target: "/sessions/s1/turns/t1/feedback", as: &alice})
		if del.status != http.StatusNoContent || len(del.body) != 0 {
			t.Fatalf("DELETE: %d %s", del.status, del.body)
		}
		turns = decode[sessionapi.TurnPage](t, "turns after DELETE", f.do(f.history, get("/sessions/s1/turns", alice)))
		if turns.Turns[0].Feedback != nil {
			t.Errorf("feedback after DELETE: %+v", turns.Turns[0].Feedback)
		}
	})
}

// TestFeedbackMetric: a recorded rating is counted in the request's EMF
// document by rating; a removal and a refused rating are not.
func TestFeedbackMetric(t *testing.T) {
	t.Parallel()
	store := memory.New(memory.Options{})
	var docs bytes.Buffer
	rec, err := telemetry.NewRecorder(&docs, telemetry.RecorderOptions{Namespace: "Turnstream", Service: "stack", Function: "history"})
	if err != nil {
		t.Fatal(err)
	}
	history, _ := newHandlers(t, sessionapi.Options{Store: store, Authenticator: devAuthenticator(t), Metrics: rec})
	f := &fixture{t: t, ctx: t.Context(), clock: storetest.NewClock(start), store: store, history: history}
	f.runTurn("s1", alice, turnSpec{id: "t1"})
	decode[api.Feedback](t, "put", f.do(f.history, put("/sessions/s1/turns/t1/feedback", alice, `{"rating":"up"}`)))
	f.do(f.history, put("/sessions/s1/turns/t1/feedback", alice, `{"rating":"meh"}`))
	f.do(f.history, request{method: http.MethodDelete, target: "/sessions/s1/turns/t1/feedback", as: &alice})
	var counted []string
	for _, line := range strings.Split(strings.TrimSpace(docs.String()), "\n") {
		doc, err := emfcheck.Check([]byte(line))
		if err != nil {
			t.Fatalf("document %s: %v", line, err)
		}
		if v := doc.Metrics[telemetry.MetricFeedback]; len(v) == 1 && v[0] == 1 {
			counted = append(counted, doc.DimensionValue(telemetry.DimRating))
		}
	}
	if !slices.Equal(counted, []string{"up"}) {
		t.Errorf("ratings counted %v, want [up]", counted)
	}
}
