package loadcheck

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/ddbfault"
	"github.com/turnstream/turnstream/internal/dynalite"
	"github.com/turnstream/turnstream/internal/dynamobench"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

// TestLoadTransportRecordsTheTruth drives the real store through the load
// client's transport with aimed faults and checks what the records say:
// each call's kind (read from the store's own requests, so a change in
// them shows here), the lease expiry written, and for each write whether
// DynamoDB applied it, whatever the store was told.
func TestLoadTransportRecordsTheTruth(t *testing.T) {
	opts := dynalite.Options(t)
	lt, inj := NewTransport(4, 1)
	inj.set(&FaultPlan{}) // aimed faults only
	// A generous attempt timeout: only the aimed hang may meet it, never
	// a slow answer (which would make this test depend on the machine).
	opts.Transport, opts.AttemptTimeout = lt, 2*time.Second
	client, err := dynamo.NewClient(context.Background(), opts, NewTap().Option())
	if err != nil {
		t.Fatal(err)
	}
	store := dynamo.New(client, dynamo.Options{Table: dynalite.Table(t), CursorKey: []byte("turnbench-test-cursor-key-0123456")})
	p := chat.Principal{Subject: "bench"}
	// call runs fn with a fresh trace aimed at a, and returns its facts
	// and calls.
	call := func(a *aim, fn func(ctx context.Context) error) (facts, []Op, error) {
		tr := &Trace{aim: a}
		ctx, cancel := context.WithTimeout(withTrace(context.Background(), tr), 30*time.Second)
		defer cancel()
		err := fn(ctx)
		ops := tr.Ops()
		return factsOf(ops), ops, err
	}

	var c *chat.Claim
	req := chat.ClaimRequest{SessionID: "s1", TurnID: "t1", Principal: p, InputHash: chat.HashInput("x"),
		Lineage: protocol.Lineage{Operation: protocol.OperationSubmit}, LeaseDuration: time.Minute}
	f, ops, err := call(&aims[0], func(ctx context.Context) (err error) { // the claim's answer is lost
		c, err = store.ClaimTurn(ctx, req)
		return err
	})
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	if ops[0].Write != dynamobench.ClaimWrite || ops[0].Attempts[0].Fault != ddbfault.LoseAnswer || ops[0].Attempts[0].Status != http.StatusOK {
		t.Fatalf("claim write %+v, first attempt %+v; want a claim write applied (200) on a lost answer", ops[0], *ops[0].Attempts[0])
	}
	if f.claim != appliedYes || !f.claimLost || !f.claimResolved || !f.expiry.Equal(c.Lease.ExpiresAt) {
		t.Errorf("claim facts %+v; want applied, answer lost, resolved, expiry %v", f, c.Lease.ExpiresAt)
	}

	until := time.Now().Add(2 * time.Minute).Truncate(time.Millisecond)
	f, ops, err = call(&aim{Kind: dynamobench.KindRenew, Fault: ddbfault.ServerErrorAfter}, func(ctx context.Context) error {
		_, err := store.RenewLease(ctx, chat.RenewRequest{Claim: c, ExpiresAt: until, Sequence: 1})
		return err
	})
	if err != nil || len(ops) == 0 || ops[0].Kind != dynamobench.KindRenew || !ops[0].Expiry.Equal(until) || !f.expiry.Equal(until) || !f.renewTrouble {
		t.Errorf("renewal: %v, calls %+v, facts %+v; want a renewal to %v, in trouble (it met a fault)", err, ops, f, until)
	}

	msgs := []protocol.Message{{ID: "t1-u", Role: protocol.RoleUser, Content: "x", Status: protocol.MessageComplete, CreatedAt: "2026-12-01T00:00:00.000Z"}}
	turn := &chat.Turn{SessionID: "s1", TurnID: "t1", Ordinal: c.Lease.Ordinal, Status: chat.TurnComplete, Lineage: c.Lease.Lineage,
		InputHash: c.Lease.InputHash, Messages: msgs, FirstSequence: 1, LastSequence: 2}
	f, _, err = call(&aim{Kind: dynamobench.KindSave, Fault: ddbfault.ServerErrorBefore, Every: true}, func(ctx context.Context) error {
		return store.SaveTurn(ctx, c, turn)
	})
	if err == nil || !f.saveCalled || f.save != appliedNo || !f.saveFailed || !f.saveResolved {
		t.Errorf("save that never applied: %v, facts %+v; want an error, not applied, resolved", err, f)
	}
	f, _, err = call(&aim{Kind: dynamobench.KindSave, Fault: ddbfault.ServerErrorAfter, Every: true}, func(ctx context.Context) error {
		return store.SaveTurn(ctx, c, turn)
	})
	if err != nil || f.save != appliedYes || !f.saveFailed || !f.saveResolved {
		t.Errorf("save applied under 500s: %v, facts %+v; want saved (its call failed, its read resolved it)", err, f)
	}
	f, ops, err = call(&aim{Kind: dynamobench.KindRelease, Fault: ddbfault.Hang}, func(ctx context.Context) error {
		_, err := store.ReleaseTurn(ctx, chat.ReleaseRequest{Claim: c, Outcome: chat.OutcomeCompleted, Sequence: 2})
		return err
	})
	if err != nil || f.release != appliedYes || ops[0].Attempts[0].Fault != ddbfault.Hang || ops[0].Attempts[0].Forwarded {
		t.Errorf("release after a hung attempt: %v, facts %+v, calls %s", err, f, describe(ops))
	}

	// A replay is rejected by the window: the claim's condition fails,
	// nothing applied.
	f, ops, err = call(nil, func(ctx context.Context) error {
		_, err := store.ClaimTurn(ctx, req)
		return err
	})
	if err == nil || f.claim != appliedNo || !ops[0].CondFailed || ops[0].Attempts[0].ErrorType != "ConditionalCheckFailedException" {
		t.Errorf("replay: %v, facts %+v, calls %s; want a failed condition, nothing applied", err, f, describe(ops))
	}

	// The turn's count in the ledger: a read of the month and counted
	// items, then the add (the only write that changes the counters), the
	// settle and the clear, each labelled as what it is.
	aimAt := func(write string, fault ddbfault.Fault) *aim {
		for i := range aims {
			if aims[i].Kind == write && aims[i].Fault == fault {
				return &aims[i]
			}
		}
		t.Fatalf("no aimed case %s/%s", write, fault)
		return nil
	}
	entry := chat.LedgerEntry{SessionID: "s1", Ordinal: c.Lease.Ordinal, Owner: p, StartedAt: time.Now()}
	count := func(a *aim) (facts, []Op, LedgerCheck, error) {
		f, ops, err := call(a, func(ctx context.Context) error { return store.RecordUsage(ctx, entry) })
		var l LedgerCheck
		l.countWrites(ops)
		return f, ops, l, err
	}
	// writes returns the writes of ops, in order, and the ledger's turns
	// counted in the month.
	writes := func(ops []Op) ([]*Op, int64) {
		var out []*Op
		for i := range ops {
			if ops[i].Kind != dynamobench.KindUsage {
				t.Errorf("call %s classified %q; want a usage call", describe(ops[i:i+1]), ops[i].Kind)
			}
			if ops[i].Write != "" {
				out = append(out, &ops[i])
			}
		}
		u, err := store.ReadUsage(context.Background(), p, entry.StartedAt)
		if err != nil {
			t.Fatalf("read usage: %v", err)
		}
		return out, u.Month.Turns
	}
	labels := func(ws []*Op) []string {
		var out []string
		for _, w := range ws {
			out = append(out, w.Write)
		}
		return out
	}
	full := []string{dynamobench.LedgerWrite, dynamobench.LedgerSettle, dynamobench.LedgerClear}

	// The add's answer lost: it applied, the SDK's retry failed its own
	// condition (the journal entry it set), and the next round's read
	// took the turn as added: settled and cleared, counted once.
	f, ops, l, err := count(aimAt(dynamobench.LedgerWrite, ddbfault.LoseAnswer))
	ws, turns := writes(ops)
	if err != nil || !slices.Equal(labels(ws), full) || appliedOf(ws[0]) != appliedYes || !answerLost(ws[0]) || !ws[0].CondFailed ||
		appliedOf(ws[1]) != appliedYes || faulted(ws[1]) || appliedOf(ws[2]) != appliedYes || faulted(ws[2]) || turns != 1 || f.claimFailed {
		t.Errorf("ledger add, its answer lost: %v, calls %s, %d turns counted; want one add (applied, its retry's condition failed), a settle and a clear, applied; 1 turn", err, describe(ops), turns)
	}
	if want := (LedgerCheck{Writes: 1, AnswerLost: 1, Recognised: 1, Settles: 1, Clears: 1}); l != want {
		t.Errorf("ledger add, its answer lost: accounted %+v, want %+v", l, want)
	}

	// The add refused on every attempt: the store's resolving read (a
	// usage read, not the claim's) finds it not applied and sends it once
	// more, refused too; nothing settled or cleared, nothing counted.
	// Without a save before it, the request's facts take it for a
	// decision's count in the claim: the claim failed.
	entry.Ordinal++
	f, ops, l, err = count(aimAt(dynamobench.LedgerWrite, ddbfault.ServerErrorBefore))
	ws, turns = writes(ops)
	if err == nil || !f.claimFailed || len(ops) != 4 || ops[0].Op != "BatchGetItem" || ops[2].Op != "GetItem" ||
		!slices.Equal(labels(ws), []string{dynamobench.LedgerWrite, dynamobench.LedgerWrite}) || appliedOf(ws[0]) != appliedNo || appliedOf(ws[1]) != appliedNo || turns != 1 {
		t.Errorf("ledger add refused: %v, facts %+v, calls %s, %d turns counted; want the read, the add, its read, the add again, none applied; 1 turn", err, f, describe(ops), turns)
	}
	if want := (LedgerCheck{Writes: 2, Failed: 2}); l != want {
		t.Errorf("ledger add refused: accounted %+v, want %+v", l, want)
	}

	// The settle's answer lost: applied, its retry's condition failed,
	// read as settled; one add, one turn more.
	entry.Ordinal++
	f, ops, l, err = count(aimAt(dynamobench.LedgerSettle, ddbfault.LoseAnswer))
	ws, turns = writes(ops)
	if err != nil || f.claimFailed || !slices.Equal(labels(ws), full) || appliedOf(ws[0]) != appliedYes || faulted(ws[0]) ||
		appliedOf(ws[1]) != appliedYes || !answerLost(ws[1]) || !ws[1].CondFailed || appliedOf(ws[2]) != appliedYes || turns != 2 {
		t.Errorf("ledger settle, its answer lost: %v, facts %+v, calls %s, %d turns counted; want an add, a settle applied with its retry's condition failed, a clear; 2 turns", err, f, describe(ops), turns)
	}
	if want := (LedgerCheck{Writes: 1, Settles: 1, Clears: 1}); l != want {
		t.Errorf("ledger settle, its answer lost: accounted %+v, want %+v", l, want)
	}

	// The clear refused on every attempt (and once more after its
	// resolving read): the count stands and the request fails nothing;
	// the entry it left does not stop the session's next count.
	entry.Ordinal++
	f, ops, l, err = count(aimAt(dynamobench.LedgerClear, ddbfault.ServerErrorBefore))
	ws, turns = writes(ops)
	if err != nil || f.claimFailed || !slices.Equal(labels(ws), append(full, dynamobench.LedgerClear)) || appliedOf(ws[0]) != appliedYes ||
		appliedOf(ws[2]) != appliedNo || appliedOf(ws[3]) != appliedNo || ops[len(ops)-2].Op != "GetItem" || turns != 3 {
		t.Errorf("ledger clear refused: %v, facts %+v, calls %s, %d turns counted; want an add, a settle, the clear, its read, the clear again; nothing failed; 3 turns", err, f, describe(ops), turns)
	}
	if want := (LedgerCheck{Writes: 1, Settles: 1, Clears: 2, Uncleared: 2}); l != want {
		t.Errorf("ledger clear refused: accounted %+v, want %+v", l, want)
	}
	entry.Ordinal++
	_, ops, _, err = count(nil)
	if ws, turns = writes(ops); err != nil || !slices.Equal(labels(ws), full) || appliedOf(ws[0]) != appliedYes || turns != 4 {
		t.Errorf("the count after a refused clear: %v, calls %s, %d turns counted; want an add, a settle, a clear; 4 turns", err, describe(ops), turns)
	}
}

func TestJudge(t *testing.T) {
	status := func(code int, errCode string, retryable bool) *Result {
		return &Result{Status: code, ErrorCode: errCode, Retryable: retryable}
	}
	stream := func(last *protocol.Event) *Result { return &Result{Status: http.StatusOK, Last: last} }
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	diagAt := func(code string, at time.Time) *Result {
		d := protocol.NewDiagnostic(code)
		r := stream(&protocol.Event{Kind: protocol.EventDiagnostic, Diagnostic: &d})
		r.Received = []LineRecord{{EmittedAt: at, Event: protocol.EventSnapshot, Status: protocol.StatusStreaming}, {EmittedAt: at, Event: protocol.EventDiagnostic}}
		return r
	}
	diag := func(code string) *Result { return diagAt(code, t0) }
	complete := stream(&protocol.Event{Kind: protocol.EventSnapshot, Snapshot: &protocol.SnapshotPayload{Status: protocol.StatusComplete}})
	lostD := protocol.NewDiagnostic(protocol.CodeTurnLost)
	lostRecord := stream(&protocol.Event{Kind: protocol.EventSnapshot, Sequence: chat.SequenceGapAfterCrash,
		Snapshot: &protocol.SnapshotPayload{Status: protocol.StatusError, Error: &lostD}})
	claimed := facts{claim: appliedYes, claimResolved: true}
	tests := map[string]struct {
		f       facts
		res     *Result
		earlier applied
		saved   bool
		ok      bool
	}{
		"busy, nothing applied":                                 {facts{claim: appliedNo}, status(409, protocol.CodeSessionBusy, true), appliedNo, false, true},
		"busy for its own applied claim":                        {claimed, status(409, protocol.CodeSessionBusy, true), appliedNo, false, false},
		"500, the claim never applied":                          {facts{claimFailed: true}, status(500, protocol.CodeServerInternal, true), appliedNo, false, true},
		"500 without a failure":                                 {facts{}, status(500, protocol.CodeServerInternal, true), appliedNo, false, false},
		"500 not retryable":                                     {facts{claimFailed: true}, status(500, protocol.CodeServerInternal, false), appliedNo, false, false},
		"500 for an applied, read claim":                        {claimed, status(500, protocol.CodeServerInternal, true), appliedNo, false, false},
		"500, applied but unresolvable":                         {facts{claim: appliedYes, claimFailed: true, claimReadFailed: true}, status(500, protocol.CodeServerInternal, true), appliedNo, false, false},
		"indeterminate, its own claim unresolvable":             {facts{claim: appliedYes, claimFailed: true, claimReadFailed: true}, status(409, protocol.CodeTurnOutcomeIndeterminate, false), appliedNo, false, true},
		"indeterminate, a claim not applied but unresolvable":   {facts{claimFailed: true, claimReadFailed: true}, status(409, protocol.CodeTurnOutcomeIndeterminate, false), appliedNo, false, true},
		"indeterminate, a claim resolved":                       {facts{claim: appliedYes, claimResolved: true, claimReadFailed: true}, status(409, protocol.CodeTurnOutcomeIndeterminate, false), appliedNo, false, false},
		"500, the lookup failed, given back":                    {facts{claim: appliedYes, claimResolved: true, claimFailed: true, givenBack: appliedYes}, status(500, protocol.CodeServerInternal, true), appliedNo, false, true},
		"500, the context load failed":                          {facts{claim: appliedYes, claimResolved: true, afterClaimFailed: true}, status(500, protocol.CodeServerInternal, true), appliedNo, false, true},
		"500, the renewal before the stream failed":             {facts{claim: appliedYes, claimResolved: true, renewTrouble: true}, status(500, protocol.CodeServerInternal, true), appliedNo, false, true},
		"indeterminate after a claim":                           {facts{}, status(409, protocol.CodeTurnOutcomeIndeterminate, false), appliedYes, false, true},
		"indeterminate after an unseen claim":                   {facts{}, status(409, protocol.CodeTurnOutcomeIndeterminate, false), appliedUnknown, false, true},
		"indeterminate, its own claim, lease unproven":          {facts{claim: appliedYes, renewTrouble: true}, status(409, protocol.CodeTurnOutcomeIndeterminate, false), appliedNo, false, true},
		"indeterminate, its own claim, the context load failed": {facts{claim: appliedYes, afterClaimFailed: true}, status(409, protocol.CodeTurnOutcomeIndeterminate, false), appliedNo, false, true},
		"indeterminate, its own claim, renewals fine":           {facts{claim: appliedYes}, status(409, protocol.CodeTurnOutcomeIndeterminate, false), appliedNo, false, false},
		"indeterminate, never claimed":                          {facts{}, status(409, protocol.CodeTurnOutcomeIndeterminate, false), appliedNo, false, false},
		"completed, not in history":                             {facts{}, status(409, protocol.CodeTurnAlreadyCompleted, false), appliedYes, false, false},
		"acknowledged":                                          {facts{claim: appliedYes, saveCalled: true, save: appliedYes}, complete, appliedNo, true, true},
		"acknowledged, no save applied":                         {facts{claim: appliedYes, saveCalled: true}, complete, appliedNo, false, false},
		"a second run of a claimed turn":                        {facts{claim: appliedYes, save: appliedYes}, complete, appliedYes, true, false},
		"a stream without a claim":                              {facts{}, complete, appliedNo, true, false},
		"unsaved, the save never applied":                       {facts{claim: appliedYes, saveCalled: true, saveFailed: true, saveResolved: true}, diag(protocol.CodeTurnOutcomeIndeterminate), appliedNo, false, true},
		"unsaved, but saved and read":                           {facts{claim: appliedYes, saveCalled: true, save: appliedYes, saveFailed: true, saveResolved: true}, diag(protocol.CodeTurnOutcomeIndeterminate), appliedNo, true, false},
		"unsaved, saved, read failed":                           {facts{claim: appliedYes, saveCalled: true, save: appliedYes, saveFailed: true}, diag(protocol.CodeTurnOutcomeIndeterminate), appliedNo, true, true},
		"conflict after renewal trouble":                        {facts{claim: appliedYes, renewTrouble: true}, diag(protocol.CodeTurnLost), appliedNo, false, true},
		"unknown, the lease unproven and its fate unread":       {facts{claim: appliedYes, renewTrouble: true, fateReadFailed: true}, diag(protocol.CodeTurnOutcomeIndeterminate), appliedNo, false, true},
		"unknown without a save, its fate read":                 {facts{claim: appliedYes, renewTrouble: true}, diag(protocol.CodeTurnOutcomeIndeterminate), appliedNo, false, false},
		"conflict with healthy renewals":                        {facts{claim: appliedYes, expiry: t0.Add(time.Second)}, diag(protocol.CodeTurnLost), appliedNo, false, false},
		"conflict at the lease's end":                           {facts{claim: appliedYes, expiry: t0.Add(100 * time.Millisecond)}, diag(protocol.CodeTurnLost), appliedNo, false, true},
		"server timeout":                                        {facts{claim: appliedYes}, diag(protocol.CodeServerTimeout), appliedNo, false, false},
		"unsaved, said retryable":                               {facts{claim: appliedYes, saveCalled: true, saveFailed: true}, diag(protocol.CodeServerInternal), appliedNo, false, false},
		"lost record after renewal trouble":                     {facts{claim: appliedYes, renewTrouble: true}, lostRecord, appliedNo, false, true},
		"cut by the client":                                     {facts{claim: appliedYes}, &Result{Status: http.StatusOK, Disconnected: true}, appliedNo, false, true},
		"busy, the claim's outcome unseen":                      {facts{claim: appliedUnknown}, status(409, protocol.CodeSessionBusy, true), appliedNo, false, true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			v := judge(tc.f, tc.res, tc.earlier, tc.saved, time.Second)
			if got := v.problem == ""; got != tc.ok {
				t.Errorf("judge = %+v, want ok %v", v, tc.ok)
			}
		})
	}
}

// TestLostClaimOutcome: a claim applied with its answer lost is accounted
// for by what followed it; a 409 TURN_OUTCOME_INDETERMINATE after its lease
// could not be proven (a stressed make test met one) is a failure after
// the claim, not a problem.
func TestLostClaimOutcome(t *testing.T) {
	res := func(code int, errCode string) *Result { return &Result{Status: code, ErrorCode: errCode} }
	lost := facts{claim: appliedYes, claimLost: true, claimResolved: true}
	with := func(edit func(*facts)) facts { f := lost; edit(&f); return f }
	tests := map[string]struct {
		f    facts
		res  *Result
		want int
	}{
		"ran":                                 {lost, &Result{Status: http.StatusOK}, ranOnce},
		"500, the context load failed":        {with(func(f *facts) { f.afterClaimFailed = true }), res(500, protocol.CodeServerInternal), failedAfter},
		"500, the lookup failed, given back":  {with(func(f *facts) { f.claimFailed, f.givenBack = true, appliedYes }), res(500, protocol.CodeServerInternal), failedAfter},
		"409 indeterminate, renewal trouble":  {with(func(f *facts) { f.renewTrouble = true }), res(409, protocol.CodeTurnOutcomeIndeterminate), failedAfter},
		"409 indeterminate, context failed":   {with(func(f *facts) { f.afterClaimFailed = true }), res(409, protocol.CodeTurnOutcomeIndeterminate), failedAfter},
		"409 indeterminate, failure unsaved":  {with(func(f *facts) { f.saveFailed = true }), res(409, protocol.CodeTurnOutcomeIndeterminate), failedAfter},
		"409 indeterminate, nothing failed":   {lost, res(409, protocol.CodeTurnOutcomeIndeterminate), unexplained},
		"409, the resolving read failed too":  {with(func(f *facts) { f.claimResolved, f.claimReadFailed = false, true }), res(409, protocol.CodeTurnOutcomeIndeterminate), unresolvable},
		"500, the resolving read failed too":  {with(func(f *facts) { f.claimResolved, f.claimReadFailed = false, true }), res(500, protocol.CodeServerInternal), unexplained},
		"500 for a resolved claim":            {lost, res(500, protocol.CodeServerInternal), unexplained},
		"busy for its own claim":              {lost, res(409, protocol.CodeSessionBusy), unexplained},
		"busy for its own claim, any trouble": {with(func(f *facts) { f.renewTrouble = true }), res(409, protocol.CodeSessionBusy), unexplained},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := lostClaimOutcome(tc.f, tc.res); got != tc.want {
				t.Errorf("lostClaimOutcome = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestFactsOfAFailedFence: a claim whose fence of a crashed turn failed
// (its decide write, or reading its checkpoints: a Query, classified
// other) failed: its 500 is explained.
func TestFactsOfAFailedFence(t *testing.T) {
	fence := []Op{
		{Op: "UpdateItem", Kind: dynamobench.KindClaim, Write: dynamobench.ClaimWrite, Err: "ccf", CondFailed: true},
		{Op: "GetItem", SK: "SESSION", Kind: dynamobench.KindRead},
		{Op: "UpdateItem", Kind: dynamobench.KindDecide},
		{Op: "Query", Kind: dynamobench.KindOther, Err: "500 before apply"},
	}
	f := factsOf(fence)
	if !f.claimFailed {
		t.Fatalf("facts %+v: the fence's failed Query does not fail the claim", f)
	}
	if v := judge(f, &Result{Status: http.StatusInternalServerError, ErrorCode: protocol.CodeServerInternal, Retryable: true}, appliedNo, false, time.Second); v.problem != "" {
		t.Errorf("judge: %s, want the 500 explained", v.problem)
	}
	if f := factsOf(fence[:3]); f.claimFailed {
		t.Errorf("facts %+v: failed without a failed call", f)
	}
	hung := append(append([]Op(nil), fence[:2]...), Op{Op: "UpdateItem", Kind: dynamobench.KindDecide, Err: "hung"})
	if f := factsOf(hung); !f.claimFailed {
		t.Errorf("facts %+v: the fence's failed decide write does not fail the claim", f)
	}
}

// TestFactsOfAnUnreadFateAfterRenewalTrouble: a turn that could not prove
// its lease (every renewal hung), saved nothing, and whose decided fate
// could not be read because the decided turn's count in the usage ledger
// failed (its read hung) is told TURN_OUTCOME_INDETERMINATE rightly; the
// same calls with the count answered leave that answer unexplained. (A
// loaded make test showed the judge counting only decide and other calls
// as the fate's read.)
func TestFactsOfAnUnreadFateAfterRenewalTrouble(t *testing.T) {
	applied := []*attemptRecord{{Status: http.StatusOK, Forwarded: true}}
	ops := []Op{
		{Op: "UpdateItem", Kind: dynamobench.KindClaim, Write: dynamobench.ClaimWrite, Attempts: applied},
		{Op: "Query", Kind: dynamobench.KindContext},
		{Op: "UpdateItem", Kind: dynamobench.KindRenew, Err: "hung"},
		{Op: "GetItem", SK: "SESSION", Kind: dynamobench.KindRead},
		{Op: "UpdateItem", Kind: dynamobench.KindRenew, Err: "hung"},
		{Op: "Query", Kind: dynamobench.KindOther},
		{Op: "UpdateItem", Kind: dynamobench.KindDecide},
		{Op: "BatchGetItem", Kind: dynamobench.KindUsage},
		{Op: "UpdateItem", Kind: dynamobench.KindUsage, Write: dynamobench.LedgerWrite, Err: "ccf", CondFailed: true},
		{Op: "BatchGetItem", Kind: dynamobench.KindUsage, Err: "hung"},
	}
	d := protocol.NewDiagnostic(protocol.CodeTurnOutcomeIndeterminate)
	at := time.Date(2026, 12, 4, 8, 0, 0, 0, time.UTC)
	res := &Result{Status: http.StatusOK, Last: &protocol.Event{Kind: protocol.EventDiagnostic, Diagnostic: &d},
		Received: []LineRecord{{EmittedAt: at, Event: protocol.EventSnapshot, Status: protocol.StatusStreaming}, {EmittedAt: at, Event: protocol.EventDiagnostic}}}
	f := factsOf(ops)
	if !f.renewTrouble || !f.fateReadFailed || f.saveCalled {
		t.Fatalf("facts %+v: want renewal trouble, the fate unread, no save", f)
	}
	if v := judge(f, res, appliedNo, false, time.Second); v.problem != "" {
		t.Errorf("judge: %s, want the answer explained", v.problem)
	}
	read := slices.Clone(ops)
	read[len(read)-1].Err = ""
	if v := judge(factsOf(read), res, appliedNo, false, time.Second); v.problem == "" {
		t.Error("the fate read and counted, yet TURN_OUTCOME_INDETERMINATE: want a problem")
	}

	// The poll of the whole turn reads the session to decide the expired
	// lease; every attempt of that read hung (a hogged make test, aimed
	// case renew/hung/every: the judge counted only decide, other and
	// usage calls as the fate's read).
	session := []Op{
		ops[0], ops[1],
		{Op: "UpdateItem", Kind: dynamobench.KindRenew, Err: "hung"},
		{Op: "GetItem", SK: "SESSION", Kind: dynamobench.KindRead},
		{Op: "UpdateItem", Kind: dynamobench.KindRenew, Err: "hung"},
		{Op: "Query", Kind: dynamobench.KindOther},
		{Op: "GetItem", SK: "SESSION", Kind: dynamobench.KindRead, Err: "hung"},
	}
	if f := factsOf(session); !f.fateReadFailed || f.claimFailed {
		t.Errorf("facts %+v: want the fate unread, the claim not failed", f)
	}
	if v := judge(factsOf(session), res, appliedNo, false, time.Second); v.problem != "" {
		t.Errorf("judge, the session read hung: %s, want the answer explained", v.problem)
	}
	session[len(session)-1].Err = ""
	if v := judge(factsOf(session), res, appliedNo, false, time.Second); v.problem == "" {
		t.Error("the session read answered, yet TURN_OUTCOME_INDETERMINATE: want a problem")
	}
}

// TestConsumed: a claim given back (a failed or rejecting turn id lookup)
// leaves its turn id free for a later run; one whose give-back may not
// have applied leaves it unknown.
func TestConsumed(t *testing.T) {
	for _, tc := range []struct {
		f    facts
		want applied
	}{
		{facts{claim: appliedNo}, appliedNo},
		{facts{claim: appliedUnknown}, appliedUnknown},
		{facts{claim: appliedYes}, appliedYes},
		{facts{claim: appliedYes, givenBack: appliedYes}, appliedNo},
		{facts{claim: appliedYes, givenBack: appliedUnknown}, appliedUnknown},
	} {
		if got := tc.f.consumed(); got != tc.want {
			t.Errorf("consumed(claim %v, given back %v) = %v, want %v", tc.f.claim, tc.f.givenBack, got, tc.want)
		}
	}
}

func TestCheckLines(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	line := func(ms int, status string) LineRecord {
		return LineRecord{Arrived: at(ms + 1), EmittedAt: at(ms), Event: protocol.EventSnapshot, Status: status}
	}
	a := facts{claimAt: &attemptRecord{Start: at(0), Answered: at(2)}, expiry: at(1000)}
	b := facts{claimAt: &attemptRecord{Start: at(2000), Answered: at(2005)}, expiry: at(3000)}
	recs := []loadRecord{
		{Turn: "a", Res: &Result{Received: []LineRecord{
			line(500, protocol.StatusStreaming),  // inside the lease
			line(1200, protocol.StatusStreaming), // after its expiry
			line(1300, protocol.StatusComplete),  // a terminal snapshot after a save: not judged by the expiry
			line(2003, protocol.StatusComplete),  // while b's claim was in flight
			line(2010, protocol.StatusError),     // after b claimed
		}}},
		{Turn: "b", Res: &Result{Received: []LineRecord{line(2100, protocol.StatusStreaming)}}},
	}
	rep := &Report{}
	checkLines("s", recs, []facts{a, b}, Config{Lease: time.Second}, rep)
	if rep.Lines != 6 || rep.AfterExpiry != 1 || rep.AfterClaim != 1 || rep.Ambiguous != 1 {
		t.Errorf("lines %d, after expiry %d, after a later claim %d, ambiguous %d; want 6, 1, 1, 1",
			rep.Lines, rep.AfterExpiry, rep.AfterClaim, rep.Ambiguous)
	}
}

func TestLeaseLeft(t *testing.T) {
	done := facts{claim: appliedYes, release: appliedYes}
	left := facts{claim: appliedYes, release: appliedNo}
	busy := facts{claim: appliedNo}
	tests := map[string]struct {
		requests []facts
		want     bool
	}{
		"all released":                    {[]facts{done, done}, false},
		"last release failed":             {[]facts{done, left}, true},
		"release failed, then busy":       {[]facts{left, busy, busy}, true},
		"release failed, then a new turn": {[]facts{left, done}, false},
		"claim outcome unseen":            {[]facts{done, {claim: appliedUnknown}}, true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := leaseLeft(tc.requests); got != tc.want {
				t.Errorf("leaseLeft = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestFactsOfASaveSentTwice: a save that applied with every answer
// replaced by a 500, its resolving read lost, then sent again and failing
// its condition (it had applied), is the turn's save: the turn may be
// acknowledged. (A hogged make test's turnbench load run showed the judge
// reading only the last save call and calling the acknowledgment wrong.)
func TestFactsOfASaveSentTwice(t *testing.T) {
	applied := []*attemptRecord{{Fault: ddbfault.ServerErrorAfter, Status: http.StatusOK, Forwarded: true}}
	refused := []*attemptRecord{{Status: http.StatusBadRequest, Forwarded: true, ErrorType: "ConditionalCheckFailedException"}}
	ops := []Op{
		{Op: "UpdateItem", Kind: dynamobench.KindClaim, Write: dynamobench.ClaimWrite, Attempts: []*attemptRecord{{Status: http.StatusOK, Forwarded: true}}},
		{Op: "Query", Kind: dynamobench.KindContext},
		{Op: "UpdateItem", Kind: dynamobench.KindSave, Err: "500", Attempts: applied},
		{Op: "GetItem", Kind: dynamobench.KindRead, Err: "lost"},
		{Op: "UpdateItem", Kind: dynamobench.KindSave, Err: "ccf", CondFailed: true, Attempts: refused},
		{Op: "Query", Kind: dynamobench.KindOther},
		{Op: "UpdateItem", Kind: dynamobench.KindRelease, Attempts: []*attemptRecord{{Status: http.StatusOK, Forwarded: true}}},
	}
	f := factsOf(ops)
	if f.save != appliedYes || !f.saveFailed {
		t.Fatalf("facts %+v: want the save applied (and failed to its caller)", f)
	}
	complete := &Result{Status: http.StatusOK, Last: &protocol.Event{Kind: protocol.EventSnapshot, Snapshot: &protocol.SnapshotPayload{Status: protocol.StatusComplete}}}
	if v := judge(f, complete, appliedNo, false, time.Second); v.problem != "" {
		t.Errorf("judge: %s, want the acknowledgment explained", v.problem)
	}
}
