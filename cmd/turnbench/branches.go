package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/turnstream/turnstream/internal/benchwire"
	"github.com/turnstream/turnstream/internal/loadcheck"
	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

// branchResult is the branches section's figures (docs/branches.md).
type branchResult struct {
	Places, Versions int
	Seed             time.Duration
	// Branched is the newest history page of 10 of a session whose every
	// place has Versions versions, Plain that of a session of Places
	// plain turns; MaxQueries the most DynamoDB requests one page sent.
	Branched, Plain latencies
	MaxQueries      int
	// The medians of Costs runs: a regeneration (claim, supersede, save,
	// release) and the plain turn it replaced: billed write units (the
	// table's and its indexes', computed from item sizes), requests, the
	// units of their saves (the regeneration's carries the sibling
	// group) and of the supersession (the replaced turn's item
	// rewritten without its visible key, which a regeneration paid
	// before branches too).
	Costs                    int
	RegenUnits, PlainUnits   float64
	RegenRequests, PlainReqs int
	RegenSave, PlainSave     float64
	Supersede                float64
}

// branchSizes are the places and versions per place the section builds.
func branchSizes(quick bool) (places, versions int) {
	if quick {
		return 20, 3
	}
	return 100, 10
}

// branchesRun builds two sessions of one principal through the store's
// own writes, as the turn function makes them: places plain turns, and
// places places each answered versions times (a turn, then regenerations
// of it); then it reads their newest history page of 10 alternately
// through the history handler, and meters a plain turn against the
// regeneration of it in sessions of their own.
func branchesRun(ctx context.Context, b *bench, rep *report, _ map[string]bool) error {
	places, versions := branchSizes(rep.Quick)
	r := &branchResult{Places: places, Versions: versions}
	subject := b.prefix + "-brancher"
	p := chat.Principal{Subject: subject, Tenant: auth.DevTenant}
	plain, branched := b.prefix+"-plain", b.prefix+"-branched"
	b.progress("branches: %d plain turns, and %d places of %d versions", places, places, versions)
	t0 := time.Now()
	for i := range places {
		if err := seedTurn(ctx, b.store, p, plain, fmt.Sprintf("t%d", i)); err != nil {
			return err
		}
		ord, err := seedVersion(ctx, b.store, p, branched, fmt.Sprintf("t%d", i), 0)
		if err != nil {
			return err
		}
		for v := 1; v < versions; v++ {
			if ord, err = seedVersion(ctx, b.store, p, branched, fmt.Sprintf("t%d-v%d", i, v), ord); err != nil {
				return err
			}
		}
	}
	r.Seed = time.Since(t0)

	w, err := benchwire.New(b.store, benchwire.HandlerConfig{})
	if err != nil {
		return err
	}
	defer w.Close()
	hc := benchwire.NewHTTPClient(1, nil)
	defer hc.CloseIdleConnections()
	c := w.ClientAs(hc, subject)
	pages := 200
	if rep.Quick {
		pages = 10
	}
	var bd, pd []time.Duration
	for range pages {
		for _, s := range []struct {
			id       string
			versions int
			into     *[]time.Duration
		}{{branched, versions, &bd}, {plain, 0, &pd}} {
			d, err := branchPage(ctx, c, w, s.id, s.versions, &r.MaxQueries)
			if err != nil {
				return err
			}
			*s.into = append(*s.into, d)
		}
	}
	r.Branched, r.Plain = summarize(bd), summarize(pd)
	if err := regenerationCost(ctx, b, p, r); err != nil {
		return err
	}
	rep.Branches = r
	return nil
}

// branchPage reads the newest page of 10 of sessionID's active branch,
// checks that each turn on it has versions versions (none when 0),
// records the most DynamoDB requests a page sent and returns the page's
// latency.
func branchPage(ctx context.Context, c *client.Client, w *benchwire.Wiring, sessionID string, versions int, maxQueries *int) (time.Duration, error) {
	id := loadcheck.NextID()
	start := time.Now()
	page, err := c.Turns(loadcheck.Tag(ctx, id, nil), sessionID, client.PageOptions{Limit: 10, Order: client.OrderDesc})
	d := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("history page of %s: %w", sessionID, err)
	}
	if len(page.Turns) != 10 {
		return 0, fmt.Errorf("history page of %s: %d turns, want 10", sessionID, len(page.Turns))
	}
	for _, t := range page.Turns {
		n, last := 0, true
		if g := t.Siblings; g != nil {
			n, last = g.Count, g.Index == g.Count-1
		}
		if n != versions || !last {
			return 0, fmt.Errorf("history page of %s: turn %s has %+v, want the last of %d versions", sessionID, t.TurnID, t.Siblings, versions)
		}
	}
	*maxQueries = max(*maxQueries, len(w.Trace(id).Ops()))
	return d, nil
}

// seedVersion runs one completed turn of sessionID as the turn function
// does: a plain one when replaces is 0, else a regeneration of the turn
// at that ordinal (claim, supersede, save with the group it joined,
// release). It returns the turn's ordinal.
func seedVersion(ctx context.Context, store chat.Store, p chat.Principal, sessionID, turnID string, replaces int64) (int64, error) {
	question := "What should I name session " + sessionID + "?"
	lineage := protocol.Lineage{Operation: protocol.OperationSubmit}
	if replaces > 0 {
		lineage = protocol.Lineage{Operation: protocol.OperationRegenerate, ParentTurnID: "previous", SourceMessageID: "previous.a"}
	}
	c, err := store.ClaimTurn(ctx, chat.ClaimRequest{
		SessionID: sessionID, TurnID: turnID, Principal: p, InputHash: chat.HashInput(question), Lineage: lineage,
		DefinitionID: "assistant", DefinitionRevision: 1, LeaseDuration: time.Minute,
	})
	if err != nil {
		return 0, fmt.Errorf("seed %s/%s: %w", sessionID, turnID, err)
	}
	var g *chat.Siblings
	if replaces > 0 {
		if g, err = store.Supersede(ctx, c, replaces, c.Lease.Ordinal); err != nil {
			return 0, fmt.Errorf("seed %s/%s: %w", sessionID, turnID, err)
		}
	}
	now := time.Now()
	at := protocol.FormatTime(now)
	turn := &chat.Turn{
		SessionID: sessionID, TurnID: turnID, Ordinal: c.Lease.Ordinal, Status: chat.TurnComplete,
		Lineage: lineage, InputHash: chat.HashInput(question), Siblings: g,
		Messages: []protocol.Message{
			{ID: turnID + "-user", Role: protocol.RoleUser, Content: question, Status: protocol.MessageComplete, CreatedAt: at},
			{ID: turnID + "-assistant", Role: protocol.RoleAssistant, Content: "Echo: " + question, Status: protocol.MessageComplete, CreatedAt: at},
		},
		FirstSequence: c.BaseSequence + 1, LastSequence: c.BaseSequence + 1, StartedAt: now, CompletedAt: now,
	}
	if err := store.SaveTurn(ctx, c, turn); err != nil {
		return 0, fmt.Errorf("seed %s/%s: %w", sessionID, turnID, err)
	}
	if _, err := store.ReleaseTurn(ctx, chat.ReleaseRequest{Claim: c, Outcome: chat.OutcomeCompleted, Sequence: c.BaseSequence + 1,
		Listing: &chat.Listing{Status: chat.TurnComplete, Preview: chat.Preview(turn.Messages[1].Content), Title: chat.AutoTitle(question)}}); err != nil {
		return 0, fmt.Errorf("seed %s/%s: %w", sessionID, turnID, err)
	}
	return c.Lease.Ordinal, nil
}

// regenerationCost meters, in sessions of their own, a session's second
// turn and then the regeneration of it (whose supersession rewrites the
// turn it replaces), r.Costs times, and keeps the medians: base-table
// write units as DynamoDB reports them (dynalite), and requests.
func regenerationCost(ctx context.Context, b *bench, p chat.Principal, r *branchResult) error {
	raw, err := b.rawClient(ctx)
	if err != nil {
		return err
	}
	m := newMeter(b.client, raw)
	store := dynamo.New(m, dynamo.Options{Table: b.table, CursorKey: b.cursorKey})
	r.Costs = 5
	var plainUnits, regenUnits, plainSave, regenSave, supersede []float64
	var plainReqs, regenReqs []int
	for i := range r.Costs {
		id := fmt.Sprintf("%s-regen-%d", b.prefix, i)
		if _, err := seedVersion(ctx, store, p, id, "first", 0); err != nil {
			return err
		}
		m.Take()
		ord, err := seedVersion(ctx, store, p, id, "second", 0)
		if err != nil {
			return err
		}
		a := m.Take()
		plainUnits, plainReqs = append(plainUnits, float64(a.WriteUnits())), append(plainReqs, a.Requests)
		plainSave = append(plainSave, float64(a.Purposes[dynamo.PurposeSave]))
		if _, err := seedVersion(ctx, store, p, id, "again", ord); err != nil {
			return err
		}
		a = m.Take()
		regenUnits, regenReqs = append(regenUnits, float64(a.WriteUnits())), append(regenReqs, a.Requests)
		regenSave = append(regenSave, float64(a.Purposes[dynamo.PurposeSave]))
		supersede = append(supersede, float64(a.Purposes[dynamo.PurposeSupersede]))
	}
	r.PlainUnits, r.RegenUnits = median(plainUnits), median(regenUnits)
	r.PlainSave, r.RegenSave, r.Supersede = median(plainSave), median(regenSave), median(supersede)
	slices.Sort(plainReqs)
	slices.Sort(regenReqs)
	r.PlainReqs, r.RegenRequests = plainReqs[len(plainReqs)/2], regenReqs[len(regenReqs)/2]
	return nil
}

// median returns the median of v (sorted in place), the upper one of an
// even count.
func median(v []float64) float64 {
	slices.Sort(v)
	return v[len(v)/2]
}

// branchesRows renders the branches section.
func branchesRows(rep *report, _ bool) [][4]string {
	r := rep.Branches
	if r == nil {
		return nil
	}
	return [][4]string{{
		fmt.Sprintf("history page of 10 (GET /sessions/{id}/turns, newest), %d places x %d versions (%d turns stored): p50 / p99, requests",
			r.Places, r.Versions, r.Places*r.Versions),
		fmt.Sprintf("%s / %s; at most %d request(s) a page (seeded in %s)", ms(r.Branched.P50), ms(r.Branched.P99), r.MaxQueries, r.Seed.Round(time.Millisecond)),
		fmt.Sprintf("%d plain turns: %s / %s", r.Places, ms(r.Plain.P50), ms(r.Plain.P99)),
		fmt.Sprintf("%.2fx p50 (goal <= 1.3x); 1 Query a page: %v", float64(r.Branched.P50)/float64(r.Plain.P50), r.MaxQueries == 1),
	}, {
		fmt.Sprintf("a regeneration of a session's second turn (claim, supersede, save, release; medians of %d): billed write units (table and indexes), requests", r.Costs),
		fmt.Sprintf("%.0f write units (its save %.0f with the sibling group; the supersession %.0f: the replaced turn's item rewritten, as before branches), %d requests",
			r.RegenUnits, r.RegenSave, r.Supersede, r.RegenRequests),
		fmt.Sprintf("the plain turn it replaced: %.0f write units (its save %.0f), %d requests", r.PlainUnits, r.PlainSave, r.PlainReqs),
		fmt.Sprintf("%+.0f write units in all; the save %+.0f (goal <= +1), %+d requests", r.RegenUnits-r.PlainUnits, r.RegenSave-r.PlainSave, r.RegenRequests-r.PlainReqs),
	}}
}
