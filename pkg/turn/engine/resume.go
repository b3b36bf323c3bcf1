package engine

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/clock"
	"github.com/turnstream/turnstream/pkg/httpedge"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// acceptResume runs the checks of a resume before any storage request:
// method GET (405), authentication on the headers (401/403), the snapshot
// scope header (400 REQUEST_INVALID_HEADER) and the after query (400
// REQUEST_INVALID_QUERY). On failure it returns the step that failed and
// an error for httpedge.Diagnose.
func (rs *resumes) acceptResume(ctx context.Context, w http.ResponseWriter, r *http.Request) (p chat.Principal, sc scope, compact bool, after int64, step string, err error) {
	h := rs.h
	if err := httpedge.RequireMethod(w, r, http.MethodGet); err != nil {
		return p, sc, false, 0, "method", err
	}
	if p, err = h.authenticate(ctx, r); err != nil {
		return p, sc, false, 0, "authenticate", err
	}
	if sc, err = parseScope(r.Header.Values(api.SnapshotScopeHeader)); err != nil {
		return p, sc, false, 0, "scope", err
	}
	compact, ok := parseStreamMode(r.Header.Values(api.StreamModeHeader))
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
	vals, present := q[api.ResumeAfterParameter]
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
// above after), then each newer checkpoint as it lands, ending as the turn
// ended, whatever after: the terminal snapshot (and, after a timeout or a
// cancellation, the same trailing diagnostic as the live stream), or for
// a turn the table decided lost its record as a terminal snapshot (its
// last checkpoint, closed, with TURN_LOST) at its own terminal sequence.
// Sequences are the live stream's, so one snapshot cursor takes live and
// resumed lines and never applies one twice; a resumer may see gaps. A
// resume never runs the model, and closing it never stops the turn. Its
// reads decide a turn whose lease expired (chat.Store.PollTurn), so a
// resume learns the fate of a dead turn within one poll after its lease
// expires. The resumes of one turn in this process share one poller, each
// poll reading only what is newer (follows). The stream ends by the
// request's deadline at the latest, with SERVER_TIMEOUT at sequence 0 (a
// sequence no line of a turn carries: this is no state of the turn): the
// client resumes again. With api.StreamModeHeader compact, checkpoints that
// only add text after the first line go out as append lines
// (docs/compact.md); the first line and the terminal one are complete
// snapshots.
func (rs *resumes) serveResume(w http.ResponseWriter, r *http.Request, sessionID, turnID string) {
	h := rs.h
	ctx, cancel, _ := h.deadline(r)
	defer cancel()
	log := h.requestLogger(ctx).With("sessionId", sessionID, "turnId", turnID)
	principal, sc, compact, after, step, err := rs.acceptResume(ctx, w, r)
	if err != nil {
		reject(ctx, w, log, step, err)
		return
	}
	s := bind(&run{h: h, log: log, sessionID: sessionID, turnID: turnID, scope: sc})
	var cr *compactResume // nil: full snapshots
	if compact {
		cr = &compactResume{}
	}
	streaming := false
	start := func() {
		hd := w.Header()
		(&ndjsonStream{t: s, compact: compact}).header(hd)
		hd.Set("Cache-Control", "no-store")
		hd.Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(http.StatusOK)
		s.w, s.out, streaming = w, newStreamOut(w, log), true
	}
	// fail ends the resume with err: a JSON error before the stream, a
	// diagnostic line (sequence 0) once it started.
	fail := func(step string, err error) {
		if !streaming {
			reject(ctx, w, log, step, err)
			return
		}
		d := httpedge.Diagnose(ctx, err)
		logRejected(log, step, d, err)
		s.out.write(s.lines.diagnosticLine(nil, d, 0))
	}
	turn, queued, err := rs.findResumed(ctx, sessionID, turnID, principal)
	if err == nil && queued {
		// Queued, not started: the stream opens and stays silent until
		// the turn starts (docs/multitask.md).
		start()
		_ = http.NewResponseController(w).Flush() // the client learns the stream is open
		log.Info("resume of a queued turn: waiting for it to start")
		turn, err = rs.awaitQueued(ctx, sessionID, turnID, principal)
	}
	if err != nil {
		fail("resume", err)
		return
	}
	s.lineage = turn.Lineage
	if err := rs.resumeContext(ctx, s, principal, turn); err != nil {
		fail("resume context", err)
		return
	}
	if !streaming {
		start()
	}
	log.Info("resume", "after", after, "status", string(turn.Status), "sequence", turn.LastSequence)

	var f *follow
	sent := after
	for {
		lines, done := s.resumeLines(turn, sent, cr)
		if len(lines) > 0 && !s.out.write(lines) {
			return // the resumer is gone; the turn goes on
		}
		if done {
			return
		}
		sent = max(sent, turn.LastSequence)
		if f == nil {
			f = rs.follows.join(sessionID, turn, principal)
			defer rs.follows.leave(f)
		}
		next, err := f.next(ctx, turn)
		switch {
		case ctx.Err() != nil:
			d, _ := httpedge.ContextDiagnostic(ctx)
			s.out.write(s.lines.diagnosticLine(nil, d, 0))
			return
		case err != nil:
			// Gone (superseded or deleted) while followed.
			s.out.write(s.lines.diagnosticLine(nil, protocol.NewDiagnostic(protocol.CodeTurnNotFound), 0))
			return
		}
		turn = next
	}
}

// findResumed returns the turn a resume follows: its record, or for a
// turn claimed but not acknowledged yet (its first moments) a running
// turn from the session's lease, followed until its first checkpoint
// lands or its fate is decided; queued true (and no turn) for a queued
// turn that has not started. chat.ErrTurnNotFound for none of these: the
// record is read again after the session, so that a turn leaving the
// queue or its lease between the reads is found (three reads then).
func (rs *resumes) findResumed(ctx context.Context, sessionID, turnID string, p chat.Principal) (*chat.Turn, bool, error) {
	h := rs.h
	turn, err := h.opts.Store.FindTurn(ctx, sessionID, turnID, p)
	if !errors.Is(err, chat.ErrTurnNotFound) {
		return turn, false, err
	}
	sess, serr := h.opts.Store.GetSession(ctx, sessionID, p)
	if serr != nil {
		return nil, false, err
	}
	if l := sess.ActiveTurn; l != nil && l.TurnID == turnID {
		return leasedTurn(sessionID, l), false, nil
	}
	if queuedIn(sess, turnID) {
		rs.nudgeIfFree(ctx, sess)
		return nil, true, nil
	}
	// Neither leased nor queued: it may have left the queue (recorded as
	// never run) or its lease (saved and released) between the two reads.
	// A turn's record is written before it leaves either, so a second
	// read of the record tells.
	turn, err = h.opts.Store.FindTurn(ctx, sessionID, turnID, p)
	return turn, false, err
}

// leasedTurn is the running turn of lease l, before its first checkpoint.
func leasedTurn(sessionID string, l *chat.Lease) *chat.Turn {
	return &chat.Turn{SessionID: sessionID, TurnID: l.TurnID, Ordinal: l.Ordinal, Status: chat.TurnRunning, Lineage: l.Lineage}
}

// queuedIn reports whether turnID is in sess's queue, started or not.
func queuedIn(sess *chat.Session, turnID string) bool {
	return slices.ContainsFunc(sess.Queue, func(e chat.QueueEntry) bool { return e.TurnID == turnID })
}

// nudgeIfFree starts a drain of sess when its queue holds work
// (chat.NeedsDrain) that nothing else will start: the session idle
// (chat.IdleAt) for drainGrace already, which the drain the last
// release started would not have left it.
func (rs *resumes) nudgeIfFree(ctx context.Context, sess *chat.Session) {
	h := rs.h
	now := h.clock.Now()
	if chat.NeedsDrain(sess.Queue) && chat.IdleAt(sess, now) && now.Sub(sess.UpdatedAt) >= drainGrace {
		h.queue.nudge(ctx, sess.ID)
	}
}

// awaitQueued waits, sending nothing, until queued turn turnID starts,
// reading the session every ResumePollInterval, and returns the turn to
// follow: running (from its lease, or its record once acknowledged), or
// terminal (a turn that finished between two reads, or one recorded as
// never run: expired or cancelled). While the session is free and turns
// wait, it starts a drain (nudge): a queued turn never waits for a
// process that died before starting it. It returns ctx's error when ctx
// ends first, chat.ErrTurnNotFound when the turn left the queue without
// a record.
func (rs *resumes) awaitQueued(ctx context.Context, sessionID, turnID string, p chat.Principal) (*chat.Turn, error) {
	h := rs.h
	for {
		if !clock.Sleep(ctx, h.clock, h.opts.ResumePollInterval) {
			return nil, ctx.Err()
		}
		sess, err := h.opts.Store.GetSession(ctx, sessionID, p)
		if err != nil {
			return nil, err
		}
		switch l := sess.ActiveTurn; {
		case l != nil && l.TurnID == turnID:
			return leasedTurn(sessionID, l), nil
		case queuedIn(sess, turnID):
			rs.nudgeIfFree(ctx, sess)
			continue
		}
		return h.opts.Store.FindTurn(ctx, sessionID, turnID, p)
	}
}

// resumable returns the turn a resume of turnID follows, read as
// principal (findResumed): a queued turn that has not started is
// chat.ErrTurnNotFound here (the AG-UI resume does not wait for one).
func (rs *resumes) resumable(ctx context.Context, sessionID, turnID string, principal chat.Principal) (*chat.Turn, error) {
	turn, queued, err := rs.findResumed(ctx, sessionID, turnID, principal)
	if err == nil && queued {
		return nil, chat.ErrTurnNotFound
	}
	return turn, err
}

// resumeContext loads into s, a resume of turn in session scope, the same
// context as the live turn loaded, under the session's definition and
// budget, so that its snapshots carry the same messages.
func (rs *resumes) resumeContext(ctx context.Context, s *run, principal chat.Principal, turn *chat.Turn) error {
	h := rs.h
	if s.scope != scopeSession {
		return nil
	}
	sess, err := h.opts.Store.GetSession(ctx, s.sessionID, principal)
	if err != nil {
		return err
	}
	ag, err := h.agents.agentFor(sess.DefinitionID)
	if err != nil {
		return err
	}
	return s.loadContext(ctx, ag.def, turn.Ordinal, sess.Owner)
}

// resumeLines returns the lines of t newer than sequence sent, and whether
// the stream ends with them: a terminal turn's lines end it whatever sent
// is (recordLines). With cr (a compact resume) checkpoints that only add
// text are append lines.
func (s *run) resumeLines(t *chat.Turn, sent int64, cr *compactResume) ([]byte, bool) {
	if t.Status != chat.TurnRunning {
		if len(t.Messages) > 0 {
			s.user = t.Messages[0]
		}
		return s.fate.recordLines(t), true
	}
	if len(t.Messages) == 0 || t.LastSequence <= sent {
		return nil, false // not acknowledged yet, or nothing newer
	}
	s.user = t.Messages[0]
	assistant := t.Messages[len(t.Messages)-1]
	if cr != nil {
		// The first line is a complete snapshot; later checkpoints that
		// only add text are append lines.
		return cr.line(s, t.LastSequence, assistant, t.Usage), false
	}
	return s.lines.snapshotLine(nil, t.LastSequence, protocol.StatusStreaming, assistant, t.Usage, nil), false
}

// follows are the turns this process's resumes follow, each polled by
// one goroutine however many resumes share it (on Lambda an instance
// serves one request at a time, so each resume polls for itself). Safe
// for concurrent use.
type follows struct {
	h  *handler
	mu sync.Mutex
	m  map[followKey]*follow
}

type followKey struct {
	sessionID string
	ordinal   int64
}

// follow is one followed turn: the newest state its poller read.
type follow struct {
	key  followKey
	subs int // the resumes following it; the poller stops at 0
	stop context.CancelFunc

	mu     sync.Mutex
	latest *chat.Turn
	err    error
	// changed is closed, and replaced, at each new state or error.
	changed chan struct{}
}

// resumes serves the resume routes: a turn read where it is (a running
// turn followed through the checkpoints, a queued one awaited, a finished
// one from its record) and streamed in the submit's encodings. It owns
// the followers that share one poller per turn in this process.
type resumes struct {
	h       *handler
	follows follows
}

// init sets the handler the resumes serve for.
func (rs *resumes) init(h *handler) {
	rs.h = h
	rs.follows.init(h)
}

func (fs *follows) init(h *handler) { fs.h, fs.m = h, map[followKey]*follow{} }

// join returns the follow of the turn at, starting its poller as p (who
// was checked to own the session) when it has none.
func (fs *follows) join(sessionID string, at *chat.Turn, p chat.Principal) *follow {
	key := followKey{sessionID, at.Ordinal}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if f := fs.m[key]; f != nil {
		f.subs++
		return f
	}
	// The poller outlives the request that started it while others
	// follow: detached, stopped when the last one leaves.
	ctx, stop := context.WithCancel(context.Background())
	f := &follow{key: key, subs: 1, stop: stop, latest: at, changed: make(chan struct{})}
	fs.m[key] = f
	go fs.poll(ctx, f, p)
	return f
}

// leave ends one resume's following of f.
func (fs *follows) leave(f *follow) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if f.subs--; f.subs == 0 {
		delete(fs.m, f.key)
		f.stop()
	}
}

// poll reads the turn of f every ResumePollInterval (PollTurn, from the
// newest state it holds) until f is left or the turn ends.
func (fs *follows) poll(ctx context.Context, f *follow, p chat.Principal) {
	tick := fs.h.clock.NewTicker(fs.h.opts.ResumePollInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C():
		}
		f.mu.Lock()
		since := f.latest
		f.mu.Unlock()
		rctx, cancel := context.WithTimeout(ctx, max(fs.h.opts.ResumePollInterval*4, time.Second))
		next, err := fs.h.opts.Store.PollTurn(rctx, f.key.sessionID, f.key.ordinal, p, since)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err == nil:
			if next.Status == since.Status && next.LastSequence == since.LastSequence && next.Head == since.Head && len(next.Messages) == len(since.Messages) {
				continue // nothing new for a resumer
			}
			f.publish(next, nil)
			if next.Status != chat.TurnRunning {
				return
			}
		case errors.Is(err, chat.ErrTurnNotFound) && since.Status == chat.TurnRunning && len(since.Messages) == 0:
			// Its first checkpoint has not landed yet.
		case errors.Is(err, chat.ErrSessionNotFound), errors.Is(err, chat.ErrTurnNotFound):
			f.publish(nil, err)
			return
		default:
			fs.h.log.Warn("resume poll failed", "sessionId", f.key.sessionID, "err", err)
		}
	}
}

// publish records a new state (or the error that ends following) and
// wakes the resumes.
func (f *follow) publish(t *chat.Turn, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t != nil {
		f.latest = t
	}
	f.err = err
	close(f.changed)
	f.changed = make(chan struct{})
}

// next waits for a state of f newer than have (by status, sequence or
// checkpoint head) or the error that ends following, until ctx ends.
func (f *follow) next(ctx context.Context, have *chat.Turn) (*chat.Turn, error) {
	for {
		f.mu.Lock()
		latest, err, changed := f.latest, f.err, f.changed
		f.mu.Unlock()
		if err != nil {
			return nil, err
		}
		if latest != have && (latest.Status != have.Status || latest.LastSequence != have.LastSequence || latest.Head != have.Head || len(latest.Messages) != len(have.Messages)) {
			return latest, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-changed:
		}
	}
}

// resumeCapabilities describes resume and durable turns for opts: both
// unavailable, explicitly, with checkpoints off.
func resumeCapabilities(opts Config) (resumeCapability, durableTurnsCapability) {
	if opts.CheckpointInterval <= 0 {
		return resumeCapability{}, durableTurnsCapability{DisconnectStops: true}
	}
	return resumeCapability{
			Available: true, Method: http.MethodGet,
			Path:           api.ResumePath,
			Parameter:      api.ResumeAfterParameter,
			PollIntervalMs: opts.ResumePollInterval.Milliseconds(),
			Cost:           "one consistent DynamoDB BatchGetItem per poll, and one Query of the newer checkpoints when there are some",
		}, durableTurnsCapability{
			Available:                true,
			CheckpointIntervalMs:     opts.CheckpointInterval.Milliseconds(),
			CheckpointMinChangeBytes: opts.CheckpointMinChange,
		}
}
