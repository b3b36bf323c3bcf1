package dynamobench_test

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/turnstream/turnstream/internal/ddbfault"
	"github.com/turnstream/turnstream/internal/dynalite"
	"github.com/turnstream/turnstream/internal/dynamobench"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

// TestObserverExchange: each HTTP attempt's round trip is reported once,
// in the call's context, with its times in order and its bodies' bytes;
// a retried call's attempts show each, with the status of the one
// answered 500 and the transport's error of the one whose answer was
// lost.
func TestObserverExchange(t *testing.T) {
	type callKey struct{}
	var (
		mu        sync.Mutex
		exchanges []dynamobench.Exchange
		ops       []string // each exchange's call, from its context
		outcome   dynamobench.Outcome
	)
	obs := dynamobench.Observer{
		Call: func(ctx context.Context, r dynamobench.Request) (context.Context, func(dynamobench.Outcome)) {
			return context.WithValue(ctx, callKey{}, r.Op), func(o dynamobench.Outcome) {
				mu.Lock()
				defer mu.Unlock()
				outcome = o
			}
		},
		Exchange: func(ctx context.Context, e dynamobench.Exchange) {
			op, _ := ctx.Value(callKey{}).(string)
			mu.Lock()
			defer mu.Unlock()
			exchanges, ops = append(exchanges, e), append(ops, op)
		},
	}
	ft := ddbfault.New(http.DefaultTransport)
	opts := dynalite.Options(t)
	opts.Transport = ft
	table := dynalite.Table(t)
	observed, err := dynamo.NewClient(t.Context(), opts, obs.Option())
	if err != nil {
		t.Fatal(err)
	}

	if err := dynamobench.CompareAndSet(t.Context(), observed, table, "SESSION#x1", 0); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if !slices.Equal(ops, []string{"UpdateItem"}) {
		t.Fatalf("exchanges of calls %v for one attempt, want [UpdateItem]", ops)
	}
	e := exchanges[0]
	if e.Err != nil || e.Status != http.StatusOK || e.Start.IsZero() || e.End.Before(e.Start) || e.Sent <= 0 || e.Received <= 0 {
		t.Errorf("exchange = %+v; want 200 without error, start <= end, both bodies' bytes", e)
	}
	exchanges, ops = nil, nil
	mu.Unlock()

	ft.SetRule(ddbfault.Once(ddbfault.ServerErrorBefore, ddbfault.Op("UpdateItem")))
	if err := dynamobench.CompareAndSet(t.Context(), observed, table, "SESSION#x1", 1); err != nil {
		t.Fatalf("compare-and-set after a server error: %v", err)
	}
	mu.Lock()
	if !slices.Equal(ops, []string{"UpdateItem", "UpdateItem"}) || outcome.Attempts != 2 {
		t.Fatalf("exchanges of calls %v, %d attempts for a retried call; want two UpdateItem, 2", ops, outcome.Attempts)
	}
	if exchanges[0].Status != http.StatusInternalServerError || exchanges[1].Status != http.StatusOK {
		t.Errorf("exchanges' statuses %d, %d; want 500, 200", exchanges[0].Status, exchanges[1].Status)
	}
	exchanges, ops = nil, nil
	mu.Unlock()

	ft.SetRule(ddbfault.Once(ddbfault.LoseAnswer, ddbfault.Op("UpdateItem")))
	if err := dynamobench.CompareAndSetOwned(t.Context(), observed, table, "SESSION#x1", 2); err != nil {
		t.Fatalf("compare-and-set after a lost answer: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	// The retry fails the condition; CompareAndSetOwned's read tells.
	if !slices.Equal(ops, []string{"UpdateItem", "UpdateItem", "GetItem"}) {
		t.Fatalf("exchanges of calls %v after a lost answer, want two UpdateItem and the GetItem", ops)
	}
	if exchanges[0].Err == nil || exchanges[0].Status != 0 || exchanges[1].Err != nil || exchanges[1].Status != http.StatusBadRequest {
		t.Errorf("exchanges after a lost answer: %+v; want the first failed in the transport without a status, the retry answered 400", exchanges)
	}
	if exchanges[1].Start.Before(exchanges[0].End) {
		t.Errorf("the retry started before the first attempt ended: %+v", exchanges)
	}
}

// TestObserverCapacity: with Capacity set, a write's outcome carries the
// write units the server reported and a read's the read units; without
// it, neither.
func TestObserverCapacity(t *testing.T) {
	var (
		mu       sync.Mutex
		outcomes = map[string]dynamobench.Outcome{}
	)
	observer := func(capacity bool) dynamobench.ClientOption {
		return dynamobench.Observer{Capacity: capacity, Call: func(ctx context.Context, r dynamobench.Request) (context.Context, func(dynamobench.Outcome)) {
			return ctx, func(o dynamobench.Outcome) {
				mu.Lock()
				defer mu.Unlock()
				if _, seen := outcomes[r.Op]; !seen {
					outcomes[r.Op] = o // the first of each operation
				}
			}
		}}.Option()
	}
	for _, capacity := range []bool{true, false} {
		client, err := dynamo.NewClient(t.Context(), dynalite.Options(t), observer(capacity))
		if err != nil {
			t.Fatal(err)
		}
		table := dynalite.Table(t)
		mu.Lock()
		outcomes = map[string]dynamobench.Outcome{}
		mu.Unlock()
		// A stale write: its failed condition makes CompareAndSetOwned read.
		if err := dynamobench.CompareAndSet(t.Context(), client, table, "SESSION#c1", 0); err != nil {
			t.Fatal(err)
		}
		if err := dynamobench.CompareAndSetOwned(t.Context(), client, table, "SESSION#c1", 3); err == nil {
			t.Fatal("a stale compare-and-set succeeded")
		}
		mu.Lock()
		w, r := outcomes["UpdateItem"], outcomes["GetItem"]
		mu.Unlock()
		if capacity {
			if w.WriteUnits <= 0 || w.ReadUnits != 0 || r.ReadUnits <= 0 || r.WriteUnits != 0 {
				t.Errorf("with Capacity: update %+v, get %+v; want write units on the update, read units on the get", w, r)
			}
		} else if w.WriteUnits != 0 || w.ReadUnits != 0 || r.ReadUnits != 0 || r.WriteUnits != 0 {
			t.Errorf("without Capacity: update %+v, get %+v; want no units", w, r)
		}
	}
}
