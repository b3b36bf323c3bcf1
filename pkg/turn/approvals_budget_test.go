package turn_test

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/dynalite"
	"github.com/turnstream/turnstream/internal/dynamobench"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
	"github.com/turnstream/turnstream/pkg/turn"
)

// capacityMeter counts the DynamoDB requests a client sends and sums the
// capacity units DynamoDB bills for them: its observer has every request
// ask for ReturnConsumedCapacity TOTAL (dynalite reports it for the base
// table).
type capacityMeter struct {
	mu     sync.Mutex
	ops    map[string]int
	writes float64 // write capacity units
	reads  float64 // read capacity units
}

func (m *capacityMeter) take() (ops map[string]int, writes, reads float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ops, writes, reads = m.ops, m.writes, m.reads
	m.ops, m.writes, m.reads = map[string]int{}, 0, 0
	return ops, writes, reads
}

// option installs the meter on a client (dynamo.NewClient's optFns).
func (m *capacityMeter) option() dynamobench.ClientOption {
	return dynamobench.Observer{Capacity: true, Call: func(ctx context.Context, r dynamobench.Request) (context.Context, func(dynamobench.Outcome)) {
		return ctx, func(o dynamobench.Outcome) {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.ops[r.Op]++
			m.writes += o.WriteUnits
			m.reads += o.ReadUnits
		}
	}}.Option()
}

func opsString(ops map[string]int) string {
	names := make([]string, 0, len(ops))
	total := 0
	for k, n := range ops {
		names = append(names, fmt.Sprintf("%s×%d", k, n))
		total += n
	}
	sort.Strings(names)
	return fmt.Sprintf("%d (%s)", total, strings.Join(names, ", "))
}

// TestApprovalRoundTripCost measures, on dynalite, the DynamoDB requests
// and billed capacity units of one approval round trip (the turn that
// ends waiting plus its continuation) beside a plain two-turn exchange of
// the same session shape, in the same run, and pins that the round trip
// costs no extra request: the confirmation rides on the release and the
// decision on the claim. Run with -v to print the figure.
func TestApprovalRoundTripCost(t *testing.T) {
	for _, cp := range []time.Duration{0, time.Second} {
		t.Run("checkpoints "+cp.String(), func(t *testing.T) { approvalRoundTripCost(t, cp) })
	}
}

// approvalRoundTripCost is TestApprovalRoundTripCost with checkpoint
// interval cp (0: off). With checkpoints on, the calls' state changes
// are checkpointed (moments that must not be lost), so the counts depend
// on timing and are only reported.
func approvalRoundTripCost(t *testing.T, cp time.Duration) {
	meter := &capacityMeter{ops: map[string]int{}}
	client, err := dynamo.NewClient(context.Background(), dynalite.Options(t), meter.option())
	if err != nil {
		t.Fatal(err)
	}
	store := dynamo.New(client, dynamo.Options{Table: dynalite.Table(t), CursorKey: []byte("turn-test-cursor-key-0123456789")})
	var runs atomic.Int32
	e, _ := approvalEnv(t, store, &runs, func(o *turn.Options) { o.CheckpointInterval = cp })

	meter.take()
	e.submit(t, "plain", "p1", "Hello.", nil, nil).want(t, http.StatusOK, "")
	e.submit(t, "plain", "p2", "Hello again.", nil, nil).want(t, http.StatusOK, "")
	plainOps, plainW, plainR := meter.take()

	e.submit(t, "approve", "a1", askInput, nil, nil).want(t, http.StatusOK, "")
	askOps, askW, askR := meter.take()
	token := storedConfirmation(t, store, "approve", askConfirmationToken(t, store)).Token
	meter.take() // the test's own read
	r := e.decide(t, "approve", "a2", token, protocol.DecisionApprove, nil)
	r.want(t, http.StatusOK, "")
	decideOps, decideW, decideR := meter.take()
	if runs.Load() != 1 {
		t.Fatalf("tool ran %d times", runs.Load())
	}

	approvalOps := map[string]int{}
	for _, ops := range []map[string]int{askOps, decideOps} {
		for k, n := range ops {
			approvalOps[k] += n
		}
	}
	t.Logf("plain two-turn exchange: %s requests, %.1f WCU, %.1f RCU", opsString(plainOps), plainW, plainR)
	t.Logf("approval round trip:     %s requests, %.1f WCU, %.1f RCU (ask %s, %.1f WCU; continuation %s, %.1f WCU)",
		opsString(approvalOps), askW+decideW, askR+decideR, opsString(askOps), askW, opsString(decideOps), decideW)
	if cp == 0 && opsString(approvalOps) != opsString(plainOps) {
		t.Errorf("approval round trip %s requests, plain exchange %s: want the same", opsString(approvalOps), opsString(plainOps))
	}
}

// askConfirmationToken returns the token of session "approve"'s only
// confirmation.
func askConfirmationToken(t *testing.T, store *dynamo.Store) string {
	t.Helper()
	s, err := store.GetSession(context.Background(), "approve", alice)
	if err != nil || len(s.Confirmations) != 1 {
		t.Fatalf("session %+v: %v", s, err)
	}
	return s.Confirmations[0].Token
}
