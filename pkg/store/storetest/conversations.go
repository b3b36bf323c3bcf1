package storetest

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
)

// conversationCases prove chat.ConversationStore: a principal's list of
// sessions, its order, pages, search and titles.
func conversationCases() map[string]func(*testing.T, *env) {
	return map[string]func(*testing.T, *env){
		"ListedNewestFirstOnlyOwn": func(t *testing.T, env *env) {
			e := lists{env}
			e.listedTurn("s1", "t1", "first question about bread")
			e.clock.Advance(time.Second)
			e.listedTurn("s2", "t2", "second")
			e.clock.Advance(time.Second)
			e.listedTurn("s3", "t3", "third")
			e.clock.Advance(time.Second)
			e.claim("s4", "t4") // running: listed from its claim, with no title or status yet
			// Another principal's session, newest of all.
			e.clock.Advance(time.Second)
			c, err := e.store.ClaimTurn(e.ctx, foreignClaim("m1", "tm"))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.store.ReleaseTurn(e.ctx, chat.ReleaseRequest{Claim: c, Outcome: chat.OutcomeCompleted, Sequence: 1,
				Listing: &chat.Listing{Status: chat.TurnComplete, Title: "mallory's"}}); err != nil {
				t.Fatal(err)
			}
			page := e.listSessions(chat.SessionListRequest{Principal: alice})
			if got := listedIDs(page); !slices.Equal(got, []string{"s4", "s3", "s2", "s1"}) || page.NextCursor != "" {
				t.Fatalf("alice's list %v (cursor %q), want [s4 s3 s2 s1] and no cursor", got, page.NextCursor)
			}
			if running := page.Sessions[0]; running.Title != "" || running.LastStatus != "" || running.Preview != "" {
				t.Errorf("s4, running its first turn, listed as %+v", running)
			}
			first := page.Sessions[3]
			if first.Title != "first question about bread" || first.LastStatus != chat.TurnComplete ||
				first.Preview != "reply to t1" || !first.ActiveAt.Equal(start) || !first.CreatedAt.Equal(start) {
				t.Errorf("s1 listed as %+v", first)
			}
			for _, p := range []chat.Principal{aliceGlobex, host} {
				if page := e.listSessions(chat.SessionListRequest{Principal: p}); len(page.Sessions) != 0 {
					t.Errorf("%+v sees %v", p, listedIDs(page))
				}
			}
			if page := e.listSessions(chat.SessionListRequest{Principal: mallory}); !slices.Equal(listedIDs(page), []string{"m1"}) {
				t.Errorf("mallory sees %v, want [m1]", listedIDs(page))
			}
		},
		"PagesWithCursorsBoundToThePrincipal": func(t *testing.T, env *env) {
			e := lists{env}
			for i, id := range []string{"a", "b", "c", "d", "e"} {
				if i != 2 {
					e.clock.Advance(time.Millisecond) // b and c share a millisecond
				}
				e.listedTurn(id, "t-"+id, "question "+id)
			}
			var got []string
			req := chat.SessionListRequest{Principal: alice, Limit: 2}
			for range 10 {
				page := e.listSessions(req)
				got = append(got, listedIDs(page)...)
				if page.NextCursor == "" {
					break
				}
				if len(page.Sessions) != 2 {
					t.Fatalf("a page of %d sessions before the last", len(page.Sessions))
				}
				req.Cursor = page.NextCursor
			}
			// Sessions active in the same millisecond come in an order of
			// the store's, each once.
			if len(got) != 5 || got[0] != "e" || got[1] != "d" || got[4] != "a" || !slices.Contains(got[2:4], "b") || !slices.Contains(got[2:4], "c") {
				t.Fatalf("paged list %v, want e, d, then b and c, then a", got)
			}
			page := e.listSessions(chat.SessionListRequest{Principal: alice, Limit: 2})
			for name, req := range map[string]chat.SessionListRequest{
				"another principal's cursor": {Principal: mallory, Limit: 2, Cursor: page.NextCursor},
				"another tenant's cursor":    {Principal: aliceGlobex, Limit: 2, Cursor: page.NextCursor},
				"tampered":                   {Principal: alice, Limit: 2, Cursor: tamper(page.NextCursor)},
				"not a cursor":               {Principal: alice, Cursor: "not-a-cursor"},
				"a history page's cursor":    {Principal: alice, Cursor: chat.CursorCodec{Key: e.key}.Encode("a", chat.OrderDesc, 1)},
			} {
				_, err := e.store.ListSessions(e.ctx, req)
				wantErr(t, name, err, chat.ErrInvalidCursor)
			}
			for name, req := range map[string]chat.SessionListRequest{
				"limit 101":     {Principal: alice, Limit: chat.MaxSessionPageLimit + 1},
				"limit -1":      {Principal: alice, Limit: -1},
				"six words":     {Principal: alice, Query: "a b c d e f"},
				"a long query":  {Principal: alice, Query: strings.Repeat("q", chat.MaxSessionQueryRunes+1)},
				"a control":     {Principal: alice, Query: "bread\x00"},
				"invalid UTF-8": {Principal: alice, Query: "\xff"},
			} {
				_, err := e.store.ListSessions(e.ctx, req)
				wantErr(t, name, err, chat.ErrInvalidRequest)
			}
		},
		"LaterTurnMovesToTopKeepsTitle": func(t *testing.T, env *env) {
			e := lists{env}
			e.listedTurn("s1", "t1", "how do I bake bread")
			e.clock.Advance(time.Second)
			e.listedTurn("s2", "t2", "other")
			e.clock.Advance(time.Second)
			e.listedTurn("s1", "t1b", "and rye?")
			page := e.listSessions(chat.SessionListRequest{Principal: alice})
			if got := listedIDs(page); !slices.Equal(got, []string{"s1", "s2"}) {
				t.Fatalf("list %v, want [s1 s2]", got)
			}
			if s := page.Sessions[0]; s.Title != "how do I bake bread" || s.Preview != "reply to t1b" || !s.ActiveAt.Equal(start.Add(2*time.Second)) {
				t.Errorf("s1 after its second turn: %+v", s)
			}
		},
		"RenameKeepsOrderRefusesBadTitles": func(t *testing.T, env *env) {
			e := lists{env}
			e.listedTurn("s1", "t1", "first")
			e.clock.Advance(time.Second)
			e.listedTurn("s2", "t2", "second")
			l, err := e.store.RenameSession(e.ctx, "s1", alice, "  Sourdough notes  ")
			if err != nil || l.Title != "Sourdough notes" || l.SessionID != "s1" || l.Preview != "reply to t1" {
				t.Fatalf("rename: %+v, %v", l, err)
			}
			e.clock.Advance(time.Second)
			e.listedTurn("s1", "t1b", "more") // a renamed title stays
			e.listedTurn("s2", "t2b", "more")
			page := e.listSessions(chat.SessionListRequest{Principal: alice})
			if got := listedIDs(page); !slices.Equal(got, []string{"s2", "s1"}) || page.Sessions[1].Title != "Sourdough notes" {
				t.Fatalf("list after rename %v %+v", got, page.Sessions)
			}
			for name, title := range map[string]string{
				"empty": "", "spaces": "   ", "too long": strings.Repeat("x", chat.MaxTitleRunes+1),
				"newline": "a\nb", "bidi override": "a\u202eb", "zero width": "a\u200bb", "invalid UTF-8": "a\xffb",
			} {
				_, err := e.store.RenameSession(e.ctx, "s1", alice, title)
				wantErr(t, name, err, chat.ErrInvalidTitle)
			}
			if l, err := e.store.RenameSession(e.ctx, "s1", alice, strings.Repeat("é", chat.MaxTitleRunes)); err != nil || l.Title != strings.Repeat("é", chat.MaxTitleRunes) {
				t.Errorf("a title of %d two-byte characters: %v", chat.MaxTitleRunes, err)
			}
			for _, p := range []chat.Principal{mallory, aliceGlobex, host} {
				_, err := e.store.RenameSession(e.ctx, "s1", p, "mine now")
				wantErr(t, "rename by "+p.Subject+"@"+p.Tenant, err, chat.ErrSessionNotFound)
			}
			_, err = e.store.RenameSession(e.ctx, "nobody", alice, "x")
			wantErr(t, "rename of a session nobody has", err, chat.ErrSessionNotFound)
			if _, err := e.store.GetSession(e.ctx, "nobody", alice); !errors.Is(err, chat.ErrSessionNotFound) {
				t.Errorf("a refused rename created the session: %v", err)
			}
			// A session renamed before its first turn ends keeps that title.
			c := e.claim("s3", "t3")
			if _, err := e.store.RenameSession(e.ctx, "s3", alice, "named early"); err != nil {
				t.Fatal(err)
			}
			turn := e.turnFor(c, "s3")
			e.save(c, turn)
			e.releaseListed(c, turn)
			if page := e.listSessions(chat.SessionListRequest{Principal: alice, Limit: 1}); page.Sessions[0].Title != "named early" {
				t.Errorf("renamed while running, then listed as %+v", page.Sessions[0])
			}
		},
		"FeedbackSetReplacedRemovedShown": func(t *testing.T, env *env) {
			e := lists{env}
			e.listedTurn("s1", "t1", "first")
			up := &chat.Feedback{Rating: chat.RatingUp, Comment: "clear\nand right"}
			if stored, err := e.store.SetFeedback(e.ctx, "s1", "t1", alice, up); err != nil || stored == nil || stored.Rating != chat.RatingUp || !stored.At.Equal(start) {
				t.Fatalf("SetFeedback: %+v, %v", stored, err)
			}
			got := e.find("s1", "t1").Feedback
			if got == nil || got.Rating != chat.RatingUp || got.Comment != "clear\nand right" || !got.At.Equal(start) {
				t.Fatalf("feedback after PUT: %+v", got)
			}
			e.clock.Advance(time.Second)
			if _, err := e.store.SetFeedback(e.ctx, "s1", "t1", alice, &chat.Feedback{Rating: chat.RatingDown}); err != nil {
				t.Fatal(err)
			}
			page, err := e.store.ListTurns(e.ctx, chat.ListRequest{SessionID: "s1", Principal: alice})
			if err != nil {
				t.Fatal(err)
			}
			if f := page.Turns[0].Feedback; f == nil || f.Rating != chat.RatingDown || f.Comment != "" || !f.At.Equal(start.Add(time.Second)) {
				t.Errorf("the page's turn after a replacement: %+v", f)
			}
			if stored, err := e.store.SetFeedback(e.ctx, "s1", "t1", alice, nil); err != nil || stored != nil {
				t.Fatalf("removal: %+v, %v", stored, err)
			}
			if f := e.find("s1", "t1").Feedback; f != nil {
				t.Errorf("feedback after its removal: %+v", f)
			}
			if _, err := e.store.SetFeedback(e.ctx, "s1", "t1", alice, nil); err != nil {
				t.Errorf("removing none: %v", err)
			}
			for name, f := range map[string]chat.Feedback{
				"no rating":       {},
				"another rating":  {Rating: "meh"},
				"a long comment":  {Rating: chat.RatingUp, Comment: strings.Repeat("x", chat.MaxFeedbackCommentRunes+1)},
				"a control":       {Rating: chat.RatingUp, Comment: "a\x1bb"},
				"a bidi override": {Rating: chat.RatingUp, Comment: "a\u202eb"},
				"invalid UTF-8":   {Rating: chat.RatingUp, Comment: "a\xffb"},
			} {
				_, err := e.store.SetFeedback(e.ctx, "s1", "t1", alice, &f)
				wantErr(t, name, err, chat.ErrInvalidFeedback)
			}
			for _, p := range []chat.Principal{mallory, aliceGlobex, host} {
				_, err := e.store.SetFeedback(e.ctx, "s1", "t1", p, up)
				wantErr(t, "feedback by "+p.Subject+"@"+p.Tenant, err, chat.ErrSessionNotFound)
			}
			_, err = e.store.SetFeedback(e.ctx, "s1", "nope", alice, up)
			wantErr(t, "an unknown turn", err, chat.ErrTurnNotFound)
			_, err = e.store.SetFeedback(e.ctx, "nobody", "t1", alice, up)
			wantErr(t, "a session nobody has", err, chat.ErrSessionNotFound)
			c := e.claim("s1", "t2")
			e.checkpoint(c, e.checkpointOf(c, nil, "partial", c.BaseSequence+1)) // running, acknowledged
			_, err = e.store.SetFeedback(e.ctx, "s1", "t2", alice, up)
			wantErr(t, "a running turn", err, chat.ErrTurnNotFound)
			if f := e.find("s1", "t1").Feedback; f != nil {
				t.Errorf("a refused feedback was stored: %+v", f)
			}
		},
		"SearchByTitleWords": func(t *testing.T, env *env) {
			e := lists{env}
			e.listedTurn("s1", "t1", "Baking Sourdough bread")
			e.listedTurn("s2", "t2", "Tax return questions")
			e.listedTurn("s3", "t3", "bread machine manual")
			e.listedTurn("s4", "t4", "")
			for q, want := range map[string][]string{
				"bread":           {"s1", "s3"},
				"BREAD sour":      {"s1"},
				"  tax   RETURN ": {"s2"},
				"dough":           {"s1"},
				"nothing":         nil,
			} {
				var got []string
				req := chat.SessionListRequest{Principal: alice, Query: q, Limit: 2}
				for range 10 {
					page := e.listSessions(req)
					got = append(got, listedIDs(page)...)
					if page.NextCursor == "" {
						break
					}
					req.Cursor = page.NextCursor
				}
				slices.Sort(got)
				if !slices.Equal(got, want) {
					t.Errorf("q=%q: %v, want %v", q, got, want)
				}
			}
		},
	}
}

// lists is an env with the helpers of the conversation cases.
type lists struct{ *env }

// listedTurn runs a full turn of alice whose user message is question,
// released with its listing (as the engine releases a turn).
func (e lists) listedTurn(sessionID, turnID, question string) {
	e.t.Helper()
	c := e.claim(sessionID, turnID)
	turn := e.turnFor(c, sessionID)
	turn.Messages[0].Content = question
	e.save(c, turn)
	e.releaseListed(c, turn)
}

// releaseListed releases a saved turn with its listing.
func (e lists) releaseListed(c *chat.Claim, turn *chat.Turn) {
	e.t.Helper()
	l := &chat.Listing{Status: turn.Status, Preview: chat.Preview(turn.Messages[1].Content),
		Title: chat.AutoTitle(turn.Messages[0].Content)}
	if _, err := e.store.ReleaseTurn(e.ctx, chat.ReleaseRequest{Claim: c, Outcome: chat.OutcomeCompleted, Sequence: turn.LastSequence, Listing: l}); err != nil {
		e.t.Fatalf("ReleaseTurn(%s): %v", turn.TurnID, err)
	}
}

// listSessions lists and fails the test on error.
func (e lists) listSessions(req chat.SessionListRequest) *chat.SessionPage {
	e.t.Helper()
	page, err := e.store.ListSessions(e.ctx, req)
	if err != nil {
		e.t.Fatalf("ListSessions: %v", err)
	}
	return page
}

func listedIDs(page *chat.SessionPage) []string {
	var ids []string
	for _, s := range page.Sessions {
		ids = append(ids, s.SessionID)
	}
	return ids
}

// foreignClaim is mallory's claim of turnID in sessionID.
func foreignClaim(sessionID, turnID string) chat.ClaimRequest {
	req := claimRequest(sessionID, turnID)
	req.Principal = mallory
	return req
}

// tamper flips the last character of a cursor.
func tamper(cursor string) string {
	last := cursor[len(cursor)-1]
	if last == 'A' {
		return cursor[:len(cursor)-1] + "B"
	}
	return cursor[:len(cursor)-1] + "A"
}
