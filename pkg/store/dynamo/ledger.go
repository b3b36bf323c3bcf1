package dynamo

import (
	"context"
	"errors"
	"fmt"
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
// and UTC month, in the same table.
//
//	ledger item  pk=USAGE#<tenant key>#<yyyy-mm>  sk=P#<principal key>
//	  tenant, subject (the principal, for listings), purgeAt (TTL: the
//	  end of the month plus the retention), the month's counters (m +
//	  a letter per figure: mt turns, mi input tokens, mo output tokens,
//	  mr cache read, mw cache write, mm model calls, mc tool calls, mq
//	  store requests, mu read units, mv write units) and each day's
//	  (d<dd> + the same letter: d07t), the last ordinal counted of each
//	  session (S#<chat.SessionMarker>), the admissions (A#<id>:
//	  "<start ms> <expiry ms>", expiry 0 once the turn was counted) and
//	  their compare-and-set version qv.
//
// The keys are hashes (chat.TenantKey, chat.PrincipalKey): fixed size
// whatever a tenant or subject, and a tenant's principals of a month are
// one partition, which ListUsage reads in pages. Counting a turn is one
// UpdateItem: ADD to the month's and the day's counters, conditional on
// the session's last counted ordinal being below the turn's, which it
// sets (chat.Store.RecordUsage). The item grows with the days of the
// month that have turns (about 80 bytes a day) and the sessions that
// counted a turn in it (about 14 bytes each).

// Ledger key values and attribute names.
const (
	ledgerPrefix   = "USAGE#"
	ledgerSKPrefix = "P#"

	attrLedgerTenant     = "tenant"
	attrLedgerSubject    = "subject"
	attrAdmissionVersion = "qv"
	// markerPrefix starts the attribute holding a session's last counted
	// ordinal; admissionPrefix an admission's.
	markerPrefix    = "S#"
	admissionPrefix = "A#"
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

// admissionsOf reads the admissions of a ledger item.
func admissionsOf(item map[string]types.AttributeValue) []chat.Admission {
	var out []chat.Admission
	for name, v := range item {
		id, ok := strings.CutPrefix(name, admissionPrefix)
		s, _ := v.(*types.AttributeValueMemberS)
		if !ok || s == nil {
			continue
		}
		f := strings.SplitN(s.Value, " ", 3)
		if len(f) != 3 {
			continue
		}
		a, errA := strconv.ParseInt(f[0], 10, 64)
		b, errB := strconv.ParseInt(f[1], 10, 64)
		if errA != nil || errB != nil {
			continue
		}
		out = append(out, chat.Admission{ID: id, StartedAt: fromMillis(a), ExpiresAt: fromMillis(b), Session: f[2]})
	}
	slices.SortFunc(out, func(x, y chat.Admission) int { return strings.Compare(x.ID, y.ID) })
	return out
}

// toMillis returns t at millisecond precision in UTC, as the items keep it.
func toMillis(t time.Time) time.Time { return fromMillis(millis(t)) }

// RecordUsage implements chat.Store: one UpdateItem of the owner's item
// of the turn's month, ADDing the turn to the month's and the day's
// counters and setting the session's last counted ordinal, conditional on
// that ordinal being below the entry's. A failed condition means the turn
// was counted before: nil. A write whose outcome is unknown is resolved
// with one consistent read (the session's ordinal reached the entry's),
// and sent once more when the read finds it not applied.
func (s *Store) RecordUsage(ctx context.Context, e chat.LedgerEntry) error {
	if err := e.Validate(); err != nil {
		return fmt.Errorf("record usage: %w", err)
	}
	start := toMillis(e.StartedAt)
	mark := markerPrefix + chat.SessionMarker(e.SessionID)
	c := chat.Counters{Turns: 1, Usage: e.Usage}
	up := s.ledgerIdentity(expression.UpdateBuilder{}, e.Owner, start).
		Set(expression.Name(mark), expression.Value(e.Ordinal))
	up = addCounters(addCounters(up, monthPrefix, c), dayCounters(start), c)
	if e.Admission != "" {
		// Its slot is released; it counts towards the rate for a minute
		// from its start.
		up = up.Set(expression.Name(admissionPrefix+e.Admission), expression.Value(admissionValue(start, time.Time{}, chat.SessionMarker(e.SessionID))))
	}
	cond := condition{
		expr:    "attribute_not_exists(#mark) OR #mark < :ordinal",
		aliases: map[string]string{"#mark": mark},
		values:  map[string]types.AttributeValue{":ordinal": numValue(e.Ordinal)},
	}
	err := s.resolvedWrite(ctx, ledgerKey(e.Owner, start), up, cond, func(item map[string]types.AttributeValue) bool {
		return item != nil && numOf(item, mark) >= e.Ordinal
	})
	if failed, _ := conditionFailed(err); failed {
		return nil // counted before
	}
	if err != nil {
		return fmt.Errorf("record usage of turn %d of session %s: %w", e.Ordinal, e.SessionID, err)
	}
	return nil
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
	e, err := build(expression.NewBuilder().WithKeyCondition(expression.Key(AttrPK).Equal(expression.Value(pk))))
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

// admitAttempts bounds the compare-and-set rounds of one Admit.
const admitAttempts = 5

// errLostRace is an admission's compare-and-set that another write beat.
var errLostRace = errors.New("dynamo: admission lost a compare-and-set")

// Admit implements chat.Store: a compare-and-set on the version of the
// principal's item of the admission's month (the check made on the usage
// read, req.Basis or a consistent read), recording the admission and
// forgetting the stale ones. A lost race reads again and decides again.
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
		err := s.writeAdmission(ctx, req.Principal, a, basis)
		if err == nil {
			return basis, nil
		}
		if !errors.Is(err, errLostRace) {
			return nil, fmt.Errorf("admit: %w", err)
		}
		basis = nil
	}
	return nil, fmt.Errorf("admit: %w: the principal's admissions kept changing", chat.ErrQuotaUnavailable)
}

// writeAdmission records a in p's item, conditional on the version basis
// read, forgetting basis's stale admissions. errLostRace when another
// write changed the version first (a consistent read tells an SDK retry
// of this very write, which fails its own condition, from that).
func (s *Store) writeAdmission(ctx context.Context, p chat.Principal, a chat.Admission, basis *chat.PrincipalUsage) error {
	name := admissionPrefix + a.ID
	cond := condition{expr: "attribute_not_exists(#qv)", names: []string{attrAdmissionVersion}}
	if basis.Version > 0 {
		cond = condition{expr: "#qv = :version", names: []string{attrAdmissionVersion},
			values: map[string]types.AttributeValue{":version": numValue(basis.Version)}}
	}
	up := s.ledgerIdentity(expression.UpdateBuilder{}, p, a.StartedAt).
		Set(expression.Name(attrAdmissionVersion), expression.Value(basis.Version+1)).
		Set(expression.Name(name), expression.Value(admissionValue(a.StartedAt, a.ExpiresAt, a.Session)))
	for _, id := range basis.Stale {
		up = up.Remove(expression.Name(admissionPrefix + id))
	}
	key := ledgerKey(p, a.StartedAt)
	applied := func(item map[string]types.AttributeValue) bool { return item != nil && item[name] != nil }
	err := s.resolvedWrite(ctx, key, up, cond, applied)
	if failed, _ := conditionFailed(err); failed {
		rctx, cancel := s.resolveContext(ctx)
		defer cancel()
		item, _, rerr := s.getItem(rctx, key)
		if rerr == nil && applied(item) {
			return nil // an SDK retry of this write: it applied
		}
		return errLostRace
	}
	return err
}

// CancelAdmission implements chat.Store: one UpdateItem removing the
// admission, conditional on the item existing (no item: nothing to
// forget); an unknown outcome is resolved with one consistent read.
func (s *Store) CancelAdmission(ctx context.Context, p chat.Principal, a chat.Admission) error {
	name := admissionPrefix + a.ID
	up := expression.Remove(expression.Name(name))
	cond := condition{expr: "attribute_exists(#pk)", names: []string{AttrPK}}
	err := s.resolvedWrite(ctx, ledgerKey(p, toMillis(a.StartedAt)), up, cond, func(item map[string]types.AttributeValue) bool {
		return item == nil || item[name] == nil
	})
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
