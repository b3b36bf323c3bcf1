package dynamo

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/turnstream/turnstream/pkg/chat"
)

// ClaimTurn implements chat.Store (DESIGN §4). Happy path: one
// conditional UpdateItem that creates the session or claims an idle one
// whose owner matches and whose terminal window does not hold the turn id.
// When that condition fails, one consistent read (or the item returned
// with the failure) classifies the rejection; a lease that expired while
// its turn ran is taken over with a compare-and-set on the session
// revision (a third request), and so is a claimable session whose state
// changed between the two requests. A lost compare-and-set is
// ErrSessionBusy (retryable).
func (s *Store) ClaimTurn(ctx context.Context, req chat.ClaimRequest) (*chat.Claim, error) {
	if req.SessionID == "" || req.TurnID == "" || req.LeaseDuration <= 0 {
		return nil, fmt.Errorf("%w: claim needs a session id, a turn id and a positive lease duration", chat.ErrInvalidRequest)
	}
	now := s.now()
	token := newToken()
	expiresAt := now.Add(req.LeaseDuration)

	cond := condition{
		expr:  "attribute_not_exists(#pk) OR #ownerKey = :owner AND attribute_not_exists(#leaseToken) AND NOT contains(#windowIds, :turnId)",
		names: []string{AttrPK, attrOwnerKey, attrLeaseToken, attrWindowIDs},
		values: map[string]types.AttributeValue{
			":owner":  strValue(ownerKey(req.Principal)),
			":turnId": strValue(req.TurnID),
		},
	}
	one := expression.Value(1)
	up := expression.Set(expression.Name(attrOwnerKey), expression.Value(ownerKey(req.Principal))).
		Set(expression.Name(attrCreatedAt), expression.IfNotExists(expression.Name(attrCreatedAt), expression.Value(millis(now)))).
		Set(expression.Name(attrCursor), expression.IfNotExists(expression.Name(attrCursor), expression.Value(0))).
		Set(expression.Name(attrRevision), expression.Plus(expression.IfNotExists(expression.Name(attrRevision), expression.Value(0)), one)).
		Set(expression.Name(attrNextOrdinal), expression.Plus(expression.IfNotExists(expression.Name(attrNextOrdinal), one), one)).
		Set(expression.Name(attrLeaseOrdinal), expression.IfNotExists(expression.Name(attrNextOrdinal), one))
	up = setClaimFields(up, req, token, expiresAt, now)
	out, err := s.update(ctx, sessionKey(req.SessionID), up, cond, returnAllNew, returnOldOnFailure)
	if err == nil {
		return s.claimed(req, out.Attributes)
	}
	failed, item := conditionFailed(err)
	if !failed {
		return nil, fmt.Errorf("claim session %s: %w", req.SessionID, err)
	}
	return s.classifyClaim(ctx, req, item, token, now)
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
		Set(expression.Name(attrLeaseLineage), expression.Value(toLineageAV(req.Lineage)))
	if req.DefinitionID != "" {
		up = up.Set(expression.Name(attrDefinitionID), expression.IfNotExists(expression.Name(attrDefinitionID), expression.Value(req.DefinitionID)))
	}
	return setOrRemove(up, attrLeaseInputHash, req.InputHash)
}

// setOrRemove sets a string attribute, or removes it when v is empty.
func setOrRemove(up expression.UpdateBuilder, name, v string) expression.UpdateBuilder {
	if v == "" {
		return up.Remove(expression.Name(name))
	}
	return up.Set(expression.Name(name), expression.Value(v))
}

// claimed builds the Claim from the session item a claim wrote and
// remembers it for the lease's later calls.
func (s *Store) claimed(req chat.ClaimRequest, item map[string]types.AttributeValue) (*chat.Claim, error) {
	sess, _, err := decodeSession(req.SessionID, item)
	if err != nil {
		return nil, err
	}
	if sess.ActiveTurn == nil {
		return nil, fmt.Errorf("claim session %s: written item carries no lease", req.SessionID)
	}
	lease := *sess.ActiveTurn
	s.remember(lease.Token, &claimMemo{
		sessionID: req.SessionID,
		turnID:    req.TurnID,
		ordinal:   lease.Ordinal,
		owner:     sess.Owner,
		inputHash: lease.InputHash,
		window:    append([]chat.TerminalEntry(nil), sess.TerminalTurns...),
		expiresAt: lease.ExpiresAt,
	})
	return &chat.Claim{Session: *sess, Lease: lease, BaseSequence: sess.Cursor, Created: sess.Revision == 1}, nil
}

// classifyClaim explains a failed claim condition from the session item
// (read consistently unless the failure carried it) and performs a
// takeover of an expired lease.
func (s *Store) classifyClaim(ctx context.Context, req chat.ClaimRequest, item map[string]types.AttributeValue, token string, now time.Time) (*chat.Claim, error) {
	if item == nil {
		var err error
		if item, err = s.getSessionItem(ctx, req.SessionID); err != nil {
			return nil, err
		}
		if item == nil { // it existed when the condition failed: a race
			return nil, fmt.Errorf("claim session %s: session changed during the claim: %w", req.SessionID, chat.ErrSessionBusy)
		}
	}
	sess, _, err := decodeSession(req.SessionID, item)
	if err != nil {
		return nil, err
	}
	if !req.Principal.Owns(sess.Owner) {
		return nil, chat.ErrSessionNotFound
	}
	crashed := sess.ActiveTurn
	if crashed != nil && crashed.ExpiresAt.After(now) {
		return nil, chat.ErrSessionBusy
	}
	window, cursor := sess.TerminalTurns, sess.Cursor
	if crashed != nil {
		// The lease expired while its turn ran (DESIGN §4): its outcome is
		// unknown and it may have emitted sequences past the stored cursor.
		window = appendTerminal(window, chat.TerminalEntry{
			TurnID: crashed.TurnID, Outcome: chat.OutcomeIndeterminate, InputHash: crashed.InputHash})
		cursor += chat.SequenceGapAfterCrash
	}
	rejection := windowRejection(window, req)
	if rejection != nil && crashed == nil {
		return nil, rejection
	}

	// Compare-and-set on the revision read: record the crashed turn, and
	// claim unless the turn id was rejected.
	w, ids, hasIDs := windowValues(window)
	cond := condition{expr: "#revision = :revision", names: []string{attrRevision},
		values: map[string]types.AttributeValue{":revision": numValue(sess.Revision)}}
	up := expression.Set(expression.Name(attrRevision), expression.Value(sess.Revision+1)).
		Set(expression.Name(attrCursor), expression.Value(cursor)).
		Set(expression.Name(attrWindow), w)
	if hasIDs {
		up = up.Set(expression.Name(attrWindowIDs), ids)
	} else {
		up = up.Remove(expression.Name(attrWindowIDs))
	}
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
	out, err := s.update(ctx, sessionKey(req.SessionID), up, cond, returnAllNew)
	if failed, _ := conditionFailed(err); failed {
		return nil, fmt.Errorf("claim session %s: lost a compare-and-set: %w", req.SessionID, chat.ErrSessionBusy)
	}
	if err != nil {
		return nil, fmt.Errorf("claim session %s: %w", req.SessionID, err)
	}
	if rejection != nil {
		return nil, rejection
	}
	return s.claimed(req, out.Attributes)
}

// windowRejection returns the error for a turn id found in the terminal
// window (DESIGN §4), nil if it is not there.
func windowRejection(window []chat.TerminalEntry, req chat.ClaimRequest) error {
	for _, e := range window {
		if e.TurnID != req.TurnID {
			continue
		}
		switch {
		case e.InputHash != req.InputHash:
			return chat.ErrTurnIDReused
		case e.Outcome == chat.OutcomeCompleted:
			return chat.ErrTurnCompleted
		default:
			return chat.ErrTurnIndeterminate
		}
	}
	return nil
}

// windowValues returns the stored forms of a terminal window: the ordered
// list and the string set of its turn ids, which exists only when the
// window is not empty (DynamoDB has no empty sets).
func windowValues(window []chat.TerminalEntry) (list, ids expression.ValueBuilder, hasIDs bool) {
	w, idList := windowAV(window)
	list = expression.Value(w)
	if len(idList) == 0 {
		return list, expression.ValueBuilder{}, false
	}
	return list, expression.Value(&types.AttributeValueMemberSS{Value: idList}), true
}

// RenewLease implements chat.Store: one UpdateItem conditional on the
// token, the turn id and an unexpired lease. An expired lease protects
// nothing, so its holder cannot renew it even before another turn takes
// over; it can still release it (ReleaseTurn).
func (s *Store) RenewLease(ctx context.Context, req chat.RenewRequest) (*chat.Lease, error) {
	now := s.now()
	cond := condition{
		expr:  "#leaseToken = :token AND #leaseTurnId = :turnId AND #leaseExpiresAt > :now",
		names: []string{attrLeaseToken, attrLeaseTurnID, attrLeaseExpiresAt},
		values: map[string]types.AttributeValue{
			":token": strValue(req.Token), ":turnId": strValue(req.TurnID), ":now": numValue(millis(now))},
	}
	up := expression.Set(expression.Name(attrLeaseExpiresAt), expression.Value(millis(req.ExpiresAt))).
		Set(expression.Name(attrCursor), expression.Value(req.Cursor)).
		Set(expression.Name(attrUpdatedAt), expression.Value(millis(now))).
		Set(expression.Name(attrRevision), expression.Name(attrRevision).Plus(expression.Value(1)))
	out, err := s.update(ctx, sessionKey(req.SessionID), up, cond, returnAllNew)
	if failed, _ := conditionFailed(err); failed {
		return nil, chat.ErrLeaseLost
	}
	if err != nil {
		return nil, fmt.Errorf("renew lease of session %s: %w", req.SessionID, err)
	}
	sess, _, err := decodeSession(req.SessionID, out.Attributes)
	if err != nil {
		return nil, err
	}
	if sess.ActiveTurn == nil {
		return nil, fmt.Errorf("renew lease of session %s: written item carries no lease", req.SessionID)
	}
	if m := s.memo(req.Token); m != nil {
		s.mu.Lock()
		m.expiresAt = sess.ActiveTurn.ExpiresAt
		s.mu.Unlock()
	}
	return sess.ActiveTurn, nil
}

// RequestStop implements chat.Store: one UpdateItem conditional on the
// owner and an unexpired lease of turnID; a failure is classified with
// one consistent read.
func (s *Store) RequestStop(ctx context.Context, sessionID, turnID string, p chat.Principal) error {
	now := s.now()
	cond := condition{
		expr:  "#ownerKey = :owner AND #leaseTurnId = :turnId AND #leaseExpiresAt > :now",
		names: []string{attrOwnerKey, attrLeaseTurnID, attrLeaseExpiresAt},
		values: map[string]types.AttributeValue{
			":owner": strValue(ownerKey(p)), ":turnId": strValue(turnID), ":now": numValue(millis(now))},
	}
	up := expression.Set(expression.Name(attrLeaseStop), expression.Value(true)).
		Set(expression.Name(attrUpdatedAt), expression.Value(millis(now))).
		Set(expression.Name(attrRevision), expression.Name(attrRevision).Plus(expression.Value(1)))
	_, err := s.update(ctx, sessionKey(sessionID), up, cond)
	if err == nil {
		return nil
	}
	if failed, _ := conditionFailed(err); !failed {
		return fmt.Errorf("request stop in session %s: %w", sessionID, err)
	}
	sess, _, err := s.readSession(ctx, sessionID)
	if err != nil {
		return err
	}
	if sess == nil || !p.Owns(sess.Owner) {
		return chat.ErrSessionNotFound
	}
	return chat.ErrTurnNotActive
}

// ReleaseTurn implements chat.Store: one UpdateItem conditional on the
// token and turn id that removes the lease, writes the cursor and the
// terminal window computed from the claim's (remembered) window. Without
// that memory (another Store instance) the session is read first. A
// failed condition is classified with one consistent read: a release
// already done with this token is nil.
func (s *Store) ReleaseTurn(ctx context.Context, req chat.ReleaseRequest) error {
	if req.Outcome != chat.OutcomeCompleted && req.Outcome != chat.OutcomeIndeterminate {
		return fmt.Errorf("%w: unknown outcome", chat.ErrInvalidRequest)
	}
	defer s.forget(req.Token)
	var window []chat.TerminalEntry
	var inputHash string
	if m := s.memo(req.Token); m != nil && m.sessionID == req.SessionID && m.turnID == req.TurnID {
		window, inputHash = m.window, m.inputHash
	} else {
		sess, si, err := s.readSession(ctx, req.SessionID)
		if err != nil {
			return err
		}
		if sess == nil {
			return chat.ErrLeaseLost
		}
		if si.LeaseToken != req.Token || si.LeaseTurnID != req.TurnID {
			return releasedOrLost(si, req.Token)
		}
		window, inputHash = sess.TerminalTurns, si.LeaseInputHash
	}
	window = appendTerminal(window, chat.TerminalEntry{TurnID: req.TurnID, Outcome: req.Outcome, InputHash: inputHash})
	w, ids, _ := windowValues(window) // never empty: it holds this turn
	cond := condition{
		expr:   "#leaseToken = :token AND #leaseTurnId = :turnId",
		names:  []string{attrLeaseToken, attrLeaseTurnID},
		values: map[string]types.AttributeValue{":token": strValue(req.Token), ":turnId": strValue(req.TurnID)},
	}
	up := expression.Set(expression.Name(attrWindow), w).
		Set(expression.Name(attrWindowIDs), ids).
		Set(expression.Name(attrCursor), expression.Value(req.Cursor)).
		Set(expression.Name(attrReleasedToken), expression.Value(req.Token)).
		Set(expression.Name(attrUpdatedAt), expression.Value(millis(s.now()))).
		Set(expression.Name(attrRevision), expression.Name(attrRevision).Plus(expression.Value(1)))
	if req.DefinitionRevision > 0 {
		up = up.Set(expression.Name(attrDefinitionRev), expression.Value(req.DefinitionRevision))
	}
	for _, a := range leaseAttrs {
		up = up.Remove(expression.Name(a))
	}
	_, err := s.update(ctx, sessionKey(req.SessionID), up, cond, returnOldOnFailure)
	if err == nil {
		return nil
	}
	failed, item := conditionFailed(err)
	if !failed {
		return fmt.Errorf("release turn of session %s: %w", req.SessionID, err)
	}
	if item == nil {
		if item, err = s.getSessionItem(ctx, req.SessionID); err != nil {
			return err
		}
		if item == nil {
			return chat.ErrLeaseLost
		}
	}
	_, si, err := decodeSession(req.SessionID, item)
	if err != nil {
		return err
	}
	return releasedOrLost(si, req.Token)
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
