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
//   - the processes: SIGSTOP, then SIGCONT 0.5-3 s later (0.8-0.95 of
//     the lease in a nearlease schedule), and SIGKILL with a restart on
//     the same port, at random moments or at hooks the proxy fires on a
//     turn's own writes (right after its claim, before or after its
//     first checkpoint, right after a renewal, during its final save).
//
// It runs at two leases (Config.Timings): the short one (DefaultTimings:
// a 2 s lease, checkpoints every 200 ms), where leases expire within a
// schedule and kills and pauses are cheap, and the product's default
// (ProductTimings: a 30 s lease, checkpoints every second, 1 s attempts,
// a 5 s cleanup reserve), where a stop, a save or an acknowledgment meets
// a lease far from its expiry. Each schedule has a kind, drawn with the
// weights of its lease (KindWeights): classic (below), or one aimed at a
// promise a classic schedule seldom reaches:
//
//   - race: a rollback or an interrupt (X-Turnstream-Multitask) sent
//     while a turn runs, raced by a plain submit or a second rollback or
//     interrupt that retries every 50 ms while the session is busy;
//   - quota: 3-6 times turnsPerMinute concurrent submits of one principal
//     of its own on as many new sessions, across two more dev servers
//     that run with a principal turnsPerMinute quota (QUOTAS); no other
//     schedule reaches them;
//   - stopfault: a stop (sent again after each retryable answer by two
//     clients in three) while the turn's checkpoint writes fail (all,
//     the deltas, the live item's, or the deltas and every write of the
//     live item, a stop's flag included, as on a throttled item);
//   - latesave: every attempt of the final save within the cleanup
//     reserve applied 1-4 s past 3/4 of it (the turn answers
//     TURN_OUTCOME_INDETERMINATE), while the turn id is replayed and
//     /turns read;
//   - ack: the acknowledgment (the first checkpoint's write) failing for
//     0.6-2 s; the client submits again after a retryable answer;
//   - nearlease: the turn's process paused for 0.8-0.95 of the lease,
//     right after its claim or right after a renewal;
//   - branch: a regeneration of the first turn (its process killed
//     before its acknowledgment in half), the supersession's and the
//     select's writes faulted in some, a select of the first version
//     raced by a plain turn, a fork (docs/branches.md). Its weight is 0:
//     drawn only when Config.Kinds names it, as TestFate does.
//
// At the default lease a schedule whose lease must expire takes 30 s and
// more, so that mix is mostly stopfault, latesave, ack, race and
// nearlease, and more schedules run at once (they mostly wait).
//
// What a classic schedule does (one session): submits a turn on
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
//     applies a checkpoint write of the turn before it applies three of
//     its renewals more than a grace after the window (a change waits at
//     most four checkpoint intervals), and /sessions does not
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
//     TURN_OUTCOME_INDETERMINATE lost, or TURN_OUTCOME_INDETERMINATE
//     when its own claim's answer was lost and so was the read that would
//     resolve it: the store cannot tell a replay from a claim that
//     applied).
//   - I8 No line after the lease: no streaming snapshot of a turn is
//     emitted after the latest lease expiry DynamoDB applied for it, nor
//     after the first line of a later turn of its session.
//
// And the rules of the schedule kinds (Violation.Rule; rules.go):
//
//   - kept (I1): a turn any client saw terminal stays in every /turns
//     read begun after, unless it ended interrupted (or lost: its process
//     was dead) after a rollback was sent while it ran, the turn that
//     rollback stopped and superseded; such a turn is also exempt from
//     I4 and from I7's "history has no such turn".
//   - Findings are reported without failing the run: pause-renewal-late
//     (a nearlease turn that had two attempt timeouts of its lease left
//     when its process continued, renewed none of it and was lost; the
//     documents promise a renewal every third of the lease, not one at
//     once after a pause).
//   - quota-exact (Q): a quota schedule's principal is admitted (a 200
//     stream) at most turnsPerMinute times within any 60 s.
//   - stop-honest (I7): a stop answered 2xx is followed by the turn's
//     interrupted end, or by its end within the stop bound plus slack (a
//     turn decided lost ends when its holder's stream ended
//     TURN_OUTCOME_INDETERMINATE, if it did: it stopped, and could not
//     confirm its save); a
//     turn none of whose stops was answered 2xx (one retryable) does not
//     end interrupted.
//   - stop-bound (I5): a stop first sent while only checkpoint writes
//     fail shows the turn terminal within a checkpoint interval plus
//     250 ms, plus slack (an attempt timeout and the larger of 1 s and a
//     checkpoint interval), the processes of the turn and of the stop
//     undisturbed. This one reads a clock, with that slack.
//   - replay-decided (I7): a submit of a turn id begun after any route
//     showed the turn terminal, or after its client got
//     TURN_OUTCOME_INDETERMINATE, is never told SESSION_BUSY, nor a
//     retryable 5xx while no fault of its session is open.
//   - ack-unspent (I7): after a retryable 5xx to a submit of an id no
//     earlier submit had spent (claimed, and not answered a retryable
//     5xx), the turn id is spent (in history, or TURN_ALREADY_COMPLETED or
//     TURN_OUTCOME_INDETERMINATE to a later submit) only if a later
//     submit of it ran the turn, or claimed it (DynamoDB applied its
//     lease, or its claim reached DynamoDB and the answer was lost below
//     the store) and was itself told TURN_OUTCOME_INDETERMINATE or got no
//     answer (its process killed before the acknowledgment).
//   - delete-running (I8): once a delete of the session was answered 204
//     or 202, no line of a turn that streamed before the delete was sent
//     is emitted after that answer, but a diagnostic at sequence 0, which
//     carries no state of the turn (a process paused across the delete
//     ends its stream with one).
//   - delete-gone (I4): such a turn, never submitted again after the
//     delete was sent, is in no /turns read begun after the answer nor in
//     the final history, and every read of the session answers 404 until
//     a new turn starts a new session under its id. The other rules judge
//     the session as it was until the delete (reads begun after it was
//     sent are this rule's evidence only).
//   - pause-renewed (I2): a nearlease turn whose renewal DynamoDB applied
//     (and answered) after the pause, before its previous expiry, does
//     not end lost or TURN_OUTCOME_INDETERMINATE, unless a later renewal
//     of it went unanswered (then that, not the pause, left its lease
//     unproven).
//   - attach-once (A): of two turns that name the same attachment, at
//     most one is accepted; one refused ATTACHMENT_INVALID is shown by no
//     route; they are not both refused so; the one in the final history
//     holds a part of source attachment:<id> for each file it named.
//
// Run is the entry point (cmd/turnbench -only fate calls it at each
// lease of -fate-lease; the package's test runs a short deterministic
// form of both leases in make test). Its Report counts schedules (by
// kind, with how long they ran), turns, quota admissions and violations
// by invariant and by rule, each with the seed, schedule, session, turn and the evidence lines with their
// times (plus the plan and timeline of the schedule), the data races and
// panics the dev servers logged, and measures stop latency, the time
// from a lease's expiry to the turn's decided fate, and the reads a
// resumer costs per poll.
package fate
