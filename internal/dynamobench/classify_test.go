package dynamobench_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/turnstream/turnstream/internal/dynalite"
	"github.com/turnstream/turnstream/internal/dynamobench"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

// TestClassifyUsage: the store's usage ledger calls, as they reach
// DynamoDB, are classified as usage calls (a count's add, settle
// and clear, told apart; an
// admission's write and cancellation, the reads of a principal's item,
// a month's first hour's BatchGetItem, a tenant's Query), never as a
// session's claim, save or read.
func TestClassifyUsage(t *testing.T) {
	client, taken := recordCalls(t)
	table := dynalite.Table(t)
	store := dynamo.New(client, dynamo.Options{Table: table, CursorKey: []byte("classify-test-cursor-key-0123456"), Ledger: chat.LedgerOptions{Enabled: true}})
	p := chat.Principal{Subject: "ann", Tenant: "acme"}
	// In a month's first hour, the read covers the previous month too.
	at := time.Date(2026, 3, 1, 0, 10, 0, 0, time.UTC)
	take := func() []dynamobench.Class {
		var out []dynamobench.Class
		for _, r := range taken() {
			out = append(out, dynamobench.Classify(r))
		}
		return out
	}
	take() // the table's creation
	want := func(step string, got []dynamobench.Class, writes ...string) {
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

// TestClassifyTurn: the store's calls of one turn and of a takeover, as
// they reach DynamoDB, are classified by the store's labels: the claim
// write with the lease it writes, the renewal with its expiry, the
// checkpoint's writes, the save, the release; a takeover's fences are
// decisions and its compare-and-set a takeover write.
func TestClassifyTurn(t *testing.T) {
	client, taken := recordCalls(t)
	now := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	store := dynamo.New(client, dynamo.Options{Table: dynalite.Table(t), Now: func() time.Time { return now },
		CursorKey: []byte("classify-test-cursor-key-0123456")})
	// take returns the classes of the calls since the last take, as
	// "kind" or "kind/write", and the expiries they carry.
	take := func() (classes []string, expiries []time.Time) {
		for _, r := range taken() {
			c := dynamobench.Classify(r)
			s := c.Kind
			if c.Write != "" {
				s += "/" + c.Write
			}
			classes = append(classes, s)
			if !c.Expiry.IsZero() {
				expiries = append(expiries, c.Expiry)
			}
		}
		return classes, expiries
	}
	take() // the table's creation
	want := func(step string, got []string, want ...string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s: classified %q, want %q", step, got, want)
		}
	}
	p := chat.Principal{Subject: "ann", Tenant: "acme"}
	claimReq := func(turnID string) chat.ClaimRequest {
		return chat.ClaimRequest{SessionID: "s1", TurnID: turnID, Principal: p, InputHash: chat.HashInput(turnID),
			Lineage: protocol.Lineage{Operation: protocol.OperationSubmit}, DefinitionID: "d", DefinitionRevision: 1, LeaseDuration: time.Minute}
	}

	c, err := store.ClaimTurn(t.Context(), claimReq("t1"))
	if err != nil {
		t.Fatal(err)
	}
	got, exp := take()
	want("claim", got, dynamobench.KindClaim+"/"+dynamobench.ClaimWrite)
	if len(exp) != 1 || !exp[0].Equal(c.Lease.ExpiresAt) {
		t.Errorf("claim: expiries %v, want the lease's %v", exp, c.Lease.ExpiresAt)
	}
	now = now.Add(10 * time.Second)
	l, err := store.RenewLease(t.Context(), chat.RenewRequest{Claim: c, ExpiresAt: now.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	got, exp = take()
	want("renew", got, dynamobench.KindRenew)
	if len(exp) != 1 || !exp[0].Equal(l.ExpiresAt) {
		t.Errorf("renew: expiries %v, want the lease's %v", exp, l.ExpiresAt)
	}
	c.Lease = *l
	msgs := []protocol.Message{
		{ID: "u", Role: protocol.RoleUser, Content: "hi", Status: protocol.MessageComplete, CreatedAt: protocol.FormatTime(now)},
		{ID: "a", Role: protocol.RoleAssistant, Content: "he", Status: protocol.MessageStreaming, CreatedAt: protocol.FormatTime(now)},
	}
	cp := &chat.Checkpoint{SessionID: "s1", TurnID: "t1", Ordinal: c.Lease.Ordinal, Lineage: c.Lease.Lineage, InputHash: c.Lease.InputHash,
		Messages: msgs, FirstSequence: c.BaseSequence + 1, Sequence: c.BaseSequence + 1, StartedAt: now}
	if _, err := store.Checkpoint(t.Context(), c, cp); err != nil {
		t.Fatal(err)
	}
	got, _ = take()
	for _, k := range got {
		if k != dynamobench.KindCheckpoint && k != dynamobench.KindRead {
			t.Errorf("checkpoint: a call classified %q, want checkpoint writes and reads: %q", k, got)
		}
	}
	if !slices.Contains(got, dynamobench.KindCheckpoint) {
		t.Errorf("checkpoint: %q, want checkpoint writes", got)
	}
	done := slices.Clone(msgs)
	done[1].Content, done[1].Status = "hello", protocol.MessageComplete
	turn := &chat.Turn{SessionID: "s1", TurnID: "t1", Ordinal: c.Lease.Ordinal, Status: chat.TurnComplete, Lineage: c.Lease.Lineage,
		InputHash: c.Lease.InputHash, Messages: done, FirstSequence: c.BaseSequence + 1, LastSequence: c.BaseSequence + 2, StartedAt: now, CompletedAt: now}
	if err := store.SaveTurn(t.Context(), c, turn); err != nil {
		t.Fatal(err)
	}
	got, _ = take()
	want("save", got, dynamobench.KindSave)
	if _, err := store.ReleaseTurn(t.Context(), chat.ReleaseRequest{Claim: c, Outcome: chat.OutcomeCompleted, Sequence: c.BaseSequence + 2}); err != nil {
		t.Fatal(err)
	}
	got, _ = take()
	want("release", got, dynamobench.KindRelease)

	// t2 is claimed and its process dies; after its lease, t3's claim
	// takes the session over.
	c2, err := store.ClaimTurn(t.Context(), claimReq("t2"))
	if err != nil {
		t.Fatal(err)
	}
	take()
	if _, _, err := store.LoadContext(t.Context(), "s1", c2.Lease.Ordinal, 10); err != nil {
		t.Fatal(err)
	}
	got, _ = take()
	want("context", got, dynamobench.KindContext)
	now = now.Add(2 * time.Minute)
	if _, err := store.ClaimTurn(t.Context(), claimReq("t3")); err != nil {
		t.Fatal(err)
	}
	got, _ = take()
	if len(got) == 0 || got[0] != dynamobench.KindClaim+"/"+dynamobench.ClaimWrite {
		t.Fatalf("takeover: %q, want the claim write first", got)
	}
	if got[len(got)-1] != dynamobench.KindClaim+"/"+dynamobench.TakeoverWrite || !slices.Contains(got, dynamobench.KindDecide) {
		t.Errorf("takeover: %q, want fences (decide) and the takeover write last", got)
	}
}

// recordCalls returns a client on dynalite that records the API calls it
// makes, and the function that returns those made since its last call.
func recordCalls(t *testing.T) (*dynamodb.Client, func() []dynamobench.Request) {
	t.Helper()
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
	return client, func() []dynamobench.Request {
		mu.Lock()
		defer mu.Unlock()
		taken := calls
		calls = nil
		return taken
	}
}
