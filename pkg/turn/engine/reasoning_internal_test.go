package engine

import (
	"strings"
	"testing"

	"github.com/turnstream/turnstream/pkg/model"
)

// TestReasoningLogStoredBlocks: the blocks a waiting turn keeps read back
// into a later turn's log; stored data that does not decode (a damaged or
// foreign payload) adds nothing rather than failing the turn, and blocks
// past MaxStoredReasoningBytes are not kept at all.
func TestReasoningLogStoredBlocks(t *testing.T) {
	var asking reasoningLog
	asking.add(roundID("t1", 1), model.ReasoningBlock{Text: "plan", Signature: "c2ln"})
	asking.add(roundID("t1", 1), model.ReasoningBlock{Redacted: []byte{0, 1}})
	asking.keep("t1")
	var later reasoningLog
	later.load(asking.stored())
	if got := later.blocks[roundID("t1", 1)]; len(got) != 2 || got[0].Signature != "c2ln" || string(got[1].Redacted) != "\x00\x01" {
		t.Fatalf("loaded blocks %+v", got)
	}
	for _, bad := range []string{`[1,2]`, `{"t1.a1":"x"}`, `{`, "\xff"} {
		var l reasoningLog
		l.load([]byte(bad))
		if len(l.blocks) != 0 {
			t.Errorf("load(%q) added %v", bad, l.blocks)
		}
	}
	var big reasoningLog
	big.add(roundID("t2", 1), model.ReasoningBlock{Text: strings.Repeat("x", MaxStoredReasoningBytes)})
	big.keep("t2")
	if big.stored() != nil {
		t.Error("blocks past MaxStoredReasoningBytes were kept")
	}
	var none reasoningLog
	none.keep("t3")
	if none.stored() != nil {
		t.Error("a turn without reasoning kept blocks")
	}
}
