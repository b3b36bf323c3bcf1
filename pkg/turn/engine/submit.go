package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/clock"
	"github.com/turnstream/turnstream/pkg/definition"
	"github.com/turnstream/turnstream/pkg/httpedge"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/quota"
	"github.com/turnstream/turnstream/pkg/tool"
)

// scope is what a snapshot carries (api.SnapshotScopeHeader).
type scope int

const (
	scopeSession scope = iota // the whole session's visible messages
	scopeTurn                 // the current turn's messages only
)

// serveSubmit runs POST / in the order of docs/design.md#the-turn-pipeline and
// docs/protocol.md#server-handler-behaviour: the request's checks (acceptSubmit), the lineage
// check (parentTurn), the claim of the session's lease (claim), then the
// turn itself (run.serve). A failure before the claim is one JSON error
// response.
func (h *handler) serveSubmit(w http.ResponseWriter, r *http.Request) {
	ctx, cancel, deadline := h.deadline(r)
	defer cancel()
	log := h.requestLogger(ctx)

	sub, step, err := h.acceptSubmit(ctx, w, r)
	if err != nil {
		reject(ctx, w, log, step, err)
		return
	}
	h.accepted(ctx, sub)
	h.runSubmission(ctx, w, r, deadline, log.With("sessionId", sub.sessionID, "turnId", sub.turnID), sub)
}

// accepted tells Config.Accepted the session and turn an accepted
// submission (of POST / or POST /agui) names.
func (h *handler) accepted(ctx context.Context, sub *submission) {
	if h.opts.Accepted != nil {
		h.opts.Accepted(ctx, sub.sessionID, sub.turnID)
	}
}

// runSubmission runs an accepted submission (of POST / or POST /agui) from
// the lineage check on: the lineage check (parentTurn), the claim of the
// session's lease (claim), then the turn itself (run.serve).
func (h *handler) runSubmission(ctx context.Context, w http.ResponseWriter, r *http.Request, deadline time.Time, log *slog.Logger, sub *submission) {
	ctx = chat.WithMeter(ctx, &chat.Meter{}) // the turn's usage, from its first store request
	if err := h.stageInline(ctx, sub); err != nil {
		reject(ctx, w, log, "attachments", err)
		return
	}
	if err := h.resolveAttachments(ctx, sub); err != nil {
		reject(ctx, w, log, "attachments", err)
		return
	}
	parent, err := h.parentTurn(ctx, sub)
	if err != nil {
		reject(ctx, w, log, "lineage", err)
		return
	}
	if err := h.useAttachments(ctx, sub); err != nil {
		reject(ctx, w, log, "attachments", err)
		return
	}
	policy, sess, err := h.queue.policyFor(ctx, sub)
	if err != nil {
		reject(ctx, w, log, "multitask", err)
		return
	}
	quotas, err := h.quotas.of(ctx, sub, sess)
	if err != nil {
		reject(ctx, w, log, "quotas", err)
		return
	}
	sub.startedAt = h.clock.Now()
	if policy == definition.MultitaskEnqueue && sess != nil && busyFor(sess, h.clock.Now()) {
		h.queue.enqueue(ctx, w, log, sub, quotas)
		return
	}
	// The quota check, before the claim (docs/quotas.md); its admission
	// holds a concurrency slot until the turn is counted or its latest end.
	expires := sub.startedAt.Add(clock.Until(h.clock, deadline) + h.opts.CleanupReserve)
	if sub.quota, err = h.quotas.check(ctx, log, sub, quotas, sub.startedAt, expires, quota.Running); err != nil {
		reject(ctx, w, log, "quota", err)
		return
	}
	var claim *chat.Claim
	claimedAt := sub.startedAt
	switch policy {
	case definition.MultitaskInterrupt, definition.MultitaskRollback:
		var replaced *chat.Turn
		claim, claimedAt, replaced, err = h.queue.interrupt(ctx, log, sub, sess, deadline)
		if err == nil && policy == definition.MultitaskRollback && replaced != nil && parent == nil {
			parent = h.queue.stoppedByRollback(ctx, log, sub, replaced) // superseded by this turn, as a regenerate supersedes
		}
	default:
		claim, err = h.claim(ctx, log, sub, deadline, 0)
		if policy == definition.MultitaskEnqueue && errors.Is(err, chat.ErrSessionBusy) {
			h.quotas.giveBack(ctx, log, sub.principal, sub.quota)
			h.queue.enqueue(ctx, w, log, sub, quotas) // busy since policyFor read the session
			return
		}
		if errors.Is(err, chat.ErrSessionQueued) {
			h.queue.nudge(ctx, sub.sessionID) // free, with queued turns that have not started
		}
	}
	if err != nil {
		h.quotas.giveBack(ctx, log, sub.principal, sub.quota)
		reject(ctx, w, log, "claim", err)
		return
	}
	t, stop := h.newRun(ctx, r.Context(), w, deadline, log, sub, claim, claimedAt)
	defer stop()
	defer t.drainAfter()
	if sub.decision != nil && !t.takeDecision(sub.decision) {
		return
	}
	// A claim that decided nothing, superseded nothing and left no queued
	// turn waiting behind it (an interrupt's, which the release would
	// start) can be undone when its acknowledgment fails
	// (run.unacknowledged).
	t.withdrawable = sub.decision == nil && len(chat.Waiting(claim.Session.Queue)) == 0
	t.serve(parent)
}

// submission is an accepted POST / request: authenticated, its headers
// and body valid.
type submission struct {
	principal chat.Principal
	scope     scope
	sessionID string
	turnID    string
	// input is the submitted text (for a decision, its label only).
	input string
	// lineage is the event's lineage; a plain submit when absent.
	lineage protocol.Lineage
	// inputHash is what the claim and a later retry compare
	// (chat.HashInput, or decisionInputHash for a decision).
	inputHash string
	// decision is set for a decision on a confirmation.
	decision *chat.Decision
	// attachmentIDs are the attachments the submit names
	// (docs/attachments.md); files what resolveAttachments read of them.
	attachmentIDs []string
	files         []attachedFile
	// inline are the files an AG-UI run carries as bytes (data sources),
	// among attachmentIDs under attach.InlineID; stageInline stores them.
	inline []inlineFile
	// compact is whether the client asked for the compact stream
	// (api.StreamModeHeader, docs/compact.md).
	compact bool
	// multitask is the policy api.MultitaskHeader names; empty when absent.
	multitask string
	// agui is whether the submission came as an AG-UI RunAgentInput (POST
	// /agui): the turn streams as AG-UI events (docs/agui.md).
	agui bool
	// startedAt is when the turn starts (just before its quota check and
	// claim): its periods in the usage ledger (chat.ClaimRequest.StartedAt).
	startedAt time.Time
	// quota is what its quota check found, and its admission (quota.go);
	// nil without quotas.
	quota *quota.Check
}

// acceptSubmit runs the checks of POST / before any storage request, in
// order: method (405), media type (415), authentication on headers only,
// before any body byte is read (401/403), the snapshot scope and stream
// mode and multitask headers (400 REQUEST_INVALID_HEADER), the body under MaxBodyBytes (413), JSON (400
// REQUEST_INVALID_JSON) and the submit event (400 REQUEST_INVALID_EVENT).
// On failure it returns the step that failed and an error for
// httpedge.Diagnose, and has written nothing but, for a 405, the Allow
// header.
func (h *handler) acceptSubmit(ctx context.Context, w http.ResponseWriter, r *http.Request) (*submission, string, error) {
	principal, step, err := h.acceptPost(ctx, w, r)
	if err != nil {
		return nil, step, err
	}
	sc, err := parseScope(r.Header.Values(api.SnapshotScopeHeader))
	if err != nil {
		return nil, "scope", err
	}
	// The compact stream's negotiation (compact.go), before the body.
	compact, ok := parseStreamMode(r.Header.Values(api.StreamModeHeader))
	if !ok {
		return nil, "stream mode", httpedge.ErrInvalidHeader
	}
	multitask, err := parseMultitask(r.Header.Values(api.MultitaskHeader))
	if err != nil {
		return nil, "multitask", err
	}
	body, err := h.readBody(ctx, w, r)
	if err != nil {
		return nil, "read body", err
	}
	ev, err := decodeSubmit(body)
	if err != nil {
		return nil, "decode", err
	}
	sub := newSubmission(principal, sc, ev)
	sub.compact, sub.multitask = compact, multitask
	return sub, "", nil
}

// admissionID is the id of sub's admission, "" when it has none.
func (sub *submission) admissionID() string {
	if sub.quota.Admission() == nil {
		return ""
	}
	return sub.quota.Admission().ID
}

// newSubmission returns the submission of the decoded event ev: a plain
// submit's lineage when ev has none, and for a decision on a confirmation
// the decision, whose input is only a label (decisionInputHash).
func newSubmission(p chat.Principal, sc scope, ev *protocol.Event) *submission {
	sub := &submission{
		principal: p,
		scope:     sc,
		sessionID: ev.SessionID,
		turnID:    ev.TurnID,
		input:     ev.Submit.Input,
		lineage:   protocol.Lineage{Operation: protocol.OperationSubmit},
		inputHash: chat.HashInput(ev.Submit.Input),
	}
	if l := ev.Submit.Lineage; l != nil && l.Operation != protocol.OperationSubmit {
		sub.lineage = *l
	}
	if c := ev.Submit.Confirmation; c != nil {
		sub.decision = &chat.Decision{Token: c.Token, Approve: c.Decision == protocol.DecisionApprove}
		sub.inputHash = decisionInputHash(sub.input, c)
	}
	if ids := ev.Submit.Attachments; len(ids) > 0 {
		// The attachments are part of the input: the same turn id sent
		// again with others is TURN_ID_REUSED.
		sub.attachmentIDs = ids
		sub.inputHash = chat.HashInput(sub.input + "\x00attachments:" + strings.Join(ids, ","))
	}
	return sub
}

// parentTurn returns the parent turn of a retry, edit or regenerate,
// checked by checkLineage; nil for a plain submit.
func (h *handler) parentTurn(ctx context.Context, sub *submission) (*chat.Turn, error) {
	if sub.lineage.Operation == protocol.OperationSubmit {
		return nil, nil
	}
	return h.checkLineage(ctx, sub.sessionID, sub.principal, sub.lineage, sub.inputHash)
}

// claim takes the session's lease for the submission (chat.Store.ClaimTurn),
// recording the default definition on a session it creates, for a lease
// that never outlasts the request (leaseDuration), and logs the claim.
// ifNextOrdinal > 0 makes it an interrupt's claim: it starts before the
// session's queued turns, and only while the session's next ordinal is
// ifNextOrdinal (chat.ClaimRequest.IfNextOrdinal); 0 is a plain claim.
func (h *handler) claim(ctx context.Context, log *slog.Logger, sub *submission, deadline time.Time, ifNextOrdinal int64) (*chat.Claim, error) {
	def := h.agents.defaultDefinition()
	claim, err := h.opts.Store.ClaimTurn(ctx, chat.ClaimRequest{
		SessionID:          sub.sessionID,
		TurnID:             sub.turnID,
		Principal:          sub.principal,
		InputHash:          sub.inputHash,
		Lineage:            sub.lineage,
		DefinitionID:       def.ID,
		DefinitionRevision: def.Revision,
		LeaseDuration:      h.leaseDuration(deadline),
		Decision:           sub.decision,
		AheadOfQueue:       ifNextOrdinal > 0,
		IfNextOrdinal:      ifNextOrdinal,
		StartedAt:          sub.startedAt,
		Admission:          sub.admissionID(),
	})
	if err != nil {
		return nil, err
	}
	log.Info("turn claimed",
		"ordinal", claim.Lease.Ordinal, "baseSequence", claim.BaseSequence,
		"operation", sub.lineage.Operation, "sessionCreated", claim.Created,
		"definitionId", claim.Session.DefinitionID)
	return claim, nil
}

// newRun returns the run of a submission claimed at claimedAt (the time
// taken just before the claim request) and the function that releases its
// context. ctx is reqCtx, the request's own context, under the request
// deadline. With checkpoints on, the run's context is detached from the
// client's: a disconnect is not a stop, the turn runs to its end (as on
// Lambda, where the invocation outlives its client) and a client resumes
// it; only the deadline and POST /stop end it.
func (h *handler) newRun(ctx, reqCtx context.Context, w http.ResponseWriter, deadline time.Time, log *slog.Logger, sub *submission, claim *chat.Claim, claimedAt time.Time) (*run, context.CancelFunc) {
	runCtx, cancelRun := ctx, context.CancelFunc(func() {})
	if h.opts.CheckpointInterval > 0 {
		runCtx, cancelRun = untilContext(context.WithoutCancel(reqCtx), h.clock, deadline, errTurnDeadline)
	}
	// The tools the turn runs learn its session (tool.CallInfoFrom).
	runCtx = tool.WithCallInfo(runCtx, tool.CallInfo{SessionID: sub.sessionID, TurnID: sub.turnID, Principal: sub.principal})
	meter := chat.MeterFrom(ctx) // the submit's store requests so far
	if meter == nil {
		meter = &chat.Meter{}
	}
	t := bind(&run{
		meter:     meter,
		h:         h,
		w:         w,
		reqCtx:    chat.WithMeter(reqCtx, meter),
		ctx:       chat.WithMeter(runCtx, meter),
		deadline:  deadline,
		log:       log,
		claim:     claim,
		sessionID: sub.sessionID,
		turnID:    sub.turnID,
		lineage:   sub.lineage,
		inputHash: sub.inputHash,
		scope:     sub.scope,
		createdAt: protocol.FormatTime(claimedAt),
		startedAt: claimedAt,
	})
	t.user = userMessage(sub.turnID, sub.input, t.createdAt, attachmentParts(sub.files))
	t.files = sub.files
	t.principal = sub.principal
	t.startTrace(sub.principal)
	t.budget.quota = sub.quota
	t.enc = &ndjsonStream{t: t, compact: sub.compact}
	if sub.agui {
		t.enc = newAGUIStreamer(t, sub.sessionID, sub.turnID)
	}
	return t, cancelRun
}

// takeDecision gives a decision turn the confirmation its claim decided.
// A claim without it (a store that broke its contract) fails the turn
// before its stream and returns false.
func (t *run) takeDecision(decision *chat.Decision) bool {
	cf := t.claim.Decided()
	if cf == nil {
		t.failBeforeStream("decision", errDecisionMissing)
		return false
	}
	t.approvals.decided, t.approvals.approve = cf, decision.Approve
	t.log.Info("confirmation claimed", "tool", cf.Action, "approve", decision.Approve, "parentTurnId", cf.TurnID)
	return true
}

// acceptPost runs the checks every POST route starts with, in order:
// method (405), media type (415), then authentication on the headers
// only, before any body byte is read (401/403). On failure it returns the
// step that failed.
func (h *handler) acceptPost(ctx context.Context, w http.ResponseWriter, r *http.Request) (chat.Principal, string, error) {
	if err := httpedge.RequireMethod(w, r, http.MethodPost); err != nil {
		return chat.Principal{}, "method", err
	}
	if err := httpedge.RequireJSON(r); err != nil {
		return chat.Principal{}, "content type", err
	}
	p, err := h.authenticate(ctx, r)
	if err != nil {
		return chat.Principal{}, "authenticate", err
	}
	return p, "", nil
}

// readBody reads a POST body under MaxBodyBytes (httpedge.ReadBody): 413
// over it; a body that cannot be read (a broken connection, a function URL
// body whose base64 does not decode: lambdaurl.Wrap decodes it while the
// handler reads) is not valid JSON, 400 REQUEST_INVALID_JSON.
func (h *handler) readBody(ctx context.Context, w http.ResponseWriter, r *http.Request) ([]byte, error) {
	return httpedge.ReadBody(ctx, w, r, h.opts.MaxBodyBytes, httpedge.ErrInvalidJSON)
}

// authenticate runs Config.Authenticate on the request's headers only,
// before any body byte is read (docs/design.md#the-turn-pipeline,
// docs/design.md#authentication-and-tenancy).
func (h *handler) authenticate(ctx context.Context, r *http.Request) (chat.Principal, error) {
	return h.opts.Authenticate(ctx, r)
}

// reject answers a request refused at step with the diagnostic of err
// (httpedge.Diagnose) and logs it: internal failures at error level with
// the error, client errors at info level without it (their text may name
// request values).
func reject(ctx context.Context, w http.ResponseWriter, log *slog.Logger, step string, err error) {
	d := httpedge.Diagnose(ctx, err)
	logRejected(log, step, d, err)
	httpedge.RetryHeaders(w.Header(), err)
	httpedge.WriteError(w, d)
}

// logRejected logs a request rejected at step; internal failures at error
// level with the error, client errors at info level without it (their
// text may name request values).
func logRejected(log *slog.Logger, step string, d protocol.Diagnostic, err error) {
	if d.Code == protocol.CodeServerInternal {
		log.Error("request failed", "step", step, "code", d.Code, "err", err)
		return
	}
	log.Info("request rejected", "step", step, "code", d.Code)
}

// parseScope reads api.SnapshotScopeHeader: absent or "session" is
// scopeSession, "turn" scopeTurn (case-insensitive, surrounding spaces
// ignored); anything else, a repeated header included, is
// httpedge.ErrInvalidHeader.
func parseScope(values []string) (scope, error) {
	switch len(values) {
	case 0:
		return scopeSession, nil
	case 1:
	default:
		return 0, fmt.Errorf("%w: %s repeated", httpedge.ErrInvalidHeader, api.SnapshotScopeHeader)
	}
	switch v := strings.TrimSpace(values[0]); {
	case strings.EqualFold(v, api.ScopeSession):
		return scopeSession, nil
	case strings.EqualFold(v, api.ScopeTurn):
		return scopeTurn, nil
	}
	return 0, fmt.Errorf("%w: %s", httpedge.ErrInvalidHeader, api.SnapshotScopeHeader)
}

// decodeSubmit parses body as JSON (httpedge.ErrInvalidJSON when empty or
// invalid: 400 REQUEST_INVALID_JSON) and decodes it as a client.turn.submit
// event (httpedge.ErrInvalidEvent for any decoder failure or another event
// kind: 400 REQUEST_INVALID_EVENT; the decoder's own code is not exposed,
// docs/protocol.md#server-handler-behaviour step 6). A body that is a JSON string holding an
// event is rejected, not decoded twice (docs/design.md#wire-protocol-v1, unlike the
// reference's quirk).
func decodeSubmit(body []byte) (*protocol.Event, error) {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 || !json.Valid(trimmed) {
		return nil, httpedge.ErrInvalidJSON
	}
	if trimmed[0] != '{' {
		return nil, httpedge.ErrInvalidEvent
	}
	ev, d := protocol.DecodeTurnEvent(body)
	if d != nil || ev == nil || ev.Kind != protocol.EventSubmit || ev.Submit == nil {
		return nil, httpedge.ErrInvalidEvent
	}
	return ev, nil
}

// checkLineage verifies a retry, edit or regenerate against its parent
// turn (docs/design.md#storage-one-dynamodb-table): the parent must be a visible (not superseded) saved
// turn of this session, sourceMessageId one of its messages, and a retry
// or regenerate must repeat the parent's input (same HashInput). Any
// mismatch is httpedge.ErrLineageInvalid; store errors are returned as they are.
func (h *handler) checkLineage(ctx context.Context, sessionID string, p chat.Principal, l protocol.Lineage, inputHash string) (*chat.Turn, error) {
	parent, err := h.opts.Store.FindTurn(ctx, sessionID, l.ParentTurnID, p)
	if errors.Is(err, chat.ErrTurnNotFound) {
		return nil, httpedge.ErrLineageInvalid
	}
	if err != nil {
		return nil, err
	}
	if parent.Superseded || parent.Status == chat.TurnRunning {
		return nil, httpedge.ErrLineageInvalid
	}
	found := false
	for _, m := range parent.Messages {
		if m.ID == l.SourceMessageID {
			found = true
			break
		}
	}
	if !found {
		return nil, httpedge.ErrLineageInvalid
	}
	if l.Operation != protocol.OperationEdit && parent.InputHash != inputHash {
		return nil, httpedge.ErrLineageInvalid
	}
	return parent, nil
}

// leaseDuration is the lease length of a claim: LeaseDuration, but never
// past the request deadline plus CleanupReserve (docs/design.md#the-turn-pipeline).
func (h *handler) leaseDuration(deadline time.Time) time.Duration {
	d := h.opts.LeaseDuration
	if ceiling := clock.Until(h.clock, deadline) + h.opts.CleanupReserve; ceiling < d {
		d = ceiling
	}
	if d < time.Millisecond {
		d = time.Millisecond
	}
	return d
}
