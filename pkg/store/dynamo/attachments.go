package dynamo

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/turnstream/turnstream/pkg/chat"
)

// An attachment's use (chat.AttachmentStore, docs/attachments.md):
//
//	attachment item  pk=SESSION#<id>  sk=ATTACHMENT#<attachment id>  usedBy (string set of turn ids), purgeAt
//
// in the session's partition, so that deleting the session deletes it;
// no index holds it. purgeAt is the attachments' use-by time, after which
// no turn may use the attachment anyway.
const (
	attachmentPrefix = "ATTACHMENT#"
	attrUsedBy       = "usedBy"
)

func attachmentKey(sessionID, attachmentID string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		AttrPK: &types.AttributeValueMemberS{Value: sessionPK(sessionID)},
		AttrSK: &types.AttributeValueMemberS{Value: attachmentPrefix + attachmentID},
	}
}

// UseAttachments implements chat.Store: per attachment, one UpdateItem
// adding the turn id to the item's usedBy, conditional on no turn having
// used it, or this turn or its parent; a write whose outcome is unknown
// is resolved by one consistent GetItem. On a refusal, the ids this call
// added are removed again (one UpdateItem each, conditional on holding
// the turn id).
func (s *Store) UseAttachments(ctx context.Context, req chat.UseAttachmentsRequest) error {
	ctx = withPurpose(ctx, PurposeAttachment)
	if req.SessionID == "" || req.TurnID == "" {
		return fmt.Errorf("use attachments: %w: session and turn ids are required", chat.ErrInvalidRequest)
	}
	var added []string
	for _, id := range req.AttachmentIDs {
		fresh, err := s.useAttachment(ctx, req, id)
		if err != nil {
			if errors.Is(err, chat.ErrAttachmentUsed) {
				s.unuseAttachments(ctx, req, added)
			}
			return err
		}
		if fresh {
			added = append(added, id)
		}
	}
	return nil
}

// useAttachment records req.TurnID's use of attachment id, and reports
// whether the item did not hold the turn id before.
func (s *Store) useAttachment(ctx context.Context, req chat.UseAttachmentsRequest, id string) (fresh bool, err error) {
	parent := req.ParentTurnID
	if parent == "" {
		parent = req.TurnID
	}
	cond := condition{
		expr:  "attribute_not_exists(#usedBy) OR contains(#usedBy, :turn) OR contains(#usedBy, :parent)",
		names: []string{attrUsedBy},
		values: map[string]types.AttributeValue{
			":turn": strValue(req.TurnID), ":parent": strValue(parent),
		},
	}
	up := expression.Add(expression.Name(attrUsedBy), expression.Value(stringSet{req.TurnID})).
		Set(expression.Name(AttrPurgeAt), expression.Value(req.Until.Unix()))
	key := attachmentKey(req.SessionID, id)
	wctx, cancel := s.writeContext(ctx)
	out, err := s.update(wctx, PurposeAttachment, key, up, cond, func(in *dynamodb.UpdateItemInput) {
		in.ReturnValues = types.ReturnValueUpdatedOld
	})
	cancel()
	switch failed, _ := conditionFailed(err); {
	case err == nil:
		return !slices.Contains(usedBy(out.Attributes), req.TurnID), nil
	case failed:
		return false, fmt.Errorf("use attachment %s: %w", id, chat.ErrAttachmentUsed)
	}
	// The outcome is unknown: the turn id in the item says it applied.
	item, _, rerr := s.resolveRead(ctx, key)
	if rerr != nil {
		return false, fmt.Errorf("use attachment %s: %w (resolving: %v)", id, err, rerr)
	}
	if slices.Contains(usedBy(item), req.TurnID) {
		return true, nil
	}
	return false, fmt.Errorf("use attachment %s: %w", id, err)
}

// unuseAttachments takes req.TurnID's use of ids back, best effort: one
// it cannot take back stays with the turn id, which may send it again.
func (s *Store) unuseAttachments(ctx context.Context, req chat.UseAttachmentsRequest, ids []string) {
	for _, id := range ids {
		cond := condition{
			expr:   "contains(#usedBy, :turn)",
			names:  []string{attrUsedBy},
			values: map[string]types.AttributeValue{":turn": strValue(req.TurnID)},
		}
		up := expression.Delete(expression.Name(attrUsedBy), expression.Value(stringSet{req.TurnID}))
		wctx, cancel := s.writeContext(ctx)
		_, _ = s.update(wctx, PurposeAttachment, attachmentKey(req.SessionID, id), up, cond)
		cancel()
	}
}

// stringSet marshals as a DynamoDB string set (SS), which ADD and DELETE
// take.
type stringSet []string

// MarshalDynamoDBAttributeValue implements attributevalue.Marshaler.
func (s stringSet) MarshalDynamoDBAttributeValue() (types.AttributeValue, error) {
	return &types.AttributeValueMemberSS{Value: s}, nil
}

// usedBy is the usedBy set of an attachment item (nil without one).
func usedBy(item map[string]types.AttributeValue) []string {
	if ss, ok := item[attrUsedBy].(*types.AttributeValueMemberSS); ok {
		return ss.Value
	}
	return nil
}
