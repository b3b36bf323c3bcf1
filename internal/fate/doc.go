// Package fate is the fate harness of durable turns (issue 22): a
// black-box chaos checker that runs several dev-server processes
// (cmd/devserver) on one DynamoDB table, breaks them at random points of
// a seeded schedule, and checks every route and every stream line it saw
// against the invariants I1-I8 of docs/durable-turns.md.
//
// What it breaks:
//
//   - DynamoDB, below each dev server's SDK retryer: every dev server
//     talks to a fault proxy of its own (DYNAMODB_ENDPOINT), an HTTP
//     server in the harness that forwards each HTTP attempt to the real
//     server (dynalite) through an internal/ddbfault.Transport. A
//     schedule opens fault windows on its session's attempts of one kind
//     (checkpoint, renewal, save, decision, claim, release, read): hung,
//     answer lost, 500 before or after the write applied, applied late. A
//     transport error is a dropped connection, a hang holds the attempt
//     until the dev server gives up on it, so the SDK really retries.
//   - the processes: SIGSTOP then SIGCONT 0.5-3 s later, and SIGKILL with
//     a restart on the same port, at random moments or at hooks the proxy
//     fires on a turn's own writes (right after its claim, at its first
//     checkpoint, right after a renewal, during its final save).
//
// What it does meanwhile, per schedule (one session): submits a turn on
// one process and often a second one on another (a takeover when the
// first process is dead), resumes either turn on other processes early
// and late (some resumers drop and reconnect with after=<last seen>),
// stops turns, reads /sessions, /turns and /messages at random moments,
// and polls /sessions during checkpoint faults. Several schedules run at
// once on different sessions. At quiescence (faults off, every process
// up, every lease expired) it reads every route of every session twice,
// resumes every turn and replays every turn id, then checks.
//
// The checker knows only what clients saw (every line with its receipt
// time and emittedAt, every read, every HTTP status) plus what the proxy
// saw DynamoDB answer: the lease expiries that were applied and when,
// which it uses as ground truth for "before the lease expired" (I2) and
// "after the lease" (I8). Check lists each invariant's exact reading.
//
// Run is the entry point (cmd/turnbench -only fate calls it; the
// package's test runs a short deterministic form in make test); its
// Report counts schedules, turns and violations by invariant, each with
// the seed, schedule, session, turn and the evidence lines with their
// times, and measures stop latency, the time from a lease's expiry to
// the turn's recorded fate, and the reads a resumer costs per poll.
package fate
