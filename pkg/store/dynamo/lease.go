package dynamo

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/turnstream/turnstream/pkg/chat"
)

// AbandonLease implements chat.Store: one UpdateItem setting the lease's
// abandoned flag, conditional on c's token and no fence (a retry after it
// applied passes again, the flag being set already); a failed condition is
// ErrLeaseLost.
func (s *Store) AbandonLease(ctx context.Context, c *chat.Claim) error {
	ctx = withPurpose(ctx, PurposeAbandon)
	now := s.now()
	cond := condition{
		expr:   "#leaseToken = :token AND attribute_not_exists(#fencedToken)",
		names:  []string{attrLeaseToken, attrFencedToken},
		values: map[string]types.AttributeValue{":token": strValue(c.Lease.Token)},
	}
	up := expression.Set(expression.Name(attrLeaseAbandoned), expression.Value(true)).
		Set(expression.Name(attrUpdatedAt), expression.Value(millis(now))).
		Set(expression.Name(attrRevision), expression.Name(attrRevision).Plus(expression.Value(1)))
	wctx, cancel := s.writeContext(ctx)
	defer cancel()
	if _, err := s.update(wctx, PurposeAbandon, sessionKey(c.Session.ID), up, cond); err != nil {
		if failed, _ := conditionFailed(err); failed {
			return fmt.Errorf("abandon the lease of turn %s in session %s: %w", c.Lease.TurnID, c.Session.ID, chat.ErrLeaseLost)
		}
		return fmt.Errorf("abandon the lease of turn %s in session %s: %w", c.Lease.TurnID, c.Session.ID, err)
	}
	return nil
}

// RenewLease implements chat.Store: one UpdateItem conditional on the
// token, the turn id, an unexpired lease and a stored expiry not after
// the new one (so an older renewal delivered late cannot move the expiry
// back under a turn that proved a later one). An expired lease protects
// nothing, so its holder cannot renew it even before its fate is
// decided; it can still save and release (ReleaseTurn). A retried renewal
// that had applied passes its condition again; an unknown outcome is
// resolved with one consistent read (the stored expiry equals the
// requested one).
func (s *Store) RenewLease(ctx context.Context, req chat.RenewRequest) (*chat.Lease, error) {
	ctx = withPurpose(ctx, PurposeRenew)
	if err := req.Validate(); err != nil {
		return nil, err
	}
	c := req.Claim
	now := s.now()
	cond := condition{
		expr:  "#leaseToken = :token AND #leaseTurnId = :turnId AND #leaseExpiresAt > :now AND #leaseExpiresAt <= :expires",
		names: []string{attrLeaseToken, attrLeaseTurnID, attrLeaseExpiresAt},
		values: map[string]types.AttributeValue{
			":token": strValue(c.Lease.Token), ":turnId": strValue(c.Lease.TurnID), ":now": numValue(millis(now)),
			":expires": numValue(millis(req.ExpiresAt))},
	}
	up := expression.Set(expression.Name(attrLeaseExpiresAt), expression.Value(millis(req.ExpiresAt))).
		Set(expression.Name(attrSequence), expression.Value(req.Sequence)).
		Set(expression.Name(attrUpdatedAt), expression.Value(millis(now))).
		Set(expression.Name(attrRevision), expression.Name(attrRevision).Plus(expression.Value(1)))
	key := sessionKey(c.Session.ID)
	wctx, cancel := s.writeContext(ctx)
	out, err := s.update(wctx, PurposeRenew, key, up, cond, returnAllNew)
	cancel()
	item := map[string]types.AttributeValue(nil)
	switch failed, _ := conditionFailed(err); {
	case err == nil:
		item = out.Attributes
	case failed:
		return nil, chat.ErrLeaseLost
	default:
		read, found, rerr := s.resolveRead(ctx, key)
		if rerr != nil {
			return nil, fmt.Errorf("renew lease of session %s: %w (resolving: %v)", c.Session.ID, err, rerr)
		}
		if !found || !holdsToken(read, c.Lease.Token) {
			return nil, chat.ErrLeaseLost
		}
		if _, si, derr := decodeSession(c.Session.ID, read); derr != nil || si.LeaseExpiresAt != millis(req.ExpiresAt) {
			return nil, fmt.Errorf("renew lease of session %s: %w", c.Session.ID, err) // not applied
		}
		item = read
	}
	sess, _, err := decodeSession(c.Session.ID, item)
	if err != nil {
		return nil, err
	}
	if sess.ActiveTurn == nil {
		return nil, fmt.Errorf("renew lease of session %s: written item carries no lease", c.Session.ID)
	}
	return sess.ActiveTurn, nil
}

// RequestStop implements chat.Store: one UpdateItem conditional on the
// owner and an unexpired lease of turnID (a retry after an applied stop
// passes again); a failure is classified, and an unknown outcome
// resolved, with one consistent read. The flag on the session's lease is
// the stop: once it is written the stop succeeds, and the copy on the
// turn's live item (stopLiveOf), which lets a checkpoint's answer carry
// it, is written after it without deciding the outcome (a turn whose
// checkpoints fail reads the lease's flag instead, Checkpoint).
func (s *Store) RequestStop(ctx context.Context, sessionID, turnID string, p chat.Principal) error {
	ctx = withPurpose(ctx, PurposeStop)
	now := s.now()
	cond := condition{
		expr:  "#ownerKey = :owner AND #leaseTurnId = :turnId AND #leaseExpiresAt > :now AND attribute_not_exists(#fencedToken)",
		names: []string{attrOwnerKey, attrLeaseTurnID, attrLeaseExpiresAt, attrFencedToken},
		values: map[string]types.AttributeValue{
			":owner": strValue(ownerKey(p)), ":turnId": strValue(turnID), ":now": numValue(millis(now))},
	}
	up := expression.Set(expression.Name(attrLeaseStop), expression.Value(true)).
		Set(expression.Name(attrUpdatedAt), expression.Value(millis(now))).
		Set(expression.Name(attrRevision), expression.Name(attrRevision).Plus(expression.Value(1)))
	wctx, cancel := s.writeContext(ctx)
	out, err := s.update(wctx, PurposeStop, sessionKey(sessionID), up, cond, returnAllNew)
	cancel()
	if err == nil {
		return s.stopLiveOf(ctx, sessionID, out.Attributes)
	}
	failed, _ := conditionFailed(err)
	item, found, rerr := s.resolveRead(ctx, sessionKey(sessionID))
	if rerr != nil {
		return fmt.Errorf("request stop in session %s: %w (resolving: %v)", sessionID, err, rerr)
	}
	if !found {
		return chat.ErrSessionNotFound
	}
	sess, _, rerr := decodeSession(sessionID, item)
	if rerr != nil {
		return rerr
	}
	if !p.Owns(sess.Owner) {
		return chat.ErrSessionNotFound
	}
	l := sess.ActiveTurn
	if !failed {
		if l != nil && l.TurnID == turnID && l.Stop {
			return s.stopLiveOf(ctx, sessionID, item) // applied
		}
		return fmt.Errorf("request stop in session %s: %w", sessionID, err)
	}
	return chat.ErrTurnNotActive
}

// stopLiveOf sets the stop flag on the checkpoint live item of the lease
// in the session item (see stopLive), whose lease flag is written: a
// failure of that second write does not undo the stop, so it is not
// returned. The turn then sees the stop at its next checkpoint that
// fails (which reads the lease's flag) or at its next renewal.
func (s *Store) stopLiveOf(ctx context.Context, sessionID string, item map[string]types.AttributeValue) error {
	_, si, err := decodeSession(sessionID, item)
	if err != nil || si.LeaseToken == "" {
		return nil // the lease's flag was written; nothing names the live item
	}
	_ = s.stopLive(ctx, sessionID, si.LeaseOrdinal, si.LeaseToken)
	return nil
}

// ReleaseTurn implements chat.Store: one UpdateItem conditional on the
// token and turn id that removes the lease, writes the sequence and the
// terminal window computed from the claim's window (the window cannot
// change while the lease is held). A failed condition or an unknown
// outcome is classified with one consistent read: a release already done
// with this token (an SDK retry of an applied release included) is nil.
func (s *Store) ReleaseTurn(ctx context.Context, req chat.ReleaseRequest) (*chat.Session, error) {
	ctx = withPurpose(ctx, PurposeRelease)
	if err := req.Validate(); err != nil {
		return nil, err
	}
	c := req.Claim
	cond := condition{
		expr:   "#leaseToken = :token AND #leaseTurnId = :turnId",
		names:  []string{attrLeaseToken, attrLeaseTurnID},
		values: map[string]types.AttributeValue{":token": strValue(c.Lease.Token), ":turnId": strValue(c.Lease.TurnID)},
	}
	now := s.now()
	up := expression.Set(expression.Name(attrWindow), expression.Value(windowAV(req.Window(s.window)))).
		Set(expression.Name(attrSequence), expression.Value(req.Sequence)).
		Set(expression.Name(attrReleasedToken), expression.Value(c.Lease.Token)).
		Set(expression.Name(attrUpdatedAt), expression.Value(millis(now))).
		Set(expression.Name(attrRevision), expression.Name(attrRevision).Plus(expression.Value(1)))
	up = listWrite(up, req.Listing, now)
	if req.DefinitionRevision > 0 {
		up = up.Set(expression.Name(attrDefinitionRev), expression.Value(req.DefinitionRevision))
	}
	up = settleConfirmations(up, req, now)
	for _, a := range leaseAttrs {
		up = up.Remove(expression.Name(a))
	}
	if startedEntry(&c.Session, c.Lease.Ordinal) != nil {
		up = up.Remove(expression.Name(queuePath(c.Lease.TurnID))) // a queued turn that ran
	}
	key := sessionKey(c.Session.ID)
	wctx, cancel := s.writeContext(ctx)
	out, err := s.update(wctx, PurposeRelease, key, up, cond, returnAllNew, returnOldOnFailure)
	cancel()
	if err == nil {
		sess, _, derr := decodeSession(c.Session.ID, out.Attributes)
		return sess, derr
	}
	failed, item := conditionFailed(err)
	if item == nil {
		var found bool
		var rerr error
		if item, found, rerr = s.resolveRead(ctx, key); rerr != nil {
			return nil, fmt.Errorf("release turn of session %s: %w (resolving: %v)", c.Session.ID, err, rerr)
		}
		if !found {
			return nil, chat.ErrLeaseLost
		}
	}
	sess, si, derr := decodeSession(c.Session.ID, item)
	if derr != nil {
		return nil, derr
	}
	if !failed && si.LeaseToken == c.Lease.Token {
		return s.resendRelease(ctx, c, up, cond, err)
	}
	if err := releasedOrLost(si, c.Lease.Token); err != nil {
		return nil, err
	}
	if failed {
		return nil, nil // released before (a retry): the session has moved on since
	}
	return sess, nil // this release, resolved by the read
}

// resendRelease sends a release whose first outcome is unknown, and which
// the resolving read showed not applied, once more (an attempt may still
// be in flight): its answer, or on a condition failure the released token
// one more read shows, is the outcome; otherwise first: it did not apply.
func (s *Store) resendRelease(ctx context.Context, c *chat.Claim, up expression.UpdateBuilder, cond condition, first error) (*chat.Session, error) {
	key := sessionKey(c.Session.ID)
	rctx, cancel := s.resolveContext(ctx)
	defer cancel()
	out, err := s.update(rctx, PurposeRelease, key, up, cond, returnAllNew)
	if err == nil {
		sess, _, derr := decodeSession(c.Session.ID, out.Attributes)
		return sess, derr
	}
	if again, _ := conditionFailed(err); again {
		if item, found, gerr := s.getItem(rctx, key); gerr == nil && found {
			if sess, si, derr := decodeSession(c.Session.ID, item); derr == nil {
				if err := releasedOrLost(si, c.Lease.Token); err != nil {
					return nil, err
				}
				return sess, nil
			}
		}
	}
	return nil, fmt.Errorf("release turn of session %s: %w", c.Session.ID, first)
}

// releasedOrLost classifies a release whose token does not hold the
// lease: nil if the last release was made with that token, else
// ErrLeaseLost.
func releasedOrLost(si *sessionItem, token string) error {
	if si.ReleasedToken == token && si.LeaseToken != token {
		return nil
	}
	return chat.ErrLeaseLost
}
