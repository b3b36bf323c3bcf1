package turn

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/httpedge"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// resumePath parses /sessions/{sessionId}/turns/{turnId}/stream; both ids
// must be SafeIds.
func resumePath(p string) (sessionID, turnID string, ok bool) {
	parts := strings.Split(p, "/")
	if len(parts) != 6 || parts[0] != "" || parts[1] != "sessions" || parts[3] != "turns" || parts[5] != "stream" {
		return "", "", false
	}
	if !protocol.IsSafeID(parts[2]) || !protocol.IsSafeID(parts[4]) {
		return "", "", false
	}
	return parts[2], parts[4], true
}

// acceptResume runs the checks of a resume before any storage request:
// method GET (405), authentication on the headers (401/403), the snapshot
// scope header (400 REQUEST_INVALID_HEADER) and the after query (400
// REQUEST_INVALID_QUERY). On failure it returns the step that failed and
// an error for httpedge.Diagnose.
func (h *handler) acceptResume(ctx context.Context, w http.ResponseWriter, r *http.Request) (p chat.Principal, sc scope, compact bool, after int64, step string, err error) {
	if err := httpedge.RequireMethod(w, r, http.MethodGet); err != nil {
		return p, sc, false, 0, "method", err
	}
	if p, err = h.authenticate(ctx, r); err != nil {
		return p, sc, false, 0, "authenticate", err
	}
	if sc, err = parseScope(r.Header.Values(SnapshotScopeHeader)); err != nil {
		return p, sc, false, 0, "scope", err
	}
	compact, ok := parseStreamMode(r.Header.Values(StreamModeHeader))
	if !ok {
		return p, sc, false, 0, "stream mode", httpedge.ErrInvalidHeader
	}
	after, ok = parseAfter(r)
	if !ok {
		return p, sc, false, 0, "query", httpedge.ErrInvalidQuery
	}
	return p, sc, compact, after, "", nil
}

// parseAfter reads the after query parameter: a sequence >= 0 (an integer
// up to 2^53-1, as the protocol's sequences); absent means -1 (every line
// is newer).
func parseAfter(r *http.Request) (int64, bool) {
	q := r.URL.Query()
	vals, present := q["after"]
	if len(q) > 1 || len(q) == 1 && !present {
		return 0, false // only after is known
	}
	if !present {
		return -1, true
	}
	if len(vals) != 1 || vals[0] == "" || len(vals[0]) > 16 {
		return 0, false
	}
	for _, c := range vals[0] {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(vals[0], 10, 64)
	if err != nil || n > 1<<53-1 {
		return 0, false
	}
	return n, true
}

// serveResume runs GET /sessions/{sessionId}/turns/{turnId}/stream?after=N:
// the turn's newest state as one complete snapshot (when its sequence is
// above after), then each newer checkpoint as it lands, ending as the live
// stream ended (the terminal snapshot and, after a timeout or a
// cancellation, the same diagnostic). Sequences are the live stream's, so
// one snapshot cursor takes live and resumed lines and never applies one
// twice; a resumer may see gaps. A resume never runs the model, and closing
// it never stops the turn. A turn whose lease expired without a save ends
// with the diagnostic TURN_LOST (history shows its last checkpoint). Each
// poll is one consistent Query (chat.Store.PollTurn), every
// ResumePollInterval. The stream ends by the request's deadline at the
// latest, with SERVER_TIMEOUT: the client resumes again. With
// StreamModeHeader compact, checkpoints that only add text after the first
// line go out as append lines (docs/compact.md); the first line and the
// terminal one are complete snapshots.
func (h *handler) serveResume(w http.ResponseWriter, r *http.Request, sessionID, turnID string) {
	ctx, cancel, _ := h.deadline(r)
	defer cancel()
	log := h.requestLogger(ctx).With("sessionId", sessionID, "turnId", turnID)
	principal, sc, compact, after, step, err := h.acceptResume(ctx, w, r)
	if err != nil {
		reject(ctx, w, log, step, err)
		return
	}
	turn, err := h.opts.Store.FindTurn(ctx, sessionID, turnID, principal)
	if errors.Is(err, chat.ErrTurnNotFound) {
		// Claimed but not checkpointed yet (its first moments): follow it
		// from the session's lease until its first checkpoint lands.
		if sess, serr := h.opts.Store.GetSession(ctx, sessionID, principal); serr == nil {
			if l := sess.ActiveTurn; l != nil && l.TurnID == turnID && l.ExpiresAt.After(h.opts.Now()) {
				turn, err = &chat.Turn{SessionID: sessionID, TurnID: turnID, Ordinal: l.Ordinal, Status: chat.TurnRunning, Lineage: l.Lineage}, nil
			}
		}
	}
	if err != nil {
		reject(ctx, w, log, "resume", err)
		return
	}
	s := &run{h: h, log: log, sessionID: sessionID, turnID: turnID, lineage: turn.Lineage, scope: sc, compact: compact}
	if sc == scopeSession {
		// The same context as the live turn loaded, under the session's
		// definition and budget, so that snapshots carry the same messages.
		err := func() error {
			sess, err := h.opts.Store.GetSession(ctx, sessionID, principal)
			if err != nil {
				return err
			}
			ag, err := h.agentFor(sess.DefinitionID)
			if err != nil {
				return err
			}
			return s.loadContext(ctx, ag.def, turn.Ordinal)
		}()
		if err != nil {
			reject(ctx, w, log, "resume context", err)
			return
		}
	}
	hd := w.Header()
	hd.Set("Content-Type", "application/x-ndjson; charset=utf-8")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Content-Type-Options", "nosniff")
	if compact {
		hd.Set(StreamModeHeader, StreamModeCompact)
	}
	w.WriteHeader(http.StatusOK)
	s.w, s.out = w, newStreamOut(w, log)
	log.Info("resume", "after", after, "status", string(turn.Status), "sequence", turn.LastSequence)

	poll := time.NewTicker(h.opts.ResumePollInterval)
	defer poll.Stop()
	sent := after
	for {
		lines, done := s.resumeLines(turn, sent)
		if len(lines) > 0 && !s.out.write(lines) {
			return // the resumer is gone; the turn goes on
		}
		if done {
			return
		}
		sent = max(sent, turn.LastSequence)
		select {
		case <-ctx.Done():
			d, _ := contextDiagnostic(ctx)
			s.out.write(s.diagnosticLine(nil, d, sent+1))
			return
		case <-poll.C:
		}
		next, err := h.opts.Store.PollTurn(ctx, sessionID, turn.Ordinal, principal)
		switch {
		case err == nil:
			turn = next
		case ctx.Err() != nil:
			continue // the deadline case above ends the stream
		case errors.Is(err, chat.ErrTurnNotFound) && turn.Status == chat.TurnRunning && len(turn.Messages) == 0:
			continue // its first checkpoint has not landed yet
		case errors.Is(err, chat.ErrSessionNotFound), errors.Is(err, chat.ErrTurnNotFound):
			// Gone (superseded or deleted) while followed.
			s.out.write(s.diagnosticLine(nil, protocol.NewDiagnostic(protocol.CodeTurnNotFound), sent+1))
			return
		default:
			log.Warn("resume poll failed", "err", err)
		}
	}
}

// resumeLines returns the lines of t newer than sequence sent, and whether
// the stream ends with them.
func (s *run) resumeLines(t *chat.Turn, sent int64) ([]byte, bool) {
	if len(t.Messages) == 0 {
		return nil, false
	}
	s.user = t.Messages[0]
	assistant := t.Messages[len(t.Messages)-1]
	switch {
	case t.Status == chat.TurnRunning:
		if t.LastSequence <= sent {
			return nil, false
		}
		if s.compact {
			// The first line is a complete snapshot; later checkpoints
			// that only add text are append lines.
			return s.resumed.line(s, t.LastSequence, assistant, t.Usage), false
		}
		return s.snapshotLine(nil, t.LastSequence, protocol.StatusStreaming, assistant, t.Usage, nil), false
	case t.Error != nil && t.Error.Code == protocol.CodeTurnLost:
		// Its process stopped without saving: what the live stream sent
		// after the last checkpoint is unknown, so no snapshot is sent
		// with a sequence a client may already hold.
		return s.diagnosticLine(nil, *t.Error, max(sent, t.LastSequence)+1), true
	}
	var lines []byte
	if t.LastSequence > sent {
		status := protocol.StatusComplete
		if t.Status != chat.TurnComplete {
			status = protocol.StatusError
		}
		lines = s.snapshotLine(lines, t.LastSequence, status, assistant, t.Usage, t.Error)
	}
	if d := t.Error; d != nil && (d.Code == protocol.CodeServerTimeout || d.Code == protocol.CodeRequestCancelled) && t.LastSequence+1 > sent {
		// The live stream's trailing diagnostic of a timeout or cancellation.
		lines = s.diagnosticLine(lines, *d, t.LastSequence+1)
	}
	return lines, true
}

// resumeCapability is the resume part of GET /capabilities.
type resumeCapability struct {
	Available bool `json:"available"`
	// Method and Path name the route; Parameter the query parameter that
	// carries the last sequence the client holds.
	Method    string `json:"method,omitempty"`
	Path      string `json:"path,omitempty"`
	Parameter string `json:"parameter,omitempty"`
	// PollIntervalMs is how often a resume reads the turn, and Cost what
	// one read costs.
	PollIntervalMs int64  `json:"pollIntervalMs,omitempty"`
	Cost           string `json:"cost,omitempty"`
}

// durableTurnsCapability is the durableTurns part of GET /capabilities.
type durableTurnsCapability struct {
	Available bool `json:"available"`
	// CheckpointIntervalMs bounds what a crash loses and how long a stop
	// takes to be seen.
	CheckpointIntervalMs int64 `json:"checkpointIntervalMs,omitempty"`
	// DisconnectStops says whether a client disconnect ends the turn
	// (false with checkpoints: the turn runs on for a resume).
	DisconnectStops bool `json:"disconnectStops"`
}

// resumeCapabilities describes resume and durable turns for opts: both
// unavailable, explicitly, with checkpoints off.
func resumeCapabilities(opts Options) (resumeCapability, durableTurnsCapability) {
	if opts.CheckpointInterval <= 0 {
		return resumeCapability{}, durableTurnsCapability{DisconnectStops: true}
	}
	return resumeCapability{
			Available: true, Method: http.MethodGet,
			Path:           "/sessions/{sessionId}/turns/{turnId}/stream",
			Parameter:      "after",
			PollIntervalMs: opts.ResumePollInterval.Milliseconds(),
			Cost:           "one consistent DynamoDB Query per poll",
		}, durableTurnsCapability{
			Available:            true,
			CheckpointIntervalMs: opts.CheckpointInterval.Milliseconds(),
		}
}
