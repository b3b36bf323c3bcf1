package dynamo

import (
	"context"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"slices"
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

// admissionValue encodes an admission: "<start ms> <expiry ms> <session
// marker>" (expiry 0: counted).
func admissionValue(start, expires time.Time, session string) string {
	return strconv.FormatInt(millis(start), 10) + " " + strconv.FormatInt(millis(expires), 10) + " " + session
}

// placedValue encodes an admission that took rate place number place:
// admissionValue and " <place>", so that its give-back finds the place.
func placedValue(start, expires time.Time, session string, place int) string {
	return admissionValue(start, expires, session) + " " + strconv.Itoa(place)
}

// storedAdmission is an admission as its item holds it: place is its rate
// place (-1: none).
type storedAdmission struct {
	chat.Admission
	place int
}

// parseAdmission decodes an admission attribute (admissionValue or
// placedValue); false when it is not one.
func parseAdmission(name string, v types.AttributeValue) (storedAdmission, bool) {
	id, ok := strings.CutPrefix(name, admissionPrefix)
	s, _ := v.(*types.AttributeValueMemberS)
	if !ok || s == nil {
		return storedAdmission{}, false
	}
	f := strings.Split(s.Value, " ")
	if len(f) != 3 && len(f) != 4 {
		return storedAdmission{}, false
	}
	a, errA := strconv.ParseInt(f[0], 10, 64)
	b, errB := strconv.ParseInt(f[1], 10, 64)
	if errA != nil || errB != nil {
		return storedAdmission{}, false
	}
	out := storedAdmission{Admission: chat.Admission{ID: id, StartedAt: fromMillis(a), ExpiresAt: fromMillis(b), Session: f[2]}, place: -1}
	if len(f) == 4 {
		if place, err := strconv.Atoi(f[3]); err == nil && place >= 0 {
			out.place = place
		}
	}
	return out, true
}

// admissionsOf reads the admissions of a ledger item.
func admissionsOf(item map[string]types.AttributeValue) []chat.Admission {
	var out []chat.Admission
	for name, v := range item {
		if a, ok := parseAdmission(name, v); ok {
			out = append(out, a.Admission)
		}
	}
	slices.SortFunc(out, func(x, y chat.Admission) int { return strings.Compare(x.ID, y.ID) })
	return out
}

// ratePlaceName is the attribute of rate place number i.
func ratePlaceName(i int) string { return ratePlacePrefix + strconv.Itoa(i) }

// mergeRatePlaces sets in places the rate places of item that hold a
// later start than places does (the previous month's places count with
// the current month's, place by place), growing it as needed.
func mergeRatePlaces(places []time.Time, item map[string]types.AttributeValue) []time.Time {
	for name := range item {
		n, ok := strings.CutPrefix(name, ratePlacePrefix)
		if !ok {
			continue
		}
		i, err := strconv.Atoi(n)
		if err != nil || i < 0 || i >= maxRatePlaces {
			continue
		}
		for len(places) <= i {
			places = append(places, time.Time{})
		}
		if t := fromMillis(numOf(item, name)); t.After(places[i]) {
			places[i] = t
		}
	}
	return places
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
	return s.resolvedWrite(ctx, key, up, cond, func(item map[string]types.AttributeValue) bool {
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
	err := s.resolvedWrite(ctx, key, up, cond, func(item map[string]types.AttributeValue) bool {
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
	err := s.resolvedWrite(ctx, key, up, cond, func(item map[string]types.AttributeValue) bool {
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

// admitAttempts bounds the conditional writes of one Admit. A write that
// fails its condition lost its place (or, with a concurrency quota, the
// version) to another admission that succeeded; at most turnsPerMinute of
// those can succeed before a read finds the window full.
const admitAttempts = 16

// maxRatePlaces bounds the places a principal's item keeps: a
// turnsPerMinute above it is enforced with this many places at most in
// use at once beyond the places already taken (ratePlaceSpread), so the
// item grows with the admissions of a minute, not with the limit.
const maxRatePlaces = 1 << 16

// ratePlaceSpread is how many never-taken places an admission may choose
// among, past the highest place taken: concurrent admissions spread over
// them instead of all asking for the same one.
const ratePlaceSpread = 8

// errLostRace is an admission's conditional write that another admission
// beat to its place (or version).
var errLostRace = errors.New("dynamo: admission lost its place to another")

// Admit implements chat.Store. With a turnsPerMinute limit the admission
// takes one of the principal's rate places (chat.PrincipalUsage.RatePlaces)
// in one UpdateItem whose condition is that the place is free for the
// admission's start: never taken, or its last start at least
// chat.RateWindow before. That condition, not the read, enforces the rate:
// two admissions never hold one place within a minute, whatever the order
// of their writes or starts, in any number of processes. With a
// concurrentSessions limit the same write is also a compare-and-set on the
// item's admission version. The write records the admission (A#<id>,
// which a retry of it, or a later Admit of the same id, recognises as its
// own) and forgets admissions that count no more. A write that fails its
// condition is classified by one consistent read: the admission recorded
// (its own write, retried by the SDK after a lost answer or a 500) is an
// admission; otherwise the read is the basis of the next attempt. The
// first attempt is written against req.Basis when it is a read of this
// principal at the admission's start.
func (s *Store) Admit(ctx context.Context, req chat.AdmitRequest) (*chat.PrincipalUsage, error) {
	if err := req.Validate(); err != nil {
		return nil, fmt.Errorf("admit: %w", err)
	}
	a := req.Admission
	a.StartedAt, a.ExpiresAt = toMillis(a.StartedAt), toMillis(a.ExpiresAt)
	basis := req.Basis
	if basis != nil && (!basis.At.Equal(a.StartedAt) || !basis.Principal.Owns(req.Principal)) {
		basis = nil
	}
	for range admitAttempts {
		if basis == nil {
			var err error
			if basis, err = s.ReadUsage(ctx, req.Principal, a.StartedAt); err != nil {
				return nil, fmt.Errorf("admit: %w", err)
			}
		}
		if slices.ContainsFunc(basis.Admissions, func(x chat.Admission) bool { return x.ID == a.ID }) {
			return basis, nil // admitted already
		}
		if qe := chat.CheckAdmission(basis.Admissions, req.TurnsPerMinute, req.ConcurrentSessions, chat.ScopePrincipal, a.StartedAt, a.Session); qe != nil {
			return nil, qe
		}
		place := -1
		if req.TurnsPerMinute > 0 {
			var qe *chat.QuotaError
			if place, qe = freeRatePlace(basis.RatePlaces, req.TurnsPerMinute, a.StartedAt); qe != nil {
				return nil, qe
			}
		}
		read, err := s.writeAdmission(ctx, req.Principal, a, basis, place, req.ConcurrentSessions > 0)
		if err == nil {
			return basis, nil
		}
		if !errors.Is(err, errLostRace) {
			return nil, fmt.Errorf("admit: %w", err)
		}
		basis = read
	}
	return nil, fmt.Errorf("admit: %w: the principal's admissions kept changing", chat.ErrQuotaUnavailable)
}

// freeRatePlace picks at random one of the rate places free for a turn
// starting at t among a limit of them (places as read: a place beyond
// them was never taken), or returns the turnsPerMinute QuotaError when
// none is: every place holds a start within chat.RateWindow of t, each a
// different admission that counts.
func freeRatePlace(places []time.Time, limit int64, t time.Time) (int, *chat.QuotaError) {
	n := int(min(limit, maxRatePlaces))
	var free []int
	earliest := time.Time{}
	for i := 0; i < n && i < len(places); i++ {
		if places[i].IsZero() || t.Sub(places[i]) >= chat.RateWindow {
			free = append(free, i)
		} else if earliest.IsZero() || places[i].Before(earliest) {
			earliest = places[i]
		}
	}
	for i := len(places); i < n && i < len(places)+ratePlaceSpread; i++ {
		free = append(free, i)
	}
	if len(free) == 0 {
		return -1, &chat.QuotaError{Scope: chat.ScopePrincipal, Name: chat.QuotaTurnsPerMinute, Limit: limit, Used: int64(n),
			RetryAfter: earliest.Add(chat.RateWindow).Sub(t)}
	}
	return free[mrand.IntN(len(free))], nil
}

// writeAdmission records a in p's item, in rate place place (-1: none) if
// it is free for a's start, and with versioned set as a compare-and-set on
// the version basis read; it forgets basis's stale admissions. When the
// condition fails it reads the item once (consistently): nil when a is
// recorded (an SDK retry of this very write, which fails its own
// condition), else errLostRace with the read.
func (s *Store) writeAdmission(ctx context.Context, p chat.Principal, a chat.Admission, basis *chat.PrincipalUsage, place int, versioned bool) (*chat.PrincipalUsage, error) {
	name := admissionPrefix + a.ID
	cond := condition{expr: "attribute_not_exists(#a)", aliases: map[string]string{"#a": name}, values: map[string]types.AttributeValue{}}
	value := admissionValue(a.StartedAt, a.ExpiresAt, a.Session)
	up := s.ledgerIdentity(expression.UpdateBuilder{}, p, a.StartedAt)
	if place >= 0 {
		// The limit itself: the place free for this start in this item
		// (whatever the read saw).
		cond.aliases["#r"] = ratePlaceName(place)
		cond.expr += " AND (attribute_not_exists(#r) OR #r <= :cutoff)"
		cond.values[":cutoff"] = numValue(millis(a.StartedAt.Add(-chat.RateWindow)))
		value = placedValue(a.StartedAt, a.ExpiresAt, a.Session, place)
		up = up.Set(expression.Name(ratePlaceName(place)), expression.Value(millis(a.StartedAt)))
	}
	if versioned {
		if basis.Version > 0 {
			cond.expr += " AND #qv = :version"
			cond.values[":version"] = numValue(basis.Version)
		} else {
			cond.expr += " AND attribute_not_exists(#qv)"
		}
		cond.names = append(cond.names, attrAdmissionVersion)
		up = up.Set(expression.Name(attrAdmissionVersion), expression.Value(basis.Version+1))
	}
	up = up.Set(expression.Name(name), expression.Value(value))
	for _, id := range basis.Stale {
		up = up.Remove(expression.Name(admissionPrefix + id))
	}
	key := ledgerKey(p, a.StartedAt)
	err := s.resolvedWrite(ctx, key, up, cond, func(item map[string]types.AttributeValue) bool { return item != nil && item[name] != nil })
	if failed, _ := conditionFailed(err); failed {
		rctx, cancel := s.resolveContext(ctx)
		defer cancel()
		read, rerr := s.ReadUsage(rctx, p, a.StartedAt)
		if rerr != nil {
			return nil, fmt.Errorf("classify a refused admission: %w", rerr)
		}
		if slices.ContainsFunc(read.Admissions, func(x chat.Admission) bool { return x.ID == a.ID }) {
			return read, nil // an SDK retry of this write: it applied
		}
		return read, errLostRace
	}
	return nil, err
}

// CancelAdmission implements chat.Store. An admission that holds a rate
// place gives it back in one UpdateItem conditional on the place still
// holding the admission's start, setting it to that start less
// chat.RateWindow: the latest start the place can have held before (the
// admission's own condition), so the place is free for any turn starting
// from the given-back one's start on, as it was before that admission;
// the place is never freed twice (a retry, or a give-back sent again
// after another admission took the place, fails that condition). Finding
// the admission's place costs one consistent read first. Otherwise, one
// UpdateItem removing the admission, conditional on the item existing (no
// item: nothing to forget). An unknown outcome is resolved with one
// consistent read.
func (s *Store) CancelAdmission(ctx context.Context, p chat.Principal, a chat.Admission) error {
	name := admissionPrefix + a.ID
	key := ledgerKey(p, toMillis(a.StartedAt))
	item, found, err := s.getItem(ctx, key)
	if err != nil {
		return fmt.Errorf("cancel admission: %w", err)
	}
	stored, ok := parseAdmission(name, item[name])
	if !found || !ok {
		return nil // given back already, or never recorded
	}
	gone := func(item map[string]types.AttributeValue) bool { return item == nil || item[name] == nil }
	if stored.place >= 0 {
		placeName := ratePlaceName(stored.place)
		up := expression.Remove(expression.Name(name)).
			Set(expression.Name(placeName), expression.Value(millis(stored.StartedAt.Add(-chat.RateWindow))))
		cond := condition{expr: "#r = :start AND attribute_exists(#a)", aliases: map[string]string{"#r": placeName, "#a": name},
			values: map[string]types.AttributeValue{":start": numValue(millis(stored.StartedAt))}}
		err := s.resolvedWrite(ctx, key, up, cond, gone)
		if failed, _ := conditionFailed(err); !failed {
			if err != nil {
				return fmt.Errorf("cancel admission: %w", err)
			}
			return nil
		}
		// Given back by an earlier copy of this write, or its place was
		// taken again a minute later: the admission no longer holds it.
	}
	cond := condition{expr: "attribute_exists(#pk)", names: []string{AttrPK}}
	err = s.resolvedWrite(ctx, key, expression.Remove(expression.Name(name)), cond, gone)
	if failed, _ := conditionFailed(err); failed {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cancel admission: %w", err)
	}
	return nil
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
