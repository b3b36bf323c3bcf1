package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/turnstream/turnstream/internal/benchwire"
	"github.com/turnstream/turnstream/internal/loadcheck"
	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

// listResult is the session list of one principal with Sessions
// sessions: its first page of 10 served by the history handler, and the
// page after DeepAt sessions (reached by cursor).
type listResult struct {
	Sessions   int
	Seed       time.Duration
	First      latencies
	Deep       latencies
	DeepAt     int // sessions before the deep page
	MaxQueries int // the most DynamoDB requests one page sent
}

// listSizes are the list sizes the conversations section measures.
func listSizes(quick bool) []int {
	if quick {
		return []int{10, 200}
	}
	return []int{10, 10_000}
}

// conversationsRun measures GET /sessions: for each list size, a
// principal of its own with that many sessions, each of one turn
// released with its listing through the store's own claim, save and
// release; then the first pages of 10 of the lists, and a page half-way
// down each (reached by cursor), served by the history handler, the
// lists' reads alternating so that both meet the same machine.
func conversationsRun(ctx context.Context, b *bench, rep *report, _ map[string]bool) error {
	w, err := benchwire.New(b.store, benchwire.HandlerConfig{})
	if err != nil {
		return err
	}
	defer w.Close()
	pages := 200
	if rep.Quick {
		pages = 10
	}
	hc := benchwire.NewHTTPClient(1, nil)
	defer hc.CloseIdleConnections()
	sizes := listSizes(rep.Quick)
	clients := map[int]*client.Client{}
	cursors := map[int]string{}
	rep.Lists = map[int]*listResult{}
	for _, n := range sizes {
		b.progress("session lists: %d sessions of one principal", n)
		subject := fmt.Sprintf("%s-owner-%d", b.prefix, n)
		r := &listResult{Sessions: n}
		t0 := time.Now()
		if err := seedListed(ctx, b.store, chat.Principal{Subject: subject, Tenant: auth.DevTenant}, b.prefix, n); err != nil {
			return err
		}
		r.Seed = time.Since(t0)
		c := w.ClientAs(hc, subject)
		for r.DeepAt < n/2 {
			page, err := c.Conversations().List(ctx, client.ListOptions{Limit: min(100, n/2), Cursor: cursors[n]})
			if err != nil || page.NextCursor == nil {
				return fmt.Errorf("walk the list of %d: %v", n, err)
			}
			cursors[n], r.DeepAt = *page.NextCursor, r.DeepAt+len(page.Sessions)
		}
		clients[n], rep.Lists[n] = c, r
	}
	first, deep := map[int][]time.Duration{}, map[int][]time.Duration{}
	for range pages {
		for _, n := range sizes {
			r := rep.Lists[n]
			d, err := listPage(ctx, clients[n], w, "", min(10, n), &r.MaxQueries)
			if err != nil {
				return err
			}
			first[n] = append(first[n], d)
			if d, err = listPage(ctx, clients[n], w, cursors[n], min(10, n-r.DeepAt), &r.MaxQueries); err != nil {
				return err
			}
			deep[n] = append(deep[n], d)
		}
	}
	for _, n := range sizes {
		rep.Lists[n].First, rep.Lists[n].Deep = summarize(first[n]), summarize(deep[n])
	}
	for _, n := range deleteSizes(rep.Quick) {
		b.progress("delete: a session of %d turns", n)
		d, err := deleteCost(ctx, b, n)
		if err != nil {
			return err
		}
		rep.Deletes = append(rep.Deletes, d)
	}
	return nil
}

// listPage reads the page of 10 at cursor, checks it holds want
// sessions, newest first, records the most DynamoDB requests a page sent
// and returns its latency.
func listPage(ctx context.Context, c *client.Client, w *benchwire.Wiring, cursor string, want int, maxQueries *int) (time.Duration, error) {
	id := loadcheck.NextID()
	start := time.Now()
	page, err := c.Conversations().List(loadcheck.Tag(ctx, id, nil), client.ListOptions{Limit: 10, Cursor: cursor})
	d := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("session list: %w", err)
	}
	if len(page.Sessions) != want {
		return 0, fmt.Errorf("session list: %d sessions, want %d", len(page.Sessions), want)
	}
	for i := 1; i < len(page.Sessions); i++ {
		if *page.Sessions[i].UpdatedAt > *page.Sessions[i-1].UpdatedAt {
			return 0, fmt.Errorf("session list: not newest first at %d", i)
		}
	}
	*maxQueries = max(*maxQueries, len(w.Trace(id).Ops()))
	return d, nil
}

// seedListed writes n sessions of p, one short turn each, released with
// its listing as the turn function releases a turn, 16 at a time.
func seedListed(ctx context.Context, store chat.Store, p chat.Principal, prefix string, n int) error {
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	next := make(chan int)
	for range 16 {
		wg.Go(func() {
			for i := range next {
				if err := seedOne(ctx, store, p, fmt.Sprintf("%s-%s-list-%d", prefix, p.Subject, i)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	var err error
	for i := 0; i < n && err == nil; i++ {
		select {
		case next <- i:
		case err = <-errs:
		}
	}
	close(next)
	wg.Wait()
	close(errs)
	if err == nil {
		err = <-errs
	}
	return err
}

// seedOne is one session of one completed, listed turn.
func seedOne(ctx context.Context, store chat.Store, p chat.Principal, sessionID string) error {
	return seedTurn(ctx, store, p, sessionID, "t1")
}

// seedTurn runs one completed, listed turn of sessionID, claimed, saved
// and released as the turn function does.
func seedTurn(ctx context.Context, store chat.Store, p chat.Principal, sessionID, turnID string) error {
	question := "What should I name session " + sessionID + "?"
	c, err := store.ClaimTurn(ctx, chat.ClaimRequest{
		SessionID: sessionID, TurnID: turnID, Principal: p, InputHash: chat.HashInput(question),
		Lineage: protocol.Lineage{Operation: protocol.OperationSubmit}, DefinitionID: "assistant",
		DefinitionRevision: 1, LeaseDuration: time.Minute,
	})
	if err != nil {
		return fmt.Errorf("seed %s: %w", sessionID, err)
	}
	now := time.Now()
	at := protocol.FormatTime(now)
	turn := &chat.Turn{
		SessionID: sessionID, TurnID: turnID, Ordinal: c.Lease.Ordinal, Status: chat.TurnComplete,
		Lineage: protocol.Lineage{Operation: protocol.OperationSubmit}, InputHash: chat.HashInput(question),
		Messages: []protocol.Message{
			{ID: turnID + "-user", Role: protocol.RoleUser, Content: question, Status: protocol.MessageComplete, CreatedAt: at},
			{ID: turnID + "-assistant", Role: protocol.RoleAssistant, Content: "Echo: " + question, Status: protocol.MessageComplete, CreatedAt: at},
		},
		FirstSequence: c.BaseSequence + 1, LastSequence: c.BaseSequence + 1, StartedAt: now, CompletedAt: now,
	}
	if err := store.SaveTurn(ctx, c, turn); err != nil {
		return fmt.Errorf("seed %s: %w", sessionID, err)
	}
	_, err = store.ReleaseTurn(ctx, chat.ReleaseRequest{Claim: c, Outcome: chat.OutcomeCompleted, Sequence: c.BaseSequence + 1,
		Listing: &chat.Listing{Status: chat.TurnComplete, Preview: chat.Preview(turn.Messages[1].Content), Title: chat.AutoTitle(question)}})
	if err != nil {
		return fmt.Errorf("seed %s: %w", sessionID, err)
	}
	return nil
}

// deleteResult is what deleting one session of Turns stored turns cost
// (chat.ConversationStore.DeleteSession, called until done).
type deleteResult struct {
	Turns      int
	Calls      int // DeleteSession calls (each removes at most chat.DefaultDeleteItems items)
	Requests   int
	Deletes    int // DeleteItem requests (the items removed; the session item is replaced by a tombstone)
	WriteUnits int
	Took       time.Duration
}

// deleteSizes are the session lengths the conversations section deletes.
func deleteSizes(quick bool) []int {
	if quick {
		return []int{10, 30}
	}
	return []int{10, 1000}
}

// deleteCost seeds a session of turns turns (one turn item each: saved
// turns without checkpoint items, as a turn's record is once its
// checkpoints expired) through a metered store, then deletes it and
// returns the requests and write units the delete took.
func deleteCost(ctx context.Context, b *bench, turns int) (*deleteResult, error) {
	raw, err := b.rawClient(ctx)
	if err != nil {
		return nil, err
	}
	m := newMeter(b.client, raw)
	store := dynamo.New(m, dynamo.Options{Table: b.table, CursorKey: b.cursorKey})
	p := chat.Principal{Subject: b.prefix + "-deleter", Tenant: auth.DevTenant}
	id := fmt.Sprintf("%s-delete-%d", b.prefix, turns)
	for i := range turns {
		if err := seedTurn(ctx, store, p, id, fmt.Sprintf("t%d", i)); err != nil {
			return nil, err
		}
	}
	m.Take()
	r := &deleteResult{Turns: turns}
	start := time.Now()
	for done := false; !done; r.Calls++ {
		if r.Calls > 10*turns+10 {
			return nil, fmt.Errorf("delete of %d turns never finished", turns)
		}
		if done, err = store.DeleteSession(ctx, chat.DeleteRequest{Principal: p, SessionID: id}); err != nil {
			return nil, fmt.Errorf("delete a session of %d turns: %w", turns, err)
		}
	}
	r.Took = time.Since(start)
	a := m.Take()
	r.Requests, r.Deletes, r.WriteUnits = a.Requests, a.Ops["DeleteItem"], a.WriteUnits()
	return r, nil
}

// conversationsRows renders the conversations section.
func conversationsRows(rep *report, _ bool) [][4]string {
	sizes := listSizes(rep.Quick)
	small, large := rep.Lists[sizes[0]], rep.Lists[sizes[1]]
	if small == nil || large == nil {
		return nil
	}
	rows := [][4]string{{
		fmt.Sprintf("session list page of 10 (GET /sessions), %d sessions of one principal: p50 / p99, requests", large.Sessions),
		fmt.Sprintf("first page %s / %s; the page after the newest %d (by cursor) %s / %s; at most %d request(s) a page (seeded in %s)",
			ms(large.First.P50), ms(large.First.P99), large.DeepAt, ms(large.Deep.P50), ms(large.Deep.P99), large.MaxQueries, large.Seed.Round(time.Millisecond)),
		fmt.Sprintf("%d sessions: first page %s / %s; at most %d request(s) a page", small.Sessions, ms(small.First.P50), ms(small.First.P99), small.MaxQueries),
		fmt.Sprintf("%.2fx p50 (goal <= 1.3x); 1 Query a page: %v", float64(large.First.P50)/float64(small.First.P50), large.MaxQueries == 1 && small.MaxQueries == 1),
	}}
	for _, d := range rep.Deletes {
		rows = append(rows, [4]string{
			fmt.Sprintf("delete a session of %d turns (DELETE /sessions/{id}): requests, write units", d.Turns),
			fmt.Sprintf("%d requests (%d DeleteItem) in %d call(s), %d write units, %s", d.Requests, d.Deletes, d.Calls, d.WriteUnits, d.Took.Round(time.Millisecond)),
			"",
			fmt.Sprintf("%.2f requests and %.2f write units per turn stored", float64(d.Requests)/float64(d.Turns), float64(d.WriteUnits)/float64(d.Turns)),
		})
	}
	return rows
}
