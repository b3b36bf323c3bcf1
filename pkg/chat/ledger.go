package chat

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// The usage ledger (docs/quotas.md): what every finished turn consumed
// (its Usage: tokens, model and tool calls, DynamoDB requests and
// units), added up per principal and per UTC day and month in the same
// table as the sessions. A tenant's figures are the sum of its
// principals'. Each turn is counted exactly once, when it ends however it
// ends (complete, interrupted, error, lost), by the one process that
// ends it: its own, or the store that decides its fate.
//
// Exactly once. A session runs one turn at a time, and its lease passes
// to the next turn only once the ending turn is counted (its own process
// counts it before its release; a store that decides a dead turn counts
// it before it frees the session). So a session's turns are counted in
// ordinal order, and the ledger remembers, per session and month, the
// last ordinal counted: an entry whose ordinal is not above it was
// counted already (a retried or re-sent write, a late copy, a second
// decider) and changes nothing. Where that memory lives is the store's
// (the DynamoDB store keeps it on an item of the session's, so that the
// principal's month record does not grow with its sessions).

// Period is a span the ledger counts over: a UTC day or a UTC month.
type Period string

// Periods.
const (
	PeriodDay   Period = "day"
	PeriodMonth Period = "month"
)

// ParsePeriod returns the Period named s ("day" or "month"), or
// ErrInvalidRequest.
func ParsePeriod(s string) (Period, error) {
	switch p := Period(s); p {
	case PeriodDay, PeriodMonth:
		return p, nil
	}
	return "", fmt.Errorf("%w: period must be day or month", ErrInvalidRequest)
}

// Bounds returns the start (inclusive) and end (exclusive) of the period
// containing t, in UTC. An unknown period is a day.
func (p Period) Bounds(t time.Time) (start, end time.Time) {
	t = t.UTC()
	if p == PeriodMonth {
		start = time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
		return start, start.AddDate(0, 1, 0)
	}
	start = time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	return start, start.AddDate(0, 0, 1)
}

// MonthKey names the UTC month containing t ("2026-12"): the ledger keeps
// one record per principal and month.
func MonthKey(t time.Time) string { return t.UTC().Format("2006-01") }

// Counters are the ledger's figures for one principal (or a tenant's
// principals together) over one period: Turns counts the turns that
// ended, Usage adds up what they consumed.
type Counters struct {
	Turns int64 `json:"turns"`
	Usage
}

// Add adds c2 to c.
func (c *Counters) Add(c2 Counters) {
	c.Turns += c2.Turns
	c.Usage.Add(c2.Usage)
}

// Tokens are the tokens the quotas count: input plus output tokens, as
// the models reported them (cache tokens are recorded, not counted).
func (c Counters) Tokens() int64 { return c.InputTokens + c.OutputTokens }

// DefaultLedgerRetention is how long a ledger record is kept after the
// end of its month when LedgerOptions.Retention is zero: about 13 months,
// so that a year of months can be compared (config LEDGER_RETENTION).
const DefaultLedgerRetention = 400 * 24 * time.Hour

// LedgerOptions configure a store's ledger.
type LedgerOptions struct {
	// Enabled makes the store count the turns it decides itself: a turn
	// whose lease expired (lost, or saved but never released) is counted
	// from its record before its session is freed. Without it the store
	// counts only what RecordUsage is given, and a deployment that keeps
	// a ledger must enable it on every function's store (the history
	// function decides turns too).
	Enabled bool
	// Retention is how long after the end of its month a ledger record is
	// kept: readers ignore older ones, and DynamoDB's TTL deletes them.
	// Zero means DefaultLedgerRetention.
	Retention time.Duration
}

// RetentionOrDefault is o.Retention, or DefaultLedgerRetention when zero.
func (o LedgerOptions) RetentionOrDefault() time.Duration {
	if o.Retention <= 0 {
		return DefaultLedgerRetention
	}
	return o.Retention
}

// PurgeAt is when the ledger record of the month containing t expires:
// the end of that month plus the retention.
func (o LedgerOptions) PurgeAt(t time.Time) time.Time {
	_, end := PeriodMonth.Bounds(t)
	return end.Add(o.RetentionOrDefault())
}

// LedgerEntry is one ended turn's addition to the ledger (Store.RecordUsage).
type LedgerEntry struct {
	// SessionID and Ordinal name the turn: its session's turns are
	// counted in ordinal order, each once.
	SessionID string
	Ordinal   int64
	// Owner is the session's owner, whose counters (and tenant's) the
	// turn adds to.
	Owner Principal
	// StartedAt is when the turn was claimed (Lease.StartedAt): its UTC
	// day and month are the periods it counts in, whoever counts it and
	// whenever.
	StartedAt time.Time
	// Usage is what the turn consumed, as its record holds it
	// (Turn.Metered).
	Usage Usage
	// Admission is the turn's admission (Store.Admit), whose running
	// slot the entry releases; empty when it was not admitted.
	Admission string
}

// Validate reports ErrInvalidRequest unless e names a session, an ordinal
// from 1, an owner and a start time.
func (e LedgerEntry) Validate() error {
	if e.SessionID == "" || e.Ordinal < 1 || e.Owner.Subject == "" && e.Owner.Tenant == "" || e.StartedAt.IsZero() {
		return fmt.Errorf("%w: a ledger entry needs a session, an ordinal, an owner and a start time", ErrInvalidRequest)
	}
	return nil
}

// Admission is one turn admitted under a principal's rate or concurrency
// quota (Store.Admit): it counts towards turnsPerMinute for a minute from
// StartedAt, and its session towards concurrentSessions until its turn is
// counted (ExpiresAt zero) or ExpiresAt passes (a turn never runs past
// its request deadline and cleanup reserve).
type Admission struct {
	ID        string
	StartedAt time.Time
	ExpiresAt time.Time
	// Session is the admitted turn's session (SessionMarker of its id):
	// concurrentSessions counts sessions, so two turns of one session (a
	// submit to a busy session, an interrupt) hold one slot.
	Session string
}

// RateWindow is the window of turnsPerMinute: admissions count for a
// minute from their start.
const RateWindow = time.Minute

// Running reports whether a still holds a concurrency slot at t.
func (a Admission) Running(t time.Time) bool { return a.ExpiresAt.After(t) }

// Recent reports whether a counts towards turnsPerMinute at t: it
// started less than RateWindow before t, or after t. Concurrent submits
// write their admissions in any order, not in the order of their starts;
// an admission that started after t is within the window of a turn
// started at t all the same (both fall in one span of RateWindow), so it
// counts.
func (a Admission) Recent(t time.Time) bool {
	return t.Sub(a.StartedAt) < RateWindow
}

// Live reports whether a still counts towards any quota at t; a store may
// forget the others.
func (a Admission) Live(t time.Time) bool { return a.Running(t) || a.Recent(t) }

// PrincipalUsage is a principal's ledger as read at At: its counters for
// the UTC day and month containing At and its admissions that still
// count (Admission.Live).
type PrincipalUsage struct {
	Principal  Principal
	At         time.Time
	Day, Month Counters
	Admissions []Admission
	// Version is the admission state's compare-and-set version (Store.Admit).
	Version int64
	// RatePlaces are the principal's turnsPerMinute places, as a store
	// that enforces the rate by a conditional write keeps them
	// (Store.Admit): the start of the admission that last took each place
	// (zero: never taken), by place number. A turn starting at t may take
	// a place whose start is at least RateWindow before t; an admission
	// takes one place, so a principal with turnsPerMinute n has n places
	// and no span of RateWindow holds more than n admissions' starts. A
	// store that checks and records an admission in one step (the
	// in-memory one) keeps none.
	RatePlaces []time.Time
	// Stale are the ids of admissions the record still holds that count
	// no more (not Live at At); the next Admit forgets them. A store may
	// leave it empty.
	Stale []string
}

// AdmissionCarry is how long into a month the admissions recorded in the
// previous month's record are still read (ReadUsage): a turn started
// before midnight of a month's last day runs at most TURN_TIMEOUT (15
// minutes) into the next.
const AdmissionCarry = time.Hour

// Counters returns u's counters of period p.
func (u *PrincipalUsage) Counters(p Period) Counters {
	if p == PeriodMonth {
		return u.Month
	}
	return u.Day
}

// Activity counts admissions: those that count towards turnsPerMinute at
// t (Recent) and the sessions whose turns hold a concurrency slot
// (Running).
type Activity struct {
	Recent, Running int64
}

// ActivityAt counts admissions at t; the running sessions but except (a
// session that is not counted: the one asking, whose turn would not add
// a session).
func ActivityAt(admissions []Admission, t time.Time, except ...string) Activity {
	var a Activity
	running := map[string]bool{}
	for _, ad := range admissions {
		if ad.Recent(t) {
			a.Recent++
		}
		if ad.Running(t) && !slices.Contains(except, ad.Session) && !running[ad.Session] {
			running[ad.Session] = true
			a.Running++
		}
	}
	return a
}

// UsageListRequest asks for one page of a tenant's principals with
// counters in the month containing At (Store.ListUsage).
type UsageListRequest struct {
	Tenant string
	At     time.Time
	// Limit is 1..MaxPageLimit; 0 means DefaultPageLimit.
	Limit int
	// Cursor is the NextCursor of the previous page; empty for the first.
	Cursor string
}

// Normalized returns r with its default limit, or ErrInvalidRequest for a
// limit outside 1..MaxPageLimit.
func (r UsageListRequest) Normalized() (UsageListRequest, error) {
	if r.Limit == 0 {
		r.Limit = DefaultPageLimit
	}
	if r.Limit < 1 || r.Limit > MaxPageLimit {
		return r, fmt.Errorf("%w: limit must be in 1..%d", ErrInvalidRequest, MaxPageLimit)
	}
	return r, nil
}

// UsagePage is one page of a tenant's principals' usage (Store.ListUsage),
// ordered by PrincipalKey. NextCursor is empty when HasMore is false.
type UsagePage struct {
	Principals []PrincipalUsage
	NextCursor string
	HasMore    bool
}

// AdmitRequest asks for an admission under a principal's rate and
// concurrency quotas (Store.Admit).
type AdmitRequest struct {
	Principal Principal
	// Admission is the new admission: a fresh random ID, StartedAt the
	// turn's start (the claim's StartedAt), ExpiresAt the latest its turn
	// can end (just after StartedAt for a turn counted towards the rate
	// only: a queued turn), Session its session's SessionMarker.
	Admission Admission
	// TurnsPerMinute and ConcurrentSessions are the principal's limits;
	// zero means unlimited.
	TurnsPerMinute, ConcurrentSessions int64
	// Basis, when not nil, is the principal's usage as just read
	// (ReadUsage at StartedAt): the admission is written against its
	// Version without another read, unless it changed since.
	Basis *PrincipalUsage
}

// Validate reports ErrInvalidRequest unless r names a principal and an
// admission with an id, a start and an expiry after it.
func (r AdmitRequest) Validate() error {
	a := r.Admission
	if r.Principal.Subject == "" && r.Principal.Tenant == "" || a.ID == "" || a.StartedAt.IsZero() || !a.ExpiresAt.After(a.StartedAt) {
		return fmt.Errorf("%w: an admission needs a principal, an id, a start and a later expiry", ErrInvalidRequest)
	}
	return nil
}

// CheckAdmission returns the QuotaError that refuses admitting a turn of
// session (its SessionMarker) by a principal whose admissions are
// admissions, at t: a concurrentSessions limit reached by the other
// sessions running a turn, or a turnsPerMinute limit by the admissions of
// the last minute (zero limits are unlimited); nil when the turn may be
// admitted.
func CheckAdmission(admissions []Admission, turnsPerMinute, concurrent int64, scope string, t time.Time, session string) *QuotaError {
	act := ActivityAt(admissions, t, session)
	if concurrent > 0 && act.Running >= concurrent {
		wait := ConcurrencyRetryAfter
		for _, a := range admissions {
			if a.Running(t) && a.Session != session && a.ExpiresAt.Sub(t) < wait {
				wait = a.ExpiresAt.Sub(t)
			}
		}
		return &QuotaError{Scope: scope, Name: QuotaConcurrentSessions, Limit: concurrent, Used: act.Running, RetryAfter: wait}
	}
	if turnsPerMinute > 0 && act.Recent >= turnsPerMinute {
		var starts []time.Time
		for _, a := range admissions {
			if a.Recent(t) {
				starts = append(starts, a.StartedAt)
			}
		}
		slices.SortFunc(starts, time.Time.Compare)
		// The next turn fits once all but limit-1 of them left the window.
		frees := starts[len(starts)-int(turnsPerMinute)].Add(RateWindow)
		return &QuotaError{Scope: scope, Name: QuotaTurnsPerMinute, Limit: turnsPerMinute, Used: act.Recent, RetryAfter: frees.Sub(t)}
	}
	return nil
}

// NewAdmissionID returns a random admission id (64 bits, URL-safe base64).
func NewAdmissionID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// PrincipalKey is the key of p in the ledger: 22 characters of URL-safe
// base64 of a SHA-256 of p's subject and tenant, the same for every store,
// so that a tenant's principals page in one order (Store.ListUsage) and
// a key's length does not depend on the principal's.
func PrincipalKey(p Principal) string {
	h := sha256.Sum256([]byte(strconv.Itoa(len(p.Subject)) + ":" + p.Subject + p.Tenant))
	return base64.RawURLEncoding.EncodeToString(h[:16])
}

// TenantKey is the key of a tenant in the ledger, as PrincipalKey.
func TenantKey(tenant string) string {
	h := sha256.Sum256([]byte("tenant:" + tenant))
	return base64.RawURLEncoding.EncodeToString(h[:16])
}

// SessionMarker is the name a session has among the last-counted
// ordinals of a ledger record: 11 characters of URL-safe base64 of a
// SHA-256 of its id (64 bits: two sessions of one principal and month
// would share one with a chance of about n²/2^65 for n sessions).
func SessionMarker(sessionID string) string {
	h := sha256.Sum256([]byte("session:" + sessionID))
	return base64.RawURLEncoding.EncodeToString(h[:8])
}

// UsageCursorBinding is what a ListUsage page cursor is bound to: the
// tenant and the month.
func UsageCursorBinding(tenant string, at time.Time) string {
	return "usage\x00" + tenant + "\x00" + MonthKey(at)
}
