package engine

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/turnstream/turnstream/pkg/agui"
	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// This file is the AG-UI view of a turn (docs/agui.md): how canonical
// messages read as AG-UI messages, and the encoder that turns a turn's
// successive states into the AG-UI events that take a client from one to
// the next. The writer (aguiwriter.go) and the resume route
// (aguiresume.go) feed it the same states the other two writers encode.

// MetadataOrderedContent is the AG-UI assistant message metadata member
// that carries the message's ordered content envelope
// (agentskit.chat.content/1, docs/protocol.md#ordered-assistant-content) when it has one: AG-UI
// content is text only, so its content is the envelope's text (PlainText)
// and the components travel here.
const MetadataOrderedContent = "orderedContent"

// aguiToolMessageID is the id of the AG-UI tool message that answers call
// callID of the assistant message assistantID.
func aguiToolMessageID(assistantID, callID string) string {
	return assistantID + ".tool." + callID
}

// aguiReasoningID is the id of the AG-UI reasoning message that holds
// the reasoning of the assistant message assistantID (api.MetadataReasoning).
func aguiReasoningID(assistantID string) string {
	return assistantID + ".reasoning"
}

// aguiCall is a tool call as an AG-UI assistant message lists it.
func aguiCall(tc protocol.ToolCall) agui.ToolCall {
	args := string(tc.Args)
	if args == "" {
		args = "{}"
	}
	return agui.ToolCall{ID: tc.ID, Type: "function", Function: agui.FunctionCall{Name: tc.Name, Arguments: args}}
}

// aguiResult is the AG-UI tool message that answers the finished call tc
// of assistant message assistantID: its result, or its error as both
// content and error.
func aguiResult(assistantID string, tc protocol.ToolCall) agui.Message {
	m := agui.Message{ID: aguiToolMessageID(assistantID, tc.ID), Role: agui.RoleTool, ToolCallID: tc.ID}
	switch {
	case tc.Status == protocol.ToolCallComplete && tc.Result != nil:
		m.Content = *tc.Result
	case tc.Status == protocol.ToolCallError && tc.Error != nil:
		m.Content, m.Error = *tc.Error, *tc.Error
	}
	return m
}

// aguiPart is what a turn's stream extends: its assistant message as AG-UI
// reads it. text is the message's text (PlainText of its content); calls
// its tool calls, without a continuation's decided call (AG-UI shows that
// call where it was asked for, in the asking turn); results the tool
// messages of its finished calls, the decided call's first, in call order
// up to the first call still pending or running (a call waiting for
// approval has no result and holds nothing back). So results only ever
// grow at the end, and a client that appends each new one after its
// owner, as AG-UI's TOOL_CALL_RESULT does, holds them in the order
// aguiMessages lists them.
type aguiPart struct {
	reasoning string // the message's api.MetadataReasoning
	text      string
	calls     []agui.ToolCall
	results   []agui.Message
}

// aguiPartOf returns the aguiPart of assistant message m.
func aguiPartOf(m protocol.Message) aguiPart {
	p := aguiPart{text: PlainText(m.Content), reasoning: reasoningOf(m)}
	decided, _ := decisionOf(m)
	blocked := false
	for i, tc := range m.ToolCalls {
		if i != 0 || tc.ID != decided {
			p.calls = append(p.calls, aguiCall(tc))
		}
		switch tc.Status {
		case protocol.ToolCallComplete, protocol.ToolCallError:
			if !blocked {
				p.results = append(p.results, aguiResult(m.ID, tc))
			}
		case protocol.ToolCallRequiresConfirmation:
		default:
			blocked = true
		}
	}
	return p
}

// aguiMessages returns msgs (a snapshot's messages, oldest first) as
// AG-UI messages: each user or system message as it is; each assistant
// message with its text, its tool calls and metadata (aguiMetadata),
// followed by its reasoning as a reasoning message (api.MetadataReasoning,
// when it has one) and the tool messages answering its calls (aguiPart). The result
// of a continuation's decided call follows the asking assistant message
// and the tool messages already after it, as AG-UI places a
// TOOL_CALL_RESULT; when the asking message is not among msgs, it follows
// the continuation's assistant message.
func aguiMessages(msgs []protocol.Message) []agui.Message {
	out := make([]agui.Message, 0, len(msgs)+len(msgs)/2)
	for _, m := range msgs {
		if m.Role != protocol.RoleAssistant {
			am := agui.Message{ID: m.ID, Role: m.Role, Content: m.Content}
			if m.Role == protocol.RoleTool && m.ToolCallID != nil {
				am.ToolCallID = *m.ToolCallID
			}
			if len(m.Metadata) > 0 {
				am.Metadata = jsontext.Value(m.Metadata)
			}
			out = append(out, am)
			continue
		}
		p := aguiPartOf(m)
		am := agui.Message{ID: m.ID, Role: agui.RoleAssistant, Content: p.text, ToolCalls: p.calls, Metadata: aguiMetadata(m)}
		results := p.results
		if decided, ok := decisionOf(m); ok && len(results) > 0 && results[0].ToolCallID == decided {
			if owner := aguiOwner(out, decided); owner >= 0 {
				out = aguiInsertResult(out, owner, results[0])
				results = results[1:]
			}
		}
		out = append(out, am)
		if p.reasoning != "" {
			// After its answer, where a client that applied the stream holds
			// it: the run's first snapshot had the answer, REASONING_MESSAGE_START
			// adds the reasoning message at the end.
			out = append(out, agui.Message{ID: aguiReasoningID(m.ID), Role: agui.RoleReasoning, Content: p.reasoning})
		}
		out = append(out, results...)
	}
	return out
}

// aguiOwner returns the index of the first assistant message of msgs that
// lists tool call id, or -1.
func aguiOwner(msgs []agui.Message, id string) int {
	for i, m := range msgs {
		if m.Role != agui.RoleAssistant {
			continue
		}
		for _, c := range m.ToolCalls {
			if c.ID == id {
				return i
			}
		}
	}
	return -1
}

// aguiInsertResult inserts r after msgs[owner] and the tool messages that
// follow it.
func aguiInsertResult(msgs []agui.Message, owner int, r agui.Message) []agui.Message {
	at := owner + 1
	for at < len(msgs) && msgs[at].Role == agui.RoleTool {
		at++
	}
	msgs = append(msgs, agui.Message{})
	copy(msgs[at+1:], msgs[at:])
	msgs[at] = r
	return msgs
}

// aguiMetadata is an AG-UI assistant message's metadata: the canonical
// message's metadata object, with MetadataOrderedContent added when its
// content is an ordered content envelope; nil when there is neither.
func aguiMetadata(m protocol.Message) jsontext.Value {
	envelope := strings.HasPrefix(m.Content, "\x1e")
	if !envelope {
		if len(m.Metadata) == 0 {
			return nil
		}
		return jsontext.Value(m.Metadata)
	}
	content, err := json.Marshal(m.Content)
	if err != nil {
		return jsontext.Value(m.Metadata)
	}
	return jsontext.Value(withMember(m.Metadata, MetadataOrderedContent, content))
}

// aguiEncoder turns the successive states of one turn into the AG-UI
// events of one stream: it holds what that stream's client holds of the
// turn's assistant message (held, valid when known), and whether a text
// message is open on the stream. Not safe for concurrent use: one
// goroutine writes a stream.
type aguiEncoder struct {
	threadID, runID string
	assistantID     string
	held            aguiPart
	known           bool
	open            bool
	// reasoningOpen is set while a reasoning span is open on the stream;
	// reasoningDone once the client holds reasoning that no more deltas
	// may extend (its span ended, or a snapshot carried it): more
	// reasoning then goes out as a snapshot.
	reasoningOpen, reasoningDone bool
	// started is set once RUN_STARTED was sent.
	started bool
	// client holds, by id, the turn's own AG-UI messages (its assistant
	// message and the tool messages of its calls) as the client holds
	// them: from the last snapshot, then as the deltas built them. It tells
	// whether the end needs a final snapshot.
	client map[string]agui.Message
}

func newAGUIEncoder(sessionID, turnID string) *aguiEncoder {
	return &aguiEncoder{threadID: sessionID, runID: turnID, assistantID: MessageID(turnID, positionAssistant)}
}

// runStarted appends RUN_STARTED, once.
func (e *aguiEncoder) runStarted(dst []agui.Event) []agui.Event {
	if e.started {
		return dst
	}
	e.started = true
	return append(dst, agui.Event{Type: agui.TypeRunStarted, ThreadID: e.threadID, RunID: e.runID})
}

// snapshot appends MESSAGES_SNAPSHOT of msgs, whose assistant message's
// part is next: the client then holds next, no text message open (one
// still open is ended first).
func (e *aguiEncoder) snapshot(dst []agui.Event, msgs []agui.Message, next aguiPart) []agui.Event {
	dst = e.endReasoning(dst)
	dst = e.endText(dst)
	e.reasoningDone = next.reasoning != ""
	if msgs == nil {
		msgs = []agui.Message{}
	}
	e.held, e.known = next, true
	e.client = map[string]agui.Message{}
	for _, m := range msgs {
		if e.owns(m.ID) {
			e.client[m.ID] = m
		}
	}
	return append(dst, agui.Event{Type: agui.TypeMessagesSnapshot, Messages: msgs})
}

// owns reports whether id is one of the turn's own AG-UI messages: its
// assistant message or a tool message answering one of its calls.
func (e *aguiEncoder) owns(id string) bool {
	return id == e.assistantID || id == aguiReasoningID(e.assistantID) || strings.HasPrefix(id, e.assistantID+".tool.")
}

// holds reports whether the client holds the turn's own messages of msgs
// (its messages as a snapshot carries them) exactly as msgs has them:
// then a final snapshot would tell it nothing.
func (e *aguiEncoder) holds(msgs []agui.Message) bool {
	n := 0
	for _, m := range msgs {
		if !e.owns(m.ID) {
			continue
		}
		n++
		c, ok := e.client[m.ID]
		if !ok {
			return false
		}
		x, err1 := json.Marshal(c)
		y, err2 := json.Marshal(m)
		if err1 != nil || err2 != nil || string(x) != string(y) {
			return false
		}
	}
	return n == len(e.client)
}

// endText appends TEXT_MESSAGE_END when a text message is open.
func (e *aguiEncoder) endText(dst []agui.Event) []agui.Event {
	if !e.open {
		return dst
	}
	e.open = false
	return append(dst, agui.Event{Type: agui.TypeTextMessageEnd, MessageID: e.assistantID})
}

// endReasoning appends REASONING_MESSAGE_END and REASONING_END when a
// reasoning span is open.
func (e *aguiEncoder) endReasoning(dst []agui.Event) []agui.Event {
	if !e.reasoningOpen {
		return dst
	}
	e.reasoningOpen, e.reasoningDone = false, true
	id := aguiReasoningID(e.assistantID)
	return append(dst, agui.Event{Type: agui.TypeReasoningMessageEnd, MessageID: id}, agui.Event{Type: agui.TypeReasoningEnd, MessageID: id})
}

// extends reports whether next only adds to what the client holds: text
// and reasoning appended (whole UTF-8 characters; reasoning only while
// its span may still grow), tool calls and results added at the end.
// Such a change is sent as deltas (step); any other as a snapshot.
func (e *aguiEncoder) extends(next aguiPart) bool {
	h := e.held
	if !e.known || !strings.HasPrefix(next.reasoning, h.reasoning) || !utf8.ValidString(next.reasoning[len(h.reasoning):]) ||
		next.reasoning != h.reasoning && e.reasoningDone || h.reasoning == "" && next.reasoning != "" && len(h.results) > 0 {
		// A reasoning message begun after tool results would land after
		// them on the client, not where aguiMessages puts it.
		return false
	}
	if !strings.HasPrefix(next.text, h.text) || !utf8.ValidString(next.text[len(h.text):]) ||
		len(next.calls) < len(h.calls) || len(next.results) < len(h.results) {
		return false
	}
	for i, c := range h.calls {
		if next.calls[i] != c {
			return false
		}
	}
	for i, r := range h.results {
		if n := next.results[i]; n.ID != r.ID || n.Content != r.Content || n.ToolCallID != r.ToolCallID {
			return false
		}
	}
	return true
}

// changes reports whether next differs from what the client holds in
// anything the stream sends.
func (e *aguiEncoder) changes(next aguiPart) bool {
	return !e.known || next.reasoning != e.held.reasoning || next.text != e.held.text || len(next.calls) != len(e.held.calls) || len(next.results) != len(e.held.results)
}

// step appends the deltas that take the client from held to next, which
// must extend it (extends): the new text as TEXT_MESSAGE_CONTENT (a text
// message opened with TEXT_MESSAGE_START when none is open, so a resumed
// stream re-opens the message before its first delta), each new tool call
// as TOOL_CALL_START, TOOL_CALL_ARGS and TOOL_CALL_END (the text message
// ended first), each new result as TOOL_CALL_RESULT. The deltas are cut
// from the states only, so the TEXT_MESSAGE_CONTENT deltas of a stream
// concatenate to exactly the text of the last state it sent, whatever the
// states' pacing.
func (e *aguiEncoder) step(dst []agui.Event, next aguiPart) []agui.Event {
	h := e.held
	rid := aguiReasoningID(e.assistantID)
	if delta := next.reasoning[len(h.reasoning):]; delta != "" {
		dst = e.endText(dst)
		if !e.reasoningOpen {
			e.reasoningOpen = true
			dst = append(dst, agui.Event{Type: agui.TypeReasoningStart, MessageID: rid},
				agui.Event{Type: agui.TypeReasoningMessageStart, MessageID: rid, Role: agui.RoleReasoning})
		}
		dst = append(dst, agui.Event{Type: agui.TypeReasoningMessageContent, MessageID: rid, Delta: agui.Text(delta)})
		if e.client != nil {
			e.client[rid] = agui.Message{ID: rid, Role: agui.RoleReasoning, Content: next.reasoning}
		}
	}
	if next.text != h.text || len(next.calls) > len(h.calls) || len(next.results) > len(h.results) {
		dst = e.endReasoning(dst)
	}
	if delta := next.text[len(h.text):]; delta != "" {
		if !e.open {
			e.open = true
			dst = append(dst, agui.Event{Type: agui.TypeTextMessageStart, MessageID: e.assistantID, Role: agui.RoleAssistant})
		}
		dst = append(dst, agui.Event{Type: agui.TypeTextMessageContent, MessageID: e.assistantID, Delta: agui.Text(delta)})
	}
	if len(next.calls) > len(h.calls) {
		dst = e.endText(dst)
		for _, c := range next.calls[len(h.calls):] {
			dst = append(dst,
				agui.Event{Type: agui.TypeToolCallStart, ToolCallID: c.ID, ToolCallName: c.Function.Name, ParentMessageID: e.assistantID},
				agui.Event{Type: agui.TypeToolCallArgs, ToolCallID: c.ID, Delta: agui.Text(c.Function.Arguments)},
				agui.Event{Type: agui.TypeToolCallEnd, ToolCallID: c.ID})
		}
	}
	for _, r := range next.results[len(h.results):] {
		dst = append(dst, agui.Event{Type: agui.TypeToolCallResult, MessageID: r.ID, ToolCallID: r.ToolCallID, Content: agui.Text(r.Content)})
		if e.client != nil {
			e.client[r.ID] = agui.Message{ID: r.ID, Role: agui.RoleTool, Content: r.Content, ToolCallID: r.ToolCallID}
		}
	}
	if a, ok := e.client[e.assistantID]; ok {
		a.Content, a.ToolCalls = next.text, next.calls
		e.client[e.assistantID] = a
	}
	e.held = next
	return dst
}

// advance appends what takes the client to next: deltas when next
// extends what it holds, otherwise a snapshot of msgs (called only then).
func (e *aguiEncoder) advance(dst []agui.Event, next aguiPart, msgs func() []agui.Message) []agui.Event {
	if e.extends(next) {
		return e.step(dst, next)
	}
	return e.snapshot(dst, msgs(), next)
}

// end appends the events that end the run at its terminal record rec,
// whose messages as a snapshot are msgs: the rest of the answer as deltas
// when they can express it, the text message ended, the final
// MESSAGES_SNAPSHOT (what history holds, metadata and tool errors
// included) unless the deltas left the client holding exactly that
// already (a plain answer), then RUN_FINISHED or RUN_ERROR (aguiRunEnd). A
// record without messages (a turn lost before its first checkpoint) has
// only its RUN_ERROR.
func (e *aguiEncoder) end(dst []agui.Event, rec *chat.Turn, msgs func() []agui.Message) []agui.Event {
	if len(rec.Messages) > 0 {
		next := aguiPartOf(rec.Messages[len(rec.Messages)-1])
		exact := false
		if e.extends(next) {
			dst = e.step(dst, next)
			exact = e.holds(aguiMessages(rec.Messages))
		}
		dst = e.endReasoning(dst)
		dst = e.endText(dst)
		if !exact {
			dst = e.snapshot(dst, msgs(), next)
		}
	}
	return append(dst, aguiRunEnd(e.threadID, e.runID, rec))
}

// aguiRunEnd is the event that ends a run whose terminal record is rec
// (docs/agui.md, "How a run ends"): complete is RUN_FINISHED with outcome
// success, or interrupt when calls wait for approval; interrupted (a stop)
// is RUN_FINISHED with outcome cancelled; an error is RUN_ERROR with the
// stored code and its fixed message.
func aguiRunEnd(threadID, runID string, rec *chat.Turn) agui.Event {
	usage := []agui.TokenUsage{{InputTokens: rec.Usage.PromptTokens, OutputTokens: rec.Usage.CompletionTokens, TotalTokens: rec.Usage.TotalTokens}}
	switch rec.Status {
	case chat.TurnComplete:
		outcome := &agui.Outcome{Type: agui.OutcomeSuccess}
		if len(rec.Messages) > 0 {
			if in := aguiInterrupts(rec.Messages[len(rec.Messages)-1]); len(in) > 0 {
				outcome = &agui.Outcome{Type: agui.OutcomeInterrupt, Interrupts: in}
			}
		}
		return agui.Event{Type: agui.TypeRunFinished, ThreadID: threadID, RunID: runID, Outcome: outcome, Usage: usage}
	case chat.TurnInterrupted:
		return agui.Event{Type: agui.TypeRunFinished, ThreadID: threadID, RunID: runID, Outcome: &agui.Outcome{Type: agui.OutcomeCancelled}, Usage: usage}
	}
	d := protocol.NewDiagnostic(protocol.CodeServerInternal)
	if rec.Error != nil {
		d = *rec.Error
	}
	ev := aguiRunError(d)
	ev.Usage = usage
	return ev
}

// aguiRunError is RUN_ERROR for diagnostic d: its code, its fixed message
// and {"retryable": ...} as metadata.
func aguiRunError(d protocol.Diagnostic) agui.Event {
	return agui.Event{Type: agui.TypeRunError, Message: d.Message, Code: d.Code,
		Metadata: jsontext.Value(fmt.Sprintf(`{"retryable":%t}`, d.Retryable))}
}

// aguiApprovalSchema is the responseSchema of an approval interrupt: the
// payload a resolved resume entry carries (pkg/agui DecodeRunAgentInput).
const aguiApprovalSchema = `{"type":"object","properties":{"approved":{"type":"boolean"}},"required":["approved"]}`

// aguiInterrupts returns the interrupts of an assistant message that ended
// waiting for approval: one per entry of its
// api.MetadataPendingConfirmations, its token as the id.
func aguiInterrupts(m protocol.Message) []agui.Interrupt {
	if len(m.Metadata) == 0 {
		return nil
	}
	var meta api.ApprovalMetadata
	if json.Unmarshal(m.Metadata, &meta) != nil {
		return nil
	}
	var out []agui.Interrupt
	for _, p := range meta.PendingConfirmations {
		action, err := json.Marshal(map[string]string{"action": p.Action})
		if err != nil {
			continue
		}
		out = append(out, agui.Interrupt{
			ID: p.Token, Reason: agui.ReasonToolApproval,
			Message:        "The tool call " + p.Action + " waits for approval.",
			ToolCallID:     p.ToolCallID,
			ResponseSchema: jsontext.Value(aguiApprovalSchema),
			ExpiresAt:      protocol.FormatTime(time.UnixMilli(p.ExpiresAt)),
			Metadata:       jsontext.Value(action),
		})
	}
	return out
}
