package engine

import (
	"net/http"
	"strings"

	"github.com/turnstream/turnstream/pkg/agui"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/httpedge"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// aguiPosition reads where a resuming client stands: the Last-Event-ID
// header, or when it is absent or empty the lastEventId query parameter
// (EventSource sends the header on its reconnections even to a URL that
// names the parameter, and the header is the newer). Nil when neither is
// there: the client holds nothing of the run. A repeated or malformed
// header is 400 REQUEST_INVALID_HEADER; a malformed parameter, a repeated
// one or any other parameter 400 REQUEST_INVALID_QUERY.
func aguiPosition(r *http.Request) (*agui.EventID, string, error) {
	q := r.URL.Query()
	vals, present := q[AGUILastEventIDParameter]
	if len(q) > 1 || len(q) == 1 && !present || present && len(vals) != 1 {
		return nil, "query", httpedge.ErrInvalidQuery
	}
	switch hv := r.Header.Values("Last-Event-ID"); {
	case len(hv) > 1:
		return nil, "last event id", httpedge.ErrInvalidHeader
	case len(hv) == 1 && hv[0] != "":
		id, err := agui.ParseEventID(strings.TrimSpace(hv[0]))
		if err != nil {
			return nil, "last event id", httpedge.ErrInvalidHeader
		}
		return &id, "", nil
	}
	if !present {
		return nil, "", nil
	}
	id, err := agui.ParseEventID(vals[0])
	if err != nil {
		return nil, "query", httpedge.ErrInvalidQuery
	}
	return &id, "", nil
}

// serveAGUIResume runs GET /agui/threads/{threadId}/runs/{runId}: the run
// (the turn) continued as AG-UI events from where the client stands
// (aguiPosition), through the same resume machinery as the NDJSON resume
// route (serveResume): the same checks, 404s and deadline, one shared
// poller per turn, dead turns decided by its reads. The stream starts with
// RUN_STARTED. Then, when the client's position names a state the turn's
// newest checkpoint still holds, it goes on with deltas; otherwise the
// first newer state comes as a MESSAGES_SNAPSHOT (a client that stands
// part-way into a state may have missed deltas), and deltas after it,
// text messages re-opened before their first delta. A run that ended
// answers at once, whatever the position: RUN_STARTED, its final
// MESSAGES_SNAPSHOT and RUN_FINISHED or RUN_ERROR. A resume that reaches
// its own deadline, or whose client goes away, ends without a run event:
// the client reconnects with the last id it holds. Docs: docs/agui.md.
func (rs *resumes) serveAGUIResume(w http.ResponseWriter, r *http.Request, sessionID, turnID string) {
	h := rs.h
	ctx, cancel, _ := h.deadline(r)
	defer cancel()
	log := h.requestLogger(ctx).With("sessionId", sessionID, "turnId", turnID, "mode", "agui")
	if err := httpedge.RequireMethod(w, r, http.MethodGet); err != nil {
		reject(ctx, w, log, "method", err)
		return
	}
	principal, err := h.authenticate(ctx, r)
	if err != nil {
		reject(ctx, w, log, "authenticate", err)
		return
	}
	pos, step, err := aguiPosition(r)
	if err != nil {
		reject(ctx, w, log, step, err)
		return
	}
	turn, err := rs.resumable(ctx, sessionID, turnID, principal)
	if err != nil {
		reject(ctx, w, log, "resume", err)
		return
	}
	s := bind(&run{h: h, log: log, sessionID: sessionID, turnID: turnID, lineage: turn.Lineage, scope: scopeSession})
	if err := rs.resumeContext(ctx, s, principal, turn); err != nil {
		reject(ctx, w, log, "resume context", err)
		return
	}
	ae := newAGUIStreamer(s, sessionID, turnID)
	enc := ae.enc
	hd := w.Header()
	ae.header(hd)
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	s.w, s.out = w, newStreamOut(w, log)

	after, at := int64(-1), agui.EventID{}
	if pos != nil {
		after, at = pos.Sequence, *pos
		if pos.Complete() && holdsNewest(turn, pos.Sequence) {
			s.user = turn.Messages[0]
			enc.held, enc.known = aguiPartOf(turn.Messages[len(turn.Messages)-1]), true
			after = turn.LastSequence
		}
	}
	log.Info("resume", "lastEventId", at.String(), "status", string(turn.Status), "sequence", turn.LastSequence)

	var f *follow
	for {
		frames, done := ae.resumeFrames(turn, &after)
		if len(frames) == 0 && !enc.started {
			// Nothing newer yet: the run starts here, the client's
			// position unchanged.
			events := enc.runStarted(nil)
			frames, _ = agui.AppendFrame(nil, at, &events[0])
		}
		if len(frames) > 0 && !s.out.write(frames) {
			return // the resumer is gone; the turn goes on
		}
		if done {
			return
		}
		if f == nil {
			f = rs.follows.join(sessionID, turn, principal)
			defer rs.follows.leave(f)
		}
		next, err := f.next(ctx, turn)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			// Gone (superseded or deleted) while followed.
			ev := aguiRunError(protocol.NewDiagnostic(protocol.CodeTurnNotFound))
			out, _ := agui.AppendFrame(nil, agui.EventID{Sequence: after + 1, Index: 1}, &ev)
			s.out.write(out)
			return
		}
		turn = next
	}
}

// holdsNewest reports whether a client that holds state seq of turn holds
// the messages of its newest checkpoint: seq is that checkpoint's, or lies
// between it and the heartbeats after it, which repeat its messages.
func holdsNewest(turn *chat.Turn, seq int64) bool {
	if turn.Status != chat.TurnRunning || len(turn.Messages) == 0 {
		return false
	}
	return seq == turn.LastSequence || turn.Head > 0 && turn.Head <= seq && seq <= turn.LastSequence
}

// resumeFrames returns the frames that take a resuming client from what
// its encoder holds to turn, when turn is newer than sequence *after (moved
// on to it), and whether the stream ends with them: a terminal turn's
// frames end it whatever *after is (aguiEncoder.end at its terminal
// sequence). The first frames start with RUN_STARTED.
func (ae *aguiStreamer) resumeFrames(turn *chat.Turn, after *int64) ([]byte, bool) {
	s, enc := ae.t, ae.enc
	if turn.Status != chat.TurnRunning {
		if len(turn.Messages) > 0 {
			s.user = turn.Messages[0]
		}
		events := enc.runStarted(nil)
		events = enc.end(events, turn, func() []agui.Message { return ae.aguiSnapshot(turn.Messages...) })
		return ae.aguiBatch(nil, turn.LastSequence, events), true
	}
	if len(turn.Messages) == 0 || turn.LastSequence <= *after {
		return nil, false // not acknowledged yet, or nothing newer
	}
	*after = turn.LastSequence
	s.user = turn.Messages[0]
	assistant := turn.Messages[len(turn.Messages)-1]
	next := aguiPartOf(assistant)
	events := enc.runStarted(nil)
	if enc.changes(next) {
		events = enc.advance(events, next, func() []agui.Message { return ae.aguiSnapshot(s.user, assistant) })
	}
	if len(events) == 0 {
		return nil, false
	}
	return ae.aguiBatch(nil, turn.LastSequence, events), false
}
