package turn_test

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/ddbfault"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/turn"
)

// TestStopWhileCheckpointWritesFailAtTheDefaultLease: with every write of
// the live and delta items failing (the turn's checkpoints, and the
// stop's own flag on the live item), POST /stop answers 202, since the
// flag on the session's lease was written, and the turn ends interrupted
// without waiting for a renewal (renewals here never come before the
// model's end): a failed checkpoint reads the lease's stop flag. (Before,
// the stop answered 500 SERVER_INTERNAL retryable and the turn ran to its
// end, complete.)
func TestStopWhileCheckpointWritesFailAtTheDefaultLease(t *testing.T) {
	store, ft := newFaultStore(t)
	chunks := make([]string, 1500)
	for i := range chunks {
		chunks[i] = "w "
	}
	// The model runs for 15 s at least, with its renewals an hour apart:
	// only a checkpoint can show the stop before the model's end.
	m := &scriptModel{Chunks: chunks, Delay: 10 * time.Millisecond, Started: make(chan struct{}, 1)}
	e := newEnv(t, store, m, func(o *turn.Options) {
		defaultLease(o)
		o.RenewInterval = time.Hour
	})
	ls := e.startLive(t, context.Background(), "s", "t1", "hello")
	<-m.Started
	var failed atomic.Int64
	live, deltas := ddbfault.Op("UpdateItem", "#LIVE"), ddbfault.Op("PutItem", "#D#")
	ft.SetRule(func(a ddbfault.Attempt) ddbfault.Fault {
		if live(a) || deltas(a) {
			failed.Add(1)
			return ddbfault.ServerErrorBefore
		}
		return ddbfault.Pass
	})
	waitFor(t, "a failed checkpoint write", func() bool { return failed.Load() > 0 })
	resp := e.post(t, context.Background(), "/stop", []byte(`{"sessionId":"s","turnId":"t1"}`), nil)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Errorf("stop whose flag was written answered %d %s", resp.StatusCode, body)
	}
	<-ls.done
	ft.SetRule(nil)
	term := terminalOf(ls.events(t))
	if term == nil || term.Snapshot.Error == nil || term.Snapshot.Error.Code != protocol.CodeTurnInterrupted {
		t.Fatalf("the turn did not end interrupted: %+v", term)
	}
	if m.Calls() != 1 {
		t.Errorf("model ran %d times", m.Calls())
	}
}

// hangingCheckpoints is a store whose checkpoints after the
// acknowledgment never answer until their context ends: writes that hang
// (each attempt cut only by the store's attempt timeout, every attempt
// hanging again).
type hangingCheckpoints struct {
	chat.Store
	hung atomic.Int64
}

func (s *hangingCheckpoints) Checkpoint(ctx context.Context, c *chat.Claim, cp *chat.Checkpoint) (bool, error) {
	if cp.Prior == nil {
		return s.Store.Checkpoint(ctx, c, cp)
	}
	s.hung.Add(1)
	<-ctx.Done()
	return false, ctx.Err()
}

// TestStopWhileACheckpointHangs: at the default lease, with a checkpoint
// that never answers (its context is the lease's 30 s) and renewals too
// rare to matter, a stop is still seen: the stop flag is read beside the
// checkpoint still in flight at the next tick, and the turn ends
// interrupted. (Before, the turn ran to its end, complete.)
func TestStopWhileACheckpointHangs(t *testing.T) {
	store := &hangingCheckpoints{Store: newStoreMemory()}
	chunks := make([]string, 1500)
	for i := range chunks {
		chunks[i] = "w "
	}
	m := &scriptModel{Chunks: chunks, Delay: 10 * time.Millisecond, Started: make(chan struct{}, 1)}
	e := newEnv(t, store, m, func(o *turn.Options) {
		defaultLease(o)
		o.RenewInterval = time.Hour
	})
	ls := e.startLive(t, context.Background(), "s", "t1", "hello")
	<-m.Started
	waitFor(t, "a hung checkpoint", func() bool { return store.hung.Load() > 0 })
	resp := e.post(t, context.Background(), "/stop", []byte(`{"sessionId":"s","turnId":"t1"}`), nil)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("stop: %d", resp.StatusCode)
	}
	<-ls.done
	term := terminalOf(ls.events(t))
	if term == nil || term.Snapshot.Error == nil || term.Snapshot.Error.Code != protocol.CodeTurnInterrupted {
		t.Fatalf("the turn did not end interrupted: %+v", term)
	}
	if store.hung.Load() != 1 {
		t.Errorf("%d checkpoints hung, want the one", store.hung.Load())
	}
}
