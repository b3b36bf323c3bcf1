package sessionapi_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/sessionapi"
)

func TestSessionCurrentTurn(t *testing.T) {
	forEachStore(t, func(t *testing.T, f *fixture) {
		f.runTurn("s1", alice, turnSpec{id: "t1"})
		c := f.claim("s1", alice, turnSpec{id: "t2"})

		got := decode[sessionapi.SessionSummary](t, "running", f.do(f.history, get("/sessions/s1", alice)))
		want := &sessionapi.CurrentTurn{
			TurnID:              "t2",
			Status:              "running",
			ExpiresAt:           c.Lease.ExpiresAt.UnixMilli(),
			PendingInteractions: []sessionapi.PendingInteraction{},
		}
		if got.CurrentTurn == nil || got.CurrentTurn.TurnID != want.TurnID || got.CurrentTurn.Status != want.Status ||
			got.CurrentTurn.ExpiresAt != want.ExpiresAt || got.CurrentTurn.PendingInteractions == nil {
			t.Fatalf("running: currentTurn %+v, want %+v", got.CurrentTurn, want)
		}
		if got.SessionID != "s1" || got.DefinitionID != "assistant" || got.DefinitionRevision != 1 || got.Sequence < 2 {
			t.Errorf("running: summary %+v", got)
		}
		if _, err := time.Parse(time.RFC3339Nano, got.CreatedAt); err != nil || !protocol.IsCreatedAt(got.CreatedAt) {
			t.Errorf("running: createdAt %q not ISO with milliseconds", got.CreatedAt)
		}
		// The raw body: pendingInteractions is [] and expiresAt an integer.
		raw := f.do(f.history, get("/sessions/s1", alice))
		if !strings.Contains(string(raw.body), `"pendingInteractions":[]`) ||
			!strings.Contains(string(raw.body), fmt.Sprintf(`"expiresAt":%d`, want.ExpiresAt)) {
			t.Errorf("running: body %s", raw.body)
		}

		f.complete("s1", c, turnSpec{id: "t2"})
		got = decode[sessionapi.SessionSummary](t, "released", f.do(f.history, get("/sessions/s1", alice)))
		if got.CurrentTurn != nil {
			t.Fatalf("released: currentTurn %+v, want null", got.CurrentTurn)
		}
		raw = f.do(f.history, get("/sessions/s1", alice))
		if !strings.Contains(string(raw.body), `"currentTurn":null`) {
			t.Errorf("released: body %s lacks currentTurn null", raw.body)
		}

		// A lease left behind by a crashed turn stops counting once expired.
		f.claim("s1", alice, turnSpec{id: "t3"})
		f.clock.Advance(leaseDuration - time.Millisecond)
		got = decode[sessionapi.SessionSummary](t, "before expiry", f.do(f.history, get("/sessions/s1", alice)))
		if got.CurrentTurn == nil {
			t.Fatal("before expiry: currentTurn null")
		}
		f.clock.Advance(time.Millisecond)
		got = decode[sessionapi.SessionSummary](t, "expired", f.do(f.history, get("/sessions/s1", alice)))
		if got.CurrentTurn != nil {
			t.Fatalf("expired: currentTurn %+v, want null", got.CurrentTurn)
		}
	})
}

func TestSessionNotFound(t *testing.T) {
	forEachStore(t, func(t *testing.T, f *fixture) {
		f.runTurn("s1", alice, turnSpec{id: "t1"})
		cases := map[string]struct {
			req    request
			status int
			code   string
		}{
			"missing session":       {get("/sessions/nope", alice), 404, protocol.CodeSessionNotFound},
			"another principal":     {get("/sessions/s1", mallory), 404, protocol.CodeSessionNotFound},
			"turns of another":      {get("/sessions/s1/turns", mallory), 404, protocol.CodeSessionNotFound},
			"messages of another":   {get("/sessions/s1/messages", mallory), 404, protocol.CodeSessionNotFound},
			"id not a SafeId":       {get("/sessions/-s1", alice), 404, protocol.CodeSessionNotFound},
			"id with escaped slash": {get("/sessions/s1%2Fx/turns", alice), 404, protocol.CodeSessionNotFound},
			"id too long":           {get("/sessions/"+strings.Repeat("a", 129), alice), 404, protocol.CodeSessionNotFound},
			"unauthenticated":       {request{method: "GET", target: "/sessions/s1", auth: "Basic YWxpY2U6eA=="}, 401, protocol.CodeRequestUnauthenticated},
		}
		for name, tc := range cases {
			t.Run(name, func(t *testing.T) {
				resp := f.do(f.history, tc.req)
				wantError(t, name, resp, tc.status, tc.code)
			})
		}
	})
}

func TestRoutes(t *testing.T) {
	forEachStore(t, func(t *testing.T, f *fixture) {
		f.runTurn("s1", alice, turnSpec{id: "t1"})
		cases := map[string]struct {
			h      http.Handler
			req    request
			status int
			code   string
			allow  string
		}{
			"history root":              {f.history, get("/", alice), 404, protocol.CodeRequestNotFound, ""},
			"history unknown":           {f.history, get("/sessions/s1/other", alice), 404, protocol.CodeRequestNotFound, ""},
			"history trailing slash":    {f.history, get("/sessions/s1/", alice), 404, protocol.CodeRequestNotFound, ""},
			"history dot segments":      {f.history, get("/sessions/x/../s1", alice), 404, protocol.CodeRequestNotFound, ""},
			"history double slash":      {f.history, get("/sessions//s1", alice), 404, protocol.CodeRequestNotFound, ""},
			"history artifacts route":   {f.history, get("/sessions/s1/turns/t1/artifacts", alice), 404, protocol.CodeRequestNotFound, ""},
			"history POST":              {f.history, request{method: "POST", target: "/sessions/s1", contentType: "application/json", body: "{}"}, 405, protocol.CodeRequestMethodNotAllowed, "GET, PATCH, DELETE"},
			"history POST list":         {f.history, request{method: "POST", target: "/sessions", contentType: "application/json", body: "{}"}, 405, protocol.CodeRequestMethodNotAllowed, "GET"},
			"history HEAD":              {f.history, request{method: "HEAD", target: "/sessions/s1/turns"}, 405, protocol.CodeRequestMethodNotAllowed, "GET"},
			"history DELETE messages":   {f.history, request{method: "DELETE", target: "/sessions/s1/messages"}, 405, protocol.CodeRequestMethodNotAllowed, "GET"},
			"artifacts root":            {f.artifacts, get("/", alice), 404, protocol.CodeRequestNotFound, ""},
			"artifacts history route":   {f.artifacts, get("/sessions/s1", alice), 404, protocol.CodeRequestNotFound, ""},
			"artifacts POST":            {f.artifacts, request{method: "POST", target: "/sessions/s1/turns/t1/artifacts", contentType: "application/json", body: "{}"}, 405, protocol.CodeRequestMethodNotAllowed, "GET, PUT"},
			"artifacts DELETE":          {f.artifacts, request{method: "DELETE", target: "/sessions/s1/turns/t1/artifacts"}, 405, protocol.CodeRequestMethodNotAllowed, "GET, PUT"},
			"artifacts turn not SafeId": {f.artifacts, get("/sessions/s1/turns/_t1/artifacts", alice), 404, protocol.CodeTurnNotFound, ""},
		}
		for name, tc := range cases {
			t.Run(name, func(t *testing.T) {
				resp := f.do(tc.h, tc.req)
				if tc.code == protocol.CodeRequestMethodNotAllowed {
					// The message names the route's own methods, never
					// contradicting Allow (AgentsKit's "Only POST" is the
					// turn route's).
					want := map[string]string{"GET": "Only GET is supported.", "GET, PUT": "Only GET and PUT are supported.", "GET, PATCH, DELETE": "Only GET, PATCH and DELETE are supported."}[tc.allow]
					body := fmt.Sprintf(`{"error":{"version":1,"code":"REQUEST_METHOD_NOT_ALLOWED","message":%q,"retryable":false}}`, want)
					if resp.status != tc.status || string(resp.body) != body {
						t.Fatalf("got %d %s, want %d %s", resp.status, resp.body, tc.status, body)
					}
				} else {
					wantError(t, name, resp, tc.status, tc.code)
				}
				if got := resp.header.Get("Allow"); got != tc.allow {
					t.Errorf("Allow %q, want %q", got, tc.allow)
				}
			})
		}
	})
}

func TestTurnsShape(t *testing.T) {
	forEachStore(t, func(t *testing.T, f *fixture) {
		refs := []chat.ArtifactReference{{EntryPath: "reports/index.html", ArtifactType: chat.ArtifactWebpage}}
		f.runTurn("s1", alice, turnSpec{id: "t1"})
		// A turn with no assistant text, only artifacts.
		f.runTurn("s1", alice, turnSpec{id: "t2", artifacts: refs, messages: func(id, at string) []protocol.Message {
			return []protocol.Message{
				{ID: id + "-user", Role: protocol.RoleUser, Content: "make a report", Status: protocol.MessageComplete, CreatedAt: at},
				{ID: id + "-assistant", Role: protocol.RoleAssistant, Content: "", Status: protocol.MessageComplete, CreatedAt: at},
			}
		}})
		// A failed turn with only the user message.
		f.runTurn("s1", alice, turnSpec{id: "t3", status: chat.TurnError, messages: func(id, at string) []protocol.Message {
			return standardMessages(id, at)[:1]
		}})

		resp := f.do(f.history, get("/sessions/s1/turns?order=asc", alice))
		page := decode[sessionapi.TurnPage](t, "turns", resp)
		if got := ids(page.Turns); !slices.Equal(got, []string{"t1", "t2", "t3"}) {
			t.Fatalf("turns %v", got)
		}
		if page.HasMore || page.NextCursor != nil {
			t.Errorf("hasMore %v nextCursor %v", page.HasMore, page.NextCursor)
		}
		t1, t2, t3 := page.Turns[0], page.Turns[1], page.Turns[2]
		if t1.Ordinal != 1 || t1.Status != chat.TurnComplete || t1.Lineage.Operation != protocol.OperationSubmit ||
			t1.Error != nil || t1.Usage.TotalTokens != 5 || len(t1.Artifacts) != 0 || t1.CompletedAt == nil {
			t.Errorf("t1 %+v", t1)
		}
		if !slices.Equal(t2.Artifacts, refs) || len(t2.Messages) != 2 || t2.Messages[1].Content != "" {
			t.Errorf("t2 (no assistant text) %+v", t2)
		}
		if t3.Status != chat.TurnError || t3.Error == nil || t3.Error.Code != protocol.CodeChatTurnFailed || len(t3.Messages) != 1 {
			t.Errorf("t3 (failed) %+v", t3)
		}
		// Exact wire spellings: [] for no artifacts, null for no error.
		var raw struct {
			Turns []map[string]json.RawMessage `json:"turns"`
		}
		if err := json.Unmarshal(resp.body, &raw); err != nil {
			t.Fatal(err)
		}
		for key, want := range map[string]string{"artifacts": "[]", "error": "null", "feedback": "null", "lineage": `{"operation":"submit"}`, "turnId": `"t1"`} {
			if got := string(raw.Turns[0][key]); got != want {
				t.Errorf("t1 %s = %s, want %s", key, got, want)
			}
		}
		wantKeys := []string{"artifacts", "completedAt", "error", "expiresAt", "feedback", "lineage", "messages", "ordinal", "startedAt", "status", "turnId", "usage"}
		if got := slices.Sorted(maps.Keys(raw.Turns[0])); !slices.Equal(got, wantKeys) {
			t.Errorf("t1 members %v, want %v", got, wantKeys)
		}

		// The messages route carries t2's artifacts on its (empty) assistant message.
		msgs := decode[sessionapi.MessagePage](t, "messages", f.do(f.history, get("/sessions/s1/messages?order=asc", alice)))
		if len(msgs.Messages) != 5 {
			t.Fatalf("messages: %d, want 5", len(msgs.Messages))
		}
		assistant := msgs.Messages[3]
		if assistant.ID != "t2-assistant" || string(assistant.Metadata) != `{"artifacts":[{"entryPath":"reports/index.html","artifactType":"webpage"}]}` {
			t.Errorf("t2 assistant %s metadata %s", assistant.ID, assistant.Metadata)
		}
		if msgs.Messages[1].Metadata != nil {
			t.Errorf("t1 assistant metadata %s, want none (no artifacts)", msgs.Messages[1].Metadata)
		}
	})
}

func TestMessagesMetadataMerge(t *testing.T) {
	forEachStore(t, func(t *testing.T, f *fixture) {
		refs := []chat.ArtifactReference{
			{EntryPath: "a/b.pdf", ArtifactType: chat.ArtifactDocument},
			{EntryPath: "img <1>.png", ArtifactType: chat.ArtifactImage},
		}
		cases := map[string]struct {
			metadata string
			want     string
		}{
			"no metadata":   {"", `{"artifacts":[{"entryPath":"a/b.pdf","artifactType":"document"},{"entryPath":"img <1>.png","artifactType":"image"}]}`},
			"other keys":    {`{"model":"echo","finish":{"reason":"stop"}}`, `{"model":"echo","finish":{"reason":"stop"},"artifacts":[{"entryPath":"a/b.pdf","artifactType":"document"},{"entryPath":"img <1>.png","artifactType":"image"}]}`},
			"replaces key":  {`{"z":1,"artifacts":"stale","a":[true]}`, `{"z":1,"artifacts":[{"entryPath":"a/b.pdf","artifactType":"document"},{"entryPath":"img <1>.png","artifactType":"image"}],"a":[true]}`},
			"escaped keys":  {`{"\u00e9t\u00e9":"<b>"}`, `{"été":"<b>","artifacts":[{"entryPath":"a/b.pdf","artifactType":"document"},{"entryPath":"img <1>.png","artifactType":"image"}]}`},
			"empty object ": {`{}`, `{"artifacts":[{"entryPath":"a/b.pdf","artifactType":"document"},{"entryPath":"img <1>.png","artifactType":"image"}]}`},
		}
		i := 0
		for name, tc := range cases {
			t.Run(name, func(t *testing.T) {
				i++
				sid := fmt.Sprintf("merge%d", i)
				f.runTurn(sid, alice, turnSpec{id: "t1", artifacts: refs, messages: func(id, at string) []protocol.Message {
					msgs := standardMessages(id, at)
					// Two assistant messages: only the last gets the artifacts.
					msgs = append(msgs, protocol.Message{ID: id + "-assistant-2", Role: protocol.RoleAssistant, Content: "more", Status: protocol.MessageComplete, CreatedAt: at})
					if tc.metadata != "" {
						msgs[2].Metadata = json.RawMessage(tc.metadata)
					}
					return msgs
				}})
				page := decode[sessionapi.MessagePage](t, name, f.do(f.history, get("/sessions/"+sid+"/messages", alice)))
				if len(page.Messages) != 3 {
					t.Fatalf("%d messages", len(page.Messages))
				}
				if got := string(page.Messages[2].Metadata); got != tc.want {
					t.Errorf("metadata\n got  %s\n want %s", got, tc.want)
				}
				if page.Messages[1].Metadata != nil {
					t.Errorf("first assistant message got metadata %s", page.Messages[1].Metadata)
				}
				// /turns keeps the messages exactly as stored.
				turns := decode[sessionapi.TurnPage](t, name, f.do(f.history, get("/sessions/"+sid+"/turns", alice)))
				if got, want := string(turns.Turns[0].Messages[2].Metadata), compactJSON(t, tc.metadata); got != want {
					t.Errorf("/turns metadata %s, want as stored %s", got, want)
				}
			})
		}
	})
}

func compactJSON(t *testing.T, s string) string {
	t.Helper()
	if s == "" {
		return ""
	}
	var v json.RawMessage
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	// Re-encoded as the handler does: verbatim bytes of a compact object.
	return string(v)
}

func ids(turns []sessionapi.TurnSummary) []string {
	out := make([]string, len(turns))
	for i, t := range turns {
		out[i] = t.TurnID
	}
	return out
}

// pageTurns follows nextCursor from the first page of /turns with query q
// until hasMore is false and returns each page's turn ids.
func pageTurns(t *testing.T, f *fixture, sid string, q url.Values) [][]string {
	t.Helper()
	var pages [][]string
	for range 1000 {
		resp := f.do(f.history, get("/sessions/"+sid+"/turns?"+q.Encode(), alice))
		page := decode[sessionapi.TurnPage](t, "page", resp)
		if len(page.Turns) == 0 {
			t.Fatalf("empty page %d (hasMore %v)", len(pages), page.HasMore)
		}
		pages = append(pages, ids(page.Turns))
		if page.HasMore != (page.NextCursor != nil) {
			t.Fatalf("hasMore %v but nextCursor %v", page.HasMore, page.NextCursor)
		}
		if !page.HasMore {
			return pages
		}
		q.Set("cursor", *page.NextCursor)
	}
	t.Fatal("paging did not end")
	return nil
}

func TestPagination(t *testing.T) {
	forEachStore(t, func(t *testing.T, f *fixture) {
		f.runTurns("s1", alice, "t", 6) // t-000 .. t-005
		all := []string{"t-000", "t-001", "t-002", "t-003", "t-004", "t-005"}
		rev := slices.Clone(all)
		slices.Reverse(rev)
		cases := map[string]struct {
			query url.Values
			want  [][]string
		}{
			"default is desc":         {url.Values{}, [][]string{rev}},
			"asc limit 4":             {url.Values{"order": {"asc"}, "limit": {"4"}}, [][]string{all[:4], all[4:]}},
			"desc limit 4":            {url.Values{"order": {"desc"}, "limit": {"4"}}, [][]string{rev[:4], rev[4:]}},
			"asc exactly full pages":  {url.Values{"order": {"asc"}, "limit": {"3"}}, [][]string{all[:3], all[3:]}},
			"desc exactly full pages": {url.Values{"limit": {"2"}}, [][]string{rev[:2], rev[2:4], rev[4:]}},
			"limit 1":                 {url.Values{"order": {"asc"}, "limit": {"1"}}, [][]string{all[:1], all[1:2], all[2:3], all[3:4], all[4:5], all[5:]}},
			"limit equals total":      {url.Values{"order": {"asc"}, "limit": {"6"}}, [][]string{all}},
			"limit 100":               {url.Values{"order": {"asc"}, "limit": {"100"}}, [][]string{all}},
			"unknown params ignored":  {url.Values{"order": {"asc"}, "limit": {"6"}, "foo": {"bar"}, "Limit": {"x"}}, [][]string{all}},
			"empty cursor first page": {url.Values{"order": {"asc"}, "limit": {"6"}, "cursor": {""}}, [][]string{all}},
		}
		for name, tc := range cases {
			t.Run(name, func(t *testing.T) {
				if got := pageTurns(t, f, "s1", tc.query); !equalPages(got, tc.want) {
					t.Fatalf("pages %v, want %v", got, tc.want)
				}
			})
		}

		t.Run("superseded excluded", func(t *testing.T) {
			f.runTurns("s2", alice, "u", 4) // u-000..u-003, ordinals 1..4
			// An edit of u-001 supersedes ordinals 2..4.
			f.runTurn("s2", alice, turnSpec{
				id:            "u-edit",
				lineage:       protocol.Lineage{Operation: protocol.OperationEdit, ParentTurnID: "u-001", SourceMessageID: "u-001-user"},
				supersedeFrom: 2,
			})
			want := [][]string{{"u-000"}, {"u-edit"}}
			if got := pageTurns(t, f, "s2", url.Values{"order": {"asc"}, "limit": {"1"}}); !equalPages(got, want) {
				t.Fatalf("asc pages %v, want %v", got, want)
			}
			want = [][]string{{"u-edit"}, {"u-000"}}
			if got := pageTurns(t, f, "s2", url.Values{"limit": {"1"}}); !equalPages(got, want) {
				t.Fatalf("desc pages %v, want %v", got, want)
			}
			page := decode[sessionapi.TurnPage](t, "edit", f.do(f.history, get("/sessions/s2/turns?limit=1", alice)))
			if l := page.Turns[0].Lineage; l.Operation != protocol.OperationEdit || l.ParentTurnID != "u-001" || l.SourceMessageID != "u-001-user" {
				t.Errorf("lineage %+v", l)
			}
		})

		t.Run("appends while paging", func(t *testing.T) {
			f.runTurns("s3", alice, "v", 3)
			first := decode[sessionapi.TurnPage](t, "first", f.do(f.history, get("/sessions/s3/turns?order=asc&limit=2", alice)))
			f.runTurns("s3", alice, "w", 1)
			second := decode[sessionapi.TurnPage](t, "second", f.do(f.history,
				get("/sessions/s3/turns?order=asc&limit=2&cursor="+url.QueryEscape(*first.NextCursor), alice)))
			if got := append(ids(first.Turns), ids(second.Turns)...); !slices.Equal(got, []string{"v-000", "v-001", "v-002", "w-000"}) {
				t.Fatalf("turns %v", got)
			}
		})
	})
}

func TestPaginationErrors(t *testing.T) {
	forEachStore(t, func(t *testing.T, f *fixture) {
		f.runTurns("a", alice, "t", 3)
		f.runTurns("b", alice, "t", 3)
		cursorOf := func(sid, query string) string {
			t.Helper()
			page := decode[sessionapi.TurnPage](t, "cursor", f.do(f.history, get("/sessions/"+sid+"/turns?"+query, alice)))
			if page.NextCursor == nil {
				t.Fatal("no cursor")
			}
			return *page.NextCursor
		}
		descA := cursorOf("a", "limit=1")
		ascA := cursorOf("a", "limit=1&order=asc")
		tampered := []byte(descA) // one base64url character changed
		if mid := len(tampered) / 2; tampered[mid] == 'A' {
			tampered[mid] = 'B'
		} else {
			tampered[mid] = 'A'
		}

		cases := map[string]struct {
			target string
			code   string
		}{
			"limit 0":                    {"/sessions/a/turns?limit=0", protocol.CodeRequestInvalidQuery},
			"limit 101":                  {"/sessions/a/turns?limit=101", protocol.CodeRequestInvalidQuery},
			"limit negative":             {"/sessions/a/turns?limit=-1", protocol.CodeRequestInvalidQuery},
			"limit plus sign":            {"/sessions/a/turns?limit=%2B5", protocol.CodeRequestInvalidQuery},
			"limit fraction":             {"/sessions/a/turns?limit=1.0", protocol.CodeRequestInvalidQuery},
			"limit exponent":             {"/sessions/a/turns?limit=1e1", protocol.CodeRequestInvalidQuery},
			"limit word":                 {"/sessions/a/turns?limit=ten", protocol.CodeRequestInvalidQuery},
			"limit empty":                {"/sessions/a/turns?limit=", protocol.CodeRequestInvalidQuery},
			"limit huge":                 {"/sessions/a/turns?limit=99999999999999999999", protocol.CodeRequestInvalidQuery},
			"limit repeated":             {"/sessions/a/turns?limit=1&limit=2", protocol.CodeRequestInvalidQuery},
			"order upper case":           {"/sessions/a/turns?order=DESC", protocol.CodeRequestInvalidQuery},
			"order unknown":              {"/sessions/a/turns?order=newest", protocol.CodeRequestInvalidQuery},
			"order empty":                {"/sessions/a/turns?order=", protocol.CodeRequestInvalidQuery},
			"bad query escape":           {"/sessions/a/turns?limit=%zz", protocol.CodeRequestInvalidQuery},
			"messages bad limit":         {"/sessions/a/messages?limit=0", protocol.CodeRequestInvalidQuery},
			"tampered cursor":            {"/sessions/a/turns?limit=1&cursor=" + url.QueryEscape(string(tampered)), protocol.CodeRequestInvalidCursor},
			"garbage cursor":             {"/sessions/a/turns?cursor=not-a-cursor", protocol.CodeRequestInvalidCursor},
			"cursor of another session":  {"/sessions/b/turns?limit=1&cursor=" + url.QueryEscape(descA), protocol.CodeRequestInvalidCursor},
			"cursor of another order":    {"/sessions/a/turns?limit=1&order=asc&cursor=" + url.QueryEscape(descA), protocol.CodeRequestInvalidCursor},
			"asc cursor used desc":       {"/sessions/a/turns?limit=1&cursor=" + url.QueryEscape(ascA), protocol.CodeRequestInvalidCursor},
			"messages cursor of another": {"/sessions/b/messages?limit=1&cursor=" + url.QueryEscape(descA), protocol.CodeRequestInvalidCursor},
			"cursor repeated":            {"/sessions/a/turns?cursor=" + url.QueryEscape(descA) + "&cursor=" + url.QueryEscape(descA), protocol.CodeRequestInvalidQuery},
		}
		for name, tc := range cases {
			t.Run(name, func(t *testing.T) {
				resp := f.do(f.history, get(tc.target, alice))
				wantError(t, name, resp, http.StatusBadRequest, tc.code)
				if strings.Contains(string(resp.body), "zz") || strings.Contains(string(resp.body), "ten") {
					t.Errorf("body echoes input: %s", resp.body)
				}
			})
		}
		// The cursor itself still works where it belongs.
		page := decode[sessionapi.TurnPage](t, "valid cursor", f.do(f.history, get("/sessions/a/turns?limit=1&cursor="+url.QueryEscape(descA), alice)))
		if got := ids(page.Turns); !slices.Equal(got, []string{"t-001"}) {
			t.Fatalf("valid cursor: %v", got)
		}
	})
}

func equalPages(a, b [][]string) bool {
	return slices.EqualFunc(a, b, func(x, y []string) bool { return slices.Equal(x, y) })
}

func TestMessagesPagesConcatenate(t *testing.T) {
	forEachStore(t, func(t *testing.T, f *fixture) {
		var want []protocol.Message
		for i := range 7 {
			spec := turnSpec{id: fmt.Sprintf("t%d", i)}
			if i%3 == 1 {
				// Some turns carry a tool message too: pages split on turns, not messages.
				spec.messages = func(id, at string) []protocol.Message {
					msgs := standardMessages(id, at)
					call := id + "-call"
					return append(msgs, protocol.Message{ID: id + "-tool", Role: protocol.RoleTool, Content: "42", Status: protocol.MessageComplete, CreatedAt: at, ToolCallID: &call})
				}
			}
			want = append(want, f.runTurn("s1", alice, spec).Messages...)
		}
		wantJSON := messageJSON(t, want)

		for _, limit := range []int{1, 2, 3, 7, 20} {
			t.Run(fmt.Sprintf("asc limit %d", limit), func(t *testing.T) {
				pages := pageMessages(t, f, "s1", url.Values{"order": {"asc"}, "limit": {fmt.Sprint(limit)}})
				if got := messageJSON(t, slices.Concat(pages...)); got != wantJSON {
					t.Fatalf("asc pages concatenated\n got  %s\n want %s", got, wantJSON)
				}
			})
			t.Run(fmt.Sprintf("desc limit %d", limit), func(t *testing.T) {
				pages := pageMessages(t, f, "s1", url.Values{"limit": {fmt.Sprint(limit)}})
				// Each desc page is chronological; the pages go back in time.
				slices.Reverse(pages)
				if got := messageJSON(t, slices.Concat(pages...)); got != wantJSON {
					t.Fatalf("desc pages reversed and concatenated\n got  %s\n want %s", got, wantJSON)
				}
			})
		}
	})
}

// pageMessages follows nextCursor through /messages and returns each page.
func pageMessages(t *testing.T, f *fixture, sid string, q url.Values) [][]protocol.Message {
	t.Helper()
	var pages [][]protocol.Message
	for range 1000 {
		page := decode[sessionapi.MessagePage](t, "messages page", f.do(f.history, get("/sessions/"+sid+"/messages?"+q.Encode(), alice)))
		pages = append(pages, page.Messages)
		if !page.HasMore {
			return pages
		}
		q.Set("cursor", *page.NextCursor)
	}
	t.Fatal("paging did not end")
	return nil
}

func TestEmptySession(t *testing.T) {
	forEachStore(t, func(t *testing.T, f *fixture) {
		// A session whose only turn is still running has no visible turns.
		f.claim("s1", alice, turnSpec{id: "t1"})
		for _, target := range []string{"/sessions/s1/turns", "/sessions/s1/messages"} {
			resp := f.do(f.history, get(target, alice))
			if resp.status != http.StatusOK {
				t.Fatalf("%s: %d %s", target, resp.status, resp.body)
			}
			key := strings.TrimPrefix(target, "/sessions/s1/")
			want := `{"` + key + `":[],"nextCursor":null,"hasMore":false}`
			if string(resp.body) != want {
				t.Errorf("%s: body %s, want %s", target, resp.body, want)
			}
		}
	})
}
