package dynamo

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/turnstream/turnstream/pkg/chat"
)

// Deleting a session (chat.ConversationStore.DeleteSession) takes three
// steps, each safe to repeat after a crash:
//
//  1. mark: one compare-and-set on the session item's revision, while no
//     lease is held, sets the lease token to deletingToken and listedAt
//     to 0. Every claim needs the lease free (attribute_not_exists), so
//     none can land any more; every reader decodes the item as no session
//     (decodeSession: ErrSessionNotFound); the list's Query skips
//     listedAt 0, and EraseSessions still finds the session there.
//  2. the items under the session's key (turns, checkpoints, queued
//     turns, hidden records), a page of keys at a time, each with one
//     DeleteItem: a delete is its own proof on retry (the item is gone
//     whoever removed it), and nothing can write them again once the mark
//     holds (their writers need the lease or the turn's token).
//  3. the session item, conditional on the mark, replaced by a tombstone
//     that keeps only the session's snapshot sequence (and when it was
//     deleted): the id is then free, and a session that a later claim
//     creates under it numbers its snapshots past the deleted one's, so
//     that a client's snapshot cursor of the id never meets a sequence
//     twice. A tombstone has no owner: every reader takes it for no
//     session, and a claim creates a session over it (createBranch).
//
// The usage ledger is keyed by principal, not session: its counts stay.

// deletingToken is the lease token of a session marked for deletion.
const deletingToken = "deleting"

// deleteWorkers is how many item deletes one call keeps in flight.
const deleteWorkers = 4

// errMarkLost is a mark whose compare-and-set lost to another write of
// the session item: the caller reads the session again.
var errMarkLost = errors.New("session changed during the delete")

// DeleteSession implements chat.Store (see the steps above). Requests: 1
// consistent read, 1 mark (2 more when its outcome is unknown), a Query
// per 100 items and a DeleteItem per item, and the tombstone's PutItem.
func (s *Store) DeleteSession(ctx context.Context, req chat.DeleteRequest) (bool, error) {
	ctx = withPurpose(ctx, PurposeDelete)
	req, err := req.Normalized()
	if err != nil {
		return false, err
	}
	done, _, err := s.deleteSession(ctx, req.SessionID, req.Principal, req.MaxItems)
	return done, err
}

// attrDeletedAt is a tombstone's deletion time (epoch ms).
const attrDeletedAt = "deletedAt"

// deleteSession deletes up to budget items of session id of p and
// returns whether nothing of it is left, and how many items it removed.
func (s *Store) deleteSession(ctx context.Context, id string, p chat.Principal, budget int) (bool, int, error) {
	var sequence int64
	for attempt := 0; ; attempt++ {
		var err error
		sequence, err = s.markDeleting(ctx, id, p)
		if errors.Is(err, errMarkLost) && attempt < 2 {
			continue
		}
		if errors.Is(err, errMarkLost) {
			return false, 0, fmt.Errorf("delete session %s: %w", id, chat.ErrSessionBusy)
		}
		if err != nil {
			return false, 0, err
		}
		break
	}
	n, more, err := s.deleteItems(ctx, id, budget)
	if err != nil || more {
		return false, n, err
	}
	tomb := sessionKey(id)
	tomb[attrSequence] = numValue(sequence)
	tomb[attrDeletedAt] = numValue(millis(s.now()))
	in := &dynamodb.PutItemInput{
		TableName:                 s.table,
		Item:                      tomb,
		ConditionExpression:       aws.String("#leaseToken = :deleting"),
		ExpressionAttributeNames:  map[string]string{"#leaseToken": attrLeaseToken},
		ExpressionAttributeValues: map[string]types.AttributeValue{":deleting": strValue(deletingToken)},
	}
	wctx, cancel := s.writeContext(withPurpose(ctx, PurposeDelete))
	_, err = s.client.PutItem(wctx, in)
	cancel()
	if failed, _ := conditionFailed(err); err == nil || failed {
		// A failed condition is a retry of this write that had applied,
		// or another call's (or a new session a claim made over the
		// tombstone since): the session is gone either way, as the mark,
		// once written, is never undone.
		return true, n, nil
	}
	return false, n, fmt.Errorf("delete session %s: %w", id, err)
}

// markDeleting reads the session and marks it for deletion (step 1),
// or finds it marked, and returns its snapshot sequence.
// ErrSessionNotFound if it does not exist (a tombstone included) or p
// does not own it; ErrSessionBusy while a lease holds; errMarkLost when
// its compare-and-set lost a race.
func (s *Store) markDeleting(ctx context.Context, id string, p chat.Principal) (int64, error) {
	key := sessionKey(id)
	item, found, err := s.getItem(ctx, key)
	if err != nil {
		return 0, fmt.Errorf("delete session %s: %w", id, err)
	}
	if !found {
		return 0, chat.ErrSessionNotFound
	}
	var si sessionItem
	if err := attributevalue.UnmarshalMap(item, &si); err != nil {
		return 0, fmt.Errorf("delete session %s: %w", id, err)
	}
	if si.OwnerKey == "" || si.OwnerKey != ownerKey(p) {
		return 0, chat.ErrSessionNotFound
	}
	if si.LeaseToken == deletingToken {
		return si.Sequence, nil // marked by an earlier call: resume
	}
	if si.LeaseToken != "" {
		if si.FencedToken == "" && si.LeaseExpiresAt > millis(s.now()) {
			return 0, fmt.Errorf("delete session %s: a turn is running: %w", id, chat.ErrSessionBusy)
		}
		// A crashed turn: decide it first, as a claim would, so that no
		// late write of it lands and its usage is counted.
		if _, err := s.settleSession(ctx, id, item); err != nil {
			return 0, fmt.Errorf("delete session %s: %w", id, err)
		}
		return 0, errMarkLost // read it again, decided
	}
	cond := condition{expr: "#revision = :revision AND attribute_not_exists(#leaseToken)", names: []string{attrRevision, attrLeaseToken},
		values: map[string]types.AttributeValue{":revision": numValue(si.Revision)}}
	up := expression.Set(expression.Name(attrLeaseToken), expression.Value(deletingToken)).
		Set(expression.Name(AttrListedAt), expression.Value(0)).
		Set(expression.Name(attrRevision), expression.Value(si.Revision+1)).
		Set(expression.Name(attrUpdatedAt), expression.Value(millis(s.now())))
	err = s.resolvedWrite(ctx, PurposeDelete, key, up, cond, func(item map[string]types.AttributeValue) bool {
		return tokenOf(item) == deletingToken
	})
	if failed, _ := conditionFailed(err); failed {
		return 0, errMarkLost
	}
	if err != nil {
		return 0, fmt.Errorf("delete session %s: %w", id, err)
	}
	return si.Sequence, nil
}

// deleteItems deletes up to budget items under session id's key other
// than the session item (step 2), and reports whether more may remain.
// Each page starts from the key's beginning: what earlier pages deleted
// is gone.
func (s *Store) deleteItems(ctx context.Context, id string, budget int) (n int, more bool, err error) {
	pk := sessionPrefix + id
	for n < budget {
		out, err := s.client.Query(ctx, &dynamodb.QueryInput{
			TableName:                 s.table,
			KeyConditionExpression:    aws.String("#pk = :pk"),
			ExpressionAttributeNames:  map[string]string{"#pk": AttrPK, "#sk": AttrSK},
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": strValue(pk)},
			ProjectionExpression:      aws.String("#pk, #sk"),
			ConsistentRead:            aws.Bool(true),
			Limit:                     aws.Int32(int32(min(budget-n, 99) + 1)), // the session item may be one of them
		})
		if err != nil {
			return n, true, fmt.Errorf("delete session %s: list items: %w", id, err)
		}
		keys := make([]map[string]types.AttributeValue, 0, len(out.Items))
		for _, k := range out.Items {
			if v, _ := k[AttrSK].(*types.AttributeValueMemberS); v == nil || v.Value != sessionSK {
				keys = append(keys, k)
			}
		}
		if len(keys) > budget-n {
			keys, more = keys[:budget-n], true
		}
		if err := s.deleteKeys(ctx, keys); err != nil {
			return n, true, fmt.Errorf("delete session %s: %w", id, err)
		}
		n += len(keys)
		if more {
			return n, true, nil
		}
		if out.LastEvaluatedKey == nil {
			return n, false, nil
		}
	}
	return n, true, nil
}

// deleteKeys deletes the items of keys, deleteWorkers at a time.
func (s *Store) deleteKeys(ctx context.Context, keys []map[string]types.AttributeValue) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		next  = make(chan map[string]types.AttributeValue)
	)
	for range min(deleteWorkers, len(keys)) {
		wg.Go(func() {
			for k := range next {
				wctx, cancel := s.writeContext(ctx)
				_, err := s.client.DeleteItem(wctx, &dynamodb.DeleteItemInput{TableName: s.table, Key: k})
				cancel()
				if err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	for _, k := range keys {
		next <- k
	}
	close(next)
	wg.Wait()
	return first
}

// EraseSessions implements chat.Store: a Query of SessionsIndex by the
// principal's owner key (25 sessions a page, the sessions marked for
// deletion among them), each deleted as DeleteSession does.
func (s *Store) EraseSessions(ctx context.Context, req chat.DeleteRequest) (*chat.Erased, error) {
	ctx = withPurpose(ctx, PurposeDelete)
	req, err := req.Normalized()
	if err != nil {
		return nil, err
	}
	out := &chat.Erased{}
	budget, seen := req.MaxItems, 0
	var start map[string]types.AttributeValue
	for {
		page, err := s.client.Query(ctx, &dynamodb.QueryInput{
			TableName:                 s.table,
			IndexName:                 aws.String(SessionsIndex),
			KeyConditionExpression:    aws.String("#ownerKey = :owner"),
			ExpressionAttributeNames:  map[string]string{"#ownerKey": attrOwnerKey, "#pk": AttrPK},
			ExpressionAttributeValues: map[string]types.AttributeValue{":owner": strValue(ownerKey(req.Principal))},
			ProjectionExpression:      aws.String("#pk"),
			ExclusiveStartKey:         start,
			Limit:                     aws.Int32(25),
		})
		if err != nil {
			return nil, fmt.Errorf("erase sessions: %w", err)
		}
		for _, k := range page.Items {
			v, _ := k[AttrPK].(*types.AttributeValueMemberS)
			if v == nil || len(v.Value) <= len(sessionPrefix) {
				continue
			}
			id := v.Value[len(sessionPrefix):]
			seen++
			done, n, err := s.deleteSession(ctx, id, req.Principal, max(budget, 1))
			budget -= n
			switch {
			case errors.Is(err, chat.ErrSessionBusy):
				out.Busy++
			case errors.Is(err, chat.ErrSessionNotFound):
				// Deleted by another call since the index was read.
			case err != nil:
				return nil, err
			case done:
				out.Deleted++
			}
			if !done && err == nil || budget <= 0 || seen >= chat.MaxEraseSessions {
				return out, nil // more next call
			}
		}
		if page.LastEvaluatedKey == nil {
			out.Done = out.Busy == 0
			return out, nil
		}
		start = page.LastEvaluatedKey
	}
}
