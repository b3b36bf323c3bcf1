package dynamobench_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/dynalite"
	"github.com/turnstream/turnstream/internal/dynamobench"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

// TestClassifyUsage: the store's usage ledger calls, as they reach
// DynamoDB, are classified as usage calls (a count's add, settle
// and clear, told apart; an
// admission's write and cancellation, the reads of a principal's item,
// a month's first hour's BatchGetItem, a tenant's Query), never as a
// session's claim, save or read.
func TestClassifyUsage(t *testing.T) {
	var (
		mu    sync.Mutex
		calls []dynamobench.Request
	)
	obs := dynamobench.Observer{Call: func(ctx context.Context, r dynamobench.Request) (context.Context, func(dynamobench.Outcome)) {
		return ctx, func(dynamobench.Outcome) {
			mu.Lock()
			defer mu.Unlock()
			calls = append(calls, r)
		}
	}}
	client, err := dynamo.NewClient(t.Context(), dynalite.Options(t), obs.Option())
	if err != nil {
		t.Fatal(err)
	}
	table := dynalite.Table(t, client)
	store := dynamo.New(client, dynamo.Options{Table: table, CursorKey: []byte("classify-test-cursor-key-0123456"), Ledger: chat.LedgerOptions{Enabled: true}})
	p := chat.Principal{Subject: "ann", Tenant: "acme"}
	// In a month's first hour, the read covers the previous month too.
	at := time.Date(2026, 3, 1, 0, 10, 0, 0, time.UTC)
	take := func() []dynamobench.Purpose {
		mu.Lock()
		defer mu.Unlock()
		var out []dynamobench.Purpose
		for _, r := range calls {
			out = append(out, dynamobench.Classify(r))
		}
		calls = nil
		return out
	}
	take() // the table's creation
	want := func(step string, got []dynamobench.Purpose, writes ...string) {
		t.Helper()
		if len(got) != len(writes) {
			t.Fatalf("%s: %d calls %+v, want %d", step, len(got), got, len(writes))
		}
		for i, p := range got {
			if p.Kind != dynamobench.KindUsage || p.Write != writes[i] {
				t.Errorf("%s: call %d classified %q/%q, want %q/%q", step, i, p.Kind, p.Write, dynamobench.KindUsage, writes[i])
			}
		}
	}

	if err := store.RecordUsage(t.Context(), chat.LedgerEntry{SessionID: "s1", Ordinal: 1, Owner: p, StartedAt: at}); err != nil {
		t.Fatal(err)
	}
	want("record", take(), "", dynamobench.LedgerWrite, dynamobench.LedgerSettle, dynamobench.LedgerClear) // read, add, settle, clear
	if _, err := store.ReadUsage(t.Context(), p, at); err != nil {
		t.Fatal(err)
	}
	want("read in a month's first hour", take(), "")
	if _, err := store.ReadUsage(t.Context(), p, at.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	want("read", take(), "")
	a := chat.Admission{ID: "a1", StartedAt: at.Add(2 * time.Hour), ExpiresAt: at.Add(2*time.Hour + time.Minute), Session: chat.SessionMarker("s1")}
	if _, err := store.Admit(t.Context(), chat.AdmitRequest{Principal: p, Admission: a, TurnsPerMinute: 5}); err != nil {
		t.Fatal(err)
	}
	want("admit", take(), "", dynamobench.AdmissionWrite)
	if err := store.CancelAdmission(t.Context(), p, a); err != nil {
		t.Fatal(err)
	}
	want("cancel", take(), "", dynamobench.AdmissionWrite) // find its rate place, give it back
	if _, err := store.ListUsage(t.Context(), chat.UsageListRequest{Tenant: p.Tenant, At: at}); err != nil {
		t.Fatal(err)
	}
	want("a tenant's page", take(), "")
}
