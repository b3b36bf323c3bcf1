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

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/turnstream/turnstream/pkg/chat"
)

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
	ctx = withPurpose(ctx, PurposeAdmission)
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
	err := s.resolvedWrite(ctx, PurposeAdmission, key, up, cond, func(item map[string]types.AttributeValue) bool { return item != nil && item[name] != nil })
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
	ctx = withPurpose(ctx, PurposeAdmissionCancel)
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
		err := s.resolvedWrite(ctx, PurposeAdmissionCancel, key, up, cond, gone)
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
	err = s.resolvedWrite(ctx, PurposeAdmissionCancel, key, expression.Remove(expression.Name(name)), cond, gone)
	if failed, _ := conditionFailed(err); failed {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cancel admission: %w", err)
	}
	return nil
}
