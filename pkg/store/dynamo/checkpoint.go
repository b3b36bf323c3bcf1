package dynamo

import (
	"context"
	"encoding/json"
	"errors"
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
// item (status running, its messages as of then, live = true) before
// the turn's stream starts. Each later checkpoint that changed the
// messages writes one delta item, keyed by the checkpoint's sequence,
// with what changed since the prior checkpoint it names, then moves the
// live item's head to it (creating the live item the first time); a
// heartbeat (no change) only updates the live item.
// Readers of a turn item with live set follow the chain of deltas from
// the live item's head back to the turn item's messages. The final save
// rewrites the turn item whole and drops live; the live and delta items
// then expire (purgeAt).
//
//	delta item  sk=TURN#<ordinal>#D#<sequence, 16 digits>  d (JSON, see delta), purgeAt
//	live item   sk=TURN#<ordinal>#LIVE    leaseToken, head, sequence, usage, stop, purgeAt
//
// Delta items sort before the live item, so one Query from a sequence on
// reads the newer deltas and the live item, and nothing older. A delta
// names its prior (the sequence whose state it applies to), so a delta
// written by a checkpoint that failed or whose outcome is unknown is
// simply never on the chain: the next checkpoint names the last prior
// its turn knows landed, and a reader never mixes two checkpoints. The
// live item is what fences checkpoints: its updates are conditional on
// the lease token and a higher sequence, and deciding a turn replaces the
// token (fate.go), so a delta written late by a dead turn is never
// counted. Neither item carries an index key, so a checkpoint costs no
// index write: one small item for a heartbeat, two for a change.
const (
	liveSuffix   = "#LIVE"
	deltaInfix   = "#D#"
	attrHead     = "head"
	attrSequence = "sequence"
	attrUsage    = "usage"
	attrStop     = "stop"
	attrDelta    = "d"
	attrLive     = "live"
	// sequenceDigits is the zero padding of sequences in delta sort keys
	// (sequences are at most 2^53-1, 16 digits).
	sequenceDigits = 16
	// checkpointRetention is how long live and delta items outlive their
	// write (TTL): long past any turn (15 min at most). Deciding a lost
	// turn folds its checkpoints into its turn item, so nothing reads them
	// after that.
	checkpointRetention = 7 * 24 * time.Hour
)

func liveKey(sessionID string, ordinal int64) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		AttrPK: strValue(sessionPK(sessionID)),
		AttrSK: strValue(turnSK(ordinal) + liveSuffix),
	}
}

// deltaSK is the sort key of the delta item of the checkpoint at sequence.
func deltaSK(ordinal, sequence int64) string {
	return fmt.Sprintf("%s%s%0*d", turnSK(ordinal), deltaInfix, sequenceDigits, sequence)
}

func deltaKey(sessionID string, ordinal, sequence int64) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		AttrPK: strValue(sessionPK(sessionID)),
		AttrSK: strValue(deltaSK(ordinal, sequence)),
	}
}

// delta is what changed in a turn's messages from the state at sequence
// Prior to the state of its own item: per changed message, its index,
// the message without its content when anything but the content changed
// (Head), and the content as a kept prefix length (From, in bytes of the
// prior content; -1 replaces it whole) plus the appended text.
type delta struct {
	Prior    int64          `json:"p"`
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

// apply returns msgs with d applied; msgs itself is not modified.
func (d *delta) apply(msgs []protocol.Message) ([]protocol.Message, error) {
	out := append([]protocol.Message(nil), msgs...)
	for _, dm := range d.Messages {
		for len(out) <= dm.Index {
			out = append(out, protocol.Message{})
		}
		m := &out[dm.Index]
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
	return out, nil
}

// Checkpoint implements chat.Store. The first checkpoint writes the turn
// item (conditional on it being absent or running under the claim's
// token) and reports no stop; a later one that changed the messages writes its delta item
// (conditional on being absent or identical: a retry) and then moves the
// live item's head to it, conditional on the token and a lower sequence;
// a heartbeat writes only the live item, conditional on the token and a
// sequence not above its own. The live item's answer carries the stop
// flag. Unknown outcomes are resolved with one consistent read each.
func (s *Store) Checkpoint(ctx context.Context, c *chat.Claim, cp *chat.Checkpoint) (bool, error) {
	ctx = withPurpose(ctx, PurposeCheckpoint)
	if err := c.CheckCheckpoint(cp); err != nil {
		return false, err
	}
	purgeAt := s.now().Add(checkpointRetention).Unix()
	if cp.Prior == nil {
		// The acknowledgment: the turn item alone, before the turn's
		// stream starts. The live item (which fences later checkpoints and
		// carries the stop flag) is written by the first checkpoint after
		// it; until then a decider's fence creates it, and so does a stop.
		return false, s.writeRunningItem(ctx, c, cp)
	}
	if cp.PriorSequence == cp.FirstSequence {
		// The prior is the acknowledgment: the live item may not exist
		// yet, and creating it is fenced by the turn item instead.
		if err := s.checkRunningItem(ctx, c, cp); errors.Is(err, chat.ErrLeaseLost) {
			return false, err
		} else if err != nil {
			return s.stopRequested(ctx, c), err
		}
	}
	d, err := diffMessages(cp.Prior, cp.Messages)
	if err != nil {
		return false, err
	}
	if d != nil {
		if cp.PriorSequence >= cp.Sequence {
			return false, fmt.Errorf("%w: a change at or before its prior", chat.ErrInvalidRequest)
		}
		d.Prior = cp.PriorSequence
		if err := s.putDelta(ctx, cp, d, purgeAt); err != nil {
			return s.stopRequested(ctx, c), err
		}
	}
	stop, err := s.updateLive(ctx, cp, c.Lease.Token, d != nil, purgeAt)
	if err != nil && !errors.Is(err, chat.ErrLeaseLost) {
		return s.stopRequested(ctx, c), err
	}
	return stop, err
}

// stopRequested reports whether the session's lease, still held by
// claim c, carries the stop flag: one consistent read of the session item
// after a checkpoint that could not be written, so that a stop is seen
// within a checkpoint interval while checkpoint writes fail (the flag on
// the live item, which a checkpoint's answer carries, is out of reach
// then, and may not have been written at all). False when the read fails,
// and without a read when ctx has ended (the turn is ending anyway).
func (s *Store) stopRequested(ctx context.Context, c *chat.Claim) bool {
	if ctx.Err() != nil {
		return false
	}
	rctx, cancel := s.resolveContext(ctx)
	defer cancel()
	item, found, err := s.getItem(rctx, sessionKey(c.Session.ID))
	if err != nil || !found || !holdsToken(item, c.Lease.Token) {
		return false
	}
	v, _ := item[attrLeaseStop].(*types.AttributeValueMemberBOOL)
	return v != nil && v.Value
}

// writeRunningItem writes the first checkpoint's turn item: the turn's
// acknowledgment, written before its stream starts.
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
	err = s.resolvedWrite(ctx, PurposeAck, turnKey(cp.SessionID, cp.Ordinal), up, cond, func(item map[string]types.AttributeValue) bool {
		return item != nil && tokenOf(item) == c.Lease.Token && statusOf(item) == chat.TurnRunning
	})
	if failed, _ := conditionFailed(err); failed {
		return chat.ErrLeaseLost // fenced, or the turn was saved already
	}
	if err != nil {
		return fmt.Errorf("checkpoint turn %s of session %s: %w", cp.TurnID, cp.SessionID, err)
	}
	return nil
}

// checkRunningItem is the fence of a checkpoint that may create the live
// item (the first after the acknowledgment, which writes none): one
// consistent read of the turn item, which must be running under the
// claim's token; ErrLeaseLost otherwise (decided, saved, or never the
// claim's). A decider that fences the turn after this read writes its
// token to the live item first (fenceLive), so the checkpoint's
// conditional live write still fails.
func (s *Store) checkRunningItem(ctx context.Context, c *chat.Claim, cp *chat.Checkpoint) error {
	rctx, cancel := s.writeContext(ctx)
	item, found, err := s.getItem(rctx, turnKey(cp.SessionID, cp.Ordinal))
	cancel()
	switch {
	case err != nil:
		return fmt.Errorf("checkpoint turn %s: read its turn item: %w", cp.TurnID, err)
	case !found || tokenOf(item) != c.Lease.Token || statusOf(item) != chat.TurnRunning:
		return chat.ErrLeaseLost
	}
	return nil
}

// withdrawnPrefix starts the token of the hidden record a withdrawn
// claim leaves at its ordinal (WithdrawClaim): the claim's own token
// after it, so that the record recognises its writer and a decider of
// the claim's lease knows it for a turn that never started.
const withdrawnPrefix = "withdrawn:"

// WithdrawClaim implements chat.Store: the hidden record at the claim's
// ordinal (its token withdrawnPrefix plus the claim's, no turn id, no
// visible key, so no index holds it; purgeAt lets it expire), conditional
// on the turn item being absent or that very record; then the lease
// removed, conditional on the claim's token, with the session's window,
// sequence and next ordinal unchanged. Unknown outcomes are resolved with
// one consistent read each.
func (s *Store) WithdrawClaim(ctx context.Context, c *chat.Claim) (bool, error) {
	ctx = withPurpose(ctx, PurposeWithdraw)
	key := turnKey(c.Session.ID, c.Lease.Ordinal)
	void := withdrawnPrefix + c.Lease.Token
	up := expression.Set(expression.Name(attrLeaseToken), expression.Value(void)).
		Set(expression.Name(attrOrdinal), expression.Value(c.Lease.Ordinal)).
		Set(expression.Name(AttrPurgeAt), expression.Value(s.now().Add(checkpointRetention).Unix()))
	cond := condition{expr: "attribute_not_exists(#pk) OR #leaseToken = :void", names: []string{AttrPK, attrLeaseToken},
		values: map[string]types.AttributeValue{":void": strValue(void)}}
	err := s.resolvedWrite(ctx, PurposeWithdraw, key, up, cond, func(item map[string]types.AttributeValue) bool {
		return item != nil && tokenOf(item) == void
	})
	if failed, _ := conditionFailed(err); failed {
		item, found, rerr := s.resolveRead(ctx, key)
		switch {
		case rerr != nil:
			return false, fmt.Errorf("withdraw turn %s of session %s: %w (resolving: %v)", c.Lease.TurnID, c.Session.ID, err, rerr)
		case found && tokenOf(item) == c.Lease.Token && statusOf(item) == chat.TurnRunning:
			return true, nil // the acknowledgment applied: the turn exists
		case !found || tokenOf(item) != void:
			return false, chat.ErrLeaseLost // fenced, decided
		}
	} else if err != nil {
		return false, fmt.Errorf("withdraw turn %s of session %s: %w", c.Lease.TurnID, c.Session.ID, err)
	}
	// The id is unspent from here: the lease is removed, or a decider of
	// its expiry frees the session without recording the turn (fenceTurn).
	free := condition{expr: "#leaseToken = :token", names: []string{attrLeaseToken},
		values: map[string]types.AttributeValue{":token": strValue(c.Lease.Token)}}
	fup := expression.Set(expression.Name(attrUpdatedAt), expression.Value(millis(s.now()))).
		Set(expression.Name(attrRevision), expression.Name(attrRevision).Plus(expression.Value(1)))
	for _, a := range leaseAttrs {
		fup = fup.Remove(expression.Name(a))
	}
	_ = s.resolvedWrite(ctx, PurposeWithdraw, sessionKey(c.Session.ID), fup, free, func(item map[string]types.AttributeValue) bool {
		return item != nil && !holdsToken(item, c.Lease.Token)
	})
	return false, nil
}

// putDelta writes the delta item of checkpoint cp. Its key is the
// checkpoint's sequence and its content is determined by that sequence's
// state and the prior it names, so a retry writes the same item.
func (s *Store) putDelta(ctx context.Context, cp *chat.Checkpoint, d *delta, purgeAt int64) error {
	b, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("encode checkpoint delta: %w", err)
	}
	key := deltaKey(cp.SessionID, cp.Ordinal, cp.Sequence)
	item := deltaKey(cp.SessionID, cp.Ordinal, cp.Sequence)
	item[attrDelta] = strValue(string(b))
	item[AttrPurgeAt] = numValue(purgeAt)
	in := &dynamodb.PutItemInput{
		TableName:                 s.table,
		Item:                      item,
		ConditionExpression:       aws.String("attribute_not_exists(#pk) OR #d = :d"),
		ExpressionAttributeNames:  map[string]string{"#pk": AttrPK, "#d": attrDelta},
		ExpressionAttributeValues: map[string]types.AttributeValue{":d": item[attrDelta]},
	}
	wctx, cancel := s.writeContext(withPurpose(ctx, PurposeDelta))
	_, err = s.client.PutItem(wctx, in)
	cancel()
	if err == nil {
		return nil
	}
	if failed, _ := conditionFailed(err); failed {
		// Another delta under this sequence: a checkpoint of another state
		// with the same sequence, which the turn never sends.
		return fmt.Errorf("checkpoint %d of turn %s: another delta is stored: %w", cp.Sequence, cp.TurnID, chat.ErrConflict)
	}
	read, found, rerr := s.resolveRead(ctx, key)
	if rerr == nil && found {
		if v, _ := read[attrDelta].(*types.AttributeValueMemberS); v != nil && v.Value == string(b) {
			return nil
		}
	}
	return fmt.Errorf("checkpoint %d of turn %s: %w", cp.Sequence, cp.TurnID, err)
}

// updateLive moves the live item to checkpoint cp and returns its stop
// flag: a change moves the head to cp.Sequence, a heartbeat only the
// sequence. The sequence never moves back, so an older checkpoint
// delivered late changes nothing; one the live item already reached is
// reported landed (a retry, or superseded by a newer one).
func (s *Store) updateLive(ctx context.Context, cp *chat.Checkpoint, token string, change bool, purgeAt int64) (bool, error) {
	up := expression.Set(expression.Name(attrLeaseToken), expression.Value(token)).
		Set(expression.Name(attrSequence), expression.Value(cp.Sequence)).
		Set(expression.Name(attrUsage), expression.Value(usageAV(cp.Usage))).
		Set(expression.Name(AttrPurgeAt), expression.Value(purgeAt))
	if m := toMeteredAV(cp.Metered); m != nil {
		up = up.Set(expression.Name(attrMetered), expression.Value(m))
	} else {
		up = up.Remove(expression.Name(attrMetered))
	}
	order := "<="
	if change {
		up = up.Set(expression.Name(attrHead), expression.Value(cp.Sequence))
		order = "<"
	}
	// A stop requested before any checkpoint may have created the live
	// item already, without a token.
	cond := condition{
		expr:   "(attribute_not_exists(#leaseToken) OR #leaseToken = :token) AND (attribute_not_exists(#sequence) OR #sequence " + order + " :seq)",
		names:  []string{attrLeaseToken, attrSequence},
		values: map[string]types.AttributeValue{":token": strValue(token), ":seq": numValue(cp.Sequence)},
	}
	key := liveKey(cp.SessionID, cp.Ordinal)
	wctx, cancel := s.writeContext(ctx)
	out, err := s.update(wctx, PurposeLive, key, up, cond, returnAllNew)
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
	case seqOf(read) > cp.Sequence || seqOf(read) == cp.Sequence && (!change || numOf(read, attrHead) == cp.Sequence):
		return stopOf(read), nil // applied, or a newer checkpoint landed
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

func seqOf(item map[string]types.AttributeValue) int64 { return numOf(item, attrSequence) }

// statusOf returns a turn item's status ("" if absent).
func statusOf(item map[string]types.AttributeValue) chat.TurnStatus {
	v, _ := item[attrStatus].(*types.AttributeValueMemberS)
	if v == nil {
		return ""
	}
	return chat.TurnStatus(v.Value)
}

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
	err := s.resolvedWrite(ctx, PurposeStop, liveKey(sessionID, ordinal), up, cond, func(item map[string]types.AttributeValue) bool {
		return item != nil && stopOf(item)
	})
	if failed, _ := conditionFailed(err); failed {
		return nil // fenced: that turn is over
	}
	return err
}

// liveState is what a reader found of a running turn's checkpoints: the
// live item's head, sequence and usage, and the delta items by sequence.
type liveState struct {
	found    bool // the live item exists
	head     int64
	sequence int64
	usage    *protocol.Usage
	metered  chat.Usage
	deltas   map[int64]string // the d attribute of each delta item read
}

// readLive collects the live and delta items of the turn item at sk
// among items.
func readLive(sk string, items []map[string]types.AttributeValue) liveState {
	ls := liveState{deltas: map[int64]string{}}
	prefix := sk + deltaInfix
	for _, item := range items {
		switch k := skOf(item); {
		case k == sk+liveSuffix:
			ls.found = true
			ls.head, ls.sequence = numOf(item, attrHead), seqOf(item)
			var u usageAV
			if v, ok := item[attrUsage]; ok && attributevalue.Unmarshal(v, &u) == nil {
				pu := protocol.Usage(u)
				ls.usage = &pu
				var m meteredAV
				if v, ok := item[attrMetered]; ok && attributevalue.Unmarshal(v, &m) == nil {
					ls.metered = m.usage()
				}
			}
		case strings.HasPrefix(k, prefix):
			n, err := strconv.ParseInt(k[len(prefix):], 10, 64)
			if err != nil {
				continue
			}
			if v, _ := item[attrDelta].(*types.AttributeValueMemberS); v != nil {
				ls.deltas[n] = v.Value
			}
		}
	}
	return ls
}

// errChainBroken reports that the deltas at hand do not lead from the
// live item's head to the state a reader started from: it reads the turn
// whole instead.
var errChainBroken = fmt.Errorf("dynamo: checkpoint chain not at hand")

// follow applies the deltas of ls from its head back to the state at
// sequence from (whose messages base holds) and returns the messages at
// the head. errChainBroken when a delta on the way is not in ls or the
// chain passes from without meeting it.
func (ls liveState) follow(from int64, base []protocol.Message) ([]protocol.Message, error) {
	var chain []*delta
	for seq := ls.head; seq != from; {
		raw, ok := ls.deltas[seq]
		if !ok || seq < from {
			return nil, errChainBroken
		}
		var d delta
		if err := json.Unmarshal([]byte(raw), &d); err != nil {
			return nil, fmt.Errorf("read checkpoint %d: %w", seq, err)
		}
		if d.Prior >= seq {
			return nil, fmt.Errorf("read checkpoint %d: prior %d not before it", seq, d.Prior)
		}
		chain = append(chain, &d)
		seq = d.Prior
	}
	msgs := base
	for i := len(chain) - 1; i >= 0; i-- {
		var err error
		if msgs, err = chain[i].apply(msgs); err != nil {
			return nil, err
		}
	}
	return msgs, nil
}

// mergeLive folds a running turn item's checkpoints (the live and delta
// items among items, or else read with one Query) into t, whose messages
// are the turn item's (the first checkpoint's state, at it.LastSequence).
func (s *Store) mergeLive(ctx context.Context, it *turnItem, t *chat.Turn, items []map[string]types.AttributeValue) error {
	if items == nil {
		var err error
		if items, err = s.queryRange(ctx, it.PK, it.SK+deltaInfix, it.SK+liveSuffix); err != nil {
			return err
		}
	}
	ls := readLive(it.SK, items)
	t.Head = it.LastSequence
	if !ls.found {
		return nil // no checkpoint after the first
	}
	if ls.head > 0 {
		msgs, err := ls.follow(it.LastSequence, t.Messages)
		if err != nil {
			return fmt.Errorf("read checkpoints of turn %s: %w", it.TurnID, err)
		}
		t.Messages, t.Head = msgs, ls.head
	}
	t.LastSequence = max(t.LastSequence, ls.sequence)
	if ls.usage != nil {
		t.Usage, t.Metered = *ls.usage, ls.metered
	}
	return nil
}

// queryRange returns every item of pk whose sort key is in [from, to],
// read consistently (one Query, more pages only past 1 MB).
func (s *Store) queryRange(ctx context.Context, pk, from, to string) ([]map[string]types.AttributeValue, error) {
	e, err := build(expression.NewBuilder().WithKeyCondition(
		expression.Key(AttrPK).Equal(expression.Value(pk)).And(expression.Key(AttrSK).Between(expression.Value(from), expression.Value(to)))))
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
			return nil, fmt.Errorf("query %s: %w", from, err)
		}
		items = append(items, out.Items...)
	}
	return items, nil
}

// queryTurn reads the turn item at ordinal with its chunks, deltas and
// live item (one Query; the checkpoint items of an older layout, which
// sort after the live item, are not read). main is nil when the turn
// item does not exist.
func (s *Store) queryTurn(ctx context.Context, sessionID string, ordinal int64) (main map[string]types.AttributeValue, items []map[string]types.AttributeValue, err error) {
	sk := turnSK(ordinal)
	items, err = s.queryRange(ctx, sessionPK(sessionID), sk, sk+liveSuffix)
	if err != nil {
		return nil, nil, err
	}
	for _, item := range items {
		if skOf(item) == sk {
			main = item
		}
	}
	return main, items, nil
}
