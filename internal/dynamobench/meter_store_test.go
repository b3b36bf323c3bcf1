package dynamobench_test

import (
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/dynalite"
	"github.com/turnstream/turnstream/internal/dynamobench"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

// TestMeterBillsByPurpose: a claim through the store, metered with size
// reads, is billed under the store's label of it (claim), in the
// session's account and the running total alike; a second claim of the
// busy session fails its condition and is billed the session item's
// units under the same label; Take starts a new total and leaves the
// session's account.
func TestMeterBillsByPurpose(t *testing.T) {
	client, err := dynamo.NewClient(t.Context(), dynalite.Options(t))
	if err != nil {
		t.Fatal(err)
	}
	table := dynalite.Table(t)
	m := dynamobench.NewMeter(client, client)
	store := dynamo.New(m, dynamo.Options{Table: table, CursorKey: []byte("0123456789abcdef0123456789abcdef")})
	p := chat.Principal{Tenant: "t", Subject: "alice"}
	req := chat.ClaimRequest{SessionID: "s1", TurnID: "turn-1", Principal: p, LeaseDuration: time.Minute}
	if _, err := store.ClaimTurn(t.Context(), req); err != nil {
		t.Fatalf("claim: %v", err)
	}
	req.TurnID = "turn-2"
	if _, err := store.ClaimTurn(t.Context(), req); err == nil {
		t.Fatal("a second claim of a busy session succeeded")
	}
	total := m.Take()
	s := m.Session("s1")
	if total.Purposes[dynamo.PurposeClaim] < 2 || total.Purposes[dynamo.PurposeClaim] != s.Purposes[dynamo.PurposeClaim] {
		t.Errorf("claim units: total %v, session %v; want the claim and the failed claim in both", total.Purposes, s.Purposes)
	}
	// The claim that creates a session enters it in its owner's list
	// (the index byOwner: 1 unit); the failed claim writes nothing.
	listed := total.WCU["index "+dynamo.SessionsIndex]
	if total.Writes != 1 || total.TableUnits != 1 || listed != 1 || total.WCU[dynamobench.SessionItem]+listed != total.Purposes[dynamo.PurposeClaim] {
		t.Errorf("total = %+v; want one write of 1 reported unit, the session item's and its list entry's units all the claim's", total)
	}
	if total.SessionBytes == 0 || total.Requests < 2 {
		t.Errorf("total = %+v; want the session item's size and both claims' requests", total)
	}
	if again := m.Take(); again.Requests != 0 || m.Session("s1").Requests != s.Requests {
		t.Errorf("after Take: total %d requests, session %d; want 0 and the session's unchanged", again.Requests, m.Session("s1").Requests)
	}
}
