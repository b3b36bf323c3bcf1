// Package fate is the fate harness of durable turns: a black-box chaos
// checker that runs several dev-server processes (cmd/devserver) on one
// DynamoDB table, breaks them at random points of a seeded schedule, and
// checks every route and every stream line it saw against the invariants
// I1-I8 of a turn's fate (docs/durable-turns.md).
//
// What it breaks:
//
//   - DynamoDB, below each dev server's SDK retryer: every dev server
//     talks to a fault proxy of its own (its DYNAMODB_ENDPOINT), an HTTP
//     server in the harness that forwards each HTTP attempt to the real
//     server (dynalite) through an internal/ddbfault.Transport. A
//     schedule opens fault windows on its session's attempts of one kind
//     (checkpoint or only live-item writes, renewals, saves, the writes
//     that decide an expired lease, claims, releases, stops, reads): hung,
//     answer lost, 500 before or after the write applied, applied late
//     (by ddbfault.LateBy or by seconds). A transport error is a dropped
//     connection and a hang holds the attempt until the dev server gives
//     up on it, so the SDK really retries.
//   - the processes: SIGSTOP, then SIGCONT 0.5-3 s later, and SIGKILL with
//     a restart on the same port, at random moments or at hooks the proxy
//     fires on a turn's own writes (right after its claim, before or
//     after its first checkpoint, right after a renewal, during its final
//     save).
//
// What it does meanwhile, per schedule (one session): submits a turn on
// one process, and again with the same turn id when the answer was lost
// or the session busy; often a second turn on another process (a
// takeover when the first process is dead); resumes either turn on other
// processes, early and late (some resumers drop and reconnect with
// after=<last seen>); stops turns; reads /sessions, /turns and /messages
// at random moments; and polls /sessions through checkpoint faults.
// Several schedules run at once on different sessions. At quiescence
// (faults off, every process up, every lease expired) it reads every
// route of every session twice (the first read decides expired leases),
// resumes every turn and replays every turn id history holds.
//
// The checker knows what clients saw (every line with its receipt time
// and emittedAt, every read, every status) and what the proxy saw
// DynamoDB answer: the lease expiries claims and renewals applied and
// when, which writes applied, when a decision began. Its readings:
//
//   - I1 Irrevocable: all terminal states shown of a turn (a terminal
//     line of any stream, a /turns entry) agree in status, code and
//     messages, and no /turns read begun after the first shows it running.
//   - I2 Lost only by a fence: TURN_LOST never beside another terminal
//     state, never followed by a read showing the turn running, never
//     received before the latest lease expiry DynamoDB had applied, and
//     no lease applied for the turn after it.
//   - I3 One truth: no /sessions begun after /turns showed a turn
//     terminal names it current; no /turns begun after /sessions (read
//     after the turn's first line) named another turn or none shows it
//     running; at quiescence /sessions names a current turn iff /turns
//     shows one running, /messages holds exactly the messages of /turns,
//     and the session envelope's outcome of each turn is completed iff the
//     turn was saved.
//   - I4 Acknowledged means recorded: every /turns read begun after a
//     turn's first line lists it; every turn whose stream delivered a
//     line, and every turn a /turns read listed, is in history at
//     quiescence, terminal, with its user message.
//   - I5 Checkpoints recover: after a checkpoint fault window DynamoDB
//     applies a checkpoint write of the turn before it applies two of its
//     renewals more than a grace after the window, and /sessions does not
//     show currentTurn.sequence stuck while renewals land (an order of
//     events, never a duration, so a slow machine cannot fail it). Stop
//     latency under checkpoint faults is measured, not asserted.
//   - I6 Streams end and agree: every stream the harness did not drop and
//     whose process was not killed ends with a terminal line and sends
//     nothing after it but the trailing diagnostic; sequences rise within
//     a stream; across all streams of a session one sequence (above 0)
//     carries one line (event kind and payload); a lost record's
//     sequence is above every other line of its turn.
//   - I7 Honest outcomes: a live stream's last line and the final history
//     never contradict (a terminal state is the one kept; a retryable
//     failure is never a saved turn; TURN_OUTCOME_INDETERMINATE, never
//     retryable, allows anything); a replay never runs a turn again and
//     answers by its fate (TURN_ALREADY_COMPLETED saved,
//     TURN_OUTCOME_INDETERMINATE lost).
//   - I8 No line after the lease: no streaming snapshot of a turn is
//     emitted after the latest lease expiry DynamoDB applied for it, nor
//     after the first line of a later turn of its session.
//
// Run is the entry point (cmd/turnbench -only fate calls it; the
// package's test runs a short deterministic form in make test). Its
// Report counts schedules, turns and violations by invariant, each with
// the seed, schedule, session, turn and the evidence lines with their
// times (plus the plan and timeline of the schedule), the data races and
// panics the dev servers logged, and measures stop latency, the time
// from a lease's expiry to the turn's decided fate, and the reads a
// resumer costs per poll.
package fate
