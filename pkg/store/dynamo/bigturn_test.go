package dynamo_test

import (
	"context"
	"encoding/base64"
	"errors"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// randomText returns n bytes of seeded random base64: text that gzip
// shrinks only to about 75%.
func randomText(seed uint64, n int) string {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	raw := make([]byte, n*3/4+3)
	for i := range raw {
		raw[i] = byte(rng.Uint32())
	}
	return base64.StdEncoding.EncodeToString(raw)[:n]
}

// TestTurnSizes saves turns on each storage path (inline JSON, inline
// gzip, chunk items) and reads them back intact through every read path,
// counting the requests: chunk items cost extra writes and reads only for
// turns whose compressed messages exceed one item.
func TestTurnSizes(t *testing.T) {
	tests := map[string]struct {
		text       string
		wantSave   []string
		wantFind   []string
		wantDelete int // DeleteItem requests of a save rejected for another token
	}{
		"small inline": {
			text: "hello", wantSave: []string{"UpdateItem"}, wantFind: []string{"Query"}},
		"compressible 2 MiB": {
			text: strings.Repeat("all work and no play ", 100_000), wantSave: []string{"UpdateItem"}, wantFind: []string{"Query"}},
		"random 1 MiB": {
			text:       randomText(1, 1<<20),
			wantSave:   []string{"PutItem", "PutItem", "PutItem", "UpdateItem"},
			wantFind:   []string{"Query", "Query"},
			wantDelete: 3,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			s := e.store()
			ctx := context.Background()
			c, err := s.ClaimTurn(ctx, claimReq("s1", "t1"))
			if err != nil {
				t.Fatal(err)
			}
			turn := turnOf(c, "s1", textMessages("t1", tc.text))
			turn.Messages[1].Metadata = []byte(`{"model":"echo"}`)
			part := "a part"
			turn.Messages[1].Parts = []protocol.Part{{Type: "text", Text: &part}}
			turn.Artifacts = []chat.ArtifactReference{}
			// Reasoning blocks ride in the payload, inline or chunked.
			turn.ReasoningBlocks = []byte(`{"t1.a1":[{"text":"plan","signature":"c2ln"}]}`)
			e.count.Reset()
			if err := s.SaveTurn(ctx, c, turn); err != nil {
				t.Fatalf("save: %v", err)
			}
			if got := e.count.Take(); !slices.Equal(got, tc.wantSave) {
				t.Errorf("save requests %v, want %v", got, tc.wantSave)
			}
			got, err := s.FindTurn(ctx, "s1", "t1", alice)
			if err != nil {
				t.Fatalf("find: %v", err)
			}
			if ops := e.count.Take(); !slices.Equal(ops, tc.wantFind) {
				t.Errorf("find requests %v, want %v", ops, tc.wantFind)
			}
			if !reflect.DeepEqual(got.Messages, turn.Messages) {
				t.Errorf("FindTurn messages differ from the saved ones (%d messages, content %d bytes)", len(got.Messages), len(got.Messages[1].Content))
			}
			if string(got.ReasoningBlocks) != string(turn.ReasoningBlocks) {
				t.Errorf("reasoning blocks %s, want %s", got.ReasoningBlocks, turn.ReasoningBlocks)
			}
			page, err := s.ListTurns(ctx, chat.ListRequest{SessionID: "s1", Principal: alice})
			if err != nil || len(page.Turns) != 1 || !reflect.DeepEqual(page.Turns[0].Messages, turn.Messages) {
				t.Errorf("ListTurns: err %v, or messages differ", err)
			}
			if err := s.SaveTurn(ctx, c, turn); !errors.Is(err, chat.ErrLeaseLost) {
				t.Errorf("a second save of the terminal turn: %v, want ErrLeaseLost", err)
			}

			e.count.Reset()
			err = s.SaveTurn(ctx, forged(c, c.Lease.Token+"x"), turn)
			if err != chat.ErrLeaseLost {
				t.Fatalf("save with another token: %v, want ErrLeaseLost", err)
			}
			deletes := 0
			for _, op := range e.count.Take() {
				if op == "DeleteItem" {
					deletes++
				}
			}
			if deletes != tc.wantDelete {
				t.Errorf("rejected save deleted %d chunks, want %d", deletes, tc.wantDelete)
			}
			if got, err := s.FindTurn(ctx, "s1", "t1", alice); err != nil || !reflect.DeepEqual(got.Messages, turn.Messages) {
				t.Errorf("turn after a rejected save: err %v, or messages differ", err)
			}
		})
	}
}

// TestSaveTurnOnlyForItsClaim: a claim saves only the turn id and ordinal
// it was claimed for, through the claiming Store or any other (no Store
// keeps per-lease state); anything else is rejected before a request.
func TestSaveTurnOnlyForItsClaim(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	claimer := e.store()
	c, err := claimer.ClaimTurn(ctx, claimReq("s1", "t1"))
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]func(*chat.Turn){
		"another ordinal": func(tr *chat.Turn) { tr.Ordinal++ },
		"another turn id": func(tr *chat.Turn) { tr.TurnID = "t2" },
	}
	stores := map[string]func() chat.Store{
		"claiming store": func() chat.Store { return claimer },
		"fresh store":    func() chat.Store { return e.store() },
	}
	for name, change := range tests {
		for storeName, store := range stores {
			t.Run(name+"/"+storeName, func(t *testing.T) {
				tr := turnOf(c, "s1", textMessages("t1", "x"))
				change(tr)
				e.count.Reset()
				if err := store().SaveTurn(ctx, c, tr); !errors.Is(err, chat.ErrInvalidRequest) {
					t.Errorf("SaveTurn: %v, want ErrInvalidRequest", err)
				}
				if ops := e.count.Take(); len(ops) != 0 {
					t.Errorf("a rejected save sent %v", ops)
				}
			})
		}
	}
	if err := e.store().SaveTurn(ctx, c, turnOf(c, "s1", textMessages("t1", "x"))); err != nil {
		t.Errorf("SaveTurn of the claimed turn: %v", err)
	}
}
