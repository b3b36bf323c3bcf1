package dynamo

import (
	"context"
	"encoding/json"
	"fmt"
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

// Checkpoint layout. A running turn's first checkpoint writes its turn
// item (status running, its messages as of then, and live = true). Each
// later checkpoint writes one delta item with what changed since the
// previous one, then moves the live item's count to it; a heartbeat (no
// change) only updates the live item. Readers of a turn item with live
// set merge the deltas up to the live item's count. The final save
// rewrites the turn item whole and drops live; the live and delta items
// then expire (purgeAt).
//
//	live item   sk=TURN#<ordinal>#LIVE          leaseToken, count, sequence, usage,
//	                                            leaseExpiresAt, stop, purgeAt
//	delta item  sk=TURN#<ordinal>#LIVE#<n, 6>   d (JSON, see delta), purgeAt
//
// The live item is what fences checkpoints: its updates are conditional
// on the lease token, and a takeover replaces the token, so a delta a
// crashed turn writes late is never counted. Neither item carries an
// index key, so a checkpoint costs no index write: one small item for a
// heartbeat, two for a change.
const (
	liveSuffix   = "#LIVE"
	attrCount    = "count"
	attrSequence = "sequence"
	attrUsage    = "usage"
	attrStop     = "stop"
	attrDelta    = "d"
	attrLive     = "live"
	attrLeaseExp = "leaseExpiresAt"
	// checkpointRetention is how long live and delta items outlive their
	// write (TTL): long past any turn (15 min at most). A crashed turn's
	// record is made whole by the takeover that fences it (its deltas
	// are folded into the turn item); one never taken over keeps its
	// deltas for this long.
	checkpointRetention = 7 * 24 * time.Hour
)

func liveKey(sessionID string, ordinal int64) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		AttrPK: strValue(sessionPK(sessionID)),
		AttrSK: strValue(turnSK(ordinal) + liveSuffix),
	}
}

func deltaKey(sessionID string, ordinal int64, n int) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		AttrPK: strValue(sessionPK(sessionID)),
		AttrSK: strValue(fmt.Sprintf("%s%s#%06d", turnSK(ordinal), liveSuffix, n)),
	}
}

// delta is what changed in a turn's messages between two checkpoints:
// per changed message, its index, the message without its content when
// anything but the content changed (Head), and the content as a kept
// prefix length (From, in bytes of the previous content; -1 replaces it
// whole) plus the appended text.
type delta struct {
	Messages []deltaMessage `json:"m"`
}

type deltaMessage struct {
	Index int              `json:"i"`
	Head  *json.RawMessage `json:"h,omitempty"`
	From  int              `json:"f"`
	Text  string           `json:"t,omitempty"`
}

// diffMessages returns the delta from prior to msgs (nil when equal).
func diffMessages(prior, msgs []protocol.Message) (*delta, error) {
	d := &delta{}
	for i, m := range msgs {
		var p *protocol.Message
		if i < len(prior) {
			p = &prior[i]
		}
		dm := deltaMessage{Index: i, From: -1, Text: m.Content}
		if p != nil && strings.HasPrefix(m.Content, p.Content) {
			dm.From, dm.Text = len(p.Content), m.Content[len(p.Content):]
		}
		headChanged := p == nil || !sameHead(*p, m)
		if headChanged {
			h := m
			h.Content = ""
			b, err := json.Marshal(h)
			if err != nil {
				return nil, fmt.Errorf("encode checkpoint message: %w", err)
			}
			raw := json.RawMessage(b)
			dm.Head = &raw
		}
		if !headChanged && dm.From == len(p.Content) && dm.Text == "" {
			continue
		}
		d.Messages = append(d.Messages, dm)
	}
	if len(d.Messages) == 0 && len(msgs) == len(prior) {
		return nil, nil
	}
	return d, nil
}

// sameHead reports whether a and b differ at most in their content.
func sameHead(a, b protocol.Message) bool {
	a.Content, b.Content = "", ""
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// apply applies d to msgs in place (growing it as needed).
func (d *delta) apply(msgs []protocol.Message) ([]protocol.Message, error) {
	for _, dm := range d.Messages {
		for len(msgs) <= dm.Index {
			msgs = append(msgs, protocol.Message{})
		}
		m := &msgs[dm.Index]
		content := m.Content
		if dm.Head != nil {
			var h protocol.Message
			if err := json.Unmarshal(*dm.Head, &h); err != nil {
				return nil, fmt.Errorf("decode checkpoint message: %w", err)
			}
			*m = h
		}
		switch {
		case dm.From < 0:
			m.Content = dm.Text
		case dm.From <= len(content):
			m.Content = content[:dm.From] + dm.Text
		default:
			return nil, fmt.Errorf("decode checkpoint message: content offset %d past %d bytes", dm.From, len(content))
		}
	}
	return msgs, nil
}

// Checkpoint implements chat.Store. The first checkpoint writes the turn
// item (conditional on it being absent or running under the claim's
// token) and then the live item; a later one writes its delta item
// (conditional on being absent or identical: a retry) and then the live
// item, conditional on the token and a lower count; a heartbeat writes
// only the live item, conditional on the token. The live item's answer
// carries the stop flag. Unknown outcomes are resolved with one
// consistent read each.
func (s *Store) Checkpoint(ctx context.Context, c *chat.Claim, cp *chat.Checkpoint) (bool, error) {
	if err := c.CheckCheckpoint(cp); err != nil {
		return false, err
	}
	token := c.Lease.Token
	purgeAt := s.now().Add(checkpointRetention).Unix()
	change := true
	if cp.Prior == nil {
		if err := s.writeRunningItem(ctx, c, cp); err != nil {
			return false, err
		}
	} else {
		d, err := diffMessages(cp.Prior, cp.Messages)
		if err != nil {
			return false, err
		}
		if change = d != nil; change {
			if err := s.putDelta(ctx, cp, d, purgeAt); err != nil {
				return false, err
			}
		}
	}
	return s.updateLive(ctx, cp, token, change, purgeAt)
}

// writeRunningItem writes the first checkpoint's turn item.
func (s *Store) writeRunningItem(ctx context.Context, c *chat.Claim, cp *chat.Checkpoint) error {
	t := cp.TurnOf()
	it := newTurnItem(t, c.Session.Owner, c.Lease.Token, s.now())
	it.Live = true
	data, err := encodeMessages(t.Messages)
	if err != nil {
		return err
	}
	if len(data) > inlineLimit {
		return fmt.Errorf("%w: a first checkpoint above %d bytes", chat.ErrInvalidRequest, inlineLimit)
	}
	it.Messages = string(data)
	up, err := turnItemUpdate(&it)
	if err != nil {
		return err
	}
	up = up.Set(expression.Name(attrArtifacts), expression.IfNotExists(expression.Name(attrArtifacts), expression.Value([]artifactAV{})))
	cond := condition{
		expr:  "attribute_not_exists(#pk) OR #leaseToken = :token AND #status = :running",
		names: []string{AttrPK, attrLeaseToken, attrStatus},
		values: map[string]types.AttributeValue{
			":token": strValue(c.Lease.Token), ":running": strValue(string(chat.TurnRunning))},
	}
	err = s.resolvedWrite(ctx, turnKey(cp.SessionID, cp.Ordinal), up, cond, func(item map[string]types.AttributeValue) bool {
		return item != nil && tokenOf(item) == c.Lease.Token
	})
	if failed, _ := conditionFailed(err); failed {
		return chat.ErrLeaseLost // fenced, or the turn was saved already
	}
	if err != nil {
		return fmt.Errorf("checkpoint turn %s of session %s: %w", cp.TurnID, cp.SessionID, err)
	}
	return nil
}

// putDelta writes delta item cp.Number.
func (s *Store) putDelta(ctx context.Context, cp *chat.Checkpoint, d *delta, purgeAt int64) error {
	b, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("encode checkpoint delta: %w", err)
	}
	item := deltaKey(cp.SessionID, cp.Ordinal, cp.Number)
	item[attrDelta] = strValue(string(b))
	item[AttrPurgeAt] = numValue(purgeAt)
	in := &dynamodb.PutItemInput{
		TableName:                 s.table,
		Item:                      item,
		ConditionExpression:       aws.String("attribute_not_exists(#pk) OR #d = :d"),
		ExpressionAttributeNames:  map[string]string{"#pk": AttrPK, "#d": attrDelta},
		ExpressionAttributeValues: map[string]types.AttributeValue{":d": item[attrDelta]},
	}
	wctx, cancel := s.writeContext(ctx)
	_, err = s.client.PutItem(wctx, in)
	cancel()
	if err == nil {
		return nil
	}
	if failed, _ := conditionFailed(err); failed {
		// Another delta under this number: a retried checkpoint with other
		// content, which the turn never sends.
		return fmt.Errorf("checkpoint %d of turn %s: another delta is stored: %w", cp.Number, cp.TurnID, chat.ErrConflict)
	}
	read, found, rerr := s.resolveRead(ctx, deltaKey(cp.SessionID, cp.Ordinal, cp.Number))
	if rerr == nil && found {
		if v, _ := read[attrDelta].(*types.AttributeValueMemberS); v != nil && v.Value == string(b) {
			return nil
		}
	}
	return fmt.Errorf("checkpoint %d of turn %s: %w", cp.Number, cp.TurnID, err)
}

// updateLive moves the live item to checkpoint cp and returns its stop
// flag. A change moves the count up to cp.Number (a count already there is
// a retry that applied); a heartbeat keeps it.
func (s *Store) updateLive(ctx context.Context, cp *chat.Checkpoint, token string, change bool, purgeAt int64) (bool, error) {
	up := expression.Set(expression.Name(attrLeaseToken), expression.Value(token)).
		Set(expression.Name(attrSequence), expression.Value(cp.Sequence)).
		Set(expression.Name(attrUsage), expression.Value(usageAV(cp.Usage))).
		Set(expression.Name(attrLeaseExp), expression.Value(millis(cp.LeaseExpiresAt))).
		Set(expression.Name(AttrPurgeAt), expression.Value(purgeAt))
	cond := condition{
		expr:   "#leaseToken = :token",
		names:  []string{attrLeaseToken},
		values: map[string]types.AttributeValue{":token": strValue(token)},
	}
	if change {
		up = up.Set(expression.Name(attrCount), expression.Value(cp.Number))
		cond.expr = "#leaseToken = :token AND #count < :n"
		cond.names = append(cond.names, attrCount)
		cond.values[":n"] = numValue(int64(cp.Number))
	}
	if cp.Prior == nil {
		// The first checkpoint creates the live item; a stop requested
		// before it may have created it already, without a token.
		cond.expr = "attribute_not_exists(#leaseToken) OR " + cond.expr
	}
	key := liveKey(cp.SessionID, cp.Ordinal)
	wctx, cancel := s.writeContext(ctx)
	out, err := s.update(wctx, key, up, cond, returnAllNew)
	cancel()
	if err == nil {
		return stopOf(out.Attributes), nil
	}
	failed, _ := conditionFailed(err)
	read, found, rerr := s.resolveRead(ctx, key)
	switch {
	case rerr != nil:
		return false, fmt.Errorf("checkpoint turn %s: %w (resolving: %v)", cp.TurnID, err, rerr)
	case !found || tokenOf(read) != token:
		if failed {
			return false, chat.ErrLeaseLost
		}
	case countOf(read) >= cp.Number && seqOf(read) == cp.Sequence:
		return stopOf(read), nil // applied (an SDK retry, or a lost answer)
	case failed:
		return false, chat.ErrLeaseLost
	}
	return false, fmt.Errorf("checkpoint turn %s: %w", cp.TurnID, err)
}

func stopOf(item map[string]types.AttributeValue) bool {
	v, _ := item[attrStop].(*types.AttributeValueMemberBOOL)
	return v != nil && v.Value
}

func numOf(item map[string]types.AttributeValue, name string) int64 {
	v, _ := item[name].(*types.AttributeValueMemberN)
	if v == nil {
		return 0
	}
	n, _ := strconv.ParseInt(v.Value, 10, 64)
	return n
}

func countOf(item map[string]types.AttributeValue) int { return int(numOf(item, attrCount)) }
func seqOf(item map[string]types.AttributeValue) int64 { return numOf(item, attrSequence) }

// stopLive sets the stop flag on the live item of the lease (creating it
// when no checkpoint did yet), so that the turn sees the stop at its next
// checkpoint. Conditional on the item belonging to that lease.
func (s *Store) stopLive(ctx context.Context, sessionID string, ordinal int64, token string) error {
	up := expression.Set(expression.Name(attrStop), expression.Value(true)).
		Set(expression.Name(AttrPurgeAt), expression.Value(s.now().Add(checkpointRetention).Unix()))
	cond := condition{
		expr:   "attribute_not_exists(#leaseToken) OR #leaseToken = :token",
		names:  []string{attrLeaseToken},
		values: map[string]types.AttributeValue{":token": strValue(token)},
	}
	err := s.resolvedWrite(ctx, liveKey(sessionID, ordinal), up, cond, func(item map[string]types.AttributeValue) bool {
		return item != nil && stopOf(item)
	})
	if failed, _ := conditionFailed(err); failed {
		return nil // fenced: that turn is over
	}
	return err
}

// mergeLive folds a running turn item's checkpoint deltas (the live and
// delta items among items, or else read with one Query) into t.
func (s *Store) mergeLive(ctx context.Context, it *turnItem, t *chat.Turn, items []map[string]types.AttributeValue) error {
	if items == nil {
		var err error
		if items, err = s.queryPrefix(ctx, it.PK, it.SK+liveSuffix); err != nil {
			return err
		}
	}
	var live map[string]types.AttributeValue
	deltas := map[int]string{}
	prefix := it.SK + liveSuffix
	for _, item := range items {
		sk := skOf(item)
		switch {
		case sk == prefix:
			live = item
		case strings.HasPrefix(sk, prefix+"#"):
			n, err := strconv.Atoi(sk[len(prefix)+1:])
			if err != nil {
				continue
			}
			if v, _ := item[attrDelta].(*types.AttributeValueMemberS); v != nil {
				deltas[n] = v.Value
			}
		}
	}
	if live == nil {
		return nil // no checkpoint after the first
	}
	count := countOf(live)
	for n := 2; n <= count; n++ {
		raw, ok := deltas[n]
		if !ok {
			return fmt.Errorf("read checkpoints of turn %s: delta %d of %d missing", it.TurnID, n, count)
		}
		var d delta
		if err := json.Unmarshal([]byte(raw), &d); err != nil {
			return fmt.Errorf("read checkpoints of turn %s: %w", it.TurnID, err)
		}
		msgs, err := d.apply(t.Messages)
		if err != nil {
			return err
		}
		t.Messages = msgs
	}
	if seq := seqOf(live); seq > 0 {
		t.LastSequence = seq
	}
	var u usageAV
	if v, ok := live[attrUsage]; ok && attributevalue.Unmarshal(v, &u) == nil {
		t.Usage = protocol.Usage(u)
	}
	if exp := numOf(live, attrLeaseExp); exp > 0 {
		t.LeaseExpiresAt = fromMillis(exp)
	}
	return nil
}

// queryPrefix returns every item of pk whose sort key begins with prefix,
// read consistently (one Query, more pages only past 1 MB).
func (s *Store) queryPrefix(ctx context.Context, pk, prefix string) ([]map[string]types.AttributeValue, error) {
	e, err := build(expression.NewBuilder().WithKeyCondition(
		expression.Key(AttrPK).Equal(expression.Value(pk)).And(expression.Key(AttrSK).BeginsWith(prefix))))
	if err != nil {
		return nil, err
	}
	p := dynamodb.NewQueryPaginator(s.client, &dynamodb.QueryInput{
		TableName:                 s.table,
		KeyConditionExpression:    e.KeyCondition(),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
		ConsistentRead:            aws.Bool(true),
	})
	var items []map[string]types.AttributeValue
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("query %s: %w", prefix, err)
		}
		items = append(items, out.Items...)
	}
	return items, nil
}

// PollTurn implements chat.Store: one consistent Query of the turn's
// items (turn item, chunks, live and delta items).
func (s *Store) PollTurn(ctx context.Context, sessionID string, ordinal int64, p chat.Principal) (*chat.Turn, error) {
	items, err := s.queryPrefix(ctx, sessionPK(sessionID), turnSK(ordinal))
	if err != nil {
		return nil, err
	}
	var main map[string]types.AttributeValue
	for _, item := range items {
		if skOf(item) == turnSK(ordinal) {
			main = item
		}
	}
	if main == nil || main[AttrTurnID] == nil || isFenceRecord(main) {
		if _, err := s.GetSession(ctx, sessionID, p); err != nil {
			return nil, err
		}
		return nil, chat.ErrTurnNotFound
	}
	if err := checkOwner([]map[string]types.AttributeValue{main}, p); err != nil {
		return nil, err
	}
	turns, _, err := s.turnsFromItemsWith(ctx, []map[string]types.AttributeValue{main}, items)
	if err != nil {
		return nil, err
	}
	return &turns[0], nil
}
