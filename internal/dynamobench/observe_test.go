package dynamobench_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/dynalite"
	"github.com/turnstream/turnstream/internal/dynamobench"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

func TestMain(m *testing.M) { dynalite.Main(m) }

// TestObserverAndMeter: the observer sees each call with what it asked
// and how it ended, a failed condition included; the meter accounts the
// writes under their session with the units the server reported.
func TestObserverAndMeter(t *testing.T) {
	var (
		mu       sync.Mutex
		calls    []dynamobench.Request
		outcomes []dynamobench.Outcome
		attempts int
	)
	obs := dynamobench.Observer{
		Call: func(ctx context.Context, r dynamobench.Request) (context.Context, func(dynamobench.Outcome)) {
			return ctx, func(o dynamobench.Outcome) {
				mu.Lock()
				defer mu.Unlock()
				calls, outcomes = append(calls, r), append(outcomes, o)
			}
		},
		Attempt: func(context.Context, error, bool) {
			mu.Lock()
			defer mu.Unlock()
			attempts++
		},
	}
	client, err := dynamo.NewClient(t.Context(), dynalite.Options(t), obs.Option())
	if err != nil {
		t.Fatal(err)
	}
	table := dynalite.Table(t)
	m := dynamobench.NewMeter(client, nil)
	mu.Lock()
	calls, outcomes, attempts = nil, nil, 0 // the table's creation
	mu.Unlock()

	if err := dynamobench.CompareAndSet(t.Context(), m, table, "SESSION#s1", 0); err != nil {
		t.Fatalf("first compare-and-set: %v", err)
	}
	if err := dynamobench.CompareAndSet(t.Context(), m, table, "SESSION#s1", 0); err == nil {
		t.Fatal("a stale compare-and-set succeeded")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != 2 || attempts != 2 {
		t.Fatalf("observed %d calls in %d attempts, want 2 in 2", len(calls), attempts)
	}
	r := calls[0]
	if r.Op != "UpdateItem" || r.PK != "SESSION#s1" || r.SK != "CAS" || r.Condition == "" || len(r.Names) != 1 || r.Names[0] != "rev" {
		t.Errorf("request = %+v", r)
	}
	if outcomes[0].Err != nil || outcomes[0].Attempts != 1 {
		t.Errorf("first outcome = %+v, want success in one attempt", outcomes[0])
	}
	if !outcomes[1].ConditionFailed || outcomes[1].Err == nil {
		t.Errorf("second outcome = %+v, want a failed condition", outcomes[1])
	}
	a := m.Session("s1")
	if a.Requests != 2 || a.Writes != 1 || a.TableUnits <= 0 {
		t.Errorf("account = %+v, want 2 requests, 1 write with units", a)
	}
	if m.NoCapacity() != 0 {
		t.Errorf("%d writes answered without consumed capacity", m.NoCapacity())
	}
}

// TestLeaseExpiry: the lease expiry an update sets is read from the
// builder's aliases.
func TestLeaseExpiry(t *testing.T) {
	at := time.UnixMilli(1_700_000_000_123)
	r := dynamobench.DescribeForTest("UpdateItem", "SET #0 = :0, #1 = :1", map[string]string{"#0": "owner", "#1": "leaseExpiresAt"},
		map[string]string{":0": "alice"}, map[string]int64{":1": at.UnixMilli()})
	if !r.LeaseExpiresAt.Equal(at) {
		t.Errorf("LeaseExpiresAt = %v, want %v", r.LeaseExpiresAt, at)
	}
	r = dynamobench.DescribeForTest("UpdateItem", "SET #0 = :0", map[string]string{"#0": "owner"}, map[string]string{":0": "alice"}, nil)
	if !r.LeaseExpiresAt.IsZero() {
		t.Errorf("LeaseExpiresAt = %v without a lease, want zero", r.LeaseExpiresAt)
	}
}
