package main

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/pkg/protocol"
)

// thinking returns a snapshot whose assistant message has reasoning and
// text.
func thinking(status, reasoning, text string) *protocol.Event {
	s := snapshot(status, text, nil)
	meta, _ := json.Marshal(map[string]string{"reasoning": reasoning})
	s.Messages[1].Metadata = meta
	s.Messages[1].ToolCalls = nil
	return &protocol.Event{Kind: protocol.EventSnapshot, Sequence: 1, Snapshot: s}
}

// TestChatShowsReasoning: against the real handlers and the echo model,
// "/think" prints the reasoning after "thinking> " before the answer;
// -reasoning=false leaves it out.
func TestChatShowsReasoning(t *testing.T) {
	turnURL, _ := realServers(t)
	code, out, errOut := runTurnctl([]string{"chat", "-url", turnURL, "-token", "dev.alice", "-session", "s-think", "/think weigh it up"}, "")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if want := "thinking> weigh it up\n\nEcho: /think weigh it up"; !strings.Contains(out, want) {
		t.Errorf("output %q lacks %q", out, want)
	}
	code, out, errOut = runTurnctl([]string{"chat", "-url", turnURL, "-token", "dev.alice", "-session", "s-think", "-reasoning=false", "/think again"}, "")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.Contains(out, "thinking>") || strings.Contains(out, "\n\nEcho") || !strings.Contains(out, "Echo: /think again") {
		t.Errorf("-reasoning=false output %q", out)
	}
}

// TestLiveRendererDimsReasoning: on a terminal the reasoning is one dimmed
// block above the answer, counted in the block's rows without its SGR
// codes, so the next redraw goes up exactly over it; hidden, it is not
// drawn at all.
func TestLiveRendererDimsReasoning(t *testing.T) {
	var out bytes.Buffer
	r := &liveRenderer{w: &out, width: 20, height: 24, reasoning: true}
	r.event(nil, thinking(protocol.StatusStreaming, "first this\nthen that", ""))
	drawn := out.String()
	if want := sgrDim + "thinking> first this\nthen that" + sgrNormal + "\nassistant> \n"; !strings.HasPrefix(drawn, want) {
		t.Fatalf("drawn %q, want it to start %q", drawn, want)
	}
	plain := strings.NewReplacer(sgrDim, "", sgrNormal, "").Replace(drawn)
	r.event(nil, thinking(protocol.StatusComplete, "first this\nthen that", "Done."))
	if want := "\x1b[" + strconv.Itoa(physicalLines(plain, 20)) + "A\r\x1b[J"; !strings.HasPrefix(out.String()[len(drawn):], want) {
		t.Errorf("redraw %q, want it to start %q", out.String()[len(drawn):], want)
	}

	out.Reset()
	r = &liveRenderer{w: &out, width: 20, height: 24}
	r.event(nil, thinking(protocol.StatusComplete, "secret plan", "Done."))
	if strings.Contains(out.String(), "secret plan") || strings.Contains(out.String(), sgrDim) {
		t.Errorf("hidden reasoning drawn: %q", out.String())
	}
}

// TestReasoningEscaped: reasoning is server text, escaped like the answer.
func TestReasoningEscaped(t *testing.T) {
	v := viewOf(thinking(protocol.StatusStreaming, "a\x1b[31mred\u202e", ""))
	if v.reasoning != `a\x1b[31mred\u202E` && v.reasoning != `a\x1b[31mred\u202e` {
		t.Errorf("reasoning shown as %q", v.reasoning)
	}
}
