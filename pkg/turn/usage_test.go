package turn_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/turn"
)

// partialModel streams Chunks as text deltas, then either blocks until its
// context ends (Block: a stop, the deadline) or ends the answer with Usage
// (nil: a provider that never reports usage). Sent receives one value once
// every chunk was returned.
type partialModel struct {
	Chunks []string
	Usage  *protocol.Usage
	Block  bool
	Sent   chan struct{}

	mu  sync.Mutex
	req model.Request
}

func (m *partialModel) Stream(ctx context.Context, req model.Request) (model.Stream, error) {
	m.mu.Lock()
	m.req = req
	m.mu.Unlock()
	return &partialStream{m: m, ctx: ctx}, nil
}

// request returns the request of the last call.
func (m *partialModel) request() model.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.req
}

type partialStream struct {
	m    *partialModel
	ctx  context.Context
	i    int
	done bool
}

func (s *partialStream) Recv() (model.Event, error) {
	if err := s.ctx.Err(); err != nil {
		return model.Event{}, err
	}
	if s.i < len(s.m.Chunks) {
		s.i++
		return model.Event{TextDelta: s.m.Chunks[s.i-1]}, nil
	}
	if s.m.Block {
		if s.m.Sent != nil {
			s.m.Sent <- struct{}{}
		}
		<-s.ctx.Done()
		return model.Event{}, s.ctx.Err()
	}
	if s.done {
		return model.Event{}, io.EOF
	}
	s.done = true
	return model.Event{Usage: s.m.Usage, FinishReason: model.FinishStop}, nil
}

func (s *partialStream) Close() error { return nil }

// usageEstimate is the assistant message's MetadataUsageEstimate member.
type usageEstimate struct {
	Estimated        bool  `json:"estimated"`
	PromptTokens     int64 `json:"promptTokens"`
	CompletionTokens int64 `json:"completionTokens"`
}

// estimateOf returns the MetadataUsageEstimate member of m, nil when absent.
func estimateOf(tb testing.TB, m protocol.Message) *usageEstimate {
	tb.Helper()
	var meta map[string]json.RawMessage
	if len(m.Metadata) > 0 {
		if err := json.Unmarshal(m.Metadata, &meta); err != nil {
			tb.Fatalf("metadata %s: %v", m.Metadata, err)
		}
	}
	raw, ok := meta[turn.MetadataUsageEstimate]
	if !ok {
		return nil
	}
	var est usageEstimate
	if err := json.Unmarshal(raw, &est); err != nil {
		tb.Fatalf("%s %s: %v", turn.MetadataUsageEstimate, raw, err)
	}
	return &est
}

// TestUsageEstimated: a model call that ends without the provider's usage
// (the turn stopped, cut by its deadline, or a provider that sends none)
// is counted with an estimate, ceil(bytes/4) of the request sent and of
// the text received: in the record's usage, marked in the assistant
// message's metadata, and in the ledger. A provider's own usage keeps its
// exact figures and no mark.
func TestUsageEstimated(t *testing.T) {
	chunks := []string{"The answer, ", "so far, is forty", " and then some more words"}
	wantOut := model.EstimateTokens(len(strings.Join(chunks, "")))
	exact := &protocol.Usage{PromptTokens: 11, CompletionTokens: 13, TotalTokens: 24}
	for _, sf := range ledgerStores(nil) {
		t.Run(sf.name, func(t *testing.T) {
			for name, tc := range map[string]struct {
				m          *partialModel
				opt        func(*turn.Options)
				stop       bool
				status     chat.TurnStatus
				code       string
				wantExact  bool
				terminalOK bool
			}{
				"stopped": {m: &partialModel{Chunks: chunks, Block: true, Sent: make(chan struct{}, 1)},
					opt: func(o *turn.Options) { o.RenewInterval = 100 * time.Millisecond }, stop: true,
					status: chat.TurnInterrupted, code: protocol.CodeTurnInterrupted},
				// Real time: the request's own deadline must pass to cut
				// the turn (nothing waits on it but the response).
				"deadline": {m: &partialModel{Chunks: chunks, Block: true},
					opt:    func(o *turn.Options) { o.TurnTimeout, o.CleanupReserve = 1500*time.Millisecond, time.Second },
					status: chat.TurnError, code: protocol.CodeServerTimeout},
				"no usage reported": {m: &partialModel{Chunks: chunks},
					status: chat.TurnComplete, terminalOK: true},
				"usage reported": {m: &partialModel{Chunks: chunks, Usage: exact},
					status: chat.TurnComplete, terminalOK: true, wantExact: true},
			} {
				t.Run(name, func(t *testing.T) {
					store := sf.new(t)
					e := newEnv(t, store, nil, func(o *turn.Options) {
						o.Model = tc.m
						o.Ledger = true
						if tc.opt != nil {
							tc.opt(o)
						}
					})
					at := time.Now()
					resp := e.post(t, context.Background(), "/", submitBody(t, "s", "t1", "hello there", nil), nil)
					if tc.stop {
						<-tc.m.Sent
						body, _ := json.Marshal(map[string]string{"sessionId": "s", "turnId": "t1"})
						sr := e.post(t, context.Background(), "/stop", body, nil)
						_ = sr.Body.Close()
						if sr.StatusCode != http.StatusAccepted {
							t.Fatalf("stop: %d", sr.StatusCode)
						}
					}
					r := readResult(t, resp)
					r.want(t, http.StatusOK, "")
					term := r.terminal(t)
					if tc.terminalOK != (term.Status == protocol.StatusComplete) || !tc.terminalOK && (term.Error == nil || term.Error.Code != tc.code) {
						t.Fatalf("terminal %s %+v, want %s", term.Status, term.Error, tc.code)
					}
					rec, err := store.FindTurn(context.Background(), "s", "t1", alice)
					if err != nil {
						t.Fatal(err)
					}
					if rec.Status != tc.status {
						t.Fatalf("stored status %s, want %s", rec.Status, tc.status)
					}
					if got := rec.Messages[1].Content; got != strings.Join(chunks, "") {
						t.Errorf("stored text %q", got)
					}
					wantUsage := *exact
					if !tc.wantExact {
						in := model.EstimateInputTokens(tc.m.request())
						wantUsage = protocol.Usage{PromptTokens: in, CompletionTokens: wantOut, TotalTokens: in + wantOut}
						if in <= 0 || wantOut <= 0 {
							t.Fatalf("estimates %d/%d: want both above 0", in, wantOut)
						}
					}
					if rec.Usage != wantUsage || term.Usage != wantUsage {
						t.Errorf("usage: record %+v, terminal snapshot %+v; want %+v", rec.Usage, term.Usage, wantUsage)
					}
					est := estimateOf(t, rec.Messages[1])
					switch {
					case tc.wantExact && est != nil:
						t.Errorf("exact usage marked as an estimate: %+v", est)
					case !tc.wantExact && (est == nil || !est.Estimated || est.PromptTokens != wantUsage.PromptTokens || est.CompletionTokens != wantUsage.CompletionTokens):
						t.Errorf("estimate mark %+v, want %+v", est, wantUsage)
					}
					if rec.Metered.InputTokens != wantUsage.PromptTokens || rec.Metered.OutputTokens != wantUsage.CompletionTokens || rec.Metered.ModelCalls != 1 {
						t.Errorf("metered %+v, want the usage %+v", rec.Metered, wantUsage)
					}
					want := chat.Counters{Turns: 1, Usage: rec.Metered}
					if got := usageOf(t, store, alice, at); got.Day != want {
						t.Errorf("ledger day %+v, want %+v", got.Day, want)
					}
				})
			}
		})
	}
}

// TestUsageEstimateCheckpointed: while a model call streams without the
// provider's usage, the turn's checkpoints carry the estimate so far in
// their account (chat.Checkpoint.Metered) and their usage: what the ledger
// counts, and the record shows, for a turn decided lost after that
// checkpoint (the store's fence records the last checkpoint's).
func TestUsageEstimateCheckpointed(t *testing.T) {
	chunks := []string{"partial answer ", "that the process never finished"}
	for _, sf := range ledgerStores(nil) {
		t.Run(sf.name, func(t *testing.T) {
			store := sf.new(t)
			m := &partialModel{Chunks: chunks, Block: true, Sent: make(chan struct{}, 1)}
			e := newEnv(t, store, nil, func(o *turn.Options) {
				o.Model = m
				o.Ledger = true
				durable(o)
			})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ls := e.startLive(t, ctx, "s", "t1", "hello")
			<-m.Sent
			wantIn := model.EstimateInputTokens(m.request())
			wantOut := model.EstimateTokens(len(strings.Join(chunks, "")))
			var rec *chat.Turn
			waitFor(t, "a checkpoint with the whole text", func() bool {
				var err error
				rec, err = store.FindTurn(context.Background(), "s", "t1", alice)
				return err == nil && rec.Status == chat.TurnRunning && len(rec.Messages) == 2 &&
					rec.Messages[1].Content == strings.Join(chunks, "")
			})
			if rec.Metered.InputTokens != wantIn || rec.Metered.OutputTokens != wantOut || wantIn <= 0 {
				t.Errorf("checkpointed account %+v, want the estimate %d in, %d out", rec.Metered, wantIn, wantOut)
			}
			// The checkpoint's usage agrees with its account: a lost turn's
			// record and its ledger count the same tokens.
			if want := (protocol.Usage{PromptTokens: wantIn, CompletionTokens: wantOut, TotalTokens: wantIn + wantOut}); rec.Usage != want {
				t.Errorf("checkpointed usage %+v, want %+v", rec.Usage, want)
			}
			body, _ := json.Marshal(map[string]string{"sessionId": "s", "turnId": "t1"})
			sr := e.post(t, context.Background(), "/stop", body, nil)
			_ = sr.Body.Close()
			<-ls.done
		})
	}
}

// TestStoppedTurnsCountAgainstTokenQuota: stopping every answer before the
// provider's usage arrives does not escape a token quota: the stopped
// turn's estimate (here 6 input and 14 output tokens) is counted, and the
// next submit is refused once it passes tokensPerDay.
func TestStoppedTurnsCountAgainstTokenQuota(t *testing.T) {
	forEachStoreWithLedger(t, func(t *testing.T, store chat.Store) {
		m := &partialModel{Chunks: []string{"The answer, ", "so far, is forty", " and then some more words"}, Block: true, Sent: make(chan struct{}, 1)}
		e := newEnv(t, store, nil, func(o *turn.Options) {
			withQuotas(chat.Quotas{Principal: chat.QuotaLimits{TokensPerDay: 10}}, nil)(o)
			o.Model = m
			o.RenewInterval = 100 * time.Millisecond
		})
		resp := e.post(t, context.Background(), "/", submitBody(t, "s1", "t1", "hello there", nil), nil)
		<-m.Sent
		body, _ := json.Marshal(map[string]string{"sessionId": "s1", "turnId": "t1"})
		sr := readResult(t, e.post(t, context.Background(), "/stop", body, nil))
		if sr.status != http.StatusAccepted {
			t.Fatalf("stop: %d %s", sr.status, sr.raw)
		}
		if r := readResult(t, resp); !strings.Contains(string(r.raw), protocol.CodeTurnInterrupted) {
			t.Fatalf("first turn: %s\nwant TURN_INTERRUPTED; logs:\n%s", r.raw, e.logs)
		}
		e.submit(t, "s1", "t2", "hello", nil, nil).want(t, http.StatusTooManyRequests, protocol.CodeQuotaExceeded)
	})
}
