package engine

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/turnstream/turnstream/pkg/agui"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/clock"
	"github.com/turnstream/turnstream/pkg/httpedge"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// AG-UI routes of the turn function (docs/agui.md).
const (
	// AGUIPath takes an AG-UI RunAgentInput and answers the turn as AG-UI
	// events (text/event-stream).
	AGUIPath = "/agui"
	// AGUIRunPath resumes a run: GET with Last-Event-ID.
	AGUIRunPath = "/agui/threads/{threadId}/runs/{runId}"
	// AGUILastEventIDParameter is the query parameter that stands in for
	// the Last-Event-ID header (clients without EventSource).
	AGUILastEventIDParameter = "lastEventId"
)

// AGUITextGap is the longest an AG-UI stream holds text back to spare
// event framing (aguiTextDue): text goes out once it is twice the size of
// the frame that carries it, or once this long has passed since the last
// text went out, and never more often than every SnapshotInterval.
const AGUITextGap = 400 * time.Millisecond

func aguiCapabilities(opts Config) aguiCapability {
	c := aguiCapability{Available: true, Protocol: "ag-ui", Version: agui.ProtocolVersion,
		Method: http.MethodPost, Path: AGUIPath, TextGapMs: AGUITextGap.Milliseconds(), Doc: "docs/agui.md"}
	if opts.CheckpointInterval > 0 {
		c.Resume.Available, c.Resume.Method, c.Resume.Path = true, http.MethodGet, AGUIRunPath
		c.Resume.Header, c.Resume.Parameter = "Last-Event-ID", AGUILastEventIDParameter
	}
	return c
}

// serveAGUI runs POST /agui: an AG-UI RunAgentInput taken as a submit
// (threadId the session, runId the turn, the last user message the input,
// a resolved resume entry a decision; docs/agui.md) through the same
// pipeline as POST / from the claim on: the same checks in the same order,
// errors before the stream as the same JSON with the same statuses, then
// the turn streamed as AG-UI events (aguiWriter).
func (h *handler) serveAGUI(w http.ResponseWriter, r *http.Request) {
	ctx, cancel, deadline := h.deadline(r)
	defer cancel()
	log := h.requestLogger(ctx)
	sub, step, err := h.acceptAGUI(ctx, w, r)
	if err != nil {
		reject(ctx, w, log, step, err)
		return
	}
	h.accepted(ctx, sub)
	h.runSubmission(ctx, w, r, deadline, log.With("sessionId", sub.sessionID, "turnId", sub.turnID, "mode", "agui"), sub)
}

// acceptAGUI runs the checks of POST /agui before any storage request:
// those of every POST route (acceptPost), the body under MaxBodyBytes, then
// the RunAgentInput (agui.DecodeRunAgentInput): not JSON is 400
// REQUEST_INVALID_JSON, not a RunAgentInput turnstream runs 400
// REQUEST_INVALID_BODY. The turnstream request headers (snapshot scope,
// stream mode) are not read: an AG-UI snapshot is always the session's.
func (h *handler) acceptAGUI(ctx context.Context, w http.ResponseWriter, r *http.Request) (*submission, string, error) {
	principal, step, err := h.acceptPost(ctx, w, r)
	if err != nil {
		return nil, step, err
	}
	body, err := h.readBody(ctx, w, r)
	if err != nil {
		return nil, "read body", err
	}
	in, err := agui.DecodeRunAgentInput(body)
	var ie *agui.InputError
	switch {
	case errors.Is(err, agui.ErrInvalidJSON):
		return nil, "decode", httpedge.ErrInvalidJSON
	case errors.As(err, &ie):
		return nil, "decode", fmt.Errorf("%w: %w", httpedge.ErrInvalidBody, err)
	case err != nil:
		return nil, "decode", fmt.Errorf("%w: %w", httpedge.ErrInvalidBody, err)
	}
	sub := &submission{
		principal: principal,
		scope:     scopeSession,
		sessionID: in.ThreadID,
		turnID:    in.RunID,
		input:     in.Input,
		lineage:   protocol.Lineage{Operation: protocol.OperationSubmit},
		inputHash: chat.HashInput(in.Input),
		agui:      true,
	}
	if len(in.Media) > 0 {
		if err := sub.addMedia(in.Media); err != nil {
			return nil, "decode", err
		}
	}
	if d := in.Decision; d != nil {
		c := &protocol.SubmitConfirmation{Token: d.InterruptID, Decision: protocol.DecisionDeny}
		if d.Approve {
			c.Decision = protocol.DecisionApprove
		}
		sub.decision = &chat.Decision{Token: c.Token, Approve: d.Approve}
		sub.inputHash = decisionInputHash(sub.input, c)
	}
	return sub, "", nil
}

// aguiStreamer is the AG-UI event stream of a turn (POST /agui), a
// streamEncoder: its first events, its writer goroutine and its end
// frames, from the same states as the NDJSON stream's (encoded by
// aguiEncoder, which the writer goroutine owns).
type aguiStreamer struct {
	t   *run
	enc *aguiEncoder
	// endc (cap 1) carries the turn's end to the writer (end), so that
	// the writer, which holds what the client holds, encodes it too: the
	// terminal record, or nil when the outcome is unknown
	// (TURN_OUTCOME_INDETERMINATE).
	endc chan *chat.Turn
}

func newAGUIStreamer(t *run, sessionID, turnID string) *aguiStreamer {
	return &aguiStreamer{t: t, enc: newAGUIEncoder(sessionID, turnID), endc: make(chan *chat.Turn, 1)}
}

func (ae *aguiStreamer) header(h http.Header) {
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
}

func (ae *aguiStreamer) first(_ time.Time, seq int64, first protocol.Message) []byte {
	return ae.aguiFirst(seq, first)
}

func (ae *aguiStreamer) write(started time.Time, _ int64, _ protocol.Message) {
	ae.aguiWriter(started)
}

// aguiSnapshot is the MESSAGES_SNAPSHOT of a run's state whose own
// messages are msgs: the session context before them (as a session-scope
// snapshot carries it), all as AG-UI messages.
func (ae *aguiStreamer) aguiSnapshot(msgs ...protocol.Message) []agui.Message {
	t := ae.t
	ctx := t.context
	if dropped := int(t.dropped.Load()); dropped >= len(t.turnStarts) {
		ctx = nil
	} else if dropped > 0 {
		ctx = t.context[t.turnStarts[dropped]:]
	}
	all := make([]protocol.Message, 0, len(ctx)+len(msgs))
	return aguiMessages(append(append(all, ctx...), msgs...))
}

// aguiFirst returns the first events of a live AG-UI stream, for the
// state seq whose assistant message is first: RUN_STARTED and the
// MESSAGES_SNAPSHOT of the session context and the turn so far, which
// replaces whatever history the client sent (the stored session is the
// context).
func (ae *aguiStreamer) aguiFirst(seq int64, first protocol.Message) []byte {
	t := ae.t
	enc := ae.enc
	events := enc.runStarted(nil)
	events = enc.snapshot(events, ae.aguiSnapshot(t.user, first), aguiPartOf(first))
	return ae.aguiBatch(nil, seq, events)
}

// aguiBatch appends events as the SSE frames of state seq, logging an
// event that cannot be encoded (a bug: it is left out).
func (ae *aguiStreamer) aguiBatch(dst []byte, seq int64, events []agui.Event) []byte {
	t := ae.t
	out, err := agui.AppendBatch(dst, seq, events)
	if err != nil {
		t.log.Error("AG-UI event encoding failed", "err", err)
	}
	return out
}

// end hands the turn's end to the AG-UI writer (rec its terminal record,
// nil when its outcome is unknown) and waits for the writer to exit.
func (ae *aguiStreamer) end(rec *chat.Turn) {
	ae.endc <- rec // cap 1, sent once
	<-ae.t.out.done
}

// aguiWriter is the writer goroutine of an AG-UI stream (see writer for
// the default one), after the first frames written by streamTurn. On each
// wake-up, at most every SnapshotInterval, it takes the latest state and,
// when the client's view of it changed, sends the events that take the
// client there as the frames of the next sequence (aguiEncoder.advance),
// remembering that state for checkpoints. Text alone waits until it is
// twice the frame that carries it or AGUITextGap has passed since the
// last text (aguiTextDue), so that a slow answer does not cost a frame
// per token. The end arrives on agui.end and is written without delay;
// the writer exits after it. After a write failure (the client is gone; with checkpoints
// the turn goes on for a resume) it goes on numbering and remembering
// states without writing.
func (ae *aguiStreamer) aguiWriter(first time.Time) {
	t := ae.t
	defer close(t.out.done)
	o, clk := t.h.opts, t.h.clock
	enc := ae.enc
	var (
		buf         []byte
		events      []agui.Event
		lastWrite   = first
		lastText    = first
		lastVersion uint64
		lastContent string
		lastCalls   string
		textTimer   = clk.NewTimer(time.Hour)
	)
	textTimer.Stop()
	defer textTimer.Stop()
	framing := ae.aguiFraming()
	var waiting <-chan time.Time
	for {
		select {
		case rec := <-ae.endc:
			t.out.write(ae.aguiEndFrames(rec))
			return
		case <-t.out.wake:
		case <-waiting:
		}
		waiting = nil
		if wait := o.SnapshotInterval - clock.Since(clk, lastWrite); wait > 0 {
			timer := clk.NewTimer(wait)
			select {
			case rec := <-ae.endc:
				timer.Stop()
				t.out.write(ae.aguiEndFrames(rec))
				return
			case <-timer.C():
			}
		}
		v := t.state.view()
		now := clk.Now()
		if v.version == lastVersion || !t.lease.heldAt(now) {
			continue // nothing new, or the supervisor is ending the turn
		}
		assistant := t.assistant(v, protocol.MessageStreaming, "")
		next := aguiPartOf(assistant)
		if !enc.changes(next) {
			lastVersion = v.version // usage or metadata: the next change carries it
			continue
		}
		if textOnly := len(next.calls) == len(enc.held.calls) && len(next.results) == len(enc.held.results); textOnly && enc.extends(next) {
			if !aguiTextDue(len(next.text)-len(enc.held.text), framing, clock.Since(clk, lastText)) {
				textTimer.Reset(AGUITextGap - clock.Since(clk, lastText))
				waiting = textTimer.C()
				continue
			}
		} else if textOnly && strings.HasPrefix(next.text, enc.held.text) && !t.out.writeFailed {
			// The text ends inside a character: the rest follows soon.
			textTimer.Reset(o.SnapshotInterval)
			waiting = textTimer.C()
			continue
		}
		seq, ok := t.seqs.next()
		if !ok {
			continue // closed: the end is on its way
		}
		calls := toolCallStates(assistant.ToolCalls)
		t.live.remember(seq, assistant, v.usage, lastContent == "" && assistant.Content != "", calls != lastCalls)
		lastContent, lastCalls, lastVersion = assistant.Content, calls, v.version
		if next.text != enc.held.text {
			lastText = clk.Now()
		}
		events = enc.advance(events[:0], next, func() []agui.Message { return ae.aguiSnapshot(t.user, assistant) })
		lastWrite = clk.Now()
		if t.out.writeFailed {
			continue
		}
		buf = ae.aguiBatch(buf[:0], seq, events)
		if !t.out.write(buf) && o.CheckpointInterval == 0 {
			return
		}
	}
}

// aguiTextDue is the AG-UI stream's pacing law for text alone: pending
// bytes of new text go out once they are at least twice the frame that
// carries them (framing), so that frames cost at most half the text, or
// once AGUITextGap has passed since the last text went out.
func aguiTextDue(pending, framing int, since time.Duration) bool {
	return pending >= 2*framing || since >= AGUITextGap
}

// aguiFraming is the size of the frame of a TEXT_MESSAGE_CONTENT event of
// this turn with an empty delta: what AGUITextGap spares.
func (ae *aguiStreamer) aguiFraming() int {
	b, _ := agui.AppendFrame(nil, agui.EventID{Sequence: 1 << 20, Index: 1}, &agui.Event{
		Type: agui.TypeTextMessageContent, MessageID: ae.enc.assistantID, Delta: agui.Text("")})
	return len(b)
}

// aguiEndFrames returns the last frames of a live AG-UI stream: the end
// of the run at its terminal record's sequence (aguiEncoder.end), or for
// an unknown outcome (rec nil) RUN_ERROR TURN_OUTCOME_INDETERMINATE. That
// event is no state of the turn: its id is the first step towards the
// state after the last one sent, so a client that resumes from it gets
// the turn's record as a snapshot.
func (ae *aguiStreamer) aguiEndFrames(rec *chat.Turn) []byte {
	t := ae.t
	enc := ae.enc
	if rec == nil {
		ev := aguiRunError(protocol.NewDiagnostic(protocol.CodeTurnOutcomeIndeterminate))
		out, err := agui.AppendFrame(nil, agui.EventID{Sequence: t.seqs.last() + 1, Index: 1}, &ev)
		if err != nil {
			t.log.Error("AG-UI event encoding failed", "err", err)
		}
		return out
	}
	events := enc.end(nil, rec, func() []agui.Message { return ae.aguiSnapshot(rec.Messages...) })
	return ae.aguiBatch(nil, rec.LastSequence, events)
}
