package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/definition"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/quota"
)

// The usage ledger, quotas and budgets in the turn pipeline
// (docs/quotas.md). Before its claim a submit's quotas are checked: its
// principal's ledger read, its tenant's usage summed (cached), the token
// quotas compared, and, with a rate or concurrency quota, the turn
// admitted (chat.Store.Admit). Before each model call the turn compares
// its token figures again, with its own tokens added; a limit reached
// ends it with LIMIT_EXCEEDED, the limit named in the assistant message's
// metadata (MetadataLimit). When the turn ends its usage is counted in
// the ledger before its release (countUsage).

// MetadataLimit is the assistant message metadata member of a turn that
// ended with LIMIT_EXCEEDED, or that completed at its step limit: which
// limit it reached.
//
//	"limit": {"scope": "turn"|"principal"|"tenant", "name": "<limit>", "limit": <n>, "used": <n>}
//
// name is a budget of the turn's definition, spelled as in the
// definitions file's limits (maxOutputTokens, maxToolCalls,
// maxWallTimeMs, maxSteps; limit and used in tokens, tool calls,
// milliseconds or model calls) or a token quota (tokensPerDay,
// tokensPerMonth; in tokens, used counting the turn's own). A turn at
// its step limit completes (its last calls recorded as failed,
// TextStepLimit); the others end with LIMIT_EXCEEDED.
const MetadataLimit = "limit"

// ScopeTurn is the scope of a per-turn budget in MetadataLimit.
const ScopeTurn = "turn"

// Budget names in MetadataLimit: the definitions file's limits.
const (
	BudgetOutputTokens = "maxOutputTokens"
	BudgetToolCalls    = "maxToolCalls"
	BudgetWallTime     = "maxWallTimeMs"
	BudgetSteps        = "maxSteps"
)

// TextLimitReached is the error of the tool calls a turn asked for in
// the model call that reached a limit: recorded as failed, never run.
const TextLimitReached = "Not run: a usage limit was reached."

// limitDetail is the limit a turn reached (MetadataLimit).
type limitDetail struct {
	Scope string `json:"scope"`
	Name  string `json:"name"`
	Limit int64  `json:"limit"`
	Used  int64  `json:"used"`
}

// budget is the turn's limits and quotas at its steps: before and after
// each model call, its wall time, the ending a reached limit gives it, and
// its count in the usage ledger.
type budget struct {
	t *run
	// quota is what the turn knows of its quotas; nil when none.
	quota *quota.Check
	// limit is the limit the turn reached, if it ended with
	// LIMIT_EXCEEDED.
	limit atomic.Pointer[limitDetail]
}

// limitError ends the model-tool loop when a limit is reached.
type limitError struct{ detail limitDetail }

func (e *limitError) Error() string {
	return fmt.Sprintf("turn: limit %s.%s reached", e.detail.Scope, e.detail.Name)
}

// quotaLimit is the limitDetail of a token quota error.
func quotaLimit(qe *chat.QuotaError) *limitError {
	return &limitError{limitDetail{Scope: qe.Scope, Name: qe.Name, Limit: qe.Limit, Used: qe.Used}}
}

// errWallTime is the cause of the model context's end at the turn's
// maxWallTime budget.
var errWallTime = errors.New("turn: the turn's wall time budget is spent")

// quotaGate is the engine's side of the quotas (docs/quotas.md): which
// quotas a submit has (its session's definition's), and the calls of the
// quota package's Gate (pkg/quota), which checks and admits a turn before
// its claim, compares its tokens around its model calls and gives an
// admission back when its turn does not start.
type quotaGate struct {
	h    *handler
	gate *quota.Gate
}

// of returns the quotas of a submit: its session's definition's
// (definition.Resolver.Quotas). When definitions differ in their quotas
// the session's definition is needed: sess as policyFor read it, or one
// GetSession (a new session gets the default definition).
func (g *quotaGate) of(ctx context.Context, sub *submission, sess *chat.Session) (chat.Quotas, error) {
	h := g.h
	if h.opts.Definitions == nil {
		return h.agents.byID[simpleID].def.Quotas, nil
	}
	if q, ok := h.opts.Definitions.UniformQuotas(); ok {
		return q, nil
	}
	if sess == nil {
		s, err := h.opts.Store.GetSession(ctx, sub.sessionID, sub.principal)
		switch {
		case errors.Is(err, chat.ErrSessionNotFound):
			return h.opts.Definitions.Quotas(""), nil
		case err != nil:
			return chat.Quotas{}, err
		}
		sess = s
	}
	return h.opts.Definitions.Quotas(sess.DefinitionID), nil
}

// check checks sub's quotas q before its claim at start and admits it
// until expires (quota.Gate.Admit): the turn's quota.Check (nil when q
// limits nothing), a *chat.QuotaError when a quota refuses the submit,
// chat.ErrQuotaUnavailable, wrapped, when the ledger cannot be read and
// QuotaFailOpen is not set.
func (g *quotaGate) check(ctx context.Context, log *slog.Logger, sub *submission, q chat.Quotas, start, expires time.Time, mode quota.Mode) (*quota.Check, error) {
	return g.gate.Admit(ctx, log, quota.Request{Principal: sub.principal, SessionID: sub.sessionID, Quotas: q,
		Start: start, Expires: expires, Mode: mode})
}

// giveBack gives a submit's admission back when its turn did not start
// (quota.Gate.GiveBack, bounded by CleanupReserve).
func (g *quotaGate) giveBack(ctx context.Context, log *slog.Logger, p chat.Principal, c *quota.Check) {
	g.gate.GiveBack(ctx, log, p, c)
}

// ---- in the turn ----

// usage returns what the turn used so far (its meter).
func (bg *budget) usage() chat.Usage { return bg.t.meter.Usage() }

// beforeModelCall checks the turn's budgets and token quotas before model
// call step and returns the call's completion cap (0: the provider's
// default): the definition's limits.maxTokens, at most the output tokens
// left of limits.maxOutputTokens. A limit already reached is a
// *limitError.
func (bg *budget) beforeModelCall(ctx context.Context, step int) (int, error) {
	t := bg.t
	lim := t.agent.def.Limits
	used := bg.usage()
	maxTokens := lim.MaxTokens
	if b := lim.MaxOutputTokens; b > 0 {
		if used.OutputTokens >= b {
			return 0, &limitError{limitDetail{Scope: ScopeTurn, Name: BudgetOutputTokens, Limit: b, Used: used.OutputTokens}}
		}
		if left := b - used.OutputTokens; maxTokens == 0 || left < int64(maxTokens) {
			maxTokens = int(min(left, definition.MaxTokens))
		}
	}
	// The first call was checked before the claim, unless the figures
	// were never read then (a queued turn, or a check failed open).
	if step > 1 || bg.quota != nil && !bg.quota.Read() {
		if err := bg.checkQuotaTokens(ctx); err != nil {
			return 0, err
		}
	}
	return maxTokens, nil
}

// afterModelCall checks the turn's budgets and token quotas after a model
// call that asked for calls (the turn would go on) or that stopped at its
// completion cap (finish): a *limitError when one is reached, the turn
// then ending after this call.
func (bg *budget) afterModelCall(ctx context.Context, calls int, capped bool) error {
	t := bg.t
	lim := t.agent.def.Limits
	used := bg.usage()
	if b := lim.MaxOutputTokens; b > 0 && used.OutputTokens >= b && (calls > 0 || capped) {
		return &limitError{limitDetail{Scope: ScopeTurn, Name: BudgetOutputTokens, Limit: b, Used: used.OutputTokens}}
	}
	if b := int64(lim.MaxToolCalls); b > 0 && used.ToolCalls > b {
		return &limitError{limitDetail{Scope: ScopeTurn, Name: BudgetToolCalls, Limit: b, Used: used.ToolCalls}}
	}
	if calls > 0 {
		return bg.checkQuotaTokens(ctx)
	}
	return nil
}

// checkQuotaTokens compares the turn's token quotas with its figures
// (read again when older than QuotaCache; a failed read keeps the older
// ones, logged) plus its own tokens (quota.Gate.CheckTokens).
func (bg *budget) checkQuotaTokens(ctx context.Context) error {
	t := bg.t
	u := bg.usage()
	if qe := t.h.quotas.gate.CheckTokens(ctx, t.log, bg.quota, t.claim.Session.Owner, u.InputTokens+u.OutputTokens); qe != nil {
		return quotaLimit(qe)
	}
	return nil
}

// wallTimeEnding is the ending of a turn stopped at its wall time budget
// (the model context's cause errWallTime).
func (bg *budget) wallTimeEnding() ending {
	t := bg.t
	b := t.agent.def.Limits.MaxWallTime
	return bg.limitEnding(limitDetail{Scope: ScopeTurn, Name: BudgetWallTime, Limit: b.Milliseconds(),
		Used: t.h.clock.Now().Sub(t.startedAt).Milliseconds()})
}

// limitEnding records d as the limit the turn reached and returns its
// ending: status error, LIMIT_EXCEEDED.
func (bg *budget) limitEnding(d limitDetail) ending {
	t := bg.t
	bg.limit.Store(&d)
	t.log.Info("turn reached a limit", "scope", d.Scope, "limit", d.Name)
	diag := protocol.NewDiagnostic(protocol.CodeLimitExceeded)
	return ending{status: chat.TurnError, diag: &diag}
}

// limitMetadata returns meta with MetadataLimit set when the turn reached
// a limit.
func (bg *budget) limitMetadata(meta json.RawMessage) json.RawMessage {
	d := bg.limit.Load()
	if d == nil {
		return meta
	}
	b, err := json.Marshal(d)
	if err != nil {
		return meta
	}
	return withMember(meta, MetadataLimit, b)
}

// countUsage counts the saved turn item in the ledger (Config.Ledger):
// its Metered usage, under the claim's session, ordinal, owner, start and
// admission, within the cleanup reserve. It reports whether the turn is
// counted: when not (the ledger write's outcome stayed unknown), the
// caller leaves the lease to expire, and the store that decides the turn
// counts it, once.
func (bg *budget) countUsage(item *chat.Turn) bool {
	t := bg.t
	if !t.h.opts.Ledger {
		return true
	}
	ctx, cancel := t.cleanup.settleContext(t.h.clock.Now())
	defer cancel()
	l := t.claim.Lease
	err := t.h.opts.Store.RecordUsage(ctx, chat.LedgerEntry{SessionID: t.sessionID, Ordinal: l.Ordinal, Owner: t.claim.Session.Owner,
		StartedAt: l.StartedAt, Usage: item.Metered, Admission: l.Admission})
	if err != nil {
		t.log.Error("usage not counted: the lease is left to expire, and the turn is counted when it is decided", "err", err)
		return false
	}
	return true
}
