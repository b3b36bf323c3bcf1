package dynamo

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/turnstream/turnstream/pkg/chat"
)

// The usage ledger (chat.Store, docs/quotas.md): one item per principal
// and UTC month, and one small item per session that counted a turn in
// the month, in the same table.
//
//	ledger item  pk=USAGE#<tenant key>#<yyyy-mm>  sk=P#<principal key>
//	  tenant, subject (the principal, for listings), purgeAt (TTL: the
//	  end of the month plus the retention), the month's counters (m +
//	  a letter per figure: mt turns, mi input tokens, mo output tokens,
//	  mr cache read, mw cache write, mm model calls, mc tool calls, mq
//	  store requests, mu read units, mv write units) and each day's
//	  (d<dd> + the same letter: d07t), the journal entries of the counts
//	  in progress (J#<chat.SessionMarker>: the ordinal) and the generation
//	  g (see RecordUsage), the admissions (A#<id>: "<start ms> <expiry ms>
//	  <session marker>[ <rate place>]", expiry 0
//	  once the turn was counted), their compare-and-set version qv
//	  (concurrentSessions), and the turnsPerMinute places (R#<n>: the
//	  start ms of the admission that last took place n; see Admit). Items
//	  written before the journal may still hold per-session markers
//	  (S#<session marker>: the last ordinal counted), read as counted.
//	counted item pk=USAGE#<tenant key>#<yyyy-mm>  sk=K#<principal key>#<session marker>
//	  c (the session's last ordinal counted in the month), purgeAt.
//
// The keys are hashes (chat.TenantKey, chat.PrincipalKey): fixed size
// whatever a tenant or subject, and a tenant's principals of a month are
// one partition, which ListUsage reads in pages (its key condition skips
// the counted items). The ledger item grows with the days of the month
// that have turns (about 80 bytes a day) and the admissions of the last
// minute, never with the sessions it counted.

// Ledger key values and attribute names.
const (
	ledgerPrefix   = "USAGE#"
	ledgerSKPrefix = "P#"

	attrLedgerTenant     = "tenant"
	attrLedgerSubject    = "subject"
	attrAdmissionVersion = "qv"
	// markerPrefix starts the attribute holding a session's last counted
	// ordinal; admissionPrefix an admission's; ratePlacePrefix a
	// turnsPerMinute place's (the start, in ms, of the admission that
	// last took it).
	markerPrefix    = "S#"
	admissionPrefix = "A#"
	ratePlacePrefix = "R#"
	// journalPrefix starts a session's journal entry in the month item:
	// the ordinal of the turn being counted, from its add to its clear
	// (RecordUsage).
	journalPrefix = "J#"
	// attrGeneration is the month item's generation, moved on by every
	// clear of a journal entry (RecordUsage).
	attrGeneration = "g"
	// countedSKPrefix starts the sort key of a session's counted item,
	// and attrCountedOrdinal holds its last counted ordinal.
	countedSKPrefix    = "K#"
	attrCountedOrdinal = "c"
	// monthPrefix and dayPrefix start the counters' attribute names.
	monthPrefix = "m"
	dayPrefix   = "d"
)

// counterLetters names each figure of chat.Counters in attribute names.
var (
	counterInts = []struct {
		letter string
		get    func(*chat.Counters) *int64
	}{
		{"t", func(c *chat.Counters) *int64 { return &c.Turns }},
		{"i", func(c *chat.Counters) *int64 { return &c.InputTokens }},
		{"o", func(c *chat.Counters) *int64 { return &c.OutputTokens }},
		{"r", func(c *chat.Counters) *int64 { return &c.CacheReadTokens }},
		{"w", func(c *chat.Counters) *int64 { return &c.CacheWriteTokens }},
		{"k", func(c *chat.Counters) *int64 { return &c.ReasoningTokens }},
		{"m", func(c *chat.Counters) *int64 { return &c.ModelCalls }},
		{"c", func(c *chat.Counters) *int64 { return &c.ToolCalls }},
		{"q", func(c *chat.Counters) *int64 { return &c.StoreRequests }},
	}
	counterFloats = []struct {
		letter string
		get    func(*chat.Counters) *float64
	}{
		{"u", func(c *chat.Counters) *float64 { return &c.ReadUnits }},
		{"v", func(c *chat.Counters) *float64 { return &c.WriteUnits }},
	}
)

// ledgerPK is the partition key of tenant's ledger items of the month
// containing t.
func ledgerPK(tenant string, t time.Time) string {
	return ledgerPrefix + chat.TenantKey(tenant) + "#" + chat.MonthKey(t)
}

// ledgerKey is the key of p's ledger item of the month containing t.
func ledgerKey(p chat.Principal, t time.Time) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		AttrPK: strValue(ledgerPK(p.Tenant, t)),
		AttrSK: strValue(ledgerSKPrefix + chat.PrincipalKey(p)),
	}
}

// dayCounters is the prefix of the counters of t's day.
func dayCounters(t time.Time) string { return fmt.Sprintf("%s%02d", dayPrefix, t.UTC().Day()) }

// ledgerIdentity sets what every write of p's item of t's month sets:
// the principal and the expiry.
func (s *Store) ledgerIdentity(up expression.UpdateBuilder, p chat.Principal, t time.Time) expression.UpdateBuilder {
	return up.Set(expression.Name(attrLedgerTenant), expression.Value(p.Tenant)).
		Set(expression.Name(attrLedgerSubject), expression.Value(p.Subject)).
		Set(expression.Name(AttrPurgeAt), expression.Value(s.ledger.PurgeAt(t).Unix()))
}

// addCounters ADDs the figures of c that are not zero to the counters
// whose names start with prefix.
func addCounters(up expression.UpdateBuilder, prefix string, c chat.Counters) expression.UpdateBuilder {
	for _, f := range counterInts {
		if v := *f.get(&c); v != 0 {
			up = up.Add(expression.Name(prefix+f.letter), expression.Value(v))
		}
	}
	for _, f := range counterFloats {
		if v := *f.get(&c); v != 0 {
			up = up.Add(expression.Name(prefix+f.letter), expression.Value(v))
		}
	}
	return up
}

// countersOf reads the counters whose names start with prefix.
func countersOf(item map[string]types.AttributeValue, prefix string) chat.Counters {
	var c chat.Counters
	for _, f := range counterInts {
		*f.get(&c) = numOf(item, prefix+f.letter)
	}
	for _, f := range counterFloats {
		if v, _ := item[prefix+f.letter].(*types.AttributeValueMemberN); v != nil {
			*f.get(&c), _ = strconv.ParseFloat(v.Value, 64)
		}
	}
	return c
}

// toMillis returns t at millisecond precision in UTC, as the items keep it.
func toMillis(t time.Time) time.Time { return fromMillis(millis(t)) }

// countAttempts bounds the rounds of one RecordUsage: a round ends early
// only when its add failed its condition, because the generation moved
// (another session's count settled) or an add of the same turn landed
// first.
const countAttempts = 16

// RecordUsage implements chat.Store. Counting a turn is, at most:
//
//  1. one consistent BatchGetItem of the owner's month item and the
//     session's counted item (a later step, or an earlier count, may have
//     done the work: the counted ordinal at or above the entry's, or the
//     session's journal entry at or above it, say the add applied);
//  2. the add: one UpdateItem of the month item ADDing the turn to the
//     month's and the day's counters and setting the session's journal
//     entry (J#<session marker>) to the ordinal, conditional on the entry
//     being below the ordinal (or absent) and on the item's generation
//     (g) being the one read;
//  3. the settle: one UpdateItem of the session's counted item (sk
//     K#<principal key>#<session marker>, in the same partition), setting
//     its counted ordinal, conditional on it being below the entry's;
//  4. the clear: one UpdateItem of the month item removing the journal
//     entry and adding 1 to the generation, conditional on the entry
//     holding the ordinal.
//
// So the month item holds a journal entry only for a session whose count
// is between its add and its clear (a crash there leaves one, which the
// next count of the session, or of the same turn, clears), and its size
// does not grow with the sessions it counted. Exactly once: the journal
// entry refuses a second add of the turn (a retry, a re-send, a late copy,
// a decider) until the clear; the clear happens only once the counted item
// remembers the turn, which every count reads first; and a copy of the add
// that lands after the clear fails its generation, which the clear moved
// and nothing moves back. A failed condition is not an error: the next
// round's read says what happened. An add whose outcome is unknown is
// resolved as the store's writes are (one consistent read, one more send).
// Month items written before the journal keep their per-session markers
// (S#<session marker>): one at or above the entry's ordinal counts as
// counted.
func (s *Store) RecordUsage(ctx context.Context, e chat.LedgerEntry) error {
	ctx = withPurpose(ctx, PurposeLedgerRead)
	if err := e.Validate(); err != nil {
		return fmt.Errorf("record usage: %w", err)
	}
	start := toMillis(e.StartedAt)
	session := chat.SessionMarker(e.SessionID)
	monthKey, countedKey := ledgerKey(e.Owner, start), countedItemKey(e.Owner, start, session)
	journal := journalPrefix + session
	for range countAttempts {
		month, counted, err := s.readCount(ctx, monthKey, countedKey)
		if err != nil {
			return fmt.Errorf("record usage of turn %d of session %s: %w", e.Ordinal, e.SessionID, err)
		}
		done := numOf(counted, attrCountedOrdinal)
		if done >= e.Ordinal || numOf(month, markerPrefix+session) >= e.Ordinal {
			if j := numOf(month, journal); j != 0 && j <= done {
				// A crash between a settle and its clear left the entry.
				_ = s.clearJournal(ctx, monthKey, journal, j)
			}
			return nil // counted before
		}
		if numOf(month, journal) < e.Ordinal {
			err := s.addCount(ctx, monthKey, e, start, journal, numOf(month, attrGeneration))
			if failed, _ := conditionFailed(err); failed {
				continue // the next read tells
			}
			if err != nil {
				return fmt.Errorf("record usage of turn %d of session %s: %w", e.Ordinal, e.SessionID, err)
			}
		}
		// Added (now or before): remember it on the session's item, then
		// clear the journal entry.
		if err := s.settleCount(ctx, e.Owner, start, countedKey, e.Ordinal); err != nil {
			return fmt.Errorf("record usage of turn %d of session %s: settle: %w", e.Ordinal, e.SessionID, err)
		}
		// A clear that fails leaves the entry to the session's next count:
		// the turn is counted and remembered either way.
		_ = s.clearJournal(ctx, monthKey, journal, e.Ordinal)
		return nil
	}
	return fmt.Errorf("record usage of turn %d of session %s: the month item kept changing", e.Ordinal, e.SessionID)
}

// readCount reads the month item and the session's counted item
// consistently in one BatchGetItem (nil when absent).
func (s *Store) readCount(ctx context.Context, monthKey, countedKey map[string]types.AttributeValue) (month, counted map[string]types.AttributeValue, err error) {
	items, err := s.getItems(ctx, []map[string]types.AttributeValue{monthKey, countedKey})
	if err != nil {
		return nil, nil, err
	}
	want := sortKey(countedKey)
	for _, item := range items {
		if skOf(item) == want {
			counted = item
		} else {
			month = item
		}
	}
	return month, counted, nil
}

// addCount is step 2 of RecordUsage: the counters added and the journal
// entry set, conditional on the entry being below the ordinal and on the
// generation read (zero: none yet). An unknown outcome is resolved by a
// consistent read (the entry at or above the ordinal: applied).
func (s *Store) addCount(ctx context.Context, key map[string]types.AttributeValue, e chat.LedgerEntry, start time.Time, journal string, generation int64) error {
	c := chat.Counters{Turns: 1, Usage: e.Usage}
	up := s.ledgerIdentity(expression.UpdateBuilder{}, e.Owner, start).
		Set(expression.Name(journal), expression.Value(e.Ordinal))
	up = addCounters(addCounters(up, monthPrefix, c), dayCounters(start), c)
	if e.Admission != "" {
		// Its slot is released; it counts towards the rate for a minute
		// from its start.
		up = up.Set(expression.Name(admissionPrefix+e.Admission), expression.Value(admissionValue(start, time.Time{}, chat.SessionMarker(e.SessionID))))
	}
	cond := condition{
		expr:    "(attribute_not_exists(#journal) OR #journal < :ordinal) AND attribute_not_exists(#g)",
		aliases: map[string]string{"#journal": journal, "#g": attrGeneration},
		values:  map[string]types.AttributeValue{":ordinal": numValue(e.Ordinal)},
	}
	if generation > 0 {
		cond.expr = "(attribute_not_exists(#journal) OR #journal < :ordinal) AND #g = :generation"
		cond.values[":generation"] = numValue(generation)
	}
	return s.resolvedWrite(ctx, PurposeLedgerAdd, key, up, cond, func(item map[string]types.AttributeValue) bool {
		return item != nil && numOf(item, journal) >= e.Ordinal
	})
}

// settleCount is step 3 of RecordUsage: the session's counted ordinal set
// to ordinal unless it is there already (a failed condition: it is).
func (s *Store) settleCount(ctx context.Context, p chat.Principal, start time.Time, key map[string]types.AttributeValue, ordinal int64) error {
	up := expression.Set(expression.Name(attrCountedOrdinal), expression.Value(ordinal)).
		Set(expression.Name(AttrPurgeAt), expression.Value(s.ledger.PurgeAt(start).Unix()))
	cond := condition{expr: "attribute_not_exists(#c) OR #c < :ordinal", aliases: map[string]string{"#c": attrCountedOrdinal},
		values: map[string]types.AttributeValue{":ordinal": numValue(ordinal)}}
	err := s.resolvedWrite(ctx, PurposeLedgerSettle, key, up, cond, func(item map[string]types.AttributeValue) bool {
		return item != nil && numOf(item, attrCountedOrdinal) >= ordinal
	})
	if failed, _ := conditionFailed(err); failed {
		return nil
	}
	return err
}

// clearJournal is step 4 of RecordUsage: the session's journal entry
// removed and the generation moved on, conditional on the entry holding
// ordinal (a failed condition: cleared before, or a later turn's).
func (s *Store) clearJournal(ctx context.Context, key map[string]types.AttributeValue, journal string, ordinal int64) error {
	up := expression.Remove(expression.Name(journal)).Add(expression.Name(attrGeneration), expression.Value(1))
	cond := condition{expr: "#journal = :ordinal", aliases: map[string]string{"#journal": journal},
		values: map[string]types.AttributeValue{":ordinal": numValue(ordinal)}}
	err := s.resolvedWrite(ctx, PurposeLedgerClear, key, up, cond, func(item map[string]types.AttributeValue) bool {
		return item != nil && numOf(item, journal) != ordinal
	})
	if failed, _ := conditionFailed(err); failed {
		return nil
	}
	return err
}

// countedItemKey is the key of the counted item of the session whose
// marker is session, in p's ledger partition of the month containing t.
func countedItemKey(p chat.Principal, t time.Time, session string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		AttrPK: strValue(ledgerPK(p.Tenant, t)),
		AttrSK: strValue(countedSKPrefix + chat.PrincipalKey(p) + "#" + session),
	}
}

// ReadUsage implements chat.Store: one consistent GetItem of p's item of
// at's month; in the first chat.AdmissionCarry of a month one
// BatchGetItem of it and the previous month's, for the admissions of turns
// started before midnight.
func (s *Store) ReadUsage(ctx context.Context, p chat.Principal, at time.Time) (*chat.PrincipalUsage, error) {
	ctx = withPurpose(ctx, PurposeLedgerRead)
	at = toMillis(at)
	keys := []map[string]types.AttributeValue{ledgerKey(p, at)}
	if start, _ := chat.PeriodMonth.Bounds(at); at.Sub(start) < chat.AdmissionCarry {
		keys = append(keys, ledgerKey(p, start.Add(-time.Millisecond)))
	}
	items, err := s.getItems(ctx, keys)
	if err != nil {
		return nil, fmt.Errorf("read usage: %w", err)
	}
	u := &chat.PrincipalUsage{Principal: chat.Principal{Subject: p.Subject, Tenant: p.Tenant}, At: at, Admissions: []chat.Admission{}}
	current := sortKey(keys[0])
	pk, _ := keys[0][AttrPK].(*types.AttributeValueMemberS)
	for _, item := range items {
		if !s.ledgerLive(item) {
			continue
		}
		isCurrent := skOf(item) == current && pkOf(item) == pk.Value
		u.RatePlaces = mergeRatePlaces(u.RatePlaces, item)
		for _, a := range admissionsOf(item) {
			switch {
			case a.Live(at):
				u.Admissions = append(u.Admissions, a)
			case isCurrent:
				u.Stale = append(u.Stale, a.ID)
			}
		}
		if isCurrent {
			u.Month, u.Day = countersOf(item, monthPrefix), countersOf(item, dayCounters(at))
			u.Version = numOf(item, attrAdmissionVersion)
		}
	}
	return u, nil
}

// ledgerLive reports whether a ledger item is within its retention (TTL
// deletes lazily: expiry is always compared here).
func (s *Store) ledgerLive(item map[string]types.AttributeValue) bool {
	return numOf(item, AttrPurgeAt) > s.now().Unix()
}

// pkOf returns an item's partition key.
func pkOf(item map[string]types.AttributeValue) string {
	v, _ := item[AttrPK].(*types.AttributeValueMemberS)
	if v == nil {
		return ""
	}
	return v.Value
}

// getItems reads keys consistently: one GetItem for one key, else one
// BatchGetItem (a key left unprocessed is read with GetItem). Absent
// items are left out.
func (s *Store) getItems(ctx context.Context, keys []map[string]types.AttributeValue) ([]map[string]types.AttributeValue, error) {
	if len(keys) == 1 {
		item, found, err := s.getItem(ctx, keys[0])
		if err != nil || !found {
			return nil, err
		}
		return []map[string]types.AttributeValue{item}, nil
	}
	out, err := s.client.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
		*s.table: {Keys: keys, ConsistentRead: aws.Bool(true)},
	}})
	if err != nil {
		return nil, err
	}
	items := out.Responses[*s.table]
	for _, key := range out.UnprocessedKeys[*s.table].Keys {
		item, found, err := s.getItem(ctx, key)
		if err != nil {
			return nil, err
		}
		if found {
			items = append(items, item)
		}
	}
	return items, nil
}

// ListUsage implements chat.Store: a consistent Query of the tenant's
// partition of the month, from after the cursor's principal, Limit one
// more than the page (so that HasMore is exact); a Query page that ends
// at 1 MB first is followed by the next.
func (s *Store) ListUsage(ctx context.Context, req chat.UsageListRequest) (*chat.UsagePage, error) {
	ctx = withPurpose(ctx, PurposeLedgerRead)
	req, err := req.Normalized()
	if err != nil {
		return nil, fmt.Errorf("list usage: %w", err)
	}
	at := toMillis(req.At)
	binding := chat.UsageCursorBinding(req.Tenant, at)
	pk := ledgerPK(req.Tenant, at)
	var start map[string]types.AttributeValue
	if req.Cursor != "" {
		after, err := s.cursors.DecodeKey(binding, req.Cursor)
		if err != nil {
			return nil, err
		}
		start = map[string]types.AttributeValue{AttrPK: strValue(pk), AttrSK: strValue(ledgerSKPrefix + after)}
	}
	e, err := build(expression.NewBuilder().WithKeyCondition(expression.Key(AttrPK).Equal(expression.Value(pk)).
		And(expression.Key(AttrSK).BeginsWith(ledgerSKPrefix))))
	if err != nil {
		return nil, err
	}
	var items []map[string]types.AttributeValue
	for len(items) <= req.Limit {
		out, err := s.client.Query(ctx, &dynamodb.QueryInput{
			TableName:                 s.table,
			KeyConditionExpression:    e.KeyCondition(),
			ExpressionAttributeNames:  e.Names(),
			ExpressionAttributeValues: e.Values(),
			ConsistentRead:            aws.Bool(true),
			Limit:                     aws.Int32(int32(req.Limit + 1 - len(items))),
			ExclusiveStartKey:         start,
		})
		if err != nil {
			return nil, fmt.Errorf("list usage: %w", err)
		}
		for _, item := range out.Items {
			if s.ledgerLive(item) {
				items = append(items, item)
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		start = out.LastEvaluatedKey
	}
	page := &chat.UsagePage{Principals: []chat.PrincipalUsage{}}
	for i, item := range items {
		if i == req.Limit {
			page.HasMore = true
			page.NextCursor = s.cursors.EncodeKey(binding, strings.TrimPrefix(skOf(items[i-1]), ledgerSKPrefix))
			break
		}
		page.Principals = append(page.Principals, *usageOfItem(item, at))
	}
	return page, nil
}

// usageOfItem reads a ledger item as the usage of its principal at at.
func usageOfItem(item map[string]types.AttributeValue, at time.Time) *chat.PrincipalUsage {
	str := func(name string) string {
		v, _ := item[name].(*types.AttributeValueMemberS)
		if v == nil {
			return ""
		}
		return v.Value
	}
	u := &chat.PrincipalUsage{
		Principal: chat.Principal{Subject: str(attrLedgerSubject), Tenant: str(attrLedgerTenant)}, At: at,
		Month: countersOf(item, monthPrefix), Day: countersOf(item, dayCounters(at)),
		Version: numOf(item, attrAdmissionVersion), Admissions: []chat.Admission{},
	}
	for _, a := range admissionsOf(item) {
		if a.Live(at) {
			u.Admissions = append(u.Admissions, a)
		} else {
			u.Stale = append(u.Stale, a.ID)
		}
	}
	return u
}

// countDecided counts a turn this store decided (fate.go): its lease
// crashed (session owner, ordinal, start, admission) and its record's
// usage, when the ledger is enabled. A lease written before leases kept
// their start counts in the month of its expiry, the same for every
// decider.
func (s *Store) countDecided(ctx context.Context, sessionID string, owner chat.Principal, crashed *chat.Lease, usage chat.Usage) error {
	if !s.ledger.Enabled {
		return nil
	}
	start := crashed.StartedAt
	if start.IsZero() {
		start = crashed.ExpiresAt
	}
	return s.RecordUsage(ctx, chat.LedgerEntry{SessionID: sessionID, Ordinal: crashed.Ordinal, Owner: owner,
		StartedAt: start, Usage: usage, Admission: crashed.Admission})
}
