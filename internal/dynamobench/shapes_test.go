package dynamobench_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/turnstream/turnstream/internal/ddbfault"
	"github.com/turnstream/turnstream/internal/dynalite"
	"github.com/turnstream/turnstream/internal/dynamobench"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

// TestShapes: every shape seeds its item (again without harm), writes
// revision after revision, refuses a stale one, and recognises its own
// effect after a lost answer; the bare shape's request is CompareAndSet's.
func TestShapes(t *testing.T) {
	var (
		mu      sync.Mutex
		updates []dynamobench.Request
	)
	obs := dynamobench.Observer{Call: func(ctx context.Context, r dynamobench.Request) (context.Context, func(dynamobench.Outcome)) {
		if r.Op == "UpdateItem" {
			mu.Lock()
			updates = append(updates, r)
			mu.Unlock()
		}
		return ctx, func(dynamobench.Outcome) {}
	}}
	ft := ddbfault.New(http.DefaultTransport)
	opts := dynalite.Options(t)
	opts.Transport = ft
	client, err := dynamo.NewClient(t.Context(), opts, obs.Option())
	if err != nil {
		t.Fatal(err)
	}
	table := dynalite.Table(t)
	shapes := dynamobench.Shapes()
	if len(shapes) < 2 {
		t.Fatalf("%d shapes, want the bare write and others", len(shapes))
	}
	for i, sh := range shapes {
		pk := fmt.Sprintf("BENCH#shape-%d", i)
		for range 2 {
			if err := sh.Seed(t.Context(), client, table, pk); err != nil {
				t.Fatalf("%s: seed: %v", sh.Name, err)
			}
		}
		mu.Lock()
		updates = nil
		mu.Unlock()
		for rev := range int64(3) {
			if err := sh.CompareAndSetOwned(t.Context(), client, table, pk, rev); err != nil {
				t.Fatalf("%s: revision %d: %v", sh.Name, rev, err)
			}
		}
		if err := sh.CompareAndSetOwned(t.Context(), client, table, pk, 1); err == nil {
			t.Errorf("%s: a stale write succeeded", sh.Name)
		}
		ft.SetRule(ddbfault.Once(ddbfault.LoseAnswer, ddbfault.Op("UpdateItem")))
		if err := sh.CompareAndSetOwned(t.Context(), client, table, pk, 3); err != nil {
			t.Errorf("%s: after a lost answer: %v", sh.Name, err)
		}
		ft.SetRule(nil)
		mu.Lock()
		if len(updates) != 5 {
			t.Fatalf("%s: %d updates observed, want 5", sh.Name, len(updates))
		}
		r := updates[0]
		mu.Unlock()
		if r.PK != pk || r.Condition == "" {
			t.Errorf("%s: request %+v", sh.Name, r)
		}
		if i == 0 && (len(r.Names) != 1 || r.Names[0] != "rev" || r.SK != "CAS") {
			t.Errorf("bare shape: request %+v, want CompareAndSet's", r)
		}
	}
	if got := ft.Counts()[ddbfault.LoseAnswer]; got != len(shapes) {
		t.Errorf("lost answers injected: %d, want %d", got, len(shapes))
	}
}
