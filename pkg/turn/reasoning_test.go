package turn_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/agui"
	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/definition"
	"github.com/turnstream/turnstream/pkg/model/echo"
	"github.com/turnstream/turnstream/pkg/model/modeltest"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/turn"
)

// reasoningOf returns the assistant message's metadata.reasoning, and
// whether it has one.
func reasoningOf(t *testing.T, m protocol.Message) (string, bool) {
	t.Helper()
	if len(m.Metadata) == 0 {
		return "", false
	}
	var meta map[string]json.RawMessage
	if err := json.Unmarshal(m.Metadata, &meta); err != nil {
		t.Fatal(err)
	}
	raw, ok := meta[api.MetadataReasoning]
	if !ok {
		return "", false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("metadata.reasoning is not a string: %s", raw)
	}
	return s, true
}

// thinkingReplies are a thinking model's two calls of a tool loop: it
// reasons (a signed block and a redacted one), saves a note, then
// reasons again and answers.
var thinkingReplies = []modeltest.Reply{
	{Reasoning: "Save it first.", RedactedReasoning: true, Calls: []modeltest.Call{{ID: "n1", Name: "workspace_note", Args: `{"title":"Plan","body":"x"}`}}},
	{Reasoning: "Saved, so answer.", Text: "Done."},
}

// TestReasoningToolLoopOnBedrock: a Claude model that thinks gets its
// thinking budget, streams its reasoning into metadata.reasoning (the
// snapshot, the stored turn and history agree), and gets its signed and
// redacted reasoning blocks back, unchanged and first, on the tool loop's
// next call: the fake refuses a request without them (rule B12), as
// Bedrock does.
func TestReasoningToolLoopOnBedrock(t *testing.T) {
	for _, hidden := range []bool{false, true} {
		name := "visible"
		if hidden {
			name = "hidden"
		}
		t.Run(name, func(t *testing.T) {
			forEachStore(t, func(t *testing.T, newStore func(testing.TB) chat.Store) {
				s := modeltest.NewBedrock(t, thinkingReplies...)
				p := fakeProvider{name: config.ProviderBedrock, modelID: modeltest.BedrockCachingModelID, model: s.Model(), server: s}
				e := registryEnv(t, newStore(t), p, toolRegistry(t), definition.Definition{
					Revision: 1, Tools: []string{"workspace_note"},
					Reasoning: &definition.Reasoning{BudgetTokens: 2048, Hidden: hidden},
					Limits:    definition.Limits{MaxSteps: 4, MaxTokens: 4096},
				})
				r := e.submit(t, "s-think", "t1", "Save a plan.", nil, nil)
				term := agree(t, e, r, "s-think", "t1")
				final := term.Messages[len(term.Messages)-1]
				if final.Content != "Done." || len(final.ToolCalls) != 1 || final.ToolCalls[0].Status != protocol.ToolCallComplete {
					t.Fatalf("final message %+v", final)
				}
				got, ok := reasoningOf(t, final)
				if want := "Save it first.\n\nSaved, so answer."; !hidden && got != want {
					t.Errorf("metadata.reasoning = %q (%v), want %q", got, ok, want)
				}
				if hidden {
					for _, ev := range r.events {
						if ev.Kind != protocol.EventSnapshot {
							continue
						}
						for _, m := range ev.Snapshot.Messages {
							if _, ok := reasoningOf(t, m); ok || strings.Contains(string(m.Metadata), "Save it first") {
								t.Fatalf("snapshot %d shows hidden reasoning: %s", ev.Sequence, m.Metadata)
							}
						}
					}
				}
				reqs := s.Requests()
				if len(reqs) != 2 {
					t.Fatalf("%d model calls, want 2", len(reqs))
				}
				for i, body := range reqs {
					if !strings.Contains(string(body), `"thinking":{"budget_tokens":2048,"type":"enabled"}`) &&
						!strings.Contains(string(body), `"thinking":{"type":"enabled","budget_tokens":2048}`) {
						t.Errorf("request %d asks for no thinking: %s", i+1, body)
					}
				}
				if !strings.Contains(string(reqs[1]), modeltest.Signature("Save it first.")) {
					t.Errorf("the second call does not send the signed reasoning back: %s", reqs[1])
				}
			})
		})
	}
}

// TestReasoningStreamsBeforeTheAnswer: the reasoning grows in the
// streaming snapshots before any answer text, and a model that reasons
// without being asked (no budget) still has its reasoning kept.
func TestReasoningStreamsBeforeTheAnswer(t *testing.T) {
	forEachStore(t, func(t *testing.T, newStore func(testing.TB) chat.Store) {
		s := modeltest.NewOpenAI(t, modeltest.Reply{Reasoning: "Think first.", Text: "Answer."})
		p := fakeProvider{name: config.ProviderOpenAI, modelID: modeltest.OpenAIModelID, model: s.Model(), server: s}
		e := registryEnv(t, newStore(t), p, toolRegistry(t), definition.Definition{Revision: 1, Limits: definition.Limits{MaxSteps: 1}})
		r := e.submit(t, "s-reason", "t1", "Why?", nil, nil)
		term := agree(t, e, r, "s-reason", "t1")
		if got, _ := reasoningOf(t, term.Messages[len(term.Messages)-1]); got != "Think first." {
			t.Fatalf("metadata.reasoning = %q", got)
		}
		for _, ev := range r.events {
			if ev.Kind != protocol.EventSnapshot {
				continue
			}
			m := ev.Snapshot.Messages[len(ev.Snapshot.Messages)-1]
			if got, ok := reasoningOf(t, m); m.Content != "" && (!ok || got != "Think first.") {
				t.Fatalf("snapshot %d has answer text %q before all of the reasoning (%q)", ev.Sequence, m.Content, got)
			}
		}
	})
}

// TestReasoningApprovalContinuation: a thinking model's tool call that
// waits for approval is continued by a later turn: the asking turn stored
// the reasoning blocks of its loop with its messages, and the
// continuation's model call sends them back with its thinking budget (the
// fake, like Anthropic, refuses a thinking request whose tool loop lacks
// them: rule B12), on the memory and the DynamoDB stores; history never
// shows them. A turn whose stored blocks are lost (written by a version
// that stored none) goes out without a thinking budget instead
// (TestReasoningLoopWithoutItsBlocks).
func TestReasoningApprovalContinuation(t *testing.T) {
	forEachStore(t, func(t *testing.T, newStore func(testing.TB) chat.Store) {
		s := modeltest.NewBedrock(t, append(thinkingReplies, modeltest.Reply{Reasoning: "A new question.", Text: "More."})...)
		p := fakeProvider{name: config.ProviderBedrock, modelID: modeltest.BedrockCachingModelID, model: s.Model(), server: s}
		e := registryEnv(t, newStore(t), p, toolRegistry(t), definition.Definition{
			Revision: 1, Tools: []string{"workspace_note"}, ApprovalTools: []string{"workspace_note"},
			Reasoning: &definition.Reasoning{BudgetTokens: 2048},
			Limits:    definition.Limits{MaxSteps: 4, MaxTokens: 4096},
		})
		asked := e.submit(t, "s-ask", "t1", "Save a plan.", nil, nil).terminal(t)
		final := asked.Messages[len(asked.Messages)-1]
		if got, _ := reasoningOf(t, final); got != "Save it first." {
			t.Fatalf("the waiting turn's reasoning %q", got)
		}
		var meta struct {
			Pending []struct{ Token string } `json:"pendingConfirmations"`
		}
		if err := json.Unmarshal(final.Metadata, &meta); err != nil || len(meta.Pending) != 1 {
			t.Fatalf("metadata %s: %v", final.Metadata, err)
		}
		done := e.decide(t, "s-ask", "t2", meta.Pending[0].Token, protocol.DecisionApprove, nil).terminal(t)
		if m := done.Messages[len(done.Messages)-1]; m.Content != "Done." {
			t.Fatalf("the continuation's answer %+v", m)
		}
		more := e.submit(t, "s-ask", "t3", "And then?", nil, nil).terminal(t)
		if got, _ := reasoningOf(t, more.Messages[len(more.Messages)-1]); got != "A new question." {
			t.Fatalf("the next turn's reasoning %q", got)
		}
		reqs := s.Requests()
		if len(reqs) != 3 {
			t.Fatalf("%d model calls, want 3", len(reqs))
		}
		for i, body := range reqs {
			if !strings.Contains(string(body), `"thinking"`) {
				t.Errorf("request %d asks for no thinking", i+1)
			}
		}
		if !strings.Contains(string(reqs[1]), modeltest.Signature("Save it first.")) {
			t.Errorf("the continuation does not send the asking turn's signed reasoning back: %s", reqs[1])
		}
		for _, m := range historyMessages(t, e, "s-ask") {
			if strings.Contains(string(m.Metadata), modeltest.Signature("Save it first.")) || strings.Contains(m.Content, "signature") {
				t.Errorf("history shows a reasoning block: %+v", m)
			}
		}
	})
}

// TestAGUIReasoning: on POST /agui, reasoning streams as one reasoning
// message in a REASONING_START ... REASONING_END span before the answer's
// text (the corpus the JS tests check against @ag-ui/core's schemas keeps
// the stream), and a client that applies the events holds the stored
// reasoning; a definition that hides reasoning sends none.
func TestAGUIReasoning(t *testing.T) {
	for name, hidden := range map[string]bool{"visible": false, "hidden": true} {
		t.Run(name, func(t *testing.T) {
			p := fakeProvider{name: config.ProviderEcho, model: echo.New(0, 3)}
			e := registryEnv(t, newStoreMemory(), p, toolRegistry(t), definition.Definition{
				Revision: 1, Reasoning: &definition.Reasoning{Hidden: hidden}, Limits: definition.Limits{MaxSteps: 1},
			})
			frames := e.aguiRun(t, "reasoning "+name, aguiInput("s", "t1", "/think first this, then that", ""))
			rec := e.stored(t, "s", "t1")
			got, ok := reasoningOf(t, rec.Messages[1])
			kinds := map[string]int{}
			for _, f := range frames {
				kinds[f.typ()]++
			}
			if hidden {
				if ok || kinds[agui.TypeReasoningStart] > 0 || kinds[agui.TypeReasoningMessageContent] > 0 {
					t.Fatalf("hidden reasoning sent: stored %q, events %v", got, kinds)
				}
				return
			}
			if got != "first this, then that" {
				t.Fatalf("stored reasoning %q", got)
			}
			if kinds[agui.TypeReasoningStart] != 1 || kinds[agui.TypeReasoningEnd] != 1 || kinds[agui.TypeReasoningMessageContent] < 1 {
				t.Fatalf("reasoning events %v, want one span of deltas", kinds)
			}
			first := map[string]int{}
			for i, f := range frames {
				if _, seen := first[f.typ()]; !seen {
					first[f.typ()] = i
				}
			}
			if first[agui.TypeReasoningEnd] > first[agui.TypeTextMessageStart] {
				t.Errorf("the answer's text started before the reasoning ended: %v", first)
			}
			texts := aguiText(nil, frames)
			if texts["t1.a.reasoning"] != got || texts["t1.a"] != rec.Messages[1].Content {
				t.Errorf("client holds reasoning %q and text %q; stored %q and %q", texts["t1.a.reasoning"], texts["t1.a"], got, rec.Messages[1].Content)
			}
		})
	}
}

// TestResumeMidReasoning: a resume while the model reasons starts with a
// snapshot whose reasoning is a prefix of the final one, ends with the
// live stream's terminal snapshot, and history holds the same reasoning.
func TestResumeMidReasoning(t *testing.T) {
	forEachStore(t, func(t *testing.T, newStore func(testing.TB) chat.Store) {
		e := newEnv(t, newStore(t), &scriptModel{}, func(o *turn.Options) {
			durable(o)
			o.Model = echo.New(5*time.Millisecond, 2)
		})
		thought := strings.Repeat("weigh this, then that; ", 8)
		ls := e.startLive(t, context.Background(), "s", "t1", "/think "+thought)
		waitFor(t, "a checkpoint with reasoning and the live stream's first line", func() bool {
			got, err := e.store.FindTurn(context.Background(), "s", "t1", alice)
			if err != nil || got.Status != chat.TurnRunning || ls.count() == 0 {
				return false
			}
			r, _ := reasoningOf(t, got.Messages[1])
			return r != ""
		})
		first := ls.events(t)[0].Sequence
		status, resumed, raw := e.resume(t, "s", "t1", "?after="+itoa(first), nil)
		if status != http.StatusOK {
			t.Fatalf("resume: %d %s", status, raw)
		}
		<-ls.done
		lt, rt := terminalOf(ls.events(t)), terminalOf(resumed)
		if lt == nil || rt == nil || messagesJSON(t, lt.Snapshot.Messages) != messagesJSON(t, rt.Snapshot.Messages) {
			t.Fatalf("resumed terminal %+v differs from the live one %+v", rt, lt)
		}
		if resumed[0].Kind != protocol.EventSnapshot {
			t.Fatalf("resume starts with %+v, want a snapshot", resumed[0])
		}
		want := strings.TrimSpace(thought)
		final, _ := reasoningOf(t, lt.Snapshot.Messages[len(lt.Snapshot.Messages)-1])
		start, _ := reasoningOf(t, resumed[0].Snapshot.Messages[len(resumed[0].Snapshot.Messages)-1])
		if final != want || start == "" || !strings.HasPrefix(want, start) {
			t.Errorf("resume starts with reasoning %q, ends with %q; want a prefix of %q, then all of it", start, final, want)
		}
		var inHistory string
		for _, m := range historyMessages(t, e, "s") {
			if m.Role == protocol.RoleAssistant {
				inHistory, _ = reasoningOf(t, m)
			}
		}
		if inHistory != want {
			t.Errorf("history holds reasoning %q", inHistory)
		}
	})
}

// TestCompactStreamReasoning: in the compact stream, reasoning goes in
// append lines as text does (a line's head carries the reasoning added
// since the last line), so the stream holds no complete snapshot between
// its first and its last; a compact cursor builds every state on the way
// and ends with the terminal snapshot's messages.
func TestCompactStreamReasoning(t *testing.T) {
	forEachStore(t, func(t *testing.T, newStore func(testing.TB) chat.Store) {
		e := newEnv(t, newStore(t), &scriptModel{}, func(o *turn.Options) {
			o.Model = echo.New(2*time.Millisecond, 3)
			o.SnapshotInterval = 5 * time.Millisecond
			o.CompactLineSpan = 30 * time.Millisecond
		})
		thought := strings.TrimSpace(strings.Repeat("weigh é😀 this, ", 6))
		resp := e.post(t, context.Background(), "/", submitBody(t, "s", "t1", "/think "+thought, nil), compactHeader)
		r := readCompact(t, "s", resp)
		reasoningLines := 0
		c, _ := protocol.NewCompactCursor("s")
		for i, l := range r.lines {
			if a, err := protocol.DecodeAppend(l); err == nil && a.Reasoning != nil {
				reasoningLines++
			}
			if _, err := c.Apply(l); err != nil {
				t.Fatalf("line %d: %v", i, err)
			}
			got, _ := reasoningOf(t, c.Snapshot().Snapshot.Messages[1])
			if !strings.HasPrefix(thought, got) {
				t.Fatalf("line %d leaves reasoning %q, not a prefix of %q", i, got, thought)
			}
		}
		if r.snaps != 2 || reasoningLines == 0 {
			t.Errorf("%d complete snapshots (want the first and the last), %d append lines with reasoning", r.snaps, reasoningLines)
		}
		last, _ := protocol.DecodeTurnEvent(r.lines[len(r.lines)-1])
		if got, _ := reasoningOf(t, last.Snapshot.Messages[1]); got != thought {
			t.Errorf("terminal reasoning %q", got)
		}
		if snap := r.compact.Snapshot(); messagesJSON(t, snap.Snapshot.Messages) != messagesJSON(t, last.Snapshot.Messages) {
			t.Errorf("the compact cursor ended with %s", messagesJSON(t, snap.Snapshot.Messages))
		}
	})
}

// blocklessStore loses the reasoning blocks turns stored, as a table
// written before they were stored would.
type blocklessStore struct{ chat.Store }

func (s blocklessStore) LoadContext(ctx context.Context, sessionID string, before int64, maxTurns int) ([]chat.Turn, bool, error) {
	turns, omitted, err := s.Store.LoadContext(ctx, sessionID, before, maxTurns)
	for i := range turns {
		turns[i].ReasoningBlocks = nil
	}
	return turns, omitted, err
}

// TestReasoningLoopWithoutItsBlocks: a turn that continues a tool loop
// whose reasoning blocks are not at hand sends its model call without a
// thinking budget, which the fake (like Bedrock) accepts, rather than a
// request it would refuse; the next user turn thinks again.
func TestReasoningLoopWithoutItsBlocks(t *testing.T) {
	s := modeltest.NewBedrock(t, append(thinkingReplies, modeltest.Reply{Reasoning: "A new question.", Text: "More."})...)
	p := fakeProvider{name: config.ProviderBedrock, modelID: modeltest.BedrockCachingModelID, model: s.Model(), server: s}
	e := registryEnv(t, blocklessStore{newStoreMemory()}, p, toolRegistry(t), definition.Definition{
		Revision: 1, Tools: []string{"workspace_note"}, ApprovalTools: []string{"workspace_note"},
		Reasoning: &definition.Reasoning{BudgetTokens: 2048},
		Limits:    definition.Limits{MaxSteps: 4, MaxTokens: 4096},
	})
	asked := e.submit(t, "s-ask", "t1", "Save a plan.", nil, nil).terminal(t)
	var meta struct {
		Pending []struct{ Token string } `json:"pendingConfirmations"`
	}
	if err := json.Unmarshal(asked.Messages[len(asked.Messages)-1].Metadata, &meta); err != nil || len(meta.Pending) != 1 {
		t.Fatalf("metadata: %v", err)
	}
	if m := e.decide(t, "s-ask", "t2", meta.Pending[0].Token, protocol.DecisionApprove, nil).terminal(t).Messages; m[len(m)-1].Content != "Done." {
		t.Fatalf("the continuation's answer %+v", m[len(m)-1])
	}
	e.submit(t, "s-ask", "t3", "And then?", nil, nil).terminal(t)
	for i, want := range []bool{true, false, true} {
		if got := strings.Contains(string(s.Requests()[i]), `"thinking"`); got != want {
			t.Errorf("request %d asks for thinking: %v, want %v", i+1, got, want)
		}
	}
}
