package loadcheck

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Rows renders a load run's report as rows of turnbench's table: figure,
// measured, baseline, measured vs baseline.
func Rows(l *Report, lc Config) [][4]string {
	var rows [][4]string
	add := func(figure, measured, baseline, vs string) {
		rows = append(rows, [4]string{figure, measured, baseline, vs})
	}
	add(fmt.Sprintf("load run: %d sessions x %d turns, %.0f%% of DynamoDB calls faulty at the HTTP transport (lost answer, 500 after apply, 500 before apply, hung; on every attempt for %.0f%% of them; attempt timeout %s) plus %d aimed cases, %.0f%% of streams cut",
		lc.Sessions, lc.Turns, 100*lc.Faults.FailRate, 100*lc.Faults.Persistent, lc.AttemptTimeout, len(aims), 100*lc.DisconnectRate),
		fmt.Sprintf("%d turns attempted, %d requests, %d acknowledged, %d disconnects, %d client retries (409 busy, 500), %d replays; %d aimed",
			l.TurnsAttempted, l.Requests, l.Acknowledged, l.Disconnects, l.Retried, l.Replays, sum(l.Aimed)),
		fmt.Sprintf("faulted attempts: %s; calls the SDK gave up early, its retry quota empty: %d", counts(l.Injected), l.QuotaExceeded),
		"not acknowledged: "+counts(l.Outcomes))
	add("load run verification (history handler, faults off)",
		fmt.Sprintf("%d/%d acknowledged turns verified; lost %d, duplicated %d, unknown %d; reported unsaved but saved %d (%d of them unresolvable: the resolving read failed on every attempt too)",
			l.Verified, l.Acknowledged, l.Lost, l.Duplicates, l.Foreign, l.UnsavedSaved, l.UnsavedSavedUnresolvable),
		fmt.Sprintf("outcomes %d checked against the request's faults, %d wrong, %d not attributable (a write reached DynamoDB and got no answer); SESSION_BUSY for its own applied claim %d",
			l.Checked, l.Wrong, l.Unattributable, l.BusyOwnClaim),
		fmt.Sprintf("leases held after the run %d (all explained and expiring within the lease: %v), held past expiry %d",
			l.LeasesHeldAfterRun, l.LeasesPastExpiry == 0, l.LeasesPastExpiry))
	add("load run: claims whose write applied but whose answer was lost or a 500 (the SDK retried or gave up)",
		fmt.Sprintf("%d, of them ran exactly once %d", l.ClaimsAnswerLost, l.ClaimsRanOnce),
		fmt.Sprintf("recognised, then the context load failed on every attempt (500, recorded once), the turn id lookup did (500, given back) or the lease could not be proven before the stream (409 TURN_OUTCOME_INDETERMINATE) %d; unresolvable (409 TURN_OUTCOME_INDETERMINATE: the resolving read failed on every attempt too) %d", l.ClaimsFailedAfter, l.ClaimsUnresolvable),
		fmt.Sprintf("%d/%d ran once", l.ClaimsRanOnce, l.ClaimsAnswerLost-l.ClaimsFailedAfter-l.ClaimsUnresolvable))
	add("load run: snapshot lines streamed after a lease was lost",
		fmt.Sprintf("%d after their lease's expiry, %d after a later claim of the session applied (of %d snapshot lines)", l.AfterExpiry, l.AfterClaim, l.Lines),
		fmt.Sprintf("emitted while a later claim was in flight (ambiguous) %d; emitted before it, received after %d; within the expiry of a renewal that reached DynamoDB unanswered (the store may have resolved it applied) %d", l.Ambiguous, l.InFlight, l.AfterUnknownRenewal),
		"-")
	lg := l.Ledger
	if lg.Checked {
		add("load run: usage ledger (GET /usage, month) against history of the run's sessions, faults off",
			fmt.Sprintf("counted %d turns, %d input and %d output tokens", lg.Counted.Turns, lg.Counted.InputTokens, lg.Counted.OutputTokens),
			fmt.Sprintf("ended (the sessions' claimed ordinals, less withdrawn claims) %d turns; history: %d turns (%d acknowledged, %d lost before a checkpoint unlisted), %d input and %d output tokens; ledger adds %d: applied with the answer lost or a 500 %d, unanswered %d, failed (left to the decider) %d, applied and found by their own retry %d, their condition failed with none of their attempts applied %d; settles %d; clears %d, failed (left to the next count) %d",
				lg.Ended, lg.Recorded.Turns, lg.Acknowledged.Turns, lg.Ended-lg.Recorded.Turns, lg.Recorded.InputTokens, lg.Recorded.OutputTokens,
				lg.Writes, lg.AnswerLost, lg.Unknown, lg.Failed, lg.Recognised, lg.Raced, lg.Settles, lg.Clears, lg.Uncleared),
			fmt.Sprintf("%d/%d turns, tokens equal: %v", lg.Counted.Turns, lg.Ended,
				lg.Counted.InputTokens == lg.Recorded.InputTokens && lg.Counted.OutputTokens == lg.Recorded.OutputTokens))
	} else {
		add("load run: usage ledger", "not checked: "+lg.Skipped, "-", "-")
	}
	return rows
}

// sum adds a map's counts.
func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// counts renders a map of counts as "k n, k n" in key order.
func counts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// Coverage returns nil when the run exercised what it is for: every fault
// kind injected, every aimed case submitted, outcomes checked, a claim
// applied with its answer lost, and turns sessions x turns attempted.
func (r *Report) Coverage(cfg Config) error {
	faults := map[string]bool{}
	for k := range r.Injected {
		faults[k[strings.LastIndex(k, ": ")+2:]] = true
	}
	switch {
	case len(faults) != len(faultKinds) || len(r.Aimed) != len(aims) || r.Checked == 0:
		return fmt.Errorf("faults injected %v, aimed cases %v, %d outcomes checked; want all %d kinds and %d cases",
			slices.Sorted(maps.Keys(faults)), r.Aimed, r.Checked, len(faultKinds), len(aims))
	case r.ClaimsAnswerLost == 0:
		return fmt.Errorf("no claim applied with its answer lost; the aimed cases did not happen")
	case r.TurnsAttempted != cfg.Sessions*cfg.Turns:
		return fmt.Errorf("%d turns attempted, want %d", r.TurnsAttempted, cfg.Sessions*cfg.Turns)
	case !r.Ledger.Checked && r.Ledger.Skipped != monthCrossed:
		return fmt.Errorf("the usage ledger was not checked: %s", r.Ledger.Skipped)
	case r.Ledger.AnswerLost == 0:
		return fmt.Errorf("no ledger add applied with its answer lost; the aimed cases did not happen")
	}
	return nil
}
