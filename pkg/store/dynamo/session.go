package dynamo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/turnstream/turnstream/pkg/chat"
)

// ClaimTurn implements chat.Store. Happy path: one conditional
// UpdateItem that creates the session or claims an idle one whose owner
// matches and whose terminal window does not hold the turn id. The claim
// writes a fresh lease token, which is how it recognises its own effect:
// when the write fails (a condition failure after an SDK retry of a write
// that had applied, a lost answer, a 500, a timeout) one consistent read
// (or the item returned with the failed condition) shows whether the
// session now holds this token. Otherwise the same read classifies the
// rejection; a lease that expired while its turn ran is taken over (the
// crashed turn's item fenced, then a compare-and-set on the session
// revision), and so is a claimable session whose state changed between
// the two requests. A lost compare-and-set is ErrSessionBusy (retryable).
// A claim whose terminal window is full and misses the turn id costs one
// Query of TurnIDIndex (and, when the id is found, one write that gives
// the claim back).
func (s *Store) ClaimTurn(ctx context.Context, req chat.ClaimRequest) (*chat.Claim, error) {
	ctx = withPurpose(ctx, PurposeClaim)
	if err := req.Validate(); err != nil {
		return nil, err
	}
	now := s.now()
	token := newToken()
	up, cond := claimWrite(req, token, now)
	wctx, cancel := s.writeContext(ctx)
	out, err := s.update(wctx, PurposeClaim, sessionKey(req.SessionID), up, cond, returnAllNew, returnOldOnFailure)
	cancel()
	if err == nil {
		return s.claimed(ctx, req, out.Attributes)
	}
	failed, item := conditionFailed(err)
	found := item != nil
	if !found {
		var rerr error
		if item, found, rerr = s.resolveRead(ctx, sessionKey(req.SessionID)); rerr != nil {
			return nil, unknownClaim(req, err, rerr)
		}
	}
	switch {
	case found && holdsToken(item, token):
		return s.claimed(ctx, req, item) // this very claim applied
	case !failed:
		return s.resendClaim(ctx, req, up, cond, token, now, err)
	case !found && req.Decision != nil: // no session: no such confirmation
		return nil, chat.ErrConfirmationNotFound
	case !found && req.IfNextOrdinal > 1: // not the session the caller read
		return nil, chat.ErrSessionMoved
	case !found: // it existed when the condition failed: a race
		return nil, fmt.Errorf("claim session %s: session changed during the claim: %w", req.SessionID, chat.ErrSessionBusy)
	}
	return s.classifyClaim(ctx, req, item, token, now)
}

// resendClaim sends a claim whose first outcome is unknown, and which the
// resolving read showed not applied, once more (same token: an attempt
// may still be in flight). Its answer, or its own effect as one more read
// shows, is the outcome; otherwise that read classifies the claim (a
// lease that refuses it is ErrSessionBusy or the decision of a replay,
// not the transport's error, which a caller reads as "retry"), or first
// is returned: it did not apply and the session cannot be read.
func (s *Store) resendClaim(ctx context.Context, req chat.ClaimRequest, up expression.UpdateBuilder, cond condition, token string, now time.Time, first error) (*chat.Claim, error) {
	rctx, cancel := s.resolveContext(ctx)
	defer cancel()
	out, err := s.update(rctx, PurposeClaim, sessionKey(req.SessionID), up, cond, returnAllNew, returnOldOnFailure)
	if err == nil {
		return s.claimed(ctx, req, out.Attributes)
	}
	_, item := conditionFailed(err)
	found := item != nil
	if !found {
		var rerr error
		if item, found, rerr = s.getItem(rctx, sessionKey(req.SessionID)); rerr != nil {
			return nil, unknownClaim(req, err, rerr) // the resend may have applied
		}
	}
	switch {
	case found && holdsToken(item, token):
		return s.claimed(ctx, req, item)
	case found:
		return s.classifyClaim(ctx, req, item, token, now)
	}
	return nil, fmt.Errorf("claim session %s: %w", req.SessionID, first)
}

// unknownClaim is the error of a claim whose write (written) may have
// applied and whose resolving read failed too (resolving): the claim's
// outcome is unknown, so its turn id may be spent. It is
// chat.ErrTurnIndeterminate, not a retryable failure: a client told
// "retry" would count on the id being unspent. A claim that applied
// holds its lease until the lease expires, then the table decides the
// turn (indeterminate, as its client was told); a replay before that is
// told ErrSessionBusy.
func unknownClaim(req chat.ClaimRequest, written, resolving error) error {
	return fmt.Errorf("claim session %s: outcome unknown: %v (resolving: %v): %w", req.SessionID, written, resolving, chat.ErrTurnIndeterminate)
}

// claimWrite returns the claim's update and condition: create the
// session, or claim an idle one whose owner matches and whose terminal
// window does not hold the turn id (attribute_not_exists of the id's map
// entry); a decision claim also needs its confirmation pending and
// unexpired, and an existing session; a claim with IfNextOrdinal, the
// session's next ordinal unchanged (ifNextOrdinal).
func claimWrite(req chat.ClaimRequest, token string, now time.Time) (expression.UpdateBuilder, condition) {
	cond := condition{
		expr: createBranch + "#ownerKey = :owner AND attribute_not_exists(#leaseToken) AND attribute_not_exists(#window.#claimed)" +
			" AND attribute_not_exists(#selecting) AND (attribute_not_exists(#queue) OR size(#queue) = :zero)",
		names:   []string{attrOwnerKey, attrLeaseToken, attrWindow, attrSelecting, attrQueue},
		aliases: map[string]string{"#claimed": req.TurnID},
		values:  map[string]types.AttributeValue{":owner": strValue(ownerKey(req.Principal)), ":zero": numValue(0)},
	}
	switch {
	case req.Decision != nil:
		// A decision runs before the session's queued turns, which wait
		// for it (docs/multitask.md).
		cond.expr = "#ownerKey = :owner AND attribute_not_exists(#leaseToken) AND attribute_not_exists(#window.#claimed) AND attribute_not_exists(#selecting)"
		cond.names = []string{attrOwnerKey, attrLeaseToken, attrWindow, attrSelecting}
		delete(cond.values, ":zero")
		cond = decisionCondition(cond, req.Decision, now)
	case req.AheadOfQueue:
		// An interrupt: the queue waits for the turn that replaces the
		// running one.
		cond.expr = createBranch + "#ownerKey = :owner AND attribute_not_exists(#leaseToken) AND attribute_not_exists(#window.#claimed) AND attribute_not_exists(#selecting)"
		cond.names = []string{attrOwnerKey, attrLeaseToken, attrWindow, attrSelecting}
		delete(cond.values, ":zero")
	}
	if req.IfNextOrdinal > 0 {
		cond = ifNextOrdinal(cond, req.IfNextOrdinal)
	}
	one := expression.Value(1)
	up := expression.Set(expression.Name(attrOwnerKey), expression.Value(ownerKey(req.Principal))).
		Set(expression.Name(attrCreatedAt), expression.IfNotExists(expression.Name(attrCreatedAt), expression.Value(millis(now)))).
		// Listed from its creation (conversation.go), so that every session
		// of a principal is in SessionsIndex for EraseSessions to find.
		Set(expression.Name(AttrListedAt), expression.IfNotExists(expression.Name(AttrListedAt), expression.Value(millis(now)))).
		Set(expression.Name(attrSequence), expression.IfNotExists(expression.Name(attrSequence), expression.Value(0))).
		Set(expression.Name(attrRevision), expression.Plus(expression.IfNotExists(expression.Name(attrRevision), expression.Value(0)), one)).
		Set(expression.Name(attrNextOrdinal), expression.Plus(expression.IfNotExists(expression.Name(attrNextOrdinal), one), one)).
		Set(expression.Name(attrLeaseOrdinal), expression.IfNotExists(expression.Name(attrNextOrdinal), one))
	return setClaimFields(up, req, token, now.Add(req.LeaseDuration), now), cond
}

// createBranch starts a claim condition that may create the session:
// where there is no session item, or only a deleted session's tombstone
// (delete.go), which has no owner.
const createBranch = "attribute_not_exists(#ownerKey) OR "

// ifNextOrdinal adds ClaimRequest.IfNextOrdinal to the claim condition c:
// the stored next ordinal is next. A session that does not exist yet
// counts as next ordinal 1, so only then may the claim still create it.
func ifNextOrdinal(c condition, next int64) condition {
	existing, create := strings.CutPrefix(c.expr, createBranch)
	c.expr = existing + " AND #nextOrdinal = :next"
	c.names = append(slices.Clone(c.names), attrNextOrdinal)
	c.values[":next"] = numValue(next)
	if create && next == 1 {
		c.expr = createBranch + c.expr
	}
	return c
}

// holdsToken reports whether the session item holds the lease token.
func holdsToken(item map[string]types.AttributeValue, token string) bool {
	v, ok := item[attrLeaseToken].(*types.AttributeValueMemberS)
	return ok && v.Value == token
}

// setClaimFields sets the lease fields every claim writes, and the
// definition only where the session has none yet (a session keeps its
// definition; the release records the revision a turn ran with).
func setClaimFields(up expression.UpdateBuilder, req chat.ClaimRequest, token string, expiresAt, now time.Time) expression.UpdateBuilder {
	up = up.Set(expression.Name(attrUpdatedAt), expression.Value(millis(now))).
		Set(expression.Name(attrDefinitionRev), expression.IfNotExists(expression.Name(attrDefinitionRev), expression.Value(req.DefinitionRevision))).
		Set(expression.Name(attrLeaseTurnID), expression.Value(req.TurnID)).
		Set(expression.Name(attrLeaseToken), expression.Value(token)).
		Set(expression.Name(attrLeaseExpiresAt), expression.Value(millis(expiresAt))).
		Set(expression.Name(attrLeaseStop), expression.Value(false)).
		Set(expression.Name(attrLeaseAbandoned), expression.Value(false)).
		Set(expression.Name(attrLeaseLineage), expression.Value(toLineageAV(req.Lineage)))
	if req.DefinitionID != "" {
		up = up.Set(expression.Name(attrDefinitionID), expression.IfNotExists(expression.Name(attrDefinitionID), expression.Value(req.DefinitionID)))
	}
	started := req.StartedAt
	if started.IsZero() {
		started = now
	}
	up = up.Set(expression.Name(attrLeaseStartedAt), expression.Value(millis(started)))
	up = setOrRemove(up, attrLeaseAdmission, req.Admission)
	up = setDecision(up, req)
	return setOrRemove(up, attrLeaseInputHash, compactHash(req.InputHash))
}

// setOrRemove sets a string attribute, or removes it when v is empty.
func setOrRemove(up expression.UpdateBuilder, name, v string) expression.UpdateBuilder {
	if v == "" {
		return up.Remove(expression.Name(name))
	}
	return up.Set(expression.Name(name), expression.Value(v))
}

// claimed builds the Claim from the session item a claim wrote. When the
// window is full and does not hold the turn id (the claim condition saw to
// that), the id may belong to an older turn: one Query of TurnIDIndex
// looks, and a found turn gives the claim back and rejects it.
func (s *Store) claimed(ctx context.Context, req chat.ClaimRequest, item map[string]types.AttributeValue) (*chat.Claim, error) {
	sess, _, err := decodeSession(req.SessionID, item)
	if err != nil {
		return nil, err
	}
	if sess.ActiveTurn == nil {
		return nil, fmt.Errorf("claim session %s: written item carries no lease", req.SessionID)
	}
	c := &chat.Claim{Session: *sess, Lease: *sess.ActiveTurn, BaseSequence: sess.Sequence, Created: sess.Revision == 1}
	if !chat.WindowFull(sess.TerminalTurns, s.window) {
		return c, nil
	}
	// The lookup serves the lease just taken: it may use at most half of
	// what is left of it, so that a claim never returns with a lease spent
	// (a hung attempt is cut, and the claim given back).
	lctx, cancel := context.WithTimeout(ctx, max(0, c.Lease.ExpiresAt.Sub(s.now()))/2)
	rejection, err := s.olderTurn(lctx, req)
	cancel()
	if err == nil && rejection == nil {
		return c, nil
	}
	if gerr := s.giveBack(ctx, c); gerr != nil {
		// The lease then expires on its own; the model never ran.
		return nil, fmt.Errorf("claim session %s: give back a rejected claim: %w", req.SessionID, gerr)
	}
	if err != nil {
		return nil, err
	}
	return nil, rejection
}

// olderTurn looks the claimed turn id up among the session's stored turns
// (one Query of TurnIDIndex, reading only what the index projects): the
// rejection of a replay of a turn that left the terminal window, nil when
// no stored turn has the id. A fence record (a crashed turn that saved
// nothing) rejects its id as indeterminate.
func (s *Store) olderTurn(ctx context.Context, req chat.ClaimRequest) (rejection error, err error) {
	ctx = withPurpose(ctx, PurposeLookup)
	item, found, err := s.findTurnItem(ctx, req.SessionID, req.TurnID, turnIDProjection...)
	if err != nil || !found {
		return nil, err
	}
	var it turnItem
	if err := attributevalue.UnmarshalMap(item, &it); err != nil {
		return nil, fmt.Errorf("decode turn of session %s: %w", req.SessionID, err)
	}
	if isFenceRecord(item) || strings.HasPrefix(it.SaveID, fencePrefix) {
		// Lost: closed by a decider, not saved by its own turn. Its
		// outcome is indeterminate, as the terminal window has it.
		e := chat.TerminalEntry{TurnID: it.TurnID, Outcome: chat.OutcomeIndeterminate, InputHash: it.InputHash}
		return chat.Rejection([]chat.TerminalEntry{e}, req.TurnID, req.InputHash), nil
	}
	t := chat.Turn{TurnID: it.TurnID, Status: chat.TurnStatus(it.Status), InputHash: it.InputHash}
	return chat.TurnRejection(&t, req.InputHash), nil
}

// isFenceRecord reports whether a turn item is the fence record of a
// crashed turn that saved nothing: a save writes a save id and a
// checkpoint the live flag, a fence neither.
func isFenceRecord(item map[string]types.AttributeValue) bool {
	_, saved := item[attrSaveID]
	_, live := item[attrLive]
	return !saved && !live
}

// giveBack undoes a claim that must not run: the lease is removed and the
// ordinal returned, conditional on the claim's token (nothing else writes
// the session while it holds the lease). An unknown outcome is resolved
// with one consistent read.
func (s *Store) giveBack(ctx context.Context, c *chat.Claim) error {
	cond := condition{expr: "#leaseToken = :token", names: []string{attrLeaseToken},
		values: map[string]types.AttributeValue{":token": strValue(c.Lease.Token)}}
	up := expression.Set(expression.Name(attrNextOrdinal), expression.Value(c.Lease.Ordinal)).
		Set(expression.Name(attrRevision), expression.Name(attrRevision).Plus(expression.Value(1)))
	for _, a := range leaseAttrs {
		up = up.Remove(expression.Name(a))
	}
	up = undoDecision(up, c)
	err := s.resolvedWrite(ctx, PurposeGiveBack, sessionKey(c.Session.ID), up, cond, func(item map[string]types.AttributeValue) bool {
		return item != nil && !holdsToken(item, c.Lease.Token)
	})
	if failed, _ := conditionFailed(err); failed {
		return nil // the token no longer holds the lease: given back already
	}
	return err
}

// resolvedWrite sends the conditional update under writeContext(ctx) and
// resolves an unknown outcome (any failure but a condition failure) with
// one consistent read of key: applied(item) reports whether the read item
// shows the write's effect (item is nil when absent). It returns nil when
// the write applied, the condition failure, or the write's error when
// the read shows it did not apply (or cannot be made).
func (s *Store) resolvedWrite(ctx context.Context, p Purpose, key map[string]types.AttributeValue, up expression.UpdateBuilder, c condition, applied func(map[string]types.AttributeValue) bool) error {
	ctx = withPurpose(ctx, p)
	wctx, cancel := s.writeContext(ctx)
	_, err := s.update(wctx, p, key, up, c)
	cancel()
	if err == nil {
		return nil
	}
	if failed, _ := conditionFailed(err); failed {
		return err
	}
	item, _, rerr := s.resolveRead(ctx, key) // item nil: absent
	if rerr == nil && applied(item) {
		return nil
	}
	if rerr == nil {
		// Not applied as of the read, but an attempt may still be in
		// flight (a timeout does not cancel it at the server). Send the
		// same write once more: it is idempotent (its condition accepts
		// its own effect), so if it answers, that answer is the outcome
		// whichever copy applied.
		return s.resendWrite(ctx, p, key, up, c, applied, err)
	}
	return err
}

// resendWrite sends a write whose outcome the resolving read left
// unknown once more, under what is left of the resolve budget, and
// classifies its answer like the first: applied (nil), a condition
// failure that the read shows to be the write's own effect (nil), or
// first's error.
func (s *Store) resendWrite(ctx context.Context, p Purpose, key map[string]types.AttributeValue, up expression.UpdateBuilder, c condition, applied func(map[string]types.AttributeValue) bool, first error) error {
	rctx, cancel := s.resolveContext(withPurpose(ctx, p))
	defer cancel()
	_, err := s.update(rctx, p, key, up, c)
	if err == nil {
		return nil
	}
	if failed, _ := conditionFailed(err); failed {
		if item, _, rerr := s.getItem(rctx, key); rerr == nil && applied(item) {
			return nil
		}
		return err
	}
	return first
}

// classifyClaim explains a failed claim condition from the session item
// and performs a takeover of an expired lease: the crashed turn fenced
// and recorded, then recordTakeover.
func (s *Store) classifyClaim(ctx context.Context, req chat.ClaimRequest, item map[string]types.AttributeValue, token string, now time.Time) (*chat.Claim, error) {
	sess, si, err := decodeSession(req.SessionID, item)
	if err != nil {
		return nil, err
	}
	if !req.Principal.Owns(sess.Owner) {
		return nil, chat.ErrSessionNotFound
	}
	if req.IfNextOrdinal > 0 && sess.NextOrdinal != req.IfNextOrdinal {
		return nil, chat.ErrSessionMoved
	}
	if m := si.Selecting; m != nil {
		// A select runs (busy), or one stopped before its end: it is
		// finished first (docs/branches.md), and the claim is answered as
		// one that met a session changing under it.
		if m.ExpiresAt > millis(now) {
			return nil, fmt.Errorf("claim session %s: a select runs: %w", req.SessionID, chat.ErrSessionBusy)
		}
		if err := s.finishSelect(ctx, req.SessionID, m); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("claim session %s: session changed during the claim: %w", req.SessionID, chat.ErrSessionBusy)
	}
	crashed := sess.ActiveTurn
	if crashed != nil && crashed.ExpiresAt.After(now) && si.FencedToken == "" {
		if crashed.TurnID != req.TurnID {
			// A replay of a turn the window already holds gets its
			// decision whoever holds the lease: its id is spent.
			if rejection := chat.Rejection(sess.TerminalTurns, req.TurnID, req.InputHash); rejection != nil {
				return nil, rejection
			}
		}
		return nil, s.busyOrDecided(ctx, req, crashed)
	}
	window, sequence := sess.TerminalTurns, sess.Sequence
	edit := func(up expression.UpdateBuilder) expression.UpdateBuilder { return up }
	if crashed != nil {
		// The lease expired while its turn ran (or its fate is being
		// decided): decide it first (fate.go), so that no late write of
		// that turn can land, and learn whether its save landed before.
		d, err := s.decideTurn(ctx, req.SessionID, item)
		if errors.Is(err, errNotDue) {
			return nil, fmt.Errorf("claim session %s: session changed during the claim: %w", req.SessionID, chat.ErrSessionBusy)
		}
		if err != nil {
			return nil, err
		}
		sess, window, sequence, edit = d.session, d.window(s.window), d.sequence(), d.edit
	} else if !req.AheadOfQueued() && len(chat.Waiting(sess.Queue)) > 0 {
		return nil, chat.ErrSessionQueued
	}
	rejection := chat.Rejection(window, req.TurnID, req.InputHash)
	if rejection == nil && chat.WindowFull(window, s.window) {
		if rejection, err = s.olderTurn(ctx, req); err != nil {
			return nil, err
		}
	}
	if rejection == nil && req.Decision != nil {
		rejection = chat.CheckDecision(sess.Confirmations, req.Decision, now)
	}
	if rejection == nil && !req.AheadOfQueued() && len(chat.Waiting(sess.Queue)) > 0 {
		rejection = chat.ErrSessionQueued // the decided turn left queued turns waiting
	}
	if rejection != nil && crashed == nil {
		return nil, rejection
	}

	return s.recordTakeover(ctx, req, sess, window, sequence, rejection, token, now, edit)
}

// busyOrDecided explains a claim refused by the unexpired lease l: a
// replay of l's own turn whose record is terminal already (saved, its
// release not yet written or left to the lease's expiry) gets that
// record's decision, as the terminal window gives it once the lease is
// released (chat.TurnRejection); one whose holder abandoned the lease
// (AbandonLease: its save unconfirmed) gets ErrTurnIndeterminate, what
// its client was told (ErrTurnIDReused for another input); anything else,
// another turn id or the turn still running, is ErrSessionBusy. One
// consistent read of the turn item, only for a replay of the lease's turn.
func (s *Store) busyOrDecided(ctx context.Context, req chat.ClaimRequest, l *chat.Lease) error {
	if l.TurnID != req.TurnID {
		return chat.ErrSessionBusy
	}
	item, found, err := s.getItem(ctx, turnKey(req.SessionID, l.Ordinal))
	if err == nil && found && tokenOf(item) == l.Token {
		var it turnItem
		if err := attributevalue.UnmarshalMap(item, &it); err == nil && it.Status != "" && chat.TurnStatus(it.Status) != chat.TurnRunning {
			return chat.TurnRejection(&chat.Turn{TurnID: it.TurnID, Status: chat.TurnStatus(it.Status), InputHash: it.InputHash}, req.InputHash)
		}
	}
	if err := l.AbandonedReplay(req.TurnID, req.InputHash); err != nil {
		return err
	}
	return chat.ErrSessionBusy
}

// recordTakeover writes what classifyClaim decided with one
// compare-and-set on the revision it read: the crashed turn's window and
// sequence, and the claim unless rejection is set (then the lease is
// cleared and rejection returned). A compare-and-set whose outcome is
// unknown is resolved with one consistent read: its token (claim) or a
// newer revision (rejection) shows it applied.
func (s *Store) recordTakeover(ctx context.Context, req chat.ClaimRequest, sess *chat.Session, window []chat.TerminalEntry, sequence int64, rejection error, token string, now time.Time, edit func(expression.UpdateBuilder) expression.UpdateBuilder) (*chat.Claim, error) {
	cond := condition{expr: "#revision = :revision", names: []string{attrRevision},
		values: map[string]types.AttributeValue{":revision": numValue(sess.Revision)}}
	up := expression.Set(expression.Name(attrRevision), expression.Value(sess.Revision+1)).
		Set(expression.Name(attrSequence), expression.Value(sequence)).
		Set(expression.Name(attrWindow), expression.Value(windowAV(window))).
		Remove(expression.Name(attrFencedToken))
	up = edit(up)
	if rejection == nil {
		up = up.Set(expression.Name(attrNextOrdinal), expression.Value(sess.NextOrdinal+1)).
			Set(expression.Name(attrLeaseOrdinal), expression.Value(sess.NextOrdinal))
		up = setClaimFields(up, req, token, now.Add(req.LeaseDuration), now)
	} else {
		up = up.Set(expression.Name(attrUpdatedAt), expression.Value(millis(now)))
		for _, a := range leaseAttrs {
			up = up.Remove(expression.Name(a))
		}
	}
	wctx, cancel := s.writeContext(ctx)
	out, err := s.update(wctx, takeoverPurpose(rejection), sessionKey(req.SessionID), up, cond, returnAllNew)
	cancel()
	if err == nil {
		if rejection != nil {
			return nil, rejection
		}
		return s.claimFromTakeover(req, out.Attributes)
	}
	written := err // the write's own error, before its condition is read as a lost race
	if failed, _ := conditionFailed(err); failed && rejection == nil {
		// An SDK retry of a compare-and-set that applied fails its own
		// condition: the read below recognises the token.
		err = fmt.Errorf("claim session %s: lost a compare-and-set: %w", req.SessionID, chat.ErrSessionBusy)
	} else if failed {
		return s.reclassify(ctx, req, token, fmt.Errorf("claim session %s: lost a compare-and-set: %w", req.SessionID, chat.ErrSessionBusy))
	}
	item, found, rerr := s.resolveRead(ctx, sessionKey(req.SessionID))
	switch {
	case rerr != nil && rejection == nil:
		// Unknown: the compare-and-set may be this claim's own, applied
		// with its answer lost. Not ErrSessionBusy, which would tell the
		// client the session is another turn's.
		return nil, unknownClaim(req, written, rerr)
	case rerr != nil:
		// A rejection's write claims nothing: whether or not it applied,
		// the turn id of this claim is unspent.
		return nil, fmt.Errorf("claim session %s: record the crashed turn: %v (resolving: %w)", req.SessionID, written, rerr)
	case rejection == nil && found && holdsToken(item, token):
		return s.claimFromTakeover(req, item)
	case rejection != nil && found && revisionOf(item) > sess.Revision:
		return nil, rejection // recorded, or changed by another claim: either way rejected
	}
	return nil, err
}

// claimFromTakeover builds the Claim of a takeover from the item written
// (the olderTurn lookup, when the window was full, was done before).
func (s *Store) claimFromTakeover(req chat.ClaimRequest, item map[string]types.AttributeValue) (*chat.Claim, error) {
	sess, _, err := decodeSession(req.SessionID, item)
	if err != nil {
		return nil, err
	}
	if sess.ActiveTurn == nil {
		return nil, fmt.Errorf("claim session %s: written item carries no lease", req.SessionID)
	}
	return &chat.Claim{Session: *sess, Lease: *sess.ActiveTurn, BaseSequence: sess.Sequence}, nil
}

// revisionOf returns the session item's revision (0 if unreadable).
func revisionOf(item map[string]types.AttributeValue) int64 {
	var si sessionItem
	if attributevalue.UnmarshalMap(item, &si) != nil {
		return 0
	}
	return si.Revision
}

// fencePrefix starts the fence token that deciding a turn writes in
// place of its lease token (fate.go); no claim's token has it (tokens
// are base64url).
const fencePrefix = "fence:"

// tokenOf returns an item's leaseToken ("" if absent).
func tokenOf(item map[string]types.AttributeValue) string {
	v, _ := item[attrLeaseToken].(*types.AttributeValueMemberS)
	if v == nil {
		return ""
	}
	return v.Value
}

// takeoverPurpose is the purpose of a takeover's compare-and-set: one
// that claims, or one that records a rejected turn id's crashed turn.
func takeoverPurpose(rejection error) Purpose {
	if rejection != nil {
		return PurposeTakeoverRecord
	}
	return PurposeTakeover
}

type reclassifiedKey struct{}

// reclassify answers a rejected claim whose record lost its
// compare-and-set (busy): another writer changed the session between the
// claim's read and its record, typically a read or another claim that
// decided the same expired lease. The claim's turn id may be decided by
// that writer (a replay of the very turn whose lease expired is), so the
// claim is classified once more from the session as one consistent read
// finds it: its rejection then comes from the session's own record (or,
// if the session now takes it, its claim). A claim classified once more
// already, or a session that cannot be read, is busy.
func (s *Store) reclassify(ctx context.Context, req chat.ClaimRequest, token string, busy error) (*chat.Claim, error) {
	if ctx.Value(reclassifiedKey{}) != nil {
		return nil, busy
	}
	item, found, err := s.resolveRead(ctx, sessionKey(req.SessionID))
	if err != nil || !found {
		return nil, busy
	}
	return s.classifyClaim(context.WithValue(ctx, reclassifiedKey{}, true), req, item, token, s.now())
}
