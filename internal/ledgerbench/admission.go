package ledgerbench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/turnstream/turnstream/internal/dynamobench"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

// The admission figure: what a turnsPerMinute admission costs and how
// many of a burst it admits, with the store's Admit (a conditional write
// on one of the principal's rate places) against the compare-and-set
// admission it replaced (faeb321: a read, a judgement of the window at the
// submit's own start, a write conditional on the item's admission version
// unchanged), reproduced here as the baseline so that both run in the same
// run on the same table.

// AdmissionMethod is one way of admitting a turn.
type AdmissionMethod struct {
	Name string
	// Sequential is the median account of one admission on the basis of
	// the principal's read just before it (as a submit makes it): the read
	// and the admission's writes.
	Sequential *dynamobench.Account
	// Burst: BurstSize admissions at once from two stores, BurstLimit a
	// minute; Admitted of them admitted, Unavailable answered "could not
	// check" (the compare-and-set rounds ran out), and the burst's
	// requests and write units in all.
	Admitted, Unavailable int
	Burst                 *dynamobench.Account
}

// Burst figures: the outside report's scenario.
const (
	BurstSize  = 30
	BurstLimit = 5
	// admissionsMeasured is how many sequential admissions the median is
	// over (quick: a fifth).
	admissionsMeasured = 20
)

// admitFunc admits a on basis (nil: read first) under limit a minute.
type admitFunc func(ctx context.Context, s *dynamo.Store, client dynamo.Client, p chat.Principal, a chat.Admission, limit int64, basis *chat.PrincipalUsage) error

// admissionRun measures the baseline and the store's Admit.
func admissionRun(ctx context.Context, e Env, res *Result) error {
	n := admissionsMeasured
	if e.Quick {
		n /= 5
	}
	methods := []struct {
		name  string
		admit admitFunc
	}{
		{"compare-and-set on the admission version (faeb321, reproduced)", func(ctx context.Context, s *dynamo.Store, client dynamo.Client, p chat.Principal, a chat.Admission, limit int64, basis *chat.PrincipalUsage) error {
			return legacyAdmit(ctx, s, client, e.Table, p, a, limit, basis)
		}},
		{"conditional write on a rate place (Store.Admit)", func(ctx context.Context, s *dynamo.Store, _ dynamo.Client, p chat.Principal, a chat.Admission, limit int64, basis *chat.PrincipalUsage) error {
			_, err := s.Admit(ctx, chat.AdmitRequest{Principal: p, Admission: a, TurnsPerMinute: limit, Basis: basis})
			return err
		}},
	}
	for mi, m := range methods {
		e.Progress("ledger: admissions, %s", m.name)
		meter := dynamobench.NewMeter(e.Client, e.Raw)
		store := dynamo.New(meter, dynamo.Options{Table: e.Table, CursorKey: e.CursorKey, Ledger: chat.LedgerOptions{Enabled: true}})
		out := AdmissionMethod{Name: m.name}
		// Sequential: a principal of its own, a limit never reached.
		p := chat.Principal{Subject: fmt.Sprintf("%s-admit-%d", e.Prefix, mi), Tenant: e.Prefix + "-admit"}
		var accts []*dynamobench.Account
		for i := range n {
			meter.Take()
			at := time.Now().UTC().Truncate(time.Millisecond)
			basis, err := store.ReadUsage(ctx, p, at)
			if err != nil {
				return fmt.Errorf("ledger admissions: %w", err)
			}
			a := chat.Admission{ID: chat.NewAdmissionID(), StartedAt: at, ExpiresAt: at.Add(time.Minute), Session: chat.SessionMarker(fmt.Sprint("seq", i))}
			if err := m.admit(ctx, store, meter, p, a, 1_000_000, basis); err != nil {
				return fmt.Errorf("ledger admissions (%s): %w", m.name, err)
			}
			accts = append(accts, meter.Take())
		}
		out.Sequential = dynamobench.MedianAccount(accts)
		// The burst: another principal, two stores (two processes) on one
		// table, the starts a millisecond apart in the order of the
		// goroutines, the writes in whatever order they land.
		p = chat.Principal{Subject: fmt.Sprintf("%s-burst-%d", e.Prefix, mi), Tenant: e.Prefix + "-admit"}
		stores := []*dynamo.Store{store, dynamo.New(meter, dynamo.Options{Table: e.Table, CursorKey: e.CursorKey, Ledger: chat.LedgerOptions{Enabled: true}})}
		base := time.Now().UTC().Truncate(time.Millisecond)
		errs := make([]error, BurstSize)
		meter.Take()
		var wg sync.WaitGroup
		for i := range BurstSize {
			wg.Go(func() {
				at := base.Add(time.Duration(i) * time.Millisecond)
				a := chat.Admission{ID: chat.NewAdmissionID(), StartedAt: at, ExpiresAt: at.Add(time.Minute), Session: chat.SessionMarker(fmt.Sprint("burst", i))}
				basis, err := stores[i%2].ReadUsage(ctx, p, at)
				if err == nil {
					err = m.admit(ctx, stores[i%2], meter, p, a, BurstLimit, basis)
				}
				errs[i] = err
			})
		}
		wg.Wait()
		out.Burst = meter.Take()
		for _, err := range errs {
			switch {
			case err == nil:
				out.Admitted++
			case errors.Is(err, chat.ErrQuotaUnavailable):
				out.Unavailable++
			case !errors.Is(err, chat.ErrQuotaExceeded):
				return fmt.Errorf("ledger admissions (%s), burst: %w", m.name, err)
			}
		}
		res.Admission = append(res.Admission, out)
	}
	return nil
}

// legacyAdmit is the admission of faeb321 as it was: the window judged at
// a's own start (an admission counts when it started at or before it,
// within the minute), then a write that records a and forgets what is not
// live at that start, conditional on the item's admission version being
// the one read; a lost race reads and judges again, five rounds at most.
func legacyAdmit(ctx context.Context, s *dynamo.Store, client dynamo.Client, table string, p chat.Principal, a chat.Admission, limit int64, basis *chat.PrincipalUsage) error {
	for range 5 {
		if basis == nil {
			var err error
			if basis, err = s.ReadUsage(ctx, p, a.StartedAt); err != nil {
				return err
			}
		}
		recent := func(x chat.Admission) bool {
			return !x.StartedAt.After(a.StartedAt) && a.StartedAt.Sub(x.StartedAt) < chat.RateWindow
		}
		count := int64(0)
		var stale []string
		for _, x := range basis.Admissions {
			switch {
			case recent(x):
				count++
			case !x.Running(a.StartedAt):
				stale = append(stale, x.ID)
			}
		}
		if count >= limit {
			return &chat.QuotaError{Scope: chat.ScopePrincipal, Name: chat.QuotaTurnsPerMinute, Limit: limit, Used: count}
		}
		up := expression.Set(expression.Name("tenant"), expression.Value(p.Tenant)).
			Set(expression.Name("subject"), expression.Value(p.Subject)).
			Set(expression.Name("qv"), expression.Value(basis.Version+1)).
			Set(expression.Name("A#"+a.ID), expression.Value(strconv.FormatInt(a.StartedAt.UnixMilli(), 10)+" "+
				strconv.FormatInt(a.ExpiresAt.UnixMilli(), 10)+" "+a.Session))
		_, end := chat.PeriodMonth.Bounds(a.StartedAt)
		up = up.Set(expression.Name(dynamo.AttrPurgeAt), expression.Value(end.Add(chat.DefaultLedgerRetention).Unix()))
		for _, id := range stale {
			up = up.Remove(expression.Name("A#" + id))
		}
		cond := expression.AttributeNotExists(expression.Name("qv"))
		if basis.Version > 0 {
			cond = expression.Name("qv").Equal(expression.Value(basis.Version))
		}
		x, err := expression.NewBuilder().WithUpdate(up).WithCondition(cond).Build()
		if err != nil {
			return err
		}
		_, err = client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(table),
			Key: map[string]types.AttributeValue{
				dynamo.AttrPK: &types.AttributeValueMemberS{Value: "USAGE#" + chat.TenantKey(p.Tenant) + "#" + chat.MonthKey(a.StartedAt)},
				dynamo.AttrSK: &types.AttributeValueMemberS{Value: "P#" + chat.PrincipalKey(p)},
			},
			UpdateExpression: x.Update(), ConditionExpression: x.Condition(),
			ExpressionAttributeNames: x.Names(), ExpressionAttributeValues: x.Values(),
		})
		var ccf *types.ConditionalCheckFailedException
		if !errors.As(err, &ccf) {
			return err
		}
		basis = nil
		if u, rerr := s.ReadUsage(ctx, p, a.StartedAt); rerr == nil && slices.ContainsFunc(u.Admissions, func(x chat.Admission) bool { return x.ID == a.ID }) {
			return nil
		}
	}
	return fmt.Errorf("%w: the principal's admissions kept changing", chat.ErrQuotaUnavailable)
}
