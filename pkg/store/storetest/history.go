package storetest

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/turnstream/turnstream/pkg/chat"
)

// historyCases prove ListTurns: orders, limits, exact HasMore, cursors and
// superseded turns (docs/design.md#history-and-artifacts-api).
func historyCases() map[string]func(*testing.T, *env) {
	return map[string]func(*testing.T, *env){
		"PagesCoverEveryTurnOnce": func(t *testing.T, e *env) {
			const n = 22 // more than DefaultPageLimit
			turns := e.completeTurns("s1", "t", n)
			asc := make([]string, n)
			for i, turn := range turns {
				asc[i] = turn.TurnID
			}
			desc := slices.Clone(asc)
			slices.Reverse(desc)
			cases := map[string]struct {
				order     chat.Order
				limit     int
				want      []string
				wantPages int
			}{
				"asc limit 1":                   {chat.OrderAsc, 1, asc, 22},
				"asc limit 5":                   {chat.OrderAsc, 5, asc, 5},
				"asc limit 11 exactly full":     {chat.OrderAsc, 11, asc, 2},
				"asc limit 22 one full page":    {chat.OrderAsc, 22, asc, 1},
				"asc limit 100":                 {chat.OrderAsc, 100, asc, 1},
				"asc limit 0 means 20":          {chat.OrderAsc, 0, asc, 2},
				"desc limit 1":                  {chat.OrderDesc, 1, desc, 22},
				"desc limit 3":                  {chat.OrderDesc, 3, desc, 8},
				"desc limit 11 exactly full":    {chat.OrderDesc, 11, desc, 2},
				"desc limit 0 means 20":         {chat.OrderDesc, 0, desc, 2},
				"empty order means desc":        {"", 21, desc, 2},
				"desc limit 100 one short page": {chat.OrderDesc, 100, desc, 1},
			}
			for name, tc := range cases {
				t.Run(name, func(t *testing.T) {
					pages := walkerOf(e).walk(t, chat.ListRequest{SessionID: "s1", Principal: alice, Order: tc.order, Limit: tc.limit})
					var got []string
					for _, p := range pages {
						got = append(got, turnIDs(p.Turns)...)
					}
					if !slices.Equal(got, tc.want) {
						t.Fatalf("pages yield %v\nwant %v", got, tc.want)
					}
					if len(pages) != tc.wantPages {
						t.Errorf("%d pages, want %d", len(pages), tc.wantPages)
					}
					if tc.limit == 0 && len(pages[0].Turns) != chat.DefaultPageLimit {
						t.Errorf("limit 0: first page has %d turns, want DefaultPageLimit %d", len(pages[0].Turns), chat.DefaultPageLimit)
					}
				})
			}
			// Pages carry whole turns.
			page, err := e.store.ListTurns(e.ctx, chat.ListRequest{SessionID: "s1", Principal: alice, Order: chat.OrderAsc, Limit: 2})
			if err != nil {
				t.Fatalf("ListTurns: %v", err)
			}
			for i := range page.Turns {
				wantTurn(t, fmt.Sprintf("page turn %d", i), &page.Turns[i], turns[i])
			}
		},

		"EmptySessionOnePage": func(t *testing.T, e *env) {
			e.claim("s1", "t1") // the session exists; no turn is saved
			for _, order := range []chat.Order{chat.OrderAsc, chat.OrderDesc} {
				page, err := e.store.ListTurns(e.ctx, chat.ListRequest{SessionID: "s1", Principal: alice, Order: order})
				if err != nil || len(page.Turns) != 0 || page.HasMore || page.NextCursor != "" {
					t.Errorf("%s: page %+v, %v; want no turns, no more, no cursor", order, page, err)
				}
			}
		},

		"RequestValidation": func(t *testing.T, e *env) {
			e.completeTurn("s1", "t1")
			cases := map[string]chat.ListRequest{
				"limit 101": {Limit: chat.MaxPageLimit + 1},
				"limit -1":  {Limit: -1},
				"bad order": {Order: "sideways"},
				"ASC":       {Order: "ASC"},
			}
			for name, req := range cases {
				t.Run(name, func(t *testing.T) {
					req.SessionID, req.Principal = "s1", alice
					_, err := e.store.ListTurns(e.ctx, req)
					wantErr(t, "ListTurns", err, chat.ErrInvalidRequest)
				})
			}
		},

		"CursorRejected": func(t *testing.T, e *env) {
			e.completeTurns("s1", "t", 3)
			e.completeTurns("s2", "u", 3)
			first, err := e.store.ListTurns(e.ctx, chat.ListRequest{SessionID: "s1", Principal: alice, Limit: 1})
			if err != nil || !first.HasMore || first.NextCursor == "" {
				t.Fatalf("first page = %+v, %v; want a cursor", first, err)
			}
			cur := first.NextCursor
			otherKey := make([]byte, len(e.key))
			copy(otherKey, e.key)
			otherKey[0] ^= 0xff
			cases := map[string]struct {
				sessionID string
				order     chat.Order
				cursor    string
			}{
				"other session":           {"s2", chat.OrderDesc, cur},
				"other order":             {"s1", chat.OrderAsc, cur},
				"first char flipped":      {"s1", chat.OrderDesc, flip(cur, 0)},
				"middle char flipped":     {"s1", chat.OrderDesc, flip(cur, len(cur)/2)},
				"next-to-last flipped":    {"s1", chat.OrderDesc, flip(cur, len(cur)-2)},
				"truncated":               {"s1", chat.OrderDesc, cur[:len(cur)-1]},
				"extended":                {"s1", chat.OrderDesc, cur + "A"},
				"not base64":              {"s1", chat.OrderDesc, "not a cursor!"},
				"signed with another key": {"s1", chat.OrderDesc, chat.CursorCodec{Key: otherKey}.Encode("s1", chat.OrderDesc, 2)},
			}
			for name, tc := range cases {
				t.Run(name, func(t *testing.T) {
					_, err := e.store.ListTurns(e.ctx, chat.ListRequest{SessionID: tc.sessionID, Principal: alice, Order: tc.order, Limit: 1, Cursor: tc.cursor})
					wantErr(t, "ListTurns", err, chat.ErrInvalidCursor)
				})
			}
			next, err := e.store.ListTurns(e.ctx, chat.ListRequest{SessionID: "s1", Principal: alice, Limit: 1, Cursor: cur})
			if err != nil || len(next.Turns) != 1 || next.Turns[0].TurnID != "t001" {
				t.Errorf("the untouched cursor: %+v, %v; want t001", next, err)
			}
		},

		"AppendsDuringPagingNeitherDuplicateNorSkip": func(t *testing.T, e *env) {
			e.completeTurns("s1", "t", 5)
			e.completeTurns("s2", "t", 5)
			cases := map[string]struct {
				sessionID string
				order     chat.Order
				want      []string
			}{
				// asc reaches the turns appended after the first page.
				"asc": {"s1", chat.OrderAsc, []string{"t000", "t001", "t002", "t003", "t004", "late0", "late1"}},
				// desc continues below its cursor: the appended turns are
				// newer than the first page and not part of this walk.
				"desc": {"s2", chat.OrderDesc, []string{"t004", "t003", "t002", "t001", "t000"}},
			}
			for name, tc := range cases {
				t.Run(name, func(t *testing.T) {
					e := e.with(t)
					req := chat.ListRequest{SessionID: tc.sessionID, Principal: alice, Order: tc.order, Limit: 3}
					page, err := e.store.ListTurns(e.ctx, req)
					if err != nil {
						t.Fatalf("first page: %v", err)
					}
					got := turnIDs(page.Turns)
					e.completeTurn(tc.sessionID, "late0")
					e.completeTurn(tc.sessionID, "late1")
					for page.HasMore {
						req.Cursor = page.NextCursor
						if page, err = e.store.ListTurns(e.ctx, req); err != nil {
							t.Fatalf("next page: %v", err)
						}
						if len(page.Turns) == 0 {
							t.Fatal("empty page")
						}
						got = append(got, turnIDs(page.Turns)...)
					}
					if !slices.Equal(got, tc.want) {
						t.Errorf("walk yields %v\nwant %v", got, tc.want)
					}
				})
			}
		},

		"SupersededExcludedWithoutEmptyPages": func(t *testing.T, e *env) {
			e.completeTurns("s1", "t", 9) // ordinals 1-9
			edit := e.claim("s1", "edit") // ordinal 10 supersedes 3-9
			if _, err := e.store.Supersede(e.ctx, edit, 3, edit.Lease.Ordinal); err != nil {
				t.Fatalf("Supersede: %v", err)
			}
			turn := e.turnFor(edit, "s1")
			e.save(edit, turn)
			e.release("s1", edit, chat.OutcomeCompleted, turn.LastSequence)
			visible := []string{"t000", "t001", "edit"}
			walkerOf(e).checkWalks(t, "s1", visible)

			// Supersede the tail too: the visible turns are then all at the
			// start, and the page holding the last of them must say no more.
			retry := e.claim("s1", "retry") // ordinal 11 supersedes 10
			if _, err := e.store.Supersede(e.ctx, retry, edit.Lease.Ordinal, retry.Lease.Ordinal); err != nil {
				t.Fatalf("Supersede: %v", err)
			}
			e.release("s1", retry, chat.OutcomeIndeterminate, retry.BaseSequence) // never saved
			walkerOf(e).checkWalks(t, "s1", []string{"t000", "t001"})
		},
	}
}

// walker pages through a store's history as a reader does (ListTurns,
// page after page).
type walker struct {
	ctx   context.Context
	store interface {
		ListTurns(ctx context.Context, req chat.ListRequest) (*chat.Page, error)
	}
}

// walkerOf returns the walker of e's store.
func walkerOf(e *env) walker { return walker{ctx: e.ctx, store: e.store} }

// checkWalks pages through sessionID in both orders at limits 1 to
// len(visible)+1 and fails unless each walk yields exactly visible (asc) or
// its reverse (desc) with no empty page and an exact HasMore.
func (w walker) checkWalks(t *testing.T, sessionID string, visible []string) {
	t.Helper()
	desc := slices.Clone(visible)
	slices.Reverse(desc)
	for _, order := range []chat.Order{chat.OrderAsc, chat.OrderDesc} {
		want := visible
		if order == chat.OrderDesc {
			want = desc
		}
		for limit := 1; limit <= len(visible)+1; limit++ {
			pages := w.walk(t, chat.ListRequest{SessionID: sessionID, Principal: alice, Order: order, Limit: limit})
			var got []string
			for _, p := range pages {
				got = append(got, turnIDs(p.Turns)...)
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s limit %d: walk yields %v, want %v", order, limit, got, want)
			}
			if wantPages := (len(visible) + limit - 1) / limit; len(pages) != wantPages {
				t.Errorf("%s limit %d: %d pages, want %d", order, limit, len(pages), wantPages)
			}
		}
	}
}

// walk lists every page from req (Cursor empty) and fails the test on an
// error, an empty page followed by more, a page over the limit, or a
// NextCursor that disagrees with HasMore. It stops after 200 pages.
func (w walker) walk(t *testing.T, req chat.ListRequest) []*chat.Page {
	t.Helper()
	limit := req.Limit
	if limit == 0 {
		limit = chat.DefaultPageLimit
	}
	var pages []*chat.Page
	for range 200 {
		page, err := w.store.ListTurns(w.ctx, req)
		if err != nil {
			t.Fatalf("ListTurns(order %q, limit %d, page %d): %v", req.Order, req.Limit, len(pages)+1, err)
		}
		pages = append(pages, page)
		if len(page.Turns) > limit {
			t.Fatalf("page %d has %d turns, over the limit %d", len(pages), len(page.Turns), limit)
		}
		if page.HasMore != (page.NextCursor != "") {
			t.Fatalf("page %d: HasMore %v with NextCursor %q", len(pages), page.HasMore, page.NextCursor)
		}
		if !page.HasMore {
			return pages
		}
		if len(page.Turns) == 0 {
			t.Fatalf("page %d is empty but HasMore is true", len(pages))
		}
		req.Cursor = page.NextCursor
	}
	t.Fatalf("no last page after %d pages", len(pages))
	return nil
}

// flip returns s with the character at i replaced by another character of
// the base64url alphabet.
func flip(s string, i int) string {
	b := []byte(s)
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}
