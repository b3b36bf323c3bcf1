package dynamo

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// Queued turns (chat.Store.EnqueueTurn; docs/multitask.md). The session
// item lists them in its queue map, so that every claim and release
// sees the queue in the item it writes anyway; each entry is small (its
// turn id, position, times, a started ordinal and the input hash), and
// the turn's user message waits in a queue item of its own:
//
//	queue item  sk=QUEUE#<turn id>  message (JSON), inputHash, lineage, ownerKey,
//	                                queuedAt, expiresAt, purgeAt
//
// A queued turn has no ordinal until it starts: ClaimQueued gives it the
// session's next ordinal, as any claim does, and marks its entry started
// with that ordinal; the release of its turn, or the decision of its
// fate, takes the entry out. A claim that died before the turn was
// acknowledged leaves no turn item: the decision then fences that
// ordinal (a fence record, so the dead claim's late acknowledgment
// fails) and the entry waits again.
const (
	attrQueue      = "queue"
	attrQueueSeq   = "queueSeq"
	attrMessage    = "message"
	queuePrefix    = "QUEUE#"
	queueRetention = 7 * 24 * time.Hour
	// queueCASRetries bounds the compare-and-sets a queue call retries
	// after losing a race on the session item (concurrent enqueues, a
	// claim between the read and the write), with a short jittered pause.
	queueCASRetries = 10
)

// casPause is the pause before a queue compare-and-set's retry: 1-8 ms.
func casPause(ctx context.Context) {
	t := time.NewTimer(time.Duration(1+mrand.IntN(8)) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// queueName is the key of turnID in the queue map: the id in unpadded
// base64url, which holds no '.' (a SafeId may), so that an update can name
// one entry by its document path.
func queueName(turnID string) string { return base64.RawURLEncoding.EncodeToString([]byte(turnID)) }

// queuePath is the document path of turnID's entry in the queue map.
func queuePath(turnID string) string { return attrQueue + "." + queueName(turnID) }

func queueKey(sessionID, turnID string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		AttrPK: strValue(sessionPK(sessionID)),
		AttrSK: strValue(queuePrefix + turnID),
	}
}

// queueEntryAV returns the stored form of e:
// "<seq>|<queuedAt ms>|<expiresAt ms>|<started ordinal>|<flags>|<compact hash>",
// flags "c" for a cancelled entry and "n" for one being recorded as never
// run, else empty.
func queueEntryAV(e chat.QueueEntry) string {
	flags := ""
	if e.Cancelled {
		flags += "c"
	}
	if e.Recording {
		flags += "n"
	}
	return fmt.Sprintf("%d|%d|%d|%d|%s|%s", e.Seq, millis(e.QueuedAt), millis(e.ExpiresAt), e.Started, flags, compactHash(e.InputHash))
}

// decodeQueue returns the entries of the stored queue map, in queue order.
func decodeQueue(m map[string]string) ([]chat.QueueEntry, error) {
	if len(m) == 0 {
		return nil, nil
	}
	out := make([]chat.QueueEntry, 0, len(m))
	for name, v := range m {
		id, err := base64.RawURLEncoding.DecodeString(name)
		if err != nil {
			return nil, fmt.Errorf("malformed queue entry")
		}
		f := strings.SplitN(v, "|", 6)
		if len(f) != 6 {
			return nil, fmt.Errorf("malformed queue entry")
		}
		var n [4]int64
		for i := range n {
			x, err := strconv.ParseInt(f[i], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("malformed queue entry")
			}
			n[i] = x
		}
		out = append(out, chat.QueueEntry{TurnID: string(id), Seq: n[0], QueuedAt: fromMillis(n[1]), ExpiresAt: fromMillis(n[2]),
			Started: n[3], Cancelled: strings.Contains(f[4], "c"), Recording: strings.Contains(f[4], "n"), InputHash: expandHash(f[5])})
	}
	slices.SortFunc(out, func(a, b chat.QueueEntry) int { return cmp.Compare(a.Seq, b.Seq) })
	return out, nil
}

// queueItem is a queued turn's stored user message and submission.
type queueItem struct {
	PK        string    `dynamodbav:"pk"`
	SK        string    `dynamodbav:"sk"`
	TurnID    string    `dynamodbav:"turnId"`
	OwnerKey  string    `dynamodbav:"ownerKey"`
	Message   string    `dynamodbav:"message"`
	InputHash string    `dynamodbav:"inputHash,omitempty"`
	Lineage   lineageAV `dynamodbav:"lineage"`
	QueuedAt  int64     `dynamodbav:"queuedAt"`
	ExpiresAt int64     `dynamodbav:"expiresAt"`
	PurgeAt   int64     `dynamodbav:"purgeAt"`
}

// EnqueueTurn implements chat.Store: one consistent read of the session,
// the queue item written (conditional on being absent or the same), then
// the entry added with a compare-and-set on the session's revision
// (retried on a lost race; an unknown outcome resolved by reading the
// entry). The queue item goes first, so that an entry always has its
// message. A full terminal window adds the turn id lookup of a claim.
func (s *Store) EnqueueTurn(ctx context.Context, req chat.EnqueueRequest) (*chat.Enqueued, error) {
	ctx = withPurpose(ctx, PurposeEnqueue)
	if err := req.Validate(); err != nil {
		return nil, err
	}
	now := s.now()
	for range queueCASRetries {
		sess, si, err := s.ownedQueue(ctx, req.SessionID, req.Principal)
		if err != nil {
			return nil, err
		}
		if l := sess.ActiveTurn; l != nil && l.TurnID == req.TurnID {
			// That very turn runs, or is saved and not released yet: its
			// decision then, as for a claim.
			return nil, s.busyOrDecided(ctx, chat.ClaimRequest{SessionID: req.SessionID, TurnID: req.TurnID, InputHash: req.InputHash}, l)
		}
		queued, err := chat.QueueRejection(sess.Queue, sess.TerminalTurns, req.TurnID, req.InputHash, req.Max)
		if err == nil && queued == nil && chat.WindowFull(sess.TerminalTurns, s.window) {
			var rejection error
			if rejection, err = s.olderTurn(ctx, chat.ClaimRequest{SessionID: req.SessionID, TurnID: req.TurnID, InputHash: req.InputHash}); err == nil {
				err = rejection
			}
		}
		switch {
		case err != nil:
			return nil, err
		case queued != nil:
			return &chat.Enqueued{Entry: *queued, Position: chat.Position(sess.Queue, req.TurnID), Idle: chat.IdleAt(sess, now)}, nil
		}
		e := chat.QueueEntry{TurnID: req.TurnID, Seq: si.QueueSeq + 1, InputHash: req.InputHash,
			QueuedAt: fromMillis(millis(now)), ExpiresAt: fromMillis(millis(now.Add(req.TTL)))}
		if err := s.putQueueItem(ctx, req, e); err != nil {
			return nil, err
		}
		err = s.addQueueEntry(ctx, req.SessionID, si, e)
		if errors.Is(err, chat.ErrConflict) {
			casPause(ctx)
			continue // the session changed: read it again
		}
		if err != nil {
			return nil, err
		}
		// The entry's compare-and-set applied on the revision sess was
		// read at: the session held then what sess shows.
		return &chat.Enqueued{Entry: e, Position: chat.Position(append(slices.Clone(sess.Queue), e), req.TurnID), Idle: chat.IdleAt(sess, now)}, nil
	}
	return nil, fmt.Errorf("enqueue in session %s: %w", req.SessionID, chat.ErrConflict)
}

// ownedQueue reads the session for p (ErrSessionNotFound when absent or
// another's).
func (s *Store) ownedQueue(ctx context.Context, sessionID string, p chat.Principal) (*chat.Session, *sessionItem, error) {
	sess, si, err := s.readSession(ctx, sessionID)
	if errors.Is(err, errNoSession) || err == nil && !p.Owns(sess.Owner) {
		return nil, nil, chat.ErrSessionNotFound
	}
	return sess, si, err
}

// putQueueItem writes the queue item of req (conditional on it being
// absent or holding the same turn: a retried or repeated enqueue).
func (s *Store) putQueueItem(ctx context.Context, req chat.EnqueueRequest, e chat.QueueEntry) error {
	data, err := encodeMessages([]protocol.Message{req.Message})
	if err != nil {
		return err
	}
	if len(data) > inlineLimit {
		return fmt.Errorf("%w: a queued input above %d bytes", chat.ErrInvalidRequest, inlineLimit)
	}
	it := queueItem{PK: sessionPK(req.SessionID), SK: queuePrefix + req.TurnID, TurnID: req.TurnID,
		OwnerKey: ownerKey(req.Principal), Message: string(data), InputHash: req.InputHash, Lineage: toLineageAV(req.Lineage),
		QueuedAt: millis(e.QueuedAt), ExpiresAt: millis(e.ExpiresAt), PurgeAt: e.ExpiresAt.Add(queueRetention).Unix()}
	item, err := attributevalue.MarshalMap(it)
	if err != nil {
		return fmt.Errorf("encode queued turn: %w", err)
	}
	wctx, cancel := s.writeContext(withPurpose(ctx, PurposeEnqueue))
	_, err = s.client.PutItem(wctx, &dynamodb.PutItemInput{
		TableName:                 s.table,
		Item:                      item,
		ConditionExpression:       aws.String("attribute_not_exists(#pk) OR #inputHash = :hash"),
		ExpressionAttributeNames:  map[string]string{"#pk": AttrPK, "#inputHash": attrInputHash},
		ExpressionAttributeValues: map[string]types.AttributeValue{":hash": strValue(req.InputHash)},
	})
	cancel()
	if failed, _ := conditionFailed(err); failed {
		return chat.ErrTurnIDReused // another input waits under this turn id
	}
	if err != nil {
		if read, found, rerr := s.resolveRead(ctx, queueKey(req.SessionID, req.TurnID)); rerr == nil && found {
			if v, _ := read[attrInputHash].(*types.AttributeValueMemberS); v != nil && v.Value == req.InputHash {
				return nil
			}
		}
		return fmt.Errorf("enqueue turn %s: %w", req.TurnID, err)
	}
	return nil
}

// addQueueEntry adds e to the session's queue, compare-and-set on the
// revision si was read at: ErrConflict when another write came first.
func (s *Store) addQueueEntry(ctx context.Context, sessionID string, si *sessionItem, e chat.QueueEntry) error {
	cond := condition{expr: "#revision = :revision", names: []string{attrRevision},
		values: map[string]types.AttributeValue{":revision": numValue(si.Revision)}}
	up := expression.Set(expression.Name(attrRevision), expression.Value(si.Revision+1)).
		Set(expression.Name(attrQueueSeq), expression.Value(e.Seq)).
		Set(expression.Name(attrUpdatedAt), expression.Value(millis(s.now())))
	if len(si.Queue) == 0 {
		up = up.Set(expression.Name(attrQueue), expression.Value(map[string]string{queueName(e.TurnID): queueEntryAV(e)}))
	} else {
		up = up.Set(expression.Name(queuePath(e.TurnID)), expression.Value(queueEntryAV(e)))
	}
	err := s.resolvedWrite(ctx, PurposeEnqueue, sessionKey(sessionID), up, cond, func(item map[string]types.AttributeValue) bool {
		_, got, derr := decodeSession(sessionID, item)
		return item != nil && derr == nil && got.Queue[queueName(e.TurnID)] == queueEntryAV(e)
	})
	if failed, _ := conditionFailed(err); failed {
		return chat.ErrConflict
	}
	if err != nil {
		return fmt.Errorf("enqueue in session %s: %w", sessionID, err)
	}
	return nil
}

// ClaimQueued implements chat.Store: one consistent read of the session
// (an expired lease decided first), then a compare-and-set on its
// revision that takes the lease for the oldest waiting entry and marks it
// started, and one read of its queue item. An expired entry on the way
// costs two writes (recordNotRun).
func (s *Store) ClaimQueued(ctx context.Context, sessionID string, leaseDuration time.Duration) (*chat.Claim, *chat.QueuedTurn, error) {
	ctx = withPurpose(ctx, PurposeDequeue)
	if leaseDuration <= 0 {
		return nil, nil, fmt.Errorf("%w: a positive lease duration", chat.ErrInvalidRequest)
	}
	for range queueCASRetries + chat.MaxQueuedTurnsLimit {
		item, found, err := s.getItem(ctx, sessionKey(sessionID))
		if err != nil {
			return nil, nil, fmt.Errorf("read session %s: %w", sessionID, err)
		}
		if !found {
			return nil, nil, chat.ErrNothingQueued
		}
		if item, err = s.settleSession(ctx, sessionID, item); err != nil {
			return nil, nil, err
		}
		sess, si, err := decodeSession(sessionID, item)
		if err != nil {
			return nil, nil, err
		}
		now := s.now()
		if sess.ActiveTurn != nil || chat.PendingConfirmation(sess.Confirmations, now) {
			return nil, nil, chat.ErrSessionBusy
		}
		if m := si.Selecting; m != nil {
			// A select runs, or one stopped before its end: finished
			// first (docs/branches.md).
			if m.ExpiresAt > millis(now) {
				return nil, nil, chat.ErrSessionBusy
			}
			if err := s.finishSelect(ctx, sessionID, m); err != nil {
				return nil, nil, err
			}
			continue
		}
		if i := slices.IndexFunc(sess.Queue, func(e chat.QueueEntry) bool { return e.Recording }); i >= 0 {
			// A recording as never run whose writer died between its steps.
			q, err := s.readQueueItem(ctx, sessionID, sess.Owner, sess.Queue[i])
			if err != nil {
				return nil, nil, err
			}
			if err := s.finishNotRun(ctx, sess, q); err != nil {
				return nil, nil, err
			}
			continue
		}
		if i := slices.IndexFunc(sess.Queue, func(e chat.QueueEntry) bool { return e.Cancelled }); i >= 0 {
			// Cancelled while a turn ran: recorded now that none does.
			q, err := s.readQueueItem(ctx, sessionID, sess.Owner, sess.Queue[i])
			if err != nil {
				return nil, nil, err
			}
			if err := s.recordNotRun(ctx, sess, si, q, protocol.CodeTurnCancelled); errors.Is(err, chat.ErrConflict) {
				casPause(ctx)
			} else if err != nil {
				return nil, nil, err
			}
			continue
		}
		waiting := chat.Waiting(sess.Queue)
		if len(waiting) == 0 {
			return nil, nil, chat.ErrNothingQueued
		}
		e := waiting[0]
		q, err := s.readQueueItem(ctx, sessionID, sess.Owner, e)
		if err != nil {
			return nil, nil, err
		}
		if !e.ExpiresAt.After(now) {
			if err := s.recordNotRun(ctx, sess, si, q, protocol.CodeTurnQueueExpired); errors.Is(err, chat.ErrConflict) {
				casPause(ctx)
			} else if err != nil {
				return nil, nil, err
			}
			continue
		}
		c, err := s.claimQueued(ctx, sess, si, q, leaseDuration, now)
		if errors.Is(err, chat.ErrConflict) {
			casPause(ctx)
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		q.Started = c.Lease.Ordinal
		return c, q, nil
	}
	return nil, nil, fmt.Errorf("claim a queued turn of session %s: %w", sessionID, chat.ErrSessionBusy)
}

// readQueueItem reads the queue item of entry e.
func (s *Store) readQueueItem(ctx context.Context, sessionID string, owner chat.Principal, e chat.QueueEntry) (*chat.QueuedTurn, error) {
	item, found, err := s.getItem(ctx, queueKey(sessionID, e.TurnID))
	if err != nil {
		return nil, fmt.Errorf("read queued turn %s: %w", e.TurnID, err)
	}
	q := &chat.QueuedTurn{QueueEntry: e, SessionID: sessionID, Principal: owner,
		Lineage: protocol.Lineage{Operation: protocol.OperationSubmit}}
	if !found {
		// An entry whose message is missing (it expired, or was removed
		// by hand): recorded as never run, with an empty input.
		q.Message = protocol.Message{ID: e.TurnID + ".u", Role: protocol.RoleUser, Status: protocol.MessageComplete,
			CreatedAt: protocol.FormatTime(e.QueuedAt)}
		q.ExpiresAt = time.Time{}
		return q, nil
	}
	var it queueItem
	if err := attributevalue.UnmarshalMap(item, &it); err != nil {
		return nil, fmt.Errorf("decode queued turn %s: %w", e.TurnID, err)
	}
	msgs, err := decodeMessages([]byte(it.Message))
	if err != nil || len(msgs) != 1 {
		return nil, fmt.Errorf("decode queued turn %s: %v", e.TurnID, err)
	}
	q.Message, q.Lineage = msgs[0], it.Lineage.lineage()
	return q, nil
}

// claimQueued takes the session's lease for q at the session's next
// ordinal and marks q's entry started, compare-and-set on the revision
// si was read at (ErrConflict when another write came first); an unknown
// outcome is resolved by the lease token it wrote.
func (s *Store) claimQueued(ctx context.Context, sess *chat.Session, si *sessionItem, q *chat.QueuedTurn, leaseDuration time.Duration, now time.Time) (*chat.Claim, error) {
	token := newToken()
	req := chat.ClaimRequest{SessionID: sess.ID, TurnID: q.TurnID, Principal: sess.Owner, InputHash: q.InputHash,
		Lineage: q.Lineage, LeaseDuration: leaseDuration}
	started := q.QueueEntry
	started.Started = sess.NextOrdinal
	cond := condition{expr: "#revision = :revision", names: []string{attrRevision},
		values: map[string]types.AttributeValue{":revision": numValue(si.Revision)}}
	up := expression.Set(expression.Name(attrRevision), expression.Value(si.Revision+1)).
		Set(expression.Name(attrNextOrdinal), expression.Value(sess.NextOrdinal+1)).
		Set(expression.Name(attrLeaseOrdinal), expression.Value(sess.NextOrdinal)).
		Set(expression.Name(queuePath(q.TurnID)), expression.Value(queueEntryAV(started)))
	up = setClaimFields(up, req, token, now.Add(leaseDuration), now)
	wctx, cancel := s.writeContext(ctx)
	out, err := s.update(wctx, PurposeDequeue, sessionKey(sess.ID), up, cond, returnAllNew)
	cancel()
	var item map[string]types.AttributeValue
	if err == nil {
		item = out.Attributes
	} else {
		failed, _ := conditionFailed(err)
		read, found, rerr := s.resolveRead(ctx, sessionKey(sess.ID))
		switch {
		case rerr != nil:
			return nil, fmt.Errorf("claim queued turn %s: %w (resolving: %v)", q.TurnID, err, rerr)
		case found && holdsToken(read, token):
			item = read
		case failed:
			return nil, chat.ErrConflict
		default:
			return nil, fmt.Errorf("claim queued turn %s: %w", q.TurnID, err)
		}
	}
	claimed, _, err := decodeSession(sess.ID, item)
	if err != nil {
		return nil, err
	}
	if claimed.ActiveTurn == nil {
		return nil, fmt.Errorf("claim queued turn %s: written item carries no lease", q.TurnID)
	}
	return &chat.Claim{Session: *claimed, Lease: *claimed.ActiveTurn, BaseSequence: claimed.Sequence}, nil
}

// recordNotRun records waiting queued turn q as a turn that never ran,
// with the diagnostic code, in three writes, since the table takes no
// transaction across items: a compare-and-set on the session's revision
// gives it the next ordinal, enters it in the terminal window as
// completed (its outcome is known: it did not run) and marks its entry
// Recording at that ordinal; then finishNotRun writes its turn item and
// removes the entry. A writer that dies between the steps leaves the
// entry Recording, which the next ClaimQueued finishes; until then a
// reader sees the turn queued. ErrConflict when the session changed
// since si was read.
func (s *Store) recordNotRun(ctx context.Context, sess *chat.Session, si *sessionItem, q *chat.QueuedTurn, code string) error {
	now := s.now()
	ord := sess.NextOrdinal
	window := chat.AppendTerminal(sess.TerminalTurns, chat.TerminalEntry{TurnID: q.TurnID, Outcome: chat.OutcomeCompleted, InputHash: q.InputHash}, s.window)
	entry := q.QueueEntry
	entry.Started, entry.Recording, entry.Cancelled = ord, true, code == protocol.CodeTurnCancelled
	cond := condition{expr: "#revision = :revision", names: []string{attrRevision},
		values: map[string]types.AttributeValue{":revision": numValue(si.Revision)}}
	up := expression.Set(expression.Name(attrRevision), expression.Value(si.Revision+1)).
		Set(expression.Name(attrNextOrdinal), expression.Value(ord+1)).
		Set(expression.Name(attrWindow), expression.Value(windowAV(window))).
		Set(expression.Name(attrUpdatedAt), expression.Value(millis(now))).
		Set(expression.Name(queuePath(q.TurnID)), expression.Value(queueEntryAV(entry)))
	err := s.resolvedWrite(ctx, PurposeNotRun, sessionKey(sess.ID), up, cond, func(item map[string]types.AttributeValue) bool {
		_, got, derr := decodeSession(sess.ID, item)
		// Applied: the entry recording at ord, or already finished (gone,
		// with the ordinal taken).
		v, ok := got.Queue[queueName(q.TurnID)]
		return item != nil && derr == nil && got.NextOrdinal > ord && (v == queueEntryAV(entry) || !ok && got.Revision > si.Revision)
	})
	if failed, _ := conditionFailed(err); failed {
		return chat.ErrConflict
	}
	if err != nil {
		return fmt.Errorf("record queued turn %s: %w", q.TurnID, err)
	}
	q.QueueEntry = entry
	return s.finishNotRun(ctx, sess, q)
}

// finishNotRun ends the recording of q, whose entry is Recording at
// ordinal q.Started: the turn item written (conditional on absence; an
// item of the same turn already there is this recording's, written
// before a crash or by a concurrent finisher), then the entry removed
// (conditional on its recording value; gone already is done).
func (s *Store) finishNotRun(ctx context.Context, sess *chat.Session, q *chat.QueuedTurn) error {
	code := protocol.CodeTurnQueueExpired
	if q.Cancelled {
		code = protocol.CodeTurnCancelled
	}
	now := s.now()
	t := q.NotRun(q.Started, code, now)
	it := newTurnItem(t, sess.Owner, "notrun:"+newToken(), now)
	it.SaveID = it.LeaseToken // a saved record, not a fence record (isFenceRecord)
	if _, err := setPayload(&it, t.Messages, nil); err != nil {
		return err
	}
	tup, err := saveUpdate(&it, []chat.ArtifactReference{})
	if err != nil {
		return err
	}
	ours := func(item map[string]types.AttributeValue) bool {
		v, ok := item[AttrTurnID].(*types.AttributeValueMemberS)
		return item != nil && ok && v.Value == q.TurnID
	}
	err = s.resolvedWrite(ctx, PurposeNotRun, turnKey(sess.ID, q.Started), tup, condition{expr: "attribute_not_exists(#pk)", names: []string{AttrPK}}, ours)
	if failed, _ := conditionFailed(err); failed {
		item, found, rerr := s.resolveRead(ctx, turnKey(sess.ID, q.Started))
		switch {
		case rerr != nil:
			return fmt.Errorf("record queued turn %s: %w", q.TurnID, rerr)
		case !found || !ours(item):
			return fmt.Errorf("record queued turn %s: ordinal %d holds another turn", q.TurnID, q.Started)
		}
	} else if err != nil {
		return fmt.Errorf("record queued turn %s: %w", q.TurnID, err)
	}
	entryCond := condition{expr: "#queue.#entry = :entry", names: []string{attrQueue},
		aliases: map[string]string{"#entry": queueName(q.TurnID)},
		values:  map[string]types.AttributeValue{":entry": strValue(queueEntryAV(q.QueueEntry))}}
	rm := expression.Remove(expression.Name(queuePath(q.TurnID)))
	err = s.resolvedWrite(ctx, PurposeQueueRemove, sessionKey(sess.ID), rm, entryCond, func(item map[string]types.AttributeValue) bool {
		_, got, derr := decodeSession(sess.ID, item)
		_, ok := got.Queue[queueName(q.TurnID)]
		return item != nil && derr == nil && !ok
	})
	if failed, _ := conditionFailed(err); failed || err == nil {
		return nil // removed, now or by another finisher
	}
	return fmt.Errorf("record queued turn %s: %w", q.TurnID, err)
}

// CancelQueued implements chat.Store: one read of the session; on a free
// session one read of the queue item and recordNotRun (TURN_CANCELLED),
// while a turn runs a compare-and-set that marks the entry cancelled
// (ClaimQueued records it). An unknown outcome is resolved by reading the
// entry.
func (s *Store) CancelQueued(ctx context.Context, sessionID, turnID string, p chat.Principal) error {
	ctx = withPurpose(ctx, PurposeCancel)
	for range queueCASRetries {
		sess, si, err := s.ownedQueue(ctx, sessionID, p)
		if err != nil {
			return err
		}
		waiting := chat.Waiting(sess.Queue)
		i := slices.IndexFunc(waiting, func(e chat.QueueEntry) bool { return e.TurnID == turnID })
		if i < 0 {
			return chat.ErrTurnNotActive
		}
		if sess.ActiveTurn == nil {
			var q *chat.QueuedTurn
			if q, err = s.readQueueItem(ctx, sessionID, sess.Owner, waiting[i]); err != nil {
				return err
			}
			err = s.recordNotRun(ctx, sess, si, q, protocol.CodeTurnCancelled)
		} else {
			err = s.markCancelled(ctx, sessionID, si, waiting[i])
		}
		if !errors.Is(err, chat.ErrConflict) {
			return err
		}
		casPause(ctx)
	}
	return fmt.Errorf("cancel queued turn %s: %w", turnID, chat.ErrConflict)
}

// markCancelled marks entry e cancelled, compare-and-set on the revision
// si was read at (ErrConflict when another write came first).
func (s *Store) markCancelled(ctx context.Context, sessionID string, si *sessionItem, e chat.QueueEntry) error {
	e.Cancelled = true
	cond := condition{expr: "#revision = :revision", names: []string{attrRevision},
		values: map[string]types.AttributeValue{":revision": numValue(si.Revision)}}
	up := expression.Set(expression.Name(attrRevision), expression.Value(si.Revision+1)).
		Set(expression.Name(attrUpdatedAt), expression.Value(millis(s.now()))).
		Set(expression.Name(queuePath(e.TurnID)), expression.Value(queueEntryAV(e)))
	err := s.resolvedWrite(ctx, PurposeCancel, sessionKey(sessionID), up, cond, func(item map[string]types.AttributeValue) bool {
		_, got, derr := decodeSession(sessionID, item)
		return item != nil && derr == nil && got.Queue[queueName(e.TurnID)] == queueEntryAV(e)
	})
	if failed, _ := conditionFailed(err); failed {
		return chat.ErrConflict
	}
	if err != nil {
		return fmt.Errorf("cancel queued turn %s: %w", e.TurnID, err)
	}
	return nil
}

// startedEntry returns the queue entry started with ordinal (nil when
// the lease's turn was not a queued one).
func startedEntry(sess *chat.Session, ordinal int64) *chat.QueueEntry {
	for i := range sess.Queue {
		if sess.Queue[i].Started == ordinal {
			return &sess.Queue[i]
		}
	}
	return nil
}

// queueAfterDecision adds to a session update that ends a decided lease
// what becomes of the lease's queued turn, if it was one: waiting again
// when it never started (requeue), else out of the queue.
func queueAfterDecision(up expression.UpdateBuilder, d *decided) expression.UpdateBuilder {
	e := startedEntry(d.session, d.crashed.Ordinal)
	if e == nil {
		return up
	}
	if d.requeue {
		again := *e
		again.Started = 0
		return up.Set(expression.Name(queuePath(e.TurnID)), expression.Value(queueEntryAV(again)))
	}
	return up.Remove(expression.Name(queuePath(e.TurnID)))
}

// QueuedTurns implements chat.Store: one consistent read of the session,
// and when turns wait one Query of the session's queue items.
func (s *Store) QueuedTurns(ctx context.Context, sessionID string, p chat.Principal) ([]chat.QueuedTurn, error) {
	ctx = withPurpose(ctx, PurposeRead)
	sess, _, err := s.ownedQueue(ctx, sessionID, p)
	if err != nil {
		return nil, err
	}
	waiting := chat.Waiting(sess.Queue)
	out := make([]chat.QueuedTurn, 0, len(waiting))
	if len(waiting) == 0 {
		return out, nil
	}
	items, err := s.queryRange(ctx, sessionPK(sessionID), queuePrefix, queuePrefix+"\uffff")
	if err != nil {
		return nil, err
	}
	byID := map[string]queueItem{}
	for _, item := range items {
		var it queueItem
		if attributevalue.UnmarshalMap(item, &it) == nil {
			byID[it.TurnID] = it
		}
	}
	for _, e := range waiting {
		q := chat.QueuedTurn{QueueEntry: e, SessionID: sessionID, Principal: sess.Owner}
		if it, ok := byID[e.TurnID]; ok {
			if msgs, err := decodeMessages([]byte(it.Message)); err == nil && len(msgs) == 1 {
				q.Message, q.Lineage = msgs[0], it.Lineage.lineage()
			}
		}
		out = append(out, q)
	}
	return out, nil
}
