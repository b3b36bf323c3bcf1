package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// Deciding a turn's fate (chat.Store; docs/durable-turns.md). A turn
// whose lease expired without a release is decided by whoever meets it
// first (a claim, a history read, a resume), in four conditional writes,
// each recognising its own effect and each safe to repeat by another
// process that finds the decision half done:
//
//  1. the session item: conditional on the lease still holding the
//     turn's token and having expired (by the decider's clock), the token
//     is replaced by a fence token and kept in fencedToken. From here no
//     renewal, release or stop of the turn can apply, and the session
//     shows the decision in progress;
//  2. the live item: its token becomes the fence token, so no checkpoint
//     of the turn counts any more (an absent live item is created
//     fenced);
//  3. the turn item: read with its checkpoints, then, conditional on
//     still running under the turn's token, closed as error TURN_LOST
//     with its checkpoints folded in and the terminal sequence (the
//     session's sequence plus chat.SequenceGapAfterCrash). If the turn's
//     save landed first, that save is its fate (outcome completed). A
//     turn that wrote no item gets a fence record that keeps its id
//     taken;
//  4. the session item, conditional on the revision the fence left:
//     the lease and fencedToken removed, the turn entered in the terminal
//     window, the sequence set to the terminal sequence; or, for a claim,
//     its own lease taken in the same write (recordTakeover).
//
// The turn item's write (step 3) is where the fate is decided: the
// turn's own save is conditional on the same running item, so exactly
// one of them lands.

// attrFencedToken holds, on a session item whose turn is being decided,
// that turn's lease token (leaseToken then holds the fence token).
const attrFencedToken = "fencedToken"

// errNotDue reports that a session's lease is not one to decide: none,
// or unexpired.
var errNotDue = errors.New("dynamo: no expired lease to decide")

// decided is a turn decided by decideTurn, before the session is freed.
type decided struct {
	si      *sessionItem // the session item as fenced
	session *chat.Session
	crashed *chat.Lease // the decided turn's lease, its token the turn's
	outcome chat.TerminalOutcome
	// lost is the decided turn's terminal sequence, the session's next
	// base sequence.
	lost int64
	// requeue is set when the lease was a queued turn's whose claim died
	// before the turn was acknowledged: it never started, and waits
	// again (queue.go); and for a claim withdrawn (WithdrawClaim): it
	// never started, and nothing records it.
	requeue bool
}

// window returns the terminal window step 4 writes.
func (d *decided) window(size int) []chat.TerminalEntry {
	if d.requeue {
		return d.session.TerminalTurns
	}
	return chat.AppendTerminal(d.session.TerminalTurns, d.crashed.Terminal(d.outcome), size)
}

// sequence is the session's sequence step 4 writes: the lost turn's
// terminal one, or the stored one for a requeued turn, which streamed
// nothing.
func (d *decided) sequence() int64 {
	if d.requeue {
		return d.si.Sequence
	}
	return d.lost
}

// edit adds to step 4's update what becomes of the lease's queued turn
// (queueAfterDecision).
func (d *decided) edit(up expression.UpdateBuilder) expression.UpdateBuilder {
	return queueAfterDecision(up, d)
}

// decideTurn performs steps 1-3 for the session item as read: errNotDue
// when its lease is not expired (or absent) and no decision is in
// progress. A decision another process started is completed with its
// fence token.
func (s *Store) decideTurn(ctx context.Context, sessionID string, item map[string]types.AttributeValue) (*decided, error) {
	_, si, err := decodeSession(sessionID, item)
	if err != nil {
		return nil, err
	}
	now := s.now()
	if si.FencedToken == "" {
		if si.LeaseToken == "" || si.LeaseExpiresAt > millis(now) {
			return nil, errNotDue
		}
		if item, err = s.fenceSession(ctx, sessionID, si, now); err != nil {
			return nil, err
		}
	}
	sess, si, err := decodeSession(sessionID, item)
	if err != nil {
		return nil, err
	}
	crashed := si.lease()
	crashed.Token = si.FencedToken
	d := &decided{si: si, session: sess, crashed: crashed, lost: si.Sequence + chat.SequenceGapAfterCrash}
	if err := s.fenceLive(ctx, sessionID, si.LeaseOrdinal, crashed.Token, si.LeaseToken); err != nil {
		return nil, err
	}
	queued := startedEntry(sess, crashed.Ordinal) != nil
	var usage chat.Usage
	if d.outcome, d.requeue, usage, err = s.fenceTurn(ctx, sessionID, crashed, si.LeaseToken, si.OwnerKey, d.lost, queued); err != nil {
		return nil, err
	}
	if !d.requeue {
		// Counted before the session is freed (step 4), so that a
		// session's turns are counted in ordinal order; a decider that
		// finds this done completes it again, counting nothing twice.
		if err := s.countDecided(ctx, sessionID, sess.Owner, crashed, usage); err != nil {
			return nil, fmt.Errorf("decide the turn of session %s: %w", sessionID, err)
		}
	}
	return d, nil
}

// fenceSession is step 1: the expired lease's token is replaced by a new
// fence token, conditional on the lease still holding that token and
// having expired at now. It returns the session item as fenced: this
// write's, or, when it failed, a decision another process started. When
// the lease no longer needs deciding (released, renewed, decided and
// cleared), errNotDue.
func (s *Store) fenceSession(ctx context.Context, sessionID string, si *sessionItem, now time.Time) (map[string]types.AttributeValue, error) {
	fence := fencePrefix + newToken()
	cond := condition{
		expr:  "#leaseToken = :crashed AND #leaseExpiresAt <= :now",
		names: []string{attrLeaseToken, attrLeaseExpiresAt},
		values: map[string]types.AttributeValue{
			":crashed": strValue(si.LeaseToken), ":now": numValue(millis(now))},
	}
	up := expression.Set(expression.Name(attrLeaseToken), expression.Value(fence)).
		Set(expression.Name(attrFencedToken), expression.Value(si.LeaseToken)).
		Set(expression.Name(attrUpdatedAt), expression.Value(millis(now))).
		Set(expression.Name(attrRevision), expression.Name(attrRevision).Plus(expression.Value(1)))
	wctx, cancel := s.writeContext(ctx)
	out, err := s.update(wctx, PurposeFence, sessionKey(sessionID), up, cond, returnAllNew, returnOldOnFailure)
	cancel()
	if err == nil {
		return out.Attributes, nil
	}
	_, read := conditionFailed(err)
	if read == nil {
		var found bool
		var rerr error
		if read, found, rerr = s.resolveRead(ctx, sessionKey(sessionID)); rerr != nil {
			return nil, fmt.Errorf("decide the turn of session %s: %w (resolving: %v)", sessionID, err, rerr)
		} else if !found {
			return nil, errNotDue
		}
	}
	_, now2, derr := decodeSession(sessionID, read)
	switch {
	case derr != nil:
		return nil, derr
	case now2.FencedToken != "":
		return read, nil // this write, or another decider's
	case now2.LeaseToken == si.LeaseToken && now2.LeaseExpiresAt <= millis(now):
		return nil, fmt.Errorf("decide the turn of session %s: %w", sessionID, err) // not applied
	}
	return nil, errNotDue
}

// fenceLive is step 2: the live item's token becomes fence, conditional
// on it holding the crashed turn's token, fence already, or none.
func (s *Store) fenceLive(ctx context.Context, sessionID string, ordinal int64, crashed, fence string) error {
	cond := condition{
		expr:  "attribute_not_exists(#leaseToken) OR #leaseToken = :crashed OR #leaseToken = :fence",
		names: []string{attrLeaseToken},
		values: map[string]types.AttributeValue{
			":crashed": strValue(crashed), ":fence": strValue(fence)},
	}
	up := expression.Set(expression.Name(attrLeaseToken), expression.Value(fence)).
		Set(expression.Name(AttrPurgeAt), expression.Value(s.now().Add(checkpointRetention).Unix()))
	err := s.resolvedWrite(ctx, PurposeFence, liveKey(sessionID, ordinal), up, cond, func(item map[string]types.AttributeValue) bool {
		return item != nil && tokenOf(item) == fence
	})
	if err != nil {
		return fmt.Errorf("decide the turn of session %s: fence its checkpoints: %w", sessionID, err)
	}
	return nil
}

// fenceTurn is step 3 for the turn of lease crashed (its token the
// turn's own): it returns completed when the turn's save landed first,
// else indeterminate once the turn item is closed as lost under fence (or
// already was, by another decider), and the usage its record holds (what
// the ledger counts for it). A queued turn (queued) that was never
// acknowledged gets the fence record too, and requeue: it never started.
func (s *Store) fenceTurn(ctx context.Context, sessionID string, crashed *chat.Lease, fence, owner string, lost int64, queued bool) (outcome chat.TerminalOutcome, requeue bool, usage chat.Usage, err error) {
	for range 3 { // a first checkpoint may land between the read and the write
		main, items, err := s.queryTurn(ctx, sessionID, crashed.Ordinal)
		if err != nil {
			return "", false, usage, fmt.Errorf("decide the turn of session %s: %w", sessionID, err)
		}
		switch tok := tokenOf(main); {
		case main == nil:
			err = s.writeFenceRecord(ctx, sessionID, crashed, fence, owner, lost)
			if err == nil {
				// Lost before its first checkpoint: what its supersession
				// took off the active branch comes back (docs/branches.md).
				err = s.restoreBranch(ctx, sessionID, crashed)
			}
		case tok == fence:
			// Decided by another process: a fence record of a queued turn
			// is its requeue; that of a supersession brings the branch
			// back, as the decider that wrote it may not have finished.
			if isFenceRecord(main) {
				if err := s.restoreBranch(ctx, sessionID, crashed); err != nil {
					return "", false, usage, fmt.Errorf("decide the turn of session %s: %w", sessionID, err)
				}
			}
			return chat.OutcomeIndeterminate, queued && isFenceRecord(main), meteredOf(main), nil
		case tok == withdrawnPrefix+crashed.Token:
			// Withdrawn after its acknowledgment failed (WithdrawClaim),
			// its lease's removal unconfirmed: it never started, and is
			// not recorded (as a requeue: window and sequence unchanged).
			return chat.OutcomeIndeterminate, true, chat.Usage{}, nil
		case tok == crashed.Token && statusOf(main) != chat.TurnRunning:
			return chat.OutcomeCompleted, false, meteredOf(main), nil // its save landed first
		case tok == crashed.Token:
			usage, err = s.closeLost(ctx, main, items, crashed.Token, fence, lost)
		default:
			return "", false, usage, fmt.Errorf("decide the turn of session %s: its item carries another token", sessionID)
		}
		if failed, _ := conditionFailed(err); failed {
			continue // it changed: read it again
		}
		if err != nil {
			return "", false, usage, fmt.Errorf("decide the turn of session %s: %w", sessionID, err)
		}
		return chat.OutcomeIndeterminate, queued && main == nil, usage, nil
	}
	return "", false, usage, fmt.Errorf("decide the turn of session %s: its item kept changing", sessionID)
}

// meteredOf returns the usage a turn item records (chat.Turn.Metered).
func meteredOf(item map[string]types.AttributeValue) chat.Usage {
	var m meteredAV
	if v, ok := item[attrMetered]; ok && attributevalue.Unmarshal(v, &m) == nil {
		return m.usage()
	}
	return chat.Usage{}
}

// writeFenceRecord writes the record of a turn lost before its first
// checkpoint: its id and input hash (TurnIDIndex keeps the id taken),
// status error TURN_LOST and its terminal sequence; no visible key, no
// save id, no live flag, so no list shows it (isFenceRecord).
func (s *Store) writeFenceRecord(ctx context.Context, sessionID string, crashed *chat.Lease, fence, owner string, lost int64) error {
	d := protocol.NewDiagnostic(protocol.CodeTurnLost)
	up := expression.Set(expression.Name(attrLeaseToken), expression.Value(fence)).
		Set(expression.Name(attrStatus), expression.Value(string(chat.TurnError))).
		Set(expression.Name(attrOrdinal), expression.Value(crashed.Ordinal)).
		Set(expression.Name(AttrTurnID), expression.Value(crashed.TurnID)).
		Set(expression.Name(attrOwnerKey), expression.Value(owner)).
		Set(expression.Name(attrLineage), expression.Value(toLineageAV(crashed.Lineage))).
		Set(expression.Name(attrLastSequence), expression.Value(lost)).
		Set(expression.Name(attrCompletedAt), expression.Value(millis(s.now()))).
		Set(expression.Name(attrError), expression.Value(diagnosticAV{Version: d.Version, Code: d.Code, Message: d.Message, Retryable: d.Retryable}))
	if crashed.InputHash != "" {
		up = up.Set(expression.Name(attrInputHash), expression.Value(crashed.InputHash))
	}
	cond := condition{expr: "attribute_not_exists(#pk) OR #leaseToken = :fence", names: []string{AttrPK, attrLeaseToken},
		values: map[string]types.AttributeValue{":fence": strValue(fence)}}
	return s.resolvedWrite(ctx, PurposeFenceRecord, turnKey(sessionID, crashed.Ordinal), up, cond, func(item map[string]types.AttributeValue) bool {
		return item != nil && tokenOf(item) == fence
	})
}

// closeLost closes a running turn item as lost: its checkpoints (among
// items, read after its live item was fenced, so no later one counts)
// folded into its messages, closed (chat.Turn.Lost), conditional on it
// still running under the turn's token. It returns the usage of the
// record (its last checkpoint's).
func (s *Store) closeLost(ctx context.Context, main map[string]types.AttributeValue, items []map[string]types.AttributeValue, token, fence string, lost int64) (chat.Usage, error) {
	it, err := decodeTurnItem(main)
	if err != nil {
		return chat.Usage{}, err
	}
	t := it.turn()
	if t.Messages, _, err = s.loadMessages(ctx, it); err != nil {
		return chat.Usage{}, err
	}
	if it.Live {
		if err := s.mergeLive(ctx, it, &t, items); err != nil {
			return chat.Usage{}, err
		}
	}
	t = t.Lost(lost, s.now())
	rec := newTurnItem(&t, chat.Principal{}, fence, s.now())
	// The save id of a decider's close starts with fencePrefix, which no
	// save's has: a claim that finds it treats the turn as indeterminate
	// (olderTurn), as the terminal window does.
	rec.OwnerKey, rec.SaveID = it.OwnerKey, fence
	if _, err := setPayload(&rec, t.Messages, nil); err != nil || rec.Chunks > 0 {
		// Too large to fold into one item (or unencodable): the record
		// keeps its checkpoints instead, which readers follow.
		rec = *it
		rec.Status, rec.LastSequence, rec.CompletedAt = string(t.Status), lost, millis(t.CompletedAt)
		rec.Error = &diagnosticAV{Version: t.Error.Version, Code: t.Error.Code, Message: t.Error.Message, Retryable: t.Error.Retryable}
		rec.Metered = toMeteredAV(t.Metered)
		rec.LeaseToken, rec.SaveID = fence, fence
	}
	up, err := turnItemUpdate(&rec)
	if err != nil {
		return chat.Usage{}, err
	}
	cond := condition{
		expr:  "#leaseToken = :token AND #status = :running OR #leaseToken = :fence",
		names: []string{attrLeaseToken, attrStatus},
		values: map[string]types.AttributeValue{
			":token": strValue(token), ":running": strValue(string(chat.TurnRunning)), ":fence": strValue(fence)},
	}
	return t.Metered, s.resolvedWrite(ctx, PurposeFence, map[string]types.AttributeValue{AttrPK: main[AttrPK], AttrSK: main[AttrSK]}, up, cond, func(item map[string]types.AttributeValue) bool {
		return item != nil && tokenOf(item) == fence
	})
}

// clearDecided is step 4 for a reader: the lease and fencedToken
// removed, the turn entered in the window and the sequence set to its
// terminal one, conditional on the revision the fence left. It returns
// the session item as it is afterwards (this write's, or, when another
// process wrote first, as read).
func (s *Store) clearDecided(ctx context.Context, sessionID string, d *decided) (map[string]types.AttributeValue, error) {
	cond := condition{expr: "#revision = :revision", names: []string{attrRevision},
		values: map[string]types.AttributeValue{":revision": numValue(d.si.Revision)}}
	up := expression.Set(expression.Name(attrRevision), expression.Value(d.si.Revision+1)).
		Set(expression.Name(attrSequence), expression.Value(d.sequence())).
		Set(expression.Name(attrWindow), expression.Value(windowAV(d.window(s.window)))).
		Set(expression.Name(attrUpdatedAt), expression.Value(millis(s.now()))).
		Remove(expression.Name(attrFencedToken))
	up = d.edit(up)
	for _, a := range leaseAttrs {
		up = up.Remove(expression.Name(a))
	}
	wctx, cancel := s.writeContext(ctx)
	out, err := s.update(wctx, PurposeFree, sessionKey(sessionID), up, cond, returnAllNew)
	cancel()
	if err == nil {
		return out.Attributes, nil
	}
	item, found, rerr := s.resolveRead(ctx, sessionKey(sessionID))
	if rerr != nil || !found {
		return nil, fmt.Errorf("decide the turn of session %s: free the session: %w", sessionID, err)
	}
	return item, nil
}

// settleSession decides the session item's expired lease, if it holds
// one (or a decision in progress), and returns the item as it is
// afterwards; the item unchanged when there is nothing to decide.
func (s *Store) settleSession(ctx context.Context, sessionID string, item map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
	d, err := s.decideTurn(ctx, sessionID, item)
	if errors.Is(err, errNotDue) {
		return item, nil
	}
	if err != nil {
		return nil, err
	}
	return s.clearDecided(ctx, sessionID, d)
}

// settleOrphan closes the running turn item at ordinal when its session
// holds no lease for it (left so by an older version of this package,
// which could release a lease without a save): no renewal of it can
// apply any more, so it is lost, unless its own save lands first. The
// item is read again first: a turn read running may have been saved and
// released, or decided, since.
func (s *Store) settleOrphan(ctx context.Context, sessionID string, si *sessionItem, ordinal int64) error {
	main, _, err := s.queryTurn(ctx, sessionID, ordinal)
	if err != nil || main == nil || statusOf(main) != chat.TurnRunning {
		return err
	}
	token := tokenOf(main)
	fence := fencePrefix + newToken()
	if err := s.fenceLive(ctx, sessionID, ordinal, token, fence); err != nil {
		return err
	}
	main, items, err := s.queryTurn(ctx, sessionID, ordinal)
	if err != nil || main == nil {
		return err
	}
	// Not counted in the ledger: a turn of an older version's release,
	// whose session's later turns may be counted already.
	_, err = s.closeLost(ctx, main, items, token, fence, si.Sequence+chat.SequenceGapAfterCrash)
	if failed, _ := conditionFailed(err); failed {
		return nil // saved or decided meanwhile
	}
	return err
}

// attachLeases sets the lease expiry of the running turns among turns
// (their items its) from the session item si; it reports the ordinals
// of running turns that need deciding first: their lease expired (or a
// decision is in progress), or the session holds none for them.
func attachLeases(turns []chat.Turn, si *sessionItem, now time.Time) (due []int) {
	for i := range turns {
		t := &turns[i]
		if t.Status != chat.TurnRunning {
			continue
		}
		if si.LeaseOrdinal == t.Ordinal && si.FencedToken == "" && si.LeaseToken != "" && si.LeaseExpiresAt > millis(now) {
			t.LeaseExpiresAt = fromMillis(si.LeaseExpiresAt)
			continue
		}
		due = append(due, i)
	}
	return due
}

// readTurnItems returns the turns of items as readers see them
// (turnsFromItems), running ones with their lease expiry; a running turn
// whose lease expired is decided first and read again. A decision that
// cannot be made leaves the turn running, with its expired lease.
func (s *Store) readTurnItems(ctx context.Context, sessionID string, items []map[string]types.AttributeValue) ([]chat.Turn, []*turnItem, error) {
	turns, its, err := s.turnsFromItems(ctx, items)
	if err != nil || !anyRunning(turns) {
		return turns, its, err
	}
	sessItem, found, err := s.getItem(ctx, sessionKey(sessionID))
	if err != nil || !found {
		return turns, its, err
	}
	_, si, err := decodeSession(sessionID, sessItem)
	if err != nil {
		return nil, nil, err
	}
	due := attachLeases(turns, si, s.now())
	if len(due) == 0 {
		return turns, its, nil
	}
	settled := false
	for _, i := range due {
		ordinal := turns[i].Ordinal
		if si.LeaseOrdinal == ordinal {
			if !settled {
				settled = true
				after, err := s.settleSession(ctx, sessionID, sessItem)
				if err != nil {
					// Shown running with its expired lease; a later
					// reader decides it.
					turns[i].LeaseExpiresAt = fromMillis(si.LeaseExpiresAt)
					continue
				}
				if _, si, err = decodeSession(sessionID, after); err != nil {
					return nil, nil, err
				}
			}
		} else if err := s.settleOrphan(ctx, sessionID, si, ordinal); err != nil {
			continue
		}
		main, related, err := s.queryTurn(ctx, sessionID, ordinal)
		if err != nil {
			return nil, nil, err
		}
		if main == nil {
			continue
		}
		again, againIts, err := s.turnsFromItemsWith(ctx, []map[string]types.AttributeValue{main}, related)
		if err != nil {
			return nil, nil, err
		}
		turns[i], its[i] = again[0], againIts[0]
		attachLeases(turns[i:i+1], si, s.now())
	}
	return turns, its, nil
}

func anyRunning(turns []chat.Turn) bool {
	for i := range turns {
		if turns[i].Status == chat.TurnRunning {
			return true
		}
	}
	return false
}

// PollTurn implements chat.Store. With since, one BatchGetItem reads the
// session and the live item; a moved head adds one Query of the newer
// delta items only. Without since, or when the turn no longer holds its
// lease, one Query reads the turn whole (and its lease is read or
// decided as for other readers).
func (s *Store) PollTurn(ctx context.Context, sessionID string, ordinal int64, p chat.Principal, since *chat.Turn) (*chat.Turn, error) {
	ctx = withPurpose(ctx, PurposePoll)
	if since != nil && since.Status == chat.TurnRunning && since.Head > 0 && since.Ordinal == ordinal {
		t, ok, err := s.pollLive(ctx, sessionID, ordinal, p, since)
		if err != nil || ok {
			return t, err
		}
	}
	return s.pollWhole(ctx, sessionID, ordinal, p)
}

// pollLive is PollTurn from since while the turn holds an unexpired
// lease; ok is false when the turn must be read whole.
func (s *Store) pollLive(ctx context.Context, sessionID string, ordinal int64, p chat.Principal, since *chat.Turn) (*chat.Turn, bool, error) {
	skey, lkey := sessionKey(sessionID), liveKey(sessionID, ordinal)
	out, err := s.client.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
		*s.table: {Keys: []map[string]types.AttributeValue{skey, lkey}, ConsistentRead: aws.Bool(true)},
	}})
	if err != nil {
		return nil, false, fmt.Errorf("poll turn of session %s: %w", sessionID, err)
	}
	if len(out.UnprocessedKeys) > 0 {
		return nil, false, nil // throttled in part: read whole
	}
	var sessItem, live map[string]types.AttributeValue
	for _, item := range out.Responses[*s.table] {
		if skOf(item) == sessionSK {
			sessItem = item
		} else {
			live = item
		}
	}
	if sessItem == nil {
		return nil, false, chat.ErrSessionNotFound
	}
	sess, si, err := decodeSession(sessionID, sessItem)
	if err != nil {
		return nil, false, err
	}
	if !p.Owns(sess.Owner) {
		return nil, false, chat.ErrSessionNotFound
	}
	if si.LeaseOrdinal != ordinal || si.FencedToken != "" || si.LeaseToken == "" || si.LeaseExpiresAt <= millis(s.now()) {
		return nil, false, nil // ended, or to be decided
	}
	t := *since
	t.LeaseExpiresAt = fromMillis(si.LeaseExpiresAt)
	if live == nil {
		return &t, true, nil
	}
	ls := readLive(turnSK(ordinal), []map[string]types.AttributeValue{live})
	if ls.head > since.Head {
		deltas, err := s.queryRange(ctx, sessionPK(sessionID), deltaSK(ordinal, since.LastSequence+1), deltaSK(ordinal, ls.head))
		if err != nil {
			return nil, false, err
		}
		ls = readLive(turnSK(ordinal), append(deltas, live))
		msgs, err := ls.follow(since.Head, since.Messages)
		if errors.Is(err, errChainBroken) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		t.Messages, t.Head = msgs, ls.head
	}
	t.LastSequence = max(t.LastSequence, ls.sequence)
	if ls.usage != nil {
		t.Usage, t.Metered = *ls.usage, ls.metered
	}
	return &t, true, nil
}

// pollWhole is PollTurn reading the turn whole: a turn that has not
// written its first checkpoint yet is ErrTurnNotFound while its lease
// holds, and its fence record once decided.
func (s *Store) pollWhole(ctx context.Context, sessionID string, ordinal int64, p chat.Principal) (*chat.Turn, error) {
	main, items, err := s.queryTurn(ctx, sessionID, ordinal)
	if err != nil {
		return nil, err
	}
	if main == nil {
		sess, err := s.GetSession(ctx, sessionID, p) // decides an expired lease
		if err != nil {
			return nil, err
		}
		if l := sess.ActiveTurn; l != nil && l.Ordinal == ordinal {
			return nil, chat.ErrTurnNotFound // claimed, not started yet
		}
		if main, items, err = s.queryTurn(ctx, sessionID, ordinal); err != nil {
			return nil, err
		}
		if main == nil {
			return nil, chat.ErrTurnNotFound
		}
	}
	if err := checkOwner([]map[string]types.AttributeValue{main}, p); err != nil {
		return nil, err
	}
	if isFenceRecord(main) {
		it, err := decodeTurnItem(main)
		if err != nil {
			return nil, err
		}
		t := it.turn()
		return &t, nil
	}
	turns, _, err := s.turnsFromItemsWith(ctx, []map[string]types.AttributeValue{main}, items)
	if err != nil {
		return nil, err
	}
	if turns[0].Status == chat.TurnRunning {
		if turns, _, err = s.readTurnItems(ctx, sessionID, []map[string]types.AttributeValue{main}); err != nil {
			return nil, err
		}
	}
	return &turns[0], nil
}
