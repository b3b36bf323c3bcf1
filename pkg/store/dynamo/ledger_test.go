package dynamo_test

import (
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/turnstream/turnstream/internal/ddbfault"
	"github.com/turnstream/turnstream/internal/dynalite"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

// The ledger's writes, aimed at by the purposes the store labels them with.
var (
	ledgerWrite    = ddbfault.For("UpdateItem", dynamo.PurposeLedgerAdd)
	settleWrite    = ddbfault.For("UpdateItem", dynamo.PurposeLedgerSettle)
	journalClear   = ddbfault.For("UpdateItem", dynamo.PurposeLedgerClear)
	admissionWrite = ddbfault.For("UpdateItem", dynamo.PurposeAdmission)
	giveBackWrite  = ddbfault.For("UpdateItem", dynamo.PurposeAdmissionCancel, ":start")
)

// ledgerStore is the fault env's store with the usage ledger enabled.
func (e *faultEnv) ledgerStore() *dynamo.Store {
	return dynamo.New(e.client, dynamo.Options{Table: e.table, Now: e.clock.Now, CursorKey: testCursorKey,
		ResolveShare: dynalite.ResolveShare, Ledger: chat.LedgerOptions{Enabled: true}})
}

// TestRecordUsageCountsOnceUnderFaults: a ledger write that applied but
// whose answer was lost, was answered 500 (every try), hung, or was
// delivered after the store gave up on it, counts its turn once, also
// when the entry is sent again (the turn's re-send, a decider); one that
// never applied is an error and counts nothing until sent again.
func TestRecordUsageCountsOnceUnderFaults(t *testing.T) {
	u := chat.Usage{InputTokens: 7, OutputTokens: 11, ModelCalls: 2, ToolCalls: 1, StoreRequests: 5, WriteUnits: 3.5}
	cases := map[string]struct {
		rule    ddbfault.Rule
		fault   ddbfault.Fault
		applies bool
		// failsCounted: the first call reports an error although the add
		// applied (its settle never did: a crash between the writes).
		failsCounted bool
	}{
		"answer lost":                 {ddbfault.Once(ddbfault.LoseAnswer, ledgerWrite), ddbfault.LoseAnswer, true, false},
		"500 after apply, every try":  {ddbfault.Always(ddbfault.ServerErrorAfter, ledgerWrite), ddbfault.ServerErrorAfter, true, false},
		"first attempt hangs":         {ddbfault.Once(ddbfault.Hang, ledgerWrite), ddbfault.Hang, true, false},
		"applied late":                {ddbfault.Once(ddbfault.ApplyLate, ledgerWrite), ddbfault.ApplyLate, true, false},
		"500 before apply, every try": {ddbfault.Always(ddbfault.ServerErrorBefore, ledgerWrite), ddbfault.ServerErrorBefore, false, false},
		"settle answer lost":          {ddbfault.Once(ddbfault.LoseAnswer, settleWrite), ddbfault.LoseAnswer, true, false},
		"settle applied late":         {ddbfault.Once(ddbfault.ApplyLate, settleWrite), ddbfault.ApplyLate, true, false},
		"settle never applies":        {ddbfault.Always(ddbfault.ServerErrorBefore, settleWrite), ddbfault.ServerErrorBefore, true, true},
		"clear answer lost":           {ddbfault.Once(ddbfault.LoseAnswer, journalClear), ddbfault.LoseAnswer, true, false},
		"clear never applies":         {ddbfault.Always(ddbfault.ServerErrorBefore, journalClear), ddbfault.ServerErrorBefore, true, false},
		"every write 500 after apply": {ddbfault.Always(ddbfault.ServerErrorAfter, func(a ddbfault.Attempt) bool {
			return ledgerWrite(a) || settleWrite(a) || journalClear(a)
		}), ddbfault.ServerErrorAfter, true, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newFaultEnv(t)
			s := e.ledgerStore()
			ctx := faultCtx(t)
			entry := chat.LedgerEntry{SessionID: "s1", Ordinal: 1, Owner: alice, StartedAt: testStart, Usage: u}
			e.faults.SetRule(tc.rule)
			err := s.RecordUsage(ctx, entry)
			if e.faults.Counts()[tc.fault] == 0 {
				t.Fatal("the fault was not injected")
			}
			e.faults.SetRule(nil)
			e.faults.WaitLate() // a late copy has landed
			want := chat.Counters{Turns: 1, Usage: u}
			got, rerr := s.ReadUsage(ctx, alice, testStart)
			switch {
			case rerr != nil:
				t.Fatal(rerr)
			case tc.failsCounted && err == nil:
				t.Fatal("a count whose settle never applied reported no error")
			case tc.applies && !tc.failsCounted && err != nil:
				t.Fatalf("a write that applied: %v", err)
			case !tc.applies && err == nil:
				t.Fatal("a write that never applied reported no error")
			case !tc.applies && got.Month.Turns != 0:
				t.Fatalf("counted %+v after a write that never applied", got.Month)
			case tc.applies && got.Month != want:
				t.Fatalf("month %+v, want %+v", got.Month, want)
			}
			// Sent again (the turn's re-send, a second decider): once.
			for range 2 {
				if err := s.RecordUsage(ctx, entry); err != nil {
					t.Fatal(err)
				}
			}
			if got, _ := s.ReadUsage(ctx, alice, testStart); got.Month != want || got.Day != want {
				t.Errorf("after re-sends: day %+v, month %+v, want %+v", got.Day, got.Month, want)
			}
			if names := perSessionAttributes(t, e, alice, testStart); len(names) != 0 {
				t.Errorf("the month item keeps %v after the re-sends, want nothing per session", names)
			}
		})
	}
}

// perSessionAttributes returns the names of the attributes of p's month
// item of t that belong to one session (journal entries, markers).
func perSessionAttributes(t *testing.T, e *faultEnv, p chat.Principal, at time.Time) []string {
	t.Helper()
	item := rawLedgerItem(t, e.env, p, at)
	var names []string
	for name := range item {
		if strings.HasPrefix(name, "J#") || strings.HasPrefix(name, "S#") {
			names = append(names, name)
		}
	}
	return names
}

// rawLedgerItem reads p's month item of at as the table holds it.
func rawLedgerItem(t *testing.T, e *env, p chat.Principal, at time.Time) map[string]types.AttributeValue {
	t.Helper()
	out, err := e.client.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(e.table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{
			dynamo.AttrPK: &types.AttributeValueMemberS{Value: "USAGE#" + chat.TenantKey(p.Tenant) + "#" + chat.MonthKey(at)},
			dynamo.AttrSK: &types.AttributeValueMemberS{Value: "P#" + chat.PrincipalKey(p)},
		}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

// TestLedgerExactUnderRandomFaults counts 60 turns of 6 sessions while a
// third of the ledger writes (the add, the settle, the clear) lose their answer, answer 500 after
// applying or hang, each entry sent until it reports no error and then
// once more (as a decider would): the counters are the exact sum.
func TestLedgerExactUnderRandomFaults(t *testing.T) {
	e := newFaultEnv(t)
	s := e.ledgerStore()
	ctx := faultCtx(t)
	rng := mrand.New(mrand.NewPCG(7, 27))
	faults := []ddbfault.Fault{ddbfault.LoseAnswer, ddbfault.ServerErrorAfter, ddbfault.Hang}
	e.faults.SetRule(func(a ddbfault.Attempt) ddbfault.Fault {
		if !ledgerWrite(a) && !settleWrite(a) && !journalClear(a) || rng.IntN(3) != 0 {
			return ddbfault.Pass
		}
		return faults[rng.IntN(len(faults))]
	})
	var want chat.Counters
	for turn := range 60 {
		entry := chat.LedgerEntry{SessionID: fmt.Sprint("s", turn%6), Ordinal: int64(turn/6 + 1), Owner: alice,
			StartedAt: testStart, Usage: chat.Usage{InputTokens: int64(turn), OutputTokens: 1, ModelCalls: 1}}
		want.Add(chat.Counters{Turns: 1, Usage: entry.Usage})
		for try := 0; ; try++ {
			if err := s.RecordUsage(ctx, entry); err == nil {
				break
			} else if try == 5 {
				t.Fatalf("turn %d: %v", turn, err)
			}
		}
		if err := s.RecordUsage(ctx, entry); err != nil {
			t.Fatalf("turn %d sent again: %v", turn, err)
		}
	}
	e.faults.SetRule(nil)
	counts := e.faults.Counts()
	if counts[ddbfault.LoseAnswer] == 0 || counts[ddbfault.ServerErrorAfter] == 0 || counts[ddbfault.Hang] == 0 {
		t.Fatalf("faults injected %v, want every kind", counts)
	}
	got, err := s.ReadUsage(ctx, alice, testStart)
	if err != nil {
		t.Fatal(err)
	}
	if got.Month != want {
		t.Errorf("after 60 turns under faults %v: month %+v, want %+v", counts, got.Month, want)
	}
}

// TestAdmitRecognisesItsOwnWrite: an admission whose write applied but
// whose answer was lost, or was answered 500 (the SDK's retry then fails
// its own condition), is an admission, recorded once and holding one
// place: the next one meets the limit, under the rate and under the
// concurrency quota.
func TestAdmitRecognisesItsOwnWrite(t *testing.T) {
	for _, fault := range []ddbfault.Fault{ddbfault.LoseAnswer, ddbfault.ServerErrorAfter} {
		for quota, limits := range map[string][2]int64{chat.QuotaTurnsPerMinute: {1, 0}, chat.QuotaConcurrentSessions: {0, 1}} {
			t.Run(fault.String()+"/"+quota, func(t *testing.T) {
				e := newFaultEnv(t)
				s := e.ledgerStore()
				ctx := faultCtx(t)
				a := chat.Admission{ID: "a1", StartedAt: testStart, ExpiresAt: testStart.Add(time.Minute), Session: chat.SessionMarker("s1")}
				e.faults.SetRule(ddbfault.Once(fault, admissionWrite))
				if _, err := s.Admit(ctx, chat.AdmitRequest{Principal: alice, Admission: a, TurnsPerMinute: limits[0], ConcurrentSessions: limits[1]}); err != nil {
					t.Fatalf("admission that applied: %v", err)
				}
				if e.faults.Counts()[fault] != 1 {
					t.Fatal("the fault was not injected")
				}
				e.faults.SetRule(nil)
				u, err := s.ReadUsage(ctx, alice, testStart)
				if err != nil {
					t.Fatal(err)
				}
				if act := chat.ActivityAt(u.Admissions, testStart); act.Running != 1 || act.Recent != 1 {
					t.Errorf("activity %+v, want the one admission", act)
				}
				b := a
				b.ID, b.Session = "a2", chat.SessionMarker("s2")
				_, err = s.Admit(ctx, chat.AdmitRequest{Principal: alice, Admission: b, TurnsPerMinute: limits[0], ConcurrentSessions: limits[1]})
				var qe *chat.QuotaError
				if !errors.As(err, &qe) || qe.Name != quota {
					t.Errorf("a second turn: %v, want the %s quota", err, quota)
				}
			})
		}
	}
}

// TestGiveBackFreesOncePlaceUnderFaults: a give-back whose write applied
// but whose answer was lost, or was answered 500, frees its rate place
// once: another admission takes it, and the same give-back sent again
// does not free that one's.
func TestGiveBackFreesOncePlaceUnderFaults(t *testing.T) {
	for _, fault := range []ddbfault.Fault{ddbfault.LoseAnswer, ddbfault.ServerErrorAfter} {
		t.Run(fault.String(), func(t *testing.T) {
			e := newFaultEnv(t)
			s := e.ledgerStore()
			ctx := faultCtx(t)
			admit := func(id string, at time.Time) error {
				a := chat.Admission{ID: id, StartedAt: at, ExpiresAt: at.Add(time.Minute), Session: chat.SessionMarker("s-" + id)}
				_, err := s.Admit(ctx, chat.AdmitRequest{Principal: alice, Admission: a, TurnsPerMinute: 1})
				return err
			}
			first := chat.Admission{ID: "a1", StartedAt: testStart}
			if err := admit("a1", testStart); err != nil {
				t.Fatal(err)
			}
			e.faults.SetRule(ddbfault.Once(fault, giveBackWrite))
			if err := s.CancelAdmission(ctx, alice, first); err != nil {
				t.Fatalf("give-back that applied: %v", err)
			}
			if e.faults.Counts()[fault] != 1 {
				t.Fatal("the fault was not injected")
			}
			e.faults.SetRule(nil)
			if err := admit("a2", testStart.Add(time.Second)); err != nil {
				t.Fatalf("after the give-back: %v", err)
			}
			if err := s.CancelAdmission(ctx, alice, first); err != nil {
				t.Fatalf("the give-back again: %v", err)
			}
			var qe *chat.QuotaError
			if err := admit("a3", testStart.Add(2*time.Second)); !errors.As(err, &qe) || qe.Name != chat.QuotaTurnsPerMinute {
				t.Errorf("a third admission: %v, want the rate quota (the place is a2's)", err)
			}
		})
	}
}

// TestAdmitExactUnderConcurrencyAndFaults: 30 admissions of one principal
// at once, on 30 sessions, from two stores (two processes) on one table,
// with a third of the admission writes losing their answer or answered
// 500 after applying: exactly turnsPerMinute (5) are admitted, each
// recorded once, every other one refused by the rate.
func TestAdmitExactUnderConcurrencyAndFaults(t *testing.T) {
	e := newFaultEnv(t)
	stores := []*dynamo.Store{e.ledgerStore(), e.ledgerStore()}
	ctx := faultCtx(t)
	var mu sync.Mutex
	rng := mrand.New(mrand.NewPCG(34, 2))
	faults := []ddbfault.Fault{ddbfault.LoseAnswer, ddbfault.ServerErrorAfter}
	e.faults.SetRule(func(a ddbfault.Attempt) ddbfault.Fault {
		mu.Lock()
		defer mu.Unlock()
		if !admissionWrite(a) || rng.IntN(3) != 0 {
			return ddbfault.Pass
		}
		return faults[rng.IntN(len(faults))]
	})
	const n, limit = 30, 5
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			at := testStart.Add(time.Duration(n-i) * time.Millisecond)
			a := chat.Admission{ID: fmt.Sprint("a", i), StartedAt: at, ExpiresAt: at.Add(time.Minute), Session: chat.SessionMarker(fmt.Sprint("s", i))}
			_, errs[i] = stores[i%2].Admit(ctx, chat.AdmitRequest{Principal: alice, Admission: a, TurnsPerMinute: limit})
		})
	}
	wg.Wait()
	e.faults.SetRule(nil)
	admitted := 0
	for i, err := range errs {
		var qe *chat.QuotaError
		switch {
		case err == nil:
			admitted++
		case !errors.As(err, &qe) || qe.Name != chat.QuotaTurnsPerMinute:
			t.Errorf("admission %d: %v, want admitted or the rate quota", i, err)
		}
	}
	at := testStart.Add(time.Second)
	u, err := stores[0].ReadUsage(ctx, alice, at)
	if err != nil {
		t.Fatal(err)
	}
	if act := chat.ActivityAt(u.Admissions, at); admitted != limit || act.Recent != limit {
		t.Errorf("%d of %d admitted (%d recorded) under faults %v, want %d", admitted, n, act.Recent, e.faults.Counts(), limit)
	}
	if c := e.faults.Counts(); c[ddbfault.LoseAnswer]+c[ddbfault.ServerErrorAfter] == 0 {
		t.Error("no fault was injected")
	}
}

// TestDeciderCountsLostTurnOnce: the decider's ledger write of a lost
// turn losing its answer (or answered 500) still counts the turn once,
// and the decision completes: the session is free.
func TestDeciderCountsLostTurnOnce(t *testing.T) {
	for _, fault := range []ddbfault.Fault{ddbfault.LoseAnswer, ddbfault.ServerErrorAfter} {
		t.Run(fault.String(), func(t *testing.T) {
			e := newFaultEnv(t)
			s := e.ledgerStore()
			ctx := faultCtx(t)
			req := claimReq("s1", "crash")
			req.StartedAt = testStart
			c, err := s.ClaimTurn(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			used := chat.Usage{InputTokens: 4, OutputTokens: 9, ModelCalls: 1}
			cp := &chat.Checkpoint{SessionID: "s1", TurnID: "crash", Ordinal: c.Lease.Ordinal, FirstSequence: 1, Sequence: 1,
				Messages: textMessages("crash", "partial"), Metered: used}
			if _, err := s.Checkpoint(ctx, c, cp); err != nil {
				t.Fatal(err)
			}
			e.clock.Advance(lease)
			e.faults.SetRule(ddbfault.Once(fault, ledgerWrite))
			sess, err := s.GetSession(ctx, "s1", alice)
			if err != nil || sess.ActiveTurn != nil {
				t.Fatalf("session after the decision: lease %+v, %v; want free", sess, err)
			}
			if e.faults.Counts()[fault] != 1 {
				t.Fatal("the fault was not injected")
			}
			e.faults.SetRule(nil)
			if _, err := s.ClaimTurn(ctx, claimReq("s1", "next")); err != nil {
				t.Fatal(err)
			}
			u, err := s.ReadUsage(ctx, alice, testStart)
			if err != nil {
				t.Fatal(err)
			}
			if want := (chat.Counters{Turns: 1, Usage: used}); u.Month != want {
				t.Errorf("month %+v, want the lost turn once: %+v", u.Month, want)
			}
		})
	}
}

// TestLedgerRequestBudgets asserts the exact DynamoDB requests of the
// ledger's calls (docs/quotas.md): counting a turn is one BatchGetItem
// and three UpdateItems (the add, the settle, the clear), a second count
// of it the read alone; a principal's read one GetItem (one
// BatchGetItem of two months' items in a month's first hour); a tenant's
// page one Query; an admission on a fresh basis one UpdateItem, on none
// a read first; a give-back a read (of its rate place) and a write; a decision with the ledger on the count's four requests more
// than without.
func TestLedgerRequestBudgets(t *testing.T) {
	e := newEnv(t)
	s := dynamo.New(e.client, dynamo.Options{Table: e.table, Now: e.clock.Now, CursorKey: testCursorKey,
		ResolveShare: dynalite.ResolveShare, Ledger: chat.LedgerOptions{Enabled: true}})
	ctx := faultCtx(t)
	monthStart, _ := chat.PeriodMonth.Bounds(testStart)
	entry := chat.LedgerEntry{SessionID: "s1", Ordinal: 1, Owner: alice, StartedAt: testStart, Usage: chat.Usage{InputTokens: 3}}
	var basis *chat.PrincipalUsage
	var crashed *chat.Claim
	steps := []struct {
		name string
		run  func() error
		want []string
	}{
		{"count a turn", func() error { return s.RecordUsage(ctx, entry) }, []string{"BatchGetItem", "UpdateItem", "UpdateItem", "UpdateItem"}}, // read, add, settle, clear
		{"count it again", func() error { return s.RecordUsage(ctx, entry) }, []string{"BatchGetItem"}},
		{"read a principal's ledger", func() (err error) { basis, err = s.ReadUsage(ctx, alice, testStart); return err }, []string{"GetItem"}},
		{"read early in a month", func() error { _, err := s.ReadUsage(ctx, alice, monthStart.Add(time.Minute)); return err }, []string{"BatchGetItem"}},
		{"a tenant's page", func() error {
			_, err := s.ListUsage(ctx, chat.UsageListRequest{Tenant: alice.Tenant, At: testStart})
			return err
		}, []string{"Query"}},
		{"admit on a basis", func() error {
			a := chat.Admission{ID: "a1", StartedAt: testStart, ExpiresAt: testStart.Add(time.Minute)}
			_, err := s.Admit(ctx, chat.AdmitRequest{Principal: alice, Admission: a, TurnsPerMinute: 5, Basis: basis})
			return err
		}, []string{"UpdateItem"}},
		{"admit without one", func() error {
			a := chat.Admission{ID: "a2", StartedAt: testStart, ExpiresAt: testStart.Add(time.Minute)}
			_, err := s.Admit(ctx, chat.AdmitRequest{Principal: alice, Admission: a, TurnsPerMinute: 5})
			return err
		}, []string{"GetItem", "UpdateItem"}},
		{"cancel an admission", func() error {
			return s.CancelAdmission(ctx, alice, chat.Admission{ID: "a2", StartedAt: testStart})
		}, []string{"GetItem", "UpdateItem"}}, // find its rate place, give it back
		{"claim a turn that then crashes", func() (err error) {
			crashed, err = s.ClaimTurn(ctx, claimReq("s2", "t1"))
			return err
		}, []string{"UpdateItem"}},
		{"a reader deciding it, counting it", func() error {
			e.clock.Advance(lease)
			_, err := s.GetSession(ctx, "s2", alice)
			return err
		}, []string{"GetItem", "UpdateItem", "UpdateItem", "Query", "UpdateItem", "BatchGetItem", "UpdateItem", "UpdateItem", "UpdateItem", "UpdateItem"}}, // fence the session, fence the live item, read the turn, write its fence record, count it (read, add, settle, clear), free the session
	}
	for _, st := range steps {
		e.count.Reset()
		if err := st.run(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if got := e.count.Take(); !slices.Equal(got, st.want) {
			t.Errorf("%s: requests %v, want %v", st.name, got, st.want)
		}
	}
	if crashed == nil {
		t.Fatal("no crashed claim")
	}
	u, err := s.ReadUsage(ctx, alice, crashed.Lease.StartedAt)
	if err != nil || u.Month.Turns != 2 {
		t.Errorf("month %+v, %v; want the counted turn and the decided one", u, err)
	}
}

// TestLedgerWritesDoNotGrow: counting a turn of a principal's 1st, 1,000th
// and 100,000th session of a month costs the same write units, as
// DynamoDB reports them (ReturnConsumedCapacity, through the store's
// meter): the month item holds nothing per session. The first 1,000
// sessions are counted for real; the month item is then brought to the
// state 99,999 counted sessions leave (each of its counters and its
// generation added to as their counts would have: the sessions' own
// counted items are items of their own, which no later count reads or
// writes), and the 100,000th is counted for real.
func TestLedgerWritesDoNotGrow(t *testing.T) {
	e := newEnv(t)
	s := dynamo.New(e.client, dynamo.Options{Table: e.table, Now: e.clock.Now, CursorKey: testCursorKey,
		ResolveShare: dynalite.ResolveShare, Ledger: chat.LedgerOptions{Enabled: true}})
	ctx := t.Context() // 4,000 requests: no deadline of its own (the go test timeout bounds it)
	u := chat.Usage{InputTokens: 120, OutputTokens: 60, ModelCalls: 1, StoreRequests: 4, WriteUnits: 8, ReadUnits: 1}
	count := func(session int) chat.Usage {
		var m chat.Meter
		entry := chat.LedgerEntry{SessionID: fmt.Sprint("s", session), Ordinal: 1, Owner: alice, StartedAt: testStart, Usage: u}
		if err := s.RecordUsage(chat.WithMeter(ctx, &m), entry); err != nil {
			t.Fatalf("session %d: %v", session, err)
		}
		return m.Usage()
	}
	first := count(1)
	for i := 2; i < 1000; i++ {
		count(i)
	}
	at1000 := count(1000)
	// The state of 99,999 counted sessions: each count added u and a turn
	// to the month's and the day's counters, and one to the generation.
	more := int64(99_999 - 1000)
	up := expression.Add(expression.Name("g"), expression.Value(more))
	day := fmt.Sprintf("d%02d", testStart.UTC().Day())
	for _, p := range []string{"m", day} {
		for letter, v := range map[string]float64{"t": 1, "i": float64(u.InputTokens), "o": float64(u.OutputTokens), "m": float64(u.ModelCalls),
			"q": float64(u.StoreRequests), "u": u.ReadUnits, "v": u.WriteUnits} {
			up = up.Add(expression.Name(p+letter), expression.Value(v*float64(more)))
		}
	}
	x, err := expression.NewBuilder().WithUpdate(up).Build()
	if err != nil {
		t.Fatal(err)
	}
	key := map[string]types.AttributeValue{
		dynamo.AttrPK: &types.AttributeValueMemberS{Value: "USAGE#" + chat.TenantKey(alice.Tenant) + "#" + chat.MonthKey(testStart)},
		dynamo.AttrSK: &types.AttributeValueMemberS{Value: "P#" + chat.PrincipalKey(alice)},
	}
	if _, err := e.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(e.table), Key: key, UpdateExpression: x.Update(),
		ExpressionAttributeNames: x.Names(), ExpressionAttributeValues: x.Values()}); err != nil {
		t.Fatal(err)
	}
	at100000 := count(100_000)
	got, err := s.ReadUsage(ctx, alice, testStart)
	if err != nil {
		t.Fatal(err)
	}
	if got.Month.Turns != 100_000 || got.Month.InputTokens != 100_000*u.InputTokens {
		t.Fatalf("month %+v, want 100,000 turns", got.Month)
	}
	t.Logf("write units of a count: 1st session %.0f (%d requests), 1,000th %.0f (%d), 100,000th %.0f (%d)",
		first.WriteUnits, first.StoreRequests, at1000.WriteUnits, at1000.StoreRequests, at100000.WriteUnits, at100000.StoreRequests)
	if first.WriteUnits == 0 || at1000.WriteUnits != first.WriteUnits || at100000.WriteUnits != first.WriteUnits {
		t.Errorf("write units of a count: 1st session %v, 1,000th %v, 100,000th %v; want all equal", first.WriteUnits, at1000.WriteUnits, at100000.WriteUnits)
	}
	if names := perSessionAttributes(t, &faultEnv{env: e}, alice, testStart); len(names) != 0 {
		t.Errorf("the month item keeps %d per-session attributes", len(names))
	}
}
