package memory

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
)

// The usage ledger (chat.Store, docs/quotas.md), in process: one record
// per principal and UTC month, as the DynamoDB store keeps one item.

// ledgerKey names a ledger record: chat.PrincipalKey and chat.MonthKey.
type ledgerKey struct{ principal, month string }

// ledgerRecord is one principal's ledger for one month.
type ledgerRecord struct {
	principal chat.Principal
	month     chat.Counters
	days      map[int]chat.Counters // by day of the month
	// marks holds, per session id, the last ordinal counted.
	marks      map[string]int64
	admissions map[string]chat.Admission
	version    int64
	purgeAt    time.Time
}

// ledgerRecord returns the record of p for the month containing t,
// creating it when create is set (nil otherwise when absent). s.mu must
// be held.
func (s *Store) ledgerRecord(p chat.Principal, t time.Time, create bool) *ledgerRecord {
	k := ledgerKey{chat.PrincipalKey(p), chat.MonthKey(t)}
	rec := s.ledger[k]
	if rec == nil && create {
		rec = &ledgerRecord{
			principal:  chat.Principal{Subject: p.Subject, Tenant: p.Tenant},
			days:       map[int]chat.Counters{},
			marks:      map[string]int64{},
			admissions: map[string]chat.Admission{},
			purgeAt:    s.ledgerOpts.PurgeAt(t),
		}
		s.ledger[k] = rec
	}
	return rec
}

// RecordUsage implements chat.Store.
func (s *Store) RecordUsage(ctx context.Context, e chat.LedgerEntry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := e.Validate(); err != nil {
		return fmt.Errorf("record usage: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.record(e)
	return nil
}

// record counts e unless its session's last counted ordinal is not below
// e.Ordinal. s.mu must be held.
func (s *Store) record(e chat.LedgerEntry) {
	start := ms(e.StartedAt)
	rec := s.ledgerRecord(e.Owner, start, true)
	if rec.marks[e.SessionID] >= e.Ordinal {
		return
	}
	rec.marks[e.SessionID] = e.Ordinal
	c := chat.Counters{Turns: 1, Usage: e.Usage}
	rec.month.Add(c)
	day := rec.days[start.Day()]
	day.Add(c)
	rec.days[start.Day()] = day
	if e.Admission != "" {
		// Finished: it no longer holds a concurrency slot, and counts
		// towards the rate for a minute from its start.
		rec.admissions[e.Admission] = chat.Admission{ID: e.Admission, StartedAt: start, Session: chat.SessionMarker(e.SessionID)}
	}
}

// ReadUsage implements chat.Store.
func (s *Store) ReadUsage(ctx context.Context, p chat.Principal, at time.Time) (*chat.PrincipalUsage, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.readUsage(p, ms(at), now), nil
}

// readUsage is ReadUsage at now. A record past its retention reads as
// absent; the admissions of the previous month's record count while they
// live (a turn started before midnight of the month's last day). s.mu
// must be held.
func (s *Store) readUsage(p chat.Principal, at, now time.Time) *chat.PrincipalUsage {
	u := &chat.PrincipalUsage{Principal: chat.Principal{Subject: p.Subject, Tenant: p.Tenant}, At: at, Admissions: []chat.Admission{}}
	recs := []*ledgerRecord{s.ledgerRecord(p, at, false)}
	if start, _ := chat.PeriodMonth.Bounds(at); at.Sub(start) < chat.AdmissionCarry {
		recs = append(recs, s.ledgerRecord(p, start.Add(-time.Millisecond), false))
	}
	for _, rec := range recs {
		if rec == nil || !rec.purgeAt.After(now) {
			continue
		}
		for _, id := range slices.Sorted(maps.Keys(rec.admissions)) {
			if a := rec.admissions[id]; a.Live(at) {
				u.Admissions = append(u.Admissions, a)
			}
		}
	}
	if rec := s.ledgerRecord(p, at, false); rec != nil && rec.purgeAt.After(now) {
		u.Month, u.Day, u.Version = rec.month, rec.days[at.Day()], rec.version
	}
	return u
}

// ListUsage implements chat.Store.
func (s *Store) ListUsage(ctx context.Context, req chat.UsageListRequest) (*chat.UsagePage, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	req, err := req.Normalized()
	if err != nil {
		return nil, fmt.Errorf("list usage: %w", err)
	}
	at := ms(req.At)
	after := ""
	if req.Cursor != "" {
		if after, err = s.cursors.DecodeKey(chat.UsageCursorBinding(req.Tenant, at), req.Cursor); err != nil {
			return nil, err
		}
	}
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	month := chat.MonthKey(at)
	var keys []string
	for k, rec := range s.ledger {
		if k.month == month && rec.principal.Tenant == req.Tenant && rec.purgeAt.After(now) && strings.Compare(k.principal, after) > 0 {
			keys = append(keys, k.principal)
		}
	}
	slices.Sort(keys)
	page := &chat.UsagePage{Principals: []chat.PrincipalUsage{}}
	for i, k := range keys {
		if i == req.Limit {
			page.HasMore = true
			page.NextCursor = s.cursors.EncodeKey(chat.UsageCursorBinding(req.Tenant, at), keys[i-1])
			break
		}
		page.Principals = append(page.Principals, *s.readUsage(s.ledger[ledgerKey{k, month}].principal, at, now))
	}
	return page, nil
}

// Admit implements chat.Store: the check and the record are one step
// under the store's lock (req.Basis is not needed).
func (s *Store) Admit(ctx context.Context, req chat.AdmitRequest) (*chat.PrincipalUsage, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := req.Validate(); err != nil {
		return nil, fmt.Errorf("admit: %w", err)
	}
	a := req.Admission
	a.StartedAt, a.ExpiresAt = ms(a.StartedAt), ms(a.ExpiresAt)
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.readUsage(req.Principal, a.StartedAt, now)
	if slices.ContainsFunc(u.Admissions, func(x chat.Admission) bool { return x.ID == a.ID }) {
		return u, nil // admitted already
	}
	if qe := chat.CheckAdmission(u.Admissions, req.TurnsPerMinute, req.ConcurrentSessions, chat.ScopePrincipal, a.StartedAt, a.Session); qe != nil {
		return nil, qe
	}
	rec := s.ledgerRecord(req.Principal, a.StartedAt, true)
	maps.DeleteFunc(rec.admissions, func(_ string, x chat.Admission) bool { return !x.Live(a.StartedAt) })
	rec.admissions[a.ID] = a
	rec.version++
	return u, nil
}

// CancelAdmission implements chat.Store.
func (s *Store) CancelAdmission(ctx context.Context, p chat.Principal, a chat.Admission) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if rec := s.ledgerRecord(p, ms(a.StartedAt), false); rec != nil {
		if _, ok := rec.admissions[a.ID]; ok {
			delete(rec.admissions, a.ID)
			rec.version++
		}
	}
	return nil
}

// countDecided counts the turn a decision of its session ended (e; nil
// when none: nothing decided, or a queued turn that waits again), when
// the ledger is enabled. s.mu must be held.
func (s *Store) countDecided(e *chat.LedgerEntry) {
	if e != nil && s.ledgerOpts.Enabled {
		s.record(*e)
	}
}
