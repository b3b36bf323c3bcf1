package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/clock"
	"github.com/turnstream/turnstream/pkg/definition"
	"github.com/turnstream/turnstream/pkg/httpedge"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/quota"
)

// Messages sent while a turn runs (docs/multitask.md). A submit that
// finds its session busy follows a multitask policy: reject (409
// SESSION_BUSY, what AgentsKit does), enqueue (stored as a queued turn,
// 202, run after the turns before it without another request), interrupt
// (the running turn stopped as POST /stop stops it, this one run in its
// place in this request's stream) or rollback (interrupt, and the stopped
// turn superseded).

// DefaultInterruptWait is how long an interrupt waits for the turn it
// stops to end before it answers 409 SESSION_BUSY (Config.InterruptWait):
// the stop bound, at most one checkpoint interval and a save.
const DefaultInterruptWait = 1500 * time.Millisecond

// Pacing of the queue's background work.
const (
	// interruptPoll is how often an interrupt tries to claim while the
	// turn it stopped ends.
	interruptPoll = 50 * time.Millisecond
	// nudgeInterval is the shortest time between two drains this process
	// starts for one session on a reader's behalf (a rejected submit, a
	// resume waiting for a queued turn).
	nudgeInterval = time.Second
	// dispatchTimeout bounds one Config.Dispatch call.
	dispatchTimeout = 10 * time.Second
	// drainGrace is how long a session stays idle with queued turns
	// waiting before a reader starts a drain: the releasing request's own
	// drain (on Lambda an asynchronous invocation) starts well within it.
	drainGrace = 2 * time.Second
)

// DrainRequest asks a turn function to run a session's queued turns
// (Engine.Drain); Config.Dispatch carries it to another invocation.
//
//	{"sessionId":"<SafeId>","notBefore":"<RFC 3339>"}
type DrainRequest struct {
	SessionID string `json:"sessionId"`
	// NotBefore is when the drain may start claiming (zero: at once). A
	// turn ended by an interrupt leaves its replacement this long to
	// claim the session first.
	NotBefore time.Time `json:"notBefore,omitzero"`
}

// parseMultitask reads api.MultitaskHeader: "" when absent, else a policy
// name; httpedge.ErrInvalidHeader for another value or a repeated header.
func parseMultitask(values []string) (string, error) {
	switch len(values) {
	case 0:
		return "", nil
	case 1:
	default:
		return "", fmt.Errorf("%w: %s repeated", httpedge.ErrInvalidHeader, api.MultitaskHeader)
	}
	v := strings.ToLower(strings.TrimSpace(values[0]))
	if !slices.Contains(definition.MultitaskPolicies, v) {
		return "", fmt.Errorf("%w: %s", httpedge.ErrInvalidHeader, api.MultitaskHeader)
	}
	return v, nil
}

// queue is the handler's multitask policies (docs/multitask.md): a busy
// session's submit enqueued, or interrupting its turn, and the drains that
// run queued turns once the session is free, in this process or through
// Config.Dispatch. It owns the rate limit of the drains this process
// starts.
type queue struct {
	h *handler
	// defaults is whether some definition's default policy is not
	// reject: a busy submit that names no policy then reads its
	// session's definition.
	defaults bool
	kicks    kicks // rate-limits the drains this process starts
}

// policyFor returns the policy of submission sub and, when it had to read
// it, its session (nil for a session that does not exist yet). A submit
// that names reject, or none while every definition defaults to reject,
// costs no request: the claim tells whether the session is busy; so does
// an AG-UI run (docs/agui.md: it has no answer but its event stream). Else the
// session is read, for its definition's policies (the default
// definition's for a new session). A named policy the definition or the
// deployment does not allow is httpedge.ErrMultitaskNotAllowed; a default
// the deployment cannot serve falls back to reject.
func (qu *queue) policyFor(ctx context.Context, sub *submission) (string, *chat.Session, error) {
	h := qu.h
	if sub.decision != nil || sub.agui || sub.multitask == definition.MultitaskReject || sub.multitask == "" && !qu.defaults {
		return definition.MultitaskReject, nil, nil
	}
	def := h.agents.defaultDefinition()
	sess, err := h.opts.Store.GetSession(ctx, sub.sessionID, sub.principal)
	switch {
	case errors.Is(err, chat.ErrSessionNotFound):
		sess = nil // the claim creates it, with the default definition
	case err != nil:
		return "", nil, err
	default:
		ag, err := h.agents.agentFor(sess.DefinitionID)
		if err != nil {
			return "", nil, err
		}
		def = ag.def
	}
	dflt, allowed := qu.policies(def)
	switch {
	case sub.multitask == "":
		return dflt, sess, nil
	case slices.Contains(allowed, sub.multitask):
		return sub.multitask, sess, nil
	}
	return "", nil, httpedge.ErrMultitaskNotAllowed
}

// policies returns the default and allowed policies of def as this
// deployment serves them: enqueue, interrupt and rollback need durable
// turns (a queued turn is followed through resume; an interrupt needs
// its stop seen at a checkpoint), so without checkpoints only reject is.
func (qu *queue) policies(def definition.Definition) (string, []string) {
	h := qu.h
	dflt, allowed := def.Multitask.Policies()
	if h.opts.CheckpointInterval <= 0 {
		return definition.MultitaskReject, []string{definition.MultitaskReject}
	}
	return dflt, allowed
}

// busyFor reports whether sess is busy for a queued turn: a lease held,
// turns waiting before it, or a confirmation waiting for its decision.
func busyFor(sess *chat.Session, now time.Time) bool {
	return sess.ActiveTurn != nil || len(chat.Waiting(sess.Queue)) > 0 || chat.PendingConfirmation(sess.Confirmations, now)
}

// enqueue stores sub as a queued turn and answers 202, or the store's
// error (409 SESSION_QUEUE_FULL, 422 TURN_ID_REUSED, ...). A second
// enqueue of the same turn id and input answers as the first. It then
// starts a drain when the session was idle (chat.Enqueued.Idle): a busy
// session's release starts it.
func (qu *queue) enqueue(ctx context.Context, w http.ResponseWriter, log *slog.Logger, sub *submission, quotas chat.Quotas) {
	h := qu.h
	// Checked against its quotas now, and counted towards the rate from
	// now; it holds no concurrency slot of its own (docs/quotas.md).
	if _, err := h.quotas.check(ctx, log, sub, quotas, sub.startedAt, sub.startedAt, quota.RateOnly); err != nil {
		reject(ctx, w, log, "quota", err)
		return
	}
	q, err := h.opts.Store.EnqueueTurn(ctx, chat.EnqueueRequest{
		SessionID: sub.sessionID, TurnID: sub.turnID, Principal: sub.principal, InputHash: sub.inputHash,
		Lineage: sub.lineage, Message: userMessage(sub.turnID, sub.input, protocol.FormatTime(h.clock.Now()), attachmentParts(sub.files)),
		TTL: h.opts.QueuedTurnTTL, Max: h.opts.MaxQueuedTurns,
	})
	if err != nil {
		reject(ctx, w, log, "enqueue", err)
		return
	}
	log.Info("turn queued", "position", q.Position, "queueSeq", q.Entry.Seq, "idle", q.Idle)
	body, err := json.Marshal(api.Queued{SessionID: sub.sessionID, TurnID: sub.turnID, Status: api.QueuedStatus, Position: q.Position,
		StreamURL: api.StreamURL(sub.sessionID, sub.turnID)})
	if err != nil {
		reject(ctx, w, log, "enqueue", err)
		return
	}
	httpedge.WriteJSON(w, http.StatusAccepted, append(body, '\n'))
	if q.Idle {
		qu.nudge(ctx, sub.sessionID) // no release will start the queue
	}
}

// interrupt claims the session for sub in place of the turn that keeps it
// busy: the running turn is stopped (chat.Store.RequestStop, as POST
// /stop), and the claim is tried until that turn has ended, within
// InterruptWait; a turn whose tool call waits for approval is replaced at
// once (its confirmation expires at this turn's release, the tool never
// runs). sess is the session as policyFor read it (nil: none yet). Every
// claim it tries is conditional on the session's next ordinal as sess
// shows it (chat.ClaimRequest.IfNextOrdinal): the turn it stopped (or
// none) still the session's latest. Once another turn was claimed
// (chat.ErrSessionMoved), the answer is a plain submit's: one plain
// claim, and no turn replaced, so a rollback supersedes only the turn it
// stopped. It returns the claim, the time taken just before it, and the
// replaced turn (nil when none: a session that was free, or that moved
// on), or the claim's error, chat.ErrSessionBusy when the running turn
// did not end in time.
func (qu *queue) interrupt(ctx context.Context, log *slog.Logger, sub *submission, sess *chat.Session, deadline time.Time) (*chat.Claim, time.Time, *chat.Turn, error) {
	h := qu.h
	var replaced *chat.Turn
	next := int64(1) // the next ordinal of a session not created yet
	if sess != nil {
		next = sess.NextOrdinal
		if l := sess.ActiveTurn; l != nil {
			replaced = &chat.Turn{SessionID: sub.sessionID, TurnID: l.TurnID, Ordinal: l.Ordinal}
			if err := h.opts.Store.RequestStop(ctx, sub.sessionID, l.TurnID, sub.principal); err != nil && !errors.Is(err, chat.ErrTurnNotActive) {
				return nil, time.Time{}, nil, err
			}
			log.Info("running turn stopped by a submit", "stoppedTurnId", l.TurnID)
		} else if cf := pendingOf(sess, h.clock.Now()); cf != nil {
			t, err := h.opts.Store.FindTurn(ctx, sub.sessionID, cf.TurnID, sub.principal)
			if err != nil && !errors.Is(err, chat.ErrTurnNotFound) {
				return nil, time.Time{}, nil, err
			}
			replaced = t
		}
	}
	until := h.clock.Now().Add(h.opts.InterruptWait)
	for {
		claimedAt := h.clock.Now()
		claim, err := h.claim(ctx, log, sub, deadline, next)
		if errors.Is(err, chat.ErrSessionMoved) {
			// Another turn took the session after the one this request
			// found: it was not stopped, and must be neither waited for
			// nor superseded.
			log.Info("session moved on before the interrupt claimed: claiming as a plain submit", "nextOrdinal", next)
			claimedAt = h.clock.Now()
			claim, err = h.claim(ctx, log, sub, deadline, 0)
			if errors.Is(err, chat.ErrSessionQueued) {
				qu.nudge(ctx, sub.sessionID) // free, with queued turns that have not started
			}
			return claim, claimedAt, nil, err
		}
		if err == nil || !errors.Is(err, chat.ErrSessionBusy) || !h.clock.Now().Before(until) {
			return claim, claimedAt, replaced, err
		}
		if !clock.Sleep(ctx, h.clock, interruptPoll) {
			return nil, time.Time{}, nil, ctx.Err()
		}
	}
}

// stoppedByRollback returns the turn a rollback supersedes: replaced, the
// turn that waited for a decision, or the turn that was running when the
// rollback stopped it, once its record shows the stop (or its death) ended
// it: interrupted, or lost. A running turn that completed or failed on its
// own before the stop reached it was not stopped: its client was shown that
// end, which never changes, so it stays in history and nil is returned (the
// new turn follows it). So does a turn whose record cannot be read (one
// request, FindTurn): a rollback never hides what it cannot see.
func (qu *queue) stoppedByRollback(ctx context.Context, log *slog.Logger, sub *submission, replaced *chat.Turn) *chat.Turn {
	h := qu.h
	if replaced.Status != "" {
		return replaced // found waiting for a decision, not running
	}
	t, err := h.opts.Store.FindTurn(ctx, sub.sessionID, replaced.TurnID, sub.principal)
	switch {
	case err != nil:
		log.Warn("rollback: the stopped turn's record could not be read; not superseded", "stoppedTurnId", replaced.TurnID, "err", err)
		return nil
	case t.Status == chat.TurnInterrupted, t.Status == chat.TurnError && t.Error != nil && t.Error.Code == protocol.CodeTurnLost:
		return t
	default:
		log.Info("rollback: the running turn ended on its own before the stop; not superseded", "stoppedTurnId", replaced.TurnID, "status", t.Status)
		return nil
	}
}

// pendingOf returns a confirmation of sess that waits for a decision at
// now, or nil.
func pendingOf(sess *chat.Session, now time.Time) *chat.Confirmation {
	for i := range sess.Confirmations {
		if sess.Confirmations[i].VisibleStatus(now) == chat.ConfirmationPending {
			return &sess.Confirmations[i]
		}
	}
	return nil
}

// kicks remembers when this process last started a drain of each
// session on a reader's behalf (nudge).
type kicks struct {
	mu   sync.Mutex
	last map[string]time.Time
}

// due reports whether a nudge of sessionID may start a drain now, and
// records it.
func (k *kicks) due(sessionID string, now time.Time) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.last == nil {
		k.last = make(map[string]time.Time)
	}
	if t, ok := k.last[sessionID]; ok && now.Sub(t) < nudgeInterval {
		return false
	}
	if len(k.last) >= 1024 {
		for id, t := range k.last {
			if now.Sub(t) >= nudgeInterval {
				delete(k.last, id)
			}
		}
	}
	k.last[sessionID] = now
	return true
}

// nudge starts a drain of the session (kick) unless this process started
// one in the last nudgeInterval: readers that find queued turns waiting
// on a free session (an enqueue, a rejected submit, a waiting resume)
// call it.
func (qu *queue) nudge(ctx context.Context, sessionID string) {
	h := qu.h
	if qu.kicks.due(sessionID, h.clock.Now()) {
		qu.kick(ctx, DrainRequest{SessionID: sessionID})
	}
}

// kick starts a drain of the session: through Config.Dispatch, waiting
// for its answer (within dispatchTimeout, whatever ctx's cancellation),
// since on Lambda nothing runs once the invocation returns; without
// Dispatch, in a goroutine of this process.
func (qu *queue) kick(ctx context.Context, d DrainRequest) {
	h := qu.h
	if h.opts.Dispatch == nil {
		go qu.drain(context.Background(), d, false)
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dispatchTimeout)
	defer cancel()
	if err := h.opts.Dispatch(ctx, d); err != nil {
		h.requestLogger(ctx).Error("drain dispatch failed", "sessionId", d.SessionID, "err", err)
	}
}

// afterRelease starts a drain when the session a turn released holds
// queued turns that may start (no confirmation waits for a decision): at
// once, or after InterruptWait when the turn was stopped, which leaves an
// interrupt's replacement the session first.
func (qu *queue) afterRelease(ctx context.Context, sess *chat.Session, stopped bool) {
	h := qu.h
	if sess == nil || !chat.NeedsDrain(sess.Queue) || chat.PendingConfirmation(sess.Confirmations, h.clock.Now()) {
		return
	}
	d := DrainRequest{SessionID: sess.ID}
	if stopped {
		d.NotBefore = h.clock.Now().Add(h.opts.InterruptWait)
	}
	qu.kick(ctx, d)
}

// Drain runs the session's queued turns one at a time, in queue order,
// while the session is free (docs/multitask.md): it waits until
// d.NotBefore, then claims the oldest waiting turn
// (chat.Store.ClaimQueued: of concurrent drainers exactly one starts each
// queued turn) and runs it as a submitted turn runs, acknowledged and
// checkpointed, its stream read by whoever resumes it. It returns when no
// turn waits (as the last turn's release shows), the session is busy
// (the turn that holds it starts the next drain when it ends), ctx ends,
// or ctx's deadline leaves no room for another whole turn (TurnTimeout
// and CleanupReserve): then it starts the next drain (Config.Dispatch)
// and returns. The first turn of a
// drain runs whatever the room, with the deadline ctx allows. The turn
// function calls Drain for the invocations Dispatch starts; without
// Dispatch, the handler drains in a goroutine of its own.
func (e *Engine) Drain(ctx context.Context, d DrainRequest) {
	e.queue.drain(ctx, d, true)
}

// drain is Drain; dispatched says whether further drains go through
// Config.Dispatch (a drain invocation) or stay in this process.
func (qu *queue) drain(ctx context.Context, d DrainRequest, dispatched bool) {
	h := qu.h
	log := h.requestLogger(ctx).With("sessionId", d.SessionID)
	if !clock.Sleep(ctx, h.clock, clock.Until(h.clock, d.NotBefore)) {
		return
	}
	for first := true; ctx.Err() == nil; first = false {
		if left, ok := contextLeft(ctx); ok && !first && left < h.opts.TurnTimeout+h.opts.CleanupReserve {
			log.Info("drain: no room for another turn in this invocation")
			if dispatched && h.opts.Dispatch != nil {
				qu.kick(ctx, DrainRequest{SessionID: d.SessionID})
			}
			return
		}
		deadline := h.deadlineOf(ctx)
		claimedAt := h.clock.Now()
		claim, q, err := h.opts.Store.ClaimQueued(ctx, d.SessionID, h.leaseDuration(deadline))
		switch {
		case errors.Is(err, chat.ErrNothingQueued), errors.Is(err, chat.ErrSessionBusy):
			return
		case err != nil:
			log.Error("drain: claim a queued turn", "err", err)
			return
		}
		released, stopped := qu.runQueued(ctx, log.With("turnId", q.TurnID), claim, q, deadline, claimedAt)
		if released == nil || !chat.NeedsDrain(released.Queue) {
			// Nothing left, or the release failed: the lease then expires
			// and a reader that finds turns waiting starts a drain.
			return
		}
		if stopped {
			// Stopped, perhaps by an interrupt: its replacement claims first.
			if !clock.Sleep(ctx, h.clock, h.opts.InterruptWait) {
				return
			}
		}
	}
}

// runQueued runs queued turn q under claim c with no client attached:
// its lines go nowhere, its checkpoints to its resumers. Its user message
// is the one stored at enqueue (created then). It returns the session as
// the turn's release left it (nil when it was not released) and whether
// the turn was stopped.
func (qu *queue) runQueued(ctx context.Context, log *slog.Logger, c *chat.Claim, q *chat.QueuedTurn, deadline, claimedAt time.Time) (released *chat.Session, stopped bool) {
	h := qu.h
	log.Info("queued turn started", "ordinal", c.Lease.Ordinal, "waitedMs", claimedAt.Sub(q.QueuedAt).Milliseconds())
	sub := &submission{principal: q.Principal, scope: scopeSession, sessionID: q.SessionID, turnID: q.TurnID,
		input: q.Message.Content, lineage: q.Lineage, inputHash: q.InputHash}
	if sub.lineage.Operation == "" {
		sub.lineage.Operation = protocol.OperationSubmit
	}
	runCtx, cancel := untilContext(ctx, h.clock, deadline, errTurnDeadline)
	defer cancel()
	t, stop := h.newRun(runCtx, ctx, discardWriter{header: http.Header{}}, deadline, log, sub, c, claimedAt)
	defer stop()
	t.user = q.Message
	// Its token quotas were checked at its enqueue, maybe long ago: they
	// are checked again before each of its model calls, the first
	// included (quota.go).
	if quotas, err := h.quotas.of(runCtx, sub, &c.Session); err == nil && !quotas.IsZero() {
		t.budget.quota = quota.Unchecked(quotas)
	}
	parent, err := h.parentTurn(runCtx, sub)
	if err != nil {
		t.failBeforeStream("lineage", err)
		return t.released, false
	}
	t.serve(parent)
	return t.released, t.stopped
}

// discardWriter is the response of a turn no client reads (a queued
// turn): every write succeeds and goes nowhere.
type discardWriter struct{ header http.Header }

func (w discardWriter) Header() http.Header       { return w.header }
func (discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (discardWriter) WriteHeader(int)             {}

// multitaskCapability describes the policies h serves.
func (qu *queue) multitaskCapability() multitaskCapability {
	h := qu.h
	c := multitaskCapability{Header: api.MultitaskHeader, MaxQueuedTurns: h.opts.MaxQueuedTurns,
		QueuedTurnTTLMs: h.opts.QueuedTurnTTL.Milliseconds(), InterruptWaitMs: h.opts.InterruptWait.Milliseconds(),
		Doc: "docs/multitask.md"}
	c.Default, _ = qu.policies(h.agents.defaultDefinition())
	union := map[string]bool{}
	for id, ag := range h.agents.byID {
		dflt, allowed := qu.policies(ag.def)
		for _, p := range allowed {
			union[p] = true
		}
		if id != simpleID {
			if c.Definitions == nil {
				c.Definitions = map[string]definitionPolicies{}
			}
			c.Definitions[id] = definitionPolicies{Default: dflt, Policies: allowed}
		}
	}
	for _, p := range definition.MultitaskPolicies {
		if union[p] {
			c.Policies = append(c.Policies, p)
		}
	}
	c.Available = len(c.Policies) > 1
	return c
}
