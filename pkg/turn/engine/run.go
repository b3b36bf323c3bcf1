package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/clock"
	"github.com/turnstream/turnstream/pkg/definition"
	"github.com/turnstream/turnstream/pkg/httpedge"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// run is one claimed turn, from the claim to the end of its response.
type run struct {
	h        *handler
	agent    *agent // the definition, model and tools of the turn
	w        http.ResponseWriter
	reqCtx   context.Context // the request's own context: parent of the cleanup contexts
	ctx      context.Context // reqCtx under the request deadline
	deadline time.Time
	log      *slog.Logger

	claim     *chat.Claim
	principal chat.Principal // the submitter (its admission is given back with a withdrawn claim)
	files     []attachedFile // the attachments the submit named, read (attachments.go)
	// withdrawable is set for a submitted turn whose claim decided no
	// confirmation, superseded nothing and has no queued turn waiting
	// behind it: a failed acknowledgment withdraws it, leaving the turn id
	// unspent (unacknowledged).
	withdrawable bool
	sessionID    string
	turnID       string
	lineage      protocol.Lineage
	inputHash    string
	// siblings is the sibling group the turn joined by superseding its
	// lineage's parent (docs/branches.md), nil when it has none.
	siblings *chat.Siblings
	scope    scope
	// enc encodes the turn's states on its 200 stream: NDJSON snapshots,
	// full or compact (ndjsonStream), or AG-UI events (aguiStreamer).
	enc       streamEncoder
	createdAt string // the claim time, the createdAt of the turn's messages
	startedAt time.Time
	user      protocol.Message
	// context holds the visible earlier turns' messages, oldest first:
	// the model's context, and the head of every snapshot in scopeSession.
	context []protocol.Message
	// turnStarts holds the index in context of each earlier turn's first
	// message, so snapshots can drop the oldest whole turns (fit).
	turnStarts []int
	// omitted is true when the context budget left older turns out.
	omitted bool
	// dropped is how many of the oldest context turns session-scope
	// snapshots leave out to stay within the record limits; it only grows.
	dropped atomic.Int64

	state state

	// The turn's parts, each with one job: the response body and the
	// writer goroutine's channels (writer.go), the sequences (sequence.go),
	// the proof that the lease still holds (lease.go), the states kept for
	// checkpoints (sequence.go) and the open model stream (loop.go).
	out   *streamOut
	seqs  sequencer
	lease leaseProof
	live  *liveStates
	model modelStream

	loop loopLog // the model-tool loop's tool call ids and tool rounds
	// reasoning holds the reasoning blocks of the turn's model calls, sent
	// back on its later calls (reasoning.go).
	reasoning reasoningLog
	// tools are the tools the turn offers (listTools, at the start of
	// runModel: only the model's goroutine uses them).
	tools turnTools

	approvals approvals // confirmations asked for and decided (approvals.go)

	// released is the session as the turn's release left it (nil when it
	// was not released), and stopped whether the turn ended stopped: what
	// drainAfter starts the queued turns from.
	released *chat.Session
	stopped  bool

	// trace is the hooks the turn's steps call (trace.go): its metrics
	// and spans; set by newRun.
	trace *Trace
	// meter adds up what the turn uses (chat.Usage): its store requests
	// (its contexts carry it), its model and tool calls and tokens
	// (loop.go); the record's Metered, the ledger's figures.
	meter *chat.Meter
	// modelCtx is the model goroutine's context: its cause says whether
	// the wall time budget ended it (errWallTime).
	modelCtx context.Context

	// The run's parts, each a group of its steps with one job (bind
	// connects them to the run; the state they read is still the run's):
	sup     supervisor  // the control loop: lease renewals, checkpoints, the end (supervisor.go)
	lines   lineEncoder // the NDJSON lines of snapshots and diagnostics (writer.go)
	budget  budget      // its limits and quotas at its steps, and its count in the ledger (quota.go)
	fate    fate        // its end: the terminal record and the lines that show it (fate.go)
	cleanup cleanup     // after the end: save, count, release or abandon, in the cleanup reserve (cleanup.go)
}

// bind connects the parts of t to it and returns t.
func bind(t *run) *run {
	t.sup.t, t.lines.t, t.approvals.t = t, t, t
	t.budget.t, t.fate.t, t.cleanup.t = t, t, t
	return t
}

// drainAfter starts the session's queued turns after the turn's response
// ended (afterRelease), when it released a session where turns wait.
// Called by the request's goroutine before it returns, so that on Lambda
// the dispatch happens inside the invocation.
func (t *run) drainAfter() {
	t.h.queue.afterRelease(t.reqCtx, t.released, t.stopped)
}

// ending is how a turn ended, decided once by the supervisor.
type ending struct {
	status chat.TurnStatus
	// diag is the turn's error (stored, and the terminal snapshot's
	// payload.error); nil when the turn completed.
	diag *protocol.Diagnostic
	// trailer is a stream diagnostic written after the terminal snapshot
	// (SERVER_TIMEOUT, REQUEST_CANCELLED); nil otherwise.
	trailer *protocol.Diagnostic
	// errorCode is the provider's error code kept in the assistant
	// message's metadata (docs/design.md#snapshots); empty otherwise.
	errorCode string
	// leaseLost means the turn's lease was lost or could not be proven:
	// nothing is saved or released, and the last line says the fate the
	// table decided (run.lostLines).
	leaseLost bool
}

// serve runs the claimed turn: supersession, the context load, then the
// stream. It always ends with cleanup.
func (t *run) serve(parent *chat.Turn) {
	ag, err := t.h.agents.agentFor(t.claim.Session.DefinitionID)
	if err != nil {
		t.endBeforeStream("resolve definition", err)
		return
	}
	t.agent = ag
	t.log.Debug("definition resolved", "definitionId", ag.def.ID, "definitionRevision", ag.def.Revision)
	ordinal := t.claim.Lease.Ordinal
	if parent != nil {
		g, err := t.h.opts.Store.Supersede(t.ctx, t.claim, parent.Ordinal, ordinal)
		if errors.Is(err, chat.ErrLineageStale) || errors.Is(err, chat.ErrSiblingsFull) {
			// Nothing was marked: the claim is undone and the turn id
			// stays unspent, as for a lineage refused before the claim.
			if t.withdrawOrFail("supersede", fmt.Errorf("%w: %w", httpedge.ErrLineageInvalid, err)) {
				t.failBefore("supersede", err, true)
			}
			return
		}
		t.withdrawable = false // the claim superseded turns: no longer only a lease
		if err != nil {
			t.failBeforeStream("supersede", err)
			return
		}
		t.siblings = g
	}
	if err := t.loadContext(t.ctx, ag.def, ordinal, t.claim.Session.Owner); err != nil {
		t.endBeforeStream("load context", err)
		return
	}
	t.streamTurn()
}

// loadContext loads the earlier turns the definition's context budget
// allows (definition.Definition.Context): the newest ContextTurns, then
// the oldest whole turns beyond ContextTokens estimated tokens left out,
// their attachments counted (attachmentTokens) and so in or out whole
// with their turn (owner's attachments: the session's owner).
// What was left out is recorded (t.omitted) for the assistant message's
// metadata. The live turn and a resume load alike, so that their
// snapshots carry the same messages.
func (t *run) loadContext(ctx context.Context, def definition.Definition, ordinal int64, owner chat.Principal) error {
	maxTurns, maxTokens := def.Context()
	turns, omitted, err := t.h.opts.Store.LoadContext(ctx, t.sessionID, ordinal, maxTurns)
	if err != nil {
		return err
	}
	keep, tokens := len(turns), 0
	for keep > 0 {
		msgs := turns[keep-1].Messages
		n := estimateTokens(msgs) + attachmentTokens(ctx, t.h.opts.Attachments, owner, t.sessionID, msgs)
		if tokens+n > maxTokens {
			break
		}
		tokens += n
		keep--
	}
	if keep > 0 {
		omitted = true
		turns = turns[keep:]
	}
	t.omitted = omitted
	for i := range turns {
		t.turnStarts = append(t.turnStarts, len(t.context))
		t.context = append(t.context, turns[i].Messages...)
		t.reasoning.load(turns[i].ReasoningBlocks)
	}
	return nil
}

// estimateTokens estimates the tokens of msgs for the context budget:
// UTF-8 bytes of content, tool arguments and results over four (a common
// estimate for English text; models differ).
func estimateTokens(msgs []protocol.Message) int {
	n := 0
	for _, m := range msgs {
		n += len(m.Content)
		for _, c := range m.ToolCalls {
			n += len(c.Args)
			if c.Result != nil {
				n += len(*c.Result)
			}
		}
	}
	return (n + 3) / 4
}

// endBeforeStream ends a claimed turn whose step failed with err before
// its stream: a failure its client may retry (a retryable diagnostic,
// such as a storage error) withdraws the claim where it can
// (withdrawOrFail), so that the retryable answer is true; any other is
// failBeforeStream, saved as the turn's record.
func (t *run) endBeforeStream(step string, err error) {
	if !httpedge.Diagnose(t.ctx, err).Retryable {
		t.failBeforeStream(step, err)
		return
	}
	if t.withdrawOrFail(step, err) {
		// The claim's turn item exists under its token although no step
		// of this turn wrote it: the failure is saved over it.
		t.failBefore(step, err, true)
	}
}

// failBeforeStream ends a claimed turn that never streamed: the turn is
// saved with status error and released, and the client gets the JSON
// error (docs/protocol.md#server-handler-behaviour "Errors before
// streaming"); its turn id is spent (a replay gets TURN_ALREADY_COMPLETED).
// Unlike the reference, the lease is not left to expire, unless the turn
// can no longer prove it (lost, or past its proven expiry: a process
// paused after its claim) or the save's outcome is not confirmed: then
// nothing more is written, the table decides the turn once the lease
// expires, and the client gets what a replay of the id will get, 409
// TURN_OUTCOME_INDETERMINATE (docs/durable-turns.md).
func (t *run) failBeforeStream(step string, err error) {
	t.failBefore(step, err, false)
}

// failBefore is failBeforeStream; with spentAnswer, or when the
// failure's diagnostic is retryable, a failure saved as the turn's record
// is answered as a replay of its id will be, 409 TURN_ALREADY_COMPLETED
// (not retryable): its turn id is spent, so a retryable answer would send
// the client to a retry that cannot run. (A retryable failure of a claim
// that can be undone is withdrawn instead: withdrawOrFail.)
func (t *run) failBefore(step string, err error, spentAnswer bool) {
	d := httpedge.Diagnose(t.ctx, err)
	logRejected(t.log, step, d, err)
	e := ending{status: chat.TurnError, diag: &d,
		leaseLost: errors.Is(err, chat.ErrLeaseLost) || errors.Is(err, errLeaseUnproven) || errors.Is(err, errWithdrawalUnknown) || t.leaseGone()}
	outcome := saveOutcome("")
	if !e.leaseLost {
		item := t.fate.record(e, t.state.view(), 0, 0)
		outcome = t.cleanup.save(item)
		if outcome == saved {
			t.cleanup.countAndRelease(item, t.claim.BaseSequence, false)
		}
	}
	t.cleanup.logFinished(e, outcome, 0)
	switch {
	case outcome != saved:
		if outcome != fenced {
			t.cleanup.abandon()
		}
		d = protocol.NewDiagnostic(protocol.CodeTurnOutcomeIndeterminate)
		t.log.Info("turn left to the table's decision", "code", d.Code)
	case spentAnswer || d.Retryable:
		d = protocol.NewDiagnostic(protocol.CodeTurnAlreadyCompleted)
	}
	httpedge.WriteError(t.w, d)
	t.trace.report(e, outcome, t.state.view())
}

// leaseGone reports whether the turn can no longer prove its lease now:
// past its proven expiry less the margin (before the stream starts
// proving it, the claim's).
func (t *run) leaseGone() bool {
	now := t.h.clock.Now()
	if t.lease.clock == nil {
		return !now.Before(t.claim.Lease.ExpiresAt.Add(-t.sup.leaseMargin()))
	}
	return !t.lease.heldAt(now)
}

// streamTurn acknowledges the turn, writes the 200 NDJSON stream and
// supervises the turn: the model, the request deadline, the writer and
// lease renewals.
func (t *run) streamTurn() {
	t.seqs.start(t.claim.BaseSequence)
	t.live = newLiveStates(t.h.opts.CheckpointMinChange <= 0)
	t.lease.init(t.sup.leaseMargin(), t.h.clock)
	t.lease.prove(t.startedAt, t.claim.Lease.ExpiresAt)
	// The first snapshot (the user message and an empty streaming
	// assistant message) goes out before the model starts, so every 200
	// stream begins with it however fast the model is; it is the state the
	// acknowledgment records.
	seq, _ := t.seqs.next()
	first := t.assistant(view{}, protocol.MessageStreaming, "")
	t.live.remember(seq, first, protocol.Usage{}, false, false)
	ack, err := t.acknowledge()
	if err != nil {
		if ack = t.unacknowledged(err); ack == nil {
			return
		}
	}
	// The lease is checked at the instant the first line is stamped with,
	// as the writer checks every later one: the steps before (supersede,
	// the context load, the acknowledgment) may have outlived it.
	now := t.h.clock.Now()
	if !t.lease.heldAt(now) {
		t.failBeforeStream("lease", errLeaseUnproven)
		return
	}
	hd := t.w.Header()
	t.enc.header(hd)
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Content-Type-Options", "nosniff")
	t.w.WriteHeader(http.StatusOK)
	// A client that stops reading must not hold the handler past the
	// request deadline plus the cleanup reserve: a blocked Write then fails
	// (net/http; lambdaurl's writer has no deadline and the Lambda
	// deadline bounds it instead). The connection keeps package time, so
	// the deadline is converted from the turn's clock.
	if err := http.NewResponseController(t.w).SetWriteDeadline(clock.Wall(t.h.clock, t.deadline.Add(t.h.opts.CleanupReserve))); err != nil && !errors.Is(err, http.ErrNotSupported) {
		t.log.Debug("set write deadline", "err", err)
	}

	t.out = newStreamOut(t.w, t.log)
	t.out.write(t.enc.first(now, seq, first))
	t.trace.onFirstSnapshot(t.h.clock.Now())
	// Then the writer goroutine takes the response over.
	go t.enc.write(t.h.clock.Now(), seq, first)

	modelCtx, stopModel := context.WithCancel(t.ctx)
	defer stopModel()
	if wall := t.agent.def.Limits.MaxWallTime; wall > 0 {
		var stopWall context.CancelFunc
		modelCtx, stopWall = untilContext(modelCtx, t.h.clock, t.startedAt.Add(wall), errWallTime)
		defer stopWall()
	}
	t.modelCtx = modelCtx
	modelDone := make(chan error, 1)
	go func() { modelDone <- t.runModelRecovered(modelCtx) }()

	end, finished, settle := t.sup.supervise(modelDone, ack)
	defer settle()

	// Cleanup phase 1: stop the model. Each phase has its own bounded
	// context or wait (cleanupContext), so that one slow phase cannot eat
	// the others' time before the Lambda deadline.
	stopModel()
	if !finished {
		t.awaitModel(modelDone)
	}
	v := t.state.freeze()
	if v.overflow {
		t.log.Warn("assistant content cut at the ordered content limits", "maxBytes", protocol.MaxContentBytes, "maxRecords", protocol.MaxContentRecords)
	}
	t.fate.finish(end, v)
}

// acknowledge makes a turn durable before its stream starts, with
// checkpoints on: its first checkpoint writes the turn item (the user
// message and the first snapshot's state), so that a turn a client has
// seen start is recorded whatever happens to this process
// (docs/durable-turns.md). When the steps before the stream used half of
// the lease the claim granted or more, the lease is renewed first. It returns the
// acknowledgment (nil with checkpoints off: nothing is written, and the
// lease as claimed must still hold).
func (t *run) acknowledge() (*chat.Checkpoint, error) {
	if granted := t.claim.Lease.ExpiresAt.Sub(t.startedAt); t.lease.left() < granted/2 {
		done := make(chan renewal, 1)
		t.sup.renew(t.ctx, done)
		r := <-done
		if r.err != nil {
			return nil, r.err
		}
		t.lease.prove(r.sentAt, r.lease.ExpiresAt)
	}
	if t.h.opts.CheckpointInterval <= 0 {
		return nil, nil
	}
	cp := t.sup.checkpointOf(t.live.latest())
	ctx, cancel := context.WithTimeout(t.ctx, t.lease.left())
	defer cancel()
	if _, err := t.h.opts.Store.Checkpoint(ctx, t.claim, cp); err != nil {
		return nil, fmt.Errorf("acknowledge turn: %w: %w", errNotAcknowledged, err)
	}
	t.trace.onCheckpoint()
	return cp, nil
}

// errNotAcknowledged marks the error of an acknowledgment whose write
// failed (its outcome unknown to the store after its resolving read).
var errNotAcknowledged = errors.New("turn: acknowledgment not written")

// errWithdrawalUnknown is the error of a withdrawal whose outcome stayed
// unknown: the lease is left to expire and the table decides the turn.
var errWithdrawalUnknown = errors.New("turn: withdrawal of the claim not confirmed")

// unacknowledged handles an acknowledgment that failed (err), before any
// line was written, and returns the acknowledgment to stream on, or nil
// once the client has its answer: the claim is withdrawn where it can be
// (withdrawOrFail); a withdrawal that finds the acknowledgment applied
// (its answer lost) goes on as acknowledged: the turn exists.
func (t *run) unacknowledged(err error) *chat.Checkpoint {
	if !errors.Is(err, errNotAcknowledged) {
		t.endBeforeStream("acknowledge", err) // the renewal before it failed
		return nil
	}
	if !t.withdrawOrFail("acknowledge", err) {
		return nil
	}
	t.log.Info("acknowledgment applied without an answer: the turn goes on", "err", err)
	t.trace.onCheckpoint()
	return t.sup.checkpointOf(t.live.latest())
}

// withdrawOrFail ends a claimed turn whose step failed with err, a
// failure its client may retry, before any line was written. A claim that
// can be undone (withdrawable) is withdrawn (chat.Store.WithdrawClaim),
// so that the answer, a retryable error, is true: nothing records the
// turn, the session is free, the admission is given back, and the retry
// of the turn id runs the turn. A withdrawal whose outcome stays unknown
// leaves the lease to expire and answers TURN_OUTCOME_INDETERMINATE (not
// retryable), as a replay may find the turn either way. A claim that
// cannot be withdrawn is saved as an error turn and answered 409
// TURN_ALREADY_COMPLETED, as its replay will be; a lost lease is
// failBeforeStream. It returns true, having answered nothing, when the
// withdrawal found the claim's turn item written under its token (an
// acknowledgment applied without an answer): the turn exists, and the
// caller goes on or ends it.
func (t *run) withdrawOrFail(step string, err error) (acknowledged bool) {
	if errors.Is(err, chat.ErrLeaseLost) || t.leaseGone() {
		t.failBeforeStream(step, err)
		return false
	}
	if !t.withdrawable {
		// The claim changed more than its lease: the failure is saved as
		// the turn's record and the answer says the id is spent.
		t.failBefore(step, err, true)
		return false
	}
	ctx, cancel := t.cleanup.settleContext(t.h.clock.Now())
	acked, werr := t.h.opts.Store.WithdrawClaim(ctx, t.claim)
	cancel()
	switch {
	case werr == nil && acked:
		return true
	case errors.Is(werr, chat.ErrLeaseLost):
		t.failBeforeStream("withdraw", werr)
		return false
	case werr != nil:
		t.failBeforeStream("withdraw", fmt.Errorf("%w: %w", errWithdrawalUnknown, werr))
		return false
	}
	t.h.quotas.giveBack(t.reqCtx, t.log, t.principal, t.budget.quota)
	d := httpedge.Diagnose(t.ctx, err)
	logRejected(t.log, step, d, err)
	e := ending{status: chat.TurnError, diag: &d}
	t.cleanup.logFinished(e, withdrawn, 0)
	t.log.Info("claim withdrawn: the turn id is unspent", "step", step)
	httpedge.WriteError(t.w, d)
	t.trace.report(e, withdrawn, t.state.view())
	return false
}

// errLeaseUnproven is the error of a turn whose lease could no longer be
// proven when its stream was to start.
var errLeaseUnproven = errors.New("turn: lease not proven at the start of the stream")

// errModelPanic is the error of a model-tool loop that panicked (a bug in
// a model provider or in the loop; tool panics are recovered by
// pkg/tool): the turn ends as MODEL_FAILED and is saved and released like
// any failed turn, instead of the panic killing the process with the
// lease held and the stream cut.
var errModelPanic = errors.New("turn: model panicked")

// runModelRecovered runs runModel on the model goroutine, turning a panic
// into errModelPanic. The panic value is logged at debug level only (it
// may hold message text), the stack at error level.
func (t *run) runModelRecovered(ctx context.Context) (err error) {
	defer func() {
		if p := recover(); p != nil {
			t.log.Error("model panicked", "stack", string(debug.Stack()))
			t.log.Debug("model panic value", "panic", fmt.Sprint(p))
			err = errModelPanic
		}
	}()
	return t.runModel(ctx)
}

// awaitModel waits up to CleanupReserve/4 for the model goroutine after
// its context was cancelled, then closes the stream to abort a Recv that
// ignores cancellation. The turn's state is frozen either way.
func (t *run) awaitModel(modelDone <-chan error) {
	timer := t.h.clock.NewTimer(t.h.opts.CleanupReserve / 4)
	defer timer.Stop()
	select {
	case err := <-modelDone:
		t.log.Debug("model stopped", "err", err)
	case <-timer.C():
		t.model.close() // best effort; the goroutine exits on its own
		t.log.Warn("model did not stop in time")
	}
}

// modelEnding classifies the model call's result. A model stopped by the
// request deadline or a client cancellation ends as that, whatever error
// it reported.
func (t *run) modelEnding(err error) ending {
	if err == nil {
		return ending{status: chat.TurnComplete}
	}
	if t.ctx.Err() != nil {
		return t.contextEnding()
	}
	var le *limitError
	switch {
	case errors.As(err, &le):
		return t.budget.limitEnding(le.detail)
	case t.modelCtx != nil && errors.Is(context.Cause(t.modelCtx), errWallTime):
		return t.budget.wallTimeEnding()
	}
	d := protocol.NewDiagnostic(protocol.CodeModelFailed)
	e := ending{status: chat.TurnError, diag: &d}
	var me *model.Error
	if errors.As(err, &me) {
		d.Retryable = me.Retryable
		e.errorCode = me.Code
	}
	t.log.Warn("model failed", "modelErrorCode", e.errorCode, "retryable", d.Retryable)
	t.log.Debug("model error detail", "err", err)
	return e
}

// contextEnding is the ending of a request whose context ended: the
// deadline (SERVER_TIMEOUT) or the client (REQUEST_CANCELLED). Both are
// stored as the turn's error and sent as a trailing stream diagnostic.
func (t *run) contextEnding() ending {
	d, _ := httpedge.ContextDiagnostic(t.ctx)
	return ending{status: chat.TurnError, diag: &d, trailer: &d}
}

// saveOutcome is what became of a turn's save.
type saveOutcome string

const (
	saved   saveOutcome = "saved"   // the table holds the turn as saved
	fenced  saveOutcome = "fenced"  // the turn was decided before the save (lost)
	unknown saveOutcome = "unknown" // the save failed, or its outcome is unknown
	// withdrawn: nothing was saved, the claim was withdrawn and the turn
	// id is unspent (unacknowledged).
	withdrawn saveOutcome = "withdrawn"
)

// assistant is the turn's assistant message for state v. In a final
// message (status complete or error) a tool call that never finished is
// recorded as failed with model.TextToolNotCompleted, so that no stored
// call stays pending or running.
func (t *run) assistant(v view, status, errorCode string) protocol.Message {
	calls := v.toolCalls
	if status != protocol.MessageStreaming {
		calls = finishCalls(calls, status == protocol.MessageComplete)
	}
	m := protocol.Message{
		ID:        MessageID(t.turnID, positionAssistant),
		Role:      protocol.RoleAssistant,
		Content:   v.content,
		Status:    status,
		CreatedAt: t.createdAt,
		ToolCalls: calls,
	}
	if errorCode != "" {
		meta, err := json.Marshal(struct {
			ErrorCode string `json:"errorCode"`
		}{errorCode})
		if err == nil {
			m.Metadata = meta
		}
	}
	m.Metadata = t.approvals.approvalMetadata(t.loop.metadata(m.Metadata, false), status)
	m.Metadata = t.reasoningMetadata(m.Metadata, v.reasoning)
	m.Metadata = warningsMetadata(m.Metadata, v.warnings)
	if status != protocol.MessageStreaming {
		m.Metadata = t.budget.limitMetadata(m.Metadata)
		m.Metadata = usageEstimateMetadata(m.Metadata, v.estimated) // loop.go
	}
	if t.omitted {
		m.Metadata = withMember(m.Metadata, MetadataContext, json.RawMessage(fmt.Sprintf(`{"turns":%d,"omittedOlder":true}`, len(t.turnStarts))))
	}
	return m
}

// MetadataContext is the assistant message metadata member that says the
// context budget left older turns out of what the model received (and of
// session-scope snapshots): {"turns": <earlier turns sent>,
// "omittedOlder": true}. Absent when every earlier turn was sent.
const MetadataContext = "context"

// withMember returns the metadata object meta with member name set to v
// (members sorted by name); meta unchanged if it is not an object.
func withMember(meta json.RawMessage, name string, v json.RawMessage) json.RawMessage {
	obj := map[string]json.RawMessage{}
	if len(meta) > 0 && json.Unmarshal(meta, &obj) != nil {
		return meta
	}
	obj[name] = v
	out, err := json.Marshal(obj)
	if err != nil {
		return meta
	}
	return out
}
