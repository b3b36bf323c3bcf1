// Package loadcheck is the load run's verifier: a test oracle that drives
// many sessions of turns through a dev-server wiring of the turn and
// history functions while DynamoDB calls fail below the SDK's retryer,
// then checks every outcome against what DynamoDB really did.
//
// NewTransport is the load client's DynamoDB transport: beneath the SDK's
// retryer it injects faults (internal/ddbfault: a lost answer, a 500
// after the write applied or before it, a hung connection), at random for
// a share of calls and aimed at the calls of one kind for some turns, and
// records DynamoDB's real answer to every attempt, the ground truth of
// whether a write applied whatever the store was told. A Tap on the
// client files each call, with its attempts, under the trace of the HTTP
// request that made it (Traces, keyed by IDHeader); Classify
// (internal/dynamobench) says what each call was for.
//
// Run submits the turns (Submit, through pkg/client, recording each line
// as it arrives), retrying and replaying as a client would, and then
// judges every submission against its calls and the session's history:
// no acknowledged turn lost or duplicated, no turn reported unsaved that
// was saved (unless the read that would tell also failed), every claim
// whose write applied with its answer lost run exactly once, no
// SESSION_BUSY for a request's own claim, no snapshot line built after
// its lease expired or after another turn claimed the session
// (checkLines says what that check can and cannot prove), no lease held
// past its expiry; and the usage ledger counted every turn that ended
// exactly once (ledger.go: GET /usage's growth over the run against the
// sessions' claimed ordinals, less withdrawn claims, and history's tokens, the ledger writes'
// own faults aimed at too). cmd/turnbench runs it as its load section and renders
// the Report with Rows; it also uses the traces to count each request's
// DynamoDB calls.
package loadcheck
