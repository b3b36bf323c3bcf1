package dynamo

import (
	"cmp"
	"encoding/json"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"github.com/turnstream/turnstream/pkg/chat"
)

// Confirmations are stored on the session item as the map attribute
// "confirmations", keyed by token, so that a decision claim can condition
// on, and update, its own confirmation in the claim's one UpdateItem
// (docs/approvals.md). The release rewrites the whole map, computed from
// its claim's copy: only claims and releases write it, and both hold or
// take the lease.
const (
	attrConfirmations   = "confirmations"
	attrConfStatus      = "status"
	attrConfExpiresAt   = "expiresAt"
	attrConfDecidedBy   = "decidedBy"
	unknownConfirmToken = "cfnone" // never issued: the name of an unknown token
)

// confirmationAV is one stored confirmation (its token is the map key).
type confirmationAV struct {
	Action     string `dynamodbav:"action"`
	Input      string `dynamodbav:"input"` // the arguments' JSON text
	ToolCallID string `dynamodbav:"toolCallId"`
	TurnID     string `dynamodbav:"turnId"`
	ExpiresAt  int64  `dynamodbav:"expiresAt"`
	Status     string `dynamodbav:"status"`
	DecidedBy  string `dynamodbav:"decidedBy,omitempty"`
	CreatedAt  int64  `dynamodbav:"createdAt"`
}

// decisionName is the map key a decision's token is looked up under: the
// token, or a name no confirmation has when the token is malformed (it
// could otherwise break the attribute path).
func decisionName(d *chat.Decision) string {
	if chat.IsConfirmationToken(d.Token) {
		return d.Token
	}
	return unknownConfirmToken
}

// decisionCondition extends a claim condition with the decision's: its
// confirmation exists, is pending and has not expired at now.
func decisionCondition(c condition, d *chat.Decision, now time.Time) condition {
	tok := decisionName(d)
	c.expr = "(" + c.expr + ") AND #" + attrConfirmations + ".#" + tok + ".#" + attrConfStatus + " = :confPending AND #" +
		attrConfirmations + ".#" + tok + ".#" + attrConfExpiresAt + " > :confNow"
	c.names = append(slices.Clip(c.names), attrConfirmations, tok, attrConfStatus, attrConfExpiresAt)
	c.values[":confPending"] = strValue(string(chat.ConfirmationPending))
	c.values[":confNow"] = numValue(millis(now))
	return c
}

// setDecision adds the decision's effect to a claim's update: the
// confirmation moves to approving or rejecting, decided by the turn.
func setDecision(up expression.UpdateBuilder, req chat.ClaimRequest) expression.UpdateBuilder {
	if req.Decision == nil {
		return up
	}
	path := attrConfirmations + "." + decisionName(req.Decision) + "."
	return up.Set(expression.Name(path+attrConfStatus), expression.Value(string(req.Decision.Claimed()))).
		Set(expression.Name(path+attrConfDecidedBy), expression.Value(req.TurnID))
}

// undoDecision adds to a give-back's update the return of the claim's
// decided confirmation to pending.
func undoDecision(up expression.UpdateBuilder, c *chat.Claim) expression.UpdateBuilder {
	d := c.Decided()
	if d == nil {
		return up
	}
	path := attrConfirmations + "." + d.Token + "."
	return up.Set(expression.Name(path+attrConfStatus), expression.Value(string(chat.ConfirmationPending))).
		Remove(expression.Name(path + attrConfDecidedBy))
}

// settleConfirmations adds to a release's update the confirmations it
// writes (chat.ReleaseConfirmations from the claim's copy, the new ones
// created at now); nothing when they do not change.
func settleConfirmations(up expression.UpdateBuilder, req chat.ReleaseRequest, now time.Time) expression.UpdateBuilder {
	add := slices.Clone(req.Confirmations)
	for i := range add {
		add[i].CreatedAt = now
	}
	confs, changed := chat.ReleaseConfirmations(req.Claim.Session.Confirmations, req.Claim.Lease.TurnID, add, req.Undecide)
	if !changed {
		return up
	}
	if len(confs) == 0 {
		return up.Remove(expression.Name(attrConfirmations))
	}
	m := make(map[string]confirmationAV, len(confs))
	for _, c := range confs {
		m[c.Token] = confirmationAV{
			Action: c.Action, Input: string(c.Input), ToolCallID: c.ToolCallID, TurnID: c.TurnID,
			ExpiresAt: millis(c.ExpiresAt), Status: string(c.Status), DecidedBy: c.DecidedBy, CreatedAt: millis(c.CreatedAt),
		}
	}
	av, err := attributevalue.Marshal(m)
	if err != nil { // plain strings and numbers always marshal
		return up
	}
	return up.Set(expression.Name(attrConfirmations), expression.Value(av))
}

// decodeConfirmations returns the stored confirmations oldest first (by
// creation, then token).
func decodeConfirmations(m map[string]confirmationAV) []chat.Confirmation {
	if len(m) == 0 {
		return nil
	}
	out := make([]chat.Confirmation, 0, len(m))
	for tok, c := range m {
		out = append(out, chat.Confirmation{
			Token: tok, Action: c.Action, Input: json.RawMessage(c.Input), ToolCallID: c.ToolCallID, TurnID: c.TurnID,
			ExpiresAt: fromMillis(c.ExpiresAt), Status: chat.ConfirmationStatus(c.Status), DecidedBy: c.DecidedBy,
			CreatedAt: fromMillis(c.CreatedAt),
		})
	}
	slices.SortFunc(out, func(a, b chat.Confirmation) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.Token, b.Token))
	})
	return out
}
