package dynamo

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
)

const attrChunk = "chunk"

// SaveTurn implements chat.Store: one UpdateItem of the claim's turn
// item, conditional on the item not existing or running under the claim's
// token (an item whose turn was decided lost carries a fence token, a
// saved one is terminal). An SDK retry of a save that applied passes that
// condition again (its save id); any
// other unknown outcome is resolved with one consistent read of the item,
// which shows this call's save id when the write applied. Artifact
// references, when given, are validated (ErrInvalidArtifact) and
// deduplicated as PutArtifacts does. Messages larger than inlineLimit
// after compression are first written as chunk items (one conditional
// PutItem each), keyed by the save id so that a save never overwrites
// another save's chunks; a rejected save deletes the chunks it wrote. The
// owner comes from the claim.
func (s *Store) SaveTurn(ctx context.Context, c *chat.Claim, t *chat.Turn) error {
	ctx = withPurpose(ctx, PurposeSave)
	artifacts, err := c.CheckSave(t)
	if err != nil {
		return err
	}
	if t.Ordinal > maxOrdinal {
		return fmt.Errorf("%w: ordinal above %d", chat.ErrInvalidRequest, int64(maxOrdinal))
	}
	it := newTurnItem(t, c.Session.Owner, c.Lease.Token, s.now())
	it.SaveID = newToken()
	chunks, err := setPayload(&it, t.Messages, t.ReasoningBlocks)
	if err != nil {
		return err
	}
	for i, chunk := range chunks {
		if err := s.putChunk(ctx, t.SessionID, it.ChunkPrefix, i, chunk); err != nil {
			return err
		}
	}
	up, err := saveUpdate(&it, artifacts)
	if err != nil {
		return err
	}
	// Absent, or running under this claim's token: a terminal item never
	// changes, but for this very save's retry (its save id).
	cond := condition{
		expr:  "attribute_not_exists(#pk) OR #leaseToken = :token AND (#status = :running OR #saveId = :saveId)",
		names: []string{AttrPK, attrLeaseToken, attrStatus, attrSaveID},
		values: map[string]types.AttributeValue{":token": strValue(c.Lease.Token),
			":running": strValue(string(chat.TurnRunning)), ":saveId": strValue(it.SaveID)},
	}
	err = s.resolvedWrite(ctx, PurposeSave, turnKey(t.SessionID, t.Ordinal), up, cond, func(item map[string]types.AttributeValue) bool {
		v, _ := item[attrSaveID].(*types.AttributeValueMemberS)
		return v != nil && v.Value == it.SaveID
	})
	if failed, _ := conditionFailed(err); failed {
		s.deleteChunks(ctx, t.SessionID, it.ChunkPrefix, len(chunks))
		return chat.ErrLeaseLost
	}
	if err != nil {
		return fmt.Errorf("save turn %s of session %s: %w", t.TurnID, t.SessionID, err)
	}
	return nil
}

// setPayload stores msgs (and reasoning, chat.Turn.ReasoningBlocks) on
// it: inline JSON up to compressAbove bytes, inline gzip up to
// inlineLimit, else chunk items, whose parts it returns (keyed by the save
// id, so that a save never overwrites another save's).
func setPayload(it *turnItem, msgs []protocol.Message, reasoning []byte) (chunks [][]byte, err error) {
	data, err := encodePayload(msgs, reasoning)
	if err != nil {
		return nil, err
	}
	if len(data) <= compressAbove {
		it.Messages = string(data)
		return nil, nil
	}
	gz, err := gzipBytes(data)
	if err != nil {
		return nil, err
	}
	if len(gz) <= inlineLimit {
		it.MessagesGzip = gz
		return nil, nil
	}
	chunks = splitChunks(gz)
	it.Chunks = len(chunks)
	it.ChunkPrefix = turnSK(it.Ordinal) + "#CHUNK#" + it.SaveID + "#"
	return chunks, nil
}

// saveUpdate is the save's update of it: the item whole, with artifacts
// set to artifacts, or kept as recorded when artifacts is nil.
func saveUpdate(it *turnItem, artifacts []chat.ArtifactReference) (expression.UpdateBuilder, error) {
	up, err := turnItemUpdate(it)
	if err != nil {
		return up, err
	}
	if artifacts != nil {
		return up.Set(expression.Name(attrArtifacts), expression.Value(artifactsAV(artifacts))), nil
	}
	return up.Set(expression.Name(attrArtifacts), expression.IfNotExists(expression.Name(attrArtifacts), expression.Value([]artifactAV{}))), nil
}

// deleteChunks deletes the n chunk items a rejected save wrote, best
// effort: a chunk left behind is unreferenced, never read.
func (s *Store) deleteChunks(ctx context.Context, sessionID, prefix string, n int) {
	for i := range n {
		_, _ = s.client.DeleteItem(withPurpose(ctx, PurposeSave), &dynamodb.DeleteItemInput{TableName: s.table, Key: chunkKey(sessionID, prefix, i)})
	}
}

func chunkKey(sessionID, prefix string, i int) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		AttrPK: &types.AttributeValueMemberS{Value: sessionPK(sessionID)},
		AttrSK: &types.AttributeValueMemberS{Value: fmt.Sprintf("%s%04d", prefix, i)},
	}
}

// putChunk writes one chunk item, conditional on it being absent or
// holding the same bytes (a retry of this very write: the key is unique
// to one save).
func (s *Store) putChunk(ctx context.Context, sessionID, prefix string, i int, data []byte) error {
	item := chunkKey(sessionID, prefix, i)
	item[attrChunk] = &types.AttributeValueMemberB{Value: data}
	_, err := s.client.PutItem(withPurpose(ctx, PurposeSave), &dynamodb.PutItemInput{
		TableName:                 s.table,
		Item:                      item,
		ConditionExpression:       aws.String("attribute_not_exists(#pk) OR #chunk = :chunk"),
		ExpressionAttributeNames:  map[string]string{"#pk": AttrPK, "#chunk": attrChunk},
		ExpressionAttributeValues: map[string]types.AttributeValue{":chunk": item[attrChunk]},
	})
	if err != nil {
		return fmt.Errorf("save chunk %d of a turn of session %s: %w", i, sessionID, err)
	}
	return nil
}

// turnsFromItems decodes turn items, messages included (chunked turns
// cost one more Query each, and so does a running turn's checkpoints),
// as readers see them (chat.Turn.Presented), running turns without their
// lease expiry (readTurnItems adds it).
func (s *Store) turnsFromItems(ctx context.Context, items []map[string]types.AttributeValue) ([]chat.Turn, []*turnItem, error) {
	return s.turnsFromItemsWith(ctx, items, nil)
}

// turnsFromItemsWith is turnsFromItems with the live and delta items of
// the turns already read (nil: read them when needed).
func (s *Store) turnsFromItemsWith(ctx context.Context, items, related []map[string]types.AttributeValue) ([]chat.Turn, []*turnItem, error) {
	turns := make([]chat.Turn, 0, len(items))
	its := make([]*turnItem, 0, len(items))
	for _, item := range items {
		it, err := decodeTurnItem(item)
		if err != nil {
			return nil, nil, err
		}
		t := it.turn()
		if t.Messages, t.ReasoningBlocks, err = s.loadMessages(ctx, it); err != nil {
			return nil, nil, err
		}
		if it.Live {
			if err := s.mergeLive(ctx, it, &t, related); err != nil {
				return nil, nil, err
			}
		}
		turns = append(turns, t.Presented())
		its = append(its, it)
	}
	return turns, its, nil
}

// loadMessages returns the messages of it's payload and the reasoning
// blocks stored with them (setPayload).
func (s *Store) loadMessages(ctx context.Context, it *turnItem) (msgs []protocol.Message, reasoning []byte, err error) {
	var data []byte
	switch {
	case it.Chunks > 0:
		gz, err := s.readChunks(ctx, it)
		if err != nil {
			return nil, nil, err
		}
		if data, err = gunzipBytes(gz); err != nil {
			return nil, nil, err
		}
	case it.MessagesGzip != nil:
		if data, err = gunzipBytes(it.MessagesGzip); err != nil {
			return nil, nil, err
		}
	case it.Messages == "":
		return nil, nil, nil // a fence record: no messages
	default:
		data = []byte(it.Messages)
	}
	return decodePayload(data)
}

func (s *Store) readChunks(ctx context.Context, it *turnItem) ([]byte, error) {
	e, err := build(expression.NewBuilder().WithKeyCondition(
		expression.Key(AttrPK).Equal(expression.Value(it.PK)).And(expression.Key(AttrSK).BeginsWith(it.ChunkPrefix))))
	if err != nil {
		return nil, err
	}
	in := &dynamodb.QueryInput{
		TableName:                 s.table,
		KeyConditionExpression:    e.KeyCondition(),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
		ConsistentRead:            aws.Bool(true),
	}
	var data []byte
	n := 0
	p := dynamodb.NewQueryPaginator(s.client, in)
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("read chunks of turn %s: %w", it.TurnID, err)
		}
		for _, item := range out.Items {
			b, ok := item[attrChunk].(*types.AttributeValueMemberB)
			if !ok {
				return nil, fmt.Errorf("read chunks of turn %s: chunk without data", it.TurnID)
			}
			data = append(data, b.Value...)
			n++
		}
	}
	if n != it.Chunks {
		return nil, fmt.Errorf("read chunks of turn %s: found %d of %d", it.TurnID, n, it.Chunks)
	}
	return data, nil
}

// queryVisible runs one Query page of VisibleIndex.
func (s *Store) queryVisible(ctx context.Context, sessionID string, key expression.KeyConditionBuilder, asc bool, limit int32, start map[string]types.AttributeValue) (*dynamodb.QueryOutput, error) {
	e, err := build(expression.NewBuilder().WithKeyCondition(key))
	if err != nil {
		return nil, err
	}
	in := &dynamodb.QueryInput{
		TableName:                 s.table,
		IndexName:                 aws.String(VisibleIndex),
		KeyConditionExpression:    e.KeyCondition(),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
		ConsistentRead:            aws.Bool(true),
		ScanIndexForward:          aws.Bool(asc),
		ExclusiveStartKey:         start,
	}
	if limit > 0 {
		in.Limit = aws.Int32(limit)
	}
	out, err := s.client.Query(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("query turns of session %s: %w", sessionID, err)
	}
	return out, nil
}

func pkKey(sessionID string) expression.KeyConditionBuilder {
	return expression.Key(AttrPK).Equal(expression.Value(sessionPK(sessionID)))
}

// LoadContext implements chat.Store: one Query of VisibleIndex, newest
// first, with Limit maxTurns+1 (the extra item tells whether older turns
// exist; more pages only past 1 MB); no request when beforeOrdinal <= 1.
// Turns still running are skipped.
func (s *Store) LoadContext(ctx context.Context, sessionID string, beforeOrdinal int64, maxTurns int) ([]chat.Turn, bool, error) {
	ctx = withPurpose(ctx, PurposeContext)
	if maxTurns < 1 {
		return nil, false, fmt.Errorf("%w: load context needs maxTurns >= 1", chat.ErrInvalidRequest)
	}
	turns := []chat.Turn{}
	if beforeOrdinal <= 1 {
		return turns, false, nil
	}
	if beforeOrdinal > maxOrdinal {
		beforeOrdinal = maxOrdinal
	}
	key := pkKey(sessionID).And(expression.Key(AttrVisibleKey).LessThan(expression.Value(ordinalKey(beforeOrdinal))))
	var start map[string]types.AttributeValue
	for {
		out, err := s.queryVisible(ctx, sessionID, key, false, int32(maxTurns+1-len(turns)), start)
		if err != nil {
			return nil, false, err
		}
		page, _, err := s.turnsFromItems(ctx, out.Items)
		if err != nil {
			return nil, false, err
		}
		for _, t := range page {
			if t.Status == chat.TurnRunning {
				continue
			}
			if len(turns) == maxTurns {
				slices.Reverse(turns)
				return turns, true, nil
			}
			turns = append(turns, t)
		}
		if len(out.LastEvaluatedKey) == 0 {
			slices.Reverse(turns)
			return turns, false, nil
		}
		start = out.LastEvaluatedKey
	}
}

// Supersede implements chat.Store: one consistent read checks that the
// claim's token holds an unexpired lease, one Query per 1 MB finds the
// visible turns in range, and one UpdateItem per turn removes it from
// VisibleIndex and records the branch it left with (idempotent, so a
// retried one is harmless; the first turn's write carries the group). A
// range whose first visible turn is not the one at fromOrdinal costs one
// consistent read of that turn, to compare their groups.
func (s *Store) Supersede(ctx context.Context, c *chat.Claim, fromOrdinal, toOrdinal int64) (*chat.Siblings, error) {
	ctx = withPurpose(ctx, PurposeSupersede)
	if c == nil {
		return nil, fmt.Errorf("%w: supersede needs a claim", chat.ErrInvalidRequest)
	}
	sessionID, token := c.Session.ID, c.Lease.Token
	_, si, err := s.readSession(ctx, sessionID)
	if errors.Is(err, errNoSession) {
		return nil, chat.ErrLeaseLost
	}
	if err != nil {
		return nil, err
	}
	if si.LeaseToken != token || si.LeaseExpiresAt <= millis(s.now()) {
		return nil, chat.ErrLeaseLost
	}
	fromOrdinal = max(fromOrdinal, 1)
	toOrdinal = min(toOrdinal, maxOrdinal+1)
	if fromOrdinal >= toOrdinal {
		return nil, nil
	}
	hide, err := s.visibleFrom(ctx, sessionID, fromOrdinal, toOrdinal-1, 0)
	if err != nil || len(hide) == 0 {
		return nil, err
	}
	first := hide[0]
	if first.Ordinal != fromOrdinal {
		item, found, err := s.getItem(ctx, turnKey(sessionID, fromOrdinal))
		if err != nil {
			return nil, fmt.Errorf("supersede: read turn %d of session %s: %w", fromOrdinal, sessionID, err)
		}
		var p *turnItem
		if found {
			if p, err = decodeTurnItem(item); err != nil {
				return nil, err
			}
		}
		if p == nil || p.group() != first.group() {
			return nil, chat.ErrLineageStale
		}
	}
	firstTurn := first.turn()
	g, err := chat.Joined(&firstTurn, chat.Sibling{Ordinal: c.Lease.Ordinal, TurnID: c.Lease.TurnID})
	if err != nil {
		return nil, err
	}
	if err := s.leaveBranch(ctx, PurposeSupersede, sessionID, hide, g, c.Lease.Ordinal); err != nil {
		return nil, err
	}
	return g, nil
}

// ListTurns implements chat.Store: exactly one Query of VisibleIndex with
// Limit = limit+1, so HasMore is exact; the owner is checked on the
// returned items (denormalised). Only an empty result costs a GetItem, to
// tell ErrSessionNotFound from a session without visible turns. A Query
// cut short by DynamoDB's 1 MB page size returns all but its last item
// with HasMore true, so HasMore stays exact and no page is empty.
func (s *Store) ListTurns(ctx context.Context, req chat.ListRequest) (*chat.Page, error) {
	ctx = withPurpose(ctx, PurposeRead)
	req, err := req.Normalized()
	if err != nil {
		return nil, err
	}
	order, limit := req.Order, req.Limit
	key := pkKey(req.SessionID)
	if req.Cursor != "" {
		after, err := s.cursors.Decode(req.SessionID, order, req.Cursor)
		if err != nil {
			return nil, err
		}
		if after > maxOrdinal {
			return nil, chat.ErrInvalidCursor
		}
		bound := expression.Value(ordinalKey(after))
		if order == chat.OrderAsc {
			key = key.And(expression.Key(AttrVisibleKey).GreaterThan(bound))
		} else {
			key = key.And(expression.Key(AttrVisibleKey).LessThan(bound))
		}
	}
	out, err := s.queryVisible(ctx, req.SessionID, key, order == chat.OrderAsc, int32(limit+1), nil)
	if err != nil {
		return nil, err
	}
	items := out.Items
	if len(items) == 0 {
		if _, err := s.GetSession(ctx, req.SessionID, req.Principal); err != nil {
			return nil, err
		}
		return &chat.Page{Turns: []chat.Turn{}}, nil
	}
	if err := checkOwner(items, req.Principal); err != nil {
		return nil, err
	}
	page := &chat.Page{}
	switch {
	case len(items) > limit:
		items, page.HasMore = items[:limit], true
	case len(out.LastEvaluatedKey) > 0 && len(items) > 1:
		items, page.HasMore = items[:len(items)-1], true
	case len(out.LastEvaluatedKey) > 0:
		// Unreachable with 400 KB items in 1 MB pages; stay conservative.
		page.HasMore = true
	}
	turns, its, err := s.readTurnItems(ctx, req.SessionID, items)
	if err != nil {
		return nil, err
	}
	page.Turns = turns
	if page.HasMore {
		page.NextCursor = s.cursors.Encode(req.SessionID, order, its[len(its)-1].Ordinal)
	}
	return page, nil
}

// checkOwner reports ErrSessionNotFound unless p owns every item.
func checkOwner(items []map[string]types.AttributeValue, p chat.Principal) error {
	want := ownerKey(p)
	for _, item := range items {
		v, ok := item[attrOwnerKey].(*types.AttributeValueMemberS)
		if !ok || v.Value != want {
			return chat.ErrSessionNotFound
		}
	}
	return nil
}

// turnIDProjection is what TurnIDIndex projects besides the keys: what a
// claim's lookup of an older turn id needs (status, input hash, and the
// save id and live flag that tell a fence record), and the owner that
// access checks compare. A reader of anything else fetches the item from
// the table (Select ALL_ATTRIBUTES).
var turnIDProjection = []string{attrStatus, attrInputHash, attrOwnerKey, attrSaveID, attrLive}

// findTurnItem runs one Query of TurnIDIndex and returns the newest item
// with turnID (found false when none), reading only the attributes in
// projection plus the keys, or the whole item when projection is empty.
func (s *Store) findTurnItem(ctx context.Context, sessionID, turnID string, projection ...string) (item map[string]types.AttributeValue, found bool, err error) {
	b := expression.NewBuilder().WithKeyCondition(pkKey(sessionID).And(expression.Key(AttrTurnID).Equal(expression.Value(turnID))))
	if len(projection) > 0 {
		names := []expression.NameBuilder{expression.Name(AttrPK), expression.Name(AttrSK), expression.Name(AttrTurnID)}
		for _, n := range projection {
			names = append(names, expression.Name(n))
		}
		b = b.WithProjection(expression.NamesList(names[0], names[1:]...))
	}
	e, err := build(b)
	if err != nil {
		return nil, false, err
	}
	in := &dynamodb.QueryInput{
		TableName:                 s.table,
		IndexName:                 aws.String(TurnIDIndex),
		KeyConditionExpression:    e.KeyCondition(),
		ProjectionExpression:      e.Projection(),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
		ConsistentRead:            aws.Bool(true),
	}
	if len(projection) == 0 {
		in.Select = types.SelectAllAttributes
	}
	out, err := s.client.Query(ctx, in)
	if err != nil {
		return nil, false, fmt.Errorf("find turn in session %s: %w", sessionID, err)
	}
	if len(out.Items) == 0 {
		return nil, false, nil
	}
	// A turn id names one turn of its session (older layouts could let an
	// id recur once it left the terminal window); the newest turn (highest
	// sort key) is the one meant.
	items := out.Items
	sort.Slice(items, func(i, j int) bool { return skOf(items[i]) > skOf(items[j]) })
	return items[0], true, nil
}

func skOf(item map[string]types.AttributeValue) string {
	if v, ok := item[AttrSK].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

// turnAccess finds the turn item and checks p's access: ErrSessionNotFound
// when the session is absent or not p's (a principal TrustedFor the owner
// passes when trusted is set), ErrTurnNotFound when the session has no
// such turn (a fence record is none). A non-empty projection gets
// turnIDProjection added.
func (s *Store) turnAccess(ctx context.Context, sessionID, turnID string, p chat.Principal, trusted bool, projection ...string) (map[string]types.AttributeValue, error) {
	trustedOK := trusted && p.Trusted
	if len(projection) > 0 {
		projection = append(slices.Clone(turnIDProjection), projection...)
		slices.Sort(projection)
		projection = slices.Compact(projection)
	}
	item, found, err := s.findTurnItem(ctx, sessionID, turnID, projection...)
	if err != nil {
		return nil, err
	}
	if !found || isFenceRecord(item) {
		sess, _, err := s.readSession(ctx, sessionID)
		if errors.Is(err, errNoSession) {
			return nil, chat.ErrSessionNotFound
		}
		if err != nil {
			return nil, err
		}
		if allowed := p.Owns(sess.Owner) || trustedOK && p.TrustedFor(sess.Owner); !allowed {
			return nil, chat.ErrSessionNotFound
		}
		return nil, chat.ErrTurnNotFound
	}
	if trustedOK {
		v, _ := item[attrOwnerKey].(*types.AttributeValueMemberS)
		if v == nil {
			return nil, chat.ErrSessionNotFound
		}
		owner, err := parseOwnerKey(v.Value)
		if err != nil || !p.TrustedFor(owner) {
			return nil, chat.ErrSessionNotFound
		}
		return item, nil
	}
	if err := checkOwner([]map[string]types.AttributeValue{item}, p); err != nil {
		return nil, err
	}
	return item, nil
}

// FindTurn implements chat.Store: one Query of TurnIDIndex, fetching the
// item from the table (plus a GetItem when no turn matches, to choose the
// error).
func (s *Store) FindTurn(ctx context.Context, sessionID, turnID string, p chat.Principal) (*chat.Turn, error) {
	ctx = withPurpose(ctx, PurposeRead)
	item, err := s.turnAccess(ctx, sessionID, turnID, p, false)
	if err != nil {
		return nil, err
	}
	turns, _, err := s.readTurnItems(ctx, sessionID, []map[string]types.AttributeValue{item})
	if err != nil {
		return nil, err
	}
	return &turns[0], nil
}

// PutArtifacts implements chat.Store: one Query of TurnIDIndex and one
// conditional UpdateItem (an unknown outcome resolved with one consistent
// read). Invalid references cost no request.
func (s *Store) PutArtifacts(ctx context.Context, sessionID, turnID string, p chat.Principal, refs []chat.ArtifactReference) ([]chat.ArtifactReference, error) {
	ctx = withPurpose(ctx, PurposeArtifacts)
	refs, err := chat.StoredArtifacts(refs) // a fresh slice: the caller's is not kept
	if err != nil {
		return nil, err
	}
	item, err := s.turnAccess(ctx, sessionID, turnID, p, true, attrOwnerKey)
	if err != nil {
		return nil, err
	}
	cond := condition{expr: "#turnId = :turnId", names: []string{AttrTurnID},
		values: map[string]types.AttributeValue{":turnId": strValue(turnID)}}
	want := artifactsAV(refs)
	up := expression.Set(expression.Name(attrArtifacts), expression.Value(want))
	err = s.resolvedWrite(ctx, PurposeArtifacts, map[string]types.AttributeValue{AttrPK: item[AttrPK], AttrSK: item[AttrSK]}, up, cond, func(item map[string]types.AttributeValue) bool {
		var got []artifactAV
		return item != nil && attributevalue.Unmarshal(item[attrArtifacts], &got) == nil && slices.Equal(got, want)
	})
	if failed, _ := conditionFailed(err); failed {
		return nil, chat.ErrTurnNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("put artifacts of turn %s: %w", turnID, err)
	}
	return refs, nil
}

// GetArtifacts implements chat.Store: one Query of TurnIDIndex, fetching
// the item from the table (the index does not project the artifacts), as
// FindTurn for access and errors.
func (s *Store) GetArtifacts(ctx context.Context, sessionID, turnID string, p chat.Principal) ([]chat.ArtifactReference, error) {
	ctx = withPurpose(ctx, PurposeRead)
	item, err := s.turnAccess(ctx, sessionID, turnID, p, false)
	if err != nil {
		return nil, err
	}
	var avs []artifactAV
	if v, ok := item[attrArtifacts]; ok {
		if err := attributevalue.Unmarshal(v, &avs); err != nil {
			return nil, fmt.Errorf("decode artifacts of turn %s: %w", turnID, err)
		}
	}
	return artifactRefs(avs), nil
}

// turnItemUpdate returns the update that writes it whole, artifacts
// aside (the caller sets or keeps them): every attribute set, the
// optional ones it lacks removed.
func turnItemUpdate(it *turnItem) (expression.UpdateBuilder, error) {
	var up expression.UpdateBuilder
	av, err := attributevalue.MarshalMap(it)
	if err != nil {
		return up, fmt.Errorf("encode turn %s: %w", it.TurnID, err)
	}
	delete(av, AttrPK)
	delete(av, AttrSK)
	delete(av, attrArtifacts)
	for _, name := range slices.Sorted(maps.Keys(av)) {
		up = up.Set(expression.Name(name), expression.Value(av[name]))
	}
	for _, name := range optionalTurnAttrs {
		if _, ok := av[name]; !ok {
			up = up.Remove(expression.Name(name))
		}
	}
	return up, nil
}
