package benchwire_test

import (
	"testing"

	"github.com/turnstream/turnstream/internal/benchwire"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/store/memory"
)

// TestWiring: a turn through the wiring, read with Follow, decoded line
// by line and only at its end; seeded turns are history's; the wiring's
// traces know the requests.
func TestWiring(t *testing.T) {
	store := memory.New(memory.Options{})
	w, err := benchwire.New(store, benchwire.HandlerConfig{EchoChunk: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	hc := benchwire.NewHTTPClient(1, nil)
	c := w.Client(hc)
	if err := benchwire.SeedTurns(t.Context(), store, "s1", 3); err != nil {
		t.Fatal(err)
	}
	for _, decodeAll := range []bool{true, false} {
		log := benchwire.Follow(benchwire.Submitting(t.Context(), c, "s1", "t-"+map[bool]string{true: "all", false: "last"}[decodeAll],
			benchwire.InputOf(40), true), decodeAll, true, nil)
		last := log.Last()
		if log.Err != nil || last == nil || last.Status != protocol.StatusComplete || last.Answer != 46 || len(last.Messages) == 0 {
			t.Fatalf("decodeAll %v: %v, last %+v", decodeAll, log.Err, last)
		}
		if first := log.Lines[0]; decodeAll != (first.Kind == protocol.EventSnapshot) && len(log.Lines) > 1 {
			t.Errorf("decodeAll %v: first line %+v", decodeAll, first)
		}
	}
	turns, err := c.AllTurns(t.Context(), "s1")
	if err != nil || len(turns) != 5 || turns[0].TurnID != "prior-0" {
		t.Errorf("history: %v, %d turns", err, len(turns))
	}
	page, id, err := benchwire.TurnsPage(t.Context(), c, "s1", client.PageOptions{Limit: 2})
	if err != nil || len(page.Turns) != 2 || w.Trace(id) == nil {
		t.Errorf("a page as a traced request: %v, %+v, trace %v", err, page, w.Trace(id))
	}
}
